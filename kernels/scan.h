/* kernels/scan.h — the overflow scan (DeepSpeed's has_overflow over a gradient buffer): how many
 * values of an array are not finite. Branch-free and vectorized (kernels/scan.c), on the path
 * kern_isa_resolve picks, split over OpenMP threads. */
#ifndef RL_KERNELS_SCAN_H
#define RL_KERNELS_SCAN_H

#include <stdint.h>

#include "common/rl.h"
#include "kernels/adam.h"   /* enum kern_dtype, enum kern_isa */

/* *count = the number of Inf and NaN among x[0..n) (fp32), on `threads` threads (>= 1; arrays under
 * 1 Mi elements use the calling thread only). Every element is read whatever it holds, so the time
 * does not depend on where a NaN sits. RL_EINVAL when RL_KERN_ISA is malformed (kern_isa_resolve).
 * O(n). */
int kern_nonfinite_f32(const float *x, int64_t n, int threads, int64_t *count, struct rl_err *e);
/* The same over 16-bit values of dtype t (KERN_BF16 or KERN_F16: all exponent bits set). */
int kern_nonfinite_lowp(const uint16_t *x, int64_t n, enum kern_dtype t, int threads, int64_t *count,
                        struct rl_err *e);
/* The path the scans run on this CPU: "avx512", "avx2" or "sse2" (the x86-64 baseline, what
 * RL_KERN_ISA=scalar gives: the compiler still vectorizes it). */
const char *kern_nonfinite_path(void);

#endif
