/* tests/check_sim.c — the engine (ordering, cancel, determinism), the max-min flow model and the
 * task graph against closed forms. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "tests/util.h"

/* ---- engine -------------------------------------------------------------------------------------- */
struct log {
    int64_t t[256];
    int64_t tag[256];
    int n;
};

static void rec(struct sim *s, void *arg, int64_t tag)
{
    struct log *l = arg;
    l->t[l->n] = s->now_ns;
    l->tag[l->n++] = tag;
}

START_TEST(engine_orders_by_time_then_insertion)
{
    struct sim s;
    struct log l = {0};
    sim_init(&s);
    const int64_t when[] = {50, 30, 50, 30, 0, 50};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(sim_at(&s, when[i], rec, &l, i, NULL), 0);
    ck_assert_int_eq(sim_run(&s, -1), 0);
    const int64_t want_tag[] = {4, 1, 3, 0, 2, 5};
    ck_assert_int_eq(l.n, 6);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(l.tag[i], want_tag[i]);
    ck_assert_int_eq(s.now_ns, 50);
    ck_assert_int_eq(sim_at(&s, 49, rec, &l, 9, NULL), RL_EINVAL);   /* the past */
    sim_free(&s);
}
END_TEST

static struct sim_event_id victim;
static void cancel_victim(struct sim *s, void *arg, int64_t tag)
{
    rec(s, arg, tag);
    ck_assert(sim_cancel(s, victim));
    ck_assert(!sim_cancel(s, victim));   /* twice: already cancelled */
}

static void chain_same_time(struct sim *s, void *arg, int64_t tag)
{
    rec(s, arg, tag);
    if (tag < 3)
        sim_at(s, s->now_ns, chain_same_time, arg, tag + 1, NULL);
}

START_TEST(engine_cancel_by_flag)
{
    struct sim s;
    struct log l = {0};
    sim_init(&s);
    struct sim_event_id a;
    sim_at(&s, 10, rec, &l, 1, &a);
    sim_at(&s, 20, cancel_victim, &l, 2, NULL);
    sim_at(&s, 20, rec, &l, 3, &victim);   /* same time, later in the batch: still cancellable */
    sim_at(&s, 30, rec, &l, 4, NULL);
    ck_assert_int_eq(sim_run(&s, -1), 0);
    ck_assert_int_eq(l.n, 3);
    ck_assert_int_eq(l.tag[0], 1);
    ck_assert_int_eq(l.tag[1], 2);
    ck_assert_int_eq(l.tag[2], 4);
    ck_assert(!sim_cancel(&s, a));   /* already ran */
    ck_assert_uint_eq(s.n_run, 3);
    ck_assert_uint_eq(s.n_cancelled, 1);
    /* Events scheduled at the current time by a callback run after the current batch. */
    l.n = 0;
    sim_at(&s, 40, chain_same_time, &l, 0, NULL);
    sim_at(&s, 40, rec, &l, 100, NULL);
    ck_assert_int_eq(sim_run(&s, -1), 0);
    const int64_t want[] = {0, 100, 1, 2, 3};
    ck_assert_int_eq(l.n, 5);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(l.tag[i], want[i]);
        ck_assert_int_eq(l.t[i], 40);
    }
    sim_free(&s);
}
END_TEST

START_TEST(engine_random_schedule_is_ordered)
{
    unsigned long seed = tu_seed("engine_random_schedule_is_ordered");
    srand((unsigned)seed);
    struct sim s;
    static struct log l;
    l.n = 0;
    sim_init(&s);
    struct sim_event_id id[200];
    bool cancelled[200] = {0};
    for (int i = 0; i < 200; i++)
        sim_at(&s, rand() % 40, rec, &l, i, &id[i]);
    for (int i = 0; i < 200; i += 7) {
        ck_assert(sim_cancel(&s, id[i]));
        cancelled[i] = true;
    }
    ck_assert_int_eq(sim_run(&s, -1), 0);
    ck_assert_int_eq(l.n, 200 - 29);
    for (int i = 0; i < l.n; i++) {
        ck_assert(!cancelled[l.tag[i]]);
        if (i > 0) {
            ck_assert_int_le(l.t[i - 1], l.t[i]);
            if (l.t[i - 1] == l.t[i])
                ck_assert_int_lt(l.tag[i - 1], l.tag[i]);   /* FIFO among ties */
        }
    }
    sim_free(&s);
}
END_TEST

/* ---- flow model ------------------------------------------------------------------------------------ */
struct ends {
    int64_t t[32];
};

static void on_end(struct sim_flow *f, void *arg, int64_t tag)
{
    ((struct ends *)arg)->t[tag] = f->sim->now_ns;
}

static struct sim_flow_req req1(double work, int r, struct ends *en, int tag)
{
    struct sim_flow_req q = {.work = work, .n_res = 1, .res = {r}, .weight = {1}, .done = on_end,
                             .arg = en, .tag = tag};
    return q;
}

START_TEST(flow_two_flows_split_a_link)
{
    struct sim s;
    struct sim_flow f;
    struct ends en = {{0}};
    sim_init(&s);
    sim_flow_init(&f, &s);
    int link = sim_flow_add_resource(&f, "link", 1e10, NULL);
    struct sim_flow_req a = req1(1e9, link, &en, 0), b = req1(1e9, link, &en, 1);
    int ia, ib;
    ck_assert_int_eq(sim_flow_start(&f, &a, &ia, NULL), 0);
    ck_assert_int_eq(sim_flow_start(&f, &b, &ib, NULL), 0);
    ck_assert_int_eq(sim_run(&s, 0), 0);   /* the rate update at t = 0 */
    ck_assert(sim_flow_rate(&f, ia) == 5e9);
    ck_assert(sim_flow_rate(&f, ib) == 5e9);
    ck_assert_int_eq(sim_run(&s, -1), 0);
    ck_assert_int_eq(en.t[0], 200000000);   /* 2e9 bytes / 1e10 B/s */
    ck_assert_int_eq(en.t[1], 200000000);
    sim_flow_free(&f);
    sim_free(&s);
}
END_TEST

START_TEST(flow_capped_elsewhere_leaves_the_rest)
{
    struct sim s;
    struct sim_flow f;
    struct ends en = {{0}};
    sim_init(&s);
    sim_flow_init(&f, &s);
    int l1 = sim_flow_add_resource(&f, "shared", 10e9, NULL);
    int l2 = sim_flow_add_resource(&f, "narrow", 2e9, NULL);
    struct sim_flow_req a = {.work = 4e9, .n_res = 2, .res = {l1, l2}, .weight = {1, 1},
                             .done = on_end, .arg = &en, .tag = 0};
    struct sim_flow_req b = req1(8e9, l1, &en, 1);
    struct sim_flow_req c = req1(1e9, l1, &en, 2);
    c.rate_cap = 1e9;   /* its own cap */
    int ia, ib, ic;
    sim_flow_start(&f, &a, &ia, NULL);
    sim_flow_start(&f, &b, &ib, NULL);
    sim_flow_start(&f, &c, &ic, NULL);
    sim_run(&s, 0);
    ck_assert(sim_flow_rate(&f, ia) == 2e9);   /* bottleneck: narrow */
    ck_assert(sim_flow_rate(&f, ic) == 1e9);   /* own cap */
    ck_assert(sim_flow_rate(&f, ib) == 7e9);   /* the rest of shared */
    ck_assert_int_eq(sim_run(&s, -1), 0);
    /* c ends at 1 s; then b gets 8e9 with 1e9 done... b: 7e9 by 1 s, last 1e9 at 8e9/s. */
    ck_assert_int_eq(en.t[2], 1000000000);
    ck_assert_int_eq(en.t[1], 1125000000);
    ck_assert_int_eq(en.t[0], 2000000000);   /* a's share never changed: 4e9 / 2e9 */
    sim_flow_free(&f);
    sim_free(&s);
}
END_TEST

START_TEST(flow_weights_count_load)
{
    /* A CPU Adam: 1e9 elements, cores 4e9 elem/s, DRAM 28 bytes per element at 56e9 B/s:
     * DRAM binds at 2e9 elem/s. */
    struct sim s;
    struct sim_flow f;
    struct ends en = {{0}};
    sim_init(&s);
    sim_flow_init(&f, &s);
    int cores = sim_flow_add_resource(&f, "cores", 4e9, NULL);
    int dram = sim_flow_add_resource(&f, "dram", 56e9, NULL);
    struct sim_flow_req a = {.work = 1e9, .n_res = 2, .res = {cores, dram}, .weight = {1, 28},
                             .done = on_end, .arg = &en, .tag = 0};
    sim_flow_start(&f, &a, NULL, NULL);
    ck_assert_int_eq(sim_run(&s, -1), 0);
    ck_assert_int_eq(en.t[0], 500000000);
    ck_assert(fabs(f.res[dram].served - 28e9) <= 1e-9 * 28e9);
    /* A copy (1 byte of DRAM per unit) and a CPU Adam (28) share DRAM equally in bytes/s:
     * 28e9 B/s each, so the Adam runs at 1e9 elements/s. */
    struct sim_flow_req c = {.work = 28e9, .n_res = 1, .res = {dram}, .weight = {1}, .done = on_end,
                             .arg = &en, .tag = 1};
    int ia, ic;
    sim_flow_start(&f, &a, &ia, NULL);
    sim_flow_start(&f, &c, &ic, NULL);
    sim_run(&s, s.now_ns);
    ck_assert(sim_flow_rate(&f, ia) == 1e9);
    ck_assert(sim_flow_rate(&f, ic) == 28e9);
    ck_assert_int_eq(sim_run(&s, -1), 0);
    ck_assert_int_eq(en.t[0], 1500000000);   /* both end together: 1 s at equal shares */
    ck_assert_int_eq(en.t[1], 1500000000);
    sim_flow_free(&f);
    sim_free(&s);
}
END_TEST

static struct sim_flow_req late_req;
static void start_late(struct sim *s, void *arg, int64_t tag)
{
    (void)s;
    (void)tag;
    ck_assert_int_eq(sim_flow_start(arg, &late_req, NULL, NULL), 0);
}

START_TEST(flow_rate_changes_reschedule)
{
    /* A alone for 0.5 s, then A and B share; closed form: A ends 1.5 s, B ends 2.0 s. */
    struct sim s;
    struct sim_flow f;
    struct ends en = {{0}};
    sim_init(&s);
    sim_flow_init(&f, &s);
    int link = sim_flow_add_resource(&f, "link", 1e9, NULL);
    struct sim_flow_req a = req1(1e9, link, &en, 0);
    sim_flow_start(&f, &a, NULL, NULL);
    late_req = req1(1e9, link, &en, 1);
    sim_at(&s, 500000000, start_late, &f, 0, NULL);
    ck_assert_int_eq(sim_run(&s, -1), 0);
    ck_assert_int_eq(en.t[0], 1500000000);
    ck_assert_int_eq(en.t[1], 2000000000);
    ck_assert(fabs(f.res[link].served - 2e9) <= 1e-9 * 2e9);
    ck_assert(f.res[link].busy_s == 2.0);
    sim_flow_free(&f);
    sim_free(&s);
}
END_TEST

START_TEST(flow_random_flows_conserve_bytes)
{
    unsigned long seed = tu_seed("flow_random_flows_conserve_bytes");
    srand((unsigned)seed);
    struct sim s;
    struct sim_flow f;
    struct ends en = {{0}};
    sim_init(&s);
    sim_flow_init(&f, &s);
    int r[6];
    for (int i = 0; i < 6; i++)
        r[i] = sim_flow_add_resource(&f, "r", 1e8 * (1 + rand() % 50), NULL);
    double want[6] = {0};
    struct sim_graph g;
    sim_graph_init(&g);
    for (int i = 0; i < 30; i++) {
        struct sim_task t = {.name = "x", .track = -1, .phase = -1, .rank = -1};
        t.req.work = 1e6 * (1 + rand() % 1000);
        t.req.n_res = 1 + rand() % 3;
        for (int k = 0; k < t.req.n_res; k++) {
            t.req.res[k] = r[(i + 2 * k) % 6];   /* distinct */
            t.req.weight[k] = 0.5 + rand() % 4;
            want[(i + 2 * k) % 6] += t.req.weight[k] * t.req.work;
        }
        if (rand() % 3 == 0)
            t.req.rate_cap = 1e7 * (1 + rand() % 100);
        t.latency_ns = rand() % 1000;
        int id = sim_graph_add(&g, &t);
        if (id > 2 && rand() % 2)
            sim_graph_dep(&g, rand() % id, id);
    }
    struct rl_err e;
    ck_assert_int_eq(sim_graph_run(&g, &f, &e), 0);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(fabs(f.res[r[i]].served - want[i]) <= 1e-9 * want[i], "resource %d: %.17g vs %.17g",
                      i, f.res[r[i]].served, want[i]);
    (void)en;
    sim_graph_free(&g);
    sim_flow_free(&f);
    sim_free(&s);
}
END_TEST

/* Each completion starts three more activities until `left` runs out: the activity pool grows
 * while completion callbacks run (a use-after-realloc would show under ASan). */
struct fanout {
    int link;
    int left;
    int done;
};

static void fan(struct sim_flow *f, void *arg, int64_t tag)
{
    struct fanout *x = arg;
    x->done++;
    for (int k = 0; k < 3 && x->left > 0; k++, x->left--) {
        struct sim_flow_req q = {.work = 1000.0 * (1 + (tag + k) % 7), .n_res = 1, .res = {x->link},
                                 .weight = {1}, .done = fan, .arg = x, .tag = tag + k + 1};
        ck_assert_int_eq(sim_flow_start(f, &q, NULL, NULL), 0);
    }
}

START_TEST(flow_callbacks_may_start_many)
{
    struct sim s;
    struct sim_flow f;
    sim_init(&s);
    sim_flow_init(&f, &s);
    struct fanout x = {.link = sim_flow_add_resource(&f, "link", 1e9, NULL), .left = 3000};
    for (int i = 0; i < 4; i++) {
        struct sim_flow_req q = {.work = 1000, .n_res = 1, .res = {x.link}, .weight = {1}, .done = fan, .arg = &x,
                                 .tag = i};
        sim_flow_start(&f, &q, NULL, NULL);
    }
    ck_assert_int_eq(sim_run(&s, -1), 0);
    ck_assert_int_eq(x.done, 3004);
    ck_assert_int_gt(f.cap_act, 1000);   /* the pool grew inside callbacks */
    sim_flow_free(&f);
    sim_free(&s);
}
END_TEST

/* ---- task graph vs closed forms ------------------------------------------------------------------ */
static int64_t ceil_div_ns(double work, double rate)
{
    /* The closed form, written independently: work / rate seconds, in whole ns rounded up. */
    long double ns = (long double)work * 1000000000.0L / (long double)rate;
    int64_t n = (int64_t)ns;
    return (long double)n < ns - 1e-6L ? n + 1 : n;
}

START_TEST(graph_matches_closed_forms)
{
    struct sim s;
    struct sim_flow f;
    struct sim_graph g;
    struct rl_err e;
    sim_init(&s);
    sim_flow_init(&f, &s);
    sim_graph_init(&g);
    int pcie = sim_flow_add_resource(&f, "pcie", 12.2e9, NULL);
    int gpu = sim_flow_add_resource(&f, "gpu", 97.4e12, NULL);
    /* One transfer with latency. */
    struct sim_task t = {.name = "copy", .track = -1, .phase = -1, .rank = -1, .latency_ns = 7000};
    t.req = (struct sim_flow_req){.work = 123456789, .n_res = 1, .res = {pcie}, .weight = {1}};
    int a = sim_graph_add(&g, &t);
    ck_assert_int_eq(sim_graph_run(&g, &f, &e), 0);
    ck_assert_int_eq(g.task[a].t_end_ns, 7000 + ceil_div_ns(123456789, 12.2e9));
    /* A chain: copy -> compute -> copy, each alone on its resource: the sum. */
    sim_graph_reset(&g);
    int64_t t0 = s.now_ns;
    int c1 = sim_graph_add(&g, &t);
    struct sim_task k = {.name = "gemm", .track = -1, .phase = -1, .rank = -1};
    k.req = (struct sim_flow_req){.work = 3.3e13, .n_res = 1, .res = {gpu}, .weight = {1}};
    int c2 = sim_graph_add(&g, &k);
    int c3 = sim_graph_add(&g, &t);
    sim_graph_dep(&g, c1, c2);
    sim_graph_dep(&g, c2, c3);
    ck_assert_int_eq(sim_graph_run(&g, &f, &e), 0);
    int64_t copy_ns = 7000 + ceil_div_ns(123456789, 12.2e9);
    ck_assert_int_eq(g.task[c3].t_end_ns - t0, 2 * copy_ns + ceil_div_ns(3.3e13, 97.4e12));
    /* Perfect overlap: a copy and a compute on different resources run side by side: the max. */
    sim_graph_reset(&g);
    t0 = s.now_ns;
    int p1 = sim_graph_add(&g, &t);
    int p2 = sim_graph_add(&g, &k);
    ck_assert_int_eq(sim_graph_run(&g, &f, &e), 0);
    ck_assert_int_eq(g.task[p1].t_end_ns - t0, copy_ns);
    ck_assert_int_eq(g.task[p2].t_end_ns - t0, ceil_div_ns(3.3e13, 97.4e12));
    ck_assert_int_eq(g.end_ns - t0, copy_ns > ceil_div_ns(3.3e13, 97.4e12) ? copy_ns : ceil_div_ns(3.3e13, 97.4e12));
    /* A cycle never runs and says so. */
    sim_graph_reset(&g);
    int y1 = sim_graph_add(&g, &t), y2 = sim_graph_add(&g, &t);
    sim_graph_dep(&g, y1, y2);
    sim_graph_dep(&g, y2, y1);
    ck_assert_int_eq(sim_graph_run(&g, &f, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "cycle"));
    sim_graph_free(&g);
    sim_flow_free(&f);
    sim_free(&s);
}
END_TEST

/* Every engine and graph call that returns an error code leaves a message saying what was wrong
 * (before, a bare code reached the CLI as "the simulation failed (invalid input)"). */
START_TEST(engine_and_graph_errors_have_messages)
{
    struct sim s;
    sim_init(&s);
    struct log l = {0};
    ck_assert_int_eq(sim_at(&s, 10, rec, &l, 1, NULL), 0);
    ck_assert_int_eq(sim_run(&s, -1), 0);
    ck_assert_int_eq(sim_at(&s, 5, rec, &l, 2, NULL), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(s.e.msg, "event at 5 ns is in the past (now 10 ns)"));
    ck_assert_int_eq(sim_after(&s, -1, rec, &l, 2, NULL), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(s.e.msg, "delay of -1 ns"));
    ck_assert_int_eq(sim_at(&s, 20, NULL, &l, 2, NULL), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(s.e.msg, "no callback"));
    sim_free(&s);

    struct sim_graph g;
    sim_graph_init(&g);
    struct sim_task t = {.name = "a", .rank = -1, .track = -1, .phase = -1};
    ck_assert_int_eq(sim_graph_add(&g, &t), 0);
    ck_assert_int_eq(sim_graph_dep(&g, 0, 0), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(g.e.msg, "edge 0 -> 0"));
    ck_assert_int_eq(sim_graph_dep(&g, 0, 7), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(g.e.msg, "edge 0 -> 7"));
    /* a task whose activity the flow model refuses: the run's message names the task and why */
    struct sim_task bad = {.name = "weightless", .rank = -1, .track = -1, .phase = -1};
    bad.req.work = 1;
    bad.req.n_res = 1;
    bad.req.res[0] = 0;
    bad.req.weight[0] = -1;
    ck_assert_int_eq(sim_graph_add(&g, &bad), 1);
    sim_init(&s);
    struct sim_flow f;
    sim_flow_init(&f, &s);
    ck_assert_int_ge(sim_flow_add_resource(&f, "link", 1e9, NULL), 0);
    struct rl_err e;
    ck_assert_int_eq(sim_graph_run(&g, &f, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "task 1 (weightless)"));
    ck_assert_ptr_nonnull(strstr(e.msg, "weight -1"));
    sim_flow_free(&f);
    sim_free(&s);
    sim_graph_free(&g);
}
END_TEST

START_TEST(flow_rejects_bad_input)
{
    struct sim s;
    struct sim_flow f;
    struct rl_err e;
    sim_init(&s);
    sim_flow_init(&f, &s);
    ck_assert_int_eq(sim_flow_add_resource(&f, "zero", 0, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "zero"));
    ck_assert_int_eq(sim_flow_add_resource(&f, "nan", NAN, &e), RL_EINVAL);
    int r = sim_flow_add_resource(&f, "ok", 1, &e);
    struct sim_flow_req q = {.work = -1, .n_res = 1, .res = {r}, .weight = {1}};
    ck_assert_int_eq(sim_flow_start(&f, &q, NULL, &e), RL_EINVAL);
    q.work = 1;
    q.res[0] = 7;
    ck_assert_int_eq(sim_flow_start(&f, &q, NULL, &e), RL_EINVAL);
    sim_flow_free(&f);
    sim_free(&s);
}
END_TEST

Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    TCase *c = tcase_create("engine");
    tcase_add_test(c, engine_orders_by_time_then_insertion);
    tcase_add_test(c, engine_cancel_by_flag);
    tcase_add_test(c, engine_random_schedule_is_ordered);
    suite_add_tcase(s, c);
    c = tcase_create("flow");
    tcase_add_test(c, flow_two_flows_split_a_link);
    tcase_add_test(c, flow_capped_elsewhere_leaves_the_rest);
    tcase_add_test(c, flow_weights_count_load);
    tcase_add_test(c, flow_rate_changes_reschedule);
    tcase_add_test(c, flow_random_flows_conserve_bytes);
    tcase_add_test(c, flow_rejects_bad_input);
    tcase_add_test(c, flow_callbacks_may_start_many);
    suite_add_tcase(s, c);
    c = tcase_create("graph");
    tcase_add_test(c, graph_matches_closed_forms);
    tcase_add_test(c, engine_and_graph_errors_have_messages);
    suite_add_tcase(s, c);
    return s;
}
