/* kernels/adam_replay.h — replays of other optimizers' Adam steps, bit for bit.
 *
 * ratiolab's own kernels (adam.h) define one result and never fuse. These do the opposite: each
 * reproduces, operation for operation, the float32 arithmetic of one optimizer a user's DeepSpeed
 * run may have stepped with, so that an audit (validation/audit.c) can tell a correct update from
 * a wrong one element by element. Each kernel names the source it follows by release:
 *
 *   KERN_REPLAY_DS_CPU_ADAM     DeepSpeedCPUAdam, DeepSpeed 0.14.1 and 0.19.8:
 *                               csrc/includes/cpu_adam.h (IncrementStep, update_state) and
 *                               csrc/adam/cpu_adam_impl.cpp (Step_AVX body, Step_1 scalar tail).
 *   KERN_REPLAY_TORCH_ADAMW     torch.optim.AdamW on CPU float32, torch 2.5.1: adamw.py
 *                               _single_tensor_adamw and _multi_tensor_adamw (foreach), as the
 *                               ATen CPU kernels they call (mul_, lerp_, addcmul_, sqrt, div_,
 *                               add_, addcdiv_) round.
 *
 * Where the arithmetic depends on how a build compiled it, the dependence is a parameter, never a
 * guess: the DeepSpeed build's SIMD width (which elements take the vector body and which the
 * scalar tail) is recorded by the probe from the build's own report. Each kernel's use of fused
 * multiply-adds is written with fmaf (correctly rounded, the same bits as the hardware's FMA), so
 * the file is unaffected by -ffp-contract.
 *
 * Hyperparameters are the Python floats (doubles) the optimizer held; each kernel rounds them
 * where its source does (DeepSpeed at the pybind boundary, to float; torch when a Python scalar
 * meets a float32 tensor). Plain C, no printing, no allocation. */
#ifndef RL_KERNELS_ADAM_REPLAY_H
#define RL_KERNELS_ADAM_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"

/* The largest step count replayed: DeepSpeed's bias corrections are step float products, so a
 * replay costs O(step) before its O(n) (16.7 M steps: about 20 ms). */
#define KERN_REPLAY_MAX_STEP ((int64_t)1 << 24)

/* The optimizers whose arithmetic can be replayed (numbers are the audit file's, stable). */
enum kern_replay_opt {
    KERN_REPLAY_DS_CPU_ADAM = 1,         /* DeepSpeedCPUAdam (the C++ op ds_adam_step) */
    KERN_REPLAY_TORCH_ADAMW = 2,         /* torch.optim.AdamW, single-tensor path, CPU */
    KERN_REPLAY_TORCH_ADAMW_FOREACH = 3, /* torch.optim.AdamW, foreach path, CPU */
};
/* "ds_cpu_adam", "torch_adamw", "torch_adamw_foreach", or NULL for an unknown value. */
const char *kern_replay_opt_name(int opt);

/* What one sub-group's optimizer held for the step being replayed. */
struct kern_replay_hparams {
    double lr;              /* the param group's lr (a Python float) */
    double beta1;           /* betas[0] */
    double beta2;           /* betas[1] */
    double eps;             /* eps */
    double weight_decay;    /* weight_decay */
    bool adamw_mode;        /* DeepSpeed: decoupled decay (adamw_mode); torch AdamW: always true */
    bool bias_correction;   /* DeepSpeed: bias_correction; torch: always true */
    int64_t step;           /* the step count the update used (>= 1) */
    int32_t simd_width;     /* DeepSpeed: floats per vector of the build (16 AVX-512, 8 AVX2,
                               4 NEON, 0 no SIMD body); ignored by torch */
    bool tail_fma;          /* DeepSpeed: the build's scalar loop has fused multiply-adds (g++
                               -O3 -march=native contracts them on an FMA CPU, GNU C++'s default
                               -ffp-contract=fast); false for a build without -march */
    int64_t first_element;  /* DeepSpeed: index of the first element stepped here within the
                               sub-group the op stepped as one call (0 for a whole sub-group) */
    int64_t subgroup_numel; /* DeepSpeed: that call's element count (0: the n passed here); the
                               last subgroup_numel % simd_width elements take the scalar tail */
    int32_t sqrt_ulps;      /* torch: the square root taken this many ulps from the correctly
                               rounded one (-1, 0, +1; see below); DeepSpeed: must be 0 */
    int32_t ds_step_call;   /* DeepSpeed: how IncrementStep reached beta^step (KERN_REPLAY_DS_STEP_*) */
};

/* DeepSpeedCPUAdam keeps one (_step, _betta1_t, _betta2_t) per optimizer object, shared by every
 * sub-group it steps. IncrementStep(step) in 0.14.1-0.18.9 (csrc/includes/cpu_adam.h: `_step++;
 * if (_step != step) { _betta1_t = std::pow(_betta1, step); _step = step; } else _betta1_t *=
 * _betta1;`) takes the float product only for the first call of a step, and only when the
 * previous step ended on it; with several CPU sub-groups a step, every later call recomputes
 * std::pow in double (rounded to float), and the first call of the next step multiplies that
 * by beta. 0.19.8's (`if (step == _step + 1) ... *=; else if (step == _step) return;`) keeps the
 * product chain for every call. */
enum {
    KERN_REPLAY_DS_STEP_CHAIN = 0, /* the float product chain: 0.19.8, or the only CPU sub-group of a step */
    KERN_REPLAY_DS_STEP_FIRST = 1, /* 0.14-0.18, the first of several: float(pow(beta, step - 1)) * beta */
    KERN_REPLAY_DS_STEP_LATER = 2, /* 0.14-0.18, a later one: float(pow(beta, step)) */
};

/* torch's float32 CPU sqrt (torch 2.5.1 with MKL: ATen's vml vsqrt is MKL's vsSqrt, in its
 * high-accuracy mode) is faithful, not correctly rounded: measured one ulp below the correctly
 * rounded root for 4 of 261 elements (tests/deepspeed/replay). Its algorithm is MKL's and the
 * CPU's, so it is not emulated: the audit replays an element whose p differs once more with
 * sqrt_ulps -1 and +1, and calls it "bit-identical but for a faithful sqrt" when one of them
 * gives the recorded bits (every other operation still bit for bit). */

/* The float scalars DeepSpeed 0.14.1 / 0.19.8 derives once per call (cpu_adam.h and the start of
 * Step_AVX / Step_1), for a C++ Adam_Optimizer whose steps ran 1, 2, ..., step with unchanged
 * betas: IncrementStep then multiplies _betta1_t by beta1 once per step, in float. */
struct kern_replay_ds_scalars {
    float beta1;            /* (float)beta1 */
    float beta2;            /* (float)beta2 */
    float one_minus_beta1;  /* 1 - beta1, in float */
    float one_minus_beta2;  /* 1 - beta2, in float */
    float bc1;              /* _bias_correction1 = 1 - betta1_t (1 without bias correction) */
    float bc2;              /* _bias_correction2 = 1 / sqrt(1 - betta2_t) in float (1 without) */
    float eps;              /* (float)eps */
    float weight_decay;     /* (float)weight_decay */
    float step_size;        /* -1 * alpha / bc1 */
    float w_decay;          /* -1 * alpha * weight_decay */
};
void kern_replay_ds_scalars(const struct kern_replay_hparams *h, struct kern_replay_ds_scalars *s);

/* Checks h (finite values, 1 <= step <= KERN_REPLAY_MAX_STEP, a known simd width); RL_EINVAL
 * naming the field. */
int kern_replay_hparams_check(const struct kern_replay_hparams *h, struct rl_err *e);

/* Runs optimizer `opt`'s step over n elements in place: p (fp32 master), m, v updated from g
 * (the gradient the optimizer saw, fp32). Returns 0, or RL_EINVAL for an unknown opt or bad h.
 * O(n). */
int kern_replay_step(int opt, const struct kern_replay_hparams *h, float *p, float *m, float *v,
                     const float *g, int64_t n, struct rl_err *e);

/* sqrtf(v) moved `ulps` (-1, 0, +1) floats away, toward -Inf for -1; NaN and Inf unchanged. */
float kern_replay_sqrt_shift(float v, int ulps);

#endif
