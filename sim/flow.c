/* sim/flow.c — max-min fair sharing of resources between activities (progressive filling).
 *
 * Invariants: between recomputations every running activity progresses at a constant rate;
 * remaining work is brought up to date (sim_flow_advance) before any rate changes. Completion
 * times are integer nanoseconds, rounded up; a completion time is recomputed only when the
 * activity's rate changed, so an activity whose share never changes ends exactly at
 * start + ceil(work / rate) whatever else happens around it. One event (the earliest completion)
 * is pending at a time; it is cancelled and rescheduled whenever rates change. Starts and ends
 * that happen at the same time are batched into one recomputation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

/* Relative tolerance for "this resource is saturated" / "this cap is reached" after a level
 * increase. Only decides which activities are fixed in the same round; the bottleneck itself is
 * fixed exactly. */
#define SIM__SAT_TOL 1e-12

/* A running activity (a slot of the pool f->act). */
struct sim__act {
    struct sim_flow_req req;     /* as started */
    double remaining;            /* units left */
    double rate;                 /* units per second, from the last recomputation */
    int64_t t_start_ns;          /* when started */
    int64_t t_finish_ns;         /* completion time at the current rate (INT64_MAX: never) */
    int active_pos;              /* position in f->active, -1 when free */
    bool fixed;                  /* scratch: rate settled at the current level */
    double settled;              /* scratch: the rate it settled at */
    double growth;               /* scratch: 1 / largest weight (rate per unit of level) */
};

int sim_flow_init(struct sim_flow *f, struct sim *s)
{
    memset(f, 0, sizeof *f);
    f->sim = s;
    f->t_advanced_ns = s->now_ns;
    return 0;
}

void sim_flow_free(struct sim_flow *f)
{
    free(f->res);
    free(f->act);
    free(f->free_act);
    free(f->active);
    free(f->touched);
    free(f->due);
    memset(f, 0, sizeof *f);
}

int sim_flow_add_resource(struct sim_flow *f, const char *name, double capacity, struct rl_err *e)
{
    if (!(capacity > 0) || !isfinite(capacity))
        return rl_errf(e, RL_EINVAL, "resource %s: capacity %g is not allowed (a finite number > 0)",
                       name, capacity);
    int cap_t = f->cap_res;
    if (rl_grow(&f->res, &f->cap_res, sizeof *f->res, f->n_res + 1, 32) ||
        rl_grow(&f->touched, &cap_t, sizeof *f->touched, f->n_res + 1, 32))
        return rl_errf(e, RL_ENOMEM, "resource %s: out of memory", name);
    f->cap_touched = cap_t;
    struct sim_resource *r = &f->res[f->n_res];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->capacity = capacity;
    r->mark = -1;
    return f->n_res++;
}

/* ns for `s` seconds, rounded up; values within 1e-6 ns above an integer count as that integer
 * (absorbs the last-bit error of work / rate). */
static int64_t ceil_ns(double s)
{
    double ns = s * 1e9;
    if (!(ns < 9.0e18))
        return INT64_MAX;
    double c = ceil(ns - 1e-6);
    return c > 0 ? (int64_t)c : 0;
}

void sim_flow_advance(struct sim_flow *f)
{
    int64_t now = f->sim->now_ns;
    int64_t dt_ns = now - f->t_advanced_ns;
    if (dt_ns <= 0)
        return;
    double dt = (double)dt_ns * 1e-9;
    for (int i = 0; i < f->n_active; i++) {
        struct sim__act *a = &f->act[f->active[i]];
        if (!(a->rate > 0) || isinf(a->rate))
            continue;
        double prog = a->rate * dt;
        if (prog > a->remaining)
            prog = a->remaining;
        a->remaining -= prog;
        for (int k = 0; k < a->req.n_res; k++)
            f->res[a->req.res[k]].served += a->req.weight[k] * prog;
    }
    for (int i = 0; i < f->n_res; i++)
        if (f->res[i].load > 0)
            f->res[i].busy_s += dt;
    f->t_advanced_ns = now;
}

static void on_tick(struct sim *s, void *arg, int64_t tag);
static void on_update(struct sim *s, void *arg, int64_t tag);

/* Recomputation, step 1: every active activity unfixed, except one that uses nothing (done at once);
 * its growth 1 / w_max; every resource it uses marked with `stamp`, its remaining capacity full,
 * and listed in f->touched (*nt of them). Returns the number of unfixed activities. */
static int fill_prepare(struct sim_flow *f, int64_t now, int stamp, int *nt_out)
{
    int nt = 0;
    int unfixed = 0;
    for (int i = 0; i < f->n_active; i++) {
        struct sim__act *a = &f->act[f->active[i]];
        a->fixed = false;
        if (a->req.n_res == 0 && !(a->req.rate_cap > 0)) {
            a->fixed = true;   /* uses nothing: done at once */
            a->rate = INFINITY;
            a->t_finish_ns = now;
            continue;
        }
        unfixed++;
        double wmax = 0;
        for (int k = 0; k < a->req.n_res; k++)
            if (a->req.weight[k] > wmax)
                wmax = a->req.weight[k];
        a->growth = wmax > 0 ? 1.0 / wmax : 1.0;
        for (int k = 0; k < a->req.n_res; k++) {
            struct sim_resource *r = &f->res[a->req.res[k]];
            if (r->mark != stamp) {
                r->mark = stamp;
                r->rem = r->capacity;
                f->touched[nt++] = a->req.res[k];
            }
        }
    }
    for (int i = 0; i < f->n_active; i++) {
        struct sim__act *a = &f->act[f->active[i]];
        a->settled = a->fixed ? INFINITY : -1.0;
    }
    *nt_out = nt;
    return unfixed;
}

/* Step 2a: each touched resource's growth rate of use, the sum of its unfixed activities' weight
 * x growth. */
static void fill_weights(struct sim_flow *f, int nt)
{
    for (int j = 0; j < nt; j++)
        f->res[f->touched[j]].wsum = 0;
    for (int i = 0; i < f->n_active; i++) {
        struct sim__act *a = &f->act[f->active[i]];
        if (a->fixed)
            continue;
        for (int k = 0; k < a->req.n_res; k++)
            f->res[a->req.res[k]].wsum += a->req.weight[k] * a->growth;
    }
}

/* Step 2b: the bottleneck, the smallest level increase that saturates a resource (*arg_res) or
 * brings an activity to its cap (*arg_act, an index into f->active); returns that increase. */
static double fill_bottleneck(const struct sim_flow *f, int nt, double level, int *arg_res_out, int *arg_act_out)
{
    double delta = INFINITY;
    int arg_res = -1, arg_act = -1;
    for (int j = 0; j < nt; j++) {
        struct sim_resource *r = &f->res[f->touched[j]];
        if (r->wsum > 0) {
            double d = r->rem / r->wsum;
            if (d < delta) {
                delta = d;
                arg_res = f->touched[j];
                arg_act = -1;
            }
        }
    }
    for (int i = 0; i < f->n_active; i++) {
        struct sim__act *a = &f->act[f->active[i]];
        if (!a->fixed && a->req.rate_cap > 0 && a->req.rate_cap / a->growth - level < delta) {
            delta = a->req.rate_cap / a->growth - level;
            arg_act = i;
            arg_res = -1;
        }
    }
    *arg_res_out = arg_res;
    *arg_act_out = arg_act;
    return delta;
}

/* Step 2c: the level raised by delta uses up that much of every touched resource; the bottleneck
 * resource (arg_res >= 0) is exactly saturated. */
static void fill_raise(struct sim_flow *f, int nt, double delta, int arg_res)
{
    for (int j = 0; j < nt; j++) {
        struct sim_resource *r = &f->res[f->touched[j]];
        if (r->wsum > 0) {
            r->rem -= delta * r->wsum;
            if (r->rem < 0)
                r->rem = 0;
        }
    }
    if (arg_res >= 0)
        f->res[arg_res].rem = 0;
}

/* Step 2d: every unfixed activity at its cap (or the capped bottleneck arg_act) or on a saturated
 * resource is fixed at its settled rate. Returns the number fixed in this round. */
static int fill_fix(struct sim_flow *f, double level, int arg_act)
{
    int fixed = 0;
    for (int i = 0; i < f->n_active; i++) {
        struct sim__act *a = &f->act[f->active[i]];
        if (a->fixed)
            continue;
        bool fix = i == arg_act || (a->req.rate_cap > 0 && a->req.rate_cap - level * a->growth <=
                                                              SIM__SAT_TOL * a->req.rate_cap);
        for (int k = 0; k < a->req.n_res && !fix; k++) {
            struct sim_resource *r = &f->res[a->req.res[k]];
            fix = r->rem <= SIM__SAT_TOL * r->capacity;
        }
        if (fix) {
            a->fixed = true;
            a->settled = (i == arg_act || level * a->growth > a->req.rate_cap) && a->req.rate_cap > 0
                             ? a->req.rate_cap
                             : level * a->growth;
            fixed++;
        }
    }
    return fixed;
}

/* Step 3: the settled rates applied: a completion time recomputed only for an activity whose rate
 * changed (or that had none), every resource's load summed again. Returns the earliest completion
 * (INT64_MAX: none). */
static int64_t apply_rates(struct sim_flow *f, int64_t now, int stamp, int nt)
{
    for (int j = 0; j < nt; j++)
        f->res[f->touched[j]].load = 0;
    for (int i = 0; i < f->n_res; i++)
        if (f->res[i].mark != stamp)
            f->res[i].load = 0;
    int64_t next = INT64_MAX;
    for (int i = 0; i < f->n_active; i++) {
        struct sim__act *a = &f->act[f->active[i]];
        double rate = a->settled;
        if (isinf(rate)) {
            a->rate = rate;
            a->t_finish_ns = now;
        } else if (rate != a->rate || a->t_finish_ns == INT64_MAX) {
            a->rate = rate;
            if (a->remaining <= 0)
                a->t_finish_ns = now;
            else if (rate > 0) {
                int64_t d = ceil_ns(a->remaining / rate);
                a->t_finish_ns = d >= INT64_MAX - now ? INT64_MAX : now + d;
            } else
                a->t_finish_ns = INT64_MAX;
        }
        if (!isinf(a->rate))
            for (int k = 0; k < a->req.n_res; k++)
                f->res[a->req.res[k]].load += a->req.weight[k] * a->rate;
        if (a->t_finish_ns < next)
            next = a->t_finish_ns;
    }
    return next;
}

/* Step 4: the one pending completion event replaced by one at `next`; the observer told. */
static void reschedule(struct sim_flow *f, int64_t next)
{
    f->n_recompute++;
    f->dirty = false;
    if (f->next_set)
        sim_cancel(f->sim, f->next_id);
    f->next_set = false;
    if (next != INT64_MAX) {
        if (sim_at(f->sim, next, on_tick, f, 0, &f->next_id) == 0)
            f->next_set = true;
    }
    if (f->observe)
        f->observe(f, f->observe_arg);
}

/* Progressive filling: a common "level" rises and every unfixed activity runs at level / w_max,
 * w_max its largest weight, so activities share a bottleneck equally in that resource's units
 * (a copy and a CPU Adam get equal bytes/s of DRAM, not equal bytes vs elements). The level rises
 * until a resource saturates or an activity reaches its own cap; those activities are fixed.
 * O(L x (A k + R)) with L rounds. */
static void recompute(struct sim_flow *f)
{
    int64_t now = f->sim->now_ns;
    int stamp = ++f->stamp;
    int nt = 0;
    int unfixed = fill_prepare(f, now, stamp, &nt);
    double level = 0;
    while (unfixed > 0) {
        fill_weights(f, nt);
        int arg_res, arg_act;
        double delta = fill_bottleneck(f, nt, level, &arg_res, &arg_act);
        if (delta < 0)
            delta = 0;
        level += delta;
        fill_raise(f, nt, delta, arg_res);
        unfixed -= fill_fix(f, level, arg_act);
    }
    reschedule(f, apply_rates(f, now, stamp, nt));
}

static void on_update(struct sim *s, void *arg, int64_t tag)
{
    (void)s;
    (void)tag;
    struct sim_flow *f = arg;
    f->update_pending = false;
    if (!f->dirty)
        return;
    sim_flow_advance(f);
    recompute(f);
}

static void mark_dirty(struct sim_flow *f)
{
    f->dirty = true;
    if (!f->update_pending) {
        if (sim_at(f->sim, f->sim->now_ns, on_update, f, 0, NULL) == 0)
            f->update_pending = true;
    }
}

/* The earliest completion is due: finish every activity due now, in start order, then let the
 * pending update recompute the rates once for everything that happened at this time. */
static void on_tick(struct sim *s, void *arg, int64_t tag)
{
    (void)tag;
    struct sim_flow *f = arg;
    f->next_set = false;
    sim_flow_advance(f);
    int64_t now = s->now_ns;
    int n_due = 0;
    int w = 0;
    int *due = f->due;   /* valid until the callbacks below run */
    for (int i = 0; i < f->n_active; i++) {
        struct sim__act *a = &f->act[f->active[i]];
        if (a->t_finish_ns <= now)
            n_due++;
    }
    if (n_due == 0) {
        mark_dirty(f);
        return;
    }
    n_due = 0;
    for (int i = 0; i < f->n_active; i++) {
        int id = f->active[i];
        struct sim__act *a = &f->act[id];
        if (a->t_finish_ns <= now) {
            /* Account the last fraction (rounding) so served work equals the work asked. */
            for (int k = 0; k < a->req.n_res; k++)
                f->res[a->req.res[k]].served += a->req.weight[k] * a->remaining;
            a->remaining = 0;
            a->active_pos = -1;
            due[n_due++] = id;
        } else {
            f->act[id].active_pos = w;
            f->active[w++] = id;
        }
    }
    f->n_active = w;
    mark_dirty(f);
    /* Callbacks may start activities, which may move f->act and f->due: index afresh each time,
     * and free each slot only once its request is copied. */
    for (int i = 0; i < n_due; i++) {
        int id = f->due[i];
        struct sim_flow_req r = f->act[id].req;
        f->free_act[f->n_free++] = id;
        if (r.done)
            r.done(f, r.arg, r.tag);
    }
}

int sim_flow_start(struct sim_flow *f, const struct sim_flow_req *r, int *id, struct rl_err *e)
{
    if (!(r->work >= 0) || !isfinite(r->work) || r->n_res < 0 || r->n_res > SIM_MAX_RES ||
        !(r->rate_cap >= 0) || !isfinite(r->rate_cap))
        return rl_errf(e, RL_EINVAL, "activity: work %g, %d resources, cap %g not allowed "
                       "(work >= 0, 0..%d resources, cap >= 0)", r->work, r->n_res, r->rate_cap,
                       SIM_MAX_RES);
    for (int k = 0; k < r->n_res; k++)
        if (r->res[k] < 0 || r->res[k] >= f->n_res || !(r->weight[k] > 0) || !isfinite(r->weight[k]))
            return rl_errf(e, RL_EINVAL, "activity: resource %d weight %g not allowed (an index "
                           "< %d, weight > 0)", r->res[k], r->weight[k], f->n_res);
    int slot;
    if (f->n_free) {
        slot = f->free_act[--f->n_free];
    } else {
        int c1 = f->cap_act, c2 = f->cap_act, c3 = f->cap_act, c4 = f->cap_act;
        if (rl_grow(&f->act, &c1, sizeof *f->act, f->n_act + 1, 32) ||
            rl_grow(&f->free_act, &c2, sizeof *f->free_act, f->n_act + 1, 32) ||
            rl_grow(&f->active, &c3, sizeof *f->active, f->n_act + 1, 32) ||
            rl_grow(&f->due, &c4, sizeof *f->due, f->n_act + 1, 32))
            return rl_errf(e, RL_ENOMEM, "activity: out of memory");
        f->cap_act = c1;
        slot = f->n_act++;
    }
    sim_flow_advance(f);
    struct sim__act *a = &f->act[slot];
    memset(a, 0, sizeof *a);
    a->req = *r;
    a->remaining = r->work;
    a->rate = 0;
    a->t_start_ns = f->sim->now_ns;
    a->t_finish_ns = INT64_MAX;
    a->active_pos = f->n_active;
    f->active[f->n_active++] = slot;
    if (id)
        *id = slot;
    mark_dirty(f);
    return 0;
}

double sim_flow_rate(const struct sim_flow *f, int id)
{
    if (id < 0 || id >= f->n_act || f->act[id].active_pos < 0)
        return 0;
    return f->act[id].rate;
}
