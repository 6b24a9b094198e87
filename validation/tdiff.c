/* validation/tdiff.c — per-rank, per-phase busy and exposed time of a trace in the shared layout
 * (see val.h). */
#include <jansson.h>   /* json_loads: args.rank */
#include <stdlib.h>
#include <string.h>

#include "plan/step.h"
#include "traces/layout.h"
#include "validation/val.h"

static int phase_of(const char *cat)
{
    if (!cat)
        return -1;
    for (int i = 0; i < STEP_PH_COUNT; i++)
        if (strcmp(cat, step_phase_name(i)) == 0)
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
    if (ev->pid >= TRACE_PID_RANK(0) && ev->pid < TRACE_PID_SOCKET(0))
        return ev->pid - TRACE_PID_RANK(0);
    if (ev->pid >= TRACE_PID_SOCKET(0) && ev->pid < TRACE_PID_LINKS)
        return ev->tid;   /* TRACE_TID_POOL(g) == g */
    return -1;
}

/* A span of the trace with its rank, for sorting by rank. */
struct rspan {
    int rank;                /* rank */
    struct step_span s;      /* the span */
};

static int cmp_rspan(const void *x, const void *y)
{
    const struct rspan *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->s.start_ns < b->s.start_ns ? -1 : a->s.start_ns > b->s.start_ns;
}

int val_trace_times(const struct trace_doc *d, struct val_trace_times *t, struct rl_err *e)
{
    memset(t, 0, sizeof *t);
    struct rspan *sp = malloc(sizeof *sp * (size_t)(d->n_events + 1));
    struct step_span *one = malloc(sizeof *one * (size_t)(d->n_events + 1));
    if (!sp || !one) {
        free(sp);
        free(one);
        return rl_errf(e, RL_ENOMEM, "trace: out of memory");
    }
    int n = 0;
    /* One step: the first timed step of a trace that marks its steps (the executor's), else all. */
    int64_t w0 = INT64_MIN, w1 = INT64_MAX;
    trace_step_window(d, &w0, &w1);
    for (int i = 0; i < d->n_events; i++) {
        const struct trace_event *ev = &d->events[i];
        int ph = ev->ph == 'X' ? phase_of(ev->cat) : -1;
        int rank = ph >= 0 ? rank_of(ev) : -1;
        if (ph < 0 || rank < 0 || ev->dur_ns <= 0 || ev->ts_ns < w0 || ev->ts_ns >= w1)
            continue;
        sp[n++] = (struct rspan){rank, {ev->ts_ns, ev->ts_ns + ev->dur_ns, ph}};
    }
    qsort(sp, (size_t)n, sizeof *sp, cmp_rspan);
    int cap = 0, rc = 0;
    for (int i = 0; i < n && !rc;) {
        int rank = sp[i].rank, k = 0;
        int64_t t0 = sp[i].s.start_ns, t1 = sp[i].s.end_ns;
        for (; i < n && sp[i].rank == rank; i++) {
            one[k++] = sp[i].s;
            t1 = sp[i].s.end_ns > t1 ? sp[i].s.end_ns : t1;
        }
        if (rl_grow(&t->ranks, &cap, sizeof *t->ranks, t->n_ranks + 1, 8)) {
            rc = rl_errf(e, RL_ENOMEM, "trace: out of memory");
            break;
        }
        struct val_rank_times *rt = &t->ranks[t->n_ranks++];
        memset(rt, 0, sizeof *rt);
        rt->rank = rank;
        rt->spans = k;
        rt->extent_ns = t1 - t0;
        /* The breakdown the simulator and the executor use (plan/step.h). */
        struct step_breakdown bd;
        memset(&bd, 0, sizeof bd);
        if (step_breakdown(one, k, t0, t1, &bd)) {
            rc = rl_errf(e, RL_ENOMEM, "trace: out of memory");
            break;
        }
        for (int p = 0; p < VAL_PHASES; p++) {
            rt->busy_ns[p] = bd.phase[p].busy_ns;
            rt->exposed_ns[p] = bd.phase[p].exposed_ns;
        }
        rt->idle_ns = bd.idle_ns;
    }
    free(sp);
    free(one);
    if (rc)
        val_trace_times_free(t);
    return rc;
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

void val_trace_ranks_union(const struct val_trace_times *a, const struct val_trace_times *b, int **ranks, int *n)
{
    *n = 0;
    *ranks = malloc(sizeof **ranks * (size_t)(a->n_ranks + b->n_ranks + 1));
    for (int i = 0, j = 0; *ranks && (i < a->n_ranks || j < b->n_ranks);) {   /* both are sorted */
        int ra = i < a->n_ranks ? a->ranks[i].rank : 1 << 30, rb = j < b->n_ranks ? b->ranks[j].rank : 1 << 30;
        int r = ra < rb ? ra : rb;
        (*ranks)[(*n)++] = r;
        i += ra == r;
        j += rb == r;
    }
}
