/* exec/segmap.c — the segment map of a rank's state (exec/run.c's header comment draws it): which
 * segment holds a flat index, and the state of a flat range read from or written to wherever its
 * segments live (host arrays or the device). Used by the pipeline (run.c), checkpoints (ckpt.c)
 * and the digest (digest.c), none of which calls the others through it; and the pieces of the host
 * pipeline's chunks (plan/step.h's chunk list cut at the host segments). */
#include <stdlib.h>
#include <string.h>

#include "exec/backend.h"
#include "exec/exec_impl.h"

/* The segment holding flat index f: binary search over the segments' flat starts, O(log nseg). */
int ex__seg_find(const struct ex_run *r, int64_t f)
{
    int lo = 0, hi = r->nseg - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (r->seg[mid].flat <= f)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The next piece of the host pipeline (exec_impl.h): from the first element not yet covered to
 * the end of its chunk or of its host segment, whichever comes first. */
bool ex__next_piece(const struct ex_seg *seg, int nseg, int64_t pc, int64_t chunk, struct ex_piece *it)
{
    const int64_t x = it->seg < 0 ? 0 : it->at + it->n;   /* the first element not yet covered */
    if (x >= pc || chunk <= 0)
        return false;
    int i = it->seg < 0 ? 0 : it->seg;
    while (i < nseg && (!seg[i].cpu || seg[i].off + seg[i].numel <= x))
        i++;
    if (i == nseg)
        return false;   /* the segments hold fewer than pc elements */
    const int64_t k = x / chunk, chunk_end = (k + 1) * chunk < pc ? (k + 1) * chunk : pc;
    const int64_t seg_end = seg[i].off + seg[i].numel;
    const int64_t end = seg_end < chunk_end ? seg_end : chunk_end;
    *it = (struct ex_piece){.chunk = k, .at = x, .n = end - x, .seg = i, .last = end == chunk_end};
    return true;
}

/* Writes host arrays (flat order, len elements from flat f) of master, m, v into the segments,
 * and the 16-bit copy of master into param_partition. */
int ex__put_range(struct ex_run *r, int64_t f, int64_t len, const float *hm, const float *h1, const float *h2,
                     struct rl_err *e)
{
    int rc;
    uint16_t *tmp = malloc((size_t)(len ? len : 1) * 2);
    if (!tmp)
        return rl_errf(e, RL_ENOMEM, "out of host memory");
    ex__narrow_host(tmp, r->md, hm, len);
    rc = r->be->copy(r->dev, (char *)r->param16 + f * r->mdb, tmp, len * r->mdb, EX_H2D, EX_STREAM_COPY, e);
    if (!rc)
        rc = r->be->sync(r->dev, EX_STREAM_COPY, e);   /* before tmp goes */
    free(tmp);
    int64_t x = f;
    while (!rc && x < f + len) {
        const struct ex_seg *s = &r->seg[ex__seg_find(r, x)];
        int64_t end = s->flat + s->numel < f + len ? s->flat + s->numel : f + len;
        int64_t o = s->off + (x - s->flat), n = end - x, h = x - f;
        if (s->cpu) {
            memcpy(r->master_cpu + o, hm + h, (size_t)n * 4);
            memcpy(r->m_cpu + o, h1 + h, (size_t)n * 4);
            memcpy(r->v_cpu + o, h2 + h, (size_t)n * 4);
        } else if ((rc = r->be->copy(r->dev, r->master_gpu + o, hm + h, n * 4, EX_H2D, EX_STREAM_COPY, e)) ||
                   (rc = r->be->copy(r->dev, r->m_gpu + o, h1 + h, n * 4, EX_H2D, EX_STREAM_COPY, e)) ||
                   (rc = r->be->copy(r->dev, r->v_gpu + o, h2 + h, n * 4, EX_H2D, EX_STREAM_COPY, e))) {
            break;
        }
        x = end;
    }
    return rc ? rc : r->be->sync(r->dev, EX_STREAM_COPY, e);
}

/* Reads master, m, v and the 16-bit parameters of flat [f, f + len) into host arrays. */
int ex__get_range(struct ex_run *r, int64_t f, int64_t len, float *hm, float *h1, float *h2, uint16_t *hp,
                  struct rl_err *e)
{
    int rc = 0;
    if (hp)
        rc = r->be->copy(r->dev, hp, (char *)r->param16 + f * r->mdb, len * r->mdb, EX_D2H, EX_STREAM_COPY, e);
    int64_t x = f;
    while (!rc && x < f + len) {
        const struct ex_seg *s = &r->seg[ex__seg_find(r, x)];
        int64_t end = s->flat + s->numel < f + len ? s->flat + s->numel : f + len;
        int64_t o = s->off + (x - s->flat), n = end - x, h = x - f;
        if (s->cpu) {
            memcpy(hm + h, r->master_cpu + o, (size_t)n * 4);
            memcpy(h1 + h, r->m_cpu + o, (size_t)n * 4);
            memcpy(h2 + h, r->v_cpu + o, (size_t)n * 4);
        } else if ((rc = r->be->copy(r->dev, hm + h, r->master_gpu + o, n * 4, EX_D2H, EX_STREAM_COPY, e)) ||
                   (rc = r->be->copy(r->dev, h1 + h, r->m_gpu + o, n * 4, EX_D2H, EX_STREAM_COPY, e)) ||
                   (rc = r->be->copy(r->dev, h2 + h, r->v_gpu + o, n * 4, EX_D2H, EX_STREAM_COPY, e))) {
            break;
        }
        x = end;
    }
    return rc ? rc : r->be->sync(r->dev, EX_STREAM_COPY, e);
}
