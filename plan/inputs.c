/* plan/inputs.c — the precedence rules that merge a DeepSpeed config, a Megatron-DeepSpeed launch
 * line and explicit settings into a model, a layout and a ZeRO config (see inputs.h). Messages
 * name the fields of struct plan_inputs; front ends rename them to their flags. */
#include <math.h>    /* fabs */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>   /* access */

#include "plan/ds_hazards.h"
#include "plan/ds_rules.h"   /* PLAN_DS_DEFAULT_VERSION */
#include "plan/inputs.h"
#include "plan/megatron_args.h"
#include "plan/step.h"   /* STEP_CHUNK_DEFAULT_NUMEL */

void plan_inputs_init(struct plan_inputs *in)
{
    memset(in, 0, sizeof *in);
    in->policy = PLAN_POLICY_AUTO;
    in->ledger = PLAN_LEDGER_AUTO;
    in->groups = PLAN_GROUPS_AUTO;
    in->ratio = -1;
}

static void setup_note(struct plan_setup *c, const char *msg)
{
    if (c->n_notes < (int)(sizeof c->notes / sizeof c->notes[0]))
        snprintf(c->notes[c->n_notes++], sizeof c->notes[0], "%s", msg);
}

/* Reads megatron_args / megatron_args_file into *l; errors name the field (a file's errors start
 * with its path). */
static int read_launch(const struct plan_inputs *in, struct plan_megatron_launch *l, struct rl_err *e)
{
    if (in->megatron_args) {
        int rc = plan_megatron_args_parse(in->megatron_args, l, e);
        return rc ? rl_err_prefix(e, "megatron_args") : 0;
    }
    return plan_megatron_args_load(in->megatron_args_file, l, e);
}

/* The DeepSpeed config a launch line names (--deepspeed_config): as given (relative to the
 * working directory), else next to megatron_args_file. Fills path or returns an error saying
 * which file is needed. */
static int launch_ds_config(const struct plan_inputs *in, const struct plan_megatron_launch *l,
                            char *path, size_t n, struct rl_err *e)
{
    snprintf(path, n, "%s", l->ds_config);
    if (access(path, R_OK) == 0)
        return 0;
    if (in->megatron_args_file && l->ds_config[0] != '/') {
        const char *slash = strrchr(in->megatron_args_file, '/');
        if (slash) {
            snprintf(path, n, "%.*s/%s", (int)(slash - in->megatron_args_file), in->megatron_args_file,
                     l->ds_config);
            if (access(path, R_OK) == 0)
                return 0;
        }
    }
    return rl_errf(e, RL_EINVAL, "--deepspeed_config: '%s' (named in the Megatron arguments) is "
                   "not found; the DeepSpeed JSON it names is needed: run from its folder or give it "
                   "with ds_config FILE", l->ds_config);
}

/* The built-in DeepSpeed config when ds_config is absent: ZeRO-3 with pinned CPU offload of
 * the optimizer, fp16 (V100 has no bf16), ratio 0.3, DeepSpeed defaults elsewhere. */
static void builtin_zero(struct plan_zero *z)
{
    plan_zero_defaults(z);
    z->stage = 3;
    z->offload = PLAN_OFFLOAD_CPU;
    z->pin_memory = true;
    z->src_pin_memory = PLAN_SRC_CONFIG;
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

/* The DeepSpeed config: ds_config, else the one the launch line names, else the built-in one. */
static int read_zero(const struct plan_inputs *in, const struct plan_megatron_launch *launch,
                     struct plan_setup *c, struct rl_err *e)
{
    char launch_ds[4200];
    const char *ds_path = in->ds_config;
    if (!ds_path && launch && launch->ds_config[0]) {
        RL_TRY(launch_ds_config(in, launch, launch_ds, sizeof launch_ds, e));
        ds_path = launch_ds;
    } else if (ds_path && launch && launch->ds_config[0] && strcmp(ds_path, launch->ds_config) != 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "ds_config %s is used; the Megatron arguments name %s", ds_path,
                 launch->ds_config);
        setup_note(c, msg);
    }
    if (ds_path) {
        const char *field = ds_path == in->ds_config ? "ds_config" : "--deepspeed_config";
        /* Read once: check judges and fixes this text, and standard input cannot be read twice. */
        if (rl_read_input(ds_path, ds_path == in->ds_config, &c->ds_text, NULL, e)) {
            plan_zero_defaults(&c->zero);
            return rl_err_prefix(e, "%s", field);
        }
        const char *base = strrchr(ds_path, '/');
        const char *name = strcmp(ds_path, "-") == 0 ? "standard input" : base ? base + 1 : ds_path;
        /* Read as the release reads it (its coercions and strict blocks), and as each further
         * release does: a key one of them refuses fails the config. */
        struct rl_version v = in->ds_version_set ? in->ds_version : PLAN_DS_DEFAULT_VERSION;
        if (plan_zero_parse_release(&c->zero, c->ds_text, name, v, e))
            return rl_err_prefix(e, "%s", field);
        for (int i = 0; i < in->n_more_versions && i < PLAN_MAX_MORE_VERSIONS; i++) {
            struct plan_zero other;
            if (plan_zero_parse_release(&other, c->ds_text, name, in->more_versions[i], e))
                return rl_err_prefix(e, "%s", field);
        }
        if (ds_path == launch_ds) {
            char msg[200];
            snprintf(msg, sizeof msg, "DeepSpeed config %s (--deepspeed_config of the Megatron arguments)", ds_path);
            setup_note(c, msg);
        }
    } else {
        builtin_zero(&c->zero);
        setup_note(c, "no ds_config: built-in ZeRO-3 config, optimizer offload to pinned CPU memory, ratio 0.3 and fp16 unless set otherwise");
    }
    return 0;
}

/* The launch line's settings over the config's: the micro-batch where the config leaves it, the
 * precision (which must agree with a config that sets one), activation checkpointing. */
static int apply_launch(const struct plan_inputs *in, const struct plan_megatron_launch *launch,
                        struct plan_setup *c, struct rl_err *e)
{
    char msg[200];
    c->zero.client_scheduler = true;   /* Megatron's OptimizerParamScheduler sets every group's lr */
    if (launch->micro_batch > 0 && c->zero.src_micro_batch != PLAN_SRC_CONFIG) {
        c->zero.micro_batch = launch->micro_batch;
        c->zero.src_micro_batch = PLAN_SRC_CLI;
    }
    if (launch->dtype_set && c->zero.src_dtype == PLAN_SRC_CONFIG && c->zero.dtype != launch->dtype)
        return rl_errf(e, RL_EINVAL, "--%s (Megatron arguments) disagrees with the DeepSpeed "
                       "config's %s; allowed: the same precision in both",
                       plan_dtype_name(launch->dtype), plan_dtype_name(c->zero.dtype));
    if (launch->dtype_set) {
        c->zero.dtype = launch->dtype;
        if (c->zero.src_dtype != PLAN_SRC_CONFIG)
            c->zero.src_dtype = PLAN_SRC_CLI;
    }
    c->checkpoint_activations = launch->checkpoint_activations;
    if (launch->zero_stage >= 0 && launch->zero_stage != c->zero.stage) {
        snprintf(msg, sizeof msg, "Megatron --zero-stage %d differs from the DeepSpeed config's "
                 "stage %d; the config's applies", launch->zero_stage, c->zero.stage);
        setup_note(c, msg);
    }
    if (in->verbose && launch->ignored[0]) {
        snprintf(msg, sizeof msg, "ignored Megatron arguments: %s", launch->ignored);
        if (strlen(launch->ignored) > sizeof msg - 32)
            memcpy(msg + sizeof msg - 4, "...", 4);
        setup_note(c, msg);
    }
    return 0;
}

/* The explicit settings over everything, then the checks on the result and the policy. */
static int apply_settings(const struct plan_inputs *in, struct plan_setup *c, struct rl_err *e)
{
    if (in->ratio_set) {
        c->zero.ratio = in->ratio;
        c->zero.src_ratio = PLAN_SRC_CLI;
    }
    if (in->sub_group_size_set) {
        c->zero.sub_group_size = in->sub_group_size;
        c->zero.src_sub_group_size = PLAN_SRC_CLI;
    }
    if (in->ds_version_set)
        c->zero.ds_version = in->ds_version;
    plan_zero_resolve_pin(&c->zero);
    if (in->micro_batch > 0) {
        c->zero.micro_batch = in->micro_batch;
        c->zero.src_micro_batch = PLAN_SRC_CLI;
    }
    if (in->dtype_set) {
        c->zero.dtype = in->dtype;
        c->zero.src_dtype = PLAN_SRC_CLI;
    }
    RL_TRY(plan_zero_validate(&c->zero, e));
    if (!in->report_hazards && refuse_hazards(&c->zero, e)) {
        /* Name the config the stage and ratio came from. */
        if (in->ds_config) {
            const char *base = strrchr(in->ds_config, '/');
            return rl_err_prefix(e, "ds_config: %s", strcmp(in->ds_config, "-") == 0 ? "standard input"
                                                     : base ? base + 1 : in->ds_config);
        }
        return rl_err_prefix(e, "the DeepSpeed config");
    }
    if (in->policy == PLAN_POLICY_AUTO) {
        RL_TRY(plan_policy_for_version(c->zero.ds_version, &c->popt.policy, e));
        for (int i = 0; i < in->n_more_versions && i < PLAN_MAX_MORE_VERSIONS; i++) {
            RL_TRY(plan_policy_for_version(in->more_versions[i], &c->more_policies[i], e));
            c->more_versions[i] = in->more_versions[i];
            c->n_more = i + 1;
        }
    } else {
        if (in->n_more_versions > 0)
            return rl_errf(e, RL_EINVAL, "deepspeed_version: several versions with policy %s; allowed: "
                           "several versions with policy auto (each version's own rule)", plan_policy_name(in->policy));
        c->popt.policy = in->policy;
    }
    c->popt.ledger = in->ledger;
    return 0;
}

/* Layout: the built-in default case is TP 8 on 8 GPUs; under a launcher the data-parallel degree
 * is its world size unless the layout says otherwise; TP and PP may come from the launch line. */
static int resolve_layout(const struct plan_inputs *in, const struct plan_megatron_launch *launch,
                          bool builtin_model, struct plan_setup *c, struct rl_err *e)
{
    c->layout = in->layout;
    const bool dp_from_world = in->mpi_world > 0 && c->layout.dp <= 0 && c->layout.world <= 0 &&
                               c->layout.nodes <= 0;
    if (dp_from_world)
        c->layout.dp = in->mpi_world;
    if (launch) {
        if (launch->tp_set && c->layout.tp > 0 && c->layout.tp != launch->model.tp)
            return rl_errf(e, RL_EINVAL, "tp %d: conflicts with --tensor-model-parallel-size %d in "
                           "the Megatron arguments; give one", c->layout.tp, launch->model.tp);
        if (launch->pp_set && c->layout.pp > 0 && c->layout.pp != launch->model.pp)
            return rl_errf(e, RL_EINVAL, "pp %d: conflicts with --pipeline-model-parallel-size %d "
                           "in the Megatron arguments; give one", c->layout.pp, launch->model.pp);
        if (launch->tp_set)
            c->layout.tp = launch->model.tp;
        if (launch->pp_set)
            c->layout.pp = launch->model.pp;
    }
    if (builtin_model && c->layout.tp <= 0)
        c->layout.tp = 8;
    int rc = plan_layout_resolve(&c->layout, e);
    if (rc)
        return dp_from_world ? rl_err_prefix(e, "dp %d (the MPI world size)", in->mpi_world) : rc;
    if (in->pp_stage >= c->layout.pp)
        return rl_errf(e, RL_EINVAL, "pp_stage: %d is outside [0, %d]", in->pp_stage, c->layout.pp - 1);
    return 0;
}

/* DeepSpeed's batch rule over the resolved layout (plan_zero_resolve_batch), with a note when it
 * makes the accumulation more than one micro-step. */
static int resolve_batch(struct plan_setup *c, struct rl_err *e)
{
    struct plan_zero *z = &c->zero;
    const bool derived = z->src_train_batch == PLAN_SRC_CONFIG && z->src_grad_accum != PLAN_SRC_CONFIG;
    RL_TRY(plan_zero_resolve_batch(z, c->layout.dp, e));
    if (derived && z->grad_accum > 1) {
        char msg[200];
        snprintf(msg, sizeof msg, "gradient_accumulation_steps %lld: train_batch_size %lld / micro-batch %lld / DP %d, "
                 "as DeepSpeed derives it", (long long)z->grad_accum, (long long)z->train_batch,
                 (long long)z->micro_batch, c->layout.dp);
        setup_note(c, msg);
    }
    return 0;
}

/* Groups m by a list: the spec a caller gives (a probe's names), else the group file. A path
 * that cannot be read is reported as what it also is not: a rule name. */
static int group_list(const struct plan_inputs *in, struct plan_model *m, struct rl_err *e)
{
    if (in->group_spec)
        return plan_model_group_spec(m, in->group_spec, e);
    struct plan_group_spec gs;
    struct rl_err re = {0};
    int rc = plan_group_spec_read(in->groups_file, &gs, &re);
    if (rc == RL_ENOENT || (rc && strstr(re.msg, "No such file")))
        return rl_errf(e, RL_EINVAL, "param_groups: '%s' is neither a rule (auto, megatron, megatron-old, hf, "
                       "hf-two, flat) nor a group file (%s)", in->groups_file, re.msg);
    if (rc) {
        *e = re;
        return rl_err_prefix(e, "param_groups");
    }
    rc = plan_model_group_spec(m, &gs, e);
    plan_group_spec_free(&gs);
    return rc ? rl_err_prefix(e, "param_groups") : 0;
}

/* The model for the resolved layout, grouped by its param-group rule. */
static int resolve_model(const struct plan_inputs *in, const struct plan_megatron_launch *launch,
                         struct plan_setup *c, struct rl_err *e)
{
    if (launch) {
        struct plan_megatron_cfg mc = launch->model;
        mc.tp = c->layout.tp;
        mc.pp = c->layout.pp;
        mc.pp_stage = in->pp_stage;
        if (in->seq_len > 0)
            mc.seq_len = in->seq_len;
        if (plan_model_megatron(&c->model, &mc, e))
            return rl_err_prefix(e, "%s", in->megatron_args ? "megatron_args" : in->megatron_args_file);
        c->model.arch.seq_origin = in->seq_len > 0 ? PLAN_SEQ_GIVEN : PLAN_SEQ_LAUNCH;
        c->model.arch.seq_key = NULL;
        const char *base = in->megatron_args_file ? strrchr(in->megatron_args_file, '/') : NULL;
        snprintf(c->model.name, sizeof c->model.name, "%s",
                 in->megatron_args ? "megatron-args" : base ? base + 1 : in->megatron_args_file);
    } else {
        struct plan_model_opts mo = {.tp = c->layout.tp, .pp = c->layout.pp, .pp_stage = in->pp_stage,
                                     .seq_len = in->seq_len};
        RL_TRY(plan_model_load(&c->model, c->catalog, in->model ? in->model : "gpt-2.7b", &mo, e));
    }
    if (in->megatron_split_qkv)
        RL_TRY(plan_model_megatron_split_qkv(&c->model, e));
    enum plan_group_rule rule = in->groups;
    if (in->megatron_rule_set) {
        int rc = 0;
        if (in->groups != PLAN_GROUPS_AUTO || in->groups_file)
            rc = rl_errf(e, RL_EINVAL, "megatron_version and param_groups: give one (both pick "
                         "the param-group rule)");
        else if (c->model.arch.kind != PLAN_ARCH_MEGATRON_GPT)
            rc = rl_errf(e, RL_EINVAL, "megatron_version: applies to Megatron models only; %s is "
                         "a %s model (use param_groups)", c->model.name,
                         plan_arch_name(c->model.arch.kind));
        if (rc) {
            plan_model_free(&c->model);
            return rc;
        }
        rule = in->megatron_rule;
    }
    if (in->group_spec || in->groups_file) {
        int rc = group_list(in, &c->model, e);
        if (rc)
            plan_model_free(&c->model);
        return rc;
    }
    plan_model_group(&c->model, rule, c->zero.has_optimizer_block);
    return 0;
}

int plan_inputs_resolve(const struct plan_inputs *in, struct plan_setup *c, struct rl_err *e)
{
    memset(c, 0, sizeof *c);
    c->catalog = in->catalog ? in->catalog : rl_catalog_dir();
    int n_model_sources = !!in->model + !!in->megatron_args + !!in->megatron_args_file;
    if (n_model_sources > 1)
        return rl_errf(e, RL_EINVAL, "model, megatron_args and megatron_args_file: give at most one");
    /* A Megatron launch line gives the model, TP/PP and possibly the DeepSpeed config. */
    struct plan_megatron_launch launch_line;
    const struct plan_megatron_launch *launch = NULL;
    if (in->megatron_args || in->megatron_args_file) {
        RL_TRY(read_launch(in, &launch_line, e));
        launch = &launch_line;
    }
    /* The DeepSpeed config, then the launch line's settings, then the explicit ones. */
    RL_TRY(read_zero(in, launch, c, e));
    if (launch)
        RL_TRY(apply_launch(in, launch, c, e));
    RL_TRY(apply_settings(in, c, e));
    RL_TRY(resolve_layout(in, launch, n_model_sources == 0, c, e));
    RL_TRY(resolve_batch(c, e));
    RL_TRY(resolve_model(in, launch, c, e));
    /* An HF model's "auto" buckets are the HF Trainer's to fill, from its hidden size; under a
     * Megatron launch line DeepSpeed drops "auto" to its defaults. */
    if (!launch && c->model.arch.kind != PLAN_ARCH_MEGATRON_GPT)
        plan_zero_resolve_hf_auto(&c->zero, c->model.arch.hidden);
    if (in->dtype_from_model && !in->dtype_set && c->model.arch.has_torch_dtype &&
        (c->zero.src_dtype == PLAN_SRC_AUTO || !c->ds_text)) {
        /* The Trainer runs a bf16 checkpoint with --bf16 (an fp16 one with --fp16): "auto"
         * blocks as that flag fills them, or, without a config, the precision itself. */
        enum plan_dtype t = c->model.arch.torch_dtype;
        if (c->ds_text)
            plan_zero_resolve_hf_dtype(&c->zero, t);
        else
            c->zero.dtype = t;
        c->zero.src_dtype = PLAN_SRC_MODEL;
        char msg[200];
        snprintf(msg, sizeof msg, "dtype %s: from the model's torch_dtype %s%s", plan_dtype_name(c->zero.dtype),
                 t == PLAN_BF16 ? "bfloat16" : t == PLAN_FP16 ? "float16" : "float32",
                 c->ds_text && c->zero.dtype != t ? " (the config has no \"auto\" block of that precision: the "
                 "Trainer's flag leaves DeepSpeed in fp32)" : "");
        setup_note(c, msg);
    }
    for (int i = 0; i < c->zero.n_notes; i++)
        setup_note(c, c->zero.notes[i]);
    snprintf(c->model_desc, sizeof c->model_desc, "%s (%s), TP %d, PP %d, DP %d, %d GPUs on %d node%s",
             c->model.name, plan_arch_name(c->model.arch.kind), c->layout.tp, c->layout.pp, c->layout.dp,
             c->layout.world, c->layout.nodes, c->layout.nodes == 1 ? "" : "s");
    return 0;
}

int plan_setup_plan(const struct plan_setup *c, double ratio, struct plan *p, struct rl_err *e)
{
    struct plan_zero z = c->zero;
    if (ratio >= 0) {
        z.ratio = ratio;
        z.src_ratio = PLAN_SRC_CLI;
    }
    return plan_build(p, &c->model, &c->layout, &z, &c->popt, e);
}

int plan_exec_plan(const struct plan_setup *c, const struct plan_model *scaled, double scale, double ratio,
                   enum plan_policy policy, struct plan *p, struct rl_err *e)
{
    memset(p, 0, sizeof *p);
    struct plan_zero z = c->zero;
    int64_t chunk = STEP_CHUNK_DEFAULT_NUMEL;
    plan_scale_zero(&z, &chunk, scale);
    if (ratio >= 0) {
        z.ratio = ratio;
        z.src_ratio = PLAN_SRC_CLI;
    }
    struct plan_options po = c->popt;
    if (policy != PLAN_POLICY_AUTO)
        po.policy = policy;
    po.ledger = PLAN_LEDGER_EXEC;
    po.exec_chunk_numel = chunk;
    return plan_build(p, scaled, &c->layout, &z, &po, e);
}

void plan_setup_free(struct plan_setup *c)
{
    plan_model_free(&c->model);
    free(c->ds_text);
    memset(c, 0, sizeof *c);
}

/* ---- the facts of a real run (a log, a probe) against the setup ---------------------------------- */

static int contradicts(struct rl_err *e, const char *what, const char *field, const char *run, const char *given,
                       const char *source)
{
    return rl_errf(e, RL_EINVAL, "%s: %s: the run used %s, %s says %s; give the run's own config (or none: "
                   "the run's values are taken)", what, field, run, source, given);
}

static const char *src_name(enum plan_src s) { return s == PLAN_SRC_CLI ? "the command line" : "the DeepSpeed config"; }

int plan_inputs_apply_facts(const struct plan_inputs *in, const struct plan_run_facts *f, const char *what,
                            struct plan_setup *c, struct rl_err *e)
{
    const int dp = f->dp;
    struct plan_zero *z = &c->zero;
    char a[48], b[48];
    if (f->have_version) {
        if (in->ds_version_set && rl_version_cmp(in->ds_version, f->version) != 0) {
            rl_version_str(f->version, a, sizeof a);
            rl_version_str(in->ds_version, b, sizeof b);
            return contradicts(e, what, "deepspeed_version", a, b, "the deepspeed_version given");
        }
        z->ds_version = f->version;
        plan_zero_resolve_pin(z);
        /* The placement rule and the ledger follow the run's version unless the user chose them. */
        if (in->policy == PLAN_POLICY_AUTO)
            c->popt.policy = PLAN_POLICY_AUTO;
        if (in->ledger == PLAN_LEDGER_AUTO)
            c->popt.ledger = PLAN_LEDGER_AUTO;
    }
    if (f->stage >= 0) {
        if (in->ds_config && z->stage != f->stage) {
            snprintf(a, sizeof a, "%d", f->stage);
            snprintf(b, sizeof b, "%d", z->stage);
            return contradicts(e, what, "zero_optimization.stage", a, b, "the DeepSpeed config");
        }
        z->stage = f->stage;
    }
    if (f->offload_device[0]) {
        enum plan_offload dev = strcmp(f->offload_device, "cpu") == 0    ? PLAN_OFFLOAD_CPU
                                : strcmp(f->offload_device, "nvme") == 0 ? PLAN_OFFLOAD_NVME
                                                                         : PLAN_OFFLOAD_NONE;
        static const char *const names[] = {"none", "cpu", "nvme"};
        if (in->ds_config && z->offload != dev)
            return contradicts(e, what, "zero_optimization.offload_optimizer.device", f->offload_device,
                               names[z->offload], "the DeepSpeed config");
        z->offload = dev;
    }
    if (f->have_ratio) {
        if (z->src_ratio != PLAN_SRC_DEFAULT && fabs(z->ratio - f->ratio) > 1e-12) {
            snprintf(a, sizeof a, "%.6g", f->ratio);
            snprintf(b, sizeof b, "%.6g", z->ratio);
            return contradicts(e, what, "zero_optimization.offload_optimizer.ratio", a, b, src_name(z->src_ratio));
        }
        z->ratio = f->ratio;
    }
    const struct {
        const char *field;        /* JSON path in the DeepSpeed config */
        int64_t run;              /* the run's value, -1 when unknown */
        int64_t *mine;            /* the setup's */
        enum plan_src src;        /* where the setup's came from */
    } ints[] = {
        {"zero_optimization.sub_group_size", f->sub_group_size, &z->sub_group_size, z->src_sub_group_size},
        {"zero_optimization.reduce_bucket_size", f->reduce_bucket_size, &z->reduce_bucket_size, z->src_reduce_bucket_size},
        {"zero_optimization.stage3_prefetch_bucket_size", f->prefetch_bucket_size, &z->prefetch_bucket_size,
         z->src_prefetch_bucket_size},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (ints[i].run < 0)
            continue;
        if (ints[i].src != PLAN_SRC_DEFAULT && *ints[i].mine != ints[i].run) {
            snprintf(a, sizeof a, "%lld", (long long)ints[i].run);
            snprintf(b, sizeof b, "%lld", (long long)*ints[i].mine);
            return contradicts(e, what, ints[i].field, a, b, src_name(ints[i].src));
        }
        *ints[i].mine = ints[i].run;
    }
    if (f->pin_memory >= 0) {
        if (in->ds_config && z->src_pin_memory != PLAN_SRC_DEFAULT && z->offload == PLAN_OFFLOAD_CPU &&
            z->pin_memory != (f->pin_memory == 1))
            return contradicts(e, what, "zero_optimization.offload_optimizer.pin_memory",
                               f->pin_memory ? "true" : "false", z->pin_memory ? "true" : "false", "the DeepSpeed config");
        z->pin_memory = f->pin_memory == 1;
        z->src_pin_memory = PLAN_SRC_CONFIG;
    }
    if (f->dtype[0]) {
        enum plan_dtype d = strcmp(f->dtype, "bf16") == 0 ? PLAN_BF16 : strcmp(f->dtype, "fp16") == 0 ? PLAN_FP16 : PLAN_FP32;
        if (z->src_dtype != PLAN_SRC_DEFAULT && z->dtype != d)
            return contradicts(e, what, "dtype (bf16/fp16 enabled)", f->dtype, plan_dtype_name(z->dtype),
                               src_name(z->src_dtype));
        z->dtype = d;
    }
    if (dp > 0) {
        bool given = in->layout.dp > 0 || in->layout.world > 0 || in->layout.nodes > 0;
        if (given && c->layout.dp != dp) {
            snprintf(a, sizeof a, "%d", dp);
            snprintf(b, sizeof b, "%d", c->layout.dp);
            return contradicts(e, what, "dp (data-parallel ranks)", a, b, "the command line");
        }
        c->layout.dp = dp;
        c->layout.world = dp * c->layout.tp * c->layout.pp;
        c->layout.nodes = 0;
        c->layout.gpus_per_node = 0;
    }
    return 0;
}
