/* plots/kind_memory.c — `ratiolab plot memory`: honored ratio and GPU / host memory per rank
 * against the requested ratio. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plots/plot_impl.h"

/* ---- 1. memory --------------------------------------------------------------------------------------
 * Left/top: honored against requested ratio (staircases as steps, exact as a line, the identity
 * dotted). Right/bottom: GPU and host memory per rank against requested ratio. */
/* One series of column col: a continuous policy as a line through its points; a staircase
 * (DeepSpeed's rule) as its treads only (from each ratio to the next), so no riser looks like data. */
static void series(struct plot__fig *f, int i, int col, int dash, bool staircase)
{
    if (staircase)
        fprintf(f->gp, ", \\\n     datafile index %d using 1:%d:($6-$1):(0) with vectors nohead lt %d dt %d", i, col,
                i + 1, dash);
    else
        fprintf(f->gp, ", \\\n     datafile index %d using 1:%d with lines lt %d dt %d", i, col, i + 1, dash);
    fprintf(f->gp, ", \\\n     datafile index %d using 1:%d with points lt %d", i, col, i + 1);
}

/* Sweep i's key entry: what tells it apart from the other sweeps (plot__sweep_parts, joined by
 * ", "), a single sweep's policy. Written as one gnuplot string per part, joined in gnuplot, so
 * every part goes through plot__gp_str; title_out gets the text for the key's layout. */
static void key_name(struct plot__fig *f, const struct plot__sweep *s, int ns, int i, char *title_out, size_t n)
{
    char part[PLOT__ATTR_COUNT][PLOT__PART_MAX];
    const char *field[PLOT__ATTR_COUNT];
    int np = 1;
    if (ns == 1) {
        snprintf(part[0], sizeof part[0], "%s", s[i].policy);
        field[0] = "policy";
    } else {
        np = plot__sweep_parts(&s[i], plot__sweep_differ(s, ns), part, field);
    }
    if (title_out) {
        title_out[0] = 0;
        for (int k = 0; k < np; k++)
            snprintf(title_out + strlen(title_out), n - strlen(title_out), "%s%s", k ? ", " : "", part[k]);
        return;
    }
    for (int k = 0; k < np; k++) {
        if (k)
            fputs(" . \", \" . ", f->gp);
        plot__gp_str(f, field[k], part[k]);
    }
}

int plot__memory(struct plot__fig *f, struct rl_err *e)
{
    int ns = f->o->n_in;
    struct plot__sweep s[PLOT_MAX_IN];
    int rc = plot__read_sweeps(f, s, e);
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
    plot__sweep_meta(f, s, ns);
    for (int i = 0; i < ns; i++) {
        char what[512];
        snprintf(what, sizeof what, "%s: policy %s, schedule %s", s[i].name, s[i].policy, s[i].schedule);
        plot__block(f, what);
        fprintf(f->dat, "# " RL_KEY_REQUESTED_RATIO "\t" RL_KEY_HONORED_RATIO "\tgpu_gib_per_rank\t%s\tfits\tnext_" RL_KEY_REQUESTED_RATIO "\n",
                host_rank ? "host_gib_per_rank" : "host_gib_per_node");
        for (int k = 0; k < s[i].n_rows; k++) {
            const struct plot__sweep_row *w = &s[i].rows[k];
            double host = PLOT__GIB(host_rank ? w->host_rank_bytes : w->host_node_bytes);
            double next = k + 1 < s[i].n_rows ? s[i].rows[k + 1].requested : w->requested;
            fprintf(f->dat, "%.4f\t%.6f\t%.4f\t%.4f\t%d\t%.4f\n", w->requested, w->honored, PLOT__GIB(w->gpu_bytes),
                    host, plot__row_fits(f, w), next);
            ymax = fmax(ymax, fmax(PLOT__GIB(w->gpu_bytes), host));
        }
    }
    ymax = fmax(ymax, PLOT__GIB(cap));
    double tick = plot__tick(ymax, 5);
    double top = ceil(ymax * 1.22 / tick) * tick;   /* room above the data for the labels */

    /* One key for both panels: colour and point type name the policy, the dash type the memory.
     * It goes where no data lie in either panel (a strip under them when nowhere). */
    bool dbl = f->o->width == PLOT_DOUBLE;
    struct plot__key k;
    plot__key_init(&k, ns + 1);
    for (int i = 0; i < ns; i++) {
        char name[PLOT__ATTR_COUNT * (PLOT__PART_MAX + 2)];
        key_name(f, s, ns, i, name, sizeof name);
        plot__key_title(&k, i, name);
    }
    plot__key_title(&k, ns, "honored = requested");
    struct plot__grid g = {dbl ? 1 : 2, dbl ? 2 : 1, 0, 0.5, 0.15, 0.08, 0.36, f->o->title && *f->o->title ? 0.25 : 0, 0};
    g.height_in = g.rows * (dbl ? 2.2 : 1.8) + g.title_in;
    struct plot__occ occ = {0};
    for (int pn = 0; pn < 2; pn++) {
        plot__occ_grid_panel(&occ, f, &g, dbl ? 0 : pn, dbl ? pn : 0, 0, 1, 0, pn ? top : 1.02, false, false);
        if (pn == 0) {
            plot__occ_seg(&occ, 0, 0, 1, 1, 0.03);   /* the identity band */
            plot__occ_text(&occ, plot__occ_gx(&occ, 0.04), plot__occ_gy(&occ, 0.92), 3, 9, -1);
        } else {
            plot__occ_text(&occ, plot__occ_gx(&occ, 0.04), plot__occ_gy(&occ, 0.92), 28, 9, -1);
            if (cap > 0) {
                plot__occ_seg(&occ, 0, PLOT__GIB(cap), 1, PLOT__GIB(cap), 0.01);
                plot__occ_text(&occ, plot__occ_gx(&occ, 0.98), plot__occ_y(&occ, PLOT__GIB(cap)) + 0.07, 20, 8, 1);
            }
        }
        for (int i = 0; i < ns; i++)
            for (int m = 0; m < (pn ? 2 : 1); m++)
                for (int r = 0; r < s[i].n_rows; r++) {
                    const struct plot__sweep_row *w = &s[i].rows[r], *nx = r + 1 < s[i].n_rows ? w + 1 : w;
                    double v = pn == 0 ? w->honored : PLOT__GIB(m ? (host_rank ? w->host_rank_bytes : w->host_node_bytes) : w->gpu_bytes);
                    double vn = pn == 0 ? nx->honored
                                        : PLOT__GIB(m ? (host_rank ? nx->host_rank_bytes : nx->host_node_bytes) : nx->gpu_bytes);
                    plot__occ_seg(&occ, w->requested, v, w->requested, v, 0.04);   /* the point */
                    plot__occ_seg(&occ, w->requested, v, nx->requested, plot__is_staircase(s[i].policy) ? v : vn, 0.015);
                }
    }
    plot__key_settle(f, &g, &k, &occ);
    plot__occ_free(&occ);
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    plot__multiplot(f);
    fputs("set xlabel 'requested ratio' offset 0,0.9\nset xrange [0:1]\nset xtics 0.2 format '%.1f'\nunset key\n", gp);
    /* panel a */
    plot__panel(f, &g, 0, 0);
    plot__ylabel(f, &g, 0, 0, "honored ratio");
    fputs("set yrange [0:1.02]\nset ytics 0, 0.2, 1 format '%.1f'\n", gp);
    fputs("set label 1 '(a)' at graph 0.04, graph 0.92 left\n", gp);
    /* The identity is a wide light band under the data, so an `exact` line on it stays visible
     * and so does the band. */
    fputs("plot x with lines lc rgb '#c8c8c8' dt 1 lw 5", gp);
    for (int i = 0; i < ns; i++)
        series(f, i, 2, 1, plot__is_staircase(s[i].policy));
    fputs("\n", gp);
    /* panel b */
    plot__panel(f, &g, dbl ? 0 : 1, dbl ? 1 : 0);
    plot__ylabel(f, &g, dbl ? 0 : 1, dbl ? 1 : 0, host_rank ? "memory per rank (GiB)" : "memory per rank, host per node (GiB)");
    fprintf(gp, "set yrange [0:%g]\nset ytics 0, %g, %g format '%s'\n", top, tick, top, plot__tick_format(tick));
    fputs("set label 1 '(b) solid: GPU, dashed: host' at graph 0.04, graph 0.92 left\n", gp);
    if (cap > 0) {   /* the capacity line is named where it is drawn */
        char t[64], c[32];
        plot__gib_label(c, sizeof c, cap);
        snprintf(t, sizeof t, "GPU capacity %s", c);
        fprintf(gp, "set label 2 at graph 0.98, first %.4f right offset 0,0.5 font ',%.3g' ", PLOT__GIB(cap), plot__pt(f, 8));
        plot__gp_str(f, "label", t);
        fputc('\n', gp);
    }
    fputs("plot NaN notitle", gp);
    for (int i = 0; i < ns; i++)
        for (int m = 0; m < 2; m++)
            series(f, i, 3 + m, m ? 2 : 1, plot__is_staircase(s[i].policy));
    if (cap > 0)
        fprintf(gp, ", \\\n     %.4f with lines lc rgb '#000000' dt 3 lw 1", PLOT__GIB(cap));
    fputs("\n", gp);
    plot__key_begin(f, &g, &k);
    int ke = 0;
    for (int i = 0; i < ns; i++) {
        plot__key_entry(f, &g, &k, ke++);
        fprintf(gp, "NaN with linespoints lt %d dt 1 title ", i + 1);
        key_name(f, s, ns, i, NULL, 0);
        fputc('\n', gp);
    }
    plot__key_entry(f, &g, &k, ke++);
    fputs("NaN with lines lc rgb '#c8c8c8' dt 1 lw 5 title 'honored = requested'", gp);
    fputs("\nunset multiplot\n", gp);
    plot__free_sweeps(s, ns);
    return 0;
}
