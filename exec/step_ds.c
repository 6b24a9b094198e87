/* exec/step_ds.c — the executor's `deepspeed` schedule, DeepSpeed's step as docs/deepspeed-step.md
 * reads it (sections 2-3): every flushed partition D2H into the pinned flat buffer and H2D back,
 * the fp32 gradients formed per piece (a device cast, or for the host share a blocking D2H into
 * pageable memory and a host cast), the overflow scan over the flat buffer, then the sequential
 * sub-group loop. The simulator's mirror is sim/step_ds.c. */
#include "exec/backend.h"
#include "exec/exec.h"
#include "exec/exec_impl.h"
#include "kernels/scan.h"    /* kern_nonfinite_lowp: the scan of the flat buffer */

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
            /* A blocking copy to pageable memory, then the cast on the host (inside backward). */
            RL_TRY(r->be->copy(r->dev, r->pageable16, (char *)r->dev16 + h * mdb, n * mdb, EX_D2H, EX_STREAM_COMPUTE, e));
            RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
            ex__phase_add(r, STEP_PH_GRAD_D2H, t0, n * mdb);
            t0 = ex__now_ns();
            ex__widen_host(r->grad_cpu + o, r->pageable16, r->md, n);
            ex__phase_add(r, STEP_PH_GRAD_CAST, t0, n * (mdb + 4));
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

/* DeepSpeed 0.12.4's loop: host sub-groups first, each unscaled, updated, then cast on the host
 * into pageable memory and copied H2D blocking; then the device sub-groups: unscale, Adam, cast. */
int ex__ds_optimizer(struct ex_run *r, struct rl_err *e)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < r->nseg; i++) {
            const struct ex_seg *s = &r->seg[i];
            if (s->cpu != (pass == 0))
                continue;
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
