/* sim/tune.h — the configuration with the most tokens per second per GPU that fits.
 *
 * Searches micro-batch, activation checkpointing and offload ratio together (a fixed global
 * batch, when given, sets the gradient accumulation of each micro-batch), predicting every
 * candidate with sim_step_run under the exact policy (the ratio honored as asked). A candidate
 * counts when its NVML-visible GPU memory plus a headroom fits the GPU and its host memory fits
 * the node. Under a DeepSpeed policy the winner is then re-planned with the sub_group_size that
 * makes DeepSpeed honor its ratio, and predicted again: that prediction is the answer a
 * `predict` of the same settings reproduces.
 *
 * Cost: one plan per ratio and at most ratios x micro-batches x checkpointing settings step
 * simulations; candidates whose memory prediction (sim_step_memory, no simulation) does not fit
 * are not simulated. */
#ifndef RL_SIM_TUNE_H
#define RL_SIM_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rl.h"
#include "plan/plan.h"
#include "sim/hw.h"
#include "sim/step.h"

/* The default headroom as a fraction of GPU memory: HARDWARE.md "Memory outside the model
 * states" puts NVML "used" 7-11 GB above PyTorch's peak allocated on 80 GB GPUs; the profile's
 * reserve model lands in that range, and the headroom keeps the rest of its spread (4 GB of 80 GB)
 * free, so a fit with 0.4 GiB to spare is not "the answer". */
#define SIM_TUNE_HEADROOM_FRACTION 0.05

struct sim_tune_request {
    const struct plan_model *model;  /* the model (grouped) */
    const struct plan_layout *layout;/* ranks, DP degree, GPUs per node */
    const struct plan_zero *zero;    /* the DeepSpeed config (its ratio is replaced) */
    struct plan_options popt;        /* the policy of the answer (EXACT: no sub_group_size step) */
    const struct sim_hw *hw;         /* the node */
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
};

struct sim_tune_choice {
    bool offload;                    /* optimizer offload on; false: device "none", ratio meaningless */
    double ratio;                    /* requested offload ratio */
    double honored;                  /* what the answer's policy honors */
    int64_t micro_batch;             /* sequences per GPU per micro-step */
    int64_t grad_accum;              /* micro-steps per step */
    bool ckpt;                       /* activation checkpointing */
    int64_t sub_group_size;          /* of the answer's plan */
    int n_subgroups;                 /* of the answer's plan */
    struct sim_step_result r;        /* its prediction */
    double tokens_per_s_gpu;         /* tokens/s of the whole job / its GPUs: r.tokens_per_s / (TP x PP) */
    double tokens_per_s_node;        /* x GPUs per node */
    int64_t free_gpu_bytes;          /* capacity - NVML-visible total */
};

struct sim_tune_result {
    bool found;                      /* some candidate fits with the headroom */
    struct sim_tune_choice exact;    /* the best candidate, ratio honored exactly */
    bool offload_found;              /* some candidate with offload fits */
    struct sim_tune_choice best_offload; /* the best of those (exact policy), for comparison */
    bool ds_valid;                   /* a DeepSpeed answer exists (policy not EXACT) */
    bool ds_honored;                 /* its sub_group_size honors the ratio within tol */
    bool ds_fits;                    /* and it still fits with the headroom */
    struct sim_tune_choice ds;       /* the same settings under the DeepSpeed policy */
    int evaluated;                   /* candidates considered (memory predicted) */
    int simulated;                   /* of which simulated (they fit) */
    int64_t min_gpu_bytes;           /* smallest NVML-visible total seen */
};

/* Runs the search. Errors (a plan or a simulation that fails) name the candidate. */
int sim_tune(const struct sim_tune_request *q, struct sim_tune_result *out, struct rl_err *e);

#endif
