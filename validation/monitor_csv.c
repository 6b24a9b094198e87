/* validation/monitor_csv.c — reads a `ratiolab monitor --csv` file into per-process figures. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "traces/schema.h"   /* the monitor CSV's columns and the CSV splitter */
#include "validation/val.h"

/* Columns used, found by header name through the monitor CSV's table (traces/schema.h). */
enum { C_T, C_PID, C_COMM, C_RANK, C_RSS, C_HWM, C_N };
static const enum trace_mon_col used[C_N] = {TRACE_MON_T_NS, TRACE_MON_PID, TRACE_MON_COMM, TRACE_MON_RANK,
                                             TRACE_MON_RSS, TRACE_MON_HWM};

static int field_i64(const char *s, int64_t *out)
{
    if (!*s)
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* Ends the sample being read: each rank's sum at it against the rank's peak. */
static void close_sample(struct val_monitor *m)
{
    for (int i = 0; i < m->n_ranks; i++) {
        struct val_mon_rank *r = &m->ranks[i];
        if (r->cur_rss_bytes > r->peak_sample_rss_bytes)
            r->peak_sample_rss_bytes = r->cur_rss_bytes;
        r->cur_rss_bytes = 0;
    }
}

int64_t val_monitor_rank_peak(const struct val_mon_rank *r)
{
    return r->peak_sample_rss_bytes > r->peak_hwm_bytes ? r->peak_sample_rss_bytes : r->peak_hwm_bytes;
}

/* Bounds of a field, far above any machine's (1 PiB of memory, pids and ranks of an int): a
 * rank's sum over its processes then overflows only over 8192 of them, and is checked too. */
#define MON_MAX_BYTES (INT64_C(1) << 50)
static const int64_t col_max[C_N] = {INT64_MAX, INT32_MAX, 0, INT32_MAX, MON_MAX_BYTES, MON_MAX_BYTES};

int val_monitor_read(const char *path, struct val_monitor *m, struct rl_err *e)
{
    memset(m, 0, sizeof *m);
    struct rl_imap pids = {0}, ranks = {0};   /* pid -> procs[], rank -> ranks[]: O(1) per row */
    char *text;
    size_t len;
    int rc = rl_read_file(path, &text, &len, e);
    if (rc)
        return rl_err_prefix(e, "monitor_csv");
    int col[C_N] = {-1, -1, -1, -1, -1, -1};
    int line_no = 0, cap = 0, rank_cap = 0, rows = 0;
    int64_t sample_t = -1;   /* t_ns of the sample being read: rows of one sample share it */
    bool header_seen = false;
    char *f[64];
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        line_no++;
        size_t ll = strlen(line);
        if (ll && line[ll - 1] == '\r')
            line[ll - 1] = 0;
        if (*line == '#') {   /* a comment line (version, followed pids) */
            line = nl ? nl + 1 : NULL;
            continue;
        }
        int nf = trace_csv_split(line, f, 64);
        if (nf < 0) {
            rc = rl_errf(e, RL_EINVAL, "monitor_csv %s: line %d: more than 64 fields or a quoted field not "
                         "closed (expected the CSV of ratiolab monitor --csv)", path, line_no);
            goto out;
        }
        if (!header_seen) {   /* the first line that is not a comment: the header */
            header_seen = true;
            const char *names[C_N];
            for (int k = 0; k < C_N; k++)
                names[k] = trace_mon_cols[used[k]];
            const char *missing = trace_csv_columns(f, nf, names, C_N, col);
            if (missing) {
                rc = rl_errf(e, RL_EINVAL, "monitor_csv %s: line %d: no column '%s' (expected the "
                             "header of ratiolab monitor --csv)", path, line_no, missing);
                goto out;
            }
        } else if (nf > 1 || *f[0]) {
            int64_t v[C_N] = {0};
            for (int k = 0; k < C_N; k++) {
                if (k == C_COMM)
                    continue;
                if (col[k] >= nf) {
                    rc = rl_errf(e, RL_EINVAL, "monitor_csv %s: line %d: %d fields, column '%s' is "
                                 "missing", path, line_no, nf, trace_mon_cols[used[k]]);
                    goto out;
                }
                const char *s = f[col[k]];
                if (*s == 0 || strcmp(s, "unavailable") == 0) {   /* empty: unknown (see status) */
                    v[k] = -1;
                    continue;
                }
                if (field_i64(s, &v[k])) {
                    rc = rl_errf(e, RL_EINVAL, "monitor_csv %s: line %d: column '%s': '%s' is not an "
                                 "integer", path, line_no, trace_mon_cols[used[k]], s);
                    goto out;
                }
                int64_t lo = k == C_RANK || k == C_RSS || k == C_HWM ? -1 : 0;   /* -1: unknown */
                if (v[k] < lo || v[k] > col_max[k]) {
                    rc = rl_errf(e, RL_EINVAL, "monitor_csv %s: line %d: column '%s': %lld; allowed: %lld..%lld",
                                 path, line_no, trace_mon_cols[used[k]], (long long)v[k], (long long)lo, (long long)col_max[k]);
                    goto out;
                }
            }
            rows++;
            if (v[C_T] != sample_t) {
                close_sample(m);
                sample_t = v[C_T];
            }
            int at = rl_imap_get(&pids, v[C_PID]);
            struct val_mon_proc *pr = at >= 0 ? &m->procs[at] : NULL;
            if (!pr) {
                if (rl_grow(&m->procs, &cap, sizeof *m->procs, m->n_procs + 1, 16) ||
                    rl_imap_put(&pids, v[C_PID], m->n_procs)) {
                    rc = rl_errf(e, RL_ENOMEM, "monitor_csv %s: out of memory", path);
                    goto out;
                }
                pr = &m->procs[m->n_procs++];
                memset(pr, 0, sizeof *pr);
                pr->pid = (int)v[C_PID];
                pr->rank = (int)v[C_RANK];
                snprintf(pr->comm, sizeof pr->comm, "%s", f[col[C_COMM]]);
                pr->first_rss_bytes = v[C_RSS];
                pr->first_t_ns = v[C_T];
                pr->peak_rss_bytes = -1;
            }
            pr->samples++;
            if (pr->rank < 0 && v[C_RANK] >= 0)
                pr->rank = (int)v[C_RANK];
            if (pr->first_rss_bytes < 0)
                pr->first_rss_bytes = v[C_RSS];
            int64_t peak = v[C_RSS] > v[C_HWM] ? v[C_RSS] : v[C_HWM];
            bool new_to_rank = pr->samples == 1;
            if (peak > pr->peak_rss_bytes)
                pr->peak_rss_bytes = peak;
            if (v[C_RANK] >= 0) {   /* the rank's processes at this sample, summed */
                int ra = rl_imap_get(&ranks, v[C_RANK]);
                struct val_mon_rank *rk = ra >= 0 ? &m->ranks[ra] : NULL;
                if (!rk) {
                    if (rl_grow(&m->ranks, &rank_cap, sizeof *m->ranks, m->n_ranks + 1, 8) ||
                        rl_imap_put(&ranks, v[C_RANK], m->n_ranks)) {
                        rc = rl_errf(e, RL_ENOMEM, "monitor_csv %s: out of memory", path);
                        goto out;
                    }
                    rk = &m->ranks[m->n_ranks++];
                    memset(rk, 0, sizeof *rk);
                    rk->rank = (int)v[C_RANK];
                }
                rk->procs += new_to_rank;
                if (v[C_RSS] > 0 && __builtin_add_overflow(rk->cur_rss_bytes, v[C_RSS], &rk->cur_rss_bytes)) {
                    rc = rl_errf(e, RL_EINVAL, "monitor_csv %s: line %d: rank %lld: the rss_bytes of its processes "
                                 "at one sample sum past 2^63", path, line_no, (long long)v[C_RANK]);
                    goto out;
                }
                if (v[C_HWM] > rk->peak_hwm_bytes)
                    rk->peak_hwm_bytes = v[C_HWM];
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    close_sample(m);
    if (!rows)
        rc = rl_errf(e, RL_EINVAL, "monitor_csv %s: no samples (expected a CSV written by ratiolab "
                     "monitor --csv)", path);
out:
    free(text);
    rl_imap_free(&pids);
    rl_imap_free(&ranks);
    if (rc)
        val_monitor_free(m);
    return rc;
}

void val_monitor_free(struct val_monitor *m)
{
    if (!m)
        return;
    free(m->procs);
    m->procs = NULL;
    m->n_procs = 0;
    free(m->ranks);
    m->ranks = NULL;
    m->n_ranks = 0;
}

const struct val_mon_proc *val_monitor_rank(const struct val_monitor *m, int rank)
{
    const struct val_mon_proc *best = NULL;
    bool any_rank = false;
    for (int i = 0; i < m->n_procs; i++)
        if (m->procs[i].rank >= 0)
            any_rank = true;
    for (int i = 0; i < m->n_procs; i++) {
        const struct val_mon_proc *p = &m->procs[i];
        if (any_rank ? p->rank == rank && !best : !best || p->peak_rss_bytes > best->peak_rss_bytes)
            best = p;
    }
    return best;
}
