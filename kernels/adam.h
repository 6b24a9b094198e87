/* kernels/adam.h — the Adam / AdamW step on fp32 master parameters, bitwise equal across the
 * scalar reference, the CPU SIMD kernel and the CUDA kernel (the contract: kernels/README.md).
 *
 * Use:
 *   struct kern_adam_hparams h = kern_adam_hparams_default();   then set lr, mode, ...
 *   struct kern_adam_scalars s;
 *   kern_adam_scalars_make(&h, step, &s, &e);                    once per step, on the host
 *   struct kern_adam_bufs b = {.param = p, .exp_avg = m, .exp_avg_sq = v, .grad = g,
 *                              .grad_dtype = KERN_BF16, .numel = n};
 *   kern_adam_cpu(&s, &b, threads, &e);      or kern_adam_ref(&s, &b, &e)
 *   kern_adam_cuda(&s, &b, stream, &e);      the same struct holding device pointers
 *
 * The update of one element is defined in kernels/adam_ref.h (DeepSpeed CPU Adam order of
 * operations, no FMA, correctly rounded sqrt and division, NaN outputs stored as the canonical
 * quiet NaN 0x7fc00000). Every entry point returns 0 or a negative RL_E* code and fills *e. */
#ifndef RL_KERNELS_ADAM_H
#define RL_KERNELS_ADAM_H

#include <stdarg.h>   /* the C headers common/rl.h uses, included outside extern "C" */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef RL_HAVE_CUDA
#include <cuda_runtime_api.h>   /* cudaStream_t */
#endif

#ifdef __cplusplus
extern "C" {
#endif

#include "common/rl.h"

/* Element types of gradients and of the optional low-precision parameter copy. plan/plan.h numbers
 * the model's types differently (enum plan_dtype: fp32 0, fp16 1, bf16 2) and neither header may
 * include the other: exec/dtype.h holds the one mapping, checked there and in tests/check_kernels.c. */
enum kern_dtype {
    KERN_NONE = 0,   /* no low-precision copy (only valid for param_lowp_dtype) */
    KERN_F32 = 1,    /* IEEE binary32 */
    KERN_BF16 = 2,   /* bfloat16, stored as uint16_t */
    KERN_F16 = 3,    /* IEEE binary16, stored as uint16_t */
};
const char *kern_dtype_name(enum kern_dtype t);   /* "none", "fp32", "bf16", "fp16" */
int kern_dtype_bytes(enum kern_dtype t);          /* 0, 4, 2, 2 */

/* Adam adds weight_decay * p to the gradient (L2); AdamW scales p by (1 - lr * weight_decay)
 * before the update (decoupled), as DeepSpeed's `adamw_mode`. */
enum kern_adam_mode {
    KERN_ADAM = 0,
    KERN_ADAMW = 1,
};

/* What a user writes in an optimizer config. Doubles; validated by kern_adam_scalars_make. */
struct kern_adam_hparams {
    double lr;               /* learning rate, finite, >= 0 */
    double beta1;            /* first-moment decay, in [0, 1) */
    double beta2;            /* second-moment decay, in [0, 1) */
    double eps;              /* added to the bias-corrected sqrt(v), finite, > 0 */
    double weight_decay;     /* finite, >= 0; 0 means no decay at all */
    enum kern_adam_mode mode;   /* KERN_ADAM (L2) or KERN_ADAMW (decoupled) */
    bool bias_correction;    /* divide by 1 - beta^step (DeepSpeed default: true) */
};
/* lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0, AdamW, bias correction on. */
struct kern_adam_hparams kern_adam_hparams_default(void);

/* Decay applied per element, chosen on the host from mode and weight_decay > 0. */
enum kern_decay {
    KERN_DECAY_NONE = 0,   /* weight_decay == 0 */
    KERN_DECAY_L2 = 1,     /* g = p * weight_decay + g */
    KERN_DECAY_W = 2,      /* p = decay_factor * p + p */
};

/* Per-step scalars: computed once in double on the host, rounded to float, and passed unchanged
 * to every implementation (so they all see the same bits). Plain data, copyable to a device. */
struct kern_adam_scalars {
    float beta1;             /* beta1 */
    float beta2;             /* beta2 */
    float one_minus_beta1;   /* 1 - beta1, rounded from double */
    float one_minus_beta2;   /* 1 - beta2, rounded from double */
    float step_size;         /* -lr / (1 - beta1^step), or -lr without bias correction */
    float bc2_rsqrt;         /* 1 / sqrt(1 - beta2^step), or 1 without bias correction */
    float eps;               /* eps */
    float weight_decay;      /* weight_decay (used by KERN_DECAY_L2) */
    float decay_factor;      /* -lr * weight_decay (used by KERN_DECAY_W) */
    int32_t decay;           /* enum kern_decay */
};

/* Fills *s for step number `step` (>= 1; the first update is step 1). Returns RL_EINVAL naming
 * the field and the allowed range when a hyperparameter is out of range. */
int kern_adam_scalars_make(const struct kern_adam_hparams *h, int64_t step,
                           struct kern_adam_scalars *s, struct rl_err *e);

/* The arrays of one update. All arrays hold `numel` elements and must not overlap; any element
 * alignment is allowed. On the CPU entry points they are host pointers, on kern_adam_cuda device
 * pointers. */
struct kern_adam_bufs {
    float *param;                     /* fp32 master parameters, updated in place */
    float *exp_avg;                   /* fp32 first moment m, updated in place */
    float *exp_avg_sq;                /* fp32 second moment v, updated in place */
    const void *grad;                 /* gradients, `grad_dtype` elements */
    enum kern_dtype grad_dtype;       /* KERN_F32, KERN_BF16 or KERN_F16 */
    void *param_lowp;                 /* NULL, or receives the updated params as param_lowp_dtype */
    enum kern_dtype param_lowp_dtype; /* KERN_NONE (with NULL), KERN_BF16 or KERN_F16 */
    int64_t numel;                    /* number of elements, >= 0 */
};

/* Checks dtypes, NULL pointers and numel (RL_EINVAL naming the field). Called by every entry. */
int kern_adam_bufs_check(const struct kern_adam_bufs *b, struct rl_err *e);

/* The scalar reference: one element after the other, single thread. O(numel). */
int kern_adam_ref(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                  struct rl_err *e);

/* Instruction-set paths of the CPU kernel. */
enum kern_isa {
    KERN_ISA_AUTO = 0,     /* RL_KERN_ISA if set, else the widest the CPU supports */
    KERN_ISA_SCALAR = 1,   /* the reference loop, threaded */
    KERN_ISA_AVX2 = 2,     /* 8 lanes; needs AVX2 and F16C */
    KERN_ISA_AVX512 = 3,   /* 16 lanes; needs AVX-512F */
};
const char *kern_isa_name(enum kern_isa isa);   /* "auto", "scalar", "avx2", "avx512" */
/* Parses "auto", "scalar", "avx2", "avx512" (field names the source, e.g. "RL_KERN_ISA"). */
int kern_isa_parse(const char *field, const char *s, enum kern_isa *out, struct rl_err *e);
bool kern_isa_supported(enum kern_isa isa);     /* what this CPU can run; AUTO and SCALAR: true */
/* Resolves AUTO: $RL_KERN_ISA when set (RL_EINVAL if malformed, RL_EENV if this CPU cannot run
 * it), else the widest supported path. A concrete isa is checked against the CPU the same way. */
int kern_isa_resolve(enum kern_isa isa, enum kern_isa *out, struct rl_err *e);

/* The CPU kernel: `threads` OpenMP threads (>= 1) over contiguous chunks, each a SIMD loop and a
 * scalar tail that is the reference itself. Bitwise equal to kern_adam_ref for every numel,
 * alignment and thread count. kern_adam_cpu uses KERN_ISA_AUTO. */
int kern_adam_cpu(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b, int threads,
                  struct rl_err *e);
int kern_adam_cpu_isa(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                      int threads, enum kern_isa isa, struct rl_err *e);
/* Software prefetch distance (elements ahead in every stream; 0: none) of the CPU kernel on the
 * resolved path `isa`: $RL_KERN_PREFETCH when set (an integer in [0, 1048576]; RL_EINVAL naming
 * it otherwise), else 0 on AVX-512 and 512 on AVX2 (kernels/adam_cpu.c says why). Results never
 * depend on it. kern_adam_cpu_isa calls it and returns its error. */
int kern_adam_prefetch_resolve(enum kern_isa isa, int64_t *out, struct rl_err *e);

#ifdef RL_HAVE_CUDA
/* The CUDA kernel, queued on `stream` (device pointers in *b; 16-byte vector loads where the
 * arrays share alignment, grid-stride). Asynchronous: returns after the launches are queued and
 * checked with cudaGetLastError; errors carry file:line. Bitwise equal to kern_adam_ref. */
int kern_adam_cuda(const struct kern_adam_scalars *s, const struct kern_adam_bufs *b,
                   cudaStream_t stream, struct rl_err *e);
/* Number of usable CUDA devices; 0 when the driver or the device is missing (never an error). */
int kern_cuda_device_count(void);
#endif

#ifdef __cplusplus
}
#endif

#endif
