/* bench/exec.c — the executor on the cpu backend, one rank: step time of both schedules at
 * ratios 0, 0.5 and 1 on gpt-2.7b (TP 8 shard) shrunk 32 x (10.5 M elements per rank, ~200 MB
 * of state: far beyond the 32 MiB L3 here), the bytes each schedule moved per element, the
 * overlap efficiency step / max(device-side time, host-side time), and this machine's memcpy
 * bandwidth measured in the same run.
 *
 * On the cpu backend the "device" and the host share one DRAM and the same cores (the device's
 * streams are threads), so `overlap` can win only by moving fewer bytes. Usage:
 *   build/bench/exec [--gpu] [SCALE]  (RATIOLAB_SRC: the source tree, for catalog/)
 * --gpu runs the cuda backend instead (scripts/gpu-check.sh; target there: efficiency <= 1.10
 * and overlap >= 2x faster than deepspeed at ratio 0.5). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "exec/exec_impl.h"   /* ex__now_ns */

static int setup(struct plan_model *m, struct plan_zero *z, const char *catalog, struct rl_err *e)
{
    struct plan_model_opts mo = {.tp = 8, .pp = 1, .pp_stage = 0, .seq_len = 0};
    int rc = plan_model_load(m, catalog, "gpt-2.7b", &mo, e);
    if (rc)
        return rc;
    plan_model_group(m, PLAN_GROUPS_AUTO, false);
    plan_zero_defaults(z);
    z->stage = 3;
    z->offload = PLAN_OFFLOAD_CPU;
    z->pin_memory = true;
    z->dtype = PLAN_BF16;
    return 0;
}

/* memcpy bandwidth over 256 MiB (bytes copied per second; each byte is read once and written once). */
static double memcpy_gbps(void)
{
    const size_t n = (size_t)256 << 20;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    memset(a, 1, n);
    memset(b, 2, n);
    double best = 0;
    for (int k = 0; k < 5; k++) {
        int64_t t0 = ex__now_ns();
        memcpy(b, a, n);
        int64_t dt = ex__now_ns() - t0;
        double g = (double)n / (double)dt;
        best = g > best ? g : best;
    }
    volatile char sink = b[n / 2];
    (void)sink;
    free(a);
    free(b);
    return best;
}

/* Sums of a rank result's phases. */
static int64_t busy(const struct ex_rank_result *x, const int *ph, int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        s += x->phase[ph[i]].busy_ns;
    return s;
}

int main(int argc, char **argv)
{
    const char *src = getenv("RATIOLAB_SRC");
    char catalog[4096];
    snprintf(catalog, sizeof catalog, "%s/catalog", src ? src : ".");
    bool gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
    double scale = argc > 1 + gpu ? atof(argv[1 + gpu]) : 32;
    if (!(scale >= 1)) {
        fprintf(stderr, "bench/exec: SCALE: '%s'; allowed: a number >= 1\n", argv[1 + gpu]);
        return 2;
    }
    struct rl_err e = {0};
    struct plan_model m, scaled;
    struct plan_zero z;
    struct ex_comm comm;
    if (setup(&m, &z, catalog, &e) || ex_scale_model(&m, scale, &scaled, &e) || ex_comm_init(&comm, &e)) {
        fprintf(stderr, "bench/exec: %s\n", e.msg);
        return 1;
    }
    int64_t chunk = STEP_CHUNK_DEFAULT_NUMEL;
    plan_scale_zero(&z, &chunk, scale);
    struct plan_layout l = {.tp = 8, .pp = 1, .dp = 1};
    double mc = memcpy_gbps();
    printf("executor, %s backend, 1 rank:", gpu ? "cuda" : "cpu");
    printf(" gpt-2.7b TP 8 shard / %g, bf16, policy exact, compute none, "
           "median of 3 steps after 1\n", scale);
    printf("memcpy bandwidth (this run, 256 MiB, best of 5): %.2f GB/s\n\n", mc);
    printf("%-10s %5s %9s %10s %10s %10s %10s %10s %8s\n", "schedule", "ratio", "elements", "step s",
           "optim s", "device s", "host s", "B/elem", "effic.");
    /* device side: the device streams' work; host side: the host's Adam and casts. */
    static const int dev_ph[] = {STEP_PH_FORWARD, STEP_PH_BACKWARD, STEP_PH_GPU_ADAM, STEP_PH_ALLGATHER,
                                 STEP_PH_REDUCE_SCATTER, STEP_PH_GRAD_D2H, STEP_PH_GRAD_H2D, STEP_PH_PARAM_H2D};
    static const int host_ph[] = {STEP_PH_CPU_ADAM, STEP_PH_GRAD_CAST, STEP_PH_UNSCALE, STEP_PH_PARAM_CAST,
                                  STEP_PH_OVERFLOW_CHECK};
    /* optimizer path: everything after the gradient is produced (not the synthetic backward) */
    static const int opt_ph[] = {STEP_PH_GPU_ADAM, STEP_PH_CPU_ADAM, STEP_PH_REDUCE_SCATTER, STEP_PH_GRAD_D2H,
                                 STEP_PH_GRAD_H2D, STEP_PH_PARAM_H2D, STEP_PH_GRAD_CAST, STEP_PH_UNSCALE,
                                 STEP_PH_PARAM_CAST, STEP_PH_OVERFLOW_CHECK};
    static const double ratios[] = {0, 0.5, 1};
    int64_t step_at_half[2] = {0, 0}, opt_at_half[2] = {0, 0};
    int rc = 0;
    for (int ri = 0; ri < 3 && !rc; ri++)
        for (int si = 0; si < 2 && !rc; si++) {
            enum step_schedule sch = si == 0 ? STEP_SCHED_DS012 : STEP_SCHED_OVERLAP;
            struct plan p;
            struct plan_zero zz = z;
            zz.ratio = ratios[ri];
            struct plan_options po = {.policy = PLAN_POLICY_EXACT, .ledger = PLAN_LEDGER_EXEC,
                                      .exec_chunk_numel = chunk};
            struct ex_opts o;
            ex_opts_default(&o);
            o.schedule = sch;
            o.backend = gpu ? EX_BACKEND_CUDA : EX_BACKEND_CPU;
            struct ex_result r;
            if ((rc = plan_build(&p, &scaled, &l, &zz, &po, &e)))
                break;
            rc = ex_run(&p, &o, &comm, &r, &e);
            if (!rc) {
                const struct ex_rank_result *x = &r.self;
                int64_t moved = 0;
                for (int k = 0; k < (int)(sizeof opt_ph / sizeof opt_ph[0]); k++)
                    moved += x->phase[opt_ph[k]].bytes;
                int64_t dev = busy(x, dev_ph, 8), host = busy(x, host_ph, 5);
                int64_t opt = busy(x, opt_ph, 10);
                double eff = (double)x->step_ns / (double)(dev > host ? dev : host);
                printf("%-10s %5.2f %9lld %10.4f %10.4f %10.4f %10.4f %10.1f %8.2f\n", step_schedule_name(sch),
                       ratios[ri], (long long)x->per_rank_numel, (double)x->step_ns * 1e-9, (double)opt * 1e-9,
                       (double)dev * 1e-9, (double)host * 1e-9, (double)moved / (double)x->per_rank_numel, eff);
                if (ri == 1) {
                    step_at_half[si] = x->step_ns;
                    opt_at_half[si] = opt;
                }
            }
            ex_result_free(&r);
            plan_free(&p);
        }
    if (rc) {
        fprintf(stderr, "bench/exec: %s\n", e.msg);
    } else {
        printf("\nat ratio 0.5: overlap is %.2fx faster per step than deepspeed (target >= %s), %.2fx on the "
               "optimizer path alone\n", (double)step_at_half[0] / (double)step_at_half[1],
               gpu ? "2x, and an overlap efficiency <= 1.10" : "1.3x",
               (double)opt_at_half[0] / (double)opt_at_half[1]);
        printf("B/elem: bytes moved or touched per partition element by the optimizer path (reduce-scatter\n"
               "delivery, copies, casts, unscale, overflow scan, Adam); step: forward + backward + optimizer;\n"
               "effic.: step / max(device-side, host-side) busy time (1.00 = perfect overlap; on the cpu\n"
               "backend the device's streams are threads on the host's own cores and DRAM)\n");
    }
    plan_model_free(&scaled);
    plan_model_free(&m);
    ex_comm_finalize(&comm);
    return rc ? 1 : 0;
}
