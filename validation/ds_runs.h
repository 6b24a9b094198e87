/* validation/ds_runs.h — the runs in the DeepSpeed logs of `validate --deepspeed-log`: every log
 * split into its runs (trace_ds_split_runs), each read whole (configuration, stages, iteration
 * times, timers), grouped into what is judged against one plan, and a group's figures joined.
 * cli/cmd_validate.c judges each group (val_ds_compare) and prints. */
#ifndef RL_VALIDATION_DS_RUNS_H
#define RL_VALIDATION_DS_RUNS_H

#include <stdbool.h>

#include "common/rl.h"
#include "plan/inputs.h"
#include "traces/dsconfig.h"
#include "traces/dslog.h"

/* One run of one log, read whole. */
struct val_ds_unit {
    int file;                      /* index into the logs given */
    int first_line;                /* the 1-based line of that log it starts at */
    struct trace_ds_config cfg;    /* what it printed (have_version and have_zero false: nothing) */
    struct trace_ds_log log;       /* its see_memory_usage stages, lines in the log's numbering */
    double *ms;                    /* its iteration times (malloc'd) */
    int n_ms;                      /* entries */
    struct trace_ds_timers tm;     /* its timer lines */
};
/* The run printed a configuration (a version or a zero_config). */
bool val_ds_unit_has_config(const struct val_ds_unit *u);

/* Every run of the logs given, in order. */
struct val_ds_runs {
    const char *const *paths;      /* the logs (the caller's) */
    struct val_ds_unit *u;         /* the runs (malloc'd) */
    int n;                         /* entries */
    bool empty;                    /* after a failed read: a log held neither a stage nor an iteration */
    struct trace_ds_config empty_cfg; /* then what that log printed (its release may log no stages) */
};
/* Reads every log into its runs. A log with neither a stage nor an iteration line is RL_EINVAL
 * ("deepspeed_log: PATH: no DeepSpeed see_memory_usage lines ..."), with r->empty set. */
int val_ds_runs_read(struct val_ds_runs *r, const char *const *paths, int n_paths, struct rl_err *e);
void val_ds_runs_free(struct val_ds_runs *r);

/* The runs judged together against one plan. */
#define VAL_DS_GROUP_MAX 256
struct val_ds_group {
    int units[VAL_DS_GROUP_MAX];   /* indices into the runs */
    int n;                         /* entries */
    char name[600];                /* "a.log:1" or "a.log:1, b.log:1": the runs, for the verdicts (as data) */
};
/* When every run printed one configuration (or none did, or only one did) they are one group,
 * stages from one log and iterations from another; when configurations differ, each run with a
 * configuration is a group of its own, and a run with stages or iterations but no configuration
 * cannot be placed (RL_EINVAL naming its log). At most max groups, *n_groups set. *differ: the
 * configurations differ. */
int val_ds_runs_group(const struct val_ds_runs *r, struct val_ds_group *g, int max, int *n_groups, bool *differ,
                      struct rl_err *e);
/* A group's figures joined: its stages (logs[i], the runs' own, not copied), iteration times
 * (*ms, malloc'd) and timers (*tm, freed with trace_ds_timers_free). The stage's file a comparison
 * names among the group's (val_ds_compare) is mapped back to the log's with val_ds_group_file. */
int val_ds_group_join(const struct val_ds_runs *r, const struct val_ds_group *g, struct trace_ds_log *logs,
                      double **ms, int *n_ms, struct trace_ds_timers *tm, struct rl_err *e);
int val_ds_group_file(const struct val_ds_runs *r, const struct val_ds_group *g, int i);
/* What the group's runs printed of their configuration over the setup c resolved from in
 * (val_facts_apply: plan/inputs.c's precedence), each run named "deepspeed_log PATH (the run from
 * line N)" in a contradiction (RL_EINVAL); *logged: the first printed configuration (zeroed when
 * no run printed one). */
int val_ds_group_facts(const struct val_ds_runs *r, const struct val_ds_group *g, const struct plan_inputs *in,
                       struct plan_setup *c, struct trace_ds_config *logged, struct rl_err *e);

#endif
