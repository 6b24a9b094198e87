/* plots/write.c — `plot_write`: the figure's data and script files opened as a pair, the kind's
 * writer (kind_*.c) run into them, both committed or neither. */
#include <stdio.h>

#include "plots/plot_impl.h"

int plot_write(const struct plot_opts *o, struct plot_files *files, struct rl_err *e)
{
    struct plot__fig f = {.o = o};
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
    static int (*const writers[PLOT_KIND_COUNT])(struct plot__fig *, struct rl_err *) = {
        plot__memory, plot__time, plot__timeline, plot__parity, plot__scaling, plot__monitor};
    rc = o->kind >= 0 && o->kind < PLOT_KIND_COUNT ? writers[o->kind](&f, e)
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
