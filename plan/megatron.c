/* plan/megatron.c — Megatron-DeepSpeed GPT parameter lists under tensor and pipeline parallelism,
 * and Megatron presets (catalog/models/<name>.json with "framework": "megatron").
 *
 * Facts modelled (Megatron-DeepSpeed megatron/model/{gpt_model,language_model,transformer}.py,
 * megatron/core/tensor_parallel/layers.py, megatron/tokenizer/tokenizer.py):
 *  - the vocabulary is padded up to a multiple of make_vocab_size_divisible_by x TP and split
 *    over the TP ranks (VocabParallelEmbedding);
 *  - query_key_value ([h + 2 kv_heads head_dim] x h) and dense_h_to_4h ([ffn or 2 ffn] x h) are
 *    ColumnParallelLinear: weight rows and bias split; checkouts from 2023-07-22 (GQA support) until
 *    2023-11-21 (fused again) register query ([h] x h) and key_value ([2 kv_heads head_dim] x h)
 *    as two ColumnParallelLinear modules when kv_heads < heads (plan_model_megatron_split_qkv);
 *  - self_attention.dense and dense_4h_to_h are RowParallelLinear: weight columns split, bias whole
 *    on every rank;
 *  - norms and the learned position table are replicated;
 *  - layers are split evenly over pipeline stages; stage 0 holds the embedding, the last stage the
 *    final norm and the untied output layer; with tied embeddings and pp > 1 the last stage keeps a
 *    copy of the word embeddings (MegatronModule.initialize_word_embeddings) registered after the
 *    language model, as "word_embeddings.weight".
 * Layer names use the stage-local index (ParallelTransformer.layers is a per-stage ModuleList);
 * plan_tensor.layer holds the global block index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/model_impl.h"
#include "plan/plan.h"

void plan_megatron_defaults(struct plan_megatron_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->vocab = 50257;          /* GPT-2 BPE, the vocabulary of the Megatron GPT examples */
    c->vocab_divisor = 128;    /* --make-vocab-size-divisible-by default */
    c->attention_dropout = 0.1;   /* --attention-dropout and --hidden-dropout defaults (megatron/arguments.py) */
    c->hidden_dropout = 0.1;
    c->tp = 1;
    c->pp = 1;
}

/* Adds one norm module's parameters: LayerNorm weight + bias, RMSNorm weight only. */
static int add_norm(struct plan_model *m, const struct plan_megatron_cfg *c, int64_t h, int layer,
                    const char *prefix, struct rl_err *e)
{
    unsigned f = c->rmsnorm ? PLAN_TF_RMSNORM : PLAN_TF_LAYERNORM;
    int rc = plan__addf(m, e, PLAN_TP_REPLICATED, f, layer, 1, h, 0, "%sweight", prefix);
    if (rc == 0 && !c->rmsnorm)
        rc = plan__addf(m, e, PLAN_TP_REPLICATED, f | PLAN_TF_BIAS, layer, 1, h, 0, "%sbias", prefix);
    return rc;
}

/* Checks one size field; `flag` is the Megatron argument name. */
static int check_size(const char *flag, int64_t v, int64_t min, int64_t max, struct rl_err *e)
{
    if (v < min || v > max)
        return rl_errf(e, RL_EINVAL, "%s: %lld is outside [%lld, %lld]", flag, (long long)v,
                       (long long)min, (long long)max);
    return 0;
}

static int build(struct plan_model *m, const struct plan_megatron_cfg *c, struct rl_err *e)
{
    int rc;
    if ((rc = check_size("--num-layers", c->num_layers, 1, PLAN__MAX_LAYERS, e)) ||
        (rc = check_size("--hidden-size", c->hidden, 1, PLAN__MAX_DIM, e)) ||
        (rc = check_size("--ffn-hidden-size", c->ffn_hidden, 0, PLAN__MAX_DIM, e)) ||
        (rc = check_size("--num-attention-heads", c->heads, 1, PLAN__MAX_DIM, e)) ||
        (rc = check_size("--num-key-value-heads", c->kv_heads, 0, PLAN__MAX_DIM, e)) ||
        (rc = check_size("--vocab-size", c->vocab, 1, PLAN__MAX_DIM, e)) ||
        (rc = check_size("--make-vocab-size-divisible-by", c->vocab_divisor, 1, PLAN__MAX_DIM, e)) ||
        (rc = check_size("--seq-length", c->seq_len, 1, PLAN__MAX_DIM, e)) ||
        (rc = check_size("--max-position-embeddings", c->max_pos, 0, PLAN__MAX_DIM, e)) ||
        (rc = check_size("--tensor-model-parallel-size", c->tp, 1, 1 << 20, e)) ||
        (rc = check_size("--pipeline-model-parallel-size", c->pp, 1, 1 << 20, e)))
        return rc;
    if (c->pp_stage < 0 || c->pp_stage >= c->pp)
        return rl_errf(e, RL_EINVAL, "pp-stage: %d is outside [0, %d] for pipeline size %d",
                       c->pp_stage, c->pp - 1, c->pp);
    const int64_t h = c->hidden, tp = c->tp;
    const int64_t ffn = c->ffn_hidden ? c->ffn_hidden : 4 * h;
    const int64_t heads = c->heads, kv = c->kv_heads ? c->kv_heads : c->heads;
    const int64_t max_pos = c->max_pos ? c->max_pos : c->seq_len;
    if (h % heads)
        return rl_errf(e, RL_EINVAL, "--hidden-size: %lld is not divisible by --num-attention-heads "
                       "%lld", (long long)h, (long long)heads);
    const int64_t hd = h / heads;
    if (kv > heads || heads % kv)
        return rl_errf(e, RL_EINVAL, "--num-key-value-heads: %lld does not divide "
                       "--num-attention-heads %lld", (long long)kv, (long long)heads);
    if (heads % tp)
        return rl_errf(e, RL_EINVAL, "--tensor-model-parallel-size: %lld does not divide "
                       "--num-attention-heads %lld; allowed: a divisor of it", (long long)tp,
                       (long long)heads);
    if (kv % tp)
        return rl_errf(e, RL_EINVAL, "--tensor-model-parallel-size: %lld does not divide "
                       "--num-key-value-heads %lld; allowed: a divisor of it", (long long)tp,
                       (long long)kv);
    if (ffn % tp)
        return rl_errf(e, RL_EINVAL, "--tensor-model-parallel-size: %lld does not divide "
                       "--ffn-hidden-size %lld; allowed: a divisor of it", (long long)tp,
                       (long long)ffn);
    if (c->num_layers % c->pp)
        return rl_errf(e, RL_EINVAL, "--pipeline-model-parallel-size: %d does not divide "
                       "--num-layers %d; allowed: a divisor of it", c->pp, c->num_layers);
    if (!c->rotary && max_pos < c->seq_len)
        return rl_errf(e, RL_EINVAL, "--max-position-embeddings: %lld is smaller than --seq-length "
                       "%lld; allowed: >= the sequence length (or rotary embeddings)",
                       (long long)max_pos, (long long)c->seq_len);
    /* Megatron's _vocab_size_with_padding: round up to a multiple of divisor x tp. */
    int64_t mult, vp;
    if (__builtin_mul_overflow(c->vocab_divisor, tp, &mult) ||
        __builtin_add_overflow(c->vocab, mult - 1, &vp))
        return rl_errf(e, RL_EINVAL, "--make-vocab-size-divisible-by: %lld x TP %lld overflows",
                       (long long)c->vocab_divisor, (long long)tp);
    vp = vp / mult * mult;
    const int64_t qkv_rows = h + 2 * kv * hd;   /* == 3h without GQA */
    const int64_t up_rows = c->swiglu ? 2 * ffn : ffn;

    struct plan_arch *a = &m->arch;
    a->kind = PLAN_ARCH_MEGATRON_GPT;
    a->layers = c->num_layers;
    a->layers_here = c->num_layers / c->pp;
    a->hidden = h;
    a->ffn_hidden = ffn;
    a->heads = heads;
    a->kv_heads = kv;
    a->head_dim = hd;
    a->vocab = c->vocab;
    a->vocab_padded = vp;
    a->seq_len = c->seq_len;
    a->seq_origin = PLAN_SEQ_CONFIG;   /* the launch line's or the preset's; plan_inputs says which */
    a->seq_key = "seq_length";
    a->max_pos = c->rotary ? 0 : max_pos;
    a->swiglu = c->swiglu;
    a->rotary = c->rotary;
    a->tied_embeddings = !c->untie;
    a->tp = c->tp;
    a->pp = c->pp;
    a->pp_stage = c->pp_stage;
    a->attention = c->flash_attn ? PLAN_ATTN_FLASH : PLAN_ATTN_MATERIALIZED;   /* plan_attention_origin */
    a->dropout_known = true;
    a->attention_dropout = c->attention_dropout;
    a->hidden_dropout = c->hidden_dropout;

    const bool first = c->pp_stage == 0, last = c->pp_stage == c->pp - 1;
    const int first_layer = c->pp_stage * a->layers_here;
    const char *lm = "language_model.";
    if (first) {
        if ((rc = plan__addf(m, e, PLAN_TP_VOCAB, PLAN_TF_EMBEDDING, -1, 2, vp / tp, h,
                             "%sembedding.word_embeddings.weight", lm)))
            return rc;
        if (!c->rotary &&
            (rc = plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_EMBEDDING, -1, 2, max_pos, h,
                             "%sembedding.position_embeddings.weight", lm)))
            return rc;
    }
    for (int i = 0; i < a->layers_here; i++) {
        const int L = first_layer + i;
        char p[96];
        snprintf(p, sizeof p, "%sencoder.layers.%d.", lm, i);
        char q[PLAN_NAME_MAX];
        snprintf(q, sizeof q, "%sinput_layernorm.", p);
        if ((rc = add_norm(m, c, h, L, q, e)))
            return rc;
        if ((rc = plan__addf(m, e, PLAN_TP_COLUMN, 0, L, 2, qkv_rows / tp, h,
                             "%sself_attention.query_key_value.weight", p)))
            return rc;
        if (!c->no_bias && (rc = plan__addf(m, e, PLAN_TP_COLUMN, PLAN_TF_BIAS, L, 1, qkv_rows / tp,
                                            0, "%sself_attention.query_key_value.bias", p)))
            return rc;
        if ((rc = plan__addf(m, e, PLAN_TP_ROW, 0, L, 2, h, h / tp, "%sself_attention.dense.weight", p)))
            return rc;
        if (!c->no_bias && (rc = plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_BIAS, L, 1, h, 0,
                                            "%sself_attention.dense.bias", p)))
            return rc;
        snprintf(q, sizeof q, "%spost_attention_layernorm.", p);
        if ((rc = add_norm(m, c, h, L, q, e)))
            return rc;
        if ((rc = plan__addf(m, e, PLAN_TP_COLUMN, 0, L, 2, up_rows / tp, h,
                             "%smlp.dense_h_to_4h.weight", p)))
            return rc;
        if (!c->no_bias && (rc = plan__addf(m, e, PLAN_TP_COLUMN, PLAN_TF_BIAS, L, 1, up_rows / tp, 0,
                                            "%smlp.dense_h_to_4h.bias", p)))
            return rc;
        if ((rc = plan__addf(m, e, PLAN_TP_ROW, 0, L, 2, h, ffn / tp, "%smlp.dense_4h_to_h.weight", p)))
            return rc;
        if (!c->no_bias && (rc = plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_BIAS, L, 1, h, 0,
                                            "%smlp.dense_4h_to_h.bias", p)))
            return rc;
    }
    if (last) {
        if ((rc = add_norm(m, c, h, -1, "language_model.encoder.final_layernorm.", e)))
            return rc;
        if (c->untie &&
            (rc = plan__addf(m, e, PLAN_TP_VOCAB, 0, -1, 2, vp / tp, h, "%soutput_layer.weight", lm)))
            return rc;
        if (!c->untie && c->pp > 1 &&
            (rc = plan__addf(m, e, PLAN_TP_VOCAB, PLAN_TF_EMBEDDING, -1, 2, vp / tp, h,
                             "word_embeddings.weight")))
            return rc;
    }
    return 0;
}

int plan_model_megatron(struct plan_model *m, const struct plan_megatron_cfg *c, struct rl_err *e)
{
    plan__model_init(m, "megatron-gpt");
    int rc = build(m, c, e);
    if (rc) {
        plan_model_free(m);
        return rc;
    }
    plan_model_group(m, PLAN_GROUPS_AUTO, false);
    return 0;
}

int64_t plan__megatron_default_ffn(int64_t hidden, bool swiglu)
{
    /* int((4 h 2 / 3) / 64) in Python floors the real 8h/192 = h/24 (rounding of the float
     * quotient cannot cross an integer for h < 2^31), so floor(h / 24) x 64. */
    return swiglu ? hidden / 24 * 64 : 4 * hidden;
}

/* Keys a Megatron preset may hold: the Megatron argument names with '_' for '-'. Unknown keys
 * are errors, so a typo cannot silently fall back to a default. */
static const char *const preset_keys[] = {
    "framework", "source", "description", "num_layers", "hidden_size", "ffn_hidden_size",
    "num_attention_heads", "num_key_value_heads", "seq_length", "max_position_embeddings",
    "vocab_size", "make_vocab_size_divisible_by", "swiglu", "normalization",
    "disable_bias_linear", "untie_embeddings_and_output_weights",
    "use_rotary_position_embeddings", "position_embedding_type",
};

int plan__megatron_from_json(struct plan_model *m, const json_t *root, const char *what,
                             const struct plan_model_opts *o, struct rl_err *e)
{
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)root, key, val) {
        bool known = false;
        for (size_t i = 0; i < sizeof preset_keys / sizeof preset_keys[0]; i++)
            known = known || strcmp(key, preset_keys[i]) == 0;
        if (!known)
            return rl_errf(e, RL_EINVAL, "%s: %s: unknown key in a Megatron preset; allowed: "
                           "num_layers, hidden_size, ffn_hidden_size, num_attention_heads, "
                           "num_key_value_heads, seq_length, max_position_embeddings, vocab_size, "
                           "make_vocab_size_divisible_by, swiglu, normalization, "
                           "disable_bias_linear, untie_embeddings_and_output_weights, "
                           "use_rotary_position_embeddings, position_embedding_type, source",
                           what, key);
    }
    struct plan_megatron_cfg c;
    plan_megatron_defaults(&c);
    int64_t v;
    int rc;
    if ((rc = plan__json_int(root, what, "num_layers", true, 0, 1, PLAN__MAX_LAYERS, &v, e)))
        return rc;
    c.num_layers = (int)v;
    if ((rc = plan__json_int(root, what, "hidden_size", true, 0, 1, PLAN__MAX_DIM, &c.hidden, e)) ||
        (rc = plan__json_int(root, what, "ffn_hidden_size", false, 0, 1, PLAN__MAX_DIM, &c.ffn_hidden, e)) ||
        (rc = plan__json_int(root, what, "num_attention_heads", true, 0, 1, PLAN__MAX_DIM, &c.heads, e)) ||
        (rc = plan__json_int(root, what, "num_key_value_heads", false, 0, 1, PLAN__MAX_DIM, &c.kv_heads, e)) ||
        (rc = plan__json_int(root, what, "seq_length", true, 0, 1, PLAN__MAX_DIM, &c.seq_len, e)) ||
        (rc = plan__json_int(root, what, "max_position_embeddings", false, 0, 1, PLAN__MAX_DIM, &c.max_pos, e)) ||
        (rc = plan__json_int(root, what, "vocab_size", false, 50257, 1, PLAN__MAX_DIM, &c.vocab, e)) ||
        (rc = plan__json_int(root, what, "make_vocab_size_divisible_by", false, 128, 1, PLAN__MAX_DIM,
                             &c.vocab_divisor, e)) ||
        (rc = plan__json_bool(root, what, "swiglu", false, &c.swiglu, e)) ||
        (rc = plan__json_bool(root, what, "disable_bias_linear", false, &c.no_bias, e)) ||
        (rc = plan__json_bool(root, what, "untie_embeddings_and_output_weights", false, &c.untie, e)) ||
        (rc = plan__json_bool(root, what, "use_rotary_position_embeddings", false, &c.rotary, e)))
        return rc;
    const char *s;
    if ((rc = plan__json_str(root, what, "normalization", "layernorm", &s, e)))
        return rc;
    if (strcmp(s, "rmsnorm") == 0 || strcmp(s, "RMSNorm") == 0)
        c.rmsnorm = true;
    else if (strcmp(s, "layernorm") != 0 && strcmp(s, "LayerNorm") != 0)
        return rl_errf(e, RL_EINVAL, "%s: normalization: '%s'; allowed: layernorm, rmsnorm", what, s);
    if ((rc = plan__json_str(root, what, "position_embedding_type", NULL, &s, e)))
        return rc;
    if (s && strcmp(s, "rope") == 0)
        c.rotary = true;
    else if (s && strcmp(s, "learned_absolute") != 0)
        return rl_errf(e, RL_EINVAL, "%s: position_embedding_type: '%s'; allowed: learned_absolute, "
                       "rope", what, s);
    if (c.ffn_hidden == 0)
        c.ffn_hidden = plan__megatron_default_ffn(c.hidden, c.swiglu);
    c.tp = o->tp;
    c.pp = o->pp;
    c.pp_stage = o->pp_stage;
    if (o->seq_len > 0)
        c.seq_len = o->seq_len;
    /* TP and PP come from the tp and pp options here, not from a launch line: name those. */
    const int64_t kv = c.kv_heads > 0 ? c.kv_heads : c.heads;
    const struct { int64_t n; const char *key; } by_tp[] = {
        {c.heads, "num_attention_heads"}, {kv, "num_key_value_heads"}, {c.ffn_hidden, "ffn_hidden_size"}};
    for (size_t i = 0; c.tp > 0 && i < sizeof by_tp / sizeof by_tp[0]; i++)
        if (by_tp[i].n % c.tp)
            return rl_errf(e, RL_EINVAL, "tp %d: does not divide %s's %s %lld; allowed: a divisor of it",
                           c.tp, what, by_tp[i].key, (long long)by_tp[i].n);
    if (c.pp > 0 && c.num_layers % c.pp)
        return rl_errf(e, RL_EINVAL, "pp %d: does not divide %s's num_layers %d; allowed: a divisor of it",
                       c.pp, what, c.num_layers);
    rc = plan_model_megatron(m, &c, e);
    if (rc)
        return rl_err_prefix(e, "%s", what);
    if (o->seq_len > 0) {
        m->arch.seq_origin = PLAN_SEQ_GIVEN;
        m->arch.seq_key = NULL;
    }
    return 0;
}

int plan_model_megatron_split_qkv(struct plan_model *m, struct rl_err *e)
{
    const struct plan_arch *a = &m->arch;
    if (a->kind != PLAN_ARCH_MEGATRON_GPT || a->kv_heads <= 0 || a->kv_heads >= a->heads)
        return 0;
    const char *const fused = "self_attention.query_key_value.";
    int64_t tp = a->tp > 0 ? a->tp : 1, q_rows = a->hidden / tp;
    struct plan_model n = *m;
    n.tensors = NULL;
    n.n_tensors = n.cap_tensors = 0;
    n.total_numel = 0;
    int rc = 0;
    for (int i = 0; i < m->n_tensors && rc == 0; i++) {
        const struct plan_tensor *t = &m->tensors[i];
        const char *at = strstr(t->name, fused);
        if (!at) {
            rc = plan_model_add(&n, t->name, t->ndim, t->shape, t->tp, t->flags, t->layer, e);
            continue;
        }
        /* "<prefix>self_attention.query_key_value.<weight|bias>" -> query.<...>, key_value.<...> */
        int pre = (int)(at - t->name) + (int)strlen("self_attention.");
        const char *leaf = at + strlen(fused);
        int64_t shape[4];
        memcpy(shape, t->shape, sizeof shape);
        shape[0] = q_rows;
        if ((rc = plan__addf(&n, e, t->tp, t->flags, t->layer, t->ndim, shape[0], shape[1], "%.*squery.%s", pre,
                             t->name, leaf)))
            break;
        shape[0] = t->shape[0] - q_rows;
        rc = plan__addf(&n, e, t->tp, t->flags, t->layer, t->ndim, shape[0], shape[1], "%.*skey_value.%s", pre,
                        t->name, leaf);
    }
    if (rc) {
        free(n.tensors);
        return rc;
    }
    free(m->tensors);
    *m = n;
    return 0;
}
