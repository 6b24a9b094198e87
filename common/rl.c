/* common/rl.c — see rl.h. */
#include "common/rl.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int rl_errf(struct rl_err *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
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
    return e->code;
}

bool rl_streq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

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
    *out = v;
    return 0;
}

int rl_parse_bytes(const char *field, const char *s, int64_t *out, struct rl_err *e)
{
    static const struct { const char *suffix; double mult; } units[] = {
        {"", 1}, {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", RL_GIB},
        {"TiB", 1099511627776.0}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
        {"K", 1024.0}, {"M", 1048576.0}, {"G", RL_GIB}, {"T", 1099511627776.0},
    };
    if (!s || !*s)
        return rl_errf(e, RL_EINVAL, "%s: empty value; expected a size such as 16GiB or 80GB", field);
    char *end;
    double v = strtod(s, &end);
    if (end == s || isnan(v) || isinf(v) || v < 0)
        return rl_errf(e, RL_EINVAL, "%s: '%s' is not a size; expected e.g. 16GiB, 80GB or 1e9", field, s);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            double b = v * units[i].mult;
            if (b > 9.0e18)
                return rl_errf(e, RL_EINVAL, "%s: '%s' is too large (limit 8 EiB)", field, s);
            *out = (int64_t)llround(b);
            return 0;
        }
    }
    return rl_errf(e, RL_EINVAL, "%s: '%s' has an unknown unit '%s'; allowed: B, KiB, MiB, GiB, TiB, kB, MB, GB, TB",
                   field, s, end);
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
        char buf[128];
        snprintf(buf, sizeof buf, "%s", s);
        char *p2 = strchr(buf, ':');
        *p2++ = 0;
        char *p3 = strchr(p2, ':');
        if (!p3)
            return rl_errf(e, RL_EINVAL, "%s: '%s' is not lo:hi:step (e.g. 0:1:0.1)", field, s);
        *p3++ = 0;
        double lo, hi, step;
        int rc;
        if ((rc = rl_parse_double(field, buf, min, max, &lo, e)) ||
            (rc = rl_parse_double(field, p2, min, max, &hi, e)) ||
            (rc = rl_parse_double(field, p3, 0, max - min > 0 ? max - min : 1, &step, e)))
            return rc;
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
    int a = 0, b = 0, c = 0, used = 0;
    if (!s || sscanf(s, "%d.%d.%d%n", &a, &b, &c, &used) != 3 || s[used] != 0 || a < 0 || b < 0 || c < 0) {
        used = 0;
        c = 0;
        if (!s || sscanf(s, "%d.%d%n", &a, &b, &used) != 2 || s[used] != 0 || a < 0 || b < 0)
            return rl_errf(e, RL_EINVAL, "%s: '%s' is not a version; expected X.Y.Z such as 0.12.4",
                           field, s ? s : "");
    }
    v->major = a;
    v->minor = b;
    v->patch = c;
    return 0;
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

/* ---- atomic output files ----------------------------------------------------------------- */

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

int rl_outfile_open(struct rl_outfile *o, const char *path, struct rl_err *e)
{
    memset(o, 0, sizeof *o);
    if (!path || !*path)
        return rl_errf(e, RL_EINVAL, "output: empty file name");
    if (strcmp(path, "-") == 0) {
        o->fp = stdout;
        o->path = strdup("-");
        return 0;
    }
    size_t n = strlen(path) + 16;
    o->tmp = malloc(n);
    o->path = strdup(path);
    if (!o->tmp || !o->path) {
        free(o->tmp);
        free(o->path);
        return rl_errf(e, RL_ENOMEM, "output %s: out of memory", path);
    }
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int err = errno;
        free(o->tmp);
        free(o->path);
        o->tmp = o->path = NULL;
        return rl_errf(e, RL_EIO, "output %s: cannot create file (%s)", path, strerror(err));
    }
    fchmod(fd, 0644);
    o->fp = fdopen(fd, "wb");
    track(o->tmp, true);
    return 0;
}

int rl_outfile_commit(struct rl_outfile *o, struct rl_err *e)
{
    int rc = 0;
    if (!o->tmp) {
        fflush(o->fp);
    } else {
        bool bad = ferror(o->fp) != 0;
        if (fclose(o->fp) != 0)
            bad = true;
        if (bad) {
            rc = rl_errf(e, RL_EIO, "output %s: write failed", o->path);
            unlink(o->tmp);
        } else if (rename(o->tmp, o->path) != 0) {
            rc = rl_errf(e, RL_EIO, "output %s: cannot rename into place (%s)", o->path, strerror(errno));
            unlink(o->tmp);
        }
        track(o->tmp, false);
    }
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    return rc;
}

void rl_outfile_abort(struct rl_outfile *o)
{
    if (o->tmp) {
        if (o->fp)
            fclose(o->fp);
        unlink(o->tmp);
        track(o->tmp, false);
    }
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

int rl_read_file(const char *path, char **out, size_t *len, struct rl_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return rl_errf(e, errno == ENOENT ? RL_ENOENT : RL_EIO, "%s: cannot open (%s)", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
        }
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap);
        if (!nb)
            free(buf);
        buf = nb;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return rl_errf(e, RL_EIO, "%s: read error", path);
    }
    buf[n] = 0;
    *out = buf;
    if (len)
        *len = n;
    return 0;
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
