/* common/rl.c — see rl.h. */
#include "common/rl.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>   /* kill(pid, 0): is a lock holder still there */
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>   /* flock */
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>     /* nanosleep */
#include <unistd.h>

const char *rl_strerror(int code)
{
    switch (code) {
#define RL__STR(n, v, x, d) case v: return d;
        RL_ERRORS(RL__STR)
#undef RL__STR
    }
    return "unknown error";
}

int rl_exit_code(int code)
{
    switch (code) {
#define RL__EXIT(n, v, x, d) case v: return x;
        RL_ERRORS(RL__EXIT)
#undef RL__EXIT
    }
    return 3;
}

/* Escapes as rl.h says; a C1 control is its two UTF-8 bytes, written as one \u escape. */
const char *rl_text_data(char *out, size_t cap, const char *s)
{
    size_t o = 0;
    if (!cap)
        return out;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && o + 7 < cap; p++) {
        if (*p >= 0x20 && *p != 0x7f && !(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) {
            out[o++] = (char)*p;
            continue;
        }
        out[o++] = '\\';
        if (*p == '\n')
            out[o++] = 'n';
        else if (*p == '\r')
            out[o++] = 'r';
        else if (*p == '\t')
            out[o++] = 't';
        else if (*p == 0xc2)   /* a C1 control (U+0080..U+009F): 0x9b starts a terminal sequence too */
            o += (size_t)snprintf(out + o, cap - o, "u%04x", *++p);
        else
            o += (size_t)snprintf(out + o, cap - o, "x%02x", *p);
    }
    out[o] = 0;
    return out;
}

/* Every message is one line: control characters from echoed input (a newline inside a quoted
 * launch-line argument, a tab) are written as \n, \r, \t or \xHH. */
static void one_line(char *msg, size_t cap)
{
    char out[RL_ERR_MSG_MAX];
    rl_text_data(out, sizeof out, msg);
    snprintf(msg, cap, "%s", out);
}

int rl_errf(struct rl_err *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        one_line(e->msg, sizeof e->msg);
        e->code = code;
    }
    return code;
}

int rl_err_prefix(struct rl_err *e, const char *fmt, ...)
{
    if (!e)
        return RL_EINTERNAL;
    char pre[RL_ERR_MSG_MAX], old[RL_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    snprintf(e->msg, sizeof e->msg, "%s: %s", pre, old);
    one_line(e->msg, sizeof e->msg);
    return e->code;
}

int rl_err_vfirst(int *first, struct rl_err *e, int code, const char *fmt, va_list ap)
{
    if (*first)
        return code;
    *first = code;
    if (e) {
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        one_line(e->msg, sizeof e->msg);
        e->code = code;
    }
    return code;
}

int rl_err_first(int *first, struct rl_err *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rl_err_vfirst(first, e, code, fmt, ap);
    va_end(ap);
    return code;
}

bool rl_streq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Optimal-string-alignment distance, case-insensitive; words longer than 63 characters are
 * compared on their first 63. */
static int edit_distance(const char *a, const char *b)
{
    enum { M = 64 };
    int la = (int)strnlen(a, M - 1), lb = (int)strnlen(b, M - 1);
    static _Thread_local int d[M][M];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

const char *rl_nearest(const char *word, const char *const *cands, int n)
{
    if (!word)
        return NULL;
    int len = (int)strlen(word), limit = len / 3 > 2 ? len / 3 : 2, best = limit + 1;
    const char *pick = NULL;
    for (int i = 0; i < n; i++) {
        if (!cands[i])
            continue;
        if (strcmp(cands[i], word) == 0)
            return NULL;
        int dist = edit_distance(word, cands[i]);
        if (dist < best) {
            best = dist;
            pick = cands[i];
        }
    }
    return pick;
}

int rl_parse_i64(const char *field, const char *s, int64_t min, int64_t max, int64_t *out,
                 struct rl_err *e)
{
    if (!s || !*s)
        return rl_errf(e, RL_EINVAL, "%s: empty value; expected an integer in [%lld, %lld]", field,
                       (long long)min, (long long)max);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end == 'e' || *end == 'E' || *end == '.') {
        /* Allow 1e9 and 5e8 as DeepSpeed configs write them, when the value is integral. */
        double d;
        if (rl_parse_double(field, s, (double)min, (double)max, &d, NULL) == 0 && d == floor(d)) {
            *out = (int64_t)d;
            return 0;
        }
    }
    if (*end || errno == ERANGE || v < min || v > max)
        return rl_errf(e, RL_EINVAL, "%s: '%s' is not an integer in [%lld, %lld]", field, s,
                       (long long)min, (long long)max);
    *out = v;
    return 0;
}

int rl_parse_int(const char *field, const char *s, int min, int max, int *out, struct rl_err *e)
{
    int64_t v;
    int rc = rl_parse_i64(field, s, min, max, &v, e);
    if (rc == 0)
        *out = (int)v;
    return rc;
}

int rl_parse_double(const char *field, const char *s, double lo, double hi, double *out,
                    struct rl_err *e)
{
    if (!s || !*s)
        return rl_errf(e, RL_EINVAL, "%s: empty value; expected a number in [%g, %g]", field, lo, hi);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || end == s)
        return rl_errf(e, RL_EINVAL, "%s: '%s' is not a number; expected a number in [%g, %g]",
                       field, s, lo, hi);
    if (isnan(v) || isinf(v))
        return rl_errf(e, RL_EINVAL, "%s: '%s' is not finite; expected a number in [%g, %g]",
                       field, s, lo, hi);
    if (v < lo || v > hi)
        return rl_errf(e, RL_EINVAL, "%s: %s is outside [%g, %g]", field, s, lo, hi);
    *out = v == 0 ? 0.0 : v;   /* -0 is 0 (and prints as 0.0000) */
    return 0;
}

#define RL__SIZE_FORMS "a number with a unit: B, KiB, MiB, GiB, TiB (or K, M, G, T: the same binary units), kB, MB, GB, TB (decimal), e.g. 80GiB or 16G"

int rl_parse_bytes(const char *field, const char *s, int64_t *out, struct rl_err *e)
{
    static const struct { const char *suffix; double mult; } units[] = {
        {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", RL_GIB},
        {"TiB", 1099511627776.0}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
        {"K", 1024.0}, {"M", 1048576.0}, {"G", RL_GIB}, {"T", 1099511627776.0},
    };
    if (!s || !*s)
        return rl_errf(e, RL_EINVAL, "%s: empty value; expected " RL__SIZE_FORMS, field);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || isnan(v) || isinf(v) || s[0] == '-' ||
        (!isdigit((unsigned char)s[0]) && s[0] != '.' && s[0] != '+'))
        return rl_errf(e, RL_EINVAL, "%s: '%s' is not a size; expected " RL__SIZE_FORMS, field, s);
    if (!*end)
        return rl_errf(e, RL_EINVAL, "%s: '%s' has no unit; expected " RL__SIZE_FORMS, field, s);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            double b = v * units[i].mult;
            if (b > 9.0e18)
                return rl_errf(e, RL_EINVAL, "%s: '%s' is too large (limit 8 EiB)", field, s);
            *out = (int64_t)llround(b);
            return 0;
        }
    }
    return rl_errf(e, RL_EINVAL, "%s: '%s' has an unknown unit '%s'; expected " RL__SIZE_FORMS, field, s, end);
}

int rl_parse_bytes_min(const char *field, const char *s, int64_t min, int64_t *out, struct rl_err *e)
{
    int64_t v;
    int rc = rl_parse_bytes(field, s, &v, e);
    if (rc)
        return rc;
    if (v < min)
        return rl_errf(e, RL_EINVAL, "%s: '%s' is %lld bytes; expected at least %lld bytes", field, s,
                       (long long)v, (long long)min);
    *out = v;
    return 0;
}

static double round10(double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.10g", v);
    return strtod(buf, NULL);
}

int rl_parse_ratio_list(const char *field, const char *s, double min, double max, double **out,
                        size_t *n, struct rl_err *e)
{
    *out = NULL;
    *n = 0;
    if (!s || !*s)
        return rl_errf(e, RL_EINVAL, "%s: empty value; expected lo:hi:step, a value or a list a,b,c", field);
    if (strchr(s, ':')) {
        /* The whole value, never a truncated copy: a colon past a fixed buffer's end was lost and
         * its split dereferenced NULL (a fuzz finding, tests/fuzz/regressions/flags/). */
        char *buf = strdup(s);
        if (!buf)
            return rl_errf(e, RL_ENOMEM, "%s: out of memory", field);
        char *p2 = strchr(buf, ':');
        *p2++ = 0;
        char *p3 = strchr(p2, ':');
        if (!p3) {
            free(buf);
            return rl_errf(e, RL_EINVAL, "%s: '%s' is not lo:hi:step (e.g. 0:1:0.1)", field, s);
        }
        *p3++ = 0;
        double lo, hi, step;
        int rc;
        if ((rc = rl_parse_double(field, buf, min, max, &lo, e)) ||
            (rc = rl_parse_double(field, p2, min, max, &hi, e)) ||
            (rc = rl_parse_double(field, p3, 0, max - min > 0 ? max - min : 1, &step, e))) {
            free(buf);
            return rc;
        }
        free(buf);
        if (step <= 0 || hi < lo)
            return rl_errf(e, RL_EINVAL, "%s: '%s' needs lo <= hi and step > 0", field, s);
        double count = floor((hi - lo) / step + 1e-9) + 1;
        if (count > 100000)
            return rl_errf(e, RL_EINVAL, "%s: '%s' gives %.0f values; at most 100000 allowed", field, s, count);
        size_t cnt = (size_t)count;
        double *v = malloc(cnt * sizeof *v);
        if (!v)
            return rl_errf(e, RL_ENOMEM, "%s: out of memory", field);
        for (size_t i = 0; i < cnt; i++) {
            double x = round10(lo + (double)i * step);
            v[i] = x > hi ? hi : x;
        }
        *out = v;
        *n = cnt;
        return 0;
    }
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    double *v = malloc(cap * sizeof *v);
    if (!v)
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", field);
    char *dup = strdup(s), *save = NULL;
    if (!dup) {
        free(v);
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", field);
    }
    size_t k = 0;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int rc = rl_parse_double(field, tok, min, max, &v[k], e);
        if (rc) {
            free(dup);
            free(v);
            return rc;
        }
        k++;
    }
    free(dup);
    if (k == 0) {
        free(v);
        return rl_errf(e, RL_EINVAL, "%s: '%s' has no values", field, s);
    }
    *out = v;
    *n = k;
    return 0;
}

int rl_parse_version(const char *field, const char *s, struct rl_version *v, struct rl_err *e)
{
    /* Two or three parts of decimal digits, each at most RL_VERSION_PART_MAX (sscanf's %d would
     * overflow on "99999999999.1.1", undefined behaviour, and read it as 1215752191.1.1). */
    long part[3] = {0, 0, 0};
    int n = 0;
    const char *p = s ? s : "";
    bool ok = true;
    while (ok && n < 3) {
        if (!isdigit((unsigned char)*p)) {
            ok = false;
            break;
        }
        long x = 0;
        while (isdigit((unsigned char)*p) && x <= RL_VERSION_PART_MAX)
            x = x * 10 + (*p++ - '0');
        if (x > RL_VERSION_PART_MAX)
            return rl_errf(e, RL_EINVAL, "%s: '%s': a part above %d; expected X.Y.Z such as 0.12.4", field, s,
                           RL_VERSION_PART_MAX);
        part[n++] = x;
        if (*p != '.' || n == 3)
            break;
        p++;
    }
    if (!ok || n < 2 || *p)
        return rl_errf(e, RL_EINVAL, "%s: '%s' is not a version; expected X.Y.Z such as 0.12.4", field, s ? s : "");
    v->major = (int)part[0];
    v->minor = (int)part[1];
    v->patch = (int)part[2];
    return 0;
}

const char *rl_version_str(struct rl_version v, char *buf, size_t n)
{
    snprintf(buf, n, "%d.%d.%d", v.major, v.minor, v.patch);
    return buf;
}

int rl_version_cmp(struct rl_version a, struct rl_version b)
{
    if (a.major != b.major)
        return a.major < b.major ? -1 : 1;
    if (a.minor != b.minor)
        return a.minor < b.minor ? -1 : 1;
    if (a.patch != b.patch)
        return a.patch < b.patch ? -1 : 1;
    return 0;
}

/* ---- output files ------------------------------------------------------------------------- */

#define RL__MAX_OPEN 16
static char *volatile rl__open_tmp[RL__MAX_OPEN];   /* read by the signal handler */

static void track(char *tmp, bool add)
{
    for (int i = 0; i < RL__MAX_OPEN; i++) {
        if (add && !rl__open_tmp[i]) {
            rl__open_tmp[i] = tmp;
            return;
        }
        if (!add && rl__open_tmp[i] == tmp) {
            rl__open_tmp[i] = NULL;
            return;
        }
    }
}

void rl_outfile_abort_all(void)
{
    for (int i = 0; i < RL__MAX_OPEN; i++)
        if (rl__open_tmp[i])
            unlink(rl__open_tmp[i]);   /* async-signal-safe */
}

/* The stream's writes go through here so that the errno of the first failed write is kept (stdio
 * only remembers that one failed) and the final message can say why: "No space left on device". */
struct rl__sink {
    int fd;         /* the descriptor written */
    int err;        /* errno of the first failed write, 0 while all succeeded */
};

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    struct rl__sink *s = cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(s->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!s->err)
                s->err = w < 0 ? errno : EIO;
            return -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)n;
}

static int sink_close(void *cookie)
{
    struct rl__sink *s = cookie;
    int rc = 0;
    if (s->fd > STDERR_FILENO && close(s->fd) != 0 && !s->err)
        s->err = errno, rc = -1;
    return rc;
}

/* Exit 2 for a path the user got wrong (no such folder), 3 for the environment (permissions, a
 * full or read-only disk). */
static int out_code(int err)
{
    return err == ENOENT || err == ENOTDIR || err == EISDIR || err == ENAMETOOLONG || err == ELOOP ? RL_EIO : RL_EENV;
}

/* Follows `path` through symbolic links (relative ones resolve against the link's folder) to the
 * name that is finally written. Returns a malloc'd path, or NULL with errno set. */
static char *follow_links(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return cur;
        char target[PATH_MAX];
        ssize_t n = readlink(cur, target, sizeof target - 1);
        if (n < 0) {
            free(cur);
            return NULL;
        }
        target[n] = 0;
        char *next;
        const char *slash = strrchr(cur, '/');
        if (target[0] == '/' || !slash) {
            next = strdup(target);
        } else {
            size_t dl = (size_t)(slash - cur) + 1;
            next = malloc(dl + (size_t)n + 1);
            if (next) {
                memcpy(next, cur, dl);
                memcpy(next + dl, target, (size_t)n + 1);
            }
        }
        free(cur);
        cur = next;
    }
    if (cur) {
        free(cur);
        errno = ELOOP;
    }
    return NULL;
}

static int open_stream(struct rl_outfile *o, int fd, struct rl_err *e)
{
    struct rl__sink *s = malloc(sizeof *s);
    if (s) {
        s->fd = fd;
        s->err = 0;
        o->fp = fopencookie(s, "w", (cookie_io_functions_t){.write = sink_write, .close = sink_close});
    }
    if (!s || !o->fp) {
        free(s);
        if (fd > STDERR_FILENO)
            close(fd);
        int rc = rl_errf(e, RL_ENOMEM, "output %s: out of memory", o->path);
        if (o->tmp) {
            unlink(o->tmp);
            track(o->tmp, false);
        }
        free(o->tmp);
        free(o->target);
        free(o->path);
        memset(o, 0, sizeof *o);
        return rc;
    }
    o->sink = s;
    return 0;
}

int rl_outfile_check(const char *path, struct rl_err *e)
{
    if (!path || !*path)
        return rl_errf(e, RL_EINVAL, "output: empty file name");
    if (strcmp(path, "-") == 0)
        return 0;
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return rl_errf(e, RL_EIO, "output %s: is a directory; expected a file name", path);
    bool alias = strncmp(path, "/dev/std", 8) == 0 || strncmp(path, "/dev/fd/", 8) == 0 ||
                 strncmp(path, "/proc/", 6) == 0;
    if (exists && (!S_ISREG(st.st_mode) || alias)) {   /* written in place: it must be writable */
        if (access(path, W_OK) != 0)
            return rl_errf(e, out_code(errno), "output %s: cannot open (%s)", path, strerror(errno));
        return 0;
    }
    /* What rl_outfile_open will do: a temporary file beside the final target (then removed). */
    char *target = follow_links(path);
    if (!target)
        return rl_errf(e, out_code(errno), "output %s: cannot follow the link (%s)", path, strerror(errno));
    size_t n = strlen(target) + 16;
    char *tmp = malloc(n);
    if (!tmp) {
        free(target);
        return rl_errf(e, RL_ENOMEM, "output %s: out of memory", path);
    }
    snprintf(tmp, n, "%s.tmp.XXXXXX", target);
    free(target);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        free(tmp);
        return rl_errf(e, out_code(err), "output %s: cannot create file (%s)", path, strerror(err));
    }
    close(fd);
    unlink(tmp);
    free(tmp);
    return 0;
}

/* The holder's note in a lock file ("pid N on host H", written by the holder just after it took
 * the lock) into out as one line of printable characters; "another process" when there is none
 * (the holder has not written it yet, or the file is not ours). */
static void lock_holder(int fd, char *out, size_t n)
{
    /* The holder writes its note just after its flock: a note that is not there yet, or that of an
     * earlier holder of this host that has ended, is read again a few times (at most ~20 ms). */
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = 0;
    for (int attempt = 0; attempt < 20; attempt++) {
        char buf[160];
        ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
        size_t len = 0;
        while (k > 0 && len < (size_t)k && len + 1 < n && buf[len] >= 0x20 && buf[len] < 0x7f) {
            out[len] = buf[len];
            len++;
        }
        out[len] = 0;
        long pid = 0;
        int at = 0;
        bool note = sscanf(out, "pid %ld on host %n", &pid, &at) == 1 && at > 0 && pid > 0;
        bool ended = note && strcmp(out + at, host) == 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        if (note && !ended)
            return;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    snprintf(out, n, "another process");
}

int rl_outdir_lock(const char *dir, int *lock_fd, struct rl_err *e)
{
    *lock_fd = -1;
    if (!dir || !*dir)
        return rl_errf(e, RL_EINVAL, "output folder: empty name");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return rl_errf(e, out_code(errno), "output folder %s: cannot create it (%s)", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return rl_errf(e, RL_EINVAL, "output folder %s: not a folder; allowed: a folder (created when missing)", dir);
    size_t n = strlen(dir) + sizeof "/" RL_OUTDIR_LOCK;
    char *path = malloc(n);
    if (!path)
        return rl_errf(e, RL_ENOMEM, "output folder %s: out of memory", dir);
    snprintf(path, n, "%s/" RL_OUTDIR_LOCK, dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) {
        int err = errno;
        int rc = rl_errf(e, out_code(err), "output folder %s: cannot create %s (%s)", dir, path, strerror(err));
        free(path);
        return rc;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        char who[160];
        lock_holder(fd, who, sizeof who);
        close(fd);
        int rc = err == EWOULDBLOCK
                     ? rl_errf(e, RL_EENV, "output folder %s: another ratiolab is writing there (%s holds %s); "
                               "allowed: a folder no other run is using", dir, who, path)
                     : rl_errf(e, RL_EENV, "output folder %s: cannot lock %s (%s)", dir, path, strerror(err));
        free(path);
        return rc;
    }
    free(path);
    /* Who holds it, for the message of the next one that tries (the lock is the flock, not this). */
    char host[256] = "?", line[320];
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = 0;
    int len = snprintf(line, sizeof line, "pid %ld on host %s\n", (long)getpid(), host);
    size_t nb = (size_t)len < sizeof line ? (size_t)len : sizeof line - 1;
    if (pwrite(fd, line, nb, 0) != (ssize_t)nb || ftruncate(fd, (off_t)nb) != 0) {
        /* The lock holds without the note; the next one's message says "another process". */
    }
    *lock_fd = fd;
    return 0;
}

int rl_outfile_open(struct rl_outfile *o, const char *path, struct rl_err *e)
{
    memset(o, 0, sizeof *o);
    if (!path || !*path)
        return rl_errf(e, RL_EINVAL, "output: empty file name");
    o->path = strdup(path);
    if (!o->path)
        return rl_errf(e, RL_ENOMEM, "output %s: out of memory", path);
    if (strcmp(path, "-") == 0) {
        fflush(stdout);
        o->in_place = true;
        return open_stream(o, STDOUT_FILENO, e);
    }
    struct stat st;
    bool exists = stat(path, &st) == 0;   /* follows every link, /proc's fd links included */
    if (exists && S_ISDIR(st.st_mode)) {
        free(o->path);
        o->path = NULL;
        return rl_errf(e, RL_EIO, "output %s: is a directory; expected a file name", path);
    }
    /* A device, FIFO or socket, or a descriptor alias (/dev/stdout, /dev/fd/N, /proc/...): written
     * in place, never replaced. An alias of a regular file is appended to, as the shell's >> or a
     * fresh > leaves it. */
    bool alias = strncmp(path, "/dev/std", 8) == 0 || strncmp(path, "/dev/fd/", 8) == 0 ||
                 strncmp(path, "/proc/", 6) == 0;
    if (exists && (!S_ISREG(st.st_mode) || alias)) {
        int flags = O_WRONLY | O_CLOEXEC;
        if (S_ISREG(st.st_mode))
            flags |= O_APPEND;
        else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
            flags |= O_TRUNC;
        int fd = open(path, flags);
        if (fd < 0) {
            int err = errno;
            free(o->path);
            o->path = NULL;
            return rl_errf(e, out_code(err), "output %s: cannot open (%s)", path, strerror(err));
        }
        o->in_place = true;
        return open_stream(o, fd, e);
    }
    char *target = follow_links(path);   /* also for a dangling link: its target is created */
    if (!target) {
        int err = errno;
        free(o->path);
        o->path = NULL;
        return rl_errf(e, out_code(err), "output %s: cannot follow the link (%s)", path, strerror(err));
    }
    size_t n = strlen(target) + 16;
    o->tmp = malloc(n);
    if (!o->tmp) {
        free(target);
        free(o->path);
        o->path = NULL;
        return rl_errf(e, RL_ENOMEM, "output %s: out of memory", path);
    }
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", target);
    o->target = target;
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        free(o->tmp);
        free(o->target);
        free(o->path);
        memset(o, 0, sizeof *o);
        return rl_errf(e, out_code(err), "output %s: cannot create file (%s)", path, strerror(err));
    }
    if (exists) {
        /* The replacement keeps the old file's mode and, where allowed, its owner. */
        fchmod(fd, st.st_mode & 07777);
        if (fchown(fd, st.st_uid, st.st_gid) != 0) {
            /* not permitted for other owners: the file becomes ours */
        }
    } else {
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);
    }
    track(o->tmp, true);
    return open_stream(o, fd, e);
}

int rl_outfile_fd(const struct rl_outfile *o)
{
    const struct rl__sink *s = o->sink;
    if (o->fp)
        fflush(o->fp);
    return s ? s->fd : -1;
}

static void outfile_free(struct rl_outfile *o)
{
    free(o->sink);
    free(o->tmp);
    free(o->target);
    free(o->path);
    memset(o, 0, sizeof *o);
}

int rl_outfile_commit(struct rl_outfile *o, struct rl_err *e)
{
    int rc = 0;
    struct rl__sink *s = o->sink;
    bool bad = !o->fp || fflush(o->fp) != 0 || ferror(o->fp);
    if (o->fp && fclose(o->fp) != 0)
        bad = true;
    o->fp = NULL;
    int err = s && s->err ? s->err : EIO;
    if (bad) {
        rc = rl_errf(e, RL_EENV, "output %s: write failed (%s)", o->path ? o->path : "?", strerror(err));
        if (o->tmp)
            unlink(o->tmp);
    } else if (o->tmp && rename(o->tmp, o->target) != 0) {
        err = errno;
        rc = rl_errf(e, RL_EENV, "output %s: cannot rename into place (%s)", o->path, strerror(err));
        unlink(o->tmp);
    }
    if (o->tmp)
        track(o->tmp, false);
    outfile_free(o);
    return rc;
}

void rl_outfile_abort(struct rl_outfile *o)
{
    if (o->fp)
        fclose(o->fp);
    if (o->tmp) {
        unlink(o->tmp);
        track(o->tmp, false);
    }
    outfile_free(o);
}

/* ---- input files --------------------------------------------------------------------------- */

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a regular file";
}

/* Reads fd to its end into a NUL-terminated buffer of at most RL_INPUT_MAX_BYTES. */
static int read_fd(int fd, const char *name, char **out, size_t *len, struct rl_err *e)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", name);
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > RL_INPUT_MAX_BYTES) {
                free(buf);
                return rl_errf(e, RL_EINVAL, "%s: larger than %d MiB; inputs are limited to %d MiB",
                               name, RL_INPUT_MAX_BYTES >> 20, RL_INPUT_MAX_BYTES >> 20);
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return rl_errf(e, RL_ENOMEM, "%s: out of memory", name);
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            free(buf);
            return rl_errf(e, RL_EIO, "%s: read error (%s)", name, strerror(err));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > RL_INPUT_MAX_BYTES) {
        free(buf);
        return rl_errf(e, RL_EINVAL, "%s: larger than %d MiB; inputs are limited to %d MiB", name,
                       RL_INPUT_MAX_BYTES >> 20, RL_INPUT_MAX_BYTES >> 20);
    }
    buf[n] = 0;
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

int rl_open_input(const char *path, int *fd_out, struct rl_err *e)
{
    *fd_out = -1;
    if (!path || !*path)
        return rl_errf(e, RL_EINVAL, "empty file name");
    /* O_NONBLOCK: opening a FIFO without a writer must not hang before it can be refused. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        return rl_errf(e, err == ENOENT ? RL_ENOENT : RL_EIO, "%s: cannot open (%s)", path, strerror(err));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return rl_errf(e, RL_EIO, "%s: cannot stat (%s)", path, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return rl_errf(e, RL_EINVAL, "%s: is %s; expected a regular file", path, file_kind(st.st_mode));
    }
    if (st.st_size > RL_INPUT_MAX_BYTES) {
        close(fd);
        return rl_errf(e, RL_EINVAL, "%s: is %lld bytes; inputs are limited to %d MiB", path,
                       (long long)st.st_size, RL_INPUT_MAX_BYTES >> 20);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    return 0;
}

int rl_read_bytes(const char *path, char **out, size_t *len, struct rl_err *e)
{
    int fd;
    int rc = rl_open_input(path, &fd, e);
    if (rc)
        return rc;
    rc = read_fd(fd, path, out, len, e);
    close(fd);
    return rc;
}

int rl_check_text(const char *name, const char *text, size_t len, struct rl_err *e)
{
    const char *nul = memchr(text, 0, len);
    if (nul)
        return rl_errf(e, RL_EINVAL, "%s: NUL byte at offset %zu; expected text", name, (size_t)(nul - text));
    return 0;
}

int rl_read_input(const char *path, bool allow_stdin, char **out, size_t *len, struct rl_err *e)
{
    size_t n = 0;
    int rc;
    const char *name = path;
    if (allow_stdin && path && strcmp(path, "-") == 0) {
        name = "(standard input)";
        rc = read_fd(STDIN_FILENO, name, out, &n, e);
    } else {
        rc = rl_read_bytes(path, out, &n, e);
    }
    if (rc)
        return rc;
    if ((rc = rl_check_text(name, *out, n, e))) {
        free(*out);
        *out = NULL;
        return rc;
    }
    if (len)
        *len = n;
    return 0;
}

int rl_read_file(const char *path, char **out, size_t *len, struct rl_err *e)
{
    return rl_read_input(path, false, out, len, e);
}

const char *rl_catalog_dir(void)
{
    static char dir[PATH_MAX];
    if (dir[0])
        return dir;
    const char *env = getenv("RATIOLAB_CATALOG");
    if (env && *env) {
        snprintf(dir, sizeof dir, "%s", env);
        return dir;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = 0;
        static const char *rel[] = {"/../catalog", "/../share/ratiolab/catalog", "/../../catalog",
                                    "/../../../catalog"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            char cand[PATH_MAX + 64];
            snprintf(cand, sizeof cand, "%s%s", exe, rel[i]);
            char real[PATH_MAX];
            struct stat st;
            if (realpath(cand, real) && stat(real, &st) == 0 && S_ISDIR(st.st_mode)) {
                char probe[PATH_MAX + 16];
                snprintf(probe, sizeof probe, "%s/models", real);
                if (stat(probe, &st) == 0) {
                    snprintf(dir, sizeof dir, "%s", real);
                    return dir;
                }
            }
        }
    }
    snprintf(dir, sizeof dir, "catalog");
    return dir;
}

int rl_grow(void *array_ptr, int *cap, size_t elem_bytes, int need, int first)
{
    if (need <= *cap)
        return 0;
    int64_t n = *cap > 0 ? *cap : (first > 0 ? first : 1);
    while (n < need)
        n *= 2;
    if (n > INT_MAX || (uint64_t)n > SIZE_MAX / (elem_bytes ? elem_bytes : 1))
        return RL_ENOMEM;
    void *old;
    memcpy(&old, array_ptr, sizeof old);   /* the caller's pointer, whatever its element type */
    void *q = realloc(old, (size_t)n * elem_bytes);
    if (!q)
        return RL_ENOMEM;
    memcpy(array_ptr, &q, sizeof q);
    *cap = (int)n;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t rl__imap_slot(int64_t key, int cap)
{
    uint64_t h = (uint64_t)key * UINT64_C(0x9e3779b97f4a7c15);   /* Fibonacci hashing */
    return (size_t)(h >> 32) & (size_t)(cap - 1);
}

int rl_imap_get(const struct rl_imap *m, int64_t key)
{
    if (!m->cap)
        return -1;
    for (size_t i = rl__imap_slot(key, m->cap);; i = (i + 1) & (size_t)(m->cap - 1)) {
        if (!m->vals[i])
            return -1;
        if (m->keys[i] == key)
            return m->vals[i] - 1;
    }
}

int rl_imap_put(struct rl_imap *m, int64_t key, int val)
{
    if (2 * (m->n + 1) > m->cap) {
        if (m->cap > INT32_MAX / 4)
            return RL_ENOMEM;
        int cap = m->cap ? 2 * m->cap : 64;
        int64_t *keys = calloc((size_t)cap, sizeof *keys);
        int *vals = calloc((size_t)cap, sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return RL_ENOMEM;
        }
        for (int j = 0; j < m->cap; j++)
            if (m->vals[j]) {
                size_t i = rl__imap_slot(m->keys[j], cap);
                while (vals[i])
                    i = (i + 1) & (size_t)(cap - 1);
                keys[i] = m->keys[j];
                vals[i] = m->vals[j];
            }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t i = rl__imap_slot(key, m->cap);
    while (m->vals[i] && m->keys[i] != key)
        i = (i + 1) & (size_t)(m->cap - 1);
    if (!m->vals[i])
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val + 1;
    return 0;
}

void rl_imap_free(struct rl_imap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

double rl_median(const double *v, int n)
{
    if (n <= 0)
        return 0;
    double *c = malloc((size_t)n * sizeof *c);
    if (!c)
        return 0;
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}
