/* bench/adam.c — Adam kernel throughput against the memory limit measured in the same run.
 *
 * CPU: for each thread count 1..all cores and two element layouts (fp32 gradients without a copy;
 * bf16 gradients with a bf16 copy: both move 28 bytes per element), the kernels and a "stream28"
 * loop alternate for several rounds over arrays far beyond the last-level cache:
 *   stream28   reads p, g, m, v and writes p, m, v (and the copy), one add per array: the
 *              memory limit of an in-place Adam step (no write-allocate traffic, unlike a
 *              STREAM triad counted at 12 bytes per element);
 *   simd       kern_adam_cpu (the ISA chosen at run time, RL_KERN_ISA to force one);
 *   plain      a plain C loop of the same formula (OpenMP parallel for; sqrtf stays scalar unless
 *              -fno-math-errno, which the Makefile gives benchmarks);
 *   reference  kern_adam_ref over the same contiguous chunks.
 * Each cell is the median over rounds with the min..max spread; "% stream28" is the median of the
 * per-round ratios (the two ran back to back, which cancels slow drifts from a shared machine).
 * Results are validated (bitwise against the reference) before anything is timed.
 *
 * GPU (with CUDA and a device; `--gpu` runs only this part): kern_adam_cuda against a
 * device-to-device cudaMemcpy (bytes read + written) in the same run, both timed with events.
 *
 * Usage: adam [--numel N] [--rounds R] [--threads LIST] [--gpu] [--no-gpu] [--help] */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <immintrin.h>

#include "kernels/adam.h"
#include "kernels/lowp.h"

#ifdef RL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* ---- small helpers ------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double t[64];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static double vmin(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static double vmax(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

static void *xalloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1)) {
        fprintf(stderr, "adam bench: out of memory allocating %zu bytes (try --numel smaller)\n", bytes);
        exit(3);
    }
    return p;
}

/* ---- the arrays of one layout ---------------------------------------------------------- */

struct layout {
    const char *name;        /* shown in the table */
    enum kern_dtype gt;      /* gradient dtype */
    enum kern_dtype lt;      /* copy dtype or KERN_NONE */
};

static const struct layout layouts[] = {
    {"fp32 grad, no copy", KERN_F32, KERN_NONE},
    {"bf16 grad, bf16 copy", KERN_BF16, KERN_BF16},
};

static int bytes_per_elem(const struct layout *l)
{
    return 4 * 2 + 4 * 2 + 4 * 2 + kern_dtype_bytes(l->gt) + kern_dtype_bytes(l->lt);
}

struct arrays {
    float *p, *m, *v;    /* fp32 state */
    void *g;             /* gradients */
    void *lp;            /* copy or NULL */
    int64_t n;           /* elements */
};

/* Normal values (no NaN here: the plain loop does not canonicalise), first touched by the
 * threads that will use them. */
static void arrays_init(struct arrays *a, const struct layout *l, int64_t n, int threads)
{
    a->n = n;
    a->p = xalloc((size_t)n * 4);
    a->m = xalloc((size_t)n * 4);
    a->v = xalloc((size_t)n * 4);
    a->g = xalloc((size_t)n * (size_t)kern_dtype_bytes(l->gt));
    a->lp = l->lt != KERN_NONE ? xalloc((size_t)n * 2) : NULL;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t)i * 2654435761u;
        float u = (float)(h >> 8) / 16777216.0f;
        a->p[i] = 0.5f + u;
        a->m[i] = 0.01f * (u - 0.5f);
        a->v[i] = 1e-4f * u + 1e-6f;
        float g = 0.1f * (0.5f - u);
        if (l->gt == KERN_F32)
            ((float *)a->g)[i] = g;
        else
            ((uint16_t *)a->g)[i] = kern_f32_to_bf16(g);
        if (a->lp)
            ((uint16_t *)a->lp)[i] = 0;
    }
}

static void arrays_free(struct arrays *a)
{
    free(a->p);
    free(a->m);
    free(a->v);
    free(a->g);
    free(a->lp);
}

static struct kern_adam_bufs bufs_of(const struct arrays *a, const struct layout *l, int64_t lo,
                                     int64_t hi)
{
    struct kern_adam_bufs b = {
        .param = a->p + lo,
        .exp_avg = a->m + lo,
        .exp_avg_sq = a->v + lo,
        .grad = (const char *)a->g + lo * kern_dtype_bytes(l->gt),
        .grad_dtype = l->gt,
        .param_lowp = a->lp ? (char *)a->lp + lo * 2 : NULL,
        .param_lowp_dtype = l->lt,
        .numel = hi - lo,
    };
    return b;
}

/* ---- the timed loops --------------------------------------------------------------------- */

/* stream28: the bytes of an in-place Adam step with one add per array. It prefetches as far ahead
 * as the kernel does (KERN__PREFETCH in kernels/adam_cpu.c): on the development machine that
 * raised it by a few percent, and a limit must be the best loop we know for these bytes. */
#define STREAM_PREFETCH 512
__attribute__((target("avx512f"))) static void stream_avx512(const struct arrays *a,
                                                             const struct layout *l, int64_t lo,
                                                             int64_t hi)
{
    int64_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        /* Integer addresses: past the end of the arrays pointer arithmetic is undefined. */
        _mm_prefetch((const char *)((uintptr_t)(a->p + i) + STREAM_PREFETCH * 4), _MM_HINT_T0);
        _mm_prefetch((const char *)((uintptr_t)(a->m + i) + STREAM_PREFETCH * 4), _MM_HINT_T0);
        _mm_prefetch((const char *)((uintptr_t)(a->v + i) + STREAM_PREFETCH * 4), _MM_HINT_T0);
        _mm_prefetch((const char *)((uintptr_t)a->g + (uintptr_t)((i + STREAM_PREFETCH) *
                                                               kern_dtype_bytes(l->gt))), _MM_HINT_T0);
        __m512 g;
        if (l->gt == KERN_F32)
            g = _mm512_loadu_ps((const float *)a->g + i);
        else
            g = _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)a->g + i))), 16));
        __m512 p = _mm512_add_ps(_mm512_loadu_ps(a->p + i), g);
        _mm512_storeu_ps(a->p + i, p);
        _mm512_storeu_ps(a->m + i, _mm512_add_ps(_mm512_loadu_ps(a->m + i), g));
        _mm512_storeu_ps(a->v + i, _mm512_add_ps(_mm512_loadu_ps(a->v + i), g));
        if (a->lp)
            _mm256_storeu_si256((__m256i *)((uint16_t *)a->lp + i),
                                _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(p), 16)));
    }
    for (; i < hi; i++) {
        float g = l->gt == KERN_F32 ? ((const float *)a->g)[i]
                                    : kern_bf16_to_f32(((const uint16_t *)a->g)[i]);
        a->p[i] += g;
        a->m[i] += g;
        a->v[i] += g;
        if (a->lp)
            ((uint16_t *)a->lp)[i] = (uint16_t)(kern_f32_bits(a->p[i]) >> 16);
    }
}

static void stream_plain(const struct arrays *a, const struct layout *l, int64_t lo, int64_t hi)
{
    for (int64_t i = lo; i < hi; i++) {
        float g = l->gt == KERN_F32 ? ((const float *)a->g)[i]
                                    : kern_bf16_to_f32(((const uint16_t *)a->g)[i]);
        a->p[i] += g;
        a->m[i] += g;
        a->v[i] += g;
        if (a->lp)
            ((uint16_t *)a->lp)[i] = (uint16_t)(kern_f32_bits(a->p[i]) >> 16);
    }
}

/* Splits [0, n) into `threads` contiguous chunks (multiples of 16 elements, as the kernel). */
static void chunk(int64_t n, int t, int nt, int64_t *lo, int64_t *hi)
{
    int64_t nblk = (n + 15) / 16;
    *lo = nblk * t / nt * 16;
    *hi = nblk * (t + 1) / nt * 16;
    *lo = *lo < n ? *lo : n;
    *hi = *hi < n ? *hi : n;
}

static void run_stream(const struct arrays *a, const struct layout *l, int threads)
{
    const int wide = __builtin_cpu_supports("avx512f");
#pragma omp parallel num_threads(threads)
    {
        int64_t lo, hi;
        chunk(a->n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        if (wide)
            stream_avx512(a, l, lo, hi);
        else
            stream_plain(a, l, lo, hi);
    }
}

static void run_ref(const struct arrays *a, const struct layout *l,
                    const struct kern_adam_scalars *s, int threads)
{
#pragma omp parallel num_threads(threads)
    {
        int64_t lo, hi;
        chunk(a->n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        struct kern_adam_bufs b = bufs_of(a, l, lo, hi);
        (void)kern_adam_ref(s, &b, NULL);
    }
}

static void run_simd(const struct arrays *a, const struct layout *l,
                     const struct kern_adam_scalars *s, int threads)
{
    struct kern_adam_bufs b = bufs_of(a, l, 0, a->n);
    struct rl_err e = {0};
    if (kern_adam_cpu(s, &b, threads, &e)) {
        fprintf(stderr, "adam bench: kern_adam_cpu: %s\n", e.msg);
        exit(3);
    }
}

/* A plain loop of the same formula, as a user would write it (no SIMD, no NaN handling). */
static void run_plain(const struct arrays *a, const struct layout *l,
                      const struct kern_adam_scalars *s, int threads)
{
    const int64_t n = a->n;
    float *p = a->p, *m = a->m, *v = a->v;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
        float g = l->gt == KERN_F32 ? ((const float *)a->g)[i]
                                    : kern_bf16_to_f32(((const uint16_t *)a->g)[i]);
        float pi = p[i];
        if (s->decay == KERN_DECAY_L2)
            g = pi * s->weight_decay + g;
        float mi = m[i] * s->beta1;
        mi = g * s->one_minus_beta1 + mi;
        float vi = v[i] * s->beta2;
        vi = (g * g) * s->one_minus_beta2 + vi;
        float denom = sqrtf(vi) * s->bc2_rsqrt + s->eps;
        if (s->decay == KERN_DECAY_W)
            pi = s->decay_factor * pi + pi;
        pi = (mi / denom) * s->step_size + pi;
        p[i] = pi;
        m[i] = mi;
        v[i] = vi;
        if (a->lp)
            ((uint16_t *)a->lp)[i] = kern_f32_to_bf16(pi);
    }
}

/* ---- validation -------------------------------------------------------------------------- */

static int same_bytes(const struct arrays *x, const struct arrays *y, const struct layout *l)
{
    size_t n = (size_t)x->n;
    return !memcmp(x->p, y->p, n * 4) && !memcmp(x->m, y->m, n * 4) &&
           !memcmp(x->v, y->v, n * 4) && (!x->lp || !memcmp(x->lp, y->lp, n * 2)) &&
           (l != NULL);
}

/* Runs reference, simd and plain on copies of the same 1e6 + 3 elements; returns 0 when simd
 * (and the plain loop, for the timings to compare like with like) equal the reference. */
static int validate(const struct layout *l, const struct kern_adam_scalars *s, int threads)
{
    const int64_t n = 1000003;
    struct arrays r, x, y;
    arrays_init(&r, l, n, threads);
    arrays_init(&x, l, n, threads);
    arrays_init(&y, l, n, threads);
    run_ref(&r, l, s, 1);
    run_simd(&x, l, s, threads);
    run_plain(&y, l, s, threads);
    int simd_ok = same_bytes(&x, &r, l), plain_ok = same_bytes(&y, &r, l);
    printf("validated (%s, 1e6+3 elements): simd %s the reference, plain loop %s\n", l->name,
           simd_ok ? "bitwise equal to" : "DIFFERS FROM", plain_ok ? "equal" : "differs");
    arrays_free(&r);
    arrays_free(&x);
    arrays_free(&y);
    return simd_ok ? 0 : 1;
}

/* ---- the CPU table ------------------------------------------------------------------------ */

enum { K_STREAM, K_SIMD, K_PLAIN, K_REF, NK };
static const char *knames[NK] = {"stream28", "simd", "plain", "reference"};

static void cpu_table(const struct layout *l, int64_t n, int rounds, const int *threads, int nthr,
                      const struct kern_adam_scalars *s)
{
    const int bpe = bytes_per_elem(l);
    printf("\n%s: %d bytes/element, %lld elements (%.0f MiB moved per pass), %d rounds\n", l->name,
           bpe, (long long)n, (double)n * bpe / 1048576.0, rounds);
    printf("%7s  %-9s  %9s  %10s  %19s  %10s\n", "threads", "kernel", "Melem/s", "GB/s med",
           "GB/s min..max", "% stream28");
    for (int ti = 0; ti < nthr; ti++) {
        int t = threads[ti];
        struct arrays a;
        arrays_init(&a, l, n, t);
        double gbps[NK][64], ratio[NK][64];
        /* One untimed pass of each, then rounds in which the four alternate. */
        for (int k = -1; k < rounds; k++) {
            double sec[NK];
            for (int kk = 0; kk < NK; kk++) {
                double t0 = now_s();
                switch (kk) {
                case K_STREAM: run_stream(&a, l, t); break;
                case K_SIMD: run_simd(&a, l, s, t); break;
                case K_PLAIN: run_plain(&a, l, s, t); break;
                default: run_ref(&a, l, s, t); break;
                }
                sec[kk] = now_s() - t0;
            }
            if (k < 0)
                continue;
            for (int kk = 0; kk < NK; kk++) {
                gbps[kk][k] = (double)n * bpe / sec[kk] / 1e9;
                ratio[kk][k] = sec[K_STREAM] / sec[kk];
            }
        }
        for (int kk = 0; kk < NK; kk++) {
            double med = median(gbps[kk], rounds);
            char range[64];
            snprintf(range, sizeof range, "%.2f..%.2f", vmin(gbps[kk], rounds), vmax(gbps[kk], rounds));
            printf("%7d  %-9s  %9.1f  %10.2f  %19s  %9.1f%%\n", t, knames[kk], med * 1e9 / bpe / 1e6,
                   med, range, 100.0 * median(ratio[kk], rounds));
        }
        arrays_free(&a);
    }
}

/* ---- GPU ---------------------------------------------------------------------------------- */

#ifdef RL_HAVE_CUDA
#define CUDA_OR_DIE(call)                                                                       \
    do {                                                                                        \
        cudaError_t err_ = (call);                                                              \
        if (err_ != cudaSuccess) {                                                              \
            fprintf(stderr, "adam bench: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,           \
                    cudaGetErrorString(err_));                                                  \
            exit(3);                                                                            \
        }                                                                                       \
    } while (0)

static int gpu_section(int64_t n_req, int rounds, const struct kern_adam_scalars *s)
{
    if (kern_cuda_device_count() <= 0) {
        printf("\nGPU: skipped: no GPU\n");
        return 3;
    }
    struct cudaDeviceProp prop;
    CUDA_OR_DIE(cudaGetDeviceProperties(&prop, 0));
    size_t free_b = 0, total_b = 0;
    CUDA_OR_DIE(cudaMemGetInfo(&free_b, &total_b));
    /* Up to 2^28 elements: 30 bytes each for the arrays and 28 for the copy buffers, all within
     * 70 % of free memory. */
    int64_t n = n_req > 0 ? n_req : (int64_t)1 << 28;
    while (n > 1024 && (double)n * 64 > 0.7 * (double)free_b)
        n /= 2;
    printf("\nGPU: %s, %.1f GiB free; %lld elements, %d rounds\n", prop.name, free_b / RL_GIB,
           (long long)n, rounds);
    struct rl_err e = {0};
    float *p, *m, *v, *g;
    uint16_t *lp;
    CUDA_OR_DIE(cudaMalloc((void **)&p, (size_t)n * 4));
    CUDA_OR_DIE(cudaMalloc((void **)&m, (size_t)n * 4));
    CUDA_OR_DIE(cudaMalloc((void **)&v, (size_t)n * 4));
    CUDA_OR_DIE(cudaMalloc((void **)&g, (size_t)n * 4));
    CUDA_OR_DIE(cudaMalloc((void **)&lp, (size_t)n * 2));
    /* Same start values as the CPU arrays, for the first 1e6+3 elements also checked against
     * the reference bit for bit. */
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++) {
        const struct layout *l = &layouts[li];
        struct arrays h;
        const int64_t nval = n < 1000003 ? n : 1000003;
        arrays_init(&h, l, nval, 1);
        int64_t filled = 0;
        while (filled < n) {   /* tile the host pattern over the device arrays */
            int64_t c = n - filled < nval ? n - filled : nval;
            CUDA_OR_DIE(cudaMemcpy(p + filled, h.p, (size_t)c * 4, cudaMemcpyHostToDevice));
            CUDA_OR_DIE(cudaMemcpy(m + filled, h.m, (size_t)c * 4, cudaMemcpyHostToDevice));
            CUDA_OR_DIE(cudaMemcpy(v + filled, h.v, (size_t)c * 4, cudaMemcpyHostToDevice));
            CUDA_OR_DIE(cudaMemcpy((char *)g + filled * kern_dtype_bytes(l->gt), h.g,
                                   (size_t)c * kern_dtype_bytes(l->gt), cudaMemcpyHostToDevice));
            filled += c;
        }
        struct kern_adam_bufs db = {.param = p, .exp_avg = m, .exp_avg_sq = v, .grad = g,
                                    .grad_dtype = l->gt, .param_lowp = l->lt ? lp : NULL,
                                    .param_lowp_dtype = l->lt, .numel = n};
        /* Validate one step on the first nval elements. */
        struct kern_adam_bufs vb = db;
        vb.numel = nval;
        if (kern_adam_cuda(s, &vb, 0, &e)) {
            fprintf(stderr, "adam bench: %s\n", e.msg);
            return 3;
        }
        CUDA_OR_DIE(cudaDeviceSynchronize());
        struct arrays d;
        arrays_init(&d, l, nval, 1);
        CUDA_OR_DIE(cudaMemcpy(d.p, p, (size_t)nval * 4, cudaMemcpyDeviceToHost));
        CUDA_OR_DIE(cudaMemcpy(d.m, m, (size_t)nval * 4, cudaMemcpyDeviceToHost));
        CUDA_OR_DIE(cudaMemcpy(d.v, v, (size_t)nval * 4, cudaMemcpyDeviceToHost));
        if (d.lp)
            CUDA_OR_DIE(cudaMemcpy(d.lp, lp, (size_t)nval * 2, cudaMemcpyDeviceToHost));
        run_ref(&h, l, s, 1);
        int ok = same_bytes(&d, &h, l);
        printf("validated (%s, %lld elements): adam.cu %s the reference\n", l->name,
               (long long)nval, ok ? "bitwise equal to" : "DIFFERS FROM");
        arrays_free(&d);
        arrays_free(&h);
        if (!ok)
            return 1;

        /* The copy moves as many bytes (read + write) as one Adam step. */
        const int bpe = bytes_per_elem(l);
        const size_t copy_bytes = (size_t)n * (size_t)bpe / 2;
        void *src, *dst;
        CUDA_OR_DIE(cudaMalloc(&src, copy_bytes));
        CUDA_OR_DIE(cudaMalloc(&dst, copy_bytes));
        CUDA_OR_DIE(cudaMemset(src, 0, copy_bytes));
        cudaEvent_t ev[3];
        for (int k = 0; k < 3; k++)
            CUDA_OR_DIE(cudaEventCreate(&ev[k]));
        double adam_gbps[64], copy_gbps[64], ratio[64];
        for (int r = -1; r < rounds; r++) {
            CUDA_OR_DIE(cudaEventRecord(ev[0], 0));
            CUDA_OR_DIE(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, 0));
            CUDA_OR_DIE(cudaEventRecord(ev[1], 0));
            if (kern_adam_cuda(s, &db, 0, &e)) {
                fprintf(stderr, "adam bench: %s\n", e.msg);
                return 3;
            }
            CUDA_OR_DIE(cudaEventRecord(ev[2], 0));
            CUDA_OR_DIE(cudaEventSynchronize(ev[2]));
            float ms_copy = 0, ms_adam = 0;
            CUDA_OR_DIE(cudaEventElapsedTime(&ms_copy, ev[0], ev[1]));
            CUDA_OR_DIE(cudaEventElapsedTime(&ms_adam, ev[1], ev[2]));
            if (r < 0)
                continue;
            copy_gbps[r] = 2.0 * (double)copy_bytes / (ms_copy * 1e-3) / 1e9;
            adam_gbps[r] = (double)n * bpe / (ms_adam * 1e-3) / 1e9;
            ratio[r] = adam_gbps[r] / copy_gbps[r];
        }
        printf("%s: %d bytes/element\n", l->name, bpe);
        printf("  %-10s  %10s  %19s  %8s\n", "kernel", "GB/s med", "GB/s min..max", "% D2D");
        printf("  %-10s  %10.1f  %8.1f..%-10.1f  %7.1f%%\n", "D2D copy", median(copy_gbps, rounds),
               vmin(copy_gbps, rounds), vmax(copy_gbps, rounds), 100.0);
        printf("  %-10s  %10.1f  %8.1f..%-10.1f  %7.1f%%   (target 90 %%)\n", "adam.cu",
               median(adam_gbps, rounds), vmin(adam_gbps, rounds), vmax(adam_gbps, rounds),
               100.0 * median(ratio, rounds));
        for (int k = 0; k < 3; k++)
            CUDA_OR_DIE(cudaEventDestroy(ev[k]));
        CUDA_OR_DIE(cudaFree(src));
        CUDA_OR_DIE(cudaFree(dst));
    }
    CUDA_OR_DIE(cudaFree(p));
    CUDA_OR_DIE(cudaFree(m));
    CUDA_OR_DIE(cudaFree(v));
    CUDA_OR_DIE(cudaFree(g));
    CUDA_OR_DIE(cudaFree(lp));
    return 0;
}
#endif

/* ---- main ---------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: adam [--numel N] [--rounds R] [--threads LIST] [--gpu] [--no-gpu]\n"
            "  Adam kernel throughput against stream28 (CPU) and a device-to-device copy (GPU).\n"
            "  --numel N      elements per array (default 67108864: 1.75 GiB per pass, far beyond\n"
            "                 the last-level cache; the GPU part defaults to 2^28)\n"
            "  --rounds R     timed rounds, 3..63 (default 7); medians and min..max are reported\n"
            "  --threads LIST comma list of CPU thread counts (default 1..all cores)\n"
            "  --gpu          only the GPU part (exit 3 without a GPU)\n"
            "  --no-gpu       only the CPU part\n"
            "  RL_KERN_ISA=scalar|avx2|avx512 forces the CPU kernel's path.\n");
}

int main(int argc, char **argv)
{
    int64_t numel = 0;
    int rounds = 7, gpu_only = 0, no_gpu = 0, nthr = 0;
    int threads[64];
    for (int i = 1; i < argc; i++) {
        struct rl_err e = {0};
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--gpu")) {
            gpu_only = 1;
        } else if (!strcmp(a, "--no-gpu")) {
            no_gpu = 1;
        } else if (!strcmp(a, "--numel") && i + 1 < argc) {
            if (rl_parse_i64("--numel", argv[++i], 1024, (int64_t)1 << 34, &numel, &e)) {
                fprintf(stderr, "adam bench: %s\n", e.msg);
                return 2;
            }
        } else if (!strcmp(a, "--rounds") && i + 1 < argc) {
            if (rl_parse_int("--rounds", argv[++i], 3, 63, &rounds, &e)) {
                fprintf(stderr, "adam bench: %s\n", e.msg);
                return 2;
            }
        } else if (!strcmp(a, "--threads") && i + 1 < argc) {
            char *list = strdup(argv[++i]), *save = NULL;
            for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (nthr == 64 || rl_parse_int("--threads", tok, 1, 1024, &threads[nthr++], &e)) {
                    fprintf(stderr, "adam bench: %s\n", nthr == 64 ? "--threads: more than 64 "
                            "values (allowed: up to 64)" : e.msg);
                    free(list);
                    return 2;
                }
            }
            free(list);
        } else {
            fprintf(stderr, "adam bench: %s: unknown option or missing value\n", a);
            usage(stderr);
            return 2;
        }
    }
    struct kern_adam_hparams h = kern_adam_hparams_default();
    h.weight_decay = 0.01;
    struct kern_adam_scalars s;
    struct rl_err e = {0};
    if (kern_adam_scalars_make(&h, 10, &s, &e)) {
        fprintf(stderr, "adam bench: %s\n", e.msg);
        return 2;
    }
    if (gpu_only) {
#ifdef RL_HAVE_CUDA
        return gpu_section(numel, rounds, &s);
#else
        printf("GPU: skipped: no GPU (built without nvcc)\n");
        return 3;
#endif
    }
    enum kern_isa isa;
    if (kern_isa_resolve(KERN_ISA_AUTO, &isa, &e)) {
        fprintf(stderr, "adam bench: %s\n", e.msg);
        return 2;
    }
    if (nthr == 0) {
        int cores = omp_get_num_procs();
        for (int t = 1; t <= cores && nthr < 64; t++)
            threads[nthr++] = t;
    }
    int64_t n = numel > 0 ? numel : (int64_t)1 << 26;
    printf("adam bench: CPU kernel path %s, %d cores; AdamW, weight decay 0.01, step 10\n",
           kern_isa_name(isa), omp_get_num_procs());
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
        if (validate(&layouts[li], &s, threads[nthr - 1]))
            return 1;
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
        cpu_table(&layouts[li], n, rounds, threads, nthr, &s);
    if (!no_gpu) {
#ifdef RL_HAVE_CUDA
        int rc = gpu_section(0, rounds, &s);
        if (rc == 1)
            return 1;
#else
        printf("\nGPU: skipped: no GPU (built without nvcc)\n");
#endif
    }
    return 0;
}
