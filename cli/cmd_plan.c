/* cli/cmd_plan.c — `ratiolab plan`: which fraction of the optimizer really goes to the CPU, and
 * how much GPU and host memory each rank needs at each stage. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/hazard_report.h"
#include "plan/plan_json.h"
#include "plan/ds_rules.h"   /* PLAN_DS_DEFAULT_VERSION_STR */

/* Where the report goes: stdout, or the temporary file of --out (renamed into place at the end). */
static FILE *out;
/* DeepSpeed hazards of the config as written (plan/ds_hazards.h): printed as warnings. */
static struct plan_hazard_set hazards;
static struct plan_zero written;

enum { O_JSON = 1, O_RATIOS, O_ALL_SUBGROUPS, O_TOLERANCE, O_OUT };
static const struct cli_opt opts[] = {
    {"ratios", "LO:HI:STEP", "one row per ratio (also a,b,c), policy and exact side by side", O_RATIOS},
    {"json", NULL, "machine-readable output (exact integers)", O_JSON},
    {"all-subgroups", NULL, "list every sub-group even when there are many", O_ALL_SUBGROUPS},
    {"out", "FILE", "write the report to FILE (atomically) instead of standard output", O_OUT},
    {"tolerance", "T", "warn when honored and requested differ by more (default 0.01)", O_TOLERANCE},
    {NULL, NULL, NULL, 0},
};

struct plan_args {
    bool json, all;
    const char *ratios;
    const char *out;
    double tol;
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct plan_args *a = ctx;
    switch (id) {
    case O_JSON: a->json = true; return 0;
    case O_RATIOS: a->ratios = v; return 0;
    case O_ALL_SUBGROUPS: a->all = true; return 0;
    case O_OUT: a->out = v; return 0;
    case O_TOLERANCE: return rl_parse_double("--tolerance", v, 0, 1, &a->tol, e);
    }
    return RL_EINTERNAL;
}

static void print_header(const struct plan_setup *c, const struct plan *p, bool verbose)
{
    const struct plan_zero *z = &p->zero;
    char head[512];
    fprintf(out, "model      %s\n", cli_model_head(c, head, sizeof head));
    fprintf(out, "DeepSpeed  %s rules: policy %s, ledger %s; stage %d, offload %s%s, dtype %s, "
           "sub_group_size %lld\n",
           RL_VERSION_S(z->ds_version), plan_policy_name(p->policy),
           plan_ledger_name(p->ledger_kind), z->stage,
           plan_offload_name(z->offload),
           z->offload == PLAN_OFFLOAD_CPU ? (z->pin_memory ? " (pinned)" : " (pageable)") : "",
           plan_dtype_name(z->dtype), (long long)z->sub_group_size);
    fprintf(out, "partition  %lld optimizer elements per rank in %d param group%s (%s %s), %d sub-group%s\n",
           (long long)p->per_rank_numel, p->n_groups, p->n_groups == 1 ? "" : "s",
           p->model->group_rule == PLAN_GROUPS_LIST ? "listed in" : "rule",
           p->model->group_rule == PLAN_GROUPS_LIST ? cli_data(p->model->group_source)
                                                    : plan_group_rule_name(p->model->group_rule),
           p->n_subgroups, p->n_subgroups == 1 ? "" : "s");
    (void)verbose;
    for (int i = 0; i < c->n_notes; i++)
        fprintf(out, "note       %s\n", c->notes[i]);
    cli_hazards_print(out, &hazards, &written, false, "warning    ", "warning    ");
    if (hazards.n_repaired)
        fprintf(out, "note       the plan below is for the config with the hazard fixes above applied\n");
}

static void print_subgroups(const struct plan *p, bool all)
{
    fprintf(out, "\nsub-groups\n  %5s %5s %14s %14s  %s\n", "index", "group", "elements", "on CPU", "device");
    int n = p->n_subgroups;
    for (int i = 0; i < n; i++) {
        if (!all && n > 24 && i == 10) {
            fprintf(out, "  ... %d more (--all-subgroups lists them)\n", n - 20);
            i = n - 10;
        }
        const struct plan_subgroup *s = &p->subgroups[i];
        fprintf(out, "  %5d %5d %14lld %14lld  %s\n", s->index, s->group, (long long)s->numel, (long long)s->cpu_numel,
               plan_subgroup_device(s));
    }
}

static void print_memory(const struct plan *p)
{
    char a[32], b[32], c[32];
    fprintf(out, "\nmemory per rank, model states (GiB = 1024^3)\n  %-24s %9s %9s %9s\n", "stage", "GPU", "host",
           "pinned");
    for (int s = 0; s < PLAN_STAGE_COUNT; s++)
        fprintf(out, "  %-24s %9s %9s %9s\n", plan_stage_name((enum plan_stage)s), cli_gib(a, sizeof a, p->stages[s].gpu_bytes),
               cli_gib(b, sizeof b, p->stages[s].cpu_bytes), cli_gib(c, sizeof c, p->stages[s].cpu_pinned_bytes));
    fprintf(out, "\nbuffers\n  %-22s %-13s %-5s %14s %16s  %s\n", "name", "device", "dtype", "elements", "bytes", "stage");
    for (int i = 0; i < p->n_buffers; i++) {
        const struct plan_buffer *bf = &p->buffers[i];
        fprintf(out, "  %-22s %-13s %-5s %14lld %16lld  %s\n", bf->name, plan_device_name(bf->device),
               plan_dtype_name(bf->dtype), (long long)bf->numel, (long long)bf->bytes, plan_stage_name(bf->stage));
    }
}

static int one(const struct plan_setup *c, const struct plan_args *a, bool verbose)
{
    struct plan p;
    struct rl_err e = {0};
    int rc = plan_setup_plan(c, -1, &p, &e);
    if (rc)
        return cli_fail("plan", &e);
    if (a->json) {
        json_t *j = plan_json(&p);
        json_object_set_new(j, "hazards", plan_hazards_json(&hazards, &written, false));
        cli_json_dumpf(cli_json_versioned(j), out, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', out);
        json_decref(j);
        plan_free(&p);
        return 0;
    }
    print_header(c, &p, verbose);
    print_subgroups(&p, a->all);
    fprintf(out, "\nratio      requested %.4f, honored %.4f (%lld of %lld elements on the CPU, %d of %d sub-groups)\n",
           p.requested_ratio, p.honored_ratio, (long long)p.cpu_numel, (long long)p.per_rank_numel,
           p.cpu_subgroups, p.n_subgroups);
    char advice[1024];
    if (plan_honor_advice(&p, a->tol, advice, sizeof advice))
        fprintf(out, "warning    %s\n", advice);
    print_memory(&p);
    plan_free(&p);
    return 0;
}

/* One row per ratio: the chosen policy and the exact policy side by side. */
static int table(const struct plan_setup *c, const struct plan_args *a, bool verbose)
{
    double *r;
    size_t n;
    struct rl_err e = {0};
    int rc = rl_parse_ratio_list("--ratios", a->ratios, 0, 1, &r, &n, &e);
    if (rc)
        return cli_fail("plan", &e);
    struct plan_setup exact = *c;
    exact.popt.policy = PLAN_POLICY_EXACT;
    json_t *arr = a->json ? json_array() : NULL;
    int64_t *gpu_pol = calloc(n, sizeof *gpu_pol), *gpu_ex = calloc(n, sizeof *gpu_ex);
    struct plan p0;
    if ((rc = plan_setup_plan(c, 0, &p0, &e))) {
        free(r);
        free(gpu_pol);
        free(gpu_ex);
        json_decref(arr);
        return cli_fail("plan", &e);
    }
    if (!a->json) {
        print_header(c, &p0, verbose);
        fprintf(out, "\n%-9s | %-36s | %-28s\n", "", plan_policy_name(p0.policy), "exact");
        fprintf(out, "%-9s | %8s %7s %9s %9s | %8s %9s %9s\n", "requested", "honored", "CPU sg", "GPU GiB", "host GiB",
               "honored", "GPU GiB", "host GiB");
    }
    plan_free(&p0);
    for (size_t i = 0; i < n; i++) {
        struct plan p, q;
        if ((rc = plan_setup_plan(c, r[i], &p, &e)))
            break;
        if ((rc = plan_setup_plan(&exact, r[i], &q, &e))) {
            plan_free(&p);
            break;
        }
        gpu_pol[i] = plan_peak_gpu_bytes(&p);
        gpu_ex[i] = plan_peak_gpu_bytes(&q);
        if (a->json) {
            json_t *row = json_object();
            json_object_set_new(row, "ratio", json_real(r[i]));
            json_object_set_new(row, "plan", plan_json(&p));
            json_object_set_new(row, "exact", plan_json(&q));
            json_array_append_new(arr, row);
        } else {
            char g1[32], h1[32], g2[32], h2[32], sg[32];
            snprintf(sg, sizeof sg, "%d/%d", p.cpu_subgroups, p.n_subgroups);
            fprintf(out, "%9.4f | %8.4f %7s %9s %9s | %8.4f %9s %9s\n", r[i], p.honored_ratio, sg,
                   cli_gib(g1, sizeof g1, plan_peak_gpu_bytes(&p)), cli_gib(h1, sizeof h1, plan_peak_cpu_bytes(&p)),
                   q.honored_ratio, cli_gib(g2, sizeof g2, plan_peak_gpu_bytes(&q)),
                   cli_gib(h2, sizeof h2, plan_peak_cpu_bytes(&q)));
        }
        plan_free(&p);
        plan_free(&q);
    }
    if (!rc && a->json) {
        json_t *root = json_object();
        json_object_set_new(root, "rows", arr);
        json_object_set_new(root, "hazards", plan_hazards_json(&hazards, &written, false));
        arr = NULL;
        cli_json_dumpf(cli_json_versioned(root), out, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', out);
        json_decref(root);
    } else if (!rc) {
        int d1 = 0, d2 = 0;
        for (size_t i = 0; i < n; i++) {
            bool new1 = true, new2 = true;
            for (size_t j = 0; j < i; j++) {
                new1 &= gpu_pol[j] != gpu_pol[i];
                new2 &= gpu_ex[j] != gpu_ex[i];
            }
            d1 += new1;
            d2 += new2;
        }
        fprintf(out, "\n%d distinct GPU footprints over %zu ratios under %s; %d under exact\n", d1, n,
               plan_policy_name(c->popt.policy), d2);
    }
    json_decref(arr);
    free(r);
    free(gpu_pol);
    free(gpu_ex);
    return rc ? cli_fail("plan", &e) : 0;
}

static int run(int argc, char **argv)
{
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct plan_args a = {.tol = PLAN_RATIO_TOLERANCE};
    struct cli_optset sets[] = {
        {"plan options", opts, on_opt, &a},
        {"model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
    };
    struct rl_err e = {0};
    int rc = cli_command_parse("plan", argc, argv, "ratiolab plan [--model NAME | --megatron-args \"...\"] [--ds-config FILE] [--ratios LO:HI:STEP] [--json]",
                 "Shows, for a model, a parallel layout and a DeepSpeed config, which fraction of each rank's\n"
                 "optimizer state really goes to the CPU (DeepSpeed counts whole sub-groups), and the GPU and\n"
                 "host memory of the model states per rank at each allocation stage.\n"
                 "Default: Megatron gpt-2.7b, TP 8 on 8 GPUs, DeepSpeed " PLAN_DS_DEFAULT_VERSION_STR " rules.",
                               sets, 2);
    if (rc != CLI_GO_ON)
        return rc;
    struct plan_setup c;
    s.report_hazards = true;
    if ((rc = cli_setup_resolve(&s, &c, &e))) {
        plan_setup_free(&c);
        return cli_fail("plan", &e);
    }
    written = c.zero;
    plan_hazards_find(&hazards, &c.zero, false);
    struct rl_outfile of = {0};
    out = stdout;
    if (a.out) {
        if ((rc = rl_outfile_open(&of, a.out, &e))) {
            plan_setup_free(&c);
            rl_err_prefix(&e, "--out");
            return cli_fail("plan", &e);
        }
        out = of.fp;
    }
    rc = a.ratios ? table(&c, &a, s.verbose) : one(&c, &a, s.verbose);
    plan_setup_free(&c);
    if (a.out) {
        if (rc) {
            rl_outfile_abort(&of);
        } else if (rl_outfile_commit(&of, &e)) {
            rl_err_prefix(&e, "--out");
            return cli_fail("plan", &e);
        }
    }
    return rc;
}

const struct cli_cmd cli_cmd_plan = {"plan", "sub-groups, honored ratio and per-rank memory for a config", run};
