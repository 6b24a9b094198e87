/* plots/plot_impl.h — what the figure writers share (internal to plots/). */
#ifndef RL_PLOTS_PLOT_IMPL_H
#define RL_PLOTS_PLOT_IMPL_H

#include <stdio.h>

#include "plots/input.h"
#include "plots/plot.h"

/* One figure being written: the two open files and what the script needs to know. */
struct plot__fig {
    const struct plot_opts *o;   /* the request */
    const char *kind_name;       /* its kind's name (write.c's table; the shared parts read it here,
                                    so plot.c never calls back into the file that calls the writers) */
    enum plot_format fmt;        /* from the figure's extension */
    FILE *dat;                   /* FILE.dat */
    FILE *gp;                    /* FILE.gp */
    char dat_name[256];          /* base name of FILE.dat, as the script refers to it */
    char out_name[256];          /* base name of the figure, the script's default output */
    int block;                   /* data blocks written so far (the next `index`) */
    int gp_rc;                   /* 0, or the first refusal of plot__gp_str (the figure fails) */
    struct rl_err gp_err;        /* that refusal's message */
};

/* What the .dat header names; NULL fields print as "not recorded in the input". */
struct plot__meta {
    const char *model;           /* model description */
    const char *hardware;        /* hardware profile */
    const char *policy;          /* placement policy (or a list) */
    const char *schedule;        /* optimizer-step schedule (or a list) */
    const char *micro_batch;     /* micro-batch as text */
    const char *run;             /* what ran, when the input says (a trace's step: ratio, schedule,
                                  * policy); NULL: no line */
};

/* Writes the .dat header: kind, ratiolab version, metadata and the inputs' base names. */
void plot__dat_header(struct plot__fig *f, const struct plot__meta *m);
/* Starts a data block: two blank lines before every block but the first, then "# [index] what".
 * Returns the block's index. */
int plot__block(struct plot__fig *f, const char *what);
/* Writes the script's preamble: comment, output variable, terminal (width_in x height_in, font ',9': 6 pt text in the PDF),
 * the palette and the shared style. */
void plot__gp_preamble(struct plot__fig *f, double height_in);
/* Writes s into the script through plot_gp_quote; a refusal (a control character) is kept in
 * f->gp_rc/gp_err and fails the figure. field names where s came from ("title", "policy"...). */
void plot__gp_str(struct plot__fig *f, const char *field, const char *s);
/* plot__gp_str for a tic label, which gnuplot reads as a format: '%' is doubled first. */
void plot__gp_tic(struct plot__fig *f, const char *field, const char *s);
/* A tick step (1, 2, 2.5 or 5 x 10^k) giving at most n intervals up to max (> 0). */
double plot__tick(double max, int n);
/* The gnuplot format that prints every multiple of tick alike ("%.1f" for 0.2). */
const char *plot__tick_format(double tick);
/* The font size to write for a text of pt points as pdfcairo draws it: pdfcairo (and pngcairo, whose
 * fontscale matches it) writes font ',9' as 6 pt text (its text matrix), the svg terminal as 9 pt,
 * so an SVG gets 2/3 of each size (its offsets in characters then match too). */
double plot__pt(const struct plot__fig *f, double pt);
/* The figure's width in inches (3.5 or 7). */
double plot__width_in(const struct plot__fig *f);
/* The colour of a phase (sim_phase_name) or, for other names, the i-th of a few colours no phase
 * uses; and whether its fill gets a hatch pattern (pairs sharing a colour). */
const char *plot__phase_color(const char *name, int i, int *pattern);
/* The i-th series colour, dash type and point type (Okabe-Ito; cycles after 7). */
const char *plot__color(int i);
int plot__dash(int i);
int plot__point(int i);

/* Panels placed by explicit screen margins, so stacked or side-by-side panels line up whatever
 * their tick labels, with an optional strip at the bottom holding the one key of the figure.
 * Sizes in inches. */
struct plot__grid {
    int rows, cols;        /* panels */
    double height_in;      /* the whole figure */
    double left_in;        /* per panel: room for the y tick labels and label */
    double right_in;       /* per panel: room at the right */
    double top_in;         /* per panel: room for a panel title */
    double bottom_in;      /* per panel: room for the x tick labels and label */
    double title_in;       /* at the top of the figure for --title (0 without one) */
    double key_in;         /* height of the key strip at the bottom (0: none) */
};
/* Emits the y axis label of panel (r, c) at the panel's left edge (gnuplot's own placement
 * ignores margins set at screen positions). */
void plot__ylabel(struct plot__fig *f, const struct plot__grid *g, int r, int c, const char *text);
/* Emits the margins of panel (r, c). */
void plot__panel(struct plot__fig *f, const struct plot__grid *g, int r, int c);
/* What a panel's data cover, in inches of the figure (from its bottom-left corner): the key is
 * placed where none of it lies. Writers describe their data (bars, lines, points, labels) in data
 * coordinates of the panel added last; items outside the panel are clipped to it. */
struct plot__occ_item {
    double x0, y0, x1, y1;   /* a box, or a segment from (x0, y0) to (x1, y1) */
    double half;             /* half the width of a segment's stroke (0 for a box) */
    bool seg;                /* a segment rather than a box */
};
#define PLOT__OCC_PANELS 8
struct plot__occ {
    struct plot__occ_item *it;                /* what the panels hold */
    int n, cap;                               /* entries in it, allocated */
    double panel[PLOT__OCC_PANELS][4];        /* plot areas (x0, y0, x1, y1 in inches), in the order the
                                                 key tries them */
    int n_panels;                             /* entries in panel */
    double lo[2], hi[2];                      /* the last panel's x and y ranges (data) */
    bool logx, logy;                          /* its axes are logarithmic */
    bool oom;                                 /* an item could not be stored (the key goes to a strip) */
};
/* Adds a plot area (inches) with its data ranges; later items are in its coordinates. */
void plot__occ_panel(struct plot__occ *o, double x0_in, double y0_in, double x1_in, double y1_in, double xmin,
                     double xmax, double ymin, double ymax, bool logx, bool logy);
/* The plot area of grid panel (r, c), as plot__panel places it. */
void plot__occ_grid_panel(struct plot__occ *o, const struct plot__fig *f, const struct plot__grid *g, int r, int c,
                          double xmin, double xmax, double ymin, double ymax, bool logx, bool logy);
/* Data coordinates of the last panel to inches (NAN where a log axis meets a value <= 0). */
double plot__occ_x(const struct plot__occ *o, double x);
double plot__occ_y(const struct plot__occ *o, double y);
/* Graph fractions of the last panel to inches. */
double plot__occ_gx(const struct plot__occ *o, double gx);
double plot__occ_gy(const struct plot__occ *o, double gy);
/* A box in data coordinates (a bar, a span). */
void plot__occ_box(struct plot__occ *o, double x0, double y0, double x1, double y1);
/* A box in inches. */
void plot__occ_box_in(struct plot__occ *o, double x0, double y0, double x1, double y1);
/* A segment in data coordinates with a stroke of half-width half_in inches (a line, a marker when
 * both ends are the same point). */
void plot__occ_seg(struct plot__occ *o, double xa, double ya, double xb, double yb, double half_in);
/* A text label of chars characters at pt points anchored at (x_in, y_in) inches: just < 0 left,
 * 0 centre, > 0 right (vertically centred on y_in). */
void plot__occ_text(struct plot__occ *o, double x_in, double y_in, int chars, double pt, int just);
void plot__occ_free(struct plot__occ *o);
/* Whether a box (inches) keeps clear of everything o holds (by a small margin). */
bool plot__occ_clear(const struct plot__occ *o, double x0, double y0, double x1, double y1);
/* Inches a text of chars characters takes at pt points. */
double plot__text_w(int chars, double pt);

/* The key of a figure: inside a panel's plot area where its box covers none of the data
 * (plot__key_fit), else a strip under the panels, laid out by ratiolab (not gnuplot) in a grid of
 * columns each as wide as its longest title, so every terminal gives the same layout. */
#define PLOT__KEY_MAX 48
struct plot__key {
    int n;                           /* entries */
    int cols;                        /* columns of the grid (entries fill it row by row) */
    bool inside;                     /* in a panel's plot area (else the strip) */
    bool opaque;                     /* a white box under it (set by the writer when the key crosses
                                        reference lines, which the box then hides) */
    double x0_in;                    /* left edge of the box, inches from the figure's left */
    double top_in;                   /* top edge of the box, inches from the figure's bottom */
    double w_in, h_in;               /* the box */
    double colw_in[PLOT__KEY_MAX];   /* width of each column */
    int chars[PLOT__KEY_MAX];        /* characters of each entry's title */
};
/* An empty key of n entries (at most PLOT__KEY_MAX); titles are given with plot__key_title. */
void plot__key_init(struct plot__key *k, int n);
void plot__key_title(struct plot__key *k, int i, const char *title);
/* Places the key inside the first plot area of o (in o's order) with a free spot: its corners
 * first, then any spot, for 1 to 4 columns. Returns whether it found one (k->inside). */
bool plot__key_fit(const struct plot__fig *f, const struct plot__occ *o, struct plot__key *k);
/* Lays the key out as a strip under the panels and returns its height in inches (for
 * grid.key_in). */
double plot__key_strip(const struct plot__fig *f, struct plot__key *k);
/* Places the key once, for every figure: inside a panel's plot area where o leaves a spot
 * (plot__key_fit), else as a strip under the panels whose height is added to g's key_in and
 * height_in. An empty key takes no place. Returns whether the key is inside. */
bool plot__key_settle(const struct plot__fig *f, struct plot__grid *g, struct plot__key *k, const struct plot__occ *o);
/* What a figure's panels hold at one try of its layout (try 0 the tightest; later tries give the
 * key more room: space above the data, wider axes): fills occ with the plot areas and what they
 * draw and returns true, or returns false, leaving occ empty, when there is no such try. */
typedef bool plot__occ_fill_fn(const struct plot__fig *f, void *ctx, int attempt, struct plot__occ *occ);
/* Tries the layouts fill describes in order and keeps the first where the key fits inside; when
 * none has room, the key becomes a strip (plot__key_settle) under the layout of try 0. Returns the
 * try the figure is drawn with. fill is called once more after the last try it gives, so what it
 * records per try (label spots) is that of the last try when the key is a strip. */
int plot__key_place(const struct plot__fig *f, struct plot__grid *g, struct plot__key *k, plot__occ_fill_fn *fill,
                    void *ctx);
/* The top of a panel's y range at layout try `attempt`: room above the data of base + attempt x 0.25
 * times ymax (summed a quarter at a time), rounded up to a whole tick; false, *top untouched, once
 * that room reaches limit (INFINITY: no limit). */
bool plot__room_top(double ymax, double tick, double base, double limit, int attempt, double *top);
/* A place for a text label beside its anchor: offset (inches from the anchor to the text's anchor)
 * and alignment (0 centred, > 0 right-aligned, < 0 left-aligned). */
struct plot__spot {
    double dx, dy;   /* offset, inches */
    int just;        /* alignment */
};
/* The first of the n spots around the anchor (px_in, py_in) where a text w_in x h_in inches stays
 * inside the plot area pa (x0, y0, x1, y1 in inches) and clear of everything o holds; when none is
 * clear, the first inside the plot area; when none is inside, 0. */
int plot__label_spot(const struct plot__occ *o, const double pa[4], double px_in, double py_in, double w_in,
                     double h_in, const struct plot__spot *spots, int n);
/* Emits the settings of the key's plots (after the panels): a comment naming where the key is and
 * its box (the figure tests read it), and a blank plot area. */
void plot__key_begin(struct plot__fig *f, const struct plot__grid *g, const struct plot__key *k);
/* Emits the position of entry i and "plot "; the caller writes one NaN clause with its title
 * and a newline. */
void plot__key_entry(struct plot__fig *f, const struct plot__grid *g, const struct plot__key *k, int i);
/* A text-only entry i of the key (no sample: a list such as the monitor's numbered marks); drawn
 * by the next key entry's plot, so emit these before the last entry. */
void plot__key_label(struct plot__fig *f, const struct plot__grid *g, const struct plot__key *k, int i,
                     const char *field, const char *text);
/* Emits `set multiplot`, with --title at the top of the figure when one is given. */
void plot__multiplot(struct plot__fig *f);

/* Sweeps (sweep.c), shared by the figures drawn from `sweep --json`. */
#define PLOT__GIB(b) ((double)(b) / RL_GIB)
/* A DeepSpeed policy (a staircase of honored ratios) rather than a continuous one. */
bool plot__is_staircase(const char *policy);
/* Reads every input as a sweep; on error frees what was read. */
int plot__read_sweeps(struct plot__fig *f, struct plot__sweep *s, struct rl_err *e);
void plot__free_sweeps(struct plot__sweep *s, int n);
/* The .dat header from the sweeps' metadata (distinct values joined). */
void plot__sweep_meta(struct plot__fig *f, const struct plot__sweep *s, int ns);
/* What tells sweeps apart, in the order a figure names them (a panel title's parts, a key entry):
 * hardware profile, model, placement policy, DeepSpeed version, optimizer-step schedule. Policy
 * comes before version as in a single sweep's time panel ("policy exact, DeepSpeed 0.12.4"), so
 * one order holds for one input and for several. */
enum plot__attr {
    PLOT__ATTR_HARDWARE,
    PLOT__ATTR_MODEL,
    PLOT__ATTR_POLICY,
    PLOT__ATTR_VERSION,
    PLOT__ATTR_SCHEDULE,
    PLOT__ATTR_COUNT
};
#define PLOT__ATTR_BIT(a) (1u << (a))
#define PLOT__PART_MAX 288   /* one part's text: the longest is a model (255 bytes) */
/* The attributes whose value is not the same in all ns sweeps (bits PLOT__ATTR_BIT). */
unsigned plot__sweep_differ(const struct plot__sweep *s, int ns);
/* The parts that name sweep s among others: the text of each attribute in mask, in enum order
 * ("dgx-a100-80g", the model, "policy exact", "DeepSpeed 0.12.4", "overlapped step (ratiolab)"),
 * with field[k] the name plot__gp_str reports for part k. An empty mask (several sweeps alike in
 * all five) gives the input's base name, so panels and key entries still differ. Returns the
 * parts written (1 to PLOT__ATTR_COUNT). */
int plot__sweep_parts(const struct plot__sweep *s, unsigned mask, char part[][PLOT__PART_MAX], const char *field[]);
/* Does row w fit: the sweep's own verdict, or GPU memory within --gpu-mem. */
bool plot__row_fits(const struct plot__fig *f, const struct plot__sweep_row *w);
/* The fastest row that fits (ties: the smaller ratio); -1 when none fits. */
int plot__best_fit(const struct plot__fig *f, const struct plot__sweep *s);
/* "16 GiB" or "15.75 GiB". */
void plot__gib_label(char *buf, size_t n, int64_t bytes);

/* The kinds, one file each (kind_<name>.c); write.c's table holds them. */
int plot__memory(struct plot__fig *f, struct rl_err *e);
int plot__time(struct plot__fig *f, struct rl_err *e);
int plot__timeline(struct plot__fig *f, struct rl_err *e);
int plot__parity(struct plot__fig *f, struct rl_err *e);
int plot__scaling(struct plot__fig *f, struct rl_err *e);
int plot__monitor(struct plot__fig *f, struct rl_err *e);

#endif
