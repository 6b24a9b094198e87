/* cli/cmd_catalog.c — `ratiolab catalog`: list the model presets and hardware profiles. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum { OPT_CATALOG = 1 };
static const struct cli_opt opts[] = {
    {"catalog", "DIR", "catalog directory (default: found next to the binary, or $RATIOLAB_CATALOG)", OPT_CATALOG},
    {NULL, NULL, NULL, 0},
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    (void)e;
    if (id == OPT_CATALOG)
        *(const char **)ctx = v;
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int list_dir(const char *dir, const char *sub)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "ratiolab catalog: %s: cannot open (is --catalog right?)\n", path);
        return 2;
    }
    char *names[512];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 512) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0)
            names[n++] = strndup(de->d_name, len - 5);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp);
    printf("%s (%s):\n", sub, path);
    for (int i = 0; i < n; i++) {
        printf("  %s\n", names[i]);
        free(names[i]);
    }
    return 0;
}

static int run(int argc, char **argv)
{
    const char *dir = NULL;
    struct cli_optset set = {"options", opts, on_opt, &dir};
    int rc = cli_command_parse("catalog", argc, argv, "ratiolab catalog [--catalog DIR]",
                               "Lists the model presets (--model NAME) and hardware profiles (--hw NAME).", &set, 1);
    if (rc >= 0)
        return rc;
    if (!dir)
        dir = rl_catalog_dir();
    rc = list_dir(dir, "models");
    return rc ? rc : list_dir(dir, "hardware");
}

const struct cli_cmd cli_cmd_catalog = {"catalog", "list model presets and hardware profiles", run};
