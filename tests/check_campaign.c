/* tests/check_campaign.c — the campaign library (campaign/) in process, no run started: its
 * messages name its fields, never a flag (cli/validate_exec.c puts the flags back), its folder is
 * locked from camp_open to camp_close, the executor's layout it puts in the inputs, and
 * camp_validate's order (the folder, the layout, the caller's setup). The runs
 * themselves are held by tests/check_validation.c (validate --ratios, launched and under mpirun). */
#include <check.h>
#include <string.h>

#include "campaign/campaign.h"
#include "plan/inputs.h"
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

Suite *campaign_suite(void)
{
    Suite *s = suite_create("campaign");
    TCase *tc = tcase_create("library");
    tcase_add_test(tc, its_messages_name_fields_not_flags);
    tcase_add_test(tc, the_executors_layout_goes_into_the_inputs);
    tcase_add_test(tc, validate_resolves_the_executors_inputs_after_taking_the_folder);
    suite_add_tcase(s, tc);
    return s;
}
