/* plots/kind_memory.c — `ratiolab plot memory`: honored ratio and GPU / host memory per rank
 * against the requested ratio. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plots/plot_impl.h"

/* ---- 1. memory --------------------------------------------------------------------------------------
 * Left/top: honored against requested ratio (staircases as steps, exact as a line, the identity
 * dotted). Right/bottom: GPU and host memory per rank against requested ratio. */
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
        fprintf(f->dat, "# requested_ratio\thonored_ratio\tgpu_gib_per_rank\t%s\tfits\n",
                host_rank ? "host_gib_per_rank" : "host_gib_per_node");
        for (int k = 0; k < s[i].n_rows; k++) {
            const struct plot__sweep_row *w = &s[i].rows[k];
            double host = PLOT__GIB(host_rank ? w->host_rank_bytes : w->host_node_bytes);
            fprintf(f->dat, "%.4f\t%.6f\t%.4f\t%.4f\t%d\n", w->requested, w->honored, PLOT__GIB(w->gpu_bytes), host,
                    plot__row_fits(f, w));
            ymax = fmax(ymax, fmax(PLOT__GIB(w->gpu_bytes), host));
        }
    }
    ymax = fmax(ymax, PLOT__GIB(cap));
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
        bool st = plot__is_staircase(s[i].policy);
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
        const char *how = plot__is_staircase(s[i].policy) ? "steps" : "lines";
        for (int m = 0; m < 2; m++) {
            fprintf(gp, "%sdatafile index %d using 1:%d with %s lt %d dt %d", i || m ? ", \\\n     " : "",
                    i, 3 + m, how, i + 1, m ? 2 : 1);
            fprintf(gp, ", \\\n     datafile index %d using 1:%d with points lt %d", i, 3 + m, i + 1);
        }
    }
    if (cap > 0)
        fprintf(gp, ", \\\n     %.4f with lines lc rgb '#000000' dt 3 lw 1", PLOT__GIB(cap));
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
        plot__gib_label(c, sizeof c, cap);
        snprintf(t, sizeof t, "GPU capacity %s", c);
        fputc('\n', gp);
        plot__key_entry(f, &g, &k, ke++);
        fputs("NaN with lines lc rgb '#000000' dt 3 lw 1 title ", gp);
        plot__gp_str(f, "label", t);
    }
    fputs("\nunset multiplot\n", gp);
    plot__free_sweeps(s, ns);
    return 0;
}
