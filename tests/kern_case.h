/* tests/kern_case.h — random Adam test cases shared by check_kernels.c (which defines these
 * functions) and check_gpu_kernels.c: arrays at chosen element offsets from a 64-byte boundary,
 * filled from a seeded generator with normal values, NaN, +-Inf, +-0, subnormals and huge
 * values, and an element-exact comparison. */
#ifndef RL_TESTS_KERN_CASE_H
#define RL_TESTS_KERN_CASE_H

#include <stdint.h>

#include "kernels/adam.h"

/* Number of arrays in a case: p, m, v, g, lowp. */
#define KC_NARR 5

struct kc_arrays {
    int64_t n;                   /* elements */
    enum kern_dtype gt;          /* gradient dtype */
    enum kern_dtype lt;          /* low-precision copy dtype (KERN_NONE: no copy) */
    int off[KC_NARR];            /* element offset of each array from its 64-byte aligned base */
    void *base[KC_NARR];         /* allocations, exactly off + n elements each (ASan sees overruns) */
    float *p, *m, *v;            /* fp32 arrays at their offsets */
    void *g, *lp;                /* gradient and copy at their offsets (lp NULL when lt is NONE) */
};

/* splitmix64 step. */
uint64_t kc_rand(uint64_t *state);
/* Allocates (aborting the test on failure); off may be NULL for all zero. */
void kc_alloc(struct kc_arrays *a, int64_t n, const int *off, enum kern_dtype gt,
              enum kern_dtype lt);
void kc_free(struct kc_arrays *a);
/* Random inputs; the copy is filled with a 0xa5 pattern (every element is overwritten). */
void kc_fill(struct kc_arrays *a, uint64_t *rng);
/* Copies the contents of src into dst (same n and dtypes; offsets may differ). */
void kc_copy(struct kc_arrays *dst, const struct kc_arrays *src);
/* Index of the first element where a and b differ in any array (bitwise), -1 when equal; *what
 * names the array and *bits_a / *bits_b hold the two bit patterns. */
int64_t kc_first_diff(const struct kc_arrays *a, const struct kc_arrays *b, const char **what,
                      uint32_t *bits_a, uint32_t *bits_b);
struct kern_adam_bufs kc_bufs(const struct kc_arrays *a);
/* Offsets for offset index o (0..15): all arrays at o when `same`, else spread over 0..15. */
void kc_offsets(int o, int same, int off[KC_NARR]);
/* Hyperparameters that vary with `variant` (learning rate, weight decay on/off, bias correction
 * on/off) for the given mode. */
struct kern_adam_hparams kc_hparams(enum kern_adam_mode mode, unsigned variant);

#endif
