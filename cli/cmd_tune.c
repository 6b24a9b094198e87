/* cli/cmd_tune.c — `ratiolab tune`: the fastest ratio whose predicted GPU memory (with a stated
 * reserve) fits, and under a DeepSpeed policy the sub_group_size that makes DeepSpeed honor it. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/sim_opts.h"

enum { T_GPU_MEM = 1, T_RATIOS, T_TOL, T_JSON };
static const struct cli_opt opts[] = {
    {"gpu-mem", "BYTES", "GPU memory per GPU to fit in, e.g. 16GiB (default: the profile's)", T_GPU_MEM},
    {"ratios", "LO:HI:STEP", "candidate ratios (default 0:1:0.01)", T_RATIOS},
    {"tolerance", "T", "how close DeepSpeed's honored ratio must come (default 0.01)", T_TOL},
    {"json", NULL, "JSON output (exact integers)", T_JSON},
    {NULL, NULL, NULL, 0},
};

struct tune_args {
    int64_t gpu_mem;     /* --gpu-mem, 0: the profile's */
    const char *ratios;  /* --ratios, the candidates */
    double tol;          /* --tolerance on the honored ratio */
    bool json;           /* --json */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct tune_args *a = ctx;
    switch (id) {
    case T_GPU_MEM: return rl_parse_bytes("--gpu-mem", v, &a->gpu_mem, e);
    case T_RATIOS: a->ratios = v; return 0;
    case T_TOL: return rl_parse_double("--tolerance", v, 0, 1, &a->tol, e);
    case T_JSON: a->json = true; return 0;
    }
    return RL_EINTERNAL;
}

/* One candidate: the plan's ratio, what it fits in and how fast it is. */
struct cand {
    double requested, honored;   /* ratios */
    int n_subgroups;             /* sub-groups of its plan */
    int64_t sub_group_size;      /* the plan's sub_group_size */
    struct sim_step_result r;    /* the prediction */
    bool valid;                  /* filled */
};

/* Simulates every ratio under the context's policy; returns the index of the fastest one that
 * fits (ties: the smaller ratio), -1 when none fits. *min_gpu gets the smallest GPU total seen. */
static int best_of(const struct cli_ctx *c, const struct sim_hw *hw, const struct sim_train *t, const double *ratios,
                   size_t n, struct cand *out, int64_t *min_gpu, struct rl_err *e, int *rc)
{
    int best = -1;
    *min_gpu = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        struct plan p;
        memset(&p, 0, sizeof p);
        if ((*rc = cli_ctx_plan(c, ratios[i], &p, e)) || (*rc = sim_step_run(&p, hw, t, NULL, &out[i].r, e))) {
            rl_err_prefix(e, "ratio %g", ratios[i]);
            plan_free(&p);
            return -1;
        }
        out[i].requested = ratios[i];
        out[i].honored = p.honored_ratio;
        out[i].n_subgroups = p.n_subgroups;
        out[i].sub_group_size = p.zero.sub_group_size;
        out[i].valid = true;
        plan_free(&p);
        if (out[i].r.gpu_total_bytes < *min_gpu)
            *min_gpu = out[i].r.gpu_total_bytes;
        if (out[i].r.fits_gpu && out[i].r.fits_host && (best < 0 || out[i].r.step_ns < out[best].r.step_ns))
            best = (int)i;
    }
    return best;
}

static json_t *cand_json(const struct cand *k)
{
    json_t *o = json_object();
    json_object_set_new(o, "requested_ratio", json_real(k->requested));
    json_object_set_new(o, "honored_ratio", json_real(k->honored));
    json_object_set_new(o, "sub_group_size", json_integer(k->sub_group_size));
    json_object_set_new(o, "sub_groups", json_integer(k->n_subgroups));
    json_object_set_new(o, "prediction", cli_sim_result_json(&k->r));
    return o;
}

static void print_cand(const char *label, const struct cand *k)
{
    char g1[32], g2[32];
    printf("  %s\n    ratio requested %.4f, honored %.4f: step %.4f s, GPU %s GiB per rank, host %s GiB per node\n",
           label, k->requested, k->honored, (double)k->r.step_ns * 1e-9, cli_gib(g1, sizeof g1, k->r.gpu_total_bytes),
           cli_gib(g2, sizeof g2, k->r.host_node_bytes));
}

static int run(int argc, char **argv)
{
    struct cli_setup s;
    cli_setup_init(&s);
    struct cli_sim sim;
    cli_sim_init(&sim);
    struct tune_args a = {.ratios = "0:1:0.01", .tol = 0.01};
    struct cli_optset sets[] = {
        {"tune options", opts, on_opt, &a},
        {"hardware and training", cli_sim_opts, cli_sim_opt, &sim},
        {"model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
    };
    struct rl_err e = {0};
    int rc = cli_command_parse("tune", argc, argv, "ratiolab tune [--gpu-mem 16GiB] [--hw NAME|FILE] [--json] [model options]",
                 "Finds the fastest ratio whose predicted GPU memory per rank (model states, activations,\n"
                 "gathered parameters and a stated reserve for the CUDA context, NCCL and the caching\n"
                 "allocator) fits in --gpu-mem, first with the ratio honored exactly, then, under a\n"
                 "DeepSpeed policy, the sub_group_size that makes DeepSpeed honor it (its ratio counts\n"
                 "whole sub-groups). Exit 1 when no candidate fits.",
                               sets, 3);
    if (rc >= 0)
        return rc;
    double *ratios = NULL;
    size_t n = 0;
    if ((rc = rl_parse_ratio_list("--ratios", a.ratios, 0, 1, &ratios, &n, &e)))
        return cli_fail("tune", &e);
    struct cli_ctx c;
    struct sim_hw hw;
    if ((rc = cli_setup_resolve(&s, &c, &e)) || (rc = cli_sim_load_hw(&sim, &c, &hw, &e))) {
        free(ratios);
        cli_ctx_free(&c);
        return cli_fail("tune", &e);
    }
    if (a.gpu_mem > 0)
        hw.gpu_mem_bytes = a.gpu_mem;
    struct cand *exact = calloc(n, sizeof *exact), *ds = calloc(n, sizeof *ds);
    struct cand fix = {0};
    int64_t sgs = 0, min_exact = 0, min_ds = 0;
    int b_exact = -1, b_ds = -1;
    bool ds_policy = c.popt.policy != PLAN_POLICY_EXACT;
    bool honored_now = false;   /* the current sub_group_size already honors the best ratio */
    if (!exact || !ds) {
        rc = rl_errf(&e, RL_ENOMEM, "tune: out of memory for %zu ratios", n);
        goto out;
    }
    struct cli_ctx cx = c;   /* shallow: only read by cli_ctx_plan */
    cx.popt.policy = PLAN_POLICY_EXACT;
    b_exact = best_of(&cx, &hw, &sim.train, ratios, n, exact, &min_exact, &e, &rc);
    if (rc)
        goto out;
    if (ds_policy) {
        b_ds = best_of(&c, &hw, &sim.train, ratios, n, ds, &min_ds, &e, &rc);
        if (rc)
            goto out;
        if (b_exact >= 0) {
            /* The sub_group_size that makes DeepSpeed honor the best exact ratio. */
            struct plan p;
            memset(&p, 0, sizeof p);
            if ((rc = cli_ctx_plan(&c, exact[b_exact].requested, &p, &e)))
                goto out;
            bool honored = fabs(p.honored_ratio - p.requested_ratio) <= a.tol;
            sgs = honored ? 0 : plan_max_honoring_sub_group_size(&p, a.tol);
            honored_now = honored;
            plan_free(&p);
            if (sgs > 0) {
                struct cli_ctx cs = c;
                cs.zero.sub_group_size = sgs;
                struct plan q;
                memset(&q, 0, sizeof q);
                if ((rc = cli_ctx_plan(&cs, exact[b_exact].requested, &q, &e)) ||
                    (rc = sim_step_run(&q, &hw, &sim.train, NULL, &fix.r, &e))) {
                    plan_free(&q);
                    goto out;
                }
                fix.requested = exact[b_exact].requested;
                fix.honored = q.honored_ratio;
                fix.n_subgroups = q.n_subgroups;
                fix.sub_group_size = sgs;
                fix.valid = true;
                plan_free(&q);
            }
        }
    }
    char g1[32], g2[32], set[256];
    const struct sim_step_result *any = &exact[0].r;
    cli_sim_settings(any, &sim.train, set, sizeof set);
    if (a.json) {
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(c.model_desc));
        json_object_set_new(o, "hardware", json_string(hw.name));
        json_object_set_new(o, "gpu_mem_bytes", json_integer(hw.gpu_mem_bytes));
        json_object_set_new(o, "reserve", json_string(sim.train.gpu_reserve_bytes >= 0 ? "--reserve" : "profile"));
        json_object_set_new(o, "schedule", json_string(sim_schedule_name(sim.train.schedule)));
        json_object_set_new(o, "policy", json_string(plan_policy_name(c.popt.policy)));
        json_object_set_new(o, "best_exact", b_exact >= 0 ? cand_json(&exact[b_exact]) : json_null());
        if (ds_policy) {
            json_object_set_new(o, "best_current_sub_group_size", b_ds >= 0 ? cand_json(&ds[b_ds]) : json_null());
            json_object_set_new(o, "best_with_sub_group_size", fix.valid ? cand_json(&fix) : json_null());
        }
        json_object_set_new(o, "min_gpu_bytes", json_integer(min_exact));
        char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text);
        free(text);
        json_decref(o);
    } else {
        printf("model      %s\nhardware   %s: %s GiB per GPU to fit in\nschedule   %s\n", c.model_desc, hw.name,
               cli_gib(g1, sizeof g1, hw.gpu_mem_bytes), set);
        if (sim.train.gpu_reserve_bytes >= 0)
            printf("reserve    %s GiB per GPU outside the allocator (--reserve)\n",
                   cli_gib(g2, sizeof g2, sim.train.gpu_reserve_bytes));
        else
            printf("reserve    CUDA context %s GiB + NCCL buffers per communicator + caching allocator (2 MiB "
                   "rounding, %.0f %% of activations and gathered parameters) (profile %s; --reserve overrides)\n",
                   cli_gib(g2, sizeof g2, hw.context_bytes), hw.allocator_overhead * 100, hw.name);
        printf("candidates %zu ratios (%s)\n\n", n, a.ratios);
        if (b_exact >= 0)
            print_cand("fastest that fits, ratio honored exactly (policy exact):", &exact[b_exact]);
        if (ds_policy) {
            char lbl[160];
            snprintf(lbl, sizeof lbl, "fastest that fits under %s with the current sub_group_size %lld:",
                     plan_policy_name(c.popt.policy), (long long)c.zero.sub_group_size);
            if (b_ds >= 0)
                print_cand(lbl, &ds[b_ds]);
            else
                printf("  %s\n    nothing fits\n", lbl);
            if (fix.valid) {
                snprintf(lbl, sizeof lbl, "the best exact ratio under %s with sub_group_size %lld:",
                         plan_policy_name(c.popt.policy), (long long)sgs);
                print_cand(lbl, &fix);
                printf("\nto get ratio %.4f from DeepSpeed: \"zero_optimization\": {\"sub_group_size\": %lld, "
                       "\"offload_optimizer\": {\"ratio\": %.4f}} (%d sub-groups, honored %.4f)%s\n",
                       fix.requested, (long long)sgs, fix.requested, fix.n_subgroups, fix.honored,
                       fix.r.fits_gpu ? "" : " -- but then it does not fit");
            } else if (b_exact >= 0 && honored_now) {
                printf("\n%s honors ratio %.4f within %.4f with the current sub_group_size %lld\n",
                       plan_policy_name(c.popt.policy), exact[b_exact].requested, a.tol, (long long)c.zero.sub_group_size);
            } else if (b_exact >= 0) {
                printf("\nno sub_group_size makes %s honor ratio %.4f within %.4f\n", plan_policy_name(c.popt.policy),
                       exact[b_exact].requested, a.tol);
            }
        }
    }
    if (b_exact < 0) {
        fprintf(stderr, "ratiolab tune: no ratio fits: the smallest prediction is %s GiB per GPU, above %s GiB "
                        "(--gpu-mem); try more GPUs, activation checkpointing or a smaller micro-batch\n",
                cli_gib(g1, sizeof g1, min_exact), cli_gib(g2, sizeof g2, hw.gpu_mem_bytes));
        rc = 1;
    }
out:
    free(exact);
    free(ds);
    free(ratios);
    cli_ctx_free(&c);
    if (rc < 0)
        return cli_fail("tune", &e);
    return rc;
}

const struct cli_cmd cli_cmd_tune = {"tune", "the fastest ratio that fits in GPU memory, and the sub_group_size to get it", run};
