/* kernels/adam_ref.h — the definition of one Adam / AdamW element update.
 *
 * This is the contract every implementation meets bit for bit: kern_adam_ref (adam_ref.c) runs it
 * in a plain loop, the CPU kernel (adam_cpu.c) uses it for the scalar tail and reproduces it lane
 * by lane in SIMD, and the CUDA kernel (adam.cu) calls it per element.
 *
 * The order of operations is DeepSpeed's CPU Adam (csrc/includes/cpu_adam.h, Step_1), so results
 * are the ones DeepSpeed users see, except that no FMA is ever formed: each line below is one
 * IEEE float operation, rounded to nearest even. This holds only because host code is built with
 * -ffp-contract=off and CUDA with --fmad=false -prec-div=true -prec-sqrt=true -ftz=false (no
 * fast-math anywhere); sqrtf and '/' are then correctly rounded on both sides, and subnormals are
 * kept. Addition and multiplication are commutative in IEEE arithmetic, so a SIMD version may
 * swap operands; it may not reassociate.
 *
 * NaN: which NaN an operation returns differs between x86 (the first operand's payload) and
 * CUDA (a canonical NaN), so every stored result that is NaN is replaced by KERN_CANON_NAN_BITS.
 * Whether a result is NaN does not depend on the hardware. */
#ifndef RL_KERNELS_ADAM_REF_H
#define RL_KERNELS_ADAM_REF_H

#include <math.h>   /* sqrtf */

#include "kernels/adam.h"
#include "kernels/lowp.h"

KERN_HD static inline float kern__canon(float x)
{
    return x != x ? kern_f32_from_bits(KERN_CANON_NAN_BITS) : x;
}

/* Updates p, m, v of one element from its gradient g (already widened to fp32). */
KERN_HD static inline void kern__adam_elem(const struct kern_adam_scalars *s, float g, float *pp,
                                           float *mp, float *vp)
{
    float p = *pp;
    float m = *mp;
    float v = *vp;
    if (s->decay == KERN_DECAY_L2)
        g = p * s->weight_decay + g;             /* L2: the decay goes into the gradient */
    m = m * s->beta1;
    m = g * s->one_minus_beta1 + m;              /* m = beta1 m + (1 - beta1) g */
    v = v * s->beta2;
    float g2 = g * g;
    v = g2 * s->one_minus_beta2 + v;             /* v = beta2 v + (1 - beta2) g^2 */
    float denom = sqrtf(v);
    denom = denom * s->bc2_rsqrt + s->eps;       /* sqrt(v / (1 - beta2^t)) + eps */
    float update = m / denom;
    if (s->decay == KERN_DECAY_W)
        p = s->decay_factor * p + p;             /* AdamW: p -= lr wd p, before the update */
    p = update * s->step_size + p;               /* step_size = -lr / (1 - beta1^t) */
    *pp = kern__canon(p);
    *mp = kern__canon(m);
    *vp = kern__canon(v);
}

/* Runs the definition over elements [lo, hi) of *b (already checked). Used by kern_adam_ref and
 * as the scalar tail and scalar path of the CPU kernel. O(hi - lo). */
void kern__adam_ref_range(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                          int64_t lo, int64_t hi);

#endif
