/* tests/check_megatron_args.c — Megatron-DeepSpeed launch lines (plan/megatron_args.c). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "plan/megatron_args.h"
#include "plan/plan.h"
#include "tests/util.h"

/* The argument part of Megatron-DeepSpeed's examples_deepspeed/offload_pp/ds_pretrain_gpt_350M.sh
 * (the ZeRO-Offload++ tutorial) as `bash -x` prints it once the variables are expanded, pasted
 * with its line continuations. */
static const char *const line_350m =
    "deepspeed --num_gpus 8 pretrain_gpt.py \\\n"
    "    --override-opt_param-scheduler \\\n"
    "    --adam-beta1 0.9 \\\n"
    "    --adam-beta2 0.95 \\\n"
    "    --tensor-model-parallel-size 1 \\\n"
    "    --init-method-std 0.02 \\\n"
    "    --lr-decay-tokens 300000000000 \\\n"
    "    --lr-warmup-tokens 3000000000 \\\n"
    "    --micro-batch-size 4 \\\n"
    "    --exit-duration-in-mins 30000000 \\\n"
    "    --global-batch-size 256 \\\n"
    "    --num-layers 24 \\\n"
    "    --hidden-size 1024 \\\n"
    "    --num-attention-heads 16 \\\n"
    "    --seq-length 2048 \\\n"
    "    --max-position-embeddings 2048 \\\n"
    "    --train-tokens 300000000000 \\\n"
    "    --train-samples 439453125 \\\n"
    "    --lr 3.0e-4 \\\n"
    "    --min-lr 1.0e-6 \\\n"
    "    --lr-decay-style cosine \\\n"
    "    --split 98,2,0 \\\n"
    "    --log-interval 10 \\\n"
    "    --eval-interval 100 \\\n"
    "    --eval-iters 10 \\\n"
    "    --save-interval 10000 \\\n"
    "    --weight-decay 0.1 \\\n"
    "    --clip-grad 1.0 \\\n"
    "    --hysteresis 2 \\\n"
    "    --num-workers 0 \\\n"
    "    --fp16 \\\n"
    "    --load /data/checkpoint/gpt-350m \\\n"
    "    --save /data/checkpoint/gpt-350m \\\n"
    "    --no-pipeline-parallel \\\n"
    "    --cpu-optimizer \\\n"
    "    --tensorboard-queue-size 1 \\\n"
    "    --log-timers-to-tensorboard \\\n"
    "    --log-batch-size-to-tensorboard \\\n"
    "    --log-validation-ppl-to-tensorboard \\\n"
    "    --tensorboard-dir /data/tb \\\n"
    "    --checkpoint-activations \\\n"
    "    --vocab-file /data/gpt2-vocab.json \\\n"
    "    --merge-file /data/gpt2-merges.txt \\\n"
    "    --data-path /data/pile_text_document \\\n"
    "    --data-impl mmap \\\n"
    "    --deepspeed \\\n"
    "    --deepspeed_config ds_config_gpt_350M.json \\\n"
    "    --zero-stage 3 \\\n"
    "    --pipeline-model-parallel-size 1\n";

static void parse_ok(const char *line, struct plan_megatron_launch *l)
{
    struct rl_err e = {0};
    int rc = plan_megatron_args_parse(line, l, &e);
    ck_assert_msg(rc == 0, "%s", e.msg);
}

static void parse_fails(const char *line, const char *n1, const char *n2)
{
    struct plan_megatron_launch l;
    struct rl_err e = {0};
    int rc = plan_megatron_args_parse(line, &l, &e);
    ck_assert_msg(rc == RL_EINVAL, "'%s' parsed (rc %d)", line, rc);
    ck_assert_msg(strstr(e.msg, n1), "'%s' not in '%s'", n1, e.msg);
    if (n2)
        ck_assert_msg(strstr(e.msg, n2), "'%s' not in '%s'", n2, e.msg);
}

START_TEST(tutorial_350m_line)
{
    struct plan_megatron_launch l;
    parse_ok(line_350m, &l);
    ck_assert_int_eq(l.model.num_layers, 24);
    ck_assert_int_eq(l.model.hidden, 1024);
    ck_assert_int_eq(l.model.heads, 16);
    ck_assert_int_eq(l.model.seq_len, 2048);
    ck_assert_int_eq(l.model.max_pos, 2048);
    ck_assert_int_eq(l.model.vocab, 50257);   /* GPT-2 vocab file named */
    ck_assert_int_eq(l.model.ffn_hidden, 4096);
    ck_assert_int_eq(l.model.tp, 1);
    ck_assert_int_eq(l.model.pp, 1);
    ck_assert_int_eq(l.micro_batch, 4);
    ck_assert_int_eq(l.global_batch, 256);
    ck_assert_int_eq(l.zero_stage, 3);
    ck_assert(l.cpu_optimizer);
    ck_assert(l.no_pipeline_parallel);
    ck_assert(l.checkpoint_activations);
    ck_assert(l.dtype_set);
    ck_assert_int_eq(l.dtype, PLAN_FP16);
    ck_assert_str_eq(l.ds_config, "ds_config_gpt_350M.json");
    ck_assert_ptr_nonnull(strstr(l.ignored, "--lr"));
    ck_assert_ptr_nonnull(strstr(l.ignored, "--data-impl"));
    ck_assert_ptr_nonnull(strstr(l.ignored, "pretrain_gpt.py"));
    ck_assert_ptr_null(strstr(l.ignored, "--num-layers"));
    ck_assert_ptr_null(strstr(l.ignored, "mmap"));   /* values are not listed, flags are */

    struct plan_model m;
    struct rl_err e = {0};
    ck_assert_int_eq(plan_model_megatron(&m, &l.model, &e), 0);
    /* 50257 padded to 50304; learned positions 2048; 24 blocks of 12h^2 + 13h; final norm 2h. */
    const int64_t h = 1024;
    ck_assert_int_eq(m.total_numel, 50304 * h + 2048 * h + 24 * (12 * h * h + 13 * h) + 2 * h);
    plan_model_free(&m);
}
END_TEST

START_TEST(llama_style_gqa_swiglu)
{
    /* examples_deepspeed/pretrain_llama2_distributed.sh with its variables substituted. */
    struct plan_megatron_launch l;
    parse_ok("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
             "--pipeline-model-parallel-size 2 --num-layers 24 --hidden-size 2048 "
             "--ffn-hidden-size 5504 --num-attention-heads 16 --micro-batch-size 4 "
             "--global-batch-size 32 --seq-length 2048 --max-position-embeddings 2048 "
             "--tokenizer-type GPTSentencePieceTokenizer --tokenizer-model ./tmp/tokenizer.model "
             "--vocab-size 32000 --bf16 --no-query-key-layer-scaling --attention-dropout 0 "
             "--use-rotary-position-embeddings --untie-embeddings-and-output-weights --swiglu "
             "--normalization rmsnorm --disable-bias-linear --num-key-value-heads 4 "
             "--zero-stage=0 --deepspeed_config=./tmp/deepspeed.json --deepspeed", &l);
    ck_assert_int_eq(l.model.tp, 2);
    ck_assert_int_eq(l.model.pp, 2);
    ck_assert_int_eq(l.model.kv_heads, 4);
    ck_assert(l.model.swiglu && l.model.rmsnorm && l.model.no_bias && l.model.untie && l.model.rotary);
    ck_assert_int_eq(l.dtype, PLAN_BF16);
    ck_assert_int_eq(l.zero_stage, 0);
    ck_assert_str_eq(l.ds_config, "./tmp/deepspeed.json");
    /* --attention-dropout 0 given, --hidden-dropout not: Megatron's default 0.1 */
    ck_assert(l.model.attention_dropout == 0 && l.model.hidden_dropout == 0.1);

    /* Hand count at TP 1, PP 1: head_dim 2048 / 16 = 128; fused QKV rows 2048 + 2 x 4 x 128 =
     * 3072; SwiGLU up-projection 2 x 5504 rows; RMSNorm weight only; no biases; no position
     * table; untied output layer last. */
    l.model.tp = 1;
    l.model.pp = 1;
    struct plan_model m;
    struct rl_err e = {0};
    ck_assert_int_eq(plan_model_megatron(&m, &l.model, &e), 0);
    const int64_t h = 2048;
    const int64_t layer = h + 3072 * h + h * h + h + 2 * 5504 * h + h * 5504;
    const int64_t hand = 32000 * h + 24 * layer + h + 32000 * h;
    ck_assert_int_eq(hand, 32000LL * 2048 * 2 + 24 * (2LL * 2048 + 3072LL * 2048 + 2048LL * 2048 +
                                                      3LL * 5504 * 2048) + 2048);
    ck_assert_int_eq(m.total_numel, hand);
    ck_assert(m.arch.dropout_known && m.arch.attention_dropout == 0 && m.arch.hidden_dropout == 0.1 && m.arch.rotary);
    ck_assert_str_eq(m.tensors[m.n_tensors - 1].name, "language_model.output_layer.weight");
    ck_assert_str_eq(m.tensors[m.n_tensors - 2].name, "language_model.encoder.final_layernorm.weight");
    /* Module order within a layer: input norm, QKV, attention out, post norm, MLP up, MLP down. */
    ck_assert_str_eq(m.tensors[1].name, "language_model.encoder.layers.0.input_layernorm.weight");
    ck_assert_str_eq(m.tensors[2].name, "language_model.encoder.layers.0.self_attention.query_key_value.weight");
    ck_assert_str_eq(m.tensors[3].name, "language_model.encoder.layers.0.self_attention.dense.weight");
    ck_assert_str_eq(m.tensors[4].name, "language_model.encoder.layers.0.post_attention_layernorm.weight");
    ck_assert_str_eq(m.tensors[5].name, "language_model.encoder.layers.0.mlp.dense_h_to_4h.weight");
    ck_assert_str_eq(m.tensors[6].name, "language_model.encoder.layers.0.mlp.dense_4h_to_h.weight");
    plan_model_free(&m);
}
END_TEST

START_TEST(swiglu_default_ffn)
{
    struct plan_megatron_launch l;
    /* int((4 x 4096 x 2 / 3) / 64) x 64 = int(170.67) x 64 = 10880. */
    parse_ok("--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --seq-length 128 "
             "--vocab-size 32000 --swiglu", &l);
    ck_assert_int_eq(l.model.ffn_hidden, 10880);
    parse_ok("--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --seq-length 128 "
             "--vocab-size 32000", &l);
    ck_assert_int_eq(l.model.ffn_hidden, 16384);
    ck_assert_int_eq(l.zero_stage, -1);
    ck_assert(!l.dtype_set);
    ck_assert_int_eq(l.micro_batch, 0);
    ck_assert_str_eq(l.ds_config, "");
}
END_TEST

START_TEST(tokenizer_quotes_comments)
{
    struct plan_megatron_launch l;
    /* Quotes are removed as the shell does, '_' matches '-', CRLF continuations, comments. */
    parse_ok("# launch\r\n--num_layers '4' \\\r\n --hidden-size=\"256\" --num-attention-heads 8 "
             "--seq-length 64 --vocab-size 1000 --deepspeed-config \"my ds.json\" "
             "--recompute-granularity full --model-parallel-size 2 # trailing comment\n", &l);
    ck_assert_int_eq(l.model.num_layers, 4);
    ck_assert_int_eq(l.model.hidden, 256);
    ck_assert_str_eq(l.ds_config, "my ds.json");
    ck_assert(l.checkpoint_activations);
    ck_assert_int_eq(l.model.tp, 2);
    ck_assert_int_eq(l.model.vocab, 1000);
    /* Last occurrence wins, as with argparse. */
    parse_ok("--num-layers 4 --num-layers 6 --hidden-size 256 --num-attention-heads 8 "
             "--seq-length 64 --vocab-file gpt2-vocab.json", &l);
    ck_assert_int_eq(l.model.num_layers, 6);
    /* Variables in ignored flags are fine; ${DIR}/script.py is a word, not arguments. */
    parse_ok("python ${DIR}/pretrain_gpt.py --data-path $DATA_PATH --save ${CKPT} --num-layers 4 "
             "--hidden-size 256 --num-attention-heads 8 --seq-length 64 --vocab-size 512", &l);
    ck_assert_ptr_nonnull(strstr(l.ignored, "--data-path"));
}
END_TEST

START_TEST(bad_lines_name_the_argument)
{
    const char *base = "--hidden-size 256 --num-attention-heads 8 --seq-length 64 --vocab-size 512";
    char buf[1024];
    parse_fails(base, "--num-layers", "missing");
    snprintf(buf, sizeof buf, "%s --num-layers ${NUM_LAYERS}", base);
    parse_fails(buf, "--num-layers", "${NUM_LAYERS}");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --deepspeed_config=$DS_CONFIG", base);
    parse_fails(buf, "--deepspeed-config", "$DS_CONFIG");
    snprintf(buf, sizeof buf, "%s --num-layers 4 $ds_args", base);
    parse_fails(buf, "$ds_args", "in place of arguments");
    snprintf(buf, sizeof buf, "%s --num-layers \"$(cat layers.txt)\"", base);
    parse_fails(buf, "--num-layers", "unexpanded");
    snprintf(buf, sizeof buf, "%s --num-layers '4", base);
    parse_fails(buf, "unterminated single quote", "--num-layers");
    snprintf(buf, sizeof buf, "%s --num-layers \"4", base);
    parse_fails(buf, "unterminated double quote", "--num-layers");
    snprintf(buf, sizeof buf, "--num-layers 4 \\  \n%s", base);
    parse_fails(buf, "backslash followed by blanks", "'4'");
    snprintf(buf, sizeof buf, "%s \"--num-layers 4 --swiglu\"", base);
    parse_fails(buf, "several arguments", NULL);
    snprintf(buf, sizeof buf, "%s --num-layers 4 --attention-dropout 1.5", base);
    parse_fails(buf, "--attention-dropout", "1.5");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --hidden-dropout nan", base);
    parse_fails(buf, "--hidden-dropout", "nan");
    snprintf(buf, sizeof buf, "%s --num-layers 4k", base);
    parse_fails(buf, "--num-layers", "'4k'");
    snprintf(buf, sizeof buf, "%s --num-layers", base);
    parse_fails(buf, "--num-layers", "missing value");
    snprintf(buf, sizeof buf, "%s --num-layers --swiglu", base);
    parse_fails(buf, "--num-layers", "missing value");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --bf16 --fp16", base);
    parse_fails(buf, "--fp16", "--bf16");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --swiglu=1", base);
    parse_fails(buf, "--swiglu", "takes no value");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --tensor-model-parallel-size 3", base);
    parse_fails(buf, "--tensor-model-parallel-size", "--num-attention-heads 8");
    snprintf(buf, sizeof buf, "%s --num-layers 6 --pipeline-model-parallel-size 4", base);
    parse_fails(buf, "--pipeline-model-parallel-size", "--num-layers 6");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --pipeline-model-parallel-size 2 --no-pipeline-parallel", base);
    parse_fails(buf, "--pipeline-model-parallel-size", "--no-pipeline-parallel");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --pipeline-model-parallel-size 2 --zero-stage 3", base);
    parse_fails(buf, "--zero-stage", "pipeline");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --zero-stage 4", base);
    parse_fails(buf, "--zero-stage", "[0, 3]");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --normalization batchnorm", base);
    parse_fails(buf, "--normalization", "rmsnorm");
    snprintf(buf, sizeof buf, "%s --num-layers 4 --num-key-value-heads 3", base);
    parse_fails(buf, "--num-key-value-heads", NULL);
    snprintf(buf, sizeof buf, "%s --num-layers 4 --micro-batch-size 3 --global-batch-size 32", base);
    parse_fails(buf, "--global-batch-size", "--micro-batch-size 3");
    parse_fails("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 "
                "--tokenizer-type HFTokenizer", "--tokenizer-type", "--vocab-size");
    parse_fails("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64",
                "--vocab-size", "missing");
    parse_fails("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 "
                "--vocab-file $VOCAB", "--vocab-file", "$VOCAB");
    parse_fails("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 4096 "
                "--vocab-size 10 --max-position-embeddings 2048", "--max-position-embeddings", NULL);
}
END_TEST

START_TEST(args_file)
{
    const char *p = tu_write("launch.txt", line_350m);
    struct plan_megatron_launch l;
    struct rl_err e = {0};
    ck_assert_msg(plan_megatron_args_load(p, &l, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(l.model.num_layers, 24);
    p = tu_write("bad.txt", "--num-layers ${L}\n");
    ck_assert_int_eq(plan_megatron_args_load(p, &l, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "bad.txt"));
    ck_assert_ptr_nonnull(strstr(e.msg, "--num-layers"));
    ck_assert_int_eq(plan_megatron_args_load("/nonexistent/launch.txt", &l, &e), RL_ENOENT);
    ck_assert_ptr_nonnull(strstr(e.msg, "megatron-args-file"));
}
END_TEST

START_TEST(megatron_version_rule)
{
    enum plan_group_rule r;
    struct rl_err e = {0};
    ck_assert_int_eq(plan_megatron_version_rule("2023-01", &r, &e), 0);
    ck_assert_int_eq(r, PLAN_GROUPS_MEGATRON_OLD);
    ck_assert_int_eq(plan_megatron_version_rule("2023-06-30", &r, &e), 0);
    ck_assert_int_eq(r, PLAN_GROUPS_MEGATRON_OLD);
    ck_assert_int_eq(plan_megatron_version_rule("2023-07-01", &r, &e), 0);
    ck_assert_int_eq(r, PLAN_GROUPS_MEGATRON);
    ck_assert_int_eq(plan_megatron_version_rule("2024-03", &r, &e), 0);
    ck_assert_int_eq(r, PLAN_GROUPS_MEGATRON);
    ck_assert_int_eq(plan_megatron_version_rule("old", &r, &e), 0);
    ck_assert_int_eq(r, PLAN_GROUPS_MEGATRON_OLD);
    ck_assert_int_eq(plan_megatron_version_rule("new", &r, &e), 0);
    ck_assert_int_eq(r, PLAN_GROUPS_MEGATRON);
    ck_assert_int_eq(plan_megatron_version_rule("2023-13", &r, &e), RL_EINVAL);
    ck_assert_int_eq(plan_megatron_version_rule("yesterday", &r, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "megatron-version"));
    ck_assert_ptr_nonnull(strstr(e.msg, "yesterday"));
    ck_assert_int_eq(plan_megatron_version_rule("2023-07-01x", &r, &e), RL_EINVAL);
}
END_TEST

START_TEST(subgroup_count_by_hand)
{
    /* The 350M tutorial model on DP 2 with sub_group_size 5e7 elements per rank. Per-rank
     * elements (every tensor here has an even element count, so ceil(n / 2) = n / 2):
     *   decay group, module order: word embeddings 50304 x 1024 / 2 = 25,755,648, positions
     *   2048 x 1024 / 2 = 1,048,576, then per layer QKV 1,572,864, dense 524,288, MLP up
     *   2,097,152, MLP down 2,097,152 (6,291,456 per layer);
     *   no-decay group: 24 x 13 x 1024 / 2 + 2 x 1024 / 2 = 160,768 (biases and LayerNorms).
     * A sub-group closes once it holds >= 5e7:
     *   SG0 = embeddings + layers 0..3: 26,804,224 + 4 x 6,291,456 = 51,970,048 (after layer 3's
     *         MLP up it holds 49,872,896 < 5e7, so it closes on layer 3's MLP down);
     *   SG1 = layers 4..11: 8 x 6,291,456 = 50,331,648 (48,234,496 before the last tensor);
     *   SG2 = layers 12..19: 50,331,648;   SG3 = layers 20..23: 25,165,824 (end of group);
     *   SG4 = the no-decay group: 160,768.
     * So 5 sub-groups; DeepSpeed 0.12 at ratio 0.3 puts floor(0.3 x 5) = 1 on the CPU. */
    struct plan_megatron_launch l;
    parse_ok(line_350m, &l);
    struct plan_model m;
    struct rl_err e = {0};
    ck_assert_int_eq(plan_model_megatron(&m, &l.model, &e), 0);
    struct plan_zero z;
    plan_zero_defaults(&z);
    z.stage = 3;
    z.offload = PLAN_OFFLOAD_CPU;
    z.pin_memory = true;
    z.ratio = 0.3;
    z.src_ratio = PLAN_SRC_CLI;
    z.sub_group_size = 50000000;
    z.dtype = PLAN_FP16;
    struct plan_layout lay = {.dp = 2, .tp = 1, .pp = 1};
    struct plan_options po = {.policy = PLAN_POLICY_DS012};
    struct plan p;
    ck_assert_msg(plan_build(&p, &m, &lay, &z, &po, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(p.n_subgroups, 5);
    ck_assert_int_eq(p.subgroups[0].numel, 51970048);
    ck_assert_int_eq(p.subgroups[1].numel, 50331648);
    ck_assert_int_eq(p.subgroups[2].numel, 50331648);
    ck_assert_int_eq(p.subgroups[3].numel, 25165824);
    ck_assert_int_eq(p.subgroups[4].numel, 160768);
    ck_assert_int_eq(p.subgroups[4].group, 1);
    ck_assert_int_eq(p.cpu_subgroups, 1);
    ck_assert_int_eq(p.cpu_numel, 51970048);
    plan_free(&p);

    /* The old Megatron rule keeps the same groups here (LayerNorm, no RMSNorm), but RMSNorm
     * weights move: with --normalization rmsnorm the new rule has 24 x 2 + 1 more 1-D tensors
     * in no-decay than the old one. */
    l.model.rmsnorm = true;
    plan_model_free(&m);
    ck_assert_int_eq(plan_model_megatron(&m, &l.model, &e), 0);
    int nd_new = 0, nd_old = 0;
    plan_model_group(&m, PLAN_GROUPS_MEGATRON, false);
    for (int i = 0; i < m.n_tensors; i++)
        nd_new += m.tensors[i].group == 1;
    plan_model_group(&m, PLAN_GROUPS_MEGATRON_OLD, false);
    for (int i = 0; i < m.n_tensors; i++)
        nd_old += m.tensors[i].group == 1;
    ck_assert_int_eq(nd_new - nd_old, 24 * 2 + 1);
    plan_model_free(&m);
}
END_TEST

START_TEST(random_lines_never_crash)
{
    /* Random lines over the characters that matter to the tokenizer: every line either parses
     * or fails with RL_EINVAL and a message; ASan/UBSan catch anything else. */
    unsigned long seed = tu_seed("random_lines_never_crash");
    srand((unsigned)seed);
    static const char *const pieces[] = {
        "--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length", "--vocab-size",
        "--swiglu", "--tensor-model-parallel-size", "--num-key-value-heads", "--bf16", "--fp16",
        "--deepspeed_config", "--x", "2", "4", "64", "0", "-1", "${V}", "$V", "'", "\"", "\\",
        "\\\n", "\\ \n", "#", "=", "\n", " ", "\t", "$(", "`", "''", "a b",
    };
    const int n_pieces = (int)(sizeof pieces / sizeof pieces[0]);
    for (int it = 0; it < 3000; it++) {
        char line[512] = "";
        int k = rand() % 24;
        for (int i = 0; i < k; i++) {
            strncat(line, pieces[rand() % n_pieces], sizeof line - strlen(line) - 1);
            if (rand() % 2)
                strncat(line, " ", sizeof line - strlen(line) - 1);
        }
        struct plan_megatron_launch l;
        struct rl_err e = {0};
        int rc = plan_megatron_args_parse(line, &l, &e);
        ck_assert_msg(rc == 0 || rc == RL_EINVAL, "rc %d for [%s]", rc, line);
        if (rc)
            ck_assert_msg(e.msg[0] != 0, "no message for [%s]", line);
    }
}
END_TEST

/* ---- the command line ------------------------------------------------------------------------ */

START_TEST(cli_megatron_args)
{
    struct tu_run r;
    const char *args = "--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
                       "--vocab-size 50257 --lr 1e-4";
    tu_ratiolab(&r, "plan --megatron-args '%s' --gpus 2 --sub-group-size 5e7 --verbose", args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "5 sub-groups"));
    ck_assert_ptr_nonnull(strstr(r.out, "ignored Megatron arguments: --lr"));
    ck_assert_ptr_nonnull(strstr(r.out, "rule megatron)"));
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --megatron-args '%s' --gpus 2 --megatron-version 2023-01", args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "rule megatron-old"));
    tu_run_free(&r);
    /* Bad lines exit 2 and name the argument. */
    tu_ratiolab(&r, "plan --megatron-args '--num-layers ${L} --hidden-size 1024'");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--num-layers"));
    ck_assert_ptr_nonnull(strstr(r.err, "${L}"));
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --megatron-args '--hidden-size 1024 --num-attention-heads 16 --seq-length 8 --vocab-size 9'");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--num-layers: missing"));
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --megatron-args '%s --tensor-model-parallel-size 2' --tp 4 --gpus 8", args);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--tp 4"));
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --megatron-args '%s' --model gpt2", args);
    ck_assert_int_eq(r.status, 2);
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --model gpt2 --megatron-version 2024-01");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--megatron-version"));
    tu_run_free(&r);
    /* The DeepSpeed config the line names: an error saying which file is needed, then found
     * next to the arguments file. */
    tu_ratiolab(&r, "plan --megatron-args '%s --deepspeed_config nowhere/ds.json'", args);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "nowhere/ds.json"));
    ck_assert_ptr_nonnull(strstr(r.err, "--ds-config"));
    tu_run_free(&r);
    tu_sh(&r, "mkdir -p launch");
    ck_assert_int_eq(r.status, 0);
    tu_run_free(&r);
    tu_write("launch/ds.json",
             "{\"train_micro_batch_size_per_gpu\": 2, \"zero_optimization\": {\"stage\": 3, "
             "\"sub_group_size\": 5e7, \"offload_optimizer\": {\"device\": \"cpu\", "
             "\"pin_memory\": true, \"ratio\": 0.3}}, \"fp16\": {\"enabled\": true}}");
    char text[1024];
    snprintf(text, sizeof text, "%s \\\n  --deepspeed_config ds.json --fp16\n", args);
    tu_write("launch/args.txt", text);
    tu_ratiolab(&r, "plan --megatron-args-file launch/args.txt --gpus 2");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "launch/ds.json"));
    ck_assert_ptr_nonnull(strstr(r.out, "5 sub-groups"));
    ck_assert_ptr_nonnull(strstr(r.out, "args.txt"));
    tu_run_free(&r);
}
END_TEST


/* Issue 38 item 12: Megatron's parser (argparse, allow_abbrev=False) stops on a flag it does not
 * declare; so does the reader, with the nearest flag. A flag it declares and ratiolab does not
 * read is ignored with its value (megatron_flags_table.h); a launcher's flags before the script
 * are the launcher's. */
START_TEST(unknown_flags_refused_known_ones_ignored)
{
    struct plan_megatron_launch l;
    struct rl_err e = {0};
    const char *base = "--num-layers 30 --hidden-size 2560 --num-attention-heads 32 --seq-length 2048 --vocab-size 50257";
    char line[512];
    snprintf(line, sizeof line, "%s --num-layerz 30", base);
    ck_assert_int_eq(plan_megatron_args_parse(line, &l, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "--num-layerz: not a Megatron-DeepSpeed flag") && strstr(e.msg, "did you mean --num-layers?"),
                  "%s", e.msg);
    snprintf(line, sizeof line, "%s --hiden-size 2560", base);
    ck_assert_int_eq(plan_megatron_args_parse(line, &l, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "did you mean --hidden-size?"), "%s", e.msg);
    /* --lr takes a value (skipped with it), --no-masked-softmax-fusion takes none: the next flag
     * is read. */
    snprintf(line, sizeof line, "%s --lr 1e-4 --no-masked-softmax-fusion --micro-batch-size 4", base);
    ck_assert_msg(plan_megatron_args_parse(line, &l, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(l.micro_batch, 4);
    ck_assert_msg(strstr(l.ignored, "--lr") && strstr(l.ignored, "--no-masked-softmax-fusion"), "%s", l.ignored);
    /* The launcher's flags before the script. */
    snprintf(line, sizeof line, "torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py %s", base);
    ck_assert_msg(plan_megatron_args_parse(line, &l, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(l.model.num_layers, 30);
}
END_TEST

Suite *megatron_args_suite(void)
{
    Suite *s = suite_create("megatron_args");
    TCase *t = tcase_create("megatron_args");
    tcase_add_test(t, tutorial_350m_line);
    tcase_add_test(t, llama_style_gqa_swiglu);
    tcase_add_test(t, swiglu_default_ffn);
    tcase_add_test(t, tokenizer_quotes_comments);
    tcase_add_test(t, bad_lines_name_the_argument);
    tcase_add_test(t, args_file);
    tcase_add_test(t, megatron_version_rule);
    tcase_add_test(t, subgroup_count_by_hand);
    tcase_add_test(t, random_lines_never_crash);
    tcase_add_test(t, cli_megatron_args);
    tcase_add_test(t, unknown_flags_refused_known_ones_ignored);
    suite_add_tcase(s, t);
    return s;
}
