/* validation/tdiff.c — per-rank, per-phase busy and exposed time of a trace in the shared layout
 * (see val.h). */
#include <jansson.h>   /* json_loads: args.rank */
#include <stdlib.h>
#include <string.h>

#include "sim/step.h"
#include "validation/val.h"

_Static_assert(VAL_PHASES == SIM_PH_COUNT, "VAL_PHASES must equal SIM_PH_COUNT");

/* A span boundary: phase p starts (+1) or ends (-1) at t on a rank. */
struct edge {
    int rank;        /* rank */
    int64_t t_ns;    /* time */
    int phase;       /* phase index */
    int delta;       /* +1 start, -1 end */
};

static int cmp_edge(const void *x, const void *y)
{
    const struct edge *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->t_ns != b->t_ns)
        return a->t_ns < b->t_ns ? -1 : 1;
    return a->delta - b->delta;   /* ends before starts at the same time */
}

static int phase_of(const char *cat)
{
    if (!cat)
        return -1;
    for (int i = 0; i < SIM_PH_COUNT; i++)
        if (strcmp(cat, sim_phase_name(i)) == 0)
            return i;
    return -1;
}

static int rank_of(const struct trace_event *ev)
{
    if (ev->args_json) {
        json_t *a = json_loads(ev->args_json, 0, NULL);
        json_t *r = json_object_get(a, "rank");
        int rank = json_is_integer(r) ? (int)json_integer_value(r) : -1;
        json_decref(a);
        if (rank >= 0)
            return rank;
    }
    if (ev->pid >= 1 && ev->pid < 100)
        return ev->pid - 1;
    if (ev->pid >= 100 && ev->pid < 200)
        return ev->tid;
    return -1;
}

int val_trace_times(const struct trace_doc *d, struct val_trace_times *t, struct rl_err *e)
{
    memset(t, 0, sizeof *t);
    struct edge *ed = malloc(sizeof *ed * (size_t)(2 * d->n_events + 1));
    if (!ed)
        return rl_errf(e, RL_ENOMEM, "trace: out of memory");
    int n = 0;
    for (int i = 0; i < d->n_events; i++) {
        const struct trace_event *ev = &d->events[i];
        int ph = ev->ph == 'X' ? phase_of(ev->cat) : -1;
        int rank = ph >= 0 ? rank_of(ev) : -1;
        if (ph < 0 || rank < 0 || ev->dur_ns <= 0)
            continue;
        ed[n++] = (struct edge){rank, ev->ts_ns, ph, +1};
        ed[n++] = (struct edge){rank, ev->ts_ns + ev->dur_ns, ph, -1};
    }
    qsort(ed, (size_t)n, sizeof *ed, cmp_edge);
    int cap = 0;
    for (int i = 0; i < n;) {
        int rank = ed[i].rank;
        if (t->n_ranks == cap) {
            cap = cap ? cap * 2 : 8;
            struct val_rank_times *nr = realloc(t->ranks, sizeof *nr * (size_t)cap);
            if (!nr) {
                free(ed);
                val_trace_times_free(t);
                return rl_errf(e, RL_ENOMEM, "trace: out of memory");
            }
            t->ranks = nr;
        }
        struct val_rank_times *rt = &t->ranks[t->n_ranks++];
        memset(rt, 0, sizeof *rt);
        rt->rank = rank;
        int active[VAL_PHASES] = {0}, any = 0;
        int64_t first = ed[i].t_ns, prev = first;
        for (; i < n && ed[i].rank == rank; i++) {
            int64_t dt = ed[i].t_ns - prev;
            if (dt > 0) {
                int top = -1;
                for (int p = 0; p < VAL_PHASES; p++)
                    if (active[p]) {
                        rt->busy_ns[p] += dt;
                        if (top < 0)
                            top = p;
                    }
                if (top >= 0)
                    rt->exposed_ns[top] += dt;
                else
                    rt->idle_ns += dt;
            }
            prev = ed[i].t_ns;
            active[ed[i].phase] += ed[i].delta;
            any += ed[i].delta;
            if (ed[i].delta > 0)
                rt->spans++;
        }
        (void)any;
        rt->extent_ns = prev - first;
    }
    free(ed);
    return 0;
}

void val_trace_times_free(struct val_trace_times *t)
{
    if (!t)
        return;
    free(t->ranks);
    t->ranks = NULL;
    t->n_ranks = 0;
}

const struct val_rank_times *val_trace_rank(const struct val_trace_times *t, int rank)
{
    for (int i = 0; i < t->n_ranks; i++)
        if (t->ranks[i].rank == rank)
            return &t->ranks[i];
    return NULL;
}
