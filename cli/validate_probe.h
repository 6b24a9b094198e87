/* cli/validate_probe.h — `ratiolab validate --probe FILE`, and the configuration check of
 * `validate --deepspeed-log` (the config the run printed against --ds-config / --ratio). */
#ifndef RL_CLI_VALIDATE_PROBE_H
#define RL_CLI_VALIDATE_PROBE_H

#include <stdbool.h>

#include "cli/cli.h"
#include "cli/sim_opts.h"
#include "plan/inputs.h"
#include "traces/dsconfig.h"

/* The whole --probe mode; returns the exit code (0 pass, 1 a gated check failed, 2 bad input,
 * among which a probe whose configuration contradicts --ds-config or the flags). */
int cli_validate_probe(const char *path, const struct plan_inputs *s, struct cli_sim *sim, double tol_gib,
                       double tol_pct, bool json, const char *audit_path);
/* Reads the configuration each log printed (traces/dsconfig.h) and applies it to the resolved
 * setup c (val_facts_apply: RL_EINVAL on a contradiction with what the user set; values nobody set
 * are taken from the log). *f receives the first log's configuration (have_* false when no log
 * printed one). */
int cli_validate_log_config(const char *const *logs, int n_logs, const struct plan_inputs *s, struct plan_setup *c,
                            struct trace_ds_config *f, struct rl_err *e);

#endif
