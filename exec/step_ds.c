/* exec/step_ds.c — the executor's `deepspeed` schedule: DeepSpeed's step as docs/deepspeed-step.md
 * reads it (sections 2-4), for the release of the plan's zero.ds_version, whose row of
 * plan/ds_rules.c (r->ds) says what differs in what runs:
 *   - every flushed partition goes D2H into the flat buffer and H2D back; the flat buffer is pinned
 *     only with offload_optimizer.pin_memory (its default is the row's offload_pin_default);
 *   - the host share's fp32 gradients, per piece, as the row's grad_copy forms them:
 *       HOST_CAST (< 0.15.4)           a blocking D2H of 16 bits into pageable memory, a host cast;
 *       HOST_CAST_SYNCED (0.15.4)      a device upcast, a blocking fp32 D2H into pinned staging, a
 *                                      full device synchronize, a host copy into the fp32 gradient;
 *       GPU_UPCAST (0.16.3)            a device upcast, a blocking fp32 D2H into the fp32 gradient;
 *       GPU_UPCAST_ASYNC (0.19.5)      the same D2H on the copy stream, not waited for (the next
 *                                      flush and the overflow scan wait for it);
 *     the device share's: a device cast;
 *   - the overflow scan over the flat buffer;
 *   - the sequential sub-group loop in index order, each sub-group's host part before its device
 *     part (as sim/step_ds.c), so the placement decides which side goes first (the first sub-groups
 *     are the CPU's before 0.18, the last ones from 0.18); with the row's adam_stream_sync
 *     (< 0.14.3) CPU Adam ends with a synchronize of the streams.
 * Every variant moves the same values (16-bit gradients are exact in fp32), so the digest is the
 * same for every release. Not run: the gradient norm (the executor's loss scale is a static 1)
 * and the zero-gradient step at set-up of the 0.12 ledger. The simulator's mirror is
 * sim/step_ds.c. */
#include <string.h>

#include "exec/backend.h"
#include "exec/exec.h"
#include "exec/exec_impl.h"
#include "kernels/scan.h"    /* kern_nonfinite_lowp: the scan of the flat buffer */

bool ex__ds_upcasts(const struct ex_run *r)
{
    return r->ds && r->Pc > 0 && r->ds->grad_copy != PLAN_DS_GRAD_HOST_CAST;
}

/* The host-share piece of n elements at h in the bucket's 16-bit gradients (dev16) into the fp32
 * gradient at o of the host arrays, as the release forms it (the header's list). */
static int host_grad(struct ex_run *r, int64_t o, int64_t n, int64_t h, struct rl_err *e)
{
    const int mdb = r->mdb;
    int64_t t0 = ex__now_ns();
    const enum plan_ds_grad_copy kind = r->ds->grad_copy;
    if (kind == PLAN_DS_GRAD_HOST_CAST) {
        /* copy_(16-bit GPU -> fp32 host): a blocking copy to pageable memory, the cast on the host. */
        RL_TRY(r->be->copy(r->dev, r->pageable16, (char *)r->dev16 + h * mdb, n * mdb, EX_D2H, EX_STREAM_COMPUTE, e));
        RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
        ex__phase_add(r, STEP_PH_GRAD_D2H, t0, n * mdb);
        t0 = ex__now_ns();
        ex__widen_host(r->grad_cpu + o, r->pageable16, r->md, n);
        ex__phase_add(r, STEP_PH_GRAD_CAST, t0, n * (mdb + 4));
        return 0;
    }
    if (kind == PLAN_DS_GRAD_GPU_UPCAST_ASYNC)   /* the previous piece's copy still reads up32 */
        RL_TRY(r->be->sync(r->dev, EX_STREAM_COPY, e));
    t0 = ex__now_ns();
    float *up = r->up32 + h;
    RL_TRY(r->be->widen(r->dev, up, (char *)r->dev16 + h * mdb, r->md, n, EX_STREAM_COMM, e));
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COMM, e));
    ex__phase_add(r, STEP_PH_GRAD_CAST, t0, n * (mdb + 4));
    t0 = ex__now_ns();
    if (kind == PLAN_DS_GRAD_GPU_UPCAST_ASYNC) {   /* non_blocking=True into pinned memory */
        r->be->tag(r->dev, EX_STREAM_COPY, STEP_PH_GRAD_D2H);
        int rc = r->be->copy(r->dev, r->grad_cpu + o, up, n * 4, EX_D2H, EX_STREAM_COPY, e);
        r->be->tag(r->dev, EX_STREAM_COPY, -1);
        RL_TRY(rc);
        ex__copy_done(r, STEP_PH_GRAD_D2H, t0, n * 4);
        return 0;
    }
    float *dst = kind == PLAN_DS_GRAD_HOST_CAST_SYNCED ? r->pinned32 : r->grad_cpu + o;
    RL_TRY(r->be->copy(r->dev, dst, up, n * 4, EX_D2H, EX_STREAM_COMM, e));
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COMM, e));
    if (kind == PLAN_DS_GRAD_HOST_CAST_SYNCED) {   /* get_accelerator().synchronize(): every stream */
        RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
        RL_TRY(r->be->sync(r->dev, EX_STREAM_COPY, e));
    }
    ex__phase_add(r, STEP_PH_GRAD_D2H, t0, n * 4);
    if (kind == PLAN_DS_GRAD_HOST_CAST_SYNCED) {   /* staging -> the fp32 gradient, a host copy */
        t0 = ex__now_ns();
        memcpy(r->grad_cpu + o, r->pinned32, (size_t)n * 4);
        ex__phase_add(r, STEP_PH_GRAD_CAST, t0, n * 8);
    }
    return 0;
}

int ex__ds_deliver(struct ex_run *r, const float *src, const void *src16, int64_t f, int64_t len, struct rl_err *e)
{
    const int mdb = r->mdb;
    int64_t t0;
    /* The sums in the model dtype: cast from fp32, or as reduced with a 16-bit comm type. */
    if (!src16) {
        t0 = ex__now_ns();
        RL_TRY(r->be->narrow(r->dev, r->dev16, r->md, src, len, EX_STREAM_COMM, e));
        RL_TRY(r->be->sync(r->dev, EX_STREAM_COMM, e));
        ex__phase_add(r, STEP_PH_REDUCE_SCATTER, t0, len * (4 + mdb));
        src16 = r->dev16;
    }
    t0 = ex__now_ns();
    RL_TRY(r->be->copy(r->dev, (char *)r->flat_grad + f * mdb, src16, len * mdb, EX_D2H, EX_STREAM_COMM, e));
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COMM, e));
    ex__phase_add(r, STEP_PH_GRAD_D2H, t0, len * mdb);
    t0 = ex__now_ns();
    RL_TRY(r->be->copy(r->dev, r->dev16, (char *)r->flat_grad + f * mdb, len * mdb, EX_H2D, EX_STREAM_COMM, e));
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COMM, e));
    ex__phase_add(r, STEP_PH_GRAD_H2D, t0, len * mdb);
    int64_t x = f;
    while (x < f + len) {
        const struct ex_seg *s = &r->seg[ex__seg_find(r, x)];
        int64_t end = s->flat + s->numel < f + len ? s->flat + s->numel : f + len;
        int64_t o = s->off + (x - s->flat), n = end - x, h = x - f;
        t0 = ex__now_ns();
        if (!s->cpu) {
            RL_TRY(r->be->widen(r->dev, r->grad_gpu + o, (char *)r->dev16 + h * mdb, r->md, n, EX_STREAM_COMM, e));
            RL_TRY(r->be->sync(r->dev, EX_STREAM_COMM, e));
            ex__phase_add(r, STEP_PH_GRAD_CAST, t0, n * (mdb + 4));
        } else {
            RL_TRY(host_grad(r, o, n, h, e));   /* inside the backward, as the release does it */
        }
        x = end;
    }
    return 0;
}

int ex__ds_scan(struct ex_run *r, int64_t *bad, struct rl_err *e)
{
    /* DeepSpeed's has_overflow over the whole flat host buffer, on the run's Adam threads,
     * vectorized (kernels/scan.h). */
    int64_t t0 = ex__now_ns();
    RL_TRY(kern_nonfinite_lowp(r->flat_grad, r->P, r->md, r->o->threads, bad, e));
    ex__phase_add(r, STEP_PH_OVERFLOW_CHECK, t0, r->P * r->mdb);
    return 0;
}

/* DeepSpeed's loop over the sub-groups in index order (segments are in flat order: a sub-group's
 * host part, then its device part). A host part: unscaled, updated (before 0.14.3 followed by
 * DeepSpeedCPUAdam's SynchronizeStreams), cast on the host into pageable memory and copied H2D
 * blocking; a device part: unscale, Adam, cast. */
int ex__ds_optimizer(struct ex_run *r, struct rl_err *e)
{
    for (int i = 0; i < r->nseg; i++) {
        const struct ex_seg *s = &r->seg[i];
        struct kern_adam_scalars sc;
        RL_TRY(ex__scalars(r, s->group, &sc, e));
        int64_t t0 = ex__now_ns();
        if (s->cpu) {
            float *g = r->grad_cpu + s->off;
            for (int64_t j = 0; j < s->numel; j++)
                g[j] = g[j] * 1.0f;   /* unscale by the static loss scale 1 */
            ex__phase_add(r, STEP_PH_UNSCALE, t0, s->numel * 8);
            t0 = ex__now_ns();
            struct kern_adam_bufs b = {.param = r->master_cpu + s->off, .exp_avg = r->m_cpu + s->off,
                                       .exp_avg_sq = r->v_cpu + s->off, .grad = g, .grad_dtype = KERN_F32,
                                       .numel = s->numel};
            RL_TRY(kern_adam_cpu(&sc, &b, r->o->threads, e));
            if (r->ds->adam_stream_sync) {   /* cudaStreamSynchronize of its streams */
                RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
                RL_TRY(r->be->sync(r->dev, EX_STREAM_COPY, e));
            }
            ex__phase_add(r, STEP_PH_CPU_ADAM, t0, s->numel * 28);
            t0 = ex__now_ns();
            ex__narrow_host(r->pageable16, r->md, r->master_cpu + s->off, s->numel);
            ex__phase_add(r, STEP_PH_PARAM_CAST, t0, s->numel * (4 + r->mdb));
            t0 = ex__now_ns();
            RL_TRY(r->be->copy(r->dev, (char *)r->param16 + s->flat * r->mdb, r->pageable16, s->numel * r->mdb,
                               EX_H2D, EX_STREAM_COMPUTE, e));
            RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
            ex__phase_add(r, STEP_PH_PARAM_H2D, t0, s->numel * r->mdb);
        } else {
            RL_TRY(r->be->scale(r->dev, r->grad_gpu + s->off, s->numel, 1.0f, EX_STREAM_COMPUTE, e));
            RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
            ex__phase_add(r, STEP_PH_UNSCALE, t0, s->numel * 8);
            t0 = ex__now_ns();
            struct kern_adam_bufs b = {.param = r->master_gpu + s->off, .exp_avg = r->m_gpu + s->off,
                                       .exp_avg_sq = r->v_gpu + s->off, .grad = r->grad_gpu + s->off,
                                       .grad_dtype = KERN_F32, .numel = s->numel};
            RL_TRY(r->be->adam(r->dev, &sc, &b, EX_STREAM_COMPUTE, e));
            RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
            ex__phase_add(r, STEP_PH_GPU_ADAM, t0, s->numel * 28);
            t0 = ex__now_ns();
            RL_TRY(r->be->narrow(r->dev, (char *)r->param16 + s->flat * r->mdb, r->md, r->master_gpu + s->off,
                                 s->numel, EX_STREAM_COMPUTE, e));
            RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
            ex__phase_add(r, STEP_PH_PARAM_CAST, t0, s->numel * (4 + r->mdb));
        }
    }
    return 0;
}
