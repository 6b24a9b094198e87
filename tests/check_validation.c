/* tests/check_validation.c — validation/: DeepSpeed logs against the ledger, monitor CSVs, trace
 * diff, calibrate and the executor report (validate --ratios). Logs are written here in
 * DeepSpeed's exact format (runtime/utils.py see_memory_usage: round(x / 1024^3, 2) printed by
 * Python, so "0.9" not "0.90"; Max_CA rounded to a whole GiB). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "campaign/campaign.h"
#include "common/rl.h"
#include "exec/exec.h"
#include "exec/result_json.h"
#include "kernels/adam.h"   /* kern_cuda_device_count */
#include "sim/hw.h"
#include "tests/util.h"
#include "traces/dslog.h"
#include "traces/trace.h"
#include "validation/ds_judge.h"
#include "validation/exec_row.h"
#include "validation/val.h"

#define TS "[2024-03-05 10:11:%02d,%03d] [INFO] [utils.py:%d:see_memory_usage] "

/* One see_memory_usage block as DeepSpeed 0.12.4 logs it. */
static void block(char *buf, size_t n, int sec, const char *msg, const char *ma, const char *cpu)
{
    size_t l = strlen(buf);
    snprintf(buf + l, n - l,
             TS "%s\n" TS "MA %s GB         Max_MA %s GB         CA %s GB         Max_CA %d GB \n"
             TS "CPU Virtual Memory:  used = %s GB, percent = 6.3%%\n",
             sec, 1, 802, msg, sec, 2, 803, ma, ma, ma, (int)lround(atof(ma)), sec, 3, 810, cpu);
}

/* The DeepSpeed 0.12.4 log of Megatron GPT-2.7B, TP 8, ratio <= 0.4 (N = 2), as docs/validation.md
 * quotes it: 0.63 / 1.88 / 5.65 / 6.58 GiB. n_sub and the MA of the last stage
 * are parameters so tests can break them. */
static const char *gpt27_log(const char *name, int n_sub, const char *last_ma, const char *iters)
{
    static char buf[8192];
    buf[0] = 0;
    char fp16[64];
    snprintf(fp16, sizeof fp16, "After creating fp16 partitions: %d", n_sub);
    block(buf, sizeof buf, 10, "Before creating fp16 partitions", "0.63", "30.5");
    block(buf, sizeof buf, 11, fp16, "0.63", "31.55");
    block(buf, sizeof buf, 12, "After creating fp32 partitions", "1.88", "31.6");
    block(buf, sizeof buf, 13, "After initializing optimizer states", "5.65", "31.62");
    block(buf, sizeof buf, 14, "After initializing ZeRO optimizer", last_ma, "32.3");
    size_t l = strlen(buf);
    snprintf(buf + l, sizeof buf - l, "%s", iters ? iters : "");
    return tu_write(name, buf);
}

START_TEST(stage_names_map_to_ledger_stages)
{
    int n;
    ck_assert_int_eq(val_ds_stage_of("After creating fp16 partitions: 7", &n), PLAN_STAGE_FP16_PARTITIONS);
    ck_assert_int_eq(n, 7);
    ck_assert_int_eq(val_ds_stage_of("After creating fp32 partitions", &n), PLAN_STAGE_FP32_PARTITIONS);
    ck_assert_int_eq(n, -1);
    ck_assert_int_eq(val_ds_stage_of("After initializing optimizer states", &n), PLAN_STAGE_OPTIMIZER_STATES);
    ck_assert_int_eq(val_ds_stage_of("After initializing ZeRO optimizer", &n), PLAN_STAGE_ZERO_OPTIMIZER);
    ck_assert_int_eq(val_ds_stage_of("Before creating fp16 partitions", &n), -1);
    ck_assert_int_eq(val_ds_stage_of("After creating fp16 partitions: x", &n), -1);
    ck_assert_int_eq(val_ds_stage_of("After creating fp32 partitions later", &n), -1);
}
END_TEST

START_TEST(median_skips_nothing_itself)
{
    double v[5] = {5, 1, 4, 2, 3};
    ck_assert(rl_median(v, 5) == 3);
    ck_assert(rl_median(v, 4) == 3);   /* 1 2 4 5 -> (2 + 4) / 2 */
    ck_assert(v[0] == 5);               /* input untouched */
    ck_assert(rl_median(v, 0) == 0);
}
END_TEST

START_TEST(iteration_lines_are_parsed)
{
    const char *p = tu_write("it.log",
        " iteration        1/      10 | consumed samples:            8 | elapsed time per iteration (ms): 9000.1 | learning rate: 1.000E-04 |\n"
        "[default0]: [2025-05-27 15:23:07] iteration        2/    24000 | consumed samples:  16 | elapsed time per iteration (ms): 271607.0 | lm loss: 1.1E+01 |\n"
        " iteration 3/ 10 | elapsed time per iteration (ms): 412.5/410.0 | x\n"
        "elapsed time per iteration (ms): nan |\n"
        "no timing here\n");
    double *ms;
    int64_t *it;
    int n;
    struct rl_err e = {0};
    ck_assert_int_eq(trace_ds_read_iterations(p, &ms, &it, &n, &e), 0);
    ck_assert_int_eq(n, 3);
    ck_assert(ms[0] == 9000.1 && ms[1] == 271607.0 && ms[2] == 412.5);
    ck_assert(it[0] == 1 && it[1] == 2 && it[2] == 3);
    free(ms);
    free(it);
}
END_TEST

/* val_ds_compare on a hand-made plan-free case: the time verdict from the median, first skipped. */
START_TEST(time_verdict_uses_median_without_first)
{
    struct plan p;
    memset(&p, 0, sizeof p);
    p.n_subgroups = 2;
    double ms[4] = {9000, 400, 410, 430};
    struct val_ds_opts o = {.tol_bytes = 0, .tol_time_pct = 5};
    struct val_ds_result r;
    struct rl_err e = {0};
    ck_assert_int_eq(val_ds_compare(&p, NULL, 0, ms, 4, 400000000, NULL, &o, &r, &e), 0);
    ck_assert(r.measured_step_ms == 410);
    ck_assert(fabs(r.step_error_pct - 2.5) < 1e-9);
    ck_assert_int_eq(r.time_status, VAL_PASS);
    ck_assert_int_eq(r.overall, VAL_PASS);
    val_ds_result_free(&r);
    ck_assert_int_eq(val_ds_compare(&p, NULL, 0, ms, 4, 380000000, NULL, &o, &r, &e), 0);
    ck_assert_int_eq(r.time_status, VAL_FAIL);   /* 410 vs 380: +7.9 % */
    ck_assert_int_eq(r.overall, VAL_FAIL);
    val_ds_result_free(&r);
    /* Nothing to compare at all. */
    ck_assert_int_eq(val_ds_compare(&p, NULL, 0, ms, 0, 1, NULL, &o, &r, &e), RL_EINVAL);
    ck_assert_ptr_eq(strstr(e.msg, "deepspeed_log: no allocation stage"), e.msg);   /* the field; cli/ adds the flag */
}
END_TEST

START_TEST(deepspeed_log_matching_the_ledger_passes)
{
    gpt27_log("ok.log", 2, "6.58", NULL);
    struct tu_run r;
    tu_ratiolab(&r, "validate --deepspeed-log ok.log --ratio 0.3 --json");
    ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
    ck_assert_msg(strncmp(r.out, "{\n  \"schema_version\": 1,", 24) == 0, "validate --json starts %.40s", r.out);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "PASS");
    json_t *st = json_object_get(j, "stages");
    ck_assert_int_eq(json_array_size(st), 5);
    ck_assert(json_is_null(json_object_get(json_array_get(st, 0), "ledger_stage")));
    json_t *s1 = json_array_get(st, 1);
    ck_assert_int_eq(json_integer_value(json_object_get(s1, "logged_subgroups")), 2);
    /* 0.63 GiB as DeepSpeed rounds it, exactly */
    ck_assert_int_eq(json_integer_value(json_object_get(s1, "logged_ma_bytes")), llround(0.63 * RL_GIB));
    /* The ledger's fp16 stage: 336768000 elements x 2 bytes (gpt-2.7b, TP 8, plan output). */
    ck_assert_int_eq(json_integer_value(json_object_get(s1, "predicted_gpu_bytes")), 673536000);
    json_decref(j);
    tu_run_free(&r);
}
END_TEST

START_TEST(wrong_subgroup_count_or_memory_fails)
{
    struct tu_run r;
    gpt27_log("n3.log", 3, "6.58", NULL);
    tu_ratiolab(&r, "validate --deepspeed-log n3.log --ratio 0.3");
    ck_assert_msg(r.status == 1, "status %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "3 vs 2"));
    tu_run_free(&r);
    gpt27_log("mem.log", 2, "6.8", NULL);   /* 0.22 GiB above the ledger */
    tu_ratiolab(&r, "validate --deepspeed-log mem.log --ratio 0.3");
    ck_assert_int_eq(r.status, 1);
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --deepspeed-log mem.log --ratio 0.3 --tolerance 0.25");
    ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
    tu_run_free(&r);
}
END_TEST

/* The stage check is two-sided: a DeepSpeed run that allocated 0.22 GiB less than the ledger
 * says is as much a mismatch as one that allocated more. */
START_TEST(memory_below_the_ledger_fails_too)
{
    struct tu_run r;
    gpt27_log("low.log", 2, "6.36", NULL);   /* 0.22 GiB below the ledger's 6.58 */
    tu_ratiolab(&r, "validate --deepspeed-log low.log --ratio 0.3");
    ck_assert_msg(r.status == 1, "status %d: %s%s", r.status, r.out, r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --deepspeed-log low.log --ratio 0.3 --tolerance 0.25");
    ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
    tu_run_free(&r);
}
END_TEST

/* The iteration time against predict's step: a log whose median equals the prediction passes,
 * one 50 % slower fails. The prediction is read from `ratiolab predict --json`. */
START_TEST(iteration_time_against_predict)
{
    struct tu_run r;
    tu_ratiolab(&r, "predict --ratio 0.3 --json");
    ck_assert_int_eq(r.status, 0);
    json_t *j = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    double pred_ms = (double)json_integer_value(json_object_get(json_object_get(j, "prediction"), "step_ns")) * 1e-6;
    json_decref(j);
    tu_run_free(&r);
    char it[1024];
    snprintf(it, sizeof it,
             " iteration        1/      10 | elapsed time per iteration (ms): %.1f |\n"
             " iteration        2/      10 | elapsed time per iteration (ms): %.1f |\n"
             " iteration        3/      10 | elapsed time per iteration (ms): %.1f |\n"
             " iteration        4/      10 | elapsed time per iteration (ms): %.1f |\n",
             pred_ms * 10, pred_ms * 0.99, pred_ms, pred_ms * 1.01);
    gpt27_log("t.log", 2, "6.58", it);
    tu_ratiolab(&r, "validate --deepspeed-log t.log --ratio 0.3 --tolerance 0.1,2");
    ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
    tu_run_free(&r);
    snprintf(it, sizeof it,
             " iteration        1/      10 | elapsed time per iteration (ms): %.1f |\n"
             " iteration        2/      10 | elapsed time per iteration (ms): %.1f |\n",
             pred_ms, pred_ms * 1.5);
    /* Stages in one file, iterations in another (DeepSpeed's stderr and Megatron's stdout). */
    gpt27_log("s.log", 2, "6.58", NULL);
    tu_write("i.log", it);
    tu_ratiolab(&r, "validate --deepspeed-log s.log i.log --ratio 0.3 --tolerance 0.1,10");
    ck_assert_msg(r.status == 1, "status %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "+50.0 %"));
    tu_run_free(&r);
}
END_TEST

/* The timers of a run with wall-clock breakdown, as DeepSpeed (timer.py) and Megatron (timers.py,
 * minmax and max options) print them; micro-step lines, the other Megatron timers and a timer
 * whose name only starts the same are not taken. */
START_TEST(timer_lines_are_parsed)
{
    char text[] =
        "[2024-05-01 10:01:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd_microstep: 1.00 | "
        "bwd_microstep: 2.00 | step_microstep: 3.00\n"
        "[default0]:[2024-05-01 10:01:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd: 190.50 | "
        "bwd: 4300.25 | bwd_inner: 1000.00 | bwd_allreduce: 3300.00 | step: 2400.00\n"
        " iteration        1/      10 | elapsed time per iteration (ms): 9000.0 |\n"
        "(min, max) time across ranks (ms):\n"
        "    forward-backward ...............................: (4480.00, 4500.00)\n"
        "    forward-backward-send-forward-backward-recv ....: (1.00, 2.00)\n"
        "    optimizer-inner-step ...........................: (7.00, 8.00)\n"
        "    optimizer ......................................: (2390.00, 2400.00)\n"
        "max time across ranks (ms):\n"
        "    forward-backward ...............................: 4600.00\n"
        "    optimizer ......................................: nan\n";
    struct trace_ds_timers t;
    struct rl_err e;
    ck_assert_int_eq(trace_ds_parse_timers(text, strlen(text), "t.log", &t, &e), 0);
    ck_assert_int_eq(t.n[TRACE_DST_FWD], 1);
    ck_assert(t.ms[TRACE_DST_FWD][0] == 190.5);
    ck_assert_int_eq(t.n[TRACE_DST_BWD], 1);
    ck_assert(t.ms[TRACE_DST_BWD][0] == 4300.25);
    ck_assert_int_eq(t.n[TRACE_DST_STEP], 1);
    ck_assert(t.ms[TRACE_DST_STEP][0] == 2400.0);
    ck_assert_int_eq(t.n[TRACE_DST_MEG_FWD_BWD], 2);
    ck_assert(t.ms[TRACE_DST_MEG_FWD_BWD][0] == 4500.0 && t.ms[TRACE_DST_MEG_FWD_BWD][1] == 4600.0);
    ck_assert_int_eq(t.n[TRACE_DST_MEG_OPT], 1);
    ck_assert(t.ms[TRACE_DST_MEG_OPT][0] == 2400.0);
    ck_assert_str_eq(trace_ds_timer_name(TRACE_DST_MEG_OPT), "optimizer");
    ck_assert_str_eq(trace_ds_timer_name(TRACE_DST_COUNT), "?");
    /* against windows of 200 / 4000 / 2500 ms and an iteration of 7100 ms, by hand */
    struct sim_step_result r;
    memset(&r, 0, sizeof r);
    r.window_forward_ns = 200000000;
    r.window_backward_ns = 4000000000LL;
    r.window_step_ns = 2500000000LL;
    struct val_ds_timers vt;
    val_ds_timers_compare(&t, &r, 7100, &vt);
    ck_assert_int_eq(vt.n_rows, 5);
    ck_assert_int_eq(vt.row[0].timer, TRACE_DST_FWD);
    ck_assert(fabs(vt.row[0].predicted_ms - 200) < 1e-9);
    ck_assert(fabs(vt.row[0].error_pct - (190.5 - 200) / 200 * 100) < 1e-9);
    ck_assert(fabs(vt.row[3].predicted_ms - 4200) < 1e-9);   /* forward + backward */
    ck_assert(vt.row[3].measured_ms == 4600.0);                /* the median without the first */
    ck_assert(fabs(vt.row[4].predicted_ms - 2500) < 1e-9);
    ck_assert(vt.have_outside);
    ck_assert(fabs(vt.outside_ms - (7100 - 4600 - 2400)) < 1e-9);
    ck_assert_str_eq(vt.outside_of, "forward-backward + optimizer");
    val_ds_timers_compare(&t, &r, -1, &vt);
    ck_assert(!vt.have_outside);
    trace_ds_timers_free(&t);
}
END_TEST

/* validate --deepspeed-log shows the timers next to predict's windows, read from predict --json. */
START_TEST(validate_shows_timers_next_to_windows)
{
    struct tu_run r;
    tu_ratiolab(&r, "predict --ratio 0.3 --json");
    ck_assert_int_eq(r.status, 0);
    json_t *j = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_t *w = json_object_get(json_object_get(j, "prediction"), "windows");
    double f = (double)json_integer_value(json_object_get(w, "forward_ns")) * 1e-6;
    double b = (double)json_integer_value(json_object_get(w, "backward_ns")) * 1e-6;
    double s = (double)json_integer_value(json_object_get(w, "step_ns")) * 1e-6;
    ck_assert(f > 0 && b > 0 && s > 0);
    json_decref(j);
    tu_run_free(&r);
    char it[1024];
    snprintf(it, sizeof it,
             " iteration        1/      10 | elapsed time per iteration (ms): %.1f |\n"
             "[Rank 0] time (ms) | fwd: %.2f | bwd: %.2f | step: %.2f\n",
             f + b + s + 50, f, b * 1.2, s);
    gpt27_log("tm.log", 2, "6.58", it);
    tu_ratiolab(&r, "validate --deepspeed-log tm.log --ratio 0.3 --json");
    ck_assert_msg(r.status == 0 || r.status == 1, "status %d: %s%s", r.status, r.out, r.err);
    j = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_t *tm = json_object_get(j, "timers");
    ck_assert_int_eq(json_array_size(tm), 3);
    json_t *bwd = json_array_get(tm, 1);
    ck_assert_str_eq(json_string_value(json_object_get(bwd, "timer")), "bwd");
    ck_assert(fabs(json_real_value(json_object_get(bwd, "error_pct")) - 20.0) < 0.01);
    ck_assert(fabs(json_real_value(json_object_get(j, "outside_timers_ms")) - (50.0 + b - b * 1.2)) < 0.05);
    json_decref(j);
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --deepspeed-log tm.log --ratio 0.3");
    ck_assert_ptr_nonnull(strstr(r.out, "backward window"));
    ck_assert_ptr_nonnull(strstr(r.out, "+20.0%"));
    tu_run_free(&r);
}
END_TEST

static const char *mon_header =
    "t_ns,pid,ppid,comm,rank,rss_bytes,anon_bytes,file_bytes,shmem_bytes,hwm_bytes,locked_bytes,"
    "pinned_bytes,swap_bytes,gpu_bytes,cpu_percent,threads,system_used_bytes\n";

START_TEST(monitor_csv_gives_per_process_host_growth)
{
    /* Launcher 10 (no rank), rank 0 = pid 11 from 2 GiB to 2 + 1.63 GiB, rank 1 = pid 12. */
    char csv[4096];
    int64_t g = 1073741824, peak = 2 * g + 1750000000;   /* 1.63 GiB = ledger host peak */
    snprintf(csv, sizeof csv,   /* with the comment lines monitor writes: skipped */
             "# ratiolab 0.1.0 monitor\n%s# followed: pid 10 and its descendants\n"
             "0,10,1,deepspeed,-1,50000000,1,1,1,50000000,0,0,0,unavailable,1.0,1,100\n"
             "0,11,10,python,0,%lld,1,1,1,%lld,0,0,0,unavailable,1.0,1,100\n"
             "0,12,10,python,1,%lld,1,1,1,%lld,0,0,0,unavailable,1.0,1,100\n"
             "100,11,10,python,0,%lld,1,1,1,%lld,0,0,0,unavailable,1.0,1,100\n",
             mon_header, (long long)(2 * g), (long long)(2 * g), (long long)(3 * g), (long long)(3 * g),
             (long long)(peak - 1000), (long long)peak);
    const char *p = tu_write("m.csv", csv);
    struct val_monitor m;
    struct rl_err e = {0};
    ck_assert_msg(val_monitor_read(p, &m, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(m.n_procs, 3);
    const struct val_mon_proc *r0 = val_monitor_rank(&m, 0);
    ck_assert_ptr_nonnull(r0);
    ck_assert_int_eq(r0->pid, 11);
    ck_assert_int_eq(r0->first_rss_bytes, 2 * g);
    ck_assert_int_eq(r0->peak_rss_bytes, peak);
    ck_assert_int_eq(r0->samples, 2);
    val_monitor_free(&m);
    /* refused input names the field (cli/ puts --monitor in its place) */
    const char *empty = tu_write("empty.csv", mon_header);
    ck_assert_int_eq(val_monitor_read(empty, &m, &e), RL_EINVAL);
    ck_assert_ptr_eq(strstr(e.msg, "monitor_csv "), e.msg);
    ck_assert_ptr_nonnull(strstr(e.msg, ": no samples"));
    gpt27_log("h.log", 2, "6.58", NULL);
    struct tu_run r;
    tu_ratiolab(&r, "validate --deepspeed-log h.log --ratio 0.3 --monitor m.csv");
    ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "pid 11"));
    tu_run_free(&r);
    /* A bad row names the file, line and column. */
    snprintf(csv, sizeof csv, "%s0,11,10,python,0,12x,1,1,1,5,0,0,0,unavailable,1.0,1,100\n", mon_header);
    tu_write("bad.csv", csv);
    tu_ratiolab(&r, "validate --deepspeed-log h.log --ratio 0.3 --monitor bad.csv");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "line 2: column 'rss_bytes': '12x'"));
    tu_run_free(&r);
}
END_TEST

START_TEST(validate_bad_input_exits_2)
{
    struct tu_run r;
    tu_ratiolab(&r, "validate --deepspeed-log nosuch.log");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "nosuch.log"));
    tu_run_free(&r);
    tu_write("empty.log", "nothing of DeepSpeed here\n");
    tu_ratiolab(&r, "validate --deepspeed-log empty.log");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "see_memory_usage"));
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --deepspeed-log x.log --tolerance -1");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--tolerance"));
    tu_run_free(&r);
    tu_ratiolab(&r, "validate stray");
    ck_assert_int_eq(r.status, 2);
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --help");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--deepspeed-log"));
    tu_run_free(&r);
}
END_TEST


/* Hand-made spans: rank 0 forward [0,10), backward [5,20) overlapping, cpu_adam on socket pid 100
 * tid 0 [15,30); a gap, then reduce_scatter [40,50) via args.rank; rank 1 one span. Expected values
 * worked out by hand from the priority order forward > backward > ... > cpu_adam > reduce_scatter. */
START_TEST(trace_times_attribute_exposure_by_priority)
{
    const char *p = tu_write("h.json",
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"pid\":1,\"tid\":0,\"name\":\"f\",\"cat\":\"forward\",\"ts\":0.000,\"dur\":0.010},"
        "{\"ph\":\"X\",\"pid\":1,\"tid\":0,\"name\":\"b\",\"cat\":\"backward\",\"ts\":0.005,\"dur\":0.015},"
        "{\"ph\":\"X\",\"pid\":100,\"tid\":0,\"name\":\"a\",\"cat\":\"cpu_adam\",\"ts\":0.015,\"dur\":0.015},"
        "{\"ph\":\"X\",\"pid\":300,\"tid\":9,\"name\":\"r\",\"cat\":\"reduce_scatter\",\"ts\":0.040,\"dur\":0.010,\"args\":{\"rank\":0}},"
        "{\"ph\":\"X\",\"pid\":2,\"tid\":0,\"name\":\"f\",\"cat\":\"forward\",\"ts\":0.000,\"dur\":0.007},"
        "{\"ph\":\"X\",\"pid\":2,\"tid\":0,\"name\":\"x\",\"cat\":\"not a phase\",\"ts\":0.000,\"dur\":0.100}"
        "]}");
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(p, &d, &e) == 0, "%s", e.msg);
    struct val_trace_times t;
    ck_assert_int_eq(val_trace_times(&d, &t, &e), 0);
    trace_doc_free(&d);
    ck_assert_int_eq(t.n_ranks, 2);
    const struct val_rank_times *r0 = val_trace_rank(&t, 0), *r1 = val_trace_rank(&t, 1);
    ck_assert_ptr_nonnull(r0);
    ck_assert_int_eq(r0->busy_ns[0], 10);       /* forward */
    ck_assert_int_eq(r0->exposed_ns[0], 10);
    ck_assert_int_eq(r0->busy_ns[1], 15);       /* backward */
    ck_assert_int_eq(r0->exposed_ns[1], 10);    /* [10,20) */
    ck_assert_int_eq(r0->busy_ns[3], 15);       /* cpu_adam */
    ck_assert_int_eq(r0->exposed_ns[3], 10);    /* [20,30) */
    ck_assert_int_eq(r0->busy_ns[6], 10);       /* reduce_scatter */
    ck_assert_int_eq(r0->exposed_ns[6], 10);
    ck_assert_int_eq(r0->extent_ns, 50);
    ck_assert_int_eq(r0->idle_ns, 10);          /* [30,40) */
    ck_assert_int_eq(r1->busy_ns[0], 7);
    ck_assert_int_eq(r1->extent_ns, 7);
    ck_assert_ptr_null(val_trace_rank(&t, 2));
    val_trace_times_free(&t);
}
END_TEST

/* The simulator's own breakdown, recovered from its trace: predict --json gives busy and exposed
 * per phase for the critical rank; trace diff of that trace against itself must show the same
 * figures on both sides and zero differences. */
START_TEST(trace_diff_recovers_predict_breakdown)
{
    struct tu_run r;
    tu_ratiolab(&r, "predict --ratio 0.5 --schedule overlap --json --trace p.json.gz");
    ck_assert_int_eq(r.status, 0);
    json_t *pj = json_loads(r.out, 0, NULL);
    tu_run_free(&r);
    ck_assert_ptr_nonnull(pj);
    json_t *pred = json_object_get(pj, "prediction");
    int crit = (int)json_integer_value(json_object_get(pred, "critical_rank"));
    tu_ratiolab(&r, "trace diff p.json.gz p.json.gz --json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    json_t *dj = json_loads(r.out, 0, NULL);
    tu_run_free(&r);
    ck_assert_ptr_nonnull(dj);
    json_t *ranks = json_object_get(dj, "ranks");
    ck_assert_int_eq(json_array_size(ranks), 8);
    json_t *rk = json_array_get(ranks, (size_t)crit);
    ck_assert_int_eq(json_integer_value(json_object_get(rk, "rank")), crit);
    const char *k;
    json_t *v;
    int checked = 0;
    json_object_foreach(json_object_get(pred, "phases"), k, v) {
        json_t *a = json_object_get(json_object_get(json_object_get(rk, "a"), "phases"), k);
        json_t *df = json_object_get(json_object_get(json_object_get(rk, "diff"), "phases"), k);
        ck_assert_ptr_nonnull(a);
        ck_assert_int_eq(json_integer_value(json_object_get(a, "busy_ns")), json_integer_value(json_object_get(v, "busy_ns")));
        ck_assert_int_eq(json_integer_value(json_object_get(a, "exposed_ns")), json_integer_value(json_object_get(v, "exposed_ns")));
        ck_assert_int_eq(json_integer_value(json_object_get(df, "busy_ns")), 0);
        checked += json_integer_value(json_object_get(v, "busy_ns")) > 0;
    }
    ck_assert_int_ge(checked, 4);
    /* The trace's extent runs from the first span to the last, the step from 0 to the end: the
     * simulator's idle is the trace's plus what lies outside the extent. */
    int64_t ext = json_integer_value(json_object_get(json_object_get(rk, "a"), "extent_ns"));
    int64_t step = json_integer_value(json_object_get(pred, "step_ns"));
    ck_assert_int_le(ext, step);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(rk, "a"), "idle_ns")) + (step - ext),
                     json_integer_value(json_object_get(pred, "idle_ns")));
    json_decref(pj);
    json_decref(dj);
    /* Human table, and bad input. */
    tu_ratiolab(&r, "trace diff p.json.gz p.json.gz");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "rank 7"));
    tu_run_free(&r);
    tu_ratiolab(&r, "trace diff p.json.gz");
    ck_assert_int_eq(r.status, 2);
    tu_run_free(&r);
    tu_ratiolab(&r, "trace show p.json.gz p.json.gz");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "allowed: diff"));
    tu_run_free(&r);
    tu_write("e.json", "{\"traceEvents\":[]}");
    tu_ratiolab(&r, "trace diff e.json p.json.gz");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "e.json"));
    tu_run_free(&r);
}
END_TEST


/* calibrate writes a profile that loads, whose every number is sourced as measured here, and that
 * predict accepts; bad input leaves no file. */
START_TEST(calibrate_writes_a_loadable_sourced_profile)
{
    struct tu_run r;
    tu_ratiolab(&r, "calibrate --quiet --max-threads 1 --devices 2 --out cal.json --name test-cal");
    ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "DRAM triad"));
    tu_run_free(&r);
    char path[512];
    snprintf(path, sizeof path, "%s/cal.json", tu_tmpdir());
    struct hw_profile hw;
    struct rl_err e = {0};
    ck_assert_msg(sim_hw_load(&hw, NULL, path, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(hw.name, "test-cal");
    ck_assert_int_eq(hw.gpus, 2);
    ck_assert_int_eq(hw.gpu_emulated, 1);
    ck_assert_int_ge(hw.gpu_emulated_cores, 1);
    ck_assert(hw.socket[0].dram_gbps >= 1);
    ck_assert(hw.cpu_adam_elems_per_core >= 1e6);
    json_t *j = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(j);
    const char *k;
    json_t *v;
    int n = 0;
    json_object_foreach(json_object_get(j, "sources"), k, v) {
        ck_assert_msg(strncmp(json_string_value(v), "measured by ratiolab calibrate on ", 34) == 0, "%s", k);
        n++;
    }
    ck_assert_int_eq(n, hw.n_sources);
    ck_assert_int_ge(n, 30);
    json_decref(j);
    tu_ratiolab(&r, "predict --hw ./cal.json --model gpt-350m --tp 1 --gpus 2 --ratio 0.5 --json");
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    tu_run_free(&r);
    int files = tu_count_files();
    tu_ratiolab(&r, "calibrate --quiet --devices 0 --out bad.json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--devices"));
    tu_run_free(&r);
    ck_assert_int_eq(tu_count_files(), files);
}
END_TEST

/* The emulated-device keys are optional (catalog profiles leave them out) and range-checked. */
START_TEST(hw_emulated_keys_are_optional)
{
    struct hw_profile hw;
    struct rl_err e = {0};
    char cat[512];
    snprintf(cat, sizeof cat, "%s/catalog", tu_src());
    ck_assert_msg(sim_hw_load(&hw, cat, "dgx1-v100", &e) == 0, "%s", e.msg);
    ck_assert_int_eq(hw.gpu_emulated, 0);
    ck_assert_int_eq(hw.gpu_emulated_cores, 0);
    char *text;
    size_t len;
    char path[600];
    snprintf(path, sizeof path, "%s/hardware/dgx1-v100.json", cat);
    ck_assert_int_eq(rl_read_file(path, &text, &len, &e), 0);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    json_object_set_new(json_object_get(j, "gpu"), "emulated", json_integer(2));
    json_object_set_new(json_object_get(j, "sources"), "gpu.emulated", json_string("test"));
    text = json_dumps(j, 0);
    ck_assert_int_eq(sim_hw_parse(&hw, text, "t.json", &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpu.emulated"));
    free(text);
    json_object_set_new(json_object_get(j, "gpu"), "emulated", json_integer(1));
    text = json_dumps(j, 0);
    ck_assert_msg(sim_hw_parse(&hw, text, "t.json", &e) == 0, "%s", e.msg);
    ck_assert_int_eq(hw.gpu_emulated, 1);
    free(text);
    json_decref(j);
}
END_TEST

/* predict --json of gpt-350m on two data-parallel GPUs of `hw`, ratio r, overlap: the phases. */
static json_t *predict_phases(const char *hw, double r, int64_t *step_ns)
{
    struct tu_run run;
    tu_ratiolab(&run, "predict --hw %s --model gpt-350m --tp 1 --dp 2 --ratio %g --policy exact --schedule overlap "
                "--json", hw, r);
    ck_assert_msg(run.status == 0, "predict: %s", run.err);
    json_t *j = json_loads(run.out, 0, NULL);
    tu_run_free(&run);
    ck_assert_ptr_nonnull(j);
    json_t *p = json_object_get(j, "prediction");
    *step_ns = json_integer_value(json_object_get(p, "step_ns"));
    json_t *ph = json_incref(json_object_get(p, "phases"));
    json_decref(j);
    return ph;
}

static int64_t ph_ns(json_t *ph, const char *name, const char *key)
{
    return json_integer_value(json_object_get(json_object_get(ph, name), key));
}

/* An emulated device (gpu.emulated 1) is modelled as the cpu backend runs it: its memory traffic
 * is the socket's DRAM, shared by the devices (two devices' Adams on a 90 GB/s socket each get
 * 45 GB/s instead of their own 900 x 0.85 GB/s), and its collectives block the
 * compute (the all-gathers are exposed, not prefetched under it). The same profile
 * without the key is a real GPU: overlapped gathers, Adam at the HBM rate. */
START_TEST(emulated_device_shares_dram_and_runs_in_order)
{
    char path[600], *text;
    size_t len;
    struct rl_err e = {0};
    snprintf(path, sizeof path, "%s/catalog/hardware/dgx1-v100.json", tu_src());
    ck_assert_int_eq(rl_read_file(path, &text, &len, &e), 0);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    json_t *gpu = json_object_get(j, "gpu"), *src = json_object_get(j, "sources");
    double hbm = json_number_value(json_object_get(gpu, "hbm_gbps")) *
                 json_number_value(json_object_get(gpu, "hbm_efficiency"));
    double dram = json_number_value(json_object_get(json_array_get(json_object_get(json_object_get(j, "node"),
                                                                                   "sockets"), 0), "dram_gbps"));
    ck_assert(dram / 2 < hbm);
    json_object_set_new(gpu, "emulated", json_integer(1));
    json_object_set_new(gpu, "emulated_cores", json_integer(1));
    json_object_set_new(src, "gpu.emulated", json_string("test"));
    json_object_set_new(src, "gpu.emulated_cores", json_string("test"));
    text = json_dumps(j, 0);
    json_decref(j);
    const char *emu = tu_write("emulated.json", text);
    free(text);
    int64_t real_step, emu_step;
    json_t *a = predict_phases("dgx1-v100", 0, &real_step), *b = predict_phases(emu, 0, &emu_step);
    /* Adam: the HBM rate on the real GPU, half the socket's DRAM each on the emulated ones. */
    double ratio = (double)ph_ns(b, "gpu_adam", "busy_ns") / (double)ph_ns(a, "gpu_adam", "busy_ns");
    ck_assert_msg(fabs(ratio / (hbm / (dram / 2)) - 1) < 0.01, "gpu_adam emulated / real = %g, expected %g", ratio,
                  hbm / (dram / 2));
    /* Gathers: partly hidden under the compute on the GPU, all exposed on the emulated device. */
    ck_assert_int_lt(ph_ns(a, "allgather", "exposed_ns"), ph_ns(a, "allgather", "busy_ns"));
    ck_assert_int_eq(ph_ns(b, "allgather", "exposed_ns"), ph_ns(b, "allgather", "busy_ns"));
    ck_assert_int_eq(ph_ns(b, "forward", "busy_ns"), ph_ns(a, "forward", "busy_ns"));
    ck_assert_int_gt(emu_step, real_step);
    /* With the executor's synthetic gradient shares calibrated (1e9 elements/s), every bucket's
     * elements are written on the compute thread before its reduce-scatter: the backward grows by
     * all the gradients (dp x the partition) / 1e9 s; the forward does not change. */
    char *et = tu_slurp("emulated.json");
    json_t *k = json_loads(et, 0, NULL);
    free(et);
    ck_assert_ptr_nonnull(k);
    json_object_set_new(json_object_get(k, "gpu"), "emulated_grad_elements_per_s", json_real(1e9));
    json_object_set_new(json_object_get(k, "sources"), "gpu.emulated_grad_elements_per_s", json_string("test"));
    text = json_dumps(k, 0);
    json_decref(k);
    const char *syn = tu_write("emulated-grad.json", text);
    free(text);
    int64_t syn_step;
    json_t *c = predict_phases(syn, 0, &syn_step);
    struct tu_run run;
    tu_ratiolab(&run, "predict --hw %s --model gpt-350m --tp 1 --dp 2 --ratio 0 --policy exact --json", syn);
    json_t *pj = json_loads(run.out, 0, NULL);
    tu_run_free(&run);
    double grads = 2.0 * (double)json_integer_value(json_object_get(pj, "per_rank_numel"));
    json_decref(pj);
    double grew = (double)(ph_ns(c, "backward", "busy_ns") - ph_ns(b, "backward", "busy_ns")) * 1e-9;
    ck_assert_msg(fabs(grew / (grads / 1e9) - 1) < 0.01, "backward grew %g s for %g gradients at 1e9/s", grew, grads);
    ck_assert_int_eq(ph_ns(c, "forward", "busy_ns"), ph_ns(b, "forward", "busy_ns"));
    ck_assert_int_gt(syn_step, emu_step);
    json_decref(a);
    json_decref(b);
    json_decref(c);
}
END_TEST

/* Two rows built by hand; each check is broken on purpose and must fail, and the JSON carries the
 * schema the plots read. */
static void two_rows(struct val_report *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->model, sizeof r->model, "m");
    snprintf(r->hardware, sizeof r->hardware, "hw");
    snprintf(r->backend, sizeof r->backend, "cpu");
    snprintf(r->policy, sizeof r->policy, "exact");
    r->ranks = 2;
    r->mem_tol_pct = 10;
    r->gate_time_pct = -1;
    r->have_reference = true;
    r->reference_digest = 0xabcdef01u;
    r->n_rows = 2;
    for (int i = 0; i < 2; i++) {
        struct val_row *w = &r->rows[i];
        w->ratio = i ? 0.5 : 0;
        snprintf(w->schedule, sizeof w->schedule, "overlap");
        snprintf(w->policy, sizeof w->policy, "exact");
        w->digest = 0xabcdef01u;
        w->plan_per_rank_numel = 10240;
        w->plan_cpu_numel = i ? 5120 : 0;
        w->plan_honored_ratio = (double)w->plan_cpu_numel / 10240;
        w->plan_device_bytes = 1000 + i;
        w->plan_host_bytes = 2000 + i;
        w->predicted.step_ns = 100;
        w->measured.step_ns = i ? 110 : 95;   /* errors +10 % and -5 %: MAPE 7.5 % */
        w->predicted.busy_ns[3] = 40;
        w->measured.busy_ns[3] = 50;
        w->predicted.exposed_ns[2] = 2000000;
        w->measured.exposed_ns[2] = i ? 5000000 : 4000000;   /* +3 and +2 ms: mean +2.5 ms */
        w->predicted.exposed_ns[4] = 1000000;
        w->measured.exposed_ns[4] = 0;   /* -1 ms */
        w->n_ranks = 2;
        for (int k = 0; k < 2; k++)
            w->mem[k] = (struct val_rank_mem){w->plan_device_bytes, w->plan_host_bytes, w->plan_cpu_numel,
                                              10240, 1000000 + w->plan_host_bytes, 1000000, -1, -1, 0, 0};
    }
}

static const struct val_check *find_check(const struct val_report *r, const char *name)
{
    for (int i = 0; i < r->n_checks; i++)
        if (strcmp(r->checks[i].name, name) == 0)
            return &r->checks[i];
    return NULL;
}

START_TEST(report_checks_fail_when_broken)
{
    struct val_report *r = malloc(sizeof *r);
    two_rows(r);
    val_report_check(r);
    ck_assert_int_eq(find_check(r, "bitwise")->status, VAL_PASS);
    ck_assert_int_eq(find_check(r, "honored_ratio")->status, VAL_PASS);
    ck_assert_int_eq(find_check(r, "memory_ledger")->status, VAL_PASS);
    ck_assert_int_eq(find_check(r, "memory_process")->status, VAL_PASS);
    ck_assert_int_eq(find_check(r, "time")->status, VAL_INFO);
    ck_assert(fabs(r->step_mape_pct - 7.5) < 1e-9);
    ck_assert(fabs(r->phase_mape_pct[3] - 25) < 1e-9);
    ck_assert(fabs(r->phase_exposed_error_ms[2] - 2.5) < 1e-9);
    ck_assert(fabs(r->phase_exposed_error_ms[4] + 1.0) < 1e-9);
    char want[160];
    snprintf(want, sizeof want, "largest share of the step error: %s, exposed +2.500 ms", sim_phase_name(2));
    const struct val_check *tc = find_check(r, "time");
    ck_assert_ptr_nonnull(tc);
    const char *td = tc->detail;
    ck_assert_msg(strstr(td, want) != NULL, "%s", td);
    ck_assert(!val_report_failed(r));
    r->gate_time_pct = 5;
    val_report_check(r);
    ck_assert_int_eq(find_check(r, "time")->status, VAL_FAIL);
    ck_assert(val_report_failed(r));
    two_rows(r);
    r->rows[1].digest ^= 1;
    val_report_check(r);
    ck_assert_int_eq(find_check(r, "bitwise")->status, VAL_FAIL);
    two_rows(r);
    r->reference_digest ^= 1;
    val_report_check(r);
    ck_assert_int_eq(find_check(r, "bitwise")->status, VAL_FAIL);
    two_rows(r);
    r->rows[1].mem[1].host_placed_numel--;
    val_report_check(r);
    ck_assert_int_eq(find_check(r, "honored_ratio")->status, VAL_FAIL);
    two_rows(r);
    r->rows[1].plan_cpu_numel = r->rows[1].mem[0].host_placed_numel = r->rows[1].mem[1].host_placed_numel = 5120 + 256;
    r->rows[1].plan_honored_ratio = 5376.0 / 10240;   /* one granule off 0.5 under exact */
    val_report_check(r);
    ck_assert_int_eq(find_check(r, "honored_ratio")->status, VAL_FAIL);
    two_rows(r);
    r->rows[0].mem[1].ledger_host_bytes++;
    val_report_check(r);
    ck_assert_int_eq(find_check(r, "memory_ledger")->status, VAL_FAIL);
    ck_assert(val_report_failed(r));
    two_rows(r);
    r->rows[0].mem[0].rss_bytes = 1002000 + 2 * VAL_MEM_FLOOR_BYTES;   /* far beyond 10 % and the floor */
    val_report_check(r);
    ck_assert_int_eq(find_check(r, "memory_process")->status, VAL_FAIL);

    two_rows(r);
    val_report_check(r);
    char *text;
    struct rl_err e = {0};
    ck_assert_int_eq(val_report_json(r, &text, &e), 0);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "schema_version")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(j, "kind")), "ratiolab-validate-report");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "ranks")), 2);
    json_t *row = json_array_get(json_object_get(j, "rows"), 1);
    ck_assert(json_real_value(json_object_get(row, "ratio")) == 0.5);
    ck_assert_str_eq(json_string_value(json_object_get(row, "schedule")), "overlap");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(row, "measured"), "step_ns")), 110);
    json_t *ph = json_object_get(json_object_get(json_object_get(row, "predicted"), "phases"), "cpu_adam");
    ck_assert_int_eq(json_integer_value(json_object_get(ph, "busy_ns")), 40);
    ck_assert(fabs(json_real_value(json_object_get(row, "step_error_pct")) - 10) < 1e-9);
    json_t *ck = json_array_get(json_object_get(j, "checks"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(ck, "name")), "bitwise");
    ck_assert_str_eq(json_string_value(json_object_get(ck, "status")), "PASS");
    json_decref(j);
    ck_assert_int_eq(val_report_md(r, &text, &e), 0);
    ck_assert_ptr_nonnull(strstr(text, "| bitwise | PASS |"));
    ck_assert_ptr_nonnull(strstr(text, "| +10.00 |"));
    free(text);
    /* Issue 38 item 11: a prediction of another machine (the cpu backend without --calibrate) has
     * no time error: the time check is information, not gated, and report.md prints none. */
    two_rows(r);
    r->gate_time_pct = 5;
    snprintf(r->time_skipped, sizeof r->time_skipped, "the prediction is of the dgx1-v100 profile");
    val_report_check(r);
    ck_assert_int_eq(find_check(r, "time")->status, VAL_INFO);
    ck_assert(!find_check(r, "time")->gated && !val_report_failed(r));
    ck_assert_ptr_nonnull(strstr(find_check(r, "time")->detail, "not compared: the prediction is of the dgx1-v100"));
    ck_assert_int_eq(val_report_md(r, &text, &e), 0);
    ck_assert_msg(!strstr(text, "+10.00") && !strstr(text, "Step MAPE") && strstr(text, "Step times not compared"), "%s", text);
    free(text);
    free(r);
}
END_TEST


static bool have_mpirun(void)
{
    return system("command -v mpirun >/dev/null 2>&1") == 0;
}

/* The small validate `make test` runs: the cpu backend, two ranks under mpirun, ratios 0, 0.5, 1;
 * gated: bitwise, honored ratio, memory. Under ASan the process memory check is not meaningful
 * (shadow memory and the sanitizer's allocator change RSS), so there only checks 1-3's ledger
 * parts are required to pass. */
START_TEST(validate_cpu_backend_two_ranks)
{
    struct tu_run r;
    /* The ranks mpirun starts run without LeakSanitizer (Open MPI's dlclose'd plugins leak as
     * unknown modules; tests/check_exec.c does the same); validate's own code is leak-checked by
     * the --deepspeed-log tests. */
    tu_sh(&r, "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 '%s' validate --model gpt-350m --scale 300 --seq-len 16 "
              "--ranks 2 --ratios 0,0.5,1 --steps 1 --also-hw dgx-a100-40g --out vout", tu_bin());
    char path[512];
    snprintf(path, sizeof path, "%s/vout/report.json", tu_tmpdir());
    json_t *j = json_load_file(path, 0, NULL);
    ck_assert_msg(j != NULL, "no report.json; status %d: %s%s", r.status, r.out, r.err);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "schema_version")), 1);
    ck_assert_int_eq(json_array_size(json_object_get(j, "rows")), 3);
    json_t *cks = json_object_get(j, "checks");
    bool san = strstr(tu_build(), "build-san") != NULL;
    for (size_t i = 0; i < json_array_size(cks); i++) {
        json_t *c = json_array_get(cks, i);
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *st = json_string_value(json_object_get(c, "status"));
        if (strcmp(name, "time") == 0 || (san && strcmp(name, "memory_process") == 0))
            continue;
        ck_assert_msg(strcmp(st, "PASS") == 0, "%s: %s: %s", name, st,
                      json_string_value(json_object_get(c, "detail")));
    }
    if (!san)
        ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
    /* Every ratio: the same digest; the exact policy's honored ratio is the request. */
    json_t *rows = json_object_get(j, "rows");
    const char *d0 = json_string_value(json_object_get(json_array_get(rows, 0), "digest"));
    for (size_t i = 0; i < 3; i++) {
        json_t *w = json_array_get(rows, i);
        ck_assert_str_eq(json_string_value(json_object_get(w, "digest")), d0);
        ck_assert(fabs(json_real_value(json_object_get(w, "honored_ratio")) - json_real_value(json_object_get(w, "ratio"))) < 1e-3);
        ck_assert_int_gt(json_integer_value(json_object_get(json_object_get(w, "predicted"), "step_ns")), 0);
        ck_assert_int_gt(json_integer_value(json_object_get(json_object_get(w, "measured"), "step_ns")), 0);
        /* how much of the machine others used meanwhile: a share, measured for launched runs */
        json_t *oc = json_object_get(w, "others_cpu_pct");
        ck_assert_msg(json_is_number(oc) && json_number_value(oc) >= 0 && json_number_value(oc) <= 100,
                      "others_cpu_pct %s", json_is_number(oc) ? "out of range" : "missing");
    }
    /* --also-hw: the same rows (digest, measurement) predicted with another profile. */
    snprintf(path, sizeof path, "%s/vout/also/report.json", tu_tmpdir());
    json_t *ja = json_load_file(path, 0, NULL);
    ck_assert_msg(ja != NULL, "no also/report.json: %s", r.err);
    ck_assert_msg(strstr(json_string_value(json_object_get(ja, "hardware")), "dgx-a100-40g"), "%s",
                  json_string_value(json_object_get(ja, "hardware")));
    json_t *ra = json_object_get(ja, "rows");
    ck_assert_int_eq(json_array_size(ra), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *w = json_array_get(rows, i), *wa = json_array_get(ra, i);
        ck_assert_str_eq(json_string_value(json_object_get(wa, "digest")), d0);
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(wa, "measured"), "step_ns")),
                         json_integer_value(json_object_get(json_object_get(w, "measured"), "step_ns")));
        int64_t pa = json_integer_value(json_object_get(json_object_get(wa, "predicted"), "step_ns"));
        int64_t pm = json_integer_value(json_object_get(json_object_get(w, "predicted"), "step_ns"));
        ck_assert_msg(pa > 0 && pa != pm, "row %zu: predicted %lld with both profiles", i, (long long)pa);
    }
    json_decref(ja);
    json_decref(j);
    snprintf(path, sizeof path, "%s/vout/report.md", tu_tmpdir());
    ck_assert(tu_exists(path));
    snprintf(path, sizeof path, "%s/vout/also/report.md", tu_tmpdir());
    ck_assert(tu_exists(path));
    tu_run_free(&r);
    /* Bad input: no file, exit 2. */
    tu_ratiolab(&r, "validate --ratios 0,2 --out v2");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--ratios"));
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --ratios 0,1");
    ck_assert_int_eq(r.status, 2);
    tu_run_free(&r);
}
END_TEST

/* Under an existing mpirun validate launches nothing: every rank runs the executor in its own
 * process, rank 0 reports. Two schedules x two policies x two ratios: one digest across all eight,
 * the reference's; ledger and honored ratio on every rank. A list with a bad name is refused. */
START_TEST(validate_under_mpirun_schedules_and_policies)
{
    struct tu_run r;
    tu_sh(&r, "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 "
              "timeout 280 mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -np 2 '%s' validate "
              "--model gpt-350m --scale 300 --seq-len 16 --ratios 0,0.5 --steps 1 --schedule overlap,deepspeed "
              "--policy exact,deepspeed-0.12 --out vmpi", tu_bin());
    char path[512];
    snprintf(path, sizeof path, "%s/vmpi/report.json", tu_tmpdir());
    json_t *j = json_load_file(path, 0, NULL);
    ck_assert_msg(j != NULL, "no report.json; status %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_null(strstr(r.err, "mpirun was unable"));
    json_t *rows = json_object_get(j, "rows");
    ck_assert_int_eq(json_array_size(rows), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "ranks")), 2);
    int seen[2][2] = {{0}};
    for (size_t i = 0; i < 8; i++) {
        json_t *w = json_array_get(rows, i);
        const char *sch = json_string_value(json_object_get(w, "schedule"));
        const char *pol = json_string_value(json_object_get(w, "policy"));
        seen[strcmp(sch, "overlap") == 0][strcmp(pol, "exact") == 0]++;
        ck_assert(json_is_null(json_object_get(w, "others_cpu_pct")));   /* not this process's children */
    }
    ck_assert(seen[0][0] == 2 && seen[0][1] == 2 && seen[1][0] == 2 && seen[1][1] == 2);
    json_t *cks = json_object_get(j, "checks");
    for (size_t i = 0; i < json_array_size(cks); i++) {
        json_t *c = json_array_get(cks, i);
        const char *name = json_string_value(json_object_get(c, "name"));
        if (strcmp(name, "bitwise") && strcmp(name, "honored_ratio") && strcmp(name, "memory_ledger"))
            continue;
        ck_assert_msg(strcmp(json_string_value(json_object_get(c, "status")), "PASS") == 0, "%s: %s", name,
                      json_string_value(json_object_get(c, "detail")));
    }
    json_decref(j);
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --ratios 0,1 --policy exact,bogus --out vbad");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "bogus"));
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --ratios 0,1 --schedule overlap, --out vbad");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--schedule"));
    tu_run_free(&r);
}
END_TEST

/* calibrate measures what one rank of a run does when told its sizes (--gemm, --adam-numel, ...;
 * validate --calibrate passes them under the runs' mpirun): every figure is there and positive,
 * the GEMM list's FLOPs are 2 m n k x count summed. */
START_TEST(calibrate_measures_the_runs_sizes)
{
    struct tu_run r;
    tu_ratiolab(&r, "calibrate --collectives-only --quiet --gemm 16x8x32x3,4x4x4 --adam-numel 8192 --chunk-numel 1000 "
                "--working-set 120000 --reduce-scatter-bytes 4000");
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    json_t *j = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_t *run = json_object_get(j, "run");
    ck_assert_ptr_nonnull(run);
    ck_assert(fabs(json_number_value(json_object_get(run, "gemm_flop")) - (2.0 * 16 * 8 * 32 * 3 + 2.0 * 64)) < 1e-9);
    ck_assert_int_eq(json_integer_value(json_object_get(run, "host_adam_numel")), 1000);
    ck_assert_int_eq(json_integer_value(json_object_get(run, "copy_bytes")), 4000);
    ck_assert_int_eq(json_integer_value(json_object_get(run, "grad_elements")), 1000);   /* one rank's bucket */
    const char *figs[] = {"gemm_flops", "device_adam_elements_per_s", "host_adam_elements_per_s", "copy_gbps",
                          "memory_gbps", "grad_elements_per_s"};
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++)
        ck_assert_msg(json_number_value(json_object_get(json_object_get(run, figs[i]), "median")) > 0, "%s", figs[i]);
    json_decref(j);
    tu_run_free(&r);
    tu_ratiolab(&r, "calibrate --collectives-only --quiet --gemm 16x8");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--gemm"));
    tu_run_free(&r);
    /* --layers: the list is one layer's, run that many times as blocks, then --gemm-last's. */
    tu_ratiolab(&r, "calibrate --collectives-only --quiet --gemm 16x8x32x3,4x4x4 --layers 5 --gemm-last 8x8x8");
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    j = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    run = json_object_get(j, "run");
    ck_assert(fabs(json_number_value(json_object_get(run, "gemm_flop")) -
                   (5 * (2.0 * 16 * 8 * 32 * 3 + 2.0 * 64) + 2.0 * 512)) < 1e-9);
    ck_assert_int_eq(json_integer_value(json_object_get(run, "gemm_blocks")), 6);
    ck_assert_int_eq(json_integer_value(json_object_get(run, "gemm_syncs")), 0);   /* one rank: nobody to meet */
    ck_assert(json_number_value(json_object_get(json_object_get(run, "gemm_flops"), "median")) > 0);
    json_decref(j);
    tu_run_free(&r);
    const char *bad[][2] = {{"--gemm-last 8x8x8 --gemm 4x4x4", "--gemm-last"},
                            {"--layers 3 --adam-numel 100", "--layers"},
                            {"--gemm 4x4x4 --layers 0", "--layers"},
                            {"--gemm 4x4x4 --layers 2 --gemm-last 8x8", "--gemm-last"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[200];
        snprintf(cmd, sizeof cmd, "calibrate --collectives-only --quiet %s", bad[i][0]);
        tu_ratiolab(&r, "%s", cmd);
        ck_assert_msg(r.status == 2, "%s: status %d", cmd, r.status);
        ck_assert_msg(strstr(r.err, bad[i][1]) && !strchr(strchr(r.err, '\n') + 1, '\n'), "%s: %s", cmd, r.err);
        tu_run_free(&r);
    }
}
END_TEST

/* validate --calibrate's GEMM list: one layer's GEMMs (weights on micro-batch x seq tokens,
 * Q K^T and scores V per head) run as `layers` blocks, the logits as the block after them, the
 * whole equal to the executor's FLOPs; layers that differ fall back to one list without blocks. */
START_TEST(calib_run_of_plan_runs_layer_blocks)
{
    struct plan_tensor t[6];
    memset(t, 0, sizeof t);
    int64_t shp[6][2] = {{50, 8}, {24, 8}, {24, 1}, {24, 8}, {24, 1}, {8, 1}};
    int layer[6] = {-1, 0, 0, 1, 1, -1}, nd[6] = {2, 2, 1, 2, 1, 1};
    for (int i = 0; i < 6; i++) {
        t[i].ndim = nd[i];
        t[i].shape[0] = shp[i][0];
        t[i].shape[1] = nd[i] == 2 ? shp[i][1] : 1;
        t[i].numel = shp[i][0] * (nd[i] == 2 ? shp[i][1] : 1);
        t[i].layer = layer[i];
    }
    struct plan_model m;
    memset(&m, 0, sizeof m);
    m.tensors = t;
    m.n_tensors = 6;
    m.arch.hidden = 8;
    m.arch.heads = 2;
    m.arch.head_dim = 4;
    m.arch.vocab = 50;
    m.arch.tp = 1;
    int64_t part[6] = {200, 96, 12, 96, 12, 4};
    struct plan p;
    memset(&p, 0, sizeof p);
    p.model = &m;
    p.part_numel = part;
    p.layout.dp = 2;
    p.per_rank_numel = 420;
    p.zero.reduce_bucket_size = 1000;
    p.zero.dtype = PLAN_FP16;
    struct calib_run r;
    calib_run_of_plan(&p, 2, 16, &r);   /* 32 tokens */
    ck_assert_int_eq(r.layers, 2);
    double per_layer = 0, last = 0;
    int n_last = 0;
    for (int i = 0; i < r.n_gemm; i++) {
        double f = 2.0 * r.gemm[i].m * r.gemm[i].n * r.gemm[i].k * r.gemm[i].count;
        if (r.gemm[i].last) {
            last += f;
            n_last++;
            ck_assert(r.gemm[i].m == 32 && r.gemm[i].n == 50 && r.gemm[i].k == 8);   /* tokens x vocab x hidden */
        } else {
            per_layer += f;
        }
    }
    ck_assert_int_eq(n_last, 1);
    /* a layer: 2 x 32 x (24 x 8 + 24) for the weights, 2 x 2 x 16^2 x 4 x (2 sequences x 2 heads) */
    ck_assert(fabs(per_layer - (2.0 * 32 * (192 + 24) + 2.0 * 2 * 256 * 4 * 4)) < 1e-9);
    ck_assert(fabs(last - 2.0 * 32 * 50 * 8) < 1e-9);
    ck_assert_int_eq(r.allgather_bytes, (96 + 12) * 2);   /* the first layer's partition, fp16 */
    /* The second layer wider: one list of every layer's GEMMs, no blocks. */
    t[3].shape[0] = 32;
    t[3].numel = 256;
    calib_run_of_plan(&p, 2, 16, &r);
    ck_assert_int_eq(r.layers, 0);
    double all = 0;
    for (int i = 0; i < r.n_gemm; i++) {
        ck_assert(!r.gemm[i].last);
        all += 2.0 * r.gemm[i].m * r.gemm[i].n * r.gemm[i].k * r.gemm[i].count;
    }
    ck_assert(fabs(all - (2.0 * 32 * (192 + 24 + 256 + 24) + 2 * 2.0 * 2 * 256 * 4 * 4 + 2.0 * 32 * 50 * 8)) < 1e-9);
}
END_TEST

/* What calibrate --collectives-only prints, validate reads back: every run figure and size, the
 * collectives, through the one key table; a text without either is refused. */
START_TEST(collectives_json_round_trips)
{
    struct calib c, d;
    memset(&c, 0, sizeof c);
    c.have_mpi = c.have_run = true;
    c.coll_ranks = c.run_ranks = 2;
    c.coll_max_bytes = 1 << 20;
    struct calib_figure *figs[] = {&c.allgather_busbw_gbps, &c.reduce_scatter_busbw_gbps, &c.collective_latency_us,
                                 &c.run_gemm_flops, &c.run_device_adam_elems_per_s, &c.run_host_adam_elems_per_s,
                                 &c.run_copy_gbps, &c.run_mem_gbps, &c.run_allgather_us, &c.run_reduce_scatter_us,
                                 &c.run_grad_elems_per_s};
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++)
        *figs[i] = (struct calib_figure){.median = 10.5 + (double)i, .min = 9.25 + (double)i, .max = 12.0 + (double)i,
                                       .repeats = 7 + (int)i};
    c.run_gemm_flop = 3.5e9;
    c.run_gemm_blocks = 33;
    c.run_gemm_syncs = 33;
    int64_t *sizes[] = {&c.run_device_adam_numel, &c.run_host_adam_numel, &c.run_copy_bytes, &c.run_triad_bytes,
                        &c.run_allgather_bytes, &c.run_reduce_scatter_bytes, &c.run_grad_elements};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        *sizes[i] = 1000 + (int64_t)i;
    json_t *o = calib_collectives_json(&c);
    char *text = json_dumps(o, 0);
    json_decref(o);
    memset(&d, 0, sizeof d);
    struct rl_err e = {0};
    ck_assert_int_eq(calib_read_collectives(text, &d, &e), 0);
    free(text);
    ck_assert(d.have_mpi && d.have_run);
    ck_assert_int_eq(d.coll_ranks, 2);
    ck_assert_int_eq(d.coll_max_bytes, 1 << 20);
    ck_assert(d.run_gemm_flop == 3.5e9 && d.run_gemm_blocks == 33 && d.run_gemm_syncs == 33);
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) {
        const struct calib_figure *x = (const struct calib_figure *)(const void *)((const char *)&d + ((const char *)figs[i] - (const char *)&c));
        ck_assert_msg(x->median == figs[i]->median && x->min == figs[i]->min && x->max == figs[i]->max &&
                      x->repeats == figs[i]->repeats, "figure %zu", i);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        ck_assert_int_eq(*(const int64_t *)(const void *)((const char *)&d + ((const char *)sizes[i] - (const char *)&c)),
                         1000 + (int64_t)i);
    ck_assert_int_eq(calib_read_collectives("{\"ranks\": 2}", &d, &e), RL_EINVAL);
}
END_TEST

/* validate's --calibrate and --hw: on the cpu backend one or the other (exit 2 naming --hw); on
 * cuda --calibrate measures the GPUs over --hw, so it needs it (exit 2 naming both). Refused
 * before anything is measured or written: no output folder. */
START_TEST(validate_calibrate_and_hw_combinations)
{
    const char *bad[][2] = {{"--calibrate --hw hgx-h200", "--hw hgx-h200: not with --calibrate on the cpu backend"},
                            {"--backend cuda --calibrate", "--calibrate: with --backend cuda needs --hw"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tu_run r;
        tu_ratiolab(&r, "validate %s --ratios 0 --ranks 2 --scale 1000 --seq-len 128 --out vb", bad[i][0]);
        ck_assert_msg(r.status == 2, "%s: status %d: %s", bad[i][0], r.status, r.err);
        ck_assert_msg(strstr(r.err, bad[i][1]) && strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "%s: %s",
                      bad[i][0], r.err);
        tu_run_free(&r);
        ck_assert(!tu_exists(tu_path("vb")));
    }
}
END_TEST

/* --backend cuda where no GPU is visible: exit 3 saying so before anything is measured or
 * written (with or without --calibrate). */
START_TEST(validate_cuda_without_gpu_is_an_environment_error)
{
    const char *args[] = {"--backend cuda --hw hgx-h200", "--backend cuda --calibrate --hw hgx-h200"};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        struct tu_run r;
        tu_ratiolab(&r, "validate %s --ratios 0 --ranks 2 --scale 1000 --seq-len 128 --out vg", args[i]);
        ck_assert_msg(r.status == 3, "%s: status %d: %s", args[i], r.status, r.err);
        ck_assert_msg(strstr(r.err, "--backend cuda: ") && strstr(r.err, "--backend cpu"), "%s", r.err);
        tu_run_free(&r);
        ck_assert(!tu_exists(tu_path("vg")));
    }
}
END_TEST

/* Without a GPU, calibrate --backend cuda is an environment error naming the cause and writes no
 * file; with one, the profile loads. It always needs --base. */
START_TEST(calibrate_cuda_needs_a_gpu_and_a_base)
{
    struct tu_run r;
    int files = tu_count_files();
    tu_ratiolab(&r, "calibrate --backend cuda --base hgx-h200 --quiet --out g.json");
    if (r.status == 0) {   /* a GPU machine: the profile must load */
        char path[512];
        snprintf(path, sizeof path, "%s/g.json", tu_tmpdir());
        struct hw_profile hw;
        struct rl_err e = {0};
        ck_assert_msg(sim_hw_load(&hw, NULL, path, &e) == 0, "%s", e.msg);
        ck_assert(hw.h2d_pinned_gbps > 0.01);
        files++;
    } else {
        ck_assert_msg(r.status == 3, "status %d: %s", r.status, r.err);
        ck_assert_ptr_nonnull(strstr(r.err, "GPU") ? r.err : strstr(r.err, "CUDA"));
    }
    tu_run_free(&r);
    ck_assert_int_eq(tu_count_files(), files);
    tu_ratiolab(&r, "calibrate --backend cuda --quiet");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--base"));
    tu_run_free(&r);
}
END_TEST

/* The run record: an executor's result written as `ratiolab run --json` writes it and read back
 * is the same result, field for field (null memory readings back as -1); the row's measured side
 * from it has the digest, the critical rank's step and phases, per rank the ledger, RSS, baseline
 * and the buffers outside the ledger as device or host scratch; text that is not a JSON object,
 * a key of the wrong type and an unknown device are refused. */
START_TEST(run_record_round_trips_into_the_measured_side)
{
    struct ex_rank_result rk[2];
    memset(rk, 0, sizeof rk);
    for (int k = 0; k < 2; k++) {
        struct ex_rank_result *x = &rk[k];
        x->rank = k;
        x->step_ns = 1000 + 234 * k;
        for (int i = 0; i < STEP_PH_COUNT; i++)
            x->phase[i] = (struct ex_phase_stat){.busy_ns = 70 + i + k, .exposed_ns = 30 + i, .bytes = 4096 * i};
        x->ledger_device_bytes = 1000 + k;
        x->ledger_host_bytes = 2000 + k;
        x->host_placed_numel = 50;
        x->per_rank_numel = 100;
        x->bytes_moved = 77;
        x->mem = (struct ex_mem){.rss_bytes = 9100, .peak_rss_bytes = k ? -1 : 9000, .locked_bytes = -1,
                                 .pinned_bytes = 64, .device_used_bytes = -1, .device_capacity_bytes = 1 << 30,
                                 .gpu_process_bytes = -1};
        x->n_bufs = 4;
        x->bufs[0] = (struct ex_buf_report){"scratch", PLAN_DEV_GPU, 100, -1};
        x->bufs[1] = (struct ex_buf_report){"host_scratch", PLAN_DEV_CPU_PAGEABLE, 7, -1};
        x->bufs[2] = (struct ex_buf_report){"master_cpu", PLAN_DEV_CPU_PINNED, 11, 11};
        x->bufs[3] = (struct ex_buf_report){"more_scratch", PLAN_DEV_GPU, 20, -1};
    }
    struct ex_result r = {.backend = EX_BACKEND_CPU, .world = 2, .iterations = 4, .adam_step = 3, .skipped = 1,
                          .total_numel = 199, .digest = 0xc107c17eu, .ledger_ok = true, .prefetch_depth = 2,
                          .gather_buffers = 3, .critical_rank = 1, .ranks = rk};
    json_t *o = json_object();
    ex_result_json_put(o, &r);
    char *text = json_dumps(o, 0);
    json_decref(o);
    struct ex_result b;
    struct rl_err e = {0};
    ck_assert_int_eq(ex_result_from_json(text, &b, &e), 0);
    free(text);
    ck_assert_int_eq(b.backend, r.backend);
    ck_assert_int_eq(b.world, 2);
    ck_assert_int_eq(b.iterations, 4);
    ck_assert_int_eq(b.adam_step, 3);
    ck_assert_int_eq(b.skipped, 1);
    ck_assert_int_eq(b.total_numel, 199);
    ck_assert_uint_eq(b.digest, 0xc107c17eu);
    ck_assert(b.ledger_ok);
    ck_assert_int_eq(b.prefetch_depth, 2);
    ck_assert_int_eq(b.gather_buffers, 3);
    ck_assert_int_eq(b.critical_rank, 1);
    for (int k = 0; k < 2; k++)
        ck_assert_msg(memcmp(&b.ranks[k], &rk[k], sizeof rk[k]) == 0, "rank %d differs after the round trip", k);

    const int64_t baseline[2] = {500, -1};
    struct val_row w;
    memset(&w, 0, sizeof w);
    camp_row_from_result(&w, &b, baseline);
    ex_result_free(&b);
    ck_assert_uint_eq(w.digest, 0xc107c17eu);
    ck_assert_int_eq(w.measured.step_ns, 1234);
    ck_assert_int_eq(w.measured.busy_ns[1], 72);
    ck_assert_int_eq(w.measured.exposed_ns[1], 31);
    ck_assert_int_eq(w.n_ranks, 2);
    ck_assert_int_eq(w.mem[0].ledger_device_bytes, 1000);
    ck_assert_int_eq(w.mem[1].ledger_host_bytes, 2001);
    ck_assert_int_eq(w.mem[0].host_placed_numel, 50);
    ck_assert_int_eq(w.mem[0].per_rank_numel, 100);
    ck_assert_int_eq(w.mem[0].rss_bytes, 9000);
    ck_assert_int_eq(w.mem[1].rss_bytes, -1);
    ck_assert_int_eq(w.mem[0].pinned_bytes, 64);
    ck_assert_int_eq(w.mem[0].device_used_bytes, -1);
    ck_assert_int_eq(w.mem[0].baseline_rss_bytes, 500);
    ck_assert_int_eq(w.mem[1].baseline_rss_bytes, -1);
    ck_assert_int_eq(w.mem[0].scratch_device_bytes, 120);
    ck_assert_int_eq(w.mem[0].scratch_host_bytes, 7);

    ck_assert_int_eq(ex_result_from_json("digest c107c17e", &b, &e), RL_EINVAL);
    ck_assert_int_eq(ex_result_from_json("{\"world\": \"two\"}", &b, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "world"));
    ck_assert_int_eq(ex_result_from_json("{\"ranks\": [{\"buffers\": [{\"device\": \"tpu\"}]}]}", &b, &e),
                     RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "tpu"));
}
END_TEST

/* validate --ratios names the DeepSpeed release whose step each side ran: the simulator's from the
 * row's plan (val_row_predict, schedule deepspeed: the plan's zero.ds_version; none under
 * overlap), the executor's from its run record (deepspeed_version, through ex_result_json_put and
 * back); report.json carries both per row (null under overlap), report.md and the text say them in
 * one line, and two sides that differ are both named. */
START_TEST(report_names_the_deepspeed_release_each_side_ran)
{
    struct rl_err e = {0};
    struct plan_model m;
    struct plan_model_opts mo = {.tp = 1, .pp = 1, .pp_stage = 0, .seq_len = 128};
    ck_assert_msg(plan_model_load(&m, tu_catalog(), "gpt2", &mo, &e) == 0, "%s", e.msg);
    plan_model_group(&m, PLAN_GROUPS_HF_TWO, false);
    struct plan_zero z = tu_zero_cpu_offload(0.5, 100000000);
    z.ds_version = (struct rl_version){0, 19, 5};
    struct plan_layout l = {.tp = 1, .pp = 1, .dp = 1};
    struct plan_options po = {.policy = PLAN_POLICY_EXACT, .ledger = PLAN_LEDGER_EXEC};
    struct plan p;
    ck_assert_msg(plan_build(&p, &m, &l, &z, &po, &e) == 0, "%s", e.msg);
    struct hw_profile hw;
    ck_assert_msg(sim_hw_load(&hw, tu_catalog(), "dgx1-v100", &e) == 0, "%s", e.msg);
    static struct val_report rep;
    memset(&rep, 0, sizeof rep);
    snprintf(rep.policy, sizeof rep.policy, "exact");
    rep.n_rows = 2;
    struct sim_train t;
    sim_train_defaults(&t);
    for (int i = 0; i < 2; i++) {
        struct val_row *w = &rep.rows[i];
        t.schedule = i == 0 ? STEP_SCHED_DS012 : STEP_SCHED_OVERLAP;
        snprintf(w->schedule, sizeof w->schedule, "%s", step_schedule_name(t.schedule));
        ck_assert_msg(val_row_predict(&p, &hw, &t, NULL, w, &e) == 0, "%s", e.msg);
        /* the executor's record: a deepspeed step of 0.19.5 on the first row, none on the second */
        struct ex_rank_result rk;
        memset(&rk, 0, sizeof rk);
        struct ex_result r = {.backend = EX_BACKEND_CPU, .world = 1, .ranks = &rk, .ds_step = i == 0,
                              .ds_version = z.ds_version};
        json_t *o = json_object();
        ex_result_json_put(o, &r);
        char *text = json_dumps(o, 0);
        json_decref(o);
        struct ex_result b;
        ck_assert_msg(ex_result_from_json(text, &b, &e) == 0, "%s", e.msg);
        free(text);
        const int64_t baseline[1] = {-1};
        camp_row_from_result(w, &b, baseline);
        ex_result_free(&b);
    }
    ck_assert_str_eq(rep.rows[0].predicted.deepspeed_version, "0.19.5");
    ck_assert_str_eq(rep.rows[0].measured.deepspeed_version, "0.19.5");
    ck_assert_str_eq(rep.rows[1].predicted.deepspeed_version, "");
    ck_assert_str_eq(rep.rows[1].measured.deepspeed_version, "");
    val_report_check(&rep);
    char *text = NULL;
    ck_assert_int_eq(val_report_json(&rep, &text, &e), 0);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    json_t *rows = json_object_get(j, "rows");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_array_get(rows, 0), "predicted"),
                                                       "deepspeed_version")), "0.19.5");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_array_get(rows, 0), "measured"),
                                                       "deepspeed_version")), "0.19.5");
    ck_assert(json_is_null(json_object_get(json_object_get(json_array_get(rows, 1), "measured"), "deepspeed_version")));
    json_decref(j);
    ck_assert_int_eq(val_report_md(&rep, &text, &e), 0);
    ck_assert_msg(strstr(text, "\n* DeepSpeed step: simulator 0.19.5, executor 0.19.5\n"), "%s", text);
    free(text);
    char line[256];
    snprintf(rep.rows[0].measured.deepspeed_version, sizeof rep.rows[0].measured.deepspeed_version, "0.12.4");
    rep.rows[1] = rep.rows[0];
    snprintf(rep.rows[1].measured.deepspeed_version, sizeof rep.rows[1].measured.deepspeed_version, "0.19.5");
    val_report_deepspeed_text(&rep, line, sizeof line);
    ck_assert_str_eq(line, "simulator 0.19.5, executor 0.12.4; simulator 0.19.5, executor 0.19.5");
    rep.n_rows = 0;
    val_report_deepspeed_text(&rep, line, sizeof line);
    ck_assert_str_eq(line, "");
    plan_free(&p);
    plan_model_free(&m);
}
END_TEST

/* ---- validation/ds_judge.h in process ------------------------------------------------------------ */

static int judge_load_hw(void *ctx, const struct plan_setup *c, struct hw_profile *hw, struct rl_err *e)
{
    return sim_hw_load(hw, c->catalog, ctx, e);
}

/* The inputs both in-process judge tests give: gpt2-tiny under the HF two-group rule, one rank,
 * TP 1; model holds the model's path (it must outlive in). */
static void judge_inputs(struct plan_inputs *in, char *model, size_t n)
{
    plan_inputs_init(in);
    in->catalog = tu_catalog();
    snprintf(model, n, "%s", tu_src_path("tests/deepspeed/models/gpt2-tiny.json"));
    in->model = model;
    in->groups = PLAN_GROUPS_HF_TWO;
    in->layout.world = 1;
    in->layout.tp = 1;
}

/* The example 0.14.1 log (ratio 0.5) with a second run appended, name: that log's text again, with
 * its ratio replaced by ratio (or, with other set, the example log of that release). Returns the
 * path; *second_line: the line the appended run starts at (the first log's lines plus one). */
static const char *two_runs(const char *name, const char *ratio, const char *other, int *second_line)
{
    char *a = tu_read(tu_src_path("tests/deepspeed/example/deepspeed-0.14.1.log"), NULL);
    char path[1024];
    snprintf(path, sizeof path, "tests/deepspeed/example/deepspeed-%s.log", other ? other : "0.14.1");
    char *b = tu_read(tu_src_path(path), NULL);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    *second_line = 1;
    for (const char *q = a; *q; q++)
        *second_line += *q == '\n';
    size_t n = strlen(a) + strlen(b) + 1;
    char *both = malloc(n);
    snprintf(both, n, "%s%s", a, b);
    for (char *q = both + strlen(a); !other && (q = strstr(q, "ratio")); q++)   /* "ratio": 0.5 and ratio=0.5 */
        if (!strncmp(q + 5, "\": 0.5", 6) || !strncmp(q + 5, "=0.5", 4))
            memcpy(strstr(q, "0.5"), ratio, 3);
    const char *f = tu_write(name, both);
    free(a);
    free(b);
    free(both);
    return f;
}

/* Runs of two configurations: one that contradicts the user's ratio is left out and the other
 * judged; every run contradicting it is the first one's error; an error at the second run keeps
 * the first one judged; a monitor CSV beside runs of two configurations is refused, by field. */
START_TEST(ds_judge_groups_skips_and_stops)
{
    int second = 0;
    const char *logs[1] = {two_runs("mixed.log", "0.3", NULL, &second)};
    struct plan_inputs in;
    char model[1024];
    judge_inputs(&in, model, sizeof model);
    in.ratio = 0.3;
    in.ratio_set = true;
    struct sim_train t;
    sim_train_defaults(&t);
    struct val_ds_judge_in ji = {.logs = logs, .n_logs = 1, .in = &in, .train = &t, .tol_gib = 0.1, .tol_pct = 10,
                                 .resolve = plan_inputs_resolve, .load_hw = judge_load_hw, .ctx = "hgx-h200"};
    struct val_ds_judge k;
    memset(&k, 0, sizeof k);
    struct rl_err e = {0};
    ck_assert_msg(val_ds_judge_run(&ji, &k, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(k.n_groups, 2);
    ck_assert(k.differ);
    ck_assert_int_eq(k.n_done, 2);
    ck_assert_int_eq(k.judged, 1);
    ck_assert(k.j[0].skipped && !k.j[1].skipped);
    ck_assert_int_eq(k.j[0].failed, VAL_DSJ_FACTS);
    ck_assert_msg(strstr(k.j[0].err.msg, "the run used 0.5") && !strstr(k.j[0].err.msg, "--"), "%s", k.j[0].err.msg);
    ck_assert(fabs(k.j[1].p.requested_ratio - 0.3) < 1e-12);
    ck_assert(k.j[1].ma_is_rss);   /* the example ran on DeepSpeed's CPU accelerator */
    json_t *j = val_ds_judge_json(&ji, &k);
    ck_assert_str_eq(json_string_value(json_object_get(j, "kind")), "ratiolab-validate-deepspeed-log");
    json_t *runs = json_object_get(j, "runs");
    ck_assert_int_eq(json_array_size(runs), 1);   /* the judged run only */
    json_t *r1 = json_array_get(runs, 0);
    ck_assert_int_eq(json_integer_value(json_object_get(r1, "tolerance_bytes")), 107374182);   /* 0.1 x 2^30 */
    ck_assert(json_real_value(json_object_get(r1, "tolerance_time_pct")) == 10);
    json_t *unit = json_array_get(json_object_get(r1, "runs"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(unit, "line")), second);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), val_status_name(k.overall));
    json_decref(j);
    val_ds_judge_free(&k);
    ck_assert_ptr_null(k.j);

    in.ratio = 0.7;   /* neither run's */
    ck_assert_int_eq(val_ds_judge_run(&ji, &k, &e), RL_EINVAL);
    ck_assert_int_eq(k.failed, VAL_DSJ_FACTS);
    ck_assert_int_eq(k.n_done, 2);
    ck_assert_int_eq(k.judged, 0);
    ck_assert_msg(strstr(e.msg, "the run used 0.5, the command line says 0.7"), "%s", e.msg);
    val_ds_judge_free(&k);

    in.ratio_set = false;
    logs[0] = two_runs("late.log", NULL, "0.19.8", &second);   /* a release that logs no stages after it */
    ck_assert_int_eq(val_ds_judge_run(&ji, &k, &e), RL_EINVAL);
    ck_assert_int_eq(k.failed, VAL_DSJ_COMPARE);
    ck_assert_int_eq(k.n_done, 1);   /* the first run judged before the error */
    ck_assert_int_eq(k.judged, 1);
    ck_assert(k.j[1].logged.have_version && k.j[1].logged.version.minor == 19);
    ck_assert_msg(strncmp(e.msg, "deepspeed_log: no allocation stage", 34) == 0, "%s", e.msg);
    val_ds_judge_free(&k);

    ji.monitor = "m.csv";   /* not read: refused first */
    ck_assert_int_eq(val_ds_judge_run(&ji, &k, &e), RL_EINVAL);
    ck_assert_int_eq(k.failed, VAL_DSJ_MONITOR);
    ck_assert_msg(strncmp(e.msg, "monitor_csv: the logs hold 2 runs", 33) == 0, "%s", e.msg);
    val_ds_judge_free(&k);
}
END_TEST

/* Several runs judged: the logs' verdict fails when any run's does, whichever run comes last. The
 * example's CPU run at ratio 0.5 (passes: its MA is the RSS, not gated) comes after a copy
 * relabelled ratio 0.3 on an xpu device (MA gated) with 9.5 GB allocated at each stage, where the
 * run allocated 0.5 GB: far past a 0.1 GiB tolerance for GPT-2 tiny's plan, so the logs fail. */
START_TEST(ds_judge_fails_when_an_earlier_run_fails)
{
    char *a = tu_read(tu_src_path("tests/deepspeed/example/deepspeed-0.14.1.log"), NULL);
    ck_assert_ptr_nonnull(a);
    char *b = strdup(a);
    for (char *q = b; (q = strstr(q, "ratio")); q++)   /* "ratio": 0.5 and ratio=0.5 */
        if (!strncmp(q + 5, "\": 0.5", 6) || !strncmp(q + 5, "=0.5", 4))
            memcpy(strstr(q, "0.5"), "0.3", 3);
    for (char *q = b; (q = strstr(q, "MA 0.5 GB")); q++)   /* and 9 GiB more allocated at each stage */
        q[3] = '9';
    char *acc = strstr(b, "ds_accelerator to cpu");   /* on a device whose MA is gated (not the CPU's RSS) */
    ck_assert_ptr_nonnull(acc);
    acc[18] = 'x';
    size_t n = strlen(a) + strlen(b) + 1;
    char *both = malloc(n);
    snprintf(both, n, "%s%s", b, a);
    const char *logs[1] = {tu_write("relabelled-first.log", both)};
    free(a);
    free(b);
    free(both);
    struct plan_inputs in;
    char model[1024];
    judge_inputs(&in, model, sizeof model);
    struct sim_train t;
    sim_train_defaults(&t);
    struct val_ds_judge_in ji = {.logs = logs, .n_logs = 1, .in = &in, .train = &t, .tol_gib = 0.1, .tol_pct = 10,
                                 .resolve = plan_inputs_resolve, .load_hw = judge_load_hw, .ctx = "hgx-h200"};
    struct val_ds_judge k;
    memset(&k, 0, sizeof k);
    struct rl_err e = {0};
    ck_assert_msg(val_ds_judge_run(&ji, &k, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(k.judged, 2);
    ck_assert(!k.j[0].ma_is_rss && k.j[1].ma_is_rss);
    ck_assert_int_eq(k.j[0].r.overall, VAL_FAIL);   /* 9.5 GB logged where 0.5 GB ran */
    ck_assert_int_eq(k.j[1].r.overall, VAL_PASS);   /* the example's own run */
    ck_assert_int_eq(k.overall, VAL_FAIL);
    val_ds_judge_free(&k);
}
END_TEST

Suite *validation_suite(void)
{
    Suite *s = suite_create("validation");
    TCase *tc = tcase_create("validation");
    tcase_set_timeout(tc, 300);   /* mpirun launches: seconds on a quiet machine, minutes on a loaded one */
    tcase_add_test(tc, stage_names_map_to_ledger_stages);
    tcase_add_test(tc, calib_run_of_plan_runs_layer_blocks);
    tcase_add_test(tc, collectives_json_round_trips);
    tcase_add_test(tc, validate_calibrate_and_hw_combinations);
#ifdef RL_HAVE_CUDA
    if (kern_cuda_device_count() > 0)
        tu_skip("validation: validate_cuda_without_gpu_is_an_environment_error",
                "a GPU is visible (scripts/gpu-check.sh runs validate on it)");
    else
#endif
        tcase_add_test(tc, validate_cuda_without_gpu_is_an_environment_error);
    tcase_add_test(tc, median_skips_nothing_itself);
    tcase_add_test(tc, ds_judge_fails_when_an_earlier_run_fails);
    tcase_add_test(tc, iteration_lines_are_parsed);
    tcase_add_test(tc, time_verdict_uses_median_without_first);
    tcase_add_test(tc, deepspeed_log_matching_the_ledger_passes);
    tcase_add_test(tc, ds_judge_groups_skips_and_stops);
    tcase_add_test(tc, wrong_subgroup_count_or_memory_fails);
    tcase_add_test(tc, memory_below_the_ledger_fails_too);
    tcase_add_test(tc, iteration_time_against_predict);
    tcase_add_test(tc, timer_lines_are_parsed);
    tcase_add_test(tc, validate_shows_timers_next_to_windows);
    tcase_add_test(tc, monitor_csv_gives_per_process_host_growth);
    tcase_add_test(tc, validate_bad_input_exits_2);
    tcase_add_test(tc, trace_times_attribute_exposure_by_priority);
    tcase_add_test(tc, trace_diff_recovers_predict_breakdown);
    tcase_add_test(tc, calibrate_writes_a_loadable_sourced_profile);
    tcase_add_test(tc, hw_emulated_keys_are_optional);
    tcase_add_test(tc, report_checks_fail_when_broken);
    tcase_add_test(tc, calibrate_cuda_needs_a_gpu_and_a_base);
    tcase_add_test(tc, emulated_device_shares_dram_and_runs_in_order);
    tcase_add_test(tc, calibrate_measures_the_runs_sizes);
    tcase_add_test(tc, run_record_round_trips_into_the_measured_side);
    tcase_add_test(tc, report_names_the_deepspeed_release_each_side_ran);
    if (have_mpirun()) {
        tcase_add_test(tc, validate_cpu_backend_two_ranks);
        tcase_add_test(tc, validate_under_mpirun_schedules_and_policies);
    } else {
        tu_skip("validation: validate_cpu_backend_two_ranks", "mpirun not found (openmpi-bin)");
        tu_skip("validation: validate_under_mpirun_schedules_and_policies", "mpirun not found (openmpi-bin)");
    }
    suite_add_tcase(s, tc);
    return s;
}
