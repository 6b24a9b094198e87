/* bench/sim.c — simulator speed: engine events per second on one core, a 101-ratio sweep of the
 * default case (Megatron gpt-2.7b, TP 8 on dgx1-v100, plans included), and one step of gpt3-175b
 * on 1024 GPUs (128 nodes x 8). Targets: >= 5 M events/s, sweep < 100 ms, 1024-GPU step < 1 s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/plan.h"
#include "sim/hw.h"
#include "sim/sim.h"
#include "sim/step.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Steady-state heap churn: every event schedules a successor at a pseudo-random later time, so
 * the heap holds `width` pending events throughout. */
struct churn {
    uint64_t left;
    uint64_t rng;
};

static void churn_ev(struct sim *s, void *arg, int64_t tag)
{
    (void)tag;
    struct churn *c = arg;
    if (c->left == 0)
        return;
    c->left--;
    c->rng = c->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    sim_after(s, (int64_t)(c->rng >> 54), churn_ev, c, 0, NULL);
}

static double bench_events(uint64_t n, int width, uint64_t *ran)
{
    struct sim s;
    sim_init(&s);
    struct churn c = {n, 42};
    for (int i = 0; i < width; i++)
        sim_at(&s, i, churn_ev, &c, 0, NULL);
    double t0 = now_s();
    sim_run(&s, -1);
    double dt = now_s() - t0;
    *ran = s.n_run;
    sim_free(&s);
    return dt;
}

static int setup(struct plan_model *m, struct plan_layout *l, struct plan_zero *z, const char *catalog,
                 const char *model, int tp, int world, struct rl_err *e)
{
    memset(l, 0, sizeof *l);
    l->tp = tp;
    l->world = world;
    int rc = plan_layout_resolve(l, e);
    if (rc)
        return rc;
    struct plan_model_opts mo = {.tp = tp, .pp = 1, .pp_stage = 0, .seq_len = 0};
    if ((rc = plan_model_load(m, catalog, model, &mo, e)))
        return rc;
    plan_model_group(m, PLAN_GROUPS_AUTO, false);
    plan_zero_defaults(z);
    z->stage = 3;
    z->offload = PLAN_OFFLOAD_CPU;
    z->pin_memory = true;
    z->dtype = PLAN_FP16;
    return 0;
}

int main(void)
{
    const char *src = getenv("RATIOLAB_SRC");
    char catalog[4096];
    snprintf(catalog, sizeof catalog, "%s/catalog", src ? src : ".");
    struct rl_err e = {0};
    struct hw_profile hw;
    if (sim_hw_load(&hw, catalog, "dgx1-v100", &e)) {
        fprintf(stderr, "bench/sim: %s\n", e.msg);
        return 1;
    }
    printf("%-44s %14s %14s %s\n", "benchmark", "measured", "target", "");

    uint64_t ran;
    double dt = bench_events(10000000, 1024, &ran);
    double eps = (double)ran / dt;
    printf("%-44s %11.2f M/s %11s M/s %s\n", "engine events (heap of 1024, one core)", eps / 1e6, ">= 5",
           eps >= 5e6 ? "ok" : "MISSED");

    struct plan_model m;
    struct plan_layout l;
    struct plan_zero z;
    struct plan_options o = {.policy = PLAN_POLICY_DS012};
    struct sim_train t;
    sim_train_defaults(&t);
    if (setup(&m, &l, &z, catalog, "gpt-2.7b", 8, 8, &e)) {
        fprintf(stderr, "bench/sim: %s\n", e.msg);
        return 1;
    }
    double best = 1e9;
    uint64_t events = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        events = 0;
        for (int i = 0; i <= 100; i++) {
            struct plan p;
            z.ratio = i / 100.0;
            struct sim_step_result r;
            if (plan_build(&p, &m, &l, &z, &o, &e) || sim_step_run(&p, &hw, &t, NULL, &r, &e)) {
                fprintf(stderr, "bench/sim: %s\n", e.msg);
                return 1;
            }
            events += r.events;
            plan_free(&p);
        }
        double d = now_s() - t0;
        if (d < best)
            best = d;
    }
    printf("%-44s %12.2f ms %12s ms %s  (%llu events)\n", "sweep of 101 ratios, gpt-2.7b TP 8, 8 x V100", best * 1e3,
           "< 100", best < 0.1 ? "ok" : "MISSED", (unsigned long long)events);
    plan_model_free(&m);

    if (setup(&m, &l, &z, catalog, "gpt3-175b", 8, 1024, &e)) {
        fprintf(stderr, "bench/sim: %s\n", e.msg);
        return 1;
    }
    z.ratio = 0.3;
    struct plan p;
    if (plan_build(&p, &m, &l, &z, &o, &e)) {
        fprintf(stderr, "bench/sim: %s\n", e.msg);
        return 1;
    }
    best = 1e9;
    struct sim_step_result r;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_s();
        if (sim_step_run(&p, &hw, &t, NULL, &r, &e)) {
            fprintf(stderr, "bench/sim: %s\n", e.msg);
            return 1;
        }
        double d = now_s() - t0;
        if (d < best)
            best = d;
    }
    printf("%-44s %12.2f ms %12s ms %s  (%llu events, %d tasks, step %.3f s simulated)\n",
           "one step, gpt3-175b, 1024 GPUs (128 x 8)", best * 1e3, "< 1000", best < 1.0 ? "ok" : "MISSED",
           (unsigned long long)r.events, r.tasks, (double)r.step_ns * 1e-9);
    plan_free(&p);
    plan_model_free(&m);
    return 0;
}
