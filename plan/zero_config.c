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

#include "plan/model_impl.h"   /* plan__json_loads */
#include "plan/plan.h"

/* DeepSpeed defaults (deepspeed/runtime/zero/config.py, offload_config.py). */
#define DS_SUB_GROUP_SIZE 1000000000LL
#define DS_REDUCE_BUCKET_SIZE 500000000LL
#define DS_PREFETCH_BUCKET_SIZE 50000000LL
#define DS_MAX_LIVE_PARAMETERS 1000000000LL
#define DS_OFFLOAD_RATIO 1.0

void plan_zero_defaults(struct plan_zero *z)
{
    memset(z, 0, sizeof *z);
    z->stage = 0;
    z->offload = PLAN_OFFLOAD_NONE;
    z->pin_memory = false;
    z->ratio = DS_OFFLOAD_RATIO;
    z->sub_group_size = DS_SUB_GROUP_SIZE;
    z->reduce_bucket_size = DS_REDUCE_BUCKET_SIZE;
    z->prefetch_bucket_size = DS_PREFETCH_BUCKET_SIZE;
    z->max_live_parameters = DS_MAX_LIVE_PARAMETERS;
    z->dtype = PLAN_FP32;
    z->micro_batch = 1;
    z->grad_accum = 1;
    z->train_batch = 0;
    z->ds_version = (struct rl_version){0, 12, 4};
}

static void note(struct plan_zero *z, const char *fmt, const char *a, const char *b)
{
    if (z->n_notes < (int)(sizeof z->notes / sizeof z->notes[0]))
        snprintf(z->notes[z->n_notes++], sizeof z->notes[0], fmt, a, b);
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

/* Integer field (JSON integer, or an integral real such as 1e9). Returns 1 when absent, 2 when
 * "auto" (and auto_ok), 0 when read. */
static int get_i64(const json_t *obj, const char *key, const char *path, int64_t min, int64_t max,
                   bool auto_ok, int64_t *out, struct rl_err *e, int *rc)
{
    json_t *v = json_object_get(obj, key);
    *rc = 0;
    if (!v || json_is_null(v))
        return 1;
    if (auto_ok && is_auto(v))
        return 2;
    char buf[80];
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x >= min && x <= max) {
            *out = x;
            return 0;
        }
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (isfinite(d) && d == floor(d) && d >= (double)min && d <= (double)max) {
            *out = (int64_t)d;
            return 0;
        }
    }
    show(v, buf, sizeof buf);
    *rc = rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected an integer in [%lld, %lld]%s", path,
                  buf, (long long)min, (long long)max, auto_ok ? " or \"auto\"" : "");
    return -1;
}

/* Boolean field; "auto" when auto_ok. Returns 1 absent, 2 auto, 0 read, -1 error. */
static int get_bool(const json_t *obj, const char *key, const char *path, bool auto_ok, bool *out,
                    struct rl_err *e, int *rc)
{
    json_t *v = json_object_get(obj, key);
    *rc = 0;
    if (!v || json_is_null(v))
        return 1;
    if (auto_ok && is_auto(v))
        return 2;
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 0;
    }
    char buf[80];
    show(v, buf, sizeof buf);
    *rc = rl_errf(e, RL_EINVAL, "%s: %s is not allowed; expected true or false%s", path, buf,
                  auto_ok ? " or \"auto\"" : "");
    return -1;
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

json_t *plan__json_loads(const char *text, size_t flags, json_error_t *je)
{
    json_t *root = json_loads(text, flags | JSON_ALLOW_NUL, je);
    if (root)
        return root;
    /* Python's json (DeepSpeed's reader) takes integers of any size and reals beyond double
     * (1e400 -> inf); jansson refuses both. Such numbers become marked strings holding their
     * text, so a key nobody reads does not reject the config and a key that is read reports the
     * number as typed. */
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
    int rc = 0, r;
    char buf[80];
    if (!json_is_object(root)) {
        rc = rl_errf(e, RL_EINVAL, "the top level must be a JSON object {...}");
        goto out;
    }

    json_t *zo, *off, *fp16, *bf16, *opt;
    if ((rc = get_object(root, "zero_optimization", "zero_optimization", &zo, e)))
        goto out;
    if (zo) {
        int64_t stage = 0;
        if ((r = get_i64(zo, "stage", "zero_optimization.stage", 0, 3, false, &stage, e, &rc)) < 0)
            goto out;
        z->stage = (int)stage;
        if ((rc = get_object(zo, "offload_optimizer", "zero_optimization.offload_optimizer", &off, e)))
            goto out;
        if (off) {
            json_t *dev = json_object_get(off, "device");
            if (dev && !json_is_null(dev)) {
                const char *d = json_is_string(dev) ? json_string_value(dev) : NULL;
                if (d && strcmp(d, "cpu") == 0)
                    z->offload = PLAN_OFFLOAD_CPU;
                else if (d && strcmp(d, "nvme") == 0)
                    z->offload = PLAN_OFFLOAD_NVME;
                else if (d && strcmp(d, "none") == 0)
                    z->offload = PLAN_OFFLOAD_NONE;
                else {
                    show(dev, buf, sizeof buf);
                    rc = rl_errf(e, RL_EINVAL,
                                 "zero_optimization.offload_optimizer.device: %s is not allowed; expected "
                                 "\"cpu\", \"nvme\" or \"none\"", buf);
                    goto out;
                }
            }
            if ((r = get_bool(off, "pin_memory", "zero_optimization.offload_optimizer.pin_memory",
                              false, &z->pin_memory, e, &rc)) < 0)
                goto out;
            json_t *rv = json_object_get(off, "ratio");
            if (rv && !json_is_null(rv)) {
                double x = json_is_number(rv) ? json_number_value(rv) : NAN;
                if (!json_is_number(rv) || !isfinite(x)) {
                    show(rv, buf, sizeof buf);
                    rc = rl_errf(e, RL_EINVAL,
                                 "zero_optimization.offload_optimizer.ratio: %s is not allowed; expected a "
                                 "number in [0, 1]", buf);
                    goto out;
                }
                if (x < 0 || x > 1) {
                    show(rv, buf, sizeof buf);
                    rc = rl_errf(e, RL_EINVAL,
                                 "zero_optimization.offload_optimizer.ratio: %s is outside [0, 1]", buf);
                    goto out;
                }
                z->ratio = x;
                z->src_ratio = PLAN_SRC_CONFIG;
            }
        }
        static const struct {
            const char *key;
            size_t off_val, off_src;
            int64_t def;
        } sizes[] = {
            {"sub_group_size", offsetof(struct plan_zero, sub_group_size),
             offsetof(struct plan_zero, src_sub_group_size), DS_SUB_GROUP_SIZE},
            {"reduce_bucket_size", offsetof(struct plan_zero, reduce_bucket_size),
             offsetof(struct plan_zero, src_reduce_bucket_size), DS_REDUCE_BUCKET_SIZE},
            {"stage3_prefetch_bucket_size", offsetof(struct plan_zero, prefetch_bucket_size),
             offsetof(struct plan_zero, src_prefetch_bucket_size), DS_PREFETCH_BUCKET_SIZE},
            {"stage3_max_live_parameters", offsetof(struct plan_zero, max_live_parameters),
             offsetof(struct plan_zero, src_max_live_parameters), DS_MAX_LIVE_PARAMETERS},
        };
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            char path[96];
            snprintf(path, sizeof path, "zero_optimization.%s", sizes[i].key);
            int64_t *val = (int64_t *)((char *)z + sizes[i].off_val);
            enum plan_src *src = (enum plan_src *)((char *)z + sizes[i].off_src);
            r = get_i64(zo, sizes[i].key, path, 1, INT64_C(1) << 50, true, val, e, &rc);
            if (r < 0)
                goto out;
            if (r == 0)
                *src = PLAN_SRC_CONFIG;
            if (r == 2) {
                *src = PLAN_SRC_AUTO;
                char d[32];
                snprintf(d, sizeof d, "%lld", (long long)sizes[i].def);
                note(z, "%s: \"auto\" resolved to DeepSpeed's default %s", path, d);
            }
        }
    }

    /* precision */
    bool f16 = false, b16 = false;
    if ((rc = get_object(root, "fp16", "fp16", &fp16, e)) || (rc = get_object(root, "bf16", "bf16", &bf16, e)))
        goto out;
    if (fp16) {
        if ((r = get_bool(fp16, "enabled", "fp16.enabled", true, &f16, e, &rc)) < 0)
            goto out;
        if (r == 2)
            note(z, "%s: \"auto\" resolved to false (DeepSpeed's default; HF sets it from --fp16)%s",
                 "fp16.enabled", "");
    }
    if (bf16) {
        if ((r = get_bool(bf16, "enabled", "bf16.enabled", true, &b16, e, &rc)) < 0)
            goto out;
        if (r == 2)
            note(z, "%s: \"auto\" resolved to false (DeepSpeed's default; HF sets it from --bf16)%s",
                 "bf16.enabled", "");
    }
    if (f16 && b16) {
        rc = rl_errf(e, RL_EINVAL, "fp16.enabled and bf16.enabled: both true; at most one may be enabled");
        goto out;
    }
    if (f16 || b16) {
        z->dtype = f16 ? PLAN_FP16 : PLAN_BF16;
        z->src_dtype = PLAN_SRC_CONFIG;
    } else if ((fp16 && is_auto(json_object_get(fp16, "enabled"))) ||
               (bf16 && is_auto(json_object_get(bf16, "enabled")))) {
        z->src_dtype = PLAN_SRC_AUTO;   /* fp32 until --dtype says what the Trainer's flags would */
    }

    /* optimizer block: HF passes one flat parameter group when it is present */
    if ((rc = get_object(root, "optimizer", "optimizer", &opt, e)))
        goto out;
    if (opt) {
        z->has_optimizer_block = true;
        json_t *t = json_object_get(opt, "type");
        if (t && !json_is_string(t)) {
            show(t, buf, sizeof buf);
            rc = rl_errf(e, RL_EINVAL, "optimizer.type: %s is not allowed; expected a string such as \"AdamW\"", buf);
            goto out;
        }
        snprintf(z->optimizer_type, sizeof z->optimizer_type, "%s", t ? json_string_value(t) : "");
        json_t *params;
        if ((rc = get_object(opt, "params", "optimizer.params", &params, e)))
            goto out;
        if (params && (r = get_bool(params, "torch_adam", "optimizer.params.torch_adam", false, &z->torch_adam, e,
                                    &rc)) < 0)
            goto out;
    }

    /* scheduler block: DeepSpeed's lr scheduler (plan/ds_hazards.c) */
    json_t *sched;
    if ((rc = get_object(root, "scheduler", "scheduler", &sched, e)))
        goto out;
    if (sched) {
        z->has_scheduler_block = true;
        json_t *t = json_object_get(sched, "type");
        if (t && !json_is_string(t)) {
            show(t, buf, sizeof buf);
            rc = rl_errf(e, RL_EINVAL, "scheduler.type: %s is not allowed; expected a string such as \"WarmupLR\"", buf);
            goto out;
        }
        snprintf(z->scheduler_type, sizeof z->scheduler_type, "%s", t ? json_string_value(t) : "");
    }

    /* batch settings */
    if ((r = get_i64(root, "train_micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu", 1, 1 << 20,
                     true, &z->micro_batch, e, &rc)) < 0)
        goto out;
    z->src_micro_batch = r == 0 ? PLAN_SRC_CONFIG : r == 2 ? PLAN_SRC_AUTO : PLAN_SRC_DEFAULT;
    if (r == 2)
        note(z, "%s: \"auto\" resolved to %s", "train_micro_batch_size_per_gpu", "1");
    if ((r = get_i64(root, "gradient_accumulation_steps", "gradient_accumulation_steps", 1, 1 << 20, true,
                     &z->grad_accum, e, &rc)) < 0)
        goto out;
    z->src_grad_accum = r == 0 ? PLAN_SRC_CONFIG : r == 2 ? PLAN_SRC_AUTO : PLAN_SRC_DEFAULT;
    if (r == 2)
        note(z, "%s: \"auto\" resolved to %s", "gradient_accumulation_steps", "1");
    if ((r = get_i64(root, "train_batch_size", "train_batch_size", 1, INT64_C(1) << 40, true,
                     &z->train_batch, e, &rc)) < 0)
        goto out;
    z->src_train_batch = r == 0 ? PLAN_SRC_CONFIG : r == 2 ? PLAN_SRC_AUTO : PLAN_SRC_DEFAULT;

    rc = plan_zero_validate(z, e);
out:
    if (rc)
        rl_err_prefix(e, "%s", what);
    json_decref(root);
    return rc;
}

int plan_zero_load(struct plan_zero *z, const char *path, struct rl_err *e)
{
    char *text;
    int rc = rl_read_file(path, &text, NULL, e);
    if (rc) {
        plan_zero_defaults(z);
        return rl_err_prefix(e, "--ds-config");
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
    if (z->sub_group_size < 1)
        return rl_errf(e, RL_EINVAL, "zero_optimization.sub_group_size: %lld must be >= 1",
                       (long long)z->sub_group_size);
    if (z->train_batch > 0 && z->micro_batch > 0 && z->train_batch % z->micro_batch != 0)
        return rl_errf(e, RL_EINVAL,
                       "train_batch_size: %lld is not a multiple of train_micro_batch_size_per_gpu %lld",
                       (long long)z->train_batch, (long long)z->micro_batch);
    return 0;
}
