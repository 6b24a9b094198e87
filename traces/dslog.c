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

/* "[2024-03-05 10:11:12,345]" somewhere before the tag -> ns since 1970 (local time taken as
 * UTC: only differences are used), or -1. */
static int64_t line_time_ns(const char *line, const char *tag)
{
    for (const char *p = line; p < tag; p++) {
        if (*p != '[')
            continue;
        int y, mo, d, h, mi, s, ms, used = 0;
        if (sscanf(p, "[%4d-%2d-%2d %2d:%2d:%2d,%3d]%n", &y, &mo, &d, &h, &mi, &s, &ms, &used) == 7 &&
            used > 0 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31) {
            int64_t days = days_from_civil(y, mo, d);
            return ((days * 86400 + h * 3600 + mi * 60 + s) * 1000 + ms) * 1000000;
        }
    }
    return -1;
}

static int64_t gib_bytes(double gib) { return (int64_t)llround(gib * RL_GIB); }

/* "MA 1.23 GB  Max_MA 1.5 GB  CA 2.0 GB  Max_CA 2 GB" into the stage (keys in any order). */
static void parse_ma(const char *msg, struct trace_ds_stage *st)
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
                if (end != p && isfinite(v) && v >= 0) {
                    *dst[k] = gib_bytes(v);
                    p = end;
                }
            }
        }
    }
}

/* "CPU Virtual Memory:  used = 30.5 GB, percent = 12.1%" into the stage. */
static void parse_cpu(const char *msg, struct trace_ds_stage *st)
{
    double used, pct;
    const char *u = strstr(msg, "used =");
    const char *pc = strstr(msg, "percent =");
    if (u && sscanf(u, "used = %lf", &used) == 1 && isfinite(used) && used >= 0)
        st->cpu_used_bytes = gib_bytes(used);
    if (pc && sscanf(pc, "percent = %lf", &pct) == 1 && isfinite(pct))
        st->cpu_percent = pct;
}

int trace_ds_read(const char *path, struct trace_ds_log *log, struct rl_err *e)
{
    memset(log, 0, sizeof *log);
    char *text;
    size_t len;
    int rc = trace__read_all(path, &text, &len, e);
    if (rc)
        return rc;
    int cap = 0, line_no = 0;
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
                    parse_ma(msg, cur);
                else if (cur)
                    parse_cpu(msg, cur);
            } else {
                if (log->n_stages == cap) {
                    cap = cap ? cap * 2 : 32;
                    struct trace_ds_stage *ns = realloc(log->stages, (size_t)cap * sizeof *ns);
                    if (!ns) {
                        free(text);
                        trace_ds_free(log);
                        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
                    }
                    log->stages = ns;
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
                int64_t t = line_time_ns(line, tag);
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
