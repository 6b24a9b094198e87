/* plots/kind_parity.c — `ratiolab plot parity`: predicted against measured step and phase times
 * from a validate report. */
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
    struct plot__meta m = {r.model, hw, r.policy, sched, NULL, NULL};
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
    double x0 = lo / 1.5, x1 = hi * 1.5;   /* the data's range; the axes' below */
    double ax[2][2];                        /* x and y axis: low, high */
    /* A square panel; the key inside it where no point, line or label lies, else under it. */
    bool dbl = f->o->width == PLOT_DOUBLE;
    double w = plot__width_in(f), left = 0.5, bottom = 0.36, top = 0.1;
    double side = dbl ? 2.8 : w - left - 0.25;
    double title_in = f->o->title && *f->o->title ? 0.25 : 0;
    struct plot__grid g = {1, 1, 0, left, w - left - side, top, bottom, title_in, 0};
    g.height_in = side + bottom + top + title_in;
    if (dbl) {   /* centre the square */
        g.left_in = (w - side) / 2 + 0.1;
        g.right_in = w - g.left_in - side;
    }
    double others = -1;
    for (int i = 0; i < r.n_rows; i++)
        others = fmax(others, r.rows[i].others_cpu_pct);
    struct plot__key k;
    plot__key_init(&k, n_drawn + 3);
    char band_t[32];
    snprintf(band_t, sizeof band_t, "\xc2\xb1%g %%", f->o->band_pct);
    plot__key_title(&k, 0, band_t);
    plot__key_title(&k, 1, "measured = predicted");
    plot__key_title(&k, 2, "step");
    for (int d = 0; d < n_drawn; d++)
        plot__key_title(&k, 3 + d, r.phase[drawn[d]]);
    /* The key goes where no point, line or label lies; when nowhere, the x axis reaches further right
     * and the y axis as far further down (up to three decades; both axes keep one span, so the
     * identity stays at 45 degrees), which opens the corner under the identity, and only then is
     * the key a strip under the panel. */
    bool fits = false;
    for (double more = 1; !fits && more <= 1001; more *= 3.17) {
        ax[0][0] = x0, ax[0][1] = x1 * more, ax[1][0] = x0 / more, ax[1][1] = x1;
        struct plot__occ occ = {0};
        plot__occ_grid_panel(&occ, f, &g, 0, 0, ax[0][0], ax[0][1], ax[1][0], ax[1][1], true, true);
        for (int b = -1; b <= 1; b++) {   /* the identity and the band's edges */
            double mul = 1 + b * f->o->band_pct / 100.0;
            plot__occ_seg(&occ, ax[1][0], ax[1][0] * mul, ax[0][1], ax[0][1] * mul, 0.015);
        }
        for (int i = 0; i < r.n_rows; i++) {
            const struct plot__report_row *row = &r.rows[i];
            plot__occ_seg(&occ, (double)row->pred.step_ns * 1e-6, (double)row->meas.step_ns * 1e-6,
                          (double)row->pred.step_ns * 1e-6, (double)row->meas.step_ns * 1e-6, 0.05);
            for (int d = 0; d < n_drawn; d++) {
                int q = drawn[d];
                int64_t a = f->o->phase_exposed ? row->pred.exposed_ns[q] : row->pred.busy_ns[q];
                int64_t b = f->o->phase_exposed ? row->meas.exposed_ns[q] : row->meas.busy_ns[q];
                if (a > 0 && b > 0)
                    plot__occ_seg(&occ, (double)a * 1e-6, (double)b * 1e-6, (double)a * 1e-6, (double)b * 1e-6, 0.05);
            }
        }
        if (others > PARITY_OTHERS_WARN_PCT)
            plot__occ_text(&occ, plot__occ_gx(&occ, 0.97), plot__occ_gy(&occ, 0.04), 52, 8, 1);
        fits = plot__key_fit(f, &occ, &k);
        plot__occ_free(&occ);
    }
    if (!fits) {
        ax[0][0] = ax[1][0] = x0, ax[0][1] = ax[1][1] = x1;
        g.key_in = plot__key_strip(f, &k);
        g.height_in += g.key_in;
    }
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    plot__panel(f, &g, 0, 0);
    fprintf(gp, "set label 90 'measured (ms)' at screen %.4f, screen %.4f center rotate by 90\n",
            (g.left_in - 0.42) / w, (g.height_in - title_in - top - side / 2) / g.height_in);
    fprintf(gp, "set xlabel 'predicted (ms)' offset 0,0.9\nset logscale xy\nset xrange [%g:%g]\nset yrange [%g:%g]\n"
                "set grid xtics ytics\nset samples 200\nband = %g\n",
            ax[0][0], ax[0][1], ax[1][0], ax[1][1], f->o->band_pct / 100.0);
    /* Log axes: ticks at 1, 2 and 5 x 10^k inside the range (gnuplot's own are decades only);
     * over more than three decades the labels of 2 and 5 would run into each other, so those
     * become unlabelled minor ticks. */
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
    fputs("unset key\n", gp);
    if (others > PARITY_OTHERS_WARN_PCT)   /* the machine was not quiet: say so on the figure */
        fprintf(gp, "set label 5 'others used up to %.0f %% of the cores while measuring' at graph 0.97, graph 0.04 "
                    "right font ',%.3g' front\n", others, plot__pt(f, 8));
    fprintf(gp, "plot '+' using 1:($1*(1-band)):($1*(1+band)) with filledcurves fc rgb '#b8b8b8' fs solid 0.6 "
                "title '\xc2\xb1%g %%', \\\n     x with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted', "
                "\\\n     datafile index 0 using 2:3 with points pt 7 ps 0.8 lc rgb '#000000' title 'step'",
            f->o->band_pct);
    for (int d = 0; d < n_drawn; d++) {
        int pat;
        const char *c = plot__phase_color(r.phase[drawn[d]], d, &pat);
        fprintf(gp, ", \\\n     datafile index %d using 2:3 with points pt %d ps 0.7 lc rgb '%s' title ",
                d + 1, phase_points[d % N_PHASE_POINTS], c);
        plot__gp_str(f, "phase", r.phase[drawn[d]]);
    }
    {
        fputc('\n', gp);
        plot__key_begin(f, &g, &k);
        plot__key_entry(f, &g, &k, 0);
        fprintf(gp, "NaN with boxes fc rgb '#b8b8b8' fs solid 0.6 title '\xc2\xb1%g %%'\n", f->o->band_pct);
        plot__key_entry(f, &g, &k, 1);
        fputs("NaN with lines lc rgb '#000000' dt 1 lw 0.8 title 'measured = predicted'\n", gp);
        plot__key_entry(f, &g, &k, 2);
        fputs("NaN with points pt 7 ps 0.8 lc rgb '#000000' title 'step'", gp);
        for (int d = 0; d < n_drawn; d++) {
            int pat;
            const char *c = plot__phase_color(r.phase[drawn[d]], d, &pat);
            fputc('\n', gp);
            plot__key_entry(f, &g, &k, 3 + d);
            fprintf(gp, "NaN with points pt %d ps 0.7 lc rgb '%s' title ", phase_points[d % N_PHASE_POINTS], c);
            plot__gp_str(f, "phase", r.phase[drawn[d]]);
        }
    }
    fputs("\nunset multiplot\n", gp);
    plot__report_free(&r);
    return 0;
}
