/* cli/hazard_report.h — DeepSpeed hazards of a config (plan/ds_hazards.h) as lines and JSON,
 * shared by `check` (fails on them) and `plan` (warns). */
#ifndef RL_CLI_HAZARD_REPORT_H
#define RL_CLI_HAZARD_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "plan/ds_hazards.h"

/* The hazards of one config, found before the planner's repairs are assumed. */
struct cli_hazards {
    const struct plan_hazard *h[PLAN_HAZARDS_MAX];   /* matching table entries, table order */
    int n;                                           /* how many */
    int n_fail;                                      /* those that fail `check` (suspects: only --strict) */
    int n_repaired;                                  /* repairs assumed for the analysis (device, stage) */
};

/* Finds the hazards of z, then applies the repairs to z so the plan can be built for the config
 * the user gets after the fixes. strict: suspects (readings of the code) fail too. */
void cli_hazards_find(struct cli_hazards *hz, struct plan_zero *z, bool strict);
/* One line per hazard, "<prefix><line>\n"; prefix "hazard " for failures, "warning" otherwise
 * (fail_prefix / warn_prefix give the exact text; NULL skips those). z: the config as written. */
void cli_hazards_print(FILE *out, const struct cli_hazards *hz, const struct plan_zero *z, bool strict,
                       const char *fail_prefix, const char *warn_prefix);
/* How many of the hazards --fix-to can repair in the JSON: device "cpu", stage 3, torch_adam
 * removed (an optimizer type or a scheduler needs the user's judgement). */
int cli_hazards_fixable(const struct cli_hazards *hz);
/* Applies those repairs to a parsed DeepSpeed config; returns how many it applied. */
int cli_hazards_fix_json(json_t *root, const struct cli_hazards *hz);
/* [{"id", "kind", "key", "deepspeed_versions", "source", "fix", "fails", "line"}, ...] */
json_t *cli_hazards_json(const struct cli_hazards *hz, const struct plan_zero *z, bool strict);

#endif
