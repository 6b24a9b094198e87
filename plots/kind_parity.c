/* plots/kind_parity.c — `ratiolab plot parity`: predicted against measured step and phase times
 * from a validate report.
 *
 * Three steps, as for every kind: gather (the report read, the .dat written), place (the square
 * panel, its axes and the key through plot.c's placement) and emit (the gnuplot script). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_impl.h"

/* Point types of the phases: none is the step's filled circle (7), so no phase shares the step's
 * marker even where it shares a colour. */
static const int phase_points[] = {5, 9, 11, 13, 4, 6, 8, 10, 12, 14, 1, 2, 3, 15, 16, 17, 18};
#define N_PHASE_POINTS ((int)(sizeof phase_points / sizeof phase_points[0]))

/* Above this share of the cores used by other processes while measuring, the figure says so. */
#define PARITY_OTHERS_WARN_PCT 25.0

/* ---- 4. parity ---------------------------------------------------------------------------------------
 * Predicted (x) against measured (y) on log axes in ms: the step of every report row and each
 * phase, the identity and a band of +-band_pct around it. */

/* The figure between its steps: what gather found, then what place decided. */
struct par_fig {
    struct plot__report r;         /* the report */
    int drawn[PLOT__PH_MAX];       /* the phases drawn (positive on both sides in some row) */
    int n_drawn;                   /* entries in drawn */
    double lo, hi;                 /* the smallest and largest time drawn, ms */
    double others;                 /* the largest share of the cores others used, percent (< 0 unknown) */
    /* place */
    double ax[2][2];               /* x and y axis: low, high (ms) */
    double side, top, title_in;    /* the square's side, the room above it, the title's, inches */
    struct plot__grid g;           /* the panel */
    struct plot__key key;          /* the key */
};

/* Phase k's time on one side, busy or exposed as asked. */
static int64_t side_ns(const struct plot__fig *f, const struct plot__side *sd, int k)
{
    return f->o->phase_exposed ? sd->exposed_ns[k] : sd->busy_ns[k];
}

/* Phase k's data block, when some row has a positive time for it on both sides. */
static void gather_phase(struct plot__fig *f, struct par_fig *c, int k)
{
    const struct plot__report *r = &c->r;
    bool any = false;
    for (int i = 0; i < r->n_rows && !any; i++)
        any = side_ns(f, &r->rows[i].pred, k) > 0 && side_ns(f, &r->rows[i].meas, k) > 0;
    if (!any)
        return;
    char what[160];
    snprintf(what, sizeof what, "phase %s, %s time: ratio, predicted_ms, measured_ms", r->phase[k],
             f->o->phase_exposed ? "exposed" : "busy");
    plot__block(f, what);
    c->drawn[c->n_drawn++] = k;
    for (int i = 0; i < r->n_rows; i++) {
        int64_t a = side_ns(f, &r->rows[i].pred, k), b = side_ns(f, &r->rows[i].meas, k);
        if (a <= 0 || b <= 0)
            continue;   /* log axes: a zero has no place */
        fprintf(f->dat, "%.4f\t%.6f\t%.6f\n", r->rows[i].ratio, (double)a * 1e-6, (double)b * 1e-6);
        c->lo = fmin(c->lo, fmin((double)a, (double)b) * 1e-6);
        c->hi = fmax(c->hi, fmax((double)a, (double)b) * 1e-6);
    }
}

/* Gather: the report read, the .dat written (the steps, then each phase drawn). */
static int gather(struct plot__fig *f, struct par_fig *c, struct rl_err *e)
{
    if (f->o->n_in != 1)
        return rl_errf(e, RL_EINVAL, "in: %d files; plot parity reads one validate report.json", f->o->n_in);
    struct plot__report *r = &c->r;
    int rc = plot__report_read(f->o->in[0], r, e);
    if (rc)
        return rc;
    char ranks[48], sched[256] = "";
    snprintf(ranks, sizeof ranks, "%d ranks, backend %s", r->ranks, r->backend);
    for (int i = 0; i < r->n_rows; i++)
        if (!strstr(sched, r->rows[i].schedule))
            snprintf(sched + strlen(sched), sizeof sched - strlen(sched), "%s%s", sched[0] ? ", " : "",
                     r->rows[i].schedule);
    char hw[200];
    snprintf(hw, sizeof hw, "%s (%s)", r->hardware, ranks);
    struct plot__meta m = {r->model, hw, r->policy, sched, NULL, NULL};
    plot__dat_header(f, &m);
    c->lo = INFINITY;
    plot__block(f, "step: ratio, predicted_ms, measured_ms, step_error_pct (as the report states it)");
    for (int i = 0; i < r->n_rows; i++) {
        const struct plot__report_row *w = &r->rows[i];
        double p = (double)w->pred.step_ns * 1e-6, q = (double)w->meas.step_ns * 1e-6;
        fprintf(f->dat, "%.4f\t%.6f\t%.6f\t", w->ratio, p, q);
        if (isnan(w->step_error_pct))
            fputs("?\n", f->dat);
        else
            fprintf(f->dat, "%.3f\n", w->step_error_pct);
        c->lo = fmin(c->lo, fmin(p, q));
        c->hi = fmax(c->hi, fmax(p, q));
    }
    for (int k = 0; k < r->n_phases; k++)
        gather_phase(f, c, k);
    c->others = -1;
    for (int i = 0; i < r->n_rows; i++)
        c->others = fmax(c->others, r->rows[i].others_cpu_pct);
    return 0;
}

/* The axes at try a: the x axis reaches 3.17^a times further right and the y axis as far further
 * down (up to three decades; both keep one span, so the identity stays at 45 degrees). */
static void axes_at(const struct par_fig *c, int attempt, double ax[2][2])
{
    double x0 = c->lo / 1.5, x1 = c->hi * 1.5, more = 1;
    for (int a = 0; a < attempt; a++)
        more *= 3.17;
    ax[0][0] = x0, ax[0][1] = x1 * more, ax[1][0] = x0 / more, ax[1][1] = x1;
}

/* The panel at one try of the axes: the identity and the band's edges, every point, the warning. */
static bool fill_panel(const struct plot__fig *f, void *ctx, int attempt, struct plot__occ *occ)
{
    const struct par_fig *c = ctx;
    double more = 1;
    for (int a = 0; a < attempt; a++)
        more *= 3.17;
    if (more > 1001)
        return false;
    double ax[2][2];
    axes_at(c, attempt, ax);
    plot__occ_grid_panel(occ, f, &c->g, 0, 0, ax[0][0], ax[0][1], ax[1][0], ax[1][1], true, true);
    for (int b = -1; b <= 1; b++) {   /* the identity and the band's edges */
        double mul = 1 + b * f->o->band_pct / 100.0;
        plot__occ_seg(occ, ax[1][0], ax[1][0] * mul, ax[0][1], ax[0][1] * mul, 0.015);
    }
    for (int i = 0; i < c->r.n_rows; i++) {
        const struct plot__report_row *row = &c->r.rows[i];
        plot__occ_seg(occ, (double)row->pred.step_ns * 1e-6, (double)row->meas.step_ns * 1e-6,
                      (double)row->pred.step_ns * 1e-6, (double)row->meas.step_ns * 1e-6, 0.05);
        for (int d = 0; d < c->n_drawn; d++) {
            int64_t a = side_ns(f, &row->pred, c->drawn[d]), b = side_ns(f, &row->meas, c->drawn[d]);
            if (a > 0 && b > 0)
                plot__occ_seg(occ, (double)a * 1e-6, (double)b * 1e-6, (double)a * 1e-6, (double)b * 1e-6, 0.05);
        }
    }
    if (c->others > PARITY_OTHERS_WARN_PCT)
        plot__occ_text(occ, plot__occ_gx(occ, 0.97), plot__occ_gy(occ, 0.04), 52, 8, 1);
    return true;
}

/* Place: a square panel and the key. The key goes where no point, line or label lies; when nowhere,
 * the axes widen (axes_at), which opens the corner under the identity, and only then is the key a
 * strip under the panel. */
static void place(const struct plot__fig *f, struct par_fig *c)
{
    bool dbl = f->o->width == PLOT_DOUBLE;
    double w = plot__width_in(f), left = 0.5, bottom = 0.36;
    c->top = 0.1;
    c->side = dbl ? 2.8 : w - left - 0.25;
    c->title_in = f->o->title && *f->o->title ? 0.25 : 0;
    c->g = (struct plot__grid){1, 1, 0, left, w - left - c->side, c->top, bottom, c->title_in, 0};
    c->g.height_in = c->side + bottom + c->top + c->title_in;
    if (dbl) {   /* centre the square */
        c->g.left_in = (w - c->side) / 2 + 0.1;
        c->g.right_in = w - c->g.left_in - c->side;
    }
    plot__key_init(&c->key, c->n_drawn + 3);
    char band_t[32];
    snprintf(band_t, sizeof band_t, "\xc2\xb1%g %%", f->o->band_pct);
    plot__key_title(&c->key, 0, band_t);
    plot__key_title(&c->key, 1, "measured = predicted");
    plot__key_title(&c->key, 2, "step");
    for (int d = 0; d < c->n_drawn; d++)
        plot__key_title(&c->key, 3 + d, c->r.phase[c->drawn[d]]);
    int at = plot__key_place(f, &c->g, &c->key, fill_panel, c);
    axes_at(c, at, c->ax);
    if (!c->key.inside)   /* the strip: the data's range on both axes */
        c->ax[0][0] = c->ax[1][0] = c->lo / 1.5, c->ax[0][1] = c->ax[1][1] = c->hi * 1.5;
}

/* Log axes: ticks at 1, 2 and 5 x 10^k inside the range (gnuplot's own are decades only); over
 * more than three decades the labels of 2 and 5 would run into each other, so those become
 * unlabelled minor ticks. */
static void emit_ticks(struct plot__fig *f, const double ax[2][2])
{
    FILE *gp = f->gp;
    const bool wide = log10(ax[0][1] / ax[0][0]) > 3;
    /* Past six decades only every second decade is labelled, past twelve every third. */
    const int every = log10(ax[0][1] / ax[0][0]) > 12 ? 3 : log10(ax[0][1] / ax[0][0]) > 6 ? 2 : 1;
    for (int a = 0; a < 2; a++) {
        double t0 = ax[a][0], t1 = ax[a][1];
        fprintf(gp, "set %ctics (", a ? 'y' : 'x');
        bool first = true;
        for (double dec = pow(10, floor(log10(t0))); dec <= t1; dec *= 10)
            for (int q = 0; q < 3; q++) {
                double v = dec * (q == 0 ? 1 : q == 1 ? 2 : 5);
                if (v < t0 || v > t1)
                    continue;
                if ((wide && q > 0) || (q == 0 && (int)llround(log10(v)) % every != 0))
                    fprintf(gp, "%s'' %g 1", first ? "" : ", ", v);
                else
                    fprintf(gp, "%s'%g' %g", first ? "" : ", ", v, v);
                first = false;
            }
        fputs(")\n", gp);
    }
}

/* The key's entries: the band, the identity, the step, each phase. */
static void emit_key(struct plot__fig *f, const struct par_fig *c)
{
    FILE *gp = f->gp;
    plot__key_begin(f, &c->g, &c->key);
    plot__key_entry(f, &c->g, &c->key, 0);
    fprintf(gp, "NaN with boxes fc rgb '#b8b8b8' fs solid 0.6 title '\xc2\xb1%g %%'\n", f->o->band_pct);
    plot__key_entry(f, &c->g, &c->key, 1);
    fputs("NaN with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted'\n", gp);
    plot__key_entry(f, &c->g, &c->key, 2);
    fputs("NaN with points pt 7 ps 0.8 lc rgb '#000000' title 'step'", gp);
    for (int d = 0; d < c->n_drawn; d++) {
        int pat;
        const char *col = plot__phase_color(c->r.phase[c->drawn[d]], d, &pat);
        fputc('\n', gp);
        plot__key_entry(f, &c->g, &c->key, 3 + d);
        fprintf(gp, "NaN with points pt %d ps 0.7 lc rgb '%s' title ", phase_points[d % N_PHASE_POINTS], col);
        plot__gp_str(f, "phase", c->r.phase[c->drawn[d]]);
    }
}

/* Emit: the script, from what place decided. */
static void emit(struct plot__fig *f, const struct par_fig *c)
{
    plot__gp_preamble(f, c->g.height_in);
    FILE *gp = f->gp;
    double w = plot__width_in(f);
    plot__multiplot(f);
    plot__panel(f, &c->g, 0, 0);
    fprintf(gp, "set label 90 'measured (ms)' at screen %.4f, screen %.4f center rotate by 90\n",
            (c->g.left_in - 0.42) / w, (c->g.height_in - c->title_in - c->top - c->side / 2) / c->g.height_in);
    fprintf(gp, "set xlabel 'predicted (ms)' offset 0,0.9\nset logscale xy\nset xrange [%g:%g]\nset yrange [%g:%g]\n"
                "set grid xtics ytics\nset samples 200\nband = %g\n",
            c->ax[0][0], c->ax[0][1], c->ax[1][0], c->ax[1][1], f->o->band_pct / 100.0);
    emit_ticks(f, c->ax);
    fputs("unset key\n", gp);
    if (c->others > PARITY_OTHERS_WARN_PCT)   /* the machine was not quiet: say so on the figure */
        fprintf(gp, "set label 5 'others used up to %.0f %% of the cores while measuring' at graph 0.97, graph 0.04 "
                    "right font ',%.3g' front\n", c->others, plot__pt(f, 8));
    fprintf(gp, "plot '+' using 1:($1*(1-band)):($1*(1+band)) with filledcurves fc rgb '#b8b8b8' fs solid 0.6 "
                "title '\xc2\xb1%g %%', \\\n     x with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted', "
                "\\\n     datafile index 0 using 2:3 with points pt 7 ps 0.8 lc rgb '#000000' title 'step'",
            f->o->band_pct);
    for (int d = 0; d < c->n_drawn; d++) {
        int pat;
        const char *col = plot__phase_color(c->r.phase[c->drawn[d]], d, &pat);
        fprintf(gp, ", \\\n     datafile index %d using 2:3 with points pt %d ps 0.7 lc rgb '%s' title ",
                d + 1, phase_points[d % N_PHASE_POINTS], col);
        plot__gp_str(f, "phase", c->r.phase[c->drawn[d]]);
    }
    fputc('\n', gp);
    emit_key(f, c);
    fputs("\nunset multiplot\n", gp);
}

int plot__parity(struct plot__fig *f, struct rl_err *e)
{
    struct par_fig *c = calloc(1, sizeof *c);
    if (!c)
        return rl_errf(e, RL_ENOMEM, "plot parity: out of memory");
    int rc = gather(f, c, e);
    if (!rc) {
        place(f, c);
        emit(f, c);
        plot__report_free(&c->r);
    }
    free(c);
    return rc;
}
