/* traces/dslog_iter.c — Megatron's "elapsed time per iteration (ms)" lines (see dslog.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/dslog.h"

#define ITER_TAG "elapsed time per iteration (ms):"

/* The iteration number of " iteration   10/  100 |" before `end`, or -1. */
static int64_t iteration_number(const char *line, const char *end)
{
    const char *p = strstr(line, "iteration ");
    if (!p || p >= end)
        return -1;
    long long it;
    if (sscanf(p, "iteration %lld", &it) != 1 || it < 0)
        return -1;
    return (int64_t)it;
}

int trace_ds_parse_iterations(char *text, size_t len, const char *path, double **ms, int64_t **iters, int *n,
                              struct rl_err *e)
{
    *ms = NULL;
    *iters = NULL;
    *n = 0;
    int cap = 0;
    for (char *line = text; line && line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        if (nl)
            *nl = 0;
        char *tag = strstr(line, ITER_TAG);
        if (tag) {
            char *end;
            double v = strtod(tag + strlen(ITER_TAG), &end);
            if (end != tag + strlen(ITER_TAG) && isfinite(v) && v >= 0) {
                int cap_ms = cap;   /* two arrays of one capacity */
                if (rl_grow(ms, &cap_ms, sizeof **ms, *n + 1, 64) ||
                    rl_grow(iters, &cap, sizeof **iters, *n + 1, 64)) {
                    free(*ms);
                    free(*iters);
                    *ms = NULL;
                    *iters = NULL;
                    *n = 0;
                    return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
                }
                (*ms)[*n] = v;
                (*iters)[*n] = iteration_number(line, tag);
                (*n)++;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

int trace_ds_read_iterations(const char *path, double **ms, int64_t **iters, int *n, struct rl_err *e)
{
    *ms = NULL;
    *iters = NULL;
    *n = 0;
    char *text;
    size_t len;
    int rc = trace_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    rc = trace_ds_parse_iterations(text, len, path, ms, iters, n, e);
    free(text);
    return rc;
}
