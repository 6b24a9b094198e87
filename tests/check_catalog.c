/* tests/check_catalog.c — `ratiolab catalog`: parameter counts and model-state bytes per preset,
 * GPUs and memories per profile, `--hw NAME --json` as the start of a custom profile, and the
 * profile overrides --gpu-mem, --host-mem and --pcie-gen. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "tests/util.h"

START_TEST(models_and_profiles_as_json)
{
    struct tu_run r;
    tu_ratiolab(&r, "catalog --json");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    json_error_t je;
    json_t *root = json_loads(r.out, 0, &je);
    ck_assert_msg(root != NULL, "%s", je.text);
    json_t *m, *found = NULL;
    size_t i;
    json_array_foreach(json_object_get(root, "models"), i, m)
        if (!strcmp(json_string_value(json_object_get(m, "name")), "llama2-13b"))
            found = m;
    ck_assert_ptr_nonnull(found);
    /* Llama-2-13B: 13,015,864,320 parameters (published); 16 B each of model states. */
    ck_assert_int_eq(json_integer_value(json_object_get(found, "parameters")), 13015864320LL);
    ck_assert_int_eq(json_integer_value(json_object_get(found, "model_state_bytes")), 16 * 13015864320LL);
    ck_assert_int_eq(json_integer_value(json_object_get(found, "bf16_weight_bytes")), 2 * 13015864320LL);
    found = NULL;
    json_array_foreach(json_object_get(root, "hardware"), i, m)
        if (!strcmp(json_string_value(json_object_get(m, "name")), "dgx-a100-80g"))
            found = m;
    ck_assert_ptr_nonnull(found);
    ck_assert_int_eq(json_integer_value(json_object_get(found, "gpus_per_node")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(found, "gpu_mem_bytes")), 80LL << 30);
    json_decref(root);
    tu_run_free(&r);
}
END_TEST

START_TEST(hw_json_starts_a_custom_profile)
{
    struct tu_run r;
    tu_ratiolab(&r, "catalog --hw dgx-a100-80g --json > mine.json");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    /* the printed profile is a profile: predict accepts it as --hw FILE */
    tu_ratiolab(&r, "predict --model gpt2 --hw mine.json --ratio 1.0");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "catalog --hw no-such-node --json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "no-such-node"));
    tu_run_free(&r);
    tu_ratiolab(&r, "catalog --hw dgx-a100-80g");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--hw"));
    tu_run_free(&r);
}
END_TEST

static json_t *predict_json(const char *args)
{
    struct tu_run r;
    tu_ratiolab(&r, "predict --hw dgx-a100-80g --ratio 1 --json %s", args);
    ck_assert_msg(r.status == 0, "%s: exit %d: %s", args, r.status, r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(o);
    tu_run_free(&r);
    return o;
}

static json_int_t pred_int(json_t *o, const char *group, const char *key)
{
    json_t *p = json_object_get(o, "prediction");
    return json_integer_value(json_object_get(group ? json_object_get(p, group) : p, key));
}

START_TEST(profile_overrides_without_json)
{
    json_t *base = predict_json(""), *g3 = predict_json("--pcie-gen 3"), *g4 = predict_json("--pcie-gen 4"),
           *g5 = predict_json("--pcie-gen 5"), *mem = predict_json("--gpu-mem 10GiB --host-mem 20GiB");
    /* DGX A100 is a Gen4 machine: --pcie-gen 4 changes nothing; with the whole optimizer on the
     * CPU, Gen3 links are slower and Gen5 faster. */
    ck_assert_int_eq(pred_int(g4, NULL, "step_ns"), pred_int(base, NULL, "step_ns"));
    ck_assert_int_gt(pred_int(g3, NULL, "step_ns"), pred_int(g4, NULL, "step_ns"));
    ck_assert_int_lt(pred_int(g5, NULL, "step_ns"), pred_int(g4, NULL, "step_ns"));
    ck_assert_int_eq(pred_int(mem, "gpu_memory_per_rank", "capacity_bytes"), 10LL << 30);
    ck_assert_int_eq(pred_int(mem, "host_memory", "capacity_bytes"), 20LL << 30);
    ck_assert_int_eq(pred_int(mem, NULL, "step_ns"), pred_int(base, NULL, "step_ns"));
    json_decref(base);
    json_decref(g3);
    json_decref(g4);
    json_decref(g5);
    json_decref(mem);
    struct tu_run r;
    tu_ratiolab(&r, "predict --pcie-gen 6");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--pcie-gen"));
    tu_run_free(&r);
    tu_ratiolab(&r, "sweep --host-mem 0");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--host-mem"));
    tu_run_free(&r);
}
END_TEST

Suite *catalog_suite(void)
{
    Suite *s = suite_create("catalog");
    TCase *t = tcase_create("catalog");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, models_and_profiles_as_json);
    tcase_add_test(t, hw_json_starts_a_custom_profile);
    tcase_add_test(t, profile_overrides_without_json);
    suite_add_tcase(s, t);
    return s;
}
