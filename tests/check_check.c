/* tests/check_check.c — `ratiolab check`, the CI gate: pass, fail on the staircase, fail on
 * memory, the written fix passes, and the user's other keys survive --fix-to. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/check_json.h"
#include "tests/util.h"

/* A user's config with keys ratiolab does not know, in an order of the user's. */
static const char *user_cfg =
    "{\n"
    "  \"train_batch_size\": 512,\n"
    "  \"my_team_key\": {\"keep\": [1, 2, 3], \"lr\": 5e-07},\n"
    "  \"zero_optimization\": {\n"
    "    \"stage\": 3,\n"
    "    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true, \"ratio\": 0.3},\n"
    "    \"contiguous_gradients\": true\n"
    "  },\n"
    "  \"fp16\": {\"enabled\": true, \"loss_scale\": 0},\n"
    "  \"wall_clock_breakdown\": false\n"
    "}\n";

START_TEST(staircase_fails_and_fix_passes)
{
    tu_write("cfg.json", user_cfg);
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config cfg.json --model gpt-2.7b --tp 8 --gpus 8 --fix-to fixed.json");
    ck_assert_msg(r.status == 1, "exit %d: %s %s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "FAIL"));
    ck_assert_ptr_nonnull(strstr(r.out, "honored 0.0000"));
    ck_assert_ptr_nonnull(strstr(r.out, "sub_group_size to"));
    tu_run_free(&r);
    tu_ratiolab(&r, "check --ds-config fixed.json --model gpt-2.7b --tp 8 --gpus 8");
    ck_assert_msg(r.status == 0, "fixed config: exit %d: %s %s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "PASS"));
    tu_run_free(&r);
}
END_TEST

START_TEST(unknown_keys_survive_fix_in_order)
{
    tu_write("cfg.json", user_cfg);
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config cfg.json --model gpt-2.7b --tp 8 --gpus 8 --fix-to fixed.json --quiet");
    ck_assert_int_eq(r.status, 1);
    tu_run_free(&r);
    /* Every key of the user's config is still there with an equal value, in the same order;
     * only zero_optimization gains sub_group_size (appended). */
    char path[600];
    snprintf(path, sizeof path, "%s/fixed.json", tu_tmpdir());
    json_error_t je;
    json_t *orig = json_loads(user_cfg, 0, &je), *fixed = json_load_file(path, 0, &je);
    ck_assert_ptr_nonnull(orig);
    ck_assert_msg(fixed != NULL, "fixed.json: %s", je.text);
    const char *key;
    json_t *val;
    void *it = json_object_iter(fixed);
    json_object_foreach(orig, key, val) {
        ck_assert_msg(it && strcmp(json_object_iter_key(it), key) == 0, "key %s moved", key);
        json_t *fv = json_object_iter_value(it);
        if (strcmp(key, "zero_optimization") == 0) {
            const char *k2;
            json_t *v2;
            json_object_foreach(val, k2, v2) ck_assert_msg(json_equal(v2, json_object_get(fv, k2)), "%s changed", k2);
            ck_assert_int_eq(json_object_size(fv), json_object_size(val) + 1);
            ck_assert(json_is_integer(json_object_get(fv, "sub_group_size")));
        } else {
            ck_assert_msg(json_equal(val, fv), "value of %s changed", key);
        }
        it = json_object_iter_next(fixed, it);
    }
    ck_assert_ptr_null(it);
    json_decref(orig);
    json_decref(fixed);
}
END_TEST

START_TEST(honored_config_passes)
{
    tu_write("ok.json", "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":1.0}},"
                        "\"fp16\":{\"enabled\":true}}");
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config ok.json --model gpt-2.7b --tp 8 --gpus 8 --json");
    ck_assert_msg(r.status == 0, "exit %d: %s %s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "\"ok\": true"));
    tu_run_free(&r);
    tu_ratiolab(&r, "check --ds-config ok.json --model gpt-2.7b --tp 8 --gpus 8 --quiet");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");   /* --quiet prints only failures */
    tu_run_free(&r);
}
END_TEST

START_TEST(memory_failure_gives_a_fitting_ratio)
{
    tu_write("zero.json", "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":0.0}},"
                          "\"fp16\":{\"enabled\":true},\"extra\":\"kept\"}");
    struct tu_run r;
    /* gpt-2.7b on TP 8 holds ~0.33 G elements per rank: ~6 GiB of model states at ratio 0 */
    tu_ratiolab(&r, "check --ds-config zero.json --model gpt-2.7b --tp 8 --gpus 8 --gpu-mem 4GiB --model-states-only --json --fix-to fit.json");
    ck_assert_msg(r.status == 1, "exit %d: %s %s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "\"memory_ok\": false"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"ratio\":"));
    tu_run_free(&r);
    tu_ratiolab(&r, "check --ds-config fit.json --model gpt-2.7b --tp 8 --gpus 8 --gpu-mem 4GiB --model-states-only");
    ck_assert_msg(r.status == 0, "fixed config: exit %d: %s %s", r.status, r.out, r.err);
    tu_run_free(&r);
    /* an impossible budget: no fix, no file */
    tu_ratiolab(&r, "check --ds-config zero.json --model gpt-2.7b --tp 8 --gpus 8 --gpu-mem 1MiB --model-states-only --fix-to none.json");
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "fix     none"));
    char p[600];
    snprintf(p, sizeof p, "%s/none.json", tu_tmpdir());
    ck_assert(!tu_exists(p));
    tu_run_free(&r);
}
END_TEST

START_TEST(newer_deepspeed_rule_is_applied)
{
    /* Ten equal sub-groups: ratio 0.8 is honored by 0.12 (8 of 10) but becomes 0.9 under 0.18. */
    tu_write("r.json", "{\"zero_optimization\":{\"stage\":3,\"sub_group_size\":1,"
                       "\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":0.8}},\"fp16\":{\"enabled\":true}}");
    struct tu_run a, b;
    tu_ratiolab(&a, "check --ds-config r.json --model gpt2 --json --tolerance 0.002");
    tu_ratiolab(&b, "check --ds-config r.json --model gpt2 --json --tolerance 0.002 --deepspeed-version 0.18.0");
    ck_assert_msg(a.status == 0 || a.status == 1, "%s", a.err);
    ck_assert_msg(b.status == 0 || b.status == 1, "%s", b.err);
    ck_assert_ptr_nonnull(strstr(b.out, "deepspeed-0.18"));
    ck_assert_str_ne(a.out, b.out);
    tu_run_free(&a);
    tu_run_free(&b);
}
END_TEST

START_TEST(check_requires_config_and_model)
{
    struct tu_run r;
    tu_ratiolab(&r, "check --model gpt2");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--ds-config"));
    tu_run_free(&r);
    tu_write("c.json", "{}");
    tu_ratiolab(&r, "check --ds-config c.json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--model"));
    tu_run_free(&r);
    tu_ratiolab(&r, "check --ds-config c.json --model gpt2 --gpu-mem lots");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--gpu-mem"));
    tu_run_free(&r);
}
END_TEST

START_TEST(newer_rule_gives_the_hand_counted_ratio)
{
    /* GPT-2 small, sub_group_size 1: 148 one-tensor sub-groups, the 50 decay tensors first. At
     * ratio 0.8 the 0.18 rule offloads the last 148 - floor(0.2 x 148) = 119: layer 6's
     * mlp.c_proj (4h^2), layers 7..11's four matrices (12h^2 each) and all 98 no-decay tensors
     * (13h per layer, 2h for ln_f), h = 768: 37,870,080 of 124,439,808. The 0.12 rule offloads
     * the first 118: all but layer 8's last 4 no-decay tensors (7h), layers 9..11's and ln_f's. */
    const double h = 768, total = 124439808;
    tu_write("r.json", "{\"zero_optimization\":{\"stage\":3,\"sub_group_size\":1,"
                       "\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":0.8}},\"fp16\":{\"enabled\":true}}");
    const char *versions[2] = {"0.18.0", "0.12.4"};
    const double cpu[2] = {4 * h * h + 5 * 12 * h * h + 12 * 13 * h + 2 * h, total - (7 * h + 3 * 13 * h + 2 * h)};
    for (int i = 0; i < 2; i++) {
        struct tu_run r;
        tu_ratiolab(&r, "check --ds-config r.json --model gpt2 --json --tolerance 0.002 --deepspeed-version %s",
                    versions[i]);
        ck_assert_msg(r.status == 1, "%s: exit %d (the ratio is not honored): %s", versions[i], r.status, r.err);
        json_error_t je;
        json_t *o = json_loads(r.out, 0, &je);
        ck_assert_msg(o != NULL, "not JSON: %s", je.text);
        ck_assert_int_eq(json_integer_value(json_object_get(o, "num_subgroups")), 148);
        double got = json_number_value(json_object_get(o, "honored_ratio"));
        ck_assert_msg(got == cpu[i] / total, "%s: honored %.17g, hand count %.17g", versions[i], got, cpu[i] / total);
        ck_assert(!json_is_true(json_object_get(o, "ratio_ok")));
        json_decref(o);
        tu_run_free(&r);
    }
}
END_TEST


/* Qwen2.5-14B's config.json (hidden 5120, 48 layers, GQA 40/8, bf16), the first job. */
static const char *qwen14b(void)
{
    return tu_write("qwen14b.json",
                    "{\"_name_or_path\": \"Qwen/Qwen2.5-14B\", \"model_type\": \"qwen2\", \"hidden_size\": 5120, "
                    "\"intermediate_size\": 13824, \"num_hidden_layers\": 48, \"num_attention_heads\": 40, "
                    "\"num_key_value_heads\": 8, \"vocab_size\": 152064, \"max_position_embeddings\": 131072, "
                    "\"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\"}");
}

/* Issue 38 item 7: with --deepspeed-version A,B each version's line and JSON entry carry their
 * own verdict: 0.12.4 honors 0.1597 for 0.15 (within 0.01) while 0.19.8 gives 0.2066. */
START_TEST(each_version_has_its_own_verdict)
{
    const char *m = qwen14b();
    tu_write("v.json", "{\"zero_optimization\": {\"stage\": 3, \"sub_group_size\": 580000000, \"offload_optimizer\": "
                       "{\"device\": \"cpu\", \"ratio\": 0.15}}, \"bf16\": {\"enabled\": true}}");
    struct tu_run r;
    tu_ratiolab(&r, "check --model %s --gpus 4 --ds-config v.json --deepspeed-version 0.12.4,0.19.8", m);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.out, "  ratio   ok   requested 0.1500, honored 0.1597") &&
                  strstr(r.out, "under DeepSpeed 0.12.4 (deepspeed-0.12)\n") &&
                  strstr(r.out, "  ratio   FAIL requested 0.1500, honored 0.2066 under DeepSpeed 0.19.8"), "%s", r.out);
    tu_run_free(&r);
    tu_ratiolab(&r, "check --model %s --gpus 4 --ds-config v.json --deepspeed-version 0.12.4,0.19.8 --json", m);
    ck_assert_int_eq(r.status, 1);
    json_t *j = json_loads(r.out, 0, NULL);
    tu_run_free(&r);
    ck_assert_ptr_nonnull(j);
    json_t *vs = json_object_get(j, "versions");
    ck_assert_int_eq(json_array_size(vs), 2);
    ck_assert(json_is_true(json_object_get(json_array_get(vs, 0), "ratio_ok")));
    ck_assert(json_is_false(json_object_get(json_array_get(vs, 1), "ratio_ok")));
    ck_assert(json_is_false(json_object_get(j, "ratio_ok")));   /* overall: every version must honor */
    json_decref(j);
}
END_TEST

/* Issue 38 item 8: plan and check share one default tolerance, so check's fix does not make plan
 * warn (with 0.02, check chose sub_group_size 600000000, honored 0.1645, which plan warned about). */
START_TEST(check_fix_does_not_make_plan_warn)
{
    const char *m = qwen14b();
    tu_write("f.json", "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": "
                       "0.15}}, \"bf16\": {\"enabled\": true}}");
    struct tu_run r;
    tu_ratiolab(&r, "check --model %s --gpus 4 --ds-config f.json --fix-to fixed.json", m);
    ck_assert_msg(r.status == 1 && strstr(r.out, "tolerance 0.0100"), "%s", r.out);
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --model %s --gpus 4 --ds-config fixed.json", m);
    ck_assert_msg(r.status == 0 && !strstr(r.out, "\nwarning    honored ratio"), "%s", r.out);
    tu_run_free(&r);
    tu_ratiolab(&r, "check --model %s --gpus 4 --ds-config fixed.json", m);
    ck_assert_msg(r.status == 0, "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* Issue 38 items 9 and 14: a decimal GPU size warns and says what is used; a warning about the
 * step time is not printed by check, which prints none. */
START_TEST(check_warnings_say_what_check_does)
{
    tu_write("b.json", "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": "
                       "0.31}}, \"bf16\": {\"enabled\": true}}");
    struct tu_run r;
    tu_ratiolab(&r, "check --model gpt2 --ds-config b.json --gpu-mem 80GB --hw dgx1-v100");
    ck_assert_msg(strstr(r.err, "--gpu-mem 80GB is 74.51 GiB") && strstr(r.err, "that is what is used") &&
                  strstr(r.err, "80GiB"), "%s", r.err);
    ck_assert_msg(strstr(r.out, "of 74.51 GiB"), "%s", r.out);
    ck_assert_msg(strstr(r.err, "no bf16 tensor cores") && !strstr(r.err, "step time"), "%s", r.err);
    tu_run_free(&r);
}
END_TEST

/* check --json's object (sim/check_json.c) from a verdict made by hand: two DeepSpeed versions of
 * which only the second honors the ratio, no sub_group_size that honors it under both, memory not
 * judged: "ok" and "ratio_ok" false, one "versions" entry per version with its own "ratio_ok",
 * "fix" {"possible": false} and no memory breakdown or "gpu_mem_bytes". */
START_TEST(check_json_reflects_a_hand_made_verdict)
{
    static struct plan_setup c;
    snprintf(c.model.name, sizeof c.model.name, "m");
    c.popt.policy = PLAN_POLICY_DS012;
    c.zero.dtype = PLAN_BF16;
    c.zero.ds_version = (struct rl_version){0, 16, 1};
    c.n_more = 1;
    c.more_versions[0] = (struct rl_version){0, 18, 0};
    c.more_policies[0] = PLAN_POLICY_DS018;
    struct sim_check_request q = {.tol = 0.01};
    static struct sim_check_verdict v;
    v.requested = 0.3;
    v.honored = 0.25;
    v.more_honored[0] = 0.305;
    v.version_ok[0] = false;
    v.version_ok[1] = true;
    v.memory_ok = true;
    v.n_subgroups = 4;
    v.sub_group_size = 1000;
    v.gpu_bytes = 123;
    v.fix_sgs_none = true;
    v.fix_ratio = -1;
    struct plan_hazard_set hz = {0};
    struct plan_zero written = c.zero;
    const struct sim_check_report r = {.setup = &c, .q = &q, .v = &v, .hz = &hz, .written = &written,
                                       .dtype_source = "the DeepSpeed config"};
    json_t *o = sim_check_json(&r);
    ck_assert(json_is_false(json_object_get(o, "ok")) && json_is_false(json_object_get(o, "ratio_ok")));
    ck_assert(json_is_true(json_object_get(o, "memory_ok")) && json_is_false(json_object_get(o, "memory_checked")));
    ck_assert_str_eq(json_string_value(json_object_get(o, "policy")), "deepspeed-0.12");
    ck_assert_str_eq(json_string_value(json_object_get(o, "dtype_source")), "the DeepSpeed config");
    ck_assert_str_eq(json_string_value(json_object_get(o, "gpu_bytes_counts")), "model states");
    ck_assert(json_object_get(o, "gpu_mem_bytes") == NULL && json_object_get(o, "model_states_bytes") == NULL);
    ck_assert(json_real_value(json_object_get(o, "requested_ratio")) == 0.3);
    json_t *vs = json_object_get(o, "versions");
    ck_assert_int_eq(json_array_size(vs), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(vs, 0), "deepspeed_version")), "0.16.1");
    ck_assert(json_is_false(json_object_get(json_array_get(vs, 0), "ratio_ok")));
    ck_assert(json_is_true(json_object_get(json_array_get(vs, 1), "ratio_ok")));
    ck_assert(json_real_value(json_object_get(json_array_get(vs, 1), "honored_ratio")) == 0.305);
    json_t *fix = json_object_get(o, "fix");
    ck_assert(json_is_false(json_object_get(fix, "possible")) && json_object_get(fix, "sub_group_size") == NULL);
    json_decref(o);

    /* The overall verdict needs the ratio, the memory and no failing hazard: with the ratio
     * honored by both versions it passes, and one failing hazard makes it fail. */
    v.ratio_ok = v.version_ok[0] = v.version_ok[1] = true;
    ck_assert(sim_check_passed(&r));
    hz.n_fail = 1;
    ck_assert(!sim_check_passed(&r));
    hz.n_fail = 0;
    v.memory_ok = false;
    ck_assert(!sim_check_passed(&r));
}
END_TEST

Suite *check_suite(void)
{
    Suite *s = suite_create("check");
    TCase *tc = tcase_create("gate");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, staircase_fails_and_fix_passes);
    tcase_add_test(tc, unknown_keys_survive_fix_in_order);
    tcase_add_test(tc, honored_config_passes);
    tcase_add_test(tc, memory_failure_gives_a_fitting_ratio);
    tcase_add_test(tc, newer_deepspeed_rule_is_applied);
    tcase_add_test(tc, newer_rule_gives_the_hand_counted_ratio);
    tcase_add_test(tc, check_requires_config_and_model);
    tcase_add_test(tc, each_version_has_its_own_verdict);
    tcase_add_test(tc, check_fix_does_not_make_plan_warn);
    tcase_add_test(tc, check_warnings_say_what_check_does);
    tcase_add_test(tc, check_json_reflects_a_hand_made_verdict);
    suite_add_tcase(s, tc);
    return s;
}
