/* traces/dslog.c — see dslog.h. */
#include "traces/dslog.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DS_TAG "see_memory_usage] "

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Log dates accepted: the ns since 1970 of any of them fit int64 (which ends in 2262). */
#define DS_YEAR_MIN 1970
#define DS_YEAR_MAX 2261

/* "[2024-03-05 10:11:12,345]" somewhere before the tag -> ns since 1970 (local time taken as
 * UTC: only differences are used) in *t_ns, or -1 without a time stamp. A stamp with a year or
 * clock field out of range is RL_EINVAL naming file and line. */
static int line_time_ns(const char *path, int line_no, const char *line, const char *tag, int64_t *t_ns,
                        struct rl_err *e)
{
    *t_ns = -1;
    for (const char *p = line; p < tag; p++) {
        if (*p != '[')
            continue;
        int y, mo, d, h, mi, s, ms, used = 0;
        if (sscanf(p, "[%4d-%2d-%2d %2d:%2d:%2d,%3d]%n", &y, &mo, &d, &h, &mi, &s, &ms, &used) == 7 &&
            used > 0 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31) {
            if (y < DS_YEAR_MIN || y > DS_YEAR_MAX || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 ||
                s > 60 || ms < 0)
                return rl_errf(e, RL_EINVAL, "%s: line %d: time stamp %04d-%02d-%02d %02d:%02d:%02d is out "
                               "of range; expected a date in [%d, %d] and a valid time", path, line_no,
                               y, mo, d, h, mi, s, DS_YEAR_MIN, DS_YEAR_MAX);
            int64_t days = days_from_civil(y, mo, d);
            *t_ns = ((days * 86400 + h * 3600 + mi * 60 + s) * 1000 + ms) * 1000000;
            return 0;
        }
    }
    return 0;
}

/* GiB figures above this (4 EiB in bytes) are refused rather than overflowing int64. */
#define DS_MAX_GIB 4.0e9

static int gib_bytes(const char *path, int line_no, const char *key, double gib, int64_t *out,
                     struct rl_err *e)
{
    if (!(gib >= 0 && gib <= DS_MAX_GIB))
        return rl_errf(e, RL_EINVAL, "%s: line %d: %s %g GB is out of range; expected [0, %g] GB", path,
                       line_no, key, gib, DS_MAX_GIB);
    *out = (int64_t)llround(gib * RL_GIB);
    return 0;
}

/* "MA 1.23 GB  Max_MA 1.5 GB  CA 2.0 GB  Max_CA 2 GB" into the stage (keys in any order). */
static int parse_ma(const char *path, int line_no, const char *msg, struct trace_ds_stage *st,
                    struct rl_err *e)
{
    static const char *const keys[4] = {"MA", "Max_MA", "CA", "Max_CA"};
    int64_t *dst[4] = {&st->ma_bytes, &st->max_ma_bytes, &st->ca_bytes, &st->max_ca_bytes};
    const char *p = msg;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        size_t wl = (size_t)(p - w);
        for (int k = 0; k < 4; k++) {
            if (wl == strlen(keys[k]) && strncmp(w, keys[k], wl) == 0) {
                char *end;
                double v = strtod(p, &end);
                if (end == p || !isfinite(v) || v < 0) {   /* "MA nan GB": refused, not dropped */
                    const char *w2 = p;
                    while (*w2 == ' ' || *w2 == '\t')
                        w2++;
                    int l = (int)strcspn(w2, " \t");
                    return rl_errf(e, RL_EINVAL, "%s: line %d: %s '%.*s' GB is not a figure; expected a number of GB "
                                   "in [0, %g]", path, line_no, keys[k], l > 24 ? 24 : l, w2, DS_MAX_GIB);
                }
                int rc = gib_bytes(path, line_no, keys[k], v, dst[k], e);
                if (rc)
                    return rc;
                p = end;
            }
        }
    }
    return 0;
}

/* "CPU Virtual Memory:  used = 30.5 GB, percent = 12.1%" into the stage. */
static int parse_cpu(const char *path, int line_no, const char *msg, struct trace_ds_stage *st,
                     struct rl_err *e)
{
    double used, pct;
    const char *u = strstr(msg, "used =");
    const char *pc = strstr(msg, "percent =");
    if (u && sscanf(u, "used = %lf", &used) == 1 && isfinite(used) && used >= 0) {
        int rc = gib_bytes(path, line_no, "used", used, &st->cpu_used_bytes, e);
        if (rc)
            return rc;
    }
    if (pc && sscanf(pc, "percent = %lf", &pct) == 1 && isfinite(pct))
        st->cpu_percent = pct;
    return 0;
}

int trace_ds_read(const char *path, struct trace_ds_log *log, struct rl_err *e)
{
    memset(log, 0, sizeof *log);
    char *text;
    size_t len;
    int rc = trace_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    rc = trace_ds_parse(text, len, path, log, e);
    free(text);
    return rc;
}

int trace_ds_parse(const char *in, size_t len, const char *path, struct trace_ds_log *log, struct rl_err *e)
{
    memset(log, 0, sizeof *log);
    char *text = malloc(len + 1);   /* lines are cut in place */
    if (!text)
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    memcpy(text, in, len);
    text[len] = 0;
    int rc = 0, cap = 0, line_no = 0;
    int64_t t_first = -1;
    /* Newlines are walked by hand (strtok would merge empty lines and shift line numbers). */
    for (char *line = text; line && line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        if (nl)
            *nl = 0;
        line_no++;
        char *tag = strstr(line, DS_TAG);
        if (tag) {
            char *msg = tag + strlen(DS_TAG);
            size_t ml = strlen(msg);
            while (ml && (msg[ml - 1] == '\r' || msg[ml - 1] == ' '))
                msg[--ml] = 0;
            struct trace_ds_stage *cur = log->n_stages ? &log->stages[log->n_stages - 1] : NULL;
            bool is_ma = strncmp(msg, "MA ", 3) == 0;
            bool is_cpu = strncmp(msg, "CPU Virtual Memory:", 19) == 0;
            if (is_ma || is_cpu) {
                /* Figures belong to the stage logged just before them. */
                if (cur && is_ma)
                    rc = parse_ma(path, line_no, msg, cur, e);
                else if (cur)
                    rc = parse_cpu(path, line_no, msg, cur, e);
                if (rc) {
                    free(text);
                    trace_ds_free(log);
                    return rc;
                }
            } else {
                if (rl_grow(&log->stages, &cap, sizeof *log->stages, log->n_stages + 1, 32)) {
                    free(text);
                    trace_ds_free(log);
                    return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
                }
                struct trace_ds_stage *st = &log->stages[log->n_stages];
                st->name = strdup(msg);
                if (!st->name) {
                    free(text);
                    trace_ds_free(log);
                    return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
                }
                log->n_stages++;
                st->line = line_no;
                st->ma_bytes = st->max_ma_bytes = st->ca_bytes = st->max_ca_bytes = -1;
                st->cpu_used_bytes = -1;
                st->cpu_percent = -1;
                int64_t t;
                if ((rc = line_time_ns(path, line_no, line, tag, &t, e))) {
                    free(text);
                    trace_ds_free(log);
                    return rc;
                }
                if (t >= 0 && t_first < 0)
                    t_first = t;
                st->t_ns = t >= 0 ? t - t_first : -1;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (log->n_stages == 0)
        return rl_errf(e, RL_EINVAL, "%s: no DeepSpeed see_memory_usage lines (expected '... "
                       "[utils.py:N:see_memory_usage] <stage>' as DeepSpeed logs them)", path);
    return 0;
}

void trace_ds_free(struct trace_ds_log *log)
{
    if (!log)
        return;
    for (int i = 0; i < log->n_stages; i++)
        free(log->stages[i].name);
    free(log->stages);
    log->stages = NULL;
    log->n_stages = 0;
}

int trace_ds_write(struct trace *t, const struct trace_ds_log *log, int pid, int64_t t0_ns)
{
    for (int i = 0; i < log->n_stages; i++) {
        const struct trace_ds_stage *st = &log->stages[i];
        int64_t ts = t0_ns + (st->t_ns >= 0 ? st->t_ns : 0);
        char args[64];
        snprintf(args, sizeof args, "{\"line\":%d}", st->line);
        int rc = trace_instant(t, pid, 0, st->name, ts, 'p', args);
        const struct {
            const char *series;   /* counter series name */
            int64_t v;            /* bytes, or -1 when the log did not give it */
        } c[5] = {{"ma_bytes", st->ma_bytes}, {"max_ma_bytes", st->max_ma_bytes},
                  {"ca_bytes", st->ca_bytes}, {"max_ca_bytes", st->max_ca_bytes},
                  {"cpu_used_bytes", st->cpu_used_bytes}};
        for (int k = 0; k < 5 && !rc; k++)
            if (c[k].v >= 0)
                rc = trace_counter(t, pid, "deepspeed memory", ts, c[k].series, (double)c[k].v);
        if (rc)
            return rc;
    }
    return 0;
}
