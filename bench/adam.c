/* bench/adam.c — Adam kernel throughput against the memory limit measured in the same run.
 *
 * CPU: for each thread count 1..all cores and two element layouts (fp32 gradients without a copy;
 * bf16 gradients with a bf16 copy: both move 28 bytes per element), these rows alternate in one
 * process, round after round, over arrays far beyond the last-level cache:
 *   stream28 ...  reads p, g, m, v and writes p, m, v (and the copy) with one add per array: the
 *                 memory limit of an in-place Adam step (no write-allocate traffic, unlike a
 *                 STREAM triad counted at 12 bytes per element). Built for the kernel's ISA path
 *                 with the same target attributes, in up to four variants: with and without
 *                 software prefetch ("pf"), and, with a copy, with and without non-temporal
 *                 stores for it ("nt"). The ceiling is the variant with the best median.
 *   simd          kern_adam_cpu (the ISA chosen at run time, RL_KERN_ISA to force one);
 *   deepspeed     a DeepSpeed-style CPU Adam written from DeepSpeed's published design
 *                 (csrc/includes/cpu_adam.h, simd.h): FMA per element, an eight-register
 *                 unrolled AVX-512 / AVX2 body, OpenMP `parallel for` over 128 Mi-element tiles,
 *                 the remainder by a four-register body and a scalar loop;
 *   plain         a plain C loop of the same formula (OpenMP parallel for; sqrtf stays scalar
 *                 unless -fno-math-errno, which the Makefile gives benchmarks);
 *   reference     kern_adam_ref over the same contiguous chunks.
 * The Adam rows step one set of arrays; the stream rows use a second, identical set, so the Adam
 * state stays what an optimizer sees (finite, v >= 0, |m| <= max |g|), which is checked after
 * the rounds. Each cell is the median over rounds with the min..max spread; "% ceiling" and
 * "x deepspeed" are medians of per-round ratios (the rows of one round ran back to back, which
 * cancels slow drifts on a shared machine; the first row of a round rotates). Results are
 * validated (bitwise against the reference) before anything is timed.
 *
 * GPU (with CUDA and a device; `--gpu` runs only this part): kern_adam_cuda against a
 * device-to-device cudaMemcpy (bytes read + written) in the same run, both timed with events.
 *
 * Usage: adam [--numel N] [--rounds R] [--threads LIST] [--no-huge] [--gpu] [--no-gpu] [--help] */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>   /* madvise */
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

/* Large arrays start on a 2 MiB boundary and are marked for transparent huge pages (unless
 * --no-huge): one TLB entry then covers 512 times as much of a stream. */
#define HUGE_BYTES ((size_t)2 << 20)
static int g_huge = 1;

static void *xalloc(size_t bytes)
{
    void *p = NULL;
    size_t align = bytes >= HUGE_BYTES ? HUGE_BYTES : 64;
    size_t size = (bytes + align - 1) / align * align;
    if (posix_memalign(&p, align, size ? size : 64)) {
        fprintf(stderr, "adam bench: out of memory allocating %zu bytes (try --numel smaller)\n", bytes);
        exit(3);
    }
    if (g_huge && align == HUGE_BYTES)
        (void)madvise(p, size, MADV_HUGEPAGE);   /* advice only: ignored where THP is off */
    return p;
}

/* AnonHugePages of this process in MiB, -1 when /proc does not say. */
static long huge_mib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib < 0 ? -1 : kib / 1024;
}

/* ---- the arrays of one layout ---------------------------------------------------------- */

struct layout {
    const char *name;        /* shown in the table */
    enum kern_dtype gt;      /* gradient dtype: KERN_F32 or KERN_BF16 */
    enum kern_dtype lt;      /* copy dtype: KERN_NONE or KERN_BF16 */
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

/* Gradient i of the start values: in (-0.05, 0.05], the same at every step. */
static float grad0(int64_t i)
{
    uint32_t h = (uint32_t)i * 2654435761u;
    float u = (float)(h >> 8) / 16777216.0f;
    return 0.1f * (0.5f - u);
}

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
        float g = grad0(i);
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

/* After the rounds: every p, m, v finite, v >= 0, |m| <= the largest |g| (m is a running
 * average of g, starting from |m| <= 0.005), and the copy equal to bf16(p), which every Adam row
 * writes. Returns the number of elements that break one of these (0: the state is sound). */
static int64_t state_bad(const struct arrays *a)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < a->n; i++) {
        float p = a->p[i], m = a->m[i], v = a->v[i];
        int ok = isfinite(p) && isfinite(m) && isfinite(v) && v >= 0 && fabsf(m) <= 0.0501f;
        if (a->lp)
            ok = ok && ((const uint16_t *)a->lp)[i] == kern_f32_to_bf16(p);
        bad += !ok;
    }
    return bad;
}

/* ---- stream28: one loop per ISA path ------------------------------------------------------ */

/* Prefetch distance of the "pf" variants in elements: the kernel's on this path
 * (kern_adam_prefetch_resolve), or 512 (2 KiB of fp32, the AVX2 default) where the kernel uses
 * none. Set in main. */
static int64_t g_stream_pf = 512;

/* The address `bytes` past ptr, formed as an integer: near the end of the arrays it lies past
 * them, where pointer arithmetic would be undefined (a prefetch never faults). */
#define PF_ADDR(ptr, bytes) ((const char *)((uintptr_t)(const void *)(ptr) + (uintptr_t)(bytes)))

/* Prefetches the lines g_stream_pf elements after element i of p, m, v and g. */
#define STREAM_PF(a, i, gbytes)                                                                 \
    do {                                                                                        \
        const int64_t ahead_ = (i) + g_stream_pf;                                               \
        _mm_prefetch(PF_ADDR((a)->p, ahead_ * 4), _MM_HINT_T0);                                 \
        _mm_prefetch(PF_ADDR((a)->m, ahead_ * 4), _MM_HINT_T0);                                 \
        _mm_prefetch(PF_ADDR((a)->v, ahead_ * 4), _MM_HINT_T0);                                 \
        _mm_prefetch(PF_ADDR((a)->g, ahead_ * (gbytes)), _MM_HINT_T0);                          \
    } while (0)

/* Elements [i, hi) one by one: the tail of every stream loop, and the whole scalar path.
 * Specialised by the compiler for constant gt, lt (always inlined). */
__attribute__((always_inline)) static inline void stream_elems(const struct arrays *a, int64_t i,
                                                               int64_t hi, const int gt,
                                                               const int lt)
{
    float *restrict p = a->p, *restrict m = a->m, *restrict v = a->v;
    const void *restrict gv = a->g;
    uint16_t *restrict lp = a->lp;
    for (; i < hi; i++) {
        float g = gt == KERN_F32 ? ((const float *)gv)[i]
                                 : kern_bf16_to_f32(((const uint16_t *)gv)[i]);
        float pi = p[i] + g;
        p[i] = pi;
        m[i] = m[i] + g;
        v[i] = v[i] + g;
        if (lt == KERN_BF16)
            lp[i] = (uint16_t)(kern_f32_bits(pi) >> 16);
    }
}

/* The scalar path: the same flags as the kernel's scalar path (none beyond the Makefile's);
 * with pf, the loop walks 64-byte lines and prefetches once per line. */
__attribute__((always_inline)) static inline void stream_scalar_loop(const struct arrays *a,
                                                                     int64_t lo, int64_t hi,
                                                                     const int gt, const int lt,
                                                                     const int pf, const int nt)
{
    (void)nt;   /* no non-temporal scalar stores: the scalar path has none */
    if (!pf) {
        stream_elems(a, lo, hi, gt, lt);
        return;
    }
    for (int64_t i = lo; i < hi; i += 16) {
        STREAM_PF(a, i, gt == KERN_F32 ? 4 : 2);
        stream_elems(a, i, i + 16 < hi ? i + 16 : hi, gt, lt);
    }
}

/* AVX-512F, 16 lanes: the kernel's target attribute and block shape (4 vectors per iteration,
 * each array's loaded together). The copy is the top half of p (one shift: the stream does the
 * least work that still writes every byte). */
__attribute__((target("avx512f"), always_inline)) static inline void
stream_avx512_loop(const struct arrays *a, int64_t lo, int64_t hi, const int gt, const int lt,
                   const int pf, const int nt)
{
    float *restrict p = a->p, *restrict m = a->m, *restrict v = a->v;
    const void *restrict gv = a->g;
    uint16_t *restrict lp = a->lp;
    const int nt_ok = nt && lt == KERN_BF16 && ((uintptr_t)(lp + lo) & 31) == 0;
    int64_t i = lo;
    for (; i + 64 <= hi; i += 64) {
        __m512 g[4], pv[4], mv[4], vv[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            if (pf)
                STREAM_PF(a, i + 16 * j, gt == KERN_F32 ? 4 : 2);
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            if (gt == KERN_F32)
                g[j] = _mm512_loadu_ps((const float *)gv + i + 16 * j);
            else
                g[j] = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
                    _mm256_loadu_si256((const __m256i *)((const uint16_t *)gv + i + 16 * j))), 16));
        }
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            pv[j] = _mm512_add_ps(_mm512_loadu_ps(p + i + 16 * j), g[j]);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            mv[j] = _mm512_add_ps(_mm512_loadu_ps(m + i + 16 * j), g[j]);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            vv[j] = _mm512_add_ps(_mm512_loadu_ps(v + i + 16 * j), g[j]);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            _mm512_storeu_ps(p + i + 16 * j, pv[j]);
            _mm512_storeu_ps(m + i + 16 * j, mv[j]);
            _mm512_storeu_ps(v + i + 16 * j, vv[j]);
            if (lt == KERN_BF16) {
                __m256i c = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(pv[j]), 16));
                if (nt_ok)
                    _mm256_stream_si256((__m256i *)(lp + i + 16 * j), c);
                else
                    _mm256_storeu_si256((__m256i *)(lp + i + 16 * j), c);
            }
        }
    }
    if (nt_ok)
        _mm_sfence();   /* non-temporal stores are weakly ordered */
    stream_elems(a, i, hi, gt, lt);
}

/* AVX2 (+ F16C), the kernel's target attribute and block shape: 16 elements (two vectors, one
 * line of fp32) per iteration. */
__attribute__((target("avx2,f16c"), always_inline)) static inline void
stream_avx2_loop(const struct arrays *a, int64_t lo, int64_t hi, const int gt, const int lt,
                 const int pf, const int nt)
{
    float *restrict p = a->p, *restrict m = a->m, *restrict v = a->v;
    const void *restrict gv = a->g;
    uint16_t *restrict lp = a->lp;
    const int nt_ok = nt && lt == KERN_BF16 && ((uintptr_t)(lp + lo) & 31) == 0;
    int64_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        if (pf)
            STREAM_PF(a, i, gt == KERN_F32 ? 4 : 2);
        __m256 g0, g1;
        if (gt == KERN_F32) {
            g0 = _mm256_loadu_ps((const float *)gv + i);
            g1 = _mm256_loadu_ps((const float *)gv + i + 8);
        } else {
            __m256i raw = _mm256_loadu_si256((const __m256i *)((const uint16_t *)gv + i));
            g0 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(raw)), 16));
            g1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(raw, 1)), 16));
        }
        __m256 p0 = _mm256_add_ps(_mm256_loadu_ps(p + i), g0);
        __m256 p1 = _mm256_add_ps(_mm256_loadu_ps(p + i + 8), g1);
        _mm256_storeu_ps(p + i, p0);
        _mm256_storeu_ps(p + i + 8, p1);
        _mm256_storeu_ps(m + i, _mm256_add_ps(_mm256_loadu_ps(m + i), g0));
        _mm256_storeu_ps(m + i + 8, _mm256_add_ps(_mm256_loadu_ps(m + i + 8), g1));
        _mm256_storeu_ps(v + i, _mm256_add_ps(_mm256_loadu_ps(v + i), g0));
        _mm256_storeu_ps(v + i + 8, _mm256_add_ps(_mm256_loadu_ps(v + i + 8), g1));
        if (lt == KERN_BF16) {
            /* Lanes are <= 0xffff: the saturating pack is exact; it packs per 128-bit half, the
             * permute restores the element order. */
            __m256i c = _mm256_permute4x64_epi64(
                _mm256_packus_epi32(_mm256_srli_epi32(_mm256_castps_si256(p0), 16),
                                    _mm256_srli_epi32(_mm256_castps_si256(p1), 16)), 0xd8);
            if (nt_ok)
                _mm256_stream_si256((__m256i *)(lp + i), c);
            else
                _mm256_storeu_si256((__m256i *)(lp + i), c);
        }
    }
    if (nt_ok)
        _mm_sfence();
    stream_elems(a, i, hi, gt, lt);
}

/* Calls fn with constant layout, prefetch and store choice: each variant is its own loop. */
#define STREAM_CASE_PN(fn, g, lt_)                                                              \
    do {                                                                                        \
        if (pf && nt) fn(a, lo, hi, g, lt_, 1, 1);                                              \
        else if (pf) fn(a, lo, hi, g, lt_, 1, 0);                                               \
        else if (nt) fn(a, lo, hi, g, lt_, 0, 1);                                               \
        else fn(a, lo, hi, g, lt_, 0, 0);                                                       \
    } while (0)
#define STREAM_DISPATCH(fn)                                                                     \
    do {                                                                                        \
        if (l->gt == KERN_F32 && l->lt == KERN_NONE) STREAM_CASE_PN(fn, KERN_F32, KERN_NONE);   \
        else if (l->gt == KERN_F32) STREAM_CASE_PN(fn, KERN_F32, KERN_BF16);                    \
        else if (l->lt == KERN_NONE) STREAM_CASE_PN(fn, KERN_BF16, KERN_NONE);                  \
        else STREAM_CASE_PN(fn, KERN_BF16, KERN_BF16);                                          \
    } while (0)

__attribute__((target("avx512f"))) static void
stream_avx512(const struct arrays *a, const struct layout *l, int64_t lo, int64_t hi, int pf, int nt)
{
    STREAM_DISPATCH(stream_avx512_loop);
}

__attribute__((target("avx2,f16c"))) static void
stream_avx2(const struct arrays *a, const struct layout *l, int64_t lo, int64_t hi, int pf, int nt)
{
    STREAM_DISPATCH(stream_avx2_loop);
}

static void stream_scalar(const struct arrays *a, const struct layout *l, int64_t lo, int64_t hi,
                          int pf, int nt)
{
    STREAM_DISPATCH(stream_scalar_loop);
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

static void run_stream(const struct arrays *a, const struct layout *l, int threads,
                       enum kern_isa isa, int pf, int nt)
{
#pragma omp parallel num_threads(threads)
    {
        int64_t lo, hi;
        chunk(a->n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        if (isa == KERN_ISA_AVX512)
            stream_avx512(a, l, lo, hi, pf, nt);
        else if (isa == KERN_ISA_AVX2)
            stream_avx2(a, l, lo, hi, pf, nt);
        else
            stream_scalar(a, l, lo, hi, pf, nt);
    }
}

/* ---- the DeepSpeed-style peer ------------------------------------------------------------ */

/* Written from DeepSpeed's design (csrc/includes/cpu_adam.h Step_AVX, csrc/includes/simd.h,
 * csrc/adam/cpu_adam_impl.cpp Step_8/4/1), not from its code: the element range is cut into
 * tiles of PEER_TILE elements; each tile is an `omp parallel for` (static schedule) over blocks
 * of PEER_SPAN vectors, which are loaded into PEER_SPAN registers per array and updated with one
 * instruction per operation across the span, FMA wherever a multiply feeds an add. The rest is
 * done by a four-register body and then a scalar loop. No prefetch, no NaN handling; the bf16
 * copy is rounded to nearest even with a NaN check, as DeepSpeed's bf16 store. It is not
 * bitwise equal to the reference (FMA), only close (validated to 1e-5 relative). */
#define PEER_TILE ((int64_t)128 * 1024 * 1024)
#define PEER_SPAN 8

/* Where the weight decay goes, decided on the host as DeepSpeed does (weight_decay > 0). */
struct peer_consts {
    float beta1, beta2, omb1, omb2;   /* beta1, beta2, 1 - beta1, 1 - beta2 */
    float bc2, eps, step;             /* 1 / sqrt(1 - beta2^t), eps, -lr / (1 - beta1^t) */
    float wd;                         /* weight_decay (L2) or -lr * weight_decay (AdamW) */
    int l2, adamw;                    /* which decay, if any */
};

static struct peer_consts peer_consts_of(const struct kern_adam_scalars *s)
{
    struct peer_consts c = {
        .beta1 = s->beta1, .beta2 = s->beta2, .omb1 = s->one_minus_beta1,
        .omb2 = s->one_minus_beta2, .bc2 = s->bc2_rsqrt, .eps = s->eps, .step = s->step_size,
        .wd = s->decay == KERN_DECAY_W ? s->decay_factor : s->weight_decay,
        .l2 = s->decay == KERN_DECAY_L2, .adamw = s->decay == KERN_DECAY_W,
    };
    return c;
}

/* One block of `span` 16-lane vectors at element i. */
__attribute__((target("avx512f"), always_inline)) static inline void
peer_avx512_block(const struct arrays *a, const struct peer_consts *c, int64_t i, const int span,
                  const int gt, const int lt)
{
    const __m512 beta1 = _mm512_set1_ps(c->beta1), beta2 = _mm512_set1_ps(c->beta2);
    const __m512 omb1 = _mm512_set1_ps(c->omb1), omb2 = _mm512_set1_ps(c->omb2);
    const __m512 bc2 = _mm512_set1_ps(c->bc2), eps = _mm512_set1_ps(c->eps);
    const __m512 step = _mm512_set1_ps(c->step), wd = _mm512_set1_ps(c->wd);
    __m512 g[PEER_SPAN], m[PEER_SPAN], v[PEER_SPAN], p[PEER_SPAN];
#pragma GCC unroll 8
    for (int k = 0; k < span; k++) {
        int64_t j = i + 16 * k;
        if (gt == KERN_F32)
            g[k] = _mm512_loadu_ps((const float *)a->g + j);
        else
            g[k] = _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)a->g + j))), 16));
    }
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        m[k] = _mm512_loadu_ps(a->m + i + 16 * k);
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        v[k] = _mm512_loadu_ps(a->v + i + 16 * k);
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        p[k] = _mm512_loadu_ps(a->p + i + 16 * k);
    if (c->l2) {
#pragma GCC unroll 8
        for (int k = 0; k < span; k++)
            g[k] = _mm512_fmadd_ps(p[k], wd, g[k]);
    }
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        m[k] = _mm512_fmadd_ps(g[k], omb1, _mm512_mul_ps(m[k], beta1));
#pragma GCC unroll 8
    for (int k = 0; k < span; k++) {
        v[k] = _mm512_mul_ps(v[k], beta2);
        g[k] = _mm512_mul_ps(g[k], g[k]);
        v[k] = _mm512_fmadd_ps(g[k], omb2, v[k]);
    }
#pragma GCC unroll 8
    for (int k = 0; k < span; k++) {
        g[k] = _mm512_fmadd_ps(_mm512_sqrt_ps(v[k]), bc2, eps);
        g[k] = _mm512_div_ps(m[k], g[k]);
    }
    if (c->adamw) {
#pragma GCC unroll 8
        for (int k = 0; k < span; k++)
            p[k] = _mm512_fmadd_ps(p[k], wd, p[k]);
    }
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        p[k] = _mm512_fmadd_ps(g[k], step, p[k]);
#pragma GCC unroll 8
    for (int k = 0; k < span; k++) {
        _mm512_storeu_ps(a->p + i + 16 * k, p[k]);
        _mm512_storeu_ps(a->m + i + 16 * k, m[k]);
        _mm512_storeu_ps(a->v + i + 16 * k, v[k]);
    }
    if (lt == KERN_BF16) {
#pragma GCC unroll 8
        for (int k = 0; k < span; k++) {
            __m512i u = _mm512_castps_si512(p[k]);
            __m512i bias = _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32(u, 16),
                                                             _mm512_set1_epi32(1)),
                                            _mm512_set1_epi32(0x7fff));
            __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
            __mmask16 nan = _mm512_cmp_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000), _MM_CMPINT_GT);
            r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7fc0));
            _mm256_storeu_si256((__m256i *)((uint16_t *)a->lp + i + 16 * k), _mm512_cvtusepi32_epi16(r));
        }
    }
}

/* As peer_avx512_block, 8 lanes (DeepSpeed's AVX2 build has no bf16; this one widens and rounds
 * as the AVX-512 one does). */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
peer_avx2_block(const struct arrays *a, const struct peer_consts *c, int64_t i, const int span,
                const int gt, const int lt)
{
    const __m256 beta1 = _mm256_set1_ps(c->beta1), beta2 = _mm256_set1_ps(c->beta2);
    const __m256 omb1 = _mm256_set1_ps(c->omb1), omb2 = _mm256_set1_ps(c->omb2);
    const __m256 bc2 = _mm256_set1_ps(c->bc2), eps = _mm256_set1_ps(c->eps);
    const __m256 step = _mm256_set1_ps(c->step), wd = _mm256_set1_ps(c->wd);
    __m256 g[PEER_SPAN], m[PEER_SPAN], v[PEER_SPAN], p[PEER_SPAN];
#pragma GCC unroll 8
    for (int k = 0; k < span; k++) {
        int64_t j = i + 8 * k;
        if (gt == KERN_F32)
            g[k] = _mm256_loadu_ps((const float *)a->g + j);
        else
            g[k] = _mm256_castsi256_ps(_mm256_slli_epi32(
                _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)a->g + j))), 16));
    }
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        m[k] = _mm256_loadu_ps(a->m + i + 8 * k);
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        v[k] = _mm256_loadu_ps(a->v + i + 8 * k);
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        p[k] = _mm256_loadu_ps(a->p + i + 8 * k);
    if (c->l2) {
#pragma GCC unroll 8
        for (int k = 0; k < span; k++)
            g[k] = _mm256_fmadd_ps(p[k], wd, g[k]);
    }
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        m[k] = _mm256_fmadd_ps(g[k], omb1, _mm256_mul_ps(m[k], beta1));
#pragma GCC unroll 8
    for (int k = 0; k < span; k++) {
        v[k] = _mm256_mul_ps(v[k], beta2);
        g[k] = _mm256_mul_ps(g[k], g[k]);
        v[k] = _mm256_fmadd_ps(g[k], omb2, v[k]);
    }
#pragma GCC unroll 8
    for (int k = 0; k < span; k++) {
        g[k] = _mm256_fmadd_ps(_mm256_sqrt_ps(v[k]), bc2, eps);
        g[k] = _mm256_div_ps(m[k], g[k]);
    }
    if (c->adamw) {
#pragma GCC unroll 8
        for (int k = 0; k < span; k++)
            p[k] = _mm256_fmadd_ps(p[k], wd, p[k]);
    }
#pragma GCC unroll 8
    for (int k = 0; k < span; k++)
        p[k] = _mm256_fmadd_ps(g[k], step, p[k]);
#pragma GCC unroll 8
    for (int k = 0; k < span; k++) {
        _mm256_storeu_ps(a->p + i + 8 * k, p[k]);
        _mm256_storeu_ps(a->m + i + 8 * k, m[k]);
        _mm256_storeu_ps(a->v + i + 8 * k, v[k]);
    }
    if (lt == KERN_BF16) {
#pragma GCC unroll 8
        for (int k = 0; k < span; k++) {
            __m256i u = _mm256_castps_si256(p[k]);
            __m256i bias = _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32(u, 16),
                                                             _mm256_set1_epi32(1)),
                                            _mm256_set1_epi32(0x7fff));
            __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
            __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                             _mm256_set1_epi32(0x7f800000));
            r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0), nan);
            __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
            _mm_storeu_si128((__m128i *)((uint16_t *)a->lp + i + 8 * k), _mm256_castsi256_si128(packed));
        }
    }
}

/* One DeepSpeed Step_AVX<span> for one layout: tiles of [lo, rounded), each an omp parallel for
 * over blocks. Span and dtypes are literals inside the loop (the outlined OpenMP body would
 * otherwise see them as variables, as a template argument never is). Returns `rounded`, where
 * the next, narrower step starts. */
/* Each thread's share of a tile is a call of name##_range (its own target function: clang does not
 * give an OpenMP region's outlined body the target of the function around it, and inlining the
 * block's intrinsics into it crashed clang 14's instruction selection), split as schedule(static)
 * splits the blocks: contiguous, the first (nblk % threads) threads one block more. */
#define PEER_STEP(name, block, target_, width, span, gt, lt)                                    \
    __attribute__((target(target_), noinline)) static void                                      \
    name##_range(const struct arrays *a, const struct peer_consts *c, int64_t i0, int64_t i1)   \
    {                                                                                           \
        for (int64_t i = i0; i < i1; i += (int64_t)(width) * (span))                            \
            block(a, c, i, span, gt, lt);                                                       \
    }                                                                                           \
    static int64_t name(const struct arrays *a, const struct peer_consts *c, int threads, int64_t lo) \
    {                                                                                           \
        const int64_t blk = (int64_t)(width) * (span);                                          \
        const int64_t rounded = lo + (a->n - lo) / blk * blk;                                   \
        for (int64_t t = lo; t < rounded; t += PEER_TILE) {                                     \
            const int64_t end = t + PEER_TILE < rounded ? t + PEER_TILE : rounded;              \
            _Pragma("omp parallel num_threads(threads)")                                        \
            {                                                                                   \
                const int64_t nb = (end - t + blk - 1) / blk, nt = omp_get_num_threads(), me = omp_get_thread_num(); \
                const int64_t q = nb / nt, r = nb % nt;                                         \
                const int64_t b0 = me * q + (me < r ? me : r), b1 = b0 + q + (me < r);          \
                name##_range(a, c, t + b0 * blk, t + b1 * blk);                                 \
            }                                                                                   \
        }                                                                                       \
        return rounded;                                                                         \
    }
/* The 8- and 4-register steps of one ISA for the four layouts (f: fp32, b: bf16, n: none). */
#define PEER_STEPS(isa, block, target_, width)                                                  \
    PEER_STEP(peer_##isa##_8_fn, block, target_, width, 8, KERN_F32, KERN_NONE)                 \
    PEER_STEP(peer_##isa##_4_fn, block, target_, width, 4, KERN_F32, KERN_NONE)                 \
    PEER_STEP(peer_##isa##_8_fb, block, target_, width, 8, KERN_F32, KERN_BF16)                 \
    PEER_STEP(peer_##isa##_4_fb, block, target_, width, 4, KERN_F32, KERN_BF16)                 \
    PEER_STEP(peer_##isa##_8_bn, block, target_, width, 8, KERN_BF16, KERN_NONE)                \
    PEER_STEP(peer_##isa##_4_bn, block, target_, width, 4, KERN_BF16, KERN_NONE)                \
    PEER_STEP(peer_##isa##_8_bb, block, target_, width, 8, KERN_BF16, KERN_BF16)                \
    PEER_STEP(peer_##isa##_4_bb, block, target_, width, 4, KERN_BF16, KERN_BF16)
PEER_STEPS(avx512, peer_avx512_block, "avx512f", 16)
PEER_STEPS(avx2, peer_avx2_block, "avx2,fma,f16c", 8)

/* DeepSpeed's Step_1: the scalar loop (FMA only where the compiler is allowed to form it, which
 * -ffp-contract=off forbids here). */
static void peer_scalar(const struct arrays *a, const struct peer_consts *c, int threads,
                        int64_t lo, const struct layout *l)
{
    const int64_t n = a->n;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t k = lo; k < n; k++) {
        float g = l->gt == KERN_F32 ? ((const float *)a->g)[k]
                                    : kern_bf16_to_f32(((const uint16_t *)a->g)[k]);
        float p = a->p[k], m = a->m[k], v = a->v[k];
        if (c->l2)
            g = p * c->wd + g;
        m = m * c->beta1;
        m = g * c->omb1 + m;
        v = v * c->beta2;
        g = g * g;
        v = g * c->omb2 + v;
        g = sqrtf(v);
        g = g * c->bc2 + c->eps;
        g = m / g;
        if (c->adamw)
            p += c->wd * p;
        p = g * c->step + p;
        a->p[k] = p;
        a->m[k] = m;
        a->v[k] = v;
        if (a->lp)
            ((uint16_t *)a->lp)[k] = kern_f32_to_bf16(p);
    }
}

/* Step_8 then Step_4 of one ISA for the layout of l; returns where the scalar loop starts. */
#define PEER_DISPATCH(isa)                                                                      \
    do {                                                                                        \
        int64_t lo = 0;                                                                         \
        if (l->gt == KERN_F32 && l->lt == KERN_NONE)                                            \
            return peer_##isa##_4_fn(a, c, threads, peer_##isa##_8_fn(a, c, threads, lo));     \
        if (l->gt == KERN_F32)                                                                  \
            return peer_##isa##_4_fb(a, c, threads, peer_##isa##_8_fb(a, c, threads, lo));     \
        if (l->lt == KERN_NONE)                                                                 \
            return peer_##isa##_4_bn(a, c, threads, peer_##isa##_8_bn(a, c, threads, lo));     \
        return peer_##isa##_4_bb(a, c, threads, peer_##isa##_8_bb(a, c, threads, lo));         \
    } while (0)

static int64_t peer_avx512(const struct arrays *a, const struct layout *l,
                           const struct peer_consts *c, int threads)
{
    PEER_DISPATCH(avx512);
}

static int64_t peer_avx2(const struct arrays *a, const struct layout *l,
                         const struct peer_consts *c, int threads)
{
    PEER_DISPATCH(avx2);
}

/* DeepSpeed's Step_8 on the ISA path of the kernel: 8-register body, 4-register body, scalar. */
static void run_peer(const struct arrays *a, const struct layout *l,
                     const struct kern_adam_scalars *s, int threads, enum kern_isa isa)
{
    struct peer_consts c = peer_consts_of(s);
    int64_t lo = 0;
    if (isa == KERN_ISA_AVX512)
        lo = peer_avx512(a, l, &c, threads);
    else if (isa == KERN_ISA_AVX2)
        lo = peer_avx2(a, l, &c, threads);
    peer_scalar(a, &c, threads, lo, l);
}

/* ---- the other rows ---------------------------------------------------------------------- */

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

/* Largest relative difference of p, m, v between x and the reference r. */
static double max_rel_diff(const struct arrays *x, const struct arrays *r)
{
    double worst = 0;
    const float *xs[3] = {x->p, x->m, x->v}, *rs[3] = {r->p, r->m, r->v};
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < r->n; i++) {
            double d = fabs((double)xs[k][i] - (double)rs[k][i]) / fmax(fabs((double)rs[k][i]), 1e-30);
            worst = d > worst ? d : worst;
        }
    return worst;
}

/* Runs reference, simd, the peer and plain on copies of the same 1e6 + 3 elements; returns 0
 * when simd (and the plain loop, for the timings to compare like with like) equal the reference
 * bit for bit and the peer is within 1e-5 of it. */
static int validate(const struct layout *l, const struct kern_adam_scalars *s, int threads,
                    enum kern_isa isa)
{
    const int64_t n = 1000003;
    struct arrays r, x, y, z;
    arrays_init(&r, l, n, threads);
    arrays_init(&x, l, n, threads);
    arrays_init(&y, l, n, threads);
    arrays_init(&z, l, n, threads);
    run_ref(&r, l, s, 1);
    run_simd(&x, l, s, threads);
    run_plain(&y, l, s, threads);
    run_peer(&z, l, s, threads, isa);
    int simd_ok = same_bytes(&x, &r, l), plain_ok = same_bytes(&y, &r, l);
    double peer_rel = max_rel_diff(&z, &r);
    int peer_ok = peer_rel <= 1e-5;
    printf("validated (%s, 1e6+3 elements): simd %s the reference, plain loop %s, deepspeed "
           "within %.1e (FMA)%s\n", l->name, simd_ok ? "bitwise equal to" : "DIFFERS FROM",
           plain_ok ? "equal" : "differs", peer_rel, peer_ok ? "" : " TOO FAR (> 1e-5)");
    arrays_free(&r);
    arrays_free(&x);
    arrays_free(&y);
    arrays_free(&z);
    return simd_ok && peer_ok ? 0 : 1;
}

/* ---- the CPU table ------------------------------------------------------------------------ */

/* The rows; the non-temporal stream variants only exist for layouts with a copy. */
enum { R_ST_PF, R_ST, R_ST_PF_NT, R_ST_NT, R_SIMD, R_PEER, R_PLAIN, R_REF, NR };
static const char *rnames[NR] = {"stream28 pf", "stream28", "stream28 pf nt", "stream28 nt",
                                 "simd", "deepspeed", "plain", "reference"};
#define N_STREAM 4   /* rows 0..3 are stream variants */

/* What the summary needs of one (layout, thread count). */
struct cell {
    int threads;                 /* thread count */
    int ceiling;                 /* the row that is the ceiling (a stream variant) */
    double pct_ceiling[NR];      /* median of per-round time(ceiling) / time(row), in percent */
    double x_peer[NR];           /* median of per-round time(peer) / time(row) */
};

/* Returns 0, or 1 when the state is unsound after the rounds. */
static int cpu_table(const struct layout *l, int64_t n, int rounds, const int *threads, int nthr,
                     const struct kern_adam_scalars *s, enum kern_isa isa, struct cell *cells)
{
    const int bpe = bytes_per_elem(l);
    int live[NR];
    for (int r = 0; r < NR; r++)
        live[r] = !(l->lt == KERN_NONE && (r == R_ST_PF_NT || r == R_ST_NT));
    printf("\n%s: %d bytes/element, %lld elements (%.0f MiB moved per pass), %d rounds\n", l->name,
           bpe, (long long)n, (double)n * bpe / 1048576.0, rounds);
    printf("%7s  %-14s  %9s  %10s  %19s  %10s  %11s\n", "threads", "row", "Melem/s", "GB/s med",
           "GB/s min..max", "% ceiling", "x deepspeed");
    for (int ti = 0; ti < nthr; ti++) {
        int t = threads[ti];
        struct arrays a, st;   /* the Adam state; the stream rows' own arrays */
        arrays_init(&a, l, n, t);
        arrays_init(&st, l, n, t);
        long huge = huge_mib();
        static double sec[NR][64];
        /* One untimed pass of each row, then rounds in which they alternate; the first row of
         * round k is row k mod NR. */
        for (int k = -1; k < rounds; k++) {
            for (int j = 0; j < NR; j++) {
                int r = (j + (k < 0 ? 0 : k)) % NR;
                if (!live[r])
                    continue;
                double t0 = now_s();
                switch (r) {
                case R_ST_PF: run_stream(&st, l, t, isa, 1, 0); break;
                case R_ST: run_stream(&st, l, t, isa, 0, 0); break;
                case R_ST_PF_NT: run_stream(&st, l, t, isa, 1, 1); break;
                case R_ST_NT: run_stream(&st, l, t, isa, 0, 1); break;
                case R_SIMD: run_simd(&a, l, s, t); break;
                case R_PEER: run_peer(&a, l, s, t, isa); break;
                case R_PLAIN: run_plain(&a, l, s, t); break;
                default: run_ref(&a, l, s, t); break;
                }
                if (k >= 0)
                    sec[r][k] = now_s() - t0;
            }
        }
        double gbps[NR][64], med[NR];
        int best = -1;
        for (int r = 0; r < NR; r++) {
            if (!live[r])
                continue;
            for (int k = 0; k < rounds; k++)
                gbps[r][k] = (double)n * bpe / sec[r][k] / 1e9;
            med[r] = median(gbps[r], rounds);
            if (r < N_STREAM && (best < 0 || med[r] > med[best]))
                best = r;
        }
        struct cell *c = &cells[ti];
        c->threads = t;
        c->ceiling = best;
        for (int r = 0; r < NR; r++) {
            if (!live[r])
                continue;
            double rc[64], rp[64];
            for (int k = 0; k < rounds; k++) {
                rc[k] = sec[best][k] / sec[r][k];
                rp[k] = sec[R_PEER][k] / sec[r][k];
            }
            c->pct_ceiling[r] = 100.0 * median(rc, rounds);
            c->x_peer[r] = median(rp, rounds);
            char range[64];
            snprintf(range, sizeof range, "%.2f..%.2f", vmin(gbps[r], rounds), vmax(gbps[r], rounds));
            printf("%7d  %-14s  %9.1f  %10.2f  %19s  %9.1f%%  %10.2fx%s\n", t, rnames[r],
                   med[r] * 1e9 / bpe / 1e6, med[r], range, c->pct_ceiling[r], c->x_peer[r],
                   r == best ? "  <- ceiling" : "");
        }
        int64_t bad = state_bad(&a);
        printf("%7d  state after %d passes: %s; huge pages: %ld MiB of the arrays\n", t,
               4 * (rounds + 1), bad ? "UNSOUND" : "p, m, v finite, v >= 0, |m| <= max |g|, "
               "copy = bf16(p)", huge);
        if (bad)
            printf("%7d  %lld elements break it\n", t, (long long)bad);
        arrays_free(&a);
        arrays_free(&st);
        if (bad)
            return 1;
    }
    return 0;
}

/* One line per Adam row: % of the ceiling and ratio to the peer at every thread count. */
static void summary(const struct layout *l, const struct cell *cells, int nthr, enum kern_isa isa)
{
    static const int rows[] = {R_SIMD, R_PEER, R_PLAIN, R_REF};
    for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
        int r = rows[ri];
        char pct[256] = "", xp[256] = "", thr[128] = "";
        double worst_pct = 1e9, worst_x = 1e9;
        for (int ti = 0; ti < nthr; ti++) {
            const struct cell *c = &cells[ti];
            size_t lp = strlen(pct), lx = strlen(xp), lt = strlen(thr);
            snprintf(pct + lp, sizeof pct - lp, "%s%.1f", ti ? " / " : "", c->pct_ceiling[r]);
            snprintf(xp + lx, sizeof xp - lx, "%s%.2f", ti ? " / " : "", c->x_peer[r]);
            snprintf(thr + lt, sizeof thr - lt, "%s%d", ti ? "/" : "", c->threads);
            worst_pct = c->pct_ceiling[r] < worst_pct ? c->pct_ceiling[r] : worst_pct;
            worst_x = c->x_peer[r] < worst_x ? c->x_peer[r] : worst_x;
        }
        printf("summary: %-9s (%s) %-20s  %s %% of ceiling, %sx deepspeed at %s threads", rnames[r],
               r == R_PLAIN || r == R_REF ? "scalar" : kern_isa_name(isa), l->name, pct, xp, thr);
        if (r == R_SIMD) {
            printf("  [>= 95 %% of ceiling: %s; >= 1.10x deepspeed: %s", worst_pct >= 95.0 ? "met"
                   : "NOT met", worst_x >= 1.10 ? "met" : "NOT met");
            /* A memory-bound kernel cannot beat the peer by more than ceiling / peer: where the
             * peer itself runs within 10 % of the ceiling, 1.10x is beyond the physical limit. */
            char lim[256] = "", peer[256] = "";
            int capped = 0;
            for (int ti = 0; ti < nthr; ti++) {
                double pp = cells[ti].pct_ceiling[R_PEER];
                size_t ll = strlen(lim), lq = strlen(peer);
                snprintf(lim + ll, sizeof lim - ll, "%s%.2f", ti ? " / " : "", 100.0 / pp);
                snprintf(peer + lq, sizeof peer - lq, "%s%.1f", ti ? " / " : "", pp);
                capped |= 100.0 / pp < 1.10;
            }
            if (worst_x < 1.10 && capped)
                printf(" (out of reach here: deepspeed runs at %s %% of the ceiling, so the "
                       "memory limit allows at most %sx)", peer, lim);
            printf("]");
        }
        printf("\n");
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
            "usage: adam [--numel N] [--rounds R] [--threads LIST] [--no-huge] [--gpu] [--no-gpu]\n"
            "  Adam kernel throughput against stream28 (CPU) and a device-to-device copy (GPU).\n"
            "  --numel N      elements per array (default 67108864: 1.75 GiB per pass, far beyond\n"
            "                 the last-level cache; the GPU part defaults to 2^28)\n"
            "  --rounds R     timed rounds, 7..63 (default 7); medians and min..max are reported\n"
            "  --threads LIST comma list of CPU thread counts (default 1..all cores)\n"
            "  --no-huge      no madvise(MADV_HUGEPAGE) on the arrays (4 KiB pages)\n"
            "  --gpu          only the GPU part (exit 3 without a GPU)\n"
            "  --no-gpu       only the CPU part\n"
            "  RL_KERN_ISA=scalar|avx2|avx512 forces the CPU path (kernel, stream and peer).\n");
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
        } else if (!strcmp(a, "--no-huge")) {
            g_huge = 0;
        } else if (!strcmp(a, "--numel") && i + 1 < argc) {
            if (rl_parse_i64("--numel", argv[++i], 1024, (int64_t)1 << 34, &numel, &e)) {
                fprintf(stderr, "adam bench: %s\n", e.msg);
                return 2;
            }
        } else if (!strcmp(a, "--rounds") && i + 1 < argc) {
            if (rl_parse_int("--rounds", argv[++i], 7, 63, &rounds, &e)) {
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
    int64_t kern_pf;
    if (kern_adam_prefetch_resolve(isa, &kern_pf, &e)) {
        fprintf(stderr, "adam bench: %s\n", e.msg);
        return 2;
    }
    printf("adam bench: %d cores; AdamW, weight decay 0.01, step 10\n", omp_get_num_procs());
    g_stream_pf = kern_pf > 0 ? kern_pf : 512;
    printf("paths: kernel %s (kern_adam_cpu, software prefetch %lld elements ahead), stream28 %s "
           "(same target attributes; pf variants %lld ahead), deepspeed %s (8-register FMA body, "
           "%lld Mi-element tiles)\n", kern_isa_name(isa), (long long)kern_pf, kern_isa_name(isa),
           (long long)g_stream_pf, kern_isa_name(isa), (long long)(PEER_TILE >> 20));
    printf("arrays: %s\n", g_huge ? "2 MiB aligned, madvise(MADV_HUGEPAGE)" : "4 KiB pages (--no-huge)");
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
        if (validate(&layouts[li], &s, threads[nthr - 1], isa))
            return 1;
    struct cell cells[sizeof layouts / sizeof layouts[0]][64];
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
        if (cpu_table(&layouts[li], n, rounds, threads, nthr, &s, isa, cells[li]))
            return 1;
    printf("\n");
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++)
        summary(&layouts[li], cells[li], nthr, isa);
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
