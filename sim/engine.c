/* sim/engine.c — the event heap: a binary min-heap of (t_ns, seq, slot) entries over a pool of
 * event payloads. Cancelled events stay in the heap, flagged, and are dropped when popped, so a
 * cancel is O(1) and the heap never needs a search. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

/* A heap entry, ordered by (t_ns, seq): equal times run in insertion order. */
struct sim__entry {
    int64_t t_ns;    /* due time */
    uint64_t seq;    /* insertion number, unique */
    uint32_t slot;   /* event pool index */
};

/* Pooled event payload. */
struct sim__event {
    sim_event_fn *fn;   /* callback */
    void *arg;          /* its argument */
    int64_t tag;        /* its tag */
    uint32_t gen;       /* bumped when the slot is freed */
    bool cancelled;     /* set by sim_cancel; the event is skipped */
};

int sim_init(struct sim *s)
{
    memset(s, 0, sizeof *s);
    return 0;
}

void sim_free(struct sim *s)
{
    free(s->heap);
    free(s->ev);
    free(s->free_slot);
    free(s->batch);
    memset(s, 0, sizeof *s);
}

static inline bool entry_less(const struct sim__entry *a, const struct sim__entry *b)
{
    return a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
}

/* Restores the heap property upwards from position i. O(log n). */
static void heap_up(struct sim *s, uint32_t i)
{
    struct sim__entry x = s->heap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!entry_less(&x, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = x;
}

/* Restores the heap property downwards from position i. O(log n). */
static void heap_down(struct sim *s, uint32_t i)
{
    struct sim__entry x = s->heap[i];
    uint32_t n = s->n_heap;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && entry_less(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!entry_less(&s->heap[c], &x))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    s->heap[i] = x;
}

int sim_at(struct sim *s, int64_t t_ns, sim_event_fn *fn, void *arg, int64_t tag,
           struct sim_event_id *id)
{
    if (t_ns < s->now_ns || !fn)
        return rl_errf(&s->e, RL_EINVAL, "engine: an event at %lld ns %s (now %lld ns)", (long long)t_ns,
                       fn ? "is in the past" : "has no callback", (long long)s->now_ns);
    uint32_t slot;
    if (s->n_free) {
        slot = s->free_slot[--s->n_free];
    } else {
        if (rl_grow(&s->ev, &s->cap_ev, sizeof *s->ev, (int)s->n_ev + 1, 64) ||
            rl_grow(&s->free_slot, &s->cap_free, sizeof *s->free_slot, (int)s->n_ev + 1, 64))
            return s->err = rl_errf(&s->e, RL_ENOMEM, "engine: out of memory for %u events", s->n_ev + 1);
        slot = s->n_ev++;
        s->ev[slot].gen = 0;
    }
    if (rl_grow(&s->heap, &s->cap_heap, sizeof *s->heap, (int)s->n_heap + 1, 64))
        return s->err = rl_errf(&s->e, RL_ENOMEM, "engine: out of memory for %u pending events", s->n_heap + 1);
    struct sim__event *ev = &s->ev[slot];
    ev->fn = fn;
    ev->arg = arg;
    ev->tag = tag;
    ev->cancelled = false;
    s->heap[s->n_heap] = (struct sim__entry){t_ns, s->next_seq++, slot};
    heap_up(s, s->n_heap++);
    if (id)
        *id = (struct sim_event_id){slot, ev->gen};
    return 0;
}

int sim_after(struct sim *s, int64_t dt_ns, sim_event_fn *fn, void *arg, int64_t tag,
              struct sim_event_id *id)
{
    if (dt_ns < 0 || dt_ns > INT64_MAX - s->now_ns)
        return rl_errf(&s->e, RL_EINVAL, "engine: a delay of %lld ns from %lld ns is not allowed (0 .. %lld)",
                       (long long)dt_ns, (long long)s->now_ns, (long long)(INT64_MAX - s->now_ns));
    return sim_at(s, s->now_ns + dt_ns, fn, arg, tag, id);
}

bool sim_cancel(struct sim *s, struct sim_event_id id)
{
    if (id.slot >= s->n_ev)
        return false;
    struct sim__event *ev = &s->ev[id.slot];
    if (ev->gen != id.gen || ev->cancelled || !ev->fn)
        return false;
    ev->cancelled = true;
    return true;
}

void sim_stop(struct sim *s) { s->stop = true; }

/* Returns a slot to the pool; its generation changes so old handles no longer match. */
static void release(struct sim *s, uint32_t slot)
{
    s->ev[slot].gen++;
    s->ev[slot].fn = NULL;
    s->free_slot[s->n_free++] = slot;
}

int sim_run(struct sim *s, int64_t until_ns)
{
    s->stop = false;
    while (s->n_heap && !s->stop && !s->err) {
        int64_t t = s->heap[0].t_ns;
        if (until_ns >= 0 && t > until_ns)
            break;
        /* Collect every entry due at t (in (t, seq) order), then run them. */
        uint32_t nb = 0;
        while (s->n_heap && s->heap[0].t_ns == t) {
            if (rl_grow(&s->batch, &s->cap_batch, sizeof *s->batch, (int)nb + 1, 64))
                return s->err = rl_errf(&s->e, RL_ENOMEM, "engine: out of memory for a batch of %u events", nb + 1);
            s->batch[nb++] = s->heap[0].slot;
            s->heap[0] = s->heap[--s->n_heap];
            if (s->n_heap)
                heap_down(s, 0);
        }
        s->now_ns = t;
        for (uint32_t i = 0; i < nb; i++) {
            uint32_t slot = s->batch[i];
            struct sim__event ev = s->ev[slot];
            /* Free the slot before running so the callback can reuse it; its handle turns stale,
             * so cancelling the running event is a no-op. */
            release(s, slot);
            if (ev.cancelled) {
                s->n_cancelled++;
                continue;
            }
            s->n_run++;
            ev.fn(s, ev.arg, ev.tag);
        }
    }
    return s->err;
}
