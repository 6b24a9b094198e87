/* plots/kind_monitor.c — `ratiolab plot monitor`: per-process memory over time from a monitor CSV,
 * with its marks.
 *
 * Three steps, as for every kind: gather (the CSV and the marks read, the processes picked, the
 * .dat written), place (the panel, the marks' list and the key through plot.c's placement) and
 * emit (the gnuplot script). */
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

/* The figure between its steps: what gather found, then what place decided. */
struct mon_fig {
    struct plot__monitor m;              /* the CSV */
    struct mon_mark marks[MON_MAX_MARKS];/* the marks drawn */
    int n_marks, dropped;                /* marks drawn; marks past MON_MAX_MARKS */
    int pick[MON_MAX_PROCS], n_pick;     /* the processes drawn (indices into m.procs) */
    char labels[MON_MAX_PROCS][96];      /* their names in the key */
    bool any_gpu, any_lp;                /* some process has GPU memory; locked + pinned memory */
    double tmax, ymax;                   /* the data's extent: s, GiB */
    int mark_group[MON_MAX_MARKS];       /* the first mark of each mark's number label */
    /* place */
    double yt, xt, ytop;                 /* tick steps, top of the y range */
    struct plot__grid g;                 /* the panel */
    struct plot__key key, notes;         /* the key; the marks' numbered list under the panel */
};

/* The processes drawn: the largest peaks (ties: first seen) down to 1 % of the largest, in order
 * of first appearance. */
static int gather_pick(struct mon_fig *c, struct rl_err *e)
{
    const struct plot__monitor *m = &c->m;
    int64_t top_peak = 0;
    for (int k = 0; k < m->n_procs; k++)
        if (m->procs[k].peak_rss_bytes > top_peak)
            top_peak = m->procs[k].peak_rss_bytes;
    bool *taken = m->n_procs > 0 ? calloc((size_t)(unsigned)m->n_procs, sizeof *taken) : NULL;
    if (!taken)
        return rl_errf(e, RL_ENOMEM, "plot monitor: out of memory");
    while (c->n_pick < MON_MAX_PROCS && c->n_pick < m->n_procs) {
        int best = -1;
        for (int k = 0; k < m->n_procs; k++)
            if (!taken[k] && (best < 0 || m->procs[k].peak_rss_bytes > m->procs[best].peak_rss_bytes))
                best = k;
        taken[best] = true;
        if (c->n_pick && m->procs[best].peak_rss_bytes < top_peak / 100)
            break;
        c->pick[c->n_pick++] = best;
    }
    for (int a = 0; a < c->n_pick; a++)   /* back to order of appearance */
        for (int b = a + 1; b < c->n_pick; b++)
            if (c->pick[b] < c->pick[a]) {
                int t = c->pick[a];
                c->pick[a] = c->pick[b];
                c->pick[b] = t;
            }
    free(taken);
    return 0;
}

/* Process a's data block: its samples. */
static void gather_proc(struct plot__fig *f, struct mon_fig *c, int a)
{
    const struct plot__mon_proc *p = &c->m.procs[c->pick[a]];
    if (p->rank >= 0)
        snprintf(c->labels[a], sizeof c->labels[a], "rank %d (%s %d)", p->rank, p->comm, p->pid);
    else
        snprintf(c->labels[a], sizeof c->labels[a], "%s %d", p->comm, p->pid);
    char what[160];
    snprintf(what, sizeof what, "%s: t_s, rss_gib, gpu_gib (? unavailable), locked_plus_pinned_gib", c->labels[a]);
    plot__block(f, what);
    c->any_gpu |= p->peak_gpu_bytes >= 0;
    c->any_lp |= p->peak_locked_pinned_bytes > 0;
    for (int k = 0; k < c->m.n_samples; k++) {
        const struct plot__mon_sample *x = &c->m.samples[k];
        if (x->pid != p->pid)
            continue;
        fprintf(f->dat, "%.4f\t%.4f\t", (double)x->t_ns * 1e-9, PLOT__GIB(x->rss_bytes));
        if (x->gpu_bytes < 0)
            fputs("?", f->dat);
        else
            fprintf(f->dat, "%.4f", PLOT__GIB(x->gpu_bytes));
        fprintf(f->dat, "\t%.4f\n", PLOT__GIB(x->locked_pinned_bytes));
        c->tmax = fmax(c->tmax, (double)x->t_ns * 1e-9);
        c->ymax = fmax(c->ymax, fmax(PLOT__GIB(x->rss_bytes), PLOT__GIB(x->gpu_bytes)));
    }
}

/* Gather: the CSV and the marks read, the processes picked, the .dat written. On error nothing is
 * held. */
static int gather(struct plot__fig *f, struct mon_fig *c, struct rl_err *e)
{
    if (f->o->n_in != 1)
        return rl_errf(e, RL_EINVAL, "in: %d files; plot monitor reads one `ratiolab monitor --csv` file",
                       f->o->n_in);
    int rc = plot__monitor_read(f->o->in[0], &c->m, e);
    if (rc)
        return rc;
    if ((f->o->marks && (rc = read_marks(f->o->marks, c->marks, &c->n_marks, &c->dropped, e))) ||
        (rc = gather_pick(c, e))) {
        plot__monitor_free(&c->m);
        return rc;
    }
    struct plot__meta meta = {NULL, NULL, NULL, NULL, NULL, NULL};
    plot__dat_header(f, &meta);
    if (c->m.n_procs > c->n_pick)
        fprintf(f->dat, "# %d of %d processes drawn (the largest resident peaks, at most %d, down to 1 %% of the "
                        "largest)\n", c->n_pick, c->m.n_procs, MON_MAX_PROCS);
    for (int a = 0; a < c->n_pick; a++)
        gather_proc(f, c, a);
    plot__block(f, "marks: t_s, number, line");
    for (int k = 0; k < c->n_marks; k++) {
        fprintf(f->dat, "%.4f\t%d\t%s\n", c->marks[k].t_s, k + 1, c->marks[k].text);
        c->tmax = fmax(c->tmax, c->marks[k].t_s);
    }
    if (c->dropped)
        fprintf(f->dat, "# %d later marks not drawn\n", c->dropped);
    fputs("?\t?\t?\n", f->dat);
    return 0;
}

/* Room above the data at pass p: 1.1 up to about 1.6 times the largest value. */
static double room_at(int pass)
{
    return 1.1 + (pass % 4) * 0.25 * 0.67;
}

/* The panel at one try of the layout: every line, and (passes 0-3) the mark lines too; passes 4-7
 * let the key cross the marks (they are references, like grid lines; the key's white box hides
 * them where it lies). */
static bool fill_panel(const struct plot__fig *f, void *ctx, int pass, struct plot__occ *occ)
{
    struct mon_fig *c = ctx;
    if (pass >= 8)
        return false;
    double ytop = ceil(c->ymax * room_at(pass) / c->yt) * c->yt;
    plot__occ_grid_panel(occ, f, &c->g, 0, 0, 0, c->tmax * 1.01, 0, ytop, false, false);
    for (int k = 0; k < c->n_marks && pass < 4; k++)
        plot__occ_seg(occ, c->marks[k].t_s, 0, c->marks[k].t_s, ytop, 0.01);
    for (int a = 0; a < c->n_pick; a++) {
        const struct plot__mon_proc *pr = &c->m.procs[c->pick[a]];
        const struct plot__mon_sample *prev = NULL;
        for (int k = 0; k < c->m.n_samples; k++) {
            const struct plot__mon_sample *x = &c->m.samples[k];
            if (x->pid != pr->pid)
                continue;
            const struct plot__mon_sample *p0 = prev ? prev : x;
            double t0 = (double)p0->t_ns * 1e-9, t1 = (double)x->t_ns * 1e-9;
            plot__occ_seg(occ, t0, PLOT__GIB(p0->rss_bytes), t1, PLOT__GIB(x->rss_bytes), 0.015);
            if (p0->gpu_bytes >= 0 && x->gpu_bytes >= 0)
                plot__occ_seg(occ, t0, PLOT__GIB(p0->gpu_bytes), t1, PLOT__GIB(x->gpu_bytes), 0.015);
            if (pr->peak_locked_pinned_bytes > 0)
                plot__occ_seg(occ, t0, PLOT__GIB(p0->locked_pinned_bytes), t1, PLOT__GIB(x->locked_pinned_bytes), 0.015);
            prev = x;
        }
    }
    return true;
}

/* Place: the marks' numbers and list, the panel above the list, the key. The key names the
 * processes and the line styles; the marks' texts (log lines, up to a page wide) are a numbered
 * list in a strip under the panel, as the numbers at the top refer to it. The key goes where no
 * line lies (the mark lines included); when nowhere, the panel gets room above the data (up to 1.6
 * times the largest value); then the key may cross mark lines; only then a strip under the panel. */
static void place(const struct plot__fig *f, struct mon_fig *c)
{
    /* Marks closer than 2 % of the time axis share one number label ("1-3"), so an executor that
     * prints its lines at exit does not overprint them. */
    for (int k = 0; k < c->n_marks; k++)
        c->mark_group[k] = k > 0 && c->marks[k].t_s - c->marks[c->mark_group[k - 1]].t_s < 0.02 * fmax(c->tmax, 1e-9)
                               ? c->mark_group[k - 1] : k;
    /* Key entries hold at most what fits across the page. */
    int fit = (int)((plot__width_in(f) - 0.65) / 0.055);
    for (int k = 0; k < c->n_marks; k++)
        if ((int)strlen(c->marks[k].text) + 4 > fit && fit > 8)
            memcpy(c->marks[k].text + fit - 8, "...", 4);
    if (c->ymax <= 0)
        c->ymax = 1;
    if (c->tmax <= 0)
        c->tmax = 1;
    c->yt = plot__tick(c->ymax, 5), c->xt = plot__tick(c->tmax, 6);
    plot__key_init(&c->key, c->n_pick + 1 + c->any_gpu + c->any_lp);
    int ke = 0;
    for (int a = 0; a < c->n_pick; a++)
        plot__key_title(&c->key, ke++, c->labels[a]);
    plot__key_title(&c->key, ke++, "resident (RSS)");
    if (c->any_gpu)
        plot__key_title(&c->key, ke++, "GPU (NVML)");
    if (c->any_lp)
        plot__key_title(&c->key, ke++, "locked + pinned host");
    plot__key_init(&c->notes, c->n_marks ? c->n_marks + 1 : 0);
    plot__key_title(&c->notes, 0, "marks (dotted, numbered at the top):");
    for (int k = 0; k < c->n_marks; k++) {
        char t[96];
        snprintf(t, sizeof t, "%d: %s", k + 1, c->marks[k].text);
        plot__key_title(&c->notes, k + 1, t);
    }
    c->g = (struct plot__grid){1, 1, 0, 0.5, 0.15, c->n_marks ? 0.2 : 0.08, 0.36,
                               f->o->title && *f->o->title ? 0.25 : 0, 0};
    double notes_in = c->notes.n ? plot__key_strip(f, &c->notes) : 0;
    c->g.key_in = notes_in;   /* the panel sits above the marks' list */
    c->g.height_in = (f->o->width == PLOT_DOUBLE ? 2.6 : 2.2) + c->g.title_in + c->g.key_in;
    int pass = plot__key_place(f, &c->g, &c->key, fill_panel, c);
    c->key.opaque = c->key.inside && pass >= 4;
    if (!c->key.inside)
        c->key.top_in += notes_in;   /* the strip lies above the marks' list */
    c->ytop = ceil(c->ymax * room_at(pass) / c->yt) * c->yt;
}

/* The mark lines and their numbers at the top of the panel. */
static void emit_marks(struct plot__fig *f, const struct mon_fig *c)
{
    FILE *gp = f->gp;
    for (int k = 0; k < c->n_marks; k++) {
        fprintf(gp, "set arrow %d from %.4f, graph 0 to %.4f, graph 1 nohead lc rgb '#555555' dt 3 lw 0.8 back\n",
                k + 1, c->marks[k].t_s, c->marks[k].t_s);
        if (c->mark_group[k] != k)
            continue;
        int last = k;
        while (last + 1 < c->n_marks && c->mark_group[last + 1] == k)
            last++;
        char num[16];
        snprintf(num, sizeof num, last > k ? "%d-%d" : "%d", k + 1, last + 1);
        fprintf(gp, "set label %d '%s' at %.4f, graph 1 center offset 0,0.6 font ',%.3g'\n", k + 1, num,
                c->marks[k].t_s, plot__pt(f, 8));
    }
}

/* The key's entries, then the marks' texts by number (text only: they are one kind of line, told
 * apart by the numbers at the top). */
static void emit_key(struct plot__fig *f, const struct mon_fig *c)
{
    FILE *gp = f->gp;
    plot__key_begin(f, &c->g, &c->key);
    int ke = 0;
    for (int a = 0; a < c->n_pick; a++) {
        plot__key_entry(f, &c->g, &c->key, ke++);
        fprintf(gp, "NaN with lines lt %d dt 1 title ", a + 1);
        plot__gp_str(f, "process", c->labels[a]);
        fputc('\n', gp);
    }
    plot__key_entry(f, &c->g, &c->key, ke++);
    fputs("NaN with lines lc rgb '#000000' dt 1 title 'resident (RSS)'\n", gp);
    if (c->any_gpu) {
        plot__key_entry(f, &c->g, &c->key, ke++);
        fputs("NaN with lines lc rgb '#000000' dt 2 title 'GPU (NVML)'\n", gp);
    }
    if (c->any_lp) {
        plot__key_entry(f, &c->g, &c->key, ke++);
        fputs("NaN with lines lc rgb '#000000' dt 3 title 'locked + pinned host'\n", gp);
    }
    if (!c->n_marks)
        return;
    const struct plot__key *notes = &c->notes;
    double w = plot__width_in(f);
    fprintf(gp, "# the marks' texts, numbered as at the top of the panel, in a strip under it; box (screen) %.4f %.4f "
                "%.4f %.4f\nunset key\n", notes->x0_in / w, (notes->top_in - notes->h_in) / c->g.height_in,
            (notes->x0_in + notes->w_in) / w, notes->top_in / c->g.height_in);
    plot__key_label(f, &c->g, notes, 0, "mark", "marks (dotted, numbered at the top):");
    for (int k = 0; k < c->n_marks; k++) {
        char t[96];
        snprintf(t, sizeof t, "%d: %s", k + 1, c->marks[k].text);
        plot__key_label(f, &c->g, notes, k + 1, "mark", t);
    }
    fputs("plot NaN notitle\n", gp);
}

/* Emit: the script, from what place decided. */
static void emit(struct plot__fig *f, const struct mon_fig *c)
{
    plot__gp_preamble(f, c->g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    plot__panel(f, &c->g, 0, 0);
    plot__ylabel(f, &c->g, 0, 0, "memory (GiB)");
    fprintf(gp, "set xlabel 'time (s)' offset 0,0.9\nset xrange [0:%g]\nset xtics %g format '%s'\n"
                "set yrange [0:%g]\nset ytics %g format '%s'\nunset key\n",
            c->tmax * 1.01, c->xt, plot__tick_format(c->xt), c->ytop, c->yt, plot__tick_format(c->yt));
    emit_marks(f, c);
    fputs("plot ", gp);
    for (int a = 0; a < c->n_pick; a++) {
        const struct plot__mon_proc *p = &c->m.procs[c->pick[a]];
        fprintf(gp, "%sdatafile index %d using 1:2 with lines lt %d dt 1", a ? ", \\\n     " : "", a, a + 1);
        if (p->peak_gpu_bytes >= 0)
            fprintf(gp, ", \\\n     datafile index %d using 1:3 with lines lt %d dt 2", a, a + 1);
        if (p->peak_locked_pinned_bytes > 0)
            fprintf(gp, ", \\\n     datafile index %d using 1:4 with lines lt %d dt 3", a, a + 1);
    }
    fputc('\n', gp);
    emit_key(f, c);
    fputs("unset multiplot\n", gp);
}

int plot__monitor(struct plot__fig *f, struct rl_err *e)
{
    struct mon_fig *c = calloc(1, sizeof *c);
    if (!c)
        return rl_errf(e, RL_ENOMEM, "plot monitor: out of memory");
    int rc = gather(f, c, e);
    if (!rc) {
        place(f, c);
        emit(f, c);
        plot__monitor_free(&c->m);
    }
    free(c);
    return rc;
}
