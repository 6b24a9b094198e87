/* validation/hparams.c — every sub-group's update against its param group's current
 * hyperparameters (see hparams.h). */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validation/hparams.h"

static const char *const hp_field[] = {"lr", "beta1", "beta2", "eps", "weight_decay"};

static double *hp_slot(struct val_hp *h, int k)
{
    double *f[] = {&h->lr, &h->beta1, &h->beta2, &h->eps, &h->weight_decay};
    return f[k];
}

/* A finite number at o[key] into *v; RL_EINVAL naming the JSON path otherwise. */
static int get_num(json_t *o, const char *key, const char *file, const char *where, double *v, struct rl_err *e)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_number(x) || !isfinite(json_number_value(x)))
        return rl_errf(e, RL_EINVAL, "%s: hparams.%s.%s: %s; allowed: a finite number", file, where, key,
                       x ? "not a finite number" : "missing");
    *v = json_number_value(x);
    return 0;
}

/* An integer at o[key] in lo..hi into *v; null (when allowed) gives -1. */
static int get_int(json_t *o, const char *key, int64_t lo, int64_t hi, bool null_ok, const char *file,
                   const char *where, int64_t *v, struct rl_err *e)
{
    json_t *x = json_object_get(o, key);
    if (null_ok && (!x || json_is_null(x))) {
        *v = -1;
        return 0;
    }
    if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
        return rl_errf(e, RL_EINVAL, "%s: hparams.%s.%s: %s; allowed: an integer %lld..%lld%s", file, where, key,
                       x ? "out of range or not an integer" : "missing", (long long)lo, (long long)hi,
                       null_ok ? " or null" : "");
    *v = (int64_t)json_integer_value(x);
    return 0;
}

static int read_hp(json_t *o, const char *file, const char *where, struct val_hp *h, struct rl_err *e)
{
    if (!json_is_object(o))
        return rl_errf(e, RL_EINVAL, "%s: hparams.%s: not an object", file, where);
    for (int k = 0; k < 5; k++) {
        int rc = get_num(o, hp_field[k], file, where, hp_slot(h, k), e);
        if (rc)
            return rc;
    }
    return 0;
}

static int parse_root(json_t *root, const char *file, struct val_hparams *h, struct rl_err *e)
{
    json_t *hp = json_object_get(root, "hparams");
    if (!hp || json_is_null(hp))
        return 0;
    if (!json_is_object(hp))
        return rl_errf(e, RL_EINVAL, "%s: hparams: not an object", file);
    h->present = true;
    json_t *eng = json_object_get(hp, "engine"), *ups = json_object_get(hp, "updates");
    if (!json_is_array(eng) || !json_is_array(ups))
        return rl_errf(e, RL_EINVAL, "%s: hparams.engine and hparams.updates: not arrays", file);
    size_t ns = json_array_size(eng), nu = json_array_size(ups);
    if (ns > VAL_HP_MAX_STEPS || nu > VAL_HP_MAX_UPDATES)
        return rl_errf(e, RL_EINVAL, "%s: hparams: %zu steps, %zu updates; allowed: at most %d and %d", file, ns, nu,
                       VAL_HP_MAX_STEPS, VAL_HP_MAX_UPDATES);
    size_t ng = ns ? json_array_size(json_array_get(eng, 0)) : 0;
    if (ng > VAL_HP_MAX_GROUPS)
        return rl_errf(e, RL_EINVAL, "%s: hparams.engine[0]: %zu param groups; allowed: at most %d", file, ng,
                       VAL_HP_MAX_GROUPS);
    h->n_steps = (int)ns;
    h->n_groups = (int)ng;
    h->engine = calloc(ns * ng > 0 ? ns * ng : 1, sizeof *h->engine);
    h->up = calloc(nu ? nu : 1, sizeof *h->up);
    if (!h->engine || !h->up)
        return rl_errf(e, RL_ENOMEM, "%s: hparams: out of memory", file);
    char where[64];
    for (size_t s = 0; s < ns; s++) {
        json_t *gs = json_array_get(eng, s);
        if (!json_is_array(gs) || json_array_size(gs) != ng)
            return rl_errf(e, RL_EINVAL, "%s: hparams.engine[%zu]: not an array of %zu param groups (step 1's count)",
                           file, s, ng);
        for (size_t g = 0; g < ng; g++) {
            snprintf(where, sizeof where, "engine[%zu][%zu]", s, g);
            int rc = read_hp(json_array_get(gs, g), file, where, &h->engine[s * ng + g], e);
            if (rc)
                return rc;
        }
    }
    for (size_t i = 0; i < nu; i++) {
        json_t *u = json_array_get(ups, i);
        struct val_hp_update *x = &h->up[i];
        snprintf(where, sizeof where, "updates[%zu]", i);
        if (!json_is_object(u))
            return rl_errf(e, RL_EINVAL, "%s: hparams.%s: not an object", file, where);
        int64_t step, sg, pg, os;
        int rc;
        if ((rc = get_int(u, "step", 1, VAL_HP_MAX_STEPS, false, file, where, &step, e)) ||
            (rc = get_int(u, "sub_group", 0, VAL_PROBE_MAX_COUNT, true, file, where, &sg, e)) ||
            (rc = get_int(u, "param_group", 0, VAL_HP_MAX_GROUPS - 1, true, file, where, &pg, e)) ||
            (rc = get_int(u, "opt_step", 0, VAL_PROBE_MAX_COUNT, true, file, where, &os, e)))
            return rc;
        const char *opt = json_string_value(json_object_get(u, "optimizer"));
        const char *cls = json_string_value(json_object_get(u, "optimizer_class"));
        if (!opt || (strcmp(opt, "optimizer") != 0 && strcmp(opt, "backup_optimizer") != 0))
            return rl_errf(e, RL_EINVAL, "%s: hparams.%s.optimizer: %s; allowed: \"optimizer\" or \"backup_optimizer\"",
                           file, where, opt ? opt : "missing or not a string");
        x->step = (int)step;
        x->sub_group = (int)sg;
        x->param_group = (int)pg;
        x->opt_step = os;
        snprintf(x->optimizer, sizeof x->optimizer, "%s", opt);
        snprintf(x->optimizer_class, sizeof x->optimizer_class, "%s", cls ? cls : "");
        if (pg >= 0 && (rc = read_hp(u, file, where, &x->held, e)))
            return rc;
    }
    h->n_up = (int)nu;
    return 0;
}

int val_hparams_parse(const char *text, size_t len, const char *path, struct val_hparams *h, struct rl_err *e)
{
    memset(h, 0, sizeof *h);
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root)
        return rl_errf(e, RL_EINVAL, "%s: line %d: %s", path, je.line, je.text);
    int rc = json_is_object(root) ? parse_root(root, path, h, e) : rl_errf(e, RL_EINVAL, "%s: not a JSON object", path);
    json_decref(root);
    if (rc)
        val_hparams_free(h);
    return rc;
}

int val_hparams_read(const char *path, struct val_hparams *h, struct rl_err *e)
{
    size_t len = 0;
    char *text = NULL;
    int rc = rl_read_file(path, &text, &len, e);
    if (rc) {
        memset(h, 0, sizeof *h);
        return rc;
    }
    rc = val_hparams_parse(text, len, path, h, e);
    free(text);
    return rc;
}

void val_hparams_free(struct val_hparams *h)
{
    free(h->engine);
    free(h->up);
    memset(h, 0, sizeof *h);
}

const char *val_hp_kind_name(enum val_hp_kind k)
{
    switch (k) {
    case VAL_HP_OK: return "ok";
    case VAL_HP_HELD_OTHER: return "held-other";
    case VAL_HP_NOT_STEPPED: return "not-stepped";
    case VAL_HP_STEPPED_TWICE: return "stepped-twice";
    case VAL_HP_STEP_COUNT: return "step-count";
    case VAL_HP_OTHER_OPTIMIZER: return "other-optimizer";
    }
    return "?";
}

/* The probe's sub-group position of DeepSpeed's index, -1 when it has none. */
static int sub_pos(const struct val_probe *pr, int index)
{
    if (index >= 0 && index < pr->n_sub && pr->sub[index].index == index)
        return index;
    for (int i = 0; i < pr->n_sub; i++)
        if (pr->sub[i].index == index)
            return i;
    return -1;
}

/* The first finding of one update against the group's current values (VAL_HP_OK when none). */
static enum val_hp_kind judge(const struct val_probe_subgroup *g, const struct val_hp_update *u,
                              const struct val_hp *cur, int step, struct val_hp_sub *f)
{
    if (g->optimizer[0] && strcmp(u->optimizer, g->optimizer) != 0) {
        f->held = f->current = 0;
        return VAL_HP_OTHER_OPTIMIZER;
    }
    if (cur) {
        struct val_hp held = u->held, want = *cur;
        for (int k = 0; k < 5; k++)
            if (*hp_slot(&held, k) != *hp_slot(&want, k)) {
                f->field = hp_field[k];
                f->held = *hp_slot(&held, k);
                f->current = *hp_slot(&want, k);
                return VAL_HP_HELD_OTHER;
            }
    }
    if (u->opt_step >= 0 && u->opt_step != step) {
        f->held = (double)u->opt_step;
        f->current = step;
        return VAL_HP_STEP_COUNT;
    }
    return VAL_HP_OK;
}

static void put(char *buf, size_t n, size_t *o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t n, size_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *o, n - *o, fmt, ap);
    va_end(ap);
    if (w > 0)
        *o = *o + (size_t)w < n ? *o + (size_t)w : n - 1;
}

/* One finding as text: "sub-group 3 (param group 0, backup_optimizer AdamW): step 2: lr 0.001 held, its
 * param group's 0.0005". */
static void finding_text(const struct val_probe_subgroup *g, const struct val_hp_sub *f, char *buf, size_t n, size_t *o)
{
    put(buf, n, o, "sub-group %d (param group %d, %s %s): step %d: ", g->index, g->param_group,
        g->optimizer[0] ? g->optimizer : "?", g->optimizer_class[0] ? g->optimizer_class : "?", f->step);
    switch (f->kind) {
    case VAL_HP_HELD_OTHER:
        put(buf, n, o, "%s %.6g held, its param group's %.6g", f->field, f->held, f->current);
        break;
    case VAL_HP_NOT_STEPPED: put(buf, n, o, "not stepped"); break;
    case VAL_HP_STEPPED_TWICE: put(buf, n, o, "stepped %.0f times", f->held); break;
    case VAL_HP_STEP_COUNT: put(buf, n, o, "step count %.0f after the update, not %.0f", f->held, f->current); break;
    case VAL_HP_OTHER_OPTIMIZER: put(buf, n, o, "stepped by the other optimizer"); break;
    case VAL_HP_OK: break;
    }
}

int val_hparams_check(const struct val_probe *pr, const struct val_hparams *h, struct val_hparams_result *r,
                      struct rl_err *e)
{
    memset(r, 0, sizeof *r);
    r->n_sub = pr->n_sub;
    r->sub = calloc(pr->n_sub ? (size_t)pr->n_sub : 1, sizeof *r->sub);
    if (!r->sub)
        return rl_errf(e, RL_ENOMEM, "hparams: out of memory");
    if (!h->present || h->n_steps == 0) {
        r->status = VAL_INFO;
        snprintf(r->detail, sizeof r->detail, "%s", h->present ? "no optimizer step recorded"
                 : "not recorded (a probe older than the hyperparameter record)");
        return 0;
    }
    size_t cells = (size_t)pr->n_sub * (size_t)h->n_steps;
    int *count = calloc(cells ? cells : 1, sizeof *count);
    int *first = calloc(cells ? cells : 1, sizeof *first);
    if (!count || !first) {
        free(count);
        free(first);
        return rl_errf(e, RL_ENOMEM, "hparams: out of memory");
    }
    int stray = 0;
    for (int i = 0; i < h->n_up; i++) {
        const struct val_hp_update *u = &h->up[i];
        int pos = u->sub_group >= 0 ? sub_pos(pr, u->sub_group) : -1;
        if (pos < 0 || u->step > h->n_steps) {
            stray++;
            continue;
        }
        size_t c = (size_t)pos * (size_t)h->n_steps + (size_t)(u->step - 1);
        if (count[c]++ == 0)
            first[c] = i;
    }
    for (int s = 1; s < h->n_steps && !r->lr_changed; s++)
        for (int g = 0; g < h->n_groups; g++)
            if (h->engine[(size_t)s * (size_t)h->n_groups + (size_t)g].lr != h->engine[(size_t)g].lr)
                r->lr_changed = true;
    for (int i = 0; i < pr->n_sub; i++) {
        const struct val_probe_subgroup *g = &pr->sub[i];
        struct val_hp_sub *f = &r->sub[i];
        for (int s = 1; s <= h->n_steps; s++) {
            size_t c = (size_t)i * (size_t)h->n_steps + (size_t)(s - 1);
            struct val_hp_sub t = {0};
            t.step = s;
            if (count[c] == 0) {
                t.kind = VAL_HP_NOT_STEPPED;
            } else if (count[c] > 1) {
                t.kind = VAL_HP_STEPPED_TWICE;
                t.held = count[c];
                t.current = 1;
            } else {
                const struct val_hp_update *u = &h->up[first[c]];
                int pg = u->param_group >= 0 ? u->param_group : g->param_group;
                const struct val_hp *cur = pg >= 0 && pg < h->n_groups && u->param_group >= 0
                                               ? &h->engine[(size_t)(s - 1) * (size_t)h->n_groups + (size_t)pg] : NULL;
                t.kind = judge(g, u, cur, s, &t);
            }
            if (t.kind != VAL_HP_OK) {
                if (f->kind == VAL_HP_OK) {
                    int bad = f->n_steps_bad;
                    *f = t;
                    f->n_steps_bad = bad;
                }
                f->n_steps_bad++;
            }
        }
        if (f->kind != VAL_HP_OK)
            r->n_bad++;
    }
    free(count);
    free(first);
    size_t o = 0;
    if (r->n_bad == 0 && stray == 0) {
        r->status = VAL_PASS;
        put(r->detail, sizeof r->detail, &o, "%d sub-groups x %d optimizer steps: each stepped once a step by the "
            "optimizer holding its state, with its param group's current lr, betas, eps and weight decay%s",
            pr->n_sub, h->n_steps, r->lr_changed ? " (the lr changed between steps: a schedule ran)" : "");
        return 0;
    }
    r->status = VAL_FAIL;
    put(r->detail, sizeof r->detail, &o, "%d of %d sub-groups", r->n_bad, pr->n_sub);
    if (stray)
        put(r->detail, sizeof r->detail, &o, ", %d update%s of no known sub-group", stray, stray == 1 ? "" : "s");
    int shown = 0;
    for (int i = 0; i < pr->n_sub && shown < 3; i++) {
        if (r->sub[i].kind == VAL_HP_OK)
            continue;
        put(r->detail, sizeof r->detail, &o, "%s", shown ? "; " : ": ");
        finding_text(&pr->sub[i], &r->sub[i], r->detail, sizeof r->detail, &o);
        if (r->sub[i].n_steps_bad > 1)
            put(r->detail, sizeof r->detail, &o, " (and %d more step%s)", r->sub[i].n_steps_bad - 1,
                r->sub[i].n_steps_bad == 2 ? "" : "s");
        shown++;
    }
    if (r->n_bad > shown)
        put(r->detail, sizeof r->detail, &o, "; %d more", r->n_bad - shown);
    return 0;
}

void val_hparams_result_free(struct val_hparams_result *r)
{
    free(r->sub);
    r->sub = NULL;
}
