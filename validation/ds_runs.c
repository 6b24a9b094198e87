/* validation/ds_runs.c — the runs in DeepSpeed logs, read, grouped and joined (ds_runs.h). */
#include <stdlib.h>
#include <string.h>

#include "traces/trace.h"   /* trace_read_file */
#include "validation/ds_runs.h"
#include "validation/probe.h"   /* val_facts_apply */

bool val_ds_unit_has_config(const struct val_ds_unit *u) { return u->cfg.have_version || u->cfg.have_zero; }

void val_ds_runs_free(struct val_ds_runs *r)
{
    for (int i = 0; r->u && i < r->n; i++) {
        trace_ds_free(&r->u[i].log);
        free(r->u[i].ms);
        trace_ds_timers_free(&r->u[i].tm);
    }
    free(r->u);
    r->u = NULL;
    r->n = 0;
}

/* One run's text (len bytes at text) behind first_line - 1 newlines, so that every reader names
 * the log's own line numbers. malloc'd, NUL-terminated; *n its length. */
static char *unit_text(const char *text, size_t len, int first_line, size_t *n)
{
    size_t pad = (size_t)(first_line - 1);
    char *b = malloc(pad + len + 1);
    if (!b)
        return NULL;
    memset(b, '\n', pad);
    memcpy(b + pad, text, len);
    b[pad + len] = 0;
    *n = pad + len;
    return b;
}

/* Reads one run of a log: configuration, stages, iterations and timers. */
static int read_unit(const char *path, const char *text, const struct trace_ds_run *run, struct val_ds_unit *u,
                     struct rl_err *e)
{
    size_t n;
    char *b = unit_text(text + run->offset, run->len, run->first_line, &n);
    if (!b)
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    u->first_line = run->first_line;
    int64_t *it = NULL;
    int rc = trace_ds_config_parse(b, n, path, &u->cfg, e);
    if (!rc) {
        struct rl_err se = {0};
        int rs = trace_ds_parse(b, n, path, &u->log, &se);
        /* No see_memory_usage line in this run is no error (Megatron's stdout, a run that only
         * logged iterations); a malformed one is. */
        if (rs && !(rs == RL_EINVAL && strstr(se.msg, "no DeepSpeed see_memory_usage lines"))) {
            *e = se;
            rc = rs;
        }
    }
    if (!rc) {
        char *c = unit_text(text + run->offset, run->len, run->first_line, &n);
        rc = c ? trace_ds_parse_iterations(c, n, path, &u->ms, &it, &u->n_ms, e)
               : rl_errf(e, RL_ENOMEM, "validate: out of memory");
        free(c);
    }
    free(it);
    if (!rc)
        rc = trace_ds_parse_timers(b, n, path, &u->tm, e);
    free(b);
    return rc;
}

int val_ds_runs_read(struct val_ds_runs *r, const char *const *paths, int n_paths, struct rl_err *e)
{
    memset(r, 0, sizeof *r);
    r->paths = paths;
    int cap = 0;
    for (int f = 0; f < n_paths; f++) {
        char *text = NULL;
        size_t len = 0;
        int rc = trace_read_file(paths[f], &text, &len, e);
        struct trace_ds_run *runs = NULL;
        int n_runs = 0;
        if (!rc)
            rc = trace_ds_split_runs(text, len, paths[f], &runs, &n_runs, e);
        int stages = 0, iters = 0, first = r->n;
        for (int k = 0; !rc && k < n_runs; k++) {
            if (rl_grow(&r->u, &cap, sizeof *r->u, r->n + 1, 4)) {
                rc = rl_errf(e, RL_ENOMEM, "validate: out of memory");
                break;
            }
            struct val_ds_unit *u = &r->u[r->n];
            memset(u, 0, sizeof *u);
            u->file = f;
            rc = read_unit(paths[f], text, &runs[k], u, e);
            stages += u->log.n_stages;
            iters += u->n_ms;
            r->n++;
        }
        r->empty = !rc && !stages && !iters;
        if (r->empty) {
            rc = rl_errf(e, RL_EINVAL, "%s: no DeepSpeed see_memory_usage lines (expected '... "
                         "[utils.py:N:see_memory_usage] <stage>' as DeepSpeed logs them)", paths[f]);
            r->empty_cfg = r->u[first].cfg;
        }
        free(runs);
        free(text);
        if (rc) {
            rl_err_prefix(e, "deepspeed_log");
            val_ds_runs_free(r);
            return rc;
        }
    }
    return 0;
}

/* "run.log:12": where a run starts, for its verdicts (the path as data). */
static const char *unit_name(const struct val_ds_runs *r, const struct val_ds_unit *u, char *buf, size_t n)
{
    char path[4096];
    snprintf(buf, n, "%s:%d", rl_text_data(path, sizeof path, r->paths[u->file]), u->first_line);
    return buf;
}

int val_ds_runs_group(const struct val_ds_runs *r, struct val_ds_group *groups, int max, int *n_groups, bool *differ,
                      struct rl_err *e)
{
    const struct val_ds_unit *u = r->u;
    int first_cfg = -1;
    *differ = false;
    *n_groups = 0;
    for (int i = 0; i < r->n; i++)
        if (val_ds_unit_has_config(&u[i])) {
            if (first_cfg < 0)
                first_cfg = i;
            else if (!trace_ds_config_same(&u[first_cfg].cfg, &u[i].cfg))
                *differ = true;
        }
    if (r->n > VAL_DS_GROUP_MAX || r->n > max)
        return rl_errf(e, RL_EINVAL, "deepspeed_log: the logs hold %d runs; allowed: at most %d", r->n,
                       VAL_DS_GROUP_MAX < max ? VAL_DS_GROUP_MAX : max);
    char nm[600];
    if (!*differ) {
        struct val_ds_group *g = &groups[(*n_groups)++];
        g->n = 0;
        g->name[0] = 0;
        for (int i = 0; i < r->n; i++) {
            g->units[g->n++] = i;
            size_t l = strlen(g->name);
            snprintf(g->name + l, sizeof g->name - l, "%s%s", l ? ", " : "", unit_name(r, &u[i], nm, sizeof nm));
        }
        return 0;
    }
    for (int i = 0; i < r->n; i++) {
        if (val_ds_unit_has_config(&u[i])) {
            struct val_ds_group *g = &groups[(*n_groups)++];
            g->n = 0;
            g->units[g->n++] = i;
            snprintf(g->name, sizeof g->name, "%s", unit_name(r, &u[i], nm, sizeof nm));
        } else if (u[i].log.n_stages || u[i].n_ms) {
            char path[4096];
            return rl_errf(e, RL_EINVAL, "deepspeed_log %s: holds %s but no DeepSpeed configuration, and the other "
                           "logs hold runs of different configurations (%s and %s): which run it belongs to is not "
                           "known; give each run's logs to a validate of its own",
                           rl_text_data(path, sizeof path, r->paths[u[i].file]),
                           u[i].log.n_stages ? "see_memory_usage stages" : "iteration times",
                           unit_name(r, &u[first_cfg], nm, sizeof nm), "another");
        }
    }
    return 0;
}

int val_ds_group_join(const struct val_ds_runs *r, const struct val_ds_group *g, struct trace_ds_log *logs,
                      double **ms, int *n_ms, struct trace_ds_timers *tm, struct rl_err *e)
{
    *ms = NULL;
    *n_ms = 0;
    memset(tm, 0, sizeof *tm);
    for (int i = 0; i < g->n; i++) {
        const struct val_ds_unit *x = &r->u[g->units[i]];
        logs[i] = x->log;
        double *all = realloc(*ms, (size_t)(*n_ms + x->n_ms + 1) * sizeof *all);
        if (!all)
            return rl_errf(e, RL_ENOMEM, "validate: out of memory");
        *ms = all;
        if (x->n_ms)
            memcpy(*ms + *n_ms, x->ms, (size_t)x->n_ms * sizeof **ms);
        *n_ms += x->n_ms;
        for (int k = 0; k < TRACE_DST_COUNT; k++) {
            if (!x->tm.n[k])
                continue;
            double *v = realloc(tm->ms[k], (size_t)(tm->n[k] + x->tm.n[k]) * sizeof *v);
            if (!v)
                return rl_errf(e, RL_ENOMEM, "validate: out of memory");
            tm->ms[k] = v;
            memcpy(v + tm->n[k], x->tm.ms[k], (size_t)x->tm.n[k] * sizeof *v);
            tm->n[k] += x->tm.n[k];
            tm->cap[k] = tm->n[k];
        }
    }
    return 0;
}

int val_ds_group_file(const struct val_ds_runs *r, const struct val_ds_group *g, int i)
{
    return r->u[g->units[i]].file;
}

int val_ds_group_facts(const struct val_ds_runs *r, const struct val_ds_group *g, const struct plan_inputs *in,
                       struct plan_setup *c, struct trace_ds_config *logged, struct rl_err *e)
{
    memset(logged, 0, sizeof *logged);
    for (int i = 0; i < g->n; i++) {
        const struct val_ds_unit *x = &r->u[g->units[i]];
        if (!val_ds_unit_has_config(x))
            continue;
        char path[4096], what[700];
        snprintf(what, sizeof what, "deepspeed_log %s (the run from line %d)",
                 rl_text_data(path, sizeof path, r->paths[x->file]), x->first_line);
        RL_TRY(val_facts_apply(&x->cfg, 0, what, in, c, e));
        if (!logged->have_version && !logged->have_zero)
            *logged = x->cfg;
    }
    return 0;
}
