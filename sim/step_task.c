/* sim/step_task.c — the task constructors of the step's graph (sim/step_build.h): each puts one
 * task on its resources (links, DRAM, cores, SMs, HBM) and its track, with its latency and its own
 * rate cap. Shared by the machinery (sim/step.c) and the schedules (sim/step_ds.c,
 * sim/step_overlap.c); calls neither, so no two of them call each other. Nothing here runs the
 * graph. */
#include "sim/step.h"
#include "sim/step_build.h"

int sim__add_task(struct builder *u, const char *name, int rank, int track, int phase, double work,
                    int64_t lat_ns, double cap, int n, const int *res, const double *w, union sim_task_size size)
{
    struct sim_task t = {.name = name, .track = track, .phase = phase, .rank = rank, .latency_ns = lat_ns,
                         .size = size};
    t.req.work = work;
    t.req.rate_cap = cap;
    t.req.n_res = n;
    for (int i = 0; i < n; i++) {
        t.req.res[i] = res[i];
        t.req.weight[i] = w[i];
    }
    int id = sim_graph_add(&u->b->g, &t);
    if (id < 0 && !u->err)
        u->err = id;
    return id;
}

void sim__dep(struct builder *u, int from, int to)
{
    if (to < 0 || from < 0)
        return;
    int rc = sim_graph_dep(&u->b->g, from, to);
    if (rc && !u->err)
        u->err = rc;
}

/* A change of the rank's memory at `task`'s end, recorded for the trace's counters. */
void sim__mem_event(struct builder *u, int task, int64_t delta)
{
    struct sim__step *b = u->b;
    if (!b->record_links || task < 0 || delta == 0)
        return;
    if (rl_grow(&b->mem, &b->cap_mem, sizeof *b->mem, b->n_mem + 1, 1024)) {
        u->err = RL_ENOMEM;
        return;
    }
    b->mem[b->n_mem++] = (struct sim__mem_ev){task, delta};
}

/* The DRAM a rank's host buffers live on: its socket's, or both halves with numa_interleave (the
 * inter-socket link then carries half the traffic). Appends to res/w; returns the count. */
int sim__host_dram(const struct sim__step *b, int g, double bytes_per_unit, int *res, double *w, int n)
{
    if (b->t.numa_interleave && b->hw->n_sockets == 2 && b->r_isl >= 0) {
        res[n] = b->r_dram[0], w[n++] = bytes_per_unit / 2;
        res[n] = b->r_dram[1], w[n++] = bytes_per_unit / 2;
        res[n] = b->r_isl, w[n++] = bytes_per_unit / 2;
    } else {
        res[n] = b->r_dram[sim__socket_of(b, g)], w[n++] = bytes_per_unit;
    }
    return n;
}

/* For an emulated device's activity on rank g: the socket's DRAM at `bytes_per_unit` and the
 * socket's cores, `threads` of them while it runs at its own full rate `rate` units/s (the cores
 * resource counts CPU-Adam elements per second per core). Appends to res/w; returns the count. */
int sim__emulated_share(const struct sim__step *b, int g, double bytes_per_unit, int threads, double rate,
                        int *res, double *w, int n)
{
    int k = sim__socket_of(b, g);
    if (bytes_per_unit > 0)
        res[n] = b->r_dram[k], w[n++] = bytes_per_unit;
    if (rate > 0 && threads > 0)
        res[n] = b->r_cores[k], w[n++] = threads * b->hw->cpu_adam_elems_per_core / rate;
    return n;
}

/* A host copy of `bytes` for rank g: GPU link, switch uplink, DRAM of the host buffer's socket
 * (pageable: twice, the driver's staging copy, and capped at the profile's pageable rate), spread
 * over all sockets with numa_interleave. `calls` copies issued one after another (per parameter)
 * add their latencies. */
int sim__host_copy(struct builder *u, const char *name, int g, bool h2d, bool pinned, double bytes, int phase,
                     int64_t copied_bytes, int64_t calls)
{
    struct sim__step *b = u->b;
    const struct hw_profile *hw = b->hw;
    int res[SIM_MAX_RES], n = 0;
    double w[SIM_MAX_RES];
    int sw = hw->gpu_switch[b->gpu[g]];
    res[n] = h2d ? b->r_h2d[g] : b->r_d2h[g], w[n++] = 1;
    if (hw->n_switches > 0)
        res[n] = h2d ? b->r_up_h2d[sw] : b->r_up_d2h[sw], w[n++] = 1;
    if (sim__emulated(b))   /* a memcpy on the copy thread: reads and writes the socket's DRAM, one core */
        n = sim__emulated_share(b, g, 2.0, 1, (h2d ? hw->h2d_pinned_gbps : hw->d2h_pinned_gbps) * 1e9, res, w, n);
    else
        n = sim__host_dram(b, g, pinned ? 1.0 : 2.0, res, w, n);
    double cap = pinned ? 0 : sim_hw_pageable_gbps(hw, h2d) * 1e9;   /* the driver's bounce buffer */
    int64_t lat = sim__us_to_ns(hw->lat_copy_us) * (calls > 0 ? calls : 1);
    return sim__add_task(u, name, g, h2d ? SIM_TR_H2D : SIM_TR_D2H, phase, bytes, lat, cap, n, res, w,
                    (union sim_task_size){.bytes = copied_bytes});
}

/* The CPU optimizer over `elems` for rank g: the socket's cores (the rank's share of them as its
 * own cap, at the chosen optimizer's per-core rate) and DRAM at dram_bytes_per_element. The cores
 * resource counts DeepSpeed-Adam elements, so a slower optimizer weighs more per element. */
int sim__cpu_adam(struct builder *u, const char *name, int g, double elems, int64_t oversub_ns)
{
    struct sim__step *b = u->b;
    const struct hw_profile *hw = b->hw;
    int k = sim__socket_of(b, g);
    int ranks_here = 0;
    for (int i = 0; i < b->ranks; i++)
        ranks_here += sim__socket_of(b, i) == k;
    /* bound: the launcher's cores // ranks; unbound: the fair share of the time-sliced teams */
    double cores = sim_cpu_rank_cores(hw, &b->t, b->ranks, hw->socket[k].cores, ranks_here);
    double rate = b->t.cpu_optimizer == SIM_CPU_OPT_TORCH ? hw->torch_adam_elems_per_core : hw->cpu_adam_elems_per_core;
    double cap = cores * rate;
    if (oversub_ns > 0 && elems > 0)   /* the straggling regions stretch the call: its rate falls */
        cap = elems / (elems / cap + (double)oversub_ns * 1e-9);
    int res[SIM_MAX_RES], n = 0;
    double w[SIM_MAX_RES];
    res[n] = b->r_cores[k], w[n++] = hw->cpu_adam_elems_per_core / rate;
    n = sim__host_dram(b, g, hw->cpu_adam_dram_bytes, res, w, n);
    return sim__add_task(u, name, g, SIM_TR_CPU_ADAM, STEP_PH_CPU_ADAM, elems, 0, cap, n, res, w,
                    (union sim_task_size){.elements = (int64_t)elems});
}

/* A pass of the rank's host thread over `elems` elements moving `bytes_per_elem` bytes of DRAM
 * each (a cast, the unscale multiply, the inf/nan scan): DRAM-bound, on the host thread's track.
 * `calls` per-parameter operations add a kernel-launch-sized host overhead each. */
int sim__host_pass(struct builder *u, const char *name, int g, double elems, double bytes_per_elem, int phase,
                     int64_t calls)
{
    struct sim__step *b = u->b;
    int res[SIM_MAX_RES], n = 0;
    double w[SIM_MAX_RES];
    n = sim__host_dram(b, g, bytes_per_elem, res, w, n);
    int64_t lat = sim__us_to_ns(b->hw->lat_launch_us) * (calls > 0 ? calls : 0);
    return sim__add_task(u, name, g, SIM_TR_HOST, phase, elems, lat, 0, n, res, w,
                    (union sim_task_size){.elements = (int64_t)elems});
}

/* PyTorch's intra-op threads of one rank: sim_train.intraop_threads, or PyTorch's default, the
 * node's physical cores (at::get_num_threads() without OMP_NUM_THREADS; DeepSpeed's launcher sets
 * it only with --bind_cores_to_rank). */
int sim__intraop_threads(const struct sim__step *b)
{
    if (b->t.intraop_threads > 0)
        return b->t.intraop_threads;
    return sim_cpu_team_threads(b->hw, &b->t, b->ranks);   /* OMP_NUM_THREADS = cores // ranks when bound */
}

/* Fresh pageable memory first touched by `threads` threads of rank g: `bytes` of page faults and
 * zeroing beyond the write itself, at the profile's per-thread rate times the threads (their own
 * cap), on the socket's fault resource (its all-threads rate, shared by the ranks there) and its
 * DRAM (the kernel zeroes every page once). On the host thread's track, in `phase`. */
int sim__host_fault(struct builder *u, const char *name, int g, double bytes, int threads, int phase)
{
    struct sim__step *b = u->b;
    int res[SIM_MAX_RES], n = 0;
    double w[SIM_MAX_RES];
    res[n] = b->r_fault[sim__socket_of(b, g)], w[n++] = 1;
    n = sim__host_dram(b, g, 1.0, res, w, n);
    double cap = (threads > 0 ? threads : 1) * b->hw->host_fault_gbps_per_thread * 1e9;
    return sim__add_task(u, name, g, SIM_TR_HOST, phase, bytes, 0, cap, n, res, w,
                    (union sim_task_size){.bytes = (int64_t)bytes});
}

/* PyTorch's CPU dtype cast (the copy kernel, parallel over the intra-op threads) of `elems`
 * elements on rank g: `threads` threads at the profile's per-thread cast rate (their cap), on the
 * socket's cores (the cores resource counts CPU-Adam elements, so a cast element weighs
 * adam rate / cast rate: the ranks' casts and CPU Adams share the cores) and DRAM at
 * `bytes_per_elem`. `calls` per-parameter calls add a launch-sized host overhead each. */
int sim__host_cast(struct builder *u, const char *name, int g, double elems, double bytes_per_elem, int threads,
                     int phase, int64_t calls)
{
    struct sim__step *b = u->b;
    const struct hw_profile *hw = b->hw;
    int res[SIM_MAX_RES], n = 0;
    double w[SIM_MAX_RES];
    res[n] = b->r_cores[sim__socket_of(b, g)], w[n++] = hw->cpu_adam_elems_per_core / hw->host_cast_elems_per_thread;
    n = sim__host_dram(b, g, bytes_per_elem, res, w, n);
    double cap = (threads > 0 ? threads : 1) * hw->host_cast_elems_per_thread;
    int64_t lat = sim__us_to_ns(hw->lat_launch_us) * (calls > 0 ? calls : 0);
    return sim__add_task(u, name, g, SIM_TR_HOST, phase, elems, lat, cap, n, res, w,
                    (union sim_task_size){.elements = (int64_t)elems});
}

/* A streaming GPU kernel over `elems` elements moving `bytes_per_elem` bytes of HBM each. */
int sim__gpu_pass(struct builder *u, const char *name, int g, double elems, double bytes_per_elem, int phase,
                    int track)
{
    struct sim__step *b = u->b;
    int res[SIM_MAX_RES] = {b->r_hbm[g]}, n = 1;
    double w[SIM_MAX_RES] = {bytes_per_elem};
    if (sim__emulated(b))   /* the device's own rate (hbm) on the socket's DRAM and cores */
        n = sim__emulated_share(b, g, bytes_per_elem, sim__emulated_threads(b),
                                b->f.res[b->r_hbm[g]].capacity / bytes_per_elem, res, w, n);
    return sim__add_task(u, name, g, track, phase, elems, sim__us_to_ns(b->hw->lat_launch_us), 0, n, res, w,
                    (union sim_task_size){.elements = (int64_t)elems});
}

/* A pure host delay (syncs, tiny collectives waited on): no resources, spans its latency. */
int sim__host_delay(struct builder *u, const char *name, int g, int64_t ns, int phase)
{
    return sim__add_task(u, name, g, SIM_TR_HOST, phase, 0, ns, 0, 0, NULL, NULL, SIM__NO_SIZE);
}

/* GPU Adam over `elems`: HBM-bound, 30 bytes per element (read fp32 p, g, m, v; write p, m, v and
 * the 16-bit parameter). */
int sim__gpu_adam(struct builder *u, const char *name, int g, double elems)
{
    return sim__gpu_pass(u, name, g, elems, 30.0, STEP_PH_GPU_ADAM, SIM_TR_COMPUTE);
}
