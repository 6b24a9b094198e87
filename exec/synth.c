/* exec/synth.c — synthetic, exact training data and the shrunk model.
 *
 * Every value is a counter-based function (splitmix64 of seed, iteration, global element index
 * and share index), so any rank computes any element without communication, and a value never
 * depends on the world size except through the shares that sum to it.
 *
 * Gradient of element i at iteration t: G = u_0 x 2^-10 with u_0 an integer in [-127, 127].
 * Rank q of W contributes (u_q - u_{q+1}) x 2^-10, where u_1..u_{W-1} are more integers in
 * [-127, 127] and u_W = 0: the shares telescope to G. Each share is an integer of magnitude
 * <= 254 (exact in bf16 and fp16), and any partial sum of shares is an integer of magnitude
 * <= 254 W < 2^24 for W <= EX_MAX_WORLD, so fp32 sums them exactly in every order. G itself
 * has magnitude <= 127 x 2^-10: exact in bf16 and fp16, so a round trip through the model dtype
 * changes nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "exec/synth.h"

/* The per-iteration key: two mixes, computed once per call site and iteration. */
uint64_t ex_synth_base(uint64_t seed, int64_t it)
{
    return ex__mix64(ex__mix64(seed ^ 0x5bd1e995u) ^ (uint64_t)it);
}

float ex_synth_param(uint64_t seed, int64_t i)
{
    /* An integer in [-4096, 4096] times 2^-13: values in [-0.5, 0.5], exact in fp32. */
    uint64_t h = ex__mix64(ex_synth_base(seed, -1) ^ ((uint64_t)i * 0x2545f4914f6cdd1dull));
    return (float)((int64_t)(h % 8193u) - 4096) * 0x1p-13f;
}

float ex_synth_grad(uint64_t seed, int64_t it, int64_t i)
{
    return (float)ex__share_u(ex_synth_base(seed, it), i, 0) * EX__GRAD_UNIT;
}

float ex_synth_share(uint64_t base, int64_t i, int q, int W)
{
    return ex__share(base, i, q, W);
}

/* ex_synth_shares' loop. The hash input of element i is shared by u_q and u_{q+1}; the -127 of
 * both cancel in their difference; every value fits 32 bits, so the conversion does too. The
 * loop has no branch and no division: `omp simd` vectorises it (64-bit multiplies included). */
__attribute__((always_inline)) static inline void shares_body(float *dst, int64_t n, uint64_t base,
                                                              int64_t gstart, int q, int W)
{
    const uint64_t ka = ex__share_key(q), kb = ex__share_key(q + 1);
    if (q + 1 < W) {
#pragma omp simd
        for (int64_t j = 0; j < n; j++) {
            uint64_t x = base ^ ((uint64_t)(gstart + j) * 0x2545f4914f6cdd1dull);
            int32_t a = (int32_t)ex__mod255(ex__mix64(x ^ ka));
            int32_t b = (int32_t)ex__mod255(ex__mix64(x ^ kb));
            dst[j] = (float)(a - b) * EX__GRAD_UNIT;
        }
    } else {
#pragma omp simd
        for (int64_t j = 0; j < n; j++) {
            uint64_t x = base ^ ((uint64_t)(gstart + j) * 0x2545f4914f6cdd1dull);
            dst[j] = (float)((int32_t)ex__mod255(ex__mix64(x ^ ka)) - 127) * EX__GRAD_UNIT;
        }
    }
}

__attribute__((target("avx512f,avx512dq"))) static void shares_avx512(float *dst, int64_t n, uint64_t base,
                                                                      int64_t gstart, int q, int W)
{
    shares_body(dst, n, base, gstart, q, W);
}

static void shares_base(float *dst, int64_t n, uint64_t base, int64_t gstart, int q, int W)
{
    shares_body(dst, n, base, gstart, q, W);
}

void ex_synth_shares(float *dst, int64_t n, uint64_t base, int64_t gstart, int q, int W)
{
    static int avx512 = -1;   /* a benign race: every thread computes the same value */
    if (avx512 < 0)
        avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    if (avx512)
        shares_avx512(dst, n, base, gstart, q, W);
    else
        shares_base(dst, n, base, gstart, q, W);
}

float ex_synth_grad_share(uint64_t seed, int64_t it, int64_t i, int q, int W)
{
    return ex_synth_share(ex_synth_base(seed, it), i, q, W);
}

struct kern_adam_hparams ex_hparams(const struct ex_opts *o, int group)
{
    struct kern_adam_hparams h = kern_adam_hparams_default();
    h.lr = o->lr;
    h.mode = KERN_ADAMW;
    h.weight_decay = group == 0 ? o->weight_decay : 0.0;
    return h;
}

/* ---- the shrunk model ----------------------------------------------------------------------- */

int ex_scale_model(const struct plan_model *in, double F, struct plan_model *out, struct rl_err *e)
{
    if (!(F >= 1.0) || !isfinite(F))
        return rl_errf(e, RL_EINVAL, "scale: %g is not allowed; allowed: a finite number >= 1", F);
    *out = *in;
    out->tensors = malloc((size_t)(in->n_tensors > 0 ? in->n_tensors : 1) * sizeof *out->tensors);
    if (!out->tensors)
        return rl_errf(e, RL_ENOMEM, "out of host memory for the model");
    out->cap_tensors = in->n_tensors;
    out->total_numel = 0;
    for (int t = 0; t < in->n_tensors; t++) {
        struct plan_tensor *x = &out->tensors[t];
        *x = in->tensors[t];
        int64_t d0 = (int64_t)ceil((double)x->shape[0] / F);
        x->shape[0] = d0 < 1 ? 1 : d0;
        x->numel = 1;
        for (int k = 0; k < x->ndim; k++)
            x->numel *= x->shape[k];
        out->total_numel += x->numel;
    }
    return 0;
}

