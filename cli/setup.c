/* cli/setup.c — the options every planning command shares (model, layout, DeepSpeed config,
 * policy) and their resolution into a model, a DeepSpeed config and a layout. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>   /* access */

#include "cli/cli.h"
#include "plan/ds_hazards.h"
#include "plan/megatron_args.h"

enum {
    S_MODEL = 1000, S_MEGATRON_ARGS, S_MEGATRON_ARGS_FILE, S_DS_CONFIG, S_CATALOG, S_TP, S_PP, S_DP,
    S_GPUS, S_NODES, S_GPN, S_PP_STAGE, S_RATIO, S_POLICY, S_LEDGER, S_DS_VERSION, S_SGS, S_GROUPS,
    S_SEQ, S_MICRO, S_DTYPE, S_VERBOSE, S_RANK, S_MEGATRON_VERSION,
};

const struct cli_opt cli_setup_opts[] = {
    {"model", "NAME|FILE", "model preset (ratiolab catalog) or HF config.json (default gpt-2.7b)", S_MODEL},
    {"megatron-args", "\"ARGS\"", "the model and layout from a Megatron-DeepSpeed launch line", S_MEGATRON_ARGS},
    {"megatron-args-file", "FILE", "the same, read from a file", S_MEGATRON_ARGS_FILE},
    {"megatron-version", "DATE|old|new", "Megatron-DeepSpeed checkout (YYYY-MM): picks its param-group rule (new from " PLAN_MEGATRON_RULE_DATE ")", S_MEGATRON_VERSION},
    {"ds-config", "FILE", "DeepSpeed JSON config, - for standard input (default: ZeRO-3, CPU offload, pinned, fp16)", S_DS_CONFIG},
    {"ratio", "R", "offload ratio in [0, 1], overrides the config (default 0.3 without a config)", S_RATIO},
    {"policy", "P", "placement: auto (from --deepspeed-version), deepspeed-0.12, deepspeed-0.18, exact", S_POLICY},
    {"deepspeed-version", "X.Y.Z", "DeepSpeed whose rules apply (default 0.12.4)", S_DS_VERSION},
    {"sub-group-size", "N", "elements per sub-group, overrides the config (DeepSpeed default 1e9)", S_SGS},
    {"ledger", "L", "memory ledger: auto (from the version), deepspeed-0.12, deepspeed-0.13, exec", S_LEDGER},
    {"param-groups", "RULE", "auto, megatron, megatron-old, hf (hf-two), flat", S_GROUPS},
    {"tp", "N", "tensor-parallel degree (default 1; 8 for the built-in default model)", S_TP},
    {"pp", "N", "pipeline-parallel degree (default 1)", S_PP},
    {"dp", "N", "data-parallel degree (default: gpus / (tp x pp))", S_DP},
    {"gpus", "N", "total GPUs (ranks)", S_GPUS},
    {"nodes", "N", "nodes (default: gpus / 8)", S_NODES},
    {"gpus-per-node", "N", "GPUs per node (default min(gpus, 8))", S_GPN},
    {"pp-stage", "S", "pipeline stage described (default 0)", S_PP_STAGE},
    {"rank", "R", "global rank described (default 0; all ranks of a stage hold equal partitions)", S_RANK},
    {"seq-len", "N", "sequence length (default: the model's)", S_SEQ},
    {"micro-batch", "N", "micro-batch per GPU, overrides the config", S_MICRO},
    {"dtype", "T", "model dtype: fp16, bf16, fp32, overrides the config", S_DTYPE},
    {"catalog", "DIR", "catalog directory (default: next to the binary or $RATIOLAB_CATALOG)", S_CATALOG},
    {"verbose", NULL, "say more (resolved defaults, ignored flags)", S_VERBOSE},
    {NULL, NULL, NULL, 0},
};

void cli_setup_init(struct cli_setup *s)
{
    memset(s, 0, sizeof *s);
    s->policy = PLAN_POLICY_AUTO;
    s->ledger = PLAN_LEDGER_AUTO;
    s->groups = PLAN_GROUPS_AUTO;
    s->ratio = -1;
}

static int layout_int(const char *field, const char *v, int *out, struct rl_err *e)
{
    return rl_parse_int(field, v, 1, 1 << 20, out, e);
}

int cli_setup_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct cli_setup *s = ctx;
    switch (id) {
    case S_MODEL: s->model = v; return 0;
    case S_MEGATRON_ARGS: s->megatron_args = v; return 0;
    case S_MEGATRON_ARGS_FILE: s->megatron_args_file = v; return 0;
    case S_DS_CONFIG: s->ds_config = v; return 0;
    case S_CATALOG: s->catalog = v; return 0;
    case S_TP: return layout_int("--tp", v, &s->layout.tp, e);
    case S_PP: return layout_int("--pp", v, &s->layout.pp, e);
    case S_DP: return layout_int("--dp", v, &s->layout.dp, e);
    case S_GPUS: return layout_int("--gpus", v, &s->layout.world, e);
    case S_NODES: return layout_int("--nodes", v, &s->layout.nodes, e);
    case S_GPN: return layout_int("--gpus-per-node", v, &s->layout.gpus_per_node, e);
    case S_PP_STAGE: return rl_parse_int("--pp-stage", v, 0, 1 << 20, &s->pp_stage, e);
    case S_RANK: return rl_parse_int("--rank", v, 0, (1 << 20) - 1, &s->layout.rank, e);
    case S_RATIO:
        s->ratio_set = true;
        return rl_parse_double("--ratio", v, 0, 1, &s->ratio, e);
    case S_POLICY: return plan_policy_parse(v, &s->policy, e);
    case S_LEDGER:
        for (int k = 0; k <= PLAN_LEDGER_EXEC; k++)
            if (strcmp(v, plan_ledger_name((enum plan_ledger_kind)k)) == 0) {
                s->ledger = (enum plan_ledger_kind)k;
                return 0;
            }
        return rl_errf(e, RL_EINVAL, "--ledger: '%s' is not a ledger; allowed: auto, deepspeed-0.12, deepspeed-0.13, exec", v);
    case S_DS_VERSION:
        s->ds_version_set = true;
        return rl_parse_version("--deepspeed-version", v, &s->ds_version, e);
    case S_SGS:
        s->sub_group_size_set = true;
        return rl_parse_i64("--sub-group-size", v, 1, INT64_C(1) << 50, &s->sub_group_size, e);
    case S_GROUPS: return plan_group_rule_parse(v, &s->groups, e);
    case S_MEGATRON_VERSION:
        s->megatron_rule_set = true;
        s->megatron_split_qkv = plan_megatron_version_splits_qkv(v);
        return plan_megatron_version_rule(v, &s->megatron_rule, e);
    case S_SEQ: return rl_parse_i64("--seq-len", v, 1, 1 << 24, &s->seq_len, e);
    case S_MICRO: return rl_parse_i64("--micro-batch", v, 1, 1 << 20, &s->micro_batch, e);
    case S_DTYPE:
        if (rl_streq(v, "fp16")) s->dtype = PLAN_FP16;
        else if (rl_streq(v, "bf16")) s->dtype = PLAN_BF16;
        else if (rl_streq(v, "fp32")) s->dtype = PLAN_FP32;
        else return rl_errf(e, RL_EINVAL, "--dtype: '%s' is not a dtype; allowed: fp16, bf16, fp32", v);
        s->dtype_set = true;
        return 0;
    case S_VERBOSE: s->verbose = true; return 0;
    }
    return rl_errf(e, RL_EINTERNAL, "option id %d not handled", id);
}

static void ctx_note(struct cli_ctx *c, const char *msg)
{
    if (c->n_notes < (int)(sizeof c->notes / sizeof c->notes[0]))
        snprintf(c->notes[c->n_notes++], sizeof c->notes[0], "%s", msg);
}

/* Reads --megatron-args / --megatron-args-file into *l; errors name the option. */
static int read_launch(const struct cli_setup *s, struct plan_megatron_launch *l, struct rl_err *e)
{
    if (s->megatron_args) {
        int rc = plan_megatron_args_parse(s->megatron_args, l, e);
        return rc ? rl_err_prefix(e, "--megatron-args") : 0;
    }
    return plan_megatron_args_load(s->megatron_args_file, l, e);
}

/* The DeepSpeed config a launch line names (--deepspeed_config): as given (relative to the
 * working directory), else next to --megatron-args-file. Fills path or returns an error saying
 * which file is needed. */
static int launch_ds_config(const struct cli_setup *s, const struct plan_megatron_launch *l,
                            char *path, size_t n, struct rl_err *e)
{
    snprintf(path, n, "%s", l->ds_config);
    if (access(path, R_OK) == 0)
        return 0;
    if (s->megatron_args_file && l->ds_config[0] != '/') {
        const char *slash = strrchr(s->megatron_args_file, '/');
        if (slash) {
            snprintf(path, n, "%.*s/%s", (int)(slash - s->megatron_args_file), s->megatron_args_file,
                     l->ds_config);
            if (access(path, R_OK) == 0)
                return 0;
        }
    }
    return rl_errf(e, RL_EINVAL, "--deepspeed_config: '%s' (named in the Megatron arguments) is "
                   "not found; the DeepSpeed JSON it names is needed: run from its folder or give it "
                   "with --ds-config FILE", l->ds_config);
}

/* The built-in DeepSpeed config when --ds-config is absent: ZeRO-3 with pinned CPU offload of
 * the optimizer, fp16 (V100 has no bf16), ratio 0.3, DeepSpeed defaults elsewhere. */
static void builtin_zero(struct plan_zero *z)
{
    plan_zero_defaults(z);
    z->stage = 3;
    z->offload = PLAN_OFFLOAD_CPU;
    z->pin_memory = true;
    z->ratio = 0.3;
    z->dtype = PLAN_FP16;
}

/* A config whose ratio DeepSpeed would ignore or crash on cannot be simulated as a partial
 * offload: refused here with the hazard's line; check and plan report it instead. */
static int refuse_hazards(const struct plan_zero *z, struct rl_err *e)
{
    const struct plan_hazard *hz[PLAN_HAZARDS_MAX];
    int n = plan_ds_hazards(z, hz, PLAN_HAZARDS_MAX);
    for (int i = 0; i < n; i++) {
        if (hz[i]->repair == PLAN_REPAIR_NONE)
            continue;
        char line[1024];
        plan_hazard_line(hz[i], z, line, sizeof line);
        return rl_errf(e, RL_EINVAL, "%s", line);
    }
    return 0;
}

int cli_setup_resolve(const struct cli_setup *s, struct cli_ctx *c, struct rl_err *e)
{
    memset(c, 0, sizeof *c);
    int rc;
    c->catalog = s->catalog ? s->catalog : rl_catalog_dir();
    int n_model_sources = !!s->model + !!s->megatron_args + !!s->megatron_args_file;
    if (n_model_sources > 1)
        return rl_errf(e, RL_EINVAL, "--model, --megatron-args and --megatron-args-file: give at most one");

    /* A Megatron launch line gives the model, TP/PP and possibly the DeepSpeed config. */
    struct plan_megatron_launch launch;
    const bool have_launch = s->megatron_args || s->megatron_args_file;
    if (have_launch && (rc = read_launch(s, &launch, e)))
        return rc;
    char launch_ds[4200];
    const char *ds_path = s->ds_config;
    if (!ds_path && have_launch && launch.ds_config[0]) {
        if ((rc = launch_ds_config(s, &launch, launch_ds, sizeof launch_ds, e)))
            return rc;
        ds_path = launch_ds;
    } else if (ds_path && have_launch && launch.ds_config[0] && strcmp(ds_path, launch.ds_config) != 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "--ds-config %s is used; the Megatron arguments name %s", ds_path,
                 launch.ds_config);
        ctx_note(c, msg);
    }

    /* DeepSpeed config, then the launch line's settings, then command-line overrides. */
    if (ds_path) {
        /* Read once: check judges and fixes this text, and standard input cannot be read twice. */
        if ((rc = rl_read_input(ds_path, ds_path == s->ds_config, &c->ds_text, NULL, e))) {
            plan_zero_defaults(&c->zero);
            return rl_err_prefix(e, "%s", ds_path == s->ds_config ? "--ds-config" : "--deepspeed_config");
        }
        const char *base = strrchr(ds_path, '/');
        if ((rc = plan_zero_parse(&c->zero, c->ds_text, strcmp(ds_path, "-") == 0 ? "standard input" : base ? base + 1 : ds_path, e)))
            return rl_err_prefix(e, "%s", ds_path == s->ds_config ? "--ds-config" : "--deepspeed_config");
        if (ds_path == launch_ds) {
            char msg[200];
            snprintf(msg, sizeof msg, "DeepSpeed config %s (--deepspeed_config of the Megatron arguments)", ds_path);
            ctx_note(c, msg);
        }
    } else {
        builtin_zero(&c->zero);
        ctx_note(c, "no --ds-config: built-in ZeRO-3 config, optimizer offload to pinned CPU memory, ratio 0.3 and fp16 unless set otherwise");
    }
    for (int i = 0; i < c->zero.n_notes; i++)
        ctx_note(c, c->zero.notes[i]);
    if (have_launch) {
        char msg[200];
        if (launch.micro_batch > 0 && c->zero.src_micro_batch != PLAN_SRC_CONFIG) {
            c->zero.micro_batch = launch.micro_batch;
            c->zero.src_micro_batch = PLAN_SRC_CLI;
        }
        if (launch.dtype_set && c->zero.src_dtype == PLAN_SRC_CONFIG && c->zero.dtype != launch.dtype)
            return rl_errf(e, RL_EINVAL, "--%s (Megatron arguments) disagrees with the DeepSpeed "
                           "config's %s; allowed: the same precision in both",
                           plan_dtype_name(launch.dtype), plan_dtype_name(c->zero.dtype));
        if (launch.dtype_set) {
            c->zero.dtype = launch.dtype;
            if (c->zero.src_dtype != PLAN_SRC_CONFIG)
                c->zero.src_dtype = PLAN_SRC_CLI;
        }
        c->checkpoint_activations = launch.checkpoint_activations;
        if (launch.zero_stage >= 0 && launch.zero_stage != c->zero.stage) {
            snprintf(msg, sizeof msg, "Megatron --zero-stage %d differs from the DeepSpeed config's "
                     "stage %d; the config's applies", launch.zero_stage, c->zero.stage);
            ctx_note(c, msg);
        }
        if (s->verbose && launch.ignored[0]) {
            snprintf(msg, sizeof msg, "ignored Megatron arguments: %s", launch.ignored);
            if (strlen(launch.ignored) > sizeof msg - 32)
                memcpy(msg + sizeof msg - 4, "...", 4);
            ctx_note(c, msg);
        }
    }
    if (s->ratio_set) {
        c->zero.ratio = s->ratio;
        c->zero.src_ratio = PLAN_SRC_CLI;
    }
    if (s->sub_group_size_set) {
        c->zero.sub_group_size = s->sub_group_size;
        c->zero.src_sub_group_size = PLAN_SRC_CLI;
    }
    if (s->ds_version_set)
        c->zero.ds_version = s->ds_version;
    if (s->micro_batch > 0) {
        c->zero.micro_batch = s->micro_batch;
        c->zero.src_micro_batch = PLAN_SRC_CLI;
    }
    if (s->dtype_set) {
        c->zero.dtype = s->dtype;
        c->zero.src_dtype = PLAN_SRC_CLI;
    }
    if ((rc = plan_zero_validate(&c->zero, e)))
        return rc;
    if (!s->report_hazards && (rc = refuse_hazards(&c->zero, e)))
        return rc;
    if (s->policy == PLAN_POLICY_AUTO && (rc = plan_policy_for_version(c->zero.ds_version, &c->popt.policy, e)))
        return rc;
    if (s->policy != PLAN_POLICY_AUTO)
        c->popt.policy = s->policy;
    c->popt.ledger = s->ledger;

    /* Layout: the built-in default case is TP 8 on 8 GPUs. */
    c->layout = s->layout;
    if (have_launch) {
        if (launch.tp_set && c->layout.tp > 0 && c->layout.tp != launch.model.tp)
            return rl_errf(e, RL_EINVAL, "--tp %d: conflicts with --tensor-model-parallel-size %d in "
                           "the Megatron arguments; give one", c->layout.tp, launch.model.tp);
        if (launch.pp_set && c->layout.pp > 0 && c->layout.pp != launch.model.pp)
            return rl_errf(e, RL_EINVAL, "--pp %d: conflicts with --pipeline-model-parallel-size %d "
                           "in the Megatron arguments; give one", c->layout.pp, launch.model.pp);
        if (launch.tp_set)
            c->layout.tp = launch.model.tp;
        if (launch.pp_set)
            c->layout.pp = launch.model.pp;
    }
    bool builtin_model = n_model_sources == 0;
    if (builtin_model && c->layout.tp <= 0)
        c->layout.tp = 8;
    if ((rc = plan_layout_resolve(&c->layout, e)))
        return rc;
    if (s->pp_stage >= c->layout.pp)
        return rl_errf(e, RL_EINVAL, "--pp-stage: %d is outside [0, %d]", s->pp_stage, c->layout.pp - 1);

    /* Model. */
    if (have_launch) {
        struct plan_megatron_cfg mc = launch.model;
        mc.tp = c->layout.tp;
        mc.pp = c->layout.pp;
        mc.pp_stage = s->pp_stage;
        if (s->seq_len > 0)
            mc.seq_len = s->seq_len;
        if ((rc = plan_model_megatron(&c->model, &mc, e)))
            return rl_err_prefix(e, "%s", s->megatron_args ? "--megatron-args" : s->megatron_args_file);
        const char *base = s->megatron_args_file ? strrchr(s->megatron_args_file, '/') : NULL;
        snprintf(c->model.name, sizeof c->model.name, "%s",
                 s->megatron_args ? "megatron-args" : base ? base + 1 : s->megatron_args_file);
    } else {
        struct plan_model_opts mo = {.tp = c->layout.tp, .pp = c->layout.pp, .pp_stage = s->pp_stage,
                                     .seq_len = s->seq_len};
        const char *name = s->model ? s->model : "gpt-2.7b";
        if ((rc = plan_model_load(&c->model, c->catalog, name, &mo, e)))
            return rc;
    }
    if (s->megatron_split_qkv && (rc = plan_model_megatron_split_qkv(&c->model, e)))
        return rc;
    enum plan_group_rule rule = s->groups;
    if (s->megatron_rule_set) {
        if (s->groups != PLAN_GROUPS_AUTO)
            rc = rl_errf(e, RL_EINVAL, "--megatron-version and --param-groups: give one (both pick "
                         "the param-group rule)");
        else if (c->model.arch.kind != PLAN_ARCH_MEGATRON_GPT)
            rc = rl_errf(e, RL_EINVAL, "--megatron-version: applies to Megatron models only; %s is "
                         "a %s model (use --param-groups)", c->model.name,
                         plan_arch_name(c->model.arch.kind));
        if (rc) {
            plan_model_free(&c->model);
            return rc;
        }
        rule = s->megatron_rule;
    }
    plan_model_group(&c->model, rule, c->zero.has_optimizer_block);
    snprintf(c->model_desc, sizeof c->model_desc, "%s (%s), TP %d, PP %d, DP %d, %d GPUs on %d node%s",
             c->model.name, plan_arch_name(c->model.arch.kind), c->layout.tp, c->layout.pp, c->layout.dp,
             c->layout.world, c->layout.nodes, c->layout.nodes == 1 ? "" : "s");
    return 0;
}

int cli_ctx_plan(const struct cli_ctx *c, double ratio, struct plan *p, struct rl_err *e)
{
    struct plan_zero z = c->zero;
    if (ratio >= 0) {
        z.ratio = ratio;
        z.src_ratio = PLAN_SRC_CLI;
    }
    return plan_build(p, &c->model, &c->layout, &z, &c->popt, e);
}

void cli_ctx_free(struct cli_ctx *c)
{
    plan_model_free(&c->model);
    free(c->ds_text);
    memset(c, 0, sizeof *c);
}
