/* validation/tdiff.c — per-rank, per-phase busy and exposed time of a trace in the shared layout
 * (see val.h), and two traces lined up by rank and phase as `trace diff --json` prints them
 * (tdiff_json.h). */
#include <jansson.h>   /* json_loads: args.rank */
#include <stdlib.h>
#include <string.h>

#include "plan/step.h"
#include "traces/layout.h"
#include "validation/tdiff_json.h"
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

int val_trace_times_read(const char *path, struct val_trace_times *t, struct rl_err *e)
{
    struct trace_doc d;
    int rc = trace_read(path, &d, e);
    if (rc)
        return rc;
    rc = val_trace_times(&d, t, e);
    trace_doc_free(&d);
    if (!rc && t->n_ranks == 0) {
        val_trace_times_free(t);
        rc = rl_errf(e, RL_EINVAL, "%s: no span with a phase category (cat one of forward, backward, "
                     "gpu_adam, ...: the layout ratiolab predict --trace and ratiolab run write)", path);
    }
    return rc;
}

/* One side of a rank ({"extent_ns","idle_ns","phases":{phase:{"busy_ns","exposed_ns"}}}), or the
 * difference b - a of two sides when both are given; null when the trace has no such rank. */
static json_t *side_json(const struct val_rank_times *a, const struct val_rank_times *b)
{
    if (!a)
        return json_null();
    static const struct val_rank_times zero;
    const struct val_rank_times *x = b ? a : &zero, *y = b ? b : a;   /* the figure is y - x */
    json_t *o = json_object();
    json_object_set_new(o, "extent_ns", json_integer(y->extent_ns - x->extent_ns));
    json_object_set_new(o, "idle_ns", json_integer(y->idle_ns - x->idle_ns));
    json_t *ph = json_object();
    for (int p = 0; p < STEP_PH_COUNT; p++) {
        json_t *z = json_object();
        json_object_set_new(z, "busy_ns", json_integer(y->busy_ns[p] - x->busy_ns[p]));
        json_object_set_new(z, "exposed_ns", json_integer(y->exposed_ns[p] - x->exposed_ns[p]));
        json_object_set_new(ph, step_phase_name(p), z);
    }
    json_object_set_new(o, "phases", ph);
    return o;
}

json_t *val_trace_diff_json(const char *path_a, const char *path_b, const struct val_trace_times *a,
                            const struct val_trace_times *b)
{
    int *ranks, nr;
    val_trace_ranks_union(a, b, &ranks, &nr);
    json_t *o = json_object();
    json_object_set_new(o, "a", json_string(path_a));
    json_object_set_new(o, "b", json_string(path_b));
    json_t *arr = json_array();
    for (int k = 0; k < nr; k++) {
        const struct val_rank_times *x = val_trace_rank(a, ranks[k]), *y = val_trace_rank(b, ranks[k]);
        json_t *r = json_object();
        json_object_set_new(r, "rank", json_integer(ranks[k]));
        json_object_set_new(r, "a", side_json(x, NULL));
        json_object_set_new(r, "b", side_json(y, NULL));
        json_object_set_new(r, "diff", x && y ? side_json(x, y) : json_null());
        json_array_append_new(arr, r);
    }
    json_object_set_new(o, "ranks", arr);
    free(ranks);
    return o;
}
