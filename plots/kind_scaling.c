/* plots/kind_scaling.c — `ratiolab plot scaling`: step time or tokens/s against GPU count or model size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_impl.h"

/* ---- 5. scaling --------------------------------------------------------------------------------------
 * One point per sweep (at --ratio, or the fastest ratio that fits), one line per policy and
 * schedule, against GPU count or model size. */
struct sc_point {
    double x, y;       /* axis values */
    double ratio;      /* requested ratio of the row shown */
    int sweep;         /* index of the input */
};

/* Where a point's label may go, tried in order: above, above left, above right, below... (inches
 * from the point to the text's anchor; just: 0 centred, > 0 right-aligned, < 0 left-aligned). */
struct label_spot {
    double dx, dy;
    int just;
};
static const struct label_spot label_spots[] = {
    {0, 0.13, 0}, {0.04, 0.13, 1}, {-0.04, 0.13, -1}, {0, -0.13, 0}, {0.04, -0.13, 1}, {-0.04, -0.13, -1},
    {-0.09, 0, 1}, {0.09, 0, -1},
};
#define N_LABEL_SPOTS ((int)(sizeof label_spots / sizeof label_spots[0]))

static int cmp_point(const void *a, const void *b)
{
    const struct sc_point *p = a, *q = b;
    return (p->x > q->x) - (p->x < q->x);
}

int plot__scaling(struct plot__fig *f, struct rl_err *e)
{
    int ns = f->o->n_in;
    struct plot__sweep s[PLOT_MAX_IN];
    int rc = plot__read_sweeps(f, s, e);
    if (rc)
        return rc;
    bool gpus = f->o->scaling_x == PLOT_X_GPUS, tokens = f->o->scaling_y != PLOT_Y_STEP;
    bool per_gpu = f->o->scaling_y == PLOT_Y_TOKENS_PER_GPU;
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
            row = plot__best_fit(f, &s[i]);
        }
        if (rc)
            break;
        pts[i].sweep = i;
        pts[i].x = gpus ? s[i].gpus : (double)s[i].params * 1e-9;
        pts[i].ratio = row >= 0 ? s[i].rows[row].requested : NAN;
        pts[i].y = row < 0 ? NAN
                   : per_gpu ? s[i].rows[row].tokens_per_s
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
        plot__free_sweeps(s, ns);
        return rc;
    }
    plot__sweep_meta(f, s, ns);
    double xmin = INFINITY, xmax = 0, ymax = 0;
    /* What each series draws, for placing the key clear of it: points in x order, their labels'
     * lengths, the ideal line's values. */
    struct sc_point drawn[PLOT_MAX_IN][PLOT_MAX_IN];
    int n_drawn[PLOT_MAX_IN] = {0};
    char label_txt[PLOT_MAX_IN][PLOT_MAX_IN][96];
    double ideal_y[PLOT_MAX_IN][PLOT_MAX_IN];
    for (int k = 0; k < n_series; k++) {
        char what[512];
        snprintf(what, sizeof what, "policy %s, schedule %s: %s, %s, requested ratio shown, input%s",
                 s[first_of[k]].policy, s[first_of[k]].schedule, gpus ? "gpus" : "params_billion",
                 per_gpu ? "tokens_per_s_per_gpu" : tokens ? "tokens_per_s_all_gpus" : "step_s",
                 f->o->ratio >= 0 ? "" : " (ratio: the fastest that fits; ? when none fits)");
        plot__block(f, what);
        fputs("# x\ty\trequested_ratio\tinput\tideal_y\tlabel\n", f->dat);
        struct sc_point sp[PLOT_MAX_IN];
        int n = 0;
        for (int i = 0; i < ns; i++)
            if (series[i] == k)
                sp[n++] = pts[i];
        qsort(sp, (size_t)n, sizeof sp[0], cmp_point);
        /* Ideal scaling from the series' first point (GPU axis only): throughput grows with the
         * GPUs (per GPU it stays), the step time of a fixed per-GPU batch stays. */
        int j0 = 0;
        while (j0 < n && isnan(sp[j0].y))
            j0++;
        for (int j = 0; j < n; j++) {
            char label[96], name[64];
            snprintf(name, sizeof name, "%s", s[sp[j].sweep].model);
            name[strcspn(name, " \t\r\n")] = 0;   /* the model's name, "gpt-2.7b" */
            if (isnan(sp[j].y)) {
                fprintf(f->dat, "%.6g\t?\t?\t%s\t?\t%s none fits\n", sp[j].x, s[sp[j].sweep].name, name);
                continue;
            }
            if (sp[j].ratio == 0) {
                /* Nothing is offloaded at ratio 0 either way; whether offload_optimizer was
                 * configured (its buffers and CPU optimizer set up) is what the sweep records. */
                const char *off = s[sp[j].sweep].offload;
                char cfg[48];
                if (!off[0])
                    snprintf(cfg, sizeof cfg, "offload config unknown");
                else if (strcmp(off, "none") == 0)
                    snprintf(cfg, sizeof cfg, "offload off");
                else
                    snprintf(cfg, sizeof cfg, "%.8s offload on", off);
                snprintf(label, sizeof label, "%s%sr=0, %s", gpus ? "" : name, gpus ? "" : ": ", cfg);
            } else {
                snprintf(label, sizeof label, "%s%sr=%.2f", gpus ? "" : name, gpus ? "" : ": ", sp[j].ratio);
            }
            double ideal = !gpus || j0 >= n ? NAN
                           : tokens && !per_gpu ? sp[j0].y * sp[j].x / sp[j0].x : sp[j0].y;
            fprintf(f->dat, "%.6g\t%.6f\t%.4f\t%s\t", sp[j].x, sp[j].y, sp[j].ratio, s[sp[j].sweep].name);
            if (isnan(ideal))
                fputs("?", f->dat);
            else
                fprintf(f->dat, "%.6f", ideal);
            fprintf(f->dat, "\t%s\n", label);
            ymax = fmax(ymax, fmax(sp[j].y, isnan(ideal) ? 0 : ideal));
            drawn[k][n_drawn[k]] = sp[j];
            snprintf(label_txt[k][n_drawn[k]], sizeof label_txt[k][0], "%s", label);
            ideal_y[k][n_drawn[k]++] = ideal;
        }
        for (int j = 0; j < n; j++) {
            xmin = fmin(xmin, sp[j].x);
            xmax = fmax(xmax, sp[j].x);
        }
    }
    if (ymax <= 0)
        ymax = 1;
    /* Large throughputs are shown in thousands, so tick labels stay short. */
    double yscale = ymax >= 1e4 ? 1e-3 : 1;
    ymax *= yscale;
    double tick = plot__tick(ymax, 5), ytop = ceil(ymax * 1.15 / tick) * tick;
    /* The x axis as drawn below: log10 for model sizes spanning 4x, log2 for GPU counts spanning
     * 4x, else linear. */
    bool spans = xmax >= 4 * xmin && xmin > 0;
    double xr0, xr1;
    if (spans) {
        xr0 = xmin / (gpus ? 1.25 : 1.6);
        xr1 = xmax * (gpus ? 1.25 : 1.6);
    } else if (gpus) {
        xr0 = xmin - fmax((xmax - xmin) * 0.12, 0.5);
        xr1 = xmax + fmax((xmax - xmin) * 0.12, 0.5);
    } else {
        double pad = xmax > xmin ? (xmax - xmin) * 0.1 : fmax(xmax * 0.1, 1);
        xr0 = fmax(0, xmin - pad);
        xr1 = xmax + pad;
    }
    struct plot__key key;
    plot__key_init(&key, n_series + gpus);
    for (int k = 0; k < n_series; k++) {
        char t[160];
        snprintf(t, sizeof t, "policy %s, schedule %s", s[first_of[k]].policy, s[first_of[k]].schedule);
        plot__key_title(&key, k, t);
    }
    if (gpus)
        plot__key_title(&key, n_series, "ideal scaling (dotted, per series)");
    struct plot__grid g = {1, 1, 0, 0.55, 0.15, 0.08, 0.36, f->o->title && *f->o->title ? 0.25 : 0, 0};
    g.height_in = (f->o->width == PLOT_DOUBLE ? 2.6 : 2.2) + g.title_in;
    /* The key goes where no line, point or point label lies; when nowhere, the panel gets room above
     * the data (up to 1.65 times the largest value), and only then a strip under it. */
    bool fits = false;
    int spot[PLOT_MAX_IN][PLOT_MAX_IN];
    for (double room = 1.15; !fits && room < 1.66; room += 0.25) {
        ytop = ceil(ymax * room / tick) * tick;
        struct plot__occ occ = {0};
        plot__occ_grid_panel(&occ, f, &g, 0, 0, xr0, xr1, 0, ytop, spans, false);
        for (int k = 0; k < n_series; k++)
            for (int j = 0; j < n_drawn[k]; j++) {
                const struct sc_point *p = &drawn[k][j];
                double y = p->y * yscale;
                plot__occ_seg(&occ, p->x, y, p->x, y, 0.04);
                if (j + 1 < n_drawn[k]) {
                    plot__occ_seg(&occ, p->x, y, drawn[k][j + 1].x, drawn[k][j + 1].y * yscale, 0.015);
                    if (!isnan(ideal_y[k][j]) && !isnan(ideal_y[k][j + 1]))
                        plot__occ_seg(&occ, p->x, ideal_y[k][j] * yscale, drawn[k][j + 1].x, ideal_y[k][j + 1] * yscale,
                                      0.01);
                }
            }
        /* Each point's label at the first of a few spots around it that stays inside the panel and
         * clear of every line, point and label placed before it (above it when none is). */
        const double *pa = occ.panel[0];
        for (int k = 0; k < n_series; k++)
            for (int j = 0; j < n_drawn[k]; j++) {
                double px = plot__occ_x(&occ, drawn[k][j].x), py = plot__occ_y(&occ, drawn[k][j].y * yscale);
                double tw = plot__text_w((int)strlen(label_txt[k][j]), 7), th = 0.1;
                int pick = -1, inside = -1;
                for (int c = 0; c < N_LABEL_SPOTS && pick < 0; c++) {
                    const struct label_spot *ls = &label_spots[c];
                    double x0 = px + ls->dx - (ls->just == 0 ? tw / 2 : ls->just > 0 ? tw : 0);
                    double yc = py + ls->dy;
                    if (x0 < pa[0] || x0 + tw > pa[2] || yc - th / 2 < pa[1] || yc + th / 2 > pa[3])
                        continue;
                    if (inside < 0)
                        inside = c;   /* when no spot is clear: the first inside the panel */
                    if (plot__occ_clear(&occ, x0, yc - th / 2, x0 + tw, yc + th / 2))
                        pick = c;
                }
                spot[k][j] = pick >= 0 ? pick : inside >= 0 ? inside : 0;
                const struct label_spot *ls = &label_spots[spot[k][j]];
                plot__occ_text(&occ, px + ls->dx, py + ls->dy, (int)strlen(label_txt[k][j]), 7, ls->just);
            }
        fits = plot__key_fit(f, &occ, &key);
        plot__occ_free(&occ);
    }
    if (!fits) {
        ytop = ceil(ymax * 1.15 / tick) * tick;
        g.key_in = plot__key_strip(f, &key);
        g.height_in += g.key_in;
    }
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    plot__panel(f, &g, 0, 0);
    plot__ylabel(f, &g, 0, 0, !tokens ? "step time (s)"
                              : per_gpu ? (yscale < 1 ? "tokens/s per GPU (thousands)" : "tokens/s per GPU")
                              : yscale < 1 ? "tokens/s, all GPUs (thousands)" : "tokens/s, all GPUs");
    fprintf(gp, "set xlabel '%s' offset 0,0.9\nset yrange [0:%g]\nset ytics %g format '%s'\nunset key\nys = %g\n",
            gpus ? "GPUs" : "model parameters (billions)", ytop, tick,
            plot__tick_format(tick), yscale);
    if (!gpus && xmax >= 4 * xmin && xmin > 0) {
        /* Model sizes on a log axis with round ticks (1, 2, 5 x 10^k); the points say which model. */
        double x0 = xmin / 1.6, x1 = xmax * 1.6;
        fprintf(gp, "set logscale x 10\nset xrange [%g:%g]\nset xtics (", x0, x1);
        bool first = true;
        for (double dec = pow(10, floor(log10(x0))); dec <= x1; dec *= 10)
            for (int q = 0; q < 3; q++) {
                double v = dec * (q == 0 ? 1 : q == 1 ? 2 : 5);
                if (v >= x0 && v <= x1) {
                    fprintf(gp, "%s'%g' %g", first ? "" : ", ", v, v);
                    first = false;
                }
            }
        fputs(")\n", gp);
    } else if (gpus || (xmax >= 4 * xmin && xmin > 0)) {
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
    /* The points' labels, where the placement above put them (offsets in inches of the figure). */
    for (int k = 0; k < n_series; k++)
        for (int j = 0; j < n_drawn[k]; j++) {
            const struct label_spot *ls = &label_spots[spot[k][j]];
            fprintf(gp, "set label %d ", 300 + k * PLOT_MAX_IN + j);
            plot__gp_str(f, "label", label_txt[k][j]);
            fprintf(gp, " at %g, %.6f %s offset screen %.4f, screen %.4f font ',%.3g' tc lt %d front\n", drawn[k][j].x,
                    drawn[k][j].y * yscale, ls->just > 0 ? "right" : ls->just < 0 ? "left" : "center",
                    ls->dx / plot__width_in(f), ls->dy / g.height_in, plot__pt(f, 7), k + 1);
        }
    fputs("plot ", gp);
    for (int k = 0; k < n_series; k++) {
        fprintf(gp, "%sdatafile index %d using 1:($2*ys) with linespoints lt %d", k ? ", \\\n     " : "", k, k + 1);
        if (gpus)
            fprintf(gp, ", \\\n     datafile index %d using 1:($5*ys) with lines lt %d dt 3 lw 0.8", k, k + 1);
    }
    fputs("\n", gp);
    plot__key_begin(f, &g, &key);
    if (gpus) {
        plot__key_entry(f, &g, &key, n_series);
        fputs("NaN with lines lc rgb '#000000' dt 3 lw 0.8 title 'ideal scaling (dotted, per series)'\n", gp);
    }
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
    plot__free_sweeps(s, ns);
    return 0;
}
