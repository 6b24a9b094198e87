/* tests/check_trace_layout.c — one trace layout for the simulator, the executor and the monitor
 * (traces/layout.h): the phase table matches plan/step.h's phases; a `run --trace` and a
 * `predict --trace` of the same case carry the same categories, so `trace diff` compares them per
 * phase and `plot timeline` draws both, one step each (the run's warm-up and later steps left out);
 * `--pids` draws the GPU streams and the CPU Adam threads of the same ranks. About 1 s. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/step.h"
#include "traces/layout.h"
#include "traces/trace.h"
#include "tests/util.h"
#include "validation/tdiff_json.h"
#include "validation/val.h"   /* val_trace_ranks_union */

#define RUN_CASE "--ratio 0.5 --policy exact"
#define RUN_SMALL "--scale 10000 --sub-group-size 1e8 --warmup 1 --steps 2"

START_TEST(phase_table_matches_the_step_phases)
{
    ck_assert_int_eq(TRACE_N_PHASES, STEP_PH_COUNT + 1);
    for (int i = 0; i < STEP_PH_COUNT; i++)
        ck_assert_str_eq(trace_phases[i].name, step_phase_name(i));
    ck_assert_str_eq(trace_phases[STEP_PH_COUNT].name, "idle");
    /* Within a group no two phases share a pattern, so every phase is told apart. */
    for (int i = 0; i < TRACE_N_PHASES; i++)
        for (int k = i + 1; k < TRACE_N_PHASES; k++)
            ck_assert_msg(trace_phases[i].group != trace_phases[k].group ||
                              trace_phases[i].pattern != trace_phases[k].pattern,
                          "%s and %s look alike", trace_phases[i].name, trace_phases[k].name);
    for (int g = 0; g < TRACE_GROUP_COUNT; g++)
        for (int h = g + 1; h < TRACE_GROUP_COUNT; h++)
            ck_assert_str_ne(trace_group_color((enum trace_group)g), trace_group_color((enum trace_group)h));
}
END_TEST

/* Writes m.json (run: a warm-up and two timed steps, one rank) and p.json (predict), same case. */
static void both_traces(void)
{
    struct tu_run r;
    tu_ratiolab(&r, "run " RUN_SMALL " " RUN_CASE " --trace m.json");
    ck_assert_msg(r.status == 0, "run --trace: exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "predict " RUN_CASE " --trace p.json");
    ck_assert_msg(r.status == 0, "predict --trace: exit %d: %s", r.status, r.err);
    tu_run_free(&r);
}

START_TEST(run_and_predict_write_the_same_categories)
{
    both_traces();
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(tu_path("m.json"), &d, &e) == 0, "%s", e.msg);
    int steps = 0, warm = 0, phases = 0;
    for (int i = 0; i < d.n_events; i++) {
        const struct trace_event *x = &d.events[i];
        if (x->ph != 'X')
            continue;
        ck_assert_msg(x->cat && (trace_phase_find(x->cat) || strcmp(x->cat, TRACE_CAT_STEP) == 0),
                      "measured span '%s' has category '%s', not a phase", x->name, x->cat ? x->cat : "");
        if (strcmp(x->cat, TRACE_CAT_STEP) == 0) {
            steps++;
            warm += x->args_json && strstr(x->args_json, "\"warmup\":true") != NULL;
        } else {
            phases++;
        }
    }
    trace_doc_free(&d);
    ck_assert_int_eq(steps, 3);
    ck_assert_int_eq(warm, 1);
    ck_assert_int_gt(phases, 10);
    int64_t w0, w1;
    ck_assert_msg(trace_read(tu_path("p.json"), &d, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(trace_step_window(&d, &w0, &w1), 1);   /* the simulator marks its one step too */
    ck_assert(w0 == 0 && w1 > 0);
    trace_doc_free(&d);

    /* trace diff: per phase on both sides (it exited 2, "no span with a phase category", before). */
    json_t *j = tu_ratiolab_json("trace diff p.json m.json --json");
    json_t *r0 = json_array_get(json_object_get(j, "ranks"), 0);
    json_t *b = json_object_get(r0, "b");
    ck_assert_msg(b && !json_is_null(b), "no measured side for rank 0");
    json_int_t rs = json_integer_value(json_object_get(json_object_get(json_object_get(b, "phases"), "reduce_scatter"),
                                                       "busy_ns"));
    json_int_t ext = json_integer_value(json_object_get(b, "extent_ns"));
    ck_assert_msg(rs > 0, "measured reduce_scatter busy %lld", (long long)rs);
    /* One step: the measured extent is the first timed step's, not the whole run's. */
    ck_assert_msg(trace_read(tu_path("m.json"), &d, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(trace_step_window(&d, &w0, &w1), 1);
    int64_t run0 = INT64_MAX, run1 = 0;
    for (int i = 0; i < d.n_events; i++)
        if (d.events[i].ph == 'X') {
            run0 = d.events[i].ts_ns < run0 ? d.events[i].ts_ns : run0;
            int64_t end = d.events[i].ts_ns + d.events[i].dur_ns;
            run1 = end > run1 ? end : run1;
        }
    trace_doc_free(&d);
    ck_assert_msg(ext > 0 && ext <= w1 - w0 && ext < run1 - run0, "extent %lld, step %lld, run %lld", (long long)ext,
                  (long long)(w1 - w0), (long long)(run1 - run0));
    json_decref(j);
}
END_TEST

/* The spans of one block of the timeline's .dat, (start_ms, end_ms) pairs; returns the count. */
static int dat_spans(const char *dat, const char *input, const char *cat, double *max_end)
{
    char head[256];
    snprintf(head, sizeof head, "] %s: spans of %s (", input, cat);
    const char *p = strstr(dat, head);
    int n = 0;
    *max_end = 0;
    if (!p)
        return 0;
    p = strchr(p, '\n') + 1;
    double a, b;
    int row;
    while (sscanf(p, "%lf\t%lf\t%d", &a, &b, &row) == 3) {
        n++;
        *max_end = b > *max_end ? b : *max_end;
        p = strchr(p, '\n') + 1;
    }
    return n;
}

START_TEST(timeline_draws_one_step_of_each)
{
    both_traces();
    struct tu_run r;
    tu_ratiolab(&r, "plot timeline --in p.json --in m.json --out tl.svg");
    ck_assert_msg(r.status == 0, "plot timeline: exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    char *dat = tu_slurp("tl.dat");
    ck_assert_msg(!strstr(dat, "spans of exec"), "a category 'exec' is drawn");
    ck_assert_msg(!strstr(dat, "spans of step"), "step spans are drawn as a phase");
    double end_ms;
    ck_assert_int_gt(dat_spans(dat, "m.json", "reduce_scatter", &end_ms), 0);
    ck_assert_int_gt(dat_spans(dat, "p.json", "forward", &end_ms), 0);
    /* The measured step drawn is the first timed one: its spans end within that step. */
    struct trace_doc d;
    struct rl_err e = {0};
    int64_t w0, w1;
    ck_assert_msg(trace_read(tu_path("m.json"), &d, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(trace_step_window(&d, &w0, &w1), 1);
    trace_doc_free(&d);
    double worst = 0;
    static const char *const cats[] = {"forward", "backward", "allgather", "reduce_scatter", "cpu_adam", "gpu_adam"};
    for (size_t c = 0; c < sizeof cats / sizeof cats[0]; c++) {
        dat_spans(dat, "m.json", cats[c], &end_ms);
        worst = end_ms > worst ? end_ms : worst;
    }
    ck_assert_msg(worst > 0 && worst <= (double)(w1 - w0) * 1e-6 + 1e-6, "measured spans end at %g ms, step is %g ms",
                  worst, (double)(w1 - w0) * 1e-6);
    ck_assert_msg(strstr(dat, "# run: measured: ratio 0.50"), "the .dat header lacks the run's ratio");
    ck_assert_msg(strstr(dat, "schedule overlap, policy exact"), "the .dat header lacks schedule and policy");
    free(dat);
}
END_TEST

START_TEST(pids_select_the_same_ranks)
{
    struct tu_run r;
    tu_ratiolab(&r, "predict --ratio 0.5 --policy exact --trace p4.json > /dev/null && %s plot timeline --in p4.json "
                    "--pids 1,2,100 --out pids.svg", tu_bin());
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    char *dat = tu_slurp("pids.dat");
    /* The track list: (row, pid, tid, label); socket 100's threads are ranks 0 and 1 only. */
    const char *p = strstr(dat, "tracks (row, process id, thread id, label)");
    ck_assert_ptr_nonnull(p);
    p = strchr(p, '\n') + 1;
    int row, pid, tid, pools = 0;
    while (sscanf(p, "%d\t%d\t%d", &row, &pid, &tid) == 3) {
        ck_assert_msg(pid == 1 || pid == 2 || pid == 100, "pid %d drawn", pid);
        if (pid == 100) {
            ck_assert_msg(tid == 0 || tid == 1, "CPU Adam thread of rank %d drawn with GPUs of ranks 0-1", tid);
            pools++;
        }
        p = strchr(p, '\n') + 1;
    }
    ck_assert_int_eq(pools, 2);
    free(dat);
}
END_TEST

/* trace diff lines the two traces up by rank: every rank of either, ascending, once (ranks 0, 2
 * and 1, 2, 5 give 0, 1, 2, 5; an empty side gives the other's). */
START_TEST(diff_lines_up_the_ranks_of_either_trace)
{
    struct val_rank_times ra[2] = {{.rank = 0}, {.rank = 2}}, rb[3] = {{.rank = 1}, {.rank = 2}, {.rank = 5}};
    struct val_trace_times a = {.ranks = ra, .n_ranks = 2}, b = {.ranks = rb, .n_ranks = 3}, none = {0};
    int *r, n;
    val_trace_ranks_union(&a, &b, &r, &n);
    ck_assert_int_eq(n, 4);
    ck_assert(r[0] == 0 && r[1] == 1 && r[2] == 2 && r[3] == 5);
    free(r);
    val_trace_ranks_union(&none, &b, &r, &n);
    ck_assert_int_eq(n, 3);
    ck_assert(r[0] == 1 && r[1] == 2 && r[2] == 5);
    free(r);
}
END_TEST

/* trace diff --json (validation/tdiff.c, in process): rank 0 on both sides gets each side and
 * diff = b - a per phase, rank 2 only in a gets b and diff null; and a trace file with no span of
 * a phase category is refused naming the file, while one with a forward span reads back its busy
 * time (values chosen by hand: 7 - 3 = 4, 20 - 12 = 8, ...). */
START_TEST(diff_json_is_b_minus_a_per_rank_and_phase)
{
    struct val_rank_times ra[2] = {{.rank = 0, .extent_ns = 12, .idle_ns = 2}, {.rank = 2, .extent_ns = 5}};
    struct val_rank_times rb[1] = {{.rank = 0, .extent_ns = 20, .idle_ns = 1}};
    ra[0].busy_ns[STEP_PH_FORWARD] = 3;
    rb[0].busy_ns[STEP_PH_FORWARD] = 7;
    ra[0].exposed_ns[STEP_PH_FORWARD] = 3;
    rb[0].exposed_ns[STEP_PH_FORWARD] = 5;
    struct val_trace_times a = {.ranks = ra, .n_ranks = 2}, b = {.ranks = rb, .n_ranks = 1};
    json_t *o = val_trace_diff_json("A.json", "B.json", &a, &b);
    ck_assert_str_eq(json_string_value(json_object_get(o, "a")), "A.json");
    json_t *ranks = json_object_get(o, "ranks");
    ck_assert_int_eq(json_array_size(ranks), 2);
    json_t *r0 = json_array_get(ranks, 0), *r2 = json_array_get(ranks, 1);
    ck_assert_int_eq(json_integer_value(json_object_get(r2, "rank")), 2);
    ck_assert(json_is_null(json_object_get(r2, "b")) && json_is_null(json_object_get(r2, "diff")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r2, "a"), "extent_ns")), 5);
    json_t *d = json_object_get(r0, "diff");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "extent_ns")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "idle_ns")), -1);
    json_t *fwd = json_object_get(json_object_get(d, "phases"), step_phase_name(STEP_PH_FORWARD));
    ck_assert_int_eq(json_integer_value(json_object_get(fwd, "busy_ns")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(fwd, "exposed_ns")), 2);
    json_t *fa = json_object_get(json_object_get(json_object_get(r0, "a"), "phases"), step_phase_name(STEP_PH_FORWARD));
    ck_assert_int_eq(json_integer_value(json_object_get(fa, "busy_ns")), 3);
    ck_assert_int_eq(json_object_size(json_object_get(d, "phases")), STEP_PH_COUNT);
    json_decref(o);

    struct val_trace_times t;
    struct rl_err e = {0};
    const char *none = tu_write("tdiff-none.json", "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, "
                                "\"name\": \"x\", \"cat\": \"other\", \"ts\": 0, \"dur\": 1}]}");
    ck_assert_int_eq(val_trace_times_read(none, &t, &e), RL_EINVAL);
    ck_assert_msg(strncmp(e.msg, none, strlen(none)) == 0 && strstr(e.msg, "no span with a phase category"), "%s", e.msg);
    char text[512];
    snprintf(text, sizeof text, "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"name\": \"f\", "
             "\"cat\": \"%s\", \"ts\": 1.000, \"dur\": 2.500}]}", step_phase_name(STEP_PH_FORWARD));
    ck_assert_msg(val_trace_times_read(tu_write("tdiff-one.json", text), &t, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(t.n_ranks, 1);
    ck_assert_int_eq(t.ranks[0].rank, 0);   /* pid 1: rank 0 */
    ck_assert_int_eq(t.ranks[0].busy_ns[STEP_PH_FORWARD], 2500);
    val_trace_times_free(&t);
}
END_TEST

/* A trace that marks its steps is timed over its first timed step, [start, end): after a warmup
 * step [0, 10) ns (its forward span [3, 8) left out), steps [10, 20) and [20, 30) ns; a forward
 * span [12, 16) is in the first and one starting at 20 ns, the second step's first instant, is
 * not (busy 4 ns, not 4 + 3). */
START_TEST(diff_times_the_first_step_end_exclusive)
{
    char text[1024];
    const char *fwd = step_phase_name(STEP_PH_FORWARD);
    snprintf(text, sizeof text, "{\"traceEvents\": ["
             "{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"name\": \"w\", \"cat\": \"%s\", \"ts\": 0.000, "
             "\"dur\": 0.010, \"args\": {\"warmup\": true}},"
             "{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"name\": \"s1\", \"cat\": \"%s\", \"ts\": 0.010, \"dur\": 0.010},"
             "{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"name\": \"s2\", \"cat\": \"%s\", \"ts\": 0.020, \"dur\": 0.010},"
             "{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"name\": \"w\", \"cat\": \"%s\", \"ts\": 0.003, \"dur\": 0.005},"
             "{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"name\": \"a\", \"cat\": \"%s\", \"ts\": 0.012, \"dur\": 0.004},"
             "{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"name\": \"b\", \"cat\": \"%s\", \"ts\": 0.020, \"dur\": 0.003}]}",
             TRACE_CAT_STEP, TRACE_CAT_STEP, TRACE_CAT_STEP, fwd, fwd, fwd);
    struct val_trace_times t;
    struct rl_err e = {0};
    ck_assert_msg(val_trace_times_read(tu_write("tdiff-steps.json", text), &t, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(t.n_ranks, 1);
    ck_assert_int_eq(t.ranks[0].busy_ns[STEP_PH_FORWARD], 4);
    ck_assert_int_eq(t.ranks[0].spans, 1);
    val_trace_times_free(&t);
}
END_TEST

Suite *trace_layout_suite(void)
{
    Suite *s = suite_create("trace_layout");
    TCase *tc = tcase_create("trace_layout");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, phase_table_matches_the_step_phases);
    tcase_add_test(tc, run_and_predict_write_the_same_categories);
    tcase_add_test(tc, diff_lines_up_the_ranks_of_either_trace);
    tcase_add_test(tc, diff_json_is_b_minus_a_per_rank_and_phase);
    tcase_add_test(tc, diff_times_the_first_step_end_exclusive);
    if (tu_have_program("gnuplot")) {
        tcase_add_test(tc, timeline_draws_one_step_of_each);
        tcase_add_test(tc, pids_select_the_same_ranks);
    } else {
        tu_skip("trace_layout: timeline_draws_one_step_of_each", "no gnuplot on PATH");
        tu_skip("trace_layout: pids_select_the_same_ranks", "no gnuplot on PATH");
    }
    suite_add_tcase(s, tc);
    return s;
}
