/* plan/zero_config.c — DeepSpeed JSON config ingest (jansson), as a given release reads it.
 *
 * Reads the keys that shape ZeRO-3 partial offload with the release's coercions (pydantic 1 or 2,
 * or dict.get), resolves "auto" values to DeepSpeed's defaults (or, for an HF model, to what the
 * HF Trainer fills in), recording each resolution in z->notes, and checks every key of the blocks
 * the release validates strictly (plan/ds_keys.h). Errors name the JSON path, the value and what
 * is allowed (plan/README.md "Reading a DeepSpeed config as DeepSpeed does"). */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan/ds_keys.h"         /* the keys of the strict blocks, per release */
#include "plan/ds_rules.h"        /* PLAN_DS_DEFAULT_VERSION */
#include "plan/json_text.h"       /* plan_json_relax: comments and trailing commas, as hjson reads them */
#include "plan/model_impl.h"   /* plan__json_loads */
#include "plan/plan.h"


void plan_zero_defaults(struct plan_zero *z)
{
    memset(z, 0, sizeof *z);
    z->stage = 0;
    z->offload = PLAN_OFFLOAD_NONE;
    z->pin_memory = false;
    z->ratio = PLAN_DS_OFFLOAD_RATIO;
    z->sub_group_size = PLAN_DS_SUB_GROUP_SIZE;
    z->reduce_bucket_size = PLAN_DS_REDUCE_BUCKET_SIZE;
    z->prefetch_bucket_size = PLAN_DS_PREFETCH_BUCKET_SIZE;
    z->max_live_parameters = PLAN_DS_MAX_LIVE_PARAMETERS;
    z->param_persistence_threshold = PLAN_DS_PARAM_PERSISTENCE_THRESHOLD;
    z->dtype = PLAN_FP32;
    z->micro_batch = 1;
    z->grad_accum = 1;
    z->train_batch = 0;
    z->ds_version = PLAN_DS_DEFAULT_VERSION;
}

bool plan_zero_param_pin(const struct plan_zero *z)
{
    if (z->src_offload_param_pin != PLAN_SRC_DEFAULT)
        return z->offload_param_pin;
    return plan_ds_rules_for(z->ds_version)->offload_pin_default;
}

void plan_zero_resolve_pin(struct plan_zero *z)
{
    if (z->src_pin_memory == PLAN_SRC_DEFAULT)
        z->pin_memory = plan_ds_rules_for(z->ds_version)->offload_pin_default;
}

/* fmt is a key table's auto_note, a literal of this file taking two strings (never input text);
 * it is the tree's one format that is not a literal at its call (-Wformat-nonliteral, Makefile). */
static void note(struct plan_zero *z, const char *fmt, const char *a, const char *b)
{
    if (z->n_notes < (int)(sizeof z->notes / sizeof z->notes[0])) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(z->notes[z->n_notes++], sizeof z->notes[0], fmt, a, b);
#pragma GCC diagnostic pop
    }
}

/* Compact text of a JSON value for messages: strings quoted, others as JSON. */
static void show(const json_t *v, char *buf, size_t n)
{
    if (json_is_string(v) && json_string_value(v)[0] == PLAN__JSON_WIDE_MARK) {
        snprintf(buf, n, "%s", json_string_value(v) + 1);   /* a number jansson cannot hold */
        if (strlen(buf) > 60)
            strcpy(buf + 57, "...");
        return;
    }
    if (json_is_string(v)) {
        snprintf(buf, n, "\"%s\"", json_string_value(v));
        return;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    snprintf(buf, n, "%s", s ? s : "?");
    free(s);
    if (strlen(buf) > 60)
        strcpy(buf + 57, "...");
}

static bool is_auto(const json_t *v) { return json_is_string(v) && strcmp(json_string_value(v), "auto") == 0; }

/* Whether any value in v (at any depth) is "auto": an HF Trainer config. */
static bool any_auto(const json_t *v)
{
    if (is_auto(v))
        return true;
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x)
            if (any_auto(x))
                return true;
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x)
            if (any_auto(x))
                return true;
    }
    return false;
}

/* How a release's config reader takes a value: DeepSpeed's pydantic models (runtime/
 * config_utils.py DeepSpeedConfigModel, lax mode) coerce what Python's constructors or pydantic
 * 2's parsers take; the keys read with dict.get keep the value as written. */
struct ds_reading {
    struct rl_version v;      /* the release */
    bool pydantic2;           /* pydantic 2 (from 0.15.0, PR #5167: the rows whose
                                 offload_ratio_check asserts); before: pydantic 1 */
    bool precision_model;     /* fp16 and bf16 are pydantic models (from 0.17.1, plan/ds_keys.h);
                                 before: their keys are read with dict.get */
};

/* What a getter found at its key (the value itself goes to *out only when FOUND_VALUE). */
enum found {
    FOUND_ABSENT,   /* no key (or null where null means absent) */
    FOUND_AUTO,     /* "auto", where allowed */
    FOUND_VALUE,    /* a valid value, written to *out */
};

/* Python's str.strip() whitespace. */
static bool py_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* The text of s without Python's leading and trailing whitespace, into buf (false: too long). */
static bool strip_text(const char *s, char *buf, size_t n)
{
    while (py_space(*s))
        s++;
    size_t len = strlen(s);
    while (len > 0 && py_space(s[len - 1]))
        len--;
    if (len + 1 > n)
        return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    return true;
}

/* An integer string as the release's int field takes it: Python's int(str) under pydantic 1
 * (whitespace, a sign, digits with single underscores between them), the same under pydantic 2
 * plus a decimal point followed by zeros only ("1000.0"). False: not such a string, or beyond
 * int64. */
static bool int_text(const char *s, const struct ds_reading *r, int64_t *out)
{
    char t[80], digits[80];
    if (!strip_text(s, t, sizeof t))
        return false;
    const char *p = t;
    bool neg = *p == '-';
    if (*p == '+' || *p == '-')
        p++;
    size_t nd = 0;
    for (; *p; p++) {
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
        else if (*p == '_' && nd > 0 && p[1] >= '0' && p[1] <= '9')
            continue;
        else
            break;
    }
    if (nd == 0)
        return false;
    if (*p == '.' && r->pydantic2) {
        for (p++; *p == '0'; p++)
            ;
    }
    if (*p)
        return false;
    digits[nd] = 0;
    errno = 0;
    char *end;
    long long x = strtoll(digits, &end, 10);
    if (errno == ERANGE)
        return false;
    *out = neg ? -x : x;
    return true;
}

/* A float string as float(str) and pydantic 2 take it: whitespace around a decimal number. */
static bool float_text(const char *s, double *out)
{
    char t[80];
    if (!strip_text(s, t, sizeof t) || !t[0] || strpbrk(t, "xXpP_"))
        return false;
    char *end;
    double d = strtod(t, &end);
    if (*end)
        return false;
    *out = d;
    return true;
}

/* A boolean as pydantic takes it: true/false, the integers 0 and 1, the reals 0.0 and 1.0, and
 * the strings 0/off/f/false/n/no and 1/on/t/true/y/yes in any case. */
static bool bool_value(const json_t *v, bool *out)
{
    static const char *const no[] = {"0", "off", "f", "false", "n", "no"};
    static const char *const yes[] = {"1", "on", "t", "true", "y", "yes"};
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return true;
    }
    if (json_is_number(v) && (json_number_value(v) == 0 || json_number_value(v) == 1)) {
        *out = json_number_value(v) == 1;
        return true;
    }
    if (!json_is_string(v))
        return false;
    for (size_t i = 0; i < RL_COUNT(no); i++) {
        if (!strcasecmp(json_string_value(v), no[i])) {
            *out = false;
            return true;
        }
        if (!strcasecmp(json_string_value(v), yes[i])) {
            *out = true;
            return true;
        }
    }
    return false;
}

/* The integer a pydantic int field makes of v: integers; reals that are integral (pydantic 2) or
 * any finite real, truncated (pydantic 1's int()); true and false as 1 and 0; integer strings
 * (int_text). False: none. */
static bool model_int(const json_t *v, const struct ds_reading *r, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return true;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || (r->pydantic2 && d != floor(d)) || fabs(d) >= 0x1p63)
            return false;
        *out = (int64_t)d;   /* C truncates toward zero, as Python's int() */
        return true;
    }
    return json_is_string(v) && json_string_value(v)[0] != PLAN__JSON_WIDE_MARK &&
           int_text(json_string_value(v), r, out);
}

/* Integer field (r: the release's pydantic model reads it, NULL: read as written, where a JSON
 * integer or an integral real such as 1e9 is taken), "auto" when auto_ok. null is absent when
 * null_ok, else refused (pydantic takes null only for an Optional field). Returns 0 with *how
 * filled, or RL_EINVAL naming the path, the value and the allowed range. */
static int get_i64(const json_t *obj, const char *key, const char *path, int64_t min, int64_t max,
                   bool auto_ok, bool null_ok, const struct ds_reading *r, int64_t *out, enum found *how,
                   struct rl_err *e)
{
    json_t *v = json_object_get(obj, key);
    *how = FOUND_ABSENT;
    if (!v || (json_is_null(v) && null_ok))
        return 0;
    if (auto_ok && is_auto(v)) {
        *how = FOUND_AUTO;
        return 0;
    }
    char buf[80];
    int64_t x = 0;
    bool ok;
    if (r) {
        ok = model_int(v, r, &x);
    } else {   /* dict.get: Python compares and multiplies the value as written; true is 1 */
        ok = json_is_integer(v) || json_is_boolean(v);
        x = json_is_integer(v) ? json_integer_value(v) : json_is_true(v);
        if (json_is_real(v)) {
            double d = json_real_value(v);
            ok = isfinite(d) && d == floor(d) && fabs(d) < 0x1p63;
            x = ok ? (int64_t)d : 0;
        }
    }
    if (ok && x >= min && x <= max) {
        *out = x;
        *how = FOUND_VALUE;
        return 0;
    }
    show(v, buf, sizeof buf);
    return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected an integer in [%lld, %lld]%s", path,
                   buf, (long long)min, (long long)max, auto_ok ? " or \"auto\"" : "");
}

/* Boolean field (r: the release's pydantic model reads it, with bool_value's coercions; NULL: a
 * JSON true or false), "auto" when auto_ok; null refused unless null_ok. Returns 0 with *how
 * filled, or RL_EINVAL. */
static int get_bool(const json_t *obj, const char *key, const char *path, bool auto_ok, bool null_ok,
                    const struct ds_reading *r, bool *out, enum found *how, struct rl_err *e)
{
    json_t *v = json_object_get(obj, key);
    *how = FOUND_ABSENT;
    if (!v || (json_is_null(v) && null_ok))
        return 0;
    if (auto_ok && is_auto(v)) {
        *how = FOUND_AUTO;
        return 0;
    }
    if (r ? bool_value(v, out) : json_is_boolean(v)) {
        if (!r)
            *out = json_is_true(v);
        *how = FOUND_VALUE;
        return 0;
    }
    char buf[80];
    show(v, buf, sizeof buf);
    return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected true or false%s%s", path, buf,
                   r ? " (or 1/0, \"true\"/\"false\", \"yes\"/\"no\", \"on\"/\"off\")" : "",
                   auto_ok ? " or \"auto\"" : "");
}

/* Finds the first bare word (not true/false/null, outside strings) in text that failed to parse,
 * with the JSON path of the key it belongs to: an unreplaced launch-script placeholder. */
static bool find_placeholder(const char *text, char *word, size_t wn, char *path, size_t pn)
{
    char keys[16][64];
    int depth = 0;
    char last_str[64] = "";
    bool in_array[16] = {false};
    for (const char *p = text; *p; p++) {
        if (*p == '"') {
            const char *s = ++p;
            while (*p && *p != '"') {
                if (*p == '\\' && p[1])
                    p++;
                p++;
            }
            snprintf(last_str, sizeof last_str, "%.*s", (int)(p - s), s);
            if (!*p)
                return false;
            continue;
        }
        if (*p == ':' && depth > 0 && depth <= 16)
            snprintf(keys[depth - 1], sizeof keys[0], "%s", last_str);
        else if (*p == '{' || *p == '[') {
            if (depth < 16) {
                in_array[depth] = *p == '[';
                keys[depth][0] = 0;
            }
            depth++;
        } else if (*p == '}' || *p == ']') {
            if (depth == 0)
                return false;   /* a closing bracket with nothing open: broken JSON, not a template */
            depth--;
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            const char *s = p;
            while (isalnum((unsigned char)p[1]) || p[1] == '_')
                p++;
            size_t len = (size_t)(p - s + 1);
            if ((len == 4 && !strncmp(s, "true", 4)) || (len == 5 && !strncmp(s, "false", 5)) ||
                (len == 4 && !strncmp(s, "null", 4)))
                continue;
            /* A word right after a digit is part of a number like 1e9. */
            if (s > text && (isdigit((unsigned char)s[-1]) || s[-1] == '.'))
                continue;
            snprintf(word, wn, "%.*s", (int)len, s);
            path[0] = 0;
            for (int d = 0; d < depth && d < 16; d++) {
                if (in_array[d] || !keys[d][0])
                    continue;
                size_t used = strlen(path);
                snprintf(path + used, pn - used, "%s%s", used ? "." : "", keys[d]);
            }
            return true;
        }
    }
    return false;
}

/* Length of the JSON number token at p (0 when none). */
static size_t number_len(const char *p)
{
    size_t n = 0;
    while (p[n] && strchr("0123456789+-.eE", p[n]))
        n++;
    return n;
}

#define HEX "0123456789abcdefABCDEF"

json_t *plan__json_loads(const char *text, size_t flags, json_error_t *je)
{
    json_t *root = json_loads(text, flags | JSON_ALLOW_NUL, je);
    if (root)
        return root;
    /* Python's json (DeepSpeed's reader) takes integers of any size and reals beyond double
     * (1e400 -> inf); jansson refuses both. Such numbers become marked strings holding their
     * text, so a key nobody reads does not reject the config and a key that is read reports the
     * number as typed. Python also takes a lone UTF-16 surrogate escape ("\ud800"), which
     * jansson refuses whatever its decoding flags (JSON_ALLOW_NUL, JSON_DECODE_ANY, ... have none
     * for it): it becomes U+FFFD, the same length, so a key that is read and holds it is refused
     * by that key's own check. */
    size_t len = strlen(text), extra = 0;
    for (const char *p = text; *p; p++)
        extra += *p == '-' || (*p >= '0' && *p <= '9');
    char *copy = malloc(len + 8 * extra + 1);
    if (!copy)
        return NULL;
    char *o = copy;
    bool changed = false;
    for (const char *p = text; *p;) {
        if (*p == '"') {   /* copy a string, escapes included */
            *o++ = *p++;
            while (*p && *p != '"') {
                unsigned hi, lo;
                if (p[0] == '\\' && p[1] == 'u' && sscanf(p + 2, "%4x", &hi) == 1 && strspn(p + 2, HEX) >= 4 &&
                    hi >= 0xD800 && hi <= 0xDFFF) {
                    bool pair = hi <= 0xDBFF && p[6] == '\\' && p[7] == 'u' && strspn(p + 8, HEX) >= 4 &&
                                sscanf(p + 8, "%4x", &lo) == 1 && lo >= 0xDC00 && lo <= 0xDFFF;
                    if (pair) {
                        memcpy(o, p, 12);
                        o += 12;
                        p += 12;
                    } else {
                        memcpy(o, "\\uFFFD", 6);
                        o += 6;
                        p += 6;
                        changed = true;
                    }
                    continue;
                }
                if (*p == '\\' && p[1])
                    *o++ = *p++;
                *o++ = *p++;
            }
            if (*p)
                *o++ = *p++;
            continue;
        }
        size_t n = (*p == '-' || (*p >= '0' && *p <= '9')) ? number_len(p) : 0;
        if (n == 0) {
            *o++ = *p++;
            continue;
        }
        char tok[64];
        bool wide = false;
        if (n < sizeof tok) {
            memcpy(tok, p, n);
            tok[n] = 0;
            char *end;
            errno = 0;
            if (strpbrk(tok, ".eE")) {
                double d = strtod(tok, &end);
                wide = *end == 0 && isinf(d);
            } else {
                (void)strtoll(tok, &end, 10);
                wide = *end == 0 && errno == ERANGE;
            }
        } else {
            wide = true;   /* 64 digits and more: beyond int64 and double precision alike */
        }
        if (wide) {
            memcpy(o, "\"\\u0001", 7);
            o += 7;
            memcpy(o, p, n);
            o += n;
            *o++ = '"';
            changed = true;
        } else {
            memcpy(o, p, n);
            o += n;
        }
        p += n;
    }
    *o = 0;
    root = changed ? json_loads(copy, flags | JSON_ALLOW_NUL, je) : NULL;
    free(copy);
    if (!root)   /* report the error of the text as written */
        json_decref(json_loads(text, flags | JSON_ALLOW_NUL, je));
    return root;
}

struct zero_read {
    struct plan_zero z;   /* the config being read */
    bool fp16;            /* fp16.enabled */
    bool bf16;            /* bf16.enabled */
    struct ds_reading r;  /* how the release reads values */
};

/* What a key of the table is. */
enum zero_kind {
    ZK_OBJECT,      /* an object {...}; its presence sets the bool at off, if any */
    ZK_INT,         /* an integer in [lo, hi] */
    ZK_BOOL,        /* true or false */
    ZK_DEVICE,      /* "cpu", "nvme" or "none": an enum plan_offload */
    ZK_RATIO,       /* a finite number in [0, 1] */
    ZK_STRING,      /* a string (null is not one), into a char array */
    ZK_PRECISION,   /* no key: fp16 and bf16 resolved into the dtype */
};

/* Who reads a key in DeepSpeed, which decides the coercions, "auto" and null. */
enum zero_reader {
    ZR_RAW,         /* runtime/config.py with dict.get: the value as written; null is absent */
    ZR_MODEL,       /* a pydantic model (zero_optimization): coerced, "auto" dropped (the default
                       stays; DeepSpeedConfigModel.__init__ with strict=False), null refused */
    ZR_PRECISION,   /* fp16 / bf16: a pydantic model from 0.17.1, dict.get before */
};

/* One key of a DeepSpeed config that shapes the plan. Keys are read in table order and the first
 * error wins, so the table's order is the order errors are reported in. */
struct zero_key {
    const char *path;        /* JSON path from the top level, keys joined by "." */
    enum zero_kind kind;     /* what the value must be */
    enum zero_reader reader; /* who reads it in DeepSpeed */
    size_t off;              /* offset of the value in struct zero_read (NONE: not stored) */
    size_t size;             /* ZK_INT: bytes of the value (int or int64_t); ZK_STRING: of the array */
    size_t off_src;          /* offset of its enum plan_src (NONE: no provenance kept) */
    int64_t lo, hi;          /* ZK_INT: the allowed range, inclusive */
    bool auto_ok;            /* "auto" is accepted (the default stays) */
    bool null_ok;            /* null is the key's absence (an Optional block, a dict.get key) */
    const char *auto_note;   /* the note when "auto": a format of the path and the default */
    int64_t def;             /* ZK_INT: the default "auto" resolves to, for the note */
    const char *example;     /* ZK_STRING: an example value for the message */
    const char *alias;       /* another name of the same key (pydantic's field name beside its alias) */
};

#define NONE ((size_t)-1)
#define AT(m) offsetof(struct zero_read, m)
#define K_SIZEOF(m) sizeof(((struct zero_read *)0)->m)
#define AUTO_NOTE "%s: \"auto\" resolved to DeepSpeed's default %s"
#define K_OBJECT(p, rd, nul) {.path = p, .kind = ZK_OBJECT, .reader = rd, .off = NONE, .off_src = NONE, .null_ok = nul}
#define K_BLOCK(p, flag) {.path = p, .kind = ZK_OBJECT, .reader = ZR_RAW, .off = AT(z.flag), .off_src = NONE, .null_ok = true}
#define K_SIZE(k, m, d, al)                                                                         \
    {.path = "zero_optimization." k, .kind = ZK_INT, .reader = ZR_MODEL, .off = AT(z.m), .size = K_SIZEOF(z.m), \
     .off_src = AT(z.src_##m), .lo = 1, .hi = INT64_C(1) << 50, .auto_ok = true, .auto_note = AUTO_NOTE, .def = d, \
     .alias = al}
#define K_BATCH(k, m, h, nt)                                                                        \
    {.path = k, .kind = ZK_INT, .reader = ZR_RAW, .off = AT(z.m), .size = K_SIZEOF(z.m), .off_src = AT(z.src_##m), \
     .lo = 1, .hi = h, .auto_ok = true, .null_ok = true, .auto_note = nt, .def = 1}
#define K_PREC(p, m, nt) {.path = p, .kind = ZK_BOOL, .reader = ZR_PRECISION, .off = AT(m), .off_src = NONE, .auto_ok = true, .auto_note = nt}
#define K_STRING(p, m, ex) {.path = p, .kind = ZK_STRING, .reader = ZR_RAW, .off = AT(z.m), .size = K_SIZEOF(z.m), .off_src = NONE, .null_ok = true, .example = ex}
static const struct zero_key zero_keys[] = {
    K_OBJECT("zero_optimization", ZR_RAW, false),
    {.path = "zero_optimization.stage", .kind = ZK_INT, .reader = ZR_MODEL, .off = AT(z.stage), .size = sizeof(int),
     .off_src = NONE, .lo = 0, .hi = 3, .auto_ok = true, .auto_note = AUTO_NOTE, .def = 0},
    K_OBJECT("zero_optimization.offload_optimizer", ZR_MODEL, true),
    {.path = "zero_optimization.offload_optimizer.device", .kind = ZK_DEVICE, .reader = ZR_MODEL, .off = AT(z.offload),
     .off_src = NONE, .auto_ok = true},
    {.path = "zero_optimization.offload_optimizer.pin_memory", .kind = ZK_BOOL, .reader = ZR_MODEL,
     .off = AT(z.pin_memory), .off_src = AT(z.src_pin_memory), .auto_ok = true},
    {.path = "zero_optimization.offload_optimizer.ratio", .kind = ZK_RATIO, .reader = ZR_MODEL, .off = AT(z.ratio),
     .off_src = AT(z.src_ratio), .auto_ok = true},
    K_OBJECT("zero_optimization.offload_param", ZR_MODEL, true),
    {.path = "zero_optimization.offload_param.device", .kind = ZK_DEVICE, .reader = ZR_MODEL, .off = AT(z.offload_param),
     .off_src = NONE, .auto_ok = true},
    {.path = "zero_optimization.offload_param.pin_memory", .kind = ZK_BOOL, .reader = ZR_MODEL,
     .off = AT(z.offload_param_pin), .off_src = AT(z.src_offload_param_pin), .auto_ok = true},
    K_SIZE("sub_group_size", sub_group_size, PLAN_DS_SUB_GROUP_SIZE, NULL),
    K_SIZE("reduce_bucket_size", reduce_bucket_size, PLAN_DS_REDUCE_BUCKET_SIZE, NULL),
    K_SIZE("stage3_prefetch_bucket_size", prefetch_bucket_size, PLAN_DS_PREFETCH_BUCKET_SIZE, "prefetch_bucket_size"),
    K_SIZE("stage3_param_persistence_threshold", param_persistence_threshold, PLAN_DS_PARAM_PERSISTENCE_THRESHOLD,
           "param_persistence_threshold"),
    K_SIZE("stage3_max_live_parameters", max_live_parameters, PLAN_DS_MAX_LIVE_PARAMETERS, "max_live_parameters"),
    K_OBJECT("fp16", ZR_RAW, false),
    {.path = "bf16", .kind = ZK_OBJECT, .reader = ZR_RAW, .off = NONE, .off_src = NONE, .alias = "bfloat16"},
    K_PREC("fp16.enabled", fp16, "%s: \"auto\" resolved to false (DeepSpeed's default; HF sets it from --fp16)%s"),
    K_PREC("bf16.enabled", bf16, "%s: \"auto\" resolved to false (DeepSpeed's default; HF sets it from --bf16)%s"),
    {.path = "", .kind = ZK_PRECISION, .off = NONE, .off_src = NONE},
    /* optimizer block: HF passes one flat parameter group when it is present */
    K_BLOCK("optimizer", has_optimizer_block),
    K_STRING("optimizer.type", optimizer_type, "AdamW"),
    K_OBJECT("optimizer.params", ZR_RAW, true),
    {.path = "optimizer.params.torch_adam", .kind = ZK_BOOL, .reader = ZR_RAW, .off = AT(z.torch_adam), .off_src = NONE,
     .null_ok = true},
    /* scheduler block: DeepSpeed's lr scheduler (plan/ds_hazards.c) */
    K_BLOCK("scheduler", has_scheduler_block),
    K_STRING("scheduler.type", scheduler_type, "WarmupLR"),
    K_BATCH("train_micro_batch_size_per_gpu", micro_batch, 1 << 20, "%s: \"auto\" resolved to %s"),
    K_BATCH("gradient_accumulation_steps", grad_accum, 1 << 20, "%s: \"auto\" resolved to %s"),
    K_BATCH("train_batch_size", train_batch, INT64_C(1) << 40, NULL),
};
#undef K_OBJECT
#undef K_BLOCK
#undef K_PREC
#undef K_STRING
#undef K_SIZE
#undef K_BATCH
#undef K_SIZEOF
#undef AT
#define N_ZERO_KEYS RL_COUNT(zero_keys)

/* The object read by the ZK_OBJECT row whose path is the first n characters of `path` (NULL:
 * absent, or not read yet). */
static json_t *object_at(json_t *const *objects, const char *path, size_t n)
{
    for (size_t i = 0; i < N_ZERO_KEYS; i++)
        if (zero_keys[i].kind == ZK_OBJECT && strlen(zero_keys[i].path) == n && !strncmp(zero_keys[i].path, path, n))
            return objects[i];
    return NULL;
}

/* The object a key lives in: the top level, or its parent ZK_OBJECT row's (NULL: absent). */
static json_t *parent_of(const struct zero_key *k, json_t *root, json_t *const *objects)
{
    const char *dot = strrchr(k->path, '.');
    return dot ? object_at(objects, k->path, (size_t)(dot - k->path)) : root;
}

/* The offload devices by their config names: read_device reads them, plan_offload_name writes them. */
static const char *const offload_names[] = {[PLAN_OFFLOAD_NONE] = "none", [PLAN_OFFLOAD_CPU] = "cpu",
                                            [PLAN_OFFLOAD_NVME] = "nvme"};

const char *plan_offload_name(enum plan_offload o)
{
    return (unsigned)o < sizeof offload_names / sizeof offload_names[0] ? offload_names[o] : "?";
}

/* offload_optimizer.device / offload_param.device: "cpu", "nvme" or "none" exactly (the enum). */
static int read_device(const json_t *dev, const char *path, enum plan_offload *out, struct rl_err *e)
{
    const char *d = json_is_string(dev) ? json_string_value(dev) : NULL;
    for (int i = 0; d && i < (int)(sizeof offload_names / sizeof offload_names[0]); i++)
        if (strcmp(d, offload_names[i]) == 0) {
            *out = (enum plan_offload)i;
            return 0;
        }
    char buf[80];
    show(dev, buf, sizeof buf);
    return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected \"cpu\", \"nvme\" or \"none\"", path, buf);
}

/* offload_optimizer.ratio, a pydantic float in [0, 1]: a number, true/false, or a number's text
 * ("0.3", as float() takes it). 0 with *out set, or RL_EINVAL. */
static int read_ratio(const json_t *rv, const char *path, double *out, struct rl_err *e)
{
    char buf[80];
    double x = NAN;
    if (json_is_number(rv))
        x = json_number_value(rv);
    else if (json_is_boolean(rv))
        x = json_is_true(rv);
    else if (!json_is_string(rv) || !float_text(json_string_value(rv), &x)) {
        show(rv, buf, sizeof buf);
        return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected a number in [0, 1]", path, buf);
    }
    if (!(x >= 0 && x <= 1)) {
        show(rv, buf, sizeof buf);
        return rl_errf(e, RL_EINVAL, "%s: %s is outside [0, 1]", path, buf);
    }
    *out = x;
    return 0;
}

/* fp16.enabled / bf16.enabled where DeepSpeed reads them with dict.get (before 0.17.1): the value
 * as written, taken for its Python truth (a non-empty string, a non-zero number: true). */
static bool py_truth(const json_t *v)
{
    if (json_is_string(v))
        return json_string_value(v)[0] != 0;
    if (json_is_number(v))
        return json_number_value(v) != 0;
    if (json_is_array(v))
        return json_array_size(v) > 0;
    if (json_is_object(v))
        return json_object_size(v) > 0;
    return json_is_true(v);
}

/* fp16.enabled and bf16.enabled resolved into the dtype: at most one may be true; "auto" leaves
 * fp32 until --dtype says what the Trainer's flags would. */
static int resolve_precision(struct zero_read *rd, const json_t *fp16, const json_t *bf16, struct rl_err *e)
{
    struct plan_zero *z = &rd->z;
    z->fp16_auto = fp16 && is_auto(json_object_get(fp16, "enabled"));
    z->bf16_auto = bf16 && is_auto(json_object_get(bf16, "enabled"));
    if (rd->fp16 && rd->bf16)
        return rl_errf(e, RL_EINVAL, "fp16.enabled and bf16.enabled: both true; at most one may be enabled");
    if (rd->fp16 || rd->bf16) {
        z->dtype = rd->fp16 ? PLAN_FP16 : PLAN_BF16;
        z->src_dtype = PLAN_SRC_CONFIG;
    } else if ((fp16 && is_auto(json_object_get(fp16, "enabled"))) ||
               (bf16 && is_auto(json_object_get(bf16, "enabled")))) {
        z->src_dtype = PLAN_SRC_AUTO;   /* fp32 until --dtype says what the Trainer's flags would */
    }
    return 0;
}

/* The key's value in its object: under its name, else under its alias (NULL: neither). */
static json_t *key_value(const json_t *in, const struct zero_key *k, const char **name)
{
    const char *dot = strrchr(k->path, '.');
    *name = dot ? dot + 1 : k->path;
    json_t *v = json_object_get(in, *name);
    if (!v && k->alias && (v = json_object_get(in, k->alias)))
        *name = k->alias;
    return v;
}

/* Reads key k of the table into rd; objects[] holds the ZK_OBJECT rows read so far. */
static int read_key(struct zero_read *rd, const struct zero_key *k, json_t *root, json_t **objects,
                    struct rl_err *e)
{
    char *base = (char *)rd;
    enum plan_src *src = k->off_src != NONE ? (enum plan_src *)(base + k->off_src) : NULL;
    if (k->kind == ZK_PRECISION)
        return resolve_precision(rd, object_at(objects, "fp16", 4), object_at(objects, "bf16", 4), e);
    json_t *in = parent_of(k, root, objects);
    if (!in)
        return 0;   /* its object is absent */
    const char *key;
    json_t *v = key_value(in, k, &key);
    char path[160], buf[80];
    const char *dot = strrchr(k->path, '.');
    snprintf(path, sizeof path, "%.*s%s", dot ? (int)(dot + 1 - k->path) : 0, k->path, key);   /* as written */
    const bool model = k->reader == ZR_MODEL || (k->reader == ZR_PRECISION && rd->r.precision_model);
    if (!v)
        return 0;
    if (json_is_null(v) && (k->null_ok || (k->reader == ZR_PRECISION && !model)))
        return 0;   /* an Optional block, or a dict.get key: null is the default */
    if (json_is_null(v))
        return rl_errf(e, RL_EINVAL, "%s: null is not allowed (DeepSpeed %s's config model takes null only "
                       "for an optional block); remove the key for the default", path, RL_VERSION_S(rd->r.v));
    if (model && k->auto_ok && is_auto(v) && k->kind != ZK_INT && k->kind != ZK_BOOL) {
        return 0;   /* "auto" dropped: the default */
    }
    int rc = 0;
    enum found how;
    switch (k->kind) {
    case ZK_OBJECT: {
        json_t **obj = &objects[k - zero_keys];
        if (json_is_boolean(v) && !strcmp(k->path, "zero_optimization")) {
            /* The deprecated form (runtime/zero/config.py read_zero_config_deprecated): stage 1 or 0. */
            rd->z.stage = json_is_true(v);
            note(&rd->z, "%s: %s is DeepSpeed's deprecated form of the block (read as stage 1 when true, 0 when false)",
                 path, json_is_true(v) ? "true" : "false");
            return 0;
        }
        if (!json_is_object(v)) {
            show(v, buf, sizeof buf);
            return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected an object {...}", path, buf);
        }
        *obj = v;
        if (k->off != NONE)
            *(bool *)(base + k->off) = true;
        return 0;
    }
    case ZK_INT: {
        int64_t x = 0;
        if (k->size == sizeof(int64_t))
            memcpy(&x, base + k->off, sizeof x);
        else
            x = *(int *)(base + k->off);
        if (model && !rd->r.pydantic2 && !strcmp(k->path, "zero_optimization.stage") && json_is_string(v) && !is_auto(v)) {
            show(v, buf, sizeof buf);   /* pydantic 1 looks an enum's value up as given: "3" is not 3 */
            return rl_errf(e, RL_EINVAL, "%s: %s is not allowed in DeepSpeed %s; expected 0, 1, 2 or 3 as a number",
                           path, buf, RL_VERSION_S(rd->r.v));
        }
        if (model && !rd->r.pydantic2 && !strcmp(k->path, "zero_optimization.stage") && json_is_real(v) &&
            json_real_value(v) != floor(json_real_value(v))) {
            show(v, buf, sizeof buf);   /* an enum's value lookup: 3.5 is no member (pydantic 2 says so too) */
            return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected 0, 1, 2 or 3", path, buf);
        }
        if ((rc = get_i64(in, key, path, k->lo, k->hi, k->auto_ok, true, model ? &rd->r : NULL, &x, &how, e)))
            return rc;
        if (k->size == sizeof(int64_t))
            memcpy(base + k->off, &x, sizeof x);
        else
            *(int *)(base + k->off) = (int)x;
        if (src && how == FOUND_VALUE)
            *src = PLAN_SRC_CONFIG;
        if (src && how == FOUND_AUTO)
            *src = PLAN_SRC_AUTO;
        if (how == FOUND_AUTO && k->auto_note) {
            char d[32];
            snprintf(d, sizeof d, "%lld", (long long)k->def);
            note(&rd->z, k->auto_note, path, d);
        }
        return 0;
    }
    case ZK_BOOL:
        if (k->reader == ZR_PRECISION && !model && !is_auto(v) && !json_is_boolean(v)) {
            bool t = py_truth(v);   /* dict.get: the value as written, for its truth */
            *(bool *)(base + k->off) = t;
            show(v, buf, sizeof buf);
            char what[120];
            snprintf(what, sizeof what, "%s (DeepSpeed %s reads the value as written and takes its Python truth)",
                     t ? "true" : "false", RL_VERSION_S(rd->r.v));
            char msg[200];
            snprintf(msg, sizeof msg, "%s: %s", path, buf);
            note(&rd->z, "%s is read as %s", msg, what);
            return 0;
        }
        if ((rc = get_bool(in, key, path, k->auto_ok, true, model ? &rd->r : NULL, (bool *)(base + k->off), &how, e)))
            return rc;
        if (src && how == FOUND_VALUE)
            *src = PLAN_SRC_CONFIG;
        if (how == FOUND_AUTO && k->auto_note)
            note(&rd->z, k->auto_note, path, "");
        return 0;
    case ZK_DEVICE:
        return read_device(v, path, (enum plan_offload *)(base + k->off), e);
    case ZK_RATIO:
        if ((rc = read_ratio(v, path, (double *)(base + k->off), e)))
            return rc;
        if (src)
            *src = PLAN_SRC_CONFIG;
        return 0;
    case ZK_STRING: {
        if (!json_is_string(v)) {
            show(v, buf, sizeof buf);
            return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected a string such as \"%s\"", path, buf,
                           k->example);
        }
        snprintf(base + k->off, k->size, "%s", json_string_value(v));
        return 0;
    }
    case ZK_PRECISION:
        break;
    }
    return 0;
}

/* zero_optimization's deprecated cpu_offload (an offload_optimizer to "cpu" when true) and
 * cpu_offload_param (an offload_param to "cpu"): DeepSpeedZeroConfig's deprecated fields, whose
 * new_param_fn builds the block; given beside the block they replace, the config is refused
 * (config_utils.py _process_deprecated_field asserts). */
static int read_deprecated(json_t *root, struct zero_read *rd, struct rl_err *e)
{
    json_t *zo = json_object_get(root, "zero_optimization");
    if (!json_is_object(zo))
        return 0;
    static const struct {
        const char *old_key;     /* the deprecated key */
        const char *new_key;     /* the block it stands for */
        size_t off;              /* its device in struct zero_read */
    } dep[] = {
        {"cpu_offload", "offload_optimizer", offsetof(struct zero_read, z.offload)},
        {"cpu_offload_param", "offload_param", offsetof(struct zero_read, z.offload_param)},
    };
    const struct rl_version v = rd->r.v;
    for (size_t i = 0; i < RL_COUNT(dep); i++) {
        json_t *val = json_object_get(zo, dep[i].old_key);
        if (!val || is_auto(val))
            continue;
        if (json_object_get(zo, dep[i].new_key))
            return rl_errf(e, RL_EINVAL, "zero_optimization.%s: given with zero_optimization.%s, which replaces it; "
                           "DeepSpeed %s refuses the config; remove %s", dep[i].old_key, dep[i].new_key, RL_VERSION_S(v),
                           dep[i].old_key);
        if (json_is_null(val))
            continue;
        bool on;
        if (!bool_value(val, &on)) {
            char buf[80];
            show(val, buf, sizeof buf);
            return rl_errf(e, RL_EINVAL, "zero_optimization.%s: %s is not allowed; expected true or false",
                           dep[i].old_key, buf);
        }
        if (on) {
            *(enum plan_offload *)((char *)rd + dep[i].off) = PLAN_OFFLOAD_CPU;
            char msg[160];
            snprintf(msg, sizeof msg, "zero_optimization.%s: true is DeepSpeed's deprecated form of %s", dep[i].old_key,
                     dep[i].new_key);
            note(&rd->z, "%s {\"device\": \"cpu\"}%s", msg, "");
        }
    }
    return 0;
}

/* Keys at the top level that a misspelling is compared with (DeepSpeed ignores an unknown key
 * there): the ones ratiolab reads and other frequent ones, so a frequent key is not taken for a
 * misspelling of a read one. */
static const char *const top_keys[] = {
    "zero_optimization", "fp16", "bf16", "bfloat16", "optimizer", "scheduler", "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps", "train_batch_size", "steps_per_print", "wall_clock_breakdown", "gradient_clipping",
    "prescale_gradients", "gradient_predivide_factor", "amp", "zero_allow_untested_optimizer", "activation_checkpointing",
    "flops_profiler", "tensorboard", "wandb", "csv_monitor", "comms_logger", "communication_data_type", "data_types",
    "elasticity", "aio", "checkpoint", "compression_training", "data_efficiency", "autotuning", "sparse_attention",
    "pipeline", "dump_state", "zero_force_ds_cpu_optimizer", "memory_breakdown", "sparse_gradients", "torch_autocast",
    "seq_parallel_communication_data_type", "compile", "hybrid_engine", "tensor_parallel", "nebula", "weight_quantization",
    "curriculum_learning", "progressive_layer_drop", "eigenvalue", "quantize_training", "graph_harvesting",
    "use_node_local_storage", "load_universal_checkpoint", "disable_allgather", "fp32_reduce_scatter",
    "timers", "monitor_config", "mics_shard_size", "mics_hierarchical_params_gather",
};

/* The strict blocks (plan/ds_keys.h) whose keys are checked, as JSON paths. */
static const char *const strict_blocks[] = {
    "zero_optimization", "zero_optimization.offload_param", "zero_optimization.offload_optimizer", "fp16", "bf16",
};

/* The object at a block's path in root (bf16: "bfloat16" when there is no "bf16", as
 * get_bfloat16_config reads it; NULL: absent or no object). */
static json_t *block_at(json_t *root, const char *path)
{
    char buf[80];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *o = root;
    for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, "."))
        o = json_object_get(o, tok);
    if (!o && !strcmp(path, "bf16"))
        o = json_object_get(root, "bfloat16");
    return json_is_object(o) ? o : NULL;
}

/* Unknown keys: refused in a block release r validates strictly (unless "auto", which the model
 * drops before validating), a note with the nearest key where DeepSpeed ignores them. */
static int check_keys(json_t *root, struct zero_read *rd, struct rl_err *e)
{
    const struct rl_version v = rd->r.v;
    const char *cand[128];
    const char *key;
    json_t *val;
    char msg[200];
    for (size_t b = 0; b < RL_COUNT(strict_blocks); b++) {
        json_t *o = block_at(root, strict_blocks[b]);
        if (!o)
            continue;
        const bool strict = plan_ds_block_strict(strict_blocks[b], v);
        int n = plan_ds_block_keys(strict_blocks[b], v, !strict, cand, (int)RL_COUNT(cand));
        json_object_foreach(o, key, val) {
            const char *alias = strict ? plan_ds_key_alias(strict_blocks[b], key) : NULL;
            json_t *other = alias ? json_object_get(o, alias) : NULL;
            if (other && !is_auto(other) && !is_auto(val))
                return rl_errf(e, RL_EINVAL, "%s.%s: given with %s, the same field; DeepSpeed %s refuses the "
                               "config (pydantic reads the field under %s and forbids %s as an extra field); give one",
                               strict_blocks[b], key, alias, RL_VERSION_S(v), alias, key);
            if (plan_ds_key_known(strict_blocks[b], key, v) || (!strict && rl_nearest(key, cand, n) == NULL))
                continue;
            if (strict && is_auto(val))
                continue;   /* DeepSpeedConfigModel drops "auto" values before validating */
            const char *near = rl_nearest(key, cand, n);
            char hint[96] = "";
            if (near)
                snprintf(hint, sizeof hint, "; did you mean \"%s\"?", near);
            if (strict)
                return rl_errf(e, RL_EINVAL, "%s.%s: unknown key; DeepSpeed %s refuses the config (its config "
                               "model forbids extra fields)%s", strict_blocks[b], key, RL_VERSION_S(v), hint);
            snprintf(msg, sizeof msg, "%s.%s", strict_blocks[b], key);
            note(&rd->z, "%s: not a key DeepSpeed reads there (ignored)%s", msg, hint);
        }
    }
    json_object_foreach(root, key, val) {
        const char *near = rl_nearest(key, top_keys, (int)RL_COUNT(top_keys));
        if (near)
            note(&rd->z, "%s: not a key DeepSpeed reads (ignored); did you mean \"%s\"?", key, near);
    }
    return 0;
}

/* Whether word is a key in text (a ':' follows its first occurrence). */
static bool word_is_key(const char *text, const char *word)
{
    const char *w = strstr(text, word);
    if (!w)
        return false;
    w += strlen(word);
    while (*w == ' ' || *w == '\t')
        w++;
    return *w == ':';
}

/* The reason text failed to parse, as one message naming the construct (text: comments blanked). */
static int parse_error(const char *text, const json_error_t *je, const char *what, struct rl_err *e)
{
    char word[64], path[256];
    bool found = find_placeholder(text, word, sizeof word, path, sizeof path);
    if (found && (!strcasecmp(word, "NaN") || !strcasecmp(word, "Infinity") || !strcasecmp(word, "inf")))
        return rl_errf(e, RL_EINVAL, "%s: %s: %s is not allowed (JSON has no NaN or infinity); expected a finite number",
                       what, path[0] ? path : "(top level)", word);
    if (found && word_is_key(text, word))
        return rl_errf(e, RL_EINVAL, "%s: %s: the key %s is not quoted (hjson syntax ratiolab does not read); "
                       "allowed: JSON with // # /* */ comments and trailing commas, keys in double quotes",
                       what, path[0] ? path : "(top level)", word);
    if (found)
        return rl_errf(e, RL_EINVAL,
                       "%s: %s: %s is an unreplaced template placeholder; replace it with a value "
                       "(launch scripts do this with sed) before passing the config",
                       what, path[0] ? path : "(top level)", word);
    /* A member after a newline without a comma: hjson takes the newline as the separator. */
    size_t at = je->position > 0 && (size_t)je->position < strlen(text) ? (size_t)je->position : strlen(text);
    size_t k = at;
    while (k > 0 && !strchr(" \t\r\n", text[k - 1]))   /* back over the token jansson stopped at */
        k--;
    bool newline = false;
    while (k > 0 && strchr(" \t\r\n", text[k - 1]))     /* and the whitespace before it */
        newline |= text[--k] == '\n';
    if (strstr(je->text, "expected near '\"") && newline)
        return rl_errf(e, RL_EINVAL, "%s: line %d: a member without the comma before it (hjson syntax ratiolab does "
                       "not read: a newline as the separator); allowed: JSON with // # /* */ comments and trailing "
                       "commas", what, je->line);
    return rl_errf(e, RL_EINVAL, "%s: not valid JSON at line %d column %d: %s", what, je->line, je->column, je->text);
}

int plan_zero_parse_release(struct plan_zero *z, const char *text, const char *what, struct rl_version v,
                            struct rl_err *e)
{
    plan_zero_defaults(z);
    json_error_t je;
    char *relaxed;
    if (plan_json_relax(text, &relaxed, NULL, e))
        return rl_err_prefix(e, "%s", what);
    json_t *root = plan__json_loads(relaxed, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        int rc = parse_error(relaxed, &je, what, e);
        free(relaxed);
        return rc;
    }
    free(relaxed);
    int rc = 0;
    struct zero_read rd = {.z = *z};
    rd.z.ds_version = v;
    rd.r.v = v;
    rd.r.pydantic2 = plan_ds_rules_for(v)->ratio_check_asserts;
    rd.r.precision_model = plan_ds_block_strict("fp16", v);
    json_t *objects[N_ZERO_KEYS] = {0};   /* the ZK_OBJECT rows' objects (NULL: absent) */
    if (!json_is_object(root))
        rc = rl_errf(e, RL_EINVAL, "the top level must be a JSON object {...}");
    for (size_t i = 0; i < N_ZERO_KEYS && !rc; i++)
        rc = read_key(&rd, &zero_keys[i], root, objects, e);
    if (!rc)
        rc = read_deprecated(root, &rd, e);
    if (!rc)
        rc = check_keys(root, &rd, e);
    if (!rc)
        rc = plan_zero_validate(&rd.z, e);
    rd.z.client_scheduler = rd.z.client_scheduler || any_auto(root);
    *z = rd.z;
    if (rc)
        rl_err_prefix(e, "%s", what);
    json_decref(root);
    return rc;
}

int plan_zero_parse(struct plan_zero *z, const char *text, const char *what, struct rl_err *e)
{
    return plan_zero_parse_release(z, text, what, PLAN_DS_DEFAULT_VERSION, e);
}
#undef NONE

int plan_zero_load(struct plan_zero *z, const char *path, struct rl_err *e)
{
    char *text;
    int rc = rl_read_file(path, &text, NULL, e);
    if (rc) {
        plan_zero_defaults(z);
        return rl_err_prefix(e, "ds_config");
    }
    const char *base = strrchr(path, '/');
    rc = plan_zero_parse(z, text, base ? base + 1 : path, e);
    free(text);
    return rc;
}

int plan_zero_validate(const struct plan_zero *z, struct rl_err *e)
{
    if (!(z->ratio >= 0 && z->ratio <= 1))
        return rl_errf(e, RL_EINVAL, "zero_optimization.offload_optimizer.ratio: %g is outside [0, 1]", z->ratio);
    /* A ratio with stage < 3 or device "nvme" is a DeepSpeed hazard (plan/ds_hazards.c), reported
     * by check and plan; without offload the ratio means nothing at all. */
    bool partial = z->src_ratio != PLAN_SRC_DEFAULT && z->ratio < 1;
    if (partial && z->offload == PLAN_OFFLOAD_NONE)
        return rl_errf(e, RL_EINVAL,
                       "zero_optimization.offload_optimizer.ratio: %g needs offload_optimizer.device \"cpu\" (got none)",
                       z->ratio);
    if (z->offload_param == PLAN_OFFLOAD_NVME)
        return rl_errf(e, RL_EINVAL, "zero_optimization.offload_param.device: \"nvme\" is not modelled (its "
                       "max_in_cpu buffer and swapper); allowed: \"cpu\" or \"none\"");
    if (z->offload_param == PLAN_OFFLOAD_CPU && z->stage < 3)
        return rl_errf(e, RL_EINVAL, "zero_optimization.offload_param: needs stage 3 (got stage %d); DeepSpeed "
                       "offloads parameters only in ZeRO-3", z->stage);
    if (z->sub_group_size < 1)
        return rl_errf(e, RL_EINVAL, "zero_optimization.sub_group_size: %lld must be >= 1",
                       (long long)z->sub_group_size);
    if (z->train_batch > 0 && z->micro_batch > 0 && z->train_batch % z->micro_batch != 0)
        return rl_errf(e, RL_EINVAL,
                       "train_batch_size: %lld is not a multiple of train_micro_batch_size_per_gpu %lld",
                       (long long)z->train_batch, (long long)z->micro_batch);
    return 0;
}

/* The note about key `path`'s "auto" (NULL: none). */
static char *auto_note_of(struct plan_zero *z, const char *path)
{
    size_t n = strlen(path);
    for (int i = 0; i < z->n_notes; i++)
        if (!strncmp(z->notes[i], path, n) && !strncmp(z->notes[i] + n, ": \"auto\"", 8))
            return z->notes[i];
    return NULL;
}

void plan_zero_resolve_hf_auto(struct plan_zero *z, int64_t hidden)
{
    if (hidden <= 0)
        return;
    struct {
        const char *path;        /* the key */
        int64_t *value;          /* its value */
        enum plan_src *src;      /* its provenance */
        bool zero3_only;         /* filled only when the stage is 3 (is_zero3()) */
        int64_t v;               /* what the integration writes */
        const char *how;         /* the formula, for the note */
    } keys[] = {
        {"zero_optimization.reduce_bucket_size", &z->reduce_bucket_size, &z->src_reduce_bucket_size, false,
         hidden * hidden, "hidden_size x hidden_size"},
        /* int(0.9 * hidden * hidden) in Python: the double product, truncated. */
        {"zero_optimization.stage3_prefetch_bucket_size", &z->prefetch_bucket_size, &z->src_prefetch_bucket_size, true,
         (int64_t)(0.9 * (double)(hidden * hidden)), "int(0.9 x hidden_size x hidden_size)"},
        {"zero_optimization.stage3_param_persistence_threshold", &z->param_persistence_threshold,
         &z->src_param_persistence_threshold, true, 10 * hidden, "10 x hidden_size"},
    };
    for (size_t i = 0; i < RL_COUNT(keys); i++) {
        if (*keys[i].src != PLAN_SRC_AUTO || (keys[i].zero3_only && z->stage != 3))
            continue;
        *keys[i].value = keys[i].v;
        char *nt = auto_note_of(z, keys[i].path);
        if (!nt && z->n_notes < (int)RL_COUNT(z->notes))
            nt = z->notes[z->n_notes++];
        if (nt)
            snprintf(nt, sizeof z->notes[0], "%s: \"auto\" resolved to %lld = %s (hidden_size %lld), as the HF "
                     "Trainer fills it from the model", keys[i].path, (long long)keys[i].v, keys[i].how,
                     (long long)hidden);
    }
}

void plan_zero_resolve_hf_dtype(struct plan_zero *z, enum plan_dtype trainer)
{
    if (z->src_dtype != PLAN_SRC_AUTO)
        return;   /* set by the config (or nothing was "auto") */
    if ((trainer == PLAN_BF16 && z->bf16_auto) || (trainer == PLAN_FP16 && z->fp16_auto))
        z->dtype = trainer;
    else
        z->dtype = PLAN_FP32;
}

/* DeepSpeed's batch rule (runtime/config.py: _set_batch_related_parameters, then _batch_assertion;
 * the same from 0.12 to 0.19): train_batch_size = train_micro_batch_size_per_gpu x
 * gradient_accumulation_steps x the data-parallel world size. With train_batch_size set, the one
 * of the other two left out follows from it (the accumulation when the micro-batch is known: the
 * config's, the launch line's or --micro-batch; the micro-batch when only the accumulation is
 * given); with neither, the accumulation is 1 and the micro-batch train_batch_size / DP; all three
 * must satisfy the rule, and a quotient must be whole, or DeepSpeed refuses the config. */
int plan_zero_resolve_batch(struct plan_zero *z, int dp_ranks, struct rl_err *e)
{
    if (z->src_train_batch != PLAN_SRC_CONFIG || z->train_batch <= 0)
        return 0;
    const int64_t dp = dp_ranks > 0 ? dp_ranks : 1, tb = z->train_batch;
    const bool mb_known = z->src_micro_batch != PLAN_SRC_DEFAULT, ga_known = z->src_grad_accum == PLAN_SRC_CONFIG;
    if (mb_known && ga_known) {
        if (tb != z->micro_batch * z->grad_accum * dp)
            return rl_errf(e, RL_EINVAL, "train_batch_size: %lld is not the micro-batch %lld x "
                           "gradient_accumulation_steps %lld x %lld data-parallel rank%s (= %lld); allowed: %lld, "
                           "as DeepSpeed checks", (long long)tb, (long long)z->micro_batch, (long long)z->grad_accum,
                           (long long)dp, dp == 1 ? "" : "s", (long long)(z->micro_batch * z->grad_accum * dp),
                           (long long)(z->micro_batch * z->grad_accum * dp));
        return 0;
    }
    const int64_t per = mb_known ? z->micro_batch * dp : ga_known ? z->grad_accum * dp : dp;
    if (tb % per != 0)
        return rl_errf(e, RL_EINVAL, "train_batch_size: %lld is not a multiple of %s%lld x %lld data-parallel rank%s; "
                       "allowed: a multiple of %lld (DeepSpeed derives the %s as their quotient)", (long long)tb,
                       mb_known ? "micro-batch " : ga_known ? "gradient_accumulation_steps " : "",
                       (long long)(per / dp), (long long)dp, dp == 1 ? "" : "s", (long long)per,
                       mb_known ? "accumulation" : "micro-batch");
    if (mb_known) {
        z->grad_accum = tb / per;
        z->src_grad_accum = PLAN_SRC_AUTO;
    } else {
        z->micro_batch = tb / per;
        z->src_micro_batch = PLAN_SRC_AUTO;
        if (!ga_known)
            z->grad_accum = 1;
    }
    return 0;
}
