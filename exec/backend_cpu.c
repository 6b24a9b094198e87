/* exec/backend_cpu.c — the `cpu` backend: the device is emulated on the host. Device memory is a
 * separately accounted pool with a capacity (--device-mem). Every stream is a worker thread with a
 * FIFO queue, as a CUDA stream is a queue on the GPU: device kernels (the kernels/ CPU Adam,
 * casts, the synthetic gradients, OpenBLAS GEMMs) run on the compute and communication streams'
 * threads, copies on the copy stream's thread, so the device share's Adam runs while the calling
 * thread runs the host share's, and copies overlap both. The collectives (MPI) run on the
 * calling thread after the stream that produced their input is synchronised; all-gathers are
 * non-blocking (MPI_Iallgather, MPI_Wait), still called from that thread only. An
 * operation queued while a phase is tagged on its stream is timed by its thread (take_spans). */
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

enum cpu_op_kind { OP_COPY, OP_ADAM, OP_SCALE, OP_NARROW, OP_WIDEN, OP_SHARES, OP_NONFINITE, OP_GEMM };

/* One queued operation, its arguments copied in (the caller's structs may be gone when it runs). */
struct cpu_op {
    enum cpu_op_kind kind;    /* what to run */
    int phase;                /* >= 0: the thread records a span of this step phase */
    union {
        struct { void *dst; const void *src; int64_t bytes; } copy;                     /* OP_COPY */
        struct { struct kern_adam_scalars sc; struct kern_adam_bufs b; } adam;          /* OP_ADAM */
        struct { float *x; int64_t n; float c; } scale;                                 /* OP_SCALE */
        struct { void *dst; const void *src; enum kern_dtype t; int64_t n; } cast;      /* OP_NARROW, OP_WIDEN */
        struct { void *dst; enum kern_dtype t; int64_t count, valid, gstart; uint64_t seed; int64_t it;
                 int q, W; int64_t nan_at; } shares;                                     /* OP_SHARES */
        struct { const float *x; int64_t n; int64_t *count; } nonfinite;                /* OP_NONFINITE */
        struct { int64_t m, n, k; const float *a, *b; float *c; } gemm;                 /* OP_GEMM */
    } u;                      /* arguments of `kind` */
};

/* A stream: a worker thread running queue[done .. queued) in order (indices modulo cap). */
struct cpu_stream {
    struct ex_dev *dev;       /* the backend state (its mutex, spans, thread count) */
    pthread_t thread;         /* the worker */
    bool up;                  /* started (otherwise operations run on the calling thread) */
    pthread_cond_t work;      /* signalled when an operation is queued or on stop */
    pthread_cond_t idle;      /* signalled when an operation finishes */
    struct cpu_op *queue;     /* ring of cap entries */
    uint64_t cap;             /* ring size (a power of two) */
    uint64_t queued;          /* operations queued since open */
    uint64_t taken;           /* of which started (by the stream's thread or a waiting one) */
    uint64_t done;            /* of which finished */
    bool busy;                /* an operation of this stream is running */
    int tag;                  /* phase of the next queued operations (-1: untimed) */
    int err;                  /* first failure of an operation (RL_E*), reported by sync and waits */
    struct rl_err e;          /* its message */
};

struct ex_dev {
    struct ex_comm *comm;     /* MPI collectives */
    int64_t used_bytes;       /* pool bytes allocated */
    int64_t capacity_bytes;   /* 0: unlimited */
    int threads;              /* OpenMP threads of one device Adam call */
    pthread_mutex_t mu;       /* guards the streams' queues, counters, tags, errors and the spans */
    bool stop;                /* close() asks the threads to end */
    struct cpu_stream st[EX_STREAM_COUNT];   /* compute, communication, copy */
    struct step_span *spans;  /* finished timed operations' spans, not yet taken */
    int n_spans, cap_spans;   /* used, allocated */
    struct ex_comm_req **reqs;   /* started all-gathers, slot i is request handle i + 1 (NULL: free
                                    or nothing to wait for) */
    bool *req_busy;           /* slot i holds a started, not yet waited all-gather */
    int cap_reqs;             /* slots allocated */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int run_op(struct ex_dev *d, struct cpu_op *o, struct rl_err *e);

/* Runs the stream's next operation (called with d->mu held; returns with it held). One
 * operation of a stream runs at a time (busy), in queue order. */
static void run_next(struct ex_dev *d, struct cpu_stream *st)
{
    struct cpu_op o = st->queue[st->taken & (st->cap - 1)];
    st->taken++;
    st->busy = true;
    pthread_mutex_unlock(&d->mu);
    struct rl_err e = {0};
    int64_t t0 = now_ns();
    int rc = run_op(d, &o, &e);
    int64_t t1 = now_ns();
    pthread_mutex_lock(&d->mu);
    if (rc && !st->err) {
        st->err = rc;
        st->e = e;
    }
    if (o.phase >= 0) {
        rl_grow(&d->spans, &d->cap_spans, sizeof *d->spans, d->n_spans + 1, 256);
        if (d->n_spans < d->cap_spans)   /* a span lost to memory shortage only loses its time */
            d->spans[d->n_spans++] = (struct step_span){.start_ns = t0, .end_ns = t1, .phase = o.phase};
    }
    st->done++;
    st->busy = false;
    pthread_cond_broadcast(&st->idle);
    pthread_cond_signal(&st->work);
}

static void *stream_main(void *arg)
{
    struct cpu_stream *st = arg;
    struct ex_dev *d = st->dev;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while ((st->taken == st->queued || st->busy) && !d->stop)
            pthread_cond_wait(&st->work, &d->mu);
        if (st->taken == st->queued || st->busy)
            break;   /* stop, and nothing left */
        run_next(d, st);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* Queues o on stream s (runs it at once when the stream has no thread). */
static int enqueue(struct ex_dev *d, enum ex_stream s, struct cpu_op o, struct rl_err *e)
{
    struct cpu_stream *st = &d->st[s];
    if (!st->up) {
        o.phase = -1;
        return run_op(d, &o, e);
    }
    pthread_mutex_lock(&d->mu);
    if (st->queued - st->taken == st->cap) {   /* full: grow the ring, keeping the order */
        struct cpu_op *n = calloc((size_t)(2 * st->cap), sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&d->mu);
            return rl_errf(e, RL_ENOMEM, "out of host memory for the %s queue", s == EX_STREAM_COPY ? "copy" : "kernel");
        }
        for (uint64_t i = st->taken; i < st->queued; i++)
            n[i & (2 * st->cap - 1)] = st->queue[i & (st->cap - 1)];
        free(st->queue);
        st->queue = n;
        st->cap *= 2;
    }
    o.phase = st->tag;
    st->queue[st->queued & (st->cap - 1)] = o;
    st->queued++;
    pthread_cond_signal(&st->work);
    pthread_mutex_unlock(&d->mu);
    return 0;
}

/* Blocks until the first `upto` operations queued on s since open are done; returns the first
 * failure among the stream's operations. A waiting thread runs the stream's next operations
 * itself while its thread has not taken them yet (in order, one at a time): an operation issued
 * and waited for at once costs no thread hand-off, and one issued ahead of other work (the
 * device share's Adam, the copies) runs on the stream's thread. */
static int stream_wait(struct ex_dev *d, enum ex_stream s, uint64_t upto, struct rl_err *e)
{
    struct cpu_stream *st = &d->st[s];
    if (!st->up)
        return 0;
    pthread_mutex_lock(&d->mu);
    while (st->done < upto) {
        if (!st->busy && st->taken < st->queued)
            run_next(d, st);
        else
            pthread_cond_wait(&st->idle, &d->mu);
    }
    int rc = st->err;
    if (rc)
        *e = st->e;
    pthread_mutex_unlock(&d->mu);
    return rc;
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

static void cpu_close(struct ex_dev *d);

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
    pthread_mutex_init(&(*d)->mu, NULL);
    for (int s = 0; s < EX_STREAM_COUNT; s++) {
        struct cpu_stream *st = &(*d)->st[s];
        st->dev = *d;
        st->tag = -1;
        st->cap = 64;
        pthread_cond_init(&st->work, NULL);
        pthread_cond_init(&st->idle, NULL);
    }
    for (int s = 0; s < EX_STREAM_COUNT; s++)
        if (!((*d)->st[s].queue = calloc((size_t)(*d)->st[s].cap, sizeof *(*d)->st[s].queue))) {
            cpu_close(*d);
            *d = NULL;
            return rl_errf(e, RL_ENOMEM, "out of host memory");
        }
    for (int s = 0; s < EX_STREAM_COUNT; s++)
        if (pthread_create(&(*d)->st[s].thread, NULL, stream_main, &(*d)->st[s]) == 0)
            (*d)->st[s].up = true;   /* otherwise its operations run on the calling thread */
    return 0;
}

static void cpu_close(struct ex_dev *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    for (int s = 0; s < EX_STREAM_COUNT; s++)
        pthread_cond_signal(&d->st[s].work);
    pthread_mutex_unlock(&d->mu);
    for (int s = 0; s < EX_STREAM_COUNT; s++) {
        struct cpu_stream *st = &d->st[s];
        if (st->up)
            pthread_join(st->thread, NULL);
        pthread_cond_destroy(&st->work);
        pthread_cond_destroy(&st->idle);
        free(st->queue);
    }
    pthread_mutex_destroy(&d->mu);
    free(d->spans);
    for (int i = 0; i < d->cap_reqs; i++)   /* a failed run's: MPI_Abort or MPI_Finalize follows */
        ex_comm_req_free(d->reqs[i]);
    free(d->reqs);
    free(d->req_busy);
    free(d);
}

/* The one emulated device is always there. */
static int cpu_device_count(void) { return 1; }

/* One emulated device: a pool of host memory (its size is what open is given). */
static int cpu_probe(int *n, char *model, size_t model_len, int64_t *memory_bytes, struct rl_err *e)
{
    (void)e;
    *n = 1;
    snprintf(model, model_len, "emulated device (host memory and cores)");
    *memory_bytes = -1;
    return 0;
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
    return enqueue(d, s, (struct cpu_op){.kind = OP_COPY, .u.copy = {dst, src, bytes}}, e);
}

/* An event is a stream and a position in its queue: ev = position x EX_STREAM_COUNT + stream. */
static int cpu_event_record(struct ex_dev *d, enum ex_stream s, uint64_t *ev, struct rl_err *e)
{
    (void)e;
    pthread_mutex_lock(&d->mu);
    *ev = d->st[s].queued * EX_STREAM_COUNT + (uint64_t)s;
    pthread_mutex_unlock(&d->mu);
    return 0;
}

static int cpu_event_wait(struct ex_dev *d, uint64_t ev, struct rl_err *e)
{
    return stream_wait(d, (enum ex_stream)(ev % EX_STREAM_COUNT), ev / EX_STREAM_COUNT, e);
}

static void cpu_tag(struct ex_dev *d, enum ex_stream s, int phase)
{
    pthread_mutex_lock(&d->mu);
    d->st[s].tag = phase;
    pthread_mutex_unlock(&d->mu);
}

static int cpu_take_spans(struct ex_dev *d, struct step_span *out, int max)
{
    pthread_mutex_lock(&d->mu);
    int n = d->n_spans < max ? d->n_spans : max;
    if (n > 0) {   /* spans is NULL until the first timed operation */
        memcpy(out, d->spans, (size_t)n * sizeof *out);
        memmove(d->spans, d->spans + n, (size_t)(d->n_spans - n) * sizeof *out);
        d->n_spans -= n;
    }
    pthread_mutex_unlock(&d->mu);
    return n;
}

/* ---- the operations, run by a stream's thread ------------------------------------------------ */

static void shares_into(const struct cpu_op *o)
{
    const uint64_t base = ex_synth_base(o->u.shares.seed, o->u.shares.it);
    const int64_t valid = o->u.shares.valid, count = o->u.shares.count, g0 = o->u.shares.gstart;
    const int64_t nan_at = o->u.shares.nan_at;
    const int q = o->u.shares.q, W = o->u.shares.W;
    if (o->u.shares.t == KERN_F32) {
        float *x = o->u.shares.dst;
        ex_synth_shares(x, valid, base, g0, q, W);
        if (nan_at >= g0 && nan_at < g0 + valid)
            x[nan_at - g0] = NAN;
        memset(x + valid, 0, (size_t)(count - valid) * sizeof *x);
        return;
    }
    /* 16-bit: through a small fp32 block that stays in cache. */
    uint16_t *x = o->u.shares.dst;
    float tmp[2048];
    for (int64_t a = 0; a < valid; a += 2048) {
        int64_t n = valid - a < 2048 ? valid - a : 2048;
        ex_synth_shares(tmp, n, base, g0 + a, q, W);
        if (nan_at >= g0 + a && nan_at < g0 + a + n)
            tmp[nan_at - g0 - a] = NAN;
        ex__narrow_host(x + a, o->u.shares.t, tmp, n);
    }
    memset(x + valid, 0, (size_t)(count - valid) * sizeof *x);
}

static int run_op(struct ex_dev *d, struct cpu_op *o, struct rl_err *e)
{
    switch (o->kind) {
    case OP_COPY:
        memmove(o->u.copy.dst, o->u.copy.src, (size_t)o->u.copy.bytes);
        return 0;
    case OP_ADAM:
        return kern_adam_cpu(&o->u.adam.sc, &o->u.adam.b, d->threads, e);
    case OP_SCALE:
        for (int64_t i = 0; i < o->u.scale.n; i++)
            o->u.scale.x[i] = o->u.scale.x[i] * o->u.scale.c;
        return 0;
    case OP_NARROW:
        ex__narrow_host(o->u.cast.dst, o->u.cast.t, o->u.cast.src, o->u.cast.n);
        return 0;
    case OP_WIDEN:
        ex__widen_host(o->u.cast.dst, o->u.cast.src, o->u.cast.t, o->u.cast.n);
        return 0;
    case OP_SHARES:
        shares_into(o);
        return 0;
    case OP_NONFINITE: {
        int64_t k = 0;
        for (int64_t i = 0; i < o->u.nonfinite.n; i++)
            k += !isfinite(o->u.nonfinite.x[i]);
        *o->u.nonfinite.count = k;
        return 0;
    }
    case OP_GEMM:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)o->u.gemm.m, (int)o->u.gemm.n, (int)o->u.gemm.k,
                    1.0f, o->u.gemm.a, (int)o->u.gemm.k, o->u.gemm.b, (int)o->u.gemm.n, 0.0f, o->u.gemm.c,
                    (int)o->u.gemm.n);
        return 0;
    }
    return rl_errf(e, RL_EINTERNAL, "cpu backend: operation %d unknown", (int)o->kind);
}

/* ---- the table's kernels: queued on their stream ---------------------------------------------- */

static int cpu_adam(struct ex_dev *d, const struct kern_adam_scalars *sc, const struct kern_adam_bufs *b,
                    enum ex_stream s, struct rl_err *e)
{
    return enqueue(d, s, (struct cpu_op){.kind = OP_ADAM, .u.adam = {*sc, *b}}, e);
}

static int cpu_scale(struct ex_dev *d, float *x, int64_t n, float c, enum ex_stream s, struct rl_err *e)
{
    return enqueue(d, s, (struct cpu_op){.kind = OP_SCALE, .u.scale = {x, n, c}}, e);
}

static int cpu_narrow(struct ex_dev *d, void *dst, enum kern_dtype t, const float *src, int64_t n,
                      enum ex_stream s, struct rl_err *e)
{
    return enqueue(d, s, (struct cpu_op){.kind = OP_NARROW, .u.cast = {dst, src, t, n}}, e);
}

static int cpu_widen(struct ex_dev *d, float *dst, const void *src, enum kern_dtype t, int64_t n,
                     enum ex_stream s, struct rl_err *e)
{
    return enqueue(d, s, (struct cpu_op){.kind = OP_WIDEN, .u.cast = {dst, src, t, n}}, e);
}

static int cpu_shares(struct ex_dev *d, void *dst, enum kern_dtype t, int64_t count, int64_t valid,
                      int64_t gstart, uint64_t seed, int64_t it, int q, int W, int64_t nan_at,
                      enum ex_stream s, struct rl_err *e)
{
    struct cpu_op o = {.kind = OP_SHARES,
                       .u.shares = {dst, t, count, valid, gstart, seed, it, q, W, nan_at}};
    return enqueue(d, s, o, e);
}

static int cpu_sync(struct ex_dev *d, enum ex_stream s, struct rl_err *e)
{
    pthread_mutex_lock(&d->mu);
    uint64_t q = d->st[s].queued;
    pthread_mutex_unlock(&d->mu);
    return stream_wait(d, s, q, e);
}

/* Counted on the stream's thread into a slot, read after the stream is synchronised. */
static int cpu_nonfinite(struct ex_dev *d, const float *x, int64_t n, int64_t *count, enum ex_stream s,
                         struct rl_err *e)
{
    int64_t k = 0;
    int rc = enqueue(d, s, (struct cpu_op){.kind = OP_NONFINITE, .u.nonfinite = {x, n, &k}}, e);
    if (!rc)
        rc = cpu_sync(d, s, e);
    if (!rc)
        *count += k;
    return rc;
}

static int cpu_gemm(struct ex_dev *d, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                    float *c, enum ex_stream s, struct rl_err *e)
{
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return rl_errf(e, RL_EINTERNAL, "GEMM %lld x %lld x %lld exceeds BLAS int sizes", (long long)m,
                       (long long)n, (long long)k);
    return enqueue(d, s, (struct cpu_op){.kind = OP_GEMM, .u.gemm = {m, n, k, a, b, c}}, e);
}

static int cpu_reduce_scatter(struct ex_dev *d, void *buf, int64_t count, enum kern_dtype t, void **out,
                              struct rl_err *e)
{
    *out = buf;   /* MPI in place: the result lands at the front */
    return ex_comm_reduce_scatter(d->comm, buf, count, t, e);
}

static int cpu_allgather_start(struct ex_dev *d, void *buf, int64_t bytes, uint64_t *req, struct rl_err *e)
{
    RL_TRY(cpu_sync(d, EX_STREAM_COMM, e));   /* this rank's part has been written */
    int i = 0;
    while (i < d->cap_reqs && d->req_busy[i])
        i++;
    if (i == d->cap_reqs) {
        int cap = d->cap_reqs;
        if (rl_grow(&d->reqs, &cap, sizeof *d->reqs, i + 1, 8) ||
            rl_grow(&d->req_busy, &d->cap_reqs, sizeof *d->req_busy, i + 1, 8))
            return rl_errf(e, RL_ENOMEM, "out of host memory for an all-gather request");
        for (int j = i; j < d->cap_reqs; j++) {
            d->reqs[j] = NULL;
            d->req_busy[j] = false;
        }
    }
    RL_TRY(ex_comm_iallgather(d->comm, buf, bytes, &d->reqs[i], e));
    d->req_busy[i] = true;
    *req = (uint64_t)i + 1;
    return 0;
}

static int cpu_allgather_test(struct ex_dev *d, uint64_t req, bool *done, struct rl_err *e)
{
    if (req < 1 || req > (uint64_t)d->cap_reqs || !d->req_busy[req - 1])
        return rl_errf(e, RL_EINTERNAL, "cpu backend: all-gather request %llu was not started",
                       (unsigned long long)req);
    return ex_comm_test(d->comm, d->reqs[req - 1], done, e);
}

static int cpu_allgather_wait(struct ex_dev *d, uint64_t req, struct rl_err *e)
{
    if (req < 1 || req > (uint64_t)d->cap_reqs || !d->req_busy[req - 1])
        return rl_errf(e, RL_EINTERNAL, "cpu backend: all-gather request %llu was not started",
                       (unsigned long long)req);
    struct ex_comm_req *q = d->reqs[req - 1];
    d->reqs[req - 1] = NULL;
    d->req_busy[req - 1] = false;
    return ex_comm_wait(d->comm, q, e);   /* frees q */
}

const struct ex_backend ex_backend_cpu = {
    .name = "cpu",
    .probe = cpu_probe,
    .device_count = cpu_device_count,
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
    .allgather_start = cpu_allgather_start,
    .allgather_test = cpu_allgather_test,
    .allgather_wait = cpu_allgather_wait,
    .event_record = cpu_event_record,
    .event_wait = cpu_event_wait,
    .tag = cpu_tag,
    .take_spans = cpu_take_spans,
};
