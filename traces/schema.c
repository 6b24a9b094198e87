/* traces/schema.c — the formats' key tables and the CSV helpers (traces/schema.h). */
#include <string.h>

#include "traces/schema.h"

#define TRACE__NAME(id, name) name,

const char *const trace_mon_cols[TRACE_MON_N] = {TRACE_MON_COLS(TRACE__NAME)};
const char *const trace_sweep_cols[TRACE_SWEEP_N] = {TRACE_SWEEP_COLS(TRACE__NAME)};
const char *const trace_sweep_keys[TRACE_SWEEP_K_N] = {TRACE_SWEEP_KEYS(TRACE__NAME)};
const char *const trace_tune_keys[TRACE_TUNE_N] = {TRACE_TUNE_KEYS(TRACE__NAME)};

char trace_tune_key_object(enum trace_tune_key k)
{
    return k < TRACE_TUNE_C_OFFLOAD ? 't' : k < TRACE_TUNE_K_CLASS ? 'c' : k < TRACE_TUNE_F_GPU_MEM_BYTES ? 'k' : 'f';
}

void trace_csv_header(FILE *f, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? "," : "", names[i]);
    fputc('\n', f);
}

void trace_csv_row(FILE *f, const char *const *cells, int n)
{
    for (int i = 0; i < n; i++) {
        const char *s = cells[i] ? cells[i] : "";
        if (i)
            fputc(',', f);
        if (!strpbrk(s, ",\"\n\r")) {
            fputs(s, f);
            continue;
        }
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    }
    fputc('\n', f);
}

int trace_csv_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        if (*p == '"') {
            char *w = ++p;
            f[n++] = w;
            for (;;) {
                if (!*p)
                    return -1;
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *w++ = *p++;
                }
            }
            *w = 0;
            if (*p == ',')
                p++;
            else if (*p)
                return -1;
            else
                return n;
        } else {
            f[n++] = p;
            char *c = strchr(p, ',');
            if (!c)
                return n;
            *c = 0;
            p = c + 1;
        }
    }
    return -1;   /* a field beyond max */
}

const char *trace_csv_columns(char *const *hdr, int nf, const char *const *names, int n, int *col)
{
    const char *missing = NULL;
    for (int k = 0; k < n; k++) {
        col[k] = -1;
        for (int i = 0; i < nf && col[k] < 0; i++)
            if (strcmp(hdr[i], names[k]) == 0)
                col[k] = i;
        if (col[k] < 0 && !missing)
            missing = names[k];
    }
    return missing;
}
