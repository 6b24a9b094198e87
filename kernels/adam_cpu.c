/* kernels/adam_cpu.c — the CPU Adam kernel: AVX-512F or AVX2 lanes chosen at run time, OpenMP
 * threads over contiguous chunks, and the reference (kern__adam_ref_range) for every element the
 * vector loop does not cover.
 *
 * Bitwise equality with the reference holds because each lane performs exactly the operations of
 * kern__adam_elem in the same order (operands of one add or mul may be swapped, which IEEE makes
 * exact), with no FMA (-ffp-contract=off and no fma intrinsics), correctly rounded sqrt and
 * division, the same NaN canonicalisation, and the same integer conversions as lowp.h. MXCSR is
 * never touched: no FTZ/DAZ, so subnormals behave as in the reference. Since every element is
 * independent, the chunking (and so the thread count) cannot change any result.
 *
 * The functions use __attribute__((target(...))), so the file needs no special flags and the
 * library still runs on CPUs without AVX2. */
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adam_ref.h"

/* Threads split the elements at multiples of this many (one 64-byte line of fp32). */
#define KERN__GRAIN 16

/* Software prefetch distance in elements (2 KiB ahead in each fp32 stream). The loop body is long
 * (a divide and a square root per lane) and the hardware prefetchers alone left the kernel at
 * 86-93 % of the bandwidth of a plain streaming loop on the development machine; with it the
 * kernel matches the streaming loop given the same prefetch (bench/adam.c). Prefetches never
 * fault, so reaching past the end of the arrays is harmless. */
#define KERN__PREFETCH 512

/* Prefetches the lines `KERN__PREFETCH` elements ahead of element i in p, m, v and the
 * gradients (gbytes per gradient). The addresses are formed as integers: near the end they lie
 * past the arrays, where C pointer arithmetic would be undefined. */
#define KERN__PF_ADDR(ptr, byte_off) ((const char *)((uintptr_t)(const void *)(ptr) + (uintptr_t)(byte_off)))
#define KERN__PREFETCH_AHEAD(b, i, gbytes)                                                      \
    do {                                                                                        \
        const int64_t ahead_ = (i) + KERN__PREFETCH;                                            \
        _mm_prefetch(KERN__PF_ADDR((b)->param, ahead_ * 4), _MM_HINT_T0);                       \
        _mm_prefetch(KERN__PF_ADDR((b)->exp_avg, ahead_ * 4), _MM_HINT_T0);                     \
        _mm_prefetch(KERN__PF_ADDR((b)->exp_avg_sq, ahead_ * 4), _MM_HINT_T0);                  \
        _mm_prefetch(KERN__PF_ADDR((b)->grad, ahead_ * (gbytes)), _MM_HINT_T0);                 \
    } while (0)

/* ---- AVX-512F: 16 lanes -------------------------------------------------------------------- */

__attribute__((target("avx512f"), always_inline)) static inline __m512
avx512_canon(__m512 x)
{
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(x, nan, _mm512_castsi512_ps(_mm512_set1_epi32((int)KERN_CANON_NAN_BITS)));
}

/* One vector loop, specialised by the compiler for constant gt (gradient dtype), lt (lowp dtype)
 * and decay. Covers [lo, lo + 16 * floor((hi - lo) / 16)) and returns where it stopped. */
__attribute__((target("avx512f"), always_inline)) static inline int64_t
avx512_loop(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int64_t lo,
            int64_t hi, const int gt, const int lt, const int decay)
{
    const __m512 beta1 = _mm512_set1_ps(s->beta1), beta2 = _mm512_set1_ps(s->beta2);
    const __m512 omb1 = _mm512_set1_ps(s->one_minus_beta1);
    const __m512 omb2 = _mm512_set1_ps(s->one_minus_beta2);
    const __m512 step_size = _mm512_set1_ps(s->step_size), bc2r = _mm512_set1_ps(s->bc2_rsqrt);
    const __m512 eps = _mm512_set1_ps(s->eps), wd = _mm512_set1_ps(s->weight_decay);
    const __m512 dfac = _mm512_set1_ps(s->decay_factor);
    const __m512i c7fff = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
    const __m512i qbit = _mm512_set1_epi32(0x40);
    float *pp = b->param, *mp = b->exp_avg, *vp = b->exp_avg_sq;
    int64_t i = lo;
    for (; i + 16 <= hi; i += 16) {
        KERN__PREFETCH_AHEAD(b, i, gt == KERN_F32 ? 4 : 2);
        __m512 g;
        if (gt == KERN_F32)
            g = _mm512_loadu_ps((const float *)b->grad + i);
        else if (gt == KERN_BF16)
            g = _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)b->grad + i))), 16));
        else
            g = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)b->grad + i)));
        __m512 p = _mm512_loadu_ps(pp + i);
        __m512 m = _mm512_loadu_ps(mp + i);
        __m512 v = _mm512_loadu_ps(vp + i);
        if (decay == KERN_DECAY_L2)
            g = _mm512_add_ps(_mm512_mul_ps(p, wd), g);
        m = _mm512_mul_ps(m, beta1);
        m = _mm512_add_ps(_mm512_mul_ps(g, omb1), m);
        v = _mm512_mul_ps(v, beta2);
        __m512 g2 = _mm512_mul_ps(g, g);
        v = _mm512_add_ps(_mm512_mul_ps(g2, omb2), v);
        __m512 denom = _mm512_sqrt_ps(v);
        denom = _mm512_add_ps(_mm512_mul_ps(denom, bc2r), eps);
        __m512 update = _mm512_div_ps(m, denom);
        if (decay == KERN_DECAY_W)
            p = _mm512_add_ps(_mm512_mul_ps(dfac, p), p);
        p = _mm512_add_ps(_mm512_mul_ps(update, step_size), p);
        p = avx512_canon(p);
        m = avx512_canon(m);
        v = avx512_canon(v);
        _mm512_storeu_ps(pp + i, p);
        _mm512_storeu_ps(mp + i, m);
        _mm512_storeu_ps(vp + i, v);
        if (lt == KERN_BF16) {
            __m512i u = _mm512_castps_si512(p);
            __m512i hi16 = _mm512_srli_epi32(u, 16);
            __m512i r = _mm512_srli_epi32(
                _mm512_add_epi32(_mm512_add_epi32(u, c7fff), _mm512_and_si512(hi16, one)), 16);
            r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q),
                                      _mm512_or_si512(hi16, qbit));
            _mm256_storeu_si256((__m256i *)((uint16_t *)b->param_lowp + i), _mm512_cvtepi32_epi16(r));
        } else if (lt == KERN_F16) {
            _mm256_storeu_si256((__m256i *)((uint16_t *)b->param_lowp + i),
                                _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
    }
    return i;
}

/* Calls fn with compile-time constant dtypes and decay, so each of the 27 combinations gets its
 * own branch-free loop. Every path returns. */
#define KERN__CASE_D(fn, g, l)                                                                  \
    switch (s->decay) {                                                                         \
    case KERN_DECAY_L2: return fn(s, b, lo, hi, g, l, KERN_DECAY_L2);                           \
    case KERN_DECAY_W: return fn(s, b, lo, hi, g, l, KERN_DECAY_W);                             \
    default: return fn(s, b, lo, hi, g, l, KERN_DECAY_NONE);                                    \
    }
#define KERN__CASE_L(fn, g)                                                                     \
    switch (b->param_lowp_dtype) {                                                              \
    case KERN_BF16: KERN__CASE_D(fn, g, KERN_BF16)                                              \
    case KERN_F16: KERN__CASE_D(fn, g, KERN_F16)                                                \
    default: KERN__CASE_D(fn, g, KERN_NONE)                                                     \
    }
#define KERN__DISPATCH(fn)                                                                      \
    switch (b->grad_dtype) {                                                                    \
    case KERN_BF16: KERN__CASE_L(fn, KERN_BF16)                                                 \
    case KERN_F16: KERN__CASE_L(fn, KERN_F16)                                                   \
    default: KERN__CASE_L(fn, KERN_F32)                                                         \
    }

/* Vector part of [lo, hi); returns the first element it did not update. */
__attribute__((target("avx512f"))) static int64_t
range_avx512(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int64_t lo,
             int64_t hi)
{
    KERN__DISPATCH(avx512_loop)
}

/* ---- AVX2 (+ F16C for the fp16 conversions): 8 lanes --------------------------------------- */

__attribute__((target("avx2,f16c"), always_inline)) static inline __m256
avx2_canon(__m256 x)
{
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32((int)KERN_CANON_NAN_BITS)), nan);
}

/* As avx512_loop, 8 lanes. */
__attribute__((target("avx2,f16c"), always_inline)) static inline int64_t
avx2_loop(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int64_t lo,
          int64_t hi, const int gt, const int lt, const int decay)
{
    const __m256 beta1 = _mm256_set1_ps(s->beta1), beta2 = _mm256_set1_ps(s->beta2);
    const __m256 omb1 = _mm256_set1_ps(s->one_minus_beta1);
    const __m256 omb2 = _mm256_set1_ps(s->one_minus_beta2);
    const __m256 step_size = _mm256_set1_ps(s->step_size), bc2r = _mm256_set1_ps(s->bc2_rsqrt);
    const __m256 eps = _mm256_set1_ps(s->eps), wd = _mm256_set1_ps(s->weight_decay);
    const __m256 dfac = _mm256_set1_ps(s->decay_factor);
    const __m256i c7fff = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    const __m256i qbit = _mm256_set1_epi32(0x40);
    float *pp = b->param, *mp = b->exp_avg, *vp = b->exp_avg_sq;
    int64_t i = lo;
    for (; i + 8 <= hi; i += 8) {
        if (((i - lo) & 15) == 0)   /* once per 64-byte line of fp32 */
            KERN__PREFETCH_AHEAD(b, i, gt == KERN_F32 ? 4 : 2);
        __m256 g;
        if (gt == KERN_F32)
            g = _mm256_loadu_ps((const float *)b->grad + i);
        else if (gt == KERN_BF16)
            g = _mm256_castsi256_ps(_mm256_slli_epi32(
                _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)b->grad + i))), 16));
        else
            g = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)b->grad + i)));
        __m256 p = _mm256_loadu_ps(pp + i);
        __m256 m = _mm256_loadu_ps(mp + i);
        __m256 v = _mm256_loadu_ps(vp + i);
        if (decay == KERN_DECAY_L2)
            g = _mm256_add_ps(_mm256_mul_ps(p, wd), g);
        m = _mm256_mul_ps(m, beta1);
        m = _mm256_add_ps(_mm256_mul_ps(g, omb1), m);
        v = _mm256_mul_ps(v, beta2);
        __m256 g2 = _mm256_mul_ps(g, g);
        v = _mm256_add_ps(_mm256_mul_ps(g2, omb2), v);
        __m256 denom = _mm256_sqrt_ps(v);
        denom = _mm256_add_ps(_mm256_mul_ps(denom, bc2r), eps);
        __m256 update = _mm256_div_ps(m, denom);
        if (decay == KERN_DECAY_W)
            p = _mm256_add_ps(_mm256_mul_ps(dfac, p), p);
        p = _mm256_add_ps(_mm256_mul_ps(update, step_size), p);
        p = avx2_canon(p);
        m = avx2_canon(m);
        v = avx2_canon(v);
        _mm256_storeu_ps(pp + i, p);
        _mm256_storeu_ps(mp + i, m);
        _mm256_storeu_ps(vp + i, v);
        if (lt == KERN_BF16) {
            __m256i u = _mm256_castps_si256(p);
            __m256i hi16 = _mm256_srli_epi32(u, 16);
            __m256i r = _mm256_srli_epi32(
                _mm256_add_epi32(_mm256_add_epi32(u, c7fff), _mm256_and_si256(hi16, one)), 16);
            __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_UNORD_Q));
            r = _mm256_blendv_epi8(r, _mm256_or_si256(hi16, qbit), nan);
            /* Every lane is <= 0xffff, so the unsigned-saturating pack is exact; the pack works
             * per 128-bit half, and the permute gathers lanes 0-3 and 4-7 into the low half. */
            __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
            _mm_storeu_si128((__m128i *)((uint16_t *)b->param_lowp + i),
                             _mm256_castsi256_si128(packed));
        } else if (lt == KERN_F16) {
            _mm_storeu_si128((__m128i *)((uint16_t *)b->param_lowp + i),
                             _mm256_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
    }
    return i;
}

__attribute__((target("avx2,f16c"))) static int64_t
range_avx2(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int64_t lo,
           int64_t hi)
{
    KERN__DISPATCH(avx2_loop)
}

/* ---- ISA selection --------------------------------------------------------------------------- */

const char *kern_isa_name(enum kern_isa isa)
{
    switch (isa) {
    case KERN_ISA_AUTO: return "auto";
    case KERN_ISA_SCALAR: return "scalar";
    case KERN_ISA_AVX2: return "avx2";
    case KERN_ISA_AVX512: return "avx512";
    }
    return "?";
}

int kern_isa_parse(const char *field, const char *s, enum kern_isa *out, struct rl_err *e)
{
    for (int i = KERN_ISA_AUTO; i <= KERN_ISA_AVX512; i++)
        if (s && strcmp(s, kern_isa_name((enum kern_isa)i)) == 0) {
            *out = (enum kern_isa)i;
            return 0;
        }
    return rl_errf(e, RL_EINVAL, "%s: '%s' is not an instruction set (allowed: auto, scalar, "
                   "avx2, avx512)", field, s ? s : "(null)");
}

bool kern_isa_supported(enum kern_isa isa)
{
    __builtin_cpu_init();
    switch (isa) {
    case KERN_ISA_AUTO:
    case KERN_ISA_SCALAR: return true;
    case KERN_ISA_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case KERN_ISA_AVX512: return __builtin_cpu_supports("avx512f");
    }
    return false;
}

int kern_isa_resolve(enum kern_isa isa, enum kern_isa *out, struct rl_err *e)
{
    const char *field = "isa";
    if (isa == KERN_ISA_AUTO) {
        const char *env = getenv("RL_KERN_ISA");
        if (env && *env) {
            int rc = kern_isa_parse("RL_KERN_ISA", env, &isa, e);
            if (rc)
                return rc;
            field = "RL_KERN_ISA";
        }
    }
    if (isa == KERN_ISA_AUTO) {
        *out = kern_isa_supported(KERN_ISA_AVX512) ? KERN_ISA_AVX512
             : kern_isa_supported(KERN_ISA_AVX2)   ? KERN_ISA_AVX2
                                                   : KERN_ISA_SCALAR;
        return 0;
    }
    if (isa < KERN_ISA_AUTO || isa > KERN_ISA_AVX512)
        return rl_errf(e, RL_EINVAL, "%s: %d is not an instruction set (allowed: auto, scalar, "
                       "avx2, avx512)", field, (int)isa);
    if (!kern_isa_supported(isa))
        return rl_errf(e, RL_EENV, "%s: %s is not supported by this CPU (allowed here: %s)", field,
                       kern_isa_name(isa),
                       kern_isa_supported(KERN_ISA_AVX2) ? "scalar, avx2" : "scalar");
    *out = isa;
    return 0;
}

/* ---- the entry points -------------------------------------------------------------------- */

/* Elements [lo, hi) on one thread: the vector loop, then the reference for the rest. */
static void run_range(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                      enum kern_isa isa, int64_t lo, int64_t hi)
{
    int64_t done = lo;
    if (isa == KERN_ISA_AVX512)
        done = range_avx512(s, b, lo, hi);
    else if (isa == KERN_ISA_AVX2)
        done = range_avx2(s, b, lo, hi);
    kern__adam_ref_range(s, b, done, hi);
}

int kern_adam_cpu_isa(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                      int threads, enum kern_isa isa, struct rl_err *e)
{
    int rc = kern_adam_bufs_check(b, e);
    if (rc)
        return rc;
    if (threads < 1)
        return rl_errf(e, RL_EINVAL, "threads: %d is not allowed (>= 1)", threads);
    rc = kern_isa_resolve(isa, &isa, e);
    if (rc)
        return rc;
    /* Thread t of nt takes blocks [nblk t / nt, nblk (t+1) / nt) of KERN__GRAIN elements: chunks
     * are contiguous, start on a grain boundary, and differ in size by at most one block. */
    const int64_t n = b->numel;
    const int64_t nblk = (n + KERN__GRAIN - 1) / KERN__GRAIN;
    int nt = threads;
    if ((int64_t)nt > nblk)
        nt = (int)nblk;
    if (nt <= 1) {
        run_range(s, b, isa, 0, n);
        return 0;
    }
#pragma omp parallel num_threads(nt)
    {
        /* The runtime may grant fewer threads than asked; split among those actually running. */
        int64_t t = omp_get_thread_num(), got = omp_get_num_threads();
        int64_t lo = nblk * t / got * KERN__GRAIN, hi = nblk * (t + 1) / got * KERN__GRAIN;
        run_range(s, b, isa, lo < n ? lo : n, hi < n ? hi : n);
    }
    return 0;
}

int kern_adam_cpu(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int threads,
                  struct rl_err *e)
{
    return kern_adam_cpu_isa(s, b, threads, KERN_ISA_AUTO, e);
}
