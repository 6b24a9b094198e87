/* sim/tune.h — the configuration with the most tokens per second per GPU that fits.
 *
 * Searches micro-batch, activation checkpointing and offload ratio together (a fixed global
 * batch, when given, sets the gradient accumulation of each micro-batch), predicting every
 * candidate with sim_step_run. A candidate counts when its NVML-visible GPU memory plus a
 * headroom fits the GPU and its host memory fits the node.
 *
 * Under a DeepSpeed policy the candidates are the (ratio, sub_group_size) pairs that DeepSpeed
 * honors: for each candidate ratio the config's sub_group_size when DeepSpeed honors the ratio with
 * it within tol, else the largest that does (plan_max_honoring_sub_group_size); a ratio no
 * sub_group_size honors is not a candidate. Each is planned and predicted under that policy, so the
 * answer is what DeepSpeed runs with that sub_group_size and ratio, and what `predict` of the same
 * settings reproduces. The same search under the exact policy (the ratio honored at element
 * granularity, which DeepSpeed does not implement) is kept beside it as an aside.
 *
 * Cost: one plan per ratio and policy (with a sub_group_size search, O(256 log) placements, where
 * DeepSpeed does not honor the config's) and at most ratios x micro-batches x checkpointing
 * settings step simulations per policy; candidates whose memory prediction (sim_step_memory, no
 * simulation) does not fit are not simulated. */
#ifndef RL_SIM_TUNE_H
#define RL_SIM_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rl.h"
#include "plan/inputs.h"   /* PLAN_MAX_MORE_VERSIONS */
#include "plan/plan.h"
#include "sim/hw.h"
#include "sim/step.h"

/* The default headroom as a fraction of GPU memory: NVML "used" lies 7-11 GB above PyTorch's peak
 * allocated on 80 GB GPUs (context, NCCL buffers, the caching allocator: sim/README.md "Reserve");
 * the profile's reserve model lands in that range, and the headroom keeps the rest of its spread (4 GB of 80 GB)
 * free, so a fit with 0.4 GiB to spare is not "the answer". */
#define SIM_TUNE_HEADROOM_FRACTION 0.05

struct sim_tune_request {
    const struct plan_model *model;  /* the model (grouped) */
    const struct plan_layout *layout;/* ranks, DP degree, GPUs per node */
    const struct plan_zero *zero;    /* the DeepSpeed config (its ratio is replaced) */
    struct plan_options popt;        /* the policy of the answer (EXACT: no sub_group_size step) */
    const struct hw_profile *hw;     /* the node */
    struct sim_train train;          /* base settings; micro-batch, accumulation, checkpointing vary */
    const double *ratios;            /* candidate ratios, ascending */
    size_t n_ratios;
    const int64_t *micro_batches;    /* candidate micro-batches per GPU */
    int n_micro_batches;
    bool ckpt_off, ckpt_on;          /* which activation-checkpointing settings to try */
    bool no_offload;                 /* also try offload_optimizer.device "none" (no host copies) */
    int64_t global_batch;            /* sequences per step over all DP ranks; 0: accumulation stays */
    int64_t headroom_bytes;          /* GPU memory that must stay free beyond the prediction */
    double tol;                      /* |honored - requested| DeepSpeed must reach */
    const enum plan_policy *more_policies; /* further DeepSpeed versions' rules that must honor each
                                        candidate too (the same sub_group_size); NULL: none */
    int n_more;                      /* of more_policies */
};

/* The micro-batch candidates of a search, at most SIM_TUNE_MAX_MICRO_BATCHES into mb: the one the
 * user fixed (z->src_micro_batch PLAN_SRC_CLI) alone; else listed[0..n_listed) (at most
 * SIM_TUNE_MAX_MICRO_BATCHES - 1; NULL: the powers of two 1..64) and the DeepSpeed config's own
 * (PLAN_SRC_CONFIG), ascending, each once. */
#define SIM_TUNE_MAX_MICRO_BATCHES 16
void sim_tune_micro_batches(const struct plan_zero *z, const int64_t *listed, int n_listed, int64_t *mb, int *n);
/* The same with the listed candidates read from list ("1,2,4": at most SIM_TUNE_MAX_MICRO_BATCHES - 1
 * integers in [1, 2^20], separated by commas; NULL: the default set). The list is not read when
 * z fixes the micro-batch. RL_EINVAL naming micro_batches, the list and what is allowed otherwise. */
int sim_tune_micro_batches_parse(const char *list, const struct plan_zero *z, int64_t *mb, int *n, struct rl_err *e);

struct sim_tune_choice {
    bool offload;                    /* optimizer offload on; false: device "none", ratio meaningless */
    double ratio;                    /* requested offload ratio */
    double honored;                  /* what the answer's policy honors */
    int64_t micro_batch;             /* sequences per GPU per micro-step */
    int64_t grad_accum;              /* micro-steps per step */
    bool ckpt;                       /* activation checkpointing */
    int64_t sub_group_size;          /* of the answer's plan */
    int n_subgroups;                 /* of the answer's plan */
    double more_honored[PLAN_MAX_MORE_VERSIONS]; /* what each of the request's more_policies honors */
    struct sim_step_result r;        /* its prediction */
    double tokens_per_s_gpu;         /* tokens/s of the whole job / its GPUs: r.tokens_per_s / (TP x PP) */
    double tokens_per_s_node;        /* x GPUs per node */
    int64_t free_gpu_bytes;          /* capacity - NVML-visible total */
};

/* The candidate classes the search reports on separately, by what the optimizer offload puts on
 * the host (the requested ratio, the one the DeepSpeed config carries): no offload
 * (offload_optimizer "none", or "cpu" at ratio 0: no optimizer state on the host), partial
 * (0 < ratio < 1) and full (ratio 1). When nothing fits, each class can bind differently: without
 * offload GPU memory, with full offload host RAM. */
enum sim_tune_class { SIM_TUNE_NO_OFFLOAD, SIM_TUNE_PARTIAL, SIM_TUNE_FULL, SIM_TUNE_N_CLASSES };
/* "no offload", "partial offload", "full offload". */
const char *sim_tune_class_name(enum sim_tune_class c);
/* The class of a candidate: ratio < 0 is no offload (device "none"). */
enum sim_tune_class sim_tune_class_of(double ratio);

/* One class's memory facts over the candidates of a search (every micro-batch and checkpointing
 * setting tried). Byte figures are INT64_MAX when no candidate qualifies. */
struct sim_tune_class_stats {
    int evaluated;                   /* candidates of the class (memory predicted) */
    int gpu_fit;                     /* whose GPU side fits with the headroom */
    int host_fit;                    /* whose host side fits the node */
    int fit;                         /* whose both sides fit */
    double ratio_lo, ratio_hi;       /* the smallest and largest requested ratio evaluated (0 for
                                        device "none") */
    int64_t min_gpu_bytes;           /* smallest NVML-visible total of any candidate */
    int64_t host_at_min_gpu_bytes;   /* host total per node of that candidate */
    int64_t min_gpu_bytes_host_ok;   /* smallest NVML-visible total of a candidate whose host side fits */
    int64_t min_host_node_bytes;     /* smallest host total per node of a candidate whose GPU side fits */
    int64_t min_host_any_bytes;      /* smallest host total per node of any candidate */
    double best_tokens_per_s_gpu;    /* the fastest fitting candidate's tokens/s per GPU (0: none fits) */
};

/* What one policy's search found. */
struct sim_tune_best {
    bool found;                      /* some candidate fits with the headroom */
    struct sim_tune_choice best;     /* the fastest of them */
    bool offload_found;              /* some candidate with optimizer offload fits */
    struct sim_tune_choice best_offload; /* the fastest of those */
    int evaluated;                   /* candidates considered (memory predicted) */
    int simulated;                   /* of which simulated (they fit) */
    int64_t min_gpu_bytes;           /* smallest NVML-visible total seen (INT64_MAX: none) */
    int64_t min_host_node_bytes;     /* smallest host memory per node of a candidate whose GPU side fits
                                        (INT64_MAX: none) */
    int64_t min_gpu_bytes_host_ok;   /* smallest NVML-visible total of a candidate whose host side fits
                                        (INT64_MAX: none) */
    int gpu_fit;                     /* candidates whose GPU side fits with the headroom */
    int host_fit;                    /* candidates whose host side fits */
    struct sim_tune_class_stats cls[SIM_TUNE_N_CLASSES]; /* the same, per candidate class */
};

struct sim_tune_result {
    bool found;                      /* the answer exists: some candidate of the request's policy fits */
    struct sim_tune_best ans;        /* the request's policy: the answer (ans.best) */
    bool has_exact;                  /* the policy is a DeepSpeed one: the exact search below ran too */
    struct sim_tune_best exact;      /* the exact policy's search (the aside); == ans under EXACT */
    int n_unhonored;                 /* candidate ratios no sub_group_size honors within tol */
    double unhonored[8];             /* the first of them, ascending */
};
/* Runs the search. Errors (a plan or a simulation that fails) name the candidate. */
int sim_tune(const struct sim_tune_request *q, struct sim_tune_result *out, struct rl_err *e);

/* ---- when nothing fits: what binds, and what alone would make it fit ---------------------------- */
/* What binds a class: "none" (some candidate fits), "gpu", "host", "gpu_or_host" (each candidate is
 * held by one of them, some by the GPU, some by the host), "gpu_and_host" (every candidate by both),
 * "not_searched" (no candidate of the class). */
const char *sim_tune_binds(const struct sim_tune_class_stats *k);
/* The GPU memory on which a prediction of need bytes leaves the headroom free: the same bytes when
 * the headroom was given in bytes (headroom_given), else the same share (headroom_bytes of
 * gpu_mem_bytes) of the larger GPU. */
int64_t sim_tune_gpu_mem_for(int64_t need, int64_t headroom_bytes, bool headroom_given, int64_t gpu_mem_bytes);
/* What would make a class of candidates (or, at index SIM_TUNE_N_CLASSES, any candidate) fit when
 * nothing does, each change alone with everything else as asked. */
struct sim_tune_fix {
    int64_t gpu_mem_bytes;        /* GPUs with this much memory (0: more GPU memory alone does not) */
    int64_t host_mem_bytes;       /* a node with this much host RAM (0: more host RAM alone does not) */
    int64_t both_gpu_mem_bytes;   /* when neither alone does: this much GPU memory ... */
    int64_t both_host_mem_bytes;  /* ... together with this much host RAM (0: not needed) */
    int gpus, dp, nodes;          /* the fewest GPUs (the DP degree doubled) on which it fits (0: none) */
    double gpus_tokens_per_s_gpu; /* the fastest fitting candidate's tokens/s per GPU there */
};
/* The analysis of r, the result of q: the memory figures of every fix[] from r's class facts and,
 * when r found nothing, the fewest GPUs on which some candidate of each class, and any candidate,
 * fits: q's layout with its data-parallel degree doubled (up to 64 times; the same GPUs per node, up
 * to the profile's), one search per doubling until every class that had candidates has its count
 * (a layout or search that fails leaves the counts 0). Cost: up to 6 searches (sim_tune). */
void sim_tune_fixes(const struct sim_tune_request *q, const struct sim_tune_result *r, bool headroom_given,
                    struct sim_tune_fix fix[SIM_TUNE_N_CLASSES + 1]);

/* ---- one profile's search and its analysis, as `ratiolab tune` runs each --hw ---------------- */
struct sim_tune_run {
    struct hw_profile hw;            /* the profile (the caller's overrides applied) */
    int64_t headroom_bytes;          /* GPU memory left free beyond the prediction */
    bool headroom_given;             /* given in bytes (kept on a larger GPU); else a share of GPU memory */
    struct sim_tune_result res;      /* what sim_tune found */
    struct sim_tune_fix fix[SIM_TUNE_N_CLASSES + 1]; /* when nothing fits: per class, then for any */
};
/* Searches base on t->hw (the caller loads it): the headroom headroom_bytes, or when it is < 0
 * SIM_TUNE_HEADROOM_FRACTION of the profile's GPU memory (base's hw and headroom are replaced),
 * then the analysis sim_tune_fixes. Errors are sim_tune's. Cost: sim_tune, and up to 6 more
 * searches when nothing fits. */
int sim_tune_profile(const struct sim_tune_request *base, int64_t headroom_bytes, struct sim_tune_run *t,
                     struct rl_err *e);

#endif
