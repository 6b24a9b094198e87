/* sim/sim.h — the discrete-event engine, the max-min fair flow model and the task graph.
 *
 * Nothing here knows about GPUs: the engine is a clock and an event heap, the flow model shares
 * resources (anything with a capacity in work units per second) between activities, and the task
 * graph runs a DAG of activities on them. sim/hw.h and sim/step.h give those a meaning.
 *
 * Complexity (n = pending events, A = running activities, k = resources per activity <= 6,
 * R = resources touched by running activities):
 *   sim_at / sim_after        O(log n)
 *   sim_cancel                O(1) (a flag; the entry is dropped when it reaches the heap top)
 *   one event                 O(log n) to pop
 *   flow start / end          O(1) plus one rate recomputation per distinct time (batched)
 *   rate recomputation        O(L x (A k + R)), L = distinct saturation levels (L <= A + R)
 */
#ifndef RL_SIM_SIM_H
#define RL_SIM_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"

/* ---- engine ------------------------------------------------------------------------------------ */
struct sim;
/* An event callback: runs at s->now_ns with the arg and tag given to sim_at. */
typedef void sim_event_fn(struct sim *s, void *arg, int64_t tag);

/* Handle of a scheduled event; stays valid (and harmless to cancel) after the event ran. */
struct sim_event_id {
    uint32_t slot;   /* index into the event pool */
    uint32_t gen;    /* generation of that slot when scheduled */
};

struct sim__entry;   /* a heap entry (sim/engine.c) */
struct sim__event;   /* a pooled event payload (sim/engine.c) */

struct sim {
    int64_t now_ns;              /* current time, never decreases */
    uint64_t next_seq;           /* next insertion number */
    struct sim__entry *heap;     /* binary min-heap of pending entries */
    uint32_t n_heap;             /* entries used */
    int cap_heap;                /* entries allocated */
    struct sim__event *ev;       /* event pool */
    uint32_t n_ev;               /* slots ever used */
    int cap_ev;                  /* slots allocated */
    uint32_t *free_slot;         /* free pool slots (stack) */
    uint32_t n_free;             /* entries on that stack */
    int cap_free;                /* entries allocated (>= n_ev) */
    uint32_t *batch;             /* slots due at now_ns, collected before running */
    int cap_batch;               /* allocated entries of batch */
    uint64_t n_run;              /* events run (cancelled ones excluded) */
    uint64_t n_cancelled;        /* events dropped because cancelled */
    bool stop;                   /* set by sim_stop: sim_run returns after the current batch */
    int err;                     /* first allocation failure inside a callback (RL_ENOMEM) */
    struct rl_err e;             /* the message of the last error code an engine call returned */
};

int sim_init(struct sim *s);
void sim_free(struct sim *s);
/* Schedules fn at absolute time t_ns >= now_ns. id may be NULL. RL_EINVAL for a past time,
 * RL_ENOMEM when memory runs out. */
int sim_at(struct sim *s, int64_t t_ns, sim_event_fn *fn, void *arg, int64_t tag,
           struct sim_event_id *id);
int sim_after(struct sim *s, int64_t dt_ns, sim_event_fn *fn, void *arg, int64_t tag,
              struct sim_event_id *id);
/* Marks a pending event cancelled; returns false when it already ran or was cancelled. */
bool sim_cancel(struct sim *s, struct sim_event_id id);
/* Runs events until none is left, sim_stop is called, or the next one is after until_ns (< 0:
 * no limit). Each round pops every event due at the earliest time, then runs them in (t, seq)
 * order; events they schedule at the same time run in the next round. Returns 0 or s->err. */
int sim_run(struct sim *s, int64_t until_ns);
void sim_stop(struct sim *s);
/* Pending (including cancelled, not yet dropped) events. */
static inline uint32_t sim_pending(const struct sim *s) { return s->n_heap; }

/* ---- flow model ---------------------------------------------------------------------------------- */
#define SIM_MAX_RES 6          /* resources one activity may use */
#define SIM_NAME_MAX 40

/* A resource: capacity in work units per second (bytes/s, FLOP/s, elements/s). */
struct sim_resource {
    char name[SIM_NAME_MAX];     /* for traces, e.g. "gpu3.pcie.d2h" */
    double capacity;             /* units per second, > 0 */
    double served;               /* units served so far (sum of weight x work progressed) */
    double load;                 /* units per second in use after the last recomputation */
    double busy_s;               /* seconds with load > 0 */
    /* scratch of the recomputation */
    double rem;                  /* capacity left at the current level */
    double wsum;                 /* summed weights of unfixed activities on it */
    int mark;                    /* recomputation stamp */
};

struct sim_flow;
/* Called when an activity's work is done, at s->now_ns. */
typedef void sim_flow_done_fn(struct sim_flow *f, void *arg, int64_t tag);
/* Called after every rate recomputation (for traces); may be NULL. */
typedef void sim_flow_observe_fn(struct sim_flow *f, void *arg);

/* What an activity needs: `work` units, progressing at rate x where every resource i carries
 * weight[i] x x, and x <= rate_cap (0: no own cap). Rates are max-min fair over the activities,
 * measured in the units of each activity's most heavily weighted resource (so with weights 1 it
 * is plain max-min fairness of rates). */
struct sim_flow_req {
    double work;                 /* units, >= 0 */
    int n_res;                   /* 0..SIM_MAX_RES; 0 with rate_cap 0 completes at once */
    int res[SIM_MAX_RES];        /* resource indices */
    double weight[SIM_MAX_RES];  /* load per unit of progress on each (> 0) */
    double rate_cap;             /* units per second, 0 = none */
    sim_flow_done_fn *done;      /* may be NULL */
    void *arg;                   /* for done */
    int64_t tag;                 /* for done */
};

struct sim__act;   /* a running activity (sim/flow.c) */

struct sim_flow {
    struct sim *sim;             /* engine, not owned */
    struct sim_resource *res;    /* resources */
    int n_res, cap_res;
    struct sim__act *act;        /* activity pool */
    int n_act, cap_act;          /* slots ever used / allocated */
    int *free_act, n_free;       /* free slots */
    int *active, n_active;       /* running activities, in start order */
    int *due;                    /* scratch: activities completing now (cap_act entries) */
    int64_t t_advanced_ns;       /* time up to which remaining work is accounted */
    bool dirty;                  /* rates must be recomputed */
    bool update_pending;         /* an update event is scheduled at now */
    struct sim_event_id next_id; /* the scheduled next-completion event */
    bool next_set;               /* next_id is pending */
    int stamp;                   /* recomputation counter (resource marks) */
    int *touched, cap_touched;   /* scratch: resources used by running activities */
    uint64_t n_recompute;        /* rate recomputations */
    sim_flow_observe_fn *observe;/* after each recomputation */
    void *observe_arg;
};

int sim_flow_init(struct sim_flow *f, struct sim *s);
void sim_flow_free(struct sim_flow *f);
/* Adds a resource; returns its index (>= 0) or an RL_E* code. */
int sim_flow_add_resource(struct sim_flow *f, const char *name, double capacity, struct rl_err *e);
/* Starts an activity now; *id (may be NULL) receives its handle. */
int sim_flow_start(struct sim_flow *f, const struct sim_flow_req *r, int *id, struct rl_err *e);
/* Current rate of a running activity (units per second). */
double sim_flow_rate(const struct sim_flow *f, int id);
/* Brings every remaining-work figure up to now (also done before each recomputation). */
void sim_flow_advance(struct sim_flow *f);

/* ---- task graph ------------------------------------------------------------------------------------ */
/* What a task moves or computes, for its trace args. One value; which member holds it follows the
 * task's phase (the step's trace writer names it the same way). */
union sim_task_size {
    int64_t bytes;      /* copies and collectives */
    int64_t flops;      /* forward and backward compute */
    int64_t elements;   /* Adam, norms, casts, unscale, overflow check */
};

/* A task waits for its predecessors, then waits latency_ns, then runs a flow activity. */
struct sim_task {
    const char *name;            /* static string, shown in traces */
    int track;                   /* trace track (a stream, an engine, a pool); -1 none */
    int phase;                   /* caller's phase id for breakdowns; -1 none */
    int rank;                    /* GPU index in the node it belongs to; -1 shared */
    struct sim_flow_req req;     /* work, resources, weights, cap (done/arg/tag are set by the graph) */
    int64_t latency_ns;          /* fixed delay before the work starts */
    union sim_task_size size;    /* bytes, FLOPs or elements, for trace args */
    /* filled by the run */
    int n_wait;                  /* predecessors not finished */
    int64_t t_ready_ns;          /* all predecessors done */
    int64_t t_start_ns;          /* latency over, work starts */
    int64_t t_end_ns;            /* done */
    int first_succ, n_succ;      /* successors in sim_graph.succ (CSR, after sim_graph_run) */
};

struct sim_graph {
    struct sim_task *task;       /* tasks */
    int n_task, cap_task;
    int (*edge)[2];              /* (from, to) pairs as added */
    int n_edge, cap_edge;
    int *succ;                   /* CSR successor lists */
    int64_t end_ns;              /* when the last task finished */
    int n_done;                  /* tasks finished */
    int err;                     /* first error of the run */
    struct rl_err e;             /* the message of the last error code a graph call returned */
    struct sim_flow *flow;       /* during sim_graph_run */
};

void sim_graph_init(struct sim_graph *g);
void sim_graph_free(struct sim_graph *g);
void sim_graph_reset(struct sim_graph *g);   /* keeps the allocations */
/* Adds a task; returns its index or a negative RL_E* code (its message in g->e). A failed
 * sim_graph_dep leaves its message there too; sim_at, sim_after and sim_run in s->e. */
int sim_graph_add(struct sim_graph *g, const struct sim_task *t);
/* Task `to` waits for task `from` (from < 0 is ignored, so optional predecessors are easy). */
int sim_graph_dep(struct sim_graph *g, int from, int to);
/* Runs every task on the flow model (whose engine must be idle); RL_EINVAL on a cycle. */
int sim_graph_run(struct sim_graph *g, struct sim_flow *f, struct rl_err *e);

#endif
