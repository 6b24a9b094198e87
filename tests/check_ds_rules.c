/* tests/check_ds_rules.c — the table of DeepSpeed releases (plan/ds_rules.c): its shape (sorted,
 * every row a change with its PR and commit), the row a release gets at every edge, the facts as
 * read in DeepSpeed's git history (`git tag --contains <commit>`, not ratiolab's output), the
 * version texts made from it, and the help and messages generated from it. */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ds_rules.h"
#include "tests/util.h"

#define V(a, b, c) ((struct rl_version){a, b, c})

/* Do two rows describe the same behaviour (every column but `from` and `change`)? */
static bool same_behaviour(const struct plan_ds_rules *a, const struct plan_ds_rules *b)
{
    return a->policy == b->policy && a->ledger == b->ledger && a->cpu_adam_tiles == b->cpu_adam_tiles &&
           a->norm_sync_per_param == b->norm_sync_per_param && a->adam_stream_sync == b->adam_stream_sync &&
           a->grad_copy == b->grad_copy && a->ratio_check_asserts == b->ratio_check_asserts &&
           a->logs_stages == b->logs_stages && a->offload_pin_default == b->offload_pin_default;
}

/* "(#NNNN, abcdef1...)" (or "(#NNNN, abcdef1, ...)"): the change names a DeepSpeed PR and a commit of at least 7 hex digits. */
static bool cites_pr_and_commit(const char *change)
{
    const char *p = strstr(change, "(#");
    if (!p)
        return false;
    p += 2;
    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    if (strncmp(p, ", ", 2) != 0)
        return false;
    p += 2;
    int hex = 0;
    while (isxdigit((unsigned char)p[hex]))
        hex++;
    return hex >= 7 && (p[hex] == ')' || p[hex] == ',');
}

START_TEST(rows_are_sorted_and_each_is_a_cited_change)
{
    ck_assert_int_ge(plan_ds_rules_count, 2);
    for (int i = 0; i < plan_ds_rules_count; i++) {
        const struct plan_ds_rules *r = &plan_ds_rules_table[i];
        ck_assert_msg(cites_pr_and_commit(r->change), "row %d (%d.%d.%d): '%s' names no (#PR, commit)", i,
                      r->from.major, r->from.minor, r->from.patch, r->change);
        ck_assert_msg(r->policy == PLAN_POLICY_DS012 || r->policy == PLAN_POLICY_DS018, "row %d: policy", i);
        ck_assert_msg(r->ledger == PLAN_LEDGER_DS012 || r->ledger == PLAN_LEDGER_DS013, "row %d: ledger", i);
        if (i == 0)
            continue;
        const struct plan_ds_rules *q = &plan_ds_rules_table[i - 1];
        ck_assert_msg(rl_version_cmp(q->from, r->from) < 0, "row %d is not after row %d", i, i - 1);
        ck_assert_msg(!same_behaviour(q, r), "row %d (%d.%d.%d) changes nothing", i, r->from.major, r->from.minor,
                      r->from.patch);
    }
}
END_TEST

/* The release just before v in the table's terms: the previous patch, or x.(y-1).99. */
static struct rl_version before(struct rl_version v)
{
    if (v.patch > 0)
        return V(v.major, v.minor, v.patch - 1);
    return V(v.major, v.minor - 1, 99);
}

START_TEST(each_release_gets_its_row_at_every_edge)
{
    for (int i = 0; i < plan_ds_rules_count; i++) {
        const struct plan_ds_rules *r = &plan_ds_rules_table[i];
        ck_assert_ptr_eq(plan_ds_rules_for(r->from), r);
        ck_assert_ptr_eq(plan_ds_rules_for(V(r->from.major, r->from.minor, r->from.patch + 1)),
                         i + 1 < plan_ds_rules_count &&
                                 rl_version_cmp(V(r->from.major, r->from.minor, r->from.patch + 1),
                                                plan_ds_rules_table[i + 1].from) >= 0
                             ? &plan_ds_rules_table[i + 1]
                             : r);
        if (i > 0)
            ck_assert_ptr_eq(plan_ds_rules_for(before(r->from)), &plan_ds_rules_table[i - 1]);
    }
    /* newer than the last row: the last row; older than the first: the first, refused by the check */
    ck_assert_ptr_eq(plan_ds_rules_for(V(9, 0, 0)), &plan_ds_rules_table[plan_ds_rules_count - 1]);
    ck_assert_ptr_eq(plan_ds_rules_for(V(0, 11, 0)), &plan_ds_rules_table[0]);
    struct rl_err e = {0};
    ck_assert_int_eq(plan_ds_version_check(V(0, 12, 3), &e), 0);
    ck_assert_int_eq(plan_ds_version_check(V(0, 12, 2), &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "deepspeed_version: 0.12.2 has no offload_optimizer.ratio (partial offload arrived in "
                            "0.12.3); allowed: 0.12.3 or later");
}
END_TEST

/* The facts as read in DeepSpeed's history, at the last release before and the first with each
 * change: the oldest tag containing the commit (`git tag --contains`). */
START_TEST(facts_read_in_deepspeed_history)
{
    /* b1cb0dfc4 (#4636): partial offload in 0.12.3 */
    ck_assert_int_eq(plan_ds_rules_table[0].from.minor, 12);
    ck_assert_int_eq(plan_ds_rules_table[0].from.patch, 3);
    /* ea0d81143 (#4436), 0.13.0: one norm sync per sub-group */
    ck_assert(plan_ds_rules_for(V(0, 12, 6))->norm_sync_per_param);
    ck_assert(!plan_ds_rules_for(V(0, 13, 0))->norm_sync_per_param);
    /* 18179807f (#5104), 0.13.2: no zero-gradient step at init (0.13.0 still calls _optimizer_step(i)
     * in initialize_optimizer_states) */
    ck_assert_int_eq(plan_ds_rules_for(V(0, 13, 1))->ledger, PLAN_LEDGER_DS012);
    ck_assert_int_eq(plan_ds_rules_for(V(0, 13, 2))->ledger, PLAN_LEDGER_DS013);
    /* 69af36116 (#5409), 0.14.3: no CPU-Adam tiles, no SynchronizeStreams */
    ck_assert(plan_ds_rules_for(V(0, 14, 2))->cpu_adam_tiles && plan_ds_rules_for(V(0, 14, 2))->adam_stream_sync);
    ck_assert(!plan_ds_rules_for(V(0, 14, 3))->cpu_adam_tiles && !plan_ds_rules_for(V(0, 14, 3))->adam_stream_sync);
    /* 0a4457cc4 (#5167), 0.15.0: the pydantic v2 model_validator asserts */
    ck_assert(!plan_ds_rules_for(V(0, 14, 5))->ratio_check_asserts);
    ck_assert(plan_ds_rules_for(V(0, 15, 0))->ratio_check_asserts);
    /* ff1c54351 (#6670) 0.15.4, c17dc33c0 (#6962) 0.16.3, 7dfa67aea (#8207) 0.19.5: the CPU grad copy */
    ck_assert_int_eq(plan_ds_rules_for(V(0, 15, 3))->grad_copy, PLAN_DS_GRAD_HOST_CAST);
    ck_assert_int_eq(plan_ds_rules_for(V(0, 15, 4))->grad_copy, PLAN_DS_GRAD_HOST_CAST_SYNCED);
    ck_assert_int_eq(plan_ds_rules_for(V(0, 16, 2))->grad_copy, PLAN_DS_GRAD_HOST_CAST_SYNCED);
    ck_assert_int_eq(plan_ds_rules_for(V(0, 16, 3))->grad_copy, PLAN_DS_GRAD_GPU_UPCAST);
    ck_assert_int_eq(plan_ds_rules_for(V(0, 19, 4))->grad_copy, PLAN_DS_GRAD_GPU_UPCAST);
    ck_assert_int_eq(plan_ds_rules_for(V(0, 19, 5))->grad_copy, PLAN_DS_GRAD_GPU_UPCAST_ASYNC);
    /* af56ed4d3 (#7559), 0.18.0: the placement flips (0.17.6 stage3.py:876 still has i < int(r N)) */
    ck_assert_int_eq(plan_ds_rules_for(V(0, 17, 6))->policy, PLAN_POLICY_DS012);
    ck_assert_int_eq(plan_ds_rules_for(V(0, 18, 0))->policy, PLAN_POLICY_DS018);
    /* 285cae30f (#7891), 0.18.8: see_memory_usage(..., force=False) for the allocation stages */
    ck_assert(plan_ds_rules_for(V(0, 18, 7))->logs_stages);
    ck_assert(!plan_ds_rules_for(V(0, 18, 8))->logs_stages);
    /* 7dfa67aea (#8207), 0.19.5: offload_config.py `pin_memory: bool = True` (False at 0.19.4 and
     * in every earlier release read, v0.12.4 offload_config.py:43) */
    ck_assert(!plan_ds_rules_for(V(0, 12, 3))->offload_pin_default);
    ck_assert(!plan_ds_rules_for(V(0, 19, 4))->offload_pin_default);
    ck_assert(plan_ds_rules_for(V(0, 19, 5))->offload_pin_default);
    /* the default release */
    ck_assert_int_eq(rl_version_cmp(PLAN_DS_DEFAULT_VERSION, V(0, 12, 4)), 0);
    ck_assert_str_eq(PLAN_DS_DEFAULT_VERSION_STR, "0.12.4");
}
END_TEST

static bool asserts(const struct plan_ds_rules *r) { return r->ratio_check_asserts; }
static bool silent(const struct plan_ds_rules *r) { return !r->ratio_check_asserts; }
static bool never(const struct plan_ds_rules *r) { (void)r; return false; }
static bool ends(const struct plan_ds_rules *r)
{
    return r == &plan_ds_rules_table[0] || r == &plan_ds_rules_table[plan_ds_rules_count - 1];
}
static bool rule_ds012(const struct plan_ds_rules *r) { return r->policy == PLAN_POLICY_DS012; }
static bool rule_ds018(const struct plan_ds_rules *r) { return r->policy == PLAN_POLICY_DS018; }

START_TEST(version_texts_come_from_the_rows)
{
    char b[256], want[256];
    plan_ds_rows_versions(asserts, b, sizeof b);
    ck_assert_str_eq(b, ">= 0.15.0");
    plan_ds_rows_versions(silent, b, sizeof b);
    ck_assert_str_eq(b, ">= 0.12.3, < 0.15.0");
    plan_ds_rows_versions(never, b, sizeof b);
    ck_assert_str_eq(b, "none");
    const struct rl_version f = plan_ds_rules_table[0].from, g = plan_ds_rules_table[1].from,
                            l = plan_ds_rules_table[plan_ds_rules_count - 1].from;
    snprintf(want, sizeof want, ">= %d.%d.%d, < %d.%d.%d; >= %d.%d.%d", f.major, f.minor, f.patch, g.major, g.minor,
             g.patch, l.major, l.minor, l.patch);
    plan_ds_rows_versions(ends, b, sizeof b);
    ck_assert_str_eq(b, want);
    plan_ds_rows_lines(rule_ds012, b, sizeof b);
    ck_assert_str_eq(b, "0.12-0.17");
    plan_ds_rows_lines(rule_ds018, b, sizeof b);
    ck_assert_str_eq(b, ">= 0.18");
    plan_ds_changes_text(b, sizeof b);
    ck_assert_ptr_nonnull(strstr(b, "0.13.2, 0.14.3"));
    ck_assert_ptr_null(strstr(b, "0.12.3"));   /* the first row is no change */
}
END_TEST

/* --deepspeed-version's help names every release where the rules change, and the default;
 * --ledger's accepted values are the ledger names, in its help and in its message. */
START_TEST(help_and_accepted_values_are_generated)
{
    struct tu_run r;
    tu_ratiolab(&r, "plan --help");
    ck_assert_int_eq(r.status, 0);
    for (int i = 1; i < plan_ds_rules_count; i++) {
        char v[32];
        snprintf(v, sizeof v, "%d.%d.%d", plan_ds_rules_table[i].from.major, plan_ds_rules_table[i].from.minor,
                 plan_ds_rules_table[i].from.patch);
        ck_assert_msg(strstr(r.out, v), "plan --help does not name %s", v);
    }
    ck_assert_ptr_nonnull(strstr(r.out, "(default " PLAN_DS_DEFAULT_VERSION_STR));
    char names[128];
    plan_ledger_names(names, sizeof names);
    ck_assert_ptr_nonnull(strstr(r.out, names + strlen("auto")));
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --ledger deepspeed-0.14");
    ck_assert_int_eq(r.status, 2);
    char want[256];
    snprintf(want, sizeof want, "--ledger: 'deepspeed-0.14' is not a ledger; allowed: %s", names);
    ck_assert_msg(strstr(r.err, want), "%s", r.err);
    tu_run_free(&r);
}
END_TEST

/* offload_optimizer.pin_memory left unset takes the release's default (pageable before 0.19.5,
 * pinned from it: offload_config.py's `pin_memory: bool = True` since PR #8207), in the ledger
 * line `plan` prints; a value the config gives stays at every release. */
START_TEST(optimizer_pin_default_follows_the_release)
{
    const char *unset = tu_write("pin-unset.json", "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": "
                                 "{\"device\": \"cpu\", \"ratio\": 0.5}}, \"bf16\": {\"enabled\": true}}");
    const char *off = tu_write("pin-false.json", "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": "
                               "{\"device\": \"cpu\", \"ratio\": 0.5, \"pin_memory\": false}}, \"bf16\": {\"enabled\": true}}");
    static const struct {
        int cfg;            /* 0: unset, 1: false */
        const char *ver;
        const char *want;   /* in the DeepSpeed line */
    } cases[] = {
        {0, "0.19.4", "offload cpu (pageable)"},
        {0, "0.19.5", "offload cpu (pinned)"},
        {1, "0.19.5", "offload cpu (pageable)"},
        {0, "0.12.4", "offload cpu (pageable)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tu_run r;
        tu_ratiolab(&r, "plan --model gpt2 --dp 2 --ds-config '%s' --deepspeed-version %s", cases[i].cfg ? off : unset,
                    cases[i].ver);
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_msg(strstr(r.out, cases[i].want), "%s, pin_memory %s: want '%s' in:\n%s", cases[i].ver,
                      cases[i].cfg ? "false" : "unset", cases[i].want, r.out);
        tu_run_free(&r);
    }
}
END_TEST

Suite *TU_SUITE(void)
{
    Suite *s = suite_create("ds_rules");
    TCase *t = tcase_create("table");
    tcase_add_test(t, rows_are_sorted_and_each_is_a_cited_change);
    tcase_add_test(t, each_release_gets_its_row_at_every_edge);
    tcase_add_test(t, facts_read_in_deepspeed_history);
    tcase_add_test(t, version_texts_come_from_the_rows);
    tcase_add_test(t, help_and_accepted_values_are_generated);
    tcase_add_test(t, optimizer_pin_default_follows_the_release);
    suite_add_tcase(s, t);
    return s;
}
