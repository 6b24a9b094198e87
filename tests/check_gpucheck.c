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
#include <unistd.h>   /* access */

#ifdef RL_HAVE_CUDA
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#endif
#include "calib/calib.h"
#include "common/rl_api.h"
#include "exec/backend.h"
#include "tests/util.h"

START_TEST(dry_run_passes_and_lists_every_step)
{
    struct tu_run r;
    tu_sh(&r, "cd '%s' && GPU_CHECK_DRY=1 OUT='%s/gc' RATIOLAB_BIN='%s' RATIOLAB_BUILD='%s' timeout 120 scripts/gpu-check.sh",
          tu_src(), tu_tmpdir(), tu_bin(), tu_build());
    ck_assert_msg(r.status == 0, "gpu-check dry run (%d):\n%s\n%s", r.status, r.out, r.err);
    tu_run_free(&r);
    char *s = tu_slurp("gc/summary.txt");
    static const char *const steps[] = {"preflight", "build",     "kernels",   "executor", "nccl1", "bench_adam",
                                        "gpu_exec",  "calibrate", "monitor", "bench_exec", "validate"};
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

/* In place: rank r receives its reduced block at its own offset (not at the buffer's start). */
START_TEST(reduce_scatter_receives_in_its_own_block)
{
    static char buf[4 * 64];
    for (int r = 0; r < 4; r++)
        ck_assert_ptr_eq(calib_nccl_rs_recv(buf, r, 64), buf + 64 * r);
}
END_TEST

/* Every `ratiolab run` of tests/check_exec.c names the cpu backend (SMALL carries it). */
START_TEST(exec_tests_name_the_cpu_backend)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/check_exec.c", tu_src());
    char *s = tu_read(path, NULL);
    ck_assert_msg(s, "cannot read %s", path);
    ck_assert_msg(strstr(s, "#define SMALL \"--backend cpu "), "SMALL does not start with --backend cpu");
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
    tcase_add_test(tc, not_ready_query_clears_the_last_error);
    tcase_add_test(tc, api_check_names_call_code_and_place);
    tcase_add_test(tc, one_gpu_per_rank);
    tcase_add_test(tc, reduce_scatter_receives_in_its_own_block);
    tcase_add_test(tc, exec_tests_name_the_cpu_backend);
    suite_add_tcase(s, tc);
    return s;
}
