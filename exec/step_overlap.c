/* exec/step_overlap.c — the executor's `overlap` schedule (ratiolab's optimizer step): the
 * device share's gradients stay on the device, the host share's go D2H once per flush; the scan
 * counts non-finite fp32 gradients on both sides; the device share's Adam is issued first,
 * asynchronously, then the host share streams through the pinned double buffer in plan/step.h's
 * chunks. The simulator's mirror is sim/step_overlap.c. */
#include "exec/backend.h"
#include "exec/exec.h"
#include "exec/exec_impl.h"
#include "kernels/scan.h"    /* kern_nonfinite_f32: the host share's scan */

int ex__overlap_deliver(struct ex_run *r, const float *src, int64_t f, int64_t len, struct rl_err *e)
{
    int64_t x = f;
    while (x < f + len) {
        const struct ex_seg *s = &r->seg[ex__seg_find(r, x)];
        int64_t end = s->flat + s->numel < f + len ? s->flat + s->numel : f + len;
        int64_t o = s->off + (x - s->flat), n = end - x, h = x - f;
        int64_t t0 = ex__now_ns();
        if (!s->cpu) {
            RL_TRY(r->be->copy(r->dev, r->grad_gpu + o, src + h, n * 4, EX_D2D, EX_STREAM_COMM, e));
            RL_TRY(r->be->sync(r->dev, EX_STREAM_COMM, e));
            ex__phase_add(r, STEP_PH_REDUCE_SCATTER, t0, n * 8);
        } else {
            /* Asynchronous: the next flush waits for it before reusing the bucket. */
            r->be->tag(r->dev, EX_STREAM_COPY, STEP_PH_GRAD_D2H);
            int rc = r->be->copy(r->dev, r->grad_cpu + o, src + h, n * 4, EX_D2H, EX_STREAM_COPY, e);
            r->be->tag(r->dev, EX_STREAM_COPY, -1);
            RL_TRY(rc);
            ex__copy_done(r, STEP_PH_GRAD_D2H, t0, n * 4);
        }
        x = end;
    }
    return 0;
}

int ex__overlap_scan(struct ex_run *r, int64_t *bad, struct rl_err *e)
{
    int64_t t0 = ex__now_ns();
    RL_TRY(r->be->nonfinite(r->dev, r->grad_gpu, r->Pg, bad, EX_STREAM_COMPUTE, e));
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
    ex__phase_add(r, STEP_PH_OVERFLOW_CHECK, t0, r->Pg * 4);
    t0 = ex__now_ns();
    int64_t host_bad = 0;
    /* The host scan counts on the run's Adam threads, vectorized (kernels/scan.h). */
    RL_TRY(kern_nonfinite_f32(r->grad_cpu, r->Pc, r->o->threads, &host_bad, e));
    *bad += host_bad;
    ex__phase_add(r, STEP_PH_OVERFLOW_CHECK, t0, r->Pc * 4);
    return 0;
}

int ex__overlap_optimizer(struct ex_run *r, struct rl_err *e)
{
    /* Device share first, asynchronous (a GPU; the cpu backend's compute thread), writing the
     * 16-bit copy in place, timed by the backend while the host share runs. */
    int64_t t0 = ex__now_ns();
    r->be->tag(r->dev, EX_STREAM_COMPUTE, r->be->take_spans ? STEP_PH_GPU_ADAM : -1);
    for (int i = 0; i < r->nseg; i++) {
        const struct ex_seg *s = &r->seg[i];
        if (s->cpu)
            continue;
        struct kern_adam_scalars sc;
        RL_TRY(ex__scalars(r, s->group, &sc, e));
        struct kern_adam_bufs b = {.param = r->master_gpu + s->off, .exp_avg = r->m_gpu + s->off,
                                   .exp_avg_sq = r->v_gpu + s->off, .grad = r->grad_gpu + s->off,
                                   .grad_dtype = KERN_F32, .param_lowp = (char *)r->param16 + s->flat * r->mdb,
                                   .param_lowp_dtype = r->md, .numel = s->numel};
        int rc = r->be->adam(r->dev, &sc, &b, EX_STREAM_COMPUTE, e);
        if (rc) {
            r->be->tag(r->dev, EX_STREAM_COMPUTE, -1);
            return rc;
        }
    }
    r->be->tag(r->dev, EX_STREAM_COMPUTE, -1);
    if (r->be->take_spans) {
        r->ph_bytes[STEP_PH_GPU_ADAM] += r->Pg * (28 + r->mdb);
    } else {
        RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));
        ex__phase_add(r, STEP_PH_GPU_ADAM, t0, r->Pg * (28 + r->mdb));
    }
    /* Host share in the chunks of plan/step.h (the simulator's): CPU Adam writes the 16-bit copy
     * into a pinned staging half, which goes H2D while the next chunk is updated (double buffer).
     * A chunk spanning host segments is updated piece by piece (each segment's group has its own
     * Adam scalars) into one staging half. */
    int half = 0;
    uint64_t used[2] = {0, 0};   /* the copy event that last read each half */
    r->be->tag(r->dev, EX_STREAM_COPY, STEP_PH_PARAM_H2D);
    const int64_t chunk = step_chunk_numel(r->Pc, r->p->exec_chunk_numel);
    struct ex_piece pc = {.seg = -1};
    while (ex__next_piece(r->seg, r->nseg, r->Pc, chunk, &pc)) {
        const struct ex_seg *s = &r->seg[pc.seg];
        const int64_t a = pc.at - s->off;   /* first element of the piece in its segment */
        char *st = (char *)r->staging + ((int64_t)half * r->chunk + (pc.at - pc.chunk * chunk)) * r->mdb;
        struct kern_adam_scalars sc;
        RL_TRY(ex__scalars(r, s->group, &sc, e));
        t0 = ex__now_ns();
        if (pc.at == pc.chunk * chunk)
            RL_TRY(r->be->event_wait(r->dev, used[half], e));   /* the copy that last used this half */
        struct kern_adam_bufs b = {.param = r->master_cpu + pc.at, .exp_avg = r->m_cpu + pc.at,
                                   .exp_avg_sq = r->v_cpu + pc.at, .grad = r->grad_cpu + pc.at,
                                   .grad_dtype = KERN_F32, .param_lowp = st, .param_lowp_dtype = r->md,
                                   .numel = pc.n};
        RL_TRY(kern_adam_cpu(&sc, &b, r->o->threads, e));
        ex__phase_add(r, STEP_PH_CPU_ADAM, t0, pc.n * (28 + r->mdb));
        t0 = ex__now_ns();
        RL_TRY(r->be->copy(r->dev, (char *)r->param16 + (s->flat + a) * r->mdb, st, pc.n * r->mdb, EX_H2D,
                           EX_STREAM_COPY, e));
        ex__copy_done(r, STEP_PH_PARAM_H2D, t0, pc.n * r->mdb);
        if (pc.last) {
            RL_TRY(r->be->event_record(r->dev, EX_STREAM_COPY, &used[half], e));
            half ^= 1;
        }
    }
    r->be->tag(r->dev, EX_STREAM_COPY, -1);
    t0 = ex__now_ns();
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COPY, e));
    if (!r->be->take_spans)
        ex__phase_add(r, STEP_PH_PARAM_H2D, t0, 0);
    RL_TRY(r->be->sync(r->dev, EX_STREAM_COMPUTE, e));   /* the device share's Adam */
    return 0;
}
