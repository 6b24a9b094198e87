/* sim/step_trace.c — the Chrome trace of a simulated step: one process per GPU (a track per
 * stream and copy engine), one per host socket (a CPU Adam pool track per rank), one for the
 * links (a load counter per resource, sampled at every rate recomputation), and a memory counter
 * per GPU, laid out as traces/layout.h says. Written in a fixed order from the read-only record of
 * a finished run, so the same run gives the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "sim/step_impl.h"
#include "traces/layout.h"
#include "traces/trace.h"

struct mem_sorted {
    int64_t t_ns;    /* the task's end */
    int order;       /* its position in the event list (stable ties) */
    int rank;        /* GPU */
    int64_t delta;   /* bytes allocated (+) or freed (-) */
};

static int cmp_mem(const void *x, const void *y)
{
    const struct mem_sorted *a = x, *b = y;
    if (a->t_ns != b->t_ns)
        return a->t_ns < b->t_ns ? -1 : 1;
    return a->order - b->order;
}

/* Unit and scale of a resource's load from its name. */
static void unit_of(const char *name, const char **unit, double *scale)
{
    size_t n = strlen(name);
    if (n > 3 && strcmp(name + n - 3, ".sm") == 0) {
        *unit = "TFLOP/s";
        *scale = 1e-12;
    } else if (n > 6 && strcmp(name + n - 6, ".cores") == 0) {
        *unit = "G elements/s";
        *scale = 1e-9;
    } else {
        *unit = "GB/s";
        *scale = 1e-9;
    }
}

int sim__step_trace(const struct sim__run_record *rec, const struct sim_step_result *r, const char *path,
                    struct rl_err *e)
{
    struct trace *t;
    int rc = trace_open(&t, path, e);
    if (rc)
        return rc;
    char buf[256];
    const struct hw_profile *hw = rec->hw;
    for (int g = 0; g < rec->ranks; g++) {
        int phys = rec->gpu[g];
        snprintf(buf, sizeof buf, "rank %d: GPU %d (%s, switch %d, socket %d)", g, phys, hw->gpu_model,
                 hw->gpu_switch[phys], hw->sw[hw->gpu_switch[phys]].socket);
        trace_process_name(t, TRACE_PID_RANK(g), buf);
        for (int k = 0; k < TRACE_TID_COUNT; k++)
            if (k != TRACE_TID_CPU_ADAM)
                trace_thread_name(t, TRACE_PID_RANK(g), k, trace_tid_name(k));
    }
    for (int k = 0; k < hw->n_sockets; k++) {
        snprintf(buf, sizeof buf, "host socket %d (%d cores)", k, hw->socket[k].cores);
        trace_process_name(t, TRACE_PID_SOCKET(k), buf);
        for (int g = 0; g < rec->ranks; g++)
            if (hw->sw[hw->gpu_switch[rec->gpu[g]]].socket == k || rec->numa_interleave) {
                snprintf(buf, sizeof buf, TRACE_POOL_NAME_FMT, g);
                trace_thread_name(t, TRACE_PID_SOCKET(k), TRACE_TID_POOL(g), buf);
            }
    }
    trace_process_name(t, TRACE_PID_LINKS, "links and resources (load)");

    /* Spans, in task order. */
    for (int i = 0; i < rec->n_task; i++) {
        const struct sim_task *k = &rec->task[i];
        int64_t t0 = sim__task_span_start(k);
        if (k->rank < 0 || k->track < 0 || k->phase < 0 || k->t_end_ns <= t0)
            continue;
        int socket = hw->sw[hw->gpu_switch[rec->gpu[k->rank]]].socket;
        bool flops = k->phase == STEP_PH_FORWARD || k->phase == STEP_PH_BACKWARD;
        bool elements = k->phase == STEP_PH_CPU_ADAM || k->phase == STEP_PH_GPU_ADAM ||
                        k->phase == STEP_PH_GRAD_NORM || k->phase == STEP_PH_GRAD_CAST ||
                        k->phase == STEP_PH_UNSCALE || k->phase == STEP_PH_PARAM_CAST ||
                        k->phase == STEP_PH_OVERFLOW_CHECK;   /* page_fault: bytes */
        const char *what = flops ? "flops" : elements ? "elements" : "bytes";
        int64_t size = flops ? k->size.flops : elements ? k->size.elements : k->size.bytes;
        snprintf(buf, sizeof buf, "{\"%s\":%lld,\"ready_ns\":%lld,\"latency_ns\":%lld}", what, (long long)size,
                 (long long)k->t_ready_ns, (long long)k->latency_ns);
        trace_layout_span(t, k->rank, k->track, socket, step_phase_name(k->phase), k->name, t0, k->t_end_ns - t0,
                          buf);
    }

    /* Memory counters per GPU: the ledger, reserve and the activations/gathered parameters as
     * they come and go. */
    struct mem_sorted *ms = malloc(sizeof *ms * (size_t)(rec->n_mem ? rec->n_mem : 1));
    if (!ms) {
        trace_abort(t);
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    }
    for (int i = 0; i < rec->n_mem; i++) {
        const struct sim_task *k = &rec->task[rec->mem[i].task];
        ms[i] = (struct mem_sorted){k->t_end_ns, i, k->rank, rec->mem[i].delta_bytes};
    }
    qsort(ms, (size_t)rec->n_mem, sizeof *ms, cmp_mem);
    int64_t base = r->gpu_ledger_bytes + r->gpu_reserve_bytes;
    int64_t cur[HW_MAX_GPUS];
    for (int g = 0; g < rec->ranks; g++) {
        cur[g] = base;
        trace_counter(t, TRACE_PID_RANK(g), TRACE_COUNTER_GPU_MEMORY, 0, TRACE_SERIES_PREDICTED, (double)base);
    }
    for (int i = 0; i < rec->n_mem; i++) {
        int g = ms[i].rank;
        cur[g] += ms[i].delta;
        if (i + 1 < rec->n_mem && ms[i + 1].t_ns == ms[i].t_ns && ms[i + 1].rank == g)
            continue;   /* one sample per time and rank */
        trace_counter(t, TRACE_PID_RANK(g), TRACE_COUNTER_GPU_MEMORY, ms[i].t_ns, TRACE_SERIES_PREDICTED, (double)cur[g]);
    }
    free(ms);

    /* Link loads: a sample whenever a resource's load changed. */
    int nres = rec->n_res;
    for (int j = 0; j < nres; j++) {
        const char *unit;
        double scale;
        unit_of(rec->res[j].name, &unit, &scale);
        double last = -1;
        for (int s = 0; s < rec->n_link_samples; s++) {
            double v = rec->link_load[(size_t)s * (size_t)nres + (size_t)j] * scale;
            if (v == last)
                continue;
            if (s + 1 < rec->n_link_samples && rec->link_t_ns[s + 1] == rec->link_t_ns[s])
                continue;   /* a later recomputation at the same time wins */
            trace_counter(t, TRACE_PID_LINKS, rec->res[j].name, rec->link_t_ns[s], unit, v);
            last = v;
        }
    }
    for (int g = 0; g < rec->ranks; g++)   /* the one simulated step, as the executor marks each of its steps */
        trace_layout_step(t, g, 1, false, 0, r->step_ns, NULL);
    snprintf(buf, sizeof buf, "{\"step_ns\":%lld,\"critical_rank\":%d}", (long long)r->step_ns, r->critical_rank);
    trace_instant(t, TRACE_PID_RANK(r->critical_rank), TRACE_TID_COMPUTE, "step end", r->step_ns, 'g', buf);
    return trace_close(t, e);
}
