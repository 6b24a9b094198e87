/* cli/cmd_sweep.c — `ratiolab sweep`: one simulated step per ratio: requested and honored ratio,
 * GPU and host memory, step time, and whether it fits. The runs, the CSV (its '#' comment lines:
 * version, model, hardware, policy, DeepSpeed version, offload device, schedule, micro-batch,
 * attention; then the column header) and the JSON document are sim/sweep.c; this file parses,
 * calls, prints the human table and the JSON's layout, and writes where it is told. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/sim_opts.h"
#include "plan/ds_rules.h"   /* PLAN_DS_DEFAULT_VERSION_STR */
#include "sim/sweep.h"
#include "traces/schema.h"   /* the "rows" key of the sweep's JSON */

enum { W_RATIOS = 1, W_CSV, W_JSON, W_OUT };
static const struct cli_opt opts[] = {
    {"ratios", "LO:HI:STEP", "ratios to simulate (also a,b,c; default 0:1:0.05)", W_RATIOS},
    {"csv", "[FILE]", "CSV output (to FILE when given, - for standard output, as --out)", W_CSV},
    {"json", "[FILE]", "JSON output, exact integers (to FILE when given, as --out)", W_JSON},
    {"out", "FILE", "write to FILE (atomically) instead of standard output", W_OUT},
    {NULL, NULL, NULL, 0},
};

struct sweep_args {
    const char *ratios;  /* --ratios */
    bool csv, json;      /* output format */
    const char *out;     /* --out FILE, NULL: standard output */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct sweep_args *a = ctx;
    switch (id) {
    case W_RATIOS: a->ratios = v; return 0;
    case W_CSV:
    case W_JSON:
        if (id == W_CSV)
            a->csv = true;
        else
            a->json = true;
        if (v && a->out && strcmp(v, a->out) != 0)
            return rl_errf(e, RL_EINVAL, "--%s %s and --out %s: give one output", id == W_CSV ? "csv" : "json", v, a->out);
        if (v)
            a->out = v;
        return 0;
    case W_OUT:
        if (a->out && strcmp(v, a->out) != 0)
            return rl_errf(e, RL_EINVAL, "--out %s and --csv/--json %s: give one output", v, a->out);
        a->out = v;
        return 0;
    }
    return RL_EINTERNAL;
}

/* The human table: the header, then a row per ratio. */
static void print_table(FILE *out, const struct plan_setup *c, const struct sim_sweep_request *q,
                        const struct sim_sweep_table *t, const char *set)
{
    char g1[32], g2[32], head[512];
    const struct hw_profile *hw = q->hw;
    fprintf(out, "model      %s\nhardware   %s: %d x %s per node, %s GiB each\nschedule   %s\npolicy     %s\n"
            "attention  %s (%s)\n\n",
            cli_model_head(c, head, sizeof head), hw->name, hw->gpus, hw->gpu_model, cli_gib(g1, sizeof g1, hw->gpu_mem_bytes), set,
            plan_policy_name(t->policy), plan_attention_name(t->rows[0].r.attention),
            cli_sim_attention_origin(q->train, &c->model.arch));
    fprintf(out, "%9s %9s %10s %14s %10s %10s  %s\n", "requested", "honored", "GPU GiB", "host GiB/node",
            "step s", "tok/s/GPU", "fits");
    for (size_t i = 0; i < t->n_rows; i++) {
        const struct sim_step_result *r = &t->rows[i].r;
        fprintf(out, "%9.4f %9.4f %10s %14s %10.4f %10.0f  %s\n", t->rows[i].requested, t->rows[i].honored,
                cli_gib(g1, sizeof g1, r->gpu_total_bytes), cli_gib(g2, sizeof g2, r->host_node_bytes),
                (double)r->step_ns * 1e-9, r->tokens_per_s,
                r->fits_gpu ? (r->fits_host ? "yes" : "no (host)") : "no (GPU)");
    }
}

/* The JSON document of sim_sweep_json, its header indented and each row on a line of its own. */
static void print_json(FILE *out, json_t *doc)
{
    json_t *rows = json_incref(json_object_get(doc, trace_sweep_keys[TRACE_SWEEP_K_ROWS]));
    json_object_del(doc, trace_sweep_keys[TRACE_SWEEP_K_ROWS]);
    char *text = cli_json_dumps(cli_json_versioned(doc), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    /* the object without its closing brace, then "rows" */
    size_t tl = text ? strlen(text) : 0;
    while (tl > 0 && text[tl - 1] != '}')
        tl--;
    fprintf(out, "%.*s,\n  \"%s\": [", (int)(tl > 0 ? tl - 2 : 0), text ? text : "", trace_sweep_keys[TRACE_SWEEP_K_ROWS]);
    free(text);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        char *row = cli_json_dumps(json_array_get(rows, i), JSON_COMPACT | JSON_PRESERVE_ORDER);
        fprintf(out, "%s\n    %s", i ? "," : "", row ? row : "{}");
        free(row);
    }
    fprintf(out, "\n  ]\n}\n");
    json_decref(rows);
}

static int run(int argc, char **argv)
{
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct cli_sim sim;
    cli_sim_init(&sim);
    struct sweep_args a = {.ratios = "0:1:0.05"};
    struct cli_optset sets[] = {
        {"sweep options", opts, on_opt, &a},
        {"hardware and training", cli_sim_opts, cli_sim_opt, &sim},
        {"model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
    };
    struct rl_err e = {0};
    int rc = cli_command_parse("sweep", argc, argv, "ratiolab sweep [--ratios LO:HI:STEP] [--hw NAME|FILE] [--csv | --json] [model options]",
                 "Simulates one step per ratio: requested and honored ratio, predicted GPU memory per rank\n"
                 "(NVML-visible), host memory per node, step time, and whether it fits.\n"
                 "Default: Megatron gpt-2.7b, TP 8 on 8 x V100 (dgx1-v100), DeepSpeed " PLAN_DS_DEFAULT_VERSION_STR " rules.",
                               sets, 3);
    if (rc != CLI_GO_ON)
        return rc;
    if (a.csv && a.json) {
        rl_errf(&e, RL_EINVAL, "--csv and --json: give at most one");
        return cli_fail("sweep", &e);
    }
    double *ratios = NULL;
    size_t n = 0;
    if ((rc = rl_parse_ratio_list("--ratios", a.ratios, 0, 1, &ratios, &n, &e)))
        return cli_fail("sweep", &e);
    struct plan_setup c;
    struct hw_profile hw;
    struct sim_sweep_table t = {0};
    struct rl_outfile of = {0};
    if ((rc = cli_setup_resolve(&s, &c, &e)) || (rc = cli_sim_load_hw(&sim, &c, &hw, &e)))
        goto done;
    if ((rc = rl_outfile_open(&of, a.out ? a.out : "-", &e))) {
        rl_err_prefix(&e, "--out");
        goto done;
    }
    const struct sim_sweep_request q = {.setup = &c, .hw = &hw, .train = &sim.train, .ratios = ratios, .n_ratios = n};
    if ((rc = sim_sweep_run(&q, &t, &e))) {
        cli_sim_err(&e);
        rl_outfile_abort(&of);
        goto done;
    }
    char set[256], seq[512];
    cli_sim_settings(&t.rows[0].r, &sim.train, set, sizeof set);
    const struct sim_sweep_text x = {.version = RL_VERSION_STRING, .seq = cli_seq_text(&c, seq, sizeof seq) + 4,
                                     .attention_origin = cli_sim_attention_origin(&sim.train, &c.model.arch),
                                     .settings = set};
    if (a.json) {
        json_t *doc = sim_sweep_json(&q, &t, &x);
        if (!doc) {
            rc = rl_errf(&e, RL_ENOMEM, "sweep: out of memory for the JSON document");
            rl_outfile_abort(&of);
            goto done;
        }
        print_json(of.fp, doc);
        json_decref(doc);
    } else if (a.csv) {
        sim_sweep_write_csv(of.fp, &q, &t, &x);
    } else {
        print_table(of.fp, &c, &q, &t, set);
    }
    if ((rc = rl_outfile_commit(&of, &e)))
        rl_err_prefix(&e, "--out");
    if (!rc) {   /* once the rows are written: a refused input stays one line */
        cli_sim_warn_layout(&c.layout);
        cli_sim_warn_defaults(&hw, &c.layout);
    }
done:
    sim_sweep_free(&t);
    free(ratios);
    plan_setup_free(&c);
    return rc ? cli_fail("sweep", &e) : 0;
}

const struct cli_cmd cli_cmd_sweep = {"sweep", "simulate a range of ratios: memory, step time, fits or not", run};
