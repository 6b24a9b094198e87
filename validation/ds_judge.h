/* validation/ds_judge.h — the analysis behind `validate --deepspeed-log FILE...`: the logs split
 * into runs and grouped (validation/ds_runs.h), and each group judged: the setup resolved from the
 * user's inputs with what its runs printed of their configuration over it, the plan, the
 * predicted step, and the stages, iterations, timers and (given a monitor CSV) host memory
 * against them. The caller resolves the setup and loads the hardware profile through hooks (its
 * flags' overrides and notes are the command line's); cli/cmd_validate.c names the flags and
 * prints. */
#ifndef RL_VALIDATION_DS_JUDGE_H
#define RL_VALIDATION_DS_JUDGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "plan/inputs.h"
#include "sim/step.h"
#include "validation/ds_runs.h"
#include "validation/val.h"

/* What is judged, and how. */
struct val_ds_judge_in {
    const char *const *logs;       /* the logs given, in order (the caller's) */
    int n_logs;                    /* entries */
    const char *monitor;           /* a `ratiolab monitor --csv` of the same run, NULL when absent */
    const struct plan_inputs *in;  /* the user's inputs, over which each group's configuration goes */
    const struct sim_train *train; /* the training settings of the predicted step, read after load_hw
                                      (which may change them: val_load_hw_fn) */
    double tol_gib;                /* memory tolerance, GiB (val_ds_opts.tol_bytes, rounded) */
    double tol_pct;                /* step-time tolerance, percent */
    val_resolve_fn *resolve;       /* resolves in into a setup, once per group */
    val_load_hw_fn *load_hw;       /* loads the profile, once per group */
    void *ctx;                     /* load_hw's */
};

/* Which step of a group's judgement an error came from, so the caller can name the input. */
enum val_ds_judge_stage {
    VAL_DSJ_OK,                    /* no error */
    VAL_DSJ_READ,                  /* reading or grouping the logs (the field "deepspeed_log") */
    VAL_DSJ_MONITOR,               /* a monitor CSV given with runs of different configurations
                                      (the field "monitor_csv") */
    VAL_DSJ_SETUP,                 /* the resolve hook (its message is the caller's own) */
    VAL_DSJ_FACTS,                 /* a run's configuration against the setup ("deepspeed_log") */
    VAL_DSJ_JOIN,                  /* joining the group's figures (out of memory) */
    VAL_DSJ_PREDICT,               /* the profile, the plan, the step, the monitor CSV ("monitor_csv") */
    VAL_DSJ_COMPARE,               /* the comparison ("deepspeed_log") */
};

/* One group judged (or not judged: its configuration contradicts the user's). */
struct val_ds_judged {
    const struct val_ds_group *g;  /* the group (in val_ds_judge.groups) */
    bool skipped;                  /* not judged: err says why (a contradiction with the user's settings) */
    struct rl_err err;             /* why it was skipped */
    enum val_ds_judge_stage failed; /* the step err came from */
    struct trace_ds_config logged; /* the first configuration its runs printed (zero: none) */
    struct plan_setup c;           /* the setup it was judged with */
    struct hw_profile hw;          /* the profile of its predicted step */
    struct plan p;                 /* its plan */
    bool ma_is_rss;                /* the log is of DeepSpeed's CPU accelerator: MA is the process RSS */
    struct val_ds_result r;        /* stages, step time, host memory; stage files among the logs given */
    struct val_ds_timers vt;       /* the timers against the simulator's windows */
};

/* One `validate --deepspeed-log`; owns what it allocates (val_ds_judge_free). Zero it before
 * val_ds_judge_run. */
struct val_ds_judge {
    struct val_ds_runs runs;       /* every run of the logs */
    struct val_ds_group *groups;   /* what one plan judges (n_groups entries) */
    int n_groups;                  /* entries */
    bool differ;                   /* the runs printed different configurations (each judged alone) */
    struct val_ds_judged *j;       /* per group, in order (n_done entries) */
    int n_done;                    /* groups judged or skipped; at an error, those before the group
                                      that gave it (which then is j[n_done], not counted) */
    int judged;                    /* of them, judged */
    enum val_status overall;       /* PASS when every judged group passes */
    struct rl_err first_skip;      /* the first skipped group's reason (the error when none was judged) */
    enum val_ds_judge_stage failed; /* where val_ds_judge_run's error came from */
};

/* Reads the logs, groups their runs and judges each group. With several groups, a group whose
 * configuration contradicts the user's settings (RL_EINVAL, ": the run used ") is skipped and the
 * others judged; when every group is skipped the first one's reason is the error
 * (failed: that group's step). Any other error ends the judgement with failed saying its step:
 * the groups before it stay in j. When a log holds nothing to compare, what it printed of its
 * configuration (runs.empty_cfg, or the group's logged) says whether its release logs no
 * allocation stages (plan_ds_rules.logs_stages false): the caller's advice. */
int val_ds_judge_run(const struct val_ds_judge_in *in, struct val_ds_judge *k, struct rl_err *e);

/* The JSON document of --json (without "schema_version"): one group's object, or with several an
 * object of the judged groups ("runs") and the overall verdict; NULL only when out of memory. */
json_t *val_ds_judge_json(const struct val_ds_judge_in *in, const struct val_ds_judge *k);

/* Frees what k holds and zeroes it. */
void val_ds_judge_free(struct val_ds_judge *k);

#endif
