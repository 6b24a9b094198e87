/* tests/check_probe_bounds.c — the hardening of issue 35 around probes and the verdicts they feed:
 * every probe number bounded where it is read (the JSON path named) and summed with overflow checks;
 * a GPU probe without measurements fails; a stage other than 3 and a rank outside the world are
 * refused; strings from an input printed as data (one line, control characters escaped) in the
 * text reports and report.md; and every rank of a probed run judged together.
 *
 * The probes are the shipped example (tests/deepspeed/example/probe.json, DeepSpeed 0.19.8, one
 * rank, which validate passes) and a 2-rank cell of the recorded oracle
 * (tests/deepspeed/observed/0.19.8-np2.jsonl), each edited with jansson in one field at a time. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rl.h"
#include "tests/util.h"
#include "validation/probe.h"
#include "validation/val.h"


/* The shipped example probe, parsed for editing. */
static json_t *example_probe(void)
{
    json_error_t je;
    json_t *j = json_load_file(tu_src_path("tests/deepspeed/example/probe.json"), 0, &je);
    ck_assert_msg(j, "%s", je.text);
    return j;
}

/* Writes j under name in the scratch folder; returns the path. */
static const char *write_json(const char *name, json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT);
    ck_assert_ptr_nonnull(text);
    const char *p = tu_write(name, text);
    free(text);
    return p;
}

/* validate --probe on f with the example's model and groups (`groups`: "hf" is the run's own). */
static void validate_probe(struct tu_run *r, const char *f, const char *groups, const char *more)
{
    tu_ratiolab(r, "validate --probe '%s' --model '%s' --param-groups %s %s", f,
                tu_src_path("tests/deepspeed/models/gpt2-tiny.json"), groups, more);
}

/* ---- item 4: bounds where each number is read, sums checked ------------------------------------ */

/* The example on a GPU: accelerator "cuda", device memory from torch; its other checks pass. */
static json_t *gpu_example(void)
{
    json_t *j = example_probe();
    json_object_set_new(json_object_get(j, "accelerator"), "name", json_string("cuda"));
    json_object_set_new(json_object_get(j, "memory"), "device_source", json_string("torch.cuda.memory_allocated"));
    return j;
}

START_TEST(probe_huge_step_refused_naming_path)
{
    /* Steps of 6.9e18 ns each: two of them summed pass 2^63 (9.22e18). Before the fix the sum
     * wrapped negative, the median read as "no step recorded" and the verdict was PASS. */
    json_t *j = gpu_example();
    json_t *steps = json_object_get(j, "steps");
    ck_assert_int_ge(json_array_size(steps), 2);
    for (size_t i = 0; i < json_array_size(steps); i++)
        json_object_set_new(json_array_get(steps, i), "wall_ns", json_integer(6900000000000000000LL));
    const char *f = write_json("huge-steps.json", j);
    struct tu_run r;
    validate_probe(&r, f, "hf", "--hw hgx-h200");
    ck_assert_msg(r.status == 2, "exit %d\n%s%s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.err, "steps[0].wall_ns: 6900000000000000000; allowed: an integer 0..86400000000000"),
                  "%s", r.err);
    ck_assert_ptr_null(strstr(r.out, "verdict    PASS"));
    tu_run_free(&r);
    json_decref(j);
}
END_TEST

/* Each bounded field, in-process: just above its bound is refused naming its path; at the bound
 * it is read. */
START_TEST(probe_numbers_bounded_where_read)
{
    static const struct {
        const char *obj;   /* a dotted path to the object, "" for the root; "steps" / "sub" for element 1 / 0 */
        const char *key;   /* the member */
        long long max;     /* its bound, from probe.h */
        const char *named; /* the path the message names */
    } f[] = {
        {"memory", "device_after_init_bytes", 1LL << 50, "memory.device_after_init_bytes"},
        {"memory", "host_rss_bytes", 1LL << 50, "memory.host_rss_bytes"},
        {"", "probe_overhead_ns", 100000000000000000LL, "probe_overhead_ns"},
        {"steps", "wall_ns", 86400000000000LL, "steps[1].wall_ns"},
        {"steps", "device_peak_bytes", 1LL << 50, "steps[1].device_peak_bytes"},
        {"sub", "fp32_bytes", 1LL << 50, "placement.subgroups[0].fp32_bytes"},
        {"sub", "state_bytes", 1LL << 50, "placement.subgroups[0].state_bytes"},
        {"sub", "model_partition_bytes", 1LL << 50, "placement.subgroups[0].model_partition_bytes"},
        {"zero", "sub_group_size", 1LL << 50, "zero.sub_group_size"},
        {"digest", "step", 1LL << 30, "digest.step"},
    };
    for (size_t i = 0; i < RL_COUNT(f); i++)
        for (int over = 0; over <= 1; over++) {
            json_t *j = gpu_example();
            json_t *o = strcmp(f[i].obj, "steps") == 0 ? json_array_get(json_object_get(j, "steps"), 1)
                        : strcmp(f[i].obj, "sub") == 0
                            ? json_array_get(json_object_get(json_object_get(j, "placement"), "subgroups"), 0)
                        : f[i].obj[0] ? json_object_get(j, f[i].obj)
                                      : j;
            ck_assert_ptr_nonnull(o);
            json_object_set_new(o, f[i].key, json_integer(f[i].max + over));
            char *text = json_dumps(j, JSON_COMPACT);
            struct val_probe pr;
            struct rl_err e = {0};
            int rc = val_probe_parse(text, strlen(text), "p.json", &pr, &e);
            if (over) {
                ck_assert_msg(rc == RL_EINVAL, "%s = max + 1 read", f[i].named);
                char want[160];
                snprintf(want, sizeof want, "p.json: %s: %lld; allowed: an integer 0..%lld", f[i].named,
                         f[i].max + 1, f[i].max);
                ck_assert_msg(strstr(e.msg, want), "%s\nwanted: %s", e.msg, want);
            } else {
                ck_assert_msg(rc == 0, "%s = max refused: %s", f[i].named, e.msg);
                val_probe_free(&pr);
            }
            free(text);
            json_decref(j);
        }
}
END_TEST

/* Sub-groups each within the bound whose total passes 2^63: 2^14 sub-groups of 2^50 bytes is 2^64.
 * Before the fix the ledger check summed them in int64 (UBSan: signed overflow). */
START_TEST(probe_subgroup_sum_checked)
{
    json_t *j = gpu_example();
    json_t *subs = json_array();
    for (int i = 0; i < 1 << 14; i++)
        json_array_append_new(subs, json_pack("{s:i,s:i,s:i,s:s,s:I,s:i}", "index", i, "param_group", 0, "numel", 1,
                                              "assigned_device", "cpu", "fp32_bytes", (json_int_t)1 << 50,
                                              "state_bytes", 8));
    json_object_set_new(json_object_get(j, "placement"), "subgroups", subs);
    char *text = json_dumps(j, JSON_COMPACT);
    struct val_probe pr;
    struct rl_err e = {0};
    ck_assert_int_eq(val_probe_parse(text, strlen(text), "p.json", &pr, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "p.json: placement.subgroups[].fp32_bytes: the sum passes 2^63"), "%s", e.msg);
    free(text);
    json_decref(j);
}
END_TEST

/* ---- item 5: a probe without measurements does not pass ---------------------------------------- */

START_TEST(gpu_probe_without_measurements_fails)
{
    /* The example as a GPU run passes every check but device memory and time; with no device
     * memory and no steps those two were "info" and the verdict PASS. */
    json_t *j = gpu_example();
    json_object_set_new(json_object_get(j, "memory"), "device_after_init_bytes", json_null());
    json_object_set_new(j, "steps", json_array());
    const char *f = write_json("gpu-empty.json", j);
    struct tu_run r;
    validate_probe(&r, f, "hf", "--hw hgx-h200");
    ck_assert_msg(r.status == 1, "exit %d\n%s%s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.out, "subgroups      PASS") && strstr(r.out, "placement      PASS") &&
                  strstr(r.out, "memory_ledger  PASS"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "device_memory  FAIL  the probe recorded no device memory"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "step_time      FAIL  no step recorded"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "verdict    FAIL"), "%s", r.out);
    tu_run_free(&r);
    json_decref(j);
}
END_TEST

START_TEST(probe_stage_and_rank_refused)
{
    static const struct {
        const char *what;   /* the edit */
        const char *msg;    /* part of the one-line error */
    } cases[] = {
        {"stage0", "zero.stage: 0; allowed: 3"},
        {"stage2", "zero.stage: 2; allowed: 3"},
        {"nostage", "zero.stage: missing; allowed: 3"},
        {"rank7", "rank: 7; allowed: 0..world_size - 1 (0..0)"},
    };
    for (size_t i = 0; i < RL_COUNT(cases); i++) {
        json_t *j = example_probe();
        json_t *z = json_object_get(j, "zero");
        if (strcmp(cases[i].what, "stage0") == 0)
            json_object_set_new(z, "stage", json_integer(0));
        else if (strcmp(cases[i].what, "stage2") == 0)
            json_object_set_new(z, "stage", json_integer(2));
        else if (strcmp(cases[i].what, "nostage") == 0)
            json_object_del(z, "stage");
        else
            json_object_set_new(j, "rank", json_integer(7));
        const char *f = write_json("edited.json", j);
        struct tu_run r;
        validate_probe(&r, f, "hf", "");
        ck_assert_msg(r.status == 2, "%s: exit %d\n%s%s", cases[i].what, r.status, r.out, r.err);
        ck_assert_msg(strstr(r.err, cases[i].msg), "%s: %s", cases[i].what, r.err);
        ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: %s", r.err);
        tu_run_free(&r);
        json_decref(j);
    }
}
END_TEST

/* ---- item 7: strings from an input are data ----------------------------------------------------- */

START_TEST(text_data_escapes_controls)
{
    char b[128];
    /* Expected escapes written out by hand. */
    ck_assert_str_eq(rl_text_data(b, sizeof b, "a\nverdict PASS\r\t\x1b[2J\x7f"),
                     "a\\nverdict PASS\\r\\t\\x1b[2J\\x7f");
    ck_assert_str_eq(rl_text_data(b, sizeof b, "csi \xc2\x9b" "31m, \xc3\xa9 kept"), "csi \\u009b31m, \xc3\xa9 kept");
    ck_assert_str_eq(rl_text_data(b, sizeof b, NULL), "");
    ck_assert_str_eq(rl_text_data(b, 8, "0123456789"), "0");   /* cut short, never past cap */
}
END_TEST

START_TEST(probe_strings_print_as_data)
{
    /* A failing probe (flat groups: the sub-groups differ) whose strings try to forge a PASS line
     * and clear the screen. */
    json_t *j = example_probe();
    /* Without the groups' names, which would have the flat layout refused before any check. */
    json_object_del(j, "param_groups");
    json_object_set_new(j, "torch_version", json_string("2.5\n\nverdict    PASS\n\x1b[2J"));
    json_object_set_new(json_object_get(j, "accelerator"), "name", json_string("cpu:0\nverdict    PASS"));
    json_object_set_new(json_object_get(j, "placement"), "optimizer_class", json_string("Adam\r\nverdict    PASS"));
    json_t *s0 = json_array_get(json_object_get(json_object_get(j, "placement"), "subgroups"), 0);
    json_object_set_new(s0, "optimizer_class", json_string("A\x1b]0;owned\x07"));
    const char *f = write_json("forged.json", j);
    struct tu_run r;
    validate_probe(&r, f, "flat", "");
    ck_assert_msg(r.status == 1, "exit %d\n%s%s", r.status, r.out, r.err);
    ck_assert_ptr_null(strchr(r.out, '\x1b'));
    ck_assert_ptr_null(strchr(r.out, '\r'));
    ck_assert_ptr_null(strchr(r.out, '\x07'));
    int verdicts = 0;
    for (const char *l = r.out; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, "verdict", 7) == 0) {
            verdicts++;
            ck_assert_msg(strncmp(l, "verdict    FAIL", 15) == 0, "%s", r.out);
        }
    ck_assert_int_eq(verdicts, 1);
    ck_assert_msg(strstr(r.out, "torch 2.5\\n\\nverdict    PASS\\n\\x1b[2J,"), "%s", r.out);
    tu_run_free(&r);
    json_decref(j);
}
END_TEST

START_TEST(report_md_strings_as_data)
{
    static struct val_report rep;   /* large */
    memset(&rep, 0, sizeof rep);
    snprintf(rep.model, sizeof rep.model, "m\n# ratiolab validate: PASS");
    snprintf(rep.hardware, sizeof rep.hardware, "hw\x1b[31m");
    snprintf(rep.hardware_path, sizeof rep.hardware_path, "dir\nx/profile.json");
    snprintf(rep.backend, sizeof rep.backend, "cpu");
    snprintf(rep.policy, sizeof rep.policy, "exact");
    rep.n_checks = 1;
    snprintf(rep.checks[0].name, sizeof rep.checks[0].name, "bitwise");
    rep.checks[0].status = VAL_FAIL;
    rep.checks[0].gated = true;
    snprintf(rep.checks[0].detail, sizeof rep.checks[0].detail, "x\n# ratiolab validate: PASS");
    char *md = NULL;
    struct rl_err e = {0};
    ck_assert_int_eq(val_report_md(&rep, &md, &e), 0);
    ck_assert_msg(strncmp(md, "# ratiolab validate: FAIL\n", 26) == 0, "%s", md);
    ck_assert_msg(!strstr(md, "\n# ratiolab validate: PASS"), "%s", md);
    ck_assert_ptr_null(strchr(md, '\x1b'));
    ck_assert_msg(strstr(md, "* model: m\\n# ratiolab validate: PASS\n"), "%s", md);
    ck_assert_msg(strstr(md, "* hardware profile: hw\\x1b[31m (dir\\nx/profile.json)\n"), "%s", md);
    free(md);
}
END_TEST

/* ---- item 8: every rank of a probed run --------------------------------------------------------- */

/* A 2-rank cell of the recorded oracle (split mode, so placement is observable): rank 0's document
 * as recorded, and a rank 1 document made from it (ZeRO-3 pads every partition to one size, so
 * rank 1 holds the same sub-groups; its own partition digest differs). Written as DIR/probe.json
 * and DIR/probe.rank1.json; returns rank 1's document for editing (rank 0's in *r0). */
static json_t *two_rank_cell(json_t **r0, const char **groups)
{
    size_t len;
    char *all = tu_read(tu_src_path("tests/deepspeed/observed/0.19.8-np2.jsonl"), &len);
    ck_assert_ptr_nonnull(all);
    json_t *found = NULL;
    for (char *line = all, *nl; line && *line && !found; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        json_t *j = json_loads(line, 0, NULL);
        json_t *o = json_object_get(j, "oracle");
        const char *mode = json_string_value(json_object_get(o, "mode"));
        const char *g = json_string_value(json_object_get(o, "param_groups"));
        if (mode && strcmp(mode, "split") == 0 && g && strcmp(g, "hf") == 0 &&
            json_real_value(json_object_get(o, "ratio")) == 0.5)
            found = j;
        else
            json_decref(j);
    }
    free(all);
    ck_assert_msg(found, "no split-mode hf cell at ratio 0.5 in 0.19.8-np2.jsonl");
    ck_assert_int_eq(json_integer_value(json_object_get(found, "world_size")), 2);
    *groups = "hf";
    *r0 = found;
    json_t *r1 = json_deep_copy(found);
    json_object_set_new(r1, "rank", json_integer(1));
    json_object_set_new(json_object_get(r1, "digest"), "sha256", json_string("1111"));
    return r1;
}

static const char *cell_dir(void)
{
    const char *d = tu_path("cell");
    struct tu_run r;
    tu_sh(&r, "mkdir -p '%s' && rm -f '%s'/probe*.json", d, d);
    tu_run_free(&r);
    return d;
}

static void write_cell(json_t *r0, json_t *r1)
{
    char p[1100];
    const char *d = cell_dir();
    snprintf(p, sizeof p, "%s/probe.json", d);
    ck_assert_int_eq(json_dump_file(r0, p, JSON_COMPACT), 0);
    if (r1) {
        snprintf(p, sizeof p, "%s/probe.rank1.json", d);
        ck_assert_int_eq(json_dump_file(r1, p, JSON_COMPACT), 0);
    }
}

static void validate_cell(struct tu_run *r, const char *file, const char *groups)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", tu_path("cell"), file);
    validate_probe(r, p, groups, "");
}

START_TEST(probe_rank_path_named_as_the_probe_writes)
{
    /* probe/ratiolab_probe.py _rank_path: "%s.rank%d%s" % (splitext(out)), ".json" when none. */
    char b[64];
    struct rl_err e = {0};
    ck_assert_int_eq(val_probe_rank_path("run/probe.json", 1, b, sizeof b, &e), 0);
    ck_assert_str_eq(b, "run/probe.rank1.json");
    ck_assert_int_eq(val_probe_rank_path("a.b/probe", 12, b, sizeof b, &e), 0);
    ck_assert_str_eq(b, "a.b/probe.rank12.json");
    ck_assert_int_eq(val_probe_rank_path("x.y.json", 3, b, sizeof b, &e), 0);
    ck_assert_str_eq(b, "x.y.rank3.json");
    ck_assert_int_eq(val_probe_rank_path("probe.json", 1, b, 8, &e), RL_EINVAL);
}
END_TEST

START_TEST(probe_two_ranks_judged_together)
{
    json_t *r0;
    const char *groups;
    json_t *r1 = two_rank_cell(&r0, &groups);
    struct tu_run r;

    /* Both ranks: each judged, both listed, the gathered digest equal. */
    write_cell(r0, r1);
    validate_cell(&r, "probe.json", groups);
    ck_assert_msg(r.status == 0, "exit %d\n%s%s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.out, "ranks      2 files of one run (world 2)") && strstr(r.out, "probe.rank1.json  PASS") &&
                  strstr(r.out, "gathered       PASS  the gathered fp32 digest is the same on the 2 of 2 ranks"),
                  "%s", r.out);
    tu_run_free(&r);

    /* Rank 1's file missing: refused, naming it. */
    write_cell(r0, NULL);
    validate_cell(&r, "probe.json", groups);
    ck_assert_msg(r.status == 2 && strstr(r.err, "rank 1 of the run's 2: its file") &&
                  strstr(r.err, "probe.rank1.json is missing"), "exit %d\n%s", r.status, r.err);
    tu_run_free(&r);

    /* Rank 1's file given: rank 0's is asked for. */
    write_cell(r0, r1);
    validate_cell(&r, "probe.rank1.json", groups);
    ck_assert_msg(r.status == 2 && strstr(r.err, "rank: 1; allowed: 0 (give rank 0's file"), "exit %d\n%s", r.status,
                  r.err);
    tu_run_free(&r);

    /* A rank file of another run: refused naming the field and both values. */
    static const struct {
        const char *obj, *key; /* the member changed in rank 1's file ("" = the root) */
        long long v;           /* its new value */
        const char *msg;       /* part of the error */
    } other[] = {
        {"", "world_size", 4, "world_size: 4, rank 0's file says 2"},
        {"zero", "sub_group_size", 123, "zero.sub_group_size: 123, rank 0's file says"},
        {"", "rank", 0, "rank: 0; allowed: 1"},
        {"digest", "step", 2, "digest.step: 2, rank 0's file says 3"},
    };
    for (size_t i = 0; i < RL_COUNT(other); i++) {
        json_t *x = json_deep_copy(r1);
        json_object_set_new(other[i].obj[0] ? json_object_get(x, other[i].obj) : x, other[i].key,
                            json_integer(other[i].v));
        write_cell(r0, x);
        validate_cell(&r, "probe.json", groups);
        ck_assert_msg(r.status == 2 && strstr(r.err, "probe.rank1.json: ") && strstr(r.err, other[i].msg),
                      "%s: exit %d\n%s", other[i].key, r.status, r.err);
        tu_run_free(&r);
        json_decref(x);
    }
    json_t *x = json_deep_copy(r1);
    json_object_set_new(x, "deepspeed_version", json_string("0.19.7"));
    write_cell(r0, x);
    validate_cell(&r, "probe.json", groups);
    ck_assert_msg(r.status == 2 && strstr(r.err, "deepspeed_version: '0.19.7', rank 0's file says '0.19.8'"), "%s",
                  r.err);
    tu_run_free(&r);
    json_decref(x);

    /* Rank 1 judged on its own: a sub-group it kept on the device that the plan offloads fails
     * its placement, and the verdict. */
    x = json_deep_copy(r1);
    json_t *subs = json_object_get(json_object_get(x, "placement"), "subgroups");
    size_t moved = json_array_size(subs);
    for (size_t i = 0; i < json_array_size(subs); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(subs, i), "assigned_device")), "cpu") == 0)
            moved = i;
    ck_assert_uint_lt(moved, json_array_size(subs));
    json_object_set_new(json_array_get(subs, moved), "assigned_device", json_string("cpu:0"));
    write_cell(r0, x);
    validate_cell(&r, "probe.json", groups);
    ck_assert_msg(r.status == 1 && strstr(r.out, "probe.rank1.json  FAIL") && strstr(r.out, "    placement      FAIL"),
                  "exit %d\n%s%s", r.status, r.out, r.err);
    tu_run_free(&r);
    json_decref(x);

    /* The gathered digest disagrees: the ranks did not hold one model. */
    x = json_deep_copy(r1);
    json_object_set_new(json_object_get(x, "oracle"), "fp32_full_sha256", json_string("00"));
    write_cell(r0, x);
    validate_cell(&r, "probe.json", groups);
    ck_assert_msg(r.status == 1 && strstr(r.out, "gathered       FAIL  the gathered fp32 digest of rank 1 differs"),
                  "exit %d\n%s%s", r.status, r.out, r.err);
    tu_run_free(&r);
    json_decref(x);
    json_decref(r0);
    json_decref(r1);
}
END_TEST

Suite *probe_bounds_suite(void)
{
    Suite *s = suite_create("probe_bounds");
    TCase *tc = tcase_create("probe_numbers");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, probe_huge_step_refused_naming_path);
    tcase_add_test(tc, probe_numbers_bounded_where_read);
    tcase_add_test(tc, probe_subgroup_sum_checked);
    tcase_add_test(tc, gpu_probe_without_measurements_fails);
    tcase_add_test(tc, probe_stage_and_rank_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("strings_as_data");
    tcase_add_test(tc, text_data_escapes_controls);
    tcase_add_test(tc, probe_strings_print_as_data);
    tcase_add_test(tc, report_md_strings_as_data);
    suite_add_tcase(s, tc);
    tc = tcase_create("probe_ranks");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, probe_rank_path_named_as_the_probe_writes);
    tcase_add_test(tc, probe_two_ranks_judged_together);
    suite_add_tcase(s, tc);
    return s;
}
