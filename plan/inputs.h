/* plan/inputs.h — the inputs of a run (a model, a Megatron-DeepSpeed launch line, a DeepSpeed
 * config, layout and ZeRO settings) and the one set of precedence rules that merges them into a
 * model, a layout and a ZeRO config. Every front end resolves through here: the `ratiolab`
 * commands, which fill the inputs from their flags, and the executor, which adds the MPI world
 * size; so the same inputs give the same plan everywhere.
 *
 * Precedence, lowest first: the built-in default case (gpt-2.7b, TP 8, ZeRO-3 with pinned CPU
 * offload, ratio 0.3, fp16) < the DeepSpeed config < the launch line (micro-batch and precision
 * where the config leaves them, TP, PP, the config's path) < the explicit settings below. A real
 * run's facts (its log, its probe: plan_inputs_apply_facts) fill what neither the config nor a
 * setting gave, and contradict what they did.
 *
 * Messages name the field of struct plan_inputs (`tp`, `gpus`, `ds_config`, `pp_stage`), never a
 * command-line flag: a front end that took the field from a flag renames it (cli/setup.c). */
#ifndef RL_PLAN_INPUTS_H
#define RL_PLAN_INPUTS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "plan/groups.h"
#include "plan/plan.h"

/* What was given; a NULL, 0 or false field was not given. The names are the fields messages
 * use. */
/* Further DeepSpeed versions a config is judged under at once (--deepspeed-version a,b,..). */
#define PLAN_MAX_MORE_VERSIONS 7

struct plan_inputs {
    const char *model;             /* model: a catalog preset or an HF config.json path */
    const char *megatron_args;     /* megatron_args: a Megatron-DeepSpeed launch line */
    const char *megatron_args_file;/* megatron_args_file: the same, read from a file */
    const char *ds_config;         /* ds_config: DeepSpeed JSON path ("-": standard input) */
    const char *catalog;           /* catalog directory; NULL: rl_catalog_dir() */
    struct plan_layout layout;     /* tp, pp, dp, gpus (world), nodes, gpus_per_node, rank */
    int mpi_world;                 /* ranks a launcher started; the DP degree when none of dp,
                                      gpus and nodes is given (0: no launcher) */
    int pp_stage;                  /* pp_stage: the pipeline stage described */
    double ratio;                  /* ratio: offload ratio in [0, 1] */
    bool ratio_set;                /* ratio was given */
    enum plan_policy policy;       /* policy (PLAN_POLICY_AUTO: from the DeepSpeed version) */
    enum plan_ledger_kind ledger;  /* ledger */
    struct rl_version ds_version;  /* deepspeed_version */
    bool ds_version_set;           /* deepspeed_version was given */
    struct rl_version more_versions[PLAN_MAX_MORE_VERSIONS]; /* further DeepSpeed versions whose rules must
                                      hold too (check, tune); the first stays ds_version */
    int n_more_versions;           /* of more_versions */
    int64_t sub_group_size;        /* sub_group_size, elements */
    bool sub_group_size_set;       /* sub_group_size was given */
    enum plan_group_rule groups;   /* param_groups */
    const char *groups_file;       /* param_groups given as a group file's path (plan/groups.h);
                                      wins over groups */
    const struct plan_group_spec *group_spec; /* param groups listed by name (a probe's record);
                                      wins over groups and groups_file (the caller compares them) */
    enum plan_group_rule megatron_rule; /* megatron_version, as a param-group rule */
    bool megatron_rule_set;        /* megatron_version was given */
    bool megatron_split_qkv;       /* megatron_version is dated in the GQA query/key_value split */
    int64_t seq_len;               /* seq_len, tokens (0: the model's) */
    int64_t micro_batch;           /* micro_batch per GPU (0: the config's) */
    enum plan_dtype dtype;         /* dtype */
    bool dtype_set;                /* dtype was given */
    bool dtype_from_model;         /* where neither dtype nor the config sets the precision (no
                                      config, or fp16/bf16 "auto"), take the HF model's torch_dtype:
                                      the precision the Trainer is run with (tune) */
    bool verbose;                  /* note the ignored launch-line arguments too */
    bool report_hazards;           /* accept a config with DeepSpeed hazards (the caller reports
                                      them); otherwise the first hazard with a fix is refused */
};
/* Nothing given: policy, ledger and param groups automatic. */
void plan_inputs_init(struct plan_inputs *in);

/* What the inputs resolve to. */
struct plan_setup {
    struct plan_model model;       /* the model, grouped by its param-group rule */
    struct plan_zero zero;         /* the ZeRO config after every override */
    struct plan_layout layout;     /* resolved: every degree set */
    struct plan_options popt;      /* placement policy and ledger */
    const char *catalog;           /* catalog directory used */
    bool checkpoint_activations;   /* the launch line's --checkpoint-activations (for the simulator) */
    enum plan_policy more_policies[PLAN_MAX_MORE_VERSIONS]; /* the placement rule of each further version
                                      (with policy auto; none otherwise) */
    struct rl_version more_versions[PLAN_MAX_MORE_VERSIONS]; /* those versions */
    int n_more;                    /* of more_policies and more_versions */
    char model_desc[160];          /* for headings, e.g. "gpt-2.7b (Megatron GPT), TP 8, ..." */
    char *ds_text;                 /* the DeepSpeed config as read (judged and fixed from this
                                      text; malloc'd, NULL without a config) */
    char notes[16][200];           /* things the user should know (ignored settings, defaults) */
    int n_notes;                   /* notes used */
};
/* Applies the precedence rules. RL_EINVAL (or the reader's code) naming the field on bad or
 * conflicting inputs; *s is then empty or partly filled, and plan_setup_free releases it. */
int plan_inputs_resolve(const struct plan_inputs *in, struct plan_setup *s, struct rl_err *e);
/* Builds the plan for one ratio (the setup's own ratio when ratio < 0). */
int plan_setup_plan(const struct plan_setup *s, double ratio, struct plan *p, struct rl_err *e);
/* The executor's plan of one ratio, the one way `run`, `validate` and the benchmarks build it:
 * the setup's element-count settings divided by `scale` (plan_scale_zero, the chunk
 * STEP_CHUNK_DEFAULT_NUMEL with them), the model already scaled (`scaled`), the ratio (the
 * setup's own when ratio < 0), the policy (the setup's when PLAN_POLICY_AUTO) and the exec
 * ledger. */
int plan_exec_plan(const struct plan_setup *s, const struct plan_model *scaled, double scale, double ratio,
                   enum plan_policy policy, struct plan *p, struct rl_err *e);
void plan_setup_free(struct plan_setup *s);

/* What a real run printed (a DeepSpeed log) or recorded (a probe) of its configuration; a field
 * the run did not give is unknown. */
struct plan_run_facts {
    bool have_version;             /* the run's DeepSpeed version is known */
    struct rl_version version;     /* that version */
    int stage;                     /* zero_optimization.stage, -1 unknown */
    char offload_device[16];       /* offload_optimizer.device ("cpu", "nvme", "none"), "" unknown */
    bool have_ratio;               /* offload_optimizer.ratio is known */
    double ratio;                  /* that ratio */
    int64_t sub_group_size;        /* elements, -1 unknown */
    int64_t reduce_bucket_size;    /* elements, -1 unknown */
    int64_t prefetch_bucket_size;  /* stage3_prefetch_bucket_size, elements, -1 unknown */
    int pin_memory;                /* offload_optimizer.pin_memory: 1, 0, -1 unknown */
    char dtype[8];                 /* "bf16", "fp16", "fp32", "" unknown */
    int dp;                        /* data-parallel ranks of the run, 0 unknown */
};
/* The run's facts over the setup c resolved from in, by the same precedence one step further:
 * the default < the run's facts < what the user set (the DeepSpeed config or an explicit setting).
 * A value the user set that differs from the run's is RL_EINVAL ("WHAT: zero_optimization.
 * offload_optimizer.ratio: the run used 0.8, the DeepSpeed config says 0.5; ..."; `what` names the
 * log or probe, as data); a value nobody set is taken from the run. Fields: DeepSpeed version (and
 * with it the policy and ledger left to auto), stage, offload device, ratio, sub_group_size,
 * reduce_bucket_size, stage3_prefetch_bucket_size, pin_memory, dtype; dp > 0 also sets the
 * data-parallel degree unless a layout was given. */
int plan_inputs_apply_facts(const struct plan_inputs *in, const struct plan_run_facts *f, const char *what,
                            struct plan_setup *c, struct rl_err *e);

#endif
