/* cli/cmd_check.c — `ratiolab check`: a CI gate that fails (exit 1) when a DeepSpeed config will
 * not honor its offload ratio, or when the model states do not fit a GPU, and prints the fix. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/hazard_report.h"
#include "cli/plan_report.h"

enum { O_TOL = 1, O_GPU_MEM, O_FIX_TO, O_JSON, O_QUIET, O_STRICT };
static const struct cli_opt opts[] = {
    {"tolerance", "T", "allowed |honored - requested| (default 0.02)", O_TOL},
    {"gpu-mem", "SIZE", "also check that the model states of one rank fit, e.g. 80GiB", O_GPU_MEM},
    {"fix-to", "FILE", "on failure, write a copy of the config with the fix applied (atomically)", O_FIX_TO},
    {"json", NULL, "machine-readable verdict", O_JSON},
    {"quiet", NULL, "print only failures", O_QUIET},
    {"strict", NULL, "also fail on suspected DeepSpeed hazards (readings of its code not yet seen in a run)", O_STRICT},
    {NULL, NULL, NULL, 0},
};

struct check_args {
    double tol;
    int64_t gpu_mem;   /* bytes, 0: no memory check */
    const char *fix_to;
    bool json, quiet;
    bool strict;       /* --strict: suspected hazards fail too */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct check_args *a = ctx;
    switch (id) {
    case O_TOL: return rl_parse_double("--tolerance", v, 0, 1, &a->tol, e);
    case O_GPU_MEM:
        if (rl_parse_bytes("--gpu-mem", v, &a->gpu_mem, e))
            return RL_EINVAL;
        if (a->gpu_mem <= 0)
            return rl_errf(e, RL_EINVAL, "--gpu-mem: '%s' must be larger than 0", v);
        return 0;
    case O_FIX_TO: a->fix_to = v; return 0;
    case O_JSON: a->json = true; return 0;
    case O_QUIET: a->quiet = true; return 0;
    case O_STRICT: a->strict = true; return 0;
    }
    return RL_EINTERNAL;
}

/* The verdict and the fix. */
struct verdict {
    bool ratio_ok, memory_ok;
    double requested, honored;
    int n_subgroups;
    int64_t sub_group_size;     /* in the config */
    int64_t gpu_bytes;          /* model states per rank, ledger peak */
    int64_t fix_sgs;            /* 0: no change needed or none exists */
    bool fix_sgs_none;          /* no sub_group_size can honor the ratio */
    int64_t closest_sgs;        /* then: the sub_group_size that comes closest */
    double closest_honored;     /* and the ratio it honors */
    double fix_ratio;           /* < 0: no change */
    int64_t fix_gpu_bytes;      /* with the fix */
    bool fix_fits;              /* the memory fix exists */
    struct cli_hazards hz;      /* DeepSpeed hazards of the config (plan/ds_hazards.h) */
    struct plan_zero written;   /* the config as written, before the hazards' repairs */
};

/* Builds a plan for (ratio, sgs) and returns the honoring sgs for that ratio (the config's own
 * when it already honors), the resulting honored ratio and the GPU peak. */
static int try_ratio(const struct cli_ctx *c, double ratio, int64_t sgs, double tol, int64_t *sgs_out,
                     double *honored, int64_t *gpu, struct rl_err *e)
{
    struct cli_ctx cc = *c;
    cc.zero.sub_group_size = sgs;
    struct plan p;
    int rc = cli_ctx_plan(&cc, ratio, &p, e);
    if (rc)
        return rc;
    *sgs_out = sgs;
    if (fabs(p.honored_ratio - p.requested_ratio) > tol && p.policy != PLAN_POLICY_EXACT) {
        int64_t s = plan_max_honoring_sub_group_size(&p, tol);
        if (s > 0) {
            plan_free(&p);
            cc.zero.sub_group_size = s;
            if ((rc = cli_ctx_plan(&cc, ratio, &p, e)))
                return rc;
            *sgs_out = s;
        }
    }
    *honored = p.honored_ratio;
    *gpu = plan_peak_gpu_bytes(&p);
    plan_free(&p);
    return 0;
}

static int judge(const struct cli_ctx *c, const struct check_args *a, struct verdict *v, struct rl_err *e)
{
    memset(v, 0, sizeof *v);
    v->fix_ratio = -1;
    struct plan p;
    int rc = cli_ctx_plan(c, -1, &p, e);
    if (rc)
        return rc;
    v->requested = p.requested_ratio;
    v->honored = p.honored_ratio;
    v->n_subgroups = p.n_subgroups;
    v->sub_group_size = p.zero.sub_group_size;
    v->gpu_bytes = plan_peak_gpu_bytes(&p);
    v->ratio_ok = fabs(p.honored_ratio - p.requested_ratio) <= a->tol;
    v->memory_ok = a->gpu_mem == 0 || v->gpu_bytes <= a->gpu_mem;
    if (!v->ratio_ok) {
        v->fix_sgs = plan_max_honoring_sub_group_size(&p, a->tol);
        v->fix_sgs_none = v->fix_sgs == 0;
        if (v->fix_sgs_none)
            v->closest_sgs = plan_closest_sub_group_size(&p, &v->closest_honored);
    }
    plan_free(&p);
    if (!v->memory_ok) {
        /* The smallest ratio on a 0.01 grid (least offload, fastest) whose model states fit once
         * its sub_group_size honors it. */
        for (int i = 0; i <= 100; i++) {
            double r = i / 100.0, h;
            int64_t s, g;
            if ((rc = try_ratio(c, r, v->sub_group_size, a->tol, &s, &h, &g, e)))
                return rc;
            if (g <= a->gpu_mem && fabs(h - r) <= a->tol) {
                v->fix_ratio = r;
                v->fix_sgs = s != v->sub_group_size ? s : 0;
                v->fix_gpu_bytes = g;
                v->fix_fits = true;
                break;
            }
        }
    }
    return 0;
}

/* Is every real in the document reproduced by %.15g? Then dump with 15 digits, so values users
 * typed (0.1, 5e-7) stay as typed; else 17, which always round-trips. */
static bool reals_short(const json_t *j)
{
    if (json_is_real(j)) {
        char buf[40];
        snprintf(buf, sizeof buf, "%.15g", json_real_value(j));
        return strtod(buf, NULL) == json_real_value(j);
    }
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) if (!reals_short(v)) return false;
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) if (!reals_short(v)) return false;
    }
    return true;
}

static int write_fix(const char *src, const char *dst, const struct verdict *v, struct rl_err *e)
{
    json_error_t je;
    json_t *root = json_load_file(src, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return rl_errf(e, RL_EINVAL, "%s: not valid JSON at line %d: %s", src, je.line, je.text);
    cli_hazards_fix_json(root, &v->hz);
    json_t *zo = json_object_get(root, "zero_optimization");
    if (!zo) {
        zo = json_object();
        json_object_set_new(root, "zero_optimization", zo);
    }
    if (v->fix_sgs > 0)
        json_object_set_new(zo, "sub_group_size", json_integer(v->fix_sgs));
    if (v->fix_ratio >= 0) {
        json_t *off = json_object_get(zo, "offload_optimizer");
        if (!off) {
            off = json_object();
            json_object_set_new(off, "device", json_string("cpu"));
            json_object_set_new(zo, "offload_optimizer", off);
        }
        json_object_set_new(off, "ratio", json_real(v->fix_ratio));
    }
    struct rl_outfile o;
    int rc = rl_outfile_open(&o, dst, e);
    if (rc) {
        json_decref(root);
        return rc;
    }
    size_t flags = JSON_INDENT(4) | JSON_REAL_PRECISION(reals_short(root) ? 15 : 17);
    if (json_dumpf(root, o.fp, flags) != 0 || fputc('\n', o.fp) == EOF) {
        rl_outfile_abort(&o);
        json_decref(root);
        return rl_errf(e, RL_EIO, "--fix-to %s: write failed", dst);
    }
    json_decref(root);
    return rl_outfile_commit(&o, e);
}

static void report_text(const struct cli_ctx *c, const struct check_args *a, const struct verdict *v)
{
    char g1[32], g2[32], g3[32];
    bool ok = v->ratio_ok && v->memory_ok && v->hz.n_fail == 0;
    if (!a->quiet || !ok)
        printf("%s  %s, %s\n", ok ? "PASS" : "FAIL", c->model_desc, plan_policy_name(c->popt.policy));
    cli_hazards_print(stdout, &v->hz, &v->written, a->strict, "  hazard  ", a->quiet ? NULL : "  warning ");
    if (v->hz.n_repaired)
        printf("  note    the lines below describe the config with the hazard fixes above applied\n");
    if (!a->quiet || !v->ratio_ok)
        printf("  ratio   %s requested %.4f, honored %.4f (%d sub-group%s of sub_group_size %lld, tolerance %.4f)\n",
               v->ratio_ok ? "ok  " : "FAIL", v->requested, v->honored, v->n_subgroups, v->n_subgroups == 1 ? "" : "s",
               (long long)v->sub_group_size, a->tol);
    if (a->gpu_mem && (!a->quiet || !v->memory_ok))
        printf("  memory  %s model states need %s GiB per rank of %s GiB (activations and CUDA context not "
               "included: see ratiolab predict)\n",
               v->memory_ok ? "ok  " : "FAIL", cli_gib(g1, sizeof g1, v->gpu_bytes), cli_gib(g2, sizeof g2, a->gpu_mem));
    if (!v->ratio_ok) {
        if (v->fix_sgs_none)
            printf("  fix     no sub_group_size honors %.4f within %.4f (the rule counts sub-groups, not elements, "
                   "and tensors are never split); the closest is sub_group_size %lld (honored %.4f)\n",
                   v->requested, a->tol, (long long)v->closest_sgs, v->closest_honored);
        else if (v->memory_ok || !v->fix_fits)
            printf("  fix     set zero_optimization.sub_group_size to %lld (the largest that honors the ratio)\n",
                   (long long)v->fix_sgs);
    }
    if (!v->memory_ok) {
        if (v->fix_fits) {
            printf("  fix     set zero_optimization.offload_optimizer.ratio to %.2f", v->fix_ratio);
            if (v->fix_sgs > 0)
                printf(" and zero_optimization.sub_group_size to %lld", (long long)v->fix_sgs);
            printf(" (model states %s GiB per rank)\n", cli_gib(g3, sizeof g3, v->fix_gpu_bytes));
        } else {
            printf("  fix     none: even ratio 1.0 leaves more than %s GiB of model states on the GPU; "
                   "more GPUs (--dp) or a smaller model\n", cli_gib(g2, sizeof g2, a->gpu_mem));
        }
    }
}

static void report_json(const struct cli_ctx *c, const struct check_args *a, const struct verdict *v)
{
    json_t *o = json_object();
    json_object_set_new(o, "ok", json_boolean(v->ratio_ok && v->memory_ok && v->hz.n_fail == 0));
    json_object_set_new(o, "hazards", cli_hazards_json(&v->hz, &v->written, a->strict));
    json_object_set_new(o, "model", json_string(c->model.name));
    json_object_set_new(o, "policy", json_string(plan_policy_name(c->popt.policy)));
    json_object_set_new(o, "ratio_ok", json_boolean(v->ratio_ok));
    json_object_set_new(o, "requested_ratio", json_real(v->requested));
    json_object_set_new(o, "honored_ratio", json_real(v->honored));
    json_object_set_new(o, "tolerance", json_real(a->tol));
    json_object_set_new(o, "num_subgroups", json_integer(v->n_subgroups));
    json_object_set_new(o, "sub_group_size", json_integer(v->sub_group_size));
    json_object_set_new(o, "memory_checked", json_boolean(a->gpu_mem > 0));
    json_object_set_new(o, "memory_ok", json_boolean(v->memory_ok));
    json_object_set_new(o, "gpu_bytes", json_integer(v->gpu_bytes));
    if (a->gpu_mem)
        json_object_set_new(o, "gpu_mem_bytes", json_integer(a->gpu_mem));
    json_t *fix = json_object();
    if (v->fix_sgs > 0)
        json_object_set_new(fix, "sub_group_size", json_integer(v->fix_sgs));
    if (v->fix_ratio >= 0) {
        json_object_set_new(fix, "ratio", json_real(v->fix_ratio));
        json_object_set_new(fix, "gpu_bytes", json_integer(v->fix_gpu_bytes));
    }
    if ((!v->ratio_ok && v->fix_sgs_none) || (!v->memory_ok && !v->fix_fits))
        json_object_set_new(fix, "possible", json_false());
    json_object_set_new(o, "fix", fix);
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    fputc('\n', stdout);
    json_decref(o);
}

static int run(int argc, char **argv)
{
    struct cli_setup s;
    cli_setup_init(&s);
    struct check_args a = {.tol = 0.02};
    struct cli_optset sets[] = {
        {"check options", opts, on_opt, &a},
        {"model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
    };
    struct rl_err e = {0};
    int rc = cli_command_parse("check", argc, argv,
                               "ratiolab check --ds-config FILE (--model NAME | --megatron-args \"...\") [--tp N --dp N ...]\n"
                               "                      [--deepspeed-version X.Y.Z] [--tolerance 0.02] [--gpu-mem 80GiB] [--fix-to FILE]",
                               "Exits 0 when the config honors its offload ratio within the tolerance under the DeepSpeed\n"
                               "version's rule (and, with --gpu-mem, the model states of one rank fit); exits 1 otherwise and\n"
                               "prints the fix: the largest sub_group_size that honors the ratio, and the ratio that fits.\n"
                               "Also exits 1 on a partial offload DeepSpeed crashes on, asserts on or ignores (device nvme,\n"
                               "torch_adam, an optimizer other than Adam/AdamW, stage < 3), one line each with the key, the\n"
                               "DeepSpeed versions, the source and the fix; a scheduler block is a warning (--strict: fails).\n"
                               "Exit 2: bad input. Use it as a CI step after every model, config or DeepSpeed change.",
                               sets, 2);
    if (rc >= 0)
        return rc;
    if (!s.ds_config) {
        rl_errf(&e, RL_EINVAL, "--ds-config: required (the DeepSpeed JSON config to check)");
        return cli_fail("check", &e);
    }
    if (!s.model && !s.megatron_args && !s.megatron_args_file) {
        rl_errf(&e, RL_EINVAL, "--model or --megatron-args: required (the model the config trains)");
        return cli_fail("check", &e);
    }
    struct cli_ctx c;
    s.report_hazards = true;
    if ((rc = cli_setup_resolve(&s, &c, &e))) {
        cli_ctx_free(&c);
        return cli_fail("check", &e);
    }
    const struct plan_zero written = c.zero;
    struct cli_hazards hz;
    cli_hazards_find(&hz, &c.zero, a.strict);
    struct verdict v;
    if ((rc = judge(&c, &a, &v, &e))) {
        cli_ctx_free(&c);
        return cli_fail("check", &e);
    }
    v.hz = hz;
    v.written = written;
    bool ok = v.ratio_ok && v.memory_ok && hz.n_fail == 0;
    bool fixes = (!v.ratio_ok && v.fix_sgs > 0) || (!v.memory_ok && v.fix_fits) || cli_hazards_fixable(&hz) > 0;
    if (a.fix_to && !ok && fixes) {
        if ((rc = write_fix(s.ds_config, a.fix_to, &v, &e))) {
            cli_ctx_free(&c);
            return cli_fail("check", &e);
        }
    }
    if (a.json)
        report_json(&c, &a, &v);
    else
        report_text(&c, &a, &v);
    if (a.fix_to && !a.json && !ok) {
        if (fixes && cli_hazards_fixable(&hz) < hz.n_fail)
            printf("  wrote   %s (device, stage and torch_adam fixed; the other hazards above need an edit by hand)\n",
                   a.fix_to);
        else if (fixes)
            printf("  wrote   %s\n", a.fix_to);
        else
            printf("  wrote   nothing to %s: %s\n", a.fix_to,
                   v.ratio_ok && v.memory_ok ? "the hazards above need an edit by hand" : "no fix exists");
    }
    cli_ctx_free(&c);
    return ok ? 0 : 1;
}

const struct cli_cmd cli_cmd_check = {"check", "CI gate: fail when a config will not honor its ratio or fit", run};
