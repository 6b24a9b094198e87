/* plots/kinds.c — the figures: each reads its inputs, writes the .dat blocks and the gnuplot
 * script that draws them. Values go into the .dat in display units (GiB = 1024^3, s, ms) with
 * enough digits to be exact at print size; the script holds only layout and style. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_impl.h"
#include "traces/trace.h"

#define GIB(b) ((double)(b) / RL_GIB)

static bool is_staircase(const char *policy)
{
    return strncmp(policy, "deepspeed", 9) == 0;
}

/* Reads every input as a sweep; on error frees what was read. */
static int read_sweeps(struct plot__fig *f, struct plot__sweep *s, struct rl_err *e)
{
    for (int i = 0; i < f->o->n_in; i++) {
        int rc = plot__sweep_read(f->o->in[i], &s[i], e);
        if (rc) {
            for (int k = 0; k < i; k++)
                plot__sweep_free(&s[k]);
            return rc;
        }
    }
    return 0;
}

static void free_sweeps(struct plot__sweep *s, int n)
{
    for (int i = 0; i < n; i++)
        plot__sweep_free(&s[i]);
}

/* "a, b" from the distinct values of a field over the sweeps. */
static void join_distinct(char *buf, size_t n, const struct plot__sweep *s, int ns, size_t field_off)
{
    buf[0] = 0;
    for (int i = 0; i < ns; i++) {
        const char *v = (const char *)&s[i] + field_off;
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen |= strcmp(v, (const char *)&s[k] + field_off) == 0;
        if (!seen)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? ", " : "", v);
    }
}

static void sweep_meta(struct plot__fig *f, const struct plot__sweep *s, int ns)
{
    char model[512], hw[256], pol[256], sch[256], mb[64] = "";
    join_distinct(model, sizeof model, s, ns, offsetof(struct plot__sweep, model));
    join_distinct(hw, sizeof hw, s, ns, offsetof(struct plot__sweep, hardware));
    join_distinct(pol, sizeof pol, s, ns, offsetof(struct plot__sweep, policy));
    join_distinct(sch, sizeof sch, s, ns, offsetof(struct plot__sweep, schedule));
    for (int i = 0; i < ns; i++) {
        if (!s[i].micro_batch)
            continue;
        char one[24];
        snprintf(one, sizeof one, "%" PRId64, s[i].micro_batch);
        if (!strstr(mb, one))   /* distinct values; good enough for a header */
            snprintf(mb + strlen(mb), sizeof mb - strlen(mb), "%s%s", mb[0] ? ", " : "", one);
        if (s[i].seq_len && i == 0)
            snprintf(mb + strlen(mb), sizeof mb - strlen(mb), " (sequence %" PRId64 ")", s[i].seq_len);
    }
    struct plot__meta m = {model, hw, pol, sch, mb[0] ? mb : NULL};
    plot__dat_header(f, &m);
}

/* Does row w fit: the sweep's own verdict, or GPU memory within --gpu-mem (host as the sweep says). */
static bool row_fits(const struct plot__fig *f, const struct plot__sweep_row *w)
{
    if (f->o->gpu_mem_bytes > 0)
        return w->gpu_bytes <= f->o->gpu_mem_bytes && w->fits_host;
    return w->fits_gpu && w->fits_host;
}

/* The fastest row that fits (ties: the smaller ratio, i.e. the first); -1 when none fits. */
static int best_fit(const struct plot__fig *f, const struct plot__sweep *s)
{
    int best = -1;
    for (int i = 0; i < s->n_rows; i++)
        if (row_fits(f, &s->rows[i]) && (best < 0 || s->rows[i].step_ns < s->rows[best].step_ns))
            best = i;
    return best;
}

static void gib_label(char *buf, size_t n, int64_t bytes)
{
    double g = GIB(bytes);
    if (fabs(g - llround(g)) < 0.005)
        snprintf(buf, n, "%.0f GiB", g);
    else
        snprintf(buf, n, "%.2f GiB", g);
}

/* ---- 1. memory --------------------------------------------------------------------------------------
 * Left/top: honored against requested ratio (staircases as steps, exact as a line, the identity
 * dotted). Right/bottom: GPU and host memory per rank against requested ratio. */
int plot__memory(struct plot__fig *f, struct rl_err *e)
{
    int ns = f->o->n_in;
    struct plot__sweep s[PLOT_MAX_IN];
    int rc = read_sweeps(f, s, e);
    if (rc)
        return rc;
    bool host_rank = true;
    double ymax = 0;
    int64_t cap = 0;
    for (int i = 0; i < ns; i++) {
        host_rank &= s[i].rows[0].host_rank_bytes >= 0;
        if (s[i].gpu_capacity_bytes > cap)
            cap = s[i].gpu_capacity_bytes;
    }
    sweep_meta(f, s, ns);
    for (int i = 0; i < ns; i++) {
        char what[512];
        snprintf(what, sizeof what, "%s: policy %s, schedule %s", s[i].name, s[i].policy, s[i].schedule);
        plot__block(f, what);
        fprintf(f->dat, "# requested_ratio\thonored_ratio\tgpu_gib_per_rank\t%s\tfits\n",
                host_rank ? "host_gib_per_rank" : "host_gib_per_node");
        for (int k = 0; k < s[i].n_rows; k++) {
            const struct plot__sweep_row *w = &s[i].rows[k];
            double host = GIB(host_rank ? w->host_rank_bytes : w->host_node_bytes);
            fprintf(f->dat, "%.4f\t%.6f\t%.4f\t%.4f\t%d\n", w->requested, w->honored, GIB(w->gpu_bytes), host,
                    row_fits(f, w));
            ymax = fmax(ymax, fmax(GIB(w->gpu_bytes), host));
        }
    }
    ymax = fmax(ymax, GIB(cap));
    double tick = plot__tick(ymax, 5);
    double top = ceil(ymax * 1.04 / tick) * tick;

    /* One key for both panels: colour and point type name the policy, the dash type the memory. */
    bool dbl = f->o->width == PLOT_DOUBLE;
    int entries = ns + 3 + (cap > 0), longest = 19;
    for (int i = 0; i < ns; i++)
        longest = (int)fmax(longest, (double)strlen(s[i].policy));
    struct plot__grid g = {dbl ? 1 : 2, dbl ? 2 : 1, 0, 0.5, 0.15, 0.08, 0.36,
                           f->o->title && *f->o->title ? 0.25 : 0, plot__key_height(f, entries, longest)};
    g.height_in = g.rows * (dbl ? 2.2 : 1.8) + g.title_in + g.key_in;
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    fputs("set xlabel 'requested ratio' offset 0,0.9\nset xrange [0:1]\nset xtics 0.2 format '%.1f'\nunset key\n", gp);
    /* panel a */
    plot__panel(f, &g, 0, 0);
    plot__ylabel(f, &g, 0, 0, "honored ratio");
    fputs("set yrange [0:1.02]\nset ytics 0, 0.2, 1 format '%.1f'\n", gp);
    fputs("set label 1 '(a)' at graph 0.04, graph 0.92 left\n", gp);
    fputs("plot x with lines lc rgb '#999999' dt 3 lw 1", gp);
    for (int i = 0; i < ns; i++) {
        bool st = is_staircase(s[i].policy);
        fprintf(gp, ", \\\n     datafile index %d using 1:2 with %s lt %d dt 1", i,
                st ? "steps" : "lines", i + 1);
        fprintf(gp, ", \\\n     datafile index %d using 1:2 with points lt %d", i, i + 1);
    }
    fputs("\n", gp);
    /* panel b */
    plot__panel(f, &g, dbl ? 0 : 1, dbl ? 1 : 0);
    plot__ylabel(f, &g, dbl ? 0 : 1, dbl ? 1 : 0, host_rank ? "memory per rank (GiB)" : "memory per rank, host per node (GiB)");
    fprintf(gp, "set yrange [0:%g]\nset ytics 0, %g, %g format '%s'\n", top, tick, top, plot__tick_format(tick));
    fputs("set label 1 '(b)' at graph 0.04, graph 0.92 left\n", gp);
    fputs("plot ", gp);
    for (int i = 0; i < ns; i++) {
        const char *how = is_staircase(s[i].policy) ? "steps" : "lines";
        for (int m = 0; m < 2; m++) {
            fprintf(gp, "%sdatafile index %d using 1:%d with %s lt %d dt %d", i || m ? ", \\\n     " : "",
                    i, 3 + m, how, i + 1, m ? 2 : 1);
            fprintf(gp, ", \\\n     datafile index %d using 1:%d with points lt %d", i, 3 + m, i + 1);
        }
    }
    if (cap > 0)
        fprintf(gp, ", \\\n     %.4f with lines lc rgb '#000000' dt 3 lw 1", GIB(cap));
    fputs("\n", gp);
    struct plot__key k;
    plot__key_begin(f, &g, entries, longest, &k);
    int ke = 0;
    for (int i = 0; i < ns; i++) {
        plot__key_entry(f, &g, &k, ke++);
        fprintf(gp, "NaN with linespoints lt %d dt 1 title ", i + 1);
        plot__gp_str(f, "policy", s[i].policy);
        fputc('\n', gp);
    }
    plot__key_entry(f, &g, &k, ke++);
    fputs("NaN with lines lc rgb '#000000' dt 1 title 'GPU (b)'\n", gp);
    plot__key_entry(f, &g, &k, ke++);
    fputs("NaN with lines lc rgb '#000000' dt 2 title 'host (b)'\n", gp);
    plot__key_entry(f, &g, &k, ke++);
    fputs("NaN with lines lc rgb '#999999' dt 3 lw 1 title 'honored = requested'", gp);
    if (cap > 0) {
        char t[64], c[32];
        gib_label(c, sizeof c, cap);
        snprintf(t, sizeof t, "GPU capacity %s", c);
        fputc('\n', gp);
        plot__key_entry(f, &g, &k, ke++);
        fputs("NaN with lines lc rgb '#000000' dt 3 lw 1 title ", gp);
        plot__gp_str(f, "label", t);
    }
    fputs("\nunset multiplot\n", gp);
    free_sweeps(s, ns);
    return 0;
}

/* ---- 2. time -----------------------------------------------------------------------------------------
 * One panel per sweep (schedule): bars of exposed time per phase stacked to the step time, the
 * ratios that do not fit shaded, the fastest that fits marked. */
int plot__time(struct plot__fig *f, struct rl_err *e)
{
    int ns = f->o->n_in;
    if (ns > 4)
        return rl_errf(e, RL_EINVAL, "in: %d sweeps; plot time draws 1 to 4 (one panel each)", ns);
    struct plot__sweep s[PLOT_MAX_IN];
    int rc = read_sweeps(f, s, e);
    if (rc)
        return rc;
    for (int i = 0; i < ns; i++)
        if (!s[i].has_phases) {
            rc = rl_errf(e, RL_EINVAL, "%s: a sweep CSV has no per-phase times; plot time needs `ratiolab sweep "
                         "--json`", f->o->in[i]);
            free_sweeps(s, ns);
            return rc;
        }
    /* The phases drawn: those with exposed time somewhere, in the simulator's order (union). */
    char names[PLOT__PH_MAX + 1][32];
    int n_names = 0;
    for (int i = 0; i < ns; i++)
        for (int p = 0; p < s[i].n_phases; p++) {
            bool used = false, have = false;
            for (int k = 0; k < s[i].n_rows; k++)
                used |= s[i].rows[k].exposed_ns[p] > 0;
            for (int q = 0; q < n_names; q++)
                have |= strcmp(names[q], s[i].phase[p]) == 0;
            if (used && !have && n_names < PLOT__PH_MAX)
                snprintf(names[n_names++], sizeof names[0], "%s", s[i].phase[p]);
        }
    snprintf(names[n_names++], sizeof names[0], "idle");
    sweep_meta(f, s, ns);
    double ymax = 0;
    int best[PLOT_MAX_IN];
    for (int i = 0; i < ns; i++) {
        char what[512];
        snprintf(what, sizeof what, "%s: schedule %s, policy %s; phase columns are cumulative (each the top of "
                 "its band), the last equals the step time", s[i].name, s[i].schedule, s[i].policy);
        plot__block(f, what);
        fputs("# requested_ratio\thonored_ratio\tstep_s\tfits", f->dat);
        for (int q = 0; q < n_names; q++)
            fprintf(f->dat, "\ttop_%s_s", names[q]);
        fputc('\n', f->dat);
        for (int k = 0; k < s[i].n_rows; k++) {
            const struct plot__sweep_row *w = &s[i].rows[k];
            fprintf(f->dat, "%.4f\t%.6f\t%.6f\t%d", w->requested, w->honored, (double)w->step_ns * 1e-9,
                    row_fits(f, w));
            int64_t cum = 0;
            for (int q = 0; q < n_names; q++) {
                if (q == n_names - 1) {
                    cum += w->idle_ns;
                } else {
                    for (int p = 0; p < s[i].n_phases; p++)
                        if (strcmp(s[i].phase[p], names[q]) == 0)
                            cum += w->exposed_ns[p];
                }
                fprintf(f->dat, "\t%.6f", (double)cum * 1e-9);
            }
            fputc('\n', f->dat);
            ymax = fmax(ymax, (double)fmax((double)cum, (double)w->step_ns) * 1e-9);
        }
        best[i] = best_fit(f, &s[i]);
    }
    fprintf(f->dat, "\n\n# [summary] fastest ratio that fits%s\n", f->o->gpu_mem_bytes > 0 ? " --gpu-mem" : "");
    for (int i = 0; i < ns; i++) {
        if (best[i] < 0)
            fprintf(f->dat, "# %s: none fits\n", s[i].name);
        else
            fprintf(f->dat, "# %s: requested %.4f, step %.6f s\n", s[i].name, s[i].rows[best[i]].requested,
                    (double)s[i].rows[best[i]].step_ns * 1e-9);
    }

    bool dbl = f->o->width == PLOT_DOUBLE;
    int cols = dbl ? ns : 1, rows = dbl ? 1 : ns;
    double panel_h = dbl ? 2.2 : 1.9;
    struct plot__grid g = {rows, cols, 0, 0.5, 0.15, ns > 1 ? 0.22 : 0.08, 0.36,
                           f->o->title && *f->o->title ? 0.25 : 0, plot__key_height(f, n_names + 1, 15)};
    g.height_in = rows * panel_h + g.title_in + g.key_in;
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    double tick = plot__tick(ymax, 5);
    double top = ceil(ymax * 1.25 / tick) * tick;
    char gpu_mem[40] = "";
    if (f->o->gpu_mem_bytes > 0)
        gib_label(gpu_mem, sizeof gpu_mem, f->o->gpu_mem_bytes);
    else if (s[0].gpu_capacity_bytes > 0)
        gib_label(gpu_mem, sizeof gpu_mem, s[0].gpu_capacity_bytes);
    /* Bars are 80 % of the closest spacing of ratios. */
    double min_step = 1;
    for (int i = 0; i < ns; i++)
        for (int k = 1; k < s[i].n_rows; k++) {
            double d = fabs(s[i].rows[k].requested - s[i].rows[k - 1].requested);
            if (d > 1e-9 && d < min_step)
                min_step = d;
        }
    plot__multiplot(f);
    fprintf(gp, "set style fill solid 1.0 noborder\n"
                "set xlabel 'requested ratio' offset 0,0.9\nset xrange [-0.04:1.04]\nset xtics 0.2 format '%%.1f'\n"
                "set yrange [0:%g]\nset ytics 0, %g, %g format '%s'\nunset key\n",
            top, tick, ceil(ymax / tick) * tick, plot__tick_format(tick));
    for (int i = 0; i < ns; i++) {
        plot__panel(f, &g, dbl ? 0 : i, dbl ? i : 0);
        fputs("unset object\nunset arrow\nunset label\n", gp);
        plot__ylabel(f, &g, dbl ? 0 : i, dbl ? i : 0, "step time (s)");
        if (ns > 1) {
            char t[160];
            snprintf(t, sizeof t, "schedule %s", s[i].schedule);
            fputs("set title ", gp);
            plot__gp_str(f, "schedule", t);
            fputs("\n", gp);
        }
        /* Shade runs of ratios that do not fit, half a sample beyond each end. */
        const struct plot__sweep *sw = &s[i];
        int obj = 1;
        for (int k = 0; k < sw->n_rows;) {
            if (row_fits(f, &sw->rows[k])) {
                k++;
                continue;
            }
            int j = k;
            while (j + 1 < sw->n_rows && !row_fits(f, &sw->rows[j + 1]))
                j++;
            double lo = sw->rows[k].requested - (k > 0 ? (sw->rows[k].requested - sw->rows[k - 1].requested) / 2 : 0.04);
            double hi = sw->rows[j].requested +
                        (j + 1 < sw->n_rows ? (sw->rows[j + 1].requested - sw->rows[j].requested) / 2 : 0.04);
            fprintf(gp, "set object %d rect from %.4f, graph 0 to %.4f, graph 1 fc rgb '#ececec' fs solid 1.0 "
                        "noborder behind\n", obj++, lo, hi);
            k = j + 1;
        }
        if (best[i] >= 0) {
            /* The label sits at the top of the panel, clear of every bar; an arrow points down to
             * the bar. */
            const struct plot__sweep_row *w = &sw->rows[best[i]];
            double x = w->requested, y = (double)w->step_ns * 1e-9;
            const char *just = x > 0.7 ? "right" : x < 0.3 ? "left" : "center";
            double lx = x > 0.7 ? x + 0.03 : x < 0.3 ? x - 0.03 : x;
            fprintf(gp, "set arrow 1 from %.4f, graph 0.86 to %.4f, first %.6f head size screen 0.012,25 filled "
                        "lw 1.2 lc rgb '#000000' front\n", x, x, y + top * 0.015);
            fprintf(gp, "set label 2 'fastest that fits: %.2f (%.2f s)' at %.4f, graph 0.93 %s front\n",
                    w->requested, y, lx, just);
        } else {
            fputs("set label 2 'no ratio fits' at graph 0.5, graph 0.93 center front\n", gp);
        }
        /* Each band is its own box from the top of the band below to its own top, so no band is
         * drawn over another (overdrawn edges show through anti-aliasing). */
        double half = 0.4 * min_step;
        fputs("plot ", gp);
        for (int q = 0; q < n_names; q++) {
            int pat;
            const char *c = plot__phase_color(names[q], q, &pat);
            char lo[16];
            if (q)
                snprintf(lo, sizeof lo, "$%d", 4 + q);
            else
                snprintf(lo, sizeof lo, "0");
            fprintf(gp, "%sdatafile index %d using 1:((%s+$%d)/2):($1-%.4f):($1+%.4f):(%s):%d with boxxyerror fc rgb '%s' ",
                    q ? ", \\\n     " : "", i, lo, 5 + q, half, half, lo, 5 + q, c);
            if (pat)
                fprintf(gp, "fs pattern %d noborder", pat);
            else
                fputs("fs solid 1.0 noborder", gp);
        }
        fputc('\n', gp);
    }
    /* The key strip: one entry per phase and one for the shading. */
    struct plot__key k;
    plot__key_begin(f, &g, n_names + 1, 15, &k);
    for (int q = 0; q < n_names; q++) {
        int pat;
        const char *c = plot__phase_color(names[q], q, &pat);
        plot__key_entry(f, &g, &k, q);
        fprintf(gp, "NaN with boxes fc rgb '%s' ", c);
        if (pat)
            fprintf(gp, "fs pattern %d border lc rgb '%s'", pat, c);
        else
            fputs("fs solid 1.0", gp);
        fputs(" title ", gp);
        plot__gp_str(f, "phase", names[q]);
        fputc('\n', gp);
    }
    plot__key_entry(f, &g, &k, n_names);
    char t[96];
    snprintf(t, sizeof t, "%s%s", gpu_mem[0] ? "over " : "does not fit", gpu_mem);
    fputs("NaN with boxes fc rgb '#ececec' fs solid 1.0 border lc rgb '#aaaaaa' title ", gp);
    plot__gp_str(f, "label", t);
    fputs("\nunset multiplot\n", gp);
    free_sweeps(s, ns);
    return 0;
}

/* ---- 3. timeline -------------------------------------------------------------------------------------
 * One row per track (process and thread of the trace) holding its spans, coloured by category
 * (the phase). Two traces are drawn one above the other on one time axis. */
#define TL_MAX_TRACKS 128
#define TL_MAX_CATS 24

struct tl_track {
    int pid, tid;        /* trace ids */
    char label[96];      /* y tick label */
};

struct tl_trace {
    struct trace_doc doc;                 /* the events */
    struct tl_track tracks[TL_MAX_TRACKS];/* sorted by (pid, tid) */
    int n_tracks;                         /* entries in tracks */
    int64_t t0_ns, t1_ns;                 /* first start and last end of a drawn span */
};

static bool pid_wanted(const char *pids, int pid)
{
    if (!pids)
        return true;
    for (const char *p = pids; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            return false;
        if (v == pid)
            return true;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return false;
    }
    return false;
}

static int check_pids(const char *pids, struct rl_err *e)
{
    if (!pids)
        return 0;
    const char *p = pids;
    for (;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > INT32_MAX || (*end && *end != ','))
            return rl_errf(e, RL_EINVAL, "pids: '%s'; expected trace process ids, e.g. 1,101", pids);
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* The "name" of a metadata event's args. */
static void meta_name(const struct trace_event *ev, char *buf, size_t n)
{
    buf[0] = 0;
    json_t *a = ev->args_json ? json_loads(ev->args_json, 0, NULL) : NULL;
    json_t *v = json_object_get(a, "name");
    if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    json_decref(a);
}

/* Removes every occurrence of `what` from s. */
static void strip_all(char *s, const char *what)
{
    size_t n = strlen(what);
    char *p;
    while ((p = strstr(s, what)))
        memmove(p, p + n, strlen(p + n) + 1);
}

static void track_label(const struct trace_doc *d, int pid, int tid, char *buf, size_t n)
{
    char proc[128] = "", thr[128] = "";
    for (int i = 0; i < d->n_events; i++) {
        const struct trace_event *ev = &d->events[i];
        if (ev->ph != 'M' || ev->pid != pid)
            continue;
        if (strcmp(ev->name, "process_name") == 0)
            meta_name(ev, proc, sizeof proc);
        else if (strcmp(ev->name, "thread_name") == 0 && ev->tid == tid)
            meta_name(ev, thr, sizeof thr);
    }
    /* Short forms: "GPU 0 (V100..., switch 0, socket 0)" -> "GPU 0", "copy engine D2H" -> "D2H". */
    char *paren = strstr(proc, " (");
    if (paren)
        *paren = 0;
    if (strncmp(proc, "host ", 5) == 0)
        memmove(proc, proc + 5, strlen(proc + 5) + 1);
    strip_all(thr, "copy engine ");
    strip_all(thr, "NCCL ");
    strip_all(thr, " stream");
    strip_all(thr, " pool");
    if (!proc[0])
        snprintf(proc, sizeof proc, "pid %d", pid);
    if (!thr[0])
        snprintf(thr, sizeof thr, "tid %d", tid);
    /* A per-rank thread of a shared process ("CPU Adam, rank 3" on a socket) is named by its rank. */
    char *r = strstr(thr, ", rank ");
    if (r) {
        *r = 0;
        snprintf(buf, n, "rank %s %s", r + 7, thr);
        return;
    }
    snprintf(buf, n, "%s %s", proc, thr);
}

static int cmp_track(const void *x, const void *y)
{
    const struct tl_track *a = x, *b = y;
    return a->pid != b->pid ? (a->pid < b->pid ? -1 : 1) : (a->tid > b->tid) - (a->tid < b->tid);
}

static const char *span_cat(const struct trace_event *ev)
{
    return ev->cat && *ev->cat ? ev->cat : ev->name;
}

static int tl_read(const struct plot__fig *f, const char *path, struct tl_trace *t, struct rl_err *e)
{
    memset(t, 0, sizeof *t);
    int rc = trace_read(path, &t->doc, e);
    if (rc)
        return rc;
    t->t0_ns = INT64_MAX;
    t->t1_ns = INT64_MIN;
    for (int i = 0; i < t->doc.n_events; i++) {
        const struct trace_event *ev = &t->doc.events[i];
        if (ev->ph != 'X' || ev->dur_ns <= 0 || !pid_wanted(f->o->pids, ev->pid))
            continue;
        int k = 0;
        while (k < t->n_tracks && (t->tracks[k].pid != ev->pid || t->tracks[k].tid != ev->tid))
            k++;
        if (k == t->n_tracks) {
            if (k == TL_MAX_TRACKS) {
                trace_doc_free(&t->doc);
                return rl_errf(e, RL_EINVAL, "%s: more than %d tracks with spans; choose processes with pids",
                               path, TL_MAX_TRACKS);
            }
            t->tracks[k].pid = ev->pid;
            t->tracks[k].tid = ev->tid;
            t->n_tracks++;
        }
        if (ev->ts_ns < t->t0_ns)
            t->t0_ns = ev->ts_ns;
        if (ev->ts_ns + ev->dur_ns > t->t1_ns)
            t->t1_ns = ev->ts_ns + ev->dur_ns;
    }
    if (!t->n_tracks) {
        trace_doc_free(&t->doc);
        return rl_errf(e, RL_EINVAL, "%s: no spans (\"ph\":\"X\")%s; a timeline needs a trace of a step "
                       "(ratiolab predict --trace, or the executor's)", path, f->o->pids ? " in the pids given" : "");
    }
    qsort(t->tracks, (size_t)t->n_tracks, sizeof t->tracks[0], cmp_track);
    for (int k = 0; k < t->n_tracks; k++)
        track_label(&t->doc, t->tracks[k].pid, t->tracks[k].tid, t->tracks[k].label, sizeof t->tracks[k].label);
    return 0;
}

int plot__timeline(struct plot__fig *f, struct rl_err *e)
{
    int nt = f->o->n_in;
    if (nt > 2)
        return rl_errf(e, RL_EINVAL, "in: %d traces; plot timeline draws one, or two (predicted, then measured)", nt);
    int rc = check_pids(f->o->pids, e);
    if (rc)
        return rc;
    struct tl_trace *t = calloc(2, sizeof *t);
    if (!t)
        return rl_errf(e, RL_ENOMEM, "plot timeline: out of memory");
    for (int i = 0; i < nt; i++)
        if ((rc = tl_read(f, f->o->in[i], &t[i], e))) {
            if (i)
                trace_doc_free(&t[0].doc);
            free(t);
            return rc;
        }
    /* Categories: the simulator's phases in their order, then others by first appearance. */
    static const char *const known[] = {"forward", "backward", "gpu_adam", "cpu_adam", "tp_allreduce", "allgather",
                                        "reduce_scatter", "grad_d2h", "grad_h2d", "param_h2d", "pipeline_bubble"};
    char cats[TL_MAX_CATS][32];
    int n_cats = 0;
    for (size_t q = 0; q < sizeof known / sizeof known[0]; q++)
        for (int i = 0; i < nt && (size_t)n_cats < TL_MAX_CATS; i++) {
            bool used = false;
            for (int k = 0; k < t[i].doc.n_events && !used; k++) {
                const struct trace_event *ev = &t[i].doc.events[k];
                used = ev->ph == 'X' && ev->dur_ns > 0 && pid_wanted(f->o->pids, ev->pid) &&
                       strcmp(span_cat(ev), known[q]) == 0;
            }
            bool have = false;
            for (int c = 0; c < n_cats; c++)
                have |= strcmp(cats[c], known[q]) == 0;
            if (used && !have)
                snprintf(cats[n_cats++], sizeof cats[0], "%s", known[q]);
        }
    for (int i = 0; i < nt; i++)
        for (int k = 0; k < t[i].doc.n_events; k++) {
            const struct trace_event *ev = &t[i].doc.events[k];
            if (ev->ph != 'X' || ev->dur_ns <= 0 || !pid_wanted(f->o->pids, ev->pid))
                continue;
            bool have = false;
            for (int c = 0; c < n_cats; c++)
                have |= strcmp(cats[c], span_cat(ev)) == 0;
            if (!have) {
                if (n_cats == TL_MAX_CATS) {
                    rc = rl_errf(e, RL_EINVAL, "%s: more than %d span categories", f->o->in[i], TL_MAX_CATS);
                    goto out;
                }
                snprintf(cats[n_cats++], sizeof cats[0], "%.31s", span_cat(ev));
            }
        }
    struct plot__meta m = {NULL, NULL, NULL, NULL, NULL};
    plot__dat_header(f, &m);
    double span_ms = 0;
    int n_spans[2][TL_MAX_CATS] = {{0}};   /* spans per trace and category (empty blocks are not plotted) */
    for (int i = 0; i < nt; i++) {
        char what[512];
        snprintf(what, sizeof what, "%s: tracks (row, process id, thread id, label); times below are ms from the "
                 "first span's start", plot__base(f->o->in[i]));
        plot__block(f, what);
        for (int k = 0; k < t[i].n_tracks; k++)
            fprintf(f->dat, "%d\t%d\t%d\t%s\n", k, t[i].tracks[k].pid, t[i].tracks[k].tid, t[i].tracks[k].label);
        span_ms = fmax(span_ms, (double)(t[i].t1_ns - t[i].t0_ns) * 1e-6);
        for (int c = 0; c < n_cats; c++) {
            snprintf(what, sizeof what, "%s: spans of %s (start_ms, end_ms, row)", plot__base(f->o->in[i]), cats[c]);
            plot__block(f, what);
            for (int k = 0; k < t[i].doc.n_events; k++) {
                const struct trace_event *ev = &t[i].doc.events[k];
                if (ev->ph != 'X' || ev->dur_ns <= 0 || !pid_wanted(f->o->pids, ev->pid) ||
                    strcmp(span_cat(ev), cats[c]) != 0)
                    continue;
                int row = 0;
                while (t[i].tracks[row].pid != ev->pid || t[i].tracks[row].tid != ev->tid)
                    row++;
                fprintf(f->dat, "%.6f\t%.6f\t%d\n", (double)(ev->ts_ns - t[i].t0_ns) * 1e-6,
                        (double)(ev->ts_ns + ev->dur_ns - t[i].t0_ns) * 1e-6, row);
                n_spans[i][c]++;
            }
            fputs("?\t?\t?\n", f->dat);   /* a block is never empty */
        }
    }

    size_t longest = 0;
    for (int i = 0; i < nt; i++)
        for (int k = 0; k < t[i].n_tracks; k++)
            longest = strlen(t[i].tracks[k].label) > longest ? strlen(t[i].tracks[k].label) : longest;
    int longest_cat = 8;
    for (int c = 0; c < n_cats; c++)
        longest_cat = (int)fmax(longest_cat, (double)strlen(cats[c]));
    /* Rows are 0.13 in; panels share the time axis, so only the lowest carries its label. */
    double row_in = 0.13;
    struct plot__grid g = {1, 1, 0, 0.2 + 0.052 * (double)longest, 0.15, nt > 1 ? 0.22 : 0.08, 0.36,
                           f->o->title && *f->o->title ? 0.25 : 0, plot__key_height(f, n_cats, longest_cat)};
    double body = 0;
    for (int i = 0; i < nt; i++)
        body += t[i].n_tracks * row_in + g.top_in + (i == nt - 1 ? g.bottom_in : 0.12);
    g.height_in = body + g.title_in + g.key_in;
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    double tick = plot__tick(span_ms, 6);
    plot__multiplot(f);
    fprintf(gp, "set style fill solid 1.0 noborder\nset xrange [0:%g]\nset xtics %g format '%s'\n"
                "unset grid\nset grid xtics lc rgb '#e0e0e0' lw 0.6\nunset key\nset ytics scale 0\n",
            span_ms * 1.01, tick, plot__tick_format(tick));
    double y_top = g.height_in - g.title_in;
    int b = 0;
    for (int i = 0; i < nt; i++) {
        double h = t[i].n_tracks * row_in;
        bool last = i == nt - 1;
        fprintf(gp, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n", g.left_in / plot__width_in(f),
                1 - g.right_in / plot__width_in(f));
        fprintf(gp, "set tmargin at screen %.4f\nset bmargin at screen %.4f\n", (y_top - g.top_in) / g.height_in,
                (y_top - g.top_in - h) / g.height_in);
        y_top -= g.top_in + h + (last ? g.bottom_in : 0.12);
        if (nt > 1) {
            fprintf(gp, "set title '%s: ' . ", i == 0 ? "predicted" : "measured");
            plot__gp_str(f, "in", plot__base(f->o->in[i]));
            fputs("\n", gp);
        }
        if (last)
            fprintf(gp, "set xlabel 'time (ms)' offset 0,0.9\nset format x '%s'\n", plot__tick_format(tick));
        else
            fputs("unset xlabel\nset format x ''\n", gp);
        fprintf(gp, "set yrange [%d.5:-0.5]\nset ytics (", t[i].n_tracks - 1);
        for (int k = 0; k < t[i].n_tracks; k++) {
            plot__gp_tic(f, "track", t[i].tracks[k].label);
            fprintf(gp, " %d%s", k, k + 1 < t[i].n_tracks ? ", " : ")\n");
        }
        b++;   /* the track list block */
        fputs("plot ", gp);
        bool first = true;
        for (int c = 0; c < n_cats; c++, b++) {
            int pat;
            const char *col = plot__phase_color(cats[c], c, &pat);
            if (!n_spans[i][c])
                continue;
            fprintf(gp, "%sdatafile index %d using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '%s' "
                        "fs %s", first ? "" : ", \\\n     ", b, col, pat ? "pattern 4 noborder" : "solid 1.0");
            first = false;
            if (pat)
                fprintf(gp, " lc rgb '%s'", col);
        }
        fputc('\n', gp);
    }
    struct plot__key k;
    plot__key_begin(f, &g, n_cats, longest_cat, &k);
    for (int c = 0; c < n_cats; c++) {
        int pat;
        const char *col = plot__phase_color(cats[c], c, &pat);
        plot__key_entry(f, &g, &k, c);
        fprintf(gp, "NaN with boxes fc rgb '%s' fs %s title ", col, pat ? "pattern 4" : "solid 1.0");
        plot__gp_str(f, "category", cats[c]);
        fputc('\n', gp);
    }
    fputs("unset multiplot\n", gp);
out:
    for (int i = 0; i < nt; i++)
        trace_doc_free(&t[i].doc);
    free(t);
    return rc;
}

/* ---- 4. parity ---------------------------------------------------------------------------------------
 * Predicted (x) against measured (y) on log axes in ms: the step of every report row and each
 * phase, the identity and a band of +-band_pct around it. */
int plot__parity(struct plot__fig *f, struct rl_err *e)
{
    if (f->o->n_in != 1)
        return rl_errf(e, RL_EINVAL, "in: %d files; plot parity reads one validate report.json", f->o->n_in);
    struct plot__report r;
    int rc = plot__report_read(f->o->in[0], &r, e);
    if (rc)
        return rc;
    char ranks[48], sched[256] = "";
    snprintf(ranks, sizeof ranks, "%d ranks, backend %s", r.ranks, r.backend);
    for (int i = 0; i < r.n_rows; i++)
        if (!strstr(sched, r.rows[i].schedule))
            snprintf(sched + strlen(sched), sizeof sched - strlen(sched), "%s%s", sched[0] ? ", " : "",
                     r.rows[i].schedule);
    char hw[200];
    snprintf(hw, sizeof hw, "%s (%s)", r.hardware, ranks);
    struct plot__meta m = {r.model, hw, r.policy, sched, NULL};
    plot__dat_header(f, &m);
    double lo = INFINITY, hi = 0;
    plot__block(f, "step: ratio, predicted_ms, measured_ms, step_error_pct (as the report states it)");
    for (int i = 0; i < r.n_rows; i++) {
        const struct plot__report_row *w = &r.rows[i];
        double p = (double)w->pred.step_ns * 1e-6, q = (double)w->meas.step_ns * 1e-6;
        fprintf(f->dat, "%.4f\t%.6f\t%.6f\t", w->ratio, p, q);
        if (isnan(w->step_error_pct))
            fputs("?\n", f->dat);
        else
            fprintf(f->dat, "%.3f\n", w->step_error_pct);
        lo = fmin(lo, fmin(p, q));
        hi = fmax(hi, fmax(p, q));
    }
    /* Phases with a positive time on both sides in some row. */
    int drawn[PLOT__PH_MAX], n_drawn = 0;
    for (int k = 0; k < r.n_phases; k++) {
        char what[160];
        bool any = false;
        for (int i = 0; i < r.n_rows && !any; i++) {
            const struct plot__side *P = &r.rows[i].pred, *M = &r.rows[i].meas;
            int64_t a = f->o->phase_exposed ? P->exposed_ns[k] : P->busy_ns[k];
            int64_t b = f->o->phase_exposed ? M->exposed_ns[k] : M->busy_ns[k];
            any = a > 0 && b > 0;
        }
        if (!any)
            continue;
        snprintf(what, sizeof what, "phase %s, %s time: ratio, predicted_ms, measured_ms", r.phase[k],
                 f->o->phase_exposed ? "exposed" : "busy");
        plot__block(f, what);
        drawn[n_drawn++] = k;
        for (int i = 0; i < r.n_rows; i++) {
            const struct plot__side *P = &r.rows[i].pred, *M = &r.rows[i].meas;
            int64_t a = f->o->phase_exposed ? P->exposed_ns[k] : P->busy_ns[k];
            int64_t b = f->o->phase_exposed ? M->exposed_ns[k] : M->busy_ns[k];
            if (a <= 0 || b <= 0)
                continue;   /* log axes: a zero has no place */
            fprintf(f->dat, "%.4f\t%.6f\t%.6f\n", r.rows[i].ratio, (double)a * 1e-6, (double)b * 1e-6);
            lo = fmin(lo, fmin((double)a, (double)b) * 1e-6);
            hi = fmax(hi, fmax((double)a, (double)b) * 1e-6);
        }
    }
    double x0 = lo / 1.5, x1 = hi * 1.5;
    /* A square panel; the key at its right (double width) or under it (single). */
    int longest = 20;
    for (int d = 0; d < n_drawn; d++)
        longest = (int)fmax(longest, (double)strlen(r.phase[drawn[d]]));
    bool dbl = f->o->width == PLOT_DOUBLE;
    double w = plot__width_in(f), key_w = 0.5 + 0.055 * longest, left = 0.5, bottom = 0.36, top = 0.1;
    double side = dbl ? 2.8 : w - left - 0.25;
    double title_in = f->o->title && *f->o->title ? 0.25 : 0;
    struct plot__grid g = {1, 1, 0, left, w - left - side, top, bottom, title_in,
                           dbl ? 0 : plot__key_height(f, n_drawn + 3, longest)};
    g.height_in = side + bottom + top + title_in + g.key_in;
    if (dbl) {   /* centre the square and its key */
        double pad = (w - (left + side + 0.2 + key_w)) / 2;
        g.left_in = pad + left;
        g.right_in = w - g.left_in - side;
    }
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    plot__panel(f, &g, 0, 0);
    fprintf(gp, "set label 90 'measured (ms)' at screen %.4f, screen %.4f center rotate by 90\n",
            (g.left_in - 0.42) / w, (g.height_in - title_in - top - side / 2) / g.height_in);
    fprintf(gp, "set xlabel 'predicted (ms)' offset 0,0.9\nset logscale xy\nset xrange [%g:%g]\nset yrange [%g:%g]\n"
                "set grid xtics ytics\nset samples 200\nband = %g\n",
            x0, x1, x0, x1, f->o->band_pct / 100.0);
    /* Log axes: ticks at 1, 2 and 5 x 10^k inside the range (gnuplot's own are decades only);
     * over more than three decades the labels of 2 and 5 would run into each other, so those
     * become unlabelled minor ticks. */
    const bool wide = log10(x1 / x0) > 3;
    for (int ax = 0; ax < 2; ax++) {
        fprintf(gp, "set %ctics (", ax ? 'y' : 'x');
        bool first = true;
        for (double dec = pow(10, floor(log10(x0))); dec <= x1; dec *= 10)
            for (int q = 0; q < 3; q++) {
                double v = dec * (q == 0 ? 1 : q == 1 ? 2 : 5);
                if (v < x0 || v > x1)
                    continue;
                if (wide && q > 0)
                    fprintf(gp, "%s'' %g 1", first ? "" : ", ", v);
                else
                    fprintf(gp, "%s'%g' %g", first ? "" : ", ", v, v);
                first = false;
            }
        fputs(")\n", gp);
    }
    if (dbl)
        fprintf(gp, "set key at screen %.4f, screen %.4f left top Left reverse samplen 2\n",
                (g.left_in + side + 0.2) / w, (g.height_in - title_in - top) / g.height_in);
    else
        fputs("unset key\n", gp);
    fprintf(gp, "plot '+' using 1:($1*(1-band)):($1*(1+band)) with filledcurves fc rgb '#d9d9d9' fs solid 1.0 "
                "title '\xc2\xb1%g %%', \\\n     x with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted', "
                "\\\n     datafile index 0 using 2:3 with points pt 7 ps 0.8 lc rgb '#000000' title 'step'",
            f->o->band_pct);
    for (int d = 0; d < n_drawn; d++) {
        int pat;
        const char *c = plot__phase_color(r.phase[drawn[d]], d, &pat);
        fprintf(gp, ", \\\n     datafile index %d using 2:3 with points pt %d ps 0.7 lc rgb '%s' title ",
                d + 1, plot__point(d + 1), c);
        plot__gp_str(f, "phase", r.phase[drawn[d]]);
    }
    if (!dbl) {
        struct plot__key k;
        plot__key_begin(f, &g, n_drawn + 3, longest, &k);
        fputc('\n', gp);
        plot__key_entry(f, &g, &k, 0);
        fprintf(gp, "NaN with boxes fc rgb '#d9d9d9' fs solid 1.0 title '\xc2\xb1%g %%'\n", f->o->band_pct);
        plot__key_entry(f, &g, &k, 1);
        fputs("NaN with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted'\n", gp);
        plot__key_entry(f, &g, &k, 2);
        fputs("NaN with points pt 7 ps 0.8 lc rgb '#000000' title 'step'", gp);
        for (int d = 0; d < n_drawn; d++) {
            int pat;
            const char *c = plot__phase_color(r.phase[drawn[d]], d, &pat);
            fputc('\n', gp);
            plot__key_entry(f, &g, &k, 3 + d);
            fprintf(gp, "NaN with points pt %d ps 0.7 lc rgb '%s' title ", plot__point(d + 1), c);
            plot__gp_str(f, "phase", r.phase[drawn[d]]);
        }
    }
    fputs("\nunset multiplot\n", gp);
    plot__report_free(&r);
    return 0;
}

/* ---- 5. scaling --------------------------------------------------------------------------------------
 * One point per sweep (at --ratio, or the fastest ratio that fits), one line per policy and
 * schedule, against GPU count or model size. */
struct sc_point {
    double x, y;       /* axis values */
    double ratio;      /* requested ratio of the row shown */
    int sweep;         /* index of the input */
};

static int cmp_point(const void *a, const void *b)
{
    const struct sc_point *p = a, *q = b;
    return (p->x > q->x) - (p->x < q->x);
}

int plot__scaling(struct plot__fig *f, struct rl_err *e)
{
    int ns = f->o->n_in;
    struct plot__sweep s[PLOT_MAX_IN];
    int rc = read_sweeps(f, s, e);
    if (rc)
        return rc;
    bool gpus = f->o->scaling_x == PLOT_X_GPUS, tokens = f->o->scaling_y == PLOT_Y_TOKENS;
    struct sc_point pts[PLOT_MAX_IN];
    int series[PLOT_MAX_IN], n_series = 0, first_of[PLOT_MAX_IN];
    for (int i = 0; i < ns && !rc; i++) {
        if (gpus && s[i].gpus <= 0)
            rc = rl_errf(e, RL_EINVAL, "%s: no GPU count (field 'gpus', or 'N GPUs' in 'model'); scaling over "
                         "GPUs needs `ratiolab sweep --json`", f->o->in[i]);
        else if (!gpus && s[i].params <= 0)
            rc = rl_errf(e, RL_EINVAL, "%s: no model size (field 'rank_numel'); scaling over parameters needs "
                         "`ratiolab sweep --json` from ratiolab 0.1.0 or later", f->o->in[i]);
        else if (tokens && (s[i].gpus <= 0 || !s[i].has_phases))
            rc = rl_errf(e, RL_EINVAL, "%s: no tokens/s or GPU count; scaling in tokens/s needs `ratiolab "
                         "sweep --json`", f->o->in[i]);
        if (rc)
            break;
        int row = -1;
        if (f->o->ratio >= 0) {
            for (int k = 0; k < s[i].n_rows; k++)
                if (fabs(s[i].rows[k].requested - f->o->ratio) < 1e-9)
                    row = k;
            if (row < 0)
                rc = rl_errf(e, RL_EINVAL, "ratio: %g is not among the ratios of %s", f->o->ratio, f->o->in[i]);
        } else {
            row = best_fit(f, &s[i]);
        }
        if (rc)
            break;
        pts[i].sweep = i;
        pts[i].x = gpus ? s[i].gpus : (double)s[i].params * 1e-9;
        pts[i].ratio = row >= 0 ? s[i].rows[row].requested : NAN;
        pts[i].y = row < 0 ? NAN
                   : tokens ? s[i].rows[row].tokens_per_s * s[i].gpus
                            : (double)s[i].rows[row].step_ns * 1e-9;
        int k = 0;
        while (k < n_series && (strcmp(s[first_of[k]].policy, s[i].policy) || strcmp(s[first_of[k]].schedule, s[i].schedule)))
            k++;
        if (k == n_series)
            first_of[n_series++] = i;
        series[i] = k;
    }
    if (rc) {
        free_sweeps(s, ns);
        return rc;
    }
    sweep_meta(f, s, ns);
    double xmin = INFINITY, xmax = 0, ymax = 0;
    for (int k = 0; k < n_series; k++) {
        char what[512];
        snprintf(what, sizeof what, "policy %s, schedule %s: %s, %s, requested ratio shown, input%s",
                 s[first_of[k]].policy, s[first_of[k]].schedule, gpus ? "gpus" : "params_billion",
                 tokens ? "tokens_per_s_all_gpus" : "step_s",
                 f->o->ratio >= 0 ? "" : " (ratio: the fastest that fits; ? when none fits)");
        plot__block(f, what);
        struct sc_point sp[PLOT_MAX_IN];
        int n = 0;
        for (int i = 0; i < ns; i++)
            if (series[i] == k)
                sp[n++] = pts[i];
        qsort(sp, (size_t)n, sizeof sp[0], cmp_point);
        for (int j = 0; j < n; j++) {
            if (isnan(sp[j].y)) {
                fprintf(f->dat, "%.6g\t?\t?\t%s\n", sp[j].x, s[sp[j].sweep].name);
                continue;
            }
            fprintf(f->dat, "%.6g\t%.6f\t%.4f\t%s\n", sp[j].x, sp[j].y, sp[j].ratio, s[sp[j].sweep].name);
            ymax = fmax(ymax, sp[j].y);
        }
        for (int j = 0; j < n; j++) {
            xmin = fmin(xmin, sp[j].x);
            xmax = fmax(xmax, sp[j].x);
        }
    }
    int longest = 10;
    for (int k = 0; k < n_series; k++)
        longest = (int)fmax(longest, (double)(strlen(s[first_of[k]].policy) + strlen(s[first_of[k]].schedule) + 19));
    struct plot__grid g = {1, 1, 0, 0.55, 0.15, 0.08, 0.36, f->o->title && *f->o->title ? 0.25 : 0,
                           plot__key_height(f, n_series, longest)};
    g.height_in = (f->o->width == PLOT_DOUBLE ? 2.6 : 2.2) + g.title_in + g.key_in;
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    plot__panel(f, &g, 0, 0);
    if (ymax <= 0)
        ymax = 1;
    /* Large throughputs are shown in thousands, so tick labels stay short. */
    double yscale = ymax >= 1e4 ? 1e-3 : 1;
    ymax *= yscale;
    plot__ylabel(f, &g, 0, 0, !tokens ? "step time (s)" : yscale < 1 ? "tokens/s, all GPUs (thousands)" : "tokens/s, all GPUs");
    double tick = plot__tick(ymax, 5);
    fprintf(gp, "set xlabel '%s' offset 0,0.9\nset yrange [0:%g]\nset ytics %g format '%s'\nunset key\nys = %g\n",
            gpus ? "GPUs" : "model parameters (billions)", ceil(ymax * 1.15 / tick) * tick, tick,
            plot__tick_format(tick), yscale);
    if (gpus || (xmax >= 4 * xmin && xmin > 0)) {
        /* Ticks at the values drawn only (GPU counts are discrete); log2 when they span 4x. */
        if (xmax >= 4 * xmin && xmin > 0)
            fprintf(gp, "set logscale x 2\nset xrange [%g:%g]\n", xmin / 1.25, xmax * 1.25);
        else
            fprintf(gp, "set xrange [%g:%g]\n", xmin - fmax((xmax - xmin) * 0.12, 0.5), xmax + fmax((xmax - xmin) * 0.12, 0.5));
        fputs("set xtics (", gp);
        bool first = true;
        double prev = -1;
        double xs[PLOT_MAX_IN];
        int nx = 0;
        for (int i = 0; i < ns; i++)
            xs[nx++] = pts[i].x;
        for (int a = 0; a < nx; a++)   /* sort the distinct x values (n is at most 16) */
            for (int b = a + 1; b < nx; b++)
                if (xs[b] < xs[a]) {
                    double t = xs[a];
                    xs[a] = xs[b];
                    xs[b] = t;
                }
        for (int a = 0; a < nx; a++) {
            if (xs[a] == prev)
                continue;
            fprintf(gp, "%s'%g' %g", first ? "" : ", ", xs[a], xs[a]);
            first = false;
            prev = xs[a];
        }
        fputs(")\n", gp);
    } else {
        double pad = xmax > xmin ? (xmax - xmin) * 0.1 : fmax(xmax * 0.1, 1);
        fprintf(gp, "set xrange [%g:%g]\n", fmax(0, xmin - pad), xmax + pad);
    }
    fputs("plot ", gp);
    for (int k = 0; k < n_series; k++)
        fprintf(gp, "%sdatafile index %d using 1:($2*ys) with linespoints lt %d, \\\n     datafile index %d using 1:($2*ys):(sprintf('r=%%.2f', $3)) "
                    "with labels offset 0,0.8 font ',7' tc lt %d",
                k ? ", \\\n     " : "", k, k + 1, k, k + 1);
    fputs("\n", gp);
    struct plot__key key;
    plot__key_begin(f, &g, n_series, longest, &key);
    for (int k = 0; k < n_series; k++) {
        char t[160];
        snprintf(t, sizeof t, "policy %s, schedule %s", s[first_of[k]].policy, s[first_of[k]].schedule);
        plot__key_entry(f, &g, &key, k);
        fprintf(gp, "NaN with linespoints lt %d title ", k + 1);
        plot__gp_str(f, "policy", t);
        fputc('\n', gp);
    }
    fputs("unset multiplot\n", gp);
    fprintf(f->dat, "\n\n# [note] labels on the points: the requested ratio shown%s\n",
            f->o->ratio >= 0 ? " (--ratio)" : " (the fastest that fits)");
    if (!gpus)
        fputs("# [note] parameters: one rank's (rank_numel) x TP x PP; tensors TP replicates count once per rank\n",
              f->dat);
    free_sweeps(s, ns);
    return 0;
}

/* ---- 6. monitor --------------------------------------------------------------------------------------
 * Resident memory (solid) and GPU memory (dashed, where NVML saw it) of the largest processes
 * over time, with the monitor's --mark lines as numbered vertical lines. */
#define MON_MAX_PROCS 7
#define MON_MAX_MARKS 12
#define MON_TREE_TRACK 0   /* the monitor's trace track of marks (MON_TREE_PID) */

struct mon_mark {
    double t_s;          /* since the start of monitoring */
    char text[64];       /* the line, shortened */
};

static int read_marks(const char *path, struct mon_mark *mk, int *n, int *dropped, struct rl_err *e)
{
    struct trace_doc d;
    *n = *dropped = 0;
    int rc = trace_read(path, &d, e);
    if (rc)
        return rl_err_prefix(e, "marks");
    for (int i = 0; i < d.n_events; i++) {
        const struct trace_event *ev = &d.events[i];
        if (ev->ph != 'i' || ev->pid != MON_TREE_TRACK || !ev->name || strcmp(ev->name, "monitor start") == 0 ||
            strcmp(ev->name, "monitor end") == 0 || strcmp(ev->name, "gpu memory unavailable") == 0)
            continue;
        if (*n == MON_MAX_MARKS) {
            (*dropped)++;
            continue;
        }
        mk[*n].t_s = (double)ev->ts_ns * 1e-9;
        snprintf(mk[*n].text, sizeof mk[*n].text, "%s", ev->name);
        for (char *p = mk[*n].text; *p; p++)
            if (*p == '\t' || *p == '\n' || *p == '\r')
                *p = ' ';
        if (strlen(ev->name) >= sizeof mk[*n].text)
            memcpy(mk[*n].text + sizeof mk[*n].text - 4, "...", 4);
        (*n)++;
    }
    trace_doc_free(&d);
    return 0;
}

int plot__monitor(struct plot__fig *f, struct rl_err *e)
{
    if (f->o->n_in != 1)
        return rl_errf(e, RL_EINVAL, "in: %d files; plot monitor reads one `ratiolab monitor --csv` file",
                       f->o->n_in);
    struct plot__monitor m;
    int rc = plot__monitor_read(f->o->in[0], &m, e);
    if (rc)
        return rc;
    struct mon_mark marks[MON_MAX_MARKS];
    int n_marks = 0, dropped = 0;
    if (f->o->marks && (rc = read_marks(f->o->marks, marks, &n_marks, &dropped, e))) {
        plot__monitor_free(&m);
        return rc;
    }
    /* The processes drawn: the largest peaks (ties: first seen) down to 1 % of the largest, shown
     * in order of first appearance. */
    int pick[MON_MAX_PROCS], n_pick = 0;
    int64_t top_peak = 0;
    for (int k = 0; k < m.n_procs; k++)
        if (m.procs[k].peak_rss_bytes > top_peak)
            top_peak = m.procs[k].peak_rss_bytes;
    bool *taken = m.n_procs > 0 ? calloc((size_t)(unsigned)m.n_procs, sizeof *taken) : NULL;
    if (!taken) {
        plot__monitor_free(&m);
        return rl_errf(e, RL_ENOMEM, "plot monitor: out of memory");
    }
    while (n_pick < MON_MAX_PROCS && n_pick < m.n_procs) {
        int best = -1;
        for (int k = 0; k < m.n_procs; k++)
            if (!taken[k] && (best < 0 || m.procs[k].peak_rss_bytes > m.procs[best].peak_rss_bytes))
                best = k;
        taken[best] = true;
        if (n_pick && m.procs[best].peak_rss_bytes < top_peak / 100)
            break;
        pick[n_pick++] = best;
    }
    for (int a = 0; a < n_pick; a++)   /* back to order of appearance */
        for (int b = a + 1; b < n_pick; b++)
            if (pick[b] < pick[a]) {
                int t = pick[a];
                pick[a] = pick[b];
                pick[b] = t;
            }
    free(taken);
    struct plot__meta meta = {NULL, NULL, NULL, NULL, NULL};
    plot__dat_header(f, &meta);
    if (m.n_procs > n_pick)
        fprintf(f->dat, "# %d of %d processes drawn (the largest resident peaks, at most %d, down to 1 %% of the "
                        "largest)\n", n_pick, m.n_procs, MON_MAX_PROCS);
    double tmax = 0, ymax = 0;
    bool any_gpu = false;
    char labels[MON_MAX_PROCS][96];
    for (int a = 0; a < n_pick; a++) {
        const struct plot__mon_proc *p = &m.procs[pick[a]];
        if (p->rank >= 0)
            snprintf(labels[a], sizeof labels[a], "rank %d (%s %d)", p->rank, p->comm, p->pid);
        else
            snprintf(labels[a], sizeof labels[a], "%s %d", p->comm, p->pid);
        char what[160];
        snprintf(what, sizeof what, "%s: t_s, rss_gib, gpu_gib (? unavailable)", labels[a]);
        plot__block(f, what);
        any_gpu |= p->peak_gpu_bytes >= 0;
        for (int k = 0; k < m.n_samples; k++) {
            const struct plot__mon_sample *x = &m.samples[k];
            if (x->pid != p->pid)
                continue;
            fprintf(f->dat, "%.4f\t%.4f\t", (double)x->t_ns * 1e-9, GIB(x->rss_bytes));
            if (x->gpu_bytes < 0)
                fputs("?\n", f->dat);
            else
                fprintf(f->dat, "%.4f\n", GIB(x->gpu_bytes));
            tmax = fmax(tmax, (double)x->t_ns * 1e-9);
            ymax = fmax(ymax, fmax(GIB(x->rss_bytes), GIB(x->gpu_bytes)));
        }
    }
    plot__block(f, "marks: t_s, number, line");
    for (int k = 0; k < n_marks; k++) {
        fprintf(f->dat, "%.4f\t%d\t%s\n", marks[k].t_s, k + 1, marks[k].text);
        tmax = fmax(tmax, marks[k].t_s);
    }
    if (dropped)
        fprintf(f->dat, "# %d later marks not drawn\n", dropped);
    fputs("?\t?\t?\n", f->dat);

    int entries = n_pick + (any_gpu ? 2 : 0) + n_marks, longest = 12;
    for (int a = 0; a < n_pick; a++)
        longest = (int)fmax(longest, (double)strlen(labels[a]));
    for (int k = 0; k < n_marks; k++)
        longest = (int)fmax(longest, (double)strlen(marks[k].text) + 4);
    struct plot__grid g = {1, 1, 0, 0.5, 0.15, n_marks ? 0.2 : 0.08, 0.36, f->o->title && *f->o->title ? 0.25 : 0,
                           plot__key_height(f, entries, longest)};
    g.height_in = (f->o->width == PLOT_DOUBLE ? 2.6 : 2.2) + g.title_in + g.key_in;
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    if (ymax <= 0)
        ymax = 1;
    if (tmax <= 0)
        tmax = 1;
    double yt = plot__tick(ymax, 5), xt = plot__tick(tmax, 6);
    plot__multiplot(f);
    plot__panel(f, &g, 0, 0);
    plot__ylabel(f, &g, 0, 0, "memory (GiB)");
    fprintf(gp, "set xlabel 'time (s)' offset 0,0.9\nset xrange [0:%g]\nset xtics %g format '%s'\n"
                "set yrange [0:%g]\nset ytics %g format '%s'\nunset key\n",
            tmax * 1.01, xt, plot__tick_format(xt), ceil(ymax * 1.1 / yt) * yt, yt, plot__tick_format(yt));
    for (int k = 0; k < n_marks; k++) {
        fprintf(gp, "set arrow %d from %.4f, graph 0 to %.4f, graph 1 nohead lc rgb '#555555' dt 3 lw 0.8 back\n",
                k + 1, marks[k].t_s, marks[k].t_s);
        fprintf(gp, "set label %d '%d' at %.4f, graph 1 center offset 0,0.6 font ',8'\n", k + 1, k + 1, marks[k].t_s);
    }
    fputs("plot ", gp);
    for (int a = 0; a < n_pick; a++) {
        fprintf(gp, "%sdatafile index %d using 1:2 with lines lt %d dt 1", a ? ", \\\n     " : "", a, a + 1);
        if (m.procs[pick[a]].peak_gpu_bytes >= 0)
            fprintf(gp, ", \\\n     datafile index %d using 1:3 with lines lt %d dt 2", a, a + 1);
    }
    fputc('\n', gp);
    struct plot__key key;
    plot__key_begin(f, &g, entries, longest, &key);
    int ke = 0;
    for (int a = 0; a < n_pick; a++) {
        plot__key_entry(f, &g, &key, ke++);
        fprintf(gp, "NaN with lines lt %d dt 1 title ", a + 1);
        plot__gp_str(f, "process", labels[a]);
        fputc('\n', gp);
    }
    if (any_gpu) {
        plot__key_entry(f, &g, &key, ke++);
        fputs("NaN with lines lc rgb '#000000' dt 1 title 'resident (RSS)'\n", gp);
        plot__key_entry(f, &g, &key, ke++);
        fputs("NaN with lines lc rgb '#000000' dt 2 title 'GPU (NVML)'\n", gp);
    }
    for (int k = 0; k < n_marks; k++) {
        char t[96];
        snprintf(t, sizeof t, "%d: %s", k + 1, marks[k].text);
        plot__key_entry(f, &g, &key, ke++);
        fputs("NaN with lines lc rgb '#555555' dt 3 lw 0.8 title ", gp);
        plot__gp_str(f, "mark", t);
        fputc('\n', gp);
    }
    fputs("unset multiplot\n", gp);
    plot__monitor_free(&m);
    return 0;
}
