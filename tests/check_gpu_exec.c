/* tests/check_gpu_exec.c — `ratiolab run --backend cuda` (exec/backend_cuda.cu) on a real GPU:
 * ratios 0, 0.5 and 1 x both schedules give the cpu backend's digest (and the scalar
 * reference's), the ledger check passes, GEMM compute runs, and with two or more GPUs two ranks
 * over NCCL give the same digest. Runs without fork (a forked child must not use CUDA; the
 * binary runs in its own process anyway). Without a GPU the suite registers a skip. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/util.h"
#ifdef RL_HAVE_CUDA
#include "kernels/adam.h"   /* kern_cuda_device_count */
#endif

#define GSMALL "--scale 1000 --sub-group-size 1e8 --warmup 1 --steps 2"

#ifdef RL_EX_CUDA
/* Every digest in text (one per line with "digest "), into out; returns how many. */
static int digests(const char *text, char out[][9], int max)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, "digest ")) && n < max; p += 7)
        if (sscanf(p + 7, "%8[0-9a-f]", out[n]) == 1)
            n++;
    return n;
}

START_TEST(gpu_run_equals_cpu_backend_and_reference)
{
    struct tu_run r;
    char ref[1][9], cpu[8][9], gpu[8][9];
    tu_ratiolab(&r, "run " GSMALL " --reference");
    ck_assert_msg(r.status == 0 && digests(r.out, ref, 1) == 1, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "run " GSMALL " --backend cpu --ratios 0,0.5,1 --policies exact --schedules overlap,deepspeed");
    ck_assert_msg(r.status == 0 && digests(r.out, cpu, 8) == 6, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "run " GSMALL " --backend cuda --ratios 0,0.5,1 --policies exact --schedules overlap,deepspeed");
    ck_assert_msg(r.status == 0 && digests(r.out, gpu, 8) == 6, "%s", r.err);
    for (int i = 0; i < 6; i++) {
        ck_assert_str_eq(cpu[i], ref[0]);
        ck_assert_str_eq(gpu[i], ref[0]);
    }
    tu_run_free(&r);
}
END_TEST

START_TEST(gpu_ledger_json_and_gemm)
{
    struct tu_run r;
    tu_ratiolab(&r, "run " GSMALL " --backend cuda --ratio 0.5 --policy exact --compute gemm --seq-len 128 --json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "\"ledger_ok\": true") && strstr(r.out, "\"backend\": \"cuda\""), "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* --comm-dtype fp16 (the model dtype) on one rank is exact (no sum): the reference's digest, through
 * the 16-bit share kernel and the widening; the overlap schedule's device Adam and copies carry
 * CUDA-event times. */
START_TEST(gpu_comm_dtype_and_event_timing)
{
    struct tu_run r;
    char ref[1][9], d[1][9];
    tu_ratiolab(&r, "run " GSMALL " --reference");
    ck_assert_msg(r.status == 0 && digests(r.out, ref, 1) == 1, "%s", r.err);
    tu_run_free(&r);
    static const char *const sch[] = {"overlap", "deepspeed-0.12"};
    for (int i = 0; i < 2; i++) {
        tu_ratiolab(&r, "run " GSMALL " --backend cuda --ratio 0.5 --schedule %s --comm-dtype fp16 --hash", sch[i]);
        ck_assert_msg(r.status == 0 && digests(r.out, d, 1) == 1, "%s", r.err);
        ck_assert_str_eq(d[0], ref[0]);
        tu_run_free(&r);
    }
    tu_ratiolab(&r, "run " GSMALL " --backend cuda --ratio 0.5 --json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    static const char *const ph[] = {"\"gpu_adam\": {", "\"grad_d2h\": {", "\"param_h2d\": {"};
    for (int i = 0; i < 3; i++) {
        const char *p = strstr(r.out, ph[i]);
        long long busy = 0;
        ck_assert_msg(p && sscanf(p + strlen(ph[i]), " \"busy_ns\": %lld", &busy) == 1 && busy > 0,
                      "%s: no CUDA-event time in %s", ph[i], r.out);
    }
    tu_run_free(&r);
}
END_TEST

START_TEST(gpu_two_ranks_nccl)
{
    struct tu_run r;
    char ref[1][9], d[1][9];
    tu_ratiolab(&r, "run " GSMALL " --reference");
    ck_assert_msg(r.status == 0 && digests(r.out, ref, 1) == 1, "%s", r.err);
    tu_run_free(&r);
    tu_sh(&r, "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 mpirun --oversubscribe "
          "--bind-to none -np 2 '%s' run " GSMALL " --backend cuda --ratio 0.5 --hash", tu_bin());
    ck_assert_msg(r.status == 0 && digests(r.out, d, 1) == 1, "%s", r.err);
    ck_assert_str_eq(d[0], ref[0]);
    tu_run_free(&r);
}
END_TEST
#endif

Suite *gpu_exec_suite(void)
{
#ifdef RL_EX_CUDA
    int n = kern_cuda_device_count();
    if (n > 0) {
        Suite *s = suite_create("gpu_exec");
        TCase *tc = tcase_create("cuda backend");
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, gpu_run_equals_cpu_backend_and_reference);
        tcase_add_test(tc, gpu_ledger_json_and_gemm);
        tcase_add_test(tc, gpu_comm_dtype_and_event_timing);
        if (n >= 2)
            tcase_add_test(tc, gpu_two_ranks_nccl);
        else
            tu_skip("gpu_exec: gpu_two_ranks_nccl", "needs 2 GPUs (NCCL does not put two ranks on one GPU)");
        suite_add_tcase(s, tc);
        return s;
    }
    tu_skip("gpu_exec", "no GPU (cudaGetDeviceCount found none)");
#else
    tu_skip("gpu_exec", "no GPU (built without nvcc, cuBLAS and NCCL)");
#endif
    return NULL;   /* the runner counts it as skipped, never as passed */
}
