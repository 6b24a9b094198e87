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

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The per-iteration key: two mixes, computed once per call site and iteration. */
uint64_t ex_synth_base(uint64_t seed, int64_t it)
{
    return mix64(mix64(seed ^ 0x5bd1e995u) ^ (uint64_t)it);
}

float ex_synth_param(uint64_t seed, int64_t i)
{
    /* An integer in [-4096, 4096] times 2^-13: values in [-0.5, 0.5], exact in fp32. */
    uint64_t h = mix64(ex_synth_base(seed, -1) ^ ((uint64_t)i * 0x2545f4914f6cdd1dull));
    return ldexpf((float)((int64_t)(h % 8193u) - 4096), -13);
}

/* u_q for share index q in [0, W): an integer in [-127, 127]. */
static int64_t share_u(uint64_t base, int64_t i, int q)
{
    uint64_t h = mix64(base ^ ((uint64_t)i * 0x2545f4914f6cdd1dull) ^ ((uint64_t)(q + 1) << 40));
    return (int64_t)(h % 255u) - 127;
}

float ex_synth_grad(uint64_t seed, int64_t it, int64_t i)
{
    return ldexpf((float)share_u(ex_synth_base(seed, it), i, 0), -10);
}

float ex_synth_share(uint64_t base, int64_t i, int q, int W)
{
    int64_t a = share_u(base, i, q);
    int64_t b = q + 1 < W ? share_u(base, i, q + 1) : 0;
    return ldexpf((float)(a - b), -10);
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
        return rl_errf(e, RL_EINVAL, "--scale: %g is not allowed; allowed: a finite number >= 1", F);
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

static int64_t scaled(int64_t v, double F)
{
    int64_t s = (int64_t)ceil((double)v / F);
    return s < 1 ? 1 : s;
}

void ex_scale_zero(struct plan_zero *z, int64_t *chunk_numel, double F)
{
    z->sub_group_size = scaled(z->sub_group_size, F);
    z->reduce_bucket_size = scaled(z->reduce_bucket_size, F);
    z->prefetch_bucket_size = scaled(z->prefetch_bucket_size, F);
    if (chunk_numel)
        *chunk_numel = scaled(*chunk_numel, F);
}
