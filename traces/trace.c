/* traces/trace.c — Chrome Trace Event JSON writer and reader; see trace.h.
 *
 * The writer keeps one growing text buffer and hands it to stdio (plain) or zlib (".gz") each
 * time it passes TRACE__FLUSH_BYTES, so memory stays bounded whatever the trace length. Every
 * number is printed from integers or with a fixed format, so the same calls give the same bytes;
 * gzdopen writes a header with mtime 0 and no file name, so gzip output is deterministic too. */
#include "traces/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>   /* json_loadb, json_dumps: args validation and the reader */
#include <zlib.h>      /* gzdopen, gzwrite (the writer); inflate (the reader) */

#define TRACE__FLUSH_BYTES (1 << 16)   /* the buffer is written out once it holds this many bytes */

struct trace {
    struct rl_outfile out;   /* the atomic output file; its fp receives plain text */
    gzFile gz;               /* non-NULL for ".gz": a dup of out.fp's descriptor, compressed */
    char *buf;               /* pending text not yet handed to stdio or zlib */
    size_t len;              /* bytes used in buf */
    size_t cap;              /* bytes allocated for buf */
    long n_events;           /* events written so far (decides the "," separator) */
    int err;                 /* first error (RL_E*), sticky; reported by trace_close */
    struct rl_err err_e;     /* what that first error was */
};

static bool has_gz_suffix(const char *path)
{
    size_t n = strlen(path);
    return n >= 3 && strcmp(path + n - 3, ".gz") == 0;
}

/* Records the first error and returns it, so `return fail(t, ...)` works. */
static int fail(struct trace *t, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct trace *t, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rl_err_vfirst(&t->err, &t->err_e, code, fmt, ap);
    va_end(ap);
    return code;
}

static int flush_buf(struct trace *t)
{
    if (t->len == 0)
        return 0;
    if (t->gz) {
        if (gzwrite(t->gz, t->buf, (unsigned)t->len) != (int)t->len) {
            int zerr;
            const char *m = gzerror(t->gz, &zerr);
            return fail(t, RL_EENV, "gzip write failed (%s)", m ? m : "unknown");
        }
    } else if (fwrite(t->buf, 1, t->len, t->out.fp) != t->len) {
        return fail(t, RL_EENV, "write failed (%s)", strerror(errno));
    }
    t->len = 0;
    return 0;
}

static int reserve(struct trace *t, size_t extra)
{
    if (t->len + extra + 1 <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 1024;
    while (cap < t->len + extra + 1)
        cap *= 2;
    char *nb = realloc(t->buf, cap);
    if (!nb)
        return fail(t, RL_ENOMEM, "out of memory");
    t->buf = nb;
    t->cap = cap;
    return 0;
}

static void put(struct trace *t, const char *s, size_t n)
{
    if (t->err || reserve(t, n))
        return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void puts_(struct trace *t, const char *s) { put(t, s, strlen(s)); }

static void putf(struct trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct trace *t, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        fail(t, RL_EINTERNAL, "number formatting overflow");
        return;
    }
    put(t, tmp, (size_t)n);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes are not valid UTF-8
 * (overlong forms, surrogates and code points above U+10FFFF count as invalid). */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) {
        n = 2;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3;
        cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* Writes s as a JSON string: quotes, backslashes and control characters escaped; bytes that are
 * not valid UTF-8 become U+FFFD, so any C string gives valid JSON. O(strlen(s)). */
static void put_str(struct trace *t, const char *s)
{
    if (!s)
        s = "";
    put(t, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put(t, esc, 2);
            p++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': puts_(t, "\\n"); break;
            case '\r': puts_(t, "\\r"); break;
            case '\t': puts_(t, "\\t"); break;
            case '\b': puts_(t, "\\b"); break;
            case '\f': puts_(t, "\\f"); break;
            default: putf(t, "\\u%04x", c); break;
            }
            p++;
        } else if (c < 0x80) {
            put(t, (const char *)p, 1);
            p++;
        } else {
            int n = utf8_len(p);
            if (n == 0) {
                puts_(t, "\\ufffd");
                p++;
            } else {
                put(t, (const char *)p, (size_t)n);
                p += n;
            }
        }
    }
    put(t, "\"", 1);
}

/* Integer nanoseconds as microseconds with exactly three decimals: -1500 -> "-1.500". */
static void put_us(struct trace *t, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    putf(t, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
}

/* Counter values: integral values up to 2^53 as integers, everything else with %.17g (which
 * round-trips every double). NaN and infinities have no JSON form and are rejected. */
static int put_value(struct trace *t, double v)
{
    if (!isfinite(v))
        return fail(t, RL_EINVAL, "counter value: %g is not finite; JSON allows finite numbers only", v);
    if (v == floor(v) && fabs(v) <= 9007199254740992.0)
        putf(t, "%lld", (long long)v);
    else
        putf(t, "%.17g", v);
    return 0;
}

/* Validates args_json (must be a JSON object) and writes its compact form, keys in the given
 * order, so the reader gives back exactly the text written. */
static int put_args(struct trace *t, const char *args_json)
{
    json_error_t je;
    json_t *j = json_loads(args_json, 0, &je);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return fail(t, RL_EINVAL, "args_json: '%.60s' is not a JSON object (%s)", args_json,
                    j ? "not an object" : je.text);
    }
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!s)
        return fail(t, RL_ENOMEM, "out of memory");
    puts_(t, s);
    free(s);
    return 0;
}

/* Starts an event: the separator, then {"ph":"X","pid":P,"tid":T,"name":"...". */
static void begin(struct trace *t, char ph, int pid, int tid, const char *name)
{
    puts_(t, t->n_events ? ",\n" : "\n");
    putf(t, "{\"ph\":\"%c\",\"pid\":%d,\"tid\":%d,\"name\":", ph, pid, tid);
    put_str(t, name);
}

/* Ends an event and writes the buffer out when it is large. */
static int end(struct trace *t)
{
    put(t, "}", 1);
    t->n_events++;
    if (!t->err && t->len >= TRACE__FLUSH_BYTES)
        flush_buf(t);
    return t->err ? t->err : 0;
}

int trace_open(struct trace **tp, const char *path, struct rl_err *e)
{
    *tp = NULL;
    struct trace *t = calloc(1, sizeof *t);
    if (!t)
        return rl_errf(e, RL_ENOMEM, "trace: out of memory");
    int rc = rl_outfile_open(&t->out, path, e);
    if (rc) {
        free(t);
        return rc;
    }
    if (path && has_gz_suffix(path)) {
        /* zlib gets its own descriptor so that gzclose and fclose each close one. */
        int fd = dup(rl_outfile_fd(&t->out));
        t->gz = fd >= 0 ? gzdopen(fd, "wb6") : NULL;
        if (!t->gz) {
            if (fd >= 0)
                close(fd);
            rl_outfile_abort(&t->out);
            free(t);
            return rl_errf(e, RL_EIO, "trace %s: cannot start gzip stream", path);
        }
    }
    puts_(t, "{\"traceEvents\":[");
    if (t->err) {
        rc = rl_errf(e, t->err, "trace %s: %s", path, t->err_e.msg);
        trace_abort(t);
        return rc;
    }
    *tp = t;
    return 0;
}

int trace_process_name(struct trace *t, int pid, const char *name)
{
    begin(t, 'M', pid, 0, "process_name");
    puts_(t, ",\"args\":{\"name\":");
    put_str(t, name);
    puts_(t, "}");
    return end(t);
}

int trace_thread_name(struct trace *t, int pid, int tid, const char *name)
{
    begin(t, 'M', pid, tid, "thread_name");
    puts_(t, ",\"args\":{\"name\":");
    put_str(t, name);
    puts_(t, "}");
    return end(t);
}

int trace_span(struct trace *t, int pid, int tid, const char *name, const char *cat, int64_t t0_ns,
               int64_t dur_ns, const char *args_json)
{
    if (dur_ns < 0)
        return fail(t, RL_EINVAL, "span '%.60s': duration %lld ns is negative; expected >= 0",
                    name ? name : "", (long long)dur_ns);
    begin(t, 'X', pid, tid, name);
    if (cat) {
        puts_(t, ",\"cat\":");
        put_str(t, cat);
    }
    puts_(t, ",\"ts\":");
    put_us(t, t0_ns);
    puts_(t, ",\"dur\":");
    put_us(t, dur_ns);
    if (args_json) {
        puts_(t, ",\"args\":");
        put_args(t, args_json);
    }
    return end(t);
}

int trace_counter(struct trace *t, int pid, const char *name, int64_t t_ns, const char *series,
                  double value)
{
    if (!isfinite(value))
        return fail(t, RL_EINVAL, "counter '%.60s': value %g is not finite", name ? name : "", value);
    begin(t, 'C', pid, 0, name);
    puts_(t, ",\"ts\":");
    put_us(t, t_ns);
    puts_(t, ",\"args\":{");
    put_str(t, series ? series : "value");
    put(t, ":", 1);
    put_value(t, value);
    puts_(t, "}");
    return end(t);
}

int trace_instant(struct trace *t, int pid, int tid, const char *name, int64_t t_ns, char scope,
                  const char *args_json)
{
    if (scope != 'g' && scope != 'p' && scope != 't')
        return fail(t, RL_EINVAL, "instant '%.60s': scope '%c' not allowed; expected g, p or t",
                    name ? name : "", scope ? scope : '?');
    begin(t, 'i', pid, tid, name);
    puts_(t, ",\"ts\":");
    put_us(t, t_ns);
    putf(t, ",\"s\":\"%c\"", scope);
    if (args_json) {
        puts_(t, ",\"args\":");
        put_args(t, args_json);
    }
    return end(t);
}

long trace_n_events(const struct trace *t) { return t->n_events; }

int trace_close(struct trace *t, struct rl_err *e)
{
    if (!t)
        return 0;
    puts_(t, "\n],\"displayTimeUnit\":\"ns\"}\n");
    flush_buf(t);
    if (t->gz) {
        int zrc = gzclose(t->gz);
        t->gz = NULL;
        if (zrc != Z_OK)
            fail(t, RL_EIO, "gzip stream could not be finished (zlib error %d)", zrc);
    }
    int rc;
    if (t->err) {
        rc = rl_errf(e, t->err, "trace %s: %s", t->out.path, t->err_e.msg);
        rl_outfile_abort(&t->out);
    } else {
        rc = rl_outfile_commit(&t->out, e);
    }
    free(t->buf);
    free(t);
    return rc;
}

void trace_abort(struct trace *t)
{
    if (!t)
        return;
    if (t->gz)
        gzclose(t->gz);   /* closes only the dup'd descriptor; the file is removed next */
    rl_outfile_abort(&t->out);
    free(t->buf);
    free(t);
}

/* ---- reader ------------------------------------------------------------------------------------ */

/* The gzip members of in[0..len) one after the other (gzip -c a b > ab is one file), inflated
 * with zlib into *out (NUL-terminated). Bytes after the last member that do not start another
 * (gzip magic 1f 8b) are RL_EINVAL naming their offset: gzread skips them without a word, so a
 * file with something appended read as if it were whole. The cap counts inflated bytes:
 * inflating stops one byte past it, so a small gzip bomb costs at most the cap in memory and time. */
static int inflate_members(const char *path, const unsigned char *in, size_t len, char **out, size_t *out_len,
                           struct rl_err *e)
{
    const size_t limit = TRACE_MAX_INFLATED_BYTES;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (!buf || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        free(buf);
        return rl_errf(e, RL_ENOMEM, "%s: out of memory for the gzip stream", path);
    }
    size_t at = 0;   /* the first byte of in not yet given to zlib */
    int rc = 0;
    for (;;) {
        if (cap - n - 1 == 0) {
            size_t ncap = cap * 2 > limit + 2 ? limit + 2 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                rc = rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t avail = len - at > (1u << 30) ? 1u << 30 : len - at;
        z.next_in = (unsigned char *)(uintptr_t)(in + at);
        z.avail_in = (uInt)avail;
        size_t want = cap - n - 1 > (1u << 30) ? 1u << 30 : cap - n - 1;
        z.next_out = (unsigned char *)buf + n;
        z.avail_out = (uInt)want;
        int zr = inflate(&z, Z_NO_FLUSH);
        at += avail - z.avail_in;
        n += want - z.avail_out;
        if (n > limit) {
            rc = rl_errf(e, RL_EINVAL, "%s: inflates to more than %zu MiB; allowed: at most %zu MiB inflated "
                         "(the input limit)", path, limit >> 20, limit >> 20);
            break;
        }
        if (zr == Z_STREAM_END) {
            if (at == len)
                break;
            if (len - at < 2 || in[at] != 0x1f || in[at + 1] != 0x8b) {
                rc = rl_errf(e, RL_EINVAL, "%s: %zu bytes after the gzip stream at byte %zu, not another gzip "
                             "member; allowed: gzip data only (the file was appended to or damaged)", path, len - at, at);
                break;
            }
            inflateReset(&z);
            continue;
        }
        if (zr == Z_BUF_ERROR && at == len && z.avail_out != 0) {
            rc = rl_errf(e, RL_EINVAL, "%s: truncated gzip stream (it ends before its end marker)", path);
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            rc = rl_errf(e, RL_EINVAL, "%s: corrupt gzip stream (%s)", path, z.msg ? z.msg : "zlib error");
            break;
        }
    }
    inflateEnd(&z);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = 0;
    *out = buf;
    *out_len = n;
    return 0;
}

/* Reads the whole file through zlib (gzip or, for other names, plain). A gzip stream that ends
 * early or fails its checks is RL_EINVAL naming the file. */
int trace_read_file(const char *path, char **out, size_t *out_len, struct rl_err *e)
{
    bool want_gz = has_gz_suffix(path);
    int fd;
    int rc = rl_open_input(path, &fd, e);   /* regular files only, size-capped */
    if (rc)
        return rc;
    unsigned char magic[2] = {0, 0};
    ssize_t nm = read(fd, magic, 2);
    bool is_gz = nm == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (want_gz && !is_gz) {
        close(fd);
        return rl_errf(e, RL_EINVAL, "%s: %s", path,
                       nm < 2 ? "truncated gzip stream (no gzip header)" : "not a gzip file (no gzip header)");
    }
    if (!is_gz) {
        close(fd);
        return rl_read_file(path, out, out_len, e);
    }
    close(fd);
    char *in;
    size_t in_len;
    if ((rc = rl_read_bytes(path, &in, &in_len, e)))
        return rc;
    rc = inflate_members(path, (const unsigned char *)in, in_len, out, out_len, e);
    free(in);
    return rc;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* A time in microseconds (integer or real) to ns; absent is 0. Values whose ns do not fit int64
 * (beyond about +-292 years) are RL_EINVAL naming the event and key. */
static int us_to_ns(const char *path, size_t idx, const char *key, json_t *v, int64_t *ns,
                    struct rl_err *e)
{
    const double lim_us = 9.2e15;   /* 9.2e18 ns < INT64_MAX */
    *ns = 0;
    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) > -9200000000000000LL &&
        json_integer_value(v) < 9200000000000000LL) {
        *ns = (int64_t)json_integer_value(v) * 1000;
        return 0;
    }
    if (json_is_real(v) && isfinite(json_real_value(v)) && fabs(json_real_value(v)) < lim_us) {
        *ns = (int64_t)llround(json_real_value(v) * 1000.0);
        return 0;
    }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    int rc = rl_errf(e, RL_EINVAL, "%s: traceEvents[%zu].%s: %.40s is not allowed; expected microseconds "
                     "in (-9.2e15, 9.2e15)", path, idx, key, s ? s : "?");
    free(s);
    return rc;
}

/* An optional integer id (pid, tid) that must fit an int. */
static int get_id(const char *path, size_t idx, const char *key, json_t *v, int *out, struct rl_err *e)
{
    *out = 0;
    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= INT32_MIN && json_integer_value(v) <= INT32_MAX) {
        *out = (int)json_integer_value(v);
        return 0;
    }
    if (!json_is_integer(v))
        return 0;   /* Chrome accepts string ids; they are read as 0 */
    return rl_errf(e, RL_EINVAL, "%s: traceEvents[%zu].%s: %lld is outside [%d, %d]", path, idx, key,
                   (long long)json_integer_value(v), INT32_MIN, INT32_MAX);
}

static void event_free(struct trace_event *ev)
{
    free(ev->name);
    free(ev->cat);
    free(ev->series);
    free(ev->args_json);
}

/* Fills ev from one JSON event object. Returns 0, or RL_EINVAL with the index in the message. */
static int parse_event(const char *path, size_t idx, json_t *o, struct trace_event *ev,
                       struct rl_err *e)
{
    memset(ev, 0, sizeof *ev);
    if (!json_is_object(o))
        return rl_errf(e, RL_EINVAL, "%s: traceEvents[%zu] is not an object", path, idx);
    const char *ph = json_string_value(json_object_get(o, "ph"));
    if (!ph || !ph[0])
        return rl_errf(e, RL_EINVAL, "%s: traceEvents[%zu] has no \"ph\" string", path, idx);
    ev->ph = ph[0];
    int rc;
    if ((rc = get_id(path, idx, "pid", json_object_get(o, "pid"), &ev->pid, e)) ||
        (rc = get_id(path, idx, "tid", json_object_get(o, "tid"), &ev->tid, e)) ||
        (rc = us_to_ns(path, idx, "ts", json_object_get(o, "ts"), &ev->ts_ns, e)) ||
        (rc = us_to_ns(path, idx, "dur", json_object_get(o, "dur"), &ev->dur_ns, e)))
        return rc;
    if (ev->dur_ns < 0) {   /* a span that ends before it starts: refused here, not skipped later */
        const char *nm = json_string_value(json_object_get(o, "name"));
        char shown[80];
        return rl_errf(e, RL_EINVAL, "%s: traceEvents[%zu] (\"%s\"): dur %g us; allowed: a duration >= 0", path, idx,
                       rl_text_data(shown, sizeof shown, nm ? nm : ""), (double)ev->dur_ns / 1e3);
    }
    ev->name = strdup(json_is_string(json_object_get(o, "name"))
                          ? json_string_value(json_object_get(o, "name")) : "");
    ev->cat = dup_or_null(json_string_value(json_object_get(o, "cat")));
    const char *s = json_string_value(json_object_get(o, "s"));
    ev->scope = ev->ph == 'i' || ev->ph == 'I' ? (s && s[0] ? s[0] : 't') : 0;
    json_t *args = json_object_get(o, "args");
    if (json_is_object(args)) {
        ev->args_json = json_dumps(args, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (ev->ph == 'C') {
            void *it = json_object_iter(args);
            if (it) {
                ev->series = strdup(json_object_iter_key(it));
                json_t *v = json_object_iter_value(it);
                ev->value = json_is_number(v) && isfinite(json_number_value(v)) ? json_number_value(v) : 0.0;
            }
        }
    }
    if (!ev->name || (json_is_object(args) && !ev->args_json)) {
        event_free(ev);
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    }
    return 0;
}

int trace_read(const char *path, struct trace_doc *doc, struct rl_err *e)
{
    memset(doc, 0, sizeof *doc);
    char *text;
    size_t len;
    int rc = trace_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    rc = trace_parse(text, len, path, doc, e);
    free(text);
    return rc;
}

int trace_parse(const char *text, size_t len, const char *path, struct trace_doc *doc, struct rl_err *e)
{
    memset(doc, 0, sizeof *doc);
    int rc;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root)
        return rl_errf(e, RL_EINVAL, "%s: malformed JSON at line %d column %d: %s", path, je.line,
                       je.column, je.text);
    json_t *arr = json_is_array(root) ? root : json_object_get(root, "traceEvents");
    if (!json_is_array(arr)) {
        json_decref(root);
        return rl_errf(e, RL_EINVAL, "%s: no \"traceEvents\" array; expected a Chrome trace", path);
    }
    size_t n = json_array_size(arr);
    if (n > (size_t)INT32_MAX) {
        json_decref(root);
        return rl_errf(e, RL_EINVAL, "%s: %zu events; at most %d supported", path, n, INT32_MAX);
    }
    doc->events = n ? calloc(n, sizeof *doc->events) : NULL;
    if (n && !doc->events) {
        json_decref(root);
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < n; i++) {
        rc = parse_event(path, i, json_array_get(arr, i), &doc->events[i], e);
        if (rc) {
            json_decref(root);
            trace_doc_free(doc);
            return rc;
        }
        doc->n_events = (int)i + 1;
    }
    json_decref(root);
    return 0;
}

void trace_doc_free(struct trace_doc *doc)
{
    if (!doc)
        return;
    for (int i = 0; i < doc->n_events; i++)
        event_free(&doc->events[i]);
    free(doc->events);
    doc->events = NULL;
    doc->n_events = 0;
}
