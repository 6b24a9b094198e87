/* plots/write.c — the kinds' table (a row per figure: name, description, writer) and
 * `plot_write`: the figure's data and script files opened as a pair, the kind's writer
 * (kind_*.c) run into them, both committed or neither. */
#include <stdio.h>
#include <string.h>

#include "plots/plot_impl.h"

/* A figure writer: reads f->o's inputs and writes f->dat and f->gp (kind_<name>.c). */
typedef int plot__writer_fn(struct plot__fig *f, struct rl_err *e);

/* One row per kind, in enum plot_kind's order: everything the command line, the help and the
 * dispatch know of it. */
static const struct {
    const char *name;          /* `ratiolab plot NAME` */
    const char *description;   /* what it draws, from what (help lines, '\n' between) */
    plot__writer_fn *writer;   /* writes its .dat and .gp */
} kinds[] = {
    {"memory", "GPU and host memory per rank and the honored ratio against the requested\n"
               "ratio; one sweep --json per policy (e.g. --policy deepspeed-0.12 and exact)", plot__memory},
    {"time", "step time against ratio, stacked by phase group (exposed time; --phases all\n"
             "for every phase), the fastest ratio that fits marked, ratio 0 as a reference;\n"
             "one sweep --json per panel (1 to 4)", plot__time},
    {"timeline", "Gantt chart of one step per track (rank, stream, thread) from a trace;\n"
                 "two traces (predict --trace, then run --trace or validate's) are drawn one\n"
                 "above the other, one step each (the first that is not a warm-up)", plot__timeline},
    {"parity", "predicted against measured step and phase (exposed) times from a validate\n"
               "report.json, with the identity line and the error band", plot__parity},
    {"scaling", "step time or tokens/s against GPU count or model size, one sweep per point", plot__scaling},
    {"monitor", "per-process memory over time from a `ratiolab monitor --csv` file; --marks\n"
                "takes the monitor's trace for its --mark lines", plot__monitor},
};
_Static_assert(RL_COUNT(kinds) == PLOT_KIND_COUNT, "a row per enum plot_kind");

const char *plot_kind_name(enum plot_kind k)
{
    return k >= 0 && k < PLOT_KIND_COUNT ? kinds[k].name : "?";
}

const char *plot_kind_description(enum plot_kind k)
{
    return k >= 0 && k < PLOT_KIND_COUNT ? kinds[k].description : "";
}

const char *plot_kind_list(char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < PLOT_KIND_COUNT && o < n; i++) {
        int w = snprintf(buf + o, n - o, "%s%s", i ? ", " : "", kinds[i].name);
        o += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

int plot_kind_parse(const char *s, enum plot_kind *k, struct rl_err *e)
{
    for (int i = 0; i < PLOT_KIND_COUNT; i++)
        if (s && strcmp(s, kinds[i].name) == 0) {
            *k = (enum plot_kind)i;
            return 0;
        }
    char list[128];
    return rl_errf(e, RL_EINVAL, "KIND: '%s' is not a plot kind; allowed: %s", s ? s : "",
                   plot_kind_list(list, sizeof list));
}

int plot_write(const struct plot_opts *o, struct plot_files *files, struct rl_err *e)
{
    struct plot__fig f = {.o = o, .kind_name = plot_kind_name(o->kind)};
    int rc = plot_files_of(o->out, files, e);
    if (rc || (rc = plot_format_of(o->out, &f.fmt, e)))
        return rc;
    if (o->n_in < 1)
        return rl_errf(e, RL_EINVAL, "in: no input given; plot %s needs at least one", plot_kind_name(o->kind));
    snprintf(f.dat_name, sizeof f.dat_name, "%s", plot__base(files->dat));
    snprintf(f.out_name, sizeof f.out_name, "%s", plot__base(o->out));
    struct rl_outfile dat = {0}, gp = {0};
    if ((rc = rl_outfile_open(&dat, files->dat, e)))
        return rc;
    if ((rc = rl_outfile_open(&gp, files->gp, e))) {
        rl_outfile_abort(&dat);
        return rc;
    }
    f.dat = dat.fp;
    f.gp = gp.fp;
    rc = o->kind >= 0 && o->kind < PLOT_KIND_COUNT ? kinds[o->kind].writer(&f, e)
                                                   : rl_errf(e, RL_EINTERNAL, "plot: kind %d", (int)o->kind);
    if (!rc && f.gp_rc) {
        *e = f.gp_err;
        rc = f.gp_rc;
    }
    if (rc) {
        rl_outfile_abort(&dat);
        rl_outfile_abort(&gp);
        return rc;
    }
    if ((rc = rl_outfile_commit(&dat, e))) {
        rl_outfile_abort(&gp);
        return rc;
    }
    if ((rc = rl_outfile_commit(&gp, e)))
        remove(files->dat);   /* both or neither */
    return rc;
}
