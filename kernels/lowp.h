/* kernels/lowp.h — fp32 <-> bf16 / fp16 conversion shared by host C, SIMD tails and CUDA device
 * code, so every implementation of the Adam step writes the same low-precision bits.
 *
 * Rules (all pure integer operations, so no compiler flag or FTZ mode can change them):
 *  - fp32 -> bf16 and fp32 -> fp16 round to nearest, ties to even; overflow gives +-Inf, values
 *    below half the smallest subnormal give +-0 (the sign is kept).
 *  - NaN stays NaN: the result is the quiet NaN with the input's sign and its top payload bits
 *    (the same bits x86 VCVTPS2PH writes), never an infinity.
 *  - bf16 -> fp32 is a 16-bit shift (exact, NaN payload kept as is); fp16 -> fp32 is exact,
 *    subnormals included, and quiets a signalling NaN (as x86 VCVTPH2PS does).
 * Everything here is `static inline` and O(1). */
#ifndef RL_KERNELS_LOWP_H
#define RL_KERNELS_LOWP_H

#include <stdint.h>
#include <string.h>   /* memcpy: bit casts without aliasing problems (also in device code) */

#ifdef __CUDACC__
#define KERN_HD __host__ __device__
#else
#define KERN_HD
#endif

/* The one NaN every Adam implementation stores: positive, quiet, no payload. */
#define KERN_CANON_NAN_BITS 0x7fc00000u

KERN_HD static inline uint32_t kern_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

KERN_HD static inline float kern_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* bf16 is the top half of an fp32: exact. */
KERN_HD static inline float kern_bf16_to_f32(uint16_t b)
{
    return kern_f32_from_bits((uint32_t)b << 16);
}

/* Round to nearest even at bit 16. A NaN keeps its sign and top 7 payload bits and is made quiet
 * (without the check, a NaN with a full payload would carry into the sign bit). */
KERN_HD static inline uint16_t kern_f32_to_bf16(float f)
{
    uint32_t x = kern_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x0040u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* Exact widening. Subnormal halves (m * 2^-24) are normalised: with the leading one at bit
 * 10 - sh, the fp32 biased exponent is 113 - sh. */
KERN_HD static inline float kern_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x03ffu;
    uint32_t x;
    if (e == 0x1fu) {
        x = sign | 0x7f800000u | (m << 13) | (m ? 0x00400000u : 0u);   /* Inf, or quiet NaN */
    } else if (e != 0) {
        x = sign | ((e + 112u) << 23) | (m << 13);                     /* rebias 15 -> 127 */
    } else if (m == 0) {
        x = sign;                                                      /* +-0 */
    } else {
        uint32_t sh = 0;
        while (!(m & 0x0400u)) {
            m <<= 1;
            sh++;
        }
        x = sign | ((113u - sh) << 23) | ((m & 0x03ffu) << 13);
    }
    return kern_f32_from_bits(x);
}

/* Round to nearest even into binary16. Magnitude ranges (fp32 bit patterns):
 *   > 0x7f800000 NaN; >= 0x477ff000 (65520, the tie above 65504) Inf;
 *   >= 0x38800000 (2^-14) normal; <= 0x33000000 (2^-25, a tie whose even side is 0) zero;
 *   in between a subnormal half, counted in units of 2^-24 (may round up to 2^-14). */
KERN_HD static inline uint16_t kern_f32_to_f16(float f)
{
    uint32_t x = kern_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x03ffu));
    if (ax >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) {
        uint32_t r = ax - 0x38000000u;              /* exponent 127 -> 15 bias, 23-bit mantissa */
        r += 0x0fffu + ((r >> 13) & 1u);            /* a carry may step into the next exponent */
        return (uint16_t)(sign | (r >> 13));
    }
    if (ax <= 0x33000000u)
        return (uint16_t)sign;
    uint32_t e = ax >> 23;                          /* 102..112 */
    uint32_t mant = (ax & 0x007fffffu) | 0x00800000u;
    uint32_t shift = 126u - e;                      /* 14..24: value / 2^-24 = mant >> shift */
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return (uint16_t)(sign | q);
}

#endif
