/* cli/plan_report.h — a plan as sentences (shared by plan and check); as JSON: plan/plan_json.h. */
#ifndef RL_CLI_PLAN_REPORT_H
#define RL_CLI_PLAN_REPORT_H

#include <stddef.h>

#include "plan/plan.h"
#include "plan/plan_json.h"

/* When |honored - requested| > tol: the reason and the largest sub_group_size that honors the
 * ratio within tol; returns 1. Returns 0 and an empty buf when the ratio is honored. */
int cli_honor_advice(const struct plan *p, double tol, char *buf, size_t n);

#endif
