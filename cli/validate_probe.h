/* cli/validate_probe.h — `ratiolab validate --probe FILE`: rank 0's probe and every rank's file
 * beside it, against the plan and the prediction. */
#ifndef RL_CLI_VALIDATE_PROBE_H
#define RL_CLI_VALIDATE_PROBE_H

#include <stdbool.h>

#include "cli/cli.h"
#include "cli/sim_opts.h"
#include "plan/inputs.h"
#include "traces/dsconfig.h"

/* What --probe mode reads beside the probe, and where it writes its report. */
struct cli_probe_opts {
    const char *audit;             /* --audit FILE: the probe's audit file, NULL when absent */
    const char *against_probe;     /* --against-probe FILE: rank 0's probe of the same cell at another
                                      ratio, NULL when absent */
    const char *against_audit;     /* --against-audit FILE: that run's audit (the same rank as --audit) */
    const char *report;            /* --report FILE: the JSON document written there too, NULL when absent */
};

/* The whole --probe mode; returns the exit code (0 pass, 1 a gated check failed, 2 bad input,
 * among which a probe whose configuration contradicts --ds-config or the flags). */
int cli_validate_probe(const char *path, const struct plan_inputs *s, struct cli_sim *sim, double tol_gib,
                       double tol_pct, bool json, const struct cli_probe_opts *po);
#endif
