/* exec/exec_impl.h — the state of one rank's run, shared by exec/run.c, exec/digest.c and
 * exec/ckpt.c. Not part of the library's interface. */
#ifndef RL_EXEC_EXEC_IMPL_H
#define RL_EXEC_EXEC_IMPL_H

#include "exec/backend.h"
#include "exec/exec.h"
#include "plan/ds_rules.h"   /* struct plan_ds_rules: the release whose step the deepspeed schedule runs */

/* Elements a rank's host scratch holds at a time when it writes the initial state or reads the
 * final one (init_state, ex__digest): 1 MiB per fp32 array, the same at every scale. */
#define EX_HOST_CHUNK ((int64_t)1 << 18)

/* One tensor as this rank sees it. */
struct ex_tmap {
    int64_t n;        /* elements of the tensor */
    int64_t s;        /* per-rank partition: ceil(n / W) */
    int64_t goff;     /* global index of its first element (model order) */
    int64_t foff;     /* offset of this rank's partition in the flat partition */
    int64_t real;     /* elements of the partition that exist (the rest is padding) */
    int layer;        /* transformer block, -1 outside */
    int group;        /* param group */
};

/* A run of the flat partition updated on one side. */
struct ex_seg {
    int64_t flat;     /* first flat element */
    int64_t numel;    /* elements */
    int64_t off;      /* offset in the *_cpu (host) or *_gpu (device) arrays */
    bool cpu;         /* updated on the host */
    int group;        /* param group (Adam hyper-parameters) */
    int subgroup;     /* plan sub-group index */
};

/* One piece of the host pipeline: the part of one chunk of the CPU share (plan/step.h's chunk
 * list) that lies in one host segment. A chunk spanning segments is several pieces. */
struct ex_piece {
    int64_t chunk;    /* chunk index, 0 .. step_chunk_count - 1 */
    int64_t at;       /* first element in the CPU share (= offset in the *_cpu arrays) */
    int64_t n;        /* elements */
    int seg;          /* host segment holding it (index into the segment list) */
    bool last;        /* the last piece of its chunk */
};

/* A piece of a tensor's partition waiting in the reduce bucket. */
struct ex_item {
    int t;            /* tensor */
    int64_t a;        /* first partition element */
    int64_t len;      /* elements per rank */
};

/* A span or a memory sample for the trace (phase < 0: a sample, value in bytes). */
/* Trace records that are no phase's span. */
enum {
    EX_TSPAN_DEVICE_MEMORY = -1,     /* a device memory sample: value bytes */
    EX_TSPAN_RSS = -2,               /* a resident memory sample: value bytes */
    EX_TSPAN_STEP = -3,              /* a timed step's extent: value its number (from 1) */
    EX_TSPAN_WARMUP_STEP = -4,       /* a warm-up step's extent: value its number */
};

struct ex__tspan {
    int64_t t0_ns;                   /* start, relative to the run's origin */
    int64_t t1_ns;                   /* end (samples: == t0) */
    int32_t phase;                   /* enum step_phase, or one of EX_TSPAN_* below */
    int32_t rank;                    /* the rank */
    int64_t value;                   /* samples: bytes */
};

/* A block's all-gather, started ahead of its compute (ZeRO-3 prefetch). */
struct ex_gather {
    bool started;                    /* started and not yet waited for */
    uint64_t req;                    /* the backend's handle */
    int64_t t0_ns;                   /* when its start was issued */
    int64_t t1_ns;                   /* when it was first seen complete (0: not yet) */
    int64_t bytes;                   /* gathered bytes (all ranks) */
    int slot;                        /* the gather buffer it was started into */
};

struct ex_run {
    const struct plan *p;            /* the plan (exec ledger) */
    const struct ex_opts *o;         /* options */
    struct ex_comm *c;               /* ranks */
    const struct ex_backend *be;     /* backend table */
    struct ex_dev *dev;              /* backend state */
    int W, k;                        /* world size, this rank */
    enum kern_dtype md;              /* model dtype (bf16 / fp16) */
    int mdb;                         /* its bytes */
    int T;                           /* tensors */
    struct ex_tmap *tm;              /* per tensor, model order */
    int nseg;                        /* segments */
    struct ex_seg *seg;              /* sorted by flat */
    int nblocks;                     /* blocks (runs of tensors with one layer index) */
    int *blocks;                     /* first tensor of each block; blocks[nblocks] = T */
    int64_t P, Pc, Pg;               /* partition elements: all, host, device */
    int64_t total_numel;             /* global elements */
    /* ledger buffers */
    void *param16;                   /* param_partition: P x 16-bit, device */
    float *master_gpu, *grad_gpu, *m_gpu, *v_gpu;   /* Pg each, device */
    float *master_cpu, *grad_cpu, *m_cpu, *v_cpu;   /* Pc each, pinned host */
    void *bucket;                    /* reduce_scatter_bucket, device, elements of the comm type */
    enum kern_dtype cd;              /* reduce-scatter type: KERN_F32 or the model's 16-bit type */
    int cdb;                         /* its bytes */
    float *comm32;                   /* 16-bit comm, overlap: one flush's sums widened, device */
    void *staging;                   /* h2d_staging: 2 x chunk x 16-bit, pinned host */
    /* schedule and transient buffers */
    void *flat_grad;                 /* deepspeed-0.12: P x 16-bit pinned flat gradient buffer */
    void *dev16;                     /* deepspeed-0.12: one bucket's 16-bit gradients, device */
    void *pageable16;                /* deepspeed-0.12: pageable staging, host */
    const struct plan_ds_rules *ds;  /* deepspeed: the row of plan/ds_rules.c for the plan's
                                        zero.ds_version, whose step runs; NULL under overlap */
    float *up32;                     /* deepspeed from 0.15.4: one bucket's host-share gradients upcast
                                        to fp32 on the device (DeepSpeed's .float()), device */
    float *pinned32;                 /* deepspeed 0.15.4-0.16.2: the pinned staging they are copied
                                        through (DeepSpeed's pinned_grad_buffer), host */
    void *gathered;                  /* gather_buffers gathered blocks, device, one after the other */
    int64_t gathered_bytes;          /* one gather buffer: the largest block's partitions x W */
    int64_t prefetch_depth;          /* blocks gathered ahead of the compute (plan/step.h, capped at
                                        nblocks - 1) */
    int gather_buffers;              /* gather buffers: prefetch_depth + 1 (plan/step.h) */
    struct ex_gather *ag;            /* per block: its started all-gather */
    float *act, *act_out, *wscratch; /* --compute gemm scratch, device */
    int64_t tokens;                  /* micro_batch x seq */
    struct ex_gemm *gemms;           /* --compute gemm: every block's GEMMs (exec/compute.c) */
    int *gemm_first;                 /* block b's are gemms[gemm_first[b] .. gemm_first[b + 1]) */
    int64_t bucket_rank_numel;       /* comm-type elements per rank per flush */
    int64_t bucket_fill;             /* of which filled */
    int64_t chunk;                   /* host pipeline chunk, elements */
    struct ex_item *items;           /* bucket contents */
    int n_items, cap_items;          /* used, allocated */
    /* bookkeeping */
    int nbufs;                       /* buffers allocated */
    int n_ledger_bufs;               /* of which the exec ledger's */
    struct ex_buf_report bufs[EX_MAX_BUFS];
    void **buf_ptr[EX_MAX_BUFS];     /* where each pointer lives, to free it */
    bool buf_transient[EX_MAX_BUFS]; /* not a model-state buffer (not checked) */
    bool ledger_ok;                  /* check_ledger passed */
    int64_t iterations;              /* iterations done (including a checkpoint's) */
    int64_t adam_step;               /* Adam steps applied */
    int64_t skipped;                 /* skipped in this run */
    int64_t ph_bytes[STEP_PH_COUNT];  /* this step's bytes per phase */
    struct step_span *spans;          /* this step's spans (phase, start, end) */
    int n_spans, cap_spans;           /* used, allocated */
    bool span_oom;                    /* a span could not be recorded (out of memory) */
    struct ex__tspan *tspans;         /* --trace: every span and memory sample of the run */
    int n_tspans, cap_tspans;         /* used, allocated */
    int64_t t_origin_ns;              /* --trace: the run's time zero (after a barrier) */
};

/* ---- the segment map (segmap.c) ---- */
/* The index in r->seg of the segment holding flat index f (f within the rank's flat range). */
int ex__seg_find(const struct ex_run *r, int64_t f);
/* Steps *it to the next piece of the host pipeline over the nseg segments (sorted by flat, host
 * ones packed back to back from offset 0, pc elements in all) with chunks of `chunk` elements
 * (step_chunk_numel). Start with *it zeroed and it->seg = -1; false once the share is done.
 * O(1) per piece plus the segments skipped. */
bool ex__next_piece(const struct ex_seg *seg, int nseg, int64_t pc, int64_t chunk, struct ex_piece *it);
/* Reads master, m, v (and, when hp != NULL, the 16-bit copy) of flat [f, f + len) to the host. */
int ex__get_range(struct ex_run *r, int64_t f, int64_t len, float *hm, float *h1, float *h2, uint16_t *hp,
                  struct rl_err *e);
/* Writes master, m, v of flat [f, f + len) from the host; the 16-bit copy is the cast of master. */
int ex__put_range(struct ex_run *r, int64_t f, int64_t len, const float *hm, const float *h1, const float *h2,
                  struct rl_err *e);
/* The world-size independent digest, valid on rank 0 (every rank takes part). */
int ex__digest(struct ex_run *r, uint32_t *digest, struct rl_err *e);
/* Combines per-range crcs of the four arrays into the digest (used by the reference too):
 * rec[i] = {global start, elements, crc master, crc m, crc v, crc 16-bit}. */
struct ex__crc_rec {
    int64_t gstart;                  /* first global element */
    int64_t len;                     /* elements */
    uint32_t crc[4];                 /* master, m, v (4 bytes each), 16-bit (2 bytes) */
};
uint32_t ex__digest_combine(struct ex__crc_rec *rec, int64_t n);
/* Gathers every rank's trace records and writes the trace on rank 0 (traces/ writer, layout.h). */
int ex__trace_write(struct ex_run *r, const char *path, struct rl_err *e);
/* Before the compute of the block at position i of a pass (forward: block i, backward: block
 * nblocks - 1 - i): starts the all-gathers up to i + prefetch_depth not yet started (*next: the
 * first position not yet started; 0 at the start of a pass), position j into gather buffer
 * j mod gather_buffers, then waits for block i's. In builds without NDEBUG (debug, sanitizer,
 * the default) it asserts that a gather is never started into a buffer that another started and
 * not yet waited gather still fills (gather_buffers must exceed prefetch_depth). */
int ex__gather_for(struct ex_run *r, bool forward, int i, int *next, struct rl_err *e);
/* ---- the step's record (step_record.c): shared by run.c and the schedules, calls neither ---- */
/* The monotonic clock in nanoseconds. */
int64_t ex__now_ns(void);
/* Keeps a trace record (phase < 0: a memory sample of `value` bytes). */
void ex__trace_add(struct ex_run *r, int64_t t0, int64_t t1, int ph, int64_t value);
/* Records the span [t0, t1) of phase ph and the bytes it moved. */
void ex__span_add(struct ex_run *r, int ph, int64_t t0, int64_t t1, int64_t bytes);
/* Records the span [t0, now) of phase ph and the bytes it moved. */
void ex__phase_add(struct ex_run *r, int ph, int64_t t0, int64_t bytes);
/* An asynchronous copy's bytes; its time comes from the backend (take_spans) when it has one,
 * else from the span [t0, now) the pipeline measured around it. */
void ex__copy_done(struct ex_run *r, int ph, int64_t t0, int64_t bytes);
/* The Adam scalars of param group `group` at the run's current Adam step. */
int ex__scalars(struct ex_run *r, int group, struct kern_adam_scalars *s, struct rl_err *e);
/* ---- the schedules: exec/step_ds.c (deepspeed) and exec/step_overlap.c (overlap) ---- */
/* A flush's reduced range (flat [f, f + len); src the fp32 sums on the device, src16 the model-
 * dtype sums of a 16-bit reduce-scatter (deepspeed only; else NULL)) into the fp32 gradients. */
int ex__ds_deliver(struct ex_run *r, const float *src, const void *src16, int64_t f, int64_t len, struct rl_err *e);
int ex__overlap_deliver(struct ex_run *r, const float *src, int64_t f, int64_t len, struct rl_err *e);
/* The deepspeed schedule's release upcasts the host share's gradients on the device (0.15.4 and
 * later) and this rank has a host share: the run needs grad_upcast_gpu. */
bool ex__ds_upcasts(const struct ex_run *r);
/* Adds to *bad this rank's non-finite gradients, scanned where the schedule scans them. */
int ex__ds_scan(struct ex_run *r, int64_t *bad, struct rl_err *e);
int ex__overlap_scan(struct ex_run *r, int64_t *bad, struct rl_err *e);
/* The optimizer step of the schedule over every segment (the step counter already advanced). */
int ex__ds_optimizer(struct ex_run *r, struct rl_err *e);
int ex__overlap_optimizer(struct ex_run *r, struct rl_err *e);
int ex__ckpt_save(struct ex_run *r, const char *dir, struct rl_err *e);
int ex__ckpt_load(struct ex_run *r, const char *dir, struct rl_err *e);

#endif
