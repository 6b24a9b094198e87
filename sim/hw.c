/* sim/hw.c — hardware profiles as the simulator loads them: by name from the catalog or by path,
 * parsed through hw/'s key table (hw/hw.h) with the first-touch model resolved (sim/hw_host.c). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>   /* strcasecmp */

#include "sim/hw.h"

int sim_hw_parse(struct hw_profile *hw, const char *text, const char *what, struct rl_err *e)
{
    return hw_parse(hw, text, what, sim_hw_host_resolve, e);
}

int sim_hw_load(struct hw_profile *hw, const char *catalog_dir, const char *name_or_path,
                struct rl_err *e)
{
    char path[4096];
    size_t n = strlen(name_or_path);
    if (strchr(name_or_path, ','))
        return rl_errf(e, RL_EINVAL, "hw: '%s' names several profiles; this command takes one (tune compares "
                       "several side by side)", name_or_path);
    bool is_path = strchr(name_or_path, '/') || (n > 5 && strcmp(name_or_path + n - 5, ".json") == 0);
    if (is_path)
        snprintf(path, sizeof path, "%s", name_or_path);
    else
        snprintf(path, sizeof path, "%s/hardware/%s.json", catalog_dir ? catalog_dir : ".", name_or_path);
    char *text;
    size_t len;
    struct rl_err fe;
    if (rl_read_file(path, &text, &len, &fe)) {
        if (is_path)
            return rl_errf(e, RL_EINVAL, "hw: %s: cannot read it (%s)", path, fe.msg);
        char **names;
        int k;
        char list[512] = "", hint[96] = "", canon[128] = "";
        if (sim_hw_list(catalog_dir, &names, &k, NULL) == 0) {
            const char *near = rl_nearest(name_or_path, (const char *const *)names, k);
            if (near)
                snprintf(hint, sizeof hint, "; did you mean '%s'?", near);
            for (int i = 0; i < k; i++) {
                size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", names[i]);
                if (strcasecmp(names[i], name_or_path) == 0)   /* names match without regard to case */
                    snprintf(canon, sizeof canon, "%s", names[i]);
                free(names[i]);
            }
            free(names);
        }
        if (canon[0])
            return sim_hw_load(hw, catalog_dir, canon, e);
        return rl_errf(e, RL_EINVAL, "hw: %s: no such profile in %s/hardware%s (allowed: %s, or a "
                       "path to a profile file)", name_or_path, catalog_dir ? catalog_dir : ".", hint, list);
    }
    int rc = sim_hw_parse(hw, text, path, e);
    free(text);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sim_hw_list(const char *catalog_dir, char ***names, int *n, struct rl_err *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware", catalog_dir ? catalog_dir : ".");
    DIR *d = opendir(path);
    if (!d)
        return rl_errf(e, RL_ENOENT, "hw: %s: cannot open the profile folder", path);
    int cap = 0, k = 0;
    char **v = NULL;
    (void)rl_grow(&v, &cap, sizeof *v, 1, 16);   /* v stays NULL on failure: reported below */
    struct dirent *de;
    while (v && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        if (rl_grow(&v, &cap, sizeof *v, k + 1, 16))
            break;
        v[k++] = strndup(de->d_name, len - 5);
    }
    closedir(d);
    if (!v)
        return rl_errf(e, RL_ENOMEM, "hw: out of memory");
    qsort(v, (size_t)k, sizeof *v, cmp_str);
    *names = v;
    *n = k;
    return 0;
}

void sim_hw_use_rank_threads(struct hw_profile *hw, int ranks, int threads)
{
    int per[HW_MAX_SOCKETS] = {0};
    for (int g = 0; g < ranks && g < hw->gpus && g < HW_MAX_GPUS; g++) {
        int sw = hw->gpu_switch[g];
        int k = sw >= 0 ? hw->sw[sw].socket : 0;
        if (k >= 0 && k < hw->n_sockets)
            per[k]++;
    }
    for (int k = 0; k < hw->n_sockets; k++) {
        int c = per[k] * (threads > 0 ? threads : 1);
        hw->socket[k].cores = c > 0 ? c : 1;
    }
}
