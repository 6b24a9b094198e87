/* campaign/calib_out.c — calibrate's profile written once it loads, and the host baseline from a
 * monitor CSV (see calib_out.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "campaign/calib_out.h"
#include "plan/plan.h"
#include "sim/hw.h"
#include "validation/val.h"

int camp_profile_write(const char *text, const char *out, struct rl_err *e)
{
    struct hw_profile check;   /* the profile must load as --hw FILE will load it */
    if (sim_hw_parse(&check, text, out, e))
        return rl_err_prefix(e, "calibrate: the written profile does not load");
    struct rl_outfile of;
    RL_TRY(rl_outfile_open(&of, out, e));
    fprintf(of.fp, "%s\n", text);
    return rl_outfile_commit(&of, e);
}

/* The profile file named by hw (a catalog name resolves to catalog/hardware/<name>.json, with the
 * name as the loaded profile spells it). */
static void profile_path(const char *name_or_path, const char *catalog, const struct hw_profile *hw, char *path,
                         size_t n)
{
    size_t l = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (l > 5 && strcmp(name_or_path + l - 5, ".json") == 0))
        snprintf(path, n, "%s", name_or_path);
    else
        snprintf(path, n, "%s/hardware/%s.json", catalog ? catalog : ".", hw->name);
}

/* The ranks of the run as calib_baseline_of takes them: each rank's processes and peak, or, when no
 * process carries a rank, its largest process standing for one. *ranks is malloc'd. */
static int ranks_of(const struct val_monitor *mon, struct calib_mon_rank **ranks, int *n, struct rl_err *e)
{
    *ranks = calloc((size_t)mon->n_ranks + 1, sizeof **ranks);
    if (!*ranks)
        return rl_errf(e, RL_ENOMEM, "calibrate: out of memory");
    *n = 0;
    for (int i = 0; i < mon->n_ranks; i++)
        (*ranks)[(*n)++] = (struct calib_mon_rank){.rank = mon->ranks[i].rank, .procs = mon->ranks[i].procs,
                                                   .peak_rss_bytes = val_monitor_rank_peak(&mon->ranks[i])};
    if (*n == 0) {   /* no process carries a rank: the largest stands for one */
        const struct val_mon_proc *big = val_monitor_rank(mon, 0);
        if (big)
            (*ranks)[(*n)++] = (struct calib_mon_rank){.rank = -1, .procs = 1, .peak_rss_bytes = big->peak_rss_bytes};
    }
    return 0;
}

int camp_host_baseline(const struct camp_baseline_request *q, struct camp_baseline *r, struct rl_err *e)
{
    const struct plan_setup *c = q->setup;
    memset(r, 0, sizeof *r);
    struct val_monitor mon = {0};
    struct plan p;
    memset(&p, 0, sizeof p);
    struct hw_profile hw;
    struct calib_mon_rank *ranks = NULL;
    char *base = NULL, *text = NULL;
    size_t len;
    char path[4096], name[128], source[1600];
    int rc, n_ranks = 0;
    if ((rc = plan_setup_plan(c, -1, &p, e)) || (rc = sim_hw_load(&hw, c->catalog, q->hw, e)))
        goto out;
    snprintf(r->hw_name, sizeof r->hw_name, "%s", hw.name);
    r->hw_baseline_bytes = hw.host_baseline_bytes;
    profile_path(q->hw, c->catalog, &hw, path, sizeof path);
    if ((rc = rl_read_file(path, &base, &len, e))) {
        rl_err_prefix(e, "hw");
        goto out;
    }
    snprintf(name, sizeof name, "%s", q->name ? q->name : "");
    if (!q->name)
        snprintf(name, sizeof name, "%.100s-baseline", hw.name);
    for (const unsigned char *k = (const unsigned char *)name; *k; k++)
        if (*k < 0x20 || *k == 0x7f) {
            rc = rl_errf(e, RL_EINVAL, "name: a control character (0x%02x); allowed: printable text", *k);
            goto out;
        }
    snprintf(r->out, sizeof r->out, "%s", q->out ? q->out : "");
    if (!q->out)
        snprintf(r->out, sizeof r->out, "%s.json", name);
    if ((rc = rl_outfile_check(r->out, e)) || (rc = val_monitor_read(q->csv, &mon, e)) ||
        (rc = ranks_of(&mon, &ranks, &n_ranks, e)))
        goto out;
    r->tensor_bytes = plan_peak_cpu_bytes(&p);
    if ((rc = calib_baseline_of(ranks, n_ranks, r->tensor_bytes, q->csv, &r->b, e)))
        goto out;
    if (c->zero.offload == PLAN_OFFLOAD_NONE)
        snprintf(r->what, sizeof r->what, "%s, no optimizer offload", c->model_desc);
    else
        snprintf(r->what, sizeof r->what, "%s, optimizer offload to the CPU at ratio %.2f", c->model_desc,
                 c->zero.ratio);
    calib_baseline_source(&r->b, q->csv, r->what, source, sizeof source);
    if ((rc = calib_baseline_profile(base, name, &r->b, source, &text, e))) {
        rl_err_prefix(e, "hw %s", path);
        goto out;
    }
    rc = camp_profile_write(text, r->out, e);
out:
    free(text);
    free(base);
    free(ranks);
    val_monitor_free(&mon);
    plan_free(&p);
    return rc;
}
