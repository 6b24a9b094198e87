/* plan/plan_json.h — a plan as JSON: the object `ratiolab plan --json` prints for one ratio
 * (docs/json-plan.md), built here next to struct plan so every writer of a plan writes the same
 * fields. The caller owns the object; printing (schema_version, shortest reals) is the writer's. */
#ifndef RL_PLAN_PLAN_JSON_H
#define RL_PLAN_PLAN_JSON_H

#include <jansson.h>

#include "plan/plan.h"

/* Every field of the plan: exact integers for elements and bytes. */
json_t *plan_json(const struct plan *p);
/* Sets "requested_ratio" and "honored_ratio" of p on o: every command's JSON names the two alike. */
void plan_json_ratio(json_t *o, const struct plan *p);
/* "gpu", "cpu" or "split" (the exact policy splits one sub-group). */
const char *plan_subgroup_device(const struct plan_subgroup *s);

#endif
