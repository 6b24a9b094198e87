/* plots/kind_scaling.c — `ratiolab plot scaling`: step time or tokens/s against GPU count or model size.
 *
 * Three steps, as for every kind: gather (the sweeps read, one point each, the .dat written),
 * place (the axes, the points' labels and the key, through plot.c's placement) and emit (the
 * gnuplot script). */
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
 * from the point to the text's anchor). */
static const struct plot__spot label_spots[] = {
    {0, 0.13, 0}, {0.04, 0.13, 1}, {-0.04, 0.13, -1}, {0, -0.13, 0}, {0.04, -0.13, 1}, {-0.04, -0.13, -1},
    {-0.09, 0, 1}, {0.09, 0, -1},
};
#define N_LABEL_SPOTS ((int)(sizeof label_spots / sizeof label_spots[0]))

/* The figure between its steps: what gather found, then what place decided. */
struct sc_fig {
    struct plot__sweep s[PLOT_MAX_IN];                 /* the inputs */
    int ns;                                            /* entries in s */
    bool gpus, tokens, per_gpu;                        /* x over GPUs; y in tokens/s; per GPU */
    struct sc_point pts[PLOT_MAX_IN];                  /* one point per input */
    int series[PLOT_MAX_IN];                           /* the series (policy, schedule) of each input */
    int n_series;                                      /* series */
    int first_of[PLOT_MAX_IN];                         /* the first input of each series */
    struct sc_point drawn[PLOT_MAX_IN][PLOT_MAX_IN];   /* per series, the points drawn, in x order */
    int n_drawn[PLOT_MAX_IN];                          /* entries of drawn per series */
    char label_txt[PLOT_MAX_IN][PLOT_MAX_IN][96];      /* each drawn point's label */
    double ideal_y[PLOT_MAX_IN][PLOT_MAX_IN];          /* each drawn point's ideal value (NAN: none) */
    double xmin, xmax, ymax;                           /* the data's extent (ymax in axis units) */
    /* place */
    double yscale;                                     /* data to axis units (1e-3: thousands) */
    double tick, ytop;                                 /* y tick step and top of the y range */
    bool spans;                                        /* a log x axis (the x values span 4x) */
    double xr0, xr1;                                   /* x range */
    int spot[PLOT_MAX_IN][PLOT_MAX_IN];                /* each label's spot in label_spots */
    struct plot__grid g;                               /* the panel */
    struct plot__key key;                              /* the key */
};

static int cmp_point(const void *a, const void *b)
{
    const struct sc_point *p = a, *q = b;
    return (p->x > q->x) - (p->x < q->x);
}

/* The point of input i: its row (at --ratio or the fastest that fits) and series. */
static int gather_point(struct plot__fig *f, struct sc_fig *c, int i, struct rl_err *e)
{
    const struct plot__sweep *s = &c->s[i];
    if (c->gpus && s->gpus <= 0)
        return rl_errf(e, RL_EINVAL, "%s: no GPU count (field 'gpus', or 'N GPUs' in 'model'); scaling over "
                       "GPUs needs `ratiolab sweep --json`", f->o->in[i]);
    if (!c->gpus && s->params <= 0)
        return rl_errf(e, RL_EINVAL, "%s: no model size (field 'rank_numel'); scaling over parameters needs "
                       "`ratiolab sweep --json` from ratiolab 0.1.0 or later", f->o->in[i]);
    if (c->tokens && (s->gpus <= 0 || !s->has_phases))
        return rl_errf(e, RL_EINVAL, "%s: no tokens/s or GPU count; scaling in tokens/s needs `ratiolab "
                       "sweep --json`", f->o->in[i]);
    int row = -1;
    if (f->o->ratio >= 0) {
        for (int k = 0; k < s->n_rows; k++)
            if (fabs(s->rows[k].requested - f->o->ratio) < 1e-9)
                row = k;
        if (row < 0)
            return rl_errf(e, RL_EINVAL, "ratio: %g is not among the ratios of %s", f->o->ratio, f->o->in[i]);
    } else {
        row = plot__best_fit(f, s);
    }
    struct sc_point *p = &c->pts[i];
    p->sweep = i;
    p->x = c->gpus ? s->gpus : (double)s->params * 1e-9;
    p->ratio = row >= 0 ? s->rows[row].requested : NAN;
    p->y = row < 0 ? NAN
           : c->per_gpu ? s->rows[row].tokens_per_s
           : c->tokens ? s->rows[row].tokens_per_s * s->gpus
                       : (double)s->rows[row].step_ns * 1e-9;
    int k = 0;
    while (k < c->n_series && (strcmp(c->s[c->first_of[k]].policy, s->policy) ||
                               strcmp(c->s[c->first_of[k]].schedule, s->schedule)))
        k++;
    if (k == c->n_series)
        c->first_of[c->n_series++] = i;
    c->series[i] = k;
    return 0;
}

/* A point's label: the model (over parameters) and the ratio shown; at ratio 0, whether offload
 * was configured. */
static void point_label(const struct sc_fig *c, const struct sc_point *p, const char *name, char *label, size_t n)
{
    if (p->ratio == 0) {
        /* Nothing is offloaded at ratio 0 either way; whether offload_optimizer was configured (its
         * buffers and CPU optimizer set up) is what the sweep records. */
        const char *off = c->s[p->sweep].offload;
        char cfg[48];
        if (!off[0])
            snprintf(cfg, sizeof cfg, "offload config unknown");
        else if (strcmp(off, "none") == 0)
            snprintf(cfg, sizeof cfg, "offload off");
        else
            snprintf(cfg, sizeof cfg, "%.8s offload on", off);
        snprintf(label, n, "%s%sr=0, %s", c->gpus ? "" : name, c->gpus ? "" : ": ", cfg);
    } else {
        snprintf(label, n, "%s%sr=%.2f", c->gpus ? "" : name, c->gpus ? "" : ": ", p->ratio);
    }
}

/* Series k's data block: its points in x order, with the ideal line and labels; records what is
 * drawn. */
static void gather_series(struct plot__fig *f, struct sc_fig *c, int k)
{
    char what[512];
    snprintf(what, sizeof what, "policy %s, schedule %s: %s, %s, requested ratio shown, input%s",
             c->s[c->first_of[k]].policy, c->s[c->first_of[k]].schedule, c->gpus ? "gpus" : "params_billion",
             c->per_gpu ? "tokens_per_s_per_gpu" : c->tokens ? "tokens_per_s_all_gpus" : "step_s",
             f->o->ratio >= 0 ? "" : " (ratio: the fastest that fits; ? when none fits)");
    plot__block(f, what);
    fputs("# x\ty\t" RL_KEY_REQUESTED_RATIO "\tinput\tideal_y\tlabel\n", f->dat);
    struct sc_point sp[PLOT_MAX_IN];
    int n = 0;
    for (int i = 0; i < c->ns; i++)
        if (c->series[i] == k)
            sp[n++] = c->pts[i];
    qsort(sp, (size_t)n, sizeof sp[0], cmp_point);
    /* Ideal scaling from the series' first point (GPU axis only): throughput grows with the GPUs
     * (per GPU it stays), the step time of a fixed per-GPU batch stays. */
    int j0 = 0;
    while (j0 < n && isnan(sp[j0].y))
        j0++;
    for (int j = 0; j < n; j++) {
        char label[96], name[64];
        snprintf(name, sizeof name, "%s", c->s[sp[j].sweep].model);
        name[strcspn(name, " \t\r\n")] = 0;   /* the model's name, "gpt-2.7b" */
        if (isnan(sp[j].y)) {
            fprintf(f->dat, "%.6g\t?\t?\t%s\t?\t%s none fits\n", sp[j].x, c->s[sp[j].sweep].name, name);
            continue;
        }
        point_label(c, &sp[j], name, label, sizeof label);
        double ideal = !c->gpus || j0 >= n ? NAN
                       : c->tokens && !c->per_gpu ? sp[j0].y * sp[j].x / sp[j0].x : sp[j0].y;
        fprintf(f->dat, "%.6g\t%.6f\t%.4f\t%s\t", sp[j].x, sp[j].y, sp[j].ratio, c->s[sp[j].sweep].name);
        if (isnan(ideal))
            fputs("?", f->dat);
        else
            fprintf(f->dat, "%.6f", ideal);
        fprintf(f->dat, "\t%s\n", label);
        c->ymax = fmax(c->ymax, fmax(sp[j].y, isnan(ideal) ? 0 : ideal));
        c->drawn[k][c->n_drawn[k]] = sp[j];
        snprintf(c->label_txt[k][c->n_drawn[k]], sizeof c->label_txt[k][0], "%s", label);
        c->ideal_y[k][c->n_drawn[k]++] = ideal;
    }
    for (int j = 0; j < n; j++) {
        c->xmin = fmin(c->xmin, sp[j].x);
        c->xmax = fmax(c->xmax, sp[j].x);
    }
}

/* Gather: the sweeps read, a point per sweep, the .dat written. On error nothing is held. */
static int gather(struct plot__fig *f, struct sc_fig *c, struct rl_err *e)
{
    c->ns = f->o->n_in;
    int rc = plot__read_sweeps(f, c->s, e);
    if (rc)
        return rc;
    c->gpus = f->o->scaling_x == PLOT_X_GPUS;
    c->tokens = f->o->scaling_y != PLOT_Y_STEP;
    c->per_gpu = f->o->scaling_y == PLOT_Y_TOKENS_PER_GPU;
    for (int i = 0; i < c->ns && !rc; i++)
        rc = gather_point(f, c, i, e);
    if (rc) {
        plot__free_sweeps(c->s, c->ns);
        return rc;
    }
    plot__sweep_meta(f, c->s, c->ns);
    c->xmin = INFINITY;
    for (int k = 0; k < c->n_series; k++)
        gather_series(f, c, k);
    fprintf(f->dat, "\n\n# [note] labels on the points: the requested ratio shown%s\n",
            f->o->ratio >= 0 ? " (--ratio)" : " (the fastest that fits)");
    if (!c->gpus)
        fputs("# [note] parameters: one rank's (rank_numel) x TP x PP; tensors TP replicates count once per rank\n",
              f->dat);
    return 0;
}

/* The panel at one try of the layout: the data's lines and points, and each point's label at the
 * first spot around it clear of every line, point and label placed before it. Try a gives room
 * above the data of 1.15 + a x 0.25 times the largest value, up to 1.65. */
static bool fill_panel(const struct plot__fig *f, void *ctx, int attempt, struct plot__occ *occ)
{
    struct sc_fig *c = ctx;
    if (!plot__room_top(c->ymax, c->tick, 1.15, 1.66, attempt, &c->ytop))
        return false;
    plot__occ_grid_panel(occ, f, &c->g, 0, 0, c->xr0, c->xr1, 0, c->ytop, c->spans, false);
    for (int k = 0; k < c->n_series; k++)
        for (int j = 0; j < c->n_drawn[k]; j++) {
            const struct sc_point *p = &c->drawn[k][j];
            double y = p->y * c->yscale;
            plot__occ_seg(occ, p->x, y, p->x, y, 0.04);
            if (j + 1 < c->n_drawn[k]) {
                plot__occ_seg(occ, p->x, y, c->drawn[k][j + 1].x, c->drawn[k][j + 1].y * c->yscale, 0.015);
                if (!isnan(c->ideal_y[k][j]) && !isnan(c->ideal_y[k][j + 1]))
                    plot__occ_seg(occ, p->x, c->ideal_y[k][j] * c->yscale, c->drawn[k][j + 1].x,
                                  c->ideal_y[k][j + 1] * c->yscale, 0.01);
            }
        }
    for (int k = 0; k < c->n_series; k++)
        for (int j = 0; j < c->n_drawn[k]; j++) {
            double px = plot__occ_x(occ, c->drawn[k][j].x), py = plot__occ_y(occ, c->drawn[k][j].y * c->yscale);
            int chars = (int)strlen(c->label_txt[k][j]);
            c->spot[k][j] = plot__label_spot(occ, occ->panel[0], px, py, plot__text_w(chars, 7), 0.1, label_spots,
                                             N_LABEL_SPOTS);
            const struct plot__spot *ls = &label_spots[c->spot[k][j]];
            plot__occ_text(occ, px + ls->dx, py + ls->dy, chars, 7, ls->just);
        }
    return true;
}

/* Place: the axes' ranges, the panel, the key and the points' labels. The key goes where no line,
 * point or point label lies; when nowhere, the panel gets room above the data (up to 1.65 times
 * the largest value), and only then a strip under it. */
static void place(const struct plot__fig *f, struct sc_fig *c)
{
    if (c->ymax <= 0)
        c->ymax = 1;
    /* Large throughputs are shown in thousands, so tick labels stay short. */
    c->yscale = c->ymax >= 1e4 ? 1e-3 : 1;
    c->ymax *= c->yscale;
    c->tick = plot__tick(c->ymax, 5);
    /* The x axis as drawn: log10 for model sizes spanning 4x, log2 for GPU counts spanning 4x, else
     * linear. */
    double xmin = c->xmin, xmax = c->xmax;
    c->spans = xmax >= 4 * xmin && xmin > 0;
    if (c->spans) {
        c->xr0 = xmin / (c->gpus ? 1.25 : 1.6);
        c->xr1 = xmax * (c->gpus ? 1.25 : 1.6);
    } else if (c->gpus) {
        c->xr0 = xmin - fmax((xmax - xmin) * 0.12, 0.5);
        c->xr1 = xmax + fmax((xmax - xmin) * 0.12, 0.5);
    } else {
        double pad = xmax > xmin ? (xmax - xmin) * 0.1 : fmax(xmax * 0.1, 1);
        c->xr0 = fmax(0, xmin - pad);
        c->xr1 = xmax + pad;
    }
    plot__key_init(&c->key, c->n_series + c->gpus);
    for (int k = 0; k < c->n_series; k++) {
        char t[160];
        snprintf(t, sizeof t, "policy %s, schedule %s", c->s[c->first_of[k]].policy, c->s[c->first_of[k]].schedule);
        plot__key_title(&c->key, k, t);
    }
    if (c->gpus)
        plot__key_title(&c->key, c->n_series, "ideal scaling (dotted, per series)");
    c->g = (struct plot__grid){1, 1, 0, 0.55, 0.15, 0.08, 0.36, f->o->title && *f->o->title ? 0.25 : 0, 0};
    c->g.height_in = (f->o->width == PLOT_DOUBLE ? 2.6 : 2.2) + c->g.title_in;
    int at = plot__key_place(f, &c->g, &c->key, fill_panel, c);
    plot__room_top(c->ymax, c->tick, 1.15, INFINITY, at, &c->ytop);
}

/* The x axis: model sizes on a log axis with round ticks, GPU counts with ticks at the values
 * drawn (log2 when they span 4x), else linear. */
static void emit_xaxis(struct plot__fig *f, const struct sc_fig *c)
{
    FILE *gp = f->gp;
    double xmin = c->xmin, xmax = c->xmax;
    if (!c->gpus && xmax >= 4 * xmin && xmin > 0) {
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
    } else if (c->gpus || (xmax >= 4 * xmin && xmin > 0)) {
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
        for (int i = 0; i < c->ns; i++)
            xs[nx++] = c->pts[i].x;
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
}

/* Emit: the script, from what place decided. */
static void emit(struct plot__fig *f, struct sc_fig *c)
{
    plot__gp_preamble(f, c->g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    plot__panel(f, &c->g, 0, 0);
    plot__ylabel(f, &c->g, 0, 0, !c->tokens ? "step time (s)"
                                 : c->per_gpu ? (c->yscale < 1 ? "tokens/s per GPU (thousands)" : "tokens/s per GPU")
                                 : c->yscale < 1 ? "tokens/s, all GPUs (thousands)" : "tokens/s, all GPUs");
    fprintf(gp, "set xlabel '%s' offset 0,0.9\nset yrange [0:%g]\nset ytics %g format '%s'\nunset key\nys = %g\n",
            c->gpus ? "GPUs" : "model parameters (billions)", c->ytop, c->tick, plot__tick_format(c->tick), c->yscale);
    emit_xaxis(f, c);
    /* The points' labels, where the placement put them (offsets in inches of the figure). */
    for (int k = 0; k < c->n_series; k++)
        for (int j = 0; j < c->n_drawn[k]; j++) {
            const struct plot__spot *ls = &label_spots[c->spot[k][j]];
            fprintf(gp, "set label %d ", 300 + k * PLOT_MAX_IN + j);
            plot__gp_str(f, "label", c->label_txt[k][j]);
            fprintf(gp, " at %g, %.6f %s offset screen %.4f, screen %.4f font ',%.3g' tc lt %d front\n",
                    c->drawn[k][j].x, c->drawn[k][j].y * c->yscale,
                    ls->just > 0 ? "right" : ls->just < 0 ? "left" : "center", ls->dx / plot__width_in(f),
                    ls->dy / c->g.height_in, plot__pt(f, 7), k + 1);
        }
    fputs("plot ", gp);
    for (int k = 0; k < c->n_series; k++) {
        fprintf(gp, "%sdatafile index %d using 1:($2*ys) with linespoints lt %d", k ? ", \\\n     " : "", k, k + 1);
        if (c->gpus)
            fprintf(gp, ", \\\n     datafile index %d using 1:($5*ys) with lines lt %d dt 3 lw 0.8", k, k + 1);
    }
    fputs("\n", gp);
    plot__key_begin(f, &c->g, &c->key);
    if (c->gpus) {
        plot__key_entry(f, &c->g, &c->key, c->n_series);
        fputs("NaN with lines lc rgb '#000000' dt 3 lw 0.8 title 'ideal scaling (dotted, per series)'\n", gp);
    }
    for (int k = 0; k < c->n_series; k++) {
        char t[160];
        snprintf(t, sizeof t, "policy %s, schedule %s", c->s[c->first_of[k]].policy, c->s[c->first_of[k]].schedule);
        plot__key_entry(f, &c->g, &c->key, k);
        fprintf(gp, "NaN with linespoints lt %d title ", k + 1);
        plot__gp_str(f, "policy", t);
        fputc('\n', gp);
    }
    fputs("unset multiplot\n", gp);
}

int plot__scaling(struct plot__fig *f, struct rl_err *e)
{
    struct sc_fig *c = calloc(1, sizeof *c);
    if (!c)
        return rl_errf(e, RL_ENOMEM, "plot scaling: out of memory");
    int rc = gather(f, c, e);
    if (!rc) {
        place(f, c);
        emit(f, c);
        plot__free_sweeps(c->s, c->ns);
    }
    free(c);
    return rc;
}
