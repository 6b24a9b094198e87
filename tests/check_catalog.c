/* tests/check_catalog.c — `ratiolab catalog`: parameter counts and model-state bytes per preset,
 * GPUs and memories per profile, and `--hw NAME --json` as the start of a custom profile. */
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

Suite *catalog_suite(void)
{
    Suite *s = suite_create("catalog");
    TCase *t = tcase_create("catalog");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, models_and_profiles_as_json);
    tcase_add_test(t, hw_json_starts_a_custom_profile);
    suite_add_tcase(s, t);
    return s;
}
