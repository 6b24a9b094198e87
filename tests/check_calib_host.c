/* tests/check_calib_host.c — calibrate's host costs (calib/host.c): the figure each measurement
 * makes of its repeats' times (calib_figure_best_of), checked on made-up timings whose figures are
 * worked out by hand, and that the profile takes that figure. No measuring here (cheap). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "calib/calib.h"
#include "exec/exec.h"   /* ex_comm_init: one rank without mpirun */
#include "tests/util.h"

#define NEAR(a, b) ck_assert_msg(fabs((a) - (b)) <= 1e-12 * fabs(b), "%.17g != %.17g", (double)(a), (double)(b))

/* One thread, 2 units per repeat: the warm-up round (the fastest here, 0.5 s) is not counted; of
 * the counted 1.0, 4.0, 1.25, 2.0 s the fastest gives the figure 2 / 1.0 = 2; the spread is that of
 * 2, 0.5, 1.6, 1: median 1.3, 0.5..2. A median of the counted rates would say 1.3, the old figure. */
START_TEST(best_of_takes_the_fastest_counted_repeat)
{
    const double sec[] = {0.5, 1.0, 4.0, 1.25, 2.0};
    struct calib_figure f;
    ck_assert_int_eq(calib_figure_best_of(&f, sec, NULL, 5, 1, 1, 2.0), 0);
    NEAR(f.best, 2.0);
    NEAR(f.median, 1.3);
    NEAR(f.min, 0.5);
    NEAR(f.max, 2.0);
    ck_assert_int_eq(f.repeats, 4);
    /* without the warm-up round skipped, the 0.5 s round would make it 4 */
    ck_assert_int_eq(calib_figure_best_of(&f, sec, NULL, 5, 1, 0, 2.0), 0);
    NEAR(f.best, 4.0);
}
END_TEST

/* Disturbed repeats (other work on the machine only adds time) leave the figure alone: four more
 * slow rounds move the median from 2 to 1 but not the best. */
START_TEST(best_of_is_not_moved_by_slow_repeats)
{
    const double quiet[] = {9.0, 1.0, 1.0, 1.0}, loaded[] = {9.0, 1.0, 1.0, 1.0, 2.0, 3.0, 2.0, 4.0};
    struct calib_figure a, b;
    ck_assert_int_eq(calib_figure_best_of(&a, quiet, NULL, 4, 1, 1, 2.0), 0);
    ck_assert_int_eq(calib_figure_best_of(&b, loaded, NULL, 8, 1, 1, 2.0), 0);
    NEAR(a.best, 2.0);
    NEAR(b.best, 2.0);
    NEAR(a.median, 2.0);
    NEAR(b.median, 1.0);
}
END_TEST

/* Two threads, the first touch's way: each thread's fastest fresh time less its fastest warm
 * write, summed. Thread 0: fresh 0.30, 0.25 (fastest), warm 0.06, 0.05 (fastest): 1 / 0.20 = 5;
 * thread 1: fresh 0.45 (fastest), 0.50, warm 0.05 (fastest), 0.09: 1 / 0.40 = 2.5; figure 7.5 (the
 * fastest fresh and warm need not be the same round). Per round, less the same fastest warm
 * writes: 1/0.25 + 1/0.40 = 6.5 and 1/0.20 + 1/0.45 = 7.22: the spread, neither is the figure. */
START_TEST(best_of_takes_off_each_threads_fastest_base)
{
    /* warm-up round 0 (not counted), then rounds 1 and 2; slot = round * 2 + thread */
    const double fresh[] = {0.01, 0.01, 0.30, 0.45, 0.25, 0.50};
    const double warm[] = {0.001, 0.001, 0.06, 0.05, 0.05, 0.09};
    struct calib_figure f;
    ck_assert_int_eq(calib_figure_best_of(&f, fresh, warm, 3, 2, 1, 1.0), 0);
    NEAR(f.best, 1 / 0.20 + 1 / 0.40);
    NEAR(f.median, (1 / 0.25 + 1 / 0.40 + 1 / 0.20 + 1 / 0.45) / 2);
    NEAR(f.min, 1 / 0.25 + 1 / 0.40);
    NEAR(f.max, 1 / 0.20 + 1 / 0.45);
    /* a base slower than the time is bounded to 1e-3 of the time, never negative */
    const double s1[] = {1.0}, b1[] = {2.0};
    ck_assert_int_eq(calib_figure_best_of(&f, s1, b1, 1, 1, 0, 1.0), 0);
    NEAR(f.best, 1000.0);
}
END_TEST

START_TEST(best_of_refuses_what_it_cannot_count)
{
    const double sec[] = {1.0, 0.0, 1.0};
    struct calib_figure f = {.best = 7};
    ck_assert_int_eq(calib_figure_best_of(&f, sec, NULL, 1, 1, 1, 1.0), -1);   /* nothing counted */
    ck_assert_int_eq(calib_figure_best_of(&f, sec, NULL, 3, 1, 0, 1.0), -1);   /* a zero time */
    ck_assert_int_eq(calib_figure_best_of(&f, sec, NULL, 3, 0, 0, 1.0), -1);   /* no thread */
    NEAR(f.best, 7.0);
}
END_TEST

/* The profile's host keys are the figures' best, not their medians, and the source names the
 * method and the load. */
START_TEST(profile_takes_the_best_figure)
{
    struct calib_host h;
    memset(&h, 0, sizeof h);
    h.measured = true;
    h.n_threads = 2;
    snprintf(h.thp, sizeof h.thp, "madvise");
    snprintf(h.thp_defrag, sizeof h.thp_defrag, "madvise");
    h.warmup = 1;
    h.fault_bytes = h.memcpy_bytes = (int64_t)1 << 20;
    h.cast_numel = 1 << 20;
    h.load_before[0] = 0.25;
    h.load_after[0] = 0.5;
    const double v[] = {1.0, 3.0};
    for (int t = 0; t < 2; t++) {
        calib_figure_of(&h.fault_gbps[t], v, 2);
        calib_figure_of(&h.memcpy_gbps[t], v, 2);
        calib_figure_of(&h.cast_elems_per_s[t], v, 2);
    }
    h.fault_gbps[0].best = 2.5;
    h.fault_gbps[1].best = 4.5;
    h.memcpy_gbps[0].best = 9.5;
    h.cast_elems_per_s[0].best = 1.5e9;
    struct hw_writer w;
    struct rl_err e;
    ck_assert_int_eq(hw_writer_open(&w, NULL, &e), 0);
    calib_host_json(&h, "h", "d", &w);
    ck_assert_msg(w.rc == 0, "%s", w.err.msg);
    json_t *root = w.root, *src = w.sources;
    json_t *o = json_object_get(root, "host");
    NEAR(json_real_value(json_object_get(o, "fault_gbps_per_thread")), 2.5);
    NEAR(json_real_value(json_object_get(o, "fault_gbps_per_socket")), 4.5);
    NEAR(json_real_value(json_object_get(o, "memcpy_gbps_per_thread")), 9.5);
    NEAR(json_real_value(json_object_get(o, "cast_elements_per_s_per_thread")), 1.5e9);
    const char *s = json_string_value(json_object_get(src, "host.fault_gbps_per_thread"));
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(strstr(s, "4 KiB pages"));
    ck_assert_ptr_nonnull(strstr(s, "load average 0.25 before, 0.50 after"));
    ck_assert_ptr_nonnull(strstr(s, "fastest round"));
    hw_writer_abort(&w);
}
END_TEST

/* The progress lines calib_measure_world reports, in order. */
struct progress_log {
    char what[8][64];              /* each line's text */
    int done[8];                   /* its done count (of 1) */
    int n;                         /* lines */
};
static void log_progress(void *ctx, const char *what, int done, int total)
{
    struct progress_log *l = ctx;
    ck_assert_int_eq(total, 1);
    if (l->n < 8) {
        snprintf(l->what[l->n], sizeof l->what[0], "%s", what);
        l->done[l->n++] = done;
    }
}

/* calibrate across the ranks on one rank (no mpirun): no collectives (one rank measures none),
 * then, given a run, what one rank of it does at its sizes, announced and closed; without one,
 * nothing at all with --collectives-only. Expected from calib.h's description. */
START_TEST(measure_world_on_one_rank)
{
    struct ex_comm comm;
    struct rl_err e = {0};
    ck_assert_msg(ex_comm_init(&comm, &e) == 0 && comm.size == 1, "%s", e.msg);
    struct calib_opts o;
    calib_opts_default(&o);
    struct progress_log log = {0};
    o.progress = log_progress;
    o.progress_ctx = &log;
    static struct calib c;
    struct calib_run run = {.device_adam_numel = 8192, .host_adam_numel = 1000, .working_set_bytes = 120000};
    ck_assert_msg(calib_measure_world(&comm, &o, &run, true, &c, &e) == 0, "%s", e.msg);
    ck_assert(!c.have_mpi);
    ck_assert(c.have_run);
    ck_assert_int_eq(c.run_ranks, 1);
    ck_assert_int_eq(c.run_device_adam_numel, 8192);
    ck_assert_int_eq(log.n, 2);
    ck_assert_str_eq(log.what[0], "the run's GEMMs, Adam, copies, memory");
    ck_assert_int_eq(log.done[0], 0);
    ck_assert_str_eq(log.what[1], "done");
    ck_assert_int_eq(log.done[1], 1);
    log.n = 0;
    ck_assert_int_eq(calib_measure_world(&comm, &o, NULL, true, &c, &e), 0);
    ck_assert(!c.have_run && !c.have_mpi);
    ck_assert_int_eq(log.n, 0);
    ex_comm_finalize(&comm);
}
END_TEST

/* calibrate's names and --json (calib/report.c) from figures set by hand: the default name is
 * calibrated-<host> and the file <name>.json, --name and --out win, a name with a control
 * character or none is refused naming the field and the byte; the JSON has one entry per
 * thread count, numbered from 1, each figure's median, and "profile" last. */
START_TEST(report_names_and_json_from_hand_figures)
{
    char name[128], out[300];
    calib_profile_names(NULL, NULL, "box", name, sizeof name, out, sizeof out);
    ck_assert_str_eq(name, "calibrated-box");
    ck_assert_str_eq(out, "calibrated-box.json");
    calib_profile_names("mine", NULL, "box", name, sizeof name, out, sizeof out);
    ck_assert_str_eq(out, "mine.json");
    calib_profile_names(NULL, "p/x.json", "box", name, sizeof name, out, sizeof out);
    ck_assert_str_eq(name, "calibrated-box");
    ck_assert_str_eq(out, "p/x.json");
    struct rl_err e = {0};
    ck_assert_int_eq(calib_profile_name_check("my box", &e), 0);
    ck_assert_int_eq(calib_profile_name_check("ab\tc", &e), RL_EINVAL);   /* the tab is byte 2 */
    const char *want = "name: a control character (0x09) at byte 2;";
    ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "%s", e.msg);
    ck_assert_int_eq(calib_profile_name_check("ab\x7f", &e), RL_EINVAL);   /* DEL is a control character too */
    want = "name: a control character (0x7f) at byte 2;";
    ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "%s", e.msg);
    ck_assert_int_eq(calib_profile_name_check("", &e), RL_EINVAL);
    ck_assert_msg(strncmp(e.msg, "name: empty;", 12) == 0, "%s", e.msg);

    static struct calib c;
    snprintf(c.host, sizeof c.host, "box");
    c.cores = 2;
    c.n_threads = 2;
    c.dram_gbps[1].median = 7.5;
    c.adam_elems_per_s[0].median = 1e9;
    c.host_costs.n_threads = 1;
    c.host_costs.memcpy_gbps[0].median = 4.25;
    json_t *o = calib_report_json(&c, "prof.json");
    json_t *d = json_object_get(o, "dram_triad_gbps");
    ck_assert_int_eq(json_array_size(d), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(d, 1), "threads")), 2);
    ck_assert(json_real_value(json_object_get(json_array_get(d, 1), "median")) == 7.5);
    json_t *a = json_array_get(json_object_get(o, "cpu_adam_elements_per_s"), 0);
    ck_assert(json_real_value(json_object_get(a, "median")) == 1e9);
    json_t *h = json_object_get(o, "host_costs");
    ck_assert_int_eq(json_array_size(h), 1);
    ck_assert(json_real_value(json_object_get(json_object_get(json_array_get(h, 0), "memcpy_gbps"), "median")) == 4.25);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "cores")), 2);
    const char *last = NULL;
    for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it))
        last = json_object_iter_key(it);
    ck_assert_str_eq(last, "profile");
    ck_assert_str_eq(json_string_value(json_object_get(o, "profile")), "prof.json");
    json_decref(o);
}
END_TEST

Suite *calib_host_suite(void)
{
    Suite *s = suite_create("calib_host");
    TCase *c = tcase_create("figures");
    tcase_add_test(c, best_of_takes_the_fastest_counted_repeat);
    tcase_add_test(c, best_of_is_not_moved_by_slow_repeats);
    tcase_add_test(c, best_of_takes_off_each_threads_fastest_base);
    tcase_add_test(c, best_of_refuses_what_it_cannot_count);
    tcase_add_test(c, profile_takes_the_best_figure);
    tcase_add_test(c, measure_world_on_one_rank);
    tcase_add_test(c, report_names_and_json_from_hand_figures);
    suite_add_tcase(s, c);
    return s;
}
