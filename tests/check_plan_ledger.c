/* tests/check_plan_ledger.c — the DeepSpeed version boundaries of the placement rule and the
 * memory ledger, the exec ledger's reduce bucket with dp > 1, and DeepSpeed's config defaults.
 *
 * Every expected value is written out from DeepSpeed's behaviour or counted by hand from the
 * model (element counts times dtype bytes), never taken from the code under test. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "tests/util.h"

/* Ten tensors of 100 elements in one param group: with sub_group_size 100, ten sub-groups. */
struct ten {
    struct plan_model m;
    struct plan_tensor t[10];
};

static void ten_init(struct ten *h)
{
    memset(h, 0, sizeof *h);
    snprintf(h->m.name, sizeof h->m.name, "ten");
    h->m.tensors = h->t;
    h->m.n_tensors = 10;
    h->m.cap_tensors = 10;
    h->m.n_groups = 1;
    for (int i = 0; i < 10; i++) {
        snprintf(h->t[i].name, sizeof h->t[i].name, "t%d", i);
        h->t[i].ndim = 1;
        h->t[i].shape[0] = h->t[i].numel = 100;
        h->m.total_numel += 100;
    }
}

/* fp16, pinned CPU offload at `ratio`, sub_group_size 100, DeepSpeed `ver`. */
static struct plan_zero offload(double ratio, struct rl_version ver)
{
    struct plan_zero z = tu_zero_cpu_offload(ratio, 100);
    z.ds_version = ver;
    return z;
}

static void build(struct plan *p, const struct ten *h, int dp, const struct plan_zero *z,
                  enum plan_ledger_kind ledger)
{
    struct plan_layout l = {.dp = dp, .tp = 1, .pp = 1};
    struct plan_options o = {.policy = PLAN_POLICY_DS012, .ledger = ledger};
    struct rl_err e = {0};
    ck_assert_msg(plan_build(p, &h->m, &l, z, &o, &e) == 0, "plan_build: %s", e.msg);
}

#define V(a, b, c) ((struct rl_version){a, b, c})
/* DeepSpeed's CPU Adam up to 0.14.2 pins two tiles of 128 Mi fp32 elements: 1 GiB. */
static const int64_t TILES_BYTES = INT64_C(2) * 128 * 1024 * 1024 * 4;

START_TEST(cpu_adam_tiles_last_at_0_14_2)
{
    struct ten h;
    ten_init(&h);
    struct plan p;
    const struct rl_version with[] = {V(0, 12, 4), V(0, 14, 0), V(0, 14, 2)};
    const struct rl_version without[] = {V(0, 14, 3), V(0, 15, 0), V(0, 18, 0)};
    for (int i = 0; i < 3; i++) {
        struct plan_zero z = offload(0.3, with[i]);
        build(&p, &h, 1, &z, PLAN_LEDGER_AUTO);
        ck_assert_msg(p.stages[PLAN_STAGE_FP16_PARTITIONS].cpu_pinned_bytes == TILES_BYTES,
                      "%d.%d.%d: %lld pinned bytes at the first stage", with[i].major, with[i].minor,
                      with[i].patch, (long long)p.stages[PLAN_STAGE_FP16_PARTITIONS].cpu_pinned_bytes);
        plan_free(&p);
        z = offload(0.3, without[i]);
        build(&p, &h, 1, &z, PLAN_LEDGER_AUTO);
        ck_assert_msg(p.stages[PLAN_STAGE_FP16_PARTITIONS].cpu_bytes == 0, "%d.%d.%d: %lld CPU bytes",
                      without[i].major, without[i].minor, without[i].patch,
                      (long long)p.stages[PLAN_STAGE_FP16_PARTITIONS].cpu_bytes);
        plan_free(&p);
    }
    /* Without offload there is no CPU Adam, whatever the version. */
    struct plan_zero z = offload(0.3, V(0, 12, 4));
    z.offload = PLAN_OFFLOAD_NONE;
    z.src_ratio = PLAN_SRC_DEFAULT;
    build(&p, &h, 1, &z, PLAN_LEDGER_AUTO);
    ck_assert_int_eq(plan_peak_cpu_bytes(&p), 0);
    plan_free(&p);
}
END_TEST

START_TEST(ledger_changes_at_exactly_0_13_2)
{
    /* P = 1000, ratio 0.3 with the 0.12 rule: Pc = 300, Pg = 700 (fp16 partitions, fp32 rest).
     * Up to 0.13.1 the zero-gradient step at init creates the Adam states (8 bytes per element)
     * when the optimizer is built; from 0.13.2 (#5104, 18179807f) only the first step does. */
    struct ten h;
    ten_init(&h);
    const int64_t P = 1000, Pc = 300, Pg = 700;
    struct plan p;
    struct plan_zero z = offload(0.3, V(0, 13, 1));
    build(&p, &h, 1, &z, PLAN_LEDGER_AUTO);
    ck_assert_int_eq(p.ledger_kind, PLAN_LEDGER_DS012);
    ck_assert_int_eq(p.stages[PLAN_STAGE_OPTIMIZER_STATES].gpu_bytes, 2 * P + 4 * Pg + 4 * Pg + 8 * Pg);
    ck_assert_int_eq(p.stages[PLAN_STAGE_OPTIMIZER_STATES].cpu_bytes, TILES_BYTES + 4 * Pc + 4 * Pc + 8 * Pc);
    plan_free(&p);
    z = offload(0.3, V(0, 13, 2));
    build(&p, &h, 1, &z, PLAN_LEDGER_AUTO);
    ck_assert_int_eq(p.ledger_kind, PLAN_LEDGER_DS013);
    ck_assert_int_eq(p.stages[PLAN_STAGE_OPTIMIZER_STATES].gpu_bytes, 2 * P + 4 * Pg + 4 * Pg);
    ck_assert_int_eq(p.stages[PLAN_STAGE_OPTIMIZER_STATES].cpu_bytes, TILES_BYTES + 4 * Pc + 4 * Pc);
    ck_assert_int_eq(p.stages[PLAN_STAGE_FIRST_STEP].gpu_bytes - p.stages[PLAN_STAGE_ZERO_OPTIMIZER].gpu_bytes,
                     8 * Pg);
    plan_free(&p);
}
END_TEST

START_TEST(exec_reduce_bucket_is_min_of_rbs_and_p_times_dp)
{
    /* dp 4: each 100-element tensor gives 25 per rank, P = 250, P x dp = 1000 elements. The
     * reduce-scatter bucket holds min(reduce_bucket_size, P x dp) fp16 elements. */
    struct ten h;
    ten_init(&h);
    const int64_t P = 250;
    struct plan p;
    struct plan_zero z = offload(0.0, V(0, 16, 0));
    build(&p, &h, 4, &z, PLAN_LEDGER_EXEC);
    ck_assert_int_eq(p.per_rank_numel, P);
    ck_assert_int_eq(p.cpu_numel, 0);
    /* fp16 partition 2P, fp32 master, grad, m, v 16P, bucket 2 x 1000 */
    ck_assert_int_eq(plan_peak_gpu_bytes(&p), 2 * P + 16 * P + 2 * 1000);
    plan_free(&p);
    z.reduce_bucket_size = 600;   /* between P and P x dp */
    build(&p, &h, 4, &z, PLAN_LEDGER_EXEC);
    ck_assert_int_eq(plan_peak_gpu_bytes(&p), 2 * P + 16 * P + 2 * 600);
    plan_free(&p);
    z.reduce_bucket_size = 100;   /* below P */
    build(&p, &h, 4, &z, PLAN_LEDGER_EXEC);
    ck_assert_int_eq(plan_peak_gpu_bytes(&p), 2 * P + 16 * P + 2 * 100);
    plan_free(&p);
}
END_TEST

START_TEST(version_0_12_3_is_the_first_accepted)
{
    enum plan_policy pol = PLAN_POLICY_AUTO;
    struct rl_err e = {0};
    ck_assert_msg(plan_policy_for_version(V(0, 12, 3), &pol, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(pol, PLAN_POLICY_DS012);
    ck_assert_int_eq(plan_policy_for_version(V(0, 12, 2), &pol, &e), RL_EINVAL);
    ck_assert_int_eq(plan_policy_for_version(V(0, 11, 9), &pol, &e), RL_EINVAL);
    ck_assert_int_eq(plan_policy_for_version(V(0, 17, 99), &pol, &e), 0);
    ck_assert_int_eq(pol, PLAN_POLICY_DS012);
    ck_assert_int_eq(plan_policy_for_version(V(1, 0, 0), &pol, &e), 0);
    ck_assert_int_eq(pol, PLAN_POLICY_DS018);
    /* The same through the command line. */
    struct tu_run r;
    tu_ratiolab(&r, "plan --deepspeed-version 0.12.3 --json");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "\"policy\": \"deepspeed-0.12\""));
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --deepspeed-version 0.12.2 --json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "0.12.3"));
    ck_assert_msg(strstr(r.err, "--deepspeed-version: 0.12.2"), "%s", r.err);   /* the flag, put back by cli/ */
    tu_run_free(&r);
}
END_TEST

START_TEST(offload_ratio_defaults_to_full_offload)
{
    /* DeepSpeed's DeepSpeedZeroOffloadOptimizerConfig.ratio defaults to 1.0: a config that turns
     * offload on without a ratio offloads everything. */
    struct plan_zero z;
    plan_zero_defaults(&z);
    ck_assert(z.ratio == 1.0);
    struct rl_err e = {0};
    ck_assert_msg(plan_zero_parse(&z, "{\"zero_optimization\":{\"stage\":3,\"sub_group_size\":100,"
                                      "\"offload_optimizer\":{\"device\":\"cpu\"}},\"fp16\":{\"enabled\":true}}",
                                  "cfg.json", &e) == 0, "%s", e.msg);
    ck_assert(z.ratio == 1.0);
    ck_assert_int_eq(z.src_ratio, PLAN_SRC_DEFAULT);
    ck_assert(!z.pin_memory);                          /* DeepSpeed: pin_memory false */
    ck_assert_int_eq(z.reduce_bucket_size, 500000000); /* DeepSpeed: 5e8 */
    struct ten h;
    ten_init(&h);
    struct plan p;
    struct plan_layout l = {.dp = 1, .tp = 1, .pp = 1};
    ck_assert_msg(plan_build(&p, &h.m, &l, &z, NULL, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(p.cpu_numel, 1000);
    ck_assert_int_eq(p.cpu_subgroups, 10);
    ck_assert(p.honored_ratio == 1.0);
    plan_free(&p);
    /* A ratio above 1 is refused, naming the field. */
    ck_assert_int_eq(plan_zero_parse(&z, "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":"
                                         "{\"device\":\"cpu\",\"ratio\":1.5}}}", "cfg.json", &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "offload_optimizer.ratio"));
}
END_TEST

/* GPT-2 small (tied) in the HF grouping, sub_group_size 1: one sub-group per tensor, the 50
 * decay tensors (wte, wpe, then per layer c_attn, attn.c_proj, c_fc, mlp.c_proj weights) first,
 * then the 98 no-decay tensors (per layer ln_1 w/b, c_attn b, attn.c_proj b, ln_2 w/b, c_fc b,
 * mlp.c_proj b; then ln_f w/b). */
static double json_num(const char *text, const char *key)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    ck_assert_msg(o != NULL, "not JSON: %s", je.text);
    json_t *v = json_object_get(o, key);
    ck_assert_msg(v && json_is_number(v), "no number %s", key);
    double x = json_number_value(v);
    json_decref(o);
    return x;
}

START_TEST(newer_rule_honors_the_hand_counted_ratio)
{
    const int64_t h = 768, total = 124439808;   /* published GPT-2 small */
    const int64_t layer_mats = h * 3 * h + h * h + h * 4 * h + 4 * h * h;
    const int64_t layer_small = 4 * h + 3 * h + h + 4 * h + h;   /* norms, biases */
    tu_write("r.json", "{\"zero_optimization\":{\"stage\":3,\"sub_group_size\":1,"
                       "\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":0.8}},\"fp16\":{\"enabled\":true}}");
    struct tu_run r;
    /* 0.18: the last N - floor(0.2 x 148) = 148 - 29 = 119 sub-groups: decay index 29 on (layer 6's
     * mlp.c_proj, layers 7..11) and every no-decay tensor. */
    tu_ratiolab(&r, "plan --ds-config r.json --model gpt2 --json --deepspeed-version 0.18.0");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert(json_num(r.out, "num_subgroups") == 148);
    ck_assert(json_num(r.out, "cpu_subgroups") == 119);
    int64_t cpu = 4 * h * h + 5 * layer_mats + 12 * layer_small + 2 * h;
    ck_assert_int_eq(cpu, 37870080);
    ck_assert(json_num(r.out, "cpu_numel") == (double)cpu);
    ck_assert(json_num(r.out, "honored_ratio") == (double)cpu / (double)total);
    tu_run_free(&r);
    /* 0.12: the first floor(0.8 x 148) = 118: all 50 decay tensors and 68 no-decay ones; the last
     * 30 stay on the GPU (layer 8's ln_2 w/b, c_fc b, mlp.c_proj b; layers 9..11; ln_f). */
    tu_ratiolab(&r, "plan --ds-config r.json --model gpt2 --json");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert(json_num(r.out, "cpu_subgroups") == 118);
    int64_t gpu = (2 * h + 4 * h + h) + 3 * layer_small + 2 * h;
    ck_assert(json_num(r.out, "gpu_numel") == (double)gpu);
    ck_assert(json_num(r.out, "honored_ratio") == (double)(total - gpu) / (double)total);
    tu_run_free(&r);
}
END_TEST

START_TEST(layout_dp_counts_pipeline_stages)
{
    /* world = tp x pp x dp: 32 GPUs with TP 4 and PP 2 leave DP 4, on 4 nodes of 8. */
    struct plan_layout l = {.tp = 4, .pp = 2, .world = 32, .gpus_per_node = 8};
    struct rl_err e = {0};
    ck_assert_msg(plan_layout_resolve(&l, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(l.dp, 4);
    ck_assert_int_eq(l.nodes, 4);
    l = (struct plan_layout){.tp = 2, .pp = 4, .dp = 2};
    ck_assert_msg(plan_layout_resolve(&l, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(l.world, 16);
    l = (struct plan_layout){.tp = 2, .pp = 4, .dp = 4, .world = 16};
    ck_assert_int_eq(plan_layout_resolve(&l, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "dp: 4"));   /* the field; cli/ names the flag */
    l = (struct plan_layout){.tp = 4, .pp = 3, .world = 16};
    ck_assert_int_eq(plan_layout_resolve(&l, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpus: 16"));
}
END_TEST

START_TEST(pin_memory_false_keeps_the_flat_buffer_pageable)
{
    /* The 0.12 ledger's flat gradient buffer (P fp16 elements) follows pin_memory; the CPU-Adam
     * tiles and the CPU fp32 gradients are pinned either way. P = 1000, Pc = 300. */
    struct ten h;
    ten_init(&h);
    const int64_t P = 1000, Pc = 300;
    struct plan p;
    struct plan_zero z = offload(0.3, V(0, 12, 4));
    z.pin_memory = false;
    build(&p, &h, 1, &z, PLAN_LEDGER_AUTO);
    ck_assert_int_eq(p.stages[PLAN_STAGE_ZERO_OPTIMIZER].cpu_pinned_bytes, TILES_BYTES + 4 * Pc);
    ck_assert_int_eq(p.stages[PLAN_STAGE_ZERO_OPTIMIZER].cpu_bytes, TILES_BYTES + 16 * Pc + 2 * P);
    plan_free(&p);
    z.pin_memory = true;
    build(&p, &h, 1, &z, PLAN_LEDGER_AUTO);
    ck_assert_int_eq(p.stages[PLAN_STAGE_ZERO_OPTIMIZER].cpu_pinned_bytes, TILES_BYTES + 4 * Pc + 2 * P);
    plan_free(&p);
}
END_TEST


START_TEST(no_offload_keeps_a_16bit_flat_gradient_buffer_and_no_fp32_grads)
{
    /* Issue 38 item 6, stage3.py without offload_optimizer: grad_partitions_flat_buffer holds every
     * partition's gradient in the model dtype on the GPU (v0.12.4:492-494), and the fp32 gradients
     * set up for the states' initialization are set to None after it (v0.12.4:1030-1032): per
     * element 2 (fp16 partition) + 4 (fp32 master) + 8 (Adam m, v) + 2 (flat gradients) bytes, and
     * the reduce bucket (5e8 fp16 elements). P = 1000 elements on one rank. */
    struct ten h;
    ten_init(&h);
    const int64_t P = 1000;
    const struct rl_version vs[] = {V(0, 12, 4), V(0, 19, 8)};
    for (size_t i = 0; i < RL_COUNT(vs); i++) {
        struct plan_zero z;
        plan_zero_defaults(&z);
        z.stage = 3;
        z.dtype = PLAN_FP16;
        z.sub_group_size = 100;
        z.ds_version = vs[i];
        struct plan p;
        build(&p, &h, 1, &z, PLAN_LEDGER_AUTO);
        const int64_t want = 2 * P + 4 * P + 8 * P + 2 * P + 2 * PLAN_DS_REDUCE_BUCKET_SIZE;
        ck_assert_int_eq(p.stages[PLAN_STAGE_FIRST_STEP].gpu_bytes, want);
        ck_assert_int_eq(p.stages[PLAN_STAGE_FIRST_STEP].cpu_bytes, 0);
        for (int b = 0; b < p.n_buffers; b++)
            ck_assert_msg(strncmp(p.buffers[b].name, "fp32_grads", 10) != 0 || p.buffers[b].numel == 0, "%s",
                          p.buffers[b].name);
        plan_free(&p);
    }
}
END_TEST

START_TEST(offload_devices_and_pin_memory_values)
{
    struct plan_zero z;
    struct rl_err e = {0};
    ck_assert_msg(plan_zero_parse(&z, "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"nvme\"}}}",
                                  "cfg.json", &e) == 0, "%s", e.msg);
    ck_assert_int_eq(z.offload, PLAN_OFFLOAD_NVME);
    struct ten h;
    ten_init(&h);
    struct plan p;
    struct plan_layout l = {.dp = 1, .tp = 1, .pp = 1};
    ck_assert_int_eq(plan_build(&p, &h.m, &l, &z, NULL, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "\"nvme\" is not modelled"));
    ck_assert_msg(plan_zero_parse(&z, "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"none\"}}}",
                                  "cfg.json", &e) == 0, "%s", e.msg);
    ck_assert_int_eq(z.offload, PLAN_OFFLOAD_NONE);
    /* pin_memory "auto": DeepSpeedConfigModel drops "auto" before validating, so the release's
     * default holds (tests/deepspeed/parity: both recorded releases accept it). */
    ck_assert_msg(plan_zero_parse(&z, "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\","
                                      "\"pin_memory\":\"auto\"}}}", "cfg.json", &e) == 0, "%s", e.msg);
    ck_assert_int_eq(z.src_pin_memory, PLAN_SRC_DEFAULT);
    ck_assert_int_eq(plan_zero_parse(&z, "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\","
                                         "\"pin_memory\":\"maybe\"}}}", "cfg.json", &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "offload_optimizer.pin_memory: \"maybe\" is not allowed; expected true or false"));
    ck_assert_msg(plan_zero_parse(&z, "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\","
                                      "\"pin_memory\":true}}}", "cfg.json", &e) == 0, "%s", e.msg);
    ck_assert(z.pin_memory);
}
END_TEST

START_TEST(suggested_sub_group_size_rounds_within_ten_percent)
{
    /* Two tensors of 13 elements at ratio 0.5 (0.12 rule): any sub_group_size of 1..13 gives two
     * sub-groups and honors 0.5 (floor(0.5 x 2) = 1 of 2 equal halves); 14 and above give one
     * (floor(0.5) = 0). The largest honoring size is 13; the round 10 is more than 10 % below it,
     * so 13 is suggested as it is. */
    struct ten h;
    ten_init(&h);
    h.m.n_tensors = 2;
    h.m.total_numel = 26;
    h.t[0].shape[0] = h.t[0].numel = 13;
    h.t[1].shape[0] = h.t[1].numel = 13;
    struct plan_zero z = offload(0.5, V(0, 12, 4));
    z.sub_group_size = 1000000000;
    struct plan p;
    build(&p, &h, 1, &z, PLAN_LEDGER_AUTO);
    ck_assert(p.honored_ratio == 0.0);
    ck_assert_int_eq(plan_max_honoring_sub_group_size(&p, 0.01), 13);
    plan_free(&p);
}
END_TEST

Suite *plan_ledger_suite(void)
{
    Suite *s = suite_create("plan_ledger");
    TCase *tc = tcase_create("versions");
    tcase_add_test(tc, cpu_adam_tiles_last_at_0_14_2);
    tcase_add_test(tc, ledger_changes_at_exactly_0_13_2);
    tcase_add_test(tc, exec_reduce_bucket_is_min_of_rbs_and_p_times_dp);
    tcase_add_test(tc, version_0_12_3_is_the_first_accepted);
    tcase_add_test(tc, offload_ratio_defaults_to_full_offload);
    tcase_add_test(tc, newer_rule_honors_the_hand_counted_ratio);
    tcase_add_test(tc, layout_dp_counts_pipeline_stages);
    tcase_add_test(tc, pin_memory_false_keeps_the_flat_buffer_pageable);
    tcase_add_test(tc, no_offload_keeps_a_16bit_flat_gradient_buffer_and_no_fp32_grads);
    tcase_add_test(tc, offload_devices_and_pin_memory_values);
    tcase_add_test(tc, suggested_sub_group_size_rounds_within_ten_percent);
    suite_add_tcase(s, tc);
    return s;
}
