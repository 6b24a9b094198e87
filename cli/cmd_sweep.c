/* cli/cmd_sweep.c — `ratiolab sweep`: one simulated step per ratio: requested and honored ratio,
 * GPU and host memory, step time, and whether it fits. The CSV starts with '#' comment lines
 * (version, model, hardware, policy, DeepSpeed version, offload device, schedule, micro-batch,
 * attention), then the column header. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/sim_opts.h"
#include "plan/ds_rules.h"   /* PLAN_DS_DEFAULT_VERSION_STR */
#include "traces/schema.h"   /* the sweep's columns and keys: one table for this writer and plots/' reader */

/* A key of the sweep's table (traces/schema.h). */
#define K(x) trace_sweep_keys[TRACE_SWEEP_K_##x]

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
    if ((rc = cli_setup_resolve(&s, &c, &e)) || (rc = cli_sim_load_hw(&sim, &c, &hw, &e))) {
        free(ratios);
        plan_setup_free(&c);
        return cli_fail("sweep", &e);
    }
    struct rl_outfile of = {0};
    if ((rc = rl_outfile_open(&of, a.out ? a.out : "-", &e))) {
        rl_err_prefix(&e, "--out");
        free(ratios);
        plan_setup_free(&c);
        return cli_fail("sweep", &e);
    }
    /* Rows are written as they are computed (memory stays one plan, whatever the count). */
    FILE *out = of.fp;
    for (size_t i = 0; !rc && i < n; i++) {
        struct plan p;
        struct sim_step_result r;
        memset(&p, 0, sizeof p);
        if ((rc = plan_setup_plan(&c, ratios[i], &p, &e)) || (rc = sim_step_run(&p, &hw, &sim.train, NULL, &r, &e))) {
            cli_sim_err(&e);
            rl_err_prefix(&e, "ratio %g", ratios[i]);
            plan_free(&p);
            break;
        }
        if (i == 0) {
            char set[256], g1[32], head[512], dsv[48];
            cli_sim_settings(&r, &sim.train, set, sizeof set);
            /* The DeepSpeed whose rules applied, and where offload_optimizer sends the states
             * (whether offload was configured at all, which ratio 0 alone does not say). */
            rl_version_str(p.zero.ds_version, dsv, sizeof dsv);
            const char *offload = p.zero.offload == PLAN_OFFLOAD_CPU    ? "cpu"
                                  : p.zero.offload == PLAN_OFFLOAD_NVME ? "nvme"
                                                                        : "none";
            if (a.json) {
                json_t *o = json_object();
                json_object_set_new(o, K(MODEL), json_string(c.model_desc));
                json_object_set_new(o, K(HARDWARE), json_string(hw.name));
                json_object_set_new(o, K(SCHEDULE), json_string(sim_schedule_name(sim.train.schedule)));
                json_object_set_new(o, K(POLICY), json_string(plan_policy_name(p.policy)));
                json_object_set_new(o, K(DS_VERSION), json_string(dsv));
                json_object_set_new(o, K(OFFLOAD), json_string(offload));
                json_object_set_new(o, K(ATTENTION), json_string(plan_attention_name(r.attention)));
                json_object_set_new(o, K(ATTENTION_ORIGIN), json_string(cli_sim_attention_origin(&sim.train, &c.model.arch)));
                /* Layout and size, for plots across sweeps (ratiolab plot scaling). */
                json_object_set_new(o, K(GPUS), json_integer(c.layout.world));
                json_object_set_new(o, K(TP), json_integer(c.layout.tp));
                json_object_set_new(o, K(PP), json_integer(c.layout.pp));
                json_object_set_new(o, K(RANK_NUMEL), json_integer(c.model.total_numel));
                char *text = cli_json_dumps(cli_json_versioned(o), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                /* the object without its closing brace, then "rows" streamed */
                size_t tl = text ? strlen(text) : 0;
                while (tl > 0 && text[tl - 1] != '}')
                    tl--;
                fprintf(out, "%.*s,\n  \"%s\": [", (int)(tl > 0 ? tl - 2 : 0), text ? text : "", K(ROWS));
                free(text);
                json_decref(o);
            } else if (a.csv) {
                /* A comment header (readers skip lines starting with '#'): what the rows are of.
                 * No time stamp: the same inputs give the same bytes. */
                fprintf(out, "# ratiolab %s sweep\n", RL_VERSION_STRING);
                fprintf(out, TRACE_SWEEP_COMMENT "%s\n", K(MODEL), c.model_desc);
                fprintf(out, TRACE_SWEEP_COMMENT "%s\n", K(SEQ_LEN), cli_seq_text(&c, head, sizeof head) + 4);
                fprintf(out, TRACE_SWEEP_COMMENT "%s: %d x %s per node, %s GiB each\n", K(HARDWARE), hw.name, hw.gpus,
                        hw.gpu_model, cli_gib(g1, sizeof g1, hw.gpu_mem_bytes));
                fprintf(out, TRACE_SWEEP_COMMENT "%s\n", K(POLICY), plan_policy_name(p.policy));
                fprintf(out, TRACE_SWEEP_COMMENT "%s\n", K(DS_VERSION), dsv);
                fprintf(out, TRACE_SWEEP_COMMENT "%s\n", K(OFFLOAD), offload);
                fprintf(out, TRACE_SWEEP_COMMENT "%s\n", K(SCHEDULE), sim_schedule_name(sim.train.schedule));
                fprintf(out, TRACE_SWEEP_COMMENT "%lld\n", K(MICRO_BATCH), (long long)r.micro_batch);
                fprintf(out, TRACE_SWEEP_COMMENT "%s (%s)\n", K(ATTENTION), plan_attention_name(r.attention),
                        cli_sim_attention_origin(&sim.train, &c.model.arch));
                fprintf(out, TRACE_SWEEP_COMMENT "%s\n", K(SETTINGS), set);
                /* The columns of traces/schema.h, then two per phase, then idle. */
                for (int k = 0; k < TRACE_SWEEP_N; k++)
                    fprintf(out, "%s%s", k ? "," : "", trace_sweep_cols[k]);
                for (int ph = 0; ph < STEP_PH_COUNT; ph++) {
                    fprintf(out, "," TRACE_SWEEP_PHASE_BUSY, sim_phase_name(ph));
                    fprintf(out, "," TRACE_SWEEP_PHASE_EXPOSED, sim_phase_name(ph));
                }
                fprintf(out, ",%s\n", TRACE_SWEEP_IDLE);
            } else {
                fprintf(out, "model      %s\nhardware   %s: %d x %s per node, %s GiB each\nschedule   %s\npolicy     %s\n"
                        "attention  %s (%s)\n\n",
                        cli_model_head(&c, head, sizeof head), hw.name, hw.gpus, hw.gpu_model, cli_gib(g1, sizeof g1, hw.gpu_mem_bytes), set,
                        plan_policy_name(p.policy), plan_attention_name(r.attention),
                        cli_sim_attention_origin(&sim.train, &c.model.arch));
                fprintf(out, "%9s %9s %10s %14s %10s %10s  %s\n", "requested", "honored", "GPU GiB", "host GiB/node",
                        "step s", "tok/s/GPU", "fits");
            }
        }
        if (a.json) {
            json_t *row = json_object();
            json_object_set_new(row, K(REQUESTED), json_real(ratios[i]));
            json_object_set_new(row, K(HONORED), json_real(p.honored_ratio));
            json_object_set_new(row, K(CPU_NUMEL), json_integer(p.cpu_numel));
            json_object_set_new(row, K(PREDICTION), sim_step_result_json(&r));
            char *text = cli_json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
            fprintf(out, "%s\n    %s", i ? "," : "", text ? text : "{}");
            free(text);
            json_decref(row);
        } else if (a.csv) {
            fprintf(out, "%.4f,%.6f,%lld,%.2f,%lld,%.2f,%.6f,%s,%.1f", ratios[i], p.honored_ratio,
                    (long long)r.gpu_total_bytes, (double)r.gpu_total_bytes / RL_GIB,
                    (long long)r.host_node_bytes, (double)r.host_node_bytes / RL_GIB,
                    (double)r.step_ns * 1e-9, r.fits_gpu && r.fits_host ? "yes" : "no",
                    r.tokens_per_s);
            /* Per phase of the critical GPU: busy and exposed seconds (predict's breakdown). */
            for (int ph = 0; ph < STEP_PH_COUNT; ph++)
                fprintf(out, ",%.6f,%.6f", (double)r.phase[ph].busy_ns * 1e-9, (double)r.phase[ph].exposed_ns * 1e-9);
            fprintf(out, ",%.6f\n", (double)r.idle_ns * 1e-9);
        } else {
            char g1[32], g2[32];
            fprintf(out, "%9.4f %9.4f %10s %14s %10.4f %10.0f  %s\n", ratios[i], p.honored_ratio,
                    cli_gib(g1, sizeof g1, r.gpu_total_bytes), cli_gib(g2, sizeof g2, r.host_node_bytes),
                    (double)r.step_ns * 1e-9, r.tokens_per_s,
                    r.fits_gpu ? (r.fits_host ? "yes" : "no (host)") : "no (GPU)");
        }
        if (!a.out)
            fflush(out);
        plan_free(&p);
    }
    if (!rc && a.json)
        fprintf(out, "\n  ]\n}\n");
    if (rc)
        rl_outfile_abort(&of);
    else if ((rc = rl_outfile_commit(&of, &e)))
        rl_err_prefix(&e, "--out");
    if (!rc) {   /* once the rows are written: a refused input stays one line */
        cli_sim_warn_layout(&c.layout);
        cli_sim_warn_defaults(&hw, &c.layout);
    }
    free(ratios);
    plan_setup_free(&c);
    return rc ? cli_fail("sweep", &e) : 0;
}

const struct cli_cmd cli_cmd_sweep = {"sweep", "simulate a range of ratios: memory, step time, fits or not", run};
