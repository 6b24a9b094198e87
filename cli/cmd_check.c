/* cli/cmd_check.c — `ratiolab check`: a CI gate that fails (exit 1) when a DeepSpeed config will
 * not honor its offload ratio, or when the model states do not fit a GPU, and prints the fix. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/hazard_report.h"
#include "plan/ds_fix.h"   /* plan_fix_write, plan_hazards_find */
#include "cli/sim_opts.h"   /* --hw, --checkpoint-activations, --reserve: the memory the simulator predicts */
#include "sim/check_json.h"

enum { O_TOL = 1, O_GPU_MEM, O_FIX_TO, O_JSON, O_QUIET, O_STATES_ONLY, O_STRICT };
static const struct cli_opt opts[] = {
    {"tolerance", "T", "allowed |honored - requested| (default 0.01, as plan and tune)", O_TOL},
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
        RL_TRY(rl_parse_bytes_min("--gpu-mem", v, 1, &a->gpu_mem, e));
        cli_warn_decimal_gpu_mem("--gpu-mem", v, a->gpu_mem);
        return 0;
    case O_FIX_TO: a->fix_to = v; return 0;
    case O_JSON: a->json = true; return 0;
    case O_QUIET: a->quiet = true; return 0;
    case O_STATES_ONLY: a->states_only = true; return 0;
    case O_STRICT: a->strict = true; return 0;
    }
    return RL_EINTERNAL;
}

/* The verdict, the fix and the DeepSpeed hazards judged beside them, as lines (--quiet: failures only). */
static void report_text(const struct check_args *a, const struct sim_check_report *r, bool checkpointing, bool verbose)
{
    const struct plan_setup *c = r->setup;
    const struct sim_check_verdict *j = r->v;
    char g1[32], g2[32], g3[32];
    bool ok = sim_check_passed(r);
    if (!a->quiet || !ok)
    {
        printf("%s  %s, %s", ok ? "PASS" : "FAIL", c->model_desc, plan_policy_name(c->popt.policy));
        if (c->n_more > 0)
            printf(" (%s)", RL_VERSION_S(c->zero.ds_version));
        for (int i = 0; i < c->n_more; i++)
            printf(" and %s (%s)", plan_policy_name(c->more_policies[i]), RL_VERSION_S(c->more_versions[i]));
        printf("\n");
    }
    char seq[256];
    if (!a->quiet)
        printf("  dtype   %s (%s)\n  seq     %s\n", plan_dtype_name(c->zero.dtype), cli_dtype_source(c), cli_seq_text(c, seq, sizeof seq) + 4);
    for (int i = 0; verbose && i < c->n_notes; i++)
        printf("  note    %s\n", c->notes[i]);
    cli_hazards_print(stdout, r->hz, r->written, a->strict, "  hazard  ", a->quiet ? NULL : "  warning ");
    if (r->hz->n_repaired)
        printf("  note    the lines below describe the config with the hazard fixes above applied\n");
    /* Each version's line carries its own verdict; the overall one is the first line's. */
    const bool ok_0 = j->version_ok[0];
    char under[96] = "";
    if (c->n_more)
        snprintf(under, sizeof under, " under DeepSpeed %s (%s)", RL_VERSION_S(c->zero.ds_version),
                 plan_policy_name(c->popt.policy));
    if (!a->quiet || !j->ratio_ok)
        printf("  ratio   %s requested %.4f, honored %.4f (%d sub-group%s of sub_group_size %lld, tolerance %.4f)%s\n",
               ok_0 ? "ok  " : "FAIL", j->requested, j->honored, j->n_subgroups, j->n_subgroups == 1 ? "" : "s",
               (long long)j->sub_group_size, a->tol, under);
    for (int i = 0; i < c->n_more && (!a->quiet || !j->ratio_ok); i++) {
        printf("  ratio   %s requested %.4f, honored %.4f under DeepSpeed %s (%s)\n", j->version_ok[1 + i] ? "ok  " : "FAIL",
               j->requested, j->more_honored[i], RL_VERSION_S(c->more_versions[i]),
               plan_policy_name(c->more_policies[i]));
    }
    if (a->gpu_mem && (!a->quiet || !j->memory_ok)) {
        if (a->states_only) {
            printf("  memory  %s model states need %s GiB per rank of %s GiB (--model-states-only: activations, "
                   "gathered parameters and CUDA context not counted)\n",
                   j->memory_ok ? "ok  " : "FAIL", cli_gib(g1, sizeof g1, j->gpu_bytes), cli_gib(g2, sizeof g2, a->gpu_mem));
        } else {
            char p1[32], p2[32], p3[32], p4[32];
            printf("  memory  %s %s GiB per rank of %s GiB: model states %s + activations %s + gathered "
                   "parameters %s + context/NCCL/allocator %s (micro-batch %lld, seq %lld, activation "
                   "checkpointing %s, attention %s; as ratiolab predict)\n",
                   j->memory_ok ? "ok  " : "FAIL", cli_gib(g1, sizeof g1, j->gpu_bytes), cli_gib(g2, sizeof g2, a->gpu_mem),
                   cli_gib(p1, sizeof p1, j->mem.gpu_ledger_bytes), cli_gib(p2, sizeof p2, j->mem.gpu_activation_bytes),
                   cli_gib(p3, sizeof p3, j->mem.gpu_live_param_bytes), cli_gib(p4, sizeof p4, j->mem.gpu_reserve_bytes),
                   (long long)j->mem.micro_batch, (long long)j->mem.seq_len, checkpointing ? "on" : "off",
                   plan_attention_name(j->mem.attention));
        }
    }
    if (!j->ratio_ok) {
        if (j->fix_sgs_none && c->n_more > 0)
            printf("  fix     no sub_group_size honors %.4f within %.4f under every listed version (the rules count "
                   "sub-groups, not elements, and differ); check each version alone for its own fix, or another ratio\n",
                   j->requested, a->tol);
        else if (j->fix_sgs_none)
            printf("  fix     no sub_group_size honors %.4f within %.4f (the rule counts sub-groups, not elements, "
                   "and tensors are never split); the closest is sub_group_size %lld (honored %.4f)\n",
                   j->requested, a->tol, (long long)j->closest_sgs, j->closest_honored);
        else if ((j->memory_ok || !j->fix_fits) && c->n_more == 0)
            printf("  fix     set zero_optimization.sub_group_size to %lld (the largest that honors the ratio)\n",
                   (long long)j->fix_sgs);
        else if (j->memory_ok || !j->fix_fits) {
            printf("  fix     set zero_optimization.sub_group_size to %lld (the largest that every listed version honors "
                   "the ratio with: %s %.4f", (long long)j->fix_sgs, plan_policy_name(c->popt.policy), j->fix_honored[0]);
            for (int i = 0; i < c->n_more; i++)
                printf(", %s %.4f", plan_policy_name(c->more_policies[i]), j->fix_honored[1 + i]);
            printf(")\n");
        }
    }
    if (!j->memory_ok) {
        if (j->fix_fits) {
            printf("  fix     set zero_optimization.offload_optimizer.ratio to %.2f", j->fix_ratio);
            if (j->fix_sgs > 0)
                printf(" and zero_optimization.sub_group_size to %lld", (long long)j->fix_sgs);
            printf(" (%s %s GiB per rank)\n", a->states_only ? "model states" : "GPU memory",
                   cli_gib(g3, sizeof g3, j->fix_gpu_bytes));
        } else {
            printf("  fix     none: even ratio 1.0 needs more than %s GiB per rank%s; more GPUs (--dp), "
                   "a smaller micro-batch, activation checkpointing or a smaller model\n",
                   cli_gib(g2, sizeof g2, a->gpu_mem), a->states_only ? " for the model states" : "");
        }
    }
}

/* --json: the verdict's object (sim/check_json.c), as every --json output is written. */
static void report_json(const struct sim_check_report *r)
{
    json_t *o = sim_check_json(r);
    cli_json_dumpf(cli_json_versioned(o), stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    fputc('\n', stdout);
    json_decref(o);
}

static int run(int argc, char **argv)
{
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct check_args a = {.tol = PLAN_RATIO_TOLERANCE};
    struct cli_sim sim;
    cli_sim_init(&sim);
    sim.memory_only = true;   /* check judges memory; it prints no step time */
    struct cli_optset sets[] = {
        {"check options", opts, on_opt, &a},
        {"model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
        {"memory prediction (with --gpu-mem)", cli_sim_opts, cli_sim_opt, &sim},
    };
    struct rl_err e = {0};
    int rc = cli_command_parse("check", argc, argv,
                               "ratiolab check --ds-config FILE (--model NAME | --megatron-args \"...\") [--tp N --dp N ...]\n"
                               "                      [--deepspeed-version X.Y.Z] [--tolerance 0.01] [--gpu-mem 80GiB] [--fix-to FILE]",
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
    if ((rc = cli_setup_resolve(&s, &c, &e)))
        goto fail;
    struct hw_profile hw;
    if (a.gpu_mem && !a.states_only && (rc = cli_sim_load_hw(&sim, &c, &hw, &e)))
        goto fail;
    if (a.gpu_mem && !a.states_only)
        hw.gpu_mem_bytes = a.gpu_mem;
    struct sim_check_request q = {.tol = a.tol, .gpu_mem_bytes = a.gpu_mem, .states_only = a.states_only,
                                  .hw = &hw, .train = &sim.train};
    const struct plan_zero written = c.zero;
    struct plan_hazard_set hz;
    plan_hazards_find(&hz, &c.zero, a.strict);
    struct sim_check_verdict v;
    if ((rc = sim_check(&c, &q, &v, &e))) {
        cli_sim_err(&e);
        goto fail;
    }
    const struct sim_check_report r = {.setup = &c, .q = &q, .v = &v, .hz = &hz, .written = &written,
                                       .strict = a.strict, .dtype_source = cli_dtype_source(&c)};
    bool ok = sim_check_passed(&r);
    bool fixes = (!v.ratio_ok && v.fix_sgs > 0) || (!v.memory_ok && v.fix_fits) || plan_hazards_fixable(&hz) > 0;
    if (a.fix_to && !ok && fixes &&
        (rc = plan_fix_write(c.ds_text, s.ds_config, &hz, v.fix_sgs, v.fix_ratio, a.fix_to, &e))) {
        cli_err_flag(&e, "fix", "--fix-to");
        cli_err_flag(&e, "fix_to", "--fix-to");
        goto fail;
    }
    if (a.json)
        report_json(&r);
    else
        report_text(&a, &r, sim.train.checkpoint_activations, s.verbose);
    if (a.fix_to && !a.json && !ok) {
        if (fixes && plan_hazards_fixable(&hz) < hz.n_fail)
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
fail:
    plan_setup_free(&c);
    return cli_fail("check", &e);
}

const struct cli_cmd cli_cmd_check = {"check", "CI gate: fail when a config will not honor its ratio or fit", run};
