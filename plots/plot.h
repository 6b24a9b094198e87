/* plots/plot.h — figures for papers: reads what ratiolab writes (sweeps, traces, validate
 * reports, monitor CSVs) and writes, for one figure, the data (FILE.dat) and the gnuplot script
 * that draws it (FILE.gp). Drawing is gnuplot's job; cli/ runs it. Never prints.
 *
 * The .dat is tab-separated with '#' comment lines; its header names the model, hardware,
 * policy, schedule, micro-batch and ratiolab version. Blocks are separated by two blank lines
 * (gnuplot's `index`). The .gp refers to the .dat by its file name, so the pair can be moved
 * together and run with `gnuplot FILE.gp` from their folder; it writes FILE.<ext> unless the
 * caller sets the gnuplot variable `outfile`. Both files are written through rl_outfile (temp
 * file and rename): on error neither is left behind. Output is deterministic: the same inputs
 * give the same bytes (input paths appear by their base name only). */
#ifndef RL_PLOTS_PLOT_H
#define RL_PLOTS_PLOT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>   /* FILE */

#include "common/rl.h"

enum plot_kind {
    PLOT_MEMORY,     /* GPU and host memory per rank, honored ratio, against requested ratio */
    PLOT_TIME,       /* step time against ratio, stacked by phase (exposed time) */
    PLOT_TIMELINE,   /* Gantt chart of one step from one or two traces */
    PLOT_PARITY,     /* predicted against measured from a validate report */
    PLOT_SCALING,    /* step time or tokens/s against GPU count or model size */
    PLOT_MONITOR,    /* per-process memory over time from a monitor CSV */
    PLOT_KIND_COUNT
};

enum plot_format { PLOT_PDF, PLOT_SVG, PLOT_PNG };
enum plot_width { PLOT_SINGLE, PLOT_DOUBLE };   /* 3.5 in / 7 in; font ',9' (6 pt as pdfcairo draws it) */
enum plot_scaling_x { PLOT_X_GPUS, PLOT_X_PARAMS };
enum plot_scaling_y { PLOT_Y_STEP, PLOT_Y_TOKENS, PLOT_Y_TOKENS_PER_GPU };
enum plot_speedup { PLOT_SPEEDUP_NONE, PLOT_SPEEDUP_NO_OFFLOAD, PLOT_SPEEDUP_FULL_OFFLOAD };

#define PLOT_MAX_IN 16   /* input files of one figure */

struct plot_opts {
    enum plot_kind kind;              /* which figure */
    const char *in[PLOT_MAX_IN];      /* input files, in the order given */
    int n_in;                         /* entries in in */
    const char *out;                  /* the figure's path; its extension picks the format */
    enum plot_width width;            /* --width */
    const char *title;                /* --title, NULL or "" for none */
    const char *version;              /* ratiolab version for the .dat header */
    int64_t gpu_mem_bytes;            /* time, scaling: the GPU memory to fit in; 0: the sweep's own "fits" */
    const char *marks;                /* monitor: a monitor trace whose marks become vertical lines, or NULL */
    const char *pids;                 /* timeline: comma list of trace process ids to draw, NULL: all */
    double band_pct;                  /* parity: half-width of the error band, percent */
    bool phase_exposed;               /* parity: per-phase exposed time instead of busy time */
    enum plot_scaling_x scaling_x;    /* scaling: x axis */
    enum plot_scaling_y scaling_y;    /* scaling: y axis */
    double ratio;                     /* scaling: the requested ratio to show; < 0: the best that fits */
    bool all_phases;                  /* time: every phase its own band (default: phase groups) */
    enum plot_speedup speedup;        /* time: a speedup axis against ratio 0 or ratio 1, or none */
};

void plot_opts_init(struct plot_opts *o);
/* The kinds are one table (plots/write.c), a row each: name, description, writer. */
const char *plot_kind_name(enum plot_kind k);
/* What the kind draws and from what, for a help text: lines of at most 80 characters separated
 * by '\n' (none at the end), which `plot --help` indents under one another. */
const char *plot_kind_description(enum plot_kind k);
/* "memory, time, ..., monitor": every kind's name, in the table's order, into buf; returns buf. */
const char *plot_kind_list(char *buf, size_t n);
/* "memory" -> PLOT_MEMORY; anything else is RL_EINVAL naming the allowed kinds. */
int plot_kind_parse(const char *s, enum plot_kind *k, struct rl_err *e);
/* The format from the extension of path (.pdf, .svg, .png; case-insensitive). */
int plot_format_of(const char *path, enum plot_format *f, struct rl_err *e);

struct plot_files {
    char dat[1024];   /* FILE.dat (the figure's path with its extension replaced) */
    char gp[1024];    /* FILE.gp */
};
/* The one way text reaches a gnuplot script (file names, titles, labels, anything from an input
 * file or a flag): writes s to out as a double-quoted gnuplot string in which every byte gnuplot
 * could read as syntax (" \ ` @ ' $ %) is an octal escape, so it is data in every context
 * (backquotes and @macros are not expanded, no quote ends it). A control character (below 0x20,
 * or 0x7f) is refused, as a newline would end the script line: RL_EINVAL naming field and where
 * the character is; nothing is written then. NULL is the empty string. */
int plot_gp_quote(FILE *out, const char *field, const char *s, struct rl_err *e);

/* The two companion paths of a figure path. */
int plot_files_of(const char *out, struct plot_files *f, struct rl_err *e);

/* Reads the inputs of o->kind and writes FILE.dat and FILE.gp. Bad or missing input is RL_EINVAL
 * (or RL_ENOENT) naming the file and the field; nothing is written then. */
int plot_write(const struct plot_opts *o, struct plot_files *files, struct rl_err *e);

/* cairo (1.16, Debian 12) stamps a PDF with the time it was drawn, so the same figure would differ
 * run to run. Rewrites that /CreationDate in place (same length, so no offset moves) to
 * $SOURCE_DATE_EPOCH when set (the reproducible-builds convention), else 1970-01-01 00:00:00 UTC.
 * A file without the stamp is left as it is. RL_EINVAL for a malformed SOURCE_DATE_EPOCH. */
int plot_pdf_stable_date(const char *path, struct rl_err *e);

/* gnuplot's SVG terminal gives the figure's size in points without a unit (width="252"), which
 * viewers take as pixels: a 3.5 in figure shows at 252 px. Rewrites the first width/height of the
 * file at path to inches (points / 72), keeping the viewBox, so the SVG has its paper size. A file
 * without them is left as it is. */
int plot_svg_physical_size(const char *path, struct rl_err *e);

/* The gnuplot executable on PATH into buf, or NULL when there is none. */
const char *plot_find_gnuplot(char *buf, size_t n);
/* path's folder into dir ("." when it has none) and its last part into *base (inside path). */
void plot_split_dir(const char *path, char *dir, size_t n, const char **base);
/* Draws the figure out (format fmt) from files->gp with the gnuplot at `gnuplot` (plots/render.c):
 * run in the script's folder onto a temporary name, the PDF's date and SVG's size made stable
 * (above), renamed into place (written in place for a device, FIFO or standard output). A failed
 * run leaves no figure: RL_EENV with gnuplot's own message, or the field out named. */
int plot_render(const char *gnuplot, const char *out, enum plot_format fmt, const struct plot_files *files,
                struct rl_err *e);

#endif
