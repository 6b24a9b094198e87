/* plots/kinds.c — the figures: each reads its inputs, writes the .dat blocks and the gnuplot
 * script that draws them. Values go into the .dat in display units (GiB = 1024^3, s, ms) with
 * enough digits to be exact at print size; the script holds only layout and style. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_impl.h"
#include "traces/trace.h"

#define GIB(b) ((double)(b) / RL_GIB)

static bool is_staircase(const char *policy)
{
    return strncmp(policy, "deepspeed", 9) == 0;
}

/* Reads every input as a sweep; on error frees what was read. */
static int read_sweeps(struct plot__fig *f, struct plot__sweep *s, struct rl_err *e)
{
    for (int i = 0; i < f->o->n_in; i++) {
        int rc = plot__sweep_read(f->o->in[i], &s[i], e);
        if (rc) {
            for (int k = 0; k < i; k++)
                plot__sweep_free(&s[k]);
            return rc;
        }
    }
    return 0;
}

static void free_sweeps(struct plot__sweep *s, int n)
{
    for (int i = 0; i < n; i++)
        plot__sweep_free(&s[i]);
}

/* "a, b" from the distinct values of a field over the sweeps. */
static void join_distinct(char *buf, size_t n, const struct plot__sweep *s, int ns, size_t field_off)
{
    buf[0] = 0;
    for (int i = 0; i < ns; i++) {
        const char *v = (const char *)&s[i] + field_off;
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen |= strcmp(v, (const char *)&s[k] + field_off) == 0;
        if (!seen)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? ", " : "", v);
    }
}

static void sweep_meta(struct plot__fig *f, const struct plot__sweep *s, int ns)
{
    char model[512], hw[256], pol[256], sch[256], mb[64] = "";
    join_distinct(model, sizeof model, s, ns, offsetof(struct plot__sweep, model));
    join_distinct(hw, sizeof hw, s, ns, offsetof(struct plot__sweep, hardware));
    join_distinct(pol, sizeof pol, s, ns, offsetof(struct plot__sweep, policy));
    join_distinct(sch, sizeof sch, s, ns, offsetof(struct plot__sweep, schedule));
    for (int i = 0; i < ns; i++) {
        if (!s[i].micro_batch)
            continue;
        char one[24];
        snprintf(one, sizeof one, "%" PRId64, s[i].micro_batch);
        if (!strstr(mb, one))   /* distinct values; good enough for a header */
            snprintf(mb + strlen(mb), sizeof mb - strlen(mb), "%s%s", mb[0] ? ", " : "", one);
        if (s[i].seq_len && i == 0)
            snprintf(mb + strlen(mb), sizeof mb - strlen(mb), " (sequence %" PRId64 ")", s[i].seq_len);
    }
    struct plot__meta m = {model, hw, pol, sch, mb[0] ? mb : NULL};
    plot__dat_header(f, &m);
}

/* Does row w fit: the sweep's own verdict, or GPU memory within --gpu-mem (host as the sweep says). */
static bool row_fits(const struct plot__fig *f, const struct plot__sweep_row *w)
{
    if (f->o->gpu_mem_bytes > 0)
        return w->gpu_bytes <= f->o->gpu_mem_bytes && w->fits_host;
    return w->fits_gpu && w->fits_host;
}

/* The fastest row that fits (ties: the smaller ratio, i.e. the first); -1 when none fits. */
static int best_fit(const struct plot__fig *f, const struct plot__sweep *s)
{
    int best = -1;
    for (int i = 0; i < s->n_rows; i++)
        if (row_fits(f, &s->rows[i]) && (best < 0 || s->rows[i].step_ns < s->rows[best].step_ns))
            best = i;
    return best;
}

static void gib_label(char *buf, size_t n, int64_t bytes)
{
    double g = GIB(bytes);
    if (fabs(g - llround(g)) < 0.005)
        snprintf(buf, n, "%.0f GiB", g);
    else
        snprintf(buf, n, "%.2f GiB", g);
}

/* ---- 1. memory --------------------------------------------------------------------------------------
 * Left/top: honored against requested ratio (staircases as steps, exact as a line, the identity
 * dotted). Right/bottom: GPU and host memory per rank against requested ratio. */
int plot__memory(struct plot__fig *f, struct rl_err *e)
{
    int ns = f->o->n_in;
    struct plot__sweep s[PLOT_MAX_IN];
    int rc = read_sweeps(f, s, e);
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
    sweep_meta(f, s, ns);
    for (int i = 0; i < ns; i++) {
        char what[512];
        snprintf(what, sizeof what, "%s: policy %s, schedule %s", s[i].name, s[i].policy, s[i].schedule);
        plot__block(f, what);
        fprintf(f->dat, "# requested_ratio\thonored_ratio\tgpu_gib_per_rank\t%s\tfits\n",
                host_rank ? "host_gib_per_rank" : "host_gib_per_node");
        for (int k = 0; k < s[i].n_rows; k++) {
            const struct plot__sweep_row *w = &s[i].rows[k];
            double host = GIB(host_rank ? w->host_rank_bytes : w->host_node_bytes);
            fprintf(f->dat, "%.4f\t%.6f\t%.4f\t%.4f\t%d\n", w->requested, w->honored, GIB(w->gpu_bytes), host,
                    row_fits(f, w));
            ymax = fmax(ymax, fmax(GIB(w->gpu_bytes), host));
        }
    }
    ymax = fmax(ymax, GIB(cap));
    double tick = plot__tick(ymax, 5);
    double top = ceil(ymax * 1.04 / tick) * tick;

    /* One key for both panels: colour and point type name the policy, the dash type the memory. */
    bool dbl = f->o->width == PLOT_DOUBLE;
    int entries = ns + 3 + (cap > 0), longest = 19;
    for (int i = 0; i < ns; i++)
        longest = (int)fmax(longest, (double)strlen(s[i].policy));
    struct plot__grid g = {dbl ? 1 : 2, dbl ? 2 : 1, 0, 0.5, 0.15, 0.08, 0.42,
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
        bool st = is_staircase(s[i].policy);
        fprintf(gp, ", \\\n     '%s' index %d using 1:2 with %s lt %d", f->dat_name, i, st ? "steps" : "lines",
                i + 1);
        fprintf(gp, ", \\\n     '%s' index %d using 1:2 with points lt %d", f->dat_name, i, i + 1);
    }
    fputs("\n", gp);
    /* panel b */
    plot__panel(f, &g, dbl ? 0 : 1, dbl ? 1 : 0);
    plot__ylabel(f, &g, dbl ? 0 : 1, dbl ? 1 : 0, host_rank ? "memory per rank (GiB)" : "memory per rank, host per node (GiB)");
    fprintf(gp, "set yrange [0:%g]\nset ytics 0, %g, %g format '%s'\n", top, tick, top, plot__tick_format(tick));
    fputs("set label 1 '(b)' at graph 0.04, graph 0.92 left\n", gp);
    fputs("plot ", gp);
    for (int i = 0; i < ns; i++) {
        const char *how = is_staircase(s[i].policy) ? "steps" : "lines";
        for (int m = 0; m < 2; m++) {
            fprintf(gp, "%s'%s' index %d using 1:%d with %s lt %d dt %d", i || m ? ", \\\n     " : "",
                    f->dat_name, i, 3 + m, how, i + 1, m ? 2 : 1);
            fprintf(gp, ", \\\n     '%s' index %d using 1:%d with points lt %d", f->dat_name, i, 3 + m, i + 1);
        }
    }
    if (cap > 0)
        fprintf(gp, ", \\\n     %.4f with lines lc rgb '#000000' dt 3 lw 1", GIB(cap));
    fputs("\n", gp);
    struct plot__key k;
    plot__key_begin(f, &g, entries, longest, &k);
    int ke = 0;
    for (int i = 0; i < ns; i++) {
        plot__key_entry(f, &g, &k, ke++);
        fprintf(gp, "NaN with linespoints lt %d title ", i + 1);
        plot__gp_str(gp, s[i].policy);
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
        gib_label(c, sizeof c, cap);
        snprintf(t, sizeof t, "GPU has %s", c);
        fputc('\n', gp);
        plot__key_entry(f, &g, &k, ke++);
        fputs("NaN with lines lc rgb '#000000' dt 3 lw 1 title ", gp);
        plot__gp_str(gp, t);
    }
    fputs("\nunset multiplot\n", gp);
    free_sweeps(s, ns);
    return 0;
}

/* ---- 2. time -----------------------------------------------------------------------------------------
 * One panel per sweep (schedule): bars of exposed time per phase stacked to the step time, the
 * ratios that do not fit shaded, the fastest that fits marked. */
int plot__time(struct plot__fig *f, struct rl_err *e)
{
    int ns = f->o->n_in;
    if (ns > 4)
        return rl_errf(e, RL_EINVAL, "--in: %d sweeps; plot time draws 1 to 4 (one panel each)", ns);
    struct plot__sweep s[PLOT_MAX_IN];
    int rc = read_sweeps(f, s, e);
    if (rc)
        return rc;
    for (int i = 0; i < ns; i++)
        if (!s[i].has_phases) {
            rc = rl_errf(e, RL_EINVAL, "%s: a sweep CSV has no per-phase times; plot time needs `ratiolab sweep "
                         "--json`", f->o->in[i]);
            free_sweeps(s, ns);
            return rc;
        }
    /* The phases drawn: those with exposed time somewhere, in the simulator's order (union). */
    char names[PLOT__PH_MAX + 1][32];
    int n_names = 0;
    for (int i = 0; i < ns; i++)
        for (int p = 0; p < s[i].n_phases; p++) {
            bool used = false, have = false;
            for (int k = 0; k < s[i].n_rows; k++)
                used |= s[i].rows[k].exposed_ns[p] > 0;
            for (int q = 0; q < n_names; q++)
                have |= strcmp(names[q], s[i].phase[p]) == 0;
            if (used && !have && n_names < PLOT__PH_MAX)
                snprintf(names[n_names++], sizeof names[0], "%s", s[i].phase[p]);
        }
    snprintf(names[n_names++], sizeof names[0], "idle");
    sweep_meta(f, s, ns);
    double ymax = 0;
    int best[PLOT_MAX_IN];
    for (int i = 0; i < ns; i++) {
        char what[512];
        snprintf(what, sizeof what, "%s: schedule %s, policy %s; phase columns are cumulative (each the top of "
                 "its band), the last equals the step time", s[i].name, s[i].schedule, s[i].policy);
        plot__block(f, what);
        fputs("# requested_ratio\thonored_ratio\tstep_s\tfits", f->dat);
        for (int q = 0; q < n_names; q++)
            fprintf(f->dat, "\ttop_%s_s", names[q]);
        fputc('\n', f->dat);
        for (int k = 0; k < s[i].n_rows; k++) {
            const struct plot__sweep_row *w = &s[i].rows[k];
            fprintf(f->dat, "%.4f\t%.6f\t%.6f\t%d", w->requested, w->honored, (double)w->step_ns * 1e-9,
                    row_fits(f, w));
            int64_t cum = 0;
            for (int q = 0; q < n_names; q++) {
                if (q == n_names - 1) {
                    cum += w->idle_ns;
                } else {
                    for (int p = 0; p < s[i].n_phases; p++)
                        if (strcmp(s[i].phase[p], names[q]) == 0)
                            cum += w->exposed_ns[p];
                }
                fprintf(f->dat, "\t%.6f", (double)cum * 1e-9);
            }
            fputc('\n', f->dat);
            ymax = fmax(ymax, (double)fmax((double)cum, (double)w->step_ns) * 1e-9);
        }
        best[i] = best_fit(f, &s[i]);
    }
    fprintf(f->dat, "\n\n# [summary] fastest ratio that fits%s\n", f->o->gpu_mem_bytes > 0 ? " --gpu-mem" : "");
    for (int i = 0; i < ns; i++) {
        if (best[i] < 0)
            fprintf(f->dat, "# %s: none fits\n", s[i].name);
        else
            fprintf(f->dat, "# %s: requested %.4f, step %.6f s\n", s[i].name, s[i].rows[best[i]].requested,
                    (double)s[i].rows[best[i]].step_ns * 1e-9);
    }

    bool dbl = f->o->width == PLOT_DOUBLE;
    int cols = dbl ? ns : 1, rows = dbl ? 1 : ns;
    double panel_h = dbl ? 2.2 : 1.9;
    struct plot__grid g = {rows, cols, 0, 0.5, 0.15, ns > 1 ? 0.22 : 0.08, 0.42,
                           f->o->title && *f->o->title ? 0.25 : 0, plot__key_height(f, n_names + 1, 15)};
    g.height_in = rows * panel_h + g.title_in + g.key_in;
    plot__gp_preamble(f, g.height_in);
    FILE *gp = f->gp;
    double tick = plot__tick(ymax, 5);
    double top = ceil(ymax * 1.25 / tick) * tick;
    char gpu_mem[40] = "";
    if (f->o->gpu_mem_bytes > 0)
        gib_label(gpu_mem, sizeof gpu_mem, f->o->gpu_mem_bytes);
    else if (s[0].gpu_capacity_bytes > 0)
        gib_label(gpu_mem, sizeof gpu_mem, s[0].gpu_capacity_bytes);
    plot__multiplot(f);
    fprintf(gp, "set style fill solid 1.0 noborder\nset boxwidth 0.8 relative\n"
                "set xlabel 'requested ratio' offset 0,0.9\nset xrange [-0.04:1.04]\nset xtics 0.2 format '%%.1f'\n"
                "set yrange [0:%g]\nset ytics 0, %g, %g format '%s'\nunset key\n",
            top, tick, ceil(ymax / tick) * tick, plot__tick_format(tick));
    for (int i = 0; i < ns; i++) {
        plot__panel(f, &g, dbl ? 0 : i, dbl ? i : 0);
        fputs("unset object\nunset arrow\nunset label\n", gp);
        plot__ylabel(f, &g, dbl ? 0 : i, dbl ? i : 0, "step time (s)");
        if (ns > 1) {
            char t[160];
            snprintf(t, sizeof t, "schedule %s", s[i].schedule);
            fputs("set title ", gp);
            plot__gp_str(gp, t);
            fputs("\n", gp);
        }
        /* Shade runs of ratios that do not fit, half a sample beyond each end. */
        const struct plot__sweep *sw = &s[i];
        int obj = 1;
        for (int k = 0; k < sw->n_rows;) {
            if (row_fits(f, &sw->rows[k])) {
                k++;
                continue;
            }
            int j = k;
            while (j + 1 < sw->n_rows && !row_fits(f, &sw->rows[j + 1]))
                j++;
            double lo = sw->rows[k].requested - (k > 0 ? (sw->rows[k].requested - sw->rows[k - 1].requested) / 2 : 0.04);
            double hi = sw->rows[j].requested +
                        (j + 1 < sw->n_rows ? (sw->rows[j + 1].requested - sw->rows[j].requested) / 2 : 0.04);
            fprintf(gp, "set object %d rect from %.4f, graph 0 to %.4f, graph 1 fc rgb '#ececec' fs solid 1.0 "
                        "noborder behind\n", obj++, lo, hi);
            k = j + 1;
        }
        if (best[i] >= 0) {
            /* The label sits at the top of the panel, clear of every bar; an arrow points down to
             * the bar. */
            const struct plot__sweep_row *w = &sw->rows[best[i]];
            double x = w->requested, y = (double)w->step_ns * 1e-9;
            const char *just = x > 0.7 ? "right" : x < 0.3 ? "left" : "center";
            double lx = x > 0.7 ? x + 0.03 : x < 0.3 ? x - 0.03 : x;
            fprintf(gp, "set arrow 1 from %.4f, graph 0.86 to %.4f, first %.6f head size screen 0.012,25 filled "
                        "lw 1.2 lc rgb '#000000' front\n", x, x, y + top * 0.015);
            fprintf(gp, "set label 2 'fastest that fits: %.2f (%.2f s)' at %.4f, graph 0.93 %s front\n",
                    w->requested, y, lx, just);
        } else {
            fputs("set label 2 'no ratio fits' at graph 0.5, graph 0.93 center front\n", gp);
        }
        fputs("plot ", gp);
        /* Tallest band first: each later band covers the lower part of the ones before it. */
        for (int q = n_names - 1; q >= 0; q--) {
            int pat;
            const char *c = plot__phase_color(names[q], q, &pat);
            if (pat)   /* hatched bands get a white base, so the band below does not show through */
                fprintf(gp, "'%s' index %d using 1:%d with boxes fc rgb '#ffffff' fs solid 1.0, \\\n     ",
                        f->dat_name, i, 5 + q);
            fprintf(gp, "'%s' index %d using 1:%d with boxes fc rgb '%s' ", f->dat_name, i, 5 + q, c);
            if (pat)
                fprintf(gp, "fs pattern %d noborder", pat);
            else
                fputs("fs solid 1.0", gp);
            fputs(q ? ", \\\n     " : "\n", gp);
        }
    }
    /* The key strip: one entry per phase and one for the shading. */
    struct plot__key k;
    plot__key_begin(f, &g, n_names + 1, 15, &k);
    for (int q = 0; q < n_names; q++) {
        int pat;
        const char *c = plot__phase_color(names[q], q, &pat);
        plot__key_entry(f, &g, &k, q);
        fprintf(gp, "NaN with boxes fc rgb '%s' ", c);
        if (pat)
            fprintf(gp, "fs pattern %d border lc rgb '%s'", pat, c);
        else
            fputs("fs solid 1.0", gp);
        fputs(" title ", gp);
        plot__gp_str(gp, names[q]);
        fputc('\n', gp);
    }
    plot__key_entry(f, &g, &k, n_names);
    char t[96];
    snprintf(t, sizeof t, "%s%s", gpu_mem[0] ? "over " : "does not fit", gpu_mem);
    fputs("NaN with boxes fc rgb '#ececec' fs solid 1.0 title ", gp);
    plot__gp_str(gp, t);
    fputs("\nunset multiplot\n", gp);
    free_sweeps(s, ns);
    return 0;
}

int plot__timeline(struct plot__fig *f, struct rl_err *e) { (void)f; return rl_errf(e, RL_EINTERNAL, "todo"); }
int plot__parity(struct plot__fig *f, struct rl_err *e) { (void)f; return rl_errf(e, RL_EINTERNAL, "todo"); }
int plot__scaling(struct plot__fig *f, struct rl_err *e) { (void)f; return rl_errf(e, RL_EINTERNAL, "todo"); }
int plot__monitor(struct plot__fig *f, struct rl_err *e) { (void)f; return rl_errf(e, RL_EINTERNAL, "todo"); }
