/* cli/plan_report.h — a plan as JSON and as sentences (shared by plan, check and sweep). */
#ifndef RL_CLI_PLAN_REPORT_H
#define RL_CLI_PLAN_REPORT_H

#include <jansson.h>

#include "plan/plan.h"

/* Every field of the plan: exact integers for elements and bytes. */
json_t *cli_plan_json(const struct plan *p);
/* "gpu", "cpu" or "split" (the exact policy splits one sub-group). */
const char *cli_subgroup_device(const struct plan_subgroup *s);
/* The placement rule of the plan's policy with its numbers filled in. */
void cli_rule_sentence(const struct plan *p, char *buf, size_t n);
/* When |honored - requested| > tol: the reason and the largest sub_group_size that honors the
 * ratio within tol; returns 1. Returns 0 and an empty buf when the ratio is honored. */
int cli_honor_advice(const struct plan *p, double tol, char *buf, size_t n);

#endif
