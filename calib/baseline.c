/* calib/baseline.c — see baseline.h. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/baseline.h"
#include "hw/hw.h"   /* hw_writer: the profile is written through its key table */

#define GIB(b) ((double)(b) / (double)RL_GIB)

int calib_baseline_of(const struct calib_mon_rank *r, int n, int64_t tensor_bytes_per_rank, const char *csv,
                      struct calib_baseline *b, struct rl_err *e)
{
    memset(b, 0, sizeof *b);
    b->tensor_bytes = tensor_bytes_per_rank;
    for (int i = 0; i < n; i++) {
        if (r[i].peak_rss_bytes <= 0)
            continue;
        int64_t v = r[i].peak_rss_bytes - tensor_bytes_per_rank;
        if (v < 0)
            return rl_errf(e, RL_EINVAL, "monitor_csv %s: %s%d peaked at %.2f GiB resident, below the %.2f GiB of host "
                           "tensors the ledger puts on a rank for the model and config given; expected a monitor CSV of "
                           "a run of that model and config", csv, r[i].rank < 0 ? "the largest process (no rank) " : "rank ",
                           r[i].rank < 0 ? 0 : r[i].rank, GIB(r[i].peak_rss_bytes), GIB(tensor_bytes_per_rank));
        if (b->n_ranks == 0 || v > b->bytes_per_rank) {
            b->bytes_per_rank = v;
            b->rank = r[i].rank;
            b->n_procs = r[i].procs;
            b->rss_bytes = r[i].peak_rss_bytes;
        }
        if (b->n_ranks == 0 || v < b->min_bytes_per_rank)
            b->min_bytes_per_rank = v;
        b->n_ranks++;
    }
    if (b->n_ranks == 0)
        return rl_errf(e, RL_EINVAL, "monitor_csv %s: no process with a resident set (expected the rows of ratiolab "
                       "monitor --csv)", csv);
    return 0;
}

const char *calib_baseline_source(const struct calib_baseline *b, const char *csv, const char *what,
                                  char *buf, size_t n)
{
    char who[96];
    if (b->rank < 0)
        snprintf(who, sizeof who, "its largest process (no process carried RANK or OMPI_COMM_WORLD_RANK)");
    else
        snprintf(who, sizeof who, "rank %d's %d process%s", b->rank, b->n_procs, b->n_procs == 1 ? "" : "es");
    snprintf(buf, n, "taken by ratiolab calibrate --host-baseline-from from the ratiolab monitor CSV %s: %s peaked at "
             "%.2f GiB resident (VmRSS summed over the rank's processes at one sample, the rank and its forked "
             "workers, or one's VmHWM), less %.2f GiB of host tensors the ledger puts on a rank (%s) = %.2f GiB; %d rank%s, %.2f-%.2f "
             "GiB; an upper bound where the processes of a rank share pages, low by up to the tensors when the peak "
             "came before the offloaded optimizer existed", csv, who, GIB(b->rss_bytes), GIB(b->tensor_bytes), what,
             GIB(b->bytes_per_rank), b->n_ranks, b->n_ranks == 1 ? "" : "s", GIB(b->min_bytes_per_rank),
             GIB(b->bytes_per_rank));
    return buf;
}

int calib_baseline_profile(const char *base_text, const char *name, const struct calib_baseline *b,
                           const char *source, char **out, struct rl_err *e)
{
    *out = NULL;
    struct hw_writer w;
    int rc = hw_writer_open(&w, base_text, e);
    if (rc)
        return rc;
    if (!json_is_object(json_object_get(w.root, "node"))) {
        hw_writer_abort(&w);
        return rl_errf(e, RL_EINVAL, "hw: not a profile (expected a JSON object with a \"node\" object)");
    }
    hw_put_str(&w, "name", name);
    hw_put(&w, "node.host_baseline_bytes_per_rank", (double)b->bytes_per_rank);
    hw_source(&w, "node.host_baseline_bytes_per_rank", source);
    /* 15 significant digits: the base's decimal figures (0.62, 25.0) are written as they were. */
    return hw_writer_close(&w, 15, out, e);
}
