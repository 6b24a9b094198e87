/* exec/synth.h — the counter-based hash behind the synthetic data (exec/synth.c), inline so the
 * cuda backend's gradient kernel computes the same values as the host (pure integer operations
 * and one exact ldexpf). */
#ifndef RL_EXEC_SYNTH_H
#define RL_EXEC_SYNTH_H

#include <math.h>     /* ldexpf */
#include <stdint.h>

#include "kernels/lowp.h"   /* KERN_HD */

/* splitmix64's finaliser. */
KERN_HD static inline uint64_t ex__mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* u_q of element i for share index q (base = the iteration's key): an integer in [-127, 127]. */
KERN_HD static inline int64_t ex__share_u(uint64_t base, int64_t i, int q)
{
    uint64_t h = ex__mix64(base ^ ((uint64_t)i * 0x2545f4914f6cdd1dull) ^ ((uint64_t)(q + 1) << 40));
    return (int64_t)(h % 255u) - 127;
}

/* Share q of W of element i: (u_q - u_{q+1}) x 2^-10, u_W = 0. */
KERN_HD static inline float ex__share(uint64_t base, int64_t i, int q, int W)
{
    int64_t a = ex__share_u(base, i, q);
    int64_t b = q + 1 < W ? ex__share_u(base, i, q + 1) : 0;
    return ldexpf((float)(a - b), -10);
}

#endif
