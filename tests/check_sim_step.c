/* tests/check_sim_step.c — the step models: a closed form on one GPU, the two schedules against
 * each other, contention on shared PCIe switches, the breakdown, the memory prediction, the
 * commands (predict, sweep, tune) and their trace determinism, and the golden prediction table
 * (tests/golden/predictions.tsv: a regression net; RL_UPDATE_GOLDEN=1 make test-run rewrites it,
 * prints the changed rows and fails, so a rewritten table never counts as a pass). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/megatron_args.h"
#include "plan/plan.h"
#include "sim/hw.h"
#include "sim/step.h"
#include "sim/sweep.h"
#include "tests/sim_tiny.h"
#include "tests/util.h"
#include "traces/schema.h"
#include "traces/trace.h"

static char catalog[4096];
static const char *cat(void)
{
    snprintf(catalog, sizeof catalog, "%s/catalog", tu_src());
    return catalog;
}

/* A model, its layout and a ZeRO-3 CPU-offload config, as the CLI's default builds them. */
struct fixture {
    struct plan_model m;
    struct plan_layout l;
    struct plan_zero z;
    struct plan_options o;
    struct plan p;
};

static void fx_init(struct fixture *f, const char *model, int tp, int world, int gpn, double ratio,
                    enum plan_policy policy)
{
    struct rl_err e;
    memset(f, 0, sizeof *f);
    f->l.tp = tp;
    f->l.world = world;
    f->l.gpus_per_node = gpn;
    ck_assert_msg(plan_layout_resolve(&f->l, &e) == 0, "%s", e.msg);
    struct plan_model_opts mo = {.tp = tp, .pp = 1, .pp_stage = 0, .seq_len = 0};
    ck_assert_msg(plan_model_load(&f->m, cat(), model, &mo, &e) == 0, "%s", e.msg);
    plan_model_group(&f->m, PLAN_GROUPS_AUTO, false);
    plan_zero_defaults(&f->z);
    f->z.stage = 3;
    f->z.offload = PLAN_OFFLOAD_CPU;
    f->z.pin_memory = true;
    f->z.dtype = PLAN_FP16;
    f->z.ratio = ratio;
    f->o.policy = policy;
    ck_assert_msg(plan_build(&f->p, &f->m, &f->l, &f->z, &f->o, &e) == 0, "%s", e.msg);
}

static void fx_free(struct fixture *f)
{
    plan_free(&f->p);
    plan_model_free(&f->m);
}

static struct hw_profile load_hw(const char *name)
{
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_msg(sim_hw_load(&hw, cat(), name, &e) == 0, "%s", e.msg);
    return hw;
}

START_TEST(step_single_gpu_equals_closed_form)
{
    /* gpt-350m on one GH200, ratio 0, overlap schedule: no collectives, no copies; the step is
     * the chain of per-layer forward and backward GEMM work at the tensor rate, each after one
     * launch latency, then GPU Adam over the partition at 30 bytes per element from HBM. */
    struct fixture f;
    fx_init(&f, "gpt-350m", 1, 1, 1, 0.0, PLAN_POLICY_DS012);
    struct hw_profile hw = load_hw("gh200");
    hw.gemm_efficiency = 0;   /* the constant tensor rate (the per-shape model: sim_hw's tests) */
    struct sim_train t;
    sim_train_defaults(&t);
    t.schedule = STEP_SCHED_OVERLAP;
    struct sim_step_result r;
    struct rl_err e;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);

    const struct plan_arch *a = &f.m.arch;
    long double rate = (long double)hw.tensor_tflops * hw.tensor_efficiency * 1e12L;
    long double b = 1, s = (long double)a->seq_len, tokens = b * s;
    int64_t launch = (int64_t)llround(hw.lat_launch_us * 1000);
    int64_t layer_numel[256] = {0};
    int lmax = -1;
    for (int i = 0; i < f.m.n_tensors; i++)
        if (f.m.tensors[i].layer >= 0) {
            layer_numel[f.m.tensors[i].layer] += f.m.tensors[i].numel;
            if (f.m.tensors[i].layer > lmax)
                lmax = f.m.tensors[i].layer;
        }
    ck_assert_int_eq(lmax + 1, 24);
    int64_t want = 0;
    for (int l = 0; l <= lmax; l++) {
        /* The ones used below for a layer: 2 x tokens x weights + 4 b s^2 x heads x head_dim. */
        long double fwd = 2.0L * tokens * (long double)layer_numel[l] +
                          4.0L * b * s * s * (long double)a->heads * (long double)(a->hidden / a->heads);
        want += 2 * launch + tu_ceil_ns(fwd / rate * 1e9L) + tu_ceil_ns(2.0L * fwd / rate * 1e9L);
    }
    long double logits = 2.0L * tokens * (long double)a->hidden * (long double)a->vocab_padded;
    want += 2 * launch + tu_ceil_ns(logits / rate * 1e9L) + tu_ceil_ns(2.0L * logits / rate * 1e9L);
    long double hbm = (long double)hw.hbm_gbps * hw.hbm_efficiency * 1e9L;
    /* The executor's overflow check: the device share scanned on the GPU (4 B per element), its
     * launch and the count's copy back first; no host share, one rank: nothing else. */
    want += (int64_t)llround((hw.lat_launch_us + hw.lat_copy_us) * 1000) +
            tu_ceil_ns((long double)f.p.gpu_numel * 4.0L / hbm * 1e9L);
    want += launch + tu_ceil_ns((long double)f.p.gpu_numel * 30.0L / hbm * 1e9L);
    ck_assert_int_eq(r.step_ns, want);
    ck_assert_int_eq(r.phase[STEP_PH_CPU_ADAM].busy_ns, 0);
    fx_free(&f);
}
END_TEST

/* The overlap schedule's host overflow scan (the executor's, before the optimizer): gpt-350m on one
 * GH200 at ratio 1, so the whole partition is the host share and nothing else runs meanwhile. With
 * the catalog's profile (no one-thread memcpy rate) it is DRAM-bound, 4 bytes per element at the
 * socket's 450 GB/s; with 2 cores of 0.5 GB/s each it is capped at 2 x 0.5e9 / 4 elements/s. */
START_TEST(step_overlap_host_overflow_scan_by_hand)
{
    struct fixture f;
    fx_init(&f, "gpt-350m", 1, 1, 1, 1.0, PLAN_POLICY_EXACT);
    ck_assert_int_eq(f.p.gpu_numel, 0);
    long double P = (long double)f.p.cpu_numel;
    ck_assert(P > 3e8L);
    struct sim_train t;
    sim_train_defaults(&t);
    t.schedule = STEP_SCHED_OVERLAP;
    struct sim_step_result r;
    struct rl_err e;
    struct hw_profile hw = load_hw("gh200");
    ck_assert(hw.host_memcpy_gbps_per_thread == 0 && hw.socket[0].dram_gbps == 450);
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.phase[STEP_PH_OVERFLOW_CHECK].busy_ns, tu_ceil_ns(P * 4.0L / 450e9L * 1e9L));
    ck_assert_int_eq(r.phase[STEP_PH_OVERFLOW_CHECK].exposed_ns, r.phase[STEP_PH_OVERFLOW_CHECK].busy_ns);
    hw.socket[0].cores = 2;
    hw.host_memcpy_gbps_per_thread = 0.5;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.phase[STEP_PH_OVERFLOW_CHECK].busy_ns, tu_ceil_ns(P / (2 * 0.5e9L / 4) * 1e9L));
    fx_free(&f);
}
END_TEST

START_TEST(step_breakdown_adds_up)
{
    struct hw_profile hw = load_hw("dgx1-v100");
    const double ratios[] = {0, 0.5, 1};
    for (int sch = 0; sch < 2; sch++)
        for (int i = 0; i < 3; i++) {
            struct fixture f;
            fx_init(&f, "gpt-2.7b", 8, 8, 8, ratios[i], PLAN_POLICY_EXACT);
            struct sim_train t;
            sim_train_defaults(&t);
            t.schedule = (enum step_schedule)sch;
            struct sim_step_result r;
            struct rl_err e;
            ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &r, &e), 0);
            int64_t sum = r.idle_ns;
            for (int k = 0; k < STEP_PH_COUNT; k++) {
                ck_assert_int_le(r.phase[k].exposed_ns, r.phase[k].busy_ns);
                sum += r.phase[k].exposed_ns;
            }
            ck_assert_int_eq(sum, r.step_ns);
            ck_assert_int_gt(r.phase[STEP_PH_FORWARD].busy_ns, 0);
            ck_assert_int_gt(r.phase[STEP_PH_TP_ALLREDUCE].busy_ns, 0);   /* TP 8 */
            ck_assert_int_eq(r.phase[STEP_PH_ALLGATHER].busy_ns, 0);     /* DP 1: nothing to gather */
            if (ratios[i] == 0)
                ck_assert_int_eq(r.phase[STEP_PH_CPU_ADAM].busy_ns, 0);
            else
                ck_assert_int_gt(r.phase[STEP_PH_CPU_ADAM].busy_ns, 0);
            if (ratios[i] == 1)
                ck_assert_int_eq(r.phase[STEP_PH_GPU_ADAM].busy_ns, 0);
            fx_free(&f);
        }
}
END_TEST

START_TEST(step_schedules_and_ratio_order)
{
    /* The sequential 0.12 loop leaves the GPU idle during CPU Adam: never faster than the
     * overlapped pipeline, and slower with every extra element on the CPU. */
    struct hw_profile hw = load_hw("dgx1-v100");
    int64_t prev_ds = -1;
    for (int i = 0; i <= 4; i++) {
        double ratio = i / 4.0;
        struct fixture f;
        fx_init(&f, "gpt-2.7b", 8, 8, 8, ratio, PLAN_POLICY_EXACT);
        struct sim_train t;
        sim_train_defaults(&t);
        struct sim_step_result ds, ov;
        struct rl_err e;
        ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &ds, &e), 0);
        t.schedule = STEP_SCHED_OVERLAP;
        ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &ov, &e), 0);
        ck_assert_int_le(ov.step_ns, ds.step_ns);
        if (i > 0) {
            ck_assert_int_lt(ov.step_ns, ds.step_ns);
            ck_assert_int_gt(ds.step_ns, prev_ds);
            /* In the pipeline the copies hide behind CPU Adam; in 0.12 nothing overlaps it. */
            ck_assert_int_gt(ov.phase[STEP_PH_GRAD_D2H].busy_ns - ov.phase[STEP_PH_GRAD_D2H].exposed_ns, 0);
            ck_assert_int_gt(ov.phase[STEP_PH_PARAM_H2D].busy_ns - ov.phase[STEP_PH_PARAM_H2D].exposed_ns, 0);
            ck_assert_int_eq(ds.phase[STEP_PH_CPU_ADAM].busy_ns, ds.phase[STEP_PH_CPU_ADAM].exposed_ns);
            ck_assert_int_eq(ds.phase[STEP_PH_PARAM_H2D].busy_ns, ds.phase[STEP_PH_PARAM_H2D].exposed_ns);
        }
        prev_ds = ds.step_ns;
        fx_free(&f);
    }
}
END_TEST

START_TEST(step_shared_switches_slow_the_copies)
{
    /* Two GPUs per PCIe switch (dgx1-v100) against the same node with one switch per GPU: the
     * offload traffic contends on the uplinks, so the step is slower and copies take longer. */
    struct hw_profile shared = load_hw("dgx1-v100"), own = shared;
    own.n_switches = 8;
    for (int g = 0; g < 8; g++) {
        own.sw[g].socket = g / 4;
        own.sw[g].uplink_gbps = shared.sw[0].uplink_gbps;
        own.sw[g].n_gpus = 1;
        own.sw[g].gpus[0] = g;
        own.gpu_switch[g] = g;
    }
    struct fixture f;
    fx_init(&f, "gpt-2.7b", 8, 8, 8, 0.5, PLAN_POLICY_EXACT);
    struct sim_train t;
    sim_train_defaults(&t);
    struct sim_step_result a, b;
    struct rl_err e;
    ck_assert_int_eq(sim_step_run(&f.p, &shared, &t, NULL, &a, &e), 0);
    ck_assert_int_eq(sim_step_run(&f.p, &own, &t, NULL, &b, &e), 0);
    ck_assert_int_gt(a.step_ns, b.step_ns);
    ck_assert_int_gt(a.phase[STEP_PH_GRAD_D2H].busy_ns, b.phase[STEP_PH_GRAD_D2H].busy_ns);
    /* The pinned H2D half of the gradient round trip on its own switch runs at the GPU link rate;
     * two GPUs on a 13 GB/s uplink get half of it each, so it takes about twice as long. */
    double ratio_h2d = (double)a.phase[STEP_PH_GRAD_H2D].busy_ns / (double)b.phase[STEP_PH_GRAD_H2D].busy_ns;
    ck_assert_msg(ratio_h2d > 1.5, "shared/own H2D time %.3f", ratio_h2d);
    fx_free(&f);
}
END_TEST

START_TEST(step_memory_prediction)
{
    struct hw_profile hw = load_hw("dgx1-v100");
    struct fixture f;
    fx_init(&f, "gpt-2.7b", 8, 8, 8, 0.3, PLAN_POLICY_EXACT);
    struct sim_train t;
    sim_train_defaults(&t);
    struct sim_step_result r, ck;
    struct rl_err e;
    ck_assert_int_eq(sim_step_memory(&f.p, &hw, &t, &r, &e), 0);
    ck_assert_int_eq(r.gpu_ledger_bytes, plan_peak_gpu_bytes(&f.p));
    ck_assert_int_eq(r.host_rank_bytes, plan_peak_cpu_bytes(&f.p));
    ck_assert_int_eq(r.host_node_bytes, 8 * r.host_rank_bytes);
    ck_assert_int_eq(r.gpu_live_param_bytes, 0);   /* DP 1: the partition is the whole tensor */
    ck_assert_int_eq(r.gpu_allocated_bytes, r.gpu_ledger_bytes + r.gpu_activation_bytes + r.gpu_live_param_bytes);
    /* The reserve in three parts: the CUDA context; NCCL buffers of one communicator (TP 8 over all 8
     * ranks: only the world group); the allocator's 2 MiB rounding of each GPU buffer above 1 MiB plus
     * the fragmentation fraction of the transient bytes (activations here). */
    int64_t rounding = 0;
    for (int i = 0; i < f.p.n_buffers; i++) {
        int64_t x = f.p.buffers[i].bytes, gran = 2 << 20;
        if (f.p.buffers[i].device == PLAN_DEV_GPU && x > (1 << 20))
            rounding += (gran - x % gran) % gran;
    }
    ck_assert_int_eq(r.nccl_communicators, 1);
    ck_assert_int_eq(r.gpu_context_bytes, hw.context_bytes);
    ck_assert_int_eq(r.gpu_nccl_bytes, hw.nccl_comm_bytes);
    ck_assert_int_eq(r.gpu_allocator_bytes,
                     rounding + (int64_t)ceil(hw.allocator_overhead * (double)r.gpu_activation_bytes));
    ck_assert_int_eq(r.gpu_reserve_bytes, r.gpu_context_bytes + r.gpu_nccl_bytes + r.gpu_allocator_bytes);
    ck_assert_int_eq(r.gpu_total_bytes, r.gpu_allocated_bytes + r.gpu_reserve_bytes);
    ck_assert(r.fits_gpu == (r.gpu_total_bytes <= hw.gpu_mem_bytes));
    /* Activations, Korthikanti et al.: s b h (10 + 24/t + 5 a s / (h t)) per layer, 32 layers, plus
     * fp32 logits and their gradient. */
    const struct plan_arch *a = &f.m.arch;
    double s = (double)a->seq_len, h = (double)a->hidden, heads = (double)a->heads;
    double want = 32 * s * h * (10 + 24.0 / 8 + 5 * heads * s / (h * 8)) + 8 * s * (double)a->vocab_padded / 8;
    ck_assert_int_eq(r.gpu_activation_bytes, (int64_t)ceil(want));
    t.checkpoint_activations = true;
    ck_assert_int_eq(sim_step_memory(&f.p, &hw, &t, &ck, &e), 0);
    ck_assert_int_lt(ck.gpu_activation_bytes, r.gpu_activation_bytes / 4);
    t.gpu_reserve_bytes = 0;
    ck_assert_int_eq(sim_step_memory(&f.p, &hw, &t, &ck, &e), 0);
    ck_assert_int_eq(ck.gpu_total_bytes, ck.gpu_allocated_bytes);
    /* More on the CPU: less GPU memory, more host memory. */
    struct fixture g;
    fx_init(&g, "gpt-2.7b", 8, 8, 8, 0.9, PLAN_POLICY_EXACT);
    struct sim_step_result r9;
    sim_train_defaults(&t);
    ck_assert_int_eq(sim_step_memory(&g.p, &hw, &t, &r9, &e), 0);
    ck_assert_int_lt(r9.gpu_total_bytes, r.gpu_total_bytes);
    ck_assert_int_gt(r9.host_node_bytes, r.host_node_bytes);
    /* ZeRO-3 over 8 data-parallel ranks gathers parameters. */
    struct fixture d;
    fx_init(&d, "gpt-2.7b", 1, 8, 8, 0.3, PLAN_POLICY_EXACT);
    ck_assert_int_eq(sim_step_memory(&d.p, &hw, &t, &r9, &e), 0);
    ck_assert_int_gt(r9.gpu_live_param_bytes, 0);
    /* A layout the profile cannot hold. */
    struct hw_profile one = load_hw("gh200");
    ck_assert_int_eq(sim_step_memory(&f.p, &one, &t, &r9, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gh200"));
    ck_assert_ptr_nonnull(strstr(e.msg, "gpus_per_node"));   /* the field; cli/ puts back the flag */
    ck_assert_ptr_null(strstr(e.msg, "--"));
    struct tu_run cr;
    tu_ratiolab(&cr, "predict --hw gh200");
    ck_assert_int_eq(cr.status, 2);
    ck_assert_msg(strstr(cr.err, "allowed: --gpus-per-node <= 1, or another --hw"), "%s", cr.err);
    tu_run_free(&cr);
    fx_free(&d);
    fx_free(&g);
    fx_free(&f);
}
END_TEST

START_TEST(step_multi_node_uses_the_network)
{
    /* gpt-2.7b, TP 8 within each node, DP across nodes: parameters are gathered over the network;
     * more nodes (same per-node work per rank halves, more traffic per element) change the time. */
    struct hw_profile hw = load_hw("dgx-a100-80g");
    struct fixture f;
    fx_init(&f, "gpt-2.7b", 8, 32, 8, 0.3, PLAN_POLICY_EXACT);
    struct sim_train t;
    sim_train_defaults(&t);
    struct sim_step_result r;
    struct rl_err e;
    ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &r, &e), 0);
    ck_assert_int_gt(r.phase[STEP_PH_ALLGATHER].busy_ns, 0);
    ck_assert_int_gt(r.phase[STEP_PH_REDUCE_SCATTER].busy_ns, 0);
    ck_assert_int_gt(r.gpu_live_param_bytes, 0);
    /* A slower network makes the gathers slower. */
    struct hw_profile slow = hw;
    slow.net_gbps = hw.net_gbps / 10;
    struct sim_step_result q;
    ck_assert_int_eq(sim_step_run(&f.p, &slow, &t, NULL, &q, &e), 0);
    ck_assert_int_gt(q.phase[STEP_PH_ALLGATHER].busy_ns, r.phase[STEP_PH_ALLGATHER].busy_ns);
    ck_assert_int_gt(q.step_ns, r.step_ns);
    fx_free(&f);
}
END_TEST

START_TEST(step_accumulation_pipeline_and_numa)
{
    struct hw_profile hw = load_hw("dgx1-v100");
    struct fixture f;
    fx_init(&f, "gpt-2.7b", 8, 8, 8, 0.5, PLAN_POLICY_EXACT);
    struct sim_train t;
    sim_train_defaults(&t);
    struct sim_step_result one, two, il;
    struct rl_err e;
    ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &one, &e), 0);
    /* Two micro-steps: twice the forward work, one optimizer step. */
    t.grad_accum = 2;
    ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &two, &e), 0);
    ck_assert_int_eq(two.phase[STEP_PH_FORWARD].busy_ns, 2 * one.phase[STEP_PH_FORWARD].busy_ns);
    ck_assert_int_eq(two.phase[STEP_PH_CPU_ADAM].busy_ns, one.phase[STEP_PH_CPU_ADAM].busy_ns);
    ck_assert_int_eq(two.grad_accum, 2);
    /* Without core binding the CPU Adam threads and buffers spread over both sockets: the
     * inter-socket link joins every host transfer, so the optimizer is slower. */
    t.grad_accum = 1;
    t.numa_interleave = true;
    ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &il, &e), 0);
    ck_assert_int_gt(il.step_ns, one.step_ns);
    fx_free(&f);
    /* Two pipeline stages: the 1F1B bubble appears. */
    struct plan_layout l = {.tp = 4, .pp = 2, .world = 8, .gpus_per_node = 8};
    ck_assert_int_eq(plan_layout_resolve(&l, &e), 0);
    struct plan_model m;
    struct plan_model_opts mo = {.tp = 4, .pp = 2, .pp_stage = 0};
    ck_assert_msg(plan_model_load(&m, cat(), "gpt-2.7b", &mo, &e) == 0, "%s", e.msg);
    plan_model_group(&m, PLAN_GROUPS_AUTO, false);
    struct plan_zero z;
    plan_zero_defaults(&z);
    z.stage = 3;
    z.offload = PLAN_OFFLOAD_CPU;
    z.pin_memory = true;
    z.dtype = PLAN_FP16;
    struct plan_options o = {.policy = PLAN_POLICY_EXACT};
    struct plan p;
    ck_assert_msg(plan_build(&p, &m, &l, &z, &o, &e) == 0, "%s", e.msg);
    struct sim_step_result pr;
    sim_train_defaults(&t);
    ck_assert_int_eq(sim_step_run(&p, &hw, &t, NULL, &pr, &e), 0);
    ck_assert_int_gt(pr.phase[STEP_PH_PIPELINE_BUBBLE].busy_ns, 0);
    plan_free(&p);
    plan_model_free(&m);
}
END_TEST

/* ---- commands ------------------------------------------------------------------------------------- */
START_TEST(predict_json_and_trace_are_deterministic)
{
    struct tu_run r;
    tu_ratiolab(&r, "predict --ratio 0.5 --json --trace a.json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    json_error_t je;
    json_t *o = json_loads(r.out, 0, &je);
    ck_assert_ptr_nonnull(o);
    json_t *pr = json_object_get(o, "prediction");
    ck_assert(json_integer_value(json_object_get(pr, "step_ns")) > 0);
    ck_assert(json_real_value(json_object_get(o, "honored_ratio")) > 0.99);   /* the staircase: N = 2 */
    json_decref(o);
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --ratio 0.5 --trace b.json >/dev/null && cmp a.json b.json");
    ck_assert_msg(r.status == 0, "trace bytes differ: %s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --ratio 0.5 --schedule overlap --trace a.json.gz >/dev/null && "
                    "%s predict --ratio 0.5 --schedule overlap --trace b.json.gz >/dev/null && cmp a.json.gz b.json.gz "
                    "&& gzip -dc a.json.gz | head -c 15", tu_bin());
    ck_assert_msg(r.status == 0, "gz trace bytes differ: %s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "{\"traceEvents\""));
    tu_run_free(&r);
    /* The trace has a track per GPU stream and copy engine, CPU Adam pools, links and memory. */
    tu_sh(&r, "grep -c '\"ph\":\"X\"' a.json; grep -c 'CPU Adam pool, rank 7' a.json; "
              "grep -c 'switch3.up.d2h' a.json; grep -c 'GPU memory' a.json");
    ck_assert_int_eq(r.status, 0);
    int spans, pools, links, mem;
    ck_assert_int_eq(sscanf(r.out, "%d %d %d %d", &spans, &pools, &links, &mem), 4);
    ck_assert_int_gt(spans, 100);
    ck_assert_int_eq(pools, 1);
    ck_assert_int_gt(links, 1);
    ck_assert_int_ge(mem, 8);
    tu_run_free(&r);
}
END_TEST

/* The new settings reach the output: the GPUs modelled, the reserve's parts, the CPU optimizer,
 * and a long accumulation that costs what a short one does. */
START_TEST(predict_shows_gpus_reserve_and_repeats_micro_steps)
{
    struct tu_run r;
    tu_ratiolab(&r, "predict --gpus 4 --tp 4 --ratio 0.5");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "GPUs       0,1,2,3 of the node's 8 (1 of 2 sockets)"));
    ck_assert_ptr_nonnull(strstr(r.out, "CUDA context"));
    ck_assert_ptr_nonnull(strstr(r.out, "NCCL buffers"));
    ck_assert_ptr_nonnull(strstr(r.out, "caching allocator"));
    ck_assert_ptr_nonnull(strstr(r.out, "deepspeed 0.12.4, CPU optimizer deepspeed"));
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --gpus 4 --tp 4 --ratio 0.5 --gpu-ids 4-7 --cpu-optimizer torch --json");
    ck_assert_int_eq(r.status, 0);
    json_t *o = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(o);
    json_t *pr = json_object_get(o, "prediction");
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(pr, "gpu_ids"), 0)), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(pr, "sockets_used")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(o, "cpu_optimizer")), "torch");
    json_t *m = json_object_get(pr, "gpu_memory_per_rank");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "reserve_bytes")),
                     json_integer_value(json_object_get(m, "cuda_context_bytes")) +
                         json_integer_value(json_object_get(m, "nccl_bytes")) +
                         json_integer_value(json_object_get(m, "allocator_bytes")));
    json_decref(o);
    tu_run_free(&r);
    /* --grad-accum 65536 took 100 s and 15 GB before; now a fixed number of micro-steps is simulated */
    tu_ratiolab(&r, "predict --grad-accum 65536 --json");
    ck_assert_int_eq(r.status, 0);
    o = json_loads(r.out, 0, NULL);
    pr = json_object_get(o, "prediction");
    ck_assert_int_eq(json_integer_value(json_object_get(pr, "simulated_micro_steps")), SIM_MAX_SIMULATED_MICRO_STEPS);
    ck_assert_int_lt(json_integer_value(json_object_get(pr, "tasks")), 100000);
    json_decref(o);
    tu_run_free(&r);
}
END_TEST

START_TEST(predict_bad_input_exits_2_without_files)
{
    struct tu_run r;
    int before = tu_count_files();
    tu_ratiolab(&r, "predict --hw dgx-9000 --trace t.json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "dgx-9000"));
    ck_assert_ptr_nonnull(strstr(r.err, "dgx1-v100"));
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --schedule fast");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--schedule: 'fast'"));
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --hw gh200 --trace t.json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--gpus-per-node"));
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --trace no/such/dir/t.json");
    ck_assert_int_ne(r.status, 0);
    tu_run_free(&r);
    tu_write("bad.json", "{\"name\": \"x\"}");
    tu_ratiolab(&r, "predict --hw bad.json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "sources"));
    tu_run_free(&r);
    /* activation bytes beyond int64 (1.5e24): refused naming both flags, no trace */
    tu_ratiolab(&r, "predict --model llama2-7b --seq-len 16777216 --micro-batch 1048576 --trace t.json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--seq-len 16777216"));
    ck_assert_ptr_nonnull(strstr(r.err, "--micro-batch 1048576"));
    ck_assert_ptr_null(strchr(strchr(r.err, '\n') + 1, '\n'));   /* one line */
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --gpus 4 --tp 4 --gpu-ids 0,1,2 --trace t.json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--gpu-ids: 3 GPUs given for 4 ranks"));
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --cpu-optimizer numpy");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--cpu-optimizer: 'numpy'"));
    tu_run_free(&r);
    ck_assert_int_eq(tu_count_files(), before + 1);   /* only bad.json */
    tu_ratiolab(&r, "predict --help");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--hw"));
    tu_run_free(&r);
}
END_TEST

/* What the row callback of the in-process sweep saw: the rows' count at each call, and a row at
 * which it stops the sweep (0: none). */
struct sweep_seen {
    size_t calls[8];                 /* t->n_rows at each call */
    int n_calls;                     /* of calls */
    size_t stop_at;                  /* return RL_EINVAL when this many rows are in, 0: never */
    const double *ratios;            /* the sweep's */
};

static int sweep_seen_row(void *ctx, const struct sim_sweep_table *t, size_t i, struct rl_err *e)
{
    struct sweep_seen *v = ctx;
    ck_assert(t->rows[t->n_rows - 1].requested == v->ratios[i]);   /* the new row is ratio i's */
    if (v->n_calls < 8)
        v->calls[v->n_calls++] = t->n_rows;
    return t->n_rows == v->stop_at ? rl_errf(e, RL_EINVAL, "stopped at %zu", t->n_rows) : 0;
}

/* sim/sweep.c in process: the table is one plan and one step per ratio, in the order asked (each
 * row what plan_setup_plan and sim_step_run give for its ratio alone), handed to the callback as
 * each row comes (which can stop the sweep); a ratio the plan refuses names itself; the CSV has
 * the eleven comment lines, the columns of the sweep's table and per row the bytes, their GiB to 2
 * decimals and the fit; the JSON's head names the origin given and each row its requested ratio
 * and host elements. */
START_TEST(sweep_table_csv_and_json_in_process)
{
    struct plan_inputs in;
    plan_inputs_init(&in);
    in.catalog = cat();
    struct plan_setup c;
    struct rl_err e = {0};
    ck_assert_msg(plan_inputs_resolve(&in, &c, &e) == 0, "%s", e.msg);
    struct hw_profile hw = load_hw("dgx1-v100");
    struct sim_train t;
    sim_train_defaults(&t);
    const double ratios[] = {1, 0, 0.5};
    struct sweep_seen seen = {.ratios = ratios};
    struct sim_sweep_request q = {.setup = &c, .hw = &hw, .train = &t, .ratios = ratios, .n_ratios = 3,
                                  .on_row = sweep_seen_row, .ctx = &seen};
    struct sim_sweep_table tab;
    ck_assert_msg(sim_sweep_run(&q, &tab, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(tab.n_rows, 3);
    ck_assert(seen.n_calls == 3 && seen.calls[0] == 1 && seen.calls[1] == 2 && seen.calls[2] == 3);
    for (int i = 0; i < 3; i++) {
        struct plan p;
        struct sim_step_result r;
        memset(&p, 0, sizeof p);
        ck_assert(plan_setup_plan(&c, ratios[i], &p, &e) == 0 && sim_step_run(&p, &hw, &t, NULL, &r, &e) == 0);
        const struct sim_sweep_row *w = &tab.rows[i];
        ck_assert(w->requested == ratios[i] && w->honored == p.honored_ratio && w->cpu_numel == p.cpu_numel);
        ck_assert(w->r.step_ns == r.step_ns && w->r.gpu_total_bytes == r.gpu_total_bytes);
        ck_assert_int_eq(tab.offload, p.zero.offload);
        plan_free(&p);
    }
    ck_assert(tab.rows[1].cpu_numel == 0 && tab.rows[0].cpu_numel > tab.rows[2].cpu_numel);
    const struct sim_sweep_text x = {.version = "9.9", .seq = "2048 (given)", .attention_origin = "origin",
                                     .settings = "settings"};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sim_sweep_csv_head(f, &q, &tab, &x);
    for (int i = 0; i < 3; i++)
        sim_sweep_csv_row(f, &tab.rows[i]);
    fclose(f);
    ck_assert_msg(strncmp(buf, "# ratiolab 9.9 sweep\n# model: ", 30) == 0, "%s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "\n# seq_len: 2048 (given)\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\n# attention: materialized (origin)\n# settings: settings\n"));
    char *line = buf, *rows[8];
    int n_comments = 0, n_lines = 0;
    for (char *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        if (*line == '#')
            n_comments++;
        else if (n_lines < 8)
            rows[n_lines++] = line;
    }
    ck_assert_int_eq(n_comments, 11);
    ck_assert_int_eq(n_lines, 4);   /* the column header and a row per ratio */
    char *cols[64];
    ck_assert_int_eq(trace_csv_split(rows[0], cols, 64), TRACE_SWEEP_N + 2 * STEP_PH_COUNT + 1);
    for (int k = 0; k < TRACE_SWEEP_N; k++)
        ck_assert_str_eq(cols[k], trace_sweep_cols[k]);
    for (int i = 0; i < 3; i++) {
        char *v[64];
        ck_assert_int_eq(trace_csv_split(rows[i + 1], v, 64), TRACE_SWEEP_N + 2 * STEP_PH_COUNT + 1);
        const struct sim_step_result *r = &tab.rows[i].r;
        char want[32];
        snprintf(want, sizeof want, "%.2f", (double)r->gpu_total_bytes / 1073741824.0);
        ck_assert(strtod(v[TRACE_SWEEP_REQUESTED], NULL) == ratios[i]);
        ck_assert_int_eq(strtoll(v[TRACE_SWEEP_GPU_BYTES], NULL, 10), r->gpu_total_bytes);
        ck_assert_str_eq(v[TRACE_SWEEP_GPU_GIB], want);
        ck_assert_str_eq(v[TRACE_SWEEP_FITS], r->fits_gpu && r->fits_host ? "yes" : "no");
    }
    free(buf);
    /* A row fits only when both the GPU and the host memory do: a hand-made row that fits the GPU
     * but not the host says "no". */
    struct sim_sweep_row host_short = tab.rows[0];
    host_short.r.fits_gpu = true;
    host_short.r.fits_host = false;
    buf = NULL;
    f = open_memstream(&buf, &len);
    sim_sweep_csv_row(f, &host_short);
    fclose(f);
    char *hv[64];
    ck_assert_int_eq(trace_csv_split(buf, hv, 64), TRACE_SWEEP_N + 2 * STEP_PH_COUNT + 1);
    ck_assert_str_eq(hv[TRACE_SWEEP_FITS], "no");
    free(buf);
    /* The head's layout is the setup's, each key from its own field (tp 2 and pp 4 set by hand). */
    static struct plan_setup c2;
    c2 = c;
    c2.layout.tp = 2;
    c2.layout.pp = 4;
    struct sim_sweep_request q2 = q;
    q2.setup = &c2;
    json_t *j = sim_sweep_json_head(&q2, &tab, &x);
    ck_assert_str_eq(json_string_value(json_object_get(j, trace_sweep_keys[TRACE_SWEEP_K_ATTENTION_ORIGIN])), "origin");
    ck_assert_int_eq(json_integer_value(json_object_get(j, trace_sweep_keys[TRACE_SWEEP_K_GPUS])), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(j, trace_sweep_keys[TRACE_SWEEP_K_TP])), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(j, trace_sweep_keys[TRACE_SWEEP_K_PP])), 4);
    ck_assert_ptr_null(json_object_get(j, trace_sweep_keys[TRACE_SWEEP_K_ROWS]));
    json_decref(j);
    for (int i = 0; i < 3; i++) {
        json_t *row = sim_sweep_json_row(&tab.rows[i]);
        ck_assert(json_real_value(json_object_get(row, trace_sweep_keys[TRACE_SWEEP_K_REQUESTED])) == ratios[i]);
        ck_assert_int_eq(json_integer_value(json_object_get(row, trace_sweep_keys[TRACE_SWEEP_K_CPU_NUMEL])),
                         tab.rows[i].cpu_numel);
        json_decref(row);
    }
    sim_sweep_free(&tab);
    seen = (struct sweep_seen){.stop_at = 2, .ratios = ratios};
    ck_assert_int_eq(sim_sweep_run(&q, &tab, &e), RL_EINVAL);
    ck_assert(seen.n_calls == 2 && tab.n_rows == 2);
    ck_assert_str_eq(e.msg, "stopped at 2");
    sim_sweep_free(&tab);
    seen = (struct sweep_seen){.ratios = ratios};   /* streamed: one row kept, the newest */
    q.stream_only = true;
    ck_assert_msg(sim_sweep_run(&q, &tab, &e) == 0, "%s", e.msg);
    ck_assert(seen.n_calls == 3 && seen.calls[2] == 1 && tab.n_rows == 1 && tab.rows[0].requested == ratios[2]);
    sim_sweep_free(&tab);
    q.on_row = NULL;
    q.stream_only = false;
    const double bad[] = {0.5, 1.5};
    q.ratios = bad;
    q.n_ratios = 2;
    ck_assert_int_ne(sim_sweep_run(&q, &tab, &e), 0);
    ck_assert_msg(strncmp(e.msg, "ratio 1.5: ", 11) == 0, "%s", e.msg);
    sim_sweep_free(&tab);
    plan_setup_free(&c);
}
END_TEST

START_TEST(sweep_rows_and_formats)
{
    struct tu_run r;
    tu_ratiolab(&r, "sweep --ratios 0:1:0.05 --csv");
    ck_assert_msg(r.status == 0, "%s", r.err);
    int lines = 0, comments = 0;
    for (char *p = r.out; *p; p++)
        if (*p == '\n') {
            lines += p[1] != '#';
            comments += p[1] == '#';
        }
    comments += r.out[0] == '#';
    lines -= r.out[0] == '#';   /* the loop counted the first line by the character after its end */
    ck_assert_int_eq(lines, 22);   /* header + 21 ratios */
    ck_assert_int_ge(comments, 6);
    ck_assert_ptr_nonnull(strstr(r.out, "requested_ratio,honored_ratio,gpu_bytes"));
    /* The comment header says what the rows are of (first the version --version prints), and
     * holds no time stamp: same bytes twice. */
    struct tu_run v;
    tu_ratiolab(&v, "--version");
    char first[64];
    snprintf(first, sizeof first, "# %.*s sweep\n", (int)strcspn(v.out, "\n"), v.out);
    tu_run_free(&v);
    const char *const said[] = {first, "\n# model: gpt-2.7b ",
                                       "\n# hardware: dgx1-v100: 8 x V100", "\n# policy: deepspeed-0.12\n",
                                       "\n# schedule: deepspeed\n", "\n# micro_batch: 1\n",
                                       "\n# attention: materialized (Megatron default"};
    for (size_t k = 0; k < sizeof said / sizeof said[0]; k++)
        ck_assert_msg(strstr(r.out, said[k]) != NULL, "no '%s' in the CSV header", said[k]);
    ck_assert(strncmp(r.out, said[0], strlen(said[0])) == 0);
    struct tu_run again;
    tu_ratiolab(&again, "sweep --ratios 0:1:0.05 --csv");
    ck_assert_str_eq(again.out, r.out);
    tu_run_free(&again);
    /* N = 2 sub-groups under the 0.12 rule: 0.45 offloads nothing, 0.5 one sub-group. */
    ck_assert_ptr_nonnull(strstr(r.out, "\n0.4500,0.000000,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\n0.5000,0.998"));
    tu_run_free(&r);
    tu_ratiolab(&r, "sweep --ratios 0,1 --json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(json_array_size(json_object_get(o, "rows")), 2);
    json_decref(o);
    tu_run_free(&r);
    tu_ratiolab(&r, "sweep --ratios 0:2:0.5");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--ratios"));
    tu_run_free(&r);
    tu_ratiolab(&r, "sweep --csv --json");
    ck_assert_int_eq(r.status, 2);
    tu_run_free(&r);
}
END_TEST

/* plot reads a sweep --csv with its comment header, and takes the policy from it (exit 3 without
 * gnuplot: the data and the script are still written). */
START_TEST(sweep_csv_reads_back_with_its_comments)
{
    struct tu_run r;
    tu_ratiolab(&r, "sweep --ratios 0:1:0.5 --policy exact --csv --out s.csv");
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "plot memory --in s.csv --out f.svg");
    ck_assert_msg(r.status == 0 || r.status == 3, "plot: exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    tu_sh(&r, "grep -c 'title \"exact\"' f.gp");   /* plot_gp_quote double-quotes it */
    ck_assert_str_eq(r.out, "1\n");
    tu_run_free(&r);
}
END_TEST

START_TEST(tune_finds_ratio_and_sub_group_size)
{
    struct tu_run r;
    /* Micro-batch 16 with checkpointing does not fit on a 16 GiB V100 without offload. */
    tu_ratiolab(&r, "tune --gpu-mem 16GiB --micro-batch 16 --checkpoint-activations --json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(o);
    json_t *best = json_object_get(o, "answer");
    double ratio = json_real_value(json_object_get(best, "requested_ratio"));
    ck_assert(ratio > 0 && ratio < 1);
    json_t *m = json_object_get(json_object_get(best, "prediction"), "gpu_memory_per_rank");
    ck_assert(json_integer_value(json_object_get(m, "total_bytes")) <= 17179869184LL);
    json_t *fix = best;   /* the answer is a pair DeepSpeed honors */
    ck_assert(json_is_object(fix));
    json_int_t sgs = json_integer_value(json_object_get(fix, "sub_group_size"));
    ck_assert(sgs > 0 && sgs < 1000000000);
    ck_assert(fabs(json_real_value(json_object_get(fix, "honored_ratio")) - ratio) <= 0.01);
    json_decref(o);
    tu_run_free(&r);
    /* The next ratio down from the best one does not fit (it is the fastest that fits). */
    tu_ratiolab(&r, "tune --gpu-mem 1GiB");
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "no ratio fits"));
    tu_run_free(&r);
}
END_TEST

START_TEST(trace_streams_are_serial_and_memory_returns)
{
    /* ZeRO-3 over 8 ranks of a node with offload: the trace read back has, per GPU, compute
     * spans that never overlap (one stream), every span inside the step, and a memory counter
     * that starts and ends at the model states + reserve (activations and gathered parameters
     * are all released). */
    struct hw_profile hw = load_hw("dgx1-v100");
    struct fixture f;
    fx_init(&f, "gpt-350m", 1, 8, 8, 0.4, PLAN_POLICY_EXACT);
    struct sim_train t;
    sim_train_defaults(&t);
    t.schedule = STEP_SCHED_OVERLAP;
    char path[4200];
    snprintf(path, sizeof path, "%s/step.json", tu_tmpdir());
    struct sim_step_result r;
    struct rl_err e;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, path, &r, &e) == 0, "%s", e.msg);
    struct trace_doc d;
    ck_assert_msg(trace_read(path, &d, &e) == 0, "%s", e.msg);
    int64_t last_end[8], first_mem[8], last_mem[8];
    int n_spans[8] = {0}, n_mem[8] = {0};
    for (int g = 0; g < 8; g++)
        last_end[g] = first_mem[g] = last_mem[g] = -1;
    int adam_spans = 0;
    for (int i = 0; i < d.n_events; i++) {
        const struct trace_event *v = &d.events[i];
        if (v->ph == 'X') {
            ck_assert_int_ge(v->ts_ns, 0);
            ck_assert_int_le(v->ts_ns + v->dur_ns, r.step_ns);
            if (v->pid >= 100 && v->pid < 200)
                adam_spans++;
            if (v->pid >= 1 && v->pid <= 8 && v->tid == 0) {   /* compute stream, in task order */
                int g = v->pid - 1;
                ck_assert_int_ge(v->ts_ns, last_end[g]);
                last_end[g] = v->ts_ns + v->dur_ns;
                n_spans[g]++;
            }
        } else if (v->ph == 'C' && v->pid >= 1 && v->pid <= 8 && strcmp(v->name, "GPU memory (bytes)") == 0) {
            int g = v->pid - 1;
            if (n_mem[g]++ == 0)
                first_mem[g] = (int64_t)v->value;
            last_mem[g] = (int64_t)v->value;
            ck_assert_int_ge((int64_t)v->value, r.gpu_ledger_bytes + r.gpu_reserve_bytes);
        }
    }
    for (int g = 0; g < 8; g++) {
        ck_assert_int_gt(n_spans[g], 24 * 2);
        ck_assert_int_gt(n_mem[g], 2);
        ck_assert_int_eq(first_mem[g], r.gpu_ledger_bytes + r.gpu_reserve_bytes);
        ck_assert_int_eq(last_mem[g], first_mem[g]);
    }
    ck_assert_int_gt(adam_spans, 8);
    trace_doc_free(&d);
    fx_free(&f);
}
END_TEST

/* ---- golden table ------------------------------------------------------------------------------- */
static void golden_rows(FILE *out)
{
    char **names;
    int n;
    struct rl_err e;
    ck_assert_int_eq(sim_hw_list(cat(), &names, &n, &e), 0);
    fprintf(out, "# ratiolab predictions: one step, micro-batch 1, the model's sequence length, fp16, ZeRO-3 with\n"
                 "# pinned CPU offload, DeepSpeed defaults, the framework's default attention (Megatron:\n"
                 "# materialized; transformers: sdpa, i.e. flash). Regenerate after an intended model change with\n"
                 "# RL_UPDATE_GOLDEN=1 make test-run (tests/check_sim_step.c) and review the diff.\n");
    fprintf(out, "hw\tmodel\ttp\tdp\tnodes\tpolicy\tratio\tschedule\thonored\tstep_ns\tgpu_total_bytes\t"
                 "gpu_ledger_bytes\thost_node_bytes\tfits\n");
    const char *models[] = {"gpt-2.7b", "llama2-7b", "gpt3-175b"};
    struct {
        enum plan_policy policy;
        double ratio;
    } const cases[] = {{PLAN_POLICY_DS012, 0}, {PLAN_POLICY_DS012, 0.3}, {PLAN_POLICY_DS012, 1}, {PLAN_POLICY_EXACT, 0.3}};
    for (int h = 0; h < n; h++) {
        struct hw_profile hw = load_hw(names[h]);
        for (int mi = 0; mi < 3; mi++) {
            int gpn = hw.gpus;
            int tp = mi == 1 ? 1 : (gpn < 8 ? gpn : 8);
            int nodes = mi == 2 ? 128 : 1;
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                struct fixture f;
                fx_init(&f, models[mi], tp, nodes * gpn, gpn, cases[c].ratio, cases[c].policy);
                for (int sch = 0; sch < 2; sch++) {
                    struct sim_train t;
                    sim_train_defaults(&t);
                    t.schedule = (enum step_schedule)sch;
                    struct sim_step_result r;
                    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
                    fprintf(out, "%s\t%s\t%d\t%d\t%d\t%s\t%.2f\t%s\t%.6f\t%lld\t%lld\t%lld\t%lld\t%s\n", names[h],
                            models[mi], f.l.tp, f.l.dp, f.l.nodes, plan_policy_name(f.p.policy), cases[c].ratio,
                            sim_schedule_name(t.schedule), f.p.honored_ratio, (long long)r.step_ns,
                            (long long)r.gpu_total_bytes, (long long)r.gpu_ledger_bytes, (long long)r.host_node_bytes,
                            r.fits_gpu && r.fits_host ? "yes" : "no");
                }
                fx_free(&f);
            }
        }
        free(names[h]);
    }
    free(names);
}

/* The key of a golden row: its first 8 tab-separated columns (hw .. schedule); 0 for comments. */
static size_t golden_key_len(const char *line, size_t len)
{
    if (len == 0 || line[0] == '#')
        return 0;
    size_t i = 0;
    for (int tabs = 0; i < len && tabs < 8; i++)
        tabs += line[i] == '\t';
    return i;
}

/* Splits text into lines (pointers into it, lengths without the newline); returns the count. */
static int golden_lines(const char *text, size_t len, const char ***lp, size_t **ll)
{
    int n = 0, cap = 256;
    const char **p = malloc(sizeof *p * (size_t)cap);
    size_t *l = malloc(sizeof *l * (size_t)cap);
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - text) : len;
        if (n == cap) {
            cap *= 2;
            p = realloc(p, sizeof *p * (size_t)cap);
            l = realloc(l, sizeof *l * (size_t)cap);
        }
        p[n] = text + i;
        l[n++] = e - i;
        i = e + 1;
    }
    *lp = p;
    *ll = l;
    return n;
}

/* Prints the rows of `now` that differ from `was` (changed, added) and the rows of `was` gone
 * from `now`, matched by key; returns how many. O(rows^2), a few hundred rows. */
static int golden_diff(const char *was, size_t wlen, const char *now, size_t nlen, FILE *out)
{
    const char **wp, **np;
    size_t *wl, *nl;
    int nw = golden_lines(was, wlen, &wp, &wl), nn = golden_lines(now, nlen, &np, &nl), changes = 0;
    for (int i = 0; i < nn; i++) {
        size_t k = golden_key_len(np[i], nl[i]);
        int match = -1;
        for (int j = 0; j < nw && match < 0; j++)
            if (k ? golden_key_len(wp[j], wl[j]) == k && memcmp(wp[j], np[i], k) == 0 : wl[j] == nl[i] && memcmp(wp[j], np[i], nl[i]) == 0)
                match = j;
        if (match < 0) {
            fprintf(out, "golden: added   %.*s\n", (int)nl[i], np[i]);
            changes++;
        } else if (wl[match] != nl[i] || memcmp(wp[match], np[i], nl[i]) != 0) {
            fprintf(out, "golden: changed %.*s\n           was %.*s\n", (int)nl[i], np[i], (int)wl[match], wp[match]);
            changes++;
        }
    }
    for (int j = 0; j < nw; j++) {
        size_t k = golden_key_len(wp[j], wl[j]);
        bool kept = false;
        for (int i = 0; i < nn && !kept; i++)
            kept = k ? golden_key_len(np[i], nl[i]) == k && memcmp(wp[j], np[i], k) == 0 : wl[j] == nl[i] && memcmp(wp[j], np[i], nl[i]) == 0;
        if (!kept) {
            fprintf(out, "golden: removed %.*s\n", (int)wl[j], wp[j]);
            changes++;
        }
    }
    free(wp);
    free(wl);
    free(np);
    free(nl);
    return changes;
}

/* A regression net, not an oracle: every behaviour behind these rows also has a test against a
 * closed form or a hand count. RL_UPDATE_GOLDEN=1 rewrites the table, prints the changed rows and
 * then fails (a rewritten table is never a pass): review the rows and `git diff`, then run the
 * tests again without it. */
START_TEST(golden_predictions_table)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(mem);
    golden_rows(mem);
    fclose(mem);
    char path[4200];
    snprintf(path, sizeof path, "%s/tests/golden/predictions.tsv", tu_src());
    char *want = NULL;
    size_t wlen = 0;
    struct rl_err e;
    int rc = rl_read_file(path, &want, &wlen, &e);
    const char *upd = getenv("RL_UPDATE_GOLDEN");
    if (upd && strcmp(upd, "1") == 0) {
        int changes = golden_diff(rc == 0 ? want : "", rc == 0 ? wlen : 0, text, len, stderr);
        struct rl_outfile o;
        ck_assert_int_eq(rl_outfile_open(&o, path, &e), 0);
        fwrite(text, 1, len, o.fp);
        ck_assert_int_eq(rl_outfile_commit(&o, &e), 0);
        free(want);
        free(text);
        ck_abort_msg("RL_UPDATE_GOLDEN=1: rewrote %s (%d rows changed, listed above); this run does not count as "
                     "a pass: review git diff, then run the tests again without RL_UPDATE_GOLDEN", path, changes);
    }
    ck_assert_msg(rc == 0, "%s (regenerate with RL_UPDATE_GOLDEN=1)", e.msg);
    if (wlen != len || memcmp(want, text, len) != 0) {
        int changes = golden_diff(want, wlen, text, len, stderr);
        ck_abort_msg("predictions differ from tests/golden/predictions.tsv in %d rows (listed above)\n(an intended model "
                     "change: RL_UPDATE_GOLDEN=1 make test-run, review git diff)", changes);
    }
    free(want);
    free(text);
}
END_TEST

/* The shared breakdown over a plain array of spans (what the executor passes with measured
 * spans), against hand-computed intervals: forward [0,10), CPU Adam [5,20), a D2H [8,30), nothing
 * in [30,40). Forward is exposed for 10; CPU Adam for 20 - 10 = 10 of its 15; the D2H for
 * 30 - 20 = 10 of its 22; idle 10. A span with phase -1 or an empty span counts nowhere. */
START_TEST(step_vocabulary_breakdown_and_chunks)
{
    struct step_span sp[] = {{0, 10, STEP_PH_FORWARD}, {5, 20, STEP_PH_CPU_ADAM}, {8, 30, STEP_PH_GRAD_D2H},
                             {12, 13, -1}, {25, 25, STEP_PH_BACKWARD}};
    struct step_breakdown bd = {0};
    ck_assert_int_eq(step_breakdown(sp, 5, 0, 40, &bd), 0);
    ck_assert_int_eq(bd.phase[STEP_PH_FORWARD].busy_ns, 10);
    ck_assert_int_eq(bd.phase[STEP_PH_FORWARD].exposed_ns, 10);
    ck_assert_int_eq(bd.phase[STEP_PH_CPU_ADAM].busy_ns, 15);
    ck_assert_int_eq(bd.phase[STEP_PH_CPU_ADAM].exposed_ns, 10);
    ck_assert_int_eq(bd.phase[STEP_PH_GRAD_D2H].busy_ns, 22);
    ck_assert_int_eq(bd.phase[STEP_PH_GRAD_D2H].exposed_ns, 10);
    ck_assert_int_eq(bd.phase[STEP_PH_BACKWARD].busy_ns, 0);
    ck_assert_int_eq(bd.idle_ns, 10);
    ck_assert_str_eq(step_phase_name(STEP_PH_GRAD_H2D), "grad_h2d");
    ck_assert_str_eq(step_phase_name(STEP_PH_COUNT), "?");
    enum step_schedule sc;
    struct rl_err e;
    ck_assert_int_eq(step_schedule_parse("overlap", &sc, &e), 0);
    ck_assert_int_eq(sc, STEP_SCHED_OVERLAP);
    ck_assert_int_eq(step_schedule_parse("fast", &sc, &e), RL_EINVAL);
    /* the library names its field; cli/ puts the flag the user typed in its place */
    ck_assert_str_eq(e.msg, "schedule: 'fast' is not a schedule; allowed: deepspeed, overlap");
    /* chunks: the default below the cap, the cap above it (ceil(n / 256) per chunk) */
    ck_assert_int_eq(step_chunk_numel(10 << 20, 0), 4 << 20);
    ck_assert_int_eq(step_chunk_count(10 << 20, 0), 3);
    int64_t big = (int64_t)STEP_MAX_CHUNKS * (4 << 20) + 1;
    ck_assert_int_eq(step_chunk_numel(big, 0), (big + 255) / 256);
    ck_assert_int_eq(step_chunk_count(big, 0), 256);
    ck_assert_int_eq(step_chunk_count(0, 0), 0);
    /* prefetch: bucket / largest block, at least 1, at most the blocks ahead of the first */
    ck_assert_int_eq(step_prefetch_depth(50000000, 10000000, 34), 5);
    ck_assert_int_eq(step_prefetch_depth(1, 10000000, 34), 1);
    ck_assert_int_eq(step_prefetch_depth(50000000, 0, 34), 1);
    ck_assert_int_eq(step_prefetch_depth(1000000000, 1000, 34), 33);
    ck_assert_int_eq(step_prefetch_depth(1000000000, 1000, 1), 0);
    ck_assert_int_eq(step_gather_buffers(step_prefetch_depth(1000000000, 1000, 34)), 34);
}
END_TEST

/* One GPU (dgx1-v100 with one rank), gpt-350m, ratio 1 under DeepSpeed's placement: every
 * sub-group on the CPU, one gradient bucket (5e8 elements > the model). Closed forms of the
 * deepspeed schedule's host mechanisms; the rank has its socket's 12 cores and 90 GB/s alone. */
static void one_gpu(struct fixture *f, double ratio, int v_minor, int v_patch)
{
    fx_init(f, "gpt-350m", 1, 1, 1, ratio, PLAN_POLICY_DS012);
    f->p.zero.ds_version = (struct rl_version){0, v_minor, v_patch};
}

START_TEST(step_ds_host_cast_and_sequential_loop_closed_forms)
{
    struct hw_profile hw = load_hw("dgx1-v100");
    struct fixture f;
    one_gpu(&f, 1.0, 12, 4);
    ck_assert_int_eq(f.p.cpu_numel, f.p.per_rank_numel);
    ck_assert_int_ge(f.p.n_subgroups, 2);
    struct sim_train t;
    sim_train_defaults(&t);
    struct sim_step_result r;
    struct rl_err e;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    long double dram = (long double)hw.socket[0].dram_gbps * 1e9L;
    long double P = (long double)f.p.cpu_numel;
    /* The fp32 gradient of CPU sub-groups: PyTorch's cast on the host, 2 B read + 4 B written per
     * element, on the intra-op threads (the node's 24 cores by default), which the socket's 12
     * cores bound: min(24 x cast, 12 x cast, DRAM / 6). */
    long double cast = (long double)hw.host_cast_elems_per_thread, crate = 12.0L * cast;
    if (dram / 6.0L < crate)
        crate = dram / 6.0L;
    ck_assert_int_eq(r.phase[STEP_PH_GRAD_CAST].busy_ns, tu_ceil_ns(P / crate * 1e9L));
    /* The sequential loop: per sub-group an unscale pass (8 B per element), CPU Adam at the cores'
     * rate (12 x 0.25 G/s, below DRAM's 90e9 / 28), the cast back (6 B, the cast's rate) and a
     * pageable H2D of 2 B per element at the pageable rate; nothing of it overlaps anything else. */
    long double adam = 12.0L * (long double)hw.cpu_adam_elems_per_core, page = (long double)hw.h2d_pageable_gbps * 1e9L;
    int64_t un = 0, ad = 0, ca = 0, h2d = 0;
    for (int s = 0; s < f.p.n_subgroups; s++) {
        long double c = (long double)f.p.subgroups[s].cpu_numel;
        un += tu_ceil_ns(c * 8.0L / dram * 1e9L);
        ad += tu_ceil_ns(c / adam * 1e9L);
        ca += tu_ceil_ns(c / crate * 1e9L);
        h2d += tu_ceil_ns(c * 2.0L / page * 1e9L);
    }
    ck_assert_int_eq(r.phase[STEP_PH_UNSCALE].busy_ns, un);
    ck_assert_int_eq(r.phase[STEP_PH_CPU_ADAM].busy_ns, ad);
    ck_assert_int_eq(r.phase[STEP_PH_PARAM_CAST].busy_ns, ca);
    ck_assert_int_eq(r.phase[STEP_PH_PARAM_H2D].busy_ns, h2d);
    const int seq[] = {STEP_PH_UNSCALE, STEP_PH_CPU_ADAM, STEP_PH_PARAM_CAST, STEP_PH_PARAM_H2D, STEP_PH_GRAD_CAST};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(r.phase[seq[i]].exposed_ns, r.phase[seq[i]].busy_ns);
    /* torch.optim.AdamW: the profile's torch rate per core instead. */
    t.cpu_optimizer = SIM_CPU_OPT_TORCH;
    struct sim_step_result q;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &q, &e) == 0, "%s", e.msg);
    long double torch = 12.0L * (long double)hw.torch_adam_elems_per_core;
    int64_t adt = 0;
    for (int s = 0; s < f.p.n_subgroups; s++)
        adt += tu_ceil_ns((long double)f.p.subgroups[s].cpu_numel / torch * 1e9L);
    ck_assert_int_eq(q.phase[STEP_PH_CPU_ADAM].busy_ns, adt);
    ck_assert_int_eq(q.step_ns - r.step_ns, adt - ad);
    fx_free(&f);
}
END_TEST

/* Elements of the tensors whose 16-bit temporary is at least 32 MiB (glibc mmaps it fresh). */
static int64_t fresh_numel(const struct plan *p)
{
    int64_t n = 0;
    for (int i = 0; i < p->model->n_tensors; i++)
        if (p->part_numel[i] * 2 >= (INT64_C(32) << 20))
            n += p->part_numel[i];
    return n;
}

/* 0.12.4, gpt-350m on the tiny node, everything on the CPU (fp16, one bucket): each piece of the
 * blocking copy_ of the fp32 gradient and of the parameter copy-back, by hand. */
START_TEST(step_ds_host_costs_of_copies_closed_forms)
{
    struct hw_profile hw = tu_sim_tiny_hw();
    struct fixture f;
    one_gpu(&f, 1.0, 12, 4);
    long double P = (long double)f.p.cpu_numel, fresh = (long double)fresh_numel(&f.p);
    /* the 32 MiB rule excludes something (biases, norms, 8 MB MLP weights) and keeps something */
    ck_assert(fresh > 0 && fresh < P);
    struct sim_train t;
    sim_train_defaults(&t);
    t.intraop_threads = 2;
    struct sim_step_result r;
    struct rl_err e;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    /* page faults, one task each and serial on the host thread:
     *   the gradient's 16-bit temporaries: fresh x 2 B on the calling thread, 1 GB/s;
     *   fp16's isinf / isnan results: 2 x P x 1 B on 2 intra-op threads, 2 GB/s (2 x 1, = the socket);
     *   per CPU sub-group the 16-bit temporary of the parameter copy: c x 2 B at 2 GB/s. */
    int64_t want = tu_ceil_ns(fresh * 2.0L / 1e9L * 1e9L) + tu_ceil_ns(2.0L * P / 2e9L * 1e9L);
    int64_t cast = 0, h2d = 0;
    for (int s = 0; s < f.p.n_subgroups; s++) {
        long double c = (long double)f.p.subgroups[s].cpu_numel;
        if (c * 2.0L >= 32.0L * 1024 * 1024)
            want += tu_ceil_ns(c * 2.0L / 2e9L * 1e9L);
        cast += tu_ceil_ns(c / 2e9L * 1e9L);          /* 2 threads x 1e9 elements/s */
        h2d += tu_ceil_ns(c * 2.0L / 5e9L * 1e9L);     /* pageable 10 GB/s, capped by the 5 GB/s memcpy */
    }
    ck_assert_int_eq(r.phase[STEP_PH_PAGE_FAULT].busy_ns, want);
    ck_assert_int_eq(r.phase[STEP_PH_PAGE_FAULT].exposed_ns, want);
    /* the cast into the fp32 gradient on 2 threads; the cast back per sub-group */
    ck_assert_int_eq(r.phase[STEP_PH_GRAD_CAST].busy_ns, tu_ceil_ns(P / 2e9L * 1e9L));
    ck_assert_int_eq(r.phase[STEP_PH_PARAM_CAST].busy_ns, cast);
    ck_assert_int_eq(r.phase[STEP_PH_PARAM_H2D].busy_ns, h2d);
    /* D2H: the flat buffer's pinned copy (20 GB/s), then the pageable copy into the temporary */
    ck_assert_int_eq(r.phase[STEP_PH_GRAD_D2H].busy_ns,
                     tu_ceil_ns(P * 2.0L / 20e9L * 1e9L) + tu_ceil_ns(P * 2.0L / 5e9L * 1e9L));
    /* DeepSpeed's timers: the three windows cut the step */
    ck_assert_int_eq(r.window_forward_ns + r.window_backward_ns + r.window_step_ns, r.step_ns);
    ck_assert_int_gt(r.window_forward_ns, 0);
    /* the intra-op default is the node's 4 cores: casts at 4e9, faults of the many threads at the
     * socket's 2 GB/s */
    t.intraop_threads = 0;
    struct sim_step_result q;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &q, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(q.phase[STEP_PH_GRAD_CAST].busy_ns, tu_ceil_ns(P / 4e9L * 1e9L));
    ck_assert_int_eq(q.phase[STEP_PH_PAGE_FAULT].busy_ns, want);
    /* one intra-op thread: the parallel faults at 1 GB/s */
    t.intraop_threads = 1;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &q, &e) == 0, "%s", e.msg);
    int64_t want1 = tu_ceil_ns(fresh * 2.0L / 1e9L * 1e9L) + tu_ceil_ns(2.0L * P / 1e9L * 1e9L);
    for (int s = 0; s < f.p.n_subgroups; s++) {
        long double c = (long double)f.p.subgroups[s].cpu_numel;
        if (c * 2.0L >= 32.0L * 1024 * 1024)
            want1 += tu_ceil_ns(c * 2.0L / 1e9L * 1e9L);
    }
    ck_assert_int_eq(q.phase[STEP_PH_PAGE_FAULT].busy_ns, want1);
    fx_free(&f);
}
END_TEST

/* The same 0.12.4 step on a node whose THP mode is "always": every fresh temporary is faulted in
 * 2 MiB pages at the profile's time per 2 MiB page (2 ms here: 2 MiB / 2 ms = 1.048576 GB/s on one
 * thread, below the socket's 2 GB/s), where madvise's 4 KiB pages took the 1 GB/s of the tiny node. */
START_TEST(step_ds_thp_always_faults_in_huge_pages)
{
    struct hw_profile hw = tu_sim_tiny_hw();
    hw.host_fault_us_per_2m_page = 2000;
    struct rl_err e;
    ck_assert_int_eq(sim_hw_set_thp(&hw, "always", &e), 0);
    struct fixture f;
    one_gpu(&f, 1.0, 12, 4);
    long double P = (long double)f.p.cpu_numel, fresh = (long double)fresh_numel(&f.p);
    long double R = 2097152.0L / 2e-3L;   /* bytes per second of one faulting thread */
    struct sim_train t;
    sim_train_defaults(&t);
    t.intraop_threads = 1;
    struct sim_step_result r;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    int64_t want = tu_ceil_ns(fresh * 2.0L / R * 1e9L) + tu_ceil_ns(2.0L * P / R * 1e9L);
    for (int s = 0; s < f.p.n_subgroups; s++) {
        long double c = (long double)f.p.subgroups[s].cpu_numel;
        if (c * 2.0L >= 32.0L * 1024 * 1024)
            want += tu_ceil_ns(c * 2.0L / R * 1e9L);
    }
    ck_assert_int_eq(r.phase[STEP_PH_PAGE_FAULT].busy_ns, want);
    /* "never": 4 KiB pages at 4.096 us each, 1 GB/s: 512 times the faults, each 1/488 of the time */
    hw.host_fault_us_per_4k_page = 4.096;
    ck_assert_int_eq(sim_hw_set_thp(&hw, "never", &e), 0);
    struct sim_step_result q;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &q, &e) == 0, "%s", e.msg);
    int64_t want4 = tu_ceil_ns(fresh * 2.0L / 1e9L * 1e9L) + tu_ceil_ns(2.0L * P / 1e9L * 1e9L);
    for (int s = 0; s < f.p.n_subgroups; s++) {
        long double c = (long double)f.p.subgroups[s].cpu_numel;
        if (c * 2.0L >= 32.0L * 1024 * 1024)
            want4 += tu_ceil_ns(c * 2.0L / 1e9L * 1e9L);
    }
    ck_assert_int_eq(q.phase[STEP_PH_PAGE_FAULT].busy_ns, want4);
    fx_free(&f);
}
END_TEST

/* CPU Adam of DP 2 on a 4-core socket (two GPUs of the tiny node, gpt-350m, everything on the CPU,
 * 0.12.4). Bound (--bind_cores_to_rank): each rank's team is 4 // 2 = 2 cores, 2e9 elements/s.
 * Unbound (the launcher's default): each team is all 4 cores, 2 x 4 = 8 threads on 4 cores (o = 2);
 * the fair share is the same 2 cores, and each of a call's ceil(n / 128 Mi) fork-join regions
 * waits (o - 1) = 1 scheduler slice of 3 ms for its last thread. --cpu-cores 2 bound: 1 core each. */
START_TEST(step_ds_cpu_adam_bound_and_oversubscribed)
{
    struct hw_profile hw = tu_sim_tiny_hw();
    hw.gpus = 2;
    hw.sw[0] = (struct hw_switch){.socket = 0, .uplink_gbps = 1000, .n_gpus = 2, .gpus = {0, 1}};
    hw.gpu_switch[1] = 0;
    hw.cpu_adam_dram_bytes = 1;   /* the cores bound CPU Adam, not DRAM */
    struct fixture f;
    fx_init(&f, "gpt-350m", 1, 2, 2, 1.0, PLAN_POLICY_DS012);
    f.p.zero.ds_version = (struct rl_version){0, 12, 4};
    struct sim_train t;
    sim_train_defaults(&t);
    t.intraop_threads = 1;
    struct rl_err e;
    struct sim_step_result bound, unbound, few;
    t.cpu_binding = SIM_BIND_PER_RANK;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &bound, &e) == 0, "%s", e.msg);
    t.cpu_cores = 2;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &few, &e) == 0, "%s", e.msg);
    t.cpu_cores = 0;
    t.cpu_binding = SIM_BIND_NONE;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &unbound, &e) == 0, "%s", e.msg);
    int64_t want_b = 0, want_u = 0, want_f = 0;
    for (int s = 0; s < f.p.n_subgroups; s++) {
        long double c = (long double)f.p.subgroups[s].cpu_numel;
        long double regions = ceill(c / (128.0L * 1024 * 1024));
        want_b += tu_ceil_ns(c / 2e9L * 1e9L);
        want_f += tu_ceil_ns(c / 1e9L * 1e9L);
        want_u += tu_ceil_ns((c / 2e9L + regions * 1.0L * 3e-3L) * 1e9L);
    }
    ck_assert_int_eq(bound.phase[STEP_PH_CPU_ADAM].busy_ns, want_b);
    ck_assert_int_eq(few.phase[STEP_PH_CPU_ADAM].busy_ns, want_f);
    ck_assert_int_eq(unbound.phase[STEP_PH_CPU_ADAM].busy_ns, want_u);
    ck_assert_int_gt(unbound.step_ns, bound.step_ns);
    /* The intra-op pools: 1 thread per rank leaves the 4 cores undersubscribed; 4 per rank make
       o = 2 x 4 / 4 = 2, so each CPU sub-group's unscale (grad.mul_) and 16-bit cast, one region
       each, wait (o - 1) x 3 ms more; the unscale's DRAM-bound pass is the same with 1 or 4
       threads, so its phase grows by exactly 3 ms per CPU sub-group. Bound, nothing is added. */
    struct sim_step_result pools, pools_bound;
    t.intraop_threads = 4;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &pools, &e) == 0, "%s", e.msg);
    int64_t cpu_sgs = 0;
    for (int s = 0; s < f.p.n_subgroups; s++)
        cpu_sgs += f.p.subgroups[s].cpu_numel > 0;
    ck_assert_int_gt(cpu_sgs, 0);
    ck_assert_int_eq(pools.phase[STEP_PH_UNSCALE].busy_ns - unbound.phase[STEP_PH_UNSCALE].busy_ns, cpu_sgs * 3000000);
    t.cpu_binding = SIM_BIND_PER_RANK;
    t.intraop_threads = 2;   /* the launcher's cores // ranks */
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &pools_bound, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(pools_bound.phase[STEP_PH_UNSCALE].busy_ns, bound.phase[STEP_PH_UNSCALE].busy_ns);
    /* One op by hand, 2 ranks with pools of 4 on the 4 cores: up to PyTorch's grain (32768) no
       region; 32769 elements are 2 chunks (o = 2 x 2 / 4 = 1, no wait); 4 x 32768 + 1 are 5
       chunks on the 4 threads (o = 2: one 3 ms slice); bound, nothing. */
    t.cpu_binding = SIM_BIND_NONE;
    ck_assert_int_eq(sim_cpu_intraop_oversub_ns(&hw, &t, 2, 4, 32768), 0);
    ck_assert_int_eq(sim_cpu_intraop_oversub_ns(&hw, &t, 8, 4, 32768), 0);   /* no region, even for 8 ranks */
    ck_assert_int_eq(sim_cpu_intraop_oversub_ns(&hw, &t, 8, 4, 32769), 9000000);   /* 2 chunks: o = 8 x 2 / 4 */
    ck_assert_int_eq(sim_cpu_intraop_oversub_ns(&hw, &t, 2, 4, 32769), 0);
    ck_assert_int_eq(sim_cpu_intraop_oversub_ns(&hw, &t, 2, 4, 4 * 32768 + 1), 3000000);
    ck_assert_int_eq(sim_cpu_intraop_oversub_ns(&hw, &t, 4, 4, 4 * 32768 + 1), 9000000);   /* o = 4 */
    t.cpu_binding = SIM_BIND_PER_RANK;
    ck_assert_int_eq(sim_cpu_intraop_oversub_ns(&hw, &t, 2, 4, 4 * 32768 + 1), 0);
    fx_free(&f);
}
END_TEST

/* ZeRO-3 gathers across nodes (gpt-350m, DP 4 over two nodes of the tiny node's 2 GPUs, a 1 GB/s
 * network, ratio 0). Without prefetch (DeepSpeed's trace recorded or invalidated) every block's
 * all-gather waits for the previous block's compute, so the forward is the compute plus every
 * gather: bus bytes 2 B x numel x 3/4 per block at the network's 1 GB/s (each of the node's 2
 * ranks carries half of its traffic there, so each runs at the full rate). With the default
 * prefetch (5e7 elements, more than a block) the gathers hide behind the compute; with a bucket of
 * half a block only half of each block's gather runs ahead. */
START_TEST(step_ds_inter_node_gather_exposed_without_prefetch)
{
    struct hw_profile hw = tu_sim_tiny_hw();
    hw.gpus = 2;
    hw.sw[0] = (struct hw_switch){.socket = 0, .uplink_gbps = 1000, .n_gpus = 2, .gpus = {0, 1}};
    hw.gpu_switch[1] = 0;
    hw.net_gbps = 1;
    hw.allgather_busbw_gbps = hw.reduce_scatter_busbw_gbps = hw.allreduce_busbw_gbps = 1e5;
    struct hw_profile fast = hw;
    fast.net_gbps = 1e5;
    struct fixture f;
    fx_init(&f, "gpt-350m", 1, 4, 2, 0.0, PLAN_POLICY_DS012);
    ck_assert_int_eq(f.p.layout.dp, 4);
    struct sim_train t;
    sim_train_defaults(&t);
    struct rl_err e;
    struct sim_step_result off, off_fast, on, half;
    t.zero3_prefetch_off = true;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &off, &e) == 0, "%s", e.msg);
    ck_assert_msg(sim_step_run(&f.p, &fast, &t, NULL, &off_fast, &e) == 0, "%s", e.msg);
    long double gathers = 0;
    int blocks = 0;
    int64_t max_block = 0, block[512] = {0};
    for (int i = 0; i < f.m.n_tensors; i++) {
        int l = f.m.tensors[i].layer;
        block[l >= 0 ? 1 + l : (i == 0 || f.m.tensors[i - 1].layer < 0 ? 0 : 511)] += f.m.tensors[i].numel;
    }
    for (int i = 0; i < 512; i++)
        if (block[i] > 0) {
            gathers += (long double)block[i] * 2.0L * 3.0L / 4.0L / 1e9L;
            blocks++;
            if (block[i] > max_block)
                max_block = block[i];
        }
    /* the fast network's run still gathers, at its GPUs' PCIe links (GPUDirect RDMA, each 20 GB/s
       carrying half of the rank's traffic: 40 GB/s) */
    int64_t want = tu_ceil_ns(gathers * 1e9L) - tu_ceil_ns(gathers / 40.0L * 1e9L);
    int64_t got = off.window_forward_ns - off_fast.window_forward_ns;
    ck_assert_msg(llabs(got - want) <= 2 * blocks + 2, "exposed gathers %lld ns, by hand %lld ns", (long long)got,
                  (long long)want);
    /* at 20 GB/s a layer's gather (12.6e6 x 1.5 B, 0.94 ms) is shorter than its compute (1.8 ms at
       V100's 37.5 TFLOP/s): prefetched it hides, half prefetched the rest shows */
    struct hw_profile mid = hw;
    mid.net_gbps = 20;
    ck_assert_msg(sim_step_run(&f.p, &mid, &t, NULL, &off, &e) == 0, "%s", e.msg);
    t.zero3_prefetch_off = false;
    ck_assert_msg(sim_step_run(&f.p, &mid, &t, NULL, &on, &e) == 0, "%s", e.msg);
    ck_assert_int_lt(on.window_forward_ns, off.window_forward_ns);
    ck_assert_int_lt(on.phase[STEP_PH_ALLGATHER].exposed_ns, off.phase[STEP_PH_ALLGATHER].exposed_ns);
    f.p.zero.prefetch_bucket_size = block[1] / 2;   /* half a layer: whole parameters up to it */
    ck_assert_msg(sim_step_run(&f.p, &mid, &t, NULL, &half, &e) == 0, "%s", e.msg);
    ck_assert_int_lt(on.window_forward_ns, half.window_forward_ns);
    ck_assert_int_lt(half.window_forward_ns, off.window_forward_ns);
    fx_free(&f);
}
END_TEST

/* 0.15.4 stages the fp32 gradient through pinned memory (upcast on the GPU, a blocking D2H of
 * 4 B, a host copy of 8 B per element); 0.16.3 copies the upcast straight into the pinned fp32
 * buffer. Neither allocates a host temporary in the backward: only the step's parameter copy and
 * fp16's scan fault. */
START_TEST(step_ds_pinned_gradient_copies_closed_forms)
{
    struct hw_profile hw = tu_sim_tiny_hw();
    struct sim_train t;
    sim_train_defaults(&t);
    t.intraop_threads = 2;
    struct rl_err e;
    const int minor[] = {15, 16}, patch[] = {4, 3};
    for (int i = 0; i < 2; i++) {
        struct fixture f;
        one_gpu(&f, 1.0, minor[i], patch[i]);
        long double P = (long double)f.p.cpu_numel;
        struct sim_step_result r;
        ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
        int64_t faults = tu_ceil_ns(2.0L * P / 2e9L * 1e9L);
        for (int s = 0; s < f.p.n_subgroups; s++) {
            long double c = (long double)f.p.subgroups[s].cpu_numel;
            if (c * 2.0L >= 32.0L * 1024 * 1024)
                faults += tu_ceil_ns(c * 2.0L / 2e9L * 1e9L);
        }
        ck_assert_int_eq(r.phase[STEP_PH_PAGE_FAULT].busy_ns, faults);
        ck_assert_int_eq(r.phase[STEP_PH_GRAD_D2H].busy_ns,
                         tu_ceil_ns(P * 2.0L / 20e9L * 1e9L) + tu_ceil_ns(P * 4.0L / 20e9L * 1e9L));
        /* the upcast on the GPU (2 + 4 B of HBM at 1000 GB/s); 0.15.4 also the host copy (8 B at
         * 100 GB/s) */
        int64_t gc = tu_ceil_ns(P * 6.0L / 1000e9L * 1e9L) + (i == 0 ? tu_ceil_ns(P * 8.0L / 100e9L * 1e9L) : 0);
        ck_assert_int_eq(r.phase[STEP_PH_GRAD_CAST].busy_ns, gc);
        fx_free(&f);
    }
}
END_TEST

/* offload_optimizer.pin_memory false: the flat 16-bit gradient buffer is pageable, and the D2H into
 * it and the H2D back out of it hold the host thread (CUDA's pageable copies, whatever non_blocking
 * says). 0.19.5 on the tiny node (its own fp32 copy is asynchronous into pinned memory), a bucket
 * per layer or two. By hand: the pageable copies of the P elements' 2 B at the 5 GB/s memcpy cap
 * (below the 10 GB/s pageable rate), the pinned ones at 20 GB/s; pageable, the H2D is never under
 * a backward kernel (the next block is issued after it); pinned, part of it is. */
START_TEST(step_ds_pageable_flat_buffer_holds_the_host)
{
    struct hw_profile hw = tu_sim_tiny_hw();
    struct sim_train t;
    sim_train_defaults(&t);
    t.intraop_threads = 2;
    struct rl_err e;
    struct sim_step_result r[2];
    long double P = 0, C = 0;
    for (int i = 0; i < 2; i++) {
        struct fixture f;
        one_gpu(&f, 1.0, 19, 5);
        f.p.zero.reduce_bucket_size = 10000000;
        f.p.zero.pin_memory = i == 0;
        P = (long double)f.p.per_rank_numel;
        C = (long double)f.p.cpu_numel;
        ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r[i], &e) == 0, "%s", e.msg);
        fx_free(&f);
    }
    ck_assert(P > 0 && C == P);
    /* the flush's copies: the flat buffer's D2H and H2D, 0.19.5's fp32 D2H into pinned memory,
     * summed over the flushes (each rounded up to the ns on its own, hence the slack of one ns per
     * flush and copy: at most a few hundred) */
    int64_t pin_d2h = tu_ceil_ns(P * 2.0L / 20e9L * 1e9L) + tu_ceil_ns(C * 4.0L / 20e9L * 1e9L);
    int64_t page_d2h = tu_ceil_ns(P * 2.0L / 5e9L * 1e9L) + tu_ceil_ns(C * 4.0L / 20e9L * 1e9L);
    ck_assert_int_le(llabs(r[0].phase[STEP_PH_GRAD_D2H].busy_ns - pin_d2h), 400);
    ck_assert_int_le(llabs(r[1].phase[STEP_PH_GRAD_D2H].busy_ns - page_d2h), 400);
    ck_assert_int_le(llabs(r[0].phase[STEP_PH_GRAD_H2D].busy_ns - tu_ceil_ns(P * 2.0L / 20e9L * 1e9L)), 400);
    ck_assert_int_le(llabs(r[1].phase[STEP_PH_GRAD_H2D].busy_ns - tu_ceil_ns(P * 2.0L / 5e9L * 1e9L)), 400);
    ck_assert_int_lt(r[0].phase[STEP_PH_GRAD_H2D].exposed_ns, r[0].phase[STEP_PH_GRAD_H2D].busy_ns);
    ck_assert_int_eq(r[1].phase[STEP_PH_GRAD_H2D].exposed_ns, r[1].phase[STEP_PH_GRAD_H2D].busy_ns);
    /* the host waits for both pageable copies: the step grows by at least their time beyond the
     * pinned ones' */
    ck_assert_int_ge(r[1].step_ns - r[0].step_ns,
                     (tu_ceil_ns(P * 2.0L / 5e9L * 1e9L) - tu_ceil_ns(P * 2.0L / 20e9L * 1e9L)) * 2 - 800);
}
END_TEST

/* A blocking copy in the backward hook stalls the issue of the next block: with a bucket per
 * layer, 0.16.3's blocking fp32 D2H never runs under a backward kernel and the step is longer by
 * what 0.19.5's asynchronous copy overlaps. 0.12's pageable host-cast path is slower still. */
START_TEST(step_ds_blocking_copy_stalls_backward)
{
    struct hw_profile hw = load_hw("dgx1-v100");
    struct sim_train t;
    sim_train_defaults(&t);
    struct rl_err e;
    struct sim_step_result r[3];
    const int minor[] = {16, 19, 12}, patch[] = {3, 5, 4};
    for (int i = 0; i < 3; i++) {
        struct fixture f;
        one_gpu(&f, 1.0, minor[i], patch[i]);
        f.p.zero.reduce_bucket_size = 10000000;   /* a flush per layer or two */
        ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r[i], &e) == 0, "%s", e.msg);
        fx_free(&f);
    }
    /* blocking: no D2H time overlaps a higher phase (backward, forward) */
    ck_assert_int_eq(r[0].phase[STEP_PH_GRAD_D2H].exposed_ns, r[0].phase[STEP_PH_GRAD_D2H].busy_ns);
    ck_assert_int_lt(r[1].phase[STEP_PH_GRAD_D2H].exposed_ns, r[1].phase[STEP_PH_GRAD_D2H].busy_ns);
    int64_t hidden = r[1].phase[STEP_PH_GRAD_D2H].busy_ns - r[1].phase[STEP_PH_GRAD_D2H].exposed_ns;
    ck_assert_int_gt(r[0].step_ns - r[1].step_ns, hidden / 2);
    ck_assert_int_gt(r[2].step_ns, r[0].step_ns);
    ck_assert_int_eq(r[0].phase[STEP_PH_BACKWARD].busy_ns, r[1].phase[STEP_PH_BACKWARD].busy_ns);
}
END_TEST

/* 0.18 steps the sub-groups in index order with the CPU ones last: the GPU sub-groups' kernels,
 * launched first, run while the host runs CPU Adam. Before 0.18 the CPU ones come first and
 * nothing overlaps. */
/* ZeRO-3's host time per submodule (sim/step.c zero3_hooks), by hand on the tiny node, whose host
 * otherwise issues at once: gpt-350m (Megatron-DeepSpeed, materialized attention: 12 submodules
 * a layer, 3 on either side of the layers), one GPU, one micro-step. Each block of each pass is
 * one host task of its submodules x the per-module time, one after another on the host thread,
 * so the phase is busy their sum exactly. At 100 / 200 us the hooks hide behind the GPU's work
 * (the block's compute runs while the host issues the next); at 50 ms a module the passes are
 * the host's: the forward window is at least the forward hooks' sum. ratiolab's own schedule
 * runs no hooks. On one rank the parameters are not partitioned and DeepSpeed's fetch takes its
 * gather-free path, so the partitioned figures add nothing; over DP 2 (two GPUs of dgx1-v100) each
 * submodule costs them on top, the forward's in the forward. */
START_TEST(step_ds_zero3_hooks_by_hand)
{
    struct hw_profile hw = tu_sim_tiny_hw();
    struct fixture f;
    one_gpu(&f, 1.0, 18, 0);
    ck_assert_int_eq(f.m.arch.kind, PLAN_ARCH_MEGATRON_GPT);
    struct sim_train t;
    sim_train_defaults(&t);
    t.attention = PLAN_ATTN_MATERIALIZED;
    struct sim_step_result r, none;
    struct rl_err e;
    int64_t modules = 3 + 12 * (int64_t)f.m.arch.layers_here + 3;
    hw.host_zero3_us_fwd = 100, hw.host_zero3_us_bwd = 200;
    hw.host_zero3_part_us_fwd = 7, hw.host_zero3_part_us_bwd = 11;
    ck_assert_int_eq(f.p.layout.dp, 1);
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.phase[STEP_PH_ZERO3_HOOKS].busy_ns, modules * (100 + 200) * 1000);
    ck_assert_int_lt(r.phase[STEP_PH_ZERO3_HOOKS].exposed_ns, r.phase[STEP_PH_ZERO3_HOOKS].busy_ns);
    struct hw_profile off = hw;
    off.host_zero3_us_fwd = off.host_zero3_us_bwd = 0;
    ck_assert_msg(sim_step_run(&f.p, &off, &t, NULL, &none, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(none.phase[STEP_PH_ZERO3_HOOKS].busy_ns, 0);
    ck_assert_int_ge(r.step_ns, none.step_ns);
    hw.host_zero3_us_fwd = 50000, hw.host_zero3_us_bwd = 50000;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.phase[STEP_PH_ZERO3_HOOKS].busy_ns, modules * 2 * 50000 * INT64_C(1000));
    ck_assert_int_ge(r.window_forward_ns, modules * 50000 * INT64_C(1000));
    ck_assert_int_ge(r.step_ns, r.phase[STEP_PH_ZERO3_HOOKS].busy_ns);
    t.schedule = STEP_SCHED_OVERLAP;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.phase[STEP_PH_ZERO3_HOOKS].busy_ns, 0);
    fx_free(&f);
    struct hw_profile node = load_hw("dgx1-v100");
    node.host_zero3_us_fwd = 100, node.host_zero3_us_bwd = 200;
    node.host_zero3_part_us_fwd = 7, node.host_zero3_part_us_bwd = 11;
    fx_init(&f, "gpt-350m", 1, 2, 2, 1.0, PLAN_POLICY_DS012);
    ck_assert_int_eq(f.p.layout.dp, 2);
    sim_train_defaults(&t);
    t.attention = PLAN_ATTN_MATERIALIZED;
    ck_assert_msg(sim_step_run(&f.p, &node, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(r.phase[STEP_PH_ZERO3_HOOKS].busy_ns, modules * (100 + 7 + 200 + 11) * 1000);
    node.host_zero3_part_us_fwd = 50000, node.host_zero3_part_us_bwd = 0;   /* the forward's, not the backward's */
    ck_assert_msg(sim_step_run(&f.p, &node, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_ge(r.window_forward_ns, modules * (100 + 50000) * INT64_C(1000));
    fx_free(&f);
}
END_TEST

START_TEST(step_ds_018_overlaps_gpu_and_cpu_subgroups)
{
    struct hw_profile hw = load_hw("dgx1-v100");
    hw.host_zero3_us_fwd = hw.host_zero3_us_bwd = 0;   /* the host issues at once: the step's own overlap */
    struct sim_train t;
    sim_train_defaults(&t);
    struct rl_err e;
    struct fixture a, b;
    fx_init(&a, "gpt-2.7b", 8, 8, 8, 0.5, PLAN_POLICY_DS012);
    fx_init(&b, "gpt-2.7b", 8, 8, 8, 0.5, PLAN_POLICY_DS018);
    b.p.zero.ds_version = (struct rl_version){0, 18, 0};
    ck_assert_int_gt(a.p.cpu_numel, 0);
    ck_assert_int_gt(b.p.cpu_numel, 0);
    ck_assert_int_gt(b.p.gpu_numel, 0);
    struct sim_step_result ra, rb;
    ck_assert_msg(sim_step_run(&a.p, &hw, &t, NULL, &ra, &e) == 0, "%s", e.msg);
    ck_assert_msg(sim_step_run(&b.p, &hw, &t, NULL, &rb, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(ra.phase[STEP_PH_GPU_ADAM].exposed_ns, ra.phase[STEP_PH_GPU_ADAM].busy_ns);
    ck_assert_int_eq(ra.phase[STEP_PH_CPU_ADAM].exposed_ns, ra.phase[STEP_PH_CPU_ADAM].busy_ns);
    /* One bucket, DP 1: under 0.12 the whole step is serial (no phase overlaps another); under 0.18
     * the CPU sub-group's host work runs beside the GPU sub-group's kernels. */
    int64_t busy_a = 0, exp_a = 0, busy_b = 0, exp_b = 0;
    for (int k = 0; k < STEP_PH_COUNT; k++) {
        busy_a += ra.phase[k].busy_ns, exp_a += ra.phase[k].exposed_ns;
        busy_b += rb.phase[k].busy_ns, exp_b += rb.phase[k].exposed_ns;
    }
    ck_assert_int_eq(busy_a, exp_a);
    ck_assert_int_gt(busy_b, exp_b);
    fx_free(&a);
    fx_free(&b);
}
END_TEST

/* Gradient accumulation: beyond SIM_MAX_SIMULATED_MICRO_STEPS the steady-state micro-step repeats;
 * the result equals a full simulation, and the graph does not grow. */
START_TEST(step_grad_accum_repeats_the_steady_state)
{
    struct hw_profile hw = load_hw("dgx1-v100");
    struct rl_err e;
    for (int sch = 0; sch < 2; sch++) {
        struct fixture f;
        fx_init(&f, "gpt-2.7b", 8, 8, 8, 0.5, PLAN_POLICY_EXACT);
        struct sim_train t;
        sim_train_defaults(&t);
        t.schedule = (enum step_schedule)sch;
        t.grad_accum = 11;
        struct sim_step_result rep, full, big;
        ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &rep, &e) == 0, "%s", e.msg);
        t.max_simulated_micro_steps = 64;
        ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &full, &e) == 0, "%s", e.msg);
        ck_assert_int_eq(rep.simulated_micro_steps, SIM_MAX_SIMULATED_MICRO_STEPS);
        ck_assert_int_eq(full.simulated_micro_steps, 11);
        ck_assert_int_eq(rep.step_ns, full.step_ns);
        for (int k = 0; k < STEP_PH_COUNT; k++) {
            ck_assert_int_eq(rep.phase[k].busy_ns, full.phase[k].busy_ns);
            ck_assert_int_eq(rep.phase[k].exposed_ns, full.phase[k].exposed_ns);
        }
        ck_assert_int_eq(rep.idle_ns, full.idle_ns);
        t.max_simulated_micro_steps = 0;
        t.grad_accum = 65536;
        ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &big, &e) == 0, "%s", e.msg);
        ck_assert_int_eq(big.tasks, rep.tasks);
        /* 65525 more steady micro-steps of (full(11) - full(10)) each */
        t.grad_accum = 10;
        t.max_simulated_micro_steps = 64;
        struct sim_step_result six;
        ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &six, &e) == 0, "%s", e.msg);
        ck_assert_int_eq(big.step_ns, full.step_ns + (int64_t)(65536 - 11) * (full.step_ns - six.step_ns));
        fx_free(&f);
    }
}
END_TEST

/* --gpu-ids: which GPUs (and so which switches and sockets) the ranks use. */
START_TEST(step_gpu_ids_choose_switches_and_sockets)
{
    int ids[HW_MAX_GPUS], n;
    struct rl_err e;
    ck_assert_int_eq(sim_gpu_ids_parse("0-3", ids, &n, &e), 0);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(ids[3], 3);
    ck_assert_int_eq(sim_gpu_ids_parse("0,2,4,6", ids, &n, &e), 0);
    ck_assert_int_eq(ids[2], 4);
    ck_assert_int_eq(sim_gpu_ids_parse("1,1", ids, &n, &e), RL_EINVAL);
    ck_assert_ptr_eq(strstr(e.msg, "gpu_ids: '1,1' names GPU 1 twice"), e.msg);   /* the field, not the flag */
    ck_assert_int_eq(sim_gpu_ids_parse("x", ids, &n, &e), RL_EINVAL);
    ck_assert_int_eq(sim_gpu_ids_parse("3-1", ids, &n, &e), RL_EINVAL);
    ck_assert_int_eq(sim_gpu_ids_parse("0,", ids, &n, &e), RL_EINVAL);
    struct hw_profile hw = load_hw("dgx1-v100");
    struct fixture f;
    fx_init(&f, "gpt-2.7b", 4, 4, 4, 0.5, PLAN_POLICY_EXACT);
    struct sim_train t;
    sim_train_defaults(&t);
    struct sim_step_result first, spread;
    ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &first, &e), 0);
    ck_assert_int_eq(first.sockets_used, 1);
    ck_assert_int_eq(first.socket_mask, 1);
    ck_assert_int_eq(first.gpu_ids[3], 3);
    ck_assert_int_eq(sim_gpu_ids_parse("0,2,4,6", t.gpu_ids, &t.n_gpu_ids, &e), 0);
    ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &spread, &e), 0);
    ck_assert_int_eq(spread.sockets_used, 2);
    ck_assert_int_eq(spread.gpu_ids[1], 2);
    /* one GPU per switch and two sockets' cores and DRAM: the offload runs faster */
    ck_assert_int_lt(spread.step_ns, first.step_ns);
    ck_assert_int_eq(sim_gpu_ids_parse("0,1,9", t.gpu_ids, &t.n_gpu_ids, &e), 0);
    ck_assert_int_eq(sim_step_run(&f.p, &hw, &t, NULL, &spread, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "gpu_ids: 3 GPUs given for 4 ranks per node; allowed: exactly 4 distinct indices");
    fx_free(&f);
}
END_TEST

/* Megatron-DeepSpeed checkouts from 2023-07-22 until 2023-11-21 register GQA's query and key_value
 * as two parameters: 7 tensors per layer instead of 6 (no biases, RMSNorm), the same elements. */
START_TEST(megatron_gqa_split_query_key_value)
{
    ck_assert(!plan_megatron_version_splits_qkv("2023-07-21"));
    ck_assert(plan_megatron_version_splits_qkv("2023-07-22"));
    ck_assert(plan_megatron_version_splits_qkv("2023-09"));
    ck_assert(plan_megatron_version_splits_qkv("2023-11-20"));
    ck_assert(!plan_megatron_version_splits_qkv("2023-11-21"));
    ck_assert(!plan_megatron_version_splits_qkv("new"));
    struct plan_megatron_cfg c;
    plan_megatron_defaults(&c);
    c.num_layers = 2;
    c.hidden = 1024;
    c.heads = 16;
    c.kv_heads = 4;
    c.seq_len = 2048;
    c.rmsnorm = c.no_bias = c.swiglu = c.untie = c.rotary = true;
    c.ffn_hidden = 2816;
    c.tp = 2;
    struct plan_model fused, split;
    struct rl_err e;
    ck_assert_msg(plan_model_megatron(&fused, &c, &e) == 0, "%s", e.msg);
    ck_assert_msg(plan_model_megatron(&split, &c, &e) == 0, "%s", e.msg);
    ck_assert_msg(plan_model_megatron_split_qkv(&split, &e) == 0, "%s", e.msg);
    int per_layer[2] = {0, 0};
    for (int i = 0; i < fused.n_tensors; i++)
        per_layer[0] += fused.tensors[i].layer == 0;
    for (int i = 0; i < split.n_tensors; i++)
        per_layer[1] += split.tensors[i].layer == 0;
    ck_assert_int_eq(per_layer[0], 6);
    ck_assert_int_eq(per_layer[1], 7);
    ck_assert_int_eq(split.total_numel, fused.total_numel);
    int64_t q = -1, kv = -1;
    for (int i = 0; i < split.n_tensors; i++) {
        if (strstr(split.tensors[i].name, "layers.0.self_attention.query.weight"))
            q = split.tensors[i].numel;
        if (strstr(split.tensors[i].name, "layers.0.self_attention.key_value.weight"))
            kv = split.tensors[i].numel;
    }
    ck_assert_int_eq(q, 1024 / 2 * 1024);              /* [h / tp] x h */
    ck_assert_int_eq(kv, 2 * 4 * 64 / 2 * 1024);       /* [2 kv head_dim / tp] x h */
    /* without GQA nothing changes */
    c.kv_heads = 16;
    struct plan_model mha;
    ck_assert_msg(plan_model_megatron(&mha, &c, &e) == 0, "%s", e.msg);
    ck_assert_msg(plan_model_megatron_split_qkv(&mha, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(mha.n_tensors, fused.n_tensors);
    plan_model_free(&fused);
    plan_model_free(&split);
    plan_model_free(&mha);
}
END_TEST

/* The stall itself, to the nanosecond, from the trace: under 0.16.3 every backward kernel that
 * follows a blocking fp32 gradient copy starts exactly one launch latency after the copy ends
 * (the host returns from the copy, then launches); under 0.19.5 a backward kernel starts before
 * a copy ends. */
static int count_stalls(const char *path, int64_t launch_ns, int *started_before)
{
    struct trace_doc d;
    struct rl_err e;
    ck_assert_msg(trace_read(path, &d, &e) == 0, "%s", e.msg);
    int exact = 0, copies = 0;
    *started_before = 0;
    for (int i = 0; i < d.n_events; i++) {
        const struct trace_event *c = &d.events[i];
        if (c->ph != 'X' || strcmp(c->name, "grad_d2h_fp32") != 0)
            continue;
        int64_t end = c->ts_ns + c->dur_ns, next = INT64_MAX;
        for (int j = 0; j < d.n_events; j++) {
            const struct trace_event *b = &d.events[j];
            if (b->ph == 'X' && b->pid == c->pid && strcmp(b->name, "backward") == 0 &&
                b->ts_ns + b->dur_ns > c->ts_ns && b->ts_ns < next)
                next = b->ts_ns;   /* the first backward kernel not finished when the copy began */
        }
        if (next == INT64_MAX)
            continue;   /* the last flush: no backward follows */
        copies++;
        exact += next == end + launch_ns;
        *started_before += next < end;
    }
    trace_doc_free(&d);
    ck_assert_int_gt(copies, 2);
    return exact == copies ? copies : -1;
}

START_TEST(step_ds_blocking_copy_stall_in_the_trace)
{
    struct hw_profile hw = load_hw("dgx1-v100");
    hw.host_zero3_us_fwd = hw.host_zero3_us_bwd = 0;   /* the host issues at once: the stall alone */
    struct sim_train t;
    sim_train_defaults(&t);
    struct rl_err e;
    struct sim_step_result r;
    char path[4200];
    int64_t launch = (int64_t)llround(hw.lat_launch_us * 1000);
    const int minor[] = {16, 19}, patch[] = {3, 5};
    for (int i = 0; i < 2; i++) {
        struct fixture f;
        one_gpu(&f, 1.0, minor[i], patch[i]);
        f.p.zero.reduce_bucket_size = 10000000;
        snprintf(path, sizeof path, "%s/stall%d.json", tu_tmpdir(), i);
        ck_assert_msg(sim_step_run(&f.p, &hw, &t, path, &r, &e) == 0, "%s", e.msg);
        int before;
        int n = count_stalls(path, launch, &before);
        if (i == 0) {
            ck_assert_int_gt(n, 2);
            ck_assert_int_eq(before, 0);
        } else {
            ck_assert_int_gt(before, 0);
        }
        fx_free(&f);
    }
}
END_TEST

Suite *sim_step_suite(void)
{
    Suite *s = suite_create("sim_step");
    TCase *c = tcase_create("model");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, step_vocabulary_breakdown_and_chunks);
    tcase_add_test(c, step_single_gpu_equals_closed_form);
    tcase_add_test(c, step_ds_host_cast_and_sequential_loop_closed_forms);
    tcase_add_test(c, step_ds_host_costs_of_copies_closed_forms);
    tcase_add_test(c, step_ds_thp_always_faults_in_huge_pages);
    tcase_add_test(c, step_ds_cpu_adam_bound_and_oversubscribed);
    tcase_add_test(c, step_ds_inter_node_gather_exposed_without_prefetch);
    tcase_add_test(c, step_ds_pageable_flat_buffer_holds_the_host);
    tcase_add_test(c, step_ds_pinned_gradient_copies_closed_forms);
    tcase_add_test(c, step_ds_blocking_copy_stalls_backward);
    tcase_add_test(c, step_ds_blocking_copy_stall_in_the_trace);
    tcase_add_test(c, step_ds_018_overlaps_gpu_and_cpu_subgroups);
    tcase_add_test(c, step_ds_zero3_hooks_by_hand);
    tcase_add_test(c, step_grad_accum_repeats_the_steady_state);
    tcase_add_test(c, step_gpu_ids_choose_switches_and_sockets);
    tcase_add_test(c, megatron_gqa_split_query_key_value);
    tcase_add_test(c, step_breakdown_adds_up);
    tcase_add_test(c, step_overlap_host_overflow_scan_by_hand);
    tcase_add_test(c, step_schedules_and_ratio_order);
    tcase_add_test(c, step_shared_switches_slow_the_copies);
    tcase_add_test(c, step_memory_prediction);
    tcase_add_test(c, step_multi_node_uses_the_network);
    tcase_add_test(c, step_accumulation_pipeline_and_numa);
    suite_add_tcase(s, c);
    c = tcase_create("commands");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, predict_json_and_trace_are_deterministic);
    tcase_add_test(c, predict_bad_input_exits_2_without_files);
    tcase_add_test(c, predict_shows_gpus_reserve_and_repeats_micro_steps);
    tcase_add_test(c, sweep_rows_and_formats);
    tcase_add_test(c, sweep_table_csv_and_json_in_process);
    tcase_add_test(c, sweep_csv_reads_back_with_its_comments);
    tcase_add_test(c, tune_finds_ratio_and_sub_group_size);
    tcase_add_test(c, trace_streams_are_serial_and_memory_returns);
    suite_add_tcase(s, c);
    c = tcase_create("golden");
    tcase_set_tags(c, "golden");   /* CK_EXCLUDE_TAGS=golden leaves it out (scripts/mutate.sh) */
    tcase_set_timeout(c, 120);
    tcase_add_test(c, golden_predictions_table);
    suite_add_tcase(s, c);
    return s;
}
