/* cli/flag_values.h — the parsers of flag values beyond common/'s (rl_parse_bytes, the ratio
 * lists, numbers, versions): --gemm's shape lists, monitor's --interval, run's --policies and
 * --schedules. Each returns 0 or RL_EINVAL with a one-line message naming the flag and what is
 * allowed; nothing is written to the outputs on failure beyond what the message says. */
#ifndef RL_CLI_FLAG_VALUES_H
#define RL_CLI_FLAG_VALUES_H

#include <stdbool.h>
#include <stdint.h>

#include "calib/calib.h"   /* struct calib_run, CALIB_MAX_GEMMS */
#include "common/rl.h"

/* --gemm / --gemm-last MxNxK[xC],...: shapes and counts (each 1..2^31-1, at most CALIB_MAX_GEMMS
 * of both flags together) into r, replacing the flag's earlier ones (last: --gemm-last's). */
int cli_parse_gemms(const char *flag, const char *v, bool last, struct calib_run *r, struct rl_err *e);
/* A duration: "100ms", "0.5s", "250us", "2" (seconds) -> ns in [1 ms, 3600 s]. */
int cli_parse_interval(const char *v, int64_t *out, struct rl_err *e);
/* Comma-separated placement policy names (policy) or schedule names, at most max, into out (an
 * enum plan_policy or enum step_schedule array of max entries); *n of them. */
int cli_parse_names(const char *v, const char *field, int max, int *n, void *out, bool policy, struct rl_err *e);

#endif
