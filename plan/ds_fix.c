/* plan/ds_fix.c — a DeepSpeed config's hazards judged, and the fixes written into its JSON
 * (ds_fix.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ds_fix.h"
#include "plan/json_edit.h"
#include "plan/json_text.h"   /* plan_json_relax */

bool plan_hazard_fails(const struct plan_hazard *h, bool strict) { return strict || h->kind != PLAN_HAZARD_SUSPECT; }

void plan_hazards_find(struct plan_hazard_set *hz, struct plan_zero *z, bool strict)
{
    hz->n = plan_ds_hazards(z, hz->h, PLAN_HAZARDS_MAX);
    hz->n_fail = 0;
    for (int i = 0; i < hz->n; i++)
        hz->n_fail += plan_hazard_fails(hz->h[i], strict);
    hz->n_repaired = plan_ds_hazards_assume_fixed(z);
}

json_t *plan_hazards_json(const struct plan_hazard_set *hz, const struct plan_zero *z, bool strict)
{
    json_t *arr = json_array();
    char line[1024], ver[48];
    for (int i = 0; i < hz->n; i++) {
        const struct plan_hazard *h = hz->h[i];
        json_t *o = json_object();
        plan_hazard_line(h, z, line, sizeof line);
        plan_hazard_versions(h, ver, sizeof ver);
        json_object_set_new(o, "id", json_string(h->id));
        json_object_set_new(o, "kind", json_string(plan_hazard_kind_name(h->kind)));
        json_object_set_new(o, "key", json_string(h->key));
        json_object_set_new(o, "deepspeed_versions", json_string(ver));
        json_object_set_new(o, "source", json_string(h->source));
        json_object_set_new(o, "fix", json_string(h->fix));
        json_object_set_new(o, "fails", json_boolean(plan_hazard_fails(h, strict)));
        json_object_set_new(o, "line", json_string(line));
        json_array_append_new(arr, o);
    }
    return arr;
}

static bool fixable(const struct plan_hazard *h)
{
    return !strcmp(h->id, "nvme-ratio") || !strncmp(h->id, "stage-", 6) || !strcmp(h->id, "torch-adam");
}

int plan_hazards_fixable(const struct plan_hazard_set *hz)
{
    int n = 0;
    for (int i = 0; i < hz->n; i++)
        n += fixable(hz->h[i]);
    return n;
}

int plan_hazards_fix_json(json_t *root, const struct plan_hazard_set *hz)
{
    int n = 0;
    json_t *zo = json_object_get(root, "zero_optimization");
    json_t *off = json_object_get(zo, "offload_optimizer");
    json_t *params = json_object_get(json_object_get(root, "optimizer"), "params");
    for (int i = 0; i < hz->n; i++) {
        const char *id = hz->h[i]->id;
        if (!strcmp(id, "nvme-ratio") && json_is_object(off))
            n += json_object_set_new(off, "device", json_string("cpu")) == 0;
        else if (!strncmp(id, "stage-", 6) && json_is_object(zo))
            n += json_object_set_new(zo, "stage", json_integer(3)) == 0;
        else if (!strcmp(id, "torch-adam") && json_is_object(params))
            n += json_object_del(params, "torch_adam") == 0;
    }
    return n;
}

void plan_zero_fix_json(json_t *root, int64_t sub_group_size, double ratio)
{
    json_t *zo = json_object_get(root, "zero_optimization");
    if (!zo) {
        zo = json_object();
        json_object_set_new(root, "zero_optimization", zo);
    }
    if (sub_group_size > 0)
        json_object_set_new(zo, "sub_group_size", json_integer(sub_group_size));
    if (ratio >= 0) {
        json_t *off = json_object_get(zo, "offload_optimizer");
        if (!off) {
            off = json_object();
            json_object_set_new(off, "device", json_string("cpu"));
            json_object_set_new(zo, "offload_optimizer", off);
        }
        json_object_set_new(off, "ratio", json_real(ratio));
    }
}

/* The shortest of %.15g and %.17g that reads back as v. */
static void real_text(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, n, "%.17g", v);
    if (!strpbrk(buf, ".eEn"))   /* keep it a real, as json_real writes it */
        snprintf(buf + strlen(buf), n - strlen(buf), ".0");
}

int plan_fix_text(const char *text, const struct plan_hazard_set *hz, int64_t sub_group_size, double ratio,
                  char **out, struct rl_err *e)
{
    *out = NULL;
    json_error_t je;
    char *relaxed;
    RL_TRY(plan_json_relax(text, &relaxed, NULL, e));
    json_t *want = json_loads(relaxed, JSON_REJECT_DUPLICATES, &je);
    free(relaxed);
    if (!json_is_object(want)) {
        json_decref(want);
        return rl_errf(e, RL_EINVAL, "ds_config: cannot be rewritten: line %d: %s", je.line, je.text);
    }
    const bool has_off = json_is_object(json_object_get(json_object_get(want, "zero_optimization"), "offload_optimizer"));
    const bool has_params = json_is_object(json_object_get(json_object_get(want, "optimizer"), "params"));
    const bool has_zo = json_is_object(json_object_get(want, "zero_optimization"));
    plan_hazards_fix_json(want, hz);
    plan_zero_fix_json(want, sub_group_size, ratio);
    char *t = strdup(text);
    if (!t) {
        json_decref(want);
        return rl_errf(e, RL_ENOMEM, "ds_config: out of memory");
    }
    int rc = 0;
    for (int i = 0; i < hz->n && !rc; i++) {
        const char *id = hz->h[i]->id;
        if (!strcmp(id, "nvme-ratio") && has_off)
            rc = plan_json_text_set(&t, (const char *[]){"zero_optimization", "offload_optimizer", "device"}, 3,
                                    "\"cpu\"", e);
        else if (!strncmp(id, "stage-", 6) && has_zo)
            rc = plan_json_text_set(&t, (const char *[]){"zero_optimization", "stage"}, 2, "3", e);
        else if (!strcmp(id, "torch-adam") && has_params)
            rc = plan_json_text_del(&t, (const char *[]){"optimizer", "params", "torch_adam"}, 3, e);
    }
    char num[64], blk[160];
    if (!rc && sub_group_size > 0) {
        snprintf(num, sizeof num, "%lld", (long long)sub_group_size);
        rc = plan_json_text_set(&t, (const char *[]){"zero_optimization", "sub_group_size"}, 2, num, e);
    }
    if (!rc && ratio >= 0) {
        real_text(num, sizeof num, ratio);
        if (has_off) {
            rc = plan_json_text_set(&t, (const char *[]){"zero_optimization", "offload_optimizer", "ratio"}, 3, num, e);
        } else {
            snprintf(blk, sizeof blk, "{\"device\": \"cpu\", \"ratio\": %s}", num);
            rc = plan_json_text_set(&t, (const char *[]){"zero_optimization", "offload_optimizer"}, 2, blk, e);
        }
    }
    /* The edits must give exactly the document the parsed fix gives. */
    json_t *got = NULL;
    if (!rc && !(rc = plan_json_relax(t, &relaxed, NULL, e))) {
        got = json_loads(relaxed, JSON_REJECT_DUPLICATES, &je);
        free(relaxed);
    }
    if (!rc && !json_equal(got, want))
        rc = rl_errf(e, RL_EINTERNAL, "ds_config: the text edits do not give the fixed config");
    json_decref(got);
    json_decref(want);
    if (rc) {
        free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* Is every real in the document reproduced by %.15g? Then dump with 15 digits, so values users
 * typed (0.1, 5e-7) stay as typed; else 17, which always round-trips. */
static bool reals_short(const json_t *j)
{
    if (json_is_real(j)) {
        char buf[40];
        snprintf(buf, sizeof buf, "%.15g", json_real_value(j));
        return strtod(buf, NULL) == json_real_value(j);
    }
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) if (!reals_short(v)) return false;
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) if (!reals_short(v)) return false;
    }
    return true;
}

int plan_fix_config(const char *text, const char *what, const struct plan_hazard_set *hz, int64_t sub_group_size,
                    double ratio, char **out, struct rl_err *e)
{
    *out = NULL;
    /* The fix as edits of the text: the rest of the file byte for byte, so its diff is the fix. */
    struct rl_err fe = {0};
    if (plan_fix_text(text, hz, sub_group_size, ratio, out, &fe) == 0)
        return 0;
    /* Else (a text the edits cannot place) the parsed config, fixed and written out whole. */
    json_error_t je;
    char *relaxed;
    RL_TRY(plan_json_relax(text, &relaxed, NULL, e));
    json_t *root = json_loads(relaxed, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    free(relaxed);
    if (!root)
        return rl_errf(e, RL_EINVAL, "fix: %s cannot be rewritten: line %d: %s", what, je.line, je.text);
    plan_hazards_fix_json(root, hz);
    plan_zero_fix_json(root, sub_group_size, ratio);
    size_t flags = JSON_INDENT(4) | JSON_REAL_PRECISION(reals_short(root) ? 15 : 17);
    char *dumped = json_dumps(root, flags);
    json_decref(root);
    size_t n = dumped ? strlen(dumped) : 0;
    *out = dumped ? malloc(n + 2) : NULL;
    if (*out) {
        memcpy(*out, dumped, n);
        memcpy(*out + n, "\n", 2);
    }
    free(dumped);
    if (!*out)
        return rl_errf(e, RL_EINTERNAL, "fix: %s: the fixed JSON could not be encoded", what);
    return 0;
}

int plan_fix_write(const char *text, const char *what, const struct plan_hazard_set *hz, int64_t sub_group_size,
                   double ratio, const char *dst, struct rl_err *e)
{
    char *fixed = NULL;
    RL_TRY(plan_fix_config(text, what, hz, sub_group_size, ratio, &fixed, e));
    struct rl_outfile o;
    int rc = rl_outfile_open(&o, dst, e);
    if (!rc) {
        fputs(fixed, o.fp);
        rc = rl_outfile_commit(&o, e);
    }
    free(fixed);
    return rc ? rl_err_prefix(e, "fix_to") : 0;
}
