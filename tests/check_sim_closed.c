/* tests/check_sim_closed.c — simulator figures against closed forms: the work a flow serves at
 * completion (exactly the work, also when work / rate is not a whole number of ns), the pipeline
 * bubble ((pp - 1) micro-batches of forward + backward compute), CPU Adam with and without NUMA
 * interleaving (its inter-socket load), and a parameter all-gather across nodes (nccl-tests bus
 * bytes over the node network shared by the node's ranks).
 *
 * Expected values are computed here from the model's stated formulas and the hardware profile's
 * numbers, never read back from the simulator's own intermediate results. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "sim/hw.h"
#include "sim/sim.h"
#include "sim/step.h"
#include "tests/util.h"
#include "traces/trace.h"

/* ---- flows -------------------------------------------------------------------------------------- */
struct ends {
    int64_t t[4];   /* completion time per tag */
};

static void on_end(struct sim_flow *f, void *arg, int64_t tag) { ((struct ends *)arg)->t[tag] = f->sim->now_ns; }

START_TEST(flow_serves_exactly_the_work)
{
    /* 1e9 units/s = 1 unit per ns. Work 1000 + 5e-7 needs 1000.0000005 ns: the simulator rounds a
     * residual below 1e-6 ns down, so the flow completes at 1000 ns with 5e-7 units not yet
     * accounted by the rate; completion must serve them. Work 1234.5678 completes at 1235 ns. On a
     * second resource with weight 2 the served load is twice the work, exactly. */
    const double w0 = 1000.0 + 5e-7, w1 = 1234.5678;
    struct sim s;
    struct sim_flow f;
    struct ends en = {{0}};
    sim_init(&s);
    sim_flow_init(&f, &s);
    int a = sim_flow_add_resource(&f, "a", 1e9, NULL);
    int b = sim_flow_add_resource(&f, "b", 1e9, NULL);
    int c = sim_flow_add_resource(&f, "c", 4e9, NULL);
    struct sim_flow_req q0 = {.work = w0, .n_res = 2, .res = {a, c}, .weight = {1, 2}, .done = on_end,
                              .arg = &en, .tag = 0};
    struct sim_flow_req q1 = {.work = w1, .n_res = 1, .res = {b}, .weight = {1}, .done = on_end,
                              .arg = &en, .tag = 1};
    ck_assert_int_eq(sim_flow_start(&f, &q0, NULL, NULL), 0);
    ck_assert_int_eq(sim_flow_start(&f, &q1, NULL, NULL), 0);
    ck_assert_int_eq(sim_run(&s, -1), 0);
    ck_assert_int_eq(en.t[0], 1000);
    ck_assert_int_eq(en.t[1], 1235);
    ck_assert_msg(f.res[a].served == w0, "served %.17g, work %.17g", f.res[a].served, w0);
    ck_assert_msg(f.res[c].served == 2 * w0, "served %.17g, 2 x work %.17g", f.res[c].served, 2 * w0);
    ck_assert_msg(f.res[b].served == w1, "served %.17g, work %.17g", f.res[b].served, w1);
    sim_flow_free(&f);
    sim_free(&s);
}
END_TEST

/* ---- step fixtures ---------------------------------------------------------------------------------- */
static const char *cat(void)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/catalog", tu_src());
    return buf;
}

static struct hw_profile load_hw(const char *name)
{
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_msg(sim_hw_load(&hw, cat(), name, &e) == 0, "%s", e.msg);
    return hw;
}

struct fixture {
    struct plan_model m;
    struct plan p;
};

/* `model` with TP tp, PP pp (stage `stage`) on `world` GPUs of `gpn` per node, fp16, pinned CPU
 * offload at `ratio` with the exact policy. */
static void fx_stage(struct fixture *f, const char *model, int tp, int pp, int stage, int world, int gpn, double ratio)
{
    struct rl_err e;
    memset(f, 0, sizeof *f);
    struct plan_layout l = {.tp = tp, .pp = pp, .world = world, .gpus_per_node = gpn};
    ck_assert_msg(plan_layout_resolve(&l, &e) == 0, "%s", e.msg);
    struct plan_model_opts mo = {.tp = tp, .pp = pp, .pp_stage = stage};
    ck_assert_msg(plan_model_load(&f->m, cat(), model, &mo, &e) == 0, "%s", e.msg);
    plan_model_group(&f->m, PLAN_GROUPS_AUTO, false);
    struct plan_zero z;
    plan_zero_defaults(&z);
    z.stage = 3;
    z.offload = PLAN_OFFLOAD_CPU;
    z.pin_memory = true;
    z.dtype = PLAN_FP16;
    z.ratio = ratio;
    z.src_ratio = PLAN_SRC_CLI;
    struct plan_options o = {.policy = PLAN_POLICY_EXACT};
    ck_assert_msg(plan_build(&f->p, &f->m, &l, &z, &o, &e) == 0, "%s", e.msg);
}

static void fx_init(struct fixture *f, const char *model, int tp, int pp, int world, int gpn, double ratio)
{
    fx_stage(f, model, tp, pp, 0, world, gpn, ratio);
}

static void fx_free(struct fixture *f)
{
    plan_free(&f->p);
    plan_model_free(&f->m);
}

/* ceil with the simulator's convention: within 1e-6 above an integer counts as it. */
static int64_t ceil_ns(long double ns)
{
    int64_t n = (int64_t)ns;
    return (long double)n < ns - 1e-6L ? n + 1 : n;
}

START_TEST(pipeline_bubble_is_pp_minus_one_micro_batches)
{
    /* gpt-2.7b, TP 4, PP 2 and 4, stage 0 (no logits) on DGX-1s: the 1F1B fill and drain idle a
     * stage for (pp - 1) micro-batches of forward (1x) and backward (2x) compute. Per
     * layer: 2 x tokens x weights + 4 b s^2 x (heads / tp) x head_dim FLOPs forward. */
    struct hw_profile hw = load_hw("dgx1-v100");
    for (int pp = 2; pp <= 4; pp += 2) {
        struct fixture f;
        fx_init(&f, "gpt-2.7b", 4, pp, 4 * pp, 8, 0.5);
        const struct plan_arch *a = &f.m.arch;
        ck_assert_int_eq(a->layers_here, 32 / pp);
        long double s = (long double)a->seq_len, tokens = s, per_tp_heads = (long double)(a->heads / 4);
        int64_t layer_numel[64] = {0};
        for (int i = 0; i < f.m.n_tensors; i++)
            if (f.m.tensors[i].layer >= 0)
                layer_numel[f.m.tensors[i].layer] += f.m.tensors[i].numel;
        long double fwd = 0;
        for (int l = 0; l < 64; l++)
            if (layer_numel[l] > 0)
                fwd += 2.0L * tokens * (long double)layer_numel[l] +
                       4.0L * s * s * per_tp_heads * (long double)(a->hidden / a->heads);
        long double rate = (long double)hw.tensor_tflops * hw.tensor_efficiency * 1e12L;
        for (int ck = 0; ck < 2; ck++) {
            /* With activation checkpointing the backward recomputes the forward: 1 + 3. */
            struct sim_train t;
            sim_train_defaults(&t);
            t.checkpoint_activations = ck;
            struct sim_step_result r;
            struct rl_err e;
            ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
            int64_t want = ceil_ns((long double)(pp - 1) * (ck ? 4.0L : 3.0L) * fwd / rate * 1e9L);
            ck_assert_msg(llabs(r.phase[STEP_PH_PIPELINE_BUBBLE].busy_ns - want) <= 1,
                          "pp %d, checkpointing %d: bubble %lld ns, closed form %lld", pp, ck,
                          (long long)r.phase[STEP_PH_PIPELINE_BUBBLE].busy_ns, (long long)want);
        }
        fx_free(&f);
    }
}
END_TEST

START_TEST(cpu_adam_numa_closed_form)
{
    /* One rank of a DGX-1 (GPU 0), everything offloaded. CPU Adam over a sub-group of n elements
     * runs at the smallest of: the socket's cores x elements per core, its DRAM / bytes per
     * element; interleaved over both sockets, each DRAM and the inter-socket link carry half of
     * the bytes. With the link at 1 GB/s it binds: n x bytes / 2 / 1e9 seconds. */
    struct hw_profile hw = load_hw("dgx1-v100");
    ck_assert_int_eq(hw.n_sockets, 2);
    struct fixture f;
    fx_init(&f, "gpt-350m", 1, 1, 1, 1, 1.0);
    ck_assert_int_eq(f.p.cpu_numel, f.p.per_rank_numel);
    struct sim_train t;
    sim_train_defaults(&t);
    struct sim_step_result r;
    struct rl_err e;
    int k = hw.sw[hw.gpu_switch[0]].socket;
    long double own = fminl((long double)hw.socket[k].cores * hw.cpu_adam_elems_per_core,
                            (long double)hw.socket[k].dram_gbps * 1e9L / hw.cpu_adam_dram_bytes);
    int64_t want = 0;
    for (int i = 0; i < f.p.n_subgroups; i++)
        want += ceil_ns((long double)f.p.subgroups[i].cpu_numel / own * 1e9L);
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_msg(r.phase[STEP_PH_CPU_ADAM].busy_ns == want, "bound: CPU Adam %lld ns, closed form %lld",
                  (long long)r.phase[STEP_PH_CPU_ADAM].busy_ns, (long long)want);
    hw.inter_socket_gbps = 1.0;
    t.numa_interleave = true;
    long double isl = 1e9L / (hw.cpu_adam_dram_bytes / 2.0L);
    ck_assert(isl < own);
    want = 0;
    for (int i = 0; i < f.p.n_subgroups; i++)
        want += ceil_ns((long double)f.p.subgroups[i].cpu_numel / isl * 1e9L);
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_msg(r.phase[STEP_PH_CPU_ADAM].busy_ns == want, "interleaved: CPU Adam %lld ns, closed form %lld",
                  (long long)r.phase[STEP_PH_CPU_ADAM].busy_ns, (long long)want);
    fx_free(&f);
}
END_TEST

/* The first all-gather of the step (the embedding block, ready at t = 0) in a trace: its end. */
static int64_t first_allgather_end(const struct plan *p, const struct hw_profile *hw, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), name);
    struct sim_train t;
    sim_train_defaults(&t);
    struct sim_step_result r;
    struct rl_err e;
    ck_assert_msg(sim_step_run(p, hw, &t, path, &r, &e) == 0, "%s", e.msg);
    struct trace_doc d;
    ck_assert_msg(trace_read(path, &d, &e) == 0, "%s", e.msg);
    int64_t end = -1;
    for (int i = 0; i < d.n_events && end < 0; i++) {
        const struct trace_event *ev = &d.events[i];
        if (ev->ph == 'X' && strcmp(ev->name, "allgather") == 0 && ev->args_json &&
            strstr(ev->args_json, "\"ready_ns\":0,"))
            end = ev->ts_ns + ev->dur_ns;
    }
    trace_doc_free(&d);
    ck_assert_msg(end >= 0, "no all-gather ready at t = 0 in the trace");
    return end;
}

START_TEST(allgather_across_nodes_closed_form)
{
    /* gpt-2.7b on 4 DGX-A100 nodes. nccl-tests convention: bus bytes = bytes x (n-1)/n. The node
     * network (net_gbps, set to 8 GB/s here so that it binds) carries, for each rank, its
     * 1/local share of its DP group's traffic, local being the group's members in this node; all
     * 8 ranks gather the embedding block first, at t = 0. Its latency is NCCL's ring's
     * (src/graph/tuning.cc): the collective's base latency_us.collective_inter, then n - 1 steps,
     * nodes - 1 of them across nodes (latency_us.nccl_ring_step_inter, default 9.6 us) and the rest
     * inside a node (latency_us.nccl_ring_step_intra, default 3.4 us). */
    struct hw_profile hw = load_hw("dgx-a100-80g");
    hw.net_gbps = 8.0;
    ck_assert(hw.lat_coll_inter_us == 40 && hw.lat_ring_step_inter_us == 9.6 && hw.lat_ring_step_intra_us == 3.4);
    /* DP 4 over 4 nodes: 3 steps, all across nodes: 40 + 3 x 9.6 = 68.8 us */
    int64_t lat = 68800;
    /* TP 8 inside each node, DP 4 across them (local 1): each rank's gather runs at 8/8 GB/s. */
    struct fixture f;
    fx_init(&f, "gpt-2.7b", 8, 1, 32, 8, 0.3);
    ck_assert_int_eq(f.p.layout.dp, 4);
    ck_assert_int_eq(f.p.layout.nodes, 4);
    int64_t embed_numel = 0;
    for (int i = 0; i < f.m.n_tensors && f.m.tensors[i].layer < 0; i++)
        embed_numel += f.m.tensors[i].numel;
    /* word embeddings (50257 padded to a multiple of 128 x TP 8: 51200) / 8 x 2560 and learned
     * positions 2048 x 2560 (replicated) */
    ck_assert_int_eq(embed_numel, 51200 / 8 * 2560 + 2048 * 2560);
    int64_t want = lat + ceil_ns((long double)embed_numel * 2 * 3 / 4 / (8e9L / 8) * 1e9L);
    ck_assert_int_eq(first_allgather_end(&f.p, &hw, "ag8.json"), want);
    fx_free(&f);
    /* TP 2, DP 16 (4 members per node): the network load of a rank is 1/4 of its rate, 8 ranks
     * load it 2x their rate, so each gathers at 8/2 = 4 GB/s. */
    fx_init(&f, "gpt-2.7b", 2, 1, 32, 8, 0.3);
    ck_assert_int_eq(f.p.layout.dp, 16);
    embed_numel = 0;
    for (int i = 0; i < f.m.n_tensors && f.m.tensors[i].layer < 0; i++)
        embed_numel += f.m.tensors[i].numel;
    ck_assert_int_eq(embed_numel, 50432 / 2 * 2560 + 2048 * 2560);   /* 50257 -> multiple of 256 */
    /* 69.8e6 elements, more than the 5e7 prefetch bucket: DeepSpeed's prefetch takes whole
       parameters until the bucket is reached, here the word embeddings alone (64.6e6); the
       positions follow in a second all-gather */
    /* DP 16 over 4 nodes: 15 steps, 3 across nodes: 40 + 12 x 3.4 + 3 x 9.6 = 109.6 us */
    lat = 109600;
    want = lat + ceil_ns((long double)(50432 / 2 * 2560) * 2 * 15 / 16 / 4e9L * 1e9L);
    ck_assert_int_eq(first_allgather_end(&f.p, &hw, "ag2.json"), want);
    fx_free(&f);
}
END_TEST

/* Inside one node a collective is one latency_us.collective_intra plus its bus bytes, bytes x
 * (n-1)/n for an all-gather, at the GPU's NVLink share of the profile's all-gather bus bandwidth
 * (nccl-tests convention). gpt-350m, TP 1, DP 8 on one DGX-A100: the first gather at t = 0 is the
 * word embeddings alone (50257 padded to a multiple of 128: 50304 x 1024 = 51.5e6 elements, more
 * than the 5e7 prefetch bucket), 2 bytes each, at 200 GB/s. */
START_TEST(allgather_inside_a_node_closed_form)
{
    struct hw_profile hw = load_hw("dgx-a100-80g");
    ck_assert(hw.allgather_busbw_gbps == 200 && hw.lat_coll_intra_us == 20);
    struct fixture f;
    fx_init(&f, "gpt-350m", 1, 1, 8, 8, 0.3);
    ck_assert_int_eq(f.p.layout.dp, 8);
    ck_assert_int_eq(f.p.layout.nodes, 1);
    ck_assert_int_eq(f.m.tensors[0].numel, 50304 * 1024);
    int64_t want = 20000 + ceil_ns((long double)(50304 * 1024) * 2 * 7 / 8 / 200e9L * 1e9L);
    ck_assert_int_eq(first_allgather_end(&f.p, &hw, "ag1.json"), want);
    fx_free(&f);
}
END_TEST

START_TEST(memory_pipeline_stages_and_gathered_parameters)
{
    /* Activations (Korthikanti et al. 2022, eq. 2): s b h (10 + 24/t + 5 a s / (h t)) bytes per
     * layer at 16-bit. gpt-2.7b, TP 4, PP 2: each stage holds 16 layers; in 1F1B stage k keeps
     * pp - k micro-batches in flight; the last stage adds fp32 logits and their gradient,
     * 2 x 4 s b vocab / t (vocab 50257 padded to a multiple of 128 x 4: 50688). */
    struct hw_profile hw = load_hw("dgx1-v100");
    const double s = 2048, h = 2560, heads = 32, t = 4;
    const double layer = s * h * (10 + 24 / t + 5 * heads * s / (h * t));
    struct sim_train tr;
    sim_train_defaults(&tr);
    struct sim_step_result r;
    struct rl_err e;
    for (int stage = 0; stage < 2; stage++) {
        struct fixture f;
        fx_stage(&f, "gpt-2.7b", 4, 2, stage, 8, 8, 0.3);
        ck_assert_msg(sim_step_memory(&f.p, &hw, &tr, &r, &e) == 0, "%s", e.msg);
        double want = 16 * layer * (2 - stage) + (stage == 1 ? 2 * 4 * s * 50688 / t : 0);
        ck_assert_msg(r.gpu_activation_bytes == (int64_t)ceil(want), "stage %d: %lld activation bytes, closed form %.0f",
                      stage, (long long)r.gpu_activation_bytes, want);
        fx_free(&f);
    }
    /* ZeRO-3 over 8 data-parallel ranks (TP 1): the largest block (word embeddings 50304 x 2560
     * plus positions 2048 x 2560) is gathered, and prefetch_bucket_size 5e7 elements cannot hold
     * another one ahead: at least one more in flight, so 2 x 134,021,120 fp16 elements live. */
    struct fixture f;
    fx_init(&f, "gpt-2.7b", 1, 1, 8, 8, 0.3);
    ck_assert_msg(sim_step_memory(&f.p, &hw, &tr, &r, &e) == 0, "%s", e.msg);
    const int64_t block = (50304 + 2048) * INT64_C(2560);
    ck_assert_int_eq(block, 134021120);
    ck_assert_int_eq(r.gpu_live_param_bytes, 2 * block * 2);
    fx_free(&f);
}
END_TEST

/* Checks every host copy span (name with h2d or d2h) of a one-rank gpt-350m step, everything
 * offloaded, against its closed form: launch latency aside, bytes x weight / gbps, weight 2 for
 * spans named `twice` (0: none). Returns the number of copies seen. */
/* The copies of the DeepSpeed 0.12 step that go through pageable memory (docs/deepspeed-step.md
 * sections 2-3): the blocking D2H of a CPU sub-group's 16-bit gradient before the host cast, and
 * the blocking H2D of the host-cast parameters. The driver stages each through a pinned buffer, so
 * its bytes cross host memory (and, interleaved, the inter-socket link) twice. */
static const char *const pageable_copies[] = {"grad_d2h_pageable", "param_h2d", NULL};

static int copies_match(const struct hw_profile *hw, bool interleave, double gbps, const char *const *twice, const char *file)
{
    struct fixture f;
    fx_init(&f, "gpt-350m", 1, 1, 1, 1, 1.0);
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tu_tmpdir(), file);
    struct sim_train t;
    sim_train_defaults(&t);
    t.numa_interleave = interleave;
    struct sim_step_result r;
    struct rl_err e;
    ck_assert_msg(sim_step_run(&f.p, hw, &t, path, &r, &e) == 0, "%s", e.msg);
    struct trace_doc d;
    ck_assert_msg(trace_read(path, &d, &e) == 0, "%s", e.msg);
    int copies = 0;
    for (int i = 0; i < d.n_events; i++) {
        const struct trace_event *ev = &d.events[i];
        const char *b = ev->args_json ? strstr(ev->args_json, "\"bytes\":") : NULL;
        if (ev->ph != 'X' || !b || !(strstr(ev->name, "h2d") || strstr(ev->name, "d2h")))
            continue;
        long long bytes = atoll(b + 8);
        long double w = 1.0L;
        for (const char *const *tw = twice; tw && *tw; tw++)
            if (strcmp(ev->name, *tw) == 0)
                w = 2.0L;
        ck_assert_msg(ev->dur_ns == ceil_ns((long double)bytes * w / ((long double)gbps * 1e9L) * 1e9L),
                      "%s of %lld bytes: %lld ns", ev->name, bytes, (long long)ev->dur_ns);
        copies++;
    }
    trace_doc_free(&d);
    fx_free(&f);
    return copies;
}

START_TEST(interleaved_host_copies_load_the_inter_socket_link_by_half)
{
    /* One rank of a DGX-1, buffers interleaved over both sockets: half of every host copy's bytes
     * crosses the inter-socket link. With the link at 0.5 GB/s it binds (below the GPU link, the
     * switch uplink and the pageable caps): B bytes take B x 0.5 / 0.5 GB/s. */
    struct hw_profile hw = load_hw("dgx1-v100");
    hw.inter_socket_gbps = 0.5;
    ck_assert(hw.h2d_pageable_gbps > 1 && hw.d2h_pageable_gbps > 1);
    ck_assert_int_ge(copies_match(&hw, true, 1.0, pageable_copies, "numa.json"), 3);
}
END_TEST

START_TEST(pageable_copies_cross_dram_twice)
{
    /* Without interleaving, with the sockets' DRAM at 1 GB/s (binding): a pinned copy crosses
     * DRAM once, a pageable one twice (the driver's staging copy). The DeepSpeed 0.12 step
     * copies the cast parameters back (param_h2d) and a CPU sub-group's 16-bit gradient out
     * (grad_d2h_pageable) through pageable memory; the flat gradient buffer is pinned. */
    struct hw_profile hw = load_hw("dgx1-v100");
    for (int k = 0; k < hw.n_sockets; k++)
        hw.socket[k].dram_gbps = 1.0;
    ck_assert(hw.h2d_pageable_gbps > 0.5 && hw.h2d_pinned_gbps > 1);
    ck_assert_int_ge(copies_match(&hw, false, 1.0, pageable_copies, "dram.json"), 3);
}
END_TEST

START_TEST(checkpointed_step_on_one_gpu_closed_form)
{
    /* gpt-350m on one GH200, ratio 0, overlap schedule, activation checkpointing: no
     * collectives, no copies; per layer a forward, then a backward of 3 forwards (the recomputed
     * forward and the backward's 2), each after one launch latency; the logits' backward is 2
     * forwards (not recomputed); then the overflow scan and GPU Adam at 30 bytes per element
     * from HBM. Per layer the forward is 2 x tokens x weights + 4 b s^2 x heads x head_dim FLOPs. */
    struct hw_profile hw = load_hw("gh200");
    hw.gemm_efficiency = 0;   /* the constant tensor rate (the per-shape model: sim_hw's tests) */
    struct fixture f;
    fx_init(&f, "gpt-350m", 1, 1, 1, 1, 0.0);
    struct sim_train t;
    sim_train_defaults(&t);
    t.schedule = STEP_SCHED_OVERLAP;
    t.checkpoint_activations = true;
    struct sim_step_result r;
    struct rl_err e;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    const struct plan_arch *a = &f.m.arch;
    long double rate = (long double)hw.tensor_tflops * hw.tensor_efficiency * 1e12L;
    long double s = (long double)a->seq_len;
    int64_t launch = (int64_t)llround(hw.lat_launch_us * 1000);
    int64_t layer_numel[64] = {0};
    for (int i = 0; i < f.m.n_tensors; i++)
        if (f.m.tensors[i].layer >= 0)
            layer_numel[f.m.tensors[i].layer] += f.m.tensors[i].numel;
    int64_t want = 0;
    for (int l = 0; l < 24; l++) {
        long double fwd = 2.0L * s * (long double)layer_numel[l] + 4.0L * s * s * (long double)a->hidden;
        want += 2 * launch + ceil_ns(fwd / rate * 1e9L) + ceil_ns(3.0L * fwd / rate * 1e9L);
    }
    long double logits = 2.0L * s * (long double)a->hidden * (long double)a->vocab_padded;
    want += 2 * launch + ceil_ns(logits / rate * 1e9L) + ceil_ns(2.0L * logits / rate * 1e9L);
    long double hbm = (long double)hw.hbm_gbps * hw.hbm_efficiency * 1e9L;
    /* the executor's overflow check first: the device share scanned at 4 bytes per element, after
     * a launch and the count's copy back (no host share, one rank) */
    want += (int64_t)llround((hw.lat_launch_us + hw.lat_copy_us) * 1000) +
            ceil_ns((long double)f.p.gpu_numel * 4.0L / hbm * 1e9L);
    want += launch + ceil_ns((long double)f.p.gpu_numel * 30.0L / hbm * 1e9L);
    ck_assert_msg(r.step_ns == want, "step %lld ns, closed form %lld", (long long)r.step_ns, (long long)want);
    fx_free(&f);
}
END_TEST

Suite *sim_closed_suite(void)
{
    Suite *s = suite_create("sim_closed");
    TCase *tc = tcase_create("closed");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, flow_serves_exactly_the_work);
    tcase_add_test(tc, pipeline_bubble_is_pp_minus_one_micro_batches);
    tcase_add_test(tc, cpu_adam_numa_closed_form);
    tcase_add_test(tc, allgather_across_nodes_closed_form);
    tcase_add_test(tc, allgather_inside_a_node_closed_form);
    tcase_add_test(tc, memory_pipeline_stages_and_gathered_parameters);
    tcase_add_test(tc, interleaved_host_copies_load_the_inter_socket_link_by_half);
    tcase_add_test(tc, pageable_copies_cross_dram_twice);
    tcase_add_test(tc, checkpointed_step_on_one_gpu_closed_form);
    suite_add_tcase(s, tc);
    return s;
}
