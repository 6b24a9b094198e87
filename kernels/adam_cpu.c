/* kernels/adam_cpu.c — the CPU Adam kernel: AVX-512F or AVX2 lanes chosen at run time, OpenMP
 * threads over contiguous chunks, and the reference (kern__adam_ref_range) for every element the
 * vector loop does not cover.
 *
 * Bitwise equality with the reference holds because each lane performs exactly the operations of
 * kern__adam_elem in the same order (operands of one add or mul may be swapped, which IEEE makes
 * exact), with no FMA (-ffp-contract=off and no fma intrinsics), correctly rounded sqrt and
 * division, the same NaN canonicalisation, and the same integer conversions as lowp.h. MXCSR is
 * never touched: no FTZ/DAZ, so subnormals behave as in the reference. Since every element is
 * independent, the chunking (and so the thread count), the unrolling and the kind of store
 * cannot change any result.
 *
 * What the memory system rewards (bench/adam.c, measured against stream28 in the same process):
 *  - several vectors per iteration, loaded array by array (4 on AVX-512, 2 on AVX2), so each
 *    iteration asks for whole lines of every stream at once;
 *  - non-temporal stores for the 16-bit copy, which is written and never read here: without
 *    them every line of it is first read from memory (write-allocate), 2 bytes per element that
 *    stream28 does not count;
 *  - no software prefetch on AVX-512 (it cost 15-25 % on a Zen 4 core, whose hardware
 *    prefetchers already keep the streams ahead), 2 KiB ahead on AVX2, where it lifted the
 *    kernel on the machine it was developed on; RL_KERN_PREFETCH overrides both.
 *
 * The functions use __attribute__((target(...))), so the file needs no special flags and the
 * library still runs on CPUs without AVX2. */
#include <cpuid.h>       /* __get_cpuid, bit_F16C: clang 14 has no "f16c" for __builtin_cpu_supports */
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adam_ref.h"

/* Threads split the elements at multiples of this many (one 64-byte line of fp32). */
#define KERN__GRAIN 16

/* Default software prefetch distance in elements, per path (0: none); see the top comment. */
#define KERN__PREFETCH_AVX512 0
#define KERN__PREFETCH_AVX2 512

/* Non-temporal stores for the copy only from this many elements per thread (128 KiB of copy):
 * a small copy stays in cache, where whoever reads it next finds it. */
#define KERN__NT_MIN ((int64_t)1 << 16)

/* The address `byte_off` past ptr, formed as an integer: near the end of the arrays it lies
 * past them, where C pointer arithmetic would be undefined. Prefetches never fault. */
#define KERN__PF_ADDR(ptr, byte_off) ((const char *)((uintptr_t)(const void *)(ptr) + (uintptr_t)(byte_off)))

/* Prefetches the lines `dist` elements after element i of p, m, v and the gradients (gbytes
 * per gradient). */
#define KERN__PREFETCH_AHEAD(b, i, dist, gbytes)                                                \
    do {                                                                                        \
        const int64_t ahead_ = (i) + (dist);                                                    \
        _mm_prefetch(KERN__PF_ADDR((b)->param, ahead_ * 4), _MM_HINT_T0);                       \
        _mm_prefetch(KERN__PF_ADDR((b)->exp_avg, ahead_ * 4), _MM_HINT_T0);                     \
        _mm_prefetch(KERN__PF_ADDR((b)->exp_avg_sq, ahead_ * 4), _MM_HINT_T0);                  \
        _mm_prefetch(KERN__PF_ADDR((b)->grad, ahead_ * (gbytes)), _MM_HINT_T0);                 \
    } while (0)

/* Elements to run through the reference before the vector loop, so that the copy of the first
 * vector element starts on a 32-byte boundary and can be stored non-temporally; -1 when that
 * does not pay (no copy, a short range) or cannot happen (a copy not 2-byte aligned). */
static int64_t nt_peel(const struct kern_adam_bufs *b, int64_t lo, int64_t hi)
{
    if (b->param_lowp_dtype == KERN_NONE || hi - lo < KERN__NT_MIN)
        return -1;
    uintptr_t mis = (uintptr_t)((const uint16_t *)b->param_lowp + lo) & 31;
    return mis & 1 ? -1 : (int64_t)((32 - mis) & 31) / 2;
}

/* ---- AVX-512F: 16 lanes -------------------------------------------------------------------- */

/* The per-step scalars, broadcast once per range. */
struct avx512_consts {
    __m512 beta1, beta2;      /* beta1, beta2 */
    __m512 omb1, omb2;        /* 1 - beta1, 1 - beta2 */
    __m512 step_size, bc2r;   /* -lr / bc1, 1 / sqrt(bc2) */
    __m512 eps, wd, dfac;     /* eps, weight_decay, -lr * weight_decay */
};

__attribute__((target("avx512f"), always_inline)) static inline __m512
avx512_canon(__m512 x)
{
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(x, nan, _mm512_castsi512_ps(_mm512_set1_epi32((int)KERN_CANON_NAN_BITS)));
}

/* Gradients i..i+15 widened to fp32 (exact). */
__attribute__((target("avx512f"), always_inline)) static inline __m512
avx512_grad(const void *g, int64_t i, const int gt)
{
    if (gt == KERN_F32)
        return _mm512_loadu_ps((const float *)g + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)g + i));
    if (gt == KERN_BF16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* kern__adam_elem on 16 lanes, in registers. */
__attribute__((target("avx512f"), always_inline)) static inline void
avx512_update(const struct avx512_consts *k, __m512 g, __m512 *pp, __m512 *mp, __m512 *vp,
              const int decay)
{
    __m512 p = *pp, m = *mp, v = *vp;
    if (decay == KERN_DECAY_L2)
        g = _mm512_add_ps(_mm512_mul_ps(p, k->wd), g);
    m = _mm512_mul_ps(m, k->beta1);
    m = _mm512_add_ps(_mm512_mul_ps(g, k->omb1), m);
    v = _mm512_mul_ps(v, k->beta2);
    __m512 g2 = _mm512_mul_ps(g, g);
    v = _mm512_add_ps(_mm512_mul_ps(g2, k->omb2), v);
    __m512 denom = _mm512_sqrt_ps(v);
    denom = _mm512_add_ps(_mm512_mul_ps(denom, k->bc2r), k->eps);
    __m512 update = _mm512_div_ps(m, denom);
    if (decay == KERN_DECAY_W)
        p = _mm512_add_ps(_mm512_mul_ps(k->dfac, p), p);
    p = _mm512_add_ps(_mm512_mul_ps(update, k->step_size), p);
    *pp = avx512_canon(p);
    *mp = avx512_canon(m);
    *vp = avx512_canon(v);
}

/* Stores the copy of 16 updated parameters at element i (nt: non-temporal, 32-byte aligned). */
__attribute__((target("avx512f"), always_inline)) static inline void
avx512_store_lowp(void *lp, int64_t i, __m512 p, const int lt, const int nt)
{
    __m256i out;
    if (lt == KERN_BF16) {
        __m512i u = _mm512_castps_si512(p);
        __m512i hi16 = _mm512_srli_epi32(u, 16);
        __m512i r = _mm512_srli_epi32(
            _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                             _mm512_and_si512(hi16, _mm512_set1_epi32(1))), 16);
        r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q),
                                  _mm512_or_si512(hi16, _mm512_set1_epi32(0x40)));
        out = _mm512_cvtepi32_epi16(r);
    } else if (lt == KERN_F16) {
        out = _mm512_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
        return;
    }
    if (nt)
        _mm256_stream_si256((__m256i *)((uint16_t *)lp + i), out);
    else
        _mm256_storeu_si256((__m256i *)((uint16_t *)lp + i), out);
}

/* From element i, blocks of u vectors (u * 16 elements) while they fit below hi; returns where
 * it stopped. Each array's u vectors are loaded together, then updated, then stored. */
__attribute__((target("avx512f"), always_inline)) static inline int64_t
avx512_blocks(const struct avx512_consts *k, const struct kern_adam_bufs *b, int64_t i,
              int64_t hi, int64_t pf, const int u, const int nt, const int gt, const int lt,
              const int decay)
{
    float *pp = b->param, *mp = b->exp_avg, *vp = b->exp_avg_sq;
    for (; i + 16 * u <= hi; i += 16 * u) {
        if (pf) {
#pragma GCC unroll 4
            for (int j = 0; j < u; j++)
                KERN__PREFETCH_AHEAD(b, i + 16 * j, pf, gt == KERN_F32 ? 4 : 2);
        }
        __m512 g[4], p[4], m[4], v[4];
#pragma GCC unroll 4
        for (int j = 0; j < u; j++)
            g[j] = avx512_grad(b->grad, i + 16 * j, gt);
#pragma GCC unroll 4
        for (int j = 0; j < u; j++)
            p[j] = _mm512_loadu_ps(pp + i + 16 * j);
#pragma GCC unroll 4
        for (int j = 0; j < u; j++)
            m[j] = _mm512_loadu_ps(mp + i + 16 * j);
#pragma GCC unroll 4
        for (int j = 0; j < u; j++)
            v[j] = _mm512_loadu_ps(vp + i + 16 * j);
#pragma GCC unroll 4
        for (int j = 0; j < u; j++)
            avx512_update(k, g[j], &p[j], &m[j], &v[j], decay);
#pragma GCC unroll 4
        for (int j = 0; j < u; j++) {
            _mm512_storeu_ps(pp + i + 16 * j, p[j]);
            _mm512_storeu_ps(mp + i + 16 * j, m[j]);
            _mm512_storeu_ps(vp + i + 16 * j, v[j]);
            avx512_store_lowp(b->param_lowp, i + 16 * j, p[j], lt, nt);
        }
    }
    return i;
}

/* One vector loop, specialised by the compiler for constant gt (gradient dtype), lt (copy dtype)
 * and decay. Updates a prefix of [lo, hi) (a few elements through the reference where that
 * aligns the copy for non-temporal stores, then blocks of 4 and of 1 vectors) and returns the
 * first element it did not update. */
__attribute__((target("avx512f"), always_inline)) static inline int64_t
avx512_loop(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int64_t lo,
            int64_t hi, int64_t pf, const int gt, const int lt, const int decay)
{
    const struct avx512_consts k = {
        .beta1 = _mm512_set1_ps(s->beta1), .beta2 = _mm512_set1_ps(s->beta2),
        .omb1 = _mm512_set1_ps(s->one_minus_beta1), .omb2 = _mm512_set1_ps(s->one_minus_beta2),
        .step_size = _mm512_set1_ps(s->step_size), .bc2r = _mm512_set1_ps(s->bc2_rsqrt),
        .eps = _mm512_set1_ps(s->eps), .wd = _mm512_set1_ps(s->weight_decay),
        .dfac = _mm512_set1_ps(s->decay_factor),
    };
    int64_t i = lo, peel = lt == KERN_NONE ? -1 : nt_peel(b, lo, hi);
    if (peel >= 0) {
        kern__adam_ref_range(s, b, i, i + peel);
        i = avx512_blocks(&k, b, i + peel, hi, pf, 4, 1, gt, lt, decay);
        i = avx512_blocks(&k, b, i, hi, pf, 1, 1, gt, lt, decay);
        _mm_sfence();   /* non-temporal stores are weakly ordered: drain them before returning */
        return i;
    }
    i = avx512_blocks(&k, b, i, hi, pf, 4, 0, gt, lt, decay);
    return avx512_blocks(&k, b, i, hi, pf, 1, 0, gt, lt, decay);
}

/* Calls fn with compile-time constant dtypes and decay, so each of the 27 combinations gets its
 * own branch-free loop. Every path returns. */
#define KERN__CASE_D(fn, g, l)                                                                  \
    switch (s->decay) {                                                                         \
    case KERN_DECAY_L2: return fn(s, b, lo, hi, pf, g, l, KERN_DECAY_L2);                       \
    case KERN_DECAY_W: return fn(s, b, lo, hi, pf, g, l, KERN_DECAY_W);                         \
    default: return fn(s, b, lo, hi, pf, g, l, KERN_DECAY_NONE);                                \
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
             int64_t hi, int64_t pf)
{
    KERN__DISPATCH(avx512_loop)
}

/* ---- AVX2 (+ F16C for the fp16 conversions): 8 lanes --------------------------------------- */

/* As struct avx512_consts. */
struct avx2_consts {
    __m256 beta1, beta2;      /* beta1, beta2 */
    __m256 omb1, omb2;        /* 1 - beta1, 1 - beta2 */
    __m256 step_size, bc2r;   /* -lr / bc1, 1 / sqrt(bc2) */
    __m256 eps, wd, dfac;     /* eps, weight_decay, -lr * weight_decay */
};

__attribute__((target("avx2,f16c"), always_inline)) static inline __m256
avx2_canon(__m256 x)
{
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32((int)KERN_CANON_NAN_BITS)), nan);
}

__attribute__((target("avx2,f16c"), always_inline)) static inline __m256
avx2_grad(const void *g, int64_t i, const int gt)
{
    if (gt == KERN_F32)
        return _mm256_loadu_ps((const float *)g + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)g + i));
    if (gt == KERN_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

__attribute__((target("avx2,f16c"), always_inline)) static inline void
avx2_update(const struct avx2_consts *k, __m256 g, __m256 *pp, __m256 *mp, __m256 *vp,
            const int decay)
{
    __m256 p = *pp, m = *mp, v = *vp;
    if (decay == KERN_DECAY_L2)
        g = _mm256_add_ps(_mm256_mul_ps(p, k->wd), g);
    m = _mm256_mul_ps(m, k->beta1);
    m = _mm256_add_ps(_mm256_mul_ps(g, k->omb1), m);
    v = _mm256_mul_ps(v, k->beta2);
    __m256 g2 = _mm256_mul_ps(g, g);
    v = _mm256_add_ps(_mm256_mul_ps(g2, k->omb2), v);
    __m256 denom = _mm256_sqrt_ps(v);
    denom = _mm256_add_ps(_mm256_mul_ps(denom, k->bc2r), k->eps);
    __m256 update = _mm256_div_ps(m, denom);
    if (decay == KERN_DECAY_W)
        p = _mm256_add_ps(_mm256_mul_ps(k->dfac, p), p);
    p = _mm256_add_ps(_mm256_mul_ps(update, k->step_size), p);
    *pp = avx2_canon(p);
    *mp = avx2_canon(m);
    *vp = avx2_canon(v);
}

/* nt: non-temporal, 16-byte aligned. */
__attribute__((target("avx2,f16c"), always_inline)) static inline void
avx2_store_lowp(void *lp, int64_t i, __m256 p, const int lt, const int nt)
{
    __m128i out;
    if (lt == KERN_BF16) {
        __m256i u = _mm256_castps_si256(p);
        __m256i hi16 = _mm256_srli_epi32(u, 16);
        __m256i r = _mm256_srli_epi32(
            _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                             _mm256_and_si256(hi16, _mm256_set1_epi32(1))), 16);
        __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_UNORD_Q));
        r = _mm256_blendv_epi8(r, _mm256_or_si256(hi16, _mm256_set1_epi32(0x40)), nan);
        /* Every lane is <= 0xffff, so the unsigned-saturating pack is exact; the pack works
         * per 128-bit half, and the permute gathers lanes 0-3 and 4-7 into the low half. */
        out = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
    } else if (lt == KERN_F16) {
        out = _mm256_cvtps_ph(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
        return;
    }
    if (nt)
        _mm_stream_si128((__m128i *)((uint16_t *)lp + i), out);
    else
        _mm_storeu_si128((__m128i *)((uint16_t *)lp + i), out);
}

/* As avx512_blocks, 8 lanes. */
__attribute__((target("avx2,f16c"), always_inline)) static inline int64_t
avx2_blocks(const struct avx2_consts *k, const struct kern_adam_bufs *b, int64_t i, int64_t hi,
            int64_t pf, const int u, const int nt, const int gt, const int lt, const int decay)
{
    float *pp = b->param, *mp = b->exp_avg, *vp = b->exp_avg_sq;
    for (; i + 8 * u <= hi; i += 8 * u) {
        if (pf)   /* u = 2: once per 64-byte line of fp32 */
            KERN__PREFETCH_AHEAD(b, i, pf, gt == KERN_F32 ? 4 : 2);
        __m256 g[2], p[2], m[2], v[2];
#pragma GCC unroll 2
        for (int j = 0; j < u; j++)
            g[j] = avx2_grad(b->grad, i + 8 * j, gt);
#pragma GCC unroll 2
        for (int j = 0; j < u; j++)
            p[j] = _mm256_loadu_ps(pp + i + 8 * j);
#pragma GCC unroll 2
        for (int j = 0; j < u; j++)
            m[j] = _mm256_loadu_ps(mp + i + 8 * j);
#pragma GCC unroll 2
        for (int j = 0; j < u; j++)
            v[j] = _mm256_loadu_ps(vp + i + 8 * j);
#pragma GCC unroll 2
        for (int j = 0; j < u; j++)
            avx2_update(k, g[j], &p[j], &m[j], &v[j], decay);
#pragma GCC unroll 2
        for (int j = 0; j < u; j++) {
            _mm256_storeu_ps(pp + i + 8 * j, p[j]);
            _mm256_storeu_ps(mp + i + 8 * j, m[j]);
            _mm256_storeu_ps(vp + i + 8 * j, v[j]);
            avx2_store_lowp(b->param_lowp, i + 8 * j, p[j], lt, nt);
        }
    }
    return i;
}

/* As avx512_loop: blocks of 2 vectors, then of 1. */
__attribute__((target("avx2,f16c"), always_inline)) static inline int64_t
avx2_loop(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int64_t lo,
          int64_t hi, int64_t pf, const int gt, const int lt, const int decay)
{
    const struct avx2_consts k = {
        .beta1 = _mm256_set1_ps(s->beta1), .beta2 = _mm256_set1_ps(s->beta2),
        .omb1 = _mm256_set1_ps(s->one_minus_beta1), .omb2 = _mm256_set1_ps(s->one_minus_beta2),
        .step_size = _mm256_set1_ps(s->step_size), .bc2r = _mm256_set1_ps(s->bc2_rsqrt),
        .eps = _mm256_set1_ps(s->eps), .wd = _mm256_set1_ps(s->weight_decay),
        .dfac = _mm256_set1_ps(s->decay_factor),
    };
    int64_t i = lo, peel = lt == KERN_NONE ? -1 : nt_peel(b, lo, hi);
    if (peel >= 0) {
        kern__adam_ref_range(s, b, i, i + peel);
        i = avx2_blocks(&k, b, i + peel, hi, pf, 2, 1, gt, lt, decay);
        i = avx2_blocks(&k, b, i, hi, pf, 1, 1, gt, lt, decay);
        _mm_sfence();
        return i;
    }
    i = avx2_blocks(&k, b, i, hi, pf, 2, 0, gt, lt, decay);
    return avx2_blocks(&k, b, i, hi, pf, 1, 0, gt, lt, decay);
}

__attribute__((target("avx2,f16c"))) static int64_t
range_avx2(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int64_t lo,
           int64_t hi, int64_t pf)
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
    case KERN_ISA_AVX2: {
        unsigned a, b, c, d;
        return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    }
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

int kern_adam_prefetch_resolve(enum kern_isa isa, int64_t *out, struct rl_err *e)
{
    const char *env = getenv("RL_KERN_PREFETCH");
    if (env && *env)
        return rl_parse_i64("RL_KERN_PREFETCH", env, 0, (int64_t)1 << 20, out, e);
    *out = isa == KERN_ISA_AVX512 ? KERN__PREFETCH_AVX512
         : isa == KERN_ISA_AVX2   ? KERN__PREFETCH_AVX2
                                  : 0;
    return 0;
}

/* Elements [lo, hi) on one thread: the vector loop, then the reference for the rest. */
static void run_range(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                      enum kern_isa isa, int64_t pf, int64_t lo, int64_t hi)
{
    int64_t done = lo;
    if (isa == KERN_ISA_AVX512)
        done = range_avx512(s, b, lo, hi, pf);
    else if (isa == KERN_ISA_AVX2)
        done = range_avx2(s, b, lo, hi, pf);
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
    int64_t pf;
    rc = kern_adam_prefetch_resolve(isa, &pf, e);
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
        run_range(s, b, isa, pf, 0, n);
        return 0;
    }
#pragma omp parallel num_threads(nt)
    {
        /* The runtime may grant fewer threads than asked; split among those actually running. */
        int64_t t = omp_get_thread_num(), got = omp_get_num_threads();
        int64_t lo = nblk * t / got * KERN__GRAIN, hi = nblk * (t + 1) / got * KERN__GRAIN;
        run_range(s, b, isa, pf, lo < n ? lo : n, hi < n ? hi : n);
    }
    return 0;
}

int kern_adam_cpu(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int threads,
                  struct rl_err *e)
{
    return kern_adam_cpu_isa(s, b, threads, KERN_ISA_AUTO, e);
}
