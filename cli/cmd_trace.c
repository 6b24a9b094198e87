/* cli/cmd_trace.c — `ratiolab trace diff A B`: two traces in the shared layout (predicted and
 * measured, or two measured runs) lined up by rank and phase. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "sim/step.h"
#include "validation/tdiff_json.h"
#include "validation/val.h"

enum { T_JSON = 1 };
static const struct cli_opt opts[] = {
    {"json", NULL, "machine-readable output (exact integer nanoseconds)", T_JSON},
    {NULL, NULL, NULL, 0},
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    (void)v;
    (void)e;
    (void)id;
    *(bool *)ctx = true;
    return 0;
}

static double ms(int64_t ns) { return (double)ns * 1e-6; }

static int run(int argc, char **argv)
{
    bool json = false;
    struct cli_optset sets[] = {{"trace diff options", opts, on_opt, &json}};
    static const char usage[] = "ratiolab trace diff A B [--json]";
    static const char desc[] =
        "Lines up two traces in the shared layout (ratiolab predict --trace, ratiolab run --trace;\n"
        "Chrome JSON, .gz or not) by rank and phase: each phase's busy time (any span of it running)\n"
        "and exposed time (it was the highest-priority phase running, as the simulator attributes\n"
        "it) on both sides, and the difference B - A. A trace of several steps (run --trace marks\n"
        "each) is read for its first step that is not a warm-up.";
    struct cli_rest rest;
    struct rl_err e = {0};
    int rc = cli_command_parse_rest("trace", argc, argv, usage, desc, sets, 1, &rest);
    if (rc != CLI_GO_ON)
        return rc;
    if (rest.n_pos < 1 || strcmp(rest.pos[0], "diff") != 0) {
        rl_errf(&e, RL_EINVAL, "'%s': unknown subcommand; allowed: diff (ratiolab trace diff A B)",
                rest.n_pos ? rest.pos[0] : "");
        return cli_fail("trace", &e);
    }
    if (rest.n_pos != 3 || rest.n_after) {
        rl_errf(&e, RL_EINVAL, "diff: needs exactly two traces A and B (got %d)", rest.n_pos - 1);
        return cli_fail("trace", &e);
    }
    const char *pa = rest.pos[1], *pb = rest.pos[2];
    struct val_trace_times a = {0}, b = {0};
    if ((rc = val_trace_times_read(pa, &a, &e)) || (rc = val_trace_times_read(pb, &b, &e))) {
        val_trace_times_free(&a);
        return cli_fail("trace", &e);
    }
    if (json) {
        json_t *o = val_trace_diff_json(pa, pb, &a, &b);
        char *text = cli_json_dumps(cli_json_versioned(o), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text);
        free(text);
        json_decref(o);
    } else {
        int *ranks, nr;
        val_trace_ranks_union(&a, &b, &ranks, &nr);   /* ranks of either side, in order */
        printf("A  %s\nB  %s\n(milliseconds; exposed: the highest-priority phase running; diff = B - A)\n", pa, pb);
        for (int k = 0; k < nr; k++) {
            const struct val_rank_times *x = val_trace_rank(&a, ranks[k]), *y = val_trace_rank(&b, ranks[k]);
            printf("\nrank %d%s\n", ranks[k], !x ? "  (only in B)" : !y ? "  (only in A)" : "");
            printf("  %-16s %10s %10s %10s %10s %10s %10s\n", "phase", "A busy", "A exposed", "B busy",
                   "B exposed", "diff busy", "diff exp");
            static const struct val_rank_times zero;
            const struct val_rank_times *xa = x ? x : &zero, *yb = y ? y : &zero;
            for (int p = 0; p < STEP_PH_COUNT; p++) {
                if (!xa->busy_ns[p] && !yb->busy_ns[p])
                    continue;
                printf("  %-16s %10.3f %10.3f %10.3f %10.3f %+10.3f %+10.3f\n", sim_phase_name(p),
                       ms(xa->busy_ns[p]), ms(xa->exposed_ns[p]), ms(yb->busy_ns[p]), ms(yb->exposed_ns[p]),
                       ms(yb->busy_ns[p] - xa->busy_ns[p]), ms(yb->exposed_ns[p] - xa->exposed_ns[p]));
            }
            printf("  %-16s %10s %10.3f %10s %10.3f %10s %+10.3f\n", "idle", "", ms(xa->idle_ns), "",
                   ms(yb->idle_ns), "", ms(yb->idle_ns - xa->idle_ns));
            printf("  %-16s %10s %10.3f %10s %10.3f %10s %+10.3f\n", "extent", "", ms(xa->extent_ns), "",
                   ms(yb->extent_ns), "", ms(yb->extent_ns - xa->extent_ns));
        }
        free(ranks);
    }
    val_trace_times_free(&a);
    val_trace_times_free(&b);
    return 0;
}

const struct cli_cmd cli_cmd_trace = {"trace", "trace diff A B: two traces side by side per rank and phase", run};
