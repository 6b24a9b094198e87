/* traces/dsconfig.c — the configuration lines of a DeepSpeed log (see dsconfig.h). */
#include <ctype.h>
#include <stdint.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/dsconfig.h"
#include "traces/trace.h"

/* The value after "key=" where key starts a pair (at the start, or after ' ', '(' or ','), NULL
 * when absent. Searches s only up to end (exclusive; NULL: the whole string). */
static const char *pair(const char *s, const char *end, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = s; (p = strstr(p, key)) != NULL && (!end || p < end); p += kl) {
        bool starts = p == s || p[-1] == ' ' || p[-1] == '(' || p[-1] == ',';
        if (starts && p[kl] == '=')
            return p + kl + 1;
    }
    return NULL;
}

/* The end of a value at v: the space or comma (or closing parenthesis) that ends it at depth 0. */
static const char *value_end(const char *v)
{
    int depth = 0;
    char quote = 0;
    for (const char *p = v;; p++) {
        if (!*p)
            return p;
        if (quote) {
            if (*p == quote)
                quote = 0;
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
        } else if (*p == '(' || *p == '<' || *p == '[' || *p == '{') {
            depth++;
        } else if (*p == ')' || *p == '>' || *p == ']' || *p == '}') {
            if (depth == 0)
                return p;
            depth--;
        } else if ((*p == ' ' || (*p == ',' && (p[1] == ' ' || !p[1]))) && depth == 0) {
            return p;   /* "500,000,000": a comma inside a number is DeepSpeed's thousands separator */
        }
    }
}

static int bad(struct rl_err *e, const char *path, int line, const char *field, const char *v)
{
    int n = (int)(value_end(v) - v);
    return rl_errf(e, RL_EINVAL, "%s:%d: zero_config %s: '%.*s' is not a value DeepSpeed prints; allowed: a "
                   "non-negative integer", path, line, field, n > 40 ? 40 : n, v);
}

/* An integer value ("500000000", "500,000,000" as DeepSpeed 0.14 prints it, "5e8") into *out. */
static int int_value(const char *v, const char *path, int line, const char *field, int64_t *out, struct rl_err *e)
{
    const char *vend = value_end(v);
    char num[40];
    size_t n = 0;
    for (const char *p = v; p < vend; p++) {
        if (*p == ',' && p > v && isdigit((unsigned char)p[-1]) && isdigit((unsigned char)p[1]))
            continue;
        if (n + 1 >= sizeof num)
            return bad(e, path, line, field, v);
        num[n++] = *p;
    }
    num[n] = 0;
    char *end;
    errno = 0;
    double d = strtod(num, &end);
    if (end == num || errno || !isfinite(d) || d < 0 || d > 9.2e18 || d != floor(d) || *end)
        return bad(e, path, line, field, v);
    *out = (int64_t)d;
    return 0;
}

/* The device of "device='cpu'", "device=<OffloadDeviceEnum.cpu: 'cpu'>" or "device=OffloadDeviceEnum.cpu". */
static void device_value(const char *v, char *out, size_t n)
{
    const char *end = value_end(v);
    const char *q = memchr(v, '\'', (size_t)(end - v));
    const char *s = v, *e = end;
    if (q) {
        s = q + 1;
        const char *q2 = memchr(s, '\'', (size_t)(end - s));
        e = q2 ? q2 : end;
    } else {
        for (const char *p = v; p < end; p++)
            if (*p == '.')
                s = p + 1;
    }
    size_t l = (size_t)(e - s) < n - 1 ? (size_t)(e - s) : n - 1;
    memcpy(out, s, l);
    out[l] = 0;
    for (size_t i = 0; i < l; i++)
        if (!isalnum((unsigned char)out[i]) && out[i] != '_')
            out[i] = 0;
}

static int parse_zero(const char *v, const char *path, int line, struct trace_ds_config *c, struct rl_err *e)
{
    const char *off = pair(v, NULL, "offload_optimizer");
    const char *off_end = off ? value_end(off) : NULL;
    /* Keys of zero_config itself are looked up outside offload_optimizer's parentheses. */
    const struct {
        const char *key;   /* field name as the repr prints it */
        int64_t *out;      /* where it goes */
    } keys[] = {{"sub_group_size", &c->sub_group_size}, {"reduce_bucket_size", &c->reduce_bucket_size},
                {"prefetch_bucket_size", &c->prefetch_bucket_size}};
    int64_t stage;
    const char *s = pair(v, NULL, "stage");
    if (s) {
        int rc = int_value(s, path, line, "stage", &stage, e);
        if (rc)
            return rc;
        if (stage > 3)
            return rl_errf(e, RL_EINVAL, "%s:%d: zero_config stage: %lld; allowed: 0..3", path, line, (long long)stage);
        c->stage = (int)stage;
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *x = pair(v, NULL, keys[i].key);
        if (x && off && x > off && x < off_end)
            x = pair(off_end, NULL, keys[i].key);
        int rc = x ? int_value(x, path, line, keys[i].key, keys[i].out, e) : 0;
        if (rc)
            return rc;
    }
    if (!off)
        return 0;
    if (strncmp(off, "None", 4) == 0) {
        snprintf(c->offload_device, sizeof c->offload_device, "none");
        return 0;
    }
    const char *d = pair(off, off_end, "device");
    if (d)
        device_value(d, c->offload_device, sizeof c->offload_device);
    const char *pm = pair(off, off_end, "pin_memory");
    if (pm)
        c->pin_memory = strncmp(pm, "True", 4) == 0 ? 1 : strncmp(pm, "False", 5) == 0 ? 0 : -1;
    const char *r = pair(off, off_end, "ratio");
    if (r) {
        char *end;
        errno = 0;
        double x = strtod(r, &end);
        if (end == r || errno || !(x >= 0 && x <= 1) || end != value_end(r))
            return rl_errf(e, RL_EINVAL, "%s:%d: zero_config offload_optimizer ratio: not a number in [0, 1]", path, line);
        c->have_ratio = true;
        c->ratio = x;
    }
    return 0;
}

/* Depth of unclosed parentheses (and <, [, {) in s outside quotes. */
static int open_depth(const char *s, size_t n)
{
    int depth = 0;
    char quote = 0;
    for (size_t i = 0; i < n && s[i]; i++) {
        char ch = s[i];
        if (quote)
            quote = ch == quote ? 0 : quote;
        else if (ch == '\'' || ch == '"')
            quote = ch;
        else if (ch == '(' || ch == '<' || ch == '[' || ch == '{')
            depth++;
        else if ((ch == ')' || ch == '>' || ch == ']' || ch == '}') && depth > 0)
            depth--;
    }
    return depth;
}

/* Bytes of the line at p (up to its newline or end). */
static size_t line_len(const char *p, const char *end)
{
    const char *q = memchr(p, '\n', (size_t)(end - p));
    return (size_t)((q ? q : end) - p);
}

/* True when a line (n bytes) continues a repr wrapped onto it: it is no logger line (those hold
 * "] [" between their prefix's fields) and it is not empty. */
static bool continuation(const char *s, size_t n)
{
    if (!n || memmem(s, n, "] [", 3))
        return false;
    return true;
}

/* True when a line starts as the middle of a repr does: "name=value". */
static bool starts_with_pair(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] == ' ')
        i++;
    size_t k = i;
    while (k < n && (isalnum((unsigned char)s[k]) || s[k] == '_'))
        k++;
    return k > i && k < n && s[k] == '=';
}

/* A zero_config value wrapped over several lines (a terminal's or fold's wrap, a log collector's
 * line limit): when its parentheses do not close on its line, or the next line starts with a
 * "name=value" pair, the lines after it up to the next logger line (64 at most) are its
 * continuation, joined (fold cuts anywhere, so nothing is put between them). *joined is malloc'd (NULL when nothing was
 * joined) and *used the lines taken. Parentheses still open after the continuation is RL_EINVAL
 * naming the line: a value cut short would otherwise leave its missing fields to defaults. */
static int join_wrapped(const char *v, const char *next, const char *end, const char *path, int line_no,
                        char **joined, int *used, struct rl_err *e)
{
    *joined = NULL;
    *used = 0;
    int depth = open_depth(v, strlen(v));
    size_t first = next && next < end ? line_len(next, end) : 0;
    if (depth == 0 && !(first && continuation(next, first) && starts_with_pair(next, first)))
        return 0;
    size_t cap = strlen(v) + 1, n = strlen(v);
    char *b = malloc(cap);
    if (!b)
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    memcpy(b, v, n + 1);
    for (const char *p = next; p && p < end && *used < 64;) {
        const char *q = memchr(p, '\n', (size_t)(end - p));
        size_t l = (size_t)((q ? q : end) - p);
        while (l && (p[l - 1] == '\r'))
            l--;
        if (!continuation(p, l))
            break;
        char *nb = realloc(b, cap + l);
        if (!nb) {
            free(b);
            return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
        }
        b = nb;
        cap += l;
        memcpy(b + n, p, l);
        n += l;
        b[n] = 0;
        (*used)++;
        p = q ? q + 1 : NULL;
    }
    if (open_depth(b, n) != 0) {
        free(b);
        return rl_errf(e, RL_EINVAL, "%s:%d: zero_config: its value's parentheses do not close on the line or on the "
                       "%d line%s after it (the line was cut short); allowed: DeepSpeed's repr whole, on one line or "
                       "wrapped over the lines after it", path, line_no, *used, *used == 1 ? "" : "s");
    }
    *joined = b;
    return 0;
}

/* "  name ......... value": the value of a DeepSpeedEngine configuration line, NULL when the line
 * is not that name's. */
static const char *config_line(const char *line, const char *name)
{
    const char *p = strstr(line, "] ");
    for (const char *q = line; (q = strstr(q, "] ")) != NULL; q += 2)
        p = q;   /* after the last "] " of the logger's prefix */
    if (!p)
        return NULL;
    p += 2;
    while (*p == ' ')
        p++;
    size_t l = strlen(name);
    if (strncmp(p, name, l) != 0 || p[l] != ' ')
        return NULL;
    p += l;
    while (*p == ' ' || *p == '.')
        p++;
    return p;
}

int trace_ds_config_parse(const char *in, size_t len, const char *path, struct trace_ds_config *c, struct rl_err *e)
{
    memset(c, 0, sizeof *c);
    c->stage = -1;
    c->sub_group_size = c->reduce_bucket_size = c->prefetch_bucket_size = c->world_size = -1;
    c->pin_memory = -1;
    char *text = malloc(len + 1);
    if (!text)
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    memcpy(text, in, len);
    text[len] = 0;
    int line_no = 0, rc = 0;
    bool bf16 = false, fp16 = false, have_bf16 = false, have_fp16 = false;
    for (char *line = text; line && line < text + len && !rc;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        if (nl)
            *nl = 0;
        line_no++;
        size_t ll = strlen(line);
        while (ll && (line[ll - 1] == '\r' || line[ll - 1] == ' '))
            line[--ll] = 0;
        const char *acc = strstr(line, "Setting ds_accelerator to ");
        if (acc && !c->accelerator[0]) {
            acc += strlen("Setting ds_accelerator to ");
            size_t n = strcspn(acc, " ()");
            snprintf(c->accelerator, sizeof c->accelerator, "%.*s", (int)(n < 15 ? n : 15), acc);
        }
        const char *v = strstr(line, "DeepSpeed info: version=");
        if (v && !c->have_version) {
            v += strlen("DeepSpeed info: version=");
            char ver[32];
            size_t n = strcspn(v, ",+ ");
            snprintf(ver, sizeof ver, "%.*s", (int)(n < 31 ? n : 31), v);
            struct rl_err ve = {0};
            if (rl_parse_version("version", ver, &c->version, &ve) == 0) {
                c->have_version = true;
                c->version_line = line_no;
            } else if (strstr(ve.msg, "a part above")) {   /* a release number out of range: not guessed at */
                rc = rl_errf(e, RL_EINVAL, "%s:%d: DeepSpeed info: %s", path, line_no, ve.msg);
            }
        } else if ((v = config_line(line, "zero_config")) != NULL && !c->have_zero) {
            c->have_zero = true;
            c->zero_line = line_no;
            char *joined = NULL;
            int used = 0;
            rc = join_wrapped(v, nl ? nl + 1 : NULL, text + len, path, line_no, &joined, &used, e);
            if (!rc)
                rc = parse_zero(joined ? joined : v, path, line_no, c, e);
            free(joined);
            /* The continuation lines are the zero_config's: skip them, counting them. */
            for (int k = 0; k < used && nl; k++) {
                line_no++;
                nl = memchr(nl + 1, '\n', (size_t)(text + len - (nl + 1)));
            }
        } else if ((v = config_line(line, "bfloat16_enabled")) != NULL && !have_bf16) {
            have_bf16 = true;
            bf16 = strncmp(v, "True", 4) == 0;
        } else if ((v = config_line(line, "bfloat16_config")) != NULL && !have_bf16) {
            have_bf16 = true;
            const char *x = pair(v, NULL, "enabled");
            bf16 = x && strncmp(x, "True", 4) == 0;
        } else if ((v = config_line(line, "fp16_enabled")) != NULL && !have_fp16) {
            have_fp16 = true;
            fp16 = strncmp(v, "True", 4) == 0;
        } else if ((v = config_line(line, "world_size")) != NULL && c->world_size < 0) {
            char *end;
            long long w = strtoll(v, &end, 10);
            if (end != v && !*end && w > 0 && w < (1LL << 30))
                c->world_size = w;
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (rc)
        return rc;
    if (have_bf16 || have_fp16)
        snprintf(c->dtype, sizeof c->dtype, "%s", bf16 ? "bf16" : fp16 ? "fp16" : "fp32");
    return 0;
}

int trace_ds_config_read(const char *path, struct trace_ds_config *c, struct rl_err *e)
{
    memset(c, 0, sizeof *c);
    char *text;
    size_t len;
    int rc = trace_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    rc = trace_ds_config_parse(text, len, path, c, e);
    free(text);
    return rc;
}

int trace_ds_split_runs(const char *text, size_t len, const char *path, struct trace_ds_run **runs, int *n,
                        struct rl_err *e)
{
    int cap = 0;
    *runs = NULL;
    *n = 0;
    bool have_version = false, have_zero = false;   /* in the run being read */
    int line_no = 1;
    size_t start = 0, acc_at = SIZE_MAX;   /* acc_at: an accelerator line after this run's last content */
    int start_line = 1, acc_line = 0;
    for (size_t at = 0; at <= len;) {
        const char *nl = at < len ? memchr(text + at, '\n', len - at) : NULL;
        size_t end = nl ? (size_t)(nl - text) : len;
        /* The line [at, end), searched without copying: the tags are plain text. */
        char buf[512];
        size_t l = end - at < sizeof buf - 1 ? end - at : sizeof buf - 1;
        memcpy(buf, text + at, l);
        buf[l] = 0;
        for (size_t i = 0; i < l; i++)
            if (!buf[i])
                buf[i] = ' ';
        bool version = strstr(buf, "DeepSpeed info: version=") != NULL;
        bool zero = !version && config_line(buf, "zero_config") != NULL;
        bool acc = strstr(buf, "Setting ds_accelerator to ") != NULL;
        bool content = zero || strstr(buf, "see_memory_usage] ") || strstr(buf, "elapsed time per iteration");
        if ((version && have_version) || (zero && have_zero && !version)) {
            /* The next run's import printed its accelerator line before its version line: the
             * run starts there when nothing of this run came after it. */
            size_t cut = acc_at != SIZE_MAX ? acc_at : at;
            if (rl_grow(runs, &cap, sizeof **runs, *n + 1, 4))
                return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
            (*runs)[(*n)++] = (struct trace_ds_run){start, cut - start, start_line};
            start = cut;
            start_line = acc_at != SIZE_MAX ? acc_line : line_no;
            have_version = have_zero = false;
            acc_at = SIZE_MAX;
        }
        if (content)
            acc_at = SIZE_MAX;
        else if (acc && have_version && acc_at == SIZE_MAX) {
            acc_at = at;
            acc_line = line_no;
        }
        have_version |= version;
        have_zero |= zero;
        if (!nl)
            break;
        at = end + 1;
        line_no++;
    }
    if (rl_grow(runs, &cap, sizeof **runs, *n + 1, 4)) {
        free(*runs);
        *runs = NULL;
        *n = 0;
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", path);
    }
    (*runs)[(*n)++] = (struct trace_ds_run){start, len - start, start_line};
    return 0;
}

bool trace_ds_config_same(const struct trace_ds_config *a, const struct trace_ds_config *b)
{
    return a->have_version == b->have_version && (!a->have_version || rl_version_cmp(a->version, b->version) == 0) &&
           a->have_zero == b->have_zero && a->stage == b->stage && a->sub_group_size == b->sub_group_size &&
           a->reduce_bucket_size == b->reduce_bucket_size && a->prefetch_bucket_size == b->prefetch_bucket_size &&
           strcmp(a->offload_device, b->offload_device) == 0 && a->have_ratio == b->have_ratio &&
           (!a->have_ratio || a->ratio == b->ratio) && a->pin_memory == b->pin_memory &&
           strcmp(a->dtype, b->dtype) == 0 && a->world_size == b->world_size &&
           strcmp(a->accelerator, b->accelerator) == 0;
}
