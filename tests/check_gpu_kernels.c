/* tests/check_gpu_kernels.c — the CUDA Adam kernel bitwise against the reference (same cases as
 * check_kernels.c: sizes 0..300 and 1e6+3, offsets 0..15, 1 and 100 steps, both modes, every
 * gradient and copy dtype). Runs without fork (a forked child must not use CUDA). Without a
 * GPU, or in a build without nvcc, the suite registers nothing and records each of its tests as
 * skipped by name ("no GPU"), so no kernel test is counted as passed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adam.h"
#include "tests/kern_case.h"
#include "tests/util.h"


#ifdef RL_HAVE_CUDA
#include <cuda_runtime_api.h>

/* Fails the test with file:line and the CUDA message when `call` fails. */
#define CUDA_REQUIRE(call)                                                                      \
    do {                                                                                        \
        cudaError_t err_ = (call);                                                              \
        if (err_ != cudaSuccess)                                                                \
            ck_abort_msg("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
    } while (0)
#define REQUIRE(cond, ...)                                                                      \
    do {                                                                                        \
        if (!(cond))                                                                            \
            ck_abort_msg(__VA_ARGS__);                                                          \
    } while (0)

static const enum kern_dtype grad_types[3] = {KERN_F32, KERN_BF16, KERN_F16};
static const enum kern_dtype lowp_types[3] = {KERN_NONE, KERN_BF16, KERN_F16};

/* Device arrays with room for `cap` elements after a 16-element offset, reused across cases.
 * cudaMalloc bases are 256-byte aligned, so element offsets set the alignment as on the host. */
struct dev_arena {
    void *base[KC_NARR];   /* device allocations, (16 + cap) * 4 bytes each */
    int64_t cap;           /* elements */
};

static void arena_init(struct dev_arena *d, int64_t cap)
{
    d->cap = cap;
    for (int k = 0; k < KC_NARR; k++)
        CUDA_REQUIRE(cudaMalloc(&d->base[k], (size_t)(16 + cap) * 4));
}

static void arena_free(struct dev_arena *d)
{
    for (int k = 0; k < KC_NARR; k++)
        CUDA_REQUIRE(cudaFree(d->base[k]));
}

static int bytes_of(const struct kc_arrays *a, int k)
{
    return k < 3 ? 4 : k == 3 ? kern_dtype_bytes(a->gt) : kern_dtype_bytes(a->lt);
}

/* Copies `in` to the arena at in's offsets, runs `steps` CUDA steps, copies the results back
 * into `out` (same shape as in). */
static void gpu_steps(struct dev_arena *d, const struct kc_arrays *in, struct kc_arrays *out,
                      const struct kern_adam_hparams *h, int steps)
{
    REQUIRE(in->n <= d->cap, "arena too small");
    void *dev[KC_NARR] = {0};
    const void *hin[KC_NARR] = {in->p, in->m, in->v, in->g, in->lp};
    void *hout[KC_NARR] = {out->p, out->m, out->v, out->g, out->lp};
    for (int k = 0; k < KC_NARR; k++) {
        int eb = bytes_of(in, k);
        if (eb == 0)
            continue;
        dev[k] = (char *)d->base[k] + (size_t)in->off[k] * (size_t)eb;
        if (in->n)
            CUDA_REQUIRE(cudaMemcpy(dev[k], hin[k], (size_t)in->n * (size_t)eb, cudaMemcpyHostToDevice));
    }
    struct kern_adam_bufs b = {.param = dev[0], .exp_avg = dev[1], .exp_avg_sq = dev[2],
                               .grad = dev[3], .grad_dtype = in->gt, .param_lowp = dev[4],
                               .param_lowp_dtype = in->lt, .numel = in->n};
    struct rl_err e = {0};
    for (int t = 1; t <= steps; t++) {
        struct kern_adam_scalars s;
        REQUIRE(kern_adam_scalars_make(h, t, &s, &e) == 0, "%s", e.msg);
        int rc = kern_adam_cuda(&s, &b, 0, &e);
        REQUIRE(rc == 0, "kern_adam_cuda: %s", e.msg);
    }
    CUDA_REQUIRE(cudaDeviceSynchronize());
    for (int k = 0; k < KC_NARR; k++) {
        int eb = bytes_of(in, k);
        if (eb && in->n)
            CUDA_REQUIRE(cudaMemcpy(hout[k], dev[k], (size_t)in->n * (size_t)eb, cudaMemcpyDeviceToHost));
    }
}

/* One case: draw, run the reference and the GPU, compare every bit. */
static void gpu_case(struct dev_arena *d, int64_t n, const int off[KC_NARR],
                     enum kern_adam_mode mode, enum kern_dtype gt, enum kern_dtype lt,
                     unsigned variant, int steps, uint64_t *rng, unsigned long seed)
{
    struct kc_arrays input, ref, got;
    kc_alloc(&input, n, off, gt, lt);
    kc_alloc(&ref, n, off, gt, lt);
    kc_alloc(&got, n, off, gt, lt);
    kc_fill(&input, rng);
    kc_copy(&ref, &input);
    kc_copy(&got, &input);
    struct kern_adam_hparams h = kc_hparams(mode, variant);
    struct rl_err e = {0};
    struct kern_adam_bufs b = kc_bufs(&ref);
    for (int t = 1; t <= steps; t++) {
        struct kern_adam_scalars s;
        REQUIRE(kern_adam_scalars_make(&h, t, &s, &e) == 0, "%s", e.msg);
        REQUIRE(kern_adam_ref(&s, &b, &e) == 0, "%s", e.msg);
    }
    gpu_steps(d, &input, &got, &h, steps);
    const char *what = "";
    uint32_t ba = 0, bb = 0;
    int64_t i = kc_first_diff(&got, &ref, &what, &ba, &bb);
    REQUIRE(i < 0, "gpu %s[%lld] = 0x%08x, reference 0x%08x (n %lld, offsets %d/%d/%d/%d/%d, %s, "
            "grad %s, copy %s, variant %u, steps %d, seed %lu)", what, (long long)i, ba, bb,
            (long long)n, off[0], off[1], off[2], off[3], off[4],
            mode == KERN_ADAMW ? "adamw" : "adam", kern_dtype_name(gt), kern_dtype_name(lt),
            variant, steps, seed);
    kc_free(&input);
    kc_free(&ref);
    kc_free(&got);
}

/* _i: mode (2) x gradient dtype (3); sizes 0..300 x offsets 0..15 (same offset for all arrays
 * when even: the 16-byte vector path with a head; spread when odd: the scalar path). */
START_TEST(gpu_equals_reference_small_one_step)
{
    char name[64];
    snprintf(name, sizeof name, "gpu_equals_reference_small_one_step[%d]", _i);
    unsigned long seed = tu_seed(name);
    uint64_t r = seed;
    struct dev_arena d;
    arena_init(&d, 300);
    for (int64_t n = 0; n <= 300; n++)
        for (int o = 0; o < 16; o++) {
            int off[KC_NARR];
            kc_offsets(o, o % 2 == 0, off);
            gpu_case(&d, n, off, (enum kern_adam_mode)(_i / 3), grad_types[_i % 3],
                     lowp_types[(n + o) % 3], (unsigned)(n + 3 * o), 1, &r, seed);
        }
    arena_free(&d);
}
END_TEST

START_TEST(gpu_equals_reference_hundred_steps)
{
    char name[64];
    snprintf(name, sizeof name, "gpu_equals_reference_hundred_steps[%d]", _i);
    unsigned long seed = tu_seed(name);
    uint64_t r = seed;
    static const int64_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65,
                                    127, 128, 129, 255, 256, 257, 300};
    static const int offs[] = {0, 1, 2, 3, 7, 15};
    struct dev_arena d;
    arena_init(&d, 300);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (size_t j = 0; j < sizeof offs / sizeof offs[0]; j++) {
            int off[KC_NARR];
            kc_offsets(offs[j], j % 2 == 0, off);
            gpu_case(&d, sizes[k], off, (enum kern_adam_mode)(_i / 3), grad_types[_i % 3],
                     lowp_types[(k + j) % 3], (unsigned)(k + j), 100, &r, seed);
        }
    arena_free(&d);
}
END_TEST

/* 1e6 + 3 elements (more than one grid-stride pass), every gradient and copy dtype. */
START_TEST(gpu_equals_reference_large)
{
    unsigned long seed = tu_seed("gpu_equals_reference_large");
    uint64_t r = seed;
    struct dev_arena d;
    arena_init(&d, 1000003);
    for (int k = 0; k < 6; k++) {
        int off[KC_NARR];
        kc_offsets(k == 1 ? 5 : k, k < 4, off);
        gpu_case(&d, 1000003, off, (enum kern_adam_mode)(k % 2), grad_types[k % 3],
                 lowp_types[(k + 1) % 3], (unsigned)k, k == 5 ? 3 : 1, &r, seed);
    }
    arena_free(&d);
}
END_TEST

START_TEST(gpu_bad_input_names_the_field)
{
    struct kern_adam_hparams h = kern_adam_hparams_default();
    struct kern_adam_scalars s;
    struct rl_err e = {0};
    ck_assert_int_eq(kern_adam_scalars_make(&h, 1, &s, &e), 0);
    struct kern_adam_bufs b = {.grad_dtype = KERN_F32, .numel = 10};
    ck_assert_int_eq(kern_adam_cuda(&s, &b, 0, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "param"));
    b.numel = 0;
    ck_assert_int_eq(kern_adam_cuda(&s, &b, 0, &e), 0);
    CUDA_REQUIRE(cudaDeviceSynchronize());
}
END_TEST
#endif

/* Every test this suite registers on a GPU, by name, counted as skipped (loop tests once per run). */
static void skip_every_test(const char *why)
{
    tu_skip("gpu_kernels: gpu_bad_input_names_the_field", why);
    tu_skip_runs("gpu_kernels: gpu_equals_reference_small_one_step", 6, why);
    tu_skip_runs("gpu_kernels: gpu_equals_reference_hundred_steps", 6, why);
    tu_skip("gpu_kernels: gpu_equals_reference_large", why);
}

Suite *gpu_kernels_suite(void)
{
#ifdef RL_HAVE_CUDA
    /* Decided here, in the parent, before any test runs: cudaGetDeviceCount only initialises the
     * driver, it creates no context, and the forked suites never call CUDA. */
    if (kern_cuda_device_count() > 0) {
        Suite *s = suite_create("gpu_kernels");
        TCase *tc = tcase_create("bitwise");
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, gpu_bad_input_names_the_field);
        tcase_add_loop_test(tc, gpu_equals_reference_small_one_step, 0, 6);
        tcase_add_loop_test(tc, gpu_equals_reference_hundred_steps, 0, 6);
        tcase_add_test(tc, gpu_equals_reference_large);
        suite_add_tcase(s, tc);
        return s;
    }
    skip_every_test("no GPU (cudaGetDeviceCount found none)");
#else
    skip_every_test("no GPU (built without nvcc)");
#endif
    return NULL;   /* the runner counts it as skipped, never as passed */
}
