/* sim/step_overlap.c — the simulator's `overlap` schedule: ratiolab's optimizer step (the GPU
 * share at once, the CPU share streamed in plan/step.h's chunks) and its overflow check. The
 * executor's mirror is exec/step_overlap.c. */
#include "sim/step.h"
#include "sim/step_build.h"

/* ratiolab's overlap schedule on rank g after `ready`: GPU Adam on the GPU share at once; the CPU
 * share in chunks through two pinned buffers: D2H (fp32 gradient), CPU Adam, H2D (16-bit
 * parameter). */
void sim__overlap_optimizer(struct builder *u, int g, int ready)
{
    const struct plan *p = u->b->p;
    int dtype = plan_dtype_bytes(p->zero.dtype);
    if (p->gpu_numel > 0) {
        int c = sim__gpu_adam(u, "gpu_adam", g, (double)p->gpu_numel);
        sim__dep(u, ready, c);
    }
    int64_t cpu = p->cpu_numel;
    if (cpu <= 0)
        return;
    int64_t nc = step_chunk_count(cpu, p->exec_chunk_numel);
    int pd = -1, pa = -1, ppa = -1, ph = -1;
    for (int64_t c = 0; c < nc; c++) {
        int64_t first, n;
        step_chunk_range(cpu, p->exec_chunk_numel, c, &first, &n);
        int d = sim__host_copy(u, "grad_d2h", g, false, true, (double)n * 4.0, STEP_PH_GRAD_D2H, n * 4, 1);
        sim__dep(u, ready, d);
        sim__dep(u, pd, d);
        sim__dep(u, ppa, d);   /* its buffer is free once CPU Adam of chunk c - 2 is done */
        int ad = sim__cpu_adam(u, "cpu_adam", g, (double)n, 0);   /* ratiolab's executor: its own threads */
        sim__dep(u, d, ad);
        sim__dep(u, pa, ad);
        int h = sim__host_copy(u, "param_h2d", g, true, true, (double)n * dtype, STEP_PH_PARAM_H2D, n * dtype, 1);
        sim__dep(u, ad, h);
        sim__dep(u, ph, h);
        pd = d;
        ppa = pa;
        pa = ad;
        ph = h;
    }
}

/* The executor's overflow check in the overlap schedule (exec/step_overlap.c ex__overlap_scan,
 * every dtype) on rank g after `ready`: the device share's fp32 gradients scanned on the GPU (4 bytes of HBM per
 * element; a launch, then the count's copy back and a synchronize), then the host share's on the
 * run's host threads, vectorized (4 bytes of DRAM per element, and with a profile that has a
 * one-thread memcpy rate, each thread at most that many bytes per second: a thread reads at least
 * as fast as it copies), then with more than one rank the count's maximum over the world (one
 * small collective). Returns the task the optimizer starts after. Its own function, so that
 * overlap_optimizer stays the pipeline it was. */
int sim__overlap_overflow_check(struct builder *u, int g, int ready)
{
    struct sim__step *b = u->b;
    const struct plan *p = b->p;
    const struct hw_profile *hw = b->hw;
    int last = ready;
    if (p->gpu_numel > 0) {
        int d = sim__gpu_pass(u, "overflow_scan_device", g, (double)p->gpu_numel, 4.0, STEP_PH_OVERFLOW_CHECK,
                         SIM_TR_COMPUTE);
        sim__set_latency(u, d, sim__us_to_ns(hw->lat_launch_us + hw->lat_copy_us));
        sim__dep(u, last, d);
        last = d;
    }
    if (p->cpu_numel > 0) {
        int k = sim__socket_of(b, g), ranks_here = 0;
        for (int i = 0; i < b->ranks; i++)
            ranks_here += sim__socket_of(b, i) == k;
        double threads = (double)hw->socket[k].cores / (ranks_here ? ranks_here : 1);
        double cap = hw->host_memcpy_gbps_per_thread > 0 ? threads * hw->host_memcpy_gbps_per_thread * 1e9 / 4.0 : 0;
        int res[SIM_MAX_RES], n = 0;
        double w[SIM_MAX_RES];
        n = sim__host_dram(b, g, 4.0, res, w, n);
        int h = sim__add_task(u, "overflow_scan_host", g, SIM_TR_HOST, STEP_PH_OVERFLOW_CHECK, (double)p->cpu_numel, 0,
                         cap, n, res, w, (union sim_task_size){.elements = p->cpu_numel});
        sim__dep(u, last, h);
        last = h;
    }
    if (p->layout.world > 1) {
        int m = sim__host_delay(u, "overflow_max", g,
                           sim__us_to_ns(p->layout.nodes > 1 ? hw->lat_coll_inter_us : hw->lat_coll_intra_us),
                           STEP_PH_OVERFLOW_CHECK);
        sim__dep(u, last, m);
        last = m;
    }
    return last;
}
