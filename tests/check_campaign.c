/* tests/check_campaign.c — the campaign library (campaign/) in process, no run started: its
 * messages name its fields, never a flag (cli/validate_exec.c puts the flags back), its folder is
 * locked from camp_open to camp_close, the executor's layout it puts in the inputs, and
 * camp_validate's order (the folder, the layout, the caller's setup). The runs
 * themselves are held by tests/check_validation.c (validate --ratios, launched and under mpirun). */
#include <check.h>
#include <string.h>

#include <unistd.h>

#include "campaign/calib_out.h"
#include "campaign/campaign.h"
#include "plan/inputs.h"
#include "sim/hw.h"
#include "tests/util.h"

static int no_load(void *ctx, const char *name_or_path, const struct plan_setup *c, struct hw_profile *hw,
                   struct rl_err *e)
{
    (void)ctx;
    (void)c;
    (void)hw;
    return rl_errf(e, RL_EINTERNAL, "no profile is loaded here (%s)", name_or_path);
}

static const struct camp_hooks hooks = {.load_hw = no_load};

/* A folder that cannot be made (exit 2) and one another campaign holds (exit 3): the error is the
 * field's ("out_dir: ..."), and no flag is in it. */
START_TEST(its_messages_name_fields_not_flags)
{
    struct camp_opts o;
    camp_opts_init(&o);
    struct rl_err e = {0};
    struct camp *k = NULL;
    o.out_dir = tu_path("no-such-folder/v");
    ck_assert_int_eq(rl_exit_code(camp_open(&k, &o, &hooks, &e)), 2);
    ck_assert_msg(strncmp(e.msg, "out_dir: ", 9) == 0 && !strstr(e.msg, "--"), "%s", e.msg);
    camp_close(k);

    o.out_dir = tu_path("camp");
    struct camp *held = NULL, *second = NULL;
    memset(&e, 0, sizeof e);
    ck_assert_int_eq(camp_open(&held, &o, &hooks, &e), 0);
    ck_assert_int_eq(rl_exit_code(camp_open(&second, &o, &hooks, &e)), 3);   /* the lock is held */
    ck_assert_msg(strncmp(e.msg, "out_dir: ", 9) == 0 && !strstr(e.msg, "--"), "%s", e.msg);
    camp_close(second);
    camp_close(held);   /* releases it */
    memset(&e, 0, sizeof e);
    ck_assert_msg(camp_open(&k, &o, &hooks, &e) == 0, "%s", e.msg);
    camp_close(k);
}
END_TEST

/* The executor's layout: the campaign's ranks data-parallel on one node, TP 1 and the exact policy
 * unless the inputs say otherwise. */
START_TEST(the_executors_layout_goes_into_the_inputs)
{
    struct camp_opts o;
    camp_opts_init(&o);
    o.out_dir = tu_path("camp-layout");
    o.ranks = 3;
    struct rl_err e = {0};
    struct camp *k = NULL;
    ck_assert_msg(camp_open(&k, &o, &hooks, &e) == 0, "%s", e.msg);
    struct plan_inputs s;
    plan_inputs_init(&s);
    camp_exec_inputs(k, &s);
    ck_assert_int_eq(s.layout.dp, 3);
    ck_assert_int_eq(s.layout.tp, 1);
    ck_assert_int_eq(s.layout.nodes, 1);
    ck_assert_int_eq(s.policy, PLAN_POLICY_EXACT);
    plan_inputs_init(&s);
    s.layout.tp = 2;
    s.layout.world = 6;   /* the world given: dp follows from it, not from the ranks */
    s.policy = PLAN_POLICY_DS012;
    camp_exec_inputs(k, &s);
    ck_assert_int_eq(s.layout.tp, 2);
    ck_assert_int_le(s.layout.dp, 0);
    ck_assert_int_eq(s.policy, PLAN_POLICY_DS012);
    camp_close(k);
}
END_TEST

/* What the resolve hook saw of the inputs, and how often it ran. */
struct seen {
    int calls;                     /* resolve calls */
    int dp;                        /* the data-parallel degree of the inputs it was handed */
    enum plan_policy policy;       /* their policy */
};

static int resolve_refuses(void *ctx, const struct plan_inputs *s, struct plan_setup *c, struct rl_err *e)
{
    struct seen *w = ctx;
    (void)c;
    w->calls++;
    w->dp = s->layout.dp;
    w->policy = s->policy;
    return rl_errf(e, RL_EINVAL, "--model: made up: the caller's own words");
}

/* camp_validate runs the phases in order: the folder taken first (a folder that cannot be made
 * stops it before the setup is resolved), then the setup resolved from inputs that already hold
 * the executor's layout, whose error comes back as the hook gave it, the folder held until
 * camp_close. */
START_TEST(validate_resolves_the_executors_inputs_after_taking_the_folder)
{
    struct camp_opts o;
    camp_opts_init(&o);
    o.ranks = 2;
    struct seen w = {0};
    struct camp_hooks h = hooks;
    h.resolve = resolve_refuses;
    h.ctx = &w;
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct plan_setup c;
    memset(&c, 0, sizeof c);
    struct sim_train t;
    memset(&t, 0, sizeof t);
    struct rl_err e = {0};
    struct camp *k = NULL;
    o.out_dir = tu_path("no-such-folder/v");
    ck_assert_int_eq(rl_exit_code(camp_validate(&k, &o, &h, &s, &c, &t, NULL, 0, &e)), 2);
    ck_assert_msg(strncmp(e.msg, "out_dir: ", 9) == 0, "%s", e.msg);
    ck_assert_int_eq(w.calls, 0);
    camp_close(k);

    o.out_dir = tu_path("camp-validate");
    memset(&e, 0, sizeof e);
    k = NULL;
    ck_assert_int_eq(camp_validate(&k, &o, &h, &s, &c, &t, NULL, 0, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "--model: made up: the caller's own words");
    ck_assert_int_eq(w.calls, 1);
    ck_assert_int_eq(w.dp, 2);   /* camp_exec_inputs ran before: the campaign's ranks */
    ck_assert_int_eq(w.policy, PLAN_POLICY_EXACT);
    struct camp *second = NULL;
    ck_assert_int_eq(rl_exit_code(camp_open(&second, &o, &hooks, &e)), 3);   /* still held */
    camp_close(second);
    camp_close(k);
}
END_TEST

/* calibrate --host-baseline-from in process (campaign/calib_out.c): two ranks of a run without
 * optimizer offload (the ledger puts no host tensors on a rank, so the baseline is the peak
 * itself); rank 0's one process peaks at 3 GiB, rank 1's two at 1 + 1.5 GiB at one sample: the
 * baseline is 3 GiB from rank 0, the spread 2.5-3 GiB, and the profile written loads with it. Each
 * refused input names its field, no flag, and writes nothing. */
START_TEST(host_baseline_from_a_monitor_csv_in_process)
{
    const int64_t g = INT64_C(1) << 30;
    char csv[2048];
    snprintf(csv, sizeof csv, "t_ns,time_utc,pid,ppid,comm,rank,rss_bytes,anon_bytes,file_bytes,shmem_bytes,hwm_bytes,"
             "locked_bytes,pinned_bytes,swap_bytes,gpu_bytes,cpu_percent,threads,system_used_bytes,status\n"
             "0,2026-12-01T15:00:00.000Z,11,10,python,0,%lld,1,1,1,%lld,0,0,0,,1.0,9,100,\n"
             "0,2026-12-01T15:00:00.000Z,12,10,python,1,%lld,1,1,1,%lld,0,0,0,,1.0,9,100,\n"
             "0,2026-12-01T15:00:00.000Z,13,12,pt_data_worker,1,%lld,1,1,1,%lld,0,0,0,,1.0,9,100,\n",
             (long long)(3 * g), (long long)(3 * g), (long long)g, (long long)g, (long long)(g + g / 2),
             (long long)(g + g / 2));
    const char *run = tu_write("bl-run.csv", csv);
    struct plan_inputs in;
    plan_inputs_init(&in);
    in.model = "gpt2";
    in.catalog = tu_catalog();
    in.ds_config = tu_write("bl-ds.json", "{\"zero_optimization\": {\"stage\": 3}, \"bf16\": {\"enabled\": true}}");
    in.layout.world = 2;
    struct plan_setup c;
    struct rl_err e = {0};
    ck_assert_msg(plan_inputs_resolve(&in, &c, &e) == 0, "%s", e.msg);
    const char *out = tu_path("bl-profile.json");
    remove(out);
    struct camp_baseline_request q = {.csv = run, .setup = &c, .hw = "dgx1-v100", .out = out};
    struct camp_baseline r;
    ck_assert_msg(camp_host_baseline(&q, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.tensor_bytes, 0);
    ck_assert_int_eq(r.b.bytes_per_rank, 3 * g);
    ck_assert_int_eq(r.b.min_bytes_per_rank, g + g + g / 2);
    ck_assert_int_eq(r.b.rank, 0);
    ck_assert_int_eq(r.b.n_ranks, 2);
    ck_assert_str_eq(r.out, out);
    ck_assert_str_eq(r.hw_name, "dgx1-v100");
    struct hw_profile base, written;
    ck_assert_msg(sim_hw_load(&base, tu_catalog(), "dgx1-v100", &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.hw_baseline_bytes, base.host_baseline_bytes);
    ck_assert_msg(sim_hw_load(&written, tu_catalog(), out, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(written.host_baseline_bytes, 3 * g);
    ck_assert_str_eq(written.name, "dgx1-v100-baseline");
    ck_assert_int_eq(written.gpus, base.gpus);

    const char *bad_csv = tu_write("bl-bad.csv", "t_ns,pid,comm\n0,1,python\n");
    struct { const char *hw, *name, *out, *csv, *field; } bad[] = {
        {"no-such-profile", NULL, tu_path("bl-x.json"), run, "hw: "},
        {"dgx1-v100", "a\tb", tu_path("bl-x.json"), run, "name: "},
        {"dgx1-v100", NULL, tu_tmpdir(), run, "output "},
        {"dgx1-v100", NULL, tu_path("bl-x.json"), bad_csv, "monitor_csv "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        remove(tu_path("bl-x.json"));
        struct camp_baseline_request b = {.csv = bad[i].csv, .setup = &c, .hw = bad[i].hw, .name = bad[i].name,
                                          .out = bad[i].out};
        memset(&e, 0, sizeof e);
        ck_assert_int_eq(rl_exit_code(camp_host_baseline(&b, &r, &e)), 2);
        const char *quoted = strstr(e.msg, "ratiolab monitor --csv");   /* another command's format, not a flag */
        const char *flag = strstr(e.msg, "--");
        ck_assert_msg(strncmp(e.msg, bad[i].field, strlen(bad[i].field)) == 0 && (!flag || flag == quoted + 17),
                      "case %zu: %s", i, e.msg);
        ck_assert_msg(access(tu_path("bl-x.json"), F_OK) != 0, "case %zu: a profile was written", i);
    }
    plan_setup_free(&c);
}
END_TEST

Suite *campaign_suite(void)
{
    Suite *s = suite_create("campaign");
    TCase *tc = tcase_create("library");
    tcase_add_test(tc, its_messages_name_fields_not_flags);
    tcase_add_test(tc, the_executors_layout_goes_into_the_inputs);
    tcase_add_test(tc, validate_resolves_the_executors_inputs_after_taking_the_folder);
    tcase_add_test(tc, host_baseline_from_a_monitor_csv_in_process);
    suite_add_tcase(s, tc);
    return s;
}
