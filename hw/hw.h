/* hw/hw.h — the hardware profile: one node's sockets, PCIe switches, GPUs, links and the costs the
 * step models need (catalog/hardware/<name>.json, format: sim/README.md), and its one schema: the
 * key table (path, kind, field, bounds) that the reader (hw_parse, under sim_hw_load) and every
 * writer (hw_writer, used by calib/) go through. Every number in a profile carries its source in
 * the file's "sources" object; the reader refuses a profile with an unsourced number, an unknown
 * key or a value out of range, naming the JSON path. */
#ifndef RL_HW_HW_H
#define RL_HW_HW_H

#include <jansson.h>   /* json_t: the writer's tree */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rl.h"

#define HW_MAX_SOCKETS 8
#define HW_MAX_SWITCHES 16
#define HW_MAX_GPUS 16

struct hw_socket {
    int cores;                     /* physical cores */
    double dram_gbps;              /* sustained DRAM bandwidth, GB/s (1e9 B/s), both directions */
};

struct hw_switch {
    int socket;                    /* the socket its uplink attaches to */
    double uplink_gbps;            /* uplink bandwidth per direction, GB/s */
    int n_gpus;                    /* GPUs behind it */
    int gpus[HW_MAX_GPUS];         /* their indices in the node */
};

/* Defaults of the host-memory terms a profile may leave out, estimates whose origin sim/README.md
 * "Host memory" gives: 4 GiB per rank for a training process beyond its model states (a CUDA
 * PyTorch process peaks near 2 GiB by PyTorch issue #113326; NCCL, DeepSpeed and data-loader
 * workers on top; 0.52 GiB measured without CUDA as a lower bound), 8 GiB for a bare-metal OS
 * (Kubernetes reserves more on large nodes). */
#define HW_HOST_BASELINE (INT64_C(4) << 30)
#define HW_OS_RESERVE (INT64_C(8) << 30)

struct hw_profile {
    char name[64];                 /* profile name ("dgx1-v100") */
    char gpu_model[96];            /* "V100-SXM2-16GB" (with --gpu-mem: what is modelled, e.g.
                                      "V100-SXM2-16GB with 32.00 GiB") */
    char cpu_model[96];            /* host CPUs, e.g. "2 x Xeon Gold 6126" (optional key; "" unknown) */
    int bf16_tensor_cores;         /* 1: the GPU has bf16 tensor cores (optional key, default 1) */
    /* node */
    int gpus;                      /* GPUs per node */
    int64_t host_mem_bytes;        /* host DRAM per node */
    int64_t host_baseline_bytes;   /* host memory of one rank's process before its model states
                                      (PyTorch, CUDA runtime, NCCL, DeepSpeed, data loader); optional
                                      key node.host_baseline_bytes_per_rank, default HW_HOST_BASELINE */
    int64_t os_reserve_bytes;      /* host memory the OS and the node's services keep; optional key
                                      node.os_reserve_bytes, default HW_OS_RESERVE */
    int n_sockets;                 /* entries of socket[] (node.sockets) */
    struct hw_socket socket[HW_MAX_SOCKETS];   /* node.sockets, in file order */
    double inter_socket_gbps;      /* socket-to-socket link per direction, GB/s */
    int n_switches;                /* entries of sw[] (node.pcie_switches) */
    struct hw_switch sw[HW_MAX_SWITCHES];      /* node.pcie_switches, in file order */
    int gpu_switch[HW_MAX_GPUS];   /* derived: the switch of each GPU */
    /* GPU */
    int64_t gpu_mem_bytes;         /* device memory */
    double hbm_gbps;               /* peak HBM bandwidth, GB/s */
    double hbm_efficiency;         /* achieved fraction for streaming kernels (GPU Adam) */
    double tensor_tflops;          /* dense bf16/fp16 tensor-core peak, TFLOP/s */
    double tensor_efficiency;      /* achieved fraction for transformer GEMMs */
    double fp32_tflops;            /* fp32 peak, TFLOP/s */
    double fp32_efficiency;        /* achieved fraction */
    double gemm_efficiency;        /* large-GEMM fraction of tensor_tflops for the per-shape model
                                      (sim/gemm.h; optional key gpu.gemm_efficiency, 0: off, every
                                      GEMM at tensor_efficiency) */
    int gpu_sms;                   /* streaming multiprocessors (optional key gpu.sms; 0: unknown) */
    double gemm_fixed_us;          /* time per GEMM kernel beyond its tiles, us (optional key
                                      gpu.gemm_fixed_us, default 0) */
    double h2d_pinned_gbps;        /* per GPU link, pinned host memory, GB/s */
    double d2h_pinned_gbps;
    double h2d_pageable_gbps;      /* same from pageable host memory */
    double d2h_pageable_gbps;
    int64_t context_bytes;         /* CUDA context (driver, kernels, cuBLAS workspace) per GPU */
    double allocator_overhead;     /* caching-allocator fragmentation: reserve above the transient
                                      allocations (activations, gathered parameters), a fraction */
    int64_t nccl_comm_bytes;       /* NCCL buffers of one communicator on one GPU (optional key;
                                      default 2 x 16 channels x 4 MiB NCCL_BUFFSIZE) */
    /* collectives (nccl-tests bus bandwidth inside a node) */
    double allgather_busbw_gbps;   /* all-gather */
    double reduce_scatter_busbw_gbps; /* reduce-scatter */
    double allreduce_busbw_gbps;   /* all-reduce */
    /* network between nodes */
    double net_gbps;               /* per node, all NICs together, per direction, GB/s */
    /* latencies, microseconds */
    double lat_launch_us;          /* GPU kernel launch */
    double lat_copy_us;            /* one cudaMemcpyAsync over PCIe */
    double lat_coll_intra_us;      /* one NCCL collective inside a node */
    double lat_coll_inter_us;      /* one NCCL collective across nodes: its launch and base
                                      latency; the algorithm's steps add theirs (sim/collective.h) */
    /* NCCL's collectives across nodes as algorithms (sim/collective.h; optional keys, defaults
       below; a default is named in the warning only when the layout spans nodes) */
    double net_inter_busbw_gbps;   /* NCCL bus bandwidth of a collective spanning nodes, per node
                                      (nccl-tests busbw), GB/s: the "network" resource's capacity
                                      (optional key network.inter_busbw_gbps; 0, its default: the
                                      line rate net_gbps; read it with sim_coll_busbw_gbps) */
    double lat_ring_step_intra_us; /* one ring step inside a node, us (latency_us.nccl_ring_step_intra) */
    double lat_ring_step_inter_us; /* one ring step across nodes, us (latency_us.nccl_ring_step_inter) */
    double lat_tree_step_intra_us; /* one tree step inside a node, us (latency_us.nccl_tree_step_intra) */
    double lat_tree_step_inter_us; /* one tree level across nodes, us (latency_us.nccl_tree_step_inter) */
    char coll_defaulted[256];      /* those five keys left at their defaults, comma-separated JSON
                                      paths ("" none) */
    /* CPU Adam */
    double cpu_adam_elems_per_core;/* elements per second per core when not DRAM-bound */
    double cpu_adam_dram_bytes;    /* DRAM bytes moved per element updated */
    double torch_adam_elems_per_core;  /* torch.optim.AdamW on the CPU, elements per second per
                                      core (optional key; default a sixth of DeepSpeed's) */
    /* emulated device (ratiolab's cpu backend; optional keys, default 0 = a real GPU) */
    int gpu_emulated;              /* 1: device memory is the host's DRAM and device kernels run
                                      on host cores, so they contend with the host share */
    int gpu_emulated_cores;        /* host cores each emulated device's kernels use */
    double gpu_emulated_grad_per_s;/* the executor's synthetic gradient shares on one emulated
                                      device's compute thread, elements/s (0: not charged) */
    /* the host's costs of PyTorch's copies (optional keys "host.*"; absent: the defaults below,
       sim/README.md "Host costs of PyTorch's copies") */
    double host_fault_gbps_per_thread;   /* first touch of fresh pageable memory (page faults and
                                            zeroing beyond the write itself), one thread, GB/s */
    double host_fault_gbps_per_socket;   /* the same, all threads of one socket together, GB/s
                                            (0: cores x the per-thread rate) */
    double host_memcpy_gbps_per_thread;  /* memcpy between warm pageable buffers on one thread,
                                            GB/s: caps a pageable transfer, whose staging copy
                                            runs on the calling thread (0: no cap) */
    double host_cast_elems_per_thread;   /* PyTorch's CPU dtype cast (bf16/fp16 <-> fp32), elements
                                            per second per intra-op thread */
    double host_zero3_us_fwd;      /* host time of one submodule's forward under DeepSpeed ZeRO-3 (its
                                      hooks and eager dispatch) with the parameters on one rank, us
                                      (0: not modelled) */
    double host_zero3_us_bwd;      /* the same for its backward, us */
    double host_zero3_part_us_fwd; /* what the all-gather path adds to it when the parameters are
                                      partitioned over two or more ranks, us */
    double host_zero3_part_us_bwd; /* the same for the backward (all-gather and reduce-scatter paths), us */
    /* first touch per page (optional keys; sim/README.md "Host costs of PyTorch's copies"):
       host_fault_gbps_per_thread is resolved from them at load, as page / time per page */
    char host_thp_mode[64];        /* transparent huge pages mode: "always", "madvise" or "never"
                                      (optional key host.thp_mode, default "madvise") */
    int64_t host_page_bytes;       /* the page a fresh anonymous mapping gets: 2 MiB under "always",
                                      4 KiB otherwise (optional key host.page_bytes, default from the mode) */
    double host_fault_us_per_4k_page;   /* one first-touch fault of a 4 KiB page on one thread, the
                                           kernel's zeroing included, us */
    double host_fault_us_per_2m_page;   /* the same for a 2 MiB transparent huge page, us */
    bool host_fault_rate_given;    /* the profile gave host.fault_gbps_per_thread (a figure measured
                                      at host.page_bytes), not its default */
    char defaulted[2048];          /* the profile's figures that are defaults or whose source says
                                      "unverified", comma-separated JSON paths ("" none) */
    int n_sources;                 /* entries in "sources" */
};

/* Defaults of the optional host.* keys (their origin: sim/README.md "Host costs of PyTorch's
 * copies"). */
#define HW_DEFAULT_FAULT_GBPS_PER_THREAD 2.1
#define HW_DEFAULT_CAST_ELEMS_PER_THREAD 1e9
/* Defaults of ZeRO-3's host time per submodule and pass, on one rank and what two or more ranks
 * add: real DeepSpeed 0.18.9 measured on the development VM by scripts/ds_hook_cost.py (sim/README.md
 * "ZeRO-3's host time per submodule"). */
#define HW_DEFAULT_ZERO3_US_FWD 330.0
#define HW_DEFAULT_ZERO3_US_BWD 424.0
#define HW_DEFAULT_ZERO3_PART_US_FWD 36.0
#define HW_DEFAULT_ZERO3_PART_US_BWD 14.0
/* Defaults of the per-page first-touch figures (sim/README.md "Host costs of PyTorch's copies"):
 * a 4 KiB page at the 2.1 GB/s above (4096 B / 2.1 GB/s), a 2 MiB page at the 5.5 GB/s one thread
 * of the development VM first-touched 2 MiB pages at (calib/README.md, ratiolab calibrate). */
/* Defaults of the NCCL per-step latencies: NCCL's src/graph/tuning.cc (commit 01afd20a) hwLat,
 * Simple protocol (the one NCCL takes for the megabyte collectives of ZeRO-3): ring 3.4 us per
 * NVLink step and 9.6 us per network step, tree 28 and 50 us. */
#define HW_DEFAULT_RING_STEP_INTRA_US 3.4
#define HW_DEFAULT_RING_STEP_INTER_US 9.6
#define HW_DEFAULT_TREE_STEP_INTRA_US 28.0
#define HW_DEFAULT_TREE_STEP_INTER_US 50.0

#define HW_PAGE_4K INT64_C(4096)
#define HW_PAGE_2M (INT64_C(2) << 20)
#define HW_DEFAULT_FAULT_US_PER_4K_PAGE (4096.0 / 2.1e3)
#define HW_DEFAULT_FAULT_US_PER_2M_PAGE (2097152.0 / 5.5e3)

/* One key of the profile format. */
struct hw_key {
    const char *path;   /* JSON path, array members as "[]" ("node.sockets[].cores") */
    char kind;          /* 's' string, 'i' int, 'b' bytes (int64), 'd' double */
    size_t off;         /* offset of its field in struct hw_profile; HW_NO_FIELD for array members
                           and "description" (kept in no field) */
    double lo, hi;      /* allowed range, inclusive (numbers only) */
    bool array;         /* the value is an array of numbers (pcie_switches[].gpus) */
    char need;          /* 'r' required; 'o' optional (a key added after profiles were first
                           written): absent, it takes def and is noted in hw_profile.defaulted;
                           's' optional and silent: a model that is off at def (0), or a figure
                           the resolve step fills and notes; 'c' optional, noted in
                           hw_profile.coll_defaulted (the inter-node collective figures, named
                           only for a layout that spans nodes) */
    double def;         /* an optional number's default (HW_DEFAULT_LATER: worked out after the
                           fill from other keys) */
};
#define HW_NO_FIELD ((size_t)-1)
#define HW_DEFAULT_LATER (-1.0)
/* The NCCL buffers of one communicator a profile leaves out: 2 x 16 channels x 4 MiB NCCL_BUFFSIZE. */
#define HW_DEFAULT_NCCL_COMM_BYTES (2.0 * 16 * (4 << 20))

/* The table: every key a profile may hold, hw_n_keys rows. */
extern const struct hw_key hw_keys[];
extern const size_t hw_n_keys;
/* The row of `path` (array indices written "[]"), NULL when the format has no such key. */
const struct hw_key *hw_key_find(const char *path);

/* A step run on the filled profile before the "unverified" sources are noted (sim/ resolves its
 * first-touch model there); 0 or a negative RL_E* with e filled. */
typedef int hw_resolve_fn(struct hw_profile *hw, const char *what, struct rl_err *e);
/* Parses and validates profile text against the table; `what` names it in errors. Optional keys
 * take their defaults; `resolve` (may be NULL) runs after the fill. */
int hw_parse(struct hw_profile *hw, const char *text, const char *what, hw_resolve_fn *resolve,
             struct rl_err *e);
/* Appends `path` to hw->defaulted (once). */
void hw_note_default(struct hw_profile *hw, const char *path);

/* A profile being written. Every value goes through its key's row: an unknown key is an error, a
 * number is clamped to the key's range and written as the key's kind (an integer for 'i' and 'b',
 * a real for 'd'), and intermediate objects and array members are made on first use, in the
 * order of the calls (so the same calls give the same bytes). Errors are sticky: the first is
 * kept and reported by hw_writer_close. */
struct hw_writer {
    json_t *root;        /* the profile */
    json_t *sources;     /* its "sources" object (added to root at close when new) */
    struct rl_err err;   /* the first error */
    int rc;              /* its code, 0 while none */
};
/* Starts from base_text (a profile to amend; its key order is kept), or from an empty profile
 * when base_text is NULL. */
int hw_writer_open(struct hw_writer *w, const char *base_text, struct rl_err *e);
/* v clamped to the range of the key `path`, as the writer writes it (v itself for no such key). */
double hw_clamp(const char *path, double v);
/* Sets the number at `path` ("gpu.hbm_gbps"). */
void hw_put(struct hw_writer *w, const char *path, double v);
/* Sets the number at `path` of array member `index` ("node.sockets[].cores", 0); the member is
 * made when index is the array's length. */
void hw_put_at(struct hw_writer *w, const char *path, size_t index, double v);
/* Sets the string at `path` ("gpu.model"). */
void hw_put_str(struct hw_writer *w, const char *path, const char *s);
/* Sets the number list at `path` of member `index` ("node.pcie_switches[].gpus"). */
void hw_put_list(struct hw_writer *w, const char *path, size_t index, const int *v, int n);
/* Empties the object at `path` ("host"), keeping its place; nothing when absent. A writer that
 * measures a whole object anew starts from it, so none of the base's figures stay beside its own. */
void hw_clear(struct hw_writer *w, const char *path);
/* Sets the source of the key `path` (a table key; "[]" or an index for array members). */
void hw_source(struct hw_writer *w, const char *path, const char *text);
/* The profile as text (JSON, 2-space indent, reals with `precision` significant digits) in *out
 * (free it), once it reads back through hw_parse: a writer can never hand out a profile the
 * reader refuses. Frees the tree either way; returns the first error. */
int hw_writer_close(struct hw_writer *w, int precision, char **out, struct rl_err *e);
/* Frees the tree without writing. */
void hw_writer_abort(struct hw_writer *w);
#endif
