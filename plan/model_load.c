/* plan/model_load.c — --model NAME|FILE: a preset from <catalog>/models/<name>.json, or a path to
 * a preset file or a Hugging Face config.json.
 *
 * A file with "model_type" is read as a HF config.json (gpt2, t5, llama, opt); a file with
 * "framework": "megatron" as a Megatron preset (Megatron argument names, '_' for '-'). A name
 * without '/' and without a ".json" suffix is a preset name. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "plan/model_impl.h"
#include "plan/plan.h"

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int plan_model_list(const char *catalog_dir, char ***names, int *n, struct rl_err *e)
{
    *names = NULL;
    *n = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/models", catalog_dir ? catalog_dir : ".");
    DIR *d = opendir(path);
    if (!d)
        return rl_errf(e, RL_ENOENT, "catalog: %s: cannot open the model presets folder (is "
                       "the catalog directory or $RATIOLAB_CATALOG right?)", path);
    char **v = NULL;
    int cnt = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0 || de->d_name[0] == '.')
            continue;
        if (rl_grow(&v, &cap, sizeof *v, cnt + 1, 16))
            goto nomem;
        if (!(v[cnt] = strndup(de->d_name, len - 5)))
            goto nomem;
        cnt++;
    }
    closedir(d);
    qsort(v, (size_t)cnt, sizeof *v, cmp_names);
    *names = v;
    *n = cnt;
    return 0;
nomem:
    closedir(d);
    for (int i = 0; i < cnt; i++)
        free(v[i]);
    free(v);
    return rl_errf(e, RL_ENOMEM, "catalog: out of memory listing %s", path);
}

/* Error for an unknown preset: names the preset and lists the available ones. */
static int unknown_preset(const char *catalog_dir, const char *name, struct rl_err *e)
{
    char **names;
    int n;
    struct rl_err le = {0};
    if (plan_model_list(catalog_dir, &names, &n, &le))
        return rl_errf(e, RL_ENOENT, "model: '%s' is not a preset (%s)", name, le.msg);
    char list[RL_ERR_MSG_MAX / 2] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
        if (w > 0 && (size_t)w < sizeof list - used)
            used += (size_t)w;
        free(names[i]);
    }
    free(names);
    return rl_errf(e, RL_ENOENT, "model: '%s' is not a preset; available: %s (or a path to a "
                   "config.json)", name, n ? list : "none");
}

int plan_model_load(struct plan_model *m, const char *catalog_dir, const char *name_or_path,
                    const struct plan_model_opts *o, struct rl_err *e)
{
    plan__model_init(m, "");
    if (!name_or_path || !*name_or_path)
        return rl_errf(e, RL_EINVAL, "model: empty; expected a preset name or a path to a "
                       "config.json");
    struct plan_model_opts opts = {1, 1, 0, 0};
    if (o)
        opts = *o;
    if (opts.tp <= 0)
        opts.tp = 1;
    if (opts.pp <= 0)
        opts.pp = 1;
    if (opts.seq_len < 0)
        return rl_errf(e, RL_EINVAL, "seq_len: %lld; expected a positive length",
                       (long long)opts.seq_len);

    size_t len = strlen(name_or_path);
    bool is_path = strchr(name_or_path, '/') || (len > 5 && strcmp(name_or_path + len - 5, ".json") == 0);
    char path[4096];
    const char *base;
    if (is_path) {
        snprintf(path, sizeof path, "%s", name_or_path);
        const char *slash = strrchr(name_or_path, '/');
        base = slash ? slash + 1 : name_or_path;
    } else {
        snprintf(path, sizeof path, "%s/models/%s.json", catalog_dir ? catalog_dir : ".", name_or_path);
        base = name_or_path;
    }
    char *text = NULL;
    int rc = rl_read_file(path, &text, NULL, e);
    if (rc) {
        if (rc == RL_ENOENT && !is_path)
            return unknown_preset(catalog_dir, name_or_path, e);
        return rl_err_prefix(e, "model");
    }
    rc = plan_model_parse(m, text, is_path ? path : name_or_path, &opts, e);   /* a preset by its name */
    free(text);
    if (rc == 0)
        snprintf(m->name, sizeof m->name, "%s", base);
    return rc;
}

int plan_model_parse(struct plan_model *m, const char *text, const char *path,
                     const struct plan_model_opts *o, struct rl_err *e)
{
    plan__model_init(m, "");
    struct plan_model_opts opts = {1, 1, 0, 0};
    if (o)
        opts = *o;
    if (opts.tp <= 0)
        opts.tp = 1;
    if (opts.pp <= 0)
        opts.pp = 1;
    int rc;
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    if (!root)
        return rl_errf(e, RL_EINVAL, "model: %s: not valid JSON at line %d: %s", path, je.line, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return rl_errf(e, RL_EINVAL, "model: %s: expected a JSON object", path);
    }
    const char *framework = NULL;
    rc = plan__json_str(root, path, "framework", NULL, &framework, e);
    if (rc == 0) {
        if (json_object_get(root, "model_type"))
            rc = plan__hf_from_json(m, root, path, &opts, e);
        else if (framework && strcmp(framework, "megatron") == 0)
            rc = plan__megatron_from_json(m, root, path, &opts, e);
        else if (framework)
            rc = rl_errf(e, RL_EINVAL, "%s: framework: '%s'; allowed: megatron (or a Hugging Face "
                         "config.json with model_type)", path, framework);
        else
            rc = rl_errf(e, RL_EINVAL, "%s: model_type: missing; expected a Hugging Face "
                         "config.json (model_type gpt2, t5, llama, opt) or a Megatron preset "
                         "(\"framework\": \"megatron\")", path);
    }
    json_decref(root);
    if (rc) {
        plan_model_free(m);
        return rc;
    }
    const char *slash = strrchr(path, '/');
    snprintf(m->name, sizeof m->name, "%s", slash ? slash + 1 : path);
    plan_model_group(m, PLAN_GROUPS_AUTO, false);
    return 0;
}
