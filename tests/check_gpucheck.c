/* tests/check_gpucheck.c — the GPU paths' pieces that run without a GPU: scripts/gpu-check.sh's
 * preflight and dry run (every step on the cpu backend, or printed where it needs a GPU; a few
 * seconds), the one API check's messages (common/rl_api.h: CUDA, cuBLAS), the not-ready query
 * that must clear the runtime's last error, one GPU per rank (more ranks than GPUs: exit 3),
 * calibrate's in-place reduce-scatter receive pointer, and tests/check_exec.c naming the cpu
 * backend in every run (on a GPU machine `auto` would send them to the GPU). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>   /* chmod, mkdir */
#include <unistd.h>     /* access */

#ifdef RL_HAVE_CUDA
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#endif
#include "calib/calib.h"
#include "common/rl_api.h"
#include "exec/backend.h"
#include "sim/hw.h"
#include "tests/util.h"

#include <jansson.h>

START_TEST(dry_run_passes_and_lists_every_step)
{
    struct tu_run r;
    tu_sh(&r, "cd '%s' && GPU_CHECK_DRY=1 OUT='%s/gc' RATIOLAB_BIN='%s' RATIOLAB_BUILD='%s' timeout 120 scripts/gpu-check.sh",
          tu_src(), tu_tmpdir(), tu_bin(), tu_build());
    ck_assert_msg(r.status == 0, "gpu-check dry run (%d):\n%s\n%s", r.status, r.out, r.err);
    tu_run_free(&r);
    char *s = tu_slurp("gc/summary.txt");
    static const char *const steps[] = {"preflight", "build",   "kernels",    "executor",   "nccl1",     "gpu_exec",
                                        "validate",  "monitor", "bench_adam", "bench_exec", "bench_scan"};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "step %s: ", steps[i]);
        ck_assert_msg(strstr(s, want), "no line '%s' in the summary:\n%s", want, s);
    }
    ck_assert_msg(strstr(s, "gpu-check: passed"), "%s", s);
    free(s);
    ck_assert_msg(access(tu_path("gc/gpu-check-logs.tar.gz"), R_OK) == 0, "no log tarball");
}
END_TEST

/* scripts/gpu-check.sh's suite() (the script sourced: its functions only) on stub runner outputs:
 * a pass; a fail; the one skip a one-GPU machine must have, accepted with 1 GPU and refused with
 * 2; a skip no GPU machine may have (a GPU test left out); the accepted skip under a closing line
 * that counts another one; the accepted skip beside an unexpected one. */
START_TEST(suite_accepts_exactly_the_one_gpu_skips)
{
    ck_assert_int_eq(mkdir(tu_path("stub"), 0755) | mkdir(tu_path("stub/tests"), 0755), 0);
    tu_write("stub/tests/run_tests",
             "#!/bin/sh\n"
             "two='skipped: gpu_exec: gpu_two_ranks_nccl: needs 2 GPUs (NCCL does not put two ranks on one GPU)'\n"
             "case $CK_RUN_SUITE in\n"
             "pass) echo '3 passed, 0 failed, 0 skipped' ;;\n"
             "fail) echo 't.c:1:F:t:t:boom'; echo '2 passed, 1 failed, 0 skipped'; exit 1 ;;\n"
             "onegpu) echo \"$two\"; echo '3 passed, 0 failed, 1 skipped' ;;\n"
             "other) echo 'skipped: gpu_kernels: gpu_equals_reference_large: no GPU'; "
             "echo '5 passed, 0 failed, 1 skipped' ;;\n"
             "miscount) echo \"$two\"; echo '3 passed, 0 failed, 2 skipped' ;;\n"
             "both) echo \"$two\"; echo 'skipped: gpu_exec: no GPU (cudaGetDeviceCount found none)'; "
             "echo '3 passed, 0 failed, 2 skipped' ;;\n"
             "esac\n");
    ck_assert_int_eq(chmod(tu_path("stub/tests/run_tests"), 0755), 0);
    char body[1024];
    snprintf(body, sizeof body,
             "source scripts/gpu-check.sh || exit 9\n"
             "export BD='%s' LOGS='%s' DRY=0\n"
             "mkdir -p \"$LOGS\"\n"
             "for c in pass fail onegpu other miscount both; do NGPU=1 suite $c 10 > /dev/null; echo \"$c $?\"; done\n"
             "NGPU=2 suite onegpu 10 > /dev/null; echo \"onegpu-on-2 $?\"\n",
             tu_path("stub"), tu_path("slogs"));
    const char *script = tu_write("suite_check.sh", body);
    struct tu_run r;
    tu_sh(&r, "cd '%s' && bash '%s'", tu_src(), script);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_str_eq(r.out, "pass 0\nfail 1\nonegpu 0\nother 1\nmiscount 1\nboth 1\nonegpu-on-2 1\n");
    tu_run_free(&r);
}
END_TEST

/* A failing step fails the run and shows the failing command's last lines. */
START_TEST(dry_run_fails_when_a_step_fails)
{
    struct tu_run r;
    tu_sh(&r, "cd '%s' && GPU_CHECK_DRY=1 OUT='%s/gf' RATIOLAB_BIN=/bin/false RATIOLAB_BUILD='%s' timeout 120 "
          "scripts/gpu-check.sh", tu_src(), tu_tmpdir(), tu_build());
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    ck_assert_msg(strstr(r.out, "step executor: FAILED") && strstr(r.out, "last lines of logs/executor.log"), "%s",
                  r.out);
    ck_assert_msg(strstr(r.out, "gpu-check: FAILED"), "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* No step runs past the run's deadline: the steps left are reported as not run and fail it. */
START_TEST(dry_run_stops_at_its_deadline)
{
    struct tu_run r;
    tu_sh(&r, "cd '%s' && GPU_CHECK_DRY=1 GPU_CHECK_DEADLINE_S=1 OUT='%s/gd' RATIOLAB_BIN='%s' RATIOLAB_BUILD='%s' "
          "timeout 120 scripts/gpu-check.sh", tu_src(), tu_tmpdir(), tu_bin(), tu_build());
    ck_assert_msg(r.status == 1, "exit %d:\n%s", r.status, r.out);
    ck_assert_msg(strstr(r.out, "step validate: FAILED: not run, the run's 1 s deadline is reached"), "%s", r.out);
    tu_run_free(&r);
}
END_TEST

static int n_clears;
static int count_clear(void)
{
    n_clears++;
    return 0;
}

/* cudaEventQuery's not-ready answer also becomes the runtime's last error; the poll clears it. */
START_TEST(not_ready_query_clears_the_last_error)
{
    bool done = true;
    n_clears = 0;
    ck_assert_int_eq(rl_api_poll(600, 0, 600, count_clear, &done), 0);
    ck_assert(!done);
    ck_assert_int_eq(n_clears, 1);
    ck_assert_int_eq(rl_api_poll(0, 0, 600, count_clear, &done), 0);
    ck_assert(done);
    ck_assert_int_eq(rl_api_poll(700, 0, 600, count_clear, &done), -1);
    ck_assert(!done);
    ck_assert_int_eq(n_clears, 1);
}
END_TEST

START_TEST(api_check_names_call_code_and_place)
{
#ifdef RL_HAVE_CUDA
    struct rl_err e = {0};
    int line = __LINE__ + 1;
    ck_assert_int_eq(RL_API_CHECK(cuda, cudaErrorMemoryAllocation, &e), RL_EENV);
    char want[200];
    snprintf(want, sizeof want, "check_gpucheck.c:%d: cudaErrorMemoryAllocation: cudaErrorMemoryAllocation (2): ", line);
    ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
    ck_assert_int_eq(RL_API_CHECK(cublas, CUBLAS_STATUS_EXECUTION_FAILED, &e), RL_EENV);
    ck_assert_msg(strstr(e.msg, ": CUBLAS_STATUS_EXECUTION_FAILED (13): the GPU program failed to execute"), "%s", e.msg);
    ck_assert_int_eq(RL_API_CHECK(cuda, cudaSuccess, &e), 0);
    bool done = true;
    ck_assert_int_eq(RL_API_CHECK(cuda_query, cudaErrorNotReady, &e, &done), 0);
    ck_assert(!done);
#else
    ck_assert_int_eq(rl_api_fail(NULL, "x()", "f.c", 1, 2, "E", "t"), RL_EENV);
#endif
}
END_TEST

START_TEST(one_gpu_per_rank)
{
    struct rl_err e = {0};
    int dev = -1;
    ck_assert_int_eq(ex_gpu_for_rank(1, 2, 2, &dev, &e), 0);
    ck_assert_int_eq(dev, 1);
    ck_assert_int_eq(ex_gpu_for_rank(1, 2, 1, &dev, &e), RL_EENV);
    ck_assert_int_eq(rl_exit_code(RL_EENV), 3);
    ck_assert_str_eq(e.msg, "backend cuda: 2 ranks on this node but 1 GPU visible; NCCL takes one GPU per rank; "
                            "allowed: at most 1 rank per node");
    ck_assert_int_eq(ex_gpu_for_rank(0, 1, 0, &dev, &e), RL_EENV);
}
END_TEST

/* validate's device-memory check on cuda: the ledger's buffers against what this process took
 * since open, not the whole GPU (a 500 MiB context made ratio 1 read +40-55 %). Readings as
 * cudaMemGetInfo (or NVML) would give them on an H200. */
START_TEST(device_memory_is_the_process_since_open)
{
    const int64_t MiB = 1 << 20, total = 143771 * MiB, ctx = 512 * MiB, other = 2048 * MiB, buffers = 300 * MiB;
    int64_t at_open = ctx + other;
    ck_assert_int_eq(ex_device_used(total, total - at_open - buffers, at_open, 0, 0), buffers);
    ck_assert_int_eq(ex_device_used(total, total - at_open, at_open, 0, 0), 0);
    ck_assert_int_eq(ex_device_used(total, total - at_open + MiB, at_open, 0, 0), 0);   /* another process freed */
}
END_TEST

/* The device half of the memory check at ratio 1 (made-up readings, as an H200 would give them):
 * the device share is small, so cuBLAS's own memory (a 32 MiB workspace and 9 MiB of modules
 * loaded at the first calls, read around them) and the allocator's 2 MiB pages would dominate.
 * Buffers of 1 B, 2 MiB, 3 MiB + 5 and 0 B take 2 + 2 + 4 + 2 MiB; what is left is the ledger's
 * 5 MiB + 6 B exactly. */
START_TEST(device_memory_leaves_out_cublas_and_the_rounding)
{
    const int64_t MiB = 1 << 20, total = 143771 * MiB, at_open = 530 * MiB, lib = 41 * MiB;
    ck_assert_int_eq(EX_DEVICE_GRANULE, 2 * MiB);
    const int64_t bufs[] = {1, 2 * MiB, 3 * MiB + 5, 0};
    const int64_t granted[] = {2 * MiB, 2 * MiB, 4 * MiB, 2 * MiB};
    int64_t ledger = 0, taken = 0, rounding = 0;
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(ex_device_granted(bufs[i]), granted[i]);
        ledger += bufs[i];
        taken += granted[i];
        rounding += ex_device_granted(bufs[i]) - bufs[i];
    }
    ck_assert_int_eq(ledger, 5 * MiB + 6);
    ck_assert_int_eq(taken, 10 * MiB);
    int64_t free_now = total - at_open - lib - taken;
    ck_assert_int_eq(ex_device_used(total, free_now, at_open, lib, rounding), ledger);
    /* without the re-read and the rounding, the check at ratio 1 saw 51 MiB of 5 */
    ck_assert_int_eq(ex_device_used(total, free_now, at_open, 0, 0), 51 * MiB);
}
END_TEST

/* calibrate --backend cuda on a one-GPU machine: the all-at-once H2D went through one switch, so
 * every switch's uplink is that figure, not a quarter of it (hgx-h200 has 4 switches). The
 * measurements are made up; calib_gpu_profile is pure. */
START_TEST(one_gpu_calibration_is_one_switch_uplink)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/hgx-h200.json", tu_catalog());
    char *base = tu_read(path, NULL);
    ck_assert_msg(base, "%s", path);
    struct calib c;
    struct calib_gpu g;
    memset(&c, 0, sizeof c);
    memset(&g, 0, sizeof g);
    snprintf(c.host, sizeof c.host, "h");
    snprintf(c.date, sizeof c.date, "d");
    c.n_threads = 1;
    c.dram_gbps[0] = (struct calib_figure){.median = 100, .min = 100, .max = 100, .repeats = 1};
    c.adam_elems_per_s[0] = (struct calib_figure){.median = 1e9, .min = 1e9, .max = 1e9, .repeats = 1};
    g.n_gpus = 1;
    g.copy_bytes = 256 << 20;
    struct calib_figure f = {.median = 50, .min = 49, .max = 51, .repeats = 7};
    g.h2d_pinned_gbps[0] = g.d2h_pinned_gbps[0] = g.h2d_pageable_gbps[0] = g.d2h_pageable_gbps[0] = f;
    g.h2d_all_gbps = f;
    g.d2d_gbps = (struct calib_figure){.median = 4000, .min = 4000, .max = 4000, .repeats = 7};
    g.adam_elems_per_s = (struct calib_figure){.median = 1e11, .min = 1e11, .max = 1e11, .repeats = 7};
    /* The host's first touch, memcpy and cast (2 thread counts), the copies by size, the latency. */
    c.host_costs.measured = true;
    c.host_costs.n_threads = 2;
    c.host_costs.fault_gbps[0] = (struct calib_figure){.best = 3, .median = 3, .min = 3, .max = 3, .repeats = 15};
    c.host_costs.fault_gbps[1] = (struct calib_figure){.best = 5, .median = 5, .min = 5, .max = 5, .repeats = 15};
    c.host_costs.memcpy_gbps[0] = (struct calib_figure){.best = 7, .median = 7, .min = 7, .max = 7, .repeats = 15};
    c.host_costs.cast_elems_per_s[0] = (struct calib_figure){.best = 2e9, .median = 2e9, .min = 2e9, .max = 2e9,
                                                             .repeats = 15};
    g.n_copy_sizes = 2;
    g.copy_size_bytes[0] = 1 << 20;
    g.copy_size_bytes[1] = 500000000;
    for (int k = 0; k < CALIB_COPY_KINDS; k++) {
        g.copy_size_gbps[k][0] = (struct calib_figure){.median = 12, .min = 11, .max = 13, .repeats = 7};
        g.copy_size_gbps[k][1] = (struct calib_figure){.median = 20, .min = 19, .max = 21, .repeats = 7};
    }
    g.have_gemm = true;   /* no GEMM rate (medians 0): only the context with cuBLAS loaded */
    g.context_bytes = 500 << 20;
    g.cublas_bytes = 40 << 20;
    g.latency_bytes = 4096;
    g.copy_latency_us[0] = (struct calib_figure){.median = 9, .min = 8, .max = 10, .repeats = 7};
    g.copy_latency_us[1] = (struct calib_figure){.median = 11, .min = 10, .max = 12, .repeats = 7};
    char *out = NULL;
    struct rl_err e = {0};
    ck_assert_msg(calib_gpu_profile(&c, &g, base, "t", &out, &e) == 0, "%s", e.msg);
    json_t *j = json_loads(out, 0, NULL);
    json_t *host = json_object_get(j, "host");
    ck_assert_double_eq(json_number_value(json_object_get(host, "fault_gbps_per_thread")), 3);
    ck_assert_double_eq(json_number_value(json_object_get(host, "fault_gbps_per_socket")), 5);   /* the best */
    ck_assert_double_eq(json_number_value(json_object_get(host, "memcpy_gbps_per_thread")), 7);
    ck_assert_double_eq(json_number_value(json_object_get(host, "cast_elements_per_s_per_thread")), 2e9);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "gpu"), "context_bytes")), 540 << 20);
    /* the larger pinned latency, D2H's 11 us */
    ck_assert_double_eq(json_number_value(json_object_get(json_object_get(j, "latency_us"), "pcie_copy")), 11);
    json_t *src = json_object_get(j, "sources");
    ck_assert_msg(strstr(json_string_value(json_object_get(src, "host.memcpy_gbps_per_thread")),
                         "measured by ratiolab calibrate on h, d: memcpy"), "%s", out);
    const char *h2d = json_string_value(json_object_get(src, "gpu.h2d_pinned_gbps"));
    ck_assert_msg(h2d && strstr(h2d, "1048576 B 12.00 (11.00..13.00), 500000000 B 20.00 (19.00..21.00)") &&
                  strstr(h2d, "a 4096 B copy 9.00 us (8.00..10.00)"), "%s", h2d);
    json_t *sws = json_object_get(json_object_get(j, "node"), "pcie_switches");
    ck_assert_int_eq((int)json_array_size(sws), 4);
    for (size_t i = 0; i < 4; i++)
        ck_assert_double_eq_tol(json_number_value(json_object_get(json_array_get(sws, i), "uplink_gbps")), 50, 1e-9);
    json_decref(j);
    free(out);
    free(base);
}
END_TEST

/* validate --backend cuda predicts the host Adam on the run's threads: one rank with one thread
 * uses one core of socket 0 (hgx-h200: 56 per socket), and socket 1 none (kept at 1). */
START_TEST(prediction_uses_the_runs_threads)
{
    struct hw_profile hw;
    struct rl_err e = {0};
    ck_assert_msg(sim_hw_load(&hw, tu_catalog(), "hgx-h200", &e) == 0, "%s", e.msg);
    ck_assert_int_eq(hw.socket[0].cores, 56);
    sim_hw_use_rank_threads(&hw, 1, 1);
    ck_assert_int_eq(hw.socket[0].cores, 1);
    ck_assert_int_eq(hw.socket[1].cores, 1);
    ck_assert_msg(sim_hw_load(&hw, tu_catalog(), "hgx-h200", &e) == 0, "%s", e.msg);
    sim_hw_use_rank_threads(&hw, 8, 2);
    ck_assert_int_eq(hw.socket[0].cores, 8);
    ck_assert_int_eq(hw.socket[1].cores, 8);
}
END_TEST

/* calibrate --backend cuda measures through the backend table: the same code on the cpu backend
 * (tiny sizes) gives every figure, positive and finite, timed by the backend; and the cuda
 * backend is found by name only in a build that has it. */
START_TEST(calibration_runs_through_the_backend_table)
{
    const struct ex_backend *cpu = ex_backend_named("cpu");
    ck_assert_ptr_nonnull(cpu);
    ck_assert_ptr_null(ex_backend_named("rocm"));
#ifdef RL_EX_CUDA
    ck_assert_ptr_eq(ex_backend_named("cuda"), &ex_backend_cuda);
#else
    ck_assert_ptr_null(ex_backend_named("cuda"));
#endif
    struct calib_opts o;
    calib_opts_default(&o);
    o.gpu_bytes = 1 << 20;
    static struct calib_gpu g;
    struct rl_err e = {0};
    ck_assert_msg(calib_measure_gpu(cpu, &o, &g, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(g.n_gpus, 1);
    const struct calib_figure *f[] = {&g.h2d_pinned_gbps[0], &g.d2h_pinned_gbps[0], &g.h2d_pageable_gbps[0],
                                      &g.d2h_pageable_gbps[0], &g.h2d_all_gbps, &g.d2d_gbps, &g.adam_elems_per_s};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        ck_assert_msg(f[i]->median > 0 && f[i]->median < 1e15 && f[i]->repeats == 7, "figure %zu: %g", i,
                      f[i]->median);
    struct calib_run run;
    memset(&run, 0, sizeof run);
    run.n_gemm = 1;
    run.gemm[0] = (struct calib_gemm_shape){64, 64, 64, 2, false};
    /* the flush's sizes that fit the 1 MiB buffers (1 MiB), and the 4 KiB latency, every kind */
    ck_assert_int_eq(g.n_copy_sizes, 1);
    ck_assert_int_eq(g.copy_size_bytes[0], 1 << 20);
    for (int k = 0; k < CALIB_COPY_KINDS; k++)
        ck_assert_msg(g.copy_size_gbps[k][0].median > 0 && g.copy_size_gbps[k][0].repeats == 7 &&
                      g.copy_latency_us[k].median > 0 && g.copy_latency_us[k].repeats == 7, "kind %d", k);
    ck_assert_msg(calib_measure_gpu_gemm(cpu, &run, false, &g, &e) == 0, "%s", e.msg);
    ck_assert(g.have_gemm);
    ck_assert_int_eq(g.n_gemm_shapes, 1);
    ck_assert_msg(g.gemm_shape_flops[0][0].median > 0 && g.gemm_shape_flops[0][0].repeats == 7, "%g",
                  g.gemm_shape_flops[0][0].median);
    ck_assert_double_eq(g.gemm_flop, 2.0 * 64 * 64 * 64 * 2);
    ck_assert_msg(g.sgemm_flops.median > 0, "%g", g.sgemm_flops.median);
    ck_assert_double_eq(g.bf16_flops.median, 0);   /* the cpu backend has no 16-bit GEMM */
    ck_assert_int_eq(g.context_bytes, -1);          /* nor a CUDA context */
    ck_assert_int_eq(calib_measure_gpu(NULL, &o, &g, &e), RL_EENV);
}
END_TEST

/* In place: rank r receives its reduced block at its own offset (not at the buffer's start). */
START_TEST(reduce_scatter_receives_in_its_own_block)
{
    static char buf[4 * 64];
    for (int r = 0; r < 4; r++)
        ck_assert_ptr_eq(calib_nccl_rs_recv(buf, r, 64), buf + 64 * r);
}
END_TEST

/* Every `ratiolab run` of tests/check_exec.c names the cpu backend (TU_EXEC_SMALL, tests/util.h,
 * carries it). */
START_TEST(exec_tests_name_the_cpu_backend)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/util.h", tu_src());
    char *u = tu_read(path, NULL);
    ck_assert_msg(u, "cannot read %s", path);
    ck_assert_msg(strstr(u, "#define TU_EXEC_SMALL \"--backend cpu "), "TU_EXEC_SMALL does not start with --backend cpu");
    free(u);
    snprintf(path, sizeof path, "%s/tests/check_exec.c", tu_src());
    char *s = tu_read(path, NULL);
    ck_assert_msg(s, "cannot read %s", path);
    int n = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "run ") || strstr(line, "run --help") || !(strstr(line, "tu_ratiolab(") || strstr(line, "tu_sh(")))
            continue;
        n++;
        ck_assert_msg(strstr(line, "SMALL") || strstr(line, "--backend cpu"), "no backend named: %s", line);
    }
    ck_assert_int_gt(n, 10);
    free(s);
}
END_TEST

Suite *gpucheck_suite(void)
{
    Suite *s = suite_create("gpucheck");
    TCase *tc = tcase_create("gpucheck");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, dry_run_passes_and_lists_every_step);
    tcase_add_test(tc, dry_run_fails_when_a_step_fails);
    tcase_add_test(tc, suite_accepts_exactly_the_one_gpu_skips);
    tcase_add_test(tc, dry_run_stops_at_its_deadline);
    tcase_add_test(tc, not_ready_query_clears_the_last_error);
    tcase_add_test(tc, api_check_names_call_code_and_place);
    tcase_add_test(tc, one_gpu_per_rank);
    tcase_add_test(tc, reduce_scatter_receives_in_its_own_block);
    tcase_add_test(tc, device_memory_is_the_process_since_open);
    tcase_add_test(tc, device_memory_leaves_out_cublas_and_the_rounding);
    tcase_add_test(tc, one_gpu_calibration_is_one_switch_uplink);
    tcase_add_test(tc, prediction_uses_the_runs_threads);
    tcase_add_test(tc, calibration_runs_through_the_backend_table);
    tcase_add_test(tc, exec_tests_name_the_cpu_backend);
    suite_add_tcase(s, tc);
    return s;
}
