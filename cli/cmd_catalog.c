/* cli/cmd_catalog.c — `ratiolab catalog`: the model presets with their parameter counts and
 * model-state bytes, the hardware profiles with their GPUs and memories, and `--hw NAME --json`
 * to start a custom profile from one that exists. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "sim/hw.h"

/* Mixed-precision Adam keeps per parameter: bf16 weights (2 B) and gradients (2 B), fp32 master
 * weights, momentum and variance (12 B): 16 B (ZeRO paper, Rajbhandari et al. 2020, section 3.1). */
#define STATE_BYTES_PER_PARAM 16
#define WEIGHT_BYTES_PER_PARAM 2

enum { OPT_CATALOG = 1, OPT_HW, OPT_JSON };
static const struct cli_opt opts[] = {
    {"catalog", "DIR", "catalog directory (default: found next to the binary, or $RATIOLAB_CATALOG)", OPT_CATALOG},
    {"hw", "NAME|FILE", "with --json: print this hardware profile, to start a custom one from it", OPT_HW},
    {"json", NULL, "machine-readable output", OPT_JSON},
    {NULL, NULL, NULL, 0},
};

struct catalog_args {
    const char *dir;   /* --catalog */
    const char *hw;    /* --hw */
    bool json;         /* --json */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    (void)e;
    struct catalog_args *a = ctx;
    switch (id) {
    case OPT_CATALOG: a->dir = v; return 0;
    case OPT_HW: a->hw = v; return 0;
    case OPT_JSON: a->json = true; return 0;
    }
    return RL_EINTERNAL;
}

static double gib(int64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

/* One row per model preset (Megatron presets at TP 1, PP 1: the whole model). */
static int models(const char *dir, json_t *arr, struct rl_err *e)
{
    char **names;
    int n, rc;
    if ((rc = plan_model_list(dir, &names, &n, e)))
        return rc;
    if (!arr)
        printf("models (%s/models; model states = %d B/param: bf16 weights and gradients, fp32 master "
               "and Adam moments)\n  %-14s %-13s %16s %12s %12s %8s\n", dir, STATE_BYTES_PER_PARAM, "name", "kind",
               "parameters", "bf16 GiB", "states GiB", "seq");
    for (int i = 0; i < n && !rc; i++) {
        struct plan_model m;
        struct plan_model_opts o = {1, 1, 0, 0};
        if ((rc = plan_model_load(&m, dir, names[i], &o, e))) {
            cli_err_flag(e, "model", "--model");
            break;
        }
        int64_t p = m.total_numel;
        if (arr) {
            json_t *j = json_object();
            json_object_set_new(j, "name", json_string(names[i]));
            json_object_set_new(j, "kind", json_string(plan_arch_name(m.arch.kind)));
            json_object_set_new(j, "parameters", json_integer(p));
            json_object_set_new(j, "bf16_weight_bytes", json_integer(p * WEIGHT_BYTES_PER_PARAM));
            json_object_set_new(j, "model_state_bytes", json_integer(p * STATE_BYTES_PER_PARAM));
            json_object_set_new(j, "seq_len", json_integer(m.arch.seq_len));
            json_array_append_new(arr, j);
        } else {
            printf("  %-14s %-13s %16lld %12.2f %12.2f %8lld\n", names[i], plan_arch_name(m.arch.kind), (long long)p,
                   gib(p * WEIGHT_BYTES_PER_PARAM), gib(p * STATE_BYTES_PER_PARAM), (long long)m.arch.seq_len);
        }
        plan_model_free(&m);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

static int hardware(const char *dir, json_t *arr, struct rl_err *e)
{
    char **names;
    int n, rc;
    if ((rc = sim_hw_list(dir, &names, &n, e)))
        return rc;
    if (!arr)
        printf("\nhardware (%s/hardware; GiB = 1024^3 B)\n  %-14s %5s %-20s %12s %14s  %s\n", dir, "name", "GPUs",
               "GPU", "GPU mem GiB", "host mem GiB", "CPU");
    for (int i = 0; i < n && !rc; i++) {
        struct hw_profile hw;
        if ((rc = sim_hw_load(&hw, dir, names[i], e)))
            break;
        if (arr) {
            json_t *j = json_object();
            json_object_set_new(j, "name", json_string(names[i]));
            json_object_set_new(j, "gpus_per_node", json_integer(hw.gpus));
            json_object_set_new(j, "gpu_model", json_string(hw.gpu_model));
            json_object_set_new(j, "gpu_mem_bytes", json_integer(hw.gpu_mem_bytes));
            json_object_set_new(j, "host_mem_bytes", json_integer(hw.host_mem_bytes));
            json_object_set_new(j, "cpu_model", json_string(hw.cpu_model));
            int cores = 0;
            for (int k = 0; k < hw.n_sockets; k++)
                cores += hw.socket[k].cores;
            json_object_set_new(j, "cpu_cores", json_integer(cores));
            json_array_append_new(arr, j);
        } else {
            int cores = 0;
            for (int k = 0; k < hw.n_sockets; k++)
                cores += hw.socket[k].cores;
            printf("  %-14s %5d %-20s %12.2f %14.2f  %s%s%d cores\n", names[i], hw.gpus, hw.gpu_model, gib(hw.gpu_mem_bytes),
                   gib(hw.host_mem_bytes), hw.cpu_model, hw.cpu_model[0] ? ", " : "", cores);
        }
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* The profile file itself, after checking that it loads: the start of a custom profile. */
static int print_profile(const char *dir, const char *name, struct rl_err *e)
{
    struct hw_profile hw;
    int rc = sim_hw_load(&hw, dir, name, e);
    if (rc)
        return rc;
    size_t len = strlen(name);
    bool is_path = strchr(name, '/') || (len > 5 && strcmp(name + len - 5, ".json") == 0);
    char path[4200];
    if (is_path)
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "%s/hardware/%s.json", dir, name);
    char *text;
    if ((rc = rl_read_file(path, &text, NULL, e)))
        return rc;
    fputs(text, stdout);
    if (text[0] && text[strlen(text) - 1] != '\n')
        fputc('\n', stdout);
    free(text);
    return 0;
}

static int run(int argc, char **argv)
{
    struct catalog_args a = {0};
    struct cli_optset set = {"options", opts, on_opt, &a};
    int rc = cli_command_parse("catalog", argc, argv, "ratiolab catalog [--json] [--hw NAME --json] [--catalog DIR]",
                               "Lists the model presets (--model NAME) with their parameter count and the bytes of\n"
                               "their model states (bf16 mixed precision with Adam: 16 B per parameter, all ranks\n"
                               "together), and the hardware profiles (--hw NAME) with GPUs per node, GPU memory and host\n"
                               "memory. --hw NAME --json prints that profile: save it, edit it, pass it as --hw FILE.",
                               &set, 1);
    if (rc != CLI_GO_ON)
        return rc;
    const char *dir = a.dir ? a.dir : rl_catalog_dir();
    struct rl_err e = {0};
    if (a.hw && !a.json) {
        rl_errf(&e, RL_EINVAL, "--hw: needs --json (catalog --hw NAME --json prints the profile)");
        return cli_fail("catalog", &e);
    }
    if (a.hw) {
        if ((rc = print_profile(dir, a.hw, &e)))
            return cli_fail("catalog", &e);
        return 0;
    }
    json_t *root = a.json ? json_object() : NULL;
    json_t *ms = a.json ? json_array() : NULL, *hs = a.json ? json_array() : NULL;
    rc = models(dir, ms, &e);
    if (!rc)
        rc = hardware(dir, hs, &e);
    if (rc) {
        json_decref(ms);
        json_decref(hs);
        json_decref(root);
        return cli_fail("catalog", &e);
    }
    if (root) {
        json_object_set_new(root, "models", ms);
        json_object_set_new(root, "hardware", hs);
        cli_json_dumpf(cli_json_versioned(root), stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(root);
    }
    return 0;
}

const struct cli_cmd cli_cmd_catalog = {"catalog", "model presets (parameters, model-state bytes) and hardware profiles", run};
