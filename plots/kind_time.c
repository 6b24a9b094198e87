/* plots/kind_time.c — `ratiolab plot time`: step time against the requested ratio, stacked by
 * phase group (exposed time).
 *
 * Three steps, as for every kind: gather (the sweeps read, the bands found, the .dat written),
 * place (panels, titles, the key through plot.c's placement) and emit (the gnuplot script). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>   /* qsort */
#include <string.h>

#include "plots/plot_impl.h"
#include "traces/layout.h"   /* phase groups and their colours */

/* ---- 2. time -----------------------------------------------------------------------------------------
 * One panel per sweep (policy and schedule): bars of exposed time per phase group (or phase)
 * stacked to the step time, the ratios that do not fit shaded, the fastest that fits marked, the
 * no-offload step (ratio 0) as a dashed reference and, with --speedup, a speedup axis. */

/* The band a phase is drawn in: its group's label, or the phase itself with --phases all (and for
 * a name the table does not know). */
static const char *band_of(const struct plot__fig *f, const char *phase)
{
    const struct trace_phase *ph = trace_phase_find(phase);
    return ph && !f->o->all_phases ? trace_group_name(ph->group) : phase;
}

static int group_rank(const char *band)
{
    for (int g = 0; g < TRACE_GROUP_COUNT; g++)
        if (strcmp(band, trace_group_name((enum trace_group)g)) == 0)
            return g;
    return TRACE_GROUP_COUNT;
}

static int cmp_band(const void *x, const void *y)
{
    return group_rank(x) - group_rank(y);
}

/* A panel's title: what tells its sweep apart from the other panels' (plot__sweep_parts: hardware,
 * model, policy, DeepSpeed version, schedule, only those that differ between the inputs); a
 * single sweep's names its policy, DeepSpeed version and schedule ("policy exact",
 * "DeepSpeed 0.12.4", "overlapped step (ratiolab)"). */
struct panel_title {
    char part[PLOT__ATTR_COUNT][PLOT__PART_MAX];   /* the parts, in plot__attr order */
    const char *field[PLOT__ATTR_COUNT];           /* where each came from, for plot__gp_str */
    int n;                                         /* entries in part (1 to PLOT__ATTR_COUNT) */
};

static void panel_title(const struct plot__sweep *s, unsigned mask, struct panel_title *t)
{
    t->n = plot__sweep_parts(s, mask, t->part, t->field);
}

/* The attributes the panels' titles name: those that differ between the sweeps, or for a single
 * sweep its policy, DeepSpeed version and schedule. */
static unsigned title_mask(const struct plot__sweep *s, int ns)
{
    if (ns == 1)
        return PLOT__ATTR_BIT(PLOT__ATTR_POLICY) | PLOT__ATTR_BIT(PLOT__ATTR_VERSION) |
               PLOT__ATTR_BIT(PLOT__ATTR_SCHEDULE);
    return plot__sweep_differ(s, ns);
}

/* Whether part k of a title of n parts laid on lines lines ends its line: the first line holds
 * parts 0 to n - lines (joined by ", "), every later line one part. */
static bool title_breaks_after(int k, int n, int lines)
{
    return k >= n - lines;
}

/* Lines the titles need so that each line fits in w inches: the fewest from 1 (every part on one
 * line) to n (one part a line) where every panel's lines fit; n when none does. For three parts:
 * 1, 2 (the first two, then the third) or 3. */
static int title_lines(const struct plot__sweep *s, int ns, unsigned mask, double w)
{
    struct panel_title t;
    panel_title(&s[0], mask, &t);
    int n = t.n;
    for (int lines = 1; lines < n; lines++) {
        bool fits = true;
        for (int i = 0; i < ns && fits; i++) {
            panel_title(&s[i], mask, &t);
            size_t len = 0;
            for (int k = 0; k < n && fits; k++) {
                len += strlen(t.part[k]);
                if (title_breaks_after(k, n, lines) || k == n - 1) {
                    fits = plot__text_w((int)len, 9) <= w;
                    len = 0;
                } else {
                    len += 2;   /* ", " */
                }
            }
        }
        if (fits)
            return lines;
    }
    return n;
}

/* Where the "fastest that fits" label goes: just above the bars it spans (so the top of the panel
 * stays free for the key), its text left-, centre- or right-aligned so it stays inside the panel;
 * an arrow from under it down to the bar. */
struct best_label {
    double gx;     /* x anchor, graph fraction */
    int just;      /* < 0 left, 0 centre, > 0 right */
    double y;      /* the text's centre, first axis */
    double below;  /* from y down to the text's bottom, first axis (where the arrow starts) */
    int chars;     /* its widest line */
    bool two;      /* "fastest fit:" over the numbers, in a panel too narrow for one line */
};

static void best_label(const struct plot__sweep *sw, int best, double top, double half, double panel_w_in,
                       struct best_label *l)
{
    const struct plot__sweep_row *w = &sw->rows[best];
    l->two = plot__text_w(34, 9) > panel_w_in - 0.08;
    l->chars = l->two ? 14 : 34;   /* "fastest that fits: 0.50 (1.52 s)" and a little; "0.50 (1.52 s)" */
    l->below = top * (l->two ? 0.08 : 0.04);
    double gx = (w->requested + 0.04) / 1.08;
    l->just = gx > 0.7 ? 1 : gx < 0.3 ? -1 : 0;
    l->gx = l->just > 0 ? 0.98 : l->just < 0 ? 0.02 : gx;
    double wg = plot__text_w(l->chars, 9) / panel_w_in;   /* the text's width, graph fraction */
    double g0 = l->just < 0 ? l->gx : l->just == 0 ? l->gx - wg / 2 : l->gx - wg;
    double x0 = -0.04 + g0 * 1.08 - half, x1 = -0.04 + (g0 + wg) * 1.08 + half;
    double under = (double)w->step_ns * 1e-9;
    for (int k = 0; k < sw->n_rows; k++)
        if (sw->rows[k].requested >= x0 && sw->rows[k].requested <= x1)
            under = fmax(under, (double)sw->rows[k].step_ns * 1e-9);
    l->y = fmin(fmax(under + top * 0.04 + l->below, (double)w->step_ns * 1e-9 + top * 0.12 + l->below), top * 0.93);
}

/* The row of the reference a speedup is measured against: ratio 0 (no offload) or ratio 1 (full
 * offload); -1 when the sweep has no such row. */
static int ref_row(const struct plot__sweep *s, double ratio)
{
    for (int k = 0; k < s->n_rows; k++)
        if (fabs(s->rows[k].requested - ratio) < 1e-9)
            return k;
    return -1;
}

/* The figure between its steps: what gather found, then what place decided. */
struct tm_fig {
    struct plot__sweep s[PLOT_MAX_IN];   /* the inputs, one panel each */
    int ns;                              /* entries in s */
    char names[PLOT__PH_MAX + 1][32];    /* the bands drawn, bottom to top; the last is idle */
    int n_names;                         /* entries in names */
    double ymax;                         /* the tallest bar, s */
    int best[PLOT_MAX_IN];               /* per sweep the fastest row that fits, -1 none */
    /* place */
    bool dbl;                            /* a double column: panels side by side */
    double panel_w;                      /* a panel's plot area, inches wide */
    unsigned t_mask;                     /* what the panels' titles name (plot__attr bits) */
    int t_lines;                         /* lines of each panel's title (1 to PLOT__ATTR_COUNT) */
    double tick, top;                    /* y tick step and top of the y range */
    double half;                         /* half a bar's width, ratio units */
    char shade_title[96];                /* the key's entry for the shading */
    struct plot__grid g;                 /* the panels */
    struct plot__key key;                /* the key */
};

/* The bands drawn: phase groups (traces/layout.h) by default, every phase with --phases all;
 * those with exposed time somewhere, in the table's order, then idle on top. */
static void gather_bands(const struct plot__fig *f, struct tm_fig *c)
{
    const struct plot__sweep *s = c->s;
    for (int q = -1; q < TRACE_N_PHASES - 1; q++) {   /* -1: names that are no phase, in input order */
        for (int i = 0; i < c->ns; i++)
            for (int p = 0; p < s[i].n_phases; p++) {
                const struct trace_phase *ph = trace_phase_find(s[i].phase[p]);
                if ((q < 0) != (ph == NULL) || (ph && ph != &trace_phases[q]))
                    continue;
                bool used = false, have = false;
                for (int k = 0; k < s[i].n_rows; k++)
                    used |= s[i].rows[k].exposed_ns[p] > 0;
                const char *band = band_of(f, s[i].phase[p]);
                for (int b = 0; b < c->n_names; b++)
                    have |= strcmp(c->names[b], band) == 0;
                if (used && !have && c->n_names < PLOT__PH_MAX)
                    snprintf(c->names[c->n_names++], sizeof c->names[0], "%s", band);
            }
    }
    if (!f->o->all_phases)   /* groups in the table's group order */
        qsort(c->names, (size_t)c->n_names, sizeof c->names[0], cmp_band);
    snprintf(c->names[c->n_names++], sizeof c->names[0], "idle");
}

/* Sweep i's data block: per ratio the top of each band (cumulative), the step and whether it fits. */
static void gather_sweep(struct plot__fig *f, struct tm_fig *c, int i)
{
    const struct plot__sweep *s = &c->s[i];
    char what[512];
    snprintf(what, sizeof what, "%s: schedule %s, policy %s; phase columns are cumulative (each the top of "
             "its band), the last equals the step time", s->name, s->schedule, s->policy);
    plot__block(f, what);
    fputs("# " RL_KEY_REQUESTED_RATIO "\t" RL_KEY_HONORED_RATIO "\tstep_s\tfits", f->dat);
    for (int q = 0; q < c->n_names; q++)
        fprintf(f->dat, "\ttop_%s_s", c->names[q]);
    fputc('\n', f->dat);
    for (int k = 0; k < s->n_rows; k++) {
        const struct plot__sweep_row *w = &s->rows[k];
        fprintf(f->dat, "%.4f\t%.6f\t%.6f\t%d", w->requested, w->honored, (double)w->step_ns * 1e-9,
                plot__row_fits(f, w));
        int64_t cum = 0;
        for (int q = 0; q < c->n_names; q++) {
            if (q == c->n_names - 1) {
                cum += w->idle_ns;
            } else {
                for (int p = 0; p < s->n_phases; p++)
                    if (strcmp(band_of(f, s->phase[p]), c->names[q]) == 0)
                        cum += w->exposed_ns[p];
            }
            fprintf(f->dat, "\t%.6f", (double)cum * 1e-9);
        }
        fputc('\n', f->dat);
        c->ymax = fmax(c->ymax, (double)fmax((double)cum, (double)w->step_ns) * 1e-9);
    }
    c->best[i] = plot__best_fit(f, s);
}

/* Gather: the sweeps read, the bands found, the .dat written. On error nothing is held. */
static int gather(struct plot__fig *f, struct tm_fig *c, struct rl_err *e)
{
    c->ns = f->o->n_in;
    if (c->ns > 4)
        return rl_errf(e, RL_EINVAL, "in: %d sweeps; plot time draws 1 to 4 (one panel each)", c->ns);
    int rc = plot__read_sweeps(f, c->s, e);
    if (rc)
        return rc;
    for (int i = 0; i < c->ns; i++)
        if (!c->s[i].has_phases) {
            rc = rl_errf(e, RL_EINVAL, "%s: a sweep CSV has no per-phase times; plot time needs `ratiolab sweep "
                         "--json`", f->o->in[i]);
            plot__free_sweeps(c->s, c->ns);
            return rc;
        }
    gather_bands(f, c);
    plot__sweep_meta(f, c->s, c->ns);
    for (int i = 0; i < c->ns; i++)
        gather_sweep(f, c, i);
    fprintf(f->dat, "\n\n# [summary] fastest ratio that fits%s\n", f->o->gpu_mem_bytes > 0 ? " --gpu-mem" : "");
    for (int i = 0; i < c->ns; i++) {
        if (c->best[i] < 0)
            fprintf(f->dat, "# %s: none fits\n", c->s[i].name);
        else
            fprintf(f->dat, "# %s: requested %.4f, step %.6f s\n", c->s[i].name, c->s[i].rows[c->best[i]].requested,
                    (double)c->s[i].rows[c->best[i]].step_ns * 1e-9);
    }
    return 0;
}

/* The panels at one try of the layout: bars, the no-offload line, the "fastest that fits" label and
 * its arrow. Try a gives room above the bars of 1.25 + a x 0.25 times the tallest, up to twice. */
static bool fill_panels(const struct plot__fig *f, void *ctx, int attempt, struct plot__occ *occ)
{
    struct tm_fig *c = ctx;
    double top;
    if (!plot__room_top(c->ymax, c->tick, 1.25, 2.01, attempt, &top))
        return false;
    for (int i = c->ns - 1; i >= 0; i--) {
        const struct plot__sweep *s = &c->s[i];
        plot__occ_grid_panel(occ, f, &c->g, c->dbl ? 0 : i, c->dbl ? i : 0, -0.04, 1.04, 0, top, false, false);
        for (int k = 0; k < s->n_rows; k++) {
            const struct plot__sweep_row *w = &s->rows[k];
            int64_t cum = w->idle_ns;
            for (int p = 0; p < s->n_phases; p++)
                cum += w->exposed_ns[p];
            plot__occ_box(occ, w->requested - c->half, 0, w->requested + c->half,
                          fmax((double)cum, (double)w->step_ns) * 1e-9);
        }
        int r0 = ref_row(s, 0);
        if (r0 >= 0)
            plot__occ_seg(occ, -0.04, (double)s->rows[r0].step_ns * 1e-9, 1.04, (double)s->rows[r0].step_ns * 1e-9,
                          0.01);
        if (c->best[i] >= 0) {   /* the "fastest that fits" label and its arrow, as emitted */
            struct best_label bl;
            best_label(s, c->best[i], top, c->half, c->panel_w, &bl);
            double x = s->rows[c->best[i]].requested;
            double ly = plot__occ_y(occ, bl.y);
            for (int ln = 0; ln < (bl.two ? 2 : 1); ln++)
                plot__occ_text(occ, plot__occ_gx(occ, bl.gx), bl.two ? ly + (ln ? -0.06 : 0.06) : ly, bl.chars, 9,
                               bl.just);
            plot__occ_seg(occ, x, bl.y - bl.below, x, (double)s->rows[c->best[i]].step_ns * 1e-9, 0.03);
        } else {
            plot__occ_text(occ, plot__occ_gx(occ, 0.5), plot__occ_gy(occ, 0.93), 13, 9, 0);
        }
    }
    return true;
}

/* Whether every sweep's profile has the same GPU memory (one "over N GiB" names every panel's
 * shading). */
static bool same_capacity(const struct plot__sweep *s, int ns)
{
    for (int i = 1; i < ns; i++)
        if (s[i].gpu_capacity_bytes != s[0].gpu_capacity_bytes)
            return false;
    return true;
}

/* Place: the panels (one per sweep, side by side in a double column), their titles, bar widths,
 * the key. The key has one entry per band, one for the shading, one for the no-offload line; it
 * goes where no bar, line or label lies in a panel; when no panel has such a spot, the panels get
 * more room above the bars (up to twice the tallest), and only then a strip under them. */
static void place(const struct plot__fig *f, struct tm_fig *c)
{
    const struct plot__sweep *s = c->s;
    int ns = c->ns;
    c->dbl = f->o->width == PLOT_DOUBLE;
    int cols = c->dbl ? ns : 1, rows = c->dbl ? 1 : ns;
    double panel_h = c->dbl ? 2.2 : 1.9;
    /* Panel titles (what differs between the sweeps) on one line where every one fits across its
     * panel, else on more. */
    double right_in = f->o->speedup ? 0.62 : 0.15;
    c->panel_w = plot__width_in(f) / cols - 0.5 - right_in;
    c->t_mask = title_mask(s, ns);
    c->t_lines = title_lines(s, ns, c->t_mask, c->panel_w + right_in);
    c->g = (struct plot__grid){rows, cols, 0, 0.5, right_in, 0.08 + 0.14 * c->t_lines, 0.36,
                               f->o->title && *f->o->title ? 0.25 : 0, 0};
    c->g.height_in = rows * (panel_h + c->g.top_in - 0.22) + c->g.title_in;
    c->tick = plot__tick(c->ymax, 5);
    char gpu_mem[40] = "";
    if (f->o->gpu_mem_bytes > 0)
        plot__gib_label(gpu_mem, sizeof gpu_mem, f->o->gpu_mem_bytes);
    else if (s[0].gpu_capacity_bytes > 0 && same_capacity(s, ns))   /* else each panel has its own */
        plot__gib_label(gpu_mem, sizeof gpu_mem, s[0].gpu_capacity_bytes);
    snprintf(c->shade_title, sizeof c->shade_title, "%s%s", gpu_mem[0] ? "over " : "does not fit", gpu_mem);
    /* Bars are 80 % of the closest spacing of ratios. */
    double min_step = 1;
    for (int i = 0; i < ns; i++)
        for (int k = 1; k < s[i].n_rows; k++) {
            double d = fabs(s[i].rows[k].requested - s[i].rows[k - 1].requested);
            if (d > 1e-9 && d < min_step)
                min_step = d;
        }
    c->half = 0.4 * min_step;
    plot__key_init(&c->key, c->n_names + 2);
    for (int q = 0; q < c->n_names; q++)
        plot__key_title(&c->key, q, c->names[q]);
    plot__key_title(&c->key, c->n_names, c->shade_title);
    plot__key_title(&c->key, c->n_names + 1, "ratio 0 (no offload)");
    int at = plot__key_place(f, &c->g, &c->key, fill_panels, c);
    plot__room_top(c->ymax, c->tick, 1.25, INFINITY, at, &c->top);
}

/* Panel i's title, no-offload line and --speedup axis (a right axis of the reference's step time
 * over each step time). */
static void emit_panel_axes(struct plot__fig *f, const struct tm_fig *c, int i)
{
    FILE *gp = f->gp;
    const struct plot__sweep *s = &c->s[i];
    struct panel_title pt;
    panel_title(s, c->t_mask, &pt);
    fputs("set title ", gp);
    for (int k = 0; k < pt.n; k++) {   /* the parts as gnuplot strings, joined in gnuplot */
        if (k)
            fputs(title_breaks_after(k - 1, pt.n, c->t_lines) ? " . \"\\n\" . " : " . \", \" . ", gp);
        plot__gp_str(f, pt.field[k], pt.part[k]);
    }
    fputs("\n", gp);
    /* The no-offload step (ratio 0) as a dashed line across the panel, named inside it. */
    int r0 = ref_row(s, 0);
    if (r0 >= 0) {
        double t0 = (double)s->rows[r0].step_ns * 1e-9;
        fprintf(gp, "set arrow 3 from graph 0, first %.6f to graph 1, first %.6f nohead lc rgb '#000000' dt 2 "
                    "lw 1 front\n", t0, t0);
    }
    int rs = f->o->speedup ? ref_row(s, f->o->speedup == PLOT_SPEEDUP_NO_OFFLOAD ? 0 : 1) : -1;
    if (rs < 0) {
        fputs("unset y2tics\nunset y2label\n", gp);
        return;
    }
    double tr = (double)s->rows[rs].step_ns * 1e-9, top = c->top;
    static const double sp[] = {0.1, 0.2, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 4, 5, 10};
    fprintf(gp, "set y2range [0:%g]\nset y2tics out nomirror (", top);
    bool first = true;
    double last_at = INFINITY;
    for (size_t k = 0; k < sizeof sp / sizeof sp[0]; k++) {
        double at = tr / sp[k];   /* falls as the speedup grows; ticks keep 7 % of the axis apart */
        if (at > top || at < top * 0.04 || last_at - at < top * 0.07)
            continue;
        last_at = at;
        fprintf(gp, "%s\"%g\" %.6f", first ? "" : ", ", sp[k], at);
        first = false;
    }
    fputs(")\n", gp);
    fprintf(gp, "set y2label \"speedup over %s\" offset -1,0\n",
            f->o->speedup == PLOT_SPEEDUP_NO_OFFLOAD ? "ratio 0 (no offload)" : "ratio 1 (full offload)");
}

/* Panel i's shading of ratios that do not fit, its "fastest that fits" mark, and its bars. */
static void emit_panel_data(struct plot__fig *f, const struct tm_fig *c, int i)
{
    FILE *gp = f->gp;
    const struct plot__sweep *sw = &c->s[i];
    /* Shade runs of ratios that do not fit, half a sample beyond each end. */
    int obj = 1;
    for (int k = 0; k < sw->n_rows;) {
        if (plot__row_fits(f, &sw->rows[k])) {
            k++;
            continue;
        }
        int j = k;
        while (j + 1 < sw->n_rows && !plot__row_fits(f, &sw->rows[j + 1]))
            j++;
        double lo = sw->rows[k].requested - (k > 0 ? (sw->rows[k].requested - sw->rows[k - 1].requested) / 2 : 0.04);
        double hi = sw->rows[j].requested +
                    (j + 1 < sw->n_rows ? (sw->rows[j + 1].requested - sw->rows[j].requested) / 2 : 0.04);
        fprintf(gp, "set object %d rect from %.4f, graph 0 to %.4f, graph 1 fc rgb '#ececec' fs solid 1.0 "
                    "noborder behind\n", obj++, lo, hi);
        k = j + 1;
    }
    if (c->best[i] >= 0) {
        const struct plot__sweep_row *w = &sw->rows[c->best[i]];
        double x = w->requested, y = (double)w->step_ns * 1e-9;
        struct best_label bl;
        best_label(sw, c->best[i], c->top, c->half, c->panel_w, &bl);
        fprintf(gp, "set arrow 1 from %.4f, first %.6f to %.4f, first %.6f head size screen 0.012,25 filled "
                    "lw 1.2 lc rgb '#000000' front\n", x, bl.y - bl.below, x, y + c->top * 0.015);
        fprintf(gp, "set label 2 \"%s%.2f (%.2f s)\" at graph %.4f, first %.6f %s front\n",
                bl.two ? "fastest fit:\\n" : "fastest that fits: ", w->requested, y, bl.gx, bl.y,
                bl.just > 0 ? "right" : bl.just < 0 ? "left" : "center");
    } else {
        fputs("set label 2 'no ratio fits' at graph 0.5, graph 0.93 center front\n", gp);
    }
    /* Each band is its own box from the top of the band below to its own top, so no band is drawn
     * over another (overdrawn edges show through anti-aliasing). */
    fputs("plot ", gp);
    for (int q = 0; q < c->n_names; q++) {
        int pat;
        const char *col = plot__phase_color(c->names[q], q, &pat);
        char lo[16];
        if (q)
            snprintf(lo, sizeof lo, "$%d", 4 + q);
        else
            snprintf(lo, sizeof lo, "0");
        fprintf(gp, "%sdatafile index %d using 1:((%s+$%d)/2):($1-%.4f):($1+%.4f):(%s):%d with boxxyerror fc rgb '%s' ",
                q ? ", \\\n     " : "", i, lo, 5 + q, c->half, c->half, lo, 5 + q, col);
        if (pat)
            fprintf(gp, "fs pattern %d noborder", pat);
        else
            fputs("fs solid 1.0 noborder", gp);
    }
    fputc('\n', gp);
}

/* Emit: the script, from what place decided. */
static void emit(struct plot__fig *f, const struct tm_fig *c)
{
    plot__gp_preamble(f, c->g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    fprintf(gp, "set style fill solid 1.0 noborder\n"
                "set xlabel 'requested ratio' offset 0,0.9\nset xrange [-0.04:1.04]\nset xtics 0.2 format '%%.1f'\n"
                "set yrange [0:%g]\nset ytics 0, %g, %g format '%s'\nunset key\n",
            c->top, c->tick, ceil(c->ymax / c->tick) * c->tick, plot__tick_format(c->tick));
    for (int i = 0; i < c->ns; i++) {
        plot__panel(f, &c->g, c->dbl ? 0 : i, c->dbl ? i : 0);
        fputs("unset object\nunset arrow\nunset label\n", gp);
        plot__ylabel(f, &c->g, c->dbl ? 0 : i, c->dbl ? i : 0, "step time (s)");
        emit_panel_axes(f, c, i);
        emit_panel_data(f, c, i);
    }
    /* The key: one entry per band, the shading, the no-offload line. */
    plot__key_begin(f, &c->g, &c->key);
    for (int q = 0; q < c->n_names; q++) {
        int pat;
        const char *col = plot__phase_color(c->names[q], q, &pat);
        plot__key_entry(f, &c->g, &c->key, q);
        fprintf(gp, "NaN with boxes fc rgb '%s' ", col);
        if (pat)
            fprintf(gp, "fs pattern %d border lc rgb '%s'", pat, col);
        else
            fputs("fs solid 1.0", gp);
        fputs(" title ", gp);
        plot__gp_str(f, "phase", c->names[q]);
        fputc('\n', gp);
    }
    plot__key_entry(f, &c->g, &c->key, c->n_names + 1);
    fputs("NaN with lines lc rgb '#000000' dt 2 lw 1 title 'ratio 0 (no offload)'\n", gp);
    plot__key_entry(f, &c->g, &c->key, c->n_names);
    fputs("NaN with boxes fc rgb '#ececec' fs solid 1.0 border lc rgb '#aaaaaa' title ", gp);
    plot__gp_str(f, "label", c->shade_title);
    fputs("\nunset multiplot\n", gp);
}

int plot__time(struct plot__fig *f, struct rl_err *e)
{
    struct tm_fig *c = calloc(1, sizeof *c);
    if (!c)
        return rl_errf(e, RL_ENOMEM, "plot time: out of memory");
    int rc = gather(f, c, e);
    if (!rc) {
        place(f, c);
        emit(f, c);
        plot__free_sweeps(c->s, c->ns);
    }
    free(c);
    return rc;
}
