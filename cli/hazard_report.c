/* cli/hazard_report.c — DeepSpeed hazards as lines and JSON (see hazard_report.h). */
#include <string.h>

#include "cli/hazard_report.h"

static bool fails(const struct plan_hazard *h, bool strict) { return strict || h->kind != PLAN_HAZARD_SUSPECT; }

void cli_hazards_find(struct cli_hazards *hz, struct plan_zero *z, bool strict)
{
    hz->n = plan_ds_hazards(z, hz->h, PLAN_HAZARDS_MAX);
    hz->n_fail = 0;
    for (int i = 0; i < hz->n; i++)
        hz->n_fail += fails(hz->h[i], strict);
    hz->n_repaired = plan_ds_hazards_assume_fixed(z);
}

void cli_hazards_print(FILE *out, const struct cli_hazards *hz, const struct plan_zero *z, bool strict,
                       const char *fail_prefix, const char *warn_prefix)
{
    char line[1024];
    for (int i = 0; i < hz->n; i++) {
        const char *prefix = fails(hz->h[i], strict) ? fail_prefix : warn_prefix;
        if (!prefix)
            continue;
        plan_hazard_line(hz->h[i], z, line, sizeof line);
        fprintf(out, "%s%s\n", prefix, line);
    }
}

json_t *cli_hazards_json(const struct cli_hazards *hz, const struct plan_zero *z, bool strict)
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
        json_object_set_new(o, "fails", json_boolean(fails(h, strict)));
        json_object_set_new(o, "line", json_string(line));
        json_array_append_new(arr, o);
    }
    return arr;
}

static bool fixable(const struct plan_hazard *h)
{
    return !strcmp(h->id, "nvme-ratio") || !strncmp(h->id, "stage-", 6) || !strcmp(h->id, "torch-adam");
}

int cli_hazards_fixable(const struct cli_hazards *hz)
{
    int n = 0;
    for (int i = 0; i < hz->n; i++)
        n += fixable(hz->h[i]);
    return n;
}

int cli_hazards_fix_json(json_t *root, const struct cli_hazards *hz)
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
