/* traces/dslog_timers.c — the per-iteration timers DeepSpeed and Megatron-DeepSpeed log with
 * wall-clock breakdown (see dslog.h, trace_ds_read_timers). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/dslog.h"

static const char *const timer_names[TRACE_DST_COUNT] = {"fwd", "bwd", "step", "forward-backward", "optimizer"};

const char *trace_ds_timer_name(int k) { return k >= 0 && k < TRACE_DST_COUNT ? timer_names[k] : "?"; }

static int push(struct trace_ds_timers *t, int k, double v, const char *path)
{
    int cap = t->cap[k];
    if (rl_grow(&t->ms[k], &cap, sizeof *t->ms[k], t->n[k] + 1, 64))
        return RL_ENOMEM;
    (void)path;
    t->cap[k] = cap;
    t->ms[k][t->n[k]++] = v;
    return 0;
}

/* DeepSpeed's SynchronizedWallClockTimer.log: "time (ms) | fwd: 12.34 | bwd: ... | step: ...".
 * Only the exact global names count (the *_microstep names are the micro-step's). */
static int deepspeed_line(struct trace_ds_timers *t, const char *line, const char *path)
{
    const char *p = strstr(line, "time (ms)");
    if (!p)
        return 0;
    p += strlen("time (ms)");
    while ((p = strstr(p, " | ")) != NULL) {
        p += 3;
        const char *colon = strstr(p, ": ");
        if (!colon)
            break;
        size_t len = (size_t)(colon - p);
        char *end;
        double v = strtod(colon + 2, &end);
        if (end == colon + 2 || !isfinite(v) || v < 0)
            continue;
        for (int k = TRACE_DST_FWD; k <= TRACE_DST_STEP; k++)
            if (strlen(timer_names[k]) == len && strncmp(p, timer_names[k], len) == 0 && push(t, k, v, path))
                return RL_ENOMEM;
    }
    return 0;
}

/* Megatron's Timers.log, 'minmax' or 'max' option (megatron/timers.py): after "(min, max) time
 * across ranks (ms):" one line per timer, the name padded with dots to 48 characters, then
 * ": (min, max)" or ": max". The max is taken (the iteration waits for the slowest rank). */
static int megatron_line(struct trace_ds_timers *t, const char *line, const char *path)
{
    for (int k = TRACE_DST_MEG_FWD_BWD; k < TRACE_DST_COUNT; k++) {
        const char *p = strstr(line, timer_names[k]);
        if (!p || (p > line && !isspace((unsigned char)p[-1])))
            continue;
        const char *q = p + strlen(timer_names[k]);
        if (*q++ != ' ')
            continue;
        int dots = 0;
        while (*q == '.')
            q++, dots++;
        if (dots < 1 || q[0] != ':' || q[1] != ' ')
            continue;
        q += 2;
        double lo, hi;
        char *end;
        if (sscanf(q, " (%lf, %lf)", &lo, &hi) == 2) {
            if (isfinite(hi) && hi >= 0 && push(t, k, hi, path))
                return RL_ENOMEM;
        } else {
            hi = strtod(q, &end);
            if (end != q && isfinite(hi) && hi >= 0 && push(t, k, hi, path))
                return RL_ENOMEM;
        }
    }
    return 0;
}

int trace_ds_parse_timers(char *text, size_t len, const char *path, struct trace_ds_timers *t, struct rl_err *e)
{
    memset(t, 0, sizeof *t);
    for (char *line = text; line && line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        if (nl)
            *nl = 0;
        if (deepspeed_line(t, line, path) || megatron_line(t, line, path)) {
            trace_ds_timers_free(t);
            return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
        }
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

int trace_ds_read_timers(const char *path, struct trace_ds_timers *t, struct rl_err *e)
{
    memset(t, 0, sizeof *t);
    char *text;
    size_t len;
    int rc = trace_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    rc = trace_ds_parse_timers(text, len, path, t, e);
    free(text);
    return rc;
}

void trace_ds_timers_free(struct trace_ds_timers *t)
{
    for (int k = 0; k < TRACE_DST_COUNT; k++)
        free(t->ms[k]);
    memset(t, 0, sizeof *t);
}
