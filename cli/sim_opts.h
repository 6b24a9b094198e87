/* cli/sim_opts.h — the options predict, sweep and tune share (hardware profile, schedule,
 * training settings); the result as JSON is sim/step_json.h. */
#ifndef RL_CLI_SIM_OPTS_H
#define RL_CLI_SIM_OPTS_H

#include "cli/cli.h"
#include "sim/hw.h"
#include "sim/step.h"
#include "sim/step_json.h"   /* sim_step_result_json, for the commands that print a prediction */

struct cli_sim {
    const char *hw;              /* --hw NAME|FILE (default dgx1-v100) */
    bool hw_given;               /* --hw was on the command line */
    struct sim_train train;      /* --schedule, --checkpoint-activations, --grad-accum, --numa, --reserve,
                                    --cpu-optimizer, --gpu-ids, --attention */
    int64_t gpu_mem_bytes;       /* --gpu-mem: overrides the profile's GPU memory, 0: keep */
    int64_t host_mem_bytes;      /* --host-mem: overrides the profile's host memory per node, 0: keep */
    int64_t host_baseline_bytes; /* --host-baseline: one rank's process before its model states */
    bool host_baseline_set;      /* --host-baseline was given */
    int pcie_gen;                /* --pcie-gen 3|4|5: host<->GPU link and switch uplinks, 0: keep */
    const char *thp;             /* --thp always|madvise|never: overrides the profile's host.thp_mode, NULL: keep */
    bool memory_only;            /* the command reports memory, no step time (check): its warnings say so */
};
void cli_sim_init(struct cli_sim *s);
/* predict, sweep and tune: one warning on stderr naming every figure of the profile the
 * prediction takes as a default or whose source says "unverified" (nothing when there is none);
 * the inter-node collective figures (hw->coll_defaulted) only when layout l spans nodes. */
void cli_sim_warn_defaults(const struct hw_profile *hw, const struct plan_layout *l);
/* The same commands: a warning when tensor parallelism spans nodes (tp > GPUs per node), whose
 * all-reduces then cross the node network, modelled as NCCL's ring or tree (sim/collective.h). */
void cli_sim_warn_layout(const struct plan_layout *l);
extern const struct cli_opt cli_sim_opts[];
int cli_sim_opt(void *ctx, int id, const char *value, struct rl_err *e);
/* Warns on stderr when a GPU capacity was written in decimal units ("80GB" is 74.51 GiB, and that
 * is what is used; an "80 GB" card has 80 GiB). */
void cli_warn_decimal_gpu_mem(const char *flag, const char *value, int64_t bytes);
/* Puts the flags of these options in place of the fields a simulator message names (gpu_ids,
 * cpu_optimizer at its start; seq_len, micro_batch, gpus_per_node, grad_accum and hw anywhere).
 * Returns e->code. */
int cli_sim_err(struct rl_err *e);
/* Loads the profile from --hw (a name in the context's catalog, or a path), applies the
 * --gpu-mem, --host-mem and --pcie-gen overrides, and takes over what the setup learned for the
 * simulator (a launch line's --checkpoint-activations). */
int cli_sim_load_hw(struct cli_sim *s, const struct plan_setup *c, struct hw_profile *hw, struct rl_err *e);
/* A one-line description of the training settings, e.g. "deepspeed 0.12.4, CPU optimizer deepspeed; micro-batch 1, ...". */
void cli_sim_settings(const struct sim_step_result *r, const struct sim_train *t, char *buf, size_t n);
/* The attention the simulator uses: --attention, else the model's framework default. */
enum plan_attention cli_sim_attention(const struct sim_train *t, const struct plan_arch *a);
/* Where the attention setting comes from: "--attention", or the model's framework default and its
 * reason (plan_attention_origin). */
const char *cli_sim_attention_origin(const struct sim_train *t, const struct plan_arch *a);

#endif
