/* exec/dtype.h — the kernels' element type of a plan's model dtype.
 *
 * plan/plan.h (enum plan_dtype: FP32 0, FP16 1, BF16 2) and kernels/adam.h (enum kern_dtype: NONE 0,
 * F32 1, BF16 2, F16 3) number the same types differently, and the layering keeps each header from
 * including the other; exec/ sees both, so the one mapping lives here. Its table has an entry per
 * plan dtype (checked when this header compiles); tests/check_kernels.c checks that every entry
 * names the same type (name and bytes). */
#ifndef RL_EXEC_DTYPE_H
#define RL_EXEC_DTYPE_H

#include "common/rl.h"
#include "kernels/adam.h"
#include "plan/plan.h"

static const enum kern_dtype ex__kern_dtype_of[] = {
    [PLAN_FP32] = KERN_F32,
    [PLAN_FP16] = KERN_F16,
    [PLAN_BF16] = KERN_BF16,
};
_Static_assert(RL_COUNT(ex__kern_dtype_of) == PLAN_DTYPE_COUNT, "a kernel dtype per enum plan_dtype");

/* The kernels' type of plan dtype t (KERN_NONE for a value outside enum plan_dtype). */
static inline enum kern_dtype ex_kern_dtype(enum plan_dtype t)
{
    return (unsigned)t < RL_COUNT(ex__kern_dtype_of) ? ex__kern_dtype_of[t] : KERN_NONE;
}

#endif
