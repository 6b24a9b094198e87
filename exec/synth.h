/* exec/synth.h — the counter-based hash behind the synthetic data (exec/synth.c), inline so the
 * cuda backend's gradient kernel computes the same values as the host (pure integer operations
 * and one exact ldexpf). */
#ifndef RL_EXEC_SYNTH_H
#define RL_EXEC_SYNTH_H

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

/* One gradient unit, 2^-10. An integer of magnitude < 2^24 times it is exact in fp32: the product
 * has the same bits as ldexpf(x, -10), without a libm call, so loops over it vectorise. */
#define EX__GRAD_UNIT 0x1p-10f

/* h mod 255 without a division (a 64-bit division does not vectorise): 2^8 = 1 (mod 255), so the
 * sum of h's four 16-bit digits, folded twice into bytes, is congruent to h and at most 259. */
KERN_HD static inline uint64_t ex__mod255(uint64_t h)
{
    uint64_t s = (h & 0xffffu) + ((h >> 16) & 0xffffu) + ((h >> 32) & 0xffffu) + (h >> 48);   /* < 2^18 */
    s = (s & 0xffu) + (s >> 8);   /* <= 255 + 1023 */
    s = (s & 0xffu) + (s >> 8);   /* <= 255 + 4 */
    return s >= 255u ? s - 255u : s;
}

/* The key of share index q, xor'ed into every element's hash input. */
KERN_HD static inline uint64_t ex__share_key(int q)
{
    return (uint64_t)(q + 1) << 40;
}

/* u_q of element i for share index q (base = the iteration's key): an integer in [-127, 127]. */
KERN_HD static inline int64_t ex__share_u(uint64_t base, int64_t i, int q)
{
    uint64_t h = ex__mix64(base ^ ((uint64_t)i * 0x2545f4914f6cdd1dull) ^ ex__share_key(q));
    return (int64_t)ex__mod255(h) - 127;
}

/* Share q of W of element i: (u_q - u_{q+1}) x 2^-10, u_W = 0. */
KERN_HD static inline float ex__share(uint64_t base, int64_t i, int q, int W)
{
    int64_t a = ex__share_u(base, i, q);
    int64_t b = q + 1 < W ? ex__share_u(base, i, q + 1) : 0;
    return (float)(a - b) * EX__GRAD_UNIT;
}

#endif
