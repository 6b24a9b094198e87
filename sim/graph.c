/* sim/graph.c — runs a DAG of tasks on the flow model. Each task becomes ready when its last
 * predecessor ends, waits its fixed latency, then runs one flow activity. Ready tasks start in
 * the order their predecessors finish (ties: task index order of the finishing predecessor's
 * successor list), so a run is deterministic. O((T + E) log n) events plus the flow model. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

void sim_graph_init(struct sim_graph *g) { memset(g, 0, sizeof *g); }

void sim_graph_free(struct sim_graph *g)
{
    free(g->task);
    free(g->edge);
    free(g->succ);
    memset(g, 0, sizeof *g);
}

void sim_graph_reset(struct sim_graph *g)
{
    g->n_task = 0;
    g->n_edge = 0;
    g->n_done = 0;
    g->end_ns = 0;
    g->err = 0;
    g->e.code = 0;
}

int sim_graph_add(struct sim_graph *g, const struct sim_task *t)
{
    if (rl_grow(&g->task, &g->cap_task, sizeof *g->task, g->n_task + 1, 256))
        return rl_errf(&g->e, RL_ENOMEM, "task graph: out of memory for %d tasks", g->n_task + 1);
    g->task[g->n_task] = *t;
    return g->n_task++;
}

int sim_graph_dep(struct sim_graph *g, int from, int to)
{
    if (from < 0)
        return 0;
    if (from >= g->n_task || to < 0 || to >= g->n_task || from == to)
        return rl_errf(&g->e, RL_EINVAL, "task graph: an edge %d -> %d is not allowed (two different tasks "
                       "of 0..%d)", from, to, g->n_task - 1);
    if (rl_grow(&g->edge, &g->cap_edge, sizeof *g->edge, g->n_edge + 1, 512))
        return rl_errf(&g->e, RL_ENOMEM, "task graph: out of memory for %d edges", g->n_edge + 1);
    g->edge[g->n_edge][0] = from;
    g->edge[g->n_edge][1] = to;
    g->n_edge++;
    return 0;
}

static void task_ready(struct sim_graph *g, int i);

static void task_done(struct sim_flow *f, void *arg, int64_t tag)
{
    struct sim_graph *g = arg;
    struct sim_task *t = &g->task[tag];
    t->t_end_ns = f->sim->now_ns;
    g->n_done++;
    if (t->t_end_ns > g->end_ns)
        g->end_ns = t->t_end_ns;
    for (int k = 0; k < t->n_succ; k++) {
        int j = g->succ[t->first_succ + k];
        if (--g->task[j].n_wait == 0)
            task_ready(g, j);
    }
}

static void task_begin(struct sim_graph *g, int i)
{
    struct sim_task *t = &g->task[i];
    t->t_start_ns = g->flow->sim->now_ns;
    struct sim_flow_req r = t->req;
    r.done = task_done;
    r.arg = g;
    r.tag = i;
    struct rl_err e;
    int rc = sim_flow_start(g->flow, &r, NULL, &e);
    if (rc && !g->err) {
        g->err = rc;
        rl_errf(&g->e, rc, "task %d (%s): %s", i, t->name ? t->name : "?", e.msg);
    }
}

static void on_latency(struct sim *s, void *arg, int64_t tag)
{
    (void)s;
    task_begin(arg, (int)tag);
}

static void task_ready(struct sim_graph *g, int i)
{
    struct sim_task *t = &g->task[i];
    t->t_ready_ns = g->flow->sim->now_ns;
    if (t->latency_ns > 0) {
        int rc = sim_after(g->flow->sim, t->latency_ns, on_latency, g, i, NULL);
        if (rc && !g->err) {
            g->err = rc;
            rl_errf(&g->e, rc, "task %d (%s): %s", i, t->name ? t->name : "?", g->flow->sim->e.msg);
        }
    } else {
        task_begin(g, i);
    }
}

int sim_graph_run(struct sim_graph *g, struct sim_flow *f, struct rl_err *e)
{
    free(g->succ);
    g->succ = malloc(sizeof *g->succ * (size_t)(g->n_edge ? g->n_edge : 1));
    if (!g->succ)
        return rl_errf(e, RL_ENOMEM, "task graph: out of memory for %d edges", g->n_edge);
    for (int i = 0; i < g->n_task; i++) {
        g->task[i].n_wait = 0;
        g->task[i].n_succ = 0;
        g->task[i].t_ready_ns = g->task[i].t_start_ns = g->task[i].t_end_ns = -1;
    }
    for (int k = 0; k < g->n_edge; k++) {
        g->task[g->edge[k][0]].n_succ++;
        g->task[g->edge[k][1]].n_wait++;
    }
    int off = 0;
    for (int i = 0; i < g->n_task; i++) {
        g->task[i].first_succ = off;
        off += g->task[i].n_succ;
        g->task[i].n_succ = 0;
    }
    /* Edges keep their insertion order within each successor list. */
    for (int k = 0; k < g->n_edge; k++) {
        struct sim_task *t = &g->task[g->edge[k][0]];
        g->succ[t->first_succ + t->n_succ++] = g->edge[k][1];
    }
    g->flow = f;
    g->n_done = 0;
    g->err = 0;
    g->end_ns = f->sim->now_ns;
    for (int i = 0; i < g->n_task; i++)
        if (g->task[i].n_wait == 0)
            task_ready(g, i);
    int rc = sim_run(f->sim, -1);
    g->flow = NULL;
    if (g->err)
        return rl_errf(e, g->err, "task graph: %s", g->e.msg);
    if (rc)
        return rl_errf(e, rc, "task graph: %s", f->sim->e.code ? f->sim->e.msg : rl_strerror(rc));
    if (g->n_done != g->n_task)
        return rl_errf(e, RL_EINVAL, "task graph: %d of %d tasks never ran (a dependency cycle)",
                       g->n_task - g->n_done, g->n_task);
    return 0;
}
