/* tests/check_kernels_paths.c — a quick bitwise check of every CPU path against the scalar
 * reference (the definition, kernels/adam_ref.c): 1013 elements (a vector body and a scalar
 * tail), every gradient and low-precision copy dtype, Adam with L2 and AdamW, 1 and 3 threads,
 * three steps, inputs with NaN, infinities, subnormals and large values. It runs in well under a
 * second, so `make mutate` can use it; check_kernels.c holds the exhaustive version. A path the
 * CPU lacks is a skip, by name. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adam.h"
#include "kernels/lowp.h"
#include "tests/util.h"

#define N 1013

struct arrays {
    float p[N], m[N], v[N];
    uint16_t g16[N], lowp[N];
    float g32[N];
};

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

static float pick(uint64_t *s)
{
    uint64_t r = next(s);
    switch (r % 16) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -1e-40f;   /* subnormal */
    case 3: return 3e38f;
    default: return (float)((double)(r >> 8) / (double)(1ULL << 45) - 0.5) * 4.0f;
    }
}

static void fill(struct arrays *a, uint64_t seed, enum kern_dtype gt)
{
    uint64_t s = seed;
    for (int i = 0; i < N; i++) {
        a->p[i] = pick(&s);
        a->m[i] = (float)((next(&s) % 1000) / 1000.0 - 0.5);
        a->v[i] = (float)((next(&s) % 1000) / 1000.0);
        a->g32[i] = pick(&s);
        a->g16[i] = gt == KERN_BF16 ? kern_f32_to_bf16(a->g32[i]) : kern_f32_to_f16(a->g32[i]);
        a->lowp[i] = 0;
    }
}

static struct kern_adam_bufs bufs(struct arrays *a, enum kern_dtype gt, enum kern_dtype lt)
{
    struct kern_adam_bufs b = {.param = a->p, .exp_avg = a->m, .exp_avg_sq = a->v,
                               .grad = gt == KERN_F32 ? (const void *)a->g32 : (const void *)a->g16,
                               .grad_dtype = gt, .param_lowp = lt == KERN_NONE ? NULL : a->lowp,
                               .param_lowp_dtype = lt, .numel = N};
    return b;
}

static const enum kern_isa isas[3] = {KERN_ISA_SCALAR, KERN_ISA_AVX2, KERN_ISA_AVX512};

START_TEST(every_path_equals_the_reference)
{
    enum kern_isa isa = isas[_i];
    static const enum kern_dtype gts[3] = {KERN_F32, KERN_BF16, KERN_F16};
    static const enum kern_dtype lts[3] = {KERN_NONE, KERN_BF16, KERN_F16};
    static struct arrays ref, got;
    for (int mode = 0; mode < 2; mode++)
        for (int gi = 0; gi < 3; gi++)
            for (int li = 0; li < 3; li++)
                for (int threads = 1; threads <= 3; threads += 2) {
                    struct kern_adam_hparams h = kern_adam_hparams_default();
                    h.mode = mode ? KERN_ADAMW : KERN_ADAM;
                    h.weight_decay = 0.01;
                    uint64_t seed = 1000003ULL * (uint64_t)(mode * 9 + gi * 3 + li + 1);
                    fill(&ref, seed, gts[gi]);
                    fill(&got, seed, gts[gi]);
                    struct kern_adam_bufs br = bufs(&ref, gts[gi], lts[li]), bg = bufs(&got, gts[gi], lts[li]);
                    for (int step = 1; step <= 3; step++) {
                        struct kern_adam_scalars s;
                        struct rl_err e = {0};
                        ck_assert_msg(kern_adam_scalars_make(&h, step, &s, &e) == 0, "%s", e.msg);
                        ck_assert_msg(kern_adam_ref(&s, &br, &e) == 0, "%s", e.msg);
                        ck_assert_msg(kern_adam_cpu_isa(&s, &bg, threads, isa, &e) == 0, "%s", e.msg);
                    }
                    const char *what = memcmp(ref.p, got.p, sizeof ref.p)     ? "param"
                                       : memcmp(ref.m, got.m, sizeof ref.m)   ? "exp_avg"
                                       : memcmp(ref.v, got.v, sizeof ref.v)   ? "exp_avg_sq"
                                       : memcmp(ref.lowp, got.lowp, sizeof ref.lowp) ? "param_lowp"
                                                                                       : NULL;
                    ck_assert_msg(what == NULL, "isa %s, %s, grad %s, lowp %s, %d threads: %s differs from the reference",
                                  kern_isa_name(isa), mode ? "adamw" : "adam", kern_dtype_name(gts[gi]),
                                  kern_dtype_name(lts[li]), threads, what);
                }
}
END_TEST

START_TEST(hyperparameters_outside_their_range_are_refused)
{
    /* Each bad value is refused with RL_EINVAL naming its field, also where a derived scalar
     * would still be finite (no bias correction: 1 - beta2^t is not formed). */
    static const struct {
        const char *field;
        double lr, beta1, beta2, eps, wd;
        bool bias_correction;
        int64_t step;
    } bad[] = {
        {"beta2", 1e-3, 0.9, 1.0, 1e-8, 0, false, 1}, {"beta2", 1e-3, 0.9, 1.0, 1e-8, 0, true, 1},
        {"beta1", 1e-3, 1.0, 0.999, 1e-8, 0, false, 1}, {"beta2", 1e-3, 0.9, -0.1, 1e-8, 0, true, 1},
        {"eps", 1e-3, 0.9, 0.999, 0, 0, true, 1},       {"lr", -1e-3, 0.9, 0.999, 1e-8, 0, true, 1},
        {"weight_decay", 1e-3, 0.9, 0.999, 1e-8, -0.1, true, 1}, {"step", 1e-3, 0.9, 0.999, 1e-8, 0, true, 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct kern_adam_hparams h = kern_adam_hparams_default();
        h.lr = bad[i].lr;
        h.beta1 = bad[i].beta1;
        h.beta2 = bad[i].beta2;
        h.eps = bad[i].eps;
        h.weight_decay = bad[i].wd;
        h.bias_correction = bad[i].bias_correction;
        struct kern_adam_scalars s;
        struct rl_err e = {0};
        ck_assert_msg(kern_adam_scalars_make(&h, bad[i].step, &s, &e) == RL_EINVAL, "case %zu (%s) accepted", i,
                      bad[i].field);
        ck_assert_msg(strncmp(e.msg, bad[i].field, strlen(bad[i].field)) == 0, "case %zu: '%s' does not start with %s",
                      i, e.msg, bad[i].field);
    }
    /* The edges that are allowed: beta 0, no decay, lr 0. */
    struct kern_adam_hparams h = kern_adam_hparams_default();
    h.beta1 = 0;
    h.beta2 = 0;
    h.lr = 0;
    struct kern_adam_scalars s;
    struct rl_err e = {0};
    ck_assert_msg(kern_adam_scalars_make(&h, 1, &s, &e) == 0, "%s", e.msg);
}
END_TEST

Suite *kernels_paths_suite(void)
{
    Suite *s = suite_create("kernels_paths");
    TCase *tc = tcase_create("paths");
    tcase_set_timeout(tc, 60);
    for (int i = 0; i < 3; i++) {
        if (kern_isa_supported(isas[i])) {
            tcase_add_loop_test(tc, every_path_equals_the_reference, i, i + 1);
        } else {
            char what[128];
            snprintf(what, sizeof what, "kernels_paths: every_path_equals_the_reference (%s)", kern_isa_name(isas[i]));
            tu_skip(what, i == 1 ? "this CPU lacks AVX2 or F16C" : "this CPU lacks AVX-512F");
        }
    }
    tcase_add_test(tc, hyperparameters_outside_their_range_are_refused);
    suite_add_tcase(s, tc);
    return s;
}
