/* tests/check_attention.c — --attention flash|materialized: the activation memory of both against
 * Korthikanti et al.'s formula worked out here by hand, the default per framework (Megatron
 * without / with --use-flash-attn, transformers' sdpa, T5 eager), the setting printed in every
 * output, and a bad value refused. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/util.h"

/* predict --json's activation bytes per rank and the attention it says it used. */
static long long activation_bytes(const char *args, const char *want_attention)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "predict --json %s", args);
    json_t *o = tu_ratiolab_json("%s", cmd);
    json_t *p = json_object_get(o, "prediction");
    ck_assert_str_eq(json_string_value(json_object_get(p, "attention")), want_attention);
    ck_assert_str_eq(json_string_value(json_object_get(o, "attention")), want_attention);
    long long v = json_integer_value(json_object_get(json_object_get(p, "gpu_memory_per_rank"), "activation_bytes"));
    json_decref(o);
    return v;
}

/* The built-in default: Megatron gpt-2.7b (32 layers, hidden 2560, 32 heads, seq 2048, GPT-2
 * vocabulary 50257 padded to a multiple of 128 x TP 8 = 51200), TP 8, micro-batch 1, fp16. */
enum { L = 32, H = 2560, A = 32, S = 2048, B = 1, T = 8, V = 51200 };

START_TEST(flash_drops_exactly_the_s_squared_term)
{
    /* Korthikanti eq. 2 per layer at 16 bit: s b h (10 + 24/t) + 5 a s^2 b / t; logits and their
     * gradient in fp32 on the (only) stage: 8 s b V / t. */
    const long long linear = (long long)S * B * H * (10 + 24 / T);   /* 24 / 8 = 3 exactly */
    const long long squared = 5LL * A * S * S * B / T;                 /* scores, softmax, dropout */
    const long long lse = 4LL * A * S * B / T;                         /* FlashAttention's fp32 log-sum-exp */
    const long long logits = 8LL * S * B * V / T;
    const long long materialized = L * (linear + squared) + logits;
    const long long flash = L * (linear + lse) + logits;
    ck_assert_int_eq(activation_bytes("", "materialized"), materialized);   /* Megatron's default */
    ck_assert_int_eq(activation_bytes("--attention materialized", "materialized"), materialized);
    ck_assert_int_eq(activation_bytes("--attention flash", "flash"), flash);
    ck_assert_int_eq(materialized - flash, L * (squared - lse));
    /* With full checkpointing every layer keeps its 2 s b h input; one layer's full set is live
     * during its recomputation, so the two differ by one layer's attention part. */
    const long long kept = L * 2LL * S * B * H;
    ck_assert_int_eq(activation_bytes("--checkpoint-activations", "materialized"), kept + linear + squared + logits);
    ck_assert_int_eq(activation_bytes("--checkpoint-activations --attention flash", "flash"), kept + linear + lse + logits);
}
END_TEST

START_TEST(default_follows_the_framework)
{
    const char *line = "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
                       "--max-position-embeddings 1024 --vocab-size 32000 --fp16 --micro-batch-size 2";
    char args[1024];
    snprintf(args, sizeof args, "--gpus 8 --megatron-args \"%s\"", line);
    long long mat = activation_bytes(args, "materialized");
    snprintf(args, sizeof args, "--gpus 8 --megatron-args \"%s --use-flash-attn\"", line);
    long long fl = activation_bytes(args, "flash");
    snprintf(args, sizeof args, "--gpus 8 --megatron-args \"%s --use-flash-attn-v2\"", line);
    ck_assert_int_eq(activation_bytes(args, "flash"), fl);
    /* TP 1: 4 layers x (5 a s^2 b - 4 a s b) with a 8, s 1024, b 2 */
    ck_assert_int_eq(mat - fl, 4 * (5LL * 8 * 1024 * 1024 * 2 - 4LL * 8 * 1024 * 2));
    /* --attention overrides the launch line's choice. */
    snprintf(args, sizeof args, "--gpus 8 --attention materialized --megatron-args \"%s --use-flash-attn\"", line);
    ck_assert_int_eq(activation_bytes(args, "materialized"), mat);
    /* Hugging Face: transformers' sdpa for Llama, eager for T5. */
    activation_bytes("--model llama2-7b --gpus 8 --seq-len 512", "flash");
    activation_bytes("--model t5-3b --gpus 8", "materialized");
    /* The origin is said in JSON and in the human report. */
    json_t *o = tu_ratiolab_json("predict --json --model llama2-7b --gpus 8 --seq-len 512");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(o, "attention_origin")), "sdpa"));
    json_decref(o);
    struct tu_run r;
    tu_ratiolab(&r, "predict");
    ck_assert_ptr_nonnull(strstr(r.out, "attention materialized"));
    ck_assert_ptr_nonnull(strstr(r.out, "no --use-flash-attn"));
    tu_run_free(&r);
}
END_TEST

START_TEST(every_output_says_which)
{
    static const struct {
        const char *args, *want;
    } runs[] = {
        {"sweep --ratios 0,1", "attention  materialized (Megatron default"},
        {"sweep --ratios 0,1 --attention flash", "attention  flash (--attention)"},
        {"sweep --ratios 0,1 --csv", "\n# attention: materialized (Megatron default"},
        {"sweep --ratios 0,1 --json --attention flash", "\"attention\": \"flash\""},
        {"tune --gpu-mem 16GiB --ratios 0,1 --micro-batches 1", "attention  materialized (Megatron default"},
        {"tune --gpu-mem 16GiB --ratios 0,1 --micro-batches 1 --json", "\"attention\": \"materialized\""},
        {"check --ds-config c.json --model gpt-2.7b --tp 8 --gpus 8 --gpu-mem 80GiB", "attention materialized"},
        {"check --ds-config c.json --model gpt-2.7b --tp 8 --gpus 8 --gpu-mem 80GiB --attention flash --json", "\"attention\": \"flash\""},
    };
    tu_write("c.json", "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", "
                       "\"ratio\": 1}}, \"fp16\": {\"enabled\": true}}");
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        struct tu_run r;
        tu_ratiolab(&r, "%s", runs[i].args);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", runs[i].args, r.status, r.err);
        ck_assert_msg(strstr(r.out, runs[i].want) != NULL, "%s: no '%s' in:\n%s", runs[i].args, runs[i].want, r.out);
        tu_run_free(&r);
    }
}
END_TEST

START_TEST(bad_value_names_flag_value_and_choices)
{
    static const char *const cmds[] = {"predict", "sweep", "tune", "check --gpu-mem 80GiB"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int before = tu_count_files();
        struct tu_run r;
        tu_ratiolab(&r, "%s --attention eager", cmds[i]);
        ck_assert_msg(r.status == 2, "%s: exit %d", cmds[i], r.status);
        ck_assert_str_eq(r.out, "");
        ck_assert_msg(strstr(r.err, "--attention") && strstr(r.err, "'eager'") && strstr(r.err, "flash, materialized"),
                      "%s: %s", cmds[i], r.err);
        ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "%s: not one line: %s", cmds[i], r.err);
        ck_assert_int_eq(tu_count_files(), before);
        tu_run_free(&r);
    }
}
END_TEST

Suite *attention_suite(void)
{
    Suite *s = suite_create("attention");
    TCase *t = tcase_create("attention");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, flash_drops_exactly_the_s_squared_term);
    tcase_add_test(t, default_follows_the_framework);
    tcase_add_test(t, every_output_says_which);
    tcase_add_test(t, bad_value_names_flag_value_and_choices);
    suite_add_tcase(s, t);
    return s;
}
