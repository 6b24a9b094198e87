/* sim/step_ds.c — the simulator's `deepspeed` schedule: DeepSpeed's gradient partitioning in
 * the backward and its optimizer step, per release (the flags of each release: plan/ds_rules.c;
 * the project's reading of DeepSpeed: docs/deepspeed-step.md sections 2-4). The executor's
 * mirror is exec/step_ds.c. */
#include "sim/step.h"
#include "sim/step_build.h"

/* DeepSpeed's partition_grads for one flushed bucket on rank g (docs/deepspeed-step.md 2.2-2.4), after
 * the reduce-scatter `rs`: every partition goes D2H into the flat buffer and H2D back (one copy each
 * per parameter; asynchronous into a pinned buffer, holding the host thread into a pageable one);
 * at the boundary the per-parameter norm on the GPU, then the fp32
 * gradient: a D2D cast for GPU sub-groups, and for CPU sub-groups the version's copy, which
 * blocks the host thread (st->host) unless it is asynchronous. The pieces of PyTorch's copy_
 * (sim/README.md "What copy_ does"), each its own task:
 *   < 0.15.4   copy_(16-bit GPU -> fp32 pinned host), blocking: a pageable 16-bit host temporary,
 *              first touched by the driver's staging copy on the calling thread (page_fault, one
 *              thread, when fresh), a synchronous pageable D2H of 16 bits into it, then the cast
 *              into the pinned fp32 buffer on the intra-op threads (grad_cast);
 *   0.15.4     .to(fp32) on the GPU (grad_cast), a synchronous D2H of fp32 into the pinned staging
 *              buffer, a full device synchronize, then a host copy staging -> fp32 buffer;
 *   0.16.3     .float() on the GPU, a synchronous D2H of fp32 into the pinned buffer;
 *   0.19.5     the same with non_blocking: nothing waits. */
void sim__ds_partition_grads(struct builder *u, struct streams *st, const struct plan_ds_rules *dr, int g,
                               const struct flush *fl, int rs, bool boundary)
{
    struct sim__step *b = u->b;
    const struct plan *p = b->p;
    int dtype = plan_dtype_bytes(p->zero.dtype);
    int threads = sim__intraop_threads(b);
    int64_t sync_ns = sim__us_to_ns(b->hw->lat_copy_us + b->hw->lat_launch_us);   /* a blocking copy's wait */
    bool pinned = p->zero.pin_memory;
    int d1 = sim__host_copy(u, "grad_d2h", g, false, pinned, (double)fl->part * dtype, STEP_PH_GRAD_D2H,
                       fl->part * dtype, fl->tensors);
    sim__dep(u, rs, d1);
    sim__dep(u, st->reduce, d1);
    sim__dep(u, st->copy, d1);
    int h1 = sim__host_copy(u, "grad_h2d", g, true, pinned, (double)fl->part * dtype, STEP_PH_GRAD_H2D,
                       fl->part * dtype, fl->tensors);
    sim__dep(u, d1, h1);
    if (!pinned) {
        /* A pageable flat buffer (offload_optimizer.pin_memory false, DeepSpeed's default before 0.19.5):
         * cudaMemcpyAsync into pageable memory returns only when the copy is done, and out of it
         * only when the last piece is staged, after a stream sync (CUDA runtime API, "API
         * synchronization behavior"), whatever non_blocking says. Both wait for the reduce stream
         * and hold the host thread, per parameter. */
        sim__set_latency(u, d1, sync_ns * fl->tensors);
        sim__set_latency(u, h1, sync_ns * fl->tensors);
        sim__dep(u, st->host, d1);
        st->host = h1;
    }
    st->copy = h1;
    st->reduce = h1;   /* the partitioning runs on the reduce stream, in order */
    if (!boundary)
        return;
    int nm = sim__gpu_pass(u, "grad_norm", g, (double)fl->part, dtype + 16.0, STEP_PH_GRAD_NORM, SIM_TR_REDUCE);
    sim__dep(u, st->reduce, nm);
    st->reduce = nm;
    int64_t gpu_part = fl->part - fl->cpu;
    if (gpu_part > 0) {
        int c = sim__gpu_pass(u, "grad_cast", g, (double)gpu_part, dtype + 4.0, STEP_PH_GRAD_CAST, SIM_TR_REDUCE);
        sim__dep(u, st->reduce, c);
        st->reduce = c;
    }
    if (fl->cpu <= 0)
        return;
    if (dr->grad_copy == PLAN_DS_GRAD_HOST_CAST) {
        int first = -1, d2;
        if (fl->cpu_fresh > 0) {
            first = sim__host_fault(u, "grad_temp_fault", g, (double)fl->cpu_fresh * dtype, 1, STEP_PH_PAGE_FAULT);
            sim__dep(u, st->reduce, first);
            sim__dep(u, st->host, first);
        }
        d2 = sim__host_copy(u, "grad_d2h_pageable", g, false, false, (double)fl->cpu * dtype, STEP_PH_GRAD_D2H,
                       fl->cpu * dtype, 0);
        sim__set_latency(u, d2, sync_ns * fl->cpu_tensors);
        sim__dep(u, st->reduce, d2);
        sim__dep(u, st->host, d2);
        sim__dep(u, first, d2);
        int c = sim__host_cast(u, "grad_cast_host", g, (double)fl->cpu, dtype + 4.0, threads, STEP_PH_GRAD_CAST,
                          fl->cpu_tensors);
        sim__dep(u, d2, c);
        st->host = c;
        st->copy = d2;
        st->reduce = d2;
        return;
    }
    int up = sim__gpu_pass(u, "grad_upcast", g, (double)fl->cpu, dtype + 4.0, STEP_PH_GRAD_CAST, SIM_TR_REDUCE);
    sim__dep(u, st->reduce, up);
    int d2 = sim__host_copy(u, "grad_d2h_fp32", g, false, true, (double)fl->cpu * 4.0, STEP_PH_GRAD_D2H, fl->cpu * 4,
                       fl->cpu_tensors);
    sim__dep(u, up, d2);
    st->reduce = d2;
    st->copy = d2;
    if (dr->grad_copy == PLAN_DS_GRAD_GPU_UPCAST_ASYNC)
        return;
    sim__set_latency(u, d2, sync_ns * fl->cpu_tensors);
    sim__dep(u, st->host, d2);
    st->host = d2;
    if (dr->grad_copy == PLAN_DS_GRAD_HOST_CAST_SYNCED) {
        sim__dep(u, st->compute, d2);   /* a full device synchronize waits for the compute stream too */
        /* staging -> the fp32 buffer: a same-dtype host copy (read and write 4 bytes) */
        int c = sim__host_pass(u, "grad_copy_host", g, (double)fl->cpu, 8.0, STEP_PH_GRAD_CAST, fl->cpu_tensors);
        sim__dep(u, d2, c);
        st->host = c;
    }
}

/* The write-back of a GPU sub-group of n elements into the host partitions under offload_param
 * (ds_optimizer): after `stream` (its Adam) and `*host`; leaves the host and the stream at its end. */
static void param_writeback_gpu(struct builder *u, int g, int64_t n, int *host, int *stream)
{
    struct sim__step *b = u->b;
    int dtype = plan_dtype_bytes(b->p->zero.dtype);
    double bytes = (double)n * 4.0;
    int fa = -1;
    if (n * 4 >= SIM_FRESH_BYTES) {   /* first touched by the driver's staging copy on the calling thread */
        fa = sim__host_fault(u, "param_writeback_fault", g, bytes, 1, STEP_PH_PAGE_FAULT);
        sim__dep(u, *host, fa);
    }
    int d = sim__host_copy(u, "param_writeback_d2h", g, false, false, bytes, STEP_PH_PARAM_CAST, n * 4, 0);
    sim__set_latency(u, d, sim__us_to_ns(b->hw->lat_copy_us + b->hw->lat_launch_us));
    sim__dep(u, *stream, d);
    sim__dep(u, *host, d);
    sim__dep(u, fa, d);
    int ca = sim__host_cast(u, "param_writeback_cast", g, (double)n, 4.0 + dtype, sim__intraop_threads(b), STEP_PH_PARAM_CAST, 0);
    sim__dep(u, d, ca);
    *host = ca;
    *stream = d;
}

/* DeepSpeed's optimizer step on rank g after `ready` (docs/deepspeed-step.md 3): fp16's inf/nan scan
 * of the flat buffer on the host, the norm's host syncs, then the strictly sequential sub-group
 * loop in index order (CPU sub-groups are the first ones before 0.18, the last ones from 0.18).
 * A CPU sub-group: unscale on the host, CPU Adam (before 0.14.3 followed by a stream
 * synchronize), the fp32 -> 16-bit cast on the host and a blocking H2D from pageable memory,
 * queued behind the GPU work already launched. A GPU sub-group: unscale, Adam and the cast as
 * kernels, launched without waiting, so they run while the host goes on.
 * With offload_param "cpu" the 16-bit partitions are the pinned host buffer, so the write-back
 * (_reassign_or_swap_out_partitioned_parameters: fp16_flat[i].copy_(fp32_flat[i]), the same code
 * in 0.12.3-0.19.5) changes (param_writeback): a CPU sub-group casts on the host straight into the
 * pinned buffer (no temporary, no H2D); a GPU sub-group's copy_ is blocking, and PyTorch converts
 * on the CPU (Copy.cu copy_kernel_cuda): a fresh pageable fp32 temporary, a synchronous D2H of
 * 4 bytes per element into it behind the sub-group's Adam, then the cast on the host. */
/* The wait of an oversubscribed intra-op region after `task` (sim_cpu_intraop_oversub_ns), in its
 * phase; `task` itself when there is none. */
static int region_wait(struct builder *u, const char *name, int g, int task, int64_t ns, int phase)
{
    if (ns <= 0)
        return task;
    int w = sim__host_delay(u, name, g, ns, phase);
    sim__dep(u, task, w);
    return w;
}

void sim__ds_optimizer(struct builder *u, const struct plan_ds_rules *dr, int g, int ready)
{
    struct sim__step *b = u->b;
    const struct plan *p = b->p;
    const struct hw_profile *hw = b->hw;
    int dtype = plan_dtype_bytes(p->zero.dtype);
    int host = ready, stream = ready;
    int threads = sim__intraop_threads(b);
    bool param_host = p->zero.offload_param == PLAN_OFFLOAD_CPU;   /* the 16-bit partitions are on the host */
    if (p->zero.dtype == PLAN_FP16 && p->zero.offload == PLAN_OFFLOAD_CPU) {
        /* isinf and isnan over the dt flat buffer (two reads, two bool writes, .any() reads) and the
         * overflow flag's all-reduces and .item(); their two bool results are fresh host
         * temporaries of one byte per element, first touched by the intra-op threads */
        if (p->per_rank_numel >= SIM_FRESH_BYTES) {
            int fa = sim__host_fault(u, "overflow_temp_fault", g, 2.0 * (double)p->per_rank_numel, threads,
                                STEP_PH_PAGE_FAULT);
            sim__dep(u, host, fa);
            host = fa;
        }
        int ov = sim__host_pass(u, "overflow_check", g, (double)p->per_rank_numel, 2.0 * dtype + 4.0,
                           STEP_PH_OVERFLOW_CHECK, 0);
        sim__set_latency(u, ov, sim__us_to_ns(2 * hw->lat_coll_intra_us + hw->lat_copy_us));
        sim__dep(u, host, ov);
        host = ov;
    }
    int64_t n_params = p->model->n_tensors;
    int64_t sync_ns = sim__us_to_ns(hw->lat_copy_us + hw->lat_launch_us);
    int64_t norm_ns = (int64_t)p->n_subgroups * (sim__us_to_ns(hw->lat_coll_intra_us) + sync_ns);
    if (dr->norm_sync_per_param)
        norm_ns += n_params * sync_ns;
    int nm = sim__host_delay(u, "grad_norm_sync", g, norm_ns, STEP_PH_GRAD_NORM);
    sim__dep(u, host, nm);
    sim__dep(u, stream, nm);   /* .item() waits for the norms queued on the GPU */
    host = nm;
    for (int s = 0; s < p->n_subgroups; s++) {
        const struct plan_subgroup *sg = &p->subgroups[s];
        if (sg->cpu_numel > 0) {
            double c = (double)sg->cpu_numel;
            /* grad.mul_ (unscale_and_clip_grads) and, below, the 16-bit cast (copy_'s src.to) are
               one intra-op fork-join region each, waiting like CPU Adam's when the pools
               oversubscribe the cores */
            const int64_t region_ns = sim_cpu_intraop_oversub_ns(b->hw, &b->t, b->ranks, threads, sg->cpu_numel);
            int un = sim__host_pass(u, "unscale_host", g, c, 8.0, STEP_PH_UNSCALE, 0);
            sim__dep(u, host, un);
            un = region_wait(u, "unscale_region_wait", g, un, region_ns, STEP_PH_UNSCALE);
            /* DeepSpeedCPUAdam's call over the sub-group: its tiles' fork-join regions wait for
               their last thread when unbound teams oversubscribe the cores */
            int ad = sim__cpu_adam(u, "cpu_adam", g, c, sim_cpu_oversub_ns(b->hw, &b->t, b->ranks, sg->cpu_numel));
            sim__dep(u, un, ad);
            if (param_host) {   /* copy_(fp32 host -> 16-bit pinned host): a host cast, nothing else */
                int ca = sim__host_cast(u, "param_writeback_cast", g, c, 4.0 + dtype, threads, STEP_PH_PARAM_CAST, 0);
                sim__dep(u, ad, ca);
                if (dr->adam_stream_sync)
                    sim__dep(u, stream, ca);   /* SynchronizeStreams after the sub-group's Adam */
                host = region_wait(u, "param_cast_region_wait", g, ca, region_ns, STEP_PH_PARAM_CAST);
            } else {
                /* copy_(fp32 host -> 16-bit GPU), blocking: src.to(16-bit) on the host into a fresh
                 * pageable temporary (first touched by the intra-op threads that cast into it),
                 * then a synchronous pageable H2D from it */
                int fa = -1;
                if (sg->cpu_numel * dtype >= SIM_FRESH_BYTES) {
                    fa = sim__host_fault(u, "param_temp_fault", g, c * dtype, threads, STEP_PH_PAGE_FAULT);
                    sim__dep(u, ad, fa);
                }
                int ca = sim__host_cast(u, "param_cast_host", g, c, 4.0 + dtype, threads, STEP_PH_PARAM_CAST, 0);
                sim__dep(u, ad, ca);
                sim__dep(u, fa, ca);
                if (dr->adam_stream_sync)
                    sim__dep(u, stream, ca);   /* SynchronizeStreams after the sub-group's Adam */
                ca = region_wait(u, "param_cast_region_wait", g, ca, region_ns, STEP_PH_PARAM_CAST);
                int h = sim__host_copy(u, "param_h2d", g, true, false, c * dtype, STEP_PH_PARAM_H2D,
                                  sg->cpu_numel * dtype, 0);
                sim__set_latency(u, h, sync_ns);
                sim__dep(u, ca, h);
                sim__dep(u, stream, h);   /* queued on the current stream behind the launched kernels */
                host = stream = h;
            }
        }
        int64_t n = sg->numel - sg->cpu_numel;
        if (n > 0) {
            int un = sim__gpu_pass(u, "unscale", g, (double)n, 8.0, STEP_PH_UNSCALE, SIM_TR_COMPUTE);
            sim__dep(u, host, un);
            sim__dep(u, stream, un);
            int ad = sim__gpu_adam(u, "gpu_adam", g, (double)n);
            sim__dep(u, un, ad);
            stream = ad;
            if (param_host) {
                param_writeback_gpu(u, g, n, &host, &stream);
            } else {
                int ca = sim__gpu_pass(u, "param_cast", g, (double)n, 4.0 + dtype, STEP_PH_PARAM_CAST, SIM_TR_COMPUTE);
                sim__dep(u, ad, ca);
                stream = ca;
            }
        }
    }
}
