/* exec/backend_cpu.c — the `cpu` backend: the device is emulated on the host. Device memory is a
 * separately accounted pool with a capacity (--device-mem), device kernels are the kernels/ CPU
 * Adam and plain loops, GEMMs are OpenBLAS. Copies on EX_STREAM_COPY run on a copy thread (a FIFO
 * queue; the thread times each copy and the pipeline collects the spans), so host Adam and copies
 * overlap as on a GPU; the compute and communication streams run when they are issued. */
#include <cblas.h>      /* cblas_sgemm (OpenBLAS) */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>   /* mlock, munlock */
#include <time.h>       /* clock_gettime */

#include "exec/backend.h"
#include "exec/exec.h"
#include "kernels/lowp.h"

/* One queued copy. */
struct cpu_copy {
    void *dst;                /* destination */
    const void *src;          /* source */
    int64_t bytes;            /* size */
    int phase;                /* step phase it is attributed to */
};

struct ex_dev {
    struct ex_comm *comm;     /* MPI collectives */
    int64_t used_bytes;       /* pool bytes allocated */
    int64_t capacity_bytes;   /* 0: unlimited */
    int threads;              /* Adam threads for device kernels */
    /* the copy thread: queue[done .. queued) are pending, guarded by mu */
    pthread_t copier;         /* the thread */
    bool copier_up;           /* started */
    pthread_mutex_t mu;       /* guards everything below */
    pthread_cond_t work;      /* signalled when a copy is queued or on stop */
    pthread_cond_t idle;      /* signalled when a copy finishes */
    struct cpu_copy *queue;   /* ring of cap entries, indexed modulo cap */
    uint64_t cap;             /* ring size (a power of two) */
    uint64_t queued;          /* copies queued since open */
    uint64_t done;            /* copies finished since open */
    bool stop;                /* close() asks the thread to end */
    int tag;                  /* phase of the next queued copies */
    struct step_span *spans;  /* finished copies' spans, not yet taken */
    int n_spans, cap_spans;   /* used, allocated */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *copier_main(void *arg)
{
    struct ex_dev *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (d->done == d->queued && !d->stop)
            pthread_cond_wait(&d->work, &d->mu);
        if (d->done == d->queued)
            break;   /* stop, and nothing left */
        struct cpu_copy c = d->queue[d->done & (d->cap - 1)];
        pthread_mutex_unlock(&d->mu);
        int64_t t0 = now_ns();
        memmove(c.dst, c.src, (size_t)c.bytes);
        int64_t t1 = now_ns();
        pthread_mutex_lock(&d->mu);
        if (d->n_spans == d->cap_spans) {
            int cap = d->cap_spans ? 2 * d->cap_spans : 256;
            struct step_span *n = realloc(d->spans, (size_t)cap * sizeof *n);
            if (n) {
                d->spans = n;
                d->cap_spans = cap;
            }
        }
        if (d->n_spans < d->cap_spans)   /* a span lost to memory shortage only loses its time */
            d->spans[d->n_spans++] = (struct step_span){.start_ns = t0, .end_ns = t1, .phase = c.phase};
        d->done++;
        pthread_cond_broadcast(&d->idle);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

void ex__narrow_host(void *dst, enum kern_dtype t, const float *src, int64_t n)
{
    uint16_t *d = dst;
    if (t == KERN_BF16)
        for (int64_t i = 0; i < n; i++)
            d[i] = kern_f32_to_bf16(src[i]);
    else
        for (int64_t i = 0; i < n; i++)
            d[i] = kern_f32_to_f16(src[i]);
}

void ex__widen_host(float *dst, const void *src, enum kern_dtype t, int64_t n)
{
    const uint16_t *s = src;
    if (t == KERN_BF16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = kern_bf16_to_f32(s[i]);
    else
        for (int64_t i = 0; i < n; i++)
            dst[i] = kern_f16_to_f32(s[i]);
}

static int cpu_open(struct ex_dev **d, struct ex_comm *c, int local_rank, int64_t capacity_bytes,
                    struct rl_err *e)
{
    (void)local_rank;
    *d = calloc(1, sizeof **d);
    if (!*d)
        return rl_errf(e, RL_ENOMEM, "out of host memory");
    (*d)->comm = c;
    (*d)->capacity_bytes = capacity_bytes;
    (*d)->threads = 1;
    (*d)->cap = 64;
    (*d)->queue = calloc((size_t)(*d)->cap, sizeof *(*d)->queue);
    if (!(*d)->queue) {
        free(*d);
        *d = NULL;
        return rl_errf(e, RL_ENOMEM, "out of host memory");
    }
    pthread_mutex_init(&(*d)->mu, NULL);
    pthread_cond_init(&(*d)->work, NULL);
    pthread_cond_init(&(*d)->idle, NULL);
    if (pthread_create(&(*d)->copier, NULL, copier_main, *d) == 0)
        (*d)->copier_up = true;   /* otherwise copies run inline */
    return 0;
}

static void cpu_close(struct ex_dev *d)
{
    if (!d)
        return;
    if (d->copier_up) {
        pthread_mutex_lock(&d->mu);
        d->stop = true;
        pthread_cond_signal(&d->work);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->copier, NULL);
    }
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->work);
    pthread_cond_destroy(&d->idle);
    free(d->queue);
    free(d->spans);
    free(d);
}

static void cpu_mem(struct ex_dev *d, int64_t *used, int64_t *cap)
{
    *used = d->used_bytes;
    *cap = d->capacity_bytes > 0 ? d->capacity_bytes : -1;
}

static int cpu_dev_alloc(struct ex_dev *d, int64_t bytes, void **p, struct rl_err *e)
{
    if (d->capacity_bytes > 0 && d->used_bytes + bytes > d->capacity_bytes)
        return rl_errf(e, RL_ENOMEM, "emulated device: %lld bytes needed, %lld free",
                       (long long)bytes, (long long)(d->capacity_bytes - d->used_bytes));
    /* calloc: pages are touched when written, and zeroed memory keeps runs deterministic. */
    *p = calloc(1, bytes ? (size_t)bytes : 1);
    if (!*p)
        return rl_errf(e, RL_ENOMEM, "emulated device: out of host memory for %lld bytes", (long long)bytes);
    d->used_bytes += bytes;
    return 0;
}

static void cpu_dev_free(struct ex_dev *d, void *p, int64_t bytes)
{
    if (!p)
        return;
    free(p);
    d->used_bytes -= bytes;
}

static int cpu_host_alloc(struct ex_dev *d, int64_t bytes, bool pinned, void **p, struct rl_err *e)
{
    (void)d;
    *p = calloc(1, bytes ? (size_t)bytes : 1);
    if (!*p)
        return rl_errf(e, RL_ENOMEM, "out of host memory for %lld %s bytes", (long long)bytes,
                       pinned ? "pinned" : "pageable");
    /* Page-locked where RLIMIT_MEMLOCK allows; otherwise it stays pageable (VmLck shows which). */
    if (pinned && bytes > 0)
        (void)mlock(*p, (size_t)bytes);
    return 0;
}

static void cpu_host_free(struct ex_dev *d, void *p, int64_t bytes, bool pinned)
{
    (void)d;
    if (!p)
        return;
    if (pinned && bytes > 0)
        (void)munlock(p, (size_t)bytes);
    free(p);
}

static int cpu_copy(struct ex_dev *d, void *dst, const void *src, int64_t bytes, enum ex_copy_dir dir,
                    enum ex_stream s, struct rl_err *e)
{
    (void)dir;
    if (bytes <= 0)
        return 0;
    if (s != EX_STREAM_COPY || !d->copier_up) {
        memmove(dst, src, (size_t)bytes);
        return 0;
    }
    pthread_mutex_lock(&d->mu);
    if (d->queued - d->done == d->cap) {   /* full: grow the ring, keeping the order */
        struct cpu_copy *n = calloc((size_t)(2 * d->cap), sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&d->mu);
            return rl_errf(e, RL_ENOMEM, "out of host memory for the copy queue");
        }
        for (uint64_t i = d->done; i < d->queued; i++)
            n[i & (2 * d->cap - 1)] = d->queue[i & (d->cap - 1)];
        free(d->queue);
        d->queue = n;
        d->cap *= 2;
    }
    d->queue[d->queued & (d->cap - 1)] = (struct cpu_copy){.dst = dst, .src = src, .bytes = bytes, .phase = d->tag};
    d->queued++;
    pthread_cond_signal(&d->work);
    pthread_mutex_unlock(&d->mu);
    return 0;
}

/* Blocks until the first `upto` copies queued since open are done. */
static void copies_wait(struct ex_dev *d, uint64_t upto)
{
    if (!d->copier_up)
        return;
    pthread_mutex_lock(&d->mu);
    while (d->done < upto)
        pthread_cond_wait(&d->idle, &d->mu);
    pthread_mutex_unlock(&d->mu);
}

static int cpu_event_record(struct ex_dev *d, enum ex_stream s, uint64_t *ev, struct rl_err *e)
{
    (void)e;
    pthread_mutex_lock(&d->mu);
    *ev = s == EX_STREAM_COPY ? d->queued : 0;   /* other streams are synchronous: already done */
    pthread_mutex_unlock(&d->mu);
    return 0;
}

static int cpu_event_wait(struct ex_dev *d, uint64_t ev, struct rl_err *e)
{
    (void)e;
    copies_wait(d, ev);
    return 0;
}

static void cpu_tag(struct ex_dev *d, int phase)
{
    pthread_mutex_lock(&d->mu);
    d->tag = phase;
    pthread_mutex_unlock(&d->mu);
}

static int cpu_take_spans(struct ex_dev *d, struct step_span *out, int max)
{
    pthread_mutex_lock(&d->mu);
    int n = d->n_spans < max ? d->n_spans : max;
    memcpy(out, d->spans, (size_t)n * sizeof *out);
    memmove(d->spans, d->spans + n, (size_t)(d->n_spans - n) * sizeof *out);
    d->n_spans -= n;
    pthread_mutex_unlock(&d->mu);
    return n;
}

static int cpu_adam(struct ex_dev *d, const struct kern_adam_scalars *sc, const struct kern_adam_bufs *b,
                    enum ex_stream s, struct rl_err *e)
{
    (void)s;
    return kern_adam_cpu(sc, b, d->threads, e);
}

static int cpu_scale(struct ex_dev *d, float *x, int64_t n, float c, enum ex_stream s, struct rl_err *e)
{
    (void)d;
    (void)s;
    (void)e;
    for (int64_t i = 0; i < n; i++)
        x[i] = x[i] * c;
    return 0;
}

static int cpu_narrow(struct ex_dev *d, void *dst, enum kern_dtype t, const float *src, int64_t n,
                      enum ex_stream s, struct rl_err *e)
{
    (void)d;
    (void)s;
    (void)e;
    ex__narrow_host(dst, t, src, n);
    return 0;
}

static int cpu_widen(struct ex_dev *d, float *dst, const void *src, enum kern_dtype t, int64_t n,
                     enum ex_stream s, struct rl_err *e)
{
    (void)d;
    (void)s;
    (void)e;
    ex__widen_host(dst, src, t, n);
    return 0;
}

static int cpu_shares(struct ex_dev *d, void *dst, enum kern_dtype t, int64_t count, int64_t valid,
                      int64_t gstart, uint64_t seed, int64_t it, int q, int W, int64_t nan_at,
                      enum ex_stream s, struct rl_err *e)
{
    (void)d;
    (void)s;
    (void)e;
    const uint64_t base = ex_synth_base(seed, it);
    if (t == KERN_F32) {
        float *x = dst;
        ex_synth_shares(x, valid, base, gstart, q, W);
        if (nan_at >= gstart && nan_at < gstart + valid)
            x[nan_at - gstart] = NAN;
        memset(x + valid, 0, (size_t)(count - valid) * sizeof *x);
        return 0;
    }
    /* 16-bit: through a small fp32 block that stays in cache. */
    uint16_t *x = dst;
    float tmp[2048];
    for (int64_t a = 0; a < valid; a += 2048) {
        int64_t n = valid - a < 2048 ? valid - a : 2048;
        ex_synth_shares(tmp, n, base, gstart + a, q, W);
        if (nan_at >= gstart + a && nan_at < gstart + a + n)
            tmp[nan_at - gstart - a] = NAN;
        ex__narrow_host(x + a, t, tmp, n);
    }
    memset(x + valid, 0, (size_t)(count - valid) * sizeof *x);
    return 0;
}

static int cpu_nonfinite(struct ex_dev *d, const float *x, int64_t n, int64_t *count, enum ex_stream s,
                         struct rl_err *e)
{
    (void)d;
    (void)s;
    (void)e;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += !isfinite(x[i]);
    *count += k;
    return 0;
}

static int cpu_gemm(struct ex_dev *d, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                    float *c, enum ex_stream s, struct rl_err *e)
{
    (void)d;
    (void)s;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return rl_errf(e, RL_EINTERNAL, "GEMM %lld x %lld x %lld exceeds BLAS int sizes", (long long)m,
                       (long long)n, (long long)k);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k, b,
                (int)n, 0.0f, c, (int)n);
    return 0;
}

static int cpu_sync(struct ex_dev *d, enum ex_stream s, struct rl_err *e)
{
    (void)e;
    if (s == EX_STREAM_COPY) {
        pthread_mutex_lock(&d->mu);
        uint64_t q = d->queued;
        pthread_mutex_unlock(&d->mu);
        copies_wait(d, q);
    }
    return 0;
}

static int cpu_reduce_scatter(struct ex_dev *d, void *buf, int64_t count, enum kern_dtype t, void **out,
                              struct rl_err *e)
{
    *out = buf;   /* MPI in place: the result lands at the front */
    return ex_comm_reduce_scatter(d->comm, buf, count, t, e);
}

static int cpu_allgather(struct ex_dev *d, void *buf, int64_t bytes, struct rl_err *e)
{
    return ex_comm_allgather(d->comm, buf, buf, bytes, e);
}

const struct ex_backend ex_backend_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .mem = cpu_mem,
    .dev_alloc = cpu_dev_alloc,
    .dev_free = cpu_dev_free,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .copy = cpu_copy,
    .adam = cpu_adam,
    .scale = cpu_scale,
    .narrow = cpu_narrow,
    .widen = cpu_widen,
    .shares = cpu_shares,
    .nonfinite = cpu_nonfinite,
    .gemm = cpu_gemm,
    .sync = cpu_sync,
    .reduce_scatter = cpu_reduce_scatter,
    .allgather = cpu_allgather,
    .event_record = cpu_event_record,
    .event_wait = cpu_event_wait,
    .tag = cpu_tag,
    .take_spans = cpu_take_spans,
};
