/* plan/step.c — the step vocabulary: schedule and phase names, the breakdown of spans, the
 * chunking of the CPU share, the prefetch depth. */
#include <stdlib.h>

#include "plan/step.h"

static const char *const schedule_names[] = {"deepspeed", "overlap"};
static const char *const phase_names[] = {
    "forward", "backward", "gpu_adam", "cpu_adam", "tp_allreduce", "allgather", "reduce_scatter",
    "grad_d2h", "grad_h2d", "param_h2d", "pipeline_bubble", "grad_norm", "grad_cast", "unscale", "param_cast",
    "overflow_check", "page_fault", "zero3_hooks"};
_Static_assert(RL_COUNT(schedule_names) == STEP_SCHED_COUNT, "a name per enum step_schedule");
_Static_assert(RL_COUNT(phase_names) == STEP_PH_COUNT, "a name per phase");

const char *step_schedule_name(enum step_schedule s)
{
    return (int)s >= 0 && s < STEP_SCHED_COUNT ? schedule_names[s] : "?";
}

const char *step_phase_name(int phase)
{
    return phase >= 0 && phase < STEP_PH_COUNT ? phase_names[phase] : "?";
}

int step_schedule_parse(const char *s, enum step_schedule *out, struct rl_err *e)
{
    for (int i = 0; i < STEP_SCHED_COUNT; i++)
        if (rl_streq(s, schedule_names[i])) {
            *out = (enum step_schedule)i;
            return 0;
        }
    if (rl_streq(s, "deepspeed-0.12")) {   /* the name before schedules followed the version */
        *out = STEP_SCHED_DS012;
        return 0;
    }
    return rl_errf(e, RL_EINVAL, "schedule: '%s' is not a schedule; allowed: deepspeed, overlap",
                   s ? s : "");
}

struct edge_ev {
    int64_t t_ns;   /* when */
    int phase;      /* which phase */
    int delta;      /* +1 a span starts, -1 it ends */
};

static int cmp_edge(const void *x, const void *y)
{
    const struct edge_ev *a = x, *b = y;
    if (a->t_ns != b->t_ns)
        return a->t_ns < b->t_ns ? -1 : 1;
    return a->delta - b->delta;   /* ends before starts at the same time */
}

int step_breakdown(const struct step_span *s, int n, int64_t t0_ns, int64_t t1_ns, struct step_breakdown *out)
{
    struct edge_ev *ev = malloc(sizeof *ev * (size_t)(2 * (n > 0 ? n : 0) + 1));
    if (!ev)
        return RL_ENOMEM;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].phase < 0 || s[i].phase >= STEP_PH_COUNT || s[i].end_ns <= s[i].start_ns)
            continue;
        ev[m++] = (struct edge_ev){s[i].start_ns, s[i].phase, +1};
        ev[m++] = (struct edge_ev){s[i].end_ns, s[i].phase, -1};
    }
    qsort(ev, (size_t)m, sizeof *ev, cmp_edge);
    int active[STEP_PH_COUNT] = {0};
    int64_t prev = t0_ns;
    for (int i = 0; i <= m; i++) {
        int64_t t = i < m ? ev[i].t_ns : t1_ns;
        if (t > prev) {
            int top = -1;
            for (int ph = 0; ph < STEP_PH_COUNT; ph++) {
                if (active[ph]) {
                    out->phase[ph].busy_ns += t - prev;
                    if (top < 0)
                        top = ph;
                }
            }
            if (top >= 0)
                out->phase[top].exposed_ns += t - prev;
            else
                out->idle_ns += t - prev;
            prev = t;
        }
        if (i < m)
            active[ev[i].phase] += ev[i].delta;
    }
    free(ev);
    return 0;
}

int64_t step_chunk_numel(int64_t cpu_numel, int64_t chunk_numel)
{
    int64_t chunk = chunk_numel > 0 ? chunk_numel : STEP_CHUNK_DEFAULT_NUMEL;
    if (cpu_numel > 0 && (cpu_numel + chunk - 1) / chunk > STEP_MAX_CHUNKS)
        chunk = (cpu_numel + STEP_MAX_CHUNKS - 1) / STEP_MAX_CHUNKS;
    return chunk;
}

int64_t step_chunk_count(int64_t cpu_numel, int64_t chunk_numel)
{
    if (cpu_numel <= 0)
        return 0;
    int64_t chunk = step_chunk_numel(cpu_numel, chunk_numel);
    return (cpu_numel + chunk - 1) / chunk;
}

void step_chunk_range(int64_t cpu_numel, int64_t chunk_numel, int64_t k, int64_t *first, int64_t *numel)
{
    int64_t chunk = step_chunk_numel(cpu_numel, chunk_numel);
    *first = k * chunk;
    *numel = cpu_numel - *first < chunk ? cpu_numel - *first : chunk;
}

int64_t step_chunk_buffer_numel(int64_t cpu_numel, int64_t chunk_numel)
{
    if (cpu_numel <= 0)
        return 0;
    int64_t chunk = step_chunk_numel(cpu_numel, chunk_numel);
    return chunk < cpu_numel ? chunk : cpu_numel;
}

int64_t step_prefetch_depth(int64_t prefetch_bucket_size, int64_t max_block_numel, int64_t n_blocks)
{
    int64_t depth = max_block_numel > 0 ? prefetch_bucket_size / max_block_numel : 1;
    depth = depth < 1 ? 1 : depth;
    return depth < n_blocks - 1 ? depth : n_blocks > 1 ? n_blocks - 1 : 0;
}

int64_t step_gather_buffers(int64_t depth)
{
    return depth + 1;
}
