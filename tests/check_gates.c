/* tests/check_gates.c — every gate of validation/ on both sides and at its boundary: the time gate
 * of `validate --ratios` (MAPE equal to --gate-time passes), the process-memory check (over the
 * percentage but within the absolute floor passes, over both fails; the device reading has no
 * floor), and the DeepSpeed-run checks (a stage's MA, the step time and the per-process host
 * growth, each within the tolerance on both sides, failing one unit beyond it below as above).
 * The rows are built by hand, so the expected verdicts come from the stated rules, not the code. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/util.h"
#include "validation/val.h"

/* ---- validate --ratios: one row, every check passing ------------------------------------------ */

/* One row on one rank: predicted step 200 ns; RSS exactly the expectation (ledger host bytes 384 MiB
 * plus baseline 128 MiB); no device reading; memory tolerance 12.5 %. */
static void one_row(struct val_report *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->policy, sizeof r->policy, "exact");
    r->ranks = 1;
    r->mem_tol_pct = 12.5;   /* 1/8: the boundaries below are exact in binary */
    r->gate_time_pct = -1;
    r->have_reference = true;
    r->reference_digest = 7;
    r->n_rows = 1;
    struct val_row *w = &r->rows[0];
    w->ratio = 0.5;
    snprintf(w->schedule, sizeof w->schedule, "overlap");
    snprintf(w->policy, sizeof w->policy, "exact");
    w->digest = 7;
    w->plan_per_rank_numel = 1 << 20;
    w->plan_cpu_numel = 1 << 19;
    w->plan_honored_ratio = 0.5;
    w->plan_device_bytes = 1000;
    w->plan_host_bytes = INT64_C(384) << 20;
    w->predicted.step_ns = 200;
    w->measured.step_ns = 200;
    w->n_ranks = 1;
    w->mem[0] = (struct val_rank_mem){.ledger_device_bytes = w->plan_device_bytes,
                                      .ledger_host_bytes = w->plan_host_bytes,
                                      .host_placed_numel = w->plan_cpu_numel,
                                      .per_rank_numel = w->plan_per_rank_numel,
                                      .rss_bytes = w->plan_host_bytes + (INT64_C(128) << 20),
                                      .baseline_rss_bytes = INT64_C(128) << 20,
                                      .pinned_bytes = -1, .device_used_bytes = -1};
}

static enum val_status status_of(struct val_report *r, const char *name)
{
    val_report_check(r);
    for (int i = 0; i < r->n_checks; i++)
        if (strcmp(r->checks[i].name, name) == 0)
            return r->checks[i].status;
    ck_abort_msg("no check named %s", name);
    return VAL_INFO;
}

/* Step 250 ns against 200: an error of exactly +25 % (exact in binary), so the MAPE is 25. */
START_TEST(time_gate_at_equality_passes)
{
    struct val_report *r = malloc(sizeof *r);
    one_row(r);
    r->rows[0].measured.step_ns = 250;
    r->gate_time_pct = 25;
    ck_assert_int_eq(status_of(r, "time"), VAL_PASS);
    ck_assert(r->step_mape_pct == 25);
    ck_assert(!val_report_failed(r));
    r->gate_time_pct = nextafter(25, 0);   /* just below the MAPE */
    ck_assert_int_eq(status_of(r, "time"), VAL_FAIL);
    ck_assert(val_report_failed(r));
    r->gate_time_pct = 30;
    ck_assert_int_eq(status_of(r, "time"), VAL_PASS);
    /* Slower and faster count alike: -25 % is a MAPE of 25 as well. */
    r->rows[0].measured.step_ns = 150;
    r->gate_time_pct = 25;
    ck_assert_int_eq(status_of(r, "time"), VAL_PASS);
    r->gate_time_pct = 24;
    ck_assert_int_eq(status_of(r, "time"), VAL_FAIL);
    /* Not gated: reported, never a failure. */
    r->gate_time_pct = -1;
    ck_assert_int_eq(status_of(r, "time"), VAL_INFO);
    ck_assert(!val_report_failed(r));
    free(r);
}
END_TEST

/* RSS: a reading fails only when it is beyond the percentage AND beyond the absolute floor. */
START_TEST(rss_check_needs_both_percentage_and_floor)
{
    struct val_report *r = malloc(sizeof *r);
    one_row(r);
    struct val_rank_mem *m = &r->rows[0].mem[0];
    const int64_t expect = r->rows[0].plan_host_bytes + m->baseline_rss_bytes;   /* 512 MiB */
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    /* Small process (expectation 10 MiB): 30 % over, but 3 MiB is within the 4 MiB floor: pass. */
    r->rows[0].plan_host_bytes = m->ledger_host_bytes = INT64_C(6) << 20;
    m->baseline_rss_bytes = INT64_C(4) << 20;
    m->rss_bytes = (INT64_C(13) << 20);
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    /* Exactly at the floor (4 MiB over 10 MiB, 40 %): still within it. */
    m->rss_bytes = (INT64_C(10) << 20) + VAL_MEM_FLOOR_BYTES;
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    /* One byte beyond the floor and far beyond the percentage: fail. */
    m->rss_bytes++;
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_FAIL);
    /* Below the expectation counts alike (a ledger that claims memory nobody used). */
    m->rss_bytes = (INT64_C(10) << 20) - VAL_MEM_FLOOR_BYTES - 1;
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_FAIL);
    m->rss_bytes = (INT64_C(10) << 20) - VAL_MEM_FLOOR_BYTES;
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    /* Large process (512 MiB): 40 MiB over is beyond the floor but within 12.5 %: pass; exactly
     * 12.5 % (64 MiB) passes, beyond it fails, above as below. */
    one_row(r);
    m->rss_bytes = expect + (INT64_C(40) << 20);
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    m->rss_bytes = expect + (INT64_C(64) << 20);
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    m->rss_bytes = expect - (INT64_C(64) << 20);
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    m->rss_bytes = expect + (INT64_C(65) << 20);
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_FAIL);
    m->rss_bytes = expect - (INT64_C(65) << 20);
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_FAIL);
    /* On the emulated device the device's ledger is host memory too, so it joins the expectation. */
    r->device_in_rss = true;
    r->rows[0].plan_device_bytes = m->ledger_device_bytes = INT64_C(128) << 20;
    m->rss_bytes = expect + (INT64_C(128) << 20) + (INT64_C(70) << 20);   /* 70 MiB over 640: 10.9 % */
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    r->device_in_rss = false;   /* the same reading without it: 198 MiB over 512 */
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_FAIL);
    free(r);
}
END_TEST

/* Device use: within the percentage of the ledger plus scratch on both sides (no floor there). */
START_TEST(device_use_check_both_sides)
{
    struct val_report *r = malloc(sizeof *r);
    one_row(r);
    struct val_rank_mem *m = &r->rows[0].mem[0];
    r->rows[0].plan_device_bytes = m->ledger_device_bytes = 700;
    m->scratch_device_bytes = 100;
    m->device_used_bytes = 900;   /* +12.5 % of 800 */
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    m->device_used_bytes = 901;
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_FAIL);
    m->device_used_bytes = 700;   /* -12.5 % */
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_PASS);
    m->device_used_bytes = 699;
    ck_assert_int_eq(status_of(r, "memory_process"), VAL_FAIL);
    free(r);
}
END_TEST

/* ---- a real DeepSpeed run: stage MA, step time, per-process host growth ------------------------ */

/* A plan with one sub-group whose ledger says 1000 GPU bytes at the fp16 stage and a host peak of
 * `host` bytes (plan_peak_cpu_bytes: the largest stage's cpu_bytes). */
static void tiny_plan(struct plan *p, int64_t host)
{
    memset(p, 0, sizeof *p);
    p->n_subgroups = 1;
    for (int s = 0; s < PLAN_STAGE_COUNT; s++) {
        p->stages[s].gpu_bytes = 1000;
        p->stages[s].cpu_bytes = host;
    }
}

static enum val_status ds_stage(int64_t logged_ma, int64_t tol)
{
    struct plan p;
    tiny_plan(&p, 0);
    struct trace_ds_stage st = {.name = "After creating fp16 partitions: 1", .line = 1, .ma_bytes = logged_ma,
                                .cpu_used_bytes = -1};
    struct trace_ds_log log = {.stages = &st, .n_stages = 1};
    struct val_ds_opts o = {.tol_bytes = tol, .tol_time_pct = 5};
    struct val_ds_result r;
    struct rl_err e = {0};
    ck_assert_msg(val_ds_compare(&p, &log, 1, NULL, 0, 0, NULL, &o, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.compared, 1);
    enum val_status s = r.stages[0].status;
    ck_assert_int_eq(r.overall, s);
    val_ds_result_free(&r);
    return s;
}

START_TEST(ds_stage_memory_within_tolerance_both_sides)
{
    ck_assert_int_eq(ds_stage(1000, 0), VAL_PASS);
    ck_assert_int_eq(ds_stage(1100, 100), VAL_PASS);
    ck_assert_int_eq(ds_stage(1101, 100), VAL_FAIL);
    ck_assert_int_eq(ds_stage(900, 100), VAL_PASS);
    ck_assert_int_eq(ds_stage(899, 100), VAL_FAIL);
}
END_TEST

static enum val_status ds_time(double measured_ms, double tol_pct)
{
    struct plan p;
    tiny_plan(&p, 0);
    double ms[2] = {99999, measured_ms};   /* the first interval is start-up: skipped */
    struct val_ds_opts o = {.tol_bytes = 0, .tol_time_pct = tol_pct};
    struct val_ds_result r;
    struct rl_err e = {0};
    ck_assert_msg(val_ds_compare(&p, NULL, 0, ms, 2, 400000000, NULL, &o, &r, &e) == 0, "%s", e.msg);
    enum val_status s = r.time_status;
    ck_assert_int_eq(r.overall, s);
    val_ds_result_free(&r);
    return s;
}

/* Predicted 400 ms: 500 ms is +25 %, 300 ms is -25 % (both exact in binary). */
START_TEST(ds_step_time_within_tolerance_both_sides)
{
    ck_assert_int_eq(ds_time(500, 25), VAL_PASS);
    ck_assert_int_eq(ds_time(500, 24.9), VAL_FAIL);
    ck_assert_int_eq(ds_time(300, 25), VAL_PASS);
    ck_assert_int_eq(ds_time(300, 24.9), VAL_FAIL);
    ck_assert_int_eq(ds_time(400, 0), VAL_PASS);
}
END_TEST

/* Rank 0's process grew by `growth` bytes over its first sample; the ledger's host peak is 1 GiB. */
static enum val_status ds_host(int64_t growth, int64_t tol)
{
    const int64_t peak = INT64_C(1) << 30;
    struct plan p;
    tiny_plan(&p, peak);
    ck_assert_int_eq(plan_peak_cpu_bytes(&p), peak);
    struct val_mon_proc proc = {.pid = 11, .rank = 0, .comm = "python", .samples = 2,
                                .first_rss_bytes = INT64_C(2) << 30, .peak_rss_bytes = (INT64_C(2) << 30) + growth};
    struct val_monitor mon = {.procs = &proc, .n_procs = 1};
    double ms[1] = {400};
    struct val_ds_opts o = {.tol_bytes = tol, .tol_time_pct = 100};
    struct val_ds_result r;
    struct rl_err e = {0};
    ck_assert_msg(val_ds_compare(&p, NULL, 0, ms, 1, 400000000, &mon, &o, &r, &e) == 0, "%s", e.msg);
    ck_assert(r.have_monitor);
    enum val_status s = r.host_status;
    ck_assert_int_eq(r.overall, s);
    val_ds_result_free(&r);
    return s;
}

/* A process that grew far less than the ledger says is as wrong as one that grew more. */
START_TEST(ds_host_growth_within_tolerance_both_sides)
{
    const int64_t peak = INT64_C(1) << 30, tol = INT64_C(100) << 20;
    ck_assert_int_eq(ds_host(peak, tol), VAL_PASS);
    ck_assert_int_eq(ds_host(peak + tol, tol), VAL_PASS);
    ck_assert_int_eq(ds_host(peak + tol + 1, tol), VAL_FAIL);
    ck_assert_int_eq(ds_host(peak - tol, tol), VAL_PASS);
    ck_assert_int_eq(ds_host(peak - tol - 1, tol), VAL_FAIL);
    ck_assert_int_eq(ds_host(0, tol), VAL_FAIL);   /* far below: grew nothing */
}
END_TEST

Suite *gates_suite(void)
{
    Suite *s = suite_create("gates");
    TCase *t = tcase_create("gates");
    tcase_add_test(t, time_gate_at_equality_passes);
    tcase_add_test(t, rss_check_needs_both_percentage_and_floor);
    tcase_add_test(t, device_use_check_both_sides);
    tcase_add_test(t, ds_stage_memory_within_tolerance_both_sides);
    tcase_add_test(t, ds_step_time_within_tolerance_both_sides);
    tcase_add_test(t, ds_host_growth_within_tolerance_both_sides);
    suite_add_tcase(s, t);
    return s;
}
