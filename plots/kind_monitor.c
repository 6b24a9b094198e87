/* plots/kind_monitor.c — `ratiolab plot monitor`: per-process memory over time from a monitor CSV,
 * with its marks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_impl.h"
#include "traces/trace.h"

/* ---- 6. monitor --------------------------------------------------------------------------------------
 * Resident memory (solid), GPU memory (dashed, where NVML saw it) and locked + pinned host memory
 * (dotted, where there is any) of the largest processes
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
    struct plot__meta meta = {NULL, NULL, NULL, NULL, NULL, NULL};
    plot__dat_header(f, &meta);
    if (m.n_procs > n_pick)
        fprintf(f->dat, "# %d of %d processes drawn (the largest resident peaks, at most %d, down to 1 %% of the "
                        "largest)\n", n_pick, m.n_procs, MON_MAX_PROCS);
    double tmax = 0, ymax = 0;
    bool any_gpu = false, any_lp = false;
    char labels[MON_MAX_PROCS][96];
    for (int a = 0; a < n_pick; a++) {
        const struct plot__mon_proc *p = &m.procs[pick[a]];
        if (p->rank >= 0)
            snprintf(labels[a], sizeof labels[a], "rank %d (%s %d)", p->rank, p->comm, p->pid);
        else
            snprintf(labels[a], sizeof labels[a], "%s %d", p->comm, p->pid);
        char what[160];
        snprintf(what, sizeof what, "%s: t_s, rss_gib, gpu_gib (? unavailable), locked_plus_pinned_gib", labels[a]);
        plot__block(f, what);
        any_gpu |= p->peak_gpu_bytes >= 0;
        any_lp |= p->peak_locked_pinned_bytes > 0;
        for (int k = 0; k < m.n_samples; k++) {
            const struct plot__mon_sample *x = &m.samples[k];
            if (x->pid != p->pid)
                continue;
            fprintf(f->dat, "%.4f\t%.4f\t", (double)x->t_ns * 1e-9, PLOT__GIB(x->rss_bytes));
            if (x->gpu_bytes < 0)
                fputs("?", f->dat);
            else
                fprintf(f->dat, "%.4f", PLOT__GIB(x->gpu_bytes));
            fprintf(f->dat, "\t%.4f\n", PLOT__GIB(x->locked_pinned_bytes));
            tmax = fmax(tmax, (double)x->t_ns * 1e-9);
            ymax = fmax(ymax, fmax(PLOT__GIB(x->rss_bytes), PLOT__GIB(x->gpu_bytes)));
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

    /* Marks closer than 2 % of the time axis share one number label ("1-3"), so an executor that
     * prints its lines at exit does not overprint them. */
    int mark_group[MON_MAX_MARKS];
    for (int k = 0; k < n_marks; k++)
        mark_group[k] = k > 0 && marks[k].t_s - marks[mark_group[k - 1]].t_s < 0.02 * fmax(tmax, 1e-9)
                            ? mark_group[k - 1] : k;
    /* Key entries hold at most what fits across the page. */
    int fit = (int)((plot__width_in(f) - 0.65) / 0.055);
    for (int k = 0; k < n_marks; k++)
        if ((int)strlen(marks[k].text) + 4 > fit && fit > 8)
            memcpy(marks[k].text + fit - 8, "...", 4);
    if (ymax <= 0)
        ymax = 1;
    if (tmax <= 0)
        tmax = 1;
    double yt = plot__tick(ymax, 5), xt = plot__tick(tmax, 6), ytop = 0;
    /* The key names the processes and the line styles; the marks' texts (log lines, up to a page
     * wide) are a numbered list in a strip under the panel, as the numbers at the top refer to it. */
    struct plot__key key, notes;
    plot__key_init(&key, n_pick + 1 + any_gpu + any_lp);
    int ke = 0;
    for (int a = 0; a < n_pick; a++)
        plot__key_title(&key, ke++, labels[a]);
    plot__key_title(&key, ke++, "resident (RSS)");
    if (any_gpu)
        plot__key_title(&key, ke++, "GPU (NVML)");
    if (any_lp)
        plot__key_title(&key, ke++, "locked + pinned host");
    plot__key_init(&notes, n_marks ? n_marks + 1 : 0);
    plot__key_title(&notes, 0, "marks (dotted, numbered at the top):");
    for (int k = 0; k < n_marks; k++) {
        char t[96];
        snprintf(t, sizeof t, "%d: %s", k + 1, marks[k].text);
        plot__key_title(&notes, k + 1, t);
    }
    struct plot__grid g = {1, 1, 0, 0.5, 0.15, n_marks ? 0.2 : 0.08, 0.36, f->o->title && *f->o->title ? 0.25 : 0, 0};
    double notes_in = notes.n ? plot__key_strip(f, &notes) : 0;
    g.key_in = notes_in;   /* the panel sits above the marks' list */
    g.height_in = (f->o->width == PLOT_DOUBLE ? 2.6 : 2.2) + g.title_in + g.key_in;
    /* The key goes where no line lies (the mark lines included); when nowhere, the panel gets room
     * above the data (up to 1.6 times the largest value); then the key may cross mark lines; only
     * then a strip under the panel. */
    bool fits = false;
    for (int pass = 0; pass < 8 && !fits; pass++) {
        /* Passes 0-3 keep the key off the mark lines too; 4-7 let it cross them (they are references,
         * like grid lines; the key's white box hides them where it lies). */
        double room = 1.1 + (pass % 4) * 0.25 * 0.67;
        ytop = ceil(ymax * room / yt) * yt;
        struct plot__occ occ = {0};
        plot__occ_grid_panel(&occ, f, &g, 0, 0, 0, tmax * 1.01, 0, ytop, false, false);
        for (int k = 0; k < n_marks && pass < 4; k++)
            plot__occ_seg(&occ, marks[k].t_s, 0, marks[k].t_s, ytop, 0.01);
        for (int a = 0; a < n_pick; a++) {
            const struct plot__mon_sample *prev = NULL;
            for (int k = 0; k < m.n_samples; k++) {
                const struct plot__mon_sample *x = &m.samples[k];
                if (x->pid != m.procs[pick[a]].pid)
                    continue;
                const struct plot__mon_sample *p0 = prev ? prev : x;
                double t0 = (double)p0->t_ns * 1e-9, t1 = (double)x->t_ns * 1e-9;
                plot__occ_seg(&occ, t0, PLOT__GIB(p0->rss_bytes), t1, PLOT__GIB(x->rss_bytes), 0.015);
                if (p0->gpu_bytes >= 0 && x->gpu_bytes >= 0)
                    plot__occ_seg(&occ, t0, PLOT__GIB(p0->gpu_bytes), t1, PLOT__GIB(x->gpu_bytes), 0.015);
                if (m.procs[pick[a]].peak_locked_pinned_bytes > 0)
                    plot__occ_seg(&occ, t0, PLOT__GIB(p0->locked_pinned_bytes), t1, PLOT__GIB(x->locked_pinned_bytes), 0.015);
                prev = x;
            }
        }
        fits = plot__key_fit(f, &occ, &key);
        key.opaque = fits && pass >= 4;
        plot__occ_free(&occ);
    }
    if (!fits) {
        ytop = ceil(ymax * 1.1 / yt) * yt;
        double strip = plot__key_strip(f, &key);
        key.top_in += notes_in;   /* above the marks' list */
        g.key_in += strip;
        g.height_in += strip;
    }
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    plot__panel(f, &g, 0, 0);
    plot__ylabel(f, &g, 0, 0, "memory (GiB)");
    fprintf(gp, "set xlabel 'time (s)' offset 0,0.9\nset xrange [0:%g]\nset xtics %g format '%s'\n"
                "set yrange [0:%g]\nset ytics %g format '%s'\nunset key\n",
            tmax * 1.01, xt, plot__tick_format(xt), ytop, yt, plot__tick_format(yt));
    for (int k = 0; k < n_marks; k++) {
        fprintf(gp, "set arrow %d from %.4f, graph 0 to %.4f, graph 1 nohead lc rgb '#555555' dt 3 lw 0.8 back\n",
                k + 1, marks[k].t_s, marks[k].t_s);
        if (mark_group[k] != k)
            continue;
        int last = k;
        while (last + 1 < n_marks && mark_group[last + 1] == k)
            last++;
        char num[16];
        snprintf(num, sizeof num, last > k ? "%d-%d" : "%d", k + 1, last + 1);
        fprintf(gp, "set label %d '%s' at %.4f, graph 1 center offset 0,0.6 font ',%.3g'\n", k + 1, num, marks[k].t_s,
                plot__pt(f, 8));
    }
    fputs("plot ", gp);
    for (int a = 0; a < n_pick; a++) {
        fprintf(gp, "%sdatafile index %d using 1:2 with lines lt %d dt 1", a ? ", \\\n     " : "", a, a + 1);
        if (m.procs[pick[a]].peak_gpu_bytes >= 0)
            fprintf(gp, ", \\\n     datafile index %d using 1:3 with lines lt %d dt 2", a, a + 1);
        if (m.procs[pick[a]].peak_locked_pinned_bytes > 0)
            fprintf(gp, ", \\\n     datafile index %d using 1:4 with lines lt %d dt 3", a, a + 1);
    }
    fputc('\n', gp);
    plot__key_begin(f, &g, &key);
    ke = 0;
    for (int a = 0; a < n_pick; a++) {
        plot__key_entry(f, &g, &key, ke++);
        fprintf(gp, "NaN with lines lt %d dt 1 title ", a + 1);
        plot__gp_str(f, "process", labels[a]);
        fputc('\n', gp);
    }
    plot__key_entry(f, &g, &key, ke++);
    fputs("NaN with lines lc rgb '#000000' dt 1 title 'resident (RSS)'\n", gp);
    if (any_gpu) {
        plot__key_entry(f, &g, &key, ke++);
        fputs("NaN with lines lc rgb '#000000' dt 2 title 'GPU (NVML)'\n", gp);
    }
    if (any_lp) {
        plot__key_entry(f, &g, &key, ke++);
        fputs("NaN with lines lc rgb '#000000' dt 3 title 'locked + pinned host'\n", gp);
    }
    /* The marks' texts by number (text only: they are one kind of line, told apart by the numbers
     * at the top). */
    if (n_marks) {
        double w = plot__width_in(f);
        fprintf(gp, "# the marks' texts, numbered as at the top of the panel, in a strip under it; box (screen) %.4f %.4f "
                    "%.4f %.4f\nunset key\n", notes.x0_in / w, (notes.top_in - notes.h_in) / g.height_in,
                (notes.x0_in + notes.w_in) / w, notes.top_in / g.height_in);
        plot__key_label(f, &g, &notes, 0, "mark", "marks (dotted, numbered at the top):");
        for (int k = 0; k < n_marks; k++) {
            char t[96];
            snprintf(t, sizeof t, "%d: %s", k + 1, marks[k].text);
            plot__key_label(f, &g, &notes, k + 1, "mark", t);
        }
        fputs("plot NaN notitle\n", gp);
    }
    fputs("unset multiplot\n", gp);
    plot__monitor_free(&m);
    return 0;
}
