/* traces/layout.c — the trace layout's thread names, phase table and span writers. */
#include "traces/layout.h"

#include <jansson.h>   /* json_loads: a step span's args */
#include <stdio.h>
#include <stdlib.h>   /* free */
#include <string.h>

#include "common/rl.h"   /* RL_COUNT */
#include "traces/trace.h"

static const char *const tid_names[] = {
    "compute stream", "NCCL all-gather stream", "NCCL reduce-scatter stream", "copy engine D2H",
    "copy engine H2D", "CPU Adam", "pipeline bubble", "host thread"};
_Static_assert(RL_COUNT(tid_names) == TRACE_TID_COUNT, "a name per thread id");

const char *trace_tid_name(int tid) { return tid >= 0 && tid < TRACE_TID_COUNT ? tid_names[tid] : "?"; }

/* In plan/step.h's order (a test compares the names with step_phase_name). Patterns: 4 and 5 are
 * diagonal hatches one way and the other, 2 a cross-hatch. */
const struct trace_phase trace_phases[TRACE_N_PHASES] = {
    {"forward", TRACE_GROUP_COMPUTE, 0},
    {"backward", TRACE_GROUP_COMPUTE, 4},
    {"gpu_adam", TRACE_GROUP_GPU_OPT, 0},
    {"cpu_adam", TRACE_GROUP_CPU_OPT, 0},
    {"tp_allreduce", TRACE_GROUP_COLLECTIVE, 5},
    {"allgather", TRACE_GROUP_COLLECTIVE, 0},
    {"reduce_scatter", TRACE_GROUP_COLLECTIVE, 4},
    {"grad_d2h", TRACE_GROUP_PCIE, 0},
    {"grad_h2d", TRACE_GROUP_PCIE, 4},
    {"param_h2d", TRACE_GROUP_PCIE, 5},
    {"pipeline_bubble", TRACE_GROUP_BUBBLE, 0},
    {"grad_norm", TRACE_GROUP_GPU_OPT, 4},
    {"grad_cast", TRACE_GROUP_CAST, 0},
    {"unscale", TRACE_GROUP_CAST, 4},
    {"param_cast", TRACE_GROUP_CAST, 5},
    {"overflow_check", TRACE_GROUP_CAST, 2},
    {"page_fault", TRACE_GROUP_PCIE, 2},
    {"zero3_hooks", TRACE_GROUP_CAST, 1},
    {"idle", TRACE_GROUP_IDLE, 5},
};

/* Okabe & Ito (2008): told apart with every common colour-vision deficiency; bubble and idle in
 * greys (idle hatched, like empty space). */
static const struct {
    const char *name;    /* label */
    const char *color;   /* fill */
} groups[] = {
    {"compute", "#0072B2"},       {"collectives", "#CC79A7"},   {"PCIe copies", "#D55E00"},
    {"GPU optimizer", "#009E73"}, {"CPU optimizer", "#E69F00"}, {"casts and checks", "#56B4E9"},
    {"pipeline bubble", "#BBBBBB"}, {"idle", "#777777"},
};
_Static_assert(RL_COUNT(groups) == TRACE_GROUP_COUNT, "a name and colour per group");

/* Paul Tol's dark colours, none of the groups'. */
static const char *const other_colors[] = {"#332288", "#117733", "#882255", "#44AA99", "#999933", "#AA4499"};

const struct trace_phase *trace_phase_find(const char *name)
{
    for (int i = 0; name && i < TRACE_N_PHASES; i++)
        if (strcmp(name, trace_phases[i].name) == 0)
            return &trace_phases[i];
    return NULL;
}

const char *trace_group_name(enum trace_group g)
{
    return (int)g >= 0 && g < TRACE_GROUP_COUNT ? groups[g].name : "?";
}

const char *trace_group_color(enum trace_group g)
{
    return (int)g >= 0 && g < TRACE_GROUP_COUNT ? groups[g].color : "#000000";
}

const char *trace_other_color(int i)
{
    int n = (int)RL_COUNT(other_colors);
    return other_colors[(i % n + n) % n];
}

int trace_layout_span(struct trace *t, int rank, int tid, int socket, const char *phase, const char *name,
                      int64_t t0_ns, int64_t dur_ns, const char *args_json)
{
    int pid = TRACE_PID_RANK(rank);
    if (tid == TRACE_TID_CPU_ADAM) {
        pid = TRACE_PID_SOCKET(socket);
        tid = TRACE_TID_POOL(rank);
    }
    return trace_span(t, pid, tid, name ? name : phase, phase, t0_ns, dur_ns, args_json);
}

int trace_layout_step(struct trace *t, int rank, int step, bool warmup, int64_t t0_ns, int64_t dur_ns,
                      const struct trace_step_about *about)
{
    char name[32];
    snprintf(name, sizeof name, "step %d", step);
    json_t *a = json_object();
    json_object_set_new(a, "step", json_integer(step));
    json_object_set_new(a, "warmup", json_boolean(warmup));
    if (about && about->requested_ratio >= 0)
        json_object_set_new(a, RL_KEY_REQUESTED_RATIO, json_real(about->requested_ratio));
    if (about && about->honored_ratio >= 0)
        json_object_set_new(a, RL_KEY_HONORED_RATIO, json_real(about->honored_ratio));
    if (about && about->schedule && *about->schedule)
        json_object_set_new(a, "schedule", json_string(about->schedule));
    if (about && about->policy && *about->policy)
        json_object_set_new(a, "policy", json_string(about->policy));
    char *text = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(a);
    int rc = trace_span(t, TRACE_PID_RANK(rank), TRACE_TID_HOST, name, TRACE_CAT_STEP, t0_ns, dur_ns,
                        text ? text : "{}");
    free(text);
    return rc;
}

int trace_step_window(const struct trace_doc *d, int64_t *t0_ns, int64_t *t1_ns)
{
    int best_pid = -1;
    for (int i = 0; i < d->n_events; i++) {
        const struct trace_event *ev = &d->events[i];
        if (ev->ph != 'X' || !ev->cat || strcmp(ev->cat, TRACE_CAT_STEP) != 0)
            continue;
        json_t *a = ev->args_json ? json_loads(ev->args_json, 0, NULL) : NULL;
        bool warm = json_is_true(json_object_get(a, "warmup"));
        json_decref(a);
        if (warm)
            continue;
        if (best_pid < 0 || ev->pid < best_pid || (ev->pid == best_pid && ev->ts_ns < *t0_ns)) {
            best_pid = ev->pid;
            *t0_ns = ev->ts_ns;
            *t1_ns = ev->ts_ns + ev->dur_ns;
        }
    }
    return best_pid >= 0;
}
