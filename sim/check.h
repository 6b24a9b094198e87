/* sim/check.h — the verdict of `ratiolab check`: does a DeepSpeed config honor its offload ratio
 * within a tolerance, does one rank's GPU memory fit, and the fix when not (the largest
 * sub_group_size that honors the ratio; the smallest ratio, on a 0.01 grid, whose memory fits once
 * honored). The memory is the simulator's per-rank prediction (sim_step_memory) or the ledger's
 * model states alone. The DeepSpeed hazards of the config are plan/ds_hazards.h's, judged apart. */
#ifndef RL_SIM_CHECK_H
#define RL_SIM_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "plan/inputs.h"
#include "sim/hw.h"
#include "sim/step.h"

struct sim_check_request {
    double tol;                      /* allowed |honored - requested| (plan_ratio_within) */
    int64_t gpu_mem_bytes;           /* one rank's GPU memory to fit; 0: no memory judgement */
    bool states_only;                /* judge the ledger's model states alone, not the prediction */
    const struct hw_profile *hw;     /* context and allocator model (unused with states_only) */
    const struct sim_train *train;   /* micro-batch, sequence, checkpointing, reserve */
};

struct sim_check_verdict {
    bool ratio_ok;                   /* honored within tol */
    bool memory_ok;                  /* fits gpu_mem_bytes (true when not judged) */
    double requested;                /* the config's ratio */
    double honored;                  /* what its policy honors */
    int n_subgroups;                 /* sub-groups of one rank */
    int64_t sub_group_size;          /* in the config, elements */
    int64_t gpu_bytes;               /* per rank: the whole prediction, or the ledger peak (states
                                        only, or no memory judgement) */
    struct sim_step_result mem;      /* the parts of gpu_bytes (whole prediction only) */
    int64_t fix_sgs;                 /* the sub_group_size to set; 0: no change needed or none */
    bool fix_sgs_none;               /* no sub_group_size can honor the ratio */
    int64_t closest_sgs;             /* then: the sub_group_size that comes closest */
    double closest_honored;          /* and the ratio it honors */
    double fix_ratio;                /* the ratio to set for the memory; < 0: no change */
    int64_t fix_gpu_bytes;           /* GPU bytes per rank with the fix */
    bool fix_fits;                   /* the memory fix exists */
    /* With several DeepSpeed versions (plan_setup.n_more): ratio_ok and fix_sgs hold under the
     * setup's version and each further one; honored above is the first version's. */
    double more_honored[PLAN_MAX_MORE_VERSIONS]; /* what each further version honors with the config */
    double fix_honored[1 + PLAN_MAX_MORE_VERSIONS]; /* with fix_sgs: the first version's, then each further */
    bool version_ok[1 + PLAN_MAX_MORE_VERSIONS];    /* honored within tol: the first version, then each
                                                       further (ratio_ok is all of them) */
};

/* Judges the setup's config. Cost: one plan and one sub_group_size search; when the memory does
 * not fit, O(log 100) exactly-honored plans and a few sub_group_size searches more. */
int sim_check(const struct plan_setup *s, const struct sim_check_request *q, struct sim_check_verdict *v,
              struct rl_err *e);

#endif
