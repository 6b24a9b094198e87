/* kernels/adam_ref.c — the scalar reference Adam step, per-step scalars and argument checks.
 * The per-element update itself is kern__adam_elem in adam_ref.h. */
#include <float.h>
#include <math.h>

#include "kernels/adam_ref.h"

const char *kern_dtype_name(enum kern_dtype t)
{
    switch (t) {
    case KERN_NONE: return "none";
    case KERN_F32: return "fp32";
    case KERN_BF16: return "bf16";
    case KERN_F16: return "fp16";
    }
    return "?";
}

int kern_dtype_bytes(enum kern_dtype t)
{
    switch (t) {
    case KERN_NONE: return 0;
    case KERN_F32: return 4;
    case KERN_BF16: return 2;
    case KERN_F16: return 2;
    }
    return 0;
}

struct kern_adam_hparams kern_adam_hparams_default(void)
{
    struct kern_adam_hparams h = {
        .lr = 1e-3,
        .beta1 = 0.9,
        .beta2 = 0.999,
        .eps = 1e-8,
        .weight_decay = 0.0,
        .mode = KERN_ADAMW,
        .bias_correction = true,
    };
    return h;
}

/* A derived scalar x that must round to a finite float (lr 1e300 would otherwise give an
 * infinite step size); `field` = `value` is the hyperparameter named in the error. */
static int finite_float(const char *field, double value, const char *what, double x, float *out,
                        struct rl_err *e)
{
    if (!(fabs(x) <= FLT_MAX))
        return rl_errf(e, RL_EINVAL, "%s: %g gives %s of %g, not a finite float (allowed: "
                       "values whose %s fits in a float)", field, value, what, x, what);
    *out = (float)x;
    return 0;
}

int kern_adam_scalars_make(const struct kern_adam_hparams *h, int64_t step,
                           struct kern_adam_scalars *s, struct rl_err *e)
{
    if (!(isfinite(h->lr) && h->lr >= 0))
        return rl_errf(e, RL_EINVAL, "lr: %g is not allowed (finite, >= 0)", h->lr);
    if (!(h->beta1 >= 0 && h->beta1 < 1))
        return rl_errf(e, RL_EINVAL, "beta1: %g is outside [0, 1)", h->beta1);
    if (!(h->beta2 >= 0 && h->beta2 < 1))
        return rl_errf(e, RL_EINVAL, "beta2: %g is outside [0, 1)", h->beta2);
    if (!(isfinite(h->eps) && h->eps > 0 && h->eps <= FLT_MAX))
        return rl_errf(e, RL_EINVAL, "eps: %g is not allowed (finite float, > 0)", h->eps);
    if (!(isfinite(h->weight_decay) && h->weight_decay >= 0 && h->weight_decay <= FLT_MAX))
        return rl_errf(e, RL_EINVAL, "weight_decay: %g is not allowed (finite float, >= 0)",
                       h->weight_decay);
    if (h->mode != KERN_ADAM && h->mode != KERN_ADAMW)
        return rl_errf(e, RL_EINVAL, "mode: %d is not allowed (adam, adamw)", (int)h->mode);
    if (step < 1)
        return rl_errf(e, RL_EINVAL, "step: %lld is not allowed (>= 1, the first update is 1)",
                       (long long)step);

    /* Bias corrections in double: 1 - beta^t, exactly as DeepSpeed forms them (it uses float). */
    double bc1 = h->bias_correction ? 1.0 - pow(h->beta1, (double)step) : 1.0;
    double bc2 = h->bias_correction ? 1.0 - pow(h->beta2, (double)step) : 1.0;
    struct kern_adam_scalars o = {0};
    o.beta1 = (float)h->beta1;
    o.beta2 = (float)h->beta2;
    o.one_minus_beta1 = (float)(1.0 - h->beta1);
    o.one_minus_beta2 = (float)(1.0 - h->beta2);
    int rc = finite_float("lr", h->lr, "a step size", -h->lr / bc1, &o.step_size, e);
    if (rc)
        return rc;
    rc = finite_float("beta2", h->beta2, "a bias correction", 1.0 / sqrt(bc2), &o.bc2_rsqrt,
                      e);
    if (rc)
        return rc;
    o.eps = (float)h->eps;
    o.weight_decay = (float)h->weight_decay;
    rc = finite_float("weight_decay", h->weight_decay, "a decay factor", -h->lr * h->weight_decay,
                      &o.decay_factor, e);
    if (rc)
        return rc;
    /* DeepSpeed applies decay only when weight_decay > 0 (0 * Inf would otherwise make NaN). */
    if (h->weight_decay > 0)
        o.decay = h->mode == KERN_ADAMW ? KERN_DECAY_W : KERN_DECAY_L2;
    else
        o.decay = KERN_DECAY_NONE;
    *s = o;
    return 0;
}

int kern_adam_bufs_check(const struct kern_adam_bufs *b, struct rl_err *e)
{
    if (b->numel < 0)
        return rl_errf(e, RL_EINVAL, "numel: %lld is negative (allowed: >= 0)", (long long)b->numel);
    if (b->grad_dtype != KERN_F32 && b->grad_dtype != KERN_BF16 && b->grad_dtype != KERN_F16)
        return rl_errf(e, RL_EINVAL, "grad_dtype: %d is not allowed (fp32, bf16, fp16)",
                       (int)b->grad_dtype);
    if (b->param_lowp_dtype != KERN_NONE && b->param_lowp_dtype != KERN_BF16 &&
        b->param_lowp_dtype != KERN_F16)
        return rl_errf(e, RL_EINVAL, "param_lowp_dtype: %d is not allowed (none, bf16, fp16)",
                       (int)b->param_lowp_dtype);
    if ((b->param_lowp_dtype == KERN_NONE) != (b->param_lowp == NULL))
        return rl_errf(e, RL_EINVAL, "param_lowp: %s with param_lowp_dtype %s (allowed: NULL with "
                       "none, a buffer with bf16 or fp16)", b->param_lowp ? "a buffer" : "NULL",
                       kern_dtype_name(b->param_lowp_dtype));
    if (b->numel > 0) {
        if (!b->param)
            return rl_errf(e, RL_EINVAL, "param: NULL with numel %lld (allowed: a buffer)",
                           (long long)b->numel);
        if (!b->exp_avg)
            return rl_errf(e, RL_EINVAL, "exp_avg: NULL with numel %lld (allowed: a buffer)",
                           (long long)b->numel);
        if (!b->exp_avg_sq)
            return rl_errf(e, RL_EINVAL, "exp_avg_sq: NULL with numel %lld (allowed: a buffer)",
                           (long long)b->numel);
        if (!b->grad)
            return rl_errf(e, RL_EINVAL, "grad: NULL with numel %lld (allowed: a buffer)",
                           (long long)b->numel);
    }
    return 0;
}

/* Widens gradient i to fp32 (exact for every dtype). */
static float grad_at(const struct kern_adam_bufs *b, int64_t i)
{
    if (b->grad_dtype == KERN_BF16)
        return kern_bf16_to_f32(((const uint16_t *)b->grad)[i]);
    if (b->grad_dtype == KERN_F16)
        return kern_f16_to_f32(((const uint16_t *)b->grad)[i]);
    return ((const float *)b->grad)[i];
}

void kern__adam_ref_range(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                          int64_t lo, int64_t hi)
{
    for (int64_t i = lo; i < hi; i++) {
        kern__adam_elem(s, grad_at(b, i), &b->param[i], &b->exp_avg[i], &b->exp_avg_sq[i]);
        if (b->param_lowp_dtype == KERN_BF16)
            ((uint16_t *)b->param_lowp)[i] = kern_f32_to_bf16(b->param[i]);
        else if (b->param_lowp_dtype == KERN_F16)
            ((uint16_t *)b->param_lowp)[i] = kern_f32_to_f16(b->param[i]);
    }
}

int kern_adam_ref(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                  struct rl_err *e)
{
    int rc = kern_adam_bufs_check(b, e);
    if (rc)
        return rc;
    kern__adam_ref_range(s, b, 0, b->numel);
    return 0;
}
