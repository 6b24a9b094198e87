/* kernels/adam_replay.c — DeepSpeedCPUAdam's and torch AdamW's float32 steps, operation for
 * operation (adam_replay.h names the sources). Every line below that computes is one IEEE float
 * operation rounded to nearest even, or one fmaf where the source's build forms a fused
 * multiply-add; nothing here may be reordered, fused or split (tests/check_replay.c holds the
 * bits the real optimizers produced). */
#include <math.h>

#include "kernels/adam_replay.h"

const char *kern_replay_opt_name(int opt)
{
    switch (opt) {
    case KERN_REPLAY_DS_CPU_ADAM: return "ds_cpu_adam";
    case KERN_REPLAY_TORCH_ADAMW: return "torch_adamw";
    case KERN_REPLAY_TORCH_ADAMW_FOREACH: return "torch_adamw_foreach";
    }
    return NULL;
}

int kern_replay_hparams_check(const struct kern_replay_hparams *h, struct rl_err *e)
{
    if (!isfinite(h->lr))
        return rl_errf(e, RL_EINVAL, "lr: %g is not allowed (finite)", h->lr);
    if (!(h->beta1 >= 0 && h->beta1 < 1))
        return rl_errf(e, RL_EINVAL, "beta1: %g is outside [0, 1)", h->beta1);
    if (!(h->beta2 >= 0 && h->beta2 < 1))
        return rl_errf(e, RL_EINVAL, "beta2: %g is outside [0, 1)", h->beta2);
    if (!isfinite(h->eps))
        return rl_errf(e, RL_EINVAL, "eps: %g is not allowed (finite)", h->eps);
    if (!isfinite(h->weight_decay))
        return rl_errf(e, RL_EINVAL, "weight_decay: %g is not allowed (finite)", h->weight_decay);
    if (h->step < 1 || h->step > KERN_REPLAY_MAX_STEP)
        return rl_errf(e, RL_EINVAL, "step: %lld is not allowed (1 .. %lld)", (long long)h->step,
                       (long long)KERN_REPLAY_MAX_STEP);
    if (h->sqrt_ulps < -1 || h->sqrt_ulps > 1)
        return rl_errf(e, RL_EINVAL, "sqrt_ulps: %d is not allowed (-1, 0, 1)", (int)h->sqrt_ulps);
    if (h->first_element < 0 || h->subgroup_numel < 0)
        return rl_errf(e, RL_EINVAL, "first_element: %lld / subgroup_numel %lld is not allowed (>= 0)",
                       (long long)h->first_element, (long long)h->subgroup_numel);
    if (h->simd_width != 0 && h->simd_width != 4 && h->simd_width != 8 && h->simd_width != 16)
        return rl_errf(e, RL_EINVAL, "simd_width: %d is not allowed (0, 4, 8, 16)",
                       (int)h->simd_width);
    return 0;
}

float kern_replay_sqrt_shift(float v, int ulps)
{
    float r = sqrtf(v);
    if (ulps == 0 || !isfinite(r))
        return r;
    return nextafterf(r, ulps < 0 ? -INFINITY : INFINITY);
}

/* ---- DeepSpeedCPUAdam (csrc/includes/cpu_adam.h, csrc/adam/cpu_adam_impl.cpp) -------------- */

void kern_replay_ds_scalars(const struct kern_replay_hparams *h, struct kern_replay_ds_scalars *s)
{
    /* ds_adam_step's float arguments: pybind rounds each Python float once. */
    float alpha = (float)h->lr;
    float b1 = (float)h->beta1;
    float b2 = (float)h->beta2;
    /* IncrementStep: step == _step + 1 each call, so _betta*_t *= _betta*, in float, per step;
     * 0.14-0.18 with several CPU sub-groups a step recompute it with std::pow (adam_replay.h). */
    float b1t = 1.0f, b2t = 1.0f;
    if (h->ds_step_call == KERN_REPLAY_DS_STEP_LATER) {
        b1t = (float)pow((double)b1, (double)h->step);
        b2t = (float)pow((double)b2, (double)h->step);
    } else if (h->ds_step_call == KERN_REPLAY_DS_STEP_FIRST && h->step >= 2) {
        b1t = (float)pow((double)b1, (double)(h->step - 1)) * b1;
        b2t = (float)pow((double)b2, (double)(h->step - 1)) * b2;
    } else {
        for (int64_t k = 0; k < h->step; k++) {
            float n1 = b1t * b1, n2 = b2t * b2;
            if (n1 == b1t && n2 == b2t)
                break;   /* both stationary (0, or a subnormal that rounds to itself): no change */
            b1t = n1;
            b2t = n2;
        }
    }
    s->beta1 = b1;
    s->beta2 = b2;
    s->one_minus_beta1 = 1.0f - b1;
    s->one_minus_beta2 = 1.0f - b2;
    s->bc1 = 1.0f;
    s->bc2 = 1.0f;
    if (h->bias_correction) {   /* update_state */
        s->bc1 = 1.0f - b1t;
        s->bc2 = 1.0f / sqrtf(1.0f - b2t);
    }
    s->eps = (float)h->eps;
    s->weight_decay = (float)h->weight_decay;
    s->step_size = -1.0f * alpha / s->bc1;
    s->w_decay = -1.0f * alpha * s->weight_decay;
}

/* One element of Step_AVX: the SIMD body, lane by lane (simd_fma(d, a, b, c) is d = a * b + c,
 * one rounding). */
static void ds_body(const struct kern_replay_ds_scalars *s, bool adamw, float g, float *pp,
                    float *mp, float *vp)
{
    float p = *pp, m = *mp, v = *vp;
    if (s->weight_decay > 0 && !adamw)
        g = fmaf(p, s->weight_decay, g);
    m = m * s->beta1;
    m = fmaf(g, s->one_minus_beta1, m);
    v = v * s->beta2;
    g = g * g;
    v = fmaf(g, s->one_minus_beta2, v);
    g = sqrtf(v);
    g = fmaf(g, s->bc2, s->eps);
    g = m / g;
    if (s->weight_decay > 0 && adamw)
        p = fmaf(p, s->w_decay, p);
    p = fmaf(g, s->step_size, p);
    *pp = p;
    *mp = m;
    *vp = v;
}

/* One element of Step_1's scalar loop. The source writes `a * b + c` expressions. Built with
 * g++ -O3 -march=native on an FMA CPU, GNU C++'s default -ffp-contract=fast fuses the first
 * product of each sum into an FMA (fma = true): momentum * _betta1 + (grad * betta1_minus1), not
 * the body's order. Built without -march (DeepSpeed 0.14.1's CPU-accelerator builder) nothing is
 * fused (fma = false): each line is its operations rounded one by one. */
static void ds_tail(const struct kern_replay_ds_scalars *s, bool adamw, bool fma, float g,
                    float *pp, float *mp, float *vp)
{
    float p = *pp, m = *mp, v = *vp;
    if (s->weight_decay > 0 && !adamw)   /* grad = param * _weight_decay + grad */
        g = fma ? fmaf(p, s->weight_decay, g) : p * s->weight_decay + g;
    if (fma) {
        m = fmaf(m, s->beta1, g * s->one_minus_beta1);
        v = fmaf(v, s->beta2, (g * g) * s->one_minus_beta2);
    } else {
        m = m * s->beta1;
        m = g * s->one_minus_beta1 + m;
        v = v * s->beta2;
        float g2 = g * g;
        v = g2 * s->one_minus_beta2 + v;
    }
    g = sqrtf(v);
    g = fma ? fmaf(g, s->bc2, s->eps) : g * s->bc2 + s->eps;   /* grad * _bias_correction2 + _eps */
    g = m / g;
    if (s->weight_decay > 0 && adamw)    /* param += w_decay * param */
        p = fma ? fmaf(s->w_decay, p, p) : p + s->w_decay * p;
    p = fma ? fmaf(g, s->step_size, p) : g * s->step_size + p;   /* grad * step_size + param */
    *pp = p;
    *mp = m;
    *vp = v;
}

static void ds_step(const struct kern_replay_hparams *h, float *p, float *m, float *v,
                    const float *g, int64_t n)
{
    struct kern_replay_ds_scalars s;
    kern_replay_ds_scalars(h, &s);
    /* Step_8 -> Step_4 -> Step_1: each runs Step_AVX<span> over ROUND_DOWN(n, width * span)
     * and hands the rest on, so every whole vector takes the body and the last n % width
     * elements the scalar loop. */
    int64_t total = h->subgroup_numel > 0 ? h->subgroup_numel : n;
    int64_t body = h->simd_width > 0 ? total / h->simd_width * h->simd_width - h->first_element : 0;
    body = body < 0 ? 0 : body > n ? n : body;
    for (int64_t i = 0; i < body; i++)
        ds_body(&s, h->adamw_mode, g[i], &p[i], &m[i], &v[i]);
    for (int64_t i = body; i < n; i++)
        ds_tail(&s, h->adamw_mode, h->tail_fma, g[i], &p[i], &m[i], &v[i]);
}

/* ---- torch.optim.AdamW on CPU float32 (torch 2.5.1 adamw.py and ATen's CPU kernels) -------- */

static void torch_adamw_step(const struct kern_replay_hparams *h, bool foreach, float *p,
                             float *m, float *v, const float *g, int64_t n)
{
    /* The Python side, in double: bias corrections from beta ** float(step), step size, sqrt. */
    double step = (double)h->step;
    double bc1 = 1.0 - pow(h->beta1, step);
    double bc2 = 1.0 - pow(h->beta2, step);
    double step_size = h->lr / bc1;
    double bc2_sqrt = pow(bc2, 0.5);
    /* Each Python scalar is rounded to float where it meets the float32 tensor. */
    bool decay = !foreach || h->weight_decay != 0;   /* foreach skips mul_ when wd == 0 */
    float decay_f = (float)(1.0 - h->lr * h->weight_decay);
    float w = (float)(1.0 - h->beta1);
    bool w_small = fabsf(w) < 0.5f;                   /* Lerp.h is_lerp_weight_small */
    float b2 = (float)h->beta2;
    float one_minus_b2 = (float)(1.0 - h->beta2);
    float bc2s = (float)bc2_sqrt;
    float eps = (float)h->eps;
    float neg_step = (float)(-step_size);
    for (int64_t i = 0; i < n; i++) {
        float pi = p[i], mi = m[i], vi = v[i], gi = g[i];
        if (decay)
            pi = pi * decay_f;                        /* param.mul_(1 - lr * weight_decay) */
        /* exp_avg.lerp_(grad, 1 - beta1): lerp_vec, fmadd(coeff, end - start, base) */
        mi = w_small ? fmaf(w, gi - mi, mi) : fmaf(w - 1.0f, gi - mi, gi);
        vi = vi * b2;                                 /* exp_avg_sq.mul_(beta2) */
        /* .addcmul_(grad, grad, value=1 - beta2): self + value * t1 * t2, which torch's build
         * contracts to fma(value * t1, t2, self) (measured: the unfused sum differs) */
        vi = fmaf(one_minus_b2 * gi, gi, vi);
        float d = kern_replay_sqrt_shift(vi, h->sqrt_ulps) / bc2s;   /* exp_avg_sq.sqrt() / bc2_sqrt */
        d = d + eps;                                  /* .add_(eps) */
        pi = pi + neg_step * mi / d;                  /* param.addcdiv_(exp_avg, denom, -step_size) */
        p[i] = pi;
        m[i] = mi;
        v[i] = vi;
    }
}

int kern_replay_step(int opt, const struct kern_replay_hparams *h, float *p, float *m, float *v,
                     const float *g, int64_t n, struct rl_err *e)
{
    int rc = kern_replay_hparams_check(h, e);
    if (rc)
        return rc;
    if (n < 0)
        return rl_errf(e, RL_EINVAL, "numel: %lld is negative (allowed: >= 0)", (long long)n);
    if (h->subgroup_numel > 0 && h->first_element + n > h->subgroup_numel)
        return rl_errf(e, RL_EINVAL, "numel: %lld elements from %lld exceed subgroup_numel %lld",
                       (long long)n, (long long)h->first_element, (long long)h->subgroup_numel);
    if (opt == KERN_REPLAY_DS_CPU_ADAM && h->sqrt_ulps != 0)
        return rl_errf(e, RL_EINVAL, "sqrt_ulps: %d is not allowed for ds_cpu_adam (0: its sqrt "
                       "is the correctly rounded vsqrtps / sqrtss)", (int)h->sqrt_ulps);
    switch (opt) {
    case KERN_REPLAY_DS_CPU_ADAM: ds_step(h, p, m, v, g, n); return 0;
    case KERN_REPLAY_TORCH_ADAMW: torch_adamw_step(h, false, p, m, v, g, n); return 0;
    case KERN_REPLAY_TORCH_ADAMW_FOREACH: torch_adamw_step(h, true, p, m, v, g, n); return 0;
    }
    return rl_errf(e, RL_EINVAL, "optimizer: %d is not allowed (1 ds_cpu_adam, 2 torch_adamw, "
                   "3 torch_adamw_foreach)", opt);
}
