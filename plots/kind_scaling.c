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
            if (sp[j].ratio == 0)
                snprintf(label, sizeof label, "%s%sr=0, none offloaded", gpus ? "" : name, gpus ? "" : ": ");
            else
                snprintf(label, sizeof label, "%s%sr=%.2f", gpus ? "" : name, gpus ? "" : ": ", sp[j].ratio);
            double ideal = !gpus || j0 >= n ? NAN
                           : tokens && !per_gpu ? sp[j0].y * sp[j].x / sp[j0].x : sp[j0].y;
            fprintf(f->dat, "%.6g\t%.6f\t%.4f\t%s\t", sp[j].x, sp[j].y, sp[j].ratio, s[sp[j].sweep].name);
            if (isnan(ideal))
                fputs("?", f->dat);
            else
                fprintf(f->dat, "%.6f", ideal);
            fprintf(f->dat, "\t%s\n", label);
            ymax = fmax(ymax, fmax(sp[j].y, isnan(ideal) ? 0 : ideal));
        }
        for (int j = 0; j < n; j++) {
            xmin = fmin(xmin, sp[j].x);
            xmax = fmax(xmax, sp[j].x);
        }
    }
    int longest = 36;
    for (int k = 0; k < n_series; k++)
        longest = (int)fmax(longest, (double)(strlen(s[first_of[k]].policy) + strlen(s[first_of[k]].schedule) + 19));
    struct plot__grid g = {1, 1, 0, 0.55, 0.15, 0.08, 0.36, f->o->title && *f->o->title ? 0.25 : 0,
                           plot__key_height(f, n_series + gpus, longest)};
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
    plot__ylabel(f, &g, 0, 0, !tokens ? "step time (s)"
                              : per_gpu ? (yscale < 1 ? "tokens/s per GPU (thousands)" : "tokens/s per GPU")
                              : yscale < 1 ? "tokens/s, all GPUs (thousands)" : "tokens/s, all GPUs");
    double tick = plot__tick(ymax, 5);
    fprintf(gp, "set xlabel '%s' offset 0,0.9\nset yrange [0:%g]\nset ytics %g format '%s'\nunset key\nys = %g\n",
            gpus ? "GPUs" : "model parameters (billions)", ceil(ymax * 1.15 / tick) * tick, tick,
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
    fputs("plot ", gp);
    for (int k = 0; k < n_series; k++) {
        fprintf(gp, "%sdatafile index %d using 1:($2*ys) with linespoints lt %d, \\\n     datafile index %d using "
                    "1:($2*ys):6 with labels offset 0,0.8 font ',7' tc lt %d",
                k ? ", \\\n     " : "", k, k + 1, k, k + 1);
        if (gpus)
            fprintf(gp, ", \\\n     datafile index %d using 1:($5*ys) with lines lt %d dt 3 lw 0.8", k, k + 1);
    }
    fputs("\n", gp);
    struct plot__key key;
    plot__key_begin(f, &g, n_series + gpus, longest, &key);
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
