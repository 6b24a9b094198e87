/* validation/audit.h — the probe's audit file (docs/audit-format.md): one optimizer step of a
 * real run, per sub-group, and its replay with the arithmetic of the optimizer that ran it.
 *
 *   struct val_audit a;
 *   val_audit_read(path, &a, &e);             or val_audit_parse(bytes, len, &a, &e)
 *   struct val_audit_finding *f = calloc(a.n, sizeof *f);
 *   val_audit_replay(&a, f, &e);              one finding per record
 *   val_audit_free(&a);
 *
 * The reader checks everything before it trusts it: the magic, the version, the header size,
 * the crc32 of the body (zlib), every record's size against its element count and against what is
 * left, the bounds below. A bad file is RL_EINVAL naming the field, its value and what is allowed;
 * nothing is left allocated. */
#ifndef RL_VALIDATION_AUDIT_H
#define RL_VALIDATION_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rl.h"

#define VAL_AUDIT_VERSION 1
#define VAL_AUDIT_HEADER_BYTES 32
#define VAL_AUDIT_RECORD_HEAD_BYTES 136
#define VAL_AUDIT_MAX_RECORDS 65536              /* sub-groups per file */
#define VAL_AUDIT_MAX_NUMEL ((int64_t)1 << 26)   /* elements per record (1.75 GiB of arrays) */

/* Hyperparameters of one sub-group's step. */
struct val_audit_hp {
    double lr;              /* learning rate */
    double beta1;           /* betas[0] */
    double beta2;           /* betas[1] */
    double eps;             /* eps */
    double weight_decay;    /* weight_decay */
};

/* One sub-group around the audited step. The seven arrays point into val_audit.data. */
struct val_audit_rec {
    int optimizer;            /* enum kern_replay_opt: 1 ds_cpu_adam, 2 torch_adamw, 3 foreach */
    uint32_t rank;            /* the rank that stepped it */
    uint32_t sub_group;       /* DeepSpeed's sub-group index on that rank */
    uint32_t param_group;     /* the param group it belongs to */
    uint32_t optimizer_object;   /* 0: the ZeRO optimizer's own (DeepSpeedCPUAdam), 1: backup */
    int32_t simd_width;       /* floats per vector of the DeepSpeed build (0, 4, 8, 16) */
    bool adamw_mode;          /* decoupled weight decay */
    bool bias_correction;     /* bias correction on */
    bool tail_fma;            /* DeepSpeed: the build's scalar loop fuses (adam_replay.h) */
    int64_t step;             /* the optimizer's step count after the step */
    int64_t numel;            /* elements of every array */
    int64_t first_element;    /* the arrays are elements [first_element, +numel) of the sub-group */
    int64_t subgroup_numel;   /* the sub-group's elements (numel unless the file was trimmed) */
    struct val_audit_hp held;   /* what the stepping optimizer's param group held */
    struct val_audit_hp group;  /* the engine's param group (what the schedule asks for) */
    const float *param_before;  /* fp32 master before the step */
    const float *grad;          /* the gradient the optimizer saw (unscaled, clipped) */
    const float *exp_avg_before;     /* m before */
    const float *exp_avg_sq_before;  /* v before */
    const float *param_after;        /* fp32 master after */
    const float *exp_avg_after;      /* m after */
    const float *exp_avg_sq_after;   /* v after */
    int32_t ds_step_call;            /* not in the file: KERN_REPLAY_DS_STEP_* as the release's
                                        IncrementStep reached it (val_audit_set_release; 0 until) */
};

/* A parsed audit file; owns rec and data. */
struct val_audit {
    int n;                     /* records */
    struct val_audit_rec *rec; /* n records, file order */
    float *data;               /* every record's arrays, one allocation */
};

/* Parses len bytes. 0, or RL_EINVAL / RL_ENOMEM with *a zeroed. */
int val_audit_parse(const uint8_t *buf, size_t len, struct val_audit *a, struct rl_err *e);
/* Reads (rl_read_bytes: a regular file, at most RL_INPUT_MAX_BYTES) and parses a file. */
int val_audit_read(const char *path, struct val_audit *a, struct rl_err *e);
void val_audit_free(struct val_audit *a);
/* Tells the replay which DeepSpeed ran: for 0.14-0.18 (before 0.19.0; read in 0.14.1, 0.15.4,
 * 0.16.9, 0.17.6, 0.18.9, and 0.19.8 for the new code) each DeepSpeedCPUAdam record gets its
 * place among its rank's CPU sub-groups of the step (kernels/adam_replay.h
 * KERN_REPLAY_DS_STEP_*): the lowest sub-group index is the first call (DeepSpeed steps them in
 * index order), the rest later ones, a rank with one CPU sub-group the product chain. */
int val_audit_set_release(struct val_audit *a, struct rl_version v, struct rl_err *e);

/* The verdict on one record. */
enum val_audit_status {
    VAL_AUDIT_IDENTICAL = 0,   /* the replay gives the recorded p, m, v bit for bit */
    VAL_AUDIT_DIFFERS = 1,     /* some element differs from the replay */
    VAL_AUDIT_NO_KERNEL = 2,   /* no replay for this optimizer: formula check only */
};
struct val_audit_finding {
    enum val_audit_status status;  /* the bitwise level */
    int64_t n_diff;                /* elements whose p, m or v differs from the replay */
    int64_t max_ulps;              /* largest distance in ulps over p, m, v (INT64_MAX: NaN) */
    int64_t n_sqrt_faithful;       /* torch: elements identical only with its faithful sqrt */
    double formula_max;            /* largest |p_after - p_formula| / bound over elements */
    bool formula_ok;               /* formula_max <= 1: within the proven bound (or formula_na) */
    bool formula_na;               /* bit-identical, but no finite bound: the state holds values that
                                      overflow (inf or NaN in v after, from a gradient near 1e20) */
    bool hp_mismatch;              /* held != group (lr, betas, eps or weight decay) */
    int other_optimizer;           /* the other placement's optimizer (ds_cpu_adam <-> torch_adamw) */
    int64_t other_n_diff;          /* elements where its step from the same state differs (p, m, v) */
    int64_t other_max_ulps;        /* and the largest distance: the rounding gap a ratio change makes */
    char cause[200];               /* the cause when one is named, else "" */
};

/* Replays every record (kernels/adam_replay.h) and checks it against Adam's formula in double
 * (docs/audit-format.md "The verdict"); f has a.n entries. Names a cause where one replay
 * with one thing changed reproduces the bits: another step count, a skipped or doubled update,
 * another optimizer's arithmetic, another lr. 0 or RL_ENOMEM / RL_EINVAL. */
int val_audit_replay(const struct val_audit *a, struct val_audit_finding *f, struct rl_err *e);

const char *val_audit_status_name(enum val_audit_status s);   /* "bit-identical", ... */

/* ---- two runs' audits, side by side: why their digests differ ----------------------------
 * Two runs of one cell at different ratios (the same model, data, sub-groups and step K), each
 * audited: per record (matched by rank, sub-group and first element) which optimizer stepped it
 * in each run, whether each was exact to that optimizer (bit-identical, formula ok, the group's
 * hyperparameters), and how far the two runs' fp32 masters, and the gradients step K saw, are
 * apart. */
struct val_audit_pair {
    int a, b;                      /* the record's index in each audit */
    bool exact_a, exact_b;         /* bit-identical to its optimizer, formula ok, no hp mismatch */
    bool same_optimizer;           /* both runs stepped it with the same optimizer */
    int64_t numel;                 /* elements compared (the record's) */
    int64_t n_diff_before;         /* elements whose fp32 master before step K differs */
    int64_t n_diff_grad;           /* elements whose gradient at step K differs */
    int64_t n_diff_after;          /* elements whose fp32 master after step K differs */
    int64_t max_ulps_after;        /* the largest of those differences in ulps (INT64_MAX: NaN; values
                                      of opposite signs near 0 are ~2^31 ulps apart) */
    double max_abs_after;          /* the largest absolute difference of those */
};

/* The verdict over every pair. */
enum val_audit_why {
    VAL_WHY_IDENTICAL = 0,         /* the fp32 masters after step K are the same bits */
    VAL_WHY_OPTIMIZERS = 1,        /* explained: sub-groups moved between optimizers, each exact */
    VAL_WHY_INPUTS = 2,            /* each exact, the same optimizer everywhere, yet the gradients
                                      differ: the difference is in the forward/backward's inputs */
    VAL_WHY_NOT_EXACT = 3,         /* some sub-group was not exact to its optimizer: not explained */
};

/* Matches b's records to a's; pairs gets a->n entries (caller frees). RL_EINVAL naming the
 * record when the two files are not two runs of one cell: another step, another record set, or a
 * record of other size. *why gets the verdict. O(total elements + records^2). */
int val_audit_compare(const struct val_audit *a, const struct val_audit_finding *fa, const struct val_audit *b,
                      const struct val_audit_finding *fb, struct val_audit_pair **pairs, enum val_audit_why *why,
                      struct rl_err *e);
const char *val_audit_why_name(enum val_audit_why w);   /* "identical", "optimizers", ... */

#endif
