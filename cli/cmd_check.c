/* cli/cmd_check.c — `ratiolab check`: a CI gate that fails (exit 1) when a DeepSpeed config will
 * not honor its offload ratio, or when the model states do not fit a GPU, and prints the fix. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/hazard_report.h"
#include "cli/plan_report.h"
#include "cli/sim_opts.h"   /* --hw, --checkpoint-activations, --reserve: the memory the simulator predicts */

enum { O_TOL = 1, O_GPU_MEM, O_FIX_TO, O_JSON, O_QUIET, O_STATES_ONLY, O_STRICT };
static const struct cli_opt opts[] = {
    {"tolerance", "T", "allowed |honored - requested| (default 0.02)", O_TOL},
    {"gpu-mem", "SIZE", "also check that one rank's GPU memory (as ratiolab predict counts it) fits, e.g. 80GiB", O_GPU_MEM},
    {"model-states-only", NULL, "with --gpu-mem: count only the model states (no activations, buffers, context)", O_STATES_ONLY},
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
    bool states_only;  /* --model-states-only */
    bool strict;       /* --strict: suspected hazards fail too */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct check_args *a = ctx;
    switch (id) {
    case O_TOL: return rl_parse_double("--tolerance", v, 0, 1, &a->tol, e);
    case O_GPU_MEM:
        return rl_parse_bytes_min("--gpu-mem", v, 1, &a->gpu_mem, e);
    case O_FIX_TO: a->fix_to = v; return 0;
    case O_JSON: a->json = true; return 0;
    case O_QUIET: a->quiet = true; return 0;
    case O_STATES_ONLY: a->states_only = true; return 0;
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
    int64_t gpu_bytes;          /* per rank: the whole prediction, or the ledger peak (--model-states-only) */
    struct sim_step_result mem; /* the parts of gpu_bytes (whole prediction only) */
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

/* What the memory judgement needs besides the setup. */
struct mem_env {
    const struct check_args *a;
    const struct sim_hw *hw;       /* context and allocator model; capacity = --gpu-mem */
    const struct sim_train *train; /* micro-batch, sequence, checkpointing, reserve */
};

/* The GPU bytes of one rank under plan p: the simulator's whole per-rank prediction (model states,
 * activations, gathered parameters, context and allocator reserve), or the ledger's model states
 * alone with --model-states-only. */
static int gpu_bytes_of(const struct mem_env *m, const struct plan *p, int64_t *bytes,
                        struct sim_step_result *parts, struct rl_err *e)
{
    if (m->a->states_only) {
        *bytes = plan_peak_gpu_bytes(p);
        return 0;
    }
    struct sim_step_result r;
    int rc = sim_step_memory(p, m->hw, m->train, &r, e);
    if (rc)
        return rc;
    *bytes = r.gpu_total_bytes;
    if (parts)
        *parts = r;
    return 0;
}

/* Builds a plan for (ratio, sgs) and returns the honoring sgs for that ratio (the config's own
 * when it already honors), the resulting honored ratio and the GPU bytes. */
static int try_ratio(const struct plan_setup *c, const struct mem_env *m, double ratio, int64_t sgs,
                     int64_t *sgs_out, double *honored, int64_t *gpu, struct rl_err *e)
{
    struct plan_setup cc = *c;
    cc.zero.sub_group_size = sgs;
    struct plan p;
    int rc = plan_setup_plan(&cc, ratio, &p, e);
    if (rc)
        return rc;
    *sgs_out = sgs;
    if (fabs(p.honored_ratio - p.requested_ratio) > m->a->tol && p.policy != PLAN_POLICY_EXACT) {
        int64_t s = plan_max_honoring_sub_group_size(&p, m->a->tol);
        if (s > 0) {
            plan_free(&p);
            cc.zero.sub_group_size = s;
            if ((rc = plan_setup_plan(&cc, ratio, &p, e)))
                return rc;
            *sgs_out = s;
        }
    }
    *honored = p.honored_ratio;
    rc = gpu_bytes_of(m, &p, gpu, NULL, e);
    plan_free(&p);
    return rc;
}

/* GPU bytes at ratio r honored exactly: cheap (no sub_group_size search) and non-increasing in
 * r, so the memory fix can bisect on it. */
static int exact_bytes(const struct plan_setup *c, const struct mem_env *m, double r, int64_t *gpu,
                       struct rl_err *e)
{
    struct plan_setup cc = *c;
    cc.popt.policy = PLAN_POLICY_EXACT;
    struct plan p;
    int rc = plan_setup_plan(&cc, r, &p, e);
    if (rc)
        return rc;
    rc = gpu_bytes_of(m, &p, gpu, NULL, e);
    plan_free(&p);
    return rc;
}

static int judge(const struct plan_setup *c, const struct mem_env *m, struct verdict *v, struct rl_err *e)
{
    const struct check_args *a = m->a;
    memset(v, 0, sizeof *v);
    v->fix_ratio = -1;
    struct plan p;
    int rc = plan_setup_plan(c, -1, &p, e);
    if (rc)
        return rc;
    v->requested = p.requested_ratio;
    v->honored = p.honored_ratio;
    v->n_subgroups = p.n_subgroups;
    v->sub_group_size = p.zero.sub_group_size;
    if (a->gpu_mem && (rc = gpu_bytes_of(m, &p, &v->gpu_bytes, &v->mem, e))) {
        plan_free(&p);
        return rc;
    }
    if (!a->gpu_mem)
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
    if (v->memory_ok)
        return 0;
    /* The smallest ratio on a 0.01 grid (least offload, fastest) whose memory fits once its
     * sub_group_size honors it. Bisect on the exactly-honored memory (non-increasing in the
     * ratio) for the first grid point that can fit, then confirm upwards under the real policy:
     * O(log 100) cheap plans and a few sub_group_size searches, not 101 of them. */
    int64_t g;
    if ((rc = exact_bytes(c, m, 1.0, &g, e)))
        return rc;
    if (g > a->gpu_mem)
        return 0;   /* even everything on the CPU does not fit */
    int lo = 0, hi = 100;   /* exact(hi) fits; find the smallest such */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if ((rc = exact_bytes(c, m, mid / 100.0, &g, e)))
            return rc;
        if (g <= a->gpu_mem)
            hi = mid;
        else
            lo = mid + 1;
    }
    /* A DeepSpeed policy honors r within the tolerance, so a grid point up to tol below lo may
     * still fit with its honored ratio: the confirmation starts there, as the old scan would. */
    int from = lo - (int)ceil(a->tol * 100.0) - 1;
    for (int i = from > 0 ? from : 0; i <= 100; i++) {
        double r = i / 100.0, h;
        int64_t s;
        if ((rc = try_ratio(c, m, r, v->sub_group_size, &s, &h, &g, e)))
            return rc;
        if (g <= a->gpu_mem && fabs(h - r) <= a->tol) {
            v->fix_ratio = r;
            v->fix_sgs = s != v->sub_group_size ? s : 0;
            v->fix_gpu_bytes = g;
            v->fix_fits = true;
            break;
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

/* Applies the fix to the text that was judged (not the file as it may read now). */
static int write_fix(const char *src, const char *text, const char *dst, const struct verdict *v,
                     struct rl_err *e)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!root)
        return rl_errf(e, RL_EINVAL, "--fix-to: %s cannot be rewritten: line %d: %s", src, je.line, je.text);
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
        return rl_err_prefix(e, "--fix-to");
    }
    size_t flags = JSON_INDENT(4) | JSON_REAL_PRECISION(reals_short(root) ? 15 : 17);
    bool bad = json_dumpf(root, o.fp, flags) != 0 || fputc('\n', o.fp) == EOF;
    json_decref(root);
    if (bad && !ferror(o.fp)) {
        rl_outfile_abort(&o);
        return rl_errf(e, RL_EINTERNAL, "--fix-to %s: the JSON could not be encoded", dst);
    }
    if ((rc = rl_outfile_commit(&o, e)))   /* a write error, with its cause */
        rl_err_prefix(e, "--fix-to");
    return rc;
}

/* Which dtype the judgement used and where it came from (an "auto" in an HF-style config is
 * otherwise invisible). */
static const char *dtype_source(const struct plan_setup *c)
{
    switch (c->zero.src_dtype) {
    case PLAN_SRC_CLI: return "--dtype or the Megatron arguments";
    case PLAN_SRC_CONFIG: return "the DeepSpeed config";
    case PLAN_SRC_AUTO: return "fp16/bf16.enabled \"auto\", resolved to false as DeepSpeed does; the HF Trainer's --fp16/--bf16 correspond to --dtype fp16/bf16";
    case PLAN_SRC_DEFAULT: break;
    }
    return "DeepSpeed's default (no fp16 or bf16 block enabled)";
}

static void report_text(const struct plan_setup *c, const struct check_args *a, const struct verdict *v,
                        bool checkpointing, bool verbose)
{
    char g1[32], g2[32], g3[32];
    bool ok = v->ratio_ok && v->memory_ok && v->hz.n_fail == 0;
    if (!a->quiet || !ok)
        printf("%s  %s, %s\n", ok ? "PASS" : "FAIL", c->model_desc, plan_policy_name(c->popt.policy));
    if (!a->quiet)
        printf("  dtype   %s (%s)\n", plan_dtype_name(c->zero.dtype), dtype_source(c));
    for (int i = 0; verbose && i < c->n_notes; i++)
        printf("  note    %s\n", c->notes[i]);
    cli_hazards_print(stdout, &v->hz, &v->written, a->strict, "  hazard  ", a->quiet ? NULL : "  warning ");
    if (v->hz.n_repaired)
        printf("  note    the lines below describe the config with the hazard fixes above applied\n");
    if (!a->quiet || !v->ratio_ok)
        printf("  ratio   %s requested %.4f, honored %.4f (%d sub-group%s of sub_group_size %lld, tolerance %.4f)\n",
               v->ratio_ok ? "ok  " : "FAIL", v->requested, v->honored, v->n_subgroups, v->n_subgroups == 1 ? "" : "s",
               (long long)v->sub_group_size, a->tol);
    if (a->gpu_mem && (!a->quiet || !v->memory_ok)) {
        if (a->states_only) {
            printf("  memory  %s model states need %s GiB per rank of %s GiB (--model-states-only: activations, "
                   "gathered parameters and CUDA context not counted)\n",
                   v->memory_ok ? "ok  " : "FAIL", cli_gib(g1, sizeof g1, v->gpu_bytes), cli_gib(g2, sizeof g2, a->gpu_mem));
        } else {
            char p1[32], p2[32], p3[32], p4[32];
            printf("  memory  %s %s GiB per rank of %s GiB: model states %s + activations %s + gathered "
                   "parameters %s + context/NCCL/allocator %s (micro-batch %lld, seq %lld, activation "
                   "checkpointing %s; as ratiolab predict)\n",
                   v->memory_ok ? "ok  " : "FAIL", cli_gib(g1, sizeof g1, v->gpu_bytes), cli_gib(g2, sizeof g2, a->gpu_mem),
                   cli_gib(p1, sizeof p1, v->mem.gpu_ledger_bytes), cli_gib(p2, sizeof p2, v->mem.gpu_activation_bytes),
                   cli_gib(p3, sizeof p3, v->mem.gpu_live_param_bytes), cli_gib(p4, sizeof p4, v->mem.gpu_reserve_bytes),
                   (long long)v->mem.micro_batch, (long long)v->mem.seq_len, checkpointing ? "on" : "off");
        }
    }
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
            printf(" (%s %s GiB per rank)\n", a->states_only ? "model states" : "GPU memory",
                   cli_gib(g3, sizeof g3, v->fix_gpu_bytes));
        } else {
            printf("  fix     none: even ratio 1.0 needs more than %s GiB per rank%s; more GPUs (--dp), "
                   "a smaller micro-batch, activation checkpointing or a smaller model\n",
                   cli_gib(g2, sizeof g2, a->gpu_mem), a->states_only ? " for the model states" : "");
        }
    }
}

static void report_json(const struct plan_setup *c, const struct check_args *a, const struct verdict *v)
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
    json_object_set_new(o, "dtype", json_string(plan_dtype_name(c->zero.dtype)));
    json_object_set_new(o, "dtype_source", json_string(dtype_source(c)));
    json_object_set_new(o, "gpu_bytes", json_integer(v->gpu_bytes));
    json_object_set_new(o, "gpu_bytes_counts", json_string(a->states_only || !a->gpu_mem ? "model states" : "model states, activations, gathered parameters, context/NCCL/allocator"));
    if (a->gpu_mem && !a->states_only) {
        json_object_set_new(o, "model_states_bytes", json_integer(v->mem.gpu_ledger_bytes));
        json_object_set_new(o, "activation_bytes", json_integer(v->mem.gpu_activation_bytes));
        json_object_set_new(o, "live_param_bytes", json_integer(v->mem.gpu_live_param_bytes));
        json_object_set_new(o, "reserve_bytes", json_integer(v->mem.gpu_reserve_bytes));
    }
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
    cli_json_dumpf(cli_json_versioned(o), stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    fputc('\n', stdout);
    json_decref(o);
}

static int run(int argc, char **argv)
{
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct check_args a = {.tol = 0.02};
    struct cli_sim sim;
    cli_sim_init(&sim);
    struct cli_optset sets[] = {
        {"check options", opts, on_opt, &a},
        {"model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
        {"memory prediction (with --gpu-mem)", cli_sim_opts, cli_sim_opt, &sim},
    };
    struct rl_err e = {0};
    int rc = cli_command_parse("check", argc, argv,
                               "ratiolab check --ds-config FILE (--model NAME | --megatron-args \"...\") [--tp N --dp N ...]\n"
                               "                      [--deepspeed-version X.Y.Z] [--tolerance 0.02] [--gpu-mem 80GiB] [--fix-to FILE]",
                               "Exits 0 when the config honors its offload ratio within the tolerance under the DeepSpeed\n"
                               "version's rule (and, with --gpu-mem, the model states of one rank fit); exits 1 otherwise and\n"
                               "prints the fix: the largest sub_group_size that honors the ratio, and the ratio that fits.\n"
                               "With --gpu-mem it judges the whole per-rank GPU memory ratiolab predict counts (model states,\n"
                               "activations for the micro-batch, gathered parameters, the --hw profile's CUDA context and\n"
                               "allocator reserve); --model-states-only judges the model states alone.\n"
                               "Also exits 1 on a partial offload DeepSpeed crashes on, asserts on or ignores (device nvme,\n"
                               "torch_adam, an optimizer other than Adam/AdamW, stage < 3), one line each with the key, the\n"
                               "DeepSpeed versions, the source and the fix; a scheduler block is a warning (--strict: fails).\n"
                               "Exit 2: bad input. Use it as a CI step after every model, config or DeepSpeed change.",
                               sets, 3);
    if (rc != CLI_GO_ON)
        return rc;
    if (!s.ds_config) {
        rl_errf(&e, RL_EINVAL, "--ds-config: required (the DeepSpeed JSON config to check)");
        return cli_fail("check", &e);
    }
    if (!s.model && !s.megatron_args && !s.megatron_args_file) {
        rl_errf(&e, RL_EINVAL, "--model or --megatron-args: required (the model the config trains)");
        return cli_fail("check", &e);
    }
    struct plan_setup c;
    s.report_hazards = true;
    if ((rc = cli_setup_resolve(&s, &c, &e))) {
        plan_setup_free(&c);
        return cli_fail("check", &e);
    }
    struct sim_hw hw;
    if (a.gpu_mem && !a.states_only && (rc = cli_sim_load_hw(&sim, &c, &hw, &e))) {
        plan_setup_free(&c);
        return cli_fail("check", &e);
    }
    if (a.gpu_mem && !a.states_only)
        hw.gpu_mem_bytes = a.gpu_mem;
    struct mem_env m = {.a = &a, .hw = &hw, .train = &sim.train};
    const struct plan_zero written = c.zero;
    struct cli_hazards hz;
    cli_hazards_find(&hz, &c.zero, a.strict);
    struct verdict v;
    if ((rc = judge(&c, &m, &v, &e))) {
        plan_setup_free(&c);
        return cli_fail("check", &e);
    }
    v.hz = hz;
    v.written = written;
    bool ok = v.ratio_ok && v.memory_ok && hz.n_fail == 0;
    bool fixes = (!v.ratio_ok && v.fix_sgs > 0) || (!v.memory_ok && v.fix_fits) || cli_hazards_fixable(&hz) > 0;
    if (a.fix_to && !ok && fixes) {
        if ((rc = write_fix(s.ds_config, c.ds_text, a.fix_to, &v, &e))) {
            plan_setup_free(&c);
            return cli_fail("check", &e);
        }
    }
    if (a.json)
        report_json(&c, &a, &v);
    else
        report_text(&c, &a, &v, sim.train.checkpoint_activations, s.verbose);
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
    plan_setup_free(&c);
    return ok ? 0 : 1;
}

const struct cli_cmd cli_cmd_check = {"check", "CI gate: fail when a config will not honor its ratio or fit", run};
