/* cli/hazard_report.h — DeepSpeed hazards of a config (plan/ds_fix.h) as lines, shared by `check`
 * (fails on them) and `plan` (warns). */
#ifndef RL_CLI_HAZARD_REPORT_H
#define RL_CLI_HAZARD_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "plan/ds_fix.h"

/* One line per hazard, "<prefix><line>\n"; prefix "hazard " for failures, "warning" otherwise
 * (fail_prefix / warn_prefix give the exact text; NULL skips those). z: the config as written. */
void cli_hazards_print(FILE *out, const struct plan_hazard_set *hz, const struct plan_zero *z, bool strict,
                       const char *fail_prefix, const char *warn_prefix);

#endif
