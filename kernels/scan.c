/* kernels/scan.c — the overflow scan (see scan.h). A value is not finite iff all its exponent bits
 * are set, so the count is a compare-and-add over the bits with no branch, which the compiler
 * vectorizes (`omp simd`, which lifts its cost model; gcc 12 at -O2 would otherwise leave a loop
 * with an epilogue scalar): SSE2 in the plain build, AVX2 and AVX-512F through target attributes,
 * chosen at run time as kern_adam_cpu's path is. The loop that this replaces (exec/run.c, one
 * thread, `!(g - g == 0)` with an exit at the first hit) did not vectorize. */
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/scan.h"

/* Words read through these types may alias the caller's floats (or bf16/fp16 values). */
typedef uint32_t __attribute__((may_alias)) scan_u32;
typedef uint16_t __attribute__((may_alias)) scan_u16;

/* Elements per block: a block's count is a sum in the lane type that cannot wrap (at most 32768
 * hits, below 2^16), added into the 64-bit total after the block. Threads take contiguous runs of
 * blocks. */
#define SCAN_BLOCK 32768
/* Below this many elements one thread scans (a parallel region costs more than the scan). */
#define SCAN_THREADED_MIN (INT64_C(1) << 20)

/* One block (n <= SCAN_BLOCK): how many words have every exponent bit set. Inlined into each
 * path's function below, so that the loop is vectorized for that function's target. */
static inline __attribute__((always_inline)) uint32_t count32(const scan_u32 *p, int64_t n)
{
    uint32_t k = 0;
#pragma omp simd reduction(+ : k)
    for (int64_t i = 0; i < n; i++)
        k += (p[i] & 0x7f800000u) == 0x7f800000u;
    return k;
}

/* The same for 16-bit values whose exponent bits are `mask`. */
static inline __attribute__((always_inline)) uint16_t count16(const scan_u16 *p, int64_t n, uint16_t mask)
{
    uint16_t k = 0;
#pragma omp simd reduction(+ : k)
    for (int64_t i = 0; i < n; i++)
        k += (uint16_t)((p[i] & mask) == mask);
    return k;
}

/* The paths: the x86-64 baseline (SSE2), AVX2, AVX-512 (F and BW: the 16-bit lanes need BW). */
static uint32_t f32_base(const scan_u32 *p, int64_t n) { return count32(p, n); }
__attribute__((target("avx2"))) static uint32_t f32_avx2(const scan_u32 *p, int64_t n) { return count32(p, n); }
__attribute__((target("avx512f,avx512bw"))) static uint32_t f32_avx512(const scan_u32 *p, int64_t n)
{
    return count32(p, n);
}
static uint16_t u16_base(const scan_u16 *p, int64_t n, uint16_t mask) { return count16(p, n, mask); }
__attribute__((target("avx2"))) static uint16_t u16_avx2(const scan_u16 *p, int64_t n, uint16_t mask)
{
    return count16(p, n, mask);
}
__attribute__((target("avx512f,avx512bw"))) static uint16_t u16_avx512(const scan_u16 *p, int64_t n, uint16_t mask)
{
    return count16(p, n, mask);
}

/* The resolved path: 0 base, 1 AVX2, 2 AVX-512 (F and BW: the 16-bit lanes need BW). */
static int scan_path(struct rl_err *e, int *out)
{
    enum kern_isa isa;
    RL_TRY(kern_isa_resolve(KERN_ISA_AUTO, &isa, e));
    *out = isa == KERN_ISA_AVX512 && __builtin_cpu_supports("avx512bw") ? 2 : isa >= KERN_ISA_AVX2 ? 1 : 0;
    return 0;
}

/* One block of either kind on path `path`. */
static int64_t scan_block(int path, const void *x, int64_t n, bool lowp, uint16_t mask)
{
    if (!lowp) {
        const scan_u32 *p = x;
        return path == 2 ? f32_avx512(p, n) : path == 1 ? f32_avx2(p, n) : f32_base(p, n);
    }
    const scan_u16 *p = x;
    return path == 2 ? u16_avx512(p, n, mask) : path == 1 ? u16_avx2(p, n, mask) : u16_base(p, n, mask);
}

static int scan(const void *x, int64_t n, size_t elem, bool lowp, uint16_t mask, int threads, int64_t *count,
                struct rl_err *e)
{
    int path;
    RL_TRY(scan_path(e, &path));
    const char *c = x;
    int64_t nb = (n + SCAN_BLOCK - 1) / SCAN_BLOCK, total = 0;
    int t = n >= SCAN_THREADED_MIN && threads > 1 ? threads : 1;
#pragma omp parallel for num_threads(t) schedule(static) reduction(+ : total) if (t > 1)
    for (int64_t b = 0; b < nb; b++) {
        int64_t lo = b * SCAN_BLOCK, m = n - lo < SCAN_BLOCK ? n - lo : SCAN_BLOCK;
        total += scan_block(path, c + (size_t)lo * elem, m, lowp, mask);
    }
    *count = total;
    return 0;
}

int kern_nonfinite_f32(const float *x, int64_t n, int threads, int64_t *count, struct rl_err *e)
{
    return scan(x, n > 0 ? n : 0, 4, false, 0, threads, count, e);
}

int kern_nonfinite_lowp(const uint16_t *x, int64_t n, enum kern_dtype t, int threads, int64_t *count,
                        struct rl_err *e)
{
    if (t != KERN_BF16 && t != KERN_F16)
        return rl_errf(e, RL_EINVAL, "dtype: %s is not allowed for a 16-bit scan; allowed: bf16, fp16",
                       kern_dtype_name(t));
    return scan(x, n > 0 ? n : 0, 2, true, t == KERN_BF16 ? 0x7f80 : 0x7c00, threads, count, e);
}

const char *kern_nonfinite_path(void)
{
    struct rl_err e;
    int path = 0;
    if (scan_path(&e, &path))
        path = 0;
    return path == 2 ? "avx512" : path == 1 ? "avx2" : "sse2";
}
