/* plan/zero_config.c — DeepSpeed JSON config ingest (jansson).
 *
 * Reads the keys that shape ZeRO-3 partial offload and resolves HF-style "auto" values to
 * DeepSpeed's documented defaults, recording each resolution in z->notes. Errors name the JSON
 * path, the value and what is allowed. Unknown keys are ignored (real configs carry many). */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan/ds_rules.h"        /* PLAN_DS_DEFAULT_VERSION */
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

/* What a getter found at its key (the value itself goes to *out only when FOUND_VALUE). */
enum found {
    FOUND_ABSENT,   /* no key, or null */
    FOUND_AUTO,     /* "auto", where allowed */
    FOUND_VALUE,    /* a valid value, written to *out */
};

/* Integer field (JSON integer, or an integral real such as 1e9), "auto" when auto_ok. Returns 0
 * with *how filled, or RL_EINVAL naming the path, the value and the allowed range. */
static int get_i64(const json_t *obj, const char *key, const char *path, int64_t min, int64_t max,
                   bool auto_ok, int64_t *out, enum found *how, struct rl_err *e)
{
    json_t *v = json_object_get(obj, key);
    *how = FOUND_ABSENT;
    if (!v || json_is_null(v))
        return 0;
    if (auto_ok && is_auto(v)) {
        *how = FOUND_AUTO;
        return 0;
    }
    char buf[80];
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x >= min && x <= max) {
            *out = x;
            *how = FOUND_VALUE;
            return 0;
        }
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (isfinite(d) && d == floor(d) && d >= (double)min && d <= (double)max) {
            *out = (int64_t)d;
            *how = FOUND_VALUE;
            return 0;
        }
    }
    show(v, buf, sizeof buf);
    return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected an integer in [%lld, %lld]%s", path,
                   buf, (long long)min, (long long)max, auto_ok ? " or \"auto\"" : "");
}

/* Boolean field, "auto" when auto_ok. Returns 0 with *how filled, or RL_EINVAL. */
static int get_bool(const json_t *obj, const char *key, const char *path, bool auto_ok, bool *out,
                    enum found *how, struct rl_err *e)
{
    json_t *v = json_object_get(obj, key);
    *how = FOUND_ABSENT;
    if (!v || json_is_null(v))
        return 0;
    if (auto_ok && is_auto(v)) {
        *how = FOUND_AUTO;
        return 0;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        *how = FOUND_VALUE;
        return 0;
    }
    char buf[80];
    show(v, buf, sizeof buf);
    return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected true or false%s", path, buf,
                   auto_ok ? " or \"auto\"" : "");
}

static int get_object(const json_t *obj, const char *key, const char *path, json_t **out,
                      struct rl_err *e)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        char buf[80];
        show(v, buf, sizeof buf);
        return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected an object {...}", path, buf);
    }
    *out = v;
    return 0;
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

/* What the key table writes: the config, and the two precision switches it is resolved from. */
struct zero_read {
    struct plan_zero z;   /* the config being read */
    bool fp16;            /* fp16.enabled */
    bool bf16;            /* bf16.enabled */
};

/* What a key of the table is. */
enum zero_kind {
    ZK_OBJECT,      /* an object {...}; its presence sets the bool at off, if any */
    ZK_INT,         /* an integer in [lo, hi] (a JSON integer or an integral real such as 1e9) */
    ZK_BOOL,        /* true or false */
    ZK_DEVICE,      /* "cpu", "nvme" or "none": an enum plan_offload */
    ZK_RATIO,       /* a finite number in [0, 1] */
    ZK_STRING,      /* a string (null is not one), into a char array */
    ZK_PRECISION,   /* no key: fp16 and bf16 resolved into the dtype */
};

/* One key of a DeepSpeed config that shapes the plan. Keys are read in table order and the first
 * error wins, so the table's order is the order errors are reported in. */
struct zero_key {
    const char *path;        /* JSON path from the top level, keys joined by "." */
    enum zero_kind kind;     /* what the value must be */
    size_t off;              /* offset of the value in struct zero_read (NONE: not stored) */
    size_t size;             /* ZK_INT: bytes of the value (int or int64_t); ZK_STRING: of the array */
    size_t off_src;          /* offset of its enum plan_src (NONE: no provenance kept) */
    int64_t lo, hi;          /* ZK_INT: the allowed range, inclusive */
    bool auto_ok;            /* "auto" is accepted (the default stays) */
    const char *auto_note;   /* the note when "auto": a format of the path and the default */
    int64_t def;             /* ZK_INT: the default "auto" resolves to, for the note */
    const char *example;     /* ZK_STRING: an example value for the message */
};

#define NONE ((size_t)-1)
#define AT(m) offsetof(struct zero_read, m)
#define K_SIZEOF(m) sizeof(((struct zero_read *)0)->m)
#define K_OBJECT(p) {.path = p, .kind = ZK_OBJECT, .off = NONE, .off_src = NONE}
#define K_BLOCK(p, flag) {.path = p, .kind = ZK_OBJECT, .off = AT(z.flag), .off_src = NONE}
#define K_INT(p, m, src, l, h, ok, nt, d)                                                           \
    {.path = p, .kind = ZK_INT, .off = AT(z.m), .size = K_SIZEOF(z.m), .off_src = src, .lo = l, .hi = h, \
     .auto_ok = ok, .auto_note = nt, .def = d}
#define K_BOOL(p, m, ok, nt) {.path = p, .kind = ZK_BOOL, .off = AT(m), .off_src = NONE, .auto_ok = ok, .auto_note = nt}
#define K_STRING(p, m, ex) {.path = p, .kind = ZK_STRING, .off = AT(z.m), .size = K_SIZEOF(z.m), .off_src = NONE, .example = ex}
#define K_SIZE(k, m, d)                                                                         \
    K_INT("zero_optimization." k, m, AT(z.src_##m), 1, INT64_C(1) << 50, true,                     \
        "%s: \"auto\" resolved to DeepSpeed's default %s", d)
#define K_BATCH(k, m, h, nt) K_INT(k, m, AT(z.src_##m), 1, h, true, nt, 1)
static const struct zero_key zero_keys[] = {
    K_OBJECT("zero_optimization"),
    K_INT("zero_optimization.stage", stage, NONE, 0, 3, false, NULL, 0),
    K_OBJECT("zero_optimization.offload_optimizer"),
    {.path = "zero_optimization.offload_optimizer.device", .kind = ZK_DEVICE, .off = AT(z.offload), .off_src = NONE},
    {.path = "zero_optimization.offload_optimizer.pin_memory", .kind = ZK_BOOL, .off = AT(z.pin_memory),
     .off_src = AT(z.src_pin_memory)},
    {.path = "zero_optimization.offload_optimizer.ratio", .kind = ZK_RATIO, .off = AT(z.ratio),
     .off_src = AT(z.src_ratio)},
    K_OBJECT("zero_optimization.offload_param"),
    {.path = "zero_optimization.offload_param.device", .kind = ZK_DEVICE, .off = AT(z.offload_param), .off_src = NONE},
    {.path = "zero_optimization.offload_param.pin_memory", .kind = ZK_BOOL, .off = AT(z.offload_param_pin),
     .off_src = AT(z.src_offload_param_pin)},
    K_SIZE("sub_group_size", sub_group_size, PLAN_DS_SUB_GROUP_SIZE),
    K_SIZE("reduce_bucket_size", reduce_bucket_size, PLAN_DS_REDUCE_BUCKET_SIZE),
    K_SIZE("stage3_prefetch_bucket_size", prefetch_bucket_size, PLAN_DS_PREFETCH_BUCKET_SIZE),
    K_SIZE("stage3_max_live_parameters", max_live_parameters, PLAN_DS_MAX_LIVE_PARAMETERS),
    K_OBJECT("fp16"),
    K_OBJECT("bf16"),
    K_BOOL("fp16.enabled", fp16, true, "%s: \"auto\" resolved to false (DeepSpeed's default; HF sets it from --fp16)%s"),
    K_BOOL("bf16.enabled", bf16, true, "%s: \"auto\" resolved to false (DeepSpeed's default; HF sets it from --bf16)%s"),
    {.path = "", .kind = ZK_PRECISION, .off = NONE, .off_src = NONE},
    /* optimizer block: HF passes one flat parameter group when it is present */
    K_BLOCK("optimizer", has_optimizer_block),
    K_STRING("optimizer.type", optimizer_type, "AdamW"),
    K_OBJECT("optimizer.params"),
    K_BOOL("optimizer.params.torch_adam", z.torch_adam, false, NULL),
    /* scheduler block: DeepSpeed's lr scheduler (plan/ds_hazards.c) */
    K_BLOCK("scheduler", has_scheduler_block),
    K_STRING("scheduler.type", scheduler_type, "WarmupLR"),
    K_BATCH("train_micro_batch_size_per_gpu", micro_batch, 1 << 20, "%s: \"auto\" resolved to %s"),
    K_BATCH("gradient_accumulation_steps", grad_accum, 1 << 20, "%s: \"auto\" resolved to %s"),
    K_BATCH("train_batch_size", train_batch, INT64_C(1) << 40, NULL),
};
#undef K_OBJECT
#undef K_BLOCK
#undef K_INT
#undef K_BOOL
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

/* offload_optimizer.device: "cpu", "nvme" or "none" (absent or null: unchanged). */
static int read_device(const json_t *dev, const char *path, enum plan_offload *out, struct rl_err *e)
{
    static const char *const names[] = {[PLAN_OFFLOAD_NONE] = "none", [PLAN_OFFLOAD_CPU] = "cpu",
                                        [PLAN_OFFLOAD_NVME] = "nvme"};
    if (!dev || json_is_null(dev))
        return 0;
    const char *d = json_is_string(dev) ? json_string_value(dev) : NULL;
    for (int i = 0; d && i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(d, names[i]) == 0) {
            *out = (enum plan_offload)i;
            return 0;
        }
    char buf[80];
    show(dev, buf, sizeof buf);
    return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected \"cpu\", \"nvme\" or \"none\"", path, buf);
}

/* offload_optimizer.ratio: a finite number in [0, 1] (absent or null: unchanged). Returns 1 when read. */
/* offload_optimizer.ratio: 0 with *how filled (absent or read), or RL_EINVAL. */
static int read_ratio(const json_t *rv, const char *path, double *out, enum found *how, struct rl_err *e)
{
    *how = FOUND_ABSENT;
    if (!rv || json_is_null(rv))
        return 0;
    char buf[80];
    double x = json_is_number(rv) ? json_number_value(rv) : NAN;
    if (!json_is_number(rv) || !isfinite(x)) {
        show(rv, buf, sizeof buf);
        return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected a number in [0, 1]", path, buf);
    }
    if (x < 0 || x > 1) {
        show(rv, buf, sizeof buf);
        return rl_errf(e, RL_EINVAL, "%s: %s is outside [0, 1]", path, buf);
    }
    *out = x;
    *how = FOUND_VALUE;
    return 0;
}

/* fp16.enabled and bf16.enabled resolved into the dtype: at most one may be true; "auto" leaves
 * fp32 until --dtype says what the Trainer's flags would. */
static int resolve_precision(struct zero_read *rd, const json_t *fp16, const json_t *bf16, struct rl_err *e)
{
    struct plan_zero *z = &rd->z;
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
    const char *dot = strrchr(k->path, '.');
    const char *key = dot ? dot + 1 : k->path;
    int rc = 0;
    enum found how;
    switch (k->kind) {
    case ZK_OBJECT: {
        json_t **obj = &objects[k - zero_keys];
        if ((rc = get_object(in, key, k->path, obj, e)))
            return rc;
        if (*obj && k->off != NONE)
            *(bool *)(base + k->off) = true;
        return 0;
    }
    case ZK_INT: {
        int64_t v = 0;
        if (k->size == sizeof(int64_t))
            memcpy(&v, base + k->off, sizeof v);
        if ((rc = get_i64(in, key, k->path, k->lo, k->hi, k->auto_ok, &v, &how, e)))
            return rc;
        if (k->size == sizeof(int64_t))
            memcpy(base + k->off, &v, sizeof v);
        else
            *(int *)(base + k->off) = (int)v;
        if (src && how == FOUND_VALUE)
            *src = PLAN_SRC_CONFIG;
        if (src && how == FOUND_AUTO)
            *src = PLAN_SRC_AUTO;
        if (how == FOUND_AUTO && k->auto_note) {
            char d[32];
            snprintf(d, sizeof d, "%lld", (long long)k->def);
            note(&rd->z, k->auto_note, k->path, d);
        }
        return 0;
    }
    case ZK_BOOL:
        if ((rc = get_bool(in, key, k->path, k->auto_ok, (bool *)(base + k->off), &how, e)))
            return rc;
        if (src && how == FOUND_VALUE)
            *src = PLAN_SRC_CONFIG;
        if (how == FOUND_AUTO && k->auto_note)
            note(&rd->z, k->auto_note, k->path, "");
        return 0;
    case ZK_DEVICE:
        return read_device(json_object_get(in, key), k->path, (enum plan_offload *)(base + k->off), e);
    case ZK_RATIO:
        if ((rc = read_ratio(json_object_get(in, key), k->path, (double *)(base + k->off), &how, e)))
            return rc;
        if (how == FOUND_VALUE && src)
            *src = PLAN_SRC_CONFIG;
        return 0;
    case ZK_STRING: {
        json_t *t = json_object_get(in, key);
        if (t && !json_is_string(t)) {
            char buf[80];
            show(t, buf, sizeof buf);
            return rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected a string such as \"%s\"", k->path, buf,
                           k->example);
        }
        snprintf(base + k->off, k->size, "%s", t ? json_string_value(t) : "");
        return 0;
    }
    case ZK_PRECISION:
        break;
    }
    return 0;
}

int plan_zero_parse(struct plan_zero *z, const char *text, const char *what, struct rl_err *e)
{
    plan_zero_defaults(z);
    json_error_t je;
    json_t *root = plan__json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char word[64], path[256];
        bool found = find_placeholder(text, word, sizeof word, path, sizeof path);
        if (found && (!strcasecmp(word, "NaN") || !strcasecmp(word, "Infinity") || !strcasecmp(word, "inf")))
            return rl_errf(e, RL_EINVAL, "%s: %s: %s is not allowed (JSON has no NaN or infinity); expected a finite number",
                           what, path[0] ? path : "(top level)", word);
        if (found)
            return rl_errf(e, RL_EINVAL,
                           "%s: %s: %s is an unreplaced template placeholder; replace it with a value "
                           "(launch scripts do this with sed) before passing the config",
                           what, path[0] ? path : "(top level)", word);
        return rl_errf(e, RL_EINVAL, "%s: not valid JSON at line %d column %d: %s", what, je.line,
                       je.column, je.text);
    }
    int rc = 0;
    struct zero_read rd = {.z = *z};
    json_t *objects[N_ZERO_KEYS] = {0};   /* the ZK_OBJECT rows' objects (NULL: absent) */
    if (!json_is_object(root))
        rc = rl_errf(e, RL_EINVAL, "the top level must be a JSON object {...}");
    for (size_t i = 0; i < N_ZERO_KEYS && !rc; i++)
        rc = read_key(&rd, &zero_keys[i], root, objects, e);
    if (!rc)
        rc = plan_zero_validate(&rd.z, e);
    *z = rd.z;
    if (rc)
        rl_err_prefix(e, "%s", what);
    json_decref(root);
    return rc;
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
