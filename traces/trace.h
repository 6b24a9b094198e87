/* traces/trace.h — Chrome Trace Event JSON (Perfetto opens it), written by the simulator, the
 * executor and the monitor in one format, read back by validation and plots.
 *
 * Times are integer nanoseconds; the file stores microseconds with three decimals ("ts":
 * 12.345), which is exact. A path ending in ".gz" is written and read through zlib. Output is
 * atomic (see rl_outfile): a failed or aborted trace leaves no file. Writing is deterministic:
 * the same calls give the same bytes. */
#ifndef RL_TRACES_TRACE_H
#define RL_TRACES_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"

struct trace;   /* a writer, opaque */

int trace_open(struct trace **t, const char *path, struct rl_err *e);
/* Metadata: names shown for a process (pid) and a thread (tid) track. */
int trace_process_name(struct trace *t, int pid, const char *name);
int trace_thread_name(struct trace *t, int pid, int tid, const char *name);
/* A complete span ("ph":"X"). args_json is a JSON object text or NULL. */
int trace_span(struct trace *t, int pid, int tid, const char *name, const char *cat, int64_t t0_ns,
               int64_t dur_ns, const char *args_json);
/* A counter sample ("ph":"C"): track `name` on process pid, series `series` = value. Integral
 * values up to 2^53 are printed as integers, others with %.17g; NaN and infinities are rejected
 * (RL_EINVAL). Errors are sticky: every call after a failure returns it and trace_close reports
 * it (with the file name) and leaves no file. */
int trace_counter(struct trace *t, int pid, const char *name, int64_t t_ns, const char *series,
                  double value);
/* An instant event ("ph":"i"), scope 'g' global, 'p' process, 't' thread. */
int trace_instant(struct trace *t, int pid, int tid, const char *name, int64_t t_ns, char scope,
                  const char *args_json);
/* Events written so far (metadata included). */
long trace_n_events(const struct trace *t);
/* Finishes the JSON, flushes, renames into place and frees t. */
int trace_close(struct trace *t, struct rl_err *e);
/* Drops the file and frees t. */
void trace_abort(struct trace *t);

/* ---- reader ------------------------------------------------------------------------------------ */
struct trace_event {
    char ph;            /* 'X', 'C', 'i', 'M' */
    int pid, tid;
    char *name;         /* owned */
    char *cat;          /* owned, may be NULL */
    int64_t ts_ns;      /* start */
    int64_t dur_ns;     /* 'X' only */
    char *series;       /* 'C': first series name, owned */
    double value;       /* 'C': its value */
    char *args_json;    /* the "args" object as compact JSON text, owned, may be NULL */
    char scope;         /* 'i': 'g', 'p' or 't' ("s"; 't' when absent); 0 for other phases */
};

struct trace_doc {
    struct trace_event *events;  /* in file order, owned */
    int n_events;                /* entries in events */
};

/* Reads a trace written by trace_open (or any Chrome trace with a traceEvents array or a bare
 * array), gzip or not. A truncated gzip or malformed JSON is RL_EINVAL naming the file. */
int trace_read(const char *path, struct trace_doc *doc, struct rl_err *e);
/* trace_read on text already in memory (len bytes); path names it in errors. */
int trace_parse(const char *text, size_t len, const char *path, struct trace_doc *doc, struct rl_err *e);
void trace_doc_free(struct trace_doc *doc);
/* A gzip input may inflate to at most this many bytes: the input limit of a plain file (64 MiB),
 * counted on the inflated bytes; inflating stops there. */
#define TRACE_MAX_INFLATED_BYTES RL_INPUT_MAX_BYTES
/* Reads a whole file, through zlib when it starts with the gzip magic (a ".gz" name without it
 * is RL_EINVAL); truncated or corrupt gzip is RL_EINVAL naming the file. *out is malloc'd and
 * NUL-terminated. The readers in traces/ and plots/ read their files through it. */
int trace_read_file(const char *path, char **out, size_t *out_len, struct rl_err *e);

#endif
