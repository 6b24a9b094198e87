/* tests/check_models_hf.c — model shapes no catalog preset exercises: OPT's project_in/project_out
 * (word_embed_proj_dim != hidden_size, opt-350m), Llama's attention_bias / mlp_bias, and Megatron's
 * default vocabulary padding under tensor parallelism. Totals are published figures or hand counts
 * written out as arithmetic from the configuration. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "plan/megatron_args.h"
#include "plan/plan.h"
#include "tests/util.h"

static void load_file(struct plan_model *m, const char *path)
{
    char cat[4096];
    snprintf(cat, sizeof cat, "%s/catalog", tu_src());
    struct plan_model_opts o = {1, 1, 0, 0};
    struct rl_err e = {0};
    ck_assert_msg(plan_model_load(m, cat, path, &o, &e) == 0, "%s: %s", path, e.msg);
}

static const struct plan_tensor *find(const struct plan_model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return &m->tensors[i];
    ck_abort_msg("tensor %s not in %s", name, m->name);
    return NULL;
}

static bool has(const struct plan_model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return true;
    return false;
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
    ck_assert_int_eq(t->numel, a);
}

START_TEST(opt_350m_projections_and_published_total)
{
    /* facebook/opt-350m's published config.json; 331,196,416 parameters (the model card's 331M).
     * Embeddings live at word_embed_proj_dim 512, the decoder at 1024: project_in and project_out
     * (no bias) convert; do_layer_norm_before false: no final LayerNorm. */
    const char *p = tu_write("opt350m.json",
        "{\"_name_or_path\": \"facebook/opt-350m\", \"activation_function\": \"relu\","
        " \"architectures\": [\"OPTForCausalLM\"], \"do_layer_norm_before\": false, \"ffn_dim\": 4096,"
        " \"hidden_size\": 1024, \"max_position_embeddings\": 2048, \"model_type\": \"opt\","
        " \"num_attention_heads\": 16, \"num_hidden_layers\": 24, \"pad_token_id\": 1,"
        " \"torch_dtype\": \"float16\", \"vocab_size\": 50272, \"word_embed_proj_dim\": 512}");
    struct plan_model m;
    load_file(&m, p);
    const int64_t h = 1024, pd = 512, ffn = 4096, vocab = 50272;
    const int64_t layer = 4 * (h * h + h) + 2 * h + (ffn * h + ffn) + (h * ffn + h) + 2 * h;
    const int64_t hand = vocab * pd + (2048 + 2) * h + 2 * pd * h + 24 * layer;
    ck_assert_int_eq(hand, 331196416LL);
    ck_assert_int_eq(m.total_numel, hand);
    shape2(find(&m, "model.decoder.embed_tokens.weight"), vocab, pd);
    shape2(find(&m, "model.decoder.project_out.weight"), pd, h);
    shape2(find(&m, "model.decoder.project_in.weight"), h, pd);
    shape2(find(&m, "model.decoder.embed_positions.weight"), 2050, h);
    ck_assert(!has(&m, "model.decoder.final_layer_norm.weight"));
    ck_assert(!has(&m, "model.decoder.project_in.bias"));
    ck_assert(!has(&m, "lm_head.weight"));   /* tied */
    plan_model_free(&m);
}
END_TEST

/* A small Llama: hidden 64, 4 heads of 16, 2 KV heads, MLP 176, 2 layers, vocab 1000, untied
 * (Llama's default). Per layer: q, o 64x64; k, v 32x64; gate, up 176x64; down 64x176; 2 norms. */
static const char *llama_json(const char *extra)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 64,"
             " \"intermediate_size\": 176, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
             " \"num_hidden_layers\": 2, \"vocab_size\": 1000, \"max_position_embeddings\": 128%s}", extra);
    return buf;
}

START_TEST(llama_attention_and_mlp_bias)
{
    const int64_t h = 64, kvd = 2 * 16, ffn = 176, vocab = 1000;
    const int64_t layer = 2 * h * h + 2 * kvd * h + 3 * ffn * h + 2 * h;
    const int64_t base = 2 * vocab * h + h + 2 * layer;
    ck_assert_int_eq(base, 220480);
    struct plan_model m;
    load_file(&m, tu_write("llama.json", llama_json("")));
    ck_assert_int_eq(m.total_numel, base);
    ck_assert(!m.arch.tied_embeddings);
    ck_assert(!has(&m, "model.layers.0.self_attn.q_proj.bias"));
    /* transformers' Llama: rotary, no dropout on the residual path, attention_dropout 0.0 unless set */
    ck_assert(m.arch.rotary && m.arch.dropout_known);
    ck_assert(m.arch.hidden_dropout == 0 && m.arch.attention_dropout == 0);
    plan_model_free(&m);
    load_file(&m, tu_write("llama_ad.json", llama_json(", \"attention_dropout\": 0.25")));
    ck_assert(m.arch.attention_dropout == 0.25);
    plan_model_free(&m);
    /* attention_bias: q, k, v, o biases of heads x 16, 2 x 16, 2 x 16 and 64 per layer. */
    load_file(&m, tu_write("llama_ab.json", llama_json(", \"attention_bias\": true")));
    ck_assert_int_eq(m.total_numel, base + 2 * (h + kvd + kvd + h));
    shape1(find(&m, "model.layers.0.self_attn.q_proj.bias"), h);
    shape1(find(&m, "model.layers.1.self_attn.k_proj.bias"), kvd);
    shape1(find(&m, "model.layers.1.self_attn.v_proj.bias"), kvd);
    shape1(find(&m, "model.layers.1.self_attn.o_proj.bias"), h);
    ck_assert(!has(&m, "model.layers.0.mlp.up_proj.bias"));
    plan_model_free(&m);
    /* mlp_bias: gate and up biases of 176, down 64, per layer. */
    load_file(&m, tu_write("llama_mb.json", llama_json(", \"mlp_bias\": true")));
    ck_assert_int_eq(m.total_numel, base + 2 * (ffn + ffn + h));
    shape1(find(&m, "model.layers.0.mlp.gate_proj.bias"), ffn);
    shape1(find(&m, "model.layers.1.mlp.down_proj.bias"), h);
    ck_assert(!has(&m, "model.layers.0.self_attn.q_proj.bias"));
    plan_model_free(&m);
}
END_TEST

START_TEST(megatron_vocab_padding_default)
{
    /* Without --make-vocab-size-divisible-by, Megatron pads the vocabulary (GPT-2's 50257) to a
     * multiple of 128 x TP: 50304 at TP 1, 50432 at TP 2, 51200 at TP 8. */
    static const struct { int tp; int64_t padded; } cases[] = {{1, 50304}, {2, 50432}, {8, 51200}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "pretrain_gpt.py --tensor-model-parallel-size %d --num-layers 2 --hidden-size 1024 "
                 "--num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 --fp16 "
                 "--vocab-file gpt2-vocab.json", cases[i].tp);
        struct plan_megatron_launch l;
        struct rl_err e = {0};
        ck_assert_msg(plan_megatron_args_parse(line, &l, &e) == 0, "%s", e.msg);
        struct plan_model m;
        ck_assert_msg(plan_model_megatron(&m, &l.model, &e) == 0, "%s", e.msg);
        ck_assert_int_eq(m.arch.vocab_padded, cases[i].padded);
        shape2(find(&m, "language_model.embedding.word_embeddings.weight"), cases[i].padded / cases[i].tp, 1024);
        plan_model_free(&m);
    }
}
END_TEST

Suite *models_hf_suite(void)
{
    Suite *s = suite_create("models_hf");
    TCase *tc = tcase_create("hf");
    tcase_add_test(tc, opt_350m_projections_and_published_total);
    tcase_add_test(tc, llama_attention_and_mlp_bias);
    tcase_add_test(tc, megatron_vocab_padding_default);
    suite_add_tcase(s, tc);
    return s;
}
