/* tests/check_ds_edges.c — every DeepSpeed version switch at its edge, in what ratiolab computes
 * from it: for each row of plan/ds_rules.c after the first, the last DeepSpeed release before its
 * `from` and `from` itself (generated from the rows, so a new row gets its edge tests here for
 * free), through the binary: the placement rule (`plan`'s policy and which sub-groups go to the
 * CPU), the ledger (`plan`'s ledger kind and its CPU-Adam tile buffer), the hazard table (`plan`'s
 * hazards for a stage-2 config with a ratio) and the simulator (`predict`'s deepspeed step with the
 * placement held fixed, which must change at an edge exactly when a flag the step follows
 * changes). A switch moved to a
 * neighbouring release shows in the row a release gets: tests/check_ds_rules.c pins each row's
 * `from` to DeepSpeed's history; here each consumer must follow the row at both sides. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ds_rules.h"
#include "tests/util.h"

/* DeepSpeed's release tags from 0.12.0 on (`git tag` of deepspeedai/DeepSpeed, v0.12.0 .. v0.19.5):
 * the last release before a switch is the greatest of these below it. */
static const struct rl_version releases[] = {
    {0, 12, 0}, {0, 12, 1}, {0, 12, 2}, {0, 12, 3}, {0, 12, 4}, {0, 12, 5}, {0, 12, 6},
    {0, 13, 0}, {0, 13, 1}, {0, 13, 2}, {0, 13, 3}, {0, 13, 4}, {0, 13, 5},
    {0, 14, 0}, {0, 14, 1}, {0, 14, 2}, {0, 14, 3}, {0, 14, 4}, {0, 14, 5},
    {0, 15, 0}, {0, 15, 1}, {0, 15, 2}, {0, 15, 3}, {0, 15, 4},
    {0, 16, 0}, {0, 16, 1}, {0, 16, 2}, {0, 16, 3}, {0, 16, 4}, {0, 16, 5}, {0, 16, 6}, {0, 16, 7},
    {0, 16, 8}, {0, 16, 9},
    {0, 17, 0}, {0, 17, 1}, {0, 17, 2}, {0, 17, 3}, {0, 17, 4}, {0, 17, 5}, {0, 17, 6},
    {0, 18, 0}, {0, 18, 1}, {0, 18, 2}, {0, 18, 3}, {0, 18, 4}, {0, 18, 5}, {0, 18, 6}, {0, 18, 7},
    {0, 18, 8}, {0, 18, 9},
    {0, 19, 0}, {0, 19, 1}, {0, 19, 2}, {0, 19, 3}, {0, 19, 4}, {0, 19, 5},
};
enum { N_RELEASES = sizeof releases / sizeof releases[0] };

/* The last release before v (v must be above the first listed). */
static struct rl_version last_before(struct rl_version v)
{
    int k = -1;
    for (int i = 0; i < N_RELEASES; i++)
        if (rl_version_cmp(releases[i], v) < 0)
            k = i;
    ck_assert_int_ge(k, 0);
    return releases[k];
}

/* Every row starts at a release DeepSpeed made (a typo in a row would test nothing real). */
START_TEST(every_switch_is_a_release)
{
    for (int i = 0; i < plan_ds_rules_count; i++) {
        bool found = false;
        for (int j = 0; j < N_RELEASES; j++)
            found |= rl_version_cmp(releases[j], plan_ds_rules_table[i].from) == 0;
        const struct rl_version f = plan_ds_rules_table[i].from;
        ck_assert_msg(found, "row %d starts at %d.%d.%d, not a DeepSpeed release", i, f.major, f.minor, f.patch);
    }
}
END_TEST

/* A stage-2 config with a ratio and 5 sub-groups of 1e8 elements (gpt-2.7b, TP 8), so that the
 * hazard table has a stage entry to match and the placement has sub-groups to place. */
static const char *const stage2_config =
    "{\"train_micro_batch_size_per_gpu\": 1, \"fp16\": {\"enabled\": true}, \"zero_optimization\": "
    "{\"stage\": 2, \"sub_group_size\": 1e8, \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true, "
    "\"ratio\": 0.3}}}";

/* What the binary makes of release v. */
struct at_release {
    char policy[32];          /* plan: placement rule */
    char ledger[32];          /* plan: ledger kind */
    bool tiles;               /* plan: a cpu_adam_tiles buffer */
    int cpu_first, cpu_last;  /* plan: the first and last CPU sub-group (-1 none) */
    int n_subgroups;          /* plan: sub-groups */
    bool stage_assert;        /* plan: hazard stage-assert */
    bool stage_ignored;       /* plan: hazard stage-ignored */
    int64_t step_ns;          /* predict --schedule deepspeed --policy deepspeed-0.18: the step */
};

static void read_release(struct rl_version v, struct at_release *a)
{
    memset(a, 0, sizeof *a);
    tu_write("stage2.json", stage2_config);
    json_t *p = tu_ratiolab_json("plan --json --ds-config stage2.json --deepspeed-version %d.%d.%d", v.major,
                                 v.minor, v.patch);
    snprintf(a->policy, sizeof a->policy, "%s", json_string_value(json_object_get(p, "policy")));
    snprintf(a->ledger, sizeof a->ledger, "%s", json_string_value(json_object_get(p, "ledger")));
    json_t *x;
    size_t i;
    json_array_foreach(json_object_get(p, "buffers"), i, x)
        a->tiles |= strcmp(json_string_value(json_object_get(x, "name")), "cpu_adam_tiles") == 0;
    a->cpu_first = a->cpu_last = -1;
    json_array_foreach(json_object_get(p, "subgroups"), i, x)
        if (json_integer_value(json_object_get(x, "cpu_numel")) > 0) {
            a->cpu_first = a->cpu_first < 0 ? (int)i : a->cpu_first;
            a->cpu_last = (int)i;
        }
    a->n_subgroups = (int)json_array_size(json_object_get(p, "subgroups"));
    json_array_foreach(json_object_get(p, "hazards"), i, x) {
        a->stage_assert |= strcmp(json_string_value(json_object_get(x, "id")), "stage-assert") == 0;
        a->stage_ignored |= strcmp(json_string_value(json_object_get(x, "id")), "stage-ignored") == 0;
    }
    json_decref(p);
    /* The placement held at deepspeed-0.18's, with a small CPU share (two sub-groups of 1e6 of 337,
     * after the GPU ones): the GPU's queued Adam kernels then outlast the CPU Adam, so that the
     * stream synchronize after it (adam_stream_sync) has something to wait for, and every step
     * flag has something to change. The ranks are bound to their share of the cores
     * (--cpu-binding per-rank): unbound, the oversubscribed OpenMP teams' scheduler slices make
     * the CPU Adam outlast the GPU's kernels, and the synchronize waits for nothing. */
    json_t *q = tu_ratiolab_json("predict --json --schedule deepspeed --ratio 0.003 --sub-group-size 1e6 "
                                 "--policy deepspeed-0.18 --cpu-binding per-rank --deepspeed-version %d.%d.%d",
                                 v.major, v.minor, v.patch);
    a->step_ns = json_integer_value(json_object_get(json_object_get(q, "prediction"), "step_ns"));
    json_decref(q);
    ck_assert_int_gt(a->step_ns, 0);
}

/* What row r says the binary must make of a release it holds for. */
static void check_follows(const struct at_release *a, const struct plan_ds_rules *r, const char *which)
{
    ck_assert_msg(strcmp(a->policy, plan_policy_name(r->policy)) == 0, "%s: policy %s, the row says %s", which,
                  a->policy, plan_policy_name(r->policy));
    ck_assert_msg(strcmp(a->ledger, plan_ledger_name(r->ledger)) == 0, "%s: ledger %s, the row says %s", which,
                  a->ledger, plan_ledger_name(r->ledger));
    ck_assert_msg(a->tiles == r->cpu_adam_tiles, "%s: cpu_adam_tiles buffer %d, the row says %d", which, a->tiles,
                  r->cpu_adam_tiles);
    /* Ratio 0.3 of 5 sub-groups: deepspeed-0.12 puts i < floor(0.3 x 5) = 1 on the CPU (sub-group 0),
     * deepspeed-0.18 i >= floor(0.7 x 5) = 3 (sub-groups 3 and 4). */
    ck_assert_int_eq(a->n_subgroups, 5);
    if (r->policy == PLAN_POLICY_DS012)
        ck_assert_msg(a->cpu_first == 0 && a->cpu_last == 0, "%s: CPU sub-groups %d..%d, want 0..0", which,
                      a->cpu_first, a->cpu_last);
    else
        ck_assert_msg(a->cpu_first == 3 && a->cpu_last == 4, "%s: CPU sub-groups %d..%d, want 3..4", which,
                      a->cpu_first, a->cpu_last);
    ck_assert_msg(a->stage_assert == r->ratio_check_asserts && a->stage_ignored == !r->ratio_check_asserts,
                  "%s: hazards stage-assert %d stage-ignored %d, the row says the validator %s", which,
                  a->stage_assert, a->stage_ignored, r->ratio_check_asserts ? "asserts" : "never fires");
}

/* Row i at its edge: the last release before it follows row i - 1, its first release row i; the
 * deepspeed step changes exactly when a flag it follows changes. */
START_TEST(each_switch_at_last_release_before_and_first_at)
{
    const int i = _i + 1;
    ck_assert_int_lt(i, plan_ds_rules_count);
    const struct plan_ds_rules *prev = &plan_ds_rules_table[i - 1], *row = &plan_ds_rules_table[i];
    const struct rl_version v0 = last_before(row->from), v1 = row->from;
    ck_assert_ptr_eq(plan_ds_rules_for(v0), prev);
    ck_assert_ptr_eq(plan_ds_rules_for(v1), row);
    char w0[64], w1[64];
    snprintf(w0, sizeof w0, "%d.%d.%d (last before row %d)", v0.major, v0.minor, v0.patch, i);
    snprintf(w1, sizeof w1, "%d.%d.%d (row %d)", v1.major, v1.minor, v1.patch, i);
    struct at_release a0, a1;
    read_release(v0, &a0);
    read_release(v1, &a1);
    check_follows(&a0, prev, w0);
    check_follows(&a1, row, w1);
    const bool step_flags = prev->norm_sync_per_param != row->norm_sync_per_param ||
                            prev->adam_stream_sync != row->adam_stream_sync || prev->grad_copy != row->grad_copy;
    if (step_flags)
        ck_assert_msg(a0.step_ns != a1.step_ns, "%s and %s: a step flag changes, the step (%lld ns) does not", w0,
                      w1, (long long)a0.step_ns);
    else
        ck_assert_msg(a0.step_ns == a1.step_ns, "%s and %s: no step flag changes, the step does (%lld, %lld ns)",
                      w0, w1, (long long)a0.step_ns, (long long)a1.step_ns);
}
END_TEST

Suite *TU_SUITE(void)
{
    Suite *s = suite_create("ds_edges");
    TCase *t = tcase_create("edges");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, every_switch_is_a_release);
    tcase_add_loop_test(t, each_switch_at_last_release_before_and_first_at, 0, plan_ds_rules_count - 1);
    suite_add_tcase(s, t);
    return s;
}
