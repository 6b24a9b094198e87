/* tests/check_tables.c — the tables that spell a thing once: the version's one formatter
 * (common/), the plot kinds' rows (plots/write.c), the backend names (exec/run.c) and the
 * placement policies' rows with their sentence (plan/plan.c). In process, no binary started.
 * Expected texts are written out by hand from the definitions (DeepSpeed's releases in
 * plan/ds_rules.c: 0.12.3 to 0.17.x place the first floor(ratio x N) sub-groups, 0.18.0 on the
 * last N - floor((1 - ratio) x N)). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/rl.h"
#include "exec/backend.h"
#include "exec/exec.h"
#include "plan/plan.h"
#include "plots/plot.h"
#include "tests/util.h"

START_TEST(a_version_is_written_one_way)
{
    char buf[RL_VERSION_STR_MAX];
    ck_assert_str_eq(rl_version_str((struct rl_version){0, 12, 4}, buf, sizeof buf), "0.12.4");
    ck_assert_str_eq(RL_VERSION_S(((struct rl_version){10, 0, 123})), "10.0.123");
    /* the largest version fits the size the header promises */
    ck_assert_str_eq(RL_VERSION_S(((struct rl_version){INT32_MIN, INT32_MIN, INT32_MIN})),
                     "-2147483648.-2147483648.-2147483648");
    /* two in one call are two buffers */
    char two[64];
    snprintf(two, sizeof two, "%s < %s", RL_VERSION_S(((struct rl_version){0, 12, 3})),
             RL_VERSION_S(((struct rl_version){0, 18, 0})));
    ck_assert_str_eq(two, "0.12.3 < 0.18.0");
}
END_TEST

START_TEST(plot_kinds_are_rows)
{
    static const char *const want[] = {"memory", "time", "timeline", "parity", "scaling", "monitor"};
    ck_assert_int_eq(PLOT_KIND_COUNT, 6);
    struct rl_err e = {0};
    for (int k = 0; k < PLOT_KIND_COUNT; k++) {
        ck_assert_str_eq(plot_kind_name((enum plot_kind)k), want[k]);
        enum plot_kind back = PLOT_KIND_COUNT;
        ck_assert_int_eq(plot_kind_parse(want[k], &back, &e), 0);
        ck_assert_int_eq(back, k);
        const char *d = plot_kind_description((enum plot_kind)k);
        ck_assert_msg(d[0] && d[strlen(d) - 1] != '\n', "%s: description '%s'", want[k], d);
        for (const char *l = d; *l;) {   /* no line wider than the header promises */
            size_t n = strcspn(l, "\n");
            ck_assert_msg(n <= 80, "%s: a line of %zu characters", want[k], n);
            l += n + (l[n] == '\n');
        }
    }
    char list[128];
    ck_assert_str_eq(plot_kind_list(list, sizeof list), "memory, time, timeline, parity, scaling, monitor");
    ck_assert_int_eq(plot_kind_parse("histogram", &(enum plot_kind){0}, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "KIND: 'histogram' is not a plot kind; allowed: memory, time, timeline, parity, "
                            "scaling, monitor");
}
END_TEST

START_TEST(backend_names_come_from_one_table)
{
    struct rl_err e = {0};
    enum ex_backend_kind k = EX_BACKEND_AUTO;
    ck_assert_int_eq(ex_backend_parse_named("--backend", "cuda", &k, &e), 0);
    ck_assert_int_eq(k, EX_BACKEND_CUDA);
    ck_assert_int_eq(ex_backend_parse_named("--backend", "cpu", &k, &e), 0);
    ck_assert_int_eq(k, EX_BACKEND_CPU);
    ck_assert_str_eq(ex_backend_name(EX_BACKEND_CPU), "cpu");
    /* a command that runs on the backend it is told refuses auto */
    ck_assert_int_eq(ex_backend_parse_named("--backend", "auto", &k, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "--backend: 'auto' is not allowed; allowed: cpu, cuda");
    ck_assert_int_eq(k, EX_BACKEND_CPU);   /* left as it was */
    ck_assert_int_eq(ex_backend_parse_named("--backend", NULL, &k, &e), RL_EINVAL);
}
END_TEST

/* Device discovery and the per-process memory reading are members of every backend's row: the
 * cpu backend's one emulated device and no driver reading (the device is this process's heap);
 * the cuda backend's, when built, both. */
START_TEST(discovery_and_process_memory_are_backend_members)
{
    const struct ex_backend *cpu = ex_backend_named(ex_backend_name(EX_BACKEND_CPU));
    ck_assert_ptr_nonnull(cpu);
    ck_assert_int_eq(cpu->device_count(), 1);
    ck_assert_ptr_null(cpu->process_bytes);
    for (int i = 0; i < ex_n_backends; i++)
        ck_assert_msg(ex_backends[i]->device_count && ex_backends[i]->probe, "%s", ex_backends[i]->name);
    const struct ex_backend *gpu = ex_backend_named(ex_backend_name(EX_BACKEND_CUDA));
    if (gpu)   /* not called here: a forked test must not start CUDA */
        ck_assert_ptr_nonnull(gpu->process_bytes);
}
END_TEST

START_TEST(each_policy_states_its_rule)
{
    static struct plan p;   /* only policy, requested_ratio and n_subgroups are read */
    char s[512];
    p.requested_ratio = 0.3;
    p.n_subgroups = 10;
    p.policy = PLAN_POLICY_DS012;   /* floor(0.3 x 10) = 3 */
    plan_rule_sentence(&p, s, sizeof s);
    ck_assert_str_eq(s, "DeepSpeed 0.12-0.17 puts sub-group i on the CPU iff i < floor(ratio x N) = floor(0.3 x 10) = 3");
    p.n_subgroups = 2;
    p.policy = PLAN_POLICY_DS018;   /* 1 - 0.3 is 0.69999999999999996 in double; x 2 = 1.4 */
    plan_rule_sentence(&p, s, sizeof s);
    ck_assert_str_eq(s, "DeepSpeed >= 0.18 puts sub-group i on the CPU iff i >= floor((1 - ratio) x N) = "
                        "floor(0.69999999999999996 x 2) = 1");
    p.policy = PLAN_POLICY_EXACT;
    plan_rule_sentence(&p, s, sizeof s);
    char want[128];
    snprintf(want, sizeof want, "the exact policy splits at element granularity (granule %d elements)",
             PLAN_EXACT_GRANULE);
    ck_assert_str_eq(s, want);
    /* names round-trip through the same rows */
    for (int i = 0; i < PLAN_POLICY_COUNT; i++) {
        enum plan_policy q = PLAN_POLICY_COUNT;
        struct rl_err e = {0};
        ck_assert_int_eq(plan_policy_parse(plan_policy_name((enum plan_policy)i), &q, &e), 0);
        ck_assert_int_eq(q, i);
    }
}
END_TEST

Suite *tables_suite(void)
{
    Suite *s = suite_create("tables");
    TCase *tc = tcase_create("one_source");
    tcase_add_test(tc, a_version_is_written_one_way);
    tcase_add_test(tc, plot_kinds_are_rows);
    tcase_add_test(tc, backend_names_come_from_one_table);
    tcase_add_test(tc, discovery_and_process_memory_are_backend_members);
    tcase_add_test(tc, each_policy_states_its_rule);
    suite_add_tcase(s, tc);
    return s;
}
