/* plan/json_edit.c — text edits of a JSON document (see json_edit.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "plan/json_edit.h"
#include "plan/json_text.h"   /* plan_json_relax */

#define MAX_DEPTH 16

/* What the scan learns about one object on the path: where it opens and closes and where its last
 * member starts (after the ',' or '{' before it) and ends. */
struct obj_info {
    size_t open, close;      /* offsets of '{' and '}' */
    size_t last_ws;          /* start of the whitespace before the last member's key */
    size_t last_key;         /* start of the last member's key (its '"') */
    size_t last_end;         /* end of the last member's value */
    int members;             /* members seen */
};

struct scan {
    const char *s;           /* the text */
    size_t len;              /* its length */
    size_t i;                /* read position */
    const char *const *path; /* the member looked for */
    int n;                   /* its depth */
    int deepest;             /* deepest object on the path that exists (-1: the root is no object) */
    struct obj_info obj[MAX_DEPTH]; /* per depth on the path */
    bool found;              /* the member exists */
    size_t key, val, end;    /* its key's '"', its value's start and end */
    size_t prev_end;         /* end of the member before it in its object (0: it is the first) */
    size_t next_key;         /* start of the member after it (0: it is the last) */
    bool want_next;          /* the next member's key start is still to be recorded */
    int bad_depth;           /* a key on the path names a non-object (-1: none) */
};

static void ws(struct scan *c)
{
    while (c->i < c->len && strchr(" \t\r\n", c->s[c->i]))
        c->i++;
}

static bool string(struct scan *c)
{
    if (c->i >= c->len || c->s[c->i] != '"')
        return false;
    for (c->i++; c->i < c->len; c->i++) {
        if (c->s[c->i] == '\\')
            c->i++;
        else if (c->s[c->i] == '"') {
            c->i++;
            return true;
        }
    }
    return false;
}

static bool value(struct scan *c, int depth, bool on_path);

static bool object(struct scan *c, int depth, bool on_path)
{
    struct obj_info *o = on_path && depth < MAX_DEPTH ? &c->obj[depth] : NULL;
    if (o) {
        memset(o, 0, sizeof *o);
        o->open = c->i;
        if (depth > c->deepest)
            c->deepest = depth;
    }
    c->i++;   /* '{' */
    size_t ws_start = c->i;
    ws(c);
    if (c->i < c->len && c->s[c->i] == '}') {
        if (o)
            o->close = c->i;
        c->i++;
        return true;
    }
    for (;;) {
        size_t key = c->i;
        if (!string(c))
            return false;
        if (c->want_next) {
            c->next_key = key;
            c->want_next = false;
        }
        size_t klen = c->i - key - 2;
        bool match = on_path && depth < c->n && strlen(c->path[depth]) == klen &&
                     memcmp(c->s + key + 1, c->path[depth], klen) == 0;
        ws(c);
        if (c->i >= c->len || c->s[c->i] != ':')
            return false;
        c->i++;
        ws(c);
        size_t val = c->i;
        if (match && depth + 1 < c->n && (c->i >= c->len || c->s[c->i] != '{'))
            c->bad_depth = depth;
        if (!value(c, depth + 1, match && depth + 1 < c->n))
            return false;
        if (match && depth + 1 == c->n) {
            c->found = true;
            c->key = key;
            c->val = val;
            c->end = c->i;
            c->prev_end = o && o->members ? o->last_end : 0;
            c->want_next = true;
        }
        if (o) {
            o->last_ws = ws_start;
            o->last_key = key;
            o->last_end = c->i;
            o->members++;
        }
        ws(c);
        if (c->i < c->len && c->s[c->i] == ',') {
            c->i++;
            ws_start = c->i;
            ws(c);
            continue;
        }
        if (c->i < c->len && c->s[c->i] == '}') {
            if (o)
                o->close = c->i;
            if (match && depth + 1 == c->n)
                c->want_next = false;
            c->i++;
            return true;
        }
        return false;
    }
}

static bool array(struct scan *c)
{
    c->i++;   /* '[' */
    ws(c);
    if (c->i < c->len && c->s[c->i] == ']') {
        c->i++;
        return true;
    }
    for (;;) {
        if (!value(c, MAX_DEPTH, false))
            return false;
        ws(c);
        if (c->i < c->len && c->s[c->i] == ',') {
            c->i++;
            ws(c);
            continue;
        }
        if (c->i < c->len && c->s[c->i] == ']') {
            c->i++;
            return true;
        }
        return false;
    }
}

static bool value(struct scan *c, int depth, bool on_path)
{
    if (c->i >= c->len)
        return false;
    char ch = c->s[c->i];
    if (ch == '{')
        return object(c, depth, on_path);
    if (ch == '[')
        return array(c);
    if (ch == '"')
        return string(c);
    size_t start = c->i;   /* a number or a literal: up to the next delimiter */
    while (c->i < c->len && !strchr(",}] \t\r\n", c->s[c->i]))
        c->i++;
    return c->i > start;
}

static int run_scan(struct scan *c, const char *text, const char *const *path, int n, struct rl_err *e)
{
    memset(c, 0, sizeof *c);
    c->s = text;
    c->len = strlen(text);
    c->path = path;
    c->n = n;
    c->deepest = -1;
    c->bad_depth = -1;
    if (n < 1 || n >= MAX_DEPTH)
        return rl_errf(e, RL_EINVAL, "json edit: a key path of %d keys; allowed: 1 to %d", n, MAX_DEPTH - 1);
    ws(c);
    if (c->i >= c->len || c->s[c->i] != '{')
        return rl_errf(e, RL_EINVAL, "json edit: the document is not a JSON object");
    if (!value(c, 0, true))
        return rl_errf(e, RL_EINVAL, "json edit: not valid JSON near byte %zu", c->i);
    ws(c);
    if (c->i != c->len)
        return rl_errf(e, RL_EINVAL, "json edit: text after the JSON document at byte %zu", c->i);
    if (c->bad_depth >= 0)
        return rl_errf(e, RL_EINVAL, "json edit: %s: is not an object", path[c->bad_depth]);
    return 0;
}

/* *text with [from, to) replaced by ins. */
static int splice(char **text, size_t from, size_t to, const char *ins, struct rl_err *e)
{
    size_t len = strlen(*text), il = strlen(ins);
    char *out = malloc(len - (to - from) + il + 1);
    if (!out)
        return rl_errf(e, RL_ENOMEM, "json edit: out of memory");
    memcpy(out, *text, from);
    memcpy(out + from, ins, il);
    memcpy(out + from + il, *text + to, len - to + 1);
    free(*text);
    *text = out;
    return 0;
}

/* The separator before a member appended after the last one: the text between the member before
 * the last and the last, as written when it holds no comment, else a newline and the last line's
 * indentation (relaxed: the text with its comments blanked). */
static size_t separator(const char *text, const char *relaxed, size_t from, size_t to, char *out, size_t n)
{
    if (memcmp(text + from, relaxed + from, to - from) == 0)
        return (size_t)snprintf(out, n, ",%.*s", (int)(to - from), text + from);
    const char *nl = NULL;
    for (size_t k = from; k < to; k++)
        if (relaxed[k] == '\n')
            nl = relaxed + k;
    if (!nl)
        return (size_t)snprintf(out, n, ", ");
    size_t ind = (size_t)(relaxed + to - nl - 1);
    size_t w = (size_t)snprintf(out, n, ",\n");
    for (size_t k = 0; k < ind && w + 1 < n; k++)
        out[w++] = nl[1 + k] == '\t' ? '\t' : ' ';
    out[w] = 0;
    return w;
}

int plan_json_text_set(char **text, const char *const *path, int n, const char *value_text, struct rl_err *e)
{
    struct scan c;
    char *r;
    RL_TRY(plan_json_relax(*text, &r, NULL, e));
    int rc = run_scan(&c, r, path, n, e);
    if (rc || c.found) {
        rc = rc ? rc : splice(text, c.val, c.end, value_text, e);
        free(r);
        return rc;
    }
    /* Missing: the member path[d] of the deepest object d, wrapping the keys after it. */
    const int d = c.deepest;
    const struct obj_info *o = &c.obj[d];
    size_t cap = strlen(value_text) + 64;
    for (int k = d; k < n; k++)
        cap += strlen(path[k]) + 8;
    cap += o->members ? o->last_key - o->last_ws + 2 : 0;
    char *ins = malloc(cap);
    if (!ins) {
        free(r);
        return rl_errf(e, RL_ENOMEM, "json edit: out of memory");
    }
    size_t w = 0;
    if (o->members)
        w += separator(*text, r, o->last_ws, o->last_key, ins, cap);
    for (int k = d; k < n; k++)
        w += (size_t)snprintf(ins + w, cap - w, "%s\"%s\": ", k > d ? "{" : "", path[k]);
    w += (size_t)snprintf(ins + w, cap - w, "%s", value_text);
    for (int k = d + 1; k < n; k++)
        w += (size_t)snprintf(ins + w, cap - w, "}");
    size_t at = o->members ? o->last_end : o->open + 1;
    free(r);
    rc = splice(text, at, at, ins, e);
    free(ins);
    return rc;
}

int plan_json_text_del(char **text, const char *const *path, int n, struct rl_err *e)
{
    struct scan c;
    char *r;
    RL_TRY(plan_json_relax(*text, &r, NULL, e));
    int rc = run_scan(&c, r, path, n, e);
    free(r);
    if (rc || !c.found)
        return rc;
    if (c.prev_end)   /* ",<space>"key": value" after the member before it */
        return splice(text, c.prev_end, c.end, "", e);
    if (c.next_key)   /* the first of several: up to the next key */
        return splice(text, c.key, c.next_key, "", e);
    const struct obj_info *o = &c.obj[n - 1];   /* the only member */
    return splice(text, o->open + 1, o->close, "", e);
}
