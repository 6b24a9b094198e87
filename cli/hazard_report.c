/* cli/hazard_report.c — DeepSpeed hazards as lines (see hazard_report.h). */
#include "cli/hazard_report.h"

void cli_hazards_print(FILE *out, const struct plan_hazard_set *hz, const struct plan_zero *z, bool strict,
                       const char *fail_prefix, const char *warn_prefix)
{
    char line[1024];
    for (int i = 0; i < hz->n; i++) {
        const char *prefix = plan_hazard_fails(hz->h[i], strict) ? fail_prefix : warn_prefix;
        if (!prefix)
            continue;
        plan_hazard_line(hz->h[i], z, line, sizeof line);
        fprintf(out, "%s%s\n", prefix, line);
    }
}
