/* plan/ds_fix.h — the DeepSpeed hazards of one config judged for `check` (fails on them) and
 * `plan` (warns), and the fixes `check --fix-to` writes into the config's JSON: the hazards'
 * mechanical repairs and check's sub_group_size and ratio (sim/check.h). */
#ifndef RL_PLAN_DS_FIX_H
#define RL_PLAN_DS_FIX_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "plan/ds_hazards.h"

/* The hazards of one config, found before the planner's repairs are assumed. */
struct plan_hazard_set {
    const struct plan_hazard *h[PLAN_HAZARDS_MAX];   /* matching table entries, table order */
    int n;                                           /* how many */
    int n_fail;                                      /* those that fail `check` (suspects: only strict) */
    int n_repaired;                                  /* repairs assumed for the analysis (device, stage) */
};

/* Whether h fails `check`; strict: suspects (readings of the code) fail too. */
bool plan_hazard_fails(const struct plan_hazard *h, bool strict);
/* Finds the hazards of z, then applies the repairs to z so the plan can be built for the config
 * the user gets after the fixes. */
void plan_hazards_find(struct plan_hazard_set *hz, struct plan_zero *z, bool strict);
/* [{"id", "kind", "key", "deepspeed_versions", "source", "fix", "fails", "line"}, ...];
 * z: the config as written. */
json_t *plan_hazards_json(const struct plan_hazard_set *hz, const struct plan_zero *z, bool strict);
/* How many of the hazards the JSON fix can repair: device "cpu", stage 3, torch_adam removed (an
 * optimizer type or a scheduler needs the user's judgement). */
int plan_hazards_fixable(const struct plan_hazard_set *hz);
/* Applies those repairs to a parsed DeepSpeed config; returns how many it applied. */
int plan_hazards_fix_json(json_t *root, const struct plan_hazard_set *hz);
/* Writes zero_optimization.sub_group_size (when > 0) and offload_optimizer.ratio (when >= 0, with
 * device "cpu" when the config has no offload_optimizer block) into a parsed config. */
void plan_zero_fix_json(json_t *root, int64_t sub_group_size, double ratio);
/* The same repairs and fixes as edits of the config's text (plan/json_edit.h): every other byte
 * kept, so `git diff` shows the fix alone. *out (malloc'd) is the fixed text, checked to parse
 * to exactly what plan_hazards_fix_json and plan_zero_fix_json make of the config; RL_EINVAL when
 * the text is not a JSON object. */
int plan_fix_text(const char *text, const struct plan_hazard_set *hz, int64_t sub_group_size, double ratio,
                  char **out, struct rl_err *e);
/* The fixed config `check --fix-to` writes, into *out (malloc'd): plan_fix_text's edits when they
 * place, else the parsed config with the same repairs, dumped whole (4-space indent, reals in 15
 * digits when every real reads back from them, else 17) with a final newline. A text that does not
 * parse is RL_EINVAL ("fix: WHAT cannot be rewritten: line N: ..."; what names the config). */
int plan_fix_config(const char *text, const char *what, const struct plan_hazard_set *hz, int64_t sub_group_size,
                    double ratio, char **out, struct rl_err *e);
/* plan_fix_config's text written to dst atomically (rl_outfile: nothing is left there on an error);
 * an error writing it begins "fix_to: ". */
int plan_fix_write(const char *text, const char *what, const struct plan_hazard_set *hz, int64_t sub_group_size,
                   double ratio, const char *dst, struct rl_err *e);

#endif
