/* sim/step_trace.c — the Chrome trace of a simulated step: one process per GPU (a track per
 * stream and copy engine), one per host socket (a CPU Adam pool track per rank), one for the
 * links (a load counter per resource, sampled at every rate recomputation), and a memory counter
 * per GPU. Written in a fixed order from the finished run, so the same run gives the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "sim/step_impl.h"
#include "traces/trace.h"

#define PID_GPU(g) (1 + (g))
#define PID_SOCKET(k) (100 + (k))
#define PID_LINKS 200

static const char *const track_names[SIM_TR_COUNT] = {
    "compute stream", "NCCL all-gather stream", "NCCL reduce-scatter stream", "copy engine D2H",
    "copy engine H2D", "CPU Adam", "pipeline bubble"};

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

int sim__step_trace(struct sim__step *b, const struct sim_step_result *r, const char *path,
                    struct rl_err *e)
{
    struct trace *t;
    int rc = trace_open(&t, path, e);
    if (rc)
        return rc;
    char buf[256];
    const struct sim_hw *hw = b->hw;
    for (int g = 0; g < b->ranks; g++) {
        snprintf(buf, sizeof buf, "GPU %d (%s, switch %d, socket %d)", g, hw->gpu_model, hw->gpu_switch[g],
                 hw->sw[hw->gpu_switch[g]].socket);
        trace_process_name(t, PID_GPU(g), buf);
        for (int k = 0; k < SIM_TR_COUNT; k++)
            if (k != SIM_TR_CPU_ADAM)
                trace_thread_name(t, PID_GPU(g), k, track_names[k]);
    }
    for (int k = 0; k < hw->n_sockets; k++) {
        snprintf(buf, sizeof buf, "host socket %d (%d cores)", k, hw->socket[k].cores);
        trace_process_name(t, PID_SOCKET(k), buf);
        for (int g = 0; g < b->ranks; g++)
            if (hw->sw[hw->gpu_switch[g]].socket == k || b->t.numa_interleave) {
                snprintf(buf, sizeof buf, "CPU Adam pool, rank %d", g);
                trace_thread_name(t, PID_SOCKET(k), g, buf);
            }
    }
    trace_process_name(t, PID_LINKS, "links and resources (load)");

    /* Spans, in task order. */
    for (int i = 0; i < b->g.n_task; i++) {
        const struct sim_task *k = &b->g.task[i];
        int64_t t0 = sim__task_span_start(k);
        if (k->rank < 0 || k->track < 0 || k->phase < 0 || k->t_end_ns <= t0)
            continue;
        int pid = PID_GPU(k->rank), tid = k->track;
        if (k->track == SIM_TR_CPU_ADAM) {
            pid = PID_SOCKET(hw->sw[hw->gpu_switch[k->rank]].socket);
            tid = k->rank;
        }
        const char *what = k->phase == SIM_PH_FORWARD || k->phase == SIM_PH_BACKWARD ? "flops"
                           : k->phase == SIM_PH_CPU_ADAM || k->phase == SIM_PH_GPU_ADAM ? "elements"
                                                                                         : "bytes";
        snprintf(buf, sizeof buf, "{\"%s\":%lld,\"ready_ns\":%lld,\"latency_ns\":%lld}", what, (long long)k->arg,
                 (long long)k->t_ready_ns, (long long)k->latency_ns);
        trace_span(t, pid, tid, k->name, sim_phase_name(k->phase), t0, k->t_end_ns - t0, buf);
    }

    /* Memory counters per GPU: the ledger, reserve and the activations/gathered parameters as
     * they come and go. */
    struct mem_sorted *ms = malloc(sizeof *ms * (size_t)(b->n_mem ? b->n_mem : 1));
    if (!ms) {
        trace_abort(t);
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    }
    for (int i = 0; i < b->n_mem; i++) {
        const struct sim_task *k = &b->g.task[b->mem[i].task];
        ms[i] = (struct mem_sorted){k->t_end_ns, i, k->rank, b->mem[i].delta_bytes};
    }
    qsort(ms, (size_t)b->n_mem, sizeof *ms, cmp_mem);
    int64_t base = r->gpu_ledger_bytes + r->gpu_reserve_bytes;
    int64_t cur[SIM_HW_MAX_GPUS];
    for (int g = 0; g < b->ranks; g++) {
        cur[g] = base;
        trace_counter(t, PID_GPU(g), "GPU memory (bytes)", 0, "predicted", (double)base);
    }
    for (int i = 0; i < b->n_mem; i++) {
        int g = ms[i].rank;
        cur[g] += ms[i].delta;
        if (i + 1 < b->n_mem && ms[i + 1].t_ns == ms[i].t_ns && ms[i + 1].rank == g)
            continue;   /* one sample per time and rank */
        trace_counter(t, PID_GPU(g), "GPU memory (bytes)", ms[i].t_ns, "predicted", (double)cur[g]);
    }
    free(ms);

    /* Link loads: a sample whenever a resource's load changed. */
    int nres = b->f.n_res;
    for (int j = 0; j < nres; j++) {
        const char *unit;
        double scale;
        unit_of(b->f.res[j].name, &unit, &scale);
        double last = -1;
        for (int s = 0; s < b->n_link_samples; s++) {
            double v = b->link_load[(size_t)s * (size_t)nres + (size_t)j] * scale;
            if (v == last)
                continue;
            if (s + 1 < b->n_link_samples && b->link_t_ns[s + 1] == b->link_t_ns[s])
                continue;   /* a later recomputation at the same time wins */
            trace_counter(t, PID_LINKS, b->f.res[j].name, b->link_t_ns[s], unit, v);
            last = v;
        }
    }
    snprintf(buf, sizeof buf, "{\"step_ns\":%lld,\"critical_rank\":%d}", (long long)r->step_ns, r->critical_rank);
    trace_instant(t, PID_GPU(r->critical_rank), SIM_TR_COMPUTE, "step end", r->step_ns, 'g', buf);
    return trace_close(t, e);
}
