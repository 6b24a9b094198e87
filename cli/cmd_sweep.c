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

/* Where and how the rows go as sim_sweep_run computes them. */
struct sweep_out {
    const struct sweep_args *a;      /* the format and --out */
    FILE *out;                       /* the output file (standard output without --out) */
    const struct plan_setup *c;      /* the setup swept */
    const struct sim_sweep_request *q; /* the sweep */
    char set[256], seq[512];         /* the simulator's settings and the sequence length's text */
};

/* The human table's header, from the first row. */
static void print_head(const struct sweep_out *o, const struct sim_sweep_table *t)
{
    char g1[32], head[512];
    const struct hw_profile *hw = o->q->hw;
    fprintf(o->out, "model      %s\nhardware   %s: %d x %s per node, %s GiB each\nschedule   %s\npolicy     %s\n"
            "attention  %s (%s)\n\n",
            cli_model_head(o->c, head, sizeof head), hw->name, hw->gpus, hw->gpu_model,
            cli_gib(g1, sizeof g1, hw->gpu_mem_bytes), o->set, plan_policy_name(t->policy),
            plan_attention_name(t->rows[0].r.attention), cli_sim_attention_origin(o->q->train, &o->c->model.arch));
    fprintf(o->out, "%9s %9s %10s %14s %10s %10s  %s\n", "requested", "honored", "GPU GiB", "host GiB/node",
            "step s", "tok/s/GPU", "fits");
}

/* The JSON's top level, indented, without its closing brace, then the "rows" array opened. */
static int print_json_head(FILE *out, json_t *head, struct rl_err *e)
{
    char *text = head ? cli_json_dumps(cli_json_versioned(head), JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(head);
    if (!text)
        return rl_errf(e, RL_ENOMEM, "sweep: out of memory for the JSON document");
    size_t tl = strlen(text);
    while (tl > 0 && text[tl - 1] != '}')
        tl--;
    fprintf(out, "%.*s,\n  \"%s\": [", (int)(tl > 0 ? tl - 2 : 0), text, trace_sweep_keys[TRACE_SWEEP_K_ROWS]);
    free(text);
    return 0;
}

/* sim_sweep_row_fn: the header with the first row, then the row, in the format asked; flushed to
 * standard output so a long sweep shows its rows as they come. */
static int on_row(void *ctx, const struct sim_sweep_table *t, size_t i, struct rl_err *e)
{
    struct sweep_out *o = ctx;
    const struct sim_sweep_row *w = &t->rows[t->n_rows - 1];
    const struct sim_step_result *r = &w->r;
    const struct sim_sweep_text x = {.version = RL_VERSION_STRING, .seq = o->seq + 4,
                                     .attention_origin = cli_sim_attention_origin(o->q->train, &o->c->model.arch),
                                     .settings = o->set};
    if (i == 0) {
        cli_sim_settings(r, o->q->train, o->set, sizeof o->set);
        cli_seq_text(o->c, o->seq, sizeof o->seq);
        if (o->a->json && print_json_head(o->out, sim_sweep_json_head(o->q, t, &x), e))
            return e->code;
        if (o->a->csv)
            sim_sweep_csv_head(o->out, o->q, t, &x);
        else if (!o->a->json)
            print_head(o, t);
    }
    if (o->a->json) {
        json_t *row = sim_sweep_json_row(w);
        char *text = row ? cli_json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(row);
        if (!text)
            return rl_errf(e, RL_ENOMEM, "sweep: out of memory for a JSON row");
        fprintf(o->out, "%s\n    %s", i ? "," : "", text);
        free(text);
    } else if (o->a->csv) {
        sim_sweep_csv_row(o->out, w);
    } else {
        char g1[32], g2[32];
        fprintf(o->out, "%9.4f %9.4f %10s %14s %10.4f %10.0f  %s\n", w->requested, w->honored,
                cli_gib(g1, sizeof g1, r->gpu_total_bytes), cli_gib(g2, sizeof g2, r->host_node_bytes),
                (double)r->step_ns * 1e-9, r->tokens_per_s,
                r->fits_gpu ? (r->fits_host ? "yes" : "no (host)") : "no (GPU)");
    }
    if (!o->a->out)
        fflush(o->out);
    return 0;
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
    /* Rows are written as they are computed (memory stays one plan and one row, whatever the count). */
    struct sweep_out o = {.a = &a, .out = of.fp, .c = &c};
    const struct sim_sweep_request q = {.setup = &c, .hw = &hw, .train = &sim.train, .ratios = ratios, .n_ratios = n,
                                        .on_row = on_row, .ctx = &o, .stream_only = true};
    o.q = &q;
    if ((rc = sim_sweep_run(&q, &t, &e))) {
        cli_sim_err(&e);
        rl_outfile_abort(&of);
        goto done;
    }
    if (a.json)
        fprintf(of.fp, "\n  ]\n}\n");
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
