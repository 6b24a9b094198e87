/* exec/backend_cpu.c — the `cpu` backend: the device is emulated on the host. Device memory is a
 * separately accounted pool with a capacity (--device-mem), device kernels are the kernels/ CPU
 * Adam and plain loops, GEMMs are OpenBLAS. Operations run when they are issued (every stream
 * is synchronous), so busy time equals exposed time per phase on this backend. */
#include <cblas.h>      /* cblas_sgemm (OpenBLAS) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>   /* mlock, munlock */

#include "exec/backend.h"
#include "exec/exec.h"
#include "kernels/lowp.h"

struct ex_dev {
    int64_t used_bytes;       /* pool bytes allocated */
    int64_t capacity_bytes;   /* 0: unlimited */
    int threads;              /* Adam threads for device kernels */
};

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

static int cpu_open(struct ex_dev **d, int local_rank, int64_t capacity_bytes, struct rl_err *e)
{
    (void)local_rank;
    *d = calloc(1, sizeof **d);
    if (!*d)
        return rl_errf(e, RL_ENOMEM, "out of host memory");
    (*d)->capacity_bytes = capacity_bytes;
    (*d)->threads = 1;
    return 0;
}

static void cpu_close(struct ex_dev *d) { free(d); }

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
    (void)d;
    (void)dir;
    (void)s;
    (void)e;
    if (bytes > 0)
        memmove(dst, src, (size_t)bytes);
    return 0;
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

static int cpu_shares(struct ex_dev *d, float *dst, int64_t count, int64_t valid, int64_t gstart,
                      uint64_t seed, int64_t it, int q, int W, int64_t nan_at, enum ex_stream s,
                      struct rl_err *e)
{
    (void)d;
    (void)s;
    (void)e;
    const uint64_t base = ex_synth_base(seed, it);
    for (int64_t j = 0; j < valid; j++)
        dst[j] = ex_synth_share(base, gstart + j, q, W);
    if (nan_at >= gstart && nan_at < gstart + valid)
        dst[nan_at - gstart] = NAN;
    for (int64_t j = valid; j < count; j++)
        dst[j] = 0.0f;
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
    (void)d;
    (void)s;
    (void)e;
    return 0;
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
};
