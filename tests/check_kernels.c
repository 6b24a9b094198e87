/* tests/check_kernels.c — the Adam kernels (kernels/): the lowp conversions against independent
 * oracles, the reference against a float64 formula, and the CPU kernel bitwise against the
 * reference for every ISA path on this machine, sizes 0..300 and 1e6+3, offsets 0..15, 1-3
 * threads, 1 and 100 steps, both modes and every gradient and copy dtype.
 *
 * The bitwise loops (tag "long") have two lengths: RL_TEST_LONG=1 (`make test-long`, `make
 * mutate`) runs every size x offset; `make test` runs a quarter of the offsets of each size,
 * rotating so that every offset still meets every size class, every vector tail and both
 * same/spread layouts, and kills every kernel mutant of tests/mutants/ (kern-*, lowp-*). On a
 * loaded 2-core machine the full length costs minutes: 3 threads on 2 busy cores make every
 * OpenMP region wait for a time slice. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/dtype.h"
#include "kernels/adam.h"
#include "kernels/lowp.h"
#include "kernels/scan.h"
#include "tests/kern_case.h"
#include "tests/util.h"

/* Check records every ck_assert it passes (a message to the runner each), which costs more than
 * the checks themselves in loops of millions: loops use REQUIRE, which only reports failures. */
#define REQUIRE(cond, ...)                                                                      \
    do {                                                                                        \
        if (!(cond))                                                                            \
            ck_abort_msg(__VA_ARGS__);                                                          \
    } while (0)

/* ---- shared case helpers (declared in kern_case.h) ------------------------------------------ */

uint64_t kc_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int elem_bytes(const struct kc_arrays *a, int k)
{
    return k < 3 ? 4 : k == 3 ? kern_dtype_bytes(a->gt) : kern_dtype_bytes(a->lt);
}

void kc_alloc(struct kc_arrays *a, int64_t n, const int *off, enum kern_dtype gt,
              enum kern_dtype lt)
{
    memset(a, 0, sizeof *a);
    a->n = n;
    a->gt = gt;
    a->lt = lt;
    void *at[KC_NARR];
    for (int k = 0; k < KC_NARR; k++) {
        a->off[k] = off ? off[k] : 0;
        int eb = elem_bytes(a, k);
        at[k] = NULL;
        if (eb == 0)
            continue;
        size_t bytes = (size_t)(a->off[k] + n) * (size_t)eb;
        REQUIRE(posix_memalign(&a->base[k], 64, bytes ? bytes : 1) == 0, "out of memory");
        at[k] = (char *)a->base[k] + (size_t)a->off[k] * (size_t)eb;
    }
    a->p = at[0];
    a->m = at[1];
    a->v = at[2];
    a->g = at[3];
    a->lp = at[4];
}

void kc_free(struct kc_arrays *a)
{
    for (int k = 0; k < KC_NARR; k++)
        free(a->base[k]);
    memset(a, 0, sizeof *a);
}

/* A value that breaks naive code: NaN with payloads, infinities, zeros, subnormals, huge. */
static uint32_t special_bits(uint64_t *r)
{
    uint64_t x = kc_rand(r);
    uint32_t sign = (uint32_t)(x >> 63) << 31;
    uint32_t mant = (uint32_t)(x >> 8) & 0x7fffffu;
    switch ((x >> 40) % 10) {
    case 0: return 0x7fc00000u;                                    /* quiet NaN */
    case 1: return sign | 0x7f800000u | (mant ? mant : 1u);        /* NaN with payload */
    case 2: return sign | 0x7f800000u;                             /* +-Inf */
    case 3: return sign;                                           /* +-0 */
    case 4: return sign | (mant ? mant : 1u);                      /* subnormal */
    case 5: return sign | ((uint32_t)(250 + (x >> 48) % 5) << 23) | mant;   /* huge, ~1e37 */
    case 6: return sign | 0x7f7fffffu;                             /* +-FLT_MAX */
    case 7: return sign | ((uint32_t)(1 + (x >> 48) % 8) << 23) | mant;     /* tiny normal */
    default: return (uint32_t)(x >> 32);                           /* any bit pattern */
    }
}

/* Mostly normal values with magnitude 2^[lo, hi], one in ten special. */
static float draw(uint64_t *r, int lo, int hi, int nonneg)
{
    uint64_t x = kc_rand(r);
    if (x % 10 == 0)
        return kern_f32_from_bits(special_bits(r));
    int ex = lo + (int)((x >> 8) % (uint64_t)(hi - lo + 1));
    float mag = ldexpf(1.0f + (float)((x >> 32) & 0xffffff) / 16777216.0f, ex);
    return (!nonneg && (x >> 60) & 1) ? -mag : mag;
}

void kc_fill(struct kc_arrays *a, uint64_t *rng)
{
    for (int64_t i = 0; i < a->n; i++) {
        a->p[i] = draw(rng, -30, 16, 0);
        a->m[i] = draw(rng, -40, 4, 0);
        a->v[i] = draw(rng, -80, 8, 1);
        /* Gradients down to 2^-75 make g*g subnormal. 16-bit ones: any bit pattern half the time
         * (every NaN, Inf, subnormal), else the truncated top of a drawn float. */
        float g = draw(rng, -75, 10, 0);
        if (a->gt == KERN_F32) {
            ((float *)a->g)[i] = g;
        } else {
            uint64_t x = kc_rand(rng);
            uint16_t h = (x & 1) ? (uint16_t)(x >> 16) : (uint16_t)(kern_f32_bits(g) >> 16);
            if (a->gt == KERN_F16 && !(x & 1))   /* a normal-range fp16: exponent 1..30 */
                h = (uint16_t)((x >> 32) & 0x83ffu) | (uint16_t)((1 + (x >> 48) % 30) << 10);
            ((uint16_t *)a->g)[i] = h;
        }
    }
    if (a->lp)
        memset(a->lp, 0xa5, (size_t)a->n * 2);
}

void kc_copy(struct kc_arrays *dst, const struct kc_arrays *src)
{
    REQUIRE(dst->n == src->n && dst->gt == src->gt && dst->lt == src->lt, "kc_copy: shapes differ");
    size_t n = (size_t)src->n;
    memcpy(dst->p, src->p, n * 4);
    memcpy(dst->m, src->m, n * 4);
    memcpy(dst->v, src->v, n * 4);
    memcpy(dst->g, src->g, n * (size_t)kern_dtype_bytes(src->gt));
    if (src->lp)
        memcpy(dst->lp, src->lp, n * 2);
}

static uint32_t bits_at(const struct kc_arrays *a, int k, int64_t i)
{
    const void *arr[KC_NARR] = {a->p, a->m, a->v, a->g, a->lp};
    if (elem_bytes(a, k) == 4)
        return ((const uint32_t *)arr[k])[i];
    return ((const uint16_t *)arr[k])[i];
}

int64_t kc_first_diff(const struct kc_arrays *a, const struct kc_arrays *b, const char **what,
                      uint32_t *bits_a, uint32_t *bits_b)
{
    static const char *names[KC_NARR] = {"param", "exp_avg", "exp_avg_sq", "grad", "param_lowp"};
    const void *pa[KC_NARR] = {a->p, a->m, a->v, a->g, a->lp};
    const void *pb[KC_NARR] = {b->p, b->m, b->v, b->g, b->lp};
    int64_t first = -1;
    for (int k = 0; k < KC_NARR; k++) {
        int eb = elem_bytes(a, k);
        if (eb == 0 || memcmp(pa[k], pb[k], (size_t)a->n * (size_t)eb) == 0)
            continue;
        for (int64_t i = 0; i < a->n && (first < 0 || i < first); i++)
            if (bits_at(a, k, i) != bits_at(b, k, i)) {
                first = i;
                *what = names[k];
                *bits_a = bits_at(a, k, i);
                *bits_b = bits_at(b, k, i);
            }
    }
    return first;
}

struct kern_adam_bufs kc_bufs(const struct kc_arrays *a)
{
    struct kern_adam_bufs b = {
        .param = a->p,
        .exp_avg = a->m,
        .exp_avg_sq = a->v,
        .grad = a->g,
        .grad_dtype = a->gt,
        .param_lowp = a->lp,
        .param_lowp_dtype = a->lt,
        .numel = a->n,
    };
    return b;
}

void kc_offsets(int o, int same, int off[KC_NARR])
{
    static const int spread[KC_NARR] = {0, 5, 11, 3, 7};
    for (int k = 0; k < KC_NARR; k++)
        off[k] = same ? o : (o + spread[k]) % 16;
}

struct kern_adam_hparams kc_hparams(enum kern_adam_mode mode, unsigned variant)
{
    struct kern_adam_hparams h = kern_adam_hparams_default();
    h.mode = mode;
    h.lr = variant % 5 == 0 ? 0.5 : 1e-3;
    h.weight_decay = variant % 4 == 3 ? 0.0 : 0.05;
    h.bias_correction = variant % 7 != 6;
    return h;
}

/* ---- helpers for this file -------------------------------------------------------------- */

static const enum kern_dtype grad_types[3] = {KERN_F32, KERN_BF16, KERN_F16};
static const enum kern_dtype lowp_types[3] = {KERN_NONE, KERN_BF16, KERN_F16};

/* The CPU paths this machine can run (scalar always; avx2, avx512 when supported). */
static int cpu_isas(enum kern_isa out[3])
{
    int n = 0;
    out[n++] = KERN_ISA_SCALAR;
    if (kern_isa_supported(KERN_ISA_AVX2))
        out[n++] = KERN_ISA_AVX2;
    if (kern_isa_supported(KERN_ISA_AVX512))
        out[n++] = KERN_ISA_AVX512;
    return n;
}

/* Runs `steps` steps (scalars of step 1..steps) of the reference on `ref` and of the CPU kernel
 * (isa, threads) on copies, and fails on the first differing bit. */
struct bitwise_case {
    int64_t n;                  /* elements */
    int off[KC_NARR];           /* array offsets */
    enum kern_adam_mode mode;   /* adam or adamw */
    enum kern_dtype gt, lt;     /* gradient and copy dtypes */
    unsigned variant;           /* hyperparameter variant (kc_hparams) */
    int steps;                  /* 1 or 100 */
    unsigned long seed;         /* printed on failure */
};

static void run_ref(const struct bitwise_case *c, struct kc_arrays *ref)
{
    struct kern_adam_hparams h = kc_hparams(c->mode, c->variant);
    struct rl_err e = {0};
    struct kern_adam_bufs b = kc_bufs(ref);
    for (int t = 1; t <= c->steps; t++) {
        struct kern_adam_scalars s;
        REQUIRE(kern_adam_scalars_make(&h, t, &s, &e) == 0, "%s", e.msg);
        REQUIRE(kern_adam_ref(&s, &b, &e) == 0, "%s", e.msg);
    }
}

static void check_cpu_against(const struct bitwise_case *c, const struct kc_arrays *input,
                              const struct kc_arrays *ref, struct kc_arrays *got_, enum kern_isa isa,
                              int threads)
{
    struct kc_arrays got = *got_;
    kc_copy(&got, input);
    struct kern_adam_hparams h = kc_hparams(c->mode, c->variant);
    struct rl_err e = {0};
    struct kern_adam_bufs b = kc_bufs(&got);
    for (int t = 1; t <= c->steps; t++) {
        struct kern_adam_scalars s;
        REQUIRE(kern_adam_scalars_make(&h, t, &s, &e) == 0, "%s", e.msg);
        int rc = kern_adam_cpu_isa(&s, &b, threads, isa, &e);
        REQUIRE(rc == 0, "kern_adam_cpu_isa: %s", e.msg);
    }
    const char *what = "";
    uint32_t ba = 0, bb = 0;
    int64_t i = kc_first_diff(&got, ref, &what, &ba, &bb);
    REQUIRE(i < 0, "%s[%lld] = 0x%08x, reference 0x%08x (isa %s, threads %d, n %lld, offsets "
                  "%d/%d/%d/%d/%d, %s, grad %s, copy %s, variant %u, steps %d, seed %lu)", what,
                  (long long)i, ba, bb, kern_isa_name(isa), threads, (long long)c->n, c->off[0],
                  c->off[1], c->off[2], c->off[3], c->off[4],
                  c->mode == KERN_ADAMW ? "adamw" : "adam", kern_dtype_name(c->gt),
                  kern_dtype_name(c->lt), c->variant, c->steps, c->seed);
}

/* One case: input drawn, reference run once, every ISA x thread count compared to it. */
static void bitwise_case_run(const struct bitwise_case *c, uint64_t *rng, const int *threads,
                             int nthreads)
{
    struct kc_arrays input, ref, got;
    kc_alloc(&input, c->n, c->off, c->gt, c->lt);
    kc_alloc(&ref, c->n, c->off, c->gt, c->lt);
    kc_alloc(&got, c->n, c->off, c->gt, c->lt);
    kc_fill(&input, rng);
    kc_copy(&ref, &input);
    run_ref(c, &ref);
    enum kern_isa isas[3];
    int nisa = cpu_isas(isas);
    for (int k = 0; k < nisa; k++)
        for (int t = 0; t < nthreads; t++)
            check_cpu_against(c, &input, &ref, &got, isas[k], threads[t]);
    kc_free(&got);
    kc_free(&input);
    kc_free(&ref);
}

/* ---- lowp conversions ------------------------------------------------------------------ */

/* The independent fp16 oracle: the compiler's _Float16 (gcc: libgcc soft-fp or F16C), or, where
 * the compiler has none (clang before 15 on x86), the CPU's F16C conversion instructions
 * (round to nearest even, subnormals kept: MXCSR is never touched here). */
#ifdef __FLT16_MAX__
static float oracle_f16_to_f32(uint16_t h)
{
    _Float16 x;
    memcpy(&x, &h, 2);
    return (float)x;
}
static uint16_t oracle_f32_to_f16(float f)
{
    _Float16 x = (_Float16)f;
    uint16_t h;
    memcpy(&h, &x, 2);
    return h;
}
#else
#include <immintrin.h>   /* _cvtsh_ss, _cvtss_sh */
__attribute__((target("f16c"))) static float oracle_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) static uint16_t oracle_f32_to_f16(float f)
{
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
#endif

START_TEST(f16_to_f32_exact_for_all_halves)
{
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t hb = (uint16_t)h;
        float want = oracle_f16_to_f32(hb);
        float got = kern_f16_to_f32(hb);
        if (isnan(want)) {
            REQUIRE(isnan(got), "0x%04x: got 0x%08x, want NaN", h, kern_f32_bits(got));
            REQUIRE(kern_f32_bits(got) >> 31 == h >> 15, "0x%04x: sign lost", h);
            REQUIRE(kern_f32_bits(got) & 0x00400000u, "0x%04x: NaN not quiet", h);
        } else {
            REQUIRE(kern_f32_bits(got) == kern_f32_bits(want), "0x%04x: got 0x%08x want 0x%08x",
                          h, kern_f32_bits(got), kern_f32_bits(want));
        }
    }
}
END_TEST

static void check_f16(uint32_t x)
{
    float f = kern_f32_from_bits(x);
    uint16_t want = oracle_f32_to_f16(f);
    uint16_t got = kern_f32_to_f16(f);
    if (isnan(f)) {
        REQUIRE((got & 0x7c00u) == 0x7c00u && (got & 0x0200u), "0x%08x: 0x%04x is no quiet NaN", x, got);
        REQUIRE(got >> 15 == x >> 31, "0x%08x: sign lost", x);
        REQUIRE((got & 0x01ffu) == ((x >> 13) & 0x01ffu), "0x%08x: payload lost", x);
    } else {
        REQUIRE(got == want, "0x%08x: got 0x%04x want 0x%04x", x, got, want);
    }
}

START_TEST(f32_to_f16_rounds_to_nearest_even)
{
    /* Every 4099th bit pattern (a million, all exponents), then each boundary of the half range
     * with its 1024 neighbours either side, then random patterns. */
    for (uint64_t x = 0; x <= 0xffffffffull; x += 4099)
        check_f16((uint32_t)x);
    static const uint32_t edges[] = {0x33000000u, 0x33800000u, 0x38800000u, 0x387fe000u,
                                     0x387ff000u, 0x477fe000u, 0x477ff000u, 0x477fefffu,
                                     0x7f800000u, 0x7f800001u, 0x7fffffffu, 0x00000001u};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++)
        for (int d = -1024; d <= 1024; d++)
            for (uint32_t sign = 0; sign <= 1; sign++)
                check_f16(((edges[k] + (uint32_t)d) & 0x7fffffffu) | (sign << 31));
    uint64_t r = tu_seed("f32_to_f16_rounds_to_nearest_even");
    for (int k = 0; k < 300000; k++)
        check_f16((uint32_t)kc_rand(&r));
}
END_TEST

/* Oracle: pick the nearer of the two bf16 neighbours in exact double arithmetic (2^128 stands
 * for the value above the largest bf16), ties to the even one. */
static uint16_t bf16_oracle(uint32_t x)
{
    uint32_t sign = x & 0x80000000u, ax = x & 0x7fffffffu;
    uint32_t lo = ax & 0xffff0000u, hi = lo + 0x10000u;
    double v = (double)kern_f32_from_bits(ax);
    double dlo = v - (double)kern_f32_from_bits(lo);
    double dhi = (hi >= 0x7f800000u ? ldexp(1.0, 128) : (double)kern_f32_from_bits(hi)) - v;
    uint32_t pick = dlo < dhi ? lo : dlo > dhi ? hi : (((lo >> 16) & 1u) ? hi : lo);
    return (uint16_t)((sign | pick) >> 16);
}

START_TEST(f32_to_bf16_rounds_to_nearest_even)
{
    uint64_t r = tu_seed("f32_to_bf16_rounds_to_nearest_even");
    for (int k = 0; k < 1000000; k++) {
        uint32_t x = (uint32_t)kc_rand(&r);
        if (k < 300000)   /* near a tie: low 16 bits 0x7fff..0x8001 */
            x = (x & 0xffff0000u) | (0x7fffu + (uint32_t)(k % 3));
        float f = kern_f32_from_bits(x);
        uint16_t got = kern_f32_to_bf16(f);
        if (isnan(f)) {
            REQUIRE(got == (uint16_t)((x >> 16) | 0x40u), "0x%08x: 0x%04x", x, got);
        } else {
            REQUIRE(got == bf16_oracle(x), "0x%08x: got 0x%04x want 0x%04x", x, got,
                    bf16_oracle(x));
            REQUIRE(kern_f32_bits(kern_bf16_to_f32(got)) == ((uint32_t)got << 16), "0x%04x", got);
        }
    }
    ck_assert_uint_eq(kern_f32_to_bf16(kern_f32_from_bits(0x7f7fffffu)), 0x7f80u);   /* -> Inf */
    ck_assert_uint_eq(kern_f32_to_bf16(kern_f32_from_bits(0xffffffffu)), 0xffffu);   /* NaN stays */
    ck_assert_uint_eq(kern_f32_to_bf16(kern_f32_from_bits(0x7f800001u)), 0x7fc0u);   /* quiet */
}
END_TEST

/* ---- the reference against float64 ----------------------------------------------------------- */

/* Adam in double from the double hyperparameters (not the float scalars), so the comparison also
 * covers kern_adam_scalars_make. */
static void adam_f64(const struct kern_adam_hparams *h, int64_t t, double g, double *p, double *m,
                     double *v)
{
    double bc1 = h->bias_correction ? 1 - pow(h->beta1, (double)t) : 1;
    double bc2 = h->bias_correction ? 1 - pow(h->beta2, (double)t) : 1;
    if (h->mode == KERN_ADAM)
        g += h->weight_decay * *p;
    *m = h->beta1 * *m + (1 - h->beta1) * g;
    *v = h->beta2 * *v + (1 - h->beta2) * g * g;
    if (h->mode == KERN_ADAMW)
        *p -= h->lr * h->weight_decay * *p;
    *p -= h->lr / bc1 * *m / (sqrt(*v / bc2) + h->eps);
}

START_TEST(reference_matches_float64_on_normal_inputs)
{
    uint64_t r = tu_seed("reference_matches_float64_on_normal_inputs");
    const int64_t n = 4000;
    double worst = 0;
    struct rl_err e = {0};
    for (int mode = 0; mode < 2; mode++)
        for (unsigned variant = 0; variant < 8; variant++)
            for (int64_t t = 1; t <= 100; t += 99) {
                struct kern_adam_hparams h = kern_adam_hparams_default();
                h.mode = (enum kern_adam_mode)mode;
                h.lr = variant & 1 ? 0.1 : 1e-3;
                h.weight_decay = variant & 2 ? 0.01 : 0;
                h.bias_correction = !(variant & 4);
                struct kern_adam_scalars s;
                REQUIRE(kern_adam_scalars_make(&h, t, &s, &e) == 0, "%s", e.msg);
                for (int64_t i = 0; i < n; i++) {
                    /* No cancellation: g and m share a sign, p has the opposite one (the update
                     * moves p away from zero), |p wd| is small against |g|. */
                    double u1 = (double)(kc_rand(&r) >> 11) / 9007199254740992.0;
                    double u2 = (double)(kc_rand(&r) >> 11) / 9007199254740992.0;
                    double u3 = (double)(kc_rand(&r) >> 11) / 9007199254740992.0;
                    double u4 = (double)(kc_rand(&r) >> 11) / 9007199254740992.0;
                    double sg = kc_rand(&r) & 1 ? 1 : -1;
                    float g = (float)(sg * pow(10, -1 + 2 * u1));
                    float m = (float)(sg * pow(10, -2 + 2 * u2));
                    float v = (float)pow(10, -4 + 4 * u3);
                    float p = (float)(-sg * (0.5 + 1.5 * u4));
                    double gd = g, pd = p, md = m, vd = v;
                    adam_f64(&h, t, gd, &pd, &md, &vd);
                    struct kern_adam_bufs b = {.param = &p, .exp_avg = &m, .exp_avg_sq = &v,
                                               .grad = &g, .grad_dtype = KERN_F32, .numel = 1};
                    REQUIRE(kern_adam_ref(&s, &b, &e) == 0, "%s", e.msg);
                    double err[3] = {fabs(p - pd) / fabs(pd), fabs(m - md) / fabs(md),
                                     fabs(v - vd) / fabs(vd)};
                    for (int k = 0; k < 3; k++) {
                        REQUIRE(err[k] < 1e-6, "%s relative error %.3g (mode %d variant %u "
                                      "step %lld)", k == 0 ? "p" : k == 1 ? "m" : "v", err[k],
                                      mode, variant, (long long)t);
                        if (err[k] > worst)
                            worst = err[k];
                    }
                }
            }
    fprintf(stderr, "reference vs float64: worst relative error %.3g\n", worst);
}
END_TEST

START_TEST(first_step_moves_by_lr)
{
    /* Step 1 with bias correction: m/(1-b1) = g and sqrt(v/(1-b2)) = |g|, so p moves by lr in
     * the direction of -sign(g), whatever the size of g (eps aside). */
    struct kern_adam_hparams h = kern_adam_hparams_default();
    h.eps = 1e-12;
    struct kern_adam_scalars s;
    struct rl_err e = {0};
    ck_assert_int_eq(kern_adam_scalars_make(&h, 1, &s, &e), 0);
    float p[3] = {1, 1, -2}, m[3] = {0}, v[3] = {0}, g[3] = {3.0f, -0.25f, 100.0f};
    struct kern_adam_bufs b = {.param = p, .exp_avg = m, .exp_avg_sq = v, .grad = g,
                               .grad_dtype = KERN_F32, .numel = 3};
    ck_assert_int_eq(kern_adam_ref(&s, &b, &e), 0);
    ck_assert_float_eq_tol(p[0], 0.999f, 1e-6f);
    ck_assert_float_eq_tol(p[1], 1.001f, 1e-6f);
    ck_assert_float_eq_tol(p[2], -2.001f, 1e-6f);
    ck_assert_float_eq_tol(m[0], 0.3f, 1e-7f);
    ck_assert_float_eq_tol(v[0], 0.009f, 1e-9f);
}
END_TEST

START_TEST(nan_outputs_are_canonical)
{
    /* A NaN with a negative sign and a payload, in p, g and v, must come out as 0x7fc00000 from
     * every path, and as the canonical bf16 / fp16 NaN in the copy. */
    struct kern_adam_hparams h = kern_adam_hparams_default();
    struct kern_adam_scalars s;
    struct rl_err e = {0};
    ck_assert_int_eq(kern_adam_scalars_make(&h, 3, &s, &e), 0);
    enum kern_isa isas[3];
    int nisa = cpu_isas(isas);
    for (int k = 0; k < nisa; k++)
        for (int lt = 1; lt < 3; lt++) {
            enum { N = 37 };
            float p[N], m[N], v[N], g[N];
            uint16_t lp[N];
            for (int i = 0; i < N; i++) {
                p[i] = 1;
                m[i] = 0.5f;
                v[i] = 0.25f;
                g[i] = 0.1f;
            }
            p[3] = p[20] = kern_f32_from_bits(0xffc12345u);
            g[5] = g[33] = kern_f32_from_bits(0xff812345u);
            v[7] = -1.0f;   /* sqrt of a negative: NaN made by the hardware */
            struct kern_adam_bufs b = {.param = p, .exp_avg = m, .exp_avg_sq = v, .grad = g,
                                       .grad_dtype = KERN_F32, .param_lowp = lp,
                                       .param_lowp_dtype = lowp_types[lt], .numel = N};
            ck_assert_int_eq(kern_adam_cpu_isa(&s, &b, 1, isas[k], &e), 0);
            const uint16_t want16 = lt == 1 ? 0x7fc0u : 0x7e00u;
            ck_assert_uint_eq(kern_f32_bits(p[3]), KERN_CANON_NAN_BITS);
            ck_assert_uint_eq(kern_f32_bits(p[20]), KERN_CANON_NAN_BITS);
            ck_assert_uint_eq(lp[20], want16);
            ck_assert_uint_eq(kern_f32_bits(m[5]), KERN_CANON_NAN_BITS);
            ck_assert_uint_eq(kern_f32_bits(v[33]), KERN_CANON_NAN_BITS);
            ck_assert_uint_eq(kern_f32_bits(p[33]), KERN_CANON_NAN_BITS);
            ck_assert_uint_eq(kern_f32_bits(p[7]), KERN_CANON_NAN_BITS);
            ck_assert_uint_eq(lp[7], want16);
            ck_assert(!isnan(p[0]) && !isnan(p[36]));
        }
}
END_TEST

/* ---- bitwise: CPU kernel == reference ------------------------------------------------------ */

/* _i: 0..5 = mode (2) x gradient dtype (3). Sizes 0..300, offsets 0..15 (all arrays at the same
 * offset when even, spread when odd), every ISA, 1 thread; 2 and 3 threads too on a quarter of
 * the offsets of each size (o = n mod 4, 4 + n mod 4, ...: every offset still meets every chunk
 * split), since an OpenMP region per tiny case is what costs time here. The copy dtype and the
 * hyperparameter variant cycle with the size. One step. */
START_TEST(cpu_equals_reference_small_one_step)
{
    char name[64];
    snprintf(name, sizeof name, "cpu_equals_reference_small_one_step[%d]", _i);
    unsigned long seed = tu_seed(name);
    uint64_t r = seed;
    static const int threads[] = {1, 2, 3};
    /* Short form: 4 offsets per size, n, n + 5, n + 10, n + 15 (mod 16): every residue mod 4
     * (both layouts), each offset met by every size class; 2 and 3 threads on the first. */
    const int n_off = tu_long() ? 16 : 4;
    for (int64_t n = 0; n <= 300; n++)
        for (int q = 0; q < n_off; q++) {
            const int o = n_off == 16 ? q : (int)((n + 5 * q) % 16);
            const int nthreads = (n_off == 16 ? o % 4 == n % 4 : q == 0) ? 3 : 1;
            struct bitwise_case c = {.n = n, .mode = (enum kern_adam_mode)(_i / 3),
                                     .gt = grad_types[_i % 3], .lt = lowp_types[(n + o) % 3],
                                     .variant = (unsigned)(n + 3 * o), .steps = 1, .seed = seed};
            kc_offsets(o, o % 2 == 0, c.off);
            bitwise_case_run(&c, &r, threads, nthreads);
        }
}
END_TEST

/* As above with 100 steps, on sizes around every vector width and chunk boundary. */
START_TEST(cpu_equals_reference_hundred_steps)
{
    char name[64];
    snprintf(name, sizeof name, "cpu_equals_reference_hundred_steps[%d]", _i);
    unsigned long seed = tu_seed(name);
    uint64_t r = seed;
    static const int threads[] = {1, 2, 3};
    static const int64_t sizes[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 47, 48,
                                    49, 63, 64, 65, 95, 127, 128, 129, 255, 256, 257, 300};
    static const int offs[] = {0, 1, 7, 15};
    const size_t every = tu_long() ? 1 : 4;   /* short form: one offset per size, in turn */
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (size_t j = every == 1 ? 0 : k % 4; j < sizeof offs / sizeof offs[0]; j += every) {
            struct bitwise_case c = {.n = sizes[k], .mode = (enum kern_adam_mode)(_i / 3),
                                     .gt = grad_types[_i % 3], .lt = lowp_types[(k + j) % 3],
                                     .variant = (unsigned)(k + j), .steps = 100, .seed = seed};
            kc_offsets(offs[j], j % 2 == 0, c.off);
            bitwise_case_run(&c, &r, threads, 3);
        }
}
END_TEST

/* 1e6 + 3 elements: a few combinations covering both modes, every gradient and copy dtype. */
START_TEST(cpu_equals_reference_large)
{
    unsigned long seed = tu_seed("cpu_equals_reference_large");
    uint64_t r = seed;
    static const int threads[] = {1, 2, 3};
    for (int k = 0; k < 3; k++) {
        struct bitwise_case c = {.n = 1000003, .mode = (enum kern_adam_mode)(k % 2),
                                 .gt = grad_types[k], .lt = lowp_types[(k + 1) % 3],
                                 .variant = (unsigned)k, .steps = 1, .seed = seed};
        kc_offsets(k == 1 ? 5 : 3 * k, k != 2, c.off);
        bitwise_case_run(&c, &r, threads, 3);
    }
}
END_TEST

/* ---- API behaviour ------------------------------------------------------------------------ */

START_TEST(scalars_follow_deepspeed)
{
    struct kern_adam_hparams h = kern_adam_hparams_default();
    h.lr = 0.01;
    h.weight_decay = 0.1;
    struct kern_adam_scalars s;
    struct rl_err e = {0};
    ck_assert_int_eq(kern_adam_scalars_make(&h, 10, &s, &e), 0);
    ck_assert(s.step_size == (float)(-0.01 / (1 - pow(0.9, 10))));
    ck_assert(s.bc2_rsqrt == (float)(1 / sqrt(1 - pow(0.999, 10))));
    ck_assert(s.one_minus_beta2 == (float)(1 - 0.999));
    ck_assert(s.decay_factor == (float)(-0.01 * 0.1));
    ck_assert_int_eq(s.decay, KERN_DECAY_W);
    h.mode = KERN_ADAM;
    ck_assert_int_eq(kern_adam_scalars_make(&h, 10, &s, &e), 0);
    ck_assert_int_eq(s.decay, KERN_DECAY_L2);
    h.weight_decay = 0;
    ck_assert_int_eq(kern_adam_scalars_make(&h, 10, &s, &e), 0);
    ck_assert_int_eq(s.decay, KERN_DECAY_NONE);
    h.bias_correction = false;
    ck_assert_int_eq(kern_adam_scalars_make(&h, 10, &s, &e), 0);
    ck_assert(s.step_size == -0.01f && s.bc2_rsqrt == 1.0f);
}
END_TEST

START_TEST(bad_input_names_the_field)
{
    struct kern_adam_hparams h = kern_adam_hparams_default();
    struct kern_adam_scalars s;
    struct rl_err e = {0};
    struct {
        const char *field;
        struct kern_adam_hparams h;
        int64_t step;
    } bad[] = {
        {"lr", h, 1}, {"beta1", h, 1}, {"beta2", h, 1}, {"eps", h, 1},
        {"weight_decay", h, 1}, {"step", h, 0}, {"lr", h, 1},
    };
    bad[0].h.lr = NAN;
    bad[1].h.beta1 = 1.0;
    bad[2].h.beta2 = -0.1;
    bad[3].h.eps = 0;
    bad[4].h.weight_decay = -1;
    bad[6].h.lr = 1e300;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ck_assert_int_eq(kern_adam_scalars_make(&bad[k].h, bad[k].step, &s, &e), RL_EINVAL);
        ck_assert_msg(strncmp(e.msg, bad[k].field, strlen(bad[k].field)) == 0, "%s", e.msg);
    }
    ck_assert_int_eq(kern_adam_scalars_make(&h, 1, &s, &e), 0);
    float x = 0;
    struct kern_adam_bufs b = {.param = &x, .exp_avg = &x, .exp_avg_sq = NULL, .grad = &x,
                               .grad_dtype = KERN_F32, .numel = 1};
    ck_assert_int_eq(kern_adam_ref(&s, &b, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "exp_avg_sq"));
    b.numel = 0;   /* NULL is fine for no elements */
    ck_assert_int_eq(kern_adam_cpu(&s, &b, 2, &e), 0);
    b.numel = -1;
    ck_assert_int_eq(kern_adam_cpu(&s, &b, 2, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "numel"));
    b.numel = 0;
    b.grad_dtype = KERN_NONE;
    ck_assert_int_eq(kern_adam_cpu(&s, &b, 1, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "grad_dtype"));
    b.grad_dtype = KERN_F32;
    b.param_lowp_dtype = KERN_BF16;
    ck_assert_int_eq(kern_adam_cpu(&s, &b, 1, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "param_lowp"));
    b.param_lowp_dtype = KERN_NONE;
    ck_assert_int_eq(kern_adam_cpu(&s, &b, 0, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "threads"));
}
END_TEST

START_TEST(isa_can_be_forced)
{
    struct rl_err e = {0};
    enum kern_isa isa;
    ck_assert_int_eq(kern_isa_resolve(KERN_ISA_SCALAR, &isa, &e), 0);
    ck_assert_int_eq(isa, KERN_ISA_SCALAR);
    /* The environment variable only steers AUTO; this runs in a forked child. */
    ck_assert_int_eq(setenv("RL_KERN_ISA", "scalar", 1), 0);
    ck_assert_int_eq(kern_isa_resolve(KERN_ISA_AUTO, &isa, &e), 0);
    ck_assert_int_eq(isa, KERN_ISA_SCALAR);
    if (kern_isa_supported(KERN_ISA_AVX2)) {
        ck_assert_int_eq(setenv("RL_KERN_ISA", "avx2", 1), 0);
        ck_assert_int_eq(kern_isa_resolve(KERN_ISA_AUTO, &isa, &e), 0);
        ck_assert_int_eq(isa, KERN_ISA_AVX2);
    }
    if (!kern_isa_supported(KERN_ISA_AVX512)) {
        ck_assert_int_eq(kern_isa_resolve(KERN_ISA_AVX512, &isa, &e), RL_EENV);
    }
    ck_assert_int_eq(setenv("RL_KERN_ISA", "sse9", 1), 0);
    ck_assert_int_eq(kern_isa_resolve(KERN_ISA_AUTO, &isa, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "RL_KERN_ISA: 'sse9'"));
    float x = 0;
    struct kern_adam_bufs b = {.param = &x, .exp_avg = &x, .exp_avg_sq = &x, .grad = &x,
                               .grad_dtype = KERN_F32, .numel = 0};
    struct kern_adam_scalars s;
    struct kern_adam_hparams h = kern_adam_hparams_default();
    ck_assert_int_eq(kern_adam_scalars_make(&h, 1, &s, &e), 0);
    ck_assert_int_eq(kern_adam_cpu(&s, &b, 1, &e), RL_EINVAL);
    unsetenv("RL_KERN_ISA");
    ck_assert_int_eq(kern_isa_resolve(KERN_ISA_AUTO, &isa, &e), 0);
    ck_assert(kern_isa_supported(isa));
}
END_TEST

/* RL_KERN_PREFETCH: unset gives the per-path default (0 on AVX-512, 512 on AVX2, 0 scalar); a
 * value in [0, 2^20] overrides it and changes no bit; anything else is refused naming the
 * variable, and the kernel returns that error instead of running. Runs in a forked child. */
START_TEST(prefetch_distance_overrides_and_refuses)
{
    struct rl_err e = {0};
    int64_t pf = -1;
    unsetenv("RL_KERN_PREFETCH");
    ck_assert_int_eq(kern_adam_prefetch_resolve(KERN_ISA_SCALAR, &pf, &e), 0);
    ck_assert_int_eq(pf, 0);
    ck_assert_int_eq(kern_adam_prefetch_resolve(KERN_ISA_AVX2, &pf, &e), 0);
    ck_assert_int_eq(pf, 512);
    ck_assert_int_eq(kern_adam_prefetch_resolve(KERN_ISA_AVX512, &pf, &e), 0);
    ck_assert_int_eq(pf, 0);
    ck_assert_int_eq(setenv("RL_KERN_PREFETCH", "4096", 1), 0);
    ck_assert_int_eq(kern_adam_prefetch_resolve(KERN_ISA_AVX512, &pf, &e), 0);
    ck_assert_int_eq(pf, 4096);
    static const char *bad[] = {"-1", "1048577", "12x", "lots"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ck_assert_int_eq(setenv("RL_KERN_PREFETCH", bad[k], 1), 0);
        memset(&e, 0, sizeof e);
        ck_assert_int_eq(kern_adam_prefetch_resolve(KERN_ISA_AVX2, &pf, &e), RL_EINVAL);
        ck_assert_msg(strstr(e.msg, "RL_KERN_PREFETCH") && strstr(e.msg, bad[k]),
                      "'%s' -> '%s'", bad[k], e.msg);
    }

    /* The kernel returns the error without touching the arrays. */
    uint64_t rng = 17;
    struct kc_arrays input, ref, got;
    kc_alloc(&input, 4099, NULL, KERN_BF16, KERN_BF16);
    kc_alloc(&ref, 4099, NULL, KERN_BF16, KERN_BF16);
    kc_alloc(&got, 4099, NULL, KERN_BF16, KERN_BF16);
    kc_fill(&input, &rng);
    kc_copy(&got, &input);
    struct kern_adam_hparams h = kc_hparams(KERN_ADAMW, 0);
    struct kern_adam_scalars s;
    ck_assert_int_eq(kern_adam_scalars_make(&h, 1, &s, &e), 0);
    struct kern_adam_bufs b = kc_bufs(&got);
    ck_assert_int_eq(kern_adam_cpu(&s, &b, 1, &e), RL_EINVAL);
    const char *what = "";
    uint32_t ba = 0, bb = 0;
    ck_assert_int_eq(kc_first_diff(&got, &input, &what, &ba, &bb), -1);

    /* Every valid distance gives the reference's bits on every path. */
    kc_copy(&ref, &input);
    struct kern_adam_bufs rb = kc_bufs(&ref);
    ck_assert_int_eq(kern_adam_ref(&s, &rb, &e), 0);
    static const char *good[] = {"0", "1", "64", "100000"};
    enum kern_isa isas[3];
    int nisa = cpu_isas(isas);
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++)
        for (int i = 0; i < nisa; i++) {
            ck_assert_int_eq(setenv("RL_KERN_PREFETCH", good[k], 1), 0);
            kc_copy(&got, &input);
            ck_assert_int_eq(kern_adam_cpu_isa(&s, &b, 2, isas[i], &e), 0);
            int64_t at = kc_first_diff(&got, &ref, &what, &ba, &bb);
            ck_assert_msg(at < 0, "prefetch %s, %s: %s[%lld] differs", good[k],
                          kern_isa_name(isas[i]), what, (long long)at);
        }
    unsetenv("RL_KERN_PREFETCH");
    kc_free(&input);
    kc_free(&ref);
    kc_free(&got);
}
END_TEST

/* exec/dtype.h maps every plan dtype to the kernels' type of the same name and width (the two
 * enums number them differently). */
START_TEST(plan_dtypes_map_to_the_same_kernel_types)
{
    for (int t = 0; t < PLAN_DTYPE_COUNT; t++) {
        enum kern_dtype k = ex_kern_dtype((enum plan_dtype)t);
        ck_assert_str_eq(kern_dtype_name(k), plan_dtype_name((enum plan_dtype)t));
        ck_assert_int_eq(kern_dtype_bytes(k), plan_dtype_bytes((enum plan_dtype)t));
    }
    ck_assert_int_eq(ex_kern_dtype((enum plan_dtype)PLAN_DTYPE_COUNT), KERN_NONE);
}
END_TEST

/* ---- the overflow scan (kernels/scan.h) ------------------------------------------------- */

/* The count against isfinite() one element at a time (and the 16-bit exponent rule written out),
 * on every path this CPU has (RL_KERN_ISA), 1 and 3 threads, sizes around the vector widths, the
 * 32768-element blocks and the threaded size, with Inf and NaN at block edges and at random places
 * (seed printed), finite extremes (FLT_MAX, subnormals, -0, bf16/fp16 max) never counted, and a
 * 16-bit array of NaN only (no lane counter may wrap). */
START_TEST(nonfinite_scan_counts_every_inf_and_nan)
{
    uint64_t r = tu_seed("nonfinite_scan_counts_every_inf_and_nan");
    const int64_t N = (INT64_C(1) << 20) + 37;
    float *x = malloc((size_t)N * sizeof *x);
    uint16_t *h = malloc((size_t)N * sizeof *h);
    ck_assert(x && h);
    static const float finite[] = {0.0f, -0.0f, 1.0f, -3.5f, FLT_MAX, -FLT_MAX, FLT_MIN, 1e-45f};
    for (int64_t i = 0; i < N; i++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        x[i] = finite[(r >> 33) % 8];
        h[i] = (uint16_t)((r >> 40) & 0x7f7f);   /* below every exponent-all-ones pattern */
    }
    const int64_t at[] = {0, 1, 15, 16, 32767, 32768, 32769, 65535, N - 1};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        x[at[i]] = i % 2 ? INFINITY : NAN;
        h[at[i]] = i % 2 ? 0x7f80 : 0xffc1;   /* bf16 +Inf, a negative NaN */
    }
    for (int k = 0; k < 40; k++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        int64_t j = (int64_t)((r >> 20) % (uint64_t)N);
        x[j] = k % 3 ? -INFINITY : kern_f32_from_bits(0x7f800001u + (uint32_t)k);
    }
    static const char *const isas[] = {"scalar", "avx2", "avx512"};
    static const enum kern_isa isa_of[] = {KERN_ISA_SCALAR, KERN_ISA_AVX2, KERN_ISA_AVX512};
    static const int64_t sizes[] = {0, 1, 15, 16, 17, 64, 32768, 32769, 65537, (INT64_C(1) << 20) + 37};
    struct rl_err e;
    for (int p = 0; p < 3; p++) {
        if (!kern_isa_supported(isa_of[p]))
            continue;
        setenv("RL_KERN_ISA", isas[p], 1);
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
            for (int t = 1; t <= 3; t += 2) {
                int64_t n = sizes[z], want = 0, want16 = 0, got = -1, got16 = -1;
                for (int64_t i = 0; i < n; i++) {
                    want += !isfinite(x[i]);
                    want16 += (h[i] & 0x7f80) == 0x7f80;
                }
                ck_assert_int_eq(kern_nonfinite_f32(x, n, t, &got, &e), 0);
                ck_assert_msg(got == want, "%s, n %lld, %d threads: %lld, want %lld", isas[p], (long long)n, t,
                              (long long)got, (long long)want);
                ck_assert_int_eq(kern_nonfinite_lowp(h, n, KERN_BF16, t, &got16, &e), 0);
                ck_assert_msg(got16 == want16, "bf16 %s, n %lld: %lld, want %lld", isas[p], (long long)n,
                              (long long)got16, (long long)want16);
            }
        for (int64_t i = 0; i < 65539; i++)
            h[i] = 0x7e00;   /* fp16 quiet NaN */
        int64_t all = 0;
        ck_assert_int_eq(kern_nonfinite_lowp(h, 65539, KERN_F16, 1, &all, &e), 0);
        ck_assert_int_eq(all, 65539);
        h[7] = 0x7bff;   /* fp16's largest finite */
        ck_assert_int_eq(kern_nonfinite_lowp(h, 65539, KERN_F16, 1, &all, &e), 0);
        ck_assert_int_eq(all, 65538);
    }
    unsetenv("RL_KERN_ISA");
    int64_t c;
    ck_assert_int_eq(kern_nonfinite_lowp(h, 4, KERN_F32, 1, &c, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "dtype: fp32 is not allowed for a 16-bit scan; allowed: bf16, fp16");
    free(x);
    free(h);
}
END_TEST

Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *conv = tcase_create("lowp");
    tcase_set_timeout(conv, 120);
    tcase_add_test(conv, f16_to_f32_exact_for_all_halves);
    tcase_add_test(conv, f32_to_f16_rounds_to_nearest_even);
    tcase_add_test(conv, f32_to_bf16_rounds_to_nearest_even);
    suite_add_tcase(s, conv);
    TCase *ref = tcase_create("reference");
    tcase_set_timeout(ref, 60);
    tcase_add_test(ref, reference_matches_float64_on_normal_inputs);
    tcase_add_test(ref, first_step_moves_by_lr);
    tcase_add_test(ref, scalars_follow_deepspeed);
    tcase_add_test(ref, bad_input_names_the_field);
    tcase_add_test(ref, isa_can_be_forced);
    tcase_add_test(ref, prefetch_distance_overrides_and_refuses);
    tcase_add_test(ref, plan_dtypes_map_to_the_same_kernel_types);
    tcase_add_test(ref, nonfinite_scan_counts_every_inf_and_nan);
    suite_add_tcase(s, ref);
    TCase *bw = tcase_create("bitwise");
    tcase_set_tags(bw, "long");
    tcase_set_timeout(bw, tu_long() ? 1200 : 300);
    tcase_add_test(bw, nan_outputs_are_canonical);
    tcase_add_loop_test(bw, cpu_equals_reference_small_one_step, 0, 6);
    tcase_add_loop_test(bw, cpu_equals_reference_hundred_steps, 0, 6);
    tcase_add_test(bw, cpu_equals_reference_large);
    suite_add_tcase(s, bw);
    /* The bitwise tests run every SIMD path this CPU has; a path it lacks is a skip, by name. */
    if (!kern_isa_supported(KERN_ISA_AVX2))
        tu_skip("kernels: avx2 path of nan_outputs_are_canonical and cpu_equals_reference_*",
                "this CPU lacks AVX2 or F16C");
    if (!kern_isa_supported(KERN_ISA_AVX512))
        tu_skip("kernels: avx512 path of nan_outputs_are_canonical and cpu_equals_reference_*",
                "this CPU lacks AVX-512F");
    return s;
}
