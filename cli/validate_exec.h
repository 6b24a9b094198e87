/* cli/validate_exec.h — `ratiolab validate --ratios ...`: the executor against the simulator. */
#ifndef RL_CLI_VALIDATE_EXEC_H
#define RL_CLI_VALIDATE_EXEC_H

#include "cli/cli.h"
#include "cli/sim_opts.h"
#include "exec/exec.h"   /* enum ex_backend_kind */
#include "plan/plan.h"
#include "sim/step.h"

#define VAL_EXEC_MAX_LIST 8

struct cli_validate_exec {
    const char *ratios;            /* --ratios LIST, NULL when absent */
    int ranks;                     /* --ranks N (0: not given) */
    enum ex_backend_kind backend;  /* --backend cpu|cuda (ex_backend_name names it) */
    bool calibrate;                /* --calibrate: measure this machine first */
    int steps;                     /* --steps K */
    const char *out;               /* --out DIR */
    double gate_time_pct;          /* --gate-time PCT, < 0: time not gated */
    double mem_tol_pct;            /* --mem-tolerance PCT of RSS/pinned/device against prediction + baseline */
    double scale;                  /* --scale F: the executor's and the prediction's model is 1/F */
    const char *also_hw;           /* --also-hw NAME|FILE: every run predicted with it too (DIR/also/), NULL none */
    bool given;                    /* any of the above was given */
    int n_policies;                /* --policy A,B,...: entries (0: the one policy of the setup) */
    enum plan_policy policies[VAL_EXEC_MAX_LIST];   /* each run's placement policy */
    int n_schedules;               /* --schedule A,B: entries (0: the one schedule of the simulator options) */
    enum step_schedule schedules[VAL_EXEC_MAX_LIST]; /* each run's schedule */
};
void cli_validate_exec_init(struct cli_validate_exec *x);
extern const struct cli_opt cli_validate_exec_opts[];
int cli_validate_exec_opt(struct cli_validate_exec *x, int id, const char *v, struct rl_err *e);
bool cli_validate_exec_given(const struct cli_validate_exec *x);
/* --policy LIST / --schedule LIST for the executor mode: each item checked as the single option
 * is, the first stored in *first (what the setup and simulator see). */
int cli_validate_exec_policies(struct cli_validate_exec *x, const char *v, enum plan_policy *first,
                               struct rl_err *e);
int cli_validate_exec_schedules(struct cli_validate_exec *x, const char *v, enum step_schedule *first,
                                struct rl_err *e);
/* The whole executor mode; returns the exit code. fwd: the model/layout/config options as given
 * (passed on to `ratiolab run`); schedule_given: --schedule was given (else overlap, the
 * executor's schedule). */
struct ex_result;
struct val_row;
/* The row's measured side from an executor's result (rank 0's: every rank's figures), from this
 * process or read back from `ratiolab run --json` (ex_result_from_json); baseline[k] is rank k's
 * RSS besides its ledger buffers (bytes, -1 unknown). */
void cli_val_row_from_result(struct val_row *w, const struct ex_result *r, const int64_t *baseline);
int cli_validate_exec_run(struct cli_validate_exec *x, struct plan_inputs *s, struct cli_sim *sim,
                          const char *const *fwd, int n_fwd, bool schedule_given, bool json);

/* The traces validate --ratios writes into --out DIR are listed, as they are started, in
 * DIR/.ratiolab.outputs, one name a line; the next validate into DIR removes what an earlier one
 * listed before it runs, so traces of ratios the new run does not have do not stay beside its
 * report. Only names validate writes are removed (predicted-*.json.gz, measured-*.json.gz, no
 * folder part), and only regular files (lstat: a link is left alone, as is a user's file that
 * was never listed). Both return 0 or RL_EENV naming the file. */
#define CLI_VALIDATE_OUTPUTS ".ratiolab.outputs"
int cli_validate_outputs_forget(const char *dir, struct rl_err *e);
int cli_validate_outputs_note(const char *dir, const char *path, struct rl_err *e);

#endif
