/* plots/plot.c — options, file names, the shared .dat header and .gp preamble, keys and panels:
 * what every figure writer (kind_*.c) uses. The kinds' table and the dispatch to them are
 * write.c's, so no writer calls back into the file that calls it. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plots/plot_impl.h"
#include "traces/layout.h"   /* the phase table: groups, colours, patterns */

void plot_opts_init(struct plot_opts *o)
{
    memset(o, 0, sizeof *o);
    o->width = PLOT_SINGLE;
    o->version = "unknown";
    o->band_pct = 10.0;
    o->phase_exposed = true;   /* busy time of an overlapped phase is not what the step pays */
    o->ratio = -1;
}

static const char *ext_of(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? dot : NULL;
}

int plot_format_of(const char *path, enum plot_format *f, struct rl_err *e)
{
    const char *x = ext_of(path ? path : "");
    char low[8] = {0};
    for (int i = 0; x && x[i] && i < 7; i++)
        low[i] = (char)tolower((unsigned char)x[i]);
    if (x && strlen(x) < 8) {
        if (strcmp(low, ".pdf") == 0)
            return *f = PLOT_PDF, 0;
        if (strcmp(low, ".svg") == 0)
            return *f = PLOT_SVG, 0;
        if (strcmp(low, ".png") == 0)
            return *f = PLOT_PNG, 0;
    }
    return rl_errf(e, RL_EINVAL, "out: '%s' has no figure extension; allowed: .pdf, .svg (papers), .png (screens)",
                   path ? path : "");
}

int plot_files_of(const char *out, struct plot_files *f, struct rl_err *e)
{
    enum plot_format fmt;
    int rc = plot_format_of(out, &fmt, e);
    if (rc)
        return rc;
    size_t stem = (size_t)(ext_of(out) - out);
    if (stem + 4 >= sizeof f->dat)
        return rl_errf(e, RL_EINVAL, "out: path of %zu characters; at most %zu allowed", strlen(out),
                       sizeof f->dat - 5);
    snprintf(f->dat, sizeof f->dat, "%.*s.dat", (int)stem, out);
    snprintf(f->gp, sizeof f->gp, "%.*s.gp", (int)stem, out);
    return 0;
}

/* ---- shared writers ------------------------------------------------------------------------------- */
double plot__tick(double max, int n)
{
    static const double steps[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 20, 25, 50, 100, 200, 500,
                                   1000, 2000, 5000, 10000};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (max / steps[i] <= n)
            return steps[i];
    return pow(10, ceil(log10(max / n)));
}

const char *plot__tick_format(double tick)
{
    double r = tick * 10;
    return tick >= 1 ? "%g" : fabs(r - round(r)) < 1e-9 ? "%.1f" : "%.2f";
}

double plot__pt(const struct plot__fig *f, double pt)
{
    return f->fmt == PLOT_SVG ? pt * 2 / 3 : pt;
}

double plot__width_in(const struct plot__fig *f)
{
    return f->o->width == PLOT_DOUBLE ? 7.0 : 3.5;
}

int plot_gp_quote(FILE *out, const char *field, const char *s, struct rl_err *e)
{
    s = s ? s : "";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return rl_errf(e, RL_EINVAL, "%s: a control character (0x%02x) after '%.*s'; file names and labels "
                           "must be printable text on one line", field, *p, (int)((const char *)p - s), s);
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (strchr("\"\\`@'$%", *p))
            fprintf(out, "\\%03o", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
    return 0;
}

void plot__gp_str(struct plot__fig *f, const char *field, const char *s)
{
    struct rl_err e = {0};
    if (plot_gp_quote(f->gp, field, s, &e) && !f->gp_rc) {
        f->gp_rc = RL_EINVAL;
        f->gp_err = e;
    }
}

void plot__gp_tic(struct plot__fig *f, const char *field, const char *s)
{
    size_t n = strlen(s ? s : "");
    char *d = malloc(2 * n + 1), *q = d;
    if (!d) {
        if (!f->gp_rc)
            f->gp_rc = rl_errf(&f->gp_err, RL_ENOMEM, "%s: out of memory", field);
        return;
    }
    for (const char *p = s ? s : ""; *p; p++) {
        if (*p == '%')
            *q++ = '%';
        *q++ = *p;
    }
    *q = 0;
    plot__gp_str(f, field, d);
    free(d);
}

/* A header value on one line (newlines and tabs become spaces). */
static void dat_value(FILE *f, const char *s)
{
    if (!s || !*s) {
        fputs("not recorded in the input", f);
        return;
    }
    for (; *s; s++)
        fputc(*s == '\n' || *s == '\r' || *s == '\t' ? ' ' : *s, f);
}

void plot__dat_header(struct plot__fig *f, const struct plot__meta *m)
{
    FILE *d = f->dat;
    fprintf(d, "# ratiolab plot %s: the data of %s, drawn by %.*s.gp\n", f->kind_name, f->out_name,
            (int)(strlen(f->dat_name) - 4), f->dat_name);
    fprintf(d, "# ratiolab version: ");
    dat_value(d, f->o->version);
    fprintf(d, "\n# model: ");
    dat_value(d, m->model);
    fprintf(d, "\n# hardware: ");
    dat_value(d, m->hardware);
    fprintf(d, "\n# policy: ");
    dat_value(d, m->policy);
    fprintf(d, "\n# schedule: ");
    dat_value(d, m->schedule);
    fprintf(d, "\n# micro-batch: ");
    dat_value(d, m->micro_batch);
    if (m->run) {
        fprintf(d, "\n# run: ");
        dat_value(d, m->run);
    }
    fprintf(d, "\n# inputs:");
    for (int i = 0; i < f->o->n_in; i++) {
        fputc(' ', d);
        dat_value(d, plot__base(f->o->in[i]));
    }
    if (f->o->marks) {
        fputs(" (marks) ", d);
        dat_value(d, plot__base(f->o->marks));
    }
    fprintf(d, "\n# columns are tab-separated; blocks are separated by two blank lines (gnuplot index)\n");
}

int plot__block(struct plot__fig *f, const char *what)
{
    if (f->block)
        fputs("\n\n", f->dat);
    fprintf(f->dat, "# [index %d] %s\n", f->block, what);
    return f->block++;
}

/* Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision
 * deficiency. Each series also gets its own dash and point type, so grey print keeps them apart. */
static const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};
static const int dashes[] = {1, 2, 4, 5, 3, 6, 1};
static const int points[] = {7, 5, 9, 11, 13, 4, 6};
#define N_PAL 7

const char *plot__color(int i) { return palette[(i % N_PAL + N_PAL) % N_PAL]; }
int plot__dash(int i) { return dashes[(i % N_PAL + N_PAL) % N_PAL]; }
int plot__point(int i) { return points[(i % N_PAL + N_PAL) % N_PAL]; }

/* Phase colours come from the one table beside the phase names (traces/layout.h): a phase takes
 * its group's colour and its own fill pattern; a group name its colour; other names the i-th of a
 * few colours no group uses. */
const char *plot__phase_color(const char *name, int i, int *pattern)
{
    *pattern = 0;
    const struct trace_phase *ph = trace_phase_find(name);
    if (ph) {
        *pattern = ph->pattern;
        return trace_group_color(ph->group);
    }
    for (int g = 0; name && g < TRACE_GROUP_COUNT; g++)
        if (strcmp(name, trace_group_name((enum trace_group)g)) == 0) {
            *pattern = g == TRACE_GROUP_IDLE ? 5 : 0;
            return trace_group_color((enum trace_group)g);
        }
    return trace_other_color(i);
}

void plot__gp_preamble(struct plot__fig *f, double height_in)
{
    FILE *g = f->gp;
    double w = plot__width_in(f);
    /* Names appear only as quoted strings below, never in a comment or a command. */
    fprintf(g, "# ratiolab plot %s (ratiolab %s): draws the figure named by outfile from the data in datafile (both set below).\n",
            f->kind_name, f->o->version);
    fprintf(g, "# Run from this folder: gnuplot THIS.gp   (gnuplot -e \"outfile='other.%s'\" THIS.gp to rename)\n",
            f->fmt == PLOT_PDF ? "pdf" : f->fmt == PLOT_SVG ? "svg" : "png");
    fprintf(g, "# Paper size: %.1f in x %.2f in; font ',9', which pdfcairo draws as 6 pt text.\n", w, height_in);
    fputs("if (!exists(\"outfile\")) outfile = ", g);
    plot__gp_str(f, "out", f->out_name);
    fputs("\ndatafile = ", g);
    plot__gp_str(f, "out", f->dat_name);
    fputc('\n', g);
    switch (f->fmt) {
    case PLOT_PDF:
        fprintf(g, "set terminal pdfcairo size %.2fin,%.2fin font ',9' linewidth 1\n", w, height_in);
        break;
    case PLOT_SVG:   /* sizes in points (72 per inch); font sizes as plot__pt gives them */
        fprintf(g, "set terminal svg size %d,%d font ',%.3g' linewidth 1 background '#ffffff'\n",
                (int)(w * 72 + 0.5), (int)(height_in * 72 + 0.5), plot__pt(f, 9));
        break;
    case PLOT_PNG:   /* 200 dpi; scales measured to match the PDF rendered at 200 dpi */
        fprintf(g, "set terminal pngcairo size %d,%d font ',9' fontscale 1.39 linewidth 1.39 pointscale 1.8 "
                   "background '#ffffff'\n", (int)(w * 200 + 0.5), (int)(height_in * 200 + 0.5));
        break;
    }
    fputs("set output outfile\n"
          "set termoption noenhanced\n"
          "set datafile separator '\\t'\n"
          "set datafile missing '?'\n"
          "set border 3 lw 0.8\n"
          "set tics nomirror out scale 0.6\n"
          "set grid ytics lc rgb '#e0e0e0' lw 0.6 dt 1\n"
          "set grid back\n"
          "set key noautotitle samplen 2.5 spacing 1.0\n"
          "set xtics offset 0,0.4\n"
          "# palette: Okabe-Ito, with distinct dash and point types for grey print\n", g);
    for (int i = 0; i < N_PAL; i++)
        fprintf(g, "set linetype %d lc rgb '%s' lw 1.4 dt %d pt %d ps 0.4\n", i + 1, palette[i], dashes[i], points[i]);
    fprintf(g, "set linetype cycle %d\n", N_PAL);
}

void plot__panel(struct plot__fig *f, const struct plot__grid *g, int r, int c)
{
    double w = plot__width_in(f), h = g->height_in;
    double pw = w / g->cols, ph = (h - g->title_in - g->key_in) / g->rows;
    double x0 = c * pw, y1 = h - g->title_in - r * ph;   /* panel's left and top edges */
    fprintf(f->gp, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n", (x0 + g->left_in) / w,
            (x0 + pw - g->right_in) / w);
    fprintf(f->gp, "set tmargin at screen %.4f\nset bmargin at screen %.4f\n", (y1 - g->top_in) / h,
            (y1 - ph + g->bottom_in) / h);
}

#define KEY_ROW_IN 0.14      /* one key line of font ',9' */
#define KEY_SAMPLE_IN 0.24   /* a key entry's sample and the gaps around it */
#define KEY_GAP_IN 0.06     /* between the columns of a key */
#define KEY_INSET_IN 0.04    /* between a key inside a panel and the panel's axes */
#define KEY_PAD_IN 0.03      /* between a key's box and the data */

/* font ',9': about 0.048 in per character (0.047 measured on the PNG, wide letters more), in
 * proportion at other sizes. */
double plot__text_w(int chars, double pt)
{
    return chars * 0.048 * pt / 9;
}

/* ---- what the panels hold -------------------------------------------------------------------------- */
void plot__occ_panel(struct plot__occ *o, double x0_in, double y0_in, double x1_in, double y1_in, double xmin,
                     double xmax, double ymin, double ymax, bool logx, bool logy)
{
    if (o->n_panels == PLOT__OCC_PANELS) {
        o->oom = true;
        return;
    }
    double *p = o->panel[o->n_panels++];
    p[0] = x0_in, p[1] = y0_in, p[2] = x1_in, p[3] = y1_in;
    o->lo[0] = xmin, o->hi[0] = xmax, o->lo[1] = ymin, o->hi[1] = ymax;
    o->logx = logx, o->logy = logy;
}

void plot__occ_grid_panel(struct plot__occ *o, const struct plot__fig *f, const struct plot__grid *g, int r, int c,
                          double xmin, double xmax, double ymin, double ymax, bool logx, bool logy)
{
    double w = plot__width_in(f), h = g->height_in;
    double pw = w / g->cols, ph = (h - g->title_in - g->key_in) / g->rows;
    double x0 = c * pw, y1 = h - g->title_in - r * ph;
    plot__occ_panel(o, x0 + g->left_in, y1 - ph + g->bottom_in, x0 + pw - g->right_in, y1 - g->top_in, xmin, xmax, ymin,
                    ymax, logx, logy);
}

static double occ_map(const struct plot__occ *o, int ax, double v)
{
    const double *p = o->panel[o->n_panels - 1];
    double a = p[ax], b = p[ax + 2], lo = o->lo[ax], hi = o->hi[ax];
    if (ax ? o->logy : o->logx) {
        if (!(v > 0) || !(lo > 0))
            return NAN;
        v = log(v), lo = log(lo), hi = log(hi);
    }
    return hi != lo ? a + (v - lo) / (hi - lo) * (b - a) : a;
}

double plot__occ_x(const struct plot__occ *o, double x) { return o->n_panels ? occ_map(o, 0, x) : NAN; }
double plot__occ_y(const struct plot__occ *o, double y) { return o->n_panels ? occ_map(o, 1, y) : NAN; }

double plot__occ_gx(const struct plot__occ *o, double gx)
{
    const double *p = o->panel[o->n_panels ? o->n_panels - 1 : 0];
    return p[0] + gx * (p[2] - p[0]);
}

double plot__occ_gy(const struct plot__occ *o, double gy)
{
    const double *p = o->panel[o->n_panels ? o->n_panels - 1 : 0];
    return p[1] + gy * (p[3] - p[1]);
}

static void occ_add(struct plot__occ *o, struct plot__occ_item it)
{
    if (!(isfinite(it.x0) && isfinite(it.y0) && isfinite(it.x1) && isfinite(it.y1)))
        return;   /* not drawn (a log axis at zero, a missing value) */
    if (rl_grow(&o->it, &o->cap, sizeof *o->it, o->n + 1, 256)) {
        o->oom = true;
        return;
    }
    o->it[o->n++] = it;
}

void plot__occ_box_in(struct plot__occ *o, double x0, double y0, double x1, double y1)
{
    occ_add(o, (struct plot__occ_item){fmin(x0, x1), fmin(y0, y1), fmax(x0, x1), fmax(y0, y1), 0, false});
}

void plot__occ_box(struct plot__occ *o, double x0, double y0, double x1, double y1)
{
    plot__occ_box_in(o, plot__occ_x(o, x0), plot__occ_y(o, y0), plot__occ_x(o, x1), plot__occ_y(o, y1));
}

void plot__occ_seg(struct plot__occ *o, double xa, double ya, double xb, double yb, double half_in)
{
    occ_add(o, (struct plot__occ_item){plot__occ_x(o, xa), plot__occ_y(o, ya), plot__occ_x(o, xb), plot__occ_y(o, yb),
                                       half_in, true});
}

void plot__occ_text(struct plot__occ *o, double x_in, double y_in, int chars, double pt, int just)
{
    double w = plot__text_w(chars, pt), h = pt / 72 * 1.2;
    double x0 = just < 0 ? x_in : just == 0 ? x_in - w / 2 : x_in - w;
    plot__occ_box_in(o, x0, y_in - h / 2, x0 + w, y_in + h / 2);
}

void plot__occ_free(struct plot__occ *o)
{
    free(o->it);
    memset(o, 0, sizeof *o);
}

/* Does the segment (a) - (b) meet the box [x0, x1] x [y0, y1] (Liang-Barsky)? */
static bool seg_meets_box(double ax, double ay, double bx, double by, double x0, double y0, double x1, double y1)
{
    double t0 = 0, t1 = 1, dx = bx - ax, dy = by - ay;
    const double p[4] = {-dx, dx, -dy, dy}, q[4] = {ax - x0, x1 - ax, ay - y0, y1 - ay};
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0) {
            if (q[i] < 0)
                return false;
            continue;
        }
        double t = q[i] / p[i];
        if (p[i] < 0)
            t0 = fmax(t0, t);
        else
            t1 = fmin(t1, t);
        if (t0 > t1)
            return false;
    }
    return true;
}

bool plot__occ_clear(const struct plot__occ *o, double x0, double y0, double x1, double y1)
{
    for (int i = 0; i < o->n; i++) {
        const struct plot__occ_item *it = &o->it[i];
        double pad = KEY_PAD_IN + it->half;
        if (it->seg ? seg_meets_box(it->x0, it->y0, it->x1, it->y1, x0 - pad, y0 - pad, x1 + pad, y1 + pad)
                    : it->x0 < x1 + pad && it->x1 > x0 - pad && it->y0 < y1 + pad && it->y1 > y0 - pad)
            return false;
    }
    return true;
}

/* ---- keys ------------------------------------------------------------------------------------------ */
void plot__key_init(struct plot__key *k, int n)
{
    memset(k, 0, sizeof *k);
    k->n = n < PLOT__KEY_MAX ? n : PLOT__KEY_MAX;
}

void plot__key_title(struct plot__key *k, int i, const char *title)
{
    if (i < 0 || i >= k->n)
        return;
    int n = 0;   /* characters, not bytes (UTF-8 continuation bytes do not count) */
    for (const unsigned char *p = (const unsigned char *)(title ? title : ""); *p; p++)
        n += (*p & 0xc0) != 0x80;
    k->chars[i] = n;
}

/* Lays out the grid of cols columns; the columns never add up to more than max_w. */
static void key_layout(struct plot__key *k, int cols, double max_w)
{
    k->cols = cols < 1 ? 1 : cols > k->n ? (k->n ? k->n : 1) : cols;
    k->w_in = 0;
    for (int c = 0; c < k->cols; c++) {
        k->colw_in[c] = 0;
        for (int i = c; i < k->n; i += k->cols)
            k->colw_in[c] = fmax(k->colw_in[c],
                                 plot__text_w(k->chars[i], 9) + KEY_SAMPLE_IN + (c + 1 < k->cols ? KEY_GAP_IN : 0));
        k->colw_in[c] = fmin(k->colw_in[c], max_w);
        k->w_in += k->colw_in[c];
    }
    k->h_in = KEY_ROW_IN * ((k->n + k->cols - 1) / k->cols) + 0.02;
}

bool plot__key_fit(const struct plot__fig *f, const struct plot__occ *o, struct plot__key *k)
{
    (void)f;
    k->inside = false;
    if (o->oom || !k->n)
        return false;
    int max_cols = k->n < 4 ? k->n : 4;
    /* Pass 0: the four corners; pass 1: any spot, from the top right, 0.04 in apart. */
    for (int pass = 0; pass < 2; pass++)
        for (int p = 0; p < o->n_panels; p++)
            for (int cols = 1; cols <= max_cols; cols++) {
                const double *a = o->panel[p];
                key_layout(k, cols, 1e9);
                double xl = a[0] + KEY_INSET_IN, xr = a[2] - KEY_INSET_IN - k->w_in;
                double yb = a[1] + KEY_INSET_IN + k->h_in, yt = a[3] - KEY_INSET_IN;   /* the box's top */
                if (xr < xl || yb > yt)
                    continue;
                if (pass == 0) {
                    const double cx[4] = {xr, xl, xr, xl}, cy[4] = {yt, yt, yb, yb};
                    for (int q = 0; q < 4; q++)
                        if (plot__occ_clear(o, cx[q], cy[q] - k->h_in, cx[q] + k->w_in, cy[q])) {
                            k->x0_in = cx[q], k->top_in = cy[q], k->inside = true;
                            return true;
                        }
                    continue;
                }
                for (double y = yt; y >= yb - 1e-9; y -= 0.04)
                    for (double x = xr; x >= xl - 1e-9; x -= 0.04)
                        if (plot__occ_clear(o, x, y - k->h_in, x + k->w_in, y)) {
                            k->x0_in = x, k->top_in = y, k->inside = true;
                            return true;
                        }
            }
    return false;
}

double plot__key_strip(const struct plot__fig *f, struct plot__key *k)
{
    double page = plot__width_in(f) - 0.2;
    k->inside = false;
    int cols = k->n ? k->n : 1;
    for (; cols > 1; cols--) {   /* as many columns as fit across the page */
        key_layout(k, cols, page);
        if (k->w_in <= page)
            break;
    }
    key_layout(k, cols, page);
    k->x0_in = (plot__width_in(f) - k->w_in) / 2;
    k->top_in = 0.04 + k->h_in;
    return k->top_in + 0.04;
}

/* The key as a strip under the panels, which grow by its height. */
static void key_to_strip(const struct plot__fig *f, struct plot__grid *g, struct plot__key *k)
{
    double strip = plot__key_strip(f, k);
    g->key_in += strip;
    g->height_in += strip;
}

bool plot__key_settle(const struct plot__fig *f, struct plot__grid *g, struct plot__key *k, const struct plot__occ *o)
{
    if (!k->n)
        return false;
    if (plot__key_fit(f, o, k))
        return true;
    key_to_strip(f, g, k);
    return false;
}

bool plot__room_top(double ymax, double tick, double base, double limit, int attempt, double *top)
{
    double room = base;
    for (int a = 0; a < attempt; a++)
        room += 0.25;
    if (room >= limit)
        return false;
    *top = ceil(ymax * room / tick) * tick;
    return true;
}

int plot__key_place(const struct plot__fig *f, struct plot__grid *g, struct plot__key *k, plot__occ_fill_fn *fill,
                    void *ctx)
{
    for (int a = 0;; a++) {
        struct plot__occ occ = {0};
        if (!fill(f, ctx, a, &occ)) {
            plot__occ_free(&occ);
            break;
        }
        bool fits = k->n && plot__key_fit(f, &occ, k);
        plot__occ_free(&occ);
        if (fits)
            return a;
    }
    if (k->n)
        key_to_strip(f, g, k);
    return 0;
}

int plot__label_spot(const struct plot__occ *o, const double pa[4], double px_in, double py_in, double w_in,
                     double h_in, const struct plot__spot *spots, int n)
{
    int inside = -1;
    for (int c = 0; c < n; c++) {
        const struct plot__spot *ls = &spots[c];
        double x0 = px_in + ls->dx - (ls->just == 0 ? w_in / 2 : ls->just > 0 ? w_in : 0);
        double yc = py_in + ls->dy;
        if (x0 < pa[0] || x0 + w_in > pa[2] || yc - h_in / 2 < pa[1] || yc + h_in / 2 > pa[3])
            continue;
        if (inside < 0)
            inside = c;   /* when no spot is clear: the first inside the plot area */
        if (plot__occ_clear(o, x0, yc - h_in / 2, x0 + w_in, yc + h_in / 2))
            return c;
    }
    return inside >= 0 ? inside : 0;
}

void plot__ylabel(struct plot__fig *f, const struct plot__grid *g, int r, int c, const char *text)
{
    double w = plot__width_in(f), h = g->height_in;
    double pw = w / g->cols, ph = (h - g->title_in - g->key_in) / g->rows;
    double y_mid = h - g->title_in - r * ph - (g->top_in + ph - g->bottom_in) / 2;
    fputs("unset ylabel\nset label 90 ", f->gp);
    plot__gp_str(f, "ylabel", text);
    fprintf(f->gp, " at screen %.4f, screen %.4f center rotate by 90\n", (c * pw + 0.08) / w, y_mid / h);
}

void plot__key_begin(struct plot__fig *f, const struct plot__grid *g, const struct plot__key *k)
{
    double w = plot__width_in(f), h = g->height_in;
    fprintf(f->gp, "# the key, %s; box (screen) %.4f %.4f %.4f %.4f\n",
            k->inside ? "inside the plot area where no data lie" : "in its own strip under the panels", k->x0_in / w,
            (k->top_in - k->h_in) / h, (k->x0_in + k->w_in) / w, k->top_in / h);
    fputs("set lmargin at screen 0.01\nset rmargin at screen 0.99\nset tmargin at screen 0.99\n"
          "set bmargin at screen 0.01\n", f->gp);
    fputs("unset title\nunset border\nunset tics\nunset xlabel\nunset ylabel\nunset grid\n"
          "unset label\nunset arrow\nunset object\nunset logscale\nunset y2tics\nunset y2label\n"
          "set xrange [0:1]\nset yrange [0:1]\n", f->gp);
    if (k->inside && k->opaque)   /* a white box under the key, drawn once: reference lines stop at it */
        fprintf(f->gp, "set object 999 rect from screen %.4f, screen %.4f to screen %.4f, screen %.4f fc rgb '#ffffff' "
                       "fs solid 1.0 noborder\nunset key\nplot NaN notitle\nunset object 999\n",
                k->x0_in / w, (k->top_in - k->h_in) / h, (k->x0_in + k->w_in) / w, k->top_in / h);
}

static double key_col_x(const struct plot__key *k, int i)
{
    double x = k->x0_in;
    for (int c = 0; c < i % k->cols; c++)
        x += k->colw_in[c];
    return x;
}

void plot__key_entry(struct plot__fig *f, const struct plot__grid *g, const struct plot__key *k, int i)
{
    double y = k->top_in - (i / k->cols) * KEY_ROW_IN;
    fprintf(f->gp, "set key at screen %.4f, screen %.4f left top Left reverse samplen 2 spacing 1 noautotitle\nplot ",
            key_col_x(k, i) / plot__width_in(f), y / g->height_in);
}

void plot__key_label(struct plot__fig *f, const struct plot__grid *g, const struct plot__key *k, int i,
                     const char *field, const char *text)
{
    double x = key_col_x(k, i) + 0.05;
    double y = k->top_in - (i / k->cols) * KEY_ROW_IN - KEY_ROW_IN / 2 - 0.01;
    fprintf(f->gp, "set label %d ", 1000 + i);
    plot__gp_str(f, field, text);
    fprintf(f->gp, " at screen %.4f, screen %.4f left\n", x / plot__width_in(f), y / g->height_in);
}

void plot__multiplot(struct plot__fig *f)
{
    fputs("set multiplot", f->gp);
    if (f->o->title && *f->o->title) {
        fputs(" title ", f->gp);
        plot__gp_str(f, "title", f->o->title);
        fprintf(f->gp, " font ',%.3g'", plot__pt(f, 10));
    }
    fputc('\n', f->gp);
}

int plot_pdf_stable_date(const char *path, struct rl_err *e)
{
    int64_t epoch = 0;
    const char *env = getenv("SOURCE_DATE_EPOCH");
    if (env && *env) {
        int rc = rl_parse_i64("SOURCE_DATE_EPOCH", env, 0, (int64_t)253402300799, &epoch, e);   /* to 9999 */
        if (rc)
            return rc;
    }
    char *pdf;
    size_t len;
    int rc = rl_read_bytes(path, &pdf, &len, e);
    if (rc)
        return rc;
    static const char key[] = "/CreationDate (D:";
    const size_t klen = sizeof key - 1, dlen = 14;   /* YYYYMMDDHHMMSS */
    char *at = NULL;
    for (size_t i = 0; i + klen + dlen <= len; i++)
        if (memcmp(pdf + i, key, klen) == 0) {
            at = pdf + i + klen;
            break;
        }
    size_t off = at ? (size_t)(at - pdf) : 0;
    free(pdf);
    if (!at)
        return 0;
    time_t t = (time_t)epoch;
    struct tm tm;
    char stamp[32];
    if (!gmtime_r(&t, &tm) || strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm) != dlen)
        return rl_errf(e, RL_EINVAL, "SOURCE_DATE_EPOCH: '%s' is not a date PDF can hold", env ? env : "0");
    FILE *f = fopen(path, "r+b");
    if (!f)
        return rl_errf(e, RL_EIO, "%s: %s", path, strerror(errno));
    int bad = fseek(f, (long)off, SEEK_SET) != 0 || fwrite(stamp, 1, dlen, f) != dlen;
    bad |= fclose(f) != 0;
    if (bad)
        return rl_errf(e, RL_EIO, "%s: cannot rewrite its creation date (%s)", path, strerror(errno));
    return 0;
}

int plot_svg_physical_size(const char *path, struct rl_err *e)
{
    char *svg;
    size_t len;
    int rc = rl_read_bytes(path, &svg, &len, e);
    if (rc)
        return rc;
    char *w = strstr(svg, " width=\""), *h = w ? strstr(w, " height=\"") : NULL;
    char *end = h ? strchr(h + 9, '"') : NULL;
    double wpt, hpt;
    if (!end || end - svg > 4096 || sscanf(w, " width=\"%lf\" height=\"%lf\"", &wpt, &hpt) != 2) {
        free(svg);
        return 0;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(svg);
        return rl_errf(e, RL_EIO, "%s: %s", path, strerror(errno));
    }
    fwrite(svg, 1, (size_t)(w - svg), f);
    fprintf(f, " width=\"%.4gin\" height=\"%.4gin\"", wpt / 72, hpt / 72);
    fwrite(end + 1, 1, len - (size_t)(end + 1 - svg), f);
    int bad = ferror(f) | (fclose(f) != 0);
    free(svg);
    return bad ? rl_errf(e, RL_EIO, "%s: cannot rewrite its size (%s)", path, strerror(errno)) : 0;
}
