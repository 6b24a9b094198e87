/* tests/check_tune.c — `ratiolab tune` answers "which micro-batch, checkpointing and ratio, how
 * much host RAM, how fast" and its answer is what `predict` says about the same settings; the
 * answer beats or out-fits its neighbours; a global batch fixes the accumulation; --hw a,b
 * compares profiles; --headroom is honored. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/tune.h"
#include "sim/tune_json.h"
#include "traces/schema.h"
#include "tests/util.h"

static int64_t jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }
static double jreal(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* predict of one configuration, as JSON (sgs < 0: no optimizer offload, the built-in config's
 * fp16 ZeRO-3 without offload_optimizer). */
static json_t *predict(const char *base, double ratio, int64_t mb, int64_t ga, bool ckpt, int64_t sgs)
{
    char cmd[1024], off[200];
    if (sgs < 0) {
        tu_write("none.json", "{\"zero_optimization\": {\"stage\": 3}, \"fp16\": {\"enabled\": true}}");
        snprintf(off, sizeof off, "--ds-config none.json");
    } else {
        snprintf(off, sizeof off, "--ratio %.17g --sub-group-size %lld", ratio, (long long)sgs);
    }
    snprintf(cmd, sizeof cmd, "predict %s %s --micro-batch %lld --grad-accum %lld%s --json", base, off, (long long)mb,
             (long long)ga, ckpt ? " --checkpoint-activations" : "");
    return tu_ratiolab_json("%s", cmd);
}

static json_t *predict_choice(const char *base, json_t *k)
{
    bool off = !strcmp(json_string_value(json_object_get(k, "offload")), "cpu");
    return predict(base, jreal(k, "requested_ratio"), jint(k, "micro_batch"), jint(k, "grad_accum"),
                   json_is_true(json_object_get(k, "checkpoint_activations")), off ? jint(k, "sub_group_size") : -1);
}

#define QUESTION "--model llama2-13b --hw dgx-a100-80g --gpus 4"

START_TEST(answer_is_what_predict_says)
{
    /* 4 x A100-80GB, Llama-2-13B, ZeRO-3: what ratio, how much host RAM, how fast? */
    json_t *t = tu_ratiolab_json("tune " QUESTION " --json");   /* the planning guide's command, as JSON */
    json_t *ans = json_object_get(t, "answer");
    ck_assert(json_is_object(ans));
    double ratio = jreal(ans, "requested_ratio");
    int64_t mb = jint(ans, "micro_batch"), ga = jint(ans, "grad_accum");
    bool off = !strcmp(json_string_value(json_object_get(ans, "offload")), "cpu");
    int64_t sgs = off ? jint(ans, "sub_group_size") : -1;
    bool ckpt = json_is_true(json_object_get(ans, "checkpoint_activations"));
    json_t *p = predict(QUESTION, ratio, mb, ga, ckpt, sgs);
    json_t *pp = json_object_get(p, "prediction"), *tp = json_object_get(ans, "prediction");
    ck_assert_int_eq(jint(pp, "step_ns"), jint(tp, "step_ns"));
    ck_assert(jreal(pp, "tokens_per_s_per_gpu") == jreal(ans, "tokens_per_s_per_gpu"));
    /* tokens/s per GPU: micro-batch x sequence x accumulation / step */
    double want = (double)mb * (double)jint(pp, "seq_len") * (double)ga / ((double)jint(pp, "step_ns") * 1e-9);
    ck_assert_msg(fabs(want - jreal(ans, "tokens_per_s_per_gpu")) <= 1e-6 * want, "%g vs %g", want,
                  jreal(ans, "tokens_per_s_per_gpu"));
    ck_assert(jreal(ans, "tokens_per_s_per_node") == 4 * jreal(ans, "tokens_per_s_per_gpu"));
    json_t *mem = json_object_get(pp, "gpu_memory_per_rank");
    int64_t headroom = jint(t, "headroom_bytes");
    ck_assert_int_eq(headroom, (int64_t)(0.05 * 85899345920.0));
    ck_assert_int_le(jint(mem, "total_bytes") + headroom, jint(mem, "capacity_bytes"));
    ck_assert_int_eq(jint(ans, "host_node_bytes"), jint(json_object_get(pp, "host_memory"), "node_bytes"));
    /* Its neighbour with twice the micro-batch is slower or does not leave the headroom. */
    json_t *q = predict(QUESTION, ratio, 2 * mb, ga, ckpt, sgs);
    json_t *qp = json_object_get(q, "prediction"), *qm = json_object_get(qp, "gpu_memory_per_rank");
    ck_assert(jint(qm, "total_bytes") + headroom > jint(qm, "capacity_bytes") ||
              jreal(qp, "tokens_per_s_per_gpu") <= jreal(ans, "tokens_per_s_per_gpu"));
    json_decref(q);
    /* The best candidate with offload is what predict says too, and no faster than the answer. */
    json_t *bo = json_object_get(t, "best_with_offload");
    ck_assert(json_is_object(bo));
    json_t *b = predict_choice(QUESTION, bo);
    ck_assert_int_eq(jint(json_object_get(b, "prediction"), "step_ns"), jint(json_object_get(bo, "prediction"), "step_ns"));
    ck_assert(jreal(bo, "tokens_per_s_per_gpu") <= jreal(ans, "tokens_per_s_per_gpu"));
    json_decref(b);
    json_decref(p);
    json_decref(t);
}
END_TEST


/* Issue 38 item 5: a bf16 checkpoint (the HF config's torch_dtype) is planned in bf16, says so in
 * the JSON and in the human output, and the block carries the key; its step is what predict
 * says with --dtype bf16. */
START_TEST(dtype_taken_from_the_model_and_put_into_the_block)
{
    json_t *t = tu_ratiolab_json("tune --model qwen2.5-7b --hw dgx-a100-80g --gpus 4 --micro-batches 1 --ratios 0:1:0.25 --json");
    ck_assert_str_eq(json_string_value(json_object_get(t, "dtype")), "bf16");
    ck_assert_str_eq(json_string_value(json_object_get(t, "dtype_origin")), "the model's torch_dtype");
    json_t *blk = json_object_get(t, "deepspeed_config");
    ck_assert(json_is_true(json_object_get(json_object_get(blk, "bf16"), "enabled")));
    ck_assert_ptr_null(json_object_get(blk, "fp16"));
    json_t *ans = json_object_get(t, "answer");
    bool off = !strcmp(json_string_value(json_object_get(ans, "offload")), "cpu");
    char how[160];
    if (off)
        snprintf(how, sizeof how, "--ratio %.17g --sub-group-size %lld", jreal(ans, "requested_ratio"),
                 (long long)jint(ans, "sub_group_size"));
    else
        snprintf(how, sizeof how, "--ds-config %s", tu_write("bf16.json", "{\"zero_optimization\": {\"stage\": 3}}"));
    json_t *p = tu_ratiolab_json("predict --model qwen2.5-7b --hw dgx-a100-80g --gpus 4 --dtype bf16 %s --micro-batch %lld "
                                 "--grad-accum %lld%s --json", how, (long long)jint(ans, "micro_batch"),
                                 (long long)jint(ans, "grad_accum"),
                                 json_is_true(json_object_get(ans, "checkpoint_activations")) ? " --checkpoint-activations" : "");
    ck_assert_int_eq(jint(json_object_get(p, "prediction"), "step_ns"), jint(json_object_get(ans, "prediction"), "step_ns"));
    json_decref(p);
    json_decref(t);
    struct tu_run r;
    tu_ratiolab(&r, "tune --model qwen2.5-7b --hw dgx-a100-80g --gpus 4 --micro-batches 1 --ratios 0:1:0.25");
    ck_assert_msg(r.status == 0 && strstr(r.out, "\ndtype      bf16 (the model's torch_dtype)\n"), "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* The planning guide (docs/plan-and-predict.md, where the front page sends a newcomer with the
 * question) shows the real output of its `tune` and `sweep` commands: every "$ ratiolab tune ..."
 * and "$ ratiolab sweep ..." block in it is what the command prints now. */
START_TEST(readme_tune_and_sweep_outputs_are_current)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/plan-and-predict.md", tu_src());
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    int blocks = 0;
    bool question = false;
    static const char *const cmds[] = {"\n$ ratiolab tune ", "\n$ ratiolab sweep "};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        for (char *at = strstr(text, cmds[c]); at; at = strstr(at + 1, cmds[c])) {
            char *cmd = at + strlen("\n$ ratiolab "), *nl = strchr(cmd, '\n');
            char *end = nl ? strstr(nl + 1, "```") : NULL;
            ck_assert_msg(nl && end, "docs/plan-and-predict.md: a %.5s block without its output", cmds[c] + 11);
            char args[512];
            snprintf(args, sizeof args, "%.*s", (int)(nl - cmd), cmd);
            question |= strcmp(args, "tune " QUESTION) == 0;
            struct tu_run r;
            tu_ratiolab(&r, "%s", args);
            ck_assert_msg(r.status == 0, "%s: exit %d: %s", args, r.status, r.err);
            /* issue 38: ratio 0 keeps every sub-group on the GPU; it is no "offload" of a ratio */
            ck_assert_msg(!strstr(r.out, "best with offload (ratio 0.00"), "%s", r.out);
            size_t want = (size_t)(end - (nl + 1));
            ck_assert_msg(strlen(r.out) == want && memcmp(r.out, nl + 1, want) == 0,
                          "docs/plan-and-predict.md shows another output of `ratiolab %s` than it prints now:\n%s", args, r.out);
            tu_run_free(&r);
            blocks++;
        }
    }
    ck_assert_int_ge(blocks, 3);
    ck_assert_msg(question, "docs/plan-and-predict.md: no `ratiolab tune %s` (the question it answers)", QUESTION);
}
END_TEST

START_TEST(offloading_answer_is_what_predict_says)
{
    /* Micro-batch 16 with checkpointing on a 16 GiB V100 needs offload: the answer carries the
     * sub_group_size that makes DeepSpeed 0.12 honor its ratio, and predict agrees. */
    json_t *t = tu_ratiolab_json("tune --gpu-mem 16GiB --micro-batch 16 --checkpoint-activations --json");
    json_t *ans = json_object_get(t, "answer");
    ck_assert(json_is_object(ans));
    double ratio = jreal(ans, "requested_ratio");
    ck_assert(ratio > 0 && ratio < 1);
    ck_assert(fabs(jreal(ans, "honored_ratio") - ratio) <= 0.01);
    int64_t sgs = jint(ans, "sub_group_size");
    ck_assert(sgs > 0 && sgs < 1000000000);
    json_t *p = predict("", ratio, 16, jint(ans, "grad_accum"), true, sgs);
    ck_assert_int_eq(jint(json_object_get(p, "prediction"), "step_ns"), jint(json_object_get(ans, "prediction"), "step_ns"));
    ck_assert(jreal(p, "honored_ratio") == jreal(ans, "honored_ratio"));
    json_decref(p);
    json_decref(t);
}
END_TEST

START_TEST(global_batch_sets_accumulation)
{
    json_t *t = tu_ratiolab_json("%s", "tune " QUESTION " --ratios 0:1:0.25 --global-batch 64 --json");
    json_t *ans = json_object_get(t, "answer");
    ck_assert(json_is_object(ans));
    ck_assert_int_eq(jint(ans, "micro_batch") * jint(ans, "grad_accum") * 4, 64);
    json_decref(t);
}
END_TEST

START_TEST(profiles_side_by_side_and_headroom)
{
    struct tu_run r;
    tu_ratiolab(&r, "tune " "--model llama2-13b --gpus 4 --hw dgx-a100-80g,dgx-h100 --ratios 0:1:0.25");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "\ndgx-a100-80g "));
    ck_assert_ptr_nonnull(strstr(r.out, "\ndgx-h100 "));
    ck_assert_ptr_nonnull(strstr(r.out, "tok/s/GPU"));
    tu_run_free(&r);
    /* 4 of DGX A100's 8 GPUs: GPUs 0-3, behind the switches of socket 0 */
    tu_ratiolab(&r, "tune " QUESTION " --ratios 0:1:0.5 --micro-batches 1");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "GPUs 0-3 of the profile's 8, on socket 0 "));
    tu_run_free(&r);
    /* leave 79 GiB of 80 free: nothing fits, exit 1 */
    tu_ratiolab(&r, "tune " QUESTION " --ratios 0:1:0.5 --headroom 79GiB");
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "no ratio fits"));
    tu_run_free(&r);
    tu_ratiolab(&r, "tune " QUESTION " --micro-batches 1,x");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--micro-batches"));
    tu_run_free(&r);
}
END_TEST

START_TEST(sweep_csv_has_tokens_and_phases)
{
    /* The default case (gpt-2.7b, TP 8 on 8 GPUs, micro-batch 1, seq 2048): tokens/s per GPU is
     * 2048 / step / 8, and the exposed times of the phases plus idle add up to the step. */
    struct tu_run r;
    tu_ratiolab(&r, "sweep --ratios 0.5 --csv");
    ck_assert_msg(r.status == 0, "%s", r.err);
    char *head = r.out;   /* the column header: the first line not starting with '#' */
    while (*head == '#' && strchr(head, '\n'))
        head = strchr(head, '\n') + 1;
    char *row = strchr(head, '\n');
    ck_assert_ptr_nonnull(row);
    *row++ = 0;
    double v[64];
    int n = 0;
    char *save = NULL, *dup = strdup(row);
    for (char *tok = strtok_r(dup, ",\n", &save); tok && n < 64; tok = strtok_r(NULL, ",\n", &save))
        v[n++] = strtod(tok, NULL);
    free(dup);
    int cols = 1;
    for (char *p = head; *p; p++)
        cols += *p == ',';
    ck_assert_int_eq(n, cols);
    ck_assert_ptr_nonnull(strstr(r.out, "step_s,fits,tokens_per_s_per_gpu,forward_busy_s,forward_exposed_s"));
    /* The columns by name, through the sweep's table (traces/schema.h), as plots/ finds them. */
    char *hf[64];
    int nh = trace_csv_split(head, hf, 64), col[3];
    const char *names[3] = {trace_sweep_cols[TRACE_SWEEP_STEP_S], trace_sweep_cols[TRACE_SWEEP_TOKENS], TRACE_SWEEP_IDLE};
    ck_assert_int_eq(nh, n);
    ck_assert_ptr_null(trace_csv_columns(hf, nh, names, 3, col));
    double step = v[col[0]], tps = v[col[1]], sum = v[col[2]];
    int exposed = 0;
    for (int k = 0; k < nh; k++)
        if (strlen(hf[k]) > 10 && strcmp(hf[k] + strlen(hf[k]) - 10, "_exposed_s") == 0) {
            sum += v[k];
            exposed++;
        }
    ck_assert_int_eq(exposed, (nh - TRACE_SWEEP_N - 1) / 2);   /* one per phase */
    ck_assert_msg(fabs(sum - step) < 2e-5, "exposed + idle %.6f vs step %.6f", sum, step);
    ck_assert_msg(fabs(tps - 2048.0 / step / 8) < 0.1, "%g", tps);
    tu_run_free(&r);
}
END_TEST

/* Tokens per second per GPU with tensor parallelism: the default gpt-2.7b runs TP 8 on 8 GPUs, one
 * model replica, so per GPU the replica's micro-batch x sequence / step is shared by 8 GPUs; predict's
 * JSON and its text say the same (it once counted one rank's tokens, 8 x too many). */
START_TEST(tokens_per_gpu_share_the_replica_over_tp)
{
    json_t *p = tu_ratiolab_json("predict --ratio 0.5 --json");
    json_t *pp = json_object_get(p, "prediction");
    ck_assert(json_is_object(pp));
    double want = (double)jint(pp, "micro_batch") * (double)jint(pp, "seq_len") * (double)jint(pp, "grad_accum") /
                  ((double)jint(pp, "step_ns") * 1e-9) / 8.0;
    double got = jreal(pp, "tokens_per_s_per_gpu");
    ck_assert_msg(want > 0 && fabs(got - want) <= 1e-9 * want, "%g tokens/s per GPU, want %g", got, want);
    json_decref(p);
}
END_TEST

/* The fit analysis (sim/tune.c), in process: what binds a class from its counts, and the GPU
 * memory that leaves the headroom free, by hand (a share of 1/4: 3 GiB needed is 4 GiB of GPU). */
START_TEST(what_binds_and_the_gpu_that_fits)
{
    ck_assert_str_eq(sim_tune_binds(&(struct sim_tune_class_stats){.evaluated = 0}), "not_searched");
    ck_assert_str_eq(sim_tune_binds(&(struct sim_tune_class_stats){.evaluated = 5, .fit = 1}), "none");
    ck_assert_str_eq(sim_tune_binds(&(struct sim_tune_class_stats){.evaluated = 5, .host_fit = 2}), "gpu");
    ck_assert_str_eq(sim_tune_binds(&(struct sim_tune_class_stats){.evaluated = 5, .gpu_fit = 2}), "host");
    ck_assert_str_eq(sim_tune_binds(&(struct sim_tune_class_stats){.evaluated = 5, .gpu_fit = 2, .host_fit = 3}),
                     "gpu_or_host");
    ck_assert_str_eq(sim_tune_binds(&(struct sim_tune_class_stats){.evaluated = 5}), "gpu_and_host");
    const int64_t G = INT64_C(1) << 30;
    ck_assert_int_eq(sim_tune_gpu_mem_for(3 * G, G, false, 4 * G), 4 * G);   /* the same share of a larger GPU */
    ck_assert_int_eq(sim_tune_gpu_mem_for(3 * G, G, true, 4 * G), 4 * G);    /* the same bytes */
    ck_assert_int_eq(sim_tune_gpu_mem_for(7 * G, G, true, 4 * G), 8 * G);
    ck_assert_int_eq(sim_tune_gpu_mem_for(6 * G, G, false, 4 * G), 8 * G);   /* 6 / (1 - 1/4) */
}
END_TEST

/* The GPUs tune says it modelled are the ones the step ran on: --gpu-ids' when given. In
 * catalog/hardware/dgx1-v100.json GPUs 0-3 hang off socket 0's switches and 4-7 off socket 1's. */
START_TEST(modelled_gpus_follow_gpu_ids)
{
    static const char *const want[][2] = {
        {"", "modelled   GPUs 0-3 of the profile's 8, on socket 0 ("},
        {"--gpu-ids 4-7", "modelled   GPUs 4,5,6,7 of the profile's 8, on socket 1 ("},
        {"--gpu-ids 0,2,4,6", "modelled   GPUs 0,2,4,6 of the profile's 8, on sockets 0, 1 ("},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct tu_run r;
        tu_ratiolab(&r, "tune --hw dgx1-v100 --gpus 4 --tp 4 --micro-batches 1 %s", want[i][0]);
        ck_assert_int_eq(r.status, 0);
        ck_assert_msg(strstr(r.out, want[i][1]) != NULL, "%s: %.600s", want[i][0], r.out);
        tu_run_free(&r);
    }
}
END_TEST

/* The micro-batch candidates (sim_tune_micro_batches), written out by hand: the powers of two 1..64
 * by default; a list with the config's own value merged in, sorted, each once; the one the user
 * fixed alone. */
START_TEST(micro_batch_candidates)
{
    struct plan_zero z;
    plan_zero_defaults(&z);
    int64_t mb[SIM_TUNE_MAX_MICRO_BATCHES];
    int n;
    sim_tune_micro_batches(&z, NULL, 0, mb, &n);
    ck_assert_int_eq(n, 7);
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(mb[i], INT64_C(1) << i);
    z.src_micro_batch = PLAN_SRC_CONFIG;
    z.micro_batch = 3;
    const int64_t listed[] = {8, 1, 8};
    sim_tune_micro_batches(&z, listed, 3, mb, &n);
    ck_assert_int_eq(n, 3);
    ck_assert(mb[0] == 1 && mb[1] == 3 && mb[2] == 8);
    z.src_micro_batch = PLAN_SRC_CLI;
    z.micro_batch = 5;
    sim_tune_micro_batches(&z, listed, 3, mb, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(mb[0], 5);
}
END_TEST

/* --micro-batches read by the library (sim_tune_micro_batches_parse): the list merged and sorted
 * as sim_tune_micro_batches does, written out by hand; each refusal names micro_batches and the
 * list (a trailing comma is accepted, as before); a micro-batch the user fixed leaves the list unread. */
START_TEST(micro_batch_list_is_read_or_refused)
{
    struct plan_zero z;
    plan_zero_defaults(&z);
    int64_t mb[SIM_TUNE_MAX_MICRO_BATCHES];
    int n = 0;
    struct rl_err e = {0};
    ck_assert_int_eq(sim_tune_micro_batches_parse("4,1,4", &z, mb, &n, &e), 0);
    ck_assert(n == 2 && mb[0] == 1 && mb[1] == 4);
    ck_assert_int_eq(sim_tune_micro_batches_parse(NULL, &z, mb, &n, &e), 0);
    ck_assert(n == 7 && mb[6] == 64);
    const char *bad[] = {"1,x", "0", ",2", "1048577", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(sim_tune_micro_batches_parse(bad[i], &z, mb, &n, &e) == RL_EINVAL, "%s accepted", bad[i]);
        char want[128];
        snprintf(want, sizeof want, "micro_batches: '%s' is not allowed; expected up to 15 integers", bad[i]);
        ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "%s", e.msg);
    }
    ck_assert_int_eq(sim_tune_micro_batches_parse("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15", &z, mb, &n, &e), 0);
    ck_assert_int_eq(n, 15);
    z.src_micro_batch = PLAN_SRC_CLI;
    z.micro_batch = 3;
    ck_assert_int_eq(sim_tune_micro_batches_parse("x", &z, mb, &n, &e), 0);
    ck_assert(n == 1 && mb[0] == 3);
}
END_TEST

/* The config block of a choice (sim_tune_ds_config_json), written out by hand: bf16 gets its block,
 * fp32 none; offload carries the ratio to 6 decimals, and the sub_group_size only when asked; no
 * offload is stage 3 alone. */
START_TEST(config_block_of_a_choice)
{
    struct sim_tune_choice k = {.offload = true, .ratio = 0.123456789, .micro_batch = 4, .grad_accum = 2,
                                .sub_group_size = 1000};
    json_t *o = sim_tune_ds_config_json(&k, true, PLAN_BF16);
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    ck_assert_str_eq(text, "{\"bf16\":{\"enabled\":true},\"train_micro_batch_size_per_gpu\":4,"
                           "\"gradient_accumulation_steps\":2,\"zero_optimization\":{\"stage\":3,\"sub_group_size\":1000,"
                           "\"offload_optimizer\":{\"device\":\"cpu\",\"pin_memory\":true,\"ratio\":0.123457}}}");
    free(text);
    json_decref(o);
    k.offload = false;
    o = sim_tune_ds_config_json(&k, true, PLAN_FP32);
    text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_str_eq(text, "{\"train_micro_batch_size_per_gpu\":4,\"gradient_accumulation_steps\":2,"
                           "\"zero_optimization\":{\"stage\":3}}");
    free(text);
    json_decref(o);
}
END_TEST

/* One profile's search (sim_tune_profile) in process on the default case (gpt-2.7b, TP 8 on a
 * 16 GiB V100 node): the default headroom is 5 % of 17179869184 bytes, 858993459 (by hand); the
 * result is sim_tune's with that headroom; a headroom that leaves no room finds nothing and the
 * analysis names a larger GPU; the JSON of two profiles is a "profiles" array of both. */
START_TEST(one_profile_search_and_its_json)
{
    struct plan_inputs in;
    plan_inputs_init(&in);
    in.catalog = tu_catalog();
    struct plan_setup c;
    struct rl_err e = {0};
    ck_assert_msg(plan_inputs_resolve(&in, &c, &e) == 0, "%s", e.msg);
    struct sim_tune_run runs[2];
    memset(runs, 0, sizeof runs);
    ck_assert_msg(sim_hw_load(&runs[0].hw, tu_catalog(), "dgx1-v100", &e) == 0, "%s", e.msg);
    runs[1].hw = runs[0].hw;
    const double ratios[] = {0, 1};
    const int64_t mbs[] = {1};
    struct sim_tune_request q = {.model = &c.model, .layout = &c.layout, .zero = &c.zero, .popt = c.popt,
                                 .ratios = ratios, .n_ratios = 2, .micro_batches = mbs, .n_micro_batches = 1,
                                 .ckpt_off = true, .no_offload = true, .tol = PLAN_RATIO_TOLERANCE};
    sim_train_defaults(&q.train);
    ck_assert_msg(sim_tune_profile(&q, -1, &runs[0], &e) == 0, "%s", e.msg);
    ck_assert(!runs[0].headroom_given);
    ck_assert_int_eq(runs[0].headroom_bytes, INT64_C(858993459));
    struct sim_tune_request q2 = q;
    q2.hw = &runs[0].hw;
    q2.headroom_bytes = INT64_C(858993459);
    struct sim_tune_result r;
    ck_assert_msg(sim_tune(&q2, &r, &e) == 0, "%s", e.msg);
    ck_assert(runs[0].res.found && r.found);
    ck_assert(runs[0].res.ans.best.r.step_ns == r.ans.best.r.step_ns && runs[0].res.ans.evaluated == r.ans.evaluated);
    const int64_t G = INT64_C(1) << 30;
    ck_assert_msg(sim_tune_profile(&q, 15 * G, &runs[1], &e) == 0, "%s", e.msg);
    ck_assert(runs[1].headroom_given && runs[1].headroom_bytes == 15 * G && !runs[1].res.found);
    const struct sim_tune_fix *f = &runs[1].fix[SIM_TUNE_N_CLASSES];
    ck_assert_int_eq(f->gpu_mem_bytes, runs[1].res.ans.min_gpu_bytes_host_ok + 15 * G);   /* the same bytes free */
    const struct sim_tune_json_text x = {.dtype_origin = "d", .attention = PLAN_ATTN_MATERIALIZED,
                                         .attention_origin = "a", .reserve_origin = "profile"};
    json_t *j = sim_tune_json(&c, runs, 2, &q.train, &x), *p = json_object_get(j, "profiles");
    ck_assert_int_eq(json_array_size(p), 2);
    ck_assert_int_eq(jint(json_array_get(p, 0), "headroom_bytes"), INT64_C(858993459));
    ck_assert(json_is_null(json_object_get(json_array_get(p, 1), "answer")));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(p, 0), "dtype_origin")), "d");
    json_decref(j);
    j = sim_tune_json(&c, runs, 1, &q.train, &x);
    ck_assert(json_object_get(j, "profiles") == NULL && json_is_object(json_object_get(j, "answer")));
    json_decref(j);
    plan_setup_free(&c);
}
END_TEST

Suite *tune_suite(void)
{
    Suite *s = suite_create("tune");
    TCase *t = tcase_create("tune");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, answer_is_what_predict_says);
    tcase_add_test(t, offloading_answer_is_what_predict_says);
    tcase_add_test(t, readme_tune_and_sweep_outputs_are_current);
    tcase_add_test(t, dtype_taken_from_the_model_and_put_into_the_block);
    tcase_add_test(t, global_batch_sets_accumulation);
    tcase_add_test(t, profiles_side_by_side_and_headroom);
    tcase_add_test(t, sweep_csv_has_tokens_and_phases);
    tcase_add_test(t, tokens_per_gpu_share_the_replica_over_tp);
    tcase_add_test(t, what_binds_and_the_gpu_that_fits);
    tcase_add_test(t, micro_batch_candidates);
    tcase_add_test(t, micro_batch_list_is_read_or_refused);
    tcase_add_test(t, config_block_of_a_choice);
    tcase_add_test(t, one_profile_search_and_its_json);
    tcase_add_test(t, modelled_gpus_follow_gpu_ids);
    suite_add_tcase(s, t);
    return s;
}
