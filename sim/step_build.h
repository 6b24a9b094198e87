/* sim/step_build.h — the task-graph builder of the step model, shared by the machinery
 * (sim/step.c: blocks, resources, forward, backward, flushes) and the two optimizer schedules
 * (sim/step_ds.c: DeepSpeed's step per release; sim/step_overlap.c: ratiolab's overlap schedule).
 * Each schedule adds its tasks through the constructors below (sim/step_task.c), which put a task
 * on its resources (links, DRAM, cores, SMs) and its track; nothing here runs the graph. Internal
 * to sim/. */
#ifndef RL_SIM_STEP_BUILD_H
#define RL_SIM_STEP_BUILD_H

#include <math.h>

#include "plan/ds_rules.h"
#include "sim/step_impl.h"

/* A host temporary of at least this many bytes is fresh memory on every allocation: PyTorch's CPU
 * allocator takes it with posix_memalign (c10/core/impl/alloc_cpu.cpp), and glibc serves any block
 * above its largest mmap threshold, DEFAULT_MMAP_THRESHOLD_MAX = 4 x 1024 x 1024 x sizeof(long) =
 * 32 MiB on 64-bit (malloc/malloc.c), with its own mmap and returns it with munmap on free, so
 * its pages are faulted in and zeroed again at first touch. Smaller temporaries are taken as
 * reused from the heap (no first-touch cost): glibc's dynamic threshold rises to the size of a
 * freed mmapped block, so repeated same-size blocks below 32 MiB stay in the heap. */
#define SIM_FRESH_BYTES (INT64_C(32) << 20)

/* ---- the model, reduced to blocks --------------------------------------------------------------
 * Block 0 holds the parameters before the first transformer layer (embeddings), blocks 1..L the
 * layers of this stage, block L+1 what follows (final norm, untied output layer). */
struct blocks {
    int n;                 /* L + 2 */
    int64_t *full_numel;   /* per block: elements on this TP rank before ZeRO partitioning */
    int64_t *part_numel;   /* per block: this rank's ZeRO-3 partition */
    int64_t *cpu_numel;    /* per block: of which updated on the CPU */
    int *n_tensors;        /* per block: parameter tensors */
    int *cpu_tensors;      /* per block: of which with elements updated on the CPU */
    int64_t *cpu_fresh_numel;  /* per block: CPU elements of tensors whose 16-bit temporary in a
                              blocking copy is at least SIM_FRESH_BYTES (a fresh mmap each call) */
    double *fwd_flops;     /* per block: forward FLOPs per micro-batch */
    int64_t *ahead_numel;  /* per block: what DeepSpeed's prefetch gathers ahead, its first parameters
                              until min(prefetch bucket, max live) elements (at least one whole) */
    int64_t max_layer_numel;   /* largest full_numel over blocks */
};

/* The graph being built: the run, the model's blocks and the first error. */
struct builder {
    struct sim__step *b;   /* the run being built */
    struct blocks k;       /* the model cut into blocks */
    int err;               /* first error while adding tasks (sticky) */
};

#define SIM__NO_SIZE ((union sim_task_size){0})   /* a task that moves and computes nothing */

/* The last task of each stream of a rank, so the next task on that stream follows it. */
struct streams {
    int compute;   /* compute stream: forward, backward, TP all-reduce */
    int gather;    /* NCCL all-gather stream */
    int reduce;    /* NCCL reduce-scatter stream (DeepSpeed: also the gradient partitioning) */
    int copy;      /* gradient copies during backward */
    int host;      /* the host thread's last blocking operation: nothing is issued before it ends */
};

/* What one bucket flush partitions: the blocks' elements since the last flush. */
struct flush {
    int64_t full;          /* elements of the bucket (full gradients) */
    int64_t part;          /* this rank's partition of them */
    int64_t cpu;           /* of which in CPU sub-groups */
    int64_t tensors;       /* parameters in the bucket */
    int64_t cpu_tensors;   /* of which with CPU elements */
    int64_t cpu_fresh;     /* CPU elements whose blocking copy's host temporary is fresh memory */
};

/* Microseconds (a profile's latencies) as integer nanoseconds, rounded to nearest. */
static inline int64_t sim__us_to_ns(double us) { return (int64_t)llround(us * 1000.0); }

/* The socket of rank g's GPU (through its PCIe switch). */
static inline int sim__socket_of(const struct sim__step *b, int g)
{
    return b->hw->sw[b->hw->gpu_switch[b->gpu[g]]].socket;
}

/* A blocking copy per parameter: each waits for its stream and returns to the host. Sets the
 * task's latency (task < 0: nothing). */
static inline void sim__set_latency(struct builder *u, int task, int64_t ns)
{
    if (task >= 0)
        u->b->g.task[task].latency_ns = ns;
}

/* An emulated device (gpu.emulated: ratiolab's cpu backend) has no memory or cores of its own: its
 * memory traffic is the socket's DRAM and its work runs on the socket's cores, shared with the
 * host's share and with the other devices (its kernels on its stream threads, copies on a copy
 * thread). Its collectives run on the rank's thread once the stream that feeds them is done, and
 * the block's compute waits for them: nothing is gathered ahead or reduced behind the compute. */
static inline bool sim__emulated(const struct sim__step *b) { return b->hw->gpu_emulated != 0; }

/* Threads of one emulated device's kernels. */
static inline int sim__emulated_threads(const struct sim__step *b)
{
    return b->hw->gpu_emulated_cores > 0 ? b->hw->gpu_emulated_cores : 1;
}

/* ---- task constructors (step_task.c); each returns the task's index, or a negative RL_E* (sticky
 * in u->err) ---- */
int sim__add_task(struct builder *u, const char *name, int rank, int track, int phase, double work,
                    int64_t lat_ns, double cap, int n, const int *res, const double *w, union sim_task_size size);
void sim__dep(struct builder *u, int from, int to);
/* A host copy of `bytes` for rank g: GPU link, switch uplink, DRAM of the host buffer's socket
 * (pageable: twice, the driver's staging copy, and capped at the profile's pageable rate), spread
 * over all sockets with numa_interleave. `calls` copies issued one after another (per parameter)
 * add their latencies. */
int sim__host_copy(struct builder *u, const char *name, int g, bool h2d, bool pinned, double bytes, int phase,
                     int64_t copied_bytes, int64_t calls);
/* The CPU optimizer over `elems` for rank g: the socket's cores (the rank's share of them as its
 * own cap, at the chosen optimizer's per-core rate) and DRAM at dram_bytes_per_element. The cores
 * resource counts DeepSpeed-Adam elements, so a slower optimizer weighs more per element. */
int sim__cpu_adam(struct builder *u, const char *name, int g, double elems, int64_t oversub_ns);
/* A pass of the rank's host thread over `elems` elements moving `bytes_per_elem` bytes of DRAM
 * each (a cast, the unscale multiply, the inf/nan scan): DRAM-bound, on the host thread's track.
 * `calls` per-parameter operations add a kernel-launch-sized host overhead each. */
int sim__host_pass(struct builder *u, const char *name, int g, double elems, double bytes_per_elem, int phase,
                     int64_t calls);
/* PyTorch's intra-op threads of one rank: sim_train.intraop_threads, or PyTorch's default, the
 * node's physical cores (at::get_num_threads() without OMP_NUM_THREADS; DeepSpeed's launcher sets
 * it only with --bind_cores_to_rank). */
int sim__intraop_threads(const struct sim__step *b);
/* Fresh pageable memory first touched by `threads` threads of rank g: `bytes` of page faults and
 * zeroing beyond the write itself, at the profile's per-thread rate times the threads (their own
 * cap), on the socket's fault resource (its all-threads rate, shared by the ranks there) and its
 * DRAM (the kernel zeroes every page once). On the host thread's track, in `phase`. */
int sim__host_fault(struct builder *u, const char *name, int g, double bytes, int threads, int phase);
/* PyTorch's CPU dtype cast (the copy kernel, parallel over the intra-op threads) of `elems`
 * elements on rank g: `threads` threads at the profile's per-thread cast rate (their cap), on the
 * socket's cores (the cores resource counts CPU-Adam elements, so a cast element weighs
 * adam rate / cast rate: the ranks' casts and CPU Adams share the cores) and DRAM at
 * `bytes_per_elem`. `calls` per-parameter calls add a launch-sized host overhead each. */
int sim__host_cast(struct builder *u, const char *name, int g, double elems, double bytes_per_elem, int threads,
                     int phase, int64_t calls);
/* A streaming GPU kernel over `elems` elements moving `bytes_per_elem` bytes of HBM each. */
int sim__gpu_pass(struct builder *u, const char *name, int g, double elems, double bytes_per_elem, int phase,
                    int track);
/* A pure host delay (syncs, tiny collectives waited on): no resources, spans its latency. */
int sim__host_delay(struct builder *u, const char *name, int g, int64_t ns, int phase);
/* GPU Adam over `elems`: HBM-bound, 30 bytes per element (read fp32 p, g, m, v; write p, m, v and
 * the 16-bit parameter). */
int sim__gpu_adam(struct builder *u, const char *name, int g, double elems);
/* The DRAM a rank's host buffers live on: its socket's, or both halves with numa_interleave (the
 * inter-socket link then carries half the traffic). Appends to res/w; returns the count. */
int sim__host_dram(const struct sim__step *b, int g, double bytes_per_unit, int *res, double *w, int n);
/* For an emulated device's activity on rank g: the socket's DRAM at `bytes_per_unit` and the
 * socket's cores, `threads` of them while it runs at its own full rate `rate` units/s (the cores
 * resource counts CPU-Adam elements per second per core). Appends to res/w; returns the count. */
int sim__emulated_share(const struct sim__step *b, int g, double bytes_per_unit, int threads, double rate,
                        int *res, double *w, int n);
/* Records a change of `delta` bytes of rank memory at the end of `task` for the trace's counters
 * (only when the run records links; a failed allocation sets u->err). */
void sim__mem_event(struct builder *u, int task, int64_t delta);

/* ---- the schedules: each adds rank g's optimizer step after task `ready` ---- */
/* DeepSpeed's partition_grads for one flushed bucket on rank g (step_ds.c). */
void sim__ds_partition_grads(struct builder *u, struct streams *st, const struct plan_ds_rules *dr, int g,
                             const struct flush *fl, int rs, bool boundary);
/* DeepSpeed's optimizer step of release dr (step_ds.c). */
void sim__ds_optimizer(struct builder *u, const struct plan_ds_rules *dr, int g, int ready);
/* The overlap schedule's overflow check (step_overlap.c); returns the task the optimizer starts after. */
int sim__overlap_overflow_check(struct builder *u, int g, int ready);
/* ratiolab's overlap schedule (step_overlap.c). */
void sim__overlap_optimizer(struct builder *u, int g, int ready);

#endif
