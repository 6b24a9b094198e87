/* plan/hf.c — Hugging Face transformers models from a config.json: GPT-2, T5, OPT, and the
 * LLaMA-like decoders Llama 1-3, Mistral, Qwen2/2.5, Qwen3, Gemma 2 and Phi-3.
 *
 * Tensor order is model.named_parameters() order (module registration order in __init__,
 * a shared parameter listed once, where it is first registered); shapes are the PyTorch
 * parameter shapes (nn.Linear weight [out, in], GPT-2 Conv1D weight [in, out]). HF models are
 * never tensor-parallel here (tp == 1).
 *
 * Core sizes (layers, width, heads, vocabulary, MLP width) must be present in the config; other
 * keys take the defaults of the transformers config class (e.g. LLaMA num_key_value_heads =
 * num_attention_heads, tie_word_embeddings false for LLaMA and true otherwise). */
#include <stdio.h>
#include <string.h>

#include "plan/model_impl.h"
#include "plan/plan.h"

/* Reads a required size into *out (1..PLAN__MAX_DIM). */
#define NEED(key, out) RL_TRY(plan__json_int(root, what, key, true, 0, 1, PLAN__MAX_DIM, out, e))
/* Reads a required layer count into *out (1..PLAN__MAX_LAYERS, the limit its message quotes). */
#define NEED_LAYERS(key, out) RL_TRY(plan__json_int(root, what, key, true, 0, 1, PLAN__MAX_LAYERS, out, e))
/* Reads an optional size (default def) into *out. */
#define OPT(key, def, out) RL_TRY(plan__json_int(root, what, key, false, def, 1, PLAN__MAX_DIM, out, e))
#define OPTB(key, def, out) RL_TRY(plan__json_bool(root, what, key, def, out, e))

static int check_layers(const char *what, const char *key, int64_t n, struct rl_err *e)
{
    if (n > PLAN__MAX_LAYERS)
        return rl_errf(e, RL_EINVAL, "%s: %s: %lld is outside [1, %d]", what, key, (long long)n,
                       PLAN__MAX_LAYERS);
    return 0;
}

static int check_heads(const char *what, const char *hkey, int64_t h, const char *nkey,
                       int64_t heads, struct rl_err *e)
{
    if (h % heads)
        return rl_errf(e, RL_EINVAL, "%s: %s: %lld is not divisible by %s %lld", what, hkey,
                       (long long)h, nkey, (long long)heads);
    return 0;
}

/* Training sequence length: the override when given, else the config's default (key def_key, or
 * the preset's seq_len_default when preset is true) capped at PLAN_SEQ_LEN_DEFAULT; a learned
 * position table (max_pos > 0) bounds it. Records where it came from in a. */
static int seq_len(const char *what, const struct plan_model_opts *o, int64_t def, int64_t max_pos,
                   const char *pos_key, const char *def_key, bool preset, struct plan_arch *a,
                   struct rl_err *e)
{
    int64_t s = def;
    a->seq_key = preset ? "seq_len_default" : def_key;
    a->seq_config = 0;
    a->seq_origin = preset ? PLAN_SEQ_PRESET : PLAN_SEQ_CONFIG;
    if (o->seq_len > 0) {
        s = o->seq_len;
        a->seq_origin = PLAN_SEQ_GIVEN;
        a->seq_key = NULL;
    } else if (!preset && s > PLAN_SEQ_LEN_DEFAULT) {
        a->seq_config = s;
        a->seq_origin = PLAN_SEQ_CAPPED;
        s = PLAN_SEQ_LEN_DEFAULT;
    }
    if (max_pos > 0 && s > max_pos)
        return rl_errf(e, RL_EINVAL, "seq_len %lld: is longer than %s's %s %lld; allowed: <= %lld",
                       (long long)s, what, pos_key, (long long)max_pos, (long long)max_pos);
    a->seq_len = s;
    return 0;
}

/* ---- GPT-2 (GPT2LMHeadModel) ------------------------------------------------------------------- */
static int gpt2(struct plan_model *m, const json_t *root, const char *what,
                const struct plan_model_opts *o, struct rl_err *e)
{
    int64_t layers, h, heads, vocab, npos, inner;
    bool tied;
    NEED_LAYERS("n_layer", &layers);
    NEED("n_embd", &h);
    NEED("n_head", &heads);
    NEED("vocab_size", &vocab);
    OPT("n_positions", 1024, &npos);
    OPT("n_inner", 4 * h, &inner);
    OPTB("tie_word_embeddings", true, &tied);
    RL_TRY(check_layers(what, "n_layer", layers, e));
    RL_TRY(check_heads(what, "n_embd", h, "n_head", heads, e));
    struct plan_arch *a = &m->arch;
    a->kind = PLAN_ARCH_HF_GPT2;
    a->layers = a->layers_here = (int)layers;
    a->hidden = h;
    a->ffn_hidden = inner;
    a->heads = a->kv_heads = heads;
    a->head_dim = h / heads;
    a->vocab = a->vocab_padded = vocab;
    a->max_pos = npos;
    a->tied_embeddings = tied;
    RL_TRY(seq_len(what, o, npos, npos, "n_positions", "n_positions", false, a, e));

    const unsigned LN = PLAN_TF_LAYERNORM, B = PLAN_TF_BIAS;
    RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_EMBEDDING, -1, 2, vocab, h, "transformer.wte.weight"));
    RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_EMBEDDING, -1, 2, npos, h, "transformer.wpe.weight"));
    for (int i = 0; i < (int)layers; i++) {
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, LN, i, 1, h, 0, "transformer.h.%d.ln_1.weight", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, LN | B, i, 1, h, 0, "transformer.h.%d.ln_1.bias", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, i, 2, h, 3 * h, "transformer.h.%d.attn.c_attn.weight", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, B, i, 1, 3 * h, 0, "transformer.h.%d.attn.c_attn.bias", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, i, 2, h, h, "transformer.h.%d.attn.c_proj.weight", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, B, i, 1, h, 0, "transformer.h.%d.attn.c_proj.bias", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, LN, i, 1, h, 0, "transformer.h.%d.ln_2.weight", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, LN | B, i, 1, h, 0, "transformer.h.%d.ln_2.bias", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, i, 2, h, inner, "transformer.h.%d.mlp.c_fc.weight", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, B, i, 1, inner, 0, "transformer.h.%d.mlp.c_fc.bias", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, i, 2, inner, h, "transformer.h.%d.mlp.c_proj.weight", i));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, B, i, 1, h, 0, "transformer.h.%d.mlp.c_proj.bias", i));
    }
    RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, LN, -1, 1, h, 0, "transformer.ln_f.weight"));
    RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, LN | B, -1, 1, h, 0, "transformer.ln_f.bias"));
    if (!tied)
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, -1, 2, vocab, h, "lm_head.weight"));
    return 0;
}

/* ---- LLaMA-like decoders (LlamaForCausalLM and its descendants) ---------------------------------
 * One tensor list with per-family switches, each read in the family's modeling_<type>.py:
 * Llama 1-3 (Llama 3.1's rope_scaling block changes no parameter), Mistral (as Llama),
 * Qwen2/2.5 (q/k/v biases), Qwen3 (q_norm/k_norm of head_dim after o_proj), Gemma 2 (pre- and
 * post-feedforward norms, tied embeddings by default), Phi-3 (o_proj before a fused qkv_proj,
 * fused gate_up_proj). */
struct decoder_family {
    const char *type;        /* model_type */
    bool qkv_bias;           /* q/k/v projections carry biases (Qwen2) */
    bool qk_norm;            /* per-head RMSNorm of q and k (Qwen3) */
    bool fused;              /* o_proj, qkv_proj and gate_up_proj (Phi-3) */
    bool sandwich_norms;     /* pre/post feed-forward norms (Gemma 2) */
    bool tied_default;       /* tie_word_embeddings default of the config class */
};

static const struct decoder_family decoder_families[] = {
    {"llama", false, false, false, false, false},
    {"mistral", false, false, false, false, false},
    {"qwen2", true, false, false, false, false},
    {"qwen3", false, true, false, false, false},
    {"gemma2", false, false, false, true, true},
    {"phi3", false, false, true, false, false},
};

static int decoder(struct plan_model *m, const json_t *root, const char *what,
                   const struct plan_model_opts *o, const struct decoder_family *f, struct rl_err *e)
{
    int64_t layers, h, ffn, heads, kv, vocab, max_pos, hd;
    bool tied, attn_bias, mlp_bias;
    NEED_LAYERS("num_hidden_layers", &layers);
    NEED("hidden_size", &h);
    NEED("intermediate_size", &ffn);
    NEED("num_attention_heads", &heads);
    NEED("vocab_size", &vocab);
    OPT("num_key_value_heads", heads, &kv);
    OPT("max_position_embeddings", 2048, &max_pos);
    OPTB("tie_word_embeddings", f->tied_default, &tied);
    OPTB("attention_bias", false, &attn_bias);
    OPTB("mlp_bias", false, &mlp_bias);
    RL_TRY(check_layers(what, "num_hidden_layers", layers, e));
    if (json_object_get(root, "head_dim") && !json_is_null(json_object_get(root, "head_dim"))) {
        OPT("head_dim", 0, &hd);
    } else {
        RL_TRY(check_heads(what, "hidden_size", h, "num_attention_heads", heads, e));
        hd = h / heads;
    }
    if (kv > heads || heads % kv)
        return rl_errf(e, RL_EINVAL, "%s: num_key_value_heads: %lld does not divide "
                       "num_attention_heads %lld", what, (long long)kv, (long long)heads);
    /* The attention projections hold (num_attention_heads + 2 num_key_value_heads) x head_dim rows
     * of hidden_size: bounded here, so a product too large names the keys, not a tensor. */
    int64_t qkv_rows, qkv_numel;
    if (__builtin_mul_overflow(heads + 2 * kv, hd, &qkv_rows) || __builtin_mul_overflow(qkv_rows, h, &qkv_numel) ||
        qkv_numel >= PLAN_MAX_RANK_NUMEL)
        return rl_errf(e, RL_EINVAL, "%s: head_dim x num_attention_heads: %lld x %lld (num_key_value_heads %lld, "
                       "hidden_size %lld) gives attention projections of more than 2^56 elements; allowed: "
                       "(num_attention_heads + 2 x num_key_value_heads) x head_dim x hidden_size below 2^56", what,
                       (long long)hd, (long long)heads, (long long)kv, (long long)h);
    struct plan_arch *a = &m->arch;
    a->kind = PLAN_ARCH_HF_LLAMA;
    /* transformers' LlamaDecoderLayer adds its residuals without dropout; the attention
     * probabilities' dropout is attention_dropout (default 0.0) */
    a->dropout_known = true;
    a->hidden_dropout = 0;
    a->attention_dropout = 0;
    const json_t *ad = json_object_get(root, "attention_dropout");
    if (ad && !json_is_null(ad)) {
        if (!json_is_number(ad) || !(json_number_value(ad) >= 0 && json_number_value(ad) <= 1))
            return rl_errf(e, RL_EINVAL, "%s: attention_dropout: not a probability; allowed: a number in [0, 1]", what);
        a->attention_dropout = json_number_value(ad);
    }
    a->layers = a->layers_here = (int)layers;
    a->hidden = h;
    a->ffn_hidden = ffn;
    a->heads = heads;
    a->kv_heads = kv;
    a->head_dim = hd;
    a->vocab = a->vocab_padded = vocab;
    a->max_pos = 0;   /* rotary */
    a->rotary = true;
    a->swiglu = true;
    a->tied_embeddings = tied;
    /* A preset's seq_len_default: max_position_embeddings of today's models is a context limit
     * (128k), not a training length. */
    int64_t seq_def;
    OPT("seq_len_default", max_pos, &seq_def);
    RL_TRY(seq_len(what, o, seq_def, 0, "max_position_embeddings", "max_position_embeddings",
                   json_object_get(root, "seq_len_default") != NULL, a, e));

    const unsigned RMS = PLAN_TF_RMSNORM, B = PLAN_TF_BIAS;
    const enum plan_tp_split R = PLAN_TP_REPLICATED;
    const char *const proj[4] = {"q", "k", "v", "o"};
    const int64_t rows[4] = {heads * hd, kv * hd, kv * hd, h};
    const int64_t cols[4] = {h, h, h, heads * hd};
    const char *const mlp[3] = {"gate", "up", "down"};
    const char *const L = "model.layers";
    RL_TRY(plan__addf(m, e, R, PLAN_TF_EMBEDDING, -1, 2, vocab, h, "model.embed_tokens.weight"));
    for (int i = 0; i < (int)layers; i++) {
        if (f->fused) {
            RL_TRY(plan__addf(m, e, R, 0, i, 2, h, heads * hd, "%s.%d.self_attn.o_proj.weight", L, i));
            RL_TRY(plan__addf(m, e, R, 0, i, 2, (heads + 2 * kv) * hd, h, "%s.%d.self_attn.qkv_proj.weight", L, i));
            RL_TRY(plan__addf(m, e, R, 0, i, 2, 2 * ffn, h, "%s.%d.mlp.gate_up_proj.weight", L, i));
            RL_TRY(plan__addf(m, e, R, 0, i, 2, h, ffn, "%s.%d.mlp.down_proj.weight", L, i));
        } else {
            for (int k = 0; k < 4; k++) {
                RL_TRY(plan__addf(m, e, R, 0, i, 2, rows[k], cols[k], "%s.%d.self_attn.%s_proj.weight", L, i, proj[k]));
                if (attn_bias || (f->qkv_bias && k < 3))
                    RL_TRY(plan__addf(m, e, R, B, i, 1, rows[k], 0, "%s.%d.self_attn.%s_proj.bias", L, i, proj[k]));
            }
            if (f->qk_norm) {
                RL_TRY(plan__addf(m, e, R, RMS, i, 1, hd, 0, "%s.%d.self_attn.q_norm.weight", L, i));
                RL_TRY(plan__addf(m, e, R, RMS, i, 1, hd, 0, "%s.%d.self_attn.k_norm.weight", L, i));
            }
            for (int k = 0; k < 3; k++) {
                const int64_t r = k < 2 ? ffn : h, c = k < 2 ? h : ffn;
                RL_TRY(plan__addf(m, e, R, 0, i, 2, r, c, "%s.%d.mlp.%s_proj.weight", L, i, mlp[k]));
                if (mlp_bias)
                    RL_TRY(plan__addf(m, e, R, B, i, 1, r, 0, "%s.%d.mlp.%s_proj.bias", L, i, mlp[k]));
            }
        }
        RL_TRY(plan__addf(m, e, R, RMS, i, 1, h, 0, "%s.%d.input_layernorm.weight", L, i));
        RL_TRY(plan__addf(m, e, R, RMS, i, 1, h, 0, "%s.%d.post_attention_layernorm.weight", L, i));
        if (f->sandwich_norms) {
            RL_TRY(plan__addf(m, e, R, RMS, i, 1, h, 0, "%s.%d.pre_feedforward_layernorm.weight", L, i));
            RL_TRY(plan__addf(m, e, R, RMS, i, 1, h, 0, "%s.%d.post_feedforward_layernorm.weight", L, i));
        }
    }
    RL_TRY(plan__addf(m, e, R, RMS, -1, 1, h, 0, "model.norm.weight"));
    if (!tied)
        RL_TRY(plan__addf(m, e, R, 0, -1, 2, vocab, h, "lm_head.weight"));
    return 0;
}

/* ---- OPT (OPTForCausalLM) ---------------------------------------------------------------------- */
static int opt_norm(struct plan_model *m, struct rl_err *e, bool affine, int layer, int64_t h,
                    const char *prefix)
{
    if (!affine)
        return 0;   /* LayerNorm(elementwise_affine=False) has no parameters */
    RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_LAYERNORM, layer, 1, h, 0, "%s.weight", prefix));
    return plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_LAYERNORM | PLAN_TF_BIAS, layer, 1, h, 0,
                      "%s.bias", prefix);
}

static int opt(struct plan_model *m, const json_t *root, const char *what,
               const struct plan_model_opts *o, struct rl_err *e)
{
    int64_t layers, h, ffn, heads, vocab, max_pos, proj;
    bool tied, ln_before, remove_final, bias, affine;
    NEED_LAYERS("num_hidden_layers", &layers);
    NEED("hidden_size", &h);
    NEED("ffn_dim", &ffn);
    NEED("num_attention_heads", &heads);
    NEED("vocab_size", &vocab);
    OPT("max_position_embeddings", 2048, &max_pos);
    OPT("word_embed_proj_dim", h, &proj);
    OPTB("tie_word_embeddings", true, &tied);
    OPTB("do_layer_norm_before", true, &ln_before);
    OPTB("_remove_final_layer_norm", false, &remove_final);
    OPTB("enable_bias", true, &bias);
    OPTB("layer_norm_elementwise_affine", true, &affine);
    RL_TRY(check_layers(what, "num_hidden_layers", layers, e));
    RL_TRY(check_heads(what, "hidden_size", h, "num_attention_heads", heads, e));
    struct plan_arch *a = &m->arch;
    a->kind = PLAN_ARCH_HF_OPT;
    a->layers = a->layers_here = (int)layers;
    a->hidden = h;
    a->ffn_hidden = ffn;
    a->heads = a->kv_heads = heads;
    a->head_dim = h / heads;
    a->vocab = a->vocab_padded = vocab;
    a->max_pos = max_pos;
    a->tied_embeddings = tied;
    RL_TRY(seq_len(what, o, max_pos, max_pos, "max_position_embeddings", "max_position_embeddings", false, a, e));

    const enum plan_tp_split R = PLAN_TP_REPLICATED;
    const char *d = "model.decoder";
    RL_TRY(plan__addf(m, e, R, PLAN_TF_EMBEDDING, -1, 2, vocab, proj, "%s.embed_tokens.weight", d));
    /* OPTLearnedPositionalEmbedding keeps 2 extra rows (offset 2). */
    RL_TRY(plan__addf(m, e, R, PLAN_TF_EMBEDDING, -1, 2, max_pos + 2, h, "%s.embed_positions.weight", d));
    if (proj != h) {
        RL_TRY(plan__addf(m, e, R, 0, -1, 2, proj, h, "%s.project_out.weight", d));
        RL_TRY(plan__addf(m, e, R, 0, -1, 2, h, proj, "%s.project_in.weight", d));
    }
    /* OPTDecoder registers final_layer_norm before its layers. */
    char p[PLAN_NAME_MAX];
    if (ln_before && !remove_final) {
        snprintf(p, sizeof p, "%s.final_layer_norm", d);
        RL_TRY(opt_norm(m, e, affine, -1, h, p));
    }
    const char *const attn[4] = {"k", "v", "q", "out"};
    for (int i = 0; i < (int)layers; i++) {
        for (int k = 0; k < 4; k++) {
            RL_TRY(plan__addf(m, e, R, 0, i, 2, h, h, "%s.layers.%d.self_attn.%s_proj.weight", d, i, attn[k]));
            if (bias)
                RL_TRY(plan__addf(m, e, R, PLAN_TF_BIAS, i, 1, h, 0, "%s.layers.%d.self_attn.%s_proj.bias",
                               d, i, attn[k]));
        }
        snprintf(p, sizeof p, "%s.layers.%d.self_attn_layer_norm", d, i);
        RL_TRY(opt_norm(m, e, affine, i, h, p));
        RL_TRY(plan__addf(m, e, R, 0, i, 2, ffn, h, "%s.layers.%d.fc1.weight", d, i));
        if (bias)
            RL_TRY(plan__addf(m, e, R, PLAN_TF_BIAS, i, 1, ffn, 0, "%s.layers.%d.fc1.bias", d, i));
        RL_TRY(plan__addf(m, e, R, 0, i, 2, h, ffn, "%s.layers.%d.fc2.weight", d, i));
        if (bias)
            RL_TRY(plan__addf(m, e, R, PLAN_TF_BIAS, i, 1, h, 0, "%s.layers.%d.fc2.bias", d, i));
        snprintf(p, sizeof p, "%s.layers.%d.final_layer_norm", d, i);
        RL_TRY(opt_norm(m, e, affine, i, h, p));
    }
    if (!tied)
        RL_TRY(plan__addf(m, e, R, 0, -1, 2, vocab, proj, "lm_head.weight"));
    return 0;
}

/* ---- T5 (T5ForConditionalGeneration) ----------------------------------------------------------- */
struct t5 {
    int64_t d, inner, ff, heads, buckets;   /* d_model, heads x d_kv, d_ff, heads, rel. buckets */
    bool gated;                             /* feed_forward_proj "gated-*": wi_0 and wi_1 */
};

static int t5_attn(struct plan_model *m, struct rl_err *e, const struct t5 *t, int layer,
                   const char *prefix, bool rel_bias)
{
    const char *const w[4] = {"q", "k", "v", "o"};
    for (int k = 0; k < 4; k++)
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, layer, 2, k < 3 ? t->inner : t->d,
                       k < 3 ? t->d : t->inner, "%s.%s.weight", prefix, w[k]));
    if (rel_bias)
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, layer, 2, t->buckets, t->heads,
                       "%s.relative_attention_bias.weight", prefix));
    return 0;
}

static int t5_ff(struct plan_model *m, struct rl_err *e, const struct t5 *t, int layer,
                 const char *prefix)
{
    if (t->gated) {
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, layer, 2, t->ff, t->d, "%s.DenseReluDense.wi_0.weight", prefix));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, layer, 2, t->ff, t->d, "%s.DenseReluDense.wi_1.weight", prefix));
    } else {
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, layer, 2, t->ff, t->d, "%s.DenseReluDense.wi.weight", prefix));
    }
    RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, layer, 2, t->d, t->ff, "%s.DenseReluDense.wo.weight", prefix));
    return plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_RMSNORM, layer, 1, t->d, 0, "%s.layer_norm.weight", prefix);
}

static int t5(struct plan_model *m, const json_t *root, const char *what,
              const struct plan_model_opts *o, struct rl_err *e)
{
    int64_t layers, dec_layers, d, dkv, ff, heads, vocab, buckets, npos;
    bool tied;
    const char *ffp;
    NEED_LAYERS("num_layers", &layers);
    NEED("d_model", &d);
    NEED("d_kv", &dkv);
    NEED("d_ff", &ff);
    NEED("num_heads", &heads);
    NEED("vocab_size", &vocab);
    RL_TRY(plan__json_int(root, what, "num_decoder_layers", false, layers, 1, PLAN__MAX_LAYERS, &dec_layers, e));
    OPT("relative_attention_num_buckets", 32, &buckets);
    OPT("n_positions", 512, &npos);
    OPTB("tie_word_embeddings", true, &tied);
    RL_TRY(plan__json_str(root, what, "feed_forward_proj", "relu", &ffp, e));
    RL_TRY(check_layers(what, "num_layers", layers, e));
    RL_TRY(check_layers(what, "num_decoder_layers", dec_layers, e));
    struct t5 t = {.d = d, .ff = ff, .heads = heads, .buckets = buckets};
    if (__builtin_mul_overflow(heads, dkv, &t.inner) || t.inner > PLAN__MAX_DIM)
        return rl_errf(e, RL_EINVAL, "%s: num_heads x d_kv (%lld x %lld) is larger than %lld", what,
                       (long long)heads, (long long)dkv, PLAN__MAX_DIM);
    if (strncmp(ffp, "gated-", 6) == 0)
        t.gated = true;
    else if (strchr(ffp, '-'))
        return rl_errf(e, RL_EINVAL, "%s: feed_forward_proj: '%s'; allowed: an activation ('relu') "
                       "or 'gated-' and an activation ('gated-gelu')", what, ffp);
    struct plan_arch *a = &m->arch;
    a->kind = PLAN_ARCH_HF_T5;
    a->layers = a->layers_here = (int)(layers + dec_layers);
    a->hidden = d;
    a->ffn_hidden = ff;
    a->heads = a->kv_heads = heads;
    a->head_dim = dkv;
    a->vocab = a->vocab_padded = vocab;
    a->max_pos = 0;   /* relative position buckets, no table per position */
    a->swiglu = t.gated;
    a->tied_embeddings = tied;
    RL_TRY(seq_len(what, o, npos, 0, "n_positions", "n_positions", false, a, e));

    RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_EMBEDDING, -1, 2, vocab, d, "shared.weight"));
    char p[PLAN_NAME_MAX];
    for (int i = 0; i < (int)layers; i++) {
        snprintf(p, sizeof p, "encoder.block.%d.layer.0.SelfAttention", i);
        RL_TRY(t5_attn(m, e, &t, i, p, i == 0));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_RMSNORM, i, 1, d, 0,
                       "encoder.block.%d.layer.0.layer_norm.weight", i));
        snprintf(p, sizeof p, "encoder.block.%d.layer.1", i);
        RL_TRY(t5_ff(m, e, &t, i, p));
    }
    RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_RMSNORM, -1, 1, d, 0, "encoder.final_layer_norm.weight"));
    for (int i = 0; i < (int)dec_layers; i++) {
        const int L = (int)layers + i;
        snprintf(p, sizeof p, "decoder.block.%d.layer.0.SelfAttention", i);
        RL_TRY(t5_attn(m, e, &t, L, p, i == 0));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_RMSNORM, L, 1, d, 0,
                       "decoder.block.%d.layer.0.layer_norm.weight", i));
        snprintf(p, sizeof p, "decoder.block.%d.layer.1.EncDecAttention", i);
        RL_TRY(t5_attn(m, e, &t, L, p, false));
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_RMSNORM, L, 1, d, 0,
                       "decoder.block.%d.layer.1.layer_norm.weight", i));
        snprintf(p, sizeof p, "decoder.block.%d.layer.2", i);
        RL_TRY(t5_ff(m, e, &t, L, p));
    }
    RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, PLAN_TF_RMSNORM, -1, 1, d, 0, "decoder.final_layer_norm.weight"));
    if (!tied)
        RL_TRY(plan__addf(m, e, PLAN_TP_REPLICATED, 0, -1, 2, vocab, d, "lm_head.weight"));
    return 0;
}

/* ---- dispatch ---------------------------------------------------------------------------------- */
int plan__hf_from_json(struct plan_model *m, const json_t *root, const char *what,
                       const struct plan_model_opts *o, struct rl_err *e)
{
    const char *type;
    RL_TRY(plan__json_str(root, what, "model_type", NULL, &type, e));
    if (!type)
        return rl_errf(e, RL_EINVAL, "%s: model_type: missing; allowed: gpt2, t5, llama, opt, mistral, qwen2, qwen3, gemma2, phi3", what);
    if (o->tp != 1)
        return rl_errf(e, RL_EINVAL, "tp %d: with the Hugging Face model %s; allowed: 1 (tensor "
                       "parallelism is modelled for Megatron GPT only)", o->tp, what);
    if (o->pp != 1 || o->pp_stage != 0)
        return rl_errf(e, RL_EINVAL, "pp %d: with the Hugging Face model %s; allowed: 1 (pipeline "
                       "parallelism is modelled for Megatron GPT only)", o->pp, what);
    int rc;
    if (strcmp(type, "gpt2") == 0)
        rc = gpt2(m, root, what, o, e);
    else if (strcmp(type, "t5") == 0)
        rc = t5(m, root, what, o, e);
    else if (strcmp(type, "opt") == 0)
        rc = opt(m, root, what, o, e);
    else {
        const struct decoder_family *f = NULL;
        for (size_t i = 0; i < sizeof decoder_families / sizeof decoder_families[0]; i++)
            if (strcmp(type, decoder_families[i].type) == 0)
                f = &decoder_families[i];
        if (!f)
            return rl_errf(e, RL_EINVAL, "%s: model_type: '%s' is not supported; allowed: gpt2, t5, "
                           "llama, opt, mistral, qwen2, qwen3, gemma2, phi3", what, type);
        rc = decoder(m, root, what, o, f, e);
    }
    if (rc)
        return rc;
    m->arch.tp = m->arch.pp = 1;
    m->arch.pp_stage = 0;
    /* The checkpoint's precision: "torch_dtype" (transformers < 4.56 writes it; "dtype" after). */
    const char *dt = NULL;
    RL_TRY(plan__json_str(root, what, "torch_dtype", NULL, &dt, e));
    if (!dt)
        RL_TRY(plan__json_str(root, what, "dtype", NULL, &dt, e));
    static const struct { const char *name; enum plan_dtype t; } dtypes[] = {
        {"bfloat16", PLAN_BF16}, {"float16", PLAN_FP16}, {"float32", PLAN_FP32},
    };
    for (size_t i = 0; dt && i < RL_COUNT(dtypes); i++)
        if (!strcmp(dt, dtypes[i].name)) {
            m->arch.torch_dtype = dtypes[i].t;
            m->arch.has_torch_dtype = true;
        }
    /* transformers' default attention: sdpa where the model class has it, T5 eager (plan_attention_origin) */
    m->arch.attention = m->arch.kind == PLAN_ARCH_HF_T5 ? PLAN_ATTN_MATERIALIZED : PLAN_ATTN_FLASH;
    return 0;
}
