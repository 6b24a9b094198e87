/* plan/model.c — the parameter tensor list of a model: adding tensors, param-group rules, and
 * the names of the enums that describe tensors.
 *
 * A plan_model holds tensors in framework module order, because ZeRO-3 packs sub-groups in that
 * order. Groups are an attribute of each tensor (tensor.group); the list itself is never
 * reordered, so "order within a group = module order" holds by construction. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/model_impl.h"
#include "plan/plan.h"

/* ---- enum names ------------------------------------------------------------------------------ */

int plan_dtype_bytes(enum plan_dtype t)
{
    switch (t) {
    case PLAN_FP32: return 4;
    case PLAN_FP16: return 2;
    case PLAN_BF16: return 2;
    }
    return 0;
}

const char *plan_dtype_name(enum plan_dtype t)
{
    switch (t) {
    case PLAN_FP32: return "fp32";
    case PLAN_FP16: return "fp16";
    case PLAN_BF16: return "bf16";
    }
    return "?";
}

const char *plan_tp_split_name(enum plan_tp_split s)
{
    switch (s) {
    case PLAN_TP_REPLICATED: return "replicated";
    case PLAN_TP_COLUMN: return "column";
    case PLAN_TP_ROW: return "row";
    case PLAN_TP_VOCAB: return "vocab";
    }
    return "?";
}

const char *plan_arch_name(enum plan_arch_kind k)
{
    switch (k) {
    case PLAN_ARCH_MEGATRON_GPT: return "megatron-gpt";
    case PLAN_ARCH_HF_GPT2: return "hf-gpt2";
    case PLAN_ARCH_HF_T5: return "hf-t5";
    case PLAN_ARCH_HF_LLAMA: return "hf-llama";
    case PLAN_ARCH_HF_OPT: return "hf-opt";
    }
    return "?";
}

const char *plan_attention_name(enum plan_attention a)
{
    switch (a) {
    case PLAN_ATTN_DEFAULT: return "default";
    case PLAN_ATTN_MATERIALIZED: return "materialized";
    case PLAN_ATTN_FLASH: return "flash";
    }
    return "?";
}

int plan_attention_parse(const char *flag, const char *s, enum plan_attention *out, struct rl_err *e)
{
    if (s && strcmp(s, "flash") == 0)
        *out = PLAN_ATTN_FLASH;
    else if (s && strcmp(s, "materialized") == 0)
        *out = PLAN_ATTN_MATERIALIZED;
    else
        return rl_errf(e, RL_EINVAL, "%s: '%s' is not an attention implementation; allowed: flash, materialized",
                       flag, s ? s : "");
    return 0;
}

/* The frameworks' defaults (set by the model loaders):
 *  - Megatron-DeepSpeed (megatron/arguments.py): --use-flash-attn (alias --use-flash-attn-v1),
 *    --use-flash-attn-v2 and --use-flash-attn-triton are off by default; without them CoreAttention
 *    computes the scores with baddbmm, then softmax and dropout, and keeps all three for the
 *    backward (Korthikanti et al. 2022, section 4.1: the 5as/h term).
 *  - Hugging Face transformers: from v4.36 `attn_implementation` defaults to "sdpa"
 *    (torch.nn.functional.scaled_dot_product_attention, torch >= 2.1.1) for every model class
 *    that declares _supports_sdpa (Llama, Mistral, Qwen2, Qwen3, Gemma 2, Phi-3, GPT-2 and OPT in
 *    current releases). SDPA dispatches to the FlashAttention-2 or the memory-efficient kernel,
 *    neither of which stores the s x s probabilities: the flash memory model. T5 has no SDPA path
 *    (its relative position bias is added to explicit scores): "eager", materialized. */
const char *plan_attention_origin(const struct plan_arch *a)
{
    if (a->kind == PLAN_ARCH_MEGATRON_GPT)
        return a->attention == PLAN_ATTN_FLASH ? "Megatron with --use-flash-attn"
                                               : "Megatron default: no --use-flash-attn";
    if (a->attention == PLAN_ATTN_DEFAULT)
        return "not set by the model: materialized";
    return a->attention == PLAN_ATTN_FLASH ? "transformers default: sdpa, fused kernels"
                                           : "transformers default: eager (no sdpa for this model)";
}

/* Names in enum order; the parser accepts exactly these. */
static const char *const group_rule_names[] = {"auto", "megatron", "megatron-old", "hf-two", "flat", "listed"};
_Static_assert(RL_COUNT(group_rule_names) == PLAN_GROUP_RULE_COUNT, "a name per enum plan_group_rule");

const char *plan_group_rule_name(enum plan_group_rule r)
{
    if ((unsigned)r < sizeof group_rule_names / sizeof group_rule_names[0])
        return group_rule_names[r];
    return "?";
}

int plan_group_rule_parse(const char *s, enum plan_group_rule *r, struct rl_err *e)
{
    if (rl_streq(s, "hf")) {   /* short for hf-two */
        *r = PLAN_GROUPS_HF_TWO;
        return 0;
    }
    for (size_t i = 0; i <= PLAN_GROUPS_FLAT; i++) {   /* a list is a file, not a rule name */
        if (rl_streq(s, group_rule_names[i])) {
            *r = (enum plan_group_rule)i;
            return 0;
        }
    }
    return rl_errf(e, RL_EINVAL,
                   "param-groups: '%s' is not a grouping rule; allowed: auto, megatron (no-decay = "
                   "biases and 1-D params), megatron-old (no-decay = LayerNorm params and biases), "
                   "hf or hf-two (no-decay = biases and norm weights), flat (one group)",
                   s ? s : "");
}

/* ---- the tensor list --------------------------------------------------------------------------- */

void plan__model_init(struct plan_model *m, const char *name)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name ? name : "");
    m->arch.tp = 1;
    m->arch.pp = 1;
}

int plan_model_add(struct plan_model *m, const char *name, int ndim, const int64_t *shape,
                   enum plan_tp_split tp, unsigned flags, int layer, struct rl_err *e)
{
    if (!name || strlen(name) >= PLAN_NAME_MAX)
        return rl_errf(e, RL_EINVAL, "tensor name: '%.60s...' is longer than %d characters",
                       name ? name : "", PLAN_NAME_MAX - 1);
    if (ndim < 1 || ndim > 4)
        return rl_errf(e, RL_EINVAL, "%s: %d dimensions; allowed 1..4", name, ndim);
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 0)
            return rl_errf(e, RL_EINVAL, "%s: dimension %d is %lld; expected a positive size", name,
                           i, (long long)shape[i]);
        if (__builtin_mul_overflow(numel, shape[i], &numel))
            return rl_errf(e, RL_EINVAL, "%s: element count overflows a 64-bit integer", name);
    }
    int64_t total;
    if (__builtin_add_overflow(m->total_numel, numel, &total))
        return rl_errf(e, RL_EINVAL, "%s: model element count overflows a 64-bit integer", name);
    if (rl_grow(&m->tensors, &m->cap_tensors, sizeof *m->tensors, m->n_tensors + 1, 64))
        return rl_errf(e, RL_ENOMEM, "model %s: no memory for %d tensors", m->name, m->n_tensors + 1);
    struct plan_tensor *t = &m->tensors[m->n_tensors++];
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, strlen(name) + 1);
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->numel = numel;
    t->tp = tp;
    t->flags = flags;
    t->layer = layer;
    t->group = 0;
    m->total_numel = total;
    return 0;
}

int plan__addf(struct plan_model *m, struct rl_err *e, enum plan_tp_split tp, unsigned flags,
               int layer, int ndim, int64_t d0, int64_t d1, const char *fmt, ...)
{
    char name[PLAN_NAME_MAX + 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const int64_t shape[2] = {d0, d1};
    return plan_model_add(m, name, ndim, shape, tp, flags, layer, e);
}

void plan_model_free(struct plan_model *m)
{
    if (!m)
        return;
    free(m->tensors);
    m->tensors = NULL;
    m->n_tensors = m->cap_tensors = 0;
    m->total_numel = 0;
    m->n_groups = 0;
}

/* ---- param groups ------------------------------------------------------------------------------ */

/* True when the tensor belongs to the no-decay group under `rule` (never AUTO here).
 * MEGATRON follows Megatron-DeepSpeed's get_param_groups (name ends ".bias" or the parameter is
 * 1-D, so RMSNorm weights too); MEGATRON_OLD follows _get_params_for_weight_decay_optimization
 * (every parameter of a LayerNorm module and every bias; RMSNorm weights stay with decay);
 * HF_TWO follows Trainer.get_decay_parameter_names (parameters of LayerNorm-type modules,
 * RMSNorm and T5LayerNorm included, and every name containing "bias", which also catches T5's
 * relative_attention_bias). */
static bool no_decay(enum plan_group_rule rule, const struct plan_tensor *t)
{
    switch (rule) {
    case PLAN_GROUPS_MEGATRON:
        return (t->flags & PLAN_TF_BIAS) || t->ndim == 1;
    case PLAN_GROUPS_MEGATRON_OLD:
        return (t->flags & (PLAN_TF_BIAS | PLAN_TF_LAYERNORM)) != 0;
    case PLAN_GROUPS_HF_TWO:
        return (t->flags & (PLAN_TF_BIAS | PLAN_TF_LAYERNORM | PLAN_TF_RMSNORM)) ||
               strstr(t->name, "bias") != NULL;
    case PLAN_GROUPS_AUTO:
    case PLAN_GROUPS_FLAT:
    case PLAN_GROUPS_LIST:
        break;
    }
    return false;
}

void plan_model_group(struct plan_model *m, enum plan_group_rule rule, bool has_optimizer_block)
{
    if (rule == PLAN_GROUPS_AUTO) {
        if (m->arch.kind == PLAN_ARCH_MEGATRON_GPT)
            rule = PLAN_GROUPS_MEGATRON;
        else
            rule = has_optimizer_block ? PLAN_GROUPS_FLAT : PLAN_GROUPS_HF_TWO;
    }
    /* Decay is group 0, no-decay group 1; an empty group is dropped by renumbering. O(n). */
    int count[2] = {0, 0};
    for (int i = 0; i < m->n_tensors; i++) {
        int g = no_decay(rule, &m->tensors[i]) ? 1 : 0;
        m->tensors[i].group = g;
        m->tensors[i].pack_key = 0;   /* a rule packs in module order */
        count[g]++;
    }
    if (count[0] == 0)
        for (int i = 0; i < m->n_tensors; i++)
            m->tensors[i].group = 0;
    m->n_groups = (count[0] > 0) + (count[1] > 0);
    m->group_rule = rule;
}

/* ---- JSON field readers --------------------------------------------------------------------- */

int plan__json_int(const json_t *root, const char *what, const char *key, bool required,
                   int64_t def, int64_t min, int64_t max, int64_t *out, struct rl_err *e)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (required)
            return rl_errf(e, RL_EINVAL, "%s: %s: missing; expected an integer in [%lld, %lld]",
                           what, key, (long long)min, (long long)max);
        *out = def;
        return 0;
    }
    int64_t x;
    if (json_is_integer(v)) {
        x = (int64_t)json_integer_value(v);
    } else if (json_is_real(v) && json_real_value(v) > -9e18 && json_real_value(v) < 9e18 &&
               json_real_value(v) == (double)(int64_t)json_real_value(v)) {
        x = (int64_t)json_real_value(v);   /* 1e9 written as a float, integral */
    } else {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        int rc = rl_errf(e, RL_EINVAL, "%s: %s: %.60s is not an integer; expected an integer in "
                         "[%lld, %lld]", what, key, s ? s : "?", (long long)min, (long long)max);
        free(s);
        return rc;
    }
    if (x < min || x > max)
        return rl_errf(e, RL_EINVAL, "%s: %s: %lld is outside [%lld, %lld]", what, key,
                       (long long)x, (long long)min, (long long)max);
    *out = x;
    return 0;
}

int plan__json_bool(const json_t *root, const char *what, const char *key, bool def, bool *out,
                    struct rl_err *e)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v)) {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        int rc = rl_errf(e, RL_EINVAL, "%s: %s: %.60s is not a boolean; expected true or false",
                         what, key, s ? s : "?");
        free(s);
        return rc;
    }
    *out = json_is_true(v);
    return 0;
}

int plan__json_str(const json_t *root, const char *what, const char *key, const char *def,
                   const char **out, struct rl_err *e)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_string(v)) {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        int rc = rl_errf(e, RL_EINVAL, "%s: %s: %.60s is not a string", what, key, s ? s : "?");
        free(s);
        return rc;
    }
    *out = json_string_value(v);
    return 0;
}
