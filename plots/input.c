/* plots/input.c — readers for sweeps (JSON and CSV), validate reports and monitor CSVs. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/input.h"
#include "traces/schema.h"  /* the monitor CSV's and the sweep's tables, the CSV splitter */
#include "traces/trace.h"   /* trace_read_file: plain or gzip */

const char *plot__base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void copy_str(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

/* ---- small JSON accessors: each names the file and the field ---------------------------------- */
static int j_int(json_t *o, const char *key, const char *file, const char *where, int64_t *out, bool required,
                 struct rl_err *e)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        if (!required)
            return 0;
        return rl_errf(e, RL_EINVAL, "%s: %s: field '%s' missing; expected an integer", file, where, key);
    }
    if (!json_is_integer(v))
        return rl_errf(e, RL_EINVAL, "%s: %s: field '%s' is not an integer", file, where, key);
    *out = json_integer_value(v);
    return 0;
}

static int j_num(json_t *o, const char *key, const char *file, const char *where, double *out, bool required,
                 struct rl_err *e)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        if (!required)
            return 0;
        return rl_errf(e, RL_EINVAL, "%s: %s: field '%s' missing; expected a number", file, where, key);
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return rl_errf(e, RL_EINVAL, "%s: %s: field '%s' is not a finite number", file, where, key);
    *out = json_number_value(v);
    return 0;
}

/* A ratio: j_num, then in [0, 1] (a plot of a ratio of 1e308 is no plot of an offload ratio). */
static int j_ratio(json_t *o, const char *key, const char *file, const char *where, double *out, struct rl_err *e)
{
    int rc = j_num(o, key, file, where, out, true, e);
    if (!rc && !(*out >= 0 && *out <= 1))
        rc = rl_errf(e, RL_EINVAL, "%s: %s: field '%s': %g; allowed: a ratio in [0, 1]", file, where, key, *out);
    return rc;
}

static void j_str(json_t *o, const char *key, char *dst, size_t n, const char *fallback)
{
    json_t *v = json_object_get(o, key);
    copy_str(dst, n, json_is_string(v) ? json_string_value(v) : fallback);
}

static int load_json(const char *path, json_t **root, struct rl_err *e)
{
    char *text = NULL;
    size_t len = 0;
    int rc = trace_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    json_error_t je;
    *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!*root)
        return rl_errf(e, RL_EINVAL, "%s: line %d: not JSON (%s)", path, je.line, je.text);
    return 0;
}

/* ---- sweep --json --------------------------------------------------------------------------------- */
static int sweep_json(const char *path, json_t *root, struct plot__sweep *s, struct rl_err *e)
{
    json_t *rows = json_object_get(root, trace_sweep_keys[TRACE_SWEEP_K_ROWS]);
    if (!json_is_object(root) || !json_is_array(rows) || json_array_size(rows) == 0)
        return rl_errf(e, RL_EINVAL, "%s: not a sweep (expected the output of `ratiolab sweep --json`: an "
                       "object with a non-empty 'rows' array)", path);
    j_str(root, trace_sweep_keys[TRACE_SWEEP_K_MODEL], s->model, sizeof s->model, "unknown");
    j_str(root, trace_sweep_keys[TRACE_SWEEP_K_HARDWARE], s->hardware, sizeof s->hardware, "unknown");
    j_str(root, trace_sweep_keys[TRACE_SWEEP_K_SCHEDULE], s->schedule, sizeof s->schedule, "unknown");
    j_str(root, trace_sweep_keys[TRACE_SWEEP_K_POLICY], s->policy, sizeof s->policy, "unknown");
    j_str(root, trace_sweep_keys[TRACE_SWEEP_K_DS_VERSION], s->ds_version, sizeof s->ds_version, "");
    j_str(root, trace_sweep_keys[TRACE_SWEEP_K_OFFLOAD], s->offload, sizeof s->offload, "");
    int64_t gpus = 0;
    int rc = j_int(root, trace_sweep_keys[TRACE_SWEEP_K_GPUS], path, "top level", &gpus, false, e);
    if (rc)
        return rc;
    int64_t tp = 1, pp = 1, rank_numel = 0;
    if ((rc = j_int(root, trace_sweep_keys[TRACE_SWEEP_K_RANK_NUMEL], path, "top level", &rank_numel, false, e)) ||
        (rc = j_int(root, trace_sweep_keys[TRACE_SWEEP_K_TP], path, "top level", &tp, false, e)) ||
        (rc = j_int(root, trace_sweep_keys[TRACE_SWEEP_K_PP], path, "top level", &pp, false, e)))
        return rc;
    s->params = rank_numel * tp * pp;
    /* Older sweeps name the GPU count only in the model description ("..., 8 GPUs on 1 node"). */
    const char *g = strstr(s->model, " GPUs on");
    if (!gpus && g) {
        const char *p = g;
        while (p > s->model && p[-1] >= '0' && p[-1] <= '9')
            p--;
        gpus = strtol(p, NULL, 10);
    }
    s->gpus = (int)gpus;
    s->n_rows = (int)json_array_size(rows);
    s->rows = calloc((size_t)s->n_rows, sizeof *s->rows);
    if (!s->rows)
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    s->has_phases = true;
    for (int i = 0; i < s->n_rows; i++) {
        json_t *r = json_array_get(rows, (size_t)i);
        struct plot__sweep_row *w = &s->rows[i];
        char where[32];
        snprintf(where, sizeof where, "rows[%d]", i);
        json_t *pr = json_object_get(r, trace_sweep_keys[TRACE_SWEEP_K_PREDICTION]);
        if (!json_is_object(r) || !json_is_object(pr))
            return rl_errf(e, RL_EINVAL, "%s: %s: expected an object with a 'prediction' object", path, where);
        json_t *gm = json_object_get(pr, "gpu_memory_per_rank"), *hm = json_object_get(pr, "host_memory");
        if (!json_is_object(gm) || !json_is_object(hm))
            return rl_errf(e, RL_EINVAL, "%s: %s.prediction: 'gpu_memory_per_rank' and 'host_memory' objects "
                           "expected", path, where);
        if ((rc = j_ratio(r, trace_sweep_keys[TRACE_SWEEP_K_REQUESTED], path, where, &w->requested, e)) ||
            (rc = j_ratio(r, trace_sweep_keys[TRACE_SWEEP_K_HONORED], path, where, &w->honored, e)) ||
            (rc = j_int(pr, "step_ns", path, where, &w->step_ns, true, e)) ||
            (rc = j_num(pr, "tokens_per_s_per_gpu", path, where, &w->tokens_per_s, false, e)) ||
            (rc = j_int(pr, "idle_ns", path, where, &w->idle_ns, false, e)) ||
            (rc = j_int(gm, "total_bytes", path, where, &w->gpu_bytes, true, e)) ||
            (rc = j_int(hm, "rank_bytes", path, where, &w->host_rank_bytes, true, e)) ||
            (rc = j_int(hm, "node_bytes", path, where, &w->host_node_bytes, true, e)))
            return rc;
        if (i == 0 && (rc = j_int(pr, "micro_batch", path, where, &s->micro_batch, false, e)) == 0)
            rc = j_int(pr, "seq_len", path, where, &s->seq_len, false, e);
        if (rc)
            return rc;
        json_t *fh = json_object_get(hm, "fits");
        w->fits_gpu = json_is_true(json_object_get(gm, "fits"));
        w->fits_host = !fh || json_is_true(fh);
        if (i == 0 && (rc = j_int(gm, "capacity_bytes", path, where, &s->gpu_capacity_bytes, false, e)))
            return rc;
        json_t *ph = json_object_get(pr, "phases");
        if (!json_is_object(ph))
            return rl_errf(e, RL_EINVAL, "%s: %s.prediction: 'phases' object missing", path, where);
        const char *key;
        json_t *v;
        json_object_foreach(ph, key, v) {
            int k = 0;
            while (k < s->n_phases && strcmp(s->phase[k], key) != 0)
                k++;
            if (k == s->n_phases) {
                if (k == PLOT__PH_MAX)
                    return rl_errf(e, RL_EINVAL, "%s: %s: more than %d phases", path, where, PLOT__PH_MAX);
                copy_str(s->phase[k], sizeof s->phase[k], key);
                s->n_phases++;
            }
            if ((rc = j_int(v, "exposed_ns", path, key, &w->exposed_ns[k], true, e)))
                return rc;
        }
    }
    return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno)
        return -1;
    *out = v;
    return 0;
}

/* ---- sweep --csv ----------------------------------------------------------------------------------- */
/* Columns used, found by header name through the sweep's table (traces/schema.h). */
enum { SC_REQ, SC_HON, SC_GPU, SC_HOST, SC_STEP, SC_FITS, SC_N };
static const enum trace_sweep_col sweep_used[SC_N] = {TRACE_SWEEP_REQUESTED, TRACE_SWEEP_HONORED, TRACE_SWEEP_GPU_BYTES,
                                                      TRACE_SWEEP_HOST_NODE_BYTES, TRACE_SWEEP_STEP_S, TRACE_SWEEP_FITS};
/* Fields a sweep CSV line may have: the fixed columns, two per phase, idle, and room. */
#define SWEEP_MAX_FIELDS 96

/* A comment line of the sweep CSV's header, "# key: value" (TRACE_SWEEP_COMMENT): copies value
 * into out (size n) when the key matches. */
static void csv_comment(const char *line, enum trace_sweep_key key, char *out, size_t n)
{
    char head[64];
    snprintf(head, sizeof head, TRACE_SWEEP_COMMENT, trace_sweep_keys[key]);
    size_t k = strlen(head);
    if (strncmp(line, head, k) == 0) {
        char v[512];
        copy_str(v, sizeof v, line + k);
        v[strcspn(v, "\r")] = 0;
        copy_str(out, n, v);
    }
}

static int parse_f64(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int sweep_csv(const char *path, char *text, struct plot__sweep *s, struct rl_err *e)
{
    copy_str(s->model, sizeof s->model, "unknown (sweep --csv does not record it)");
    copy_str(s->hardware, sizeof s->hardware, "unknown");
    copy_str(s->schedule, sizeof s->schedule, "unknown");
    copy_str(s->policy, sizeof s->policy, "unknown");
    /* Lines starting with '#' are comments, anywhere; those of the header name what the rows are of. */
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    int ln = 1;
    for (; line && *line == '#'; line = strtok_r(NULL, "\n", &save), ln++) {
        csv_comment(line, TRACE_SWEEP_K_MODEL, s->model, sizeof s->model);
        csv_comment(line, TRACE_SWEEP_K_HARDWARE, s->hardware, sizeof s->hardware);
        s->hardware[strcspn(s->hardware, ":")] = 0;   /* the profile name, before its description */
        csv_comment(line, TRACE_SWEEP_K_SCHEDULE, s->schedule, sizeof s->schedule);
        csv_comment(line, TRACE_SWEEP_K_POLICY, s->policy, sizeof s->policy);
        csv_comment(line, TRACE_SWEEP_K_DS_VERSION, s->ds_version, sizeof s->ds_version);
        csv_comment(line, TRACE_SWEEP_K_OFFLOAD, s->offload, sizeof s->offload);
    }
    char *hdr[SWEEP_MAX_FIELDS];
    int col[SC_N], n_cols = -1;
    const char *missing = trace_sweep_cols[sweep_used[0]];
    if (line) {
        line[strcspn(line, "\r")] = 0;
        const char *names[SC_N];
        for (int k = 0; k < SC_N; k++)
            names[k] = trace_sweep_cols[sweep_used[k]];
        if ((n_cols = trace_csv_split(line, hdr, SWEEP_MAX_FIELDS)) > 0)
            missing = trace_csv_columns(hdr, n_cols, names, SC_N, col);
    }
    if (missing)
        return rl_errf(e, RL_EINVAL, "%s: not a sweep (expected JSON or CSV from `ratiolab sweep`, whose CSV header "
                       "names the column '%s')", path, missing);
    int cap = 0;
    for (ln++; (line = strtok_r(NULL, "\n", &save)); ln++) {
        line[strcspn(line, "\r")] = 0;
        if (!*line || *line == '#')
            continue;
        if (rl_grow(&s->rows, &cap, sizeof *s->rows, s->n_rows + 1, 32))
            return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
        struct plot__sweep_row *w = &s->rows[s->n_rows];
        memset(w, 0, sizeof *w);
        char *f[SWEEP_MAX_FIELDS];
        int64_t gb, hb;
        double step_s;
        const char *fits;
        if (trace_csv_split(line, f, SWEEP_MAX_FIELDS) != n_cols || parse_f64(f[col[SC_REQ]], &w->requested) ||
            parse_f64(f[col[SC_HON]], &w->honored) || parse_i64(f[col[SC_GPU]], &gb) ||
            parse_i64(f[col[SC_HOST]], &hb) || parse_f64(f[col[SC_STEP]], &step_s) ||
            (strcmp(fits = f[col[SC_FITS]], "yes") != 0 && strcmp(fits, "no") != 0))
            return rl_errf(e, RL_EINVAL, "%s: line %d: expected %d comma-separated fields as its header names them "
                           "(%s, %s, %s, %s and %s numbers, %s yes or no)", path, ln, n_cols,
                           trace_sweep_cols[TRACE_SWEEP_REQUESTED], trace_sweep_cols[TRACE_SWEEP_HONORED],
                           trace_sweep_cols[TRACE_SWEEP_GPU_BYTES], trace_sweep_cols[TRACE_SWEEP_HOST_NODE_BYTES],
                           trace_sweep_cols[TRACE_SWEEP_STEP_S], trace_sweep_cols[TRACE_SWEEP_FITS]);
        if (!(w->requested >= 0 && w->requested <= 1) || !(w->honored >= 0 && w->honored <= 1))
            return rl_errf(e, RL_EINVAL, "%s: line %d: %s %g, %s %g; allowed: ratios in [0, 1]", path, ln,
                           RL_KEY_REQUESTED_RATIO, w->requested, RL_KEY_HONORED_RATIO, w->honored);
        w->gpu_bytes = gb;
        w->host_node_bytes = hb;
        w->host_rank_bytes = -1;
        w->step_ns = llround(step_s * 1e9);
        w->fits_gpu = w->fits_host = strcmp(fits, "yes") == 0;
        s->n_rows++;
    }
    if (!s->n_rows)
        return rl_errf(e, RL_EINVAL, "%s: a sweep CSV without rows", path);
    return 0;
}

int plot__sweep_read(const char *path, struct plot__sweep *s, struct rl_err *e)
{
    memset(s, 0, sizeof *s);
    copy_str(s->name, sizeof s->name, plot__base(path));
    char *text = NULL;
    size_t len = 0;
    int rc = trace_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
        i++;
    if (i < len && text[i] == '{') {
        json_error_t je;
        json_t *root = json_loadb(text, len, 0, &je);
        if (!root)
            rc = rl_errf(e, RL_EINVAL, "%s: line %d: not JSON (%s)", path, je.line, je.text);
        else
            rc = sweep_json(path, root, s, e);
        json_decref(root);
    } else {
        rc = sweep_csv(path, text, s, e);
    }
    free(text);
    if (rc)
        plot__sweep_free(s);
    return rc;
}

void plot__sweep_free(struct plot__sweep *s)
{
    free(s->rows);
    s->rows = NULL;
    s->n_rows = 0;
}

/* ---- validate report.json --------------------------------------------------------------------------- */
static int report_side(const char *path, const char *where, json_t *o, struct plot__report *r, struct plot__side *d,
                       struct rl_err *e)
{
    if (!json_is_object(o))
        return rl_errf(e, RL_EINVAL, "%s: %s: expected an object with step_ns and phases", path, where);
    int rc = j_int(o, "step_ns", path, where, &d->step_ns, true, e);
    if (rc)
        return rc;
    if (d->step_ns <= 0)
        return rl_errf(e, RL_EINVAL, "%s: %s: step_ns %lld; expected > 0", path, where, (long long)d->step_ns);
    for (int k = 0; k < PLOT__PH_MAX; k++)
        d->busy_ns[k] = d->exposed_ns[k] = -1;
    json_t *ph = json_object_get(o, "phases");
    if (!ph)
        return 0;
    if (!json_is_object(ph))
        return rl_errf(e, RL_EINVAL, "%s: %s: 'phases' is not an object", path, where);
    const char *key;
    json_t *v;
    json_object_foreach(ph, key, v) {
        int k = 0;
        while (k < r->n_phases && strcmp(r->phase[k], key) != 0)
            k++;
        if (k == r->n_phases) {
            if (k == PLOT__PH_MAX)
                return rl_errf(e, RL_EINVAL, "%s: %s: more than %d phases", path, where, PLOT__PH_MAX);
            copy_str(r->phase[k], sizeof r->phase[k], key);
            r->n_phases++;
        }
        char w2[160];
        snprintf(w2, sizeof w2, "%s.phases.%s", where, key);
        if ((rc = j_int(v, "busy_ns", path, w2, &d->busy_ns[k], false, e)) ||
            (rc = j_int(v, "exposed_ns", path, w2, &d->exposed_ns[k], false, e)))
            return rc;
    }
    return 0;
}

int plot__report_read(const char *path, struct plot__report *r, struct rl_err *e)
{
    memset(r, 0, sizeof *r);
    copy_str(r->name, sizeof r->name, plot__base(path));
    json_t *root = NULL;
    int rc = load_json(path, &root, e);
    if (rc)
        return rc;
    json_t *kind = json_object_get(root, "kind"), *rows = json_object_get(root, "rows");
    int64_t schema = 0;
    if (!json_is_object(root) || !json_is_string(kind) ||
        strcmp(json_string_value(kind), "ratiolab-validate-report") != 0) {
        rc = rl_errf(e, RL_EINVAL, "%s: field 'kind': expected \"ratiolab-validate-report\" (the report.json "
                     "of `ratiolab validate`)", path);
    } else if ((rc = j_int(root, "schema_version", path, "top level", &schema, true, e)) == 0 && schema != 1) {
        rc = rl_errf(e, RL_EINVAL, "%s: schema_version %lld; this ratiolab reads version 1", path,
                     (long long)schema);
    } else if (!rc && (!json_is_array(rows) || json_array_size(rows) == 0)) {
        rc = rl_errf(e, RL_EINVAL, "%s: field 'rows': expected a non-empty array", path);
    }
    if (!rc) {
        j_str(root, "model", r->model, sizeof r->model, "unknown");
        j_str(root, "hardware", r->hardware, sizeof r->hardware, "unknown");
        j_str(root, "backend", r->backend, sizeof r->backend, "unknown");
        j_str(root, "policy", r->policy, sizeof r->policy, "unknown");
        int64_t ranks = 0;
        rc = j_int(root, "ranks", path, "top level", &ranks, false, e);
        r->ranks = (int)ranks;
    }
    if (!rc) {
        r->n_rows = (int)json_array_size(rows);
        r->rows = calloc((size_t)r->n_rows, sizeof *r->rows);
        if (!r->rows)
            rc = rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    }
    for (int i = 0; !rc && i < r->n_rows; i++) {
        json_t *o = json_array_get(rows, (size_t)i);
        struct plot__report_row *w = &r->rows[i];
        char where[64];
        snprintf(where, sizeof where, "rows[%d]", i);
        if (!json_is_object(o)) {
            rc = rl_errf(e, RL_EINVAL, "%s: %s: expected an object", path, where);
            break;
        }
        j_str(o, "schedule", w->schedule, sizeof w->schedule, "unknown");
        j_str(o, "policy", w->policy, sizeof w->policy, r->policy);
        char wp[80], wm[80];
        snprintf(wp, sizeof wp, "%s.predicted", where);
        snprintf(wm, sizeof wm, "%s.measured", where);
        w->step_error_pct = NAN;
        w->others_cpu_pct = -1;
        json_t *oc = json_object_get(o, "others_cpu_pct");   /* optional; null when not measured */
        if (oc && !json_is_null(oc) && (rc = j_num(o, "others_cpu_pct", path, where, &w->others_cpu_pct, false, e)))
            break;
        if ((rc = j_ratio(o, "ratio", path, where, &w->ratio, e)) ||
            (rc = j_num(o, "step_error_pct", path, where, &w->step_error_pct, false, e)) ||
            (rc = report_side(path, wp, json_object_get(o, "predicted"), r, &w->pred, e)) ||
            (rc = report_side(path, wm, json_object_get(o, "measured"), r, &w->meas, e)))
            break;
    }
    json_decref(root);
    if (rc)
        plot__report_free(r);
    return rc;
}

void plot__report_free(struct plot__report *r)
{
    free(r->rows);
    r->rows = NULL;
    r->n_rows = 0;
}

/* ---- monitor --csv ---------------------------------------------------------------------------------- */
/* Columns used, found by header name through the monitor CSV's table (traces/schema.h). */
enum { MC_T, MC_PID, MC_COMM, MC_RANK, MC_RSS, MC_LOCKED, MC_PINNED, MC_GPU, MC_N };
static const enum trace_mon_col mon_used[MC_N] = {TRACE_MON_T_NS, TRACE_MON_PID, TRACE_MON_COMM, TRACE_MON_RANK,
                                                  TRACE_MON_RSS, TRACE_MON_LOCKED, TRACE_MON_PINNED, TRACE_MON_GPU};
/* Fields a line may have: the monitor's, and room for columns a later monitor adds. */
#define MON_MAX_FIELDS 64


/* A byte figure of a monitor CSV above this (1 PiB) is refused: locked + pinned is then far
 * inside int64. */
#define PLOT_MON_MAX_BYTES (INT64_C(1) << 50)

int plot__monitor_read(const char *path, struct plot__monitor *m, struct rl_err *e)
{
    memset(m, 0, sizeof *m);
    copy_str(m->name, sizeof m->name, plot__base(path));
    char *text = NULL;
    size_t len = 0;
    int rc = trace_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    while (line && *line == '#')   /* comment lines (version, followed pids) */
        line = strtok_r(NULL, "\n", &save);
    char *hdr[MON_MAX_FIELDS];
    int col[MC_N], n_cols = -1;
    const char *missing = "t_ns";
    if (line) {
        line[strcspn(line, "\r")] = 0;
        const char *names[MC_N];
        for (int k = 0; k < MC_N; k++)
            names[k] = trace_mon_cols[mon_used[k]];
        if ((n_cols = trace_csv_split(line, hdr, MON_MAX_FIELDS)) > 0)
            missing = trace_csv_columns(hdr, n_cols, names, MC_N, col);
    }
    if (missing)
        rc = rl_errf(e, RL_EINVAL, "%s: not a monitor CSV (expected the header of `ratiolab monitor --csv`, with a "
                     "column '%s')", path, missing);
    int cap = 0, pcap = 0;
    struct rl_imap pids = {0};   /* pid -> procs[]: O(1) per row */
    for (int ln = 2; !rc && (line = strtok_r(NULL, "\n", &save)); ln++) {
        size_t l = strlen(line);
        if (l && line[l - 1] == '\r')
            line[--l] = 0;
        if (!l || *line == '#')
            continue;
        char *f[MON_MAX_FIELDS];
        int64_t t, pid, rank, rss, gpu = -1, locked = 0, pinned = 0;
        if (trace_csv_split(line, f, MON_MAX_FIELDS) != n_cols || parse_i64(f[col[MC_T]], &t) ||
            parse_i64(f[col[MC_PID]], &pid) || parse_i64(f[col[MC_RANK]], &rank) || parse_i64(f[col[MC_RSS]], &rss) ||
            (f[col[MC_GPU]][0] && parse_i64(f[col[MC_GPU]], &gpu)) ||
            (f[col[MC_LOCKED]][0] && parse_i64(f[col[MC_LOCKED]], &locked)) ||
            (f[col[MC_PINNED]][0] && parse_i64(f[col[MC_PINNED]], &pinned)) || locked < 0 || pinned < 0 || t < 0 ||
            pid <= 0 || pid > INT32_MAX || rank < -1 || rank > INT32_MAX || rss < 0 || rss > PLOT_MON_MAX_BYTES ||
            gpu > PLOT_MON_MAX_BYTES || locked > PLOT_MON_MAX_BYTES || pinned > PLOT_MON_MAX_BYTES) {
            rc = rl_errf(e, RL_EINVAL, "%s: line %d: expected %d fields as in its header, as `ratiolab monitor --csv` "
                         "writes them (t_ns, pid and rss_bytes integers; locked_bytes, pinned_bytes, gpu_bytes "
                         "integers or empty; bytes at most 2^50)", path, ln, n_cols);
            break;
        }
        if (rl_grow(&m->samples, &cap, sizeof *m->samples, m->n_samples + 1, 256)) {
            rc = rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
            break;
        }
        m->samples[m->n_samples++] = (struct plot__mon_sample){t, (int)pid, rss, gpu, locked + pinned};
        int k = rl_imap_get(&pids, pid);
        if (k < 0) {
            k = m->n_procs;
            if (rl_grow(&m->procs, &pcap, sizeof *m->procs, m->n_procs + 1, 16) || rl_imap_put(&pids, pid, k)) {
                rc = rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
                break;
            }
            struct plot__mon_proc *q = &m->procs[m->n_procs++];
            q->pid = (int)pid;
            q->rank = (int)rank;
            copy_str(q->comm, sizeof q->comm, f[col[MC_COMM]]);
            q->peak_rss_bytes = 0;
            q->peak_gpu_bytes = -1;
            q->peak_locked_pinned_bytes = 0;
        }
        struct plot__mon_proc *q = &m->procs[k];
        if (rank >= 0)
            q->rank = (int)rank;
        if (rss > q->peak_rss_bytes) {   /* named as it was at its peak (an exec changes comm) */
            q->peak_rss_bytes = rss;
            copy_str(q->comm, sizeof q->comm, f[col[MC_COMM]]);
        }
        if (gpu > q->peak_gpu_bytes)
            q->peak_gpu_bytes = gpu;
        if (locked + pinned > q->peak_locked_pinned_bytes)
            q->peak_locked_pinned_bytes = locked + pinned;
    }
    if (!rc && !m->n_samples)
        rc = rl_errf(e, RL_EINVAL, "%s: a monitor CSV without samples", path);
    rl_imap_free(&pids);
    free(text);
    if (rc)
        plot__monitor_free(m);
    return rc;
}

void plot__monitor_free(struct plot__monitor *m)
{
    free(m->samples);
    free(m->procs);
    m->samples = NULL;
    m->procs = NULL;
    m->n_samples = m->n_procs = 0;
}
