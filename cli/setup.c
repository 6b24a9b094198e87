/* cli/setup.c — the options every planning command shares (model, layout, DeepSpeed config,
 * policy), parsed into the inputs plan/inputs.c resolves; its messages name the inputs' fields,
 * which become the flags here. */
#include <string.h>

#include "cli/cli.h"
#include "plan/ds_rules.h"
#include "plan/megatron_args.h"

enum {
    S_MODEL = 1000, S_MEGATRON_ARGS, S_MEGATRON_ARGS_FILE, S_DS_CONFIG, S_CATALOG, S_TP, S_PP, S_DP,
    S_GPUS, S_NODES, S_GPN, S_PP_STAGE, S_RATIO, S_POLICY, S_LEDGER, S_DS_VERSION, S_SGS, S_GROUPS,
    S_SEQ, S_MICRO, S_DTYPE, S_VERBOSE, S_RANK, S_MEGATRON_VERSION,
};

/* The help lines generated from plan/'s tables (the policy and ledger names, the DeepSpeed
 * releases whose rules differ and the default one, plan/ds_rules.h), written once by
 * cli_setup_help_init before any command runs. */
static char policy_help[256], ledger_help[256], version_help[512];

/* "what: auto (note), name, name, ...": names starts with "auto" (PLAN_POLICY_AUTO,
 * PLAN_LEDGER_AUTO), the note goes after it. */
static void help_names(char *buf, size_t n, const char *what, const char *names, const char *auto_note)
{
    snprintf(buf, n, "%s: auto (%s)%s", what, auto_note, names + strlen("auto"));
}

void cli_setup_help_init(void)
{
    char names[256], changes[256];
    plan_policy_names(names, sizeof names);
    help_names(policy_help, sizeof policy_help, "placement", names, "from --deepspeed-version");
    plan_ledger_names(names, sizeof names);
    help_names(ledger_help, sizeof ledger_help, "memory ledger", names, "from the version");
    struct rl_version f = plan_ds_first_version();
    plan_ds_changes_text(changes, sizeof changes);
    snprintf(version_help, sizeof version_help,
             "DeepSpeed whose rules apply, %s or later (default " PLAN_DS_DEFAULT_VERSION_STR
             "; the rules change at %s); several, comma-separated: check and tune find one sub_group_size "
             "every one honors", RL_VERSION_S(f), changes);
}

const struct cli_opt cli_setup_opts[] = {
    {"model", "NAME|FILE", "model preset (ratiolab catalog) or HF config.json (default gpt-2.7b)", S_MODEL},
    {"megatron-args", "\"ARGS\"", "the model and layout from a Megatron-DeepSpeed launch line", S_MEGATRON_ARGS},
    {"megatron-args-file", "FILE", "the same, read from a file", S_MEGATRON_ARGS_FILE},
    {"megatron-version", "DATE|old|new", "Megatron-DeepSpeed checkout (YYYY-MM): picks its param-group rule (new from " PLAN_MEGATRON_RULE_DATE ")", S_MEGATRON_VERSION},
    {"ds-config", "FILE", "DeepSpeed JSON config, - for standard input (default: ZeRO-3, CPU offload, pinned, fp16)", S_DS_CONFIG},
    {"ratio", "R", "offload ratio in [0, 1], overrides the config (default 0.3 without a config)", S_RATIO},
    {"policy", "P", policy_help, S_POLICY},
    {"deepspeed-version", "X.Y.Z[,..]", version_help, S_DS_VERSION},
    {"sub-group-size", "N", "elements per sub-group, overrides the config (DeepSpeed default 1e9)", S_SGS},
    {"ledger", "L", ledger_help, S_LEDGER},
    {"param-groups", "RULE", "auto, megatron, megatron-old, hf (hf-two), flat (or a group file: docs/inputs.md)", S_GROUPS},
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

static int layout_int(const char *field, const char *v, int *out, struct rl_err *e)
{
    return rl_parse_int(field, v, 1, 1 << 20, out, e);
}

int cli_setup_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct plan_inputs *s = ctx;
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
    case S_POLICY:
        return plan_policy_parse(v, &s->policy, e) ? cli_err_flag(e, "policy", "--policy") : 0;
    case S_LEDGER:
        return plan_ledger_parse(v, &s->ledger, e) ? cli_err_flag(e, "ledger", "--ledger") : 0;
    case S_DS_VERSION: {
        /* One version, or several separated by commas: the first is the version the plan and
         * the prediction use; the others' placement rules must hold too. */
        s->ds_version_set = true;
        s->n_more_versions = 0;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", v);
        int k = 0;
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), k++) {
            if (k > PLAN_MAX_MORE_VERSIONS)
                return rl_errf(e, RL_EINVAL, "--deepspeed-version: '%s' lists more than %d versions", v,
                               PLAN_MAX_MORE_VERSIONS + 1);
            int rc = rl_parse_version("--deepspeed-version", tok, k == 0 ? &s->ds_version : &s->more_versions[k - 1], e);
            if (rc)
                return rc;
            s->n_more_versions = k;
        }
        if (k == 0)
            return rl_errf(e, RL_EINVAL, "--deepspeed-version: '%s' names no version; expected X.Y.Z or X.Y.Z,X.Y.Z", v);
        return 0;
    }
    case S_SGS:
        s->sub_group_size_set = true;
        return rl_parse_i64("--sub-group-size", v, 1, INT64_C(1) << 50, &s->sub_group_size, e);
    case S_GROUPS:   /* a rule's name, else a group file's path (read when the model is resolved) */
        s->groups_file = NULL;
        if (plan_group_rule_parse(v, &s->groups, NULL) == 0)
            return 0;
        s->groups = PLAN_GROUPS_AUTO;
        s->groups_file = v;
        return 0;
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

/* The inputs' fields that are flags here, each renamed where a message names it as a word: the
 * long names and the layout degrees anywhere, `model` and `rank` (also prose words) only before
 * the first ':' or as the first word after a ": ", where messages put the field they are about
 * ("rank: 9 is outside [0, 7]"). A layout field only when the user gave it: the executor takes
 * the data-parallel degree from the MPI world size, and nobody typed --dp then. */
enum { ANYWHERE, ABOUT };
enum { ALWAYS, GIVEN_TP, GIVEN_PP, GIVEN_DP, GIVEN_WORLD, GIVEN_NODES, GIVEN_GPN, GIVEN_RANK };
static const struct {
    const char *field;   /* the name plan/ uses */
    const char *flag;    /* the option */
    int where;           /* ANYWHERE or ABOUT */
    int given;           /* ALWAYS, or the layout field that must be set */
} field_flags[] = {
    {"megatron_args_file", "--megatron-args-file", ANYWHERE, ALWAYS},
    {"megatron_args", "--megatron-args", ANYWHERE, ALWAYS},
    {"megatron_version", "--megatron-version", ANYWHERE, ALWAYS},
    {"param_groups", "--param-groups", ANYWHERE, ALWAYS},
    {"ds_config", "--ds-config", ANYWHERE, ALWAYS},
    {"deepspeed_version", "--deepspeed-version", ANYWHERE, ALWAYS},
    {"pp_stage", "--pp-stage", ANYWHERE, ALWAYS},
    {"seq_len", "--seq-len", ANYWHERE, ALWAYS},
    {"gpus_per_node", "--gpus-per-node", ANYWHERE, GIVEN_GPN},
    {"tp", "--tp", ANYWHERE, GIVEN_TP},
    {"pp", "--pp", ANYWHERE, GIVEN_PP},
    {"dp", "--dp", ANYWHERE, GIVEN_DP},
    {"gpus", "--gpus", ANYWHERE, GIVEN_WORLD},
    {"nodes", "--nodes", ANYWHERE, GIVEN_NODES},
    {"model", "--model", ABOUT, ALWAYS},
    {"rank", "--rank", ABOUT, GIVEN_RANK},
};
#define N_FIELD_FLAGS (sizeof field_flags / sizeof field_flags[0])

static bool word_start(const char *msg, size_t i)
{
    return i == 0 || msg[i - 1] == ' ' || msg[i - 1] == '(' || msg[i - 1] == ',';
}

static bool word_end(char c) { return c == 0 || c == ' ' || c == ',' || c == ')' || c == ':'; }

/* The entry of field_flags that msg names at i, or -1. */
static int field_at(const struct plan_inputs *s, const char *msg, size_t i, size_t head)
{
    const int given[] = {1, s->layout.tp, s->layout.pp, s->layout.dp, s->layout.world, s->layout.nodes,
                         s->layout.gpus_per_node, s->layout.rank};
    if (!word_start(msg, i))
        return -1;
    bool about = i < head || (i >= 2 && msg[i - 1] == ' ' && msg[i - 2] == ':');
    for (size_t k = 0; k < N_FIELD_FLAGS; k++) {
        size_t len = strlen(field_flags[k].field);
        if (strncmp(msg + i, field_flags[k].field, len) == 0 && word_end(msg[i + len]) &&
            (field_flags[k].where == ANYWHERE || about) && given[field_flags[k].given] > 0)
            return (int)k;
    }
    return -1;
}

/* Rewrites msg (capacity n) with the flags for the fields it names, as field_flags says. */
static void name_flags(const struct plan_inputs *s, char *msg, size_t n)
{
    const char *colon = strchr(msg, ':');
    const size_t head = colon ? (size_t)(colon - msg) : strcspn(msg, " ");
    char out[RL_ERR_MSG_MAX];
    size_t o = 0;
    for (size_t i = 0; msg[i] && o + 1 < sizeof out;) {
        int k = field_at(s, msg, i, head);
        if (k < 0) {
            out[o++] = msg[i++];
            continue;
        }
        int w = snprintf(out + o, sizeof out - o, "%s", field_flags[k].flag);
        o = o + (size_t)w < sizeof out ? o + (size_t)w : sizeof out - 1;
        i += strlen(field_flags[k].field);
    }
    out[o] = 0;
    snprintf(msg, n, "%s", out);
}

int cli_setup_resolve(const struct plan_inputs *s, struct plan_setup *c, struct rl_err *e)
{
    int rc = plan_inputs_resolve(s, c, e);
    if (rc) {
        name_flags(s, e->msg, sizeof e->msg);
        return rc;
    }
    for (int i = 0; i < c->n_notes; i++)
        name_flags(s, c->notes[i], sizeof c->notes[i]);
    if (c->zero.src_dtype == PLAN_SRC_AUTO)
        fprintf(stderr, "ratiolab: note: the DeepSpeed config's fp16/bf16 \"enabled\" is \"auto\": planned as %s, as "
                "DeepSpeed itself resolves it; the HF Trainer fills \"auto\" from its --fp16/--bf16, so give "
                "--dtype bf16 or --dtype fp16 to plan what the Trainer runs\n", plan_dtype_name(c->zero.dtype));
    return 0;
}

/* Which dtype the judgement used and where it came from (an "auto" in an HF-style config is
 * otherwise invisible). */
const char *cli_dtype_source(const struct plan_setup *c)
{
    switch (c->zero.src_dtype) {
    case PLAN_SRC_CLI: return "--dtype or the Megatron arguments";
    case PLAN_SRC_CONFIG: return "the DeepSpeed config";
    case PLAN_SRC_AUTO: return "fp16/bf16.enabled \"auto\", resolved to false as DeepSpeed does; the HF Trainer's --fp16/--bf16 correspond to --dtype fp16/bf16";
    case PLAN_SRC_MODEL:
        if (c->zero.dtype != c->model.arch.torch_dtype)   /* run with --bf16 (--fp16) that no "auto" block takes */
            return c->model.arch.torch_dtype == PLAN_BF16
                       ? "the model's torch_dtype bfloat16 means the Trainer's --bf16, which the config's "
                         "fp16-only \"auto\" leaves at DeepSpeed's fp32: add \"bf16\": {\"enabled\": \"auto\"}"
                       : "the model's torch_dtype float16 means the Trainer's --fp16, which the config's bf16-only "
                         "\"auto\" leaves at DeepSpeed's fp32: add \"fp16\": {\"enabled\": \"auto\"}";
        return "the model's torch_dtype";
    case PLAN_SRC_DEFAULT: break;
    }
    return "DeepSpeed's default (no fp16 or bf16 block enabled)";
}

const char *cli_seq_text(const struct plan_setup *c, char *buf, size_t n)
{
    const struct plan_arch *a = &c->model.arch;
    const long long s = (long long)a->seq_len;
    switch (a->seq_origin) {
    case PLAN_SEQ_GIVEN:
        snprintf(buf, n, "seq %lld (from --seq-len)", s);
        break;
    case PLAN_SEQ_PRESET:
        snprintf(buf, n, "seq %lld (from the preset's seq_len_default; --seq-len to change)", s);
        break;
    case PLAN_SEQ_LAUNCH:
        snprintf(buf, n, "seq %lld (from the launch line's --seq-length; --seq-len to change)", s);
        break;
    case PLAN_SEQ_CONFIG:
        snprintf(buf, n, "seq %lld (from the config's %s; --seq-len to change)", s, a->seq_key ? a->seq_key : "default");
        break;
    case PLAN_SEQ_CAPPED:
        snprintf(buf, n, "seq %lld (from ratiolab's default %d: the config's %s %lld is the context the model "
                 "supports, not a training length; --seq-len to change)", s, PLAN_SEQ_LEN_DEFAULT,
                 a->seq_key ? a->seq_key : "max_position_embeddings", (long long)a->seq_config);
        break;
    default:
        snprintf(buf, n, "seq %lld", s);
        break;
    }
    return buf;
}

const char *cli_model_head(const struct plan_setup *c, char *buf, size_t n)
{
    char seq[256];
    snprintf(buf, n, "%s; %s", c->model_desc, cli_seq_text(c, seq, sizeof seq));
    return buf;
}
