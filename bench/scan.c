/* bench/scan.c — the executor's overflow scan of the host share's gradients (kernels/scan.h)
 * against the loop it replaced and against this machine's read bandwidth measured in the same
 * run, in GB/s of gradient read (4 bytes per element), on one thread and on all cores:
 *   old    the executor's former loop (one thread only: it had no threads): `!(g - g == 0)` per
 *          element with an exit at the first hit (none here: every value finite, as in a normal step);
 *   scan   kern_nonfinite_f32 on the path kern_nonfinite_path() names;
 *   read   the limit: the same 32-bit words folded by xor (omp simd, the same threads and blocks,
 *          the scan's instruction set up to AVX2), nothing else done per element.
 * Each cell: the median of 7 rounds after one warm-up, min..max; the rows of a round run back to
 * back. Usage: build/bench/scan [NUMEL]  (default 64 Mi elements, 256 MiB: beyond the caches). */
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_impl.h"   /* ex__now_ns */
#include "kernels/scan.h"

#define ROUNDS 7

/* The loop exec/run.c ran before kernels/scan.c (kept here to compare against). */
__attribute__((noinline)) static int64_t old_scan(const float *g, int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n && !bad; i++)
        bad += !(g[i] - g[i] == 0.0f);
    return bad;
}

typedef uint32_t __attribute__((may_alias)) word;

/* The read limit: every word folded in by xor (nothing to widen: both compilers vectorize it), t
 * threads in blocks as kernels/scan.c splits them; built for the scan's own path (AVX2 where the
 * scan runs AVX2 or AVX-512), so the two differ only in the compare. */
static inline __attribute__((always_inline)) uint32_t read_block(const word *p, int64_t m)
{
    uint32_t x = 0;
#pragma omp simd reduction(^ : x)
    for (int64_t i = 0; i < m; i++)
        x ^= p[i];
    return x;
}
__attribute__((noinline)) static uint32_t read_base(const word *p, int64_t m) { return read_block(p, m); }
__attribute__((noinline, target("avx2"))) static uint32_t read_avx2(const word *p, int64_t m)
{
    return read_block(p, m);
}

__attribute__((noinline)) static uint32_t read_sum(const float *g, int64_t n, int t, bool avx2)
{
    const word *w = (const word *)g;
    const int64_t blk = 32768, nb = (n + blk - 1) / blk;
    uint32_t s = 0;
#pragma omp parallel for num_threads(t) schedule(static) reduction(^ : s) if (t > 1)
    for (int64_t b = 0; b < nb; b++) {
        int64_t m = n - b * blk < blk ? n - b * blk : blk;
        s ^= avx2 ? read_avx2(w + b * blk, m) : read_base(w + b * blk, m);
    }
    return s;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? strtoll(argv[1], NULL, 10) : INT64_C(64) << 20;
    if (n < 1024) {
        fprintf(stderr, "bench/scan: NUMEL %lld is not allowed; allowed: >= 1024\n", (long long)n);
        return 2;
    }
    float *g = malloc((size_t)n * sizeof *g);
    if (!g) {
        fprintf(stderr, "bench/scan: cannot allocate %lld elements\n", (long long)n);
        return 3;
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        g[i] = (float)(i % 1000) * 0.001f - 0.5f;
    int cores = omp_get_num_procs();
    const bool avx2 = strcmp(kern_nonfinite_path(), "sse2") != 0;
    printf("overflow scan over %lld fp32 gradients (%.0f MiB), path %s, %d cores; GB/s of gradient read, "
           "median of %d rounds (min..max)\n\n", (long long)n, (double)n * 4 / (1 << 20), kern_nonfinite_path(),
           cores, ROUNDS);
    printf("%-8s %-7s %-26s %-26s %-26s %s\n", "threads", "", "old", "scan", "read (limit)", "scan / limit");
    struct rl_err e;
    volatile uint64_t sink = 0;
    for (int ti = 0; ti < 2; ti++) {
        int t = ti == 0 ? 1 : cores;
        if (ti == 1 && cores == 1)
            break;
        double v[3][ROUNDS], ratio[ROUNDS];
        for (int r = -1; r < ROUNDS; r++) {
            double gbps[3] = {0, 0, 0};
            for (int k = 0; k < 3; k++) {
                if (k == 0 && t > 1)
                    continue;   /* the old loop had one thread */
                int64_t cnt = 0, t0 = ex__now_ns();
                if (k == 0)
                    cnt = old_scan(g, n);
                else if (k == 1 && kern_nonfinite_f32(g, n, t, &cnt, &e)) {
                    fprintf(stderr, "bench/scan: %s\n", e.msg);
                    return 2;
                } else if (k == 2)
                    sink += read_sum(g, n, t, avx2);
                int64_t dt = ex__now_ns() - t0;
                if (cnt != 0) {
                    fprintf(stderr, "bench/scan: %lld non-finite values counted in a finite array\n", (long long)cnt);
                    return 1;
                }
                gbps[k] = (double)n * 4 / (double)dt;
            }
            if (r >= 0) {
                for (int k = 0; k < 3; k++)
                    v[k][r] = gbps[k];
                ratio[r] = gbps[1] / gbps[2];
            }
        }
        char cell[3][40];
        for (int k = 0; k < 3; k++) {
            qsort(v[k], ROUNDS, sizeof v[k][0], cmp_d);
            if (k == 0 && t > 1)
                snprintf(cell[k], sizeof cell[k], "-");
            else
                snprintf(cell[k], sizeof cell[k], "%.2f (%.2f..%.2f)", v[k][ROUNDS / 2], v[k][0], v[k][ROUNDS - 1]);
        }
        qsort(ratio, ROUNDS, sizeof ratio[0], cmp_d);
        printf("%-8d %-7s %-26s %-26s %-26s %.0f %%\n", t, "", cell[0], cell[1], cell[2], ratio[ROUNDS / 2] * 100);
    }
    (void)sink;
    free(g);
    return 0;
}
