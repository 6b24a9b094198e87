/* validation/report.c — the checks of `ratiolab validate --ratios` over its rows, and the report
 * in JSON (schema_version 1, read by plots/) and Markdown (see val.h). */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/step.h"
#include "validation/val.h"

static struct val_check *add_check(struct val_report *r, const char *name, bool gated)
{
    struct val_check *c = &r->checks[r->n_checks++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->gated = gated;
    c->status = VAL_PASS;
    return c;
}

static void detail(struct val_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void detail(struct val_check *c, const char *fmt, ...)
{
    size_t l = strlen(c->detail);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail + l, sizeof c->detail - l, fmt, ap);
    va_end(ap);
}

static double pct(double measured, double predicted)
{
    return predicted > 0 ? (measured - predicted) / predicted * 100 : 0;
}

static void check_bitwise(struct val_report *r)
{
    struct val_check *c = add_check(r, "bitwise", true);
    if (r->n_rows == 0) {
        c->status = VAL_FAIL;
        detail(c, "no runs");
        return;
    }
    uint32_t d0 = r->rows[0].digest;
    int same = 0;
    for (int i = 0; i < r->n_rows; i++)
        same += r->rows[i].digest == d0;
    if (same != r->n_rows) {
        c->status = VAL_FAIL;
        detail(c, "digests differ across runs:");
        for (int i = 0; i < r->n_rows; i++)
            detail(c, " ratio %g %s 0x%08x;", r->rows[i].ratio, r->rows[i].schedule, r->rows[i].digest);
    } else {
        detail(c, "%d runs (ratio x schedule x policy) give digest 0x%08x", r->n_rows, d0);
    }
    if (!r->have_reference) {
        c->status = VAL_FAIL;
        detail(c, "; no single-process scalar reference to compare with");
    } else if (r->reference_digest != d0) {
        c->status = VAL_FAIL;
        detail(c, "; the single-process scalar reference gives 0x%08x", r->reference_digest);
    } else {
        detail(c, ", equal to the single-process scalar reference's");
    }
}

static void check_honored(struct val_report *r)
{
    struct val_check *c = add_check(r, RL_KEY_HONORED_RATIO, true);
    int bad = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const struct val_row *w = &r->rows[i];
        for (int k = 0; k < w->n_ranks; k++)
            if (w->mem[k].host_placed_numel != w->plan_cpu_numel || w->mem[k].per_rank_numel != w->plan_per_rank_numel) {
                if (!bad++)
                    detail(c, "ratio %g rank %d: %lld of %lld elements on the host, the plan says %lld of %lld; ",
                           w->ratio, k, (long long)w->mem[k].host_placed_numel, (long long)w->mem[k].per_rank_numel,
                           (long long)w->plan_cpu_numel, (long long)w->plan_per_rank_numel);
            }
        if (strcmp(w->policy, "exact") == 0 && w->plan_per_rank_numel > 0) {
            double bound = (double)PLAN_EXACT_GRANULE / (2.0 * (double)w->plan_per_rank_numel) + 1e-12;
            if (!plan_ratio_within(w->plan_honored_ratio, w->ratio, bound) && !(w->ratio >= 1 && w->plan_honored_ratio >= 1)) {
                if (!bad++)
                    detail(c, "ratio %g: the plan honors %.6f, more than half a granule (%d elements) away; ",
                           w->ratio, w->plan_honored_ratio, PLAN_EXACT_GRANULE);
            }
        }
    }
    if (bad) {
        c->status = VAL_FAIL;
        detail(c, "%d mismatch%s", bad, bad == 1 ? "" : "es");
    } else {
        detail(c, "on every rank of every run the host-placed elements equal the plan's (honored ratios:");
        for (int i = 0; i < r->n_rows; i++)
            detail(c, "%s %.4f", i ? "," : "", r->rows[i].plan_honored_ratio);
        detail(c, ")%s", strcmp(r->policy, "exact") == 0 ? "; under exact each within half a granule of the request" : "");
    }
}

static void check_ledger(struct val_report *r)
{
    struct val_check *c = add_check(r, "memory_ledger", true);
    int bad = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const struct val_row *w = &r->rows[i];
        for (int k = 0; k < w->n_ranks; k++) {
            const struct val_rank_mem *m = &w->mem[k];
            if (m->ledger_device_bytes != w->plan_device_bytes || m->ledger_host_bytes != w->plan_host_bytes) {
                if (!bad++)
                    detail(c, "ratio %g rank %d: allocated device %lld / host %lld bytes, the ledger says %lld / %lld; ",
                           w->ratio, k, (long long)m->ledger_device_bytes, (long long)m->ledger_host_bytes,
                           (long long)w->plan_device_bytes, (long long)w->plan_host_bytes);
            }
        }
    }
    if (bad) {
        c->status = VAL_FAIL;
        detail(c, "%d rank%s differ", bad, bad == 1 ? "" : "s");
    } else {
        detail(c, "every rank of every run allocated exactly the plan's exec ledger (device and host bytes)");
    }
}

static void check_process(struct val_report *r)
{
    struct val_check *c = add_check(r, "memory_process", true);
    double worst = 0;
    int seen = 0, bad = 0;
    char worst_what[256] = "";
    for (int i = 0; i < r->n_rows; i++) {
        const struct val_row *w = &r->rows[i];
        for (int k = 0; k < w->n_ranks; k++) {
            const struct val_rank_mem *m = &w->mem[k];
            if (m->rss_bytes >= 0 && m->baseline_rss_bytes >= 0) {
                int64_t dev = r->device_in_rss ? w->plan_device_bytes : 0;   /* resident scratch: in the baseline */
                double expect = (double)(w->plan_host_bytes + m->scratch_host_bytes + dev + m->baseline_rss_bytes);
                double err = fabs(pct((double)m->rss_bytes, expect));
                seen++;
                if (err > worst) {
                    worst = err;
                    snprintf(worst_what, sizeof worst_what, "ratio %g %s %s rank %d RSS %lld vs ledger host %lld + "
                             "host scratch %lld + emulated device %lld + baseline %lld", w->ratio, w->schedule,
                             w->policy, k, (long long)m->rss_bytes, (long long)w->plan_host_bytes,
                             (long long)m->scratch_host_bytes, (long long)dev, (long long)m->baseline_rss_bytes);
                }
                bad += err > r->mem_tol_pct && fabs((double)m->rss_bytes - expect) > (double)VAL_MEM_FLOOR_BYTES;
            }
            if (m->device_used_bytes >= 0 && w->plan_device_bytes > 0) {
                double expect = (double)(w->plan_device_bytes + m->scratch_device_bytes);
                double err = fabs(pct((double)m->device_used_bytes, expect));
                seen++;
                if (err > worst) {
                    worst = err;
                    snprintf(worst_what, sizeof worst_what, "ratio %g %s %s rank %d device %lld vs ledger %lld + "
                             "scratch %lld", w->ratio, w->schedule, w->policy, k, (long long)m->device_used_bytes,
                             (long long)w->plan_device_bytes, (long long)m->scratch_device_bytes);
                }
                bad += err > r->mem_tol_pct;
            }
        }
    }
    if (!seen) {
        c->status = VAL_INFO;
        c->gated = false;
        detail(c, "no process memory reading from the executor");
        return;
    }
    c->status = bad ? VAL_FAIL : VAL_PASS;
    detail(c, "%d readings; peak RSS against the ledger's host bytes and the executor's host scratch (plus the "
           "device's ledger on the emulated device, whose memory is host memory) plus the baseline (%s), "
           "device use against the ledger's device bytes plus the executor's compute scratch; tolerance %.1f %% (RSS: or "
           "4 MiB, whichever is larger); worst %.2f %% (%s)", seen,
           r->baseline_before_run ? "each rank's RSS right before its run, the freed heap handed back and the peak "
                                    "reset, plus what a run with every tensor cut to one row added beyond its ledger"
                                  : "the RSS at the end of the same launch with every tensor cut to one row, minus its "
                                    "ledger buffers: the program, libraries, MPI, OpenBLAS, thread stacks and the "
                                    "resident compute scratch",
           r->mem_tol_pct, worst, worst_what);
}

static void check_time(struct val_report *r)
{
    struct val_check *c = add_check(r, "time", r->gate_time_pct >= 0 && !r->time_skipped[0]);
    if (r->time_skipped[0]) {   /* a prediction of another machine: no time error to report */
        detail(c, "not compared: %s", r->time_skipped);
        c->status = VAL_INFO;
    }
    double sum = 0;
    for (int i = 0; i < r->n_rows; i++) {
        struct val_row *w = &r->rows[i];
        w->step_error_pct = pct((double)w->measured.step_ns, (double)w->predicted.step_ns);
        sum += fabs(w->step_error_pct);
    }
    r->step_mape_pct = r->n_rows ? sum / r->n_rows : 0;
    int most_ph = -1;
    for (int p = 0; p < VAL_PHASES; p++) {
        double d = 0;
        for (int i = 0; i < r->n_rows; i++)
            d += (double)(r->rows[i].measured.exposed_ns[p] - r->rows[i].predicted.exposed_ns[p]) * 1e-6;
        r->phase_exposed_error_ms[p] = r->n_rows ? d / r->n_rows : 0;
        if (r->n_rows && (most_ph < 0 || fabs(r->phase_exposed_error_ms[p]) > fabs(r->phase_exposed_error_ms[most_ph])))
            most_ph = p;
        double s = 0;
        int n = 0;
        for (int i = 0; i < r->n_rows; i++)
            if (r->rows[i].predicted.busy_ns[p] > 0) {
                s += fabs(pct((double)r->rows[i].measured.busy_ns[p], (double)r->rows[i].predicted.busy_ns[p]));
                n++;
            }
        r->phase_mape_pct[p] = n ? s / n : -1;
    }
    if (r->time_skipped[0])
        return;   /* the rows keep the arithmetic for report.json, beside time_skipped */
    detail(c, "step MAPE over %d run%s %.2f %%", r->n_rows, r->n_rows == 1 ? "" : "s", r->step_mape_pct);
    if (most_ph >= 0 && r->phase_exposed_error_ms[most_ph] != 0)
        detail(c, "; largest share of the step error: %s, exposed %+.3f ms (mean over the runs)", sim_phase_name(most_ph),
               r->phase_exposed_error_ms[most_ph]);
    if (r->gate_time_pct >= 0) {
        detail(c, "; gate %.1f %%", r->gate_time_pct);
        c->status = r->step_mape_pct <= r->gate_time_pct ? VAL_PASS : VAL_FAIL;
    } else {
        detail(c, "; not gated (--gate-time PCT)");
        c->status = VAL_INFO;
    }
}

void val_report_check(struct val_report *r)
{
    r->n_checks = 0;
    check_bitwise(r);
    check_honored(r);
    check_ledger(r);
    check_process(r);
    check_time(r);
}

bool val_report_failed(const struct val_report *r)
{
    for (int i = 0; i < r->n_checks; i++)
        if (r->checks[i].gated && r->checks[i].status == VAL_FAIL)
            return true;
    return false;
}

void val_report_deepspeed_text(const struct val_report *r, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const struct val_row *w = &r->rows[i];
        if (!w->predicted.deepspeed_version[0] && !w->measured.deepspeed_version[0])
            continue;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(r->rows[j].predicted.deepspeed_version, w->predicted.deepspeed_version) &&
                   !strcmp(r->rows[j].measured.deepspeed_version, w->measured.deepspeed_version);
        if (seen || o + 1 >= n)
            continue;
        int k = snprintf(buf + o, n - o, "%ssimulator %s, executor %s", o ? "; " : "",
                         w->predicted.deepspeed_version[0] ? w->predicted.deepspeed_version : "none",
                         w->measured.deepspeed_version[0] ? w->measured.deepspeed_version : "none");
        if (k > 0)
            o = o + (size_t)k < n ? o + (size_t)k : n - 1;
    }
}

static json_t *side_json(const struct val_side *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "deepspeed_version", s->deepspeed_version[0] ? json_string(s->deepspeed_version) : json_null());
    json_object_set_new(o, "step_ns", json_integer(s->step_ns));
    json_t *ph = json_object();
    for (int p = 0; p < VAL_PHASES; p++) {
        json_t *x = json_object();
        json_object_set_new(x, "busy_ns", json_integer(s->busy_ns[p]));
        json_object_set_new(x, "exposed_ns", json_integer(s->exposed_ns[p]));
        json_object_set_new(ph, sim_phase_name(p), x);
    }
    json_object_set_new(o, "phases", ph);
    return o;
}

int val_report_json(const struct val_report *r, char **out, struct rl_err *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(1));
    json_object_set_new(o, "kind", json_string("ratiolab-validate-report"));
    json_object_set_new(o, "model", json_string(r->model));
    json_object_set_new(o, "hardware", json_string(r->hardware));
    json_object_set_new(o, "backend", json_string(r->backend));
    json_object_set_new(o, "policy", json_string(r->policy));
    json_object_set_new(o, "ranks", json_integer(r->ranks));
    json_t *rows = json_array();
    for (int i = 0; i < r->n_rows; i++) {
        const struct val_row *w = &r->rows[i];
        json_t *x = json_object();
        json_object_set_new(x, "ratio", json_real(w->ratio));
        json_object_set_new(x, "schedule", json_string(w->schedule));
        json_object_set_new(x, "policy", json_string(w->policy));
        json_object_set_new(x, "predicted", side_json(&w->predicted));
        json_object_set_new(x, "measured", side_json(&w->measured));
        json_object_set_new(x, "step_error_pct", json_real(w->step_error_pct));
        json_object_set_new(x, "others_cpu_pct", w->others_cpu_pct >= 0 ? json_real(w->others_cpu_pct) : json_null());
        char d[16];
        snprintf(d, sizeof d, "%08x", w->digest);
        json_object_set_new(x, "digest", json_string(d));
        json_object_set_new(x, RL_KEY_HONORED_RATIO, json_real(w->plan_honored_ratio));
        json_object_set_new(x, "host_numel", json_integer(w->plan_cpu_numel));
        json_object_set_new(x, "per_rank_numel", json_integer(w->plan_per_rank_numel));
        json_object_set_new(x, "ledger_device_bytes", json_integer(w->plan_device_bytes));
        json_object_set_new(x, "ledger_host_bytes", json_integer(w->plan_host_bytes));
        json_t *mr = json_array();
        for (int k = 0; k < w->n_ranks; k++) {
            const struct val_rank_mem *m = &w->mem[k];
            json_t *y = json_object();
            json_object_set_new(y, "rank", json_integer(k));
            json_object_set_new(y, "device_bytes", json_integer(m->ledger_device_bytes));
            json_object_set_new(y, "host_bytes", json_integer(m->ledger_host_bytes));
            json_object_set_new(y, "host_numel", json_integer(m->host_placed_numel));
            json_object_set_new(y, "rss_bytes", m->rss_bytes >= 0 ? json_integer(m->rss_bytes) : json_null());
            json_object_set_new(y, "baseline_rss_bytes", m->baseline_rss_bytes >= 0 ? json_integer(m->baseline_rss_bytes) : json_null());
            json_object_set_new(y, "pinned_bytes", m->pinned_bytes >= 0 ? json_integer(m->pinned_bytes) : json_null());
            json_object_set_new(y, "device_used_bytes", m->device_used_bytes >= 0 ? json_integer(m->device_used_bytes) : json_null());
            json_array_append_new(mr, y);
        }
        json_object_set_new(x, "measured_memory", mr);
        json_array_append_new(rows, x);
    }
    json_object_set_new(o, "rows", rows);
    json_t *cks = json_array();
    for (int i = 0; i < r->n_checks; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(r->checks[i].name));
        json_object_set_new(x, "status", json_string(val_status_name(r->checks[i].status)));
        json_object_set_new(x, "detail", json_string(r->checks[i].detail));
        json_object_set_new(x, "gated", json_boolean(r->checks[i].gated));
        json_array_append_new(cks, x);
    }
    json_object_set_new(o, "checks", cks);
    json_object_set_new(o, "steps", json_integer(r->steps));
    json_object_set_new(o, "scale", json_real(r->scale));
    char d[16];
    snprintf(d, sizeof d, "%08x", r->reference_digest);
    json_object_set_new(o, "reference_digest", r->have_reference ? json_string(d) : json_null());
    json_object_set_new(o, "step_mape_pct", json_real(r->step_mape_pct));
    json_object_set_new(o, "time_skipped", r->time_skipped[0] ? json_string(r->time_skipped) : json_null());
    json_t *pm = json_object();
    for (int p = 0; p < VAL_PHASES; p++)
        if (r->phase_mape_pct[p] >= 0)
            json_object_set_new(pm, sim_phase_name(p), json_real(r->phase_mape_pct[p]));
    json_object_set_new(o, "phase_busy_mape_pct", pm);
    json_t *pe = json_object();
    for (int p = 0; p < VAL_PHASES; p++)
        if (r->n_rows)
            json_object_set_new(pe, sim_phase_name(p), json_real(r->phase_exposed_error_ms[p]));
    json_object_set_new(o, "phase_exposed_error_ms", pe);
    json_object_set_new(o, "verdict", json_string(val_report_failed(r) ? "FAIL" : "PASS"));
    *out = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return *out ? 0 : rl_errf(e, RL_ENOMEM, "validate: out of memory");
}

/* A growing string. */
struct sbuf {
    char *p;         /* text */
    size_t n, cap;   /* used, allocated */
    bool oom;        /* an allocation failed */
};

static void sb(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb(struct sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = true;
            return;
        }
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t nc = (b->cap ? b->cap * 2 : 4096) + (size_t)k;
        char *q = realloc(b->p, nc);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = nc;
    }
}

static double msf(int64_t ns) { return (double)ns * 1e-6; }

int val_report_md(const struct val_report *r, char **out, struct rl_err *e)
{
    struct sbuf b = {0};
    sb(&b, "# ratiolab validate: %s\n\n", val_report_failed(r) ? "FAIL" : "PASS");
    /* The model, profile and path come from the user's files and flags: data, one line each. */
    char model[512], hw[512], hw_path[1024], det[4096], ds[256];
    sb(&b, "* model: %s\n* hardware profile: %s (%s)\n* backend: %s, %d rank%s, %d timed step%s, model scale %g\n"
           "* policy: %s\n", rl_text_data(model, sizeof model, r->model), rl_text_data(hw, sizeof hw, r->hardware),
       rl_text_data(hw_path, sizeof hw_path, r->hardware_path), r->backend, r->ranks, r->ranks == 1 ? "" : "s",
       r->steps, r->steps == 1 ? "" : "s", r->scale, r->policy);
    val_report_deepspeed_text(r, ds, sizeof ds);
    if (ds[0])   /* the DeepSpeed release whose step each side ran (schedule deepspeed) */
        sb(&b, "* DeepSpeed step: %s\n", ds);
    sb(&b, "\n");
    sb(&b, "## Checks\n\n| check | status | gated | detail |\n|---|---|---|---|\n");
    for (int i = 0; i < r->n_checks; i++)
        sb(&b, "| %s | %s | %s | %s |\n", r->checks[i].name, val_status_name(r->checks[i].status),
           r->checks[i].gated ? "yes" : "no", rl_text_data(det, sizeof det, r->checks[i].detail));
    sb(&b, "\n## Step time, predicted against measured\n\n| ratio | schedule | policy | honored | digest | predicted ms | "
           "measured ms | error %% | others' CPU %% |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < r->n_rows; i++) {
        const struct val_row *w = &r->rows[i];
        char oc[16] = "-";
        if (w->others_cpu_pct >= 0)
            snprintf(oc, sizeof oc, "%.0f", w->others_cpu_pct);
        char err[32] = "-";   /* no error against another machine's profile */
        if (!r->time_skipped[0])
            snprintf(err, sizeof err, "%+.2f", w->step_error_pct);
        sb(&b, "| %g | %s | %s | %.4f | %08x | %.3f | %.3f | %s | %s |\n", w->ratio, w->schedule, w->policy,
           w->plan_honored_ratio, w->digest, msf(w->predicted.step_ns), msf(w->measured.step_ns), err, oc);
    }
    if (r->time_skipped[0])
        sb(&b, "\nStep times not compared: %s.\n", r->time_skipped);
    else
        sb(&b, "\nStep MAPE: %.2f %%. Others' CPU: the share of the machine's cores that other processes used while "
           "the run ran (from /proc/stat, the run's own CPU time taken out); the simulator cannot know it, and on a "
           "shared machine it is where much of the time error comes from.\n", r->step_mape_pct);
    sb(&b, "\n## Per phase (ms; busy = any of it running, exposed = it was the highest-priority phase)\n");
    for (int i = 0; i < r->n_rows; i++) {
        const struct val_row *w = &r->rows[i];
        sb(&b, "\n### ratio %g, %s\n\n| phase | predicted busy | predicted exposed | measured busy | measured exposed "
               "| busy error %% |\n|---|---|---|---|---|---|\n", w->ratio, w->schedule);
        for (int p = 0; p < VAL_PHASES; p++) {
            if (!w->predicted.busy_ns[p] && !w->measured.busy_ns[p])
                continue;
            char err[32] = "-";
            if (w->predicted.busy_ns[p] > 0)
                snprintf(err, sizeof err, "%+.1f", pct((double)w->measured.busy_ns[p], (double)w->predicted.busy_ns[p]));
            sb(&b, "| %s | %.3f | %.3f | %.3f | %.3f | %s |\n", sim_phase_name(p), msf(w->predicted.busy_ns[p]),
               msf(w->predicted.exposed_ns[p]), msf(w->measured.busy_ns[p]), msf(w->measured.exposed_ns[p]), err);
        }
    }
    sb(&b, "\n## Memory per rank (bytes)\n\n| ratio | rank | device (ledger) | host (ledger) | host elements | peak RSS | "
           "baseline | pinned | device used |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < r->n_rows; i++)
        for (int k = 0; k < r->rows[i].n_ranks; k++) {
            const struct val_rank_mem *m = &r->rows[i].mem[k];
            sb(&b, "| %g | %d | %lld (%lld) | %lld (%lld) | %lld | %lld | %lld | %lld | %lld |\n", r->rows[i].ratio, k,
               (long long)m->ledger_device_bytes, (long long)r->rows[i].plan_device_bytes,
               (long long)m->ledger_host_bytes, (long long)r->rows[i].plan_host_bytes,
               (long long)m->host_placed_numel, (long long)m->rss_bytes, (long long)m->baseline_rss_bytes,
               (long long)m->pinned_bytes, (long long)m->device_used_bytes);
        }
    if (r->baseline_before_run)
        sb(&b, "\n-1: not available. The baseline is each rank's RSS right before its run (validate ran under mpirun, "
               "the executor in its processes), the freed heap handed back (malloc_trim) and the peak reset "
               "(/proc/self/clear_refs), plus what a run in the same processes with every tensor cut to one row added "
               "to its RSS beyond its ledger buffers (the resident compute scratch and bookkeeping).\n");
    else
        sb(&b, "\n-1: not available. The baseline is the RSS at the end of the same launch with every tensor cut to "
               "one row (--scale of the largest first dimension), minus that run's ledger buffers (host and, on the "
               "emulated device, device): the program and its libraries, MPI's shared memory, OpenBLAS, thread stacks "
               "and the resident part of the compute scratch (its size follows the tokens, hidden and vocab, not the "
               "scale; a GEMM operand only read stays on the zero page).\n");
    if (b.oom) {
        free(b.p);
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    }
    *out = b.p;
    return 0;
}
