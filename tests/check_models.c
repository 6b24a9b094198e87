/* tests/check_models.c — parameter tensor lists (plan/model.c, megatron.c, hf.c, model_load.c).
 *
 * Expected totals are published parameter counts or hand counts written out as arithmetic from
 * the architecture, never numbers produced by the code under test. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "tests/util.h"

static const char *catalog(void)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/catalog", tu_src());
    return buf;
}

/* Loads a preset or file with the given TP/PP; fails the test on error. */
static void load(struct plan_model *m, const char *name, int tp, int pp, int stage)
{
    struct plan_model_opts o = {tp, pp, stage, 0};
    struct rl_err e = {0};
    int rc = plan_model_load(m, catalog(), name, &o, &e);
    ck_assert_msg(rc == 0, "%s: %s", name, e.msg);
}

static const struct plan_tensor *find(const struct plan_model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return &m->tensors[i];
    ck_abort_msg("tensor %s not in %s", name, m->name);
    return NULL;
}

static int index_of(const struct plan_model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return i;
    return -1;
}

static void shape2(const struct plan_tensor *t, int64_t a, int64_t b)
{
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_int_eq(t->shape[0], a);
    ck_assert_int_eq(t->shape[1], b);
    ck_assert_int_eq(t->numel, a * b);
}

static void shape1(const struct plan_tensor *t, int64_t a)
{
    ck_assert_int_eq(t->ndim, 1);
    ck_assert_int_eq(t->shape[0], a);
}

static int64_t sum_numel(const struct plan_model *m)
{
    int64_t s = 0;
    for (int i = 0; i < m->n_tensors; i++)
        s += m->tensors[i].numel;
    return s;
}

/* ---- known totals ------------------------------------------------------------------------------ */

START_TEST(published_totals_hf)
{
    static const struct { const char *name; int64_t total; } known[] = {
        {"gpt2", 124439808LL},         /* GPT-2 small, 124M */
        {"t5-3b", 2851598336LL},       /* T5 v1.0 3B */
        {"llama2-7b", 6738415616LL},   /* Llama 2 7B */
        {"opt-13b", 12853473280LL},    /* OPT 13B */
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        struct plan_model m;
        load(&m, known[i].name, 1, 1, 0);
        ck_assert_msg(m.total_numel == known[i].total, "%s: %lld != %lld", known[i].name,
                      (long long)m.total_numel, (long long)known[i].total);
        ck_assert_int_eq(sum_numel(&m), m.total_numel);
        plan_model_free(&m);
    }
}
END_TEST

START_TEST(megatron_2p7b_hand_count)
{
    struct plan_model m;
    load(&m, "gpt-2.7b", 1, 1, 0);
    /* word embeddings (50257 padded to 50304 = 393 x 128) + learned positions + 32 blocks of
     * (QKV 3h^2+3h, dense h^2+h, MLP 8h^2+5h, two LayerNorms 4h) + final LayerNorm. */
    const int64_t h = 2560;
    const int64_t hand = 50304LL * 2560 + 2048LL * 2560 + 32 * (12 * h * h + 13 * h) + 2 * h;
    ck_assert_int_eq(hand, 2651673600LL);
    ck_assert_int_eq(m.total_numel, hand);
    ck_assert_int_eq(m.arch.vocab_padded, 50304);
    ck_assert_int_eq(m.arch.layers, 32);
    ck_assert_int_eq(m.arch.layers_here, 32);
    ck_assert_int_eq(m.arch.hidden, 2560);
    ck_assert_int_eq(m.arch.ffn_hidden, 4 * 2560);
    ck_assert_int_eq(m.arch.heads, 32);
    ck_assert_int_eq(m.arch.kv_heads, 32);
    ck_assert_int_eq(m.arch.seq_len, 2048);
    ck_assert_int_eq(m.arch.max_pos, 2048);
    ck_assert(m.arch.tied_embeddings);
    ck_assert_int_eq(m.arch.kind, PLAN_ARCH_MEGATRON_GPT);
    /* Framework order: embedding first, final norm last, layer 0 input norm before QKV. */
    ck_assert_str_eq(m.tensors[0].name, "language_model.embedding.word_embeddings.weight");
    ck_assert_str_eq(m.tensors[1].name, "language_model.embedding.position_embeddings.weight");
    ck_assert_str_eq(m.tensors[2].name, "language_model.encoder.layers.0.input_layernorm.weight");
    ck_assert_str_eq(m.tensors[4].name, "language_model.encoder.layers.0.self_attention.query_key_value.weight");
    ck_assert_str_eq(m.tensors[m.n_tensors - 1].name, "language_model.encoder.final_layernorm.bias");
    ck_assert_int_eq(m.n_tensors, 2 + 32 * 12 + 2);
    plan_model_free(&m);
}
END_TEST

START_TEST(megatron_tp8_shapes)
{
    struct plan_model m;
    load(&m, "gpt-2.7b", 8, 1, 0);
    ck_assert_int_eq(m.arch.vocab_padded, 51200);   /* 50257 up to a multiple of 128 x 8 = 1024 */
    ck_assert_int_eq(m.arch.tp, 8);
    const struct plan_tensor *t = find(&m, "language_model.embedding.word_embeddings.weight");
    shape2(t, 6400, 2560);
    ck_assert_int_eq(t->tp, PLAN_TP_VOCAB);
    t = find(&m, "language_model.embedding.position_embeddings.weight");
    shape2(t, 2048, 2560);
    ck_assert_int_eq(t->tp, PLAN_TP_REPLICATED);
    t = find(&m, "language_model.encoder.layers.5.self_attention.query_key_value.weight");
    shape2(t, 960, 2560);
    ck_assert_int_eq(t->tp, PLAN_TP_COLUMN);
    t = find(&m, "language_model.encoder.layers.5.self_attention.query_key_value.bias");
    shape1(t, 960);
    ck_assert_int_eq(t->tp, PLAN_TP_COLUMN);
    t = find(&m, "language_model.encoder.layers.5.self_attention.dense.weight");
    shape2(t, 2560, 320);
    ck_assert_int_eq(t->tp, PLAN_TP_ROW);
    t = find(&m, "language_model.encoder.layers.5.self_attention.dense.bias");
    shape1(t, 2560);   /* row-parallel bias is replicated, not split */
    ck_assert_int_eq(t->tp, PLAN_TP_REPLICATED);
    t = find(&m, "language_model.encoder.layers.5.mlp.dense_h_to_4h.weight");
    shape2(t, 1280, 2560);
    ck_assert_int_eq(t->tp, PLAN_TP_COLUMN);
    shape1(find(&m, "language_model.encoder.layers.5.mlp.dense_h_to_4h.bias"), 1280);
    t = find(&m, "language_model.encoder.layers.5.mlp.dense_4h_to_h.weight");
    shape2(t, 2560, 1280);
    ck_assert_int_eq(t->tp, PLAN_TP_ROW);
    t = find(&m, "language_model.encoder.layers.5.mlp.dense_4h_to_h.bias");
    shape1(t, 2560);
    ck_assert_int_eq(t->tp, PLAN_TP_REPLICATED);
    t = find(&m, "language_model.encoder.layers.5.input_layernorm.weight");
    ck_assert_int_eq(t->tp, PLAN_TP_REPLICATED);
    ck_assert_uint_eq(t->flags, PLAN_TF_LAYERNORM);
    const int64_t h = 2560;
    const int64_t per_layer = 960 * h + 960 + h * 320 + h + 1280 * h + 1280 + h * 1280 + h + 4 * h;
    ck_assert_int_eq(m.total_numel, 6400 * h + 2048 * h + 32 * per_layer + 2 * h);
    plan_model_free(&m);
}
END_TEST

START_TEST(megatron_gqa_swiglu_rmsnorm)
{
    /* A LLaMA-2-7B-like Megatron model with GQA: h 4096, 32 heads, 8 KV heads (head_dim 128),
     * SwiGLU ffn 11008, RMSNorm, no linear biases, rotary, untied output, vocab 32000. */
    struct plan_megatron_cfg c;
    plan_megatron_defaults(&c);
    c.num_layers = 32;
    c.hidden = 4096;
    c.ffn_hidden = 11008;
    c.heads = 32;
    c.kv_heads = 8;
    c.vocab = 32000;
    c.seq_len = 4096;
    c.swiglu = c.rmsnorm = c.no_bias = c.untie = c.rotary = true;
    c.tp = 2;
    struct plan_model m;
    struct rl_err e = {0};
    ck_assert_msg(plan_model_megatron(&m, &c, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(m.arch.vocab_padded, 32000);   /* already a multiple of 256 */
    ck_assert_int_eq(m.arch.kv_heads, 8);
    ck_assert_int_eq(m.arch.max_pos, 0);
    /* QKV rows: (h + 2 x 8 x 128) / 2 = (4096 + 2048) / 2 = 3072. */
    shape2(find(&m, "language_model.encoder.layers.0.self_attention.query_key_value.weight"), 3072, 4096);
    /* SwiGLU up-projection: 2 x 11008 / 2 = 11008 rows. */
    shape2(find(&m, "language_model.encoder.layers.0.mlp.dense_h_to_4h.weight"), 11008, 4096);
    shape2(find(&m, "language_model.encoder.layers.0.mlp.dense_4h_to_h.weight"), 4096, 5504);
    ck_assert_int_eq(index_of(&m, "language_model.encoder.layers.0.input_layernorm.bias"), -1);
    ck_assert_int_eq(index_of(&m, "language_model.encoder.layers.0.self_attention.dense.bias"), -1);
    ck_assert_int_eq(index_of(&m, "language_model.embedding.position_embeddings.weight"), -1);
    ck_assert_str_eq(m.tensors[m.n_tensors - 1].name, "language_model.output_layer.weight");
    shape2(&m.tensors[m.n_tensors - 1], 16000, 4096);
    /* Per layer on a TP-2 rank: QKV 3072 h + dense h x 2048 + up 11008 h + down h x 5504 + 2 norms h. */
    const int64_t h = 4096;
    const int64_t layer = 3072 * h + h * 2048 + 11008 * h + h * 5504 + 2 * h;
    ck_assert_int_eq(m.total_numel, 16000 * h + 32 * layer + h + 16000 * h);
    plan_model_free(&m);

    c.tp = 1;
    ck_assert_msg(plan_model_megatron(&m, &c, &e) == 0, "%s", e.msg);
    /* At TP 1 it is LLaMA-2-7B with GQA-8: 2 x 32000 h + 32 x (q h^2 + kv 2 x 1024 h + o h^2 +
     * 3 x 11008 h + 2h) + h. */
    ck_assert_int_eq(m.total_numel,
                     2 * 32000 * h + 32 * (2 * h * h + 2 * 1024 * h + 3 * 11008 * h + 2 * h) + h);
    plan_model_free(&m);
}
END_TEST

START_TEST(megatron_pp_stages)
{
    const int64_t h = 2560, vp = 50304;
    int64_t sum = 0;
    for (int s = 0; s < 4; s++) {
        struct plan_model m;
        load(&m, "gpt-2.7b", 1, 4, s);
        ck_assert_int_eq(m.arch.layers_here, 8);
        ck_assert_int_eq(m.arch.pp_stage, s);
        int emb = index_of(&m, "language_model.embedding.word_embeddings.weight");
        int pos = index_of(&m, "language_model.embedding.position_embeddings.weight");
        int fin = index_of(&m, "language_model.encoder.final_layernorm.weight");
        int copy = index_of(&m, "word_embeddings.weight");
        ck_assert_int_eq(emb, s == 0 ? 0 : -1);
        ck_assert_int_eq(pos, s == 0 ? 1 : -1);
        ck_assert(s == 3 ? fin >= 0 : fin < 0);
        ck_assert_int_eq(copy, s == 3 ? m.n_tensors - 1 : -1);
        if (copy >= 0)
            shape2(&m.tensors[copy], vp, h);
        /* Names are stage-local (layers.0..7); the layer field is the global block. */
        int first = index_of(&m, "language_model.encoder.layers.0.input_layernorm.weight");
        ck_assert_int_ge(first, 0);
        ck_assert_int_eq(m.tensors[first].layer, 8 * s);
        ck_assert_int_eq(index_of(&m, "language_model.encoder.layers.8.input_layernorm.weight"), -1);
        int64_t blocks = 8 * (12 * h * h + 13 * h);
        int64_t expect = blocks + (s == 0 ? vp * h + 2048 * h : 0) + (s == 3 ? 2 * h + vp * h : 0);
        ck_assert_int_eq(m.total_numel, expect);
        sum += m.total_numel;
        plan_model_free(&m);
    }
    /* The stages together hold the model plus one tied-embedding copy. */
    ck_assert_int_eq(sum, 2651673600LL + vp * h);
}
END_TEST

/* ---- param groups ------------------------------------------------------------------------------ */

static void rms_model(struct plan_model *m, bool no_bias)
{
    struct plan_megatron_cfg c;
    plan_megatron_defaults(&c);
    c.num_layers = 2;
    c.hidden = 64;
    c.heads = 4;
    c.seq_len = 128;
    c.rmsnorm = true;
    c.no_bias = no_bias;
    struct rl_err e = {0};
    ck_assert_msg(plan_model_megatron(m, &c, &e) == 0, "%s", e.msg);
}

START_TEST(groups_megatron_rules_on_rmsnorm)
{
    struct plan_model m;
    rms_model(&m, false);
    const char *norm = "language_model.encoder.layers.1.input_layernorm.weight";
    const char *bias = "language_model.encoder.layers.1.self_attention.dense.bias";
    const char *w = "language_model.encoder.layers.1.self_attention.dense.weight";
    const char *emb = "language_model.embedding.word_embeddings.weight";
    plan_model_group(&m, PLAN_GROUPS_MEGATRON, false);
    ck_assert_int_eq(m.n_groups, 2);
    ck_assert_int_eq(m.group_rule, PLAN_GROUPS_MEGATRON);
    ck_assert_int_eq(find(&m, norm)->group, 1);   /* 1-D: no decay */
    ck_assert_int_eq(find(&m, bias)->group, 1);
    ck_assert_int_eq(find(&m, w)->group, 0);
    ck_assert_int_eq(find(&m, emb)->group, 0);
    plan_model_group(&m, PLAN_GROUPS_MEGATRON_OLD, false);
    ck_assert_int_eq(m.n_groups, 2);
    ck_assert_int_eq(find(&m, norm)->group, 0);   /* RMSNorm weight stays with decay */
    ck_assert_int_eq(find(&m, bias)->group, 1);
    ck_assert_int_eq(find(&m, w)->group, 0);
    plan_model_group(&m, PLAN_GROUPS_HF_TWO, false);
    ck_assert_int_eq(find(&m, norm)->group, 1);
    plan_model_group(&m, PLAN_GROUPS_FLAT, false);
    ck_assert_int_eq(m.n_groups, 1);
    for (int i = 0; i < m.n_tensors; i++)
        ck_assert_int_eq(m.tensors[i].group, 0);
    plan_model_group(&m, PLAN_GROUPS_AUTO, true);   /* Megatron: the optimizer block is irrelevant */
    ck_assert_int_eq(m.group_rule, PLAN_GROUPS_MEGATRON);
    plan_model_free(&m);

    /* No biases and RMSNorm under the old rule: the no-decay group is empty and dropped. */
    rms_model(&m, true);
    plan_model_group(&m, PLAN_GROUPS_MEGATRON_OLD, false);
    ck_assert_int_eq(m.n_groups, 1);
    for (int i = 0; i < m.n_tensors; i++)
        ck_assert_int_eq(m.tensors[i].group, 0);
    plan_model_group(&m, PLAN_GROUPS_MEGATRON, false);
    ck_assert_int_eq(m.n_groups, 2);
    /* LayerNorm (not RMSNorm) params are no-decay under the old rule. */
    plan_model_free(&m);
    load(&m, "gpt-350m", 1, 1, 0);
    plan_model_group(&m, PLAN_GROUPS_MEGATRON_OLD, false);
    ck_assert_int_eq(find(&m, "language_model.encoder.layers.3.input_layernorm.weight")->group, 1);
    ck_assert_int_eq(find(&m, "language_model.embedding.position_embeddings.weight")->group, 0);
    plan_model_free(&m);
}
END_TEST

START_TEST(groups_hf)
{
    struct plan_model m;
    load(&m, "llama2-7b", 1, 1, 0);
    plan_model_group(&m, PLAN_GROUPS_AUTO, true);
    ck_assert_int_eq(m.group_rule, PLAN_GROUPS_FLAT);
    ck_assert_int_eq(m.n_groups, 1);
    plan_model_group(&m, PLAN_GROUPS_AUTO, false);
    ck_assert_int_eq(m.group_rule, PLAN_GROUPS_HF_TWO);
    ck_assert_int_eq(m.n_groups, 2);
    ck_assert_int_eq(find(&m, "model.layers.0.input_layernorm.weight")->group, 1);
    ck_assert_int_eq(find(&m, "model.norm.weight")->group, 1);
    ck_assert_int_eq(find(&m, "model.layers.0.self_attn.q_proj.weight")->group, 0);
    ck_assert_int_eq(find(&m, "lm_head.weight")->group, 0);
    plan_model_free(&m);

    /* HF Trainer puts every name containing "bias" in no-decay: T5's relative_attention_bias too. */
    load(&m, "t5-3b", 1, 1, 0);
    plan_model_group(&m, PLAN_GROUPS_HF_TWO, false);
    ck_assert_int_eq(find(&m, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight")->group, 1);
    ck_assert_int_eq(find(&m, "encoder.block.0.layer.0.layer_norm.weight")->group, 1);
    ck_assert_int_eq(find(&m, "encoder.block.0.layer.0.SelfAttention.q.weight")->group, 0);
    plan_model_free(&m);
}
END_TEST

START_TEST(group_rule_names)
{
    enum plan_group_rule r;
    struct rl_err e = {0};
    const enum plan_group_rule all[] = {PLAN_GROUPS_AUTO, PLAN_GROUPS_MEGATRON,
                                        PLAN_GROUPS_MEGATRON_OLD, PLAN_GROUPS_HF_TWO, PLAN_GROUPS_FLAT};
    for (size_t i = 0; i < 5; i++) {
        ck_assert_int_eq(plan_group_rule_parse(plan_group_rule_name(all[i]), &r, &e), 0);
        ck_assert_int_eq(r, all[i]);
    }
    ck_assert_int_eq(plan_group_rule_parse("hf", &r, &e), 0);
    ck_assert_int_eq(r, PLAN_GROUPS_HF_TWO);
    ck_assert_int_eq(plan_group_rule_parse("decay", &r, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "'decay'"));
    ck_assert_ptr_nonnull(strstr(e.msg, "megatron-old"));
    ck_assert_str_eq(plan_dtype_name(PLAN_BF16), "bf16");
    ck_assert_int_eq(plan_dtype_bytes(PLAN_FP32), 4);
    ck_assert_int_eq(plan_dtype_bytes(PLAN_FP16), 2);
    ck_assert_str_eq(plan_tp_split_name(PLAN_TP_ROW), "row");
    ck_assert_str_eq(plan_arch_name(PLAN_ARCH_HF_T5), "hf-t5");
}
END_TEST

/* ---- HF order and shapes ----------------------------------------------------------------------- */

START_TEST(opt_order)
{
    struct plan_model m;
    load(&m, "opt-13b", 1, 1, 0);
    ck_assert_str_eq(m.tensors[0].name, "model.decoder.embed_tokens.weight");
    ck_assert_str_eq(m.tensors[1].name, "model.decoder.embed_positions.weight");
    shape2(&m.tensors[1], 2048 + 2, 5120);
    /* final_layer_norm is registered before the layers in OPTDecoder. */
    ck_assert_str_eq(m.tensors[2].name, "model.decoder.final_layer_norm.weight");
    ck_assert_str_eq(m.tensors[3].name, "model.decoder.final_layer_norm.bias");
    ck_assert_str_eq(m.tensors[4].name, "model.decoder.layers.0.self_attn.k_proj.weight");
    ck_assert_str_eq(m.tensors[6].name, "model.decoder.layers.0.self_attn.v_proj.weight");
    ck_assert_str_eq(m.tensors[8].name, "model.decoder.layers.0.self_attn.q_proj.weight");
    ck_assert_str_eq(m.tensors[10].name, "model.decoder.layers.0.self_attn.out_proj.weight");
    ck_assert_str_eq(m.tensors[12].name, "model.decoder.layers.0.self_attn_layer_norm.weight");
    ck_assert_str_eq(m.tensors[14].name, "model.decoder.layers.0.fc1.weight");
    shape2(&m.tensors[14], 20480, 5120);
    ck_assert_str_eq(m.tensors[m.n_tensors - 1].name, "model.decoder.layers.39.final_layer_norm.bias");
    ck_assert_int_eq(index_of(&m, "lm_head.weight"), -1);   /* tied */
    plan_model_free(&m);

    /* opt-30b: hidden 7168, 48 layers, ffn 28672, vocab 50272, 2048 + 2 positions. */
    load(&m, "opt-30b", 1, 1, 0);
    const int64_t h = 7168, f = 28672;
    const int64_t layer = 4 * (h * h + h) + 2 * h + (f * h + f) + (h * f + h) + 2 * h;
    ck_assert_int_eq(m.total_numel, 50272 * h + 2050 * h + 2 * h + 48 * layer);
    plan_model_free(&m);
}
END_TEST

START_TEST(gpt2_and_t5_order)
{
    struct plan_model m;
    load(&m, "gpt2", 1, 1, 0);
    ck_assert_str_eq(m.tensors[0].name, "transformer.wte.weight");
    ck_assert_str_eq(m.tensors[1].name, "transformer.wpe.weight");
    ck_assert_str_eq(m.tensors[2].name, "transformer.h.0.ln_1.weight");
    shape2(find(&m, "transformer.h.0.attn.c_attn.weight"), 768, 2304);   /* Conv1D [in, out] */
    shape2(find(&m, "transformer.h.11.mlp.c_proj.weight"), 3072, 768);
    ck_assert_str_eq(m.tensors[m.n_tensors - 1].name, "transformer.ln_f.bias");
    plan_model_free(&m);

    load(&m, "t5-3b", 1, 1, 0);
    ck_assert_str_eq(m.tensors[0].name, "shared.weight");
    ck_assert_str_eq(m.tensors[4].name, "encoder.block.0.layer.0.SelfAttention.o.weight");
    ck_assert_str_eq(m.tensors[5].name, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
    shape2(&m.tensors[5], 32, 32);
    shape2(&m.tensors[1], 4096, 1024);   /* q: heads x d_kv = 32 x 128 rows */
    ck_assert_int_eq(index_of(&m, "encoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight"), -1);
    ck_assert_int_ge(index_of(&m, "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"), 0);
    ck_assert_int_eq(index_of(&m, "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"), -1);
    ck_assert_int_lt(index_of(&m, "encoder.final_layer_norm.weight"),
                     index_of(&m, "decoder.block.0.layer.0.SelfAttention.q.weight"));
    ck_assert_str_eq(m.tensors[m.n_tensors - 1].name, "decoder.final_layer_norm.weight");
    ck_assert_int_eq(m.arch.layers, 48);
    ck_assert_int_eq(m.arch.head_dim, 128);
    plan_model_free(&m);
}
END_TEST

/* Today's models: each preset reproduces its published parameter count exactly. The counts are
 * the safetensors totals Hugging Face publishes for the checkpoints (the same figures appear in
 * GGUF general.parameter_count metadata): Llama-2-13b-hf 13,015,864,320; Llama-2-70b-hf
 * 68,976,648,192 (its files add 5,120 rotary inv_freq buffer elements, not parameters);
 * Llama-3.1-8B 8,030,261,248; Llama-3.1-70B 70,553,706,496; Mistral-7B-v0.1 7,241,732,096;
 * Qwen2.5-7B 7,615,616,512; Qwen3-8B 8,190,735,360. */
START_TEST(published_totals_todays_models)
{
    static const struct { const char *name; int64_t total; int64_t seq; } known[] = {
        {"llama2-13b", 13015864320LL, 4096},
        {"llama2-70b", 68976648192LL, 4096},
        {"llama3.1-8b", 8030261248LL, 8192},
        {"llama3.1-70b", 70553706496LL, 8192},
        {"mistral-7b", 7241732096LL, 4096},
        {"qwen2.5-7b", 7615616512LL, 4096},
        {"qwen3-8b", 8190735360LL, 4096},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        struct plan_model m;
        load(&m, known[i].name, 1, 1, 0);
        ck_assert_msg(m.total_numel == known[i].total, "%s: %lld != %lld", known[i].name,
                      (long long)m.total_numel, (long long)known[i].total);
        ck_assert_int_eq(sum_numel(&m), m.total_numel);
        /* the preset's training length, not the 128k context limit */
        ck_assert_int_eq(m.arch.seq_len, known[i].seq);
        plan_model_free(&m);
    }
}
END_TEST

START_TEST(hf_families_tensor_lists)
{
    struct plan_model m;
    /* Qwen2.5-7B: q/k/v carry biases, o does not. */
    load(&m, "qwen2.5-7b", 1, 1, 0);
    int q = index_of(&m, "model.layers.5.self_attn.q_proj.weight");
    ck_assert_str_eq(m.tensors[q + 1].name, "model.layers.5.self_attn.q_proj.bias");
    shape2(&m.tensors[q + 2], 4 * 128, 3584);
    ck_assert_int_lt(index_of(&m, "model.layers.5.self_attn.v_proj.bias"), index_of(&m, "model.layers.5.self_attn.o_proj.weight"));
    ck_assert_int_lt(index_of(&m, "model.layers.5.self_attn.o_proj.bias"), 0);
    plan_model_free(&m);
    /* Qwen3-8B: q_norm and k_norm of head_dim right after o_proj (Qwen3Attention.__init__). */
    load(&m, "qwen3-8b", 1, 1, 0);
    int o = index_of(&m, "model.layers.0.self_attn.o_proj.weight");
    ck_assert_str_eq(m.tensors[o + 1].name, "model.layers.0.self_attn.q_norm.weight");
    ck_assert_str_eq(m.tensors[o + 2].name, "model.layers.0.self_attn.k_norm.weight");
    ck_assert_int_eq(m.tensors[o + 1].shape[0], 128);
    ck_assert(m.tensors[o + 1].flags & PLAN_TF_RMSNORM);
    plan_model_free(&m);
    /* Gemma-2-9B's published config.json: 9,241,705,984 parameters (tied embeddings, head_dim
     * 256 with 16 heads > hidden 3584, four norms per layer). */
    const char *g = tu_write("gemma2.json",
        "{\"architectures\": [\"Gemma2ForCausalLM\"], \"head_dim\": 256, \"hidden_size\": 3584,"
        " \"intermediate_size\": 14336, \"max_position_embeddings\": 8192, \"model_type\": \"gemma2\","
        " \"num_attention_heads\": 16, \"num_hidden_layers\": 42, \"num_key_value_heads\": 8,"
        " \"vocab_size\": 256000, \"sliding_window\": 4096, \"final_logit_softcapping\": 30.0}");
    load(&m, g, 1, 1, 0);
    ck_assert_int_eq(m.total_numel, 9241705984LL);
    ck_assert(m.arch.tied_embeddings);
    int f = index_of(&m, "model.layers.1.pre_feedforward_layernorm.weight");
    ck_assert_str_eq(m.tensors[f - 1].name, "model.layers.1.post_attention_layernorm.weight");
    ck_assert_str_eq(m.tensors[f + 1].name, "model.layers.1.post_feedforward_layernorm.weight");
    plan_model_free(&m);
    /* Phi-3-mini-4k-instruct's published config.json: 3,821,079,552 parameters; o_proj is
     * registered before the fused qkv_proj, then gate_up_proj and down_proj. */
    const char *ph = tu_write("phi3.json",
        "{\"architectures\": [\"Phi3ForCausalLM\"], \"hidden_size\": 3072, \"intermediate_size\": 8192,"
        " \"max_position_embeddings\": 4096, \"model_type\": \"phi3\", \"num_attention_heads\": 32,"
        " \"num_hidden_layers\": 32, \"num_key_value_heads\": 32, \"tie_word_embeddings\": false,"
        " \"vocab_size\": 32064}");
    load(&m, ph, 1, 1, 0);
    ck_assert_int_eq(m.total_numel, 3821079552LL);
    int op = index_of(&m, "model.layers.2.self_attn.o_proj.weight");
    ck_assert_str_eq(m.tensors[op + 1].name, "model.layers.2.self_attn.qkv_proj.weight");
    shape2(&m.tensors[op + 1], 3 * 3072, 3072);
    shape2(&m.tensors[op + 2], 2 * 8192, 3072);
    plan_model_free(&m);
    /* Llama 3.1's rope_scaling block parses and changes no parameter. */
    load(&m, "llama3.1-8b", 1, 1, 0);
    ck_assert_int_eq(m.arch.kv_heads, 8);
    plan_model_free(&m);
    /* Others are refused naming their model_type. */
    struct rl_err e = {0};
    const char *x = tu_write("mixtral.json", "{\"model_type\": \"mixtral\", \"num_hidden_layers\": 2}");
    ck_assert_int_eq(plan_model_load(&m, catalog(), x, NULL, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "model_type: 'mixtral' is not supported"));
    ck_assert_ptr_nonnull(strstr(e.msg, "qwen3"));
}
END_TEST

START_TEST(hf_llama_gqa_70b)
{
    /* Llama-2-70B's published config.json: GQA with 8 KV heads; 68,976,648,192 parameters. */
    const char *p = tu_write("llama70b.json",
        "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 8192, \"intermediate_size\": 28672,"
        " \"max_position_embeddings\": 4096, \"model_type\": \"llama\", \"num_attention_heads\": 64,"
        " \"num_hidden_layers\": 80, \"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-05,"
        " \"tie_word_embeddings\": false, \"vocab_size\": 32000}");
    struct plan_model m;
    load(&m, p, 1, 1, 0);
    ck_assert_int_eq(m.total_numel, 68976648192LL);
    shape2(find(&m, "model.layers.0.self_attn.k_proj.weight"), 8 * 128, 8192);
    shape2(find(&m, "model.layers.0.self_attn.v_proj.weight"), 8 * 128, 8192);
    shape2(find(&m, "model.layers.0.self_attn.q_proj.weight"), 8192, 8192);
    ck_assert_int_eq(m.arch.kv_heads, 8);
    ck_assert(m.arch.swiglu);
    ck_assert(!m.arch.tied_embeddings);
    ck_assert_str_eq(m.name, "llama70b.json");
    /* Order in a layer: attention q, k, v, o, MLP gate, up, down, then both norms. */
    int q = index_of(&m, "model.layers.3.self_attn.q_proj.weight");
    ck_assert_str_eq(m.tensors[q + 3].name, "model.layers.3.self_attn.o_proj.weight");
    ck_assert_str_eq(m.tensors[q + 4].name, "model.layers.3.mlp.gate_proj.weight");
    ck_assert_str_eq(m.tensors[q + 7].name, "model.layers.3.input_layernorm.weight");
    ck_assert_str_eq(m.tensors[q + 8].name, "model.layers.3.post_attention_layernorm.weight");
    plan_model_free(&m);
}
END_TEST

START_TEST(hf_t5_v11_gated_untied)
{
    /* google/t5-v1_1-small shape: d_model 512, d_kv 64, d_ff 1024, 8 layers, 6 heads. */
    const char *p = tu_write("t5v11.json",
        "{\"model_type\": \"t5\", \"d_model\": 512, \"d_kv\": 64, \"d_ff\": 1024, \"num_layers\": 8,"
        " \"num_heads\": 6, \"vocab_size\": 32128, \"feed_forward_proj\": \"gated-gelu\","
        " \"tie_word_embeddings\": false}");
    struct plan_model m;
    load(&m, p, 1, 1, 0);
    ck_assert_int_ge(index_of(&m, "encoder.block.0.layer.1.DenseReluDense.wi_0.weight"), 0);
    ck_assert_int_ge(index_of(&m, "encoder.block.0.layer.1.DenseReluDense.wi_1.weight"), 0);
    ck_assert_int_eq(index_of(&m, "encoder.block.0.layer.1.DenseReluDense.wi.weight"), -1);
    ck_assert_str_eq(m.tensors[m.n_tensors - 1].name, "lm_head.weight");
    /* 76,961,152 parameters is the published count of t5-v1_1-small. */
    const int64_t d = 512, inner = 384, ff = 1024, V = 32128;
    const int64_t attn = 4 * d * inner, mlp = 3 * d * ff, rel = 32 * 6;
    const int64_t enc = 8 * (attn + mlp + 2 * d) + rel + d;
    const int64_t dec = 8 * (2 * attn + mlp + 3 * d) + rel + d;
    ck_assert_int_eq(2 * V * d + enc + dec, 76961152LL);
    ck_assert_int_eq(m.total_numel, 76961152LL);
    plan_model_free(&m);
}
END_TEST

/* ---- presets ----------------------------------------------------------------------------------- */

START_TEST(every_preset_loads)
{
    char **names;
    int n;
    struct rl_err e = {0};
    ck_assert_msg(plan_model_list(catalog(), &names, &n, &e) == 0, "%s", e.msg);
    static const char *const want[] = {"gpt-2.7b", "gpt-350m", "gpt2", "gpt3-175b", "llama2-7b",
                                       "opt-13b", "opt-30b", "t5-3b"};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        bool found = false;
        for (int i = 0; i < n; i++)
            found = found || strcmp(names[i], want[k]) == 0;
        ck_assert_msg(found, "preset %s missing", want[k]);
    }
    for (int i = 0; i < n; i++) {
        struct plan_model m;
        load(&m, names[i], 1, 1, 0);
        ck_assert_str_eq(m.name, names[i]);
        ck_assert_int_gt(m.n_tensors, 0);
        ck_assert_int_gt(m.arch.layers, 0);
        ck_assert_int_gt(m.arch.seq_len, 0);
        ck_assert_int_gt(m.n_groups, 0);
        plan_model_free(&m);
        /* Every preset says where its numbers come from. */
        char path[4200];
        snprintf(path, sizeof path, "%s/models/%s.json", catalog(), names[i]);
        json_error_t je;
        json_t *root = json_load_file(path, 0, &je);
        ck_assert_ptr_nonnull(root);
        ck_assert_msg(json_is_string(json_object_get(root, "source")), "%s has no source", path);
        json_decref(root);
        free(names[i]);
    }
    free(names);
    /* Sorted listing. */
}
END_TEST

START_TEST(gpt3_175b_and_350m_counts)
{
    struct plan_model m;
    load(&m, "gpt3-175b", 1, 1, 0);
    const int64_t h = 12288;
    ck_assert_int_eq(m.total_numel, 50304 * h + 2048 * h + 96 * (12 * h * h + 13 * h) + 2 * h);
    plan_model_free(&m);
    load(&m, "gpt-350m", 1, 1, 0);
    const int64_t g = 1024;
    ck_assert_int_eq(m.total_numel, 50304 * g + 2048 * g + 24 * (12 * g * g + 13 * g) + 2 * g);
    plan_model_free(&m);
}
END_TEST

START_TEST(load_is_deterministic)
{
    struct plan_model a, b;
    load(&a, "t5-3b", 1, 1, 0);
    load(&b, "t5-3b", 1, 1, 0);
    ck_assert_int_eq(a.n_tensors, b.n_tensors);
    for (int i = 0; i < a.n_tensors; i++)
        ck_assert(memcmp(&a.tensors[i], &b.tensors[i], sizeof a.tensors[i]) == 0);
    plan_model_free(&a);
    plan_model_free(&b);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------------------ */

/* Loads `json` written to a scratch file and expects `code` with every `needle` in the message. */
static void expect_error(const char *json, int tp, int pp, int code, const char *n1, const char *n2)
{
    const char *p = tu_write("bad.json", json);
    struct plan_model m;
    struct plan_model_opts o = {tp, pp, 0, 0};
    struct rl_err e = {0};
    int rc = plan_model_load(&m, catalog(), p, &o, &e);
    ck_assert_msg(rc == code, "%s: rc %d (%s)", json, rc, e.msg);
    ck_assert_msg(strstr(e.msg, n1), "'%s' not in '%s'", n1, e.msg);
    if (n2)
        ck_assert_msg(strstr(e.msg, n2), "'%s' not in '%s'", n2, e.msg);
    ck_assert_int_eq(m.n_tensors, 0);
    ck_assert_ptr_null(m.tensors);
}

START_TEST(errors_unknown_preset)
{
    struct plan_model m;
    struct rl_err e = {0};
    ck_assert_int_eq(plan_model_load(&m, catalog(), "gpt-9000", NULL, &e), RL_ENOENT);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpt-9000"));
    ck_assert_ptr_nonnull(strstr(e.msg, "gpt-2.7b"));
    ck_assert_ptr_nonnull(strstr(e.msg, "llama2-7b"));
    ck_assert_ptr_eq(strstr(e.msg, "model: 'gpt-9000' is not a preset"), e.msg);   /* the field, not --model */
    ck_assert_int_eq(plan_model_load(&m, catalog(), "./no-such-file.json", NULL, &e), RL_ENOENT);
    ck_assert_ptr_nonnull(strstr(e.msg, "no-such-file.json"));
    ck_assert_ptr_eq(strstr(e.msg, "model: "), e.msg);
    ck_assert_int_eq(plan_model_load(&m, catalog(), "", NULL, &e), RL_EINVAL);
    ck_assert_ptr_eq(strstr(e.msg, "model: empty"), e.msg);
    struct plan_model_opts neg = {1, 1, 0, -1};
    ck_assert_int_eq(plan_model_load(&m, catalog(), "gpt2", &neg, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "seq_len: -1; expected a positive length");
}
END_TEST

START_TEST(errors_bad_configs)
{
    expect_error("{\"model_type\": \"bloom\", \"n_layer\": 2}", 1, 1, RL_EINVAL, "bloom",
                 "gpt2, t5, llama, opt");
    expect_error("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 100, \"n_head\": 12, "
                 "\"vocab_size\": 10}", 1, 1, RL_EINVAL, "n_embd", "n_head");
    expect_error("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 96, \"n_head\": 12}", 1, 1,
                 RL_EINVAL, "vocab_size", "missing");
    expect_error("{\"model_type\": \"gpt2\", \"n_layer\": -2, \"n_embd\": 96, \"n_head\": 12, "
                 "\"vocab_size\": 10}", 1, 1, RL_EINVAL, "n_layer", "-2");
    expect_error("{\"model_type\": \"gpt2\", \"n_layer\": \"12\", \"n_embd\": 96, \"n_head\": 12, "
                 "\"vocab_size\": 10}", 1, 1, RL_EINVAL, "n_layer", "not an integer");
    expect_error("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 96, \"n_head\": 12, "
                 "\"vocab_size\": 10}", 2, 1, RL_EINVAL, "tp", "Megatron");
    expect_error("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 96, \"n_head\": 12, "
                 "\"vocab_size\": 1e40}", 1, 1, RL_EINVAL, "vocab_size", "not an integer");
    /* 3 x h x h elements with h = 2^31 - 1 overflows int64. */
    expect_error("{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_embd\": 2147483647, \"n_head\": 1, "
                 "\"vocab_size\": 1}", 1, 1, RL_EINVAL, "overflows", NULL);
    expect_error("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
                 "\"intermediate_size\": 128, \"num_attention_heads\": 8, \"num_key_value_heads\": 3, "
                 "\"vocab_size\": 100}", 1, 1, RL_EINVAL, "num_key_value_heads", "3");
    expect_error("{\"model_type\": \"gpt2\", ", 1, 1, RL_EINVAL, "bad.json", "line");
    expect_error("[1, 2]", 1, 1, RL_EINVAL, "JSON object", NULL);
    expect_error("{\"hidden_size\": 5}", 1, 1, RL_EINVAL, "model_type", "megatron");
    /* Megatron presets. */
#define MEG "{\"framework\": \"megatron\", \"num_layers\": 6, \"hidden_size\": 96, " \
            "\"num_attention_heads\": 12, \"seq_length\": 64%s}"
    char buf[512];
    snprintf(buf, sizeof buf, MEG, "");
    expect_error(buf, 5, 1, RL_EINVAL, "tp 5:", "num_attention_heads 12");   /* the field; cli/ names the flag */
    expect_error(buf, 1, 4, RL_EINVAL, "pp 4:", "num_layers 6");
    snprintf(buf, sizeof buf, MEG, ", \"hiden_size\": 3");
    expect_error(buf, 1, 1, RL_EINVAL, "hiden_size", "unknown key");
    snprintf(buf, sizeof buf, MEG, ", \"normalization\": \"batchnorm\"");
    expect_error(buf, 1, 1, RL_EINVAL, "batchnorm", "rmsnorm");
    snprintf(buf, sizeof buf, MEG, ", \"max_position_embeddings\": 32");
    expect_error(buf, 1, 1, RL_EINVAL, "--max-position-embeddings", "--seq-length 64");
    snprintf(buf, sizeof buf, MEG, ", \"ffn_hidden_size\": 100");
    expect_error(buf, 8, 1, RL_EINVAL, "tp 8:", NULL);   /* 12 % 8 first */
    expect_error(buf, 3, 1, RL_EINVAL, "tp 3:", "ffn_hidden_size 100");
}
END_TEST
#undef MEG

START_TEST(errors_seq_len_and_stage)
{
    struct plan_model m;
    struct rl_err e = {0};
    struct plan_model_opts o = {1, 1, 0, 2048};
    ck_assert_int_eq(plan_model_load(&m, catalog(), "gpt2", &o, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "seq_len"));
    ck_assert_ptr_nonnull(strstr(e.msg, "1024"));
    o.seq_len = 512;
    ck_assert_int_eq(plan_model_load(&m, catalog(), "gpt2", &o, &e), 0);
    ck_assert_int_eq(m.arch.seq_len, 512);
    plan_model_free(&m);
    struct plan_model_opts s = {1, 4, 4, 0};
    ck_assert_int_eq(plan_model_load(&m, catalog(), "gpt-2.7b", &s, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "pp-stage"));
    struct plan_megatron_cfg c;
    plan_megatron_defaults(&c);
    c.hidden = 64;
    c.heads = 4;
    c.seq_len = 16;
    ck_assert_int_eq(plan_model_megatron(&m, &c, &e), RL_EINVAL);   /* no layers given */
    ck_assert_ptr_nonnull(strstr(e.msg, "--num-layers"));
    ck_assert_ptr_null(m.tensors);
}
END_TEST

Suite *models_suite(void)
{
    Suite *s = suite_create("models");
    TCase *t = tcase_create("models");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, published_totals_hf);
    tcase_add_test(t, megatron_2p7b_hand_count);
    tcase_add_test(t, megatron_tp8_shapes);
    tcase_add_test(t, megatron_gqa_swiglu_rmsnorm);
    tcase_add_test(t, megatron_pp_stages);
    tcase_add_test(t, groups_megatron_rules_on_rmsnorm);
    tcase_add_test(t, groups_hf);
    tcase_add_test(t, group_rule_names);
    tcase_add_test(t, opt_order);
    tcase_add_test(t, gpt2_and_t5_order);
    tcase_add_test(t, hf_llama_gqa_70b);
    tcase_add_test(t, published_totals_todays_models);
    tcase_add_test(t, hf_families_tensor_lists);
    tcase_add_test(t, hf_t5_v11_gated_untied);
    tcase_add_test(t, every_preset_loads);
    tcase_add_test(t, gpt3_175b_and_350m_counts);
    tcase_add_test(t, load_is_deterministic);
    tcase_add_test(t, errors_unknown_preset);
    tcase_add_test(t, errors_bad_configs);
    tcase_add_test(t, errors_seq_len_and_stage);
    suite_add_tcase(s, t);
    return s;
}
