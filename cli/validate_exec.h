/* cli/validate_exec.h — `ratiolab validate --ratios ...`: the executor against the simulator; the
 * campaign itself is campaign/campaign.h. */
#ifndef RL_CLI_VALIDATE_EXEC_H
#define RL_CLI_VALIDATE_EXEC_H

#include "campaign/campaign.h"
#include "cli/cli.h"
#include "cli/sim_opts.h"
#include "plan/plan.h"
#include "sim/step.h"

struct cli_validate_exec {
    const char *ratios;            /* --ratios LIST, NULL when absent */
    bool given;                    /* any of the options was given */
    struct camp_opts o;            /* --ranks, --backend, --calibrate, --steps, --out, --gate-time,
                                      --mem-tolerance, --scale, --also-hw, the --policy and --schedule lists */
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
int cli_validate_exec_run(struct cli_validate_exec *x, struct plan_inputs *s, struct cli_sim *sim,
                          const char *const *fwd, int n_fwd, bool schedule_given, bool json);

#endif
