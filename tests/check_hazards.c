/* tests/check_hazards.c — the DeepSpeed partial-offload hazards (plan/ds_hazards.c): one config per
 * case, the version ranges at their edges, `check` failing with one line per hazard, `plan`
 * printing the same lines as warnings, and the scheduler case failing only under --strict.
 *
 * Expected texts come from DeepSpeed itself (its assert messages, issue #4872) and from the
 * version boundaries read in its history, not from ratiolab's output. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ds_fix.h"   /* plan_fix_config */
#include "plan/ds_hazards.h"
#include "tests/util.h"

/* A sub_group_size that honors ratio 0.5 for gpt2 (so the ratio line passes and only hazards
 * decide), bf16, and a slot for the part under test. */
#define CFG(zero_extra, device, stage, rest)                                                       \
    "{\"zero_optimization\":{\"stage\":" stage ",\"sub_group_size\":62000000" zero_extra           \
    ",\"offload_optimizer\":{\"device\":\"" device "\",\"ratio\":0.5}},\"bf16\":{\"enabled\":true}" rest "}"

static int count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* One config per case: what check must say, and its exit code. */
static const struct {
    const char *name;
    const char *json;
    const char *version;     /* --deepspeed-version */
    int status;              /* check's exit */
    const char *must[4];     /* texts the output must hold */
    const char *must_not;    /* a text it must not hold */
} cases[] = {
    {"nvme", CFG("", "nvme", "3", ""), "0.12.4", 1,
     {"hazard  zero_optimization.offload_optimizer.device \"nvme\"", "expected input to be on cuda", "#4872",
      "fix: set offload_optimizer.device to \"cpu\""}, NULL},
    {"torch_adam", CFG("", "cpu", "3", ",\"optimizer\":{\"type\":\"AdamW\",\"params\":{\"lr\":1e-4,\"torch_adam\":true}}"),
     "0.18.0", 1,
     {"hazard  optimizer.params.torch_adam true", "Hybrid Optimizer Only Supports DeepSpeedCPUAdam",
      "stage3.py", "fix: remove \"torch_adam\""}, NULL},
    {"lamb", CFG("", "cpu", "3", ",\"optimizer\":{\"type\":\"Lamb\"}"), "0.12.4", 1,
     {"hazard  optimizer.type \"Lamb\"", "Hybrid Optimizer Only Supports DeepSpeedCPUAdam", "engine.py",
      "\"Adam\" or \"AdamW\""}, NULL},
    {"adagrad", CFG("", "cpu", "3", ",\"optimizer\":{\"type\":\"Adagrad\"}"), "0.14.0", 1,
     {"hazard  optimizer.type \"Adagrad\"", "DeepSpeedCPUAdagrad", NULL, NULL}, NULL},
    /* DeepSpeed lower-cases the optimizer names it knows: "adamw" is its CPU Adam. */
    {"adamw lower case", CFG("", "cpu", "3", ",\"optimizer\":{\"type\":\"adamw\"}"), "0.12.4", 0,
     {"PASS", NULL, NULL, NULL}, "hazard"},
    /* torch_adam false is DeepSpeed's default. */
    {"torch_adam false", CFG("", "cpu", "3", ",\"optimizer\":{\"type\":\"Adam\",\"params\":{\"torch_adam\":false}}"),
     "0.12.4", 0, {"PASS", NULL, NULL, NULL}, "hazard"},
    /* Stage 2 before the pydantic v2 validator: silently ignored. */
    {"stage 2 on 0.14.5", CFG("", "cpu", "2", ""), "0.14.5", 1,
     {"hazard  zero_optimization.stage 2", "silently ignored", "DeepSpeed >= 0.12.3, < 0.15.0", "offload_ratio_check"},
     "Partial offloading only supported"},
    /* From 0.15.0 the validator fires. */
    {"stage 2 on 0.15.0", CFG("", "cpu", "2", ""), "0.15.0", 1,
     {"hazard  zero_optimization.stage 2", "Partial offloading only supported for ZeRO Stage 3.", "DeepSpeed >= 0.15.0",
      "fix: set zero_optimization.stage to 3"}, "silently ignored"},
    {"stage 1 on 0.12.3", CFG("", "cpu", "1", ""), "0.12.3", 1, {"hazard  zero_optimization.stage 1", NULL, NULL, NULL}, NULL},
    /* The scheduler case is a warning: exit 0 without --strict. */
    {"scheduler", CFG("", "cpu", "3", ",\"optimizer\":{\"type\":\"AdamW\"},\"scheduler\":{\"type\":\"WarmupLR\"}"),
     "0.12.4", 0, {"PASS", "warning scheduler type \"WarmupLR\"", "observed with WarmupLR", "_optimizer_step"}, "hazard"},
    /* An HF Trainer config (an "auto" value) has no scheduler block: the Trainer passes its own. */
    {"hf trainer", CFG("", "cpu", "3", ",\"train_micro_batch_size_per_gpu\":\"auto\""), "0.19.8", 0,
     {"PASS", "warning scheduler absent (the client's: an HF Trainer or Megatron run)", "on DeepSpeed 0.14.1", NULL},
     "hazard"},
    /* The same config without "auto" and without a block: a constant lr, nothing to warn about. */
    {"no schedule", CFG("", "cpu", "3", ",\"train_micro_batch_size_per_gpu\":1"), "0.19.8", 0, {"PASS", NULL, NULL, NULL},
     "scheduler"},
};

START_TEST(one_config_per_hazard)
{
    int i = _i;
    tu_write("h.json", cases[i].json);
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config h.json --model gpt2 --deepspeed-version %s", cases[i].version);
    ck_assert_msg(r.status == cases[i].status, "%s: exit %d (want %d): %s %s", cases[i].name, r.status,
                  cases[i].status, r.out, r.err);
    for (int k = 0; k < 4 && cases[i].must[k]; k++)
        ck_assert_msg(strstr(r.out, cases[i].must[k]), "%s: output lacks '%s':\n%s", cases[i].name, cases[i].must[k],
                      r.out);
    if (cases[i].must_not)
        ck_assert_msg(!strstr(r.out, cases[i].must_not), "%s: output holds '%s':\n%s", cases[i].name,
                      cases[i].must_not, r.out);
    tu_run_free(&r);
}
END_TEST

START_TEST(one_line_per_hazard_and_plan_warns_the_same)
{
    /* nvme + torch_adam + a scheduler: two failures and one warning, each on its own line. */
    tu_write("h.json", CFG("", "nvme", "3", ",\"optimizer\":{\"type\":\"Adam\",\"params\":{\"torch_adam\":true}},"
                                            "\"scheduler\":{\"type\":\"WarmupLR\"}"));
    struct tu_run c, p;
    tu_ratiolab(&c, "check --ds-config h.json --model gpt2");
    ck_assert_msg(c.status == 1, "exit %d: %s %s", c.status, c.out, c.err);
    ck_assert_int_eq(count_lines_with(c.out, "\n  hazard  "), 2);
    ck_assert_int_eq(count_lines_with(c.out, "\n  warning "), 1);
    tu_ratiolab(&p, "plan --ds-config h.json --model gpt2");
    ck_assert_msg(p.status == 0, "plan: exit %d: %s", p.status, p.err);
    ck_assert_int_eq(count_lines_with(p.out, "; source: "), 3);   /* the ratio advice is a warning too */
    /* every hazard line of check appears verbatim in plan's warnings */
    char *dup = strdup(c.out), *save = NULL;
    int seen = 0;
    for (char *line = strtok_r(dup, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *body = !strncmp(line, "  hazard  ", 10) || !strncmp(line, "  warning ", 10) ? line + 10 : NULL;
        if (!body)
            continue;
        seen++;
        ck_assert_msg(strstr(p.out, body), "plan lacks: %s", body);
    }
    ck_assert_int_eq(seen, 3);
    free(dup);
    tu_run_free(&c);
    tu_run_free(&p);
}
END_TEST

START_TEST(fix_to_repairs_device_stage_and_torch_adam)
{
    /* nvme, stage 2 and torch_adam: --fix-to writes device "cpu", stage 3 and drops torch_adam,
     * keeping the user's other keys; the written config passes. */
    tu_write("h.json", CFG("", "nvme", "2", ",\"optimizer\":{\"type\":\"AdamW\",\"params\":{\"lr\":1e-4,\"torch_adam\":true}},"
                                            "\"my_key\":[1,2]"));
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config h.json --model gpt2 --deepspeed-version 0.16.0 --fix-to fixed.json");
    ck_assert_msg(r.status == 1, "exit %d: %s %s", r.status, r.out, r.err);
    ck_assert_int_eq(count_lines_with(r.out, "\n  hazard  "), 3);
    ck_assert_ptr_nonnull(strstr(r.out, "wrote   fixed.json"));
    tu_run_free(&r);
    tu_ratiolab(&r, "check --ds-config fixed.json --model gpt2 --deepspeed-version 0.16.0 --strict");
    ck_assert_msg(r.status == 0, "fixed config: exit %d: %s %s", r.status, r.out, r.err);
    tu_run_free(&r);
    tu_sh(&r, "grep -c torch_adam fixed.json; grep -c my_key fixed.json; grep -c '\"lr\"' fixed.json");
    ck_assert_str_eq(r.out, "0\n1\n1\n");
    tu_run_free(&r);
    /* An optimizer type alone: nothing --fix-to can repair, nothing written. */
    tu_write("s.json", CFG("", "cpu", "3", ",\"optimizer\":{\"type\":\"Lamb\"}"));
    tu_ratiolab(&r, "check --ds-config s.json --model gpt2 --fix-to none.json");
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "need an edit by hand"));
    tu_run_free(&r);
    char p[600];
    snprintf(p, sizeof p, "%s/none.json", tu_tmpdir());
    ck_assert(!tu_exists(p));
}
END_TEST

START_TEST(strict_fails_on_the_scheduler_case)
{
    tu_write("h.json", CFG("", "cpu", "3", ",\"optimizer\":{\"type\":\"AdamW\"},\"scheduler\":{\"type\":\"WarmupDecayLR\"}"));
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config h.json --model gpt2 --strict");
    ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "  hazard  scheduler type \"WarmupDecayLR\""));
    tu_run_free(&r);
    tu_ratiolab(&r, "check --ds-config h.json --model gpt2 --json");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "\"id\": \"scheduler-lr\""));
    ck_assert_ptr_nonnull(strstr(r.out, "\"fails\": false"));
    tu_run_free(&r);
    /* --quiet prints only failures: nothing at all here */
    tu_ratiolab(&r, "check --ds-config h.json --model gpt2 --quiet");
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");
    tu_run_free(&r);
}
END_TEST

START_TEST(full_offload_has_no_hazards)
{
    /* ratio 1.0: stage3.py builds no GPU-side optimizer, so torch_adam and schedulers are fine. */
    tu_write("h.json", "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":1.0}},"
                       "\"optimizer\":{\"type\":\"Lamb\",\"params\":{\"torch_adam\":true}},\"scheduler\":{\"type\":\"WarmupLR\"}}");
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config h.json --model gpt2 --strict");
    ck_assert_msg(r.status == 0, "exit %d: %s %s", r.status, r.out, r.err);
    ck_assert_ptr_null(strstr(r.out, "hazard"));
    tu_run_free(&r);
}
END_TEST

START_TEST(predict_refuses_a_ratio_deepspeed_ignores)
{
    tu_write("h.json", CFG("", "cpu", "2", ""));
    struct tu_run r;
    tu_ratiolab(&r, "predict --ds-config h.json --model gpt2");
    ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "zero_optimization.stage 2"));
    ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: %s", r.err);
    tu_run_free(&r);
    tu_write("bad.json", CFG("", "cpu", "3", ",\"optimizer\":{\"type\":\"Adam\",\"params\":{\"torch_adam\":\"yes\"}}"));
    tu_ratiolab(&r, "check --ds-config bad.json --model gpt2");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "optimizer.params.torch_adam: \"yes\""));
    tu_run_free(&r);
}
END_TEST

/* The version ranges at their edges, on the library. */
static int ids(struct rl_version v, int stage, enum plan_offload dev, char *buf, size_t n)
{
    struct plan_zero z;
    plan_zero_defaults(&z);
    z.stage = stage;
    z.offload = dev;
    z.ratio = 0.25;
    z.src_ratio = PLAN_SRC_CONFIG;
    z.ds_version = v;
    const struct plan_hazard *h[PLAN_HAZARDS_MAX];
    int k = plan_ds_hazards(&z, h, PLAN_HAZARDS_MAX);
    buf[0] = 0;
    for (int i = 0; i < k; i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? "," : "", h[i]->id);
    return k;
}

START_TEST(version_ranges_at_their_edges)
{
    char b[256];
    ids((struct rl_version){0, 14, 99}, 2, PLAN_OFFLOAD_CPU, b, sizeof b);
    ck_assert_str_eq(b, "stage-ignored");
    ids((struct rl_version){0, 15, 0}, 2, PLAN_OFFLOAD_CPU, b, sizeof b);
    ck_assert_str_eq(b, "stage-assert");
    ids((struct rl_version){0, 19, 5}, 0, PLAN_OFFLOAD_NVME, b, sizeof b);
    ck_assert_str_eq(b, "nvme-ratio,stage-assert");
    ids((struct rl_version){0, 12, 3}, 3, PLAN_OFFLOAD_NVME, b, sizeof b);
    ck_assert_str_eq(b, "nvme-ratio");
    /* before 0.12.3 there is no ratio, hence no hazard */
    ck_assert_int_eq(ids((struct rl_version){0, 12, 2}, 2, PLAN_OFFLOAD_NVME, b, sizeof b), 0);
    /* the repairs: device cpu and stage 3, nothing else */
    struct plan_zero z;
    plan_zero_defaults(&z);
    z.stage = 1;
    z.offload = PLAN_OFFLOAD_NVME;
    z.ratio = 0.25;
    z.src_ratio = PLAN_SRC_CONFIG;
    ck_assert_int_eq(plan_ds_hazards_assume_fixed(&z), 2);
    ck_assert_int_eq(z.stage, 3);
    ck_assert_int_eq(z.offload, PLAN_OFFLOAD_CPU);
    ck_assert_int_eq(plan_ds_hazards_assume_fixed(&z), 0);
}
END_TEST

/* The fixed config check --fix-to writes when the text edits cannot be placed: a string with a NUL
 * escape (which the edits' parse refuses and the whole-document path reads) gives the parsed
 * config with the fix, dumped with 4-space indent and a final newline (written out by hand); a
 * text that is not JSON names the config under the field "fix". */
START_TEST(fix_config_falls_back_to_the_whole_document)
{
    static struct plan_hazard_set none;   /* no hazard to repair */
    struct rl_err e = {0};
    char *out = NULL;
    const char *text = "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", "
                       "\"ratio\": 0.3}}, \"s\": \"a\\u0000b\"}";
    ck_assert_msg(plan_fix_config(text, "c.json", &none, 1000, 0.5, &out, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(out, "{\n"
                          "    \"zero_optimization\": {\n"
                          "        \"stage\": 3,\n"
                          "        \"offload_optimizer\": {\n"
                          "            \"device\": \"cpu\",\n"
                          "            \"ratio\": 0.5\n"
                          "        },\n"
                          "        \"sub_group_size\": 1000\n"
                          "    },\n"
                          "    \"s\": \"a\\u0000b\"\n"
                          "}\n");
    free(out);
    ck_assert_int_eq(plan_fix_config("{\"a\": ", "c.json", &none, 1000, 0.5, &out, &e), RL_EINVAL);
    ck_assert_msg(strncmp(e.msg, "fix: c.json cannot be rewritten: line ", 38) == 0, "%s", e.msg);
    ck_assert_ptr_null(out);

    /* --fix-to's file (plan_fix_write): the same fixed text, or, where the file cannot be made (its
     * folder does not exist), an error naming the field fix_to, and no file. */
    ck_assert_msg(plan_fix_write(text, "c.json", &none, 1000, 0.5, tu_path("fixed.json"), &e) == 0, "%s", e.msg);
    char *written = tu_slurp("fixed.json");
    ck_assert_msg(plan_fix_config(text, "c.json", &none, 1000, 0.5, &out, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(written, out);
    free(written);
    free(out);
    const char *bad = tu_path("no-such-folder/fixed.json");
    ck_assert_int_ne(plan_fix_write(text, "c.json", &none, 1000, 0.5, bad, &e), 0);
    ck_assert_msg(strncmp(e.msg, "fix_to: ", 8) == 0, "%s", e.msg);
    ck_assert(!tu_exists(bad));
}
END_TEST

Suite *hazards_suite(void)
{
    Suite *s = suite_create("hazards");
    TCase *t = tcase_create("check");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, one_config_per_hazard, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(t, one_line_per_hazard_and_plan_warns_the_same);
    tcase_add_test(t, fix_to_repairs_device_stage_and_torch_adam);
    tcase_add_test(t, strict_fails_on_the_scheduler_case);
    tcase_add_test(t, full_offload_has_no_hazards);
    tcase_add_test(t, predict_refuses_a_ratio_deepspeed_ignores);
    tcase_add_test(t, version_ranges_at_their_edges);
    tcase_add_test(t, fix_config_falls_back_to_the_whole_document);
    suite_add_tcase(s, t);
    return s;
}
