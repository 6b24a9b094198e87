/* cli/plan_report.c — a plan as human text, shared by `plan` and `check` (its JSON is plan/plan_json.c). */
#include <math.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/plan_report.h"

int cli_honor_advice(const struct plan *p, double tol, char *buf, size_t n)
{
    if (plan_honors(p, tol)) {
        buf[0] = 0;
        return 0;
    }
    char rule[256];
    plan_rule_sentence(p, rule, sizeof rule);
    int64_t sgs = p->policy == PLAN_POLICY_EXACT ? 0 : plan_max_honoring_sub_group_size(p, tol);
    int used = snprintf(buf, n, "honored ratio %.4f differs from requested %.4f by %.1f points: %d sub-group%s "
                        "(sub_group_size %lld); %s.",
                        p->honored_ratio, p->requested_ratio, 100 * fabs(p->honored_ratio - p->requested_ratio),
                        p->n_subgroups, p->n_subgroups == 1 ? "" : "s", (long long)p->zero.sub_group_size, rule);
    if ((size_t)used >= n)
        return 1;
    if (sgs > 0) {
        double h;
        int k;
        plan_honored_for(p, sgs, p->requested_ratio, &h, &k);
        snprintf(buf + used, n - (size_t)used,
                 " Fix: sub_group_size %lld (the largest found) gives %d sub-groups and honored ratio %.4f.",
                 (long long)sgs, k, h);
    } else if (p->policy != PLAN_POLICY_EXACT) {
        double h;
        int64_t c = plan_closest_sub_group_size(p, &h);
        snprintf(buf + used, n - (size_t)used,
                 " No sub_group_size honors it within %.1f points: the rule counts sub-groups, not elements, and "
                 "tensors are never split; the closest is sub_group_size %lld (honored %.4f), or use a ratio "
                 "the sub-groups allow.", 100 * tol, (long long)c, h);
    }
    return 1;
}
