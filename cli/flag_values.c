/* cli/flag_values.c — the parsers of flag values that take more than common/'s numbers and sizes
 * (cli/flag_values.h). Pure: no I/O, no state; the fuzzer (tests/fuzz_targets.c) feeds them
 * arbitrary text, as a user could type it. */
#include "cli/flag_values.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"   /* cli_err_flag */
#include "plan/plan.h"  /* plan_policy_parse */
#include "plan/step.h"  /* step_schedule_parse */

/* --gemm / --gemm-last MxNxK[xC],...: shapes and counts, replacing the flag's earlier ones. */
int cli_parse_gemms(const char *flag, const char *v, bool last, struct calib_run *r, struct rl_err *e)
{
    int kept = 0, added = 0;
    for (int i = 0; i < r->n_gemm; i++)
        if (r->gemm[i].last != last)
            r->gemm[kept++] = r->gemm[i];
    r->n_gemm = kept;
    const char *q = v;
    while (*q) {
        long long m, n, k, c = 1;
        int used = 0;
        if (sscanf(q, "%lldx%lldx%lld%n", &m, &n, &k, &used) != 3)
            goto bad;
        q += used;
        if (*q == 'x') {
            if (sscanf(q, "x%lld%n", &c, &used) != 1)
                goto bad;
            q += used;
        }
        if (m < 1 || n < 1 || k < 1 || c < 1 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX ||
            r->n_gemm == CALIB_MAX_GEMMS)
            goto bad;
        r->gemm[r->n_gemm++] = (struct calib_gemm_shape){m, n, k, c, last};
        added++;
        if (*q == ',' && q[1])
            q++;
        else if (*q)
            goto bad;
    }
    if (added > 0)
        return 0;
bad:
    return rl_errf(e, RL_EINVAL, "%s: '%s' is not allowed; allowed: up to %d shapes MxNxK or MxNxKxCOUNT (with "
                   "--gemm and --gemm-last together), comma-separated, each 1..2^31-1", flag, v, CALIB_MAX_GEMMS);
}

/* "100ms", "0.5s", "250us", "2" (seconds, as vmstat, watch and nvidia-smi -l read it) -> ns in
 * [1 ms, 3600 s]. */
int cli_parse_interval(const char *v, int64_t *out, struct rl_err *e)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    double mult = 0;
    if (end != v && !errno) {
        if (strcmp(end, "ms") == 0)
            mult = 1e6;
        else if (*end == 0 || strcmp(end, "s") == 0)
            mult = 1e9;
        else if (strcmp(end, "us") == 0)
            mult = 1e3;
    }
    double ns = x * mult;
    if (mult == 0 || !(ns >= 1e6 && ns <= 3600e9))
        return rl_errf(e, RL_EINVAL, "--interval: '%s' is not allowed; expected a duration from 1ms "
                       "to 3600s: a number with us, ms or s (a bare number is seconds), such as 100ms or 0.5s", v);
    *out = (int64_t)llround(ns);
    return 0;
}

/* --policies / --schedules: comma-separated names (policy: plan_policy_parse's, else
 * step_schedule_parse's), at most max of them, into out. */
int cli_parse_names(const char *v, const char *field, int max, int *n, void *out, bool policy, struct rl_err *e)
{
    char buf[512];
    if (strlen(v) >= sizeof buf)
        return rl_errf(e, RL_EINVAL, "%s: %zu bytes; allowed: at most %zu (%d comma-separated names)", field,
                       strlen(v), sizeof buf - 1, max);
    snprintf(buf, sizeof buf, "%s", v);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == max)
            return rl_errf(e, RL_EINVAL, "%s: more than %d entries", field, max);
        int rc = policy ? plan_policy_parse(tok, &((enum plan_policy *)out)[*n], e)
                        : step_schedule_parse(tok, &((enum step_schedule *)out)[*n], e);
        if (rc) {
            cli_err_flag(e, policy ? "policy" : "schedule", policy ? "--policy" : "--schedule");
            return rl_err_prefix(e, "%s", field);
        }
        (*n)++;
    }
    return 0;
}
