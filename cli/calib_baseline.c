/* cli/calib_baseline.c — `ratiolab calibrate --host-baseline-from RUN.csv`: a profile whose
 * node.host_baseline_bytes_per_rank is taken from a `ratiolab monitor --csv` file of a real run
 * (calib/baseline.h says how), written over the --hw profile. The CSV is read by
 * validation/monitor_csv.c (the reader `validate --monitor` uses). */
#include <stdlib.h>
#include <string.h>

#include "cli/calib_baseline.h"
#include "cli/cli.h"
#include "calib/baseline.h"
#include "sim/hw.h"
#include "validation/val.h"

enum { B_FROM = 1, B_HW, B_OUT, B_NAME };
static const struct cli_opt opts[] = {
    {"host-baseline-from", "FILE.csv", "a ratiolab monitor --csv file of a real run of --model with --ds-config", B_FROM},
    {"hw", "NAME|FILE", "the profile to write the baseline into (catalog name or file; default dgx1-v100)", B_HW},
    {"out", "FILE", "write the profile here (default: <name>.json)", B_OUT},
    {"name", "NAME", "profile name (default: the --hw profile's name with -baseline)", B_NAME},
    {NULL, NULL, NULL, 0},
};

struct baseline_args {
    const char *csv;   /* --host-baseline-from */
    const char *hw;    /* --hw */
    const char *out;   /* --out */
    const char *name;  /* --name */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct baseline_args *a = ctx;
    switch (id) {
    case B_FROM: a->csv = v; return 0;
    case B_HW: a->hw = v; return 0;
    case B_OUT: a->out = v; return 0;
    case B_NAME: a->name = v; return 0;
    }
    return rl_errf(e, RL_EINTERNAL, "option id %d not handled", id);
}

bool cli_calib_baseline_asked(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--host-baseline-from") == 0 || strncmp(argv[i], "--host-baseline-from=", 21) == 0)
            return true;
    return false;
}

/* The profile file named by --hw (a catalog name resolves to catalog/hardware/<name>.json, with the
 * name as the loaded profile spells it). */
static void profile_path(const struct baseline_args *a, const struct plan_setup *c, const struct hw_profile *hw,
                         char *path, size_t n)
{
    size_t l = strlen(a->hw);
    if (strchr(a->hw, '/') || (l > 5 && strcmp(a->hw + l - 5, ".json") == 0))
        snprintf(path, n, "%s", a->hw);
    else
        snprintf(path, n, "%s/hardware/%s.json", c->catalog ? c->catalog : ".", hw->name);
}

int cli_calib_baseline(int argc, char **argv)
{
    struct baseline_args a = {.hw = "dgx1-v100"};
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct cli_optset sets[] = {
        {"host baseline options", opts, on_opt, &a},
        {"the run's model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
    };
    int rc = cli_command_parse("calibrate", argc, argv,
        "ratiolab calibrate --host-baseline-from RUN.csv --model NAME --ds-config FILE [--gpus N] [--hw NAME|FILE] [--out FILE]",
        "Writes a profile whose node.host_baseline_bytes_per_rank (the host memory of one training\n"
        "process beyond its model states: PyTorch, the CUDA runtime, NCCL, DeepSpeed, data-loader\n"
        "workers) is taken from a real run that `ratiolab monitor --csv RUN.csv -- <launcher> ...`\n"
        "followed: per rank, the peak resident set of its processes (the rank and the workers it\n"
        "forks, which carry its RANK), less the host tensors the ledger puts on a rank for that\n"
        "run's --model and --ds-config (and layout); the largest over the ranks. Everything else is\n"
        "the --hw profile's, and the figure is sourced with the file, the rank and the arithmetic.\n"
        "Use the profile with --hw FILE in predict, tune and check.", sets, 2);
    if (rc != CLI_GO_ON)
        return rc;
    struct rl_err e = {0};
    if (!a.csv || !a.csv[0]) {
        rl_errf(&e, RL_EINVAL, "--host-baseline-from: empty; allowed: a ratiolab monitor --csv file");
        return cli_fail("calibrate", &e);
    }
    if (!s.model && !s.megatron_args && !s.megatron_args_file) {
        rl_errf(&e, RL_EINVAL, "--host-baseline-from: needs the run's --model (or --megatron-args) and --ds-config: "
                "the host tensors the ledger puts on a rank are taken out of the measured peak");
        return cli_fail("calibrate", &e);
    }
    if (!s.ds_config) {
        rl_errf(&e, RL_EINVAL, "--host-baseline-from: needs the run's --ds-config (its offload settings decide the "
                "host tensors taken out of the measured peak)");
        return cli_fail("calibrate", &e);
    }
    struct val_monitor mon = {0};
    struct plan_setup c;
    memset(&c, 0, sizeof c);
    struct plan p;
    memset(&p, 0, sizeof p);
    struct hw_profile hw;
    struct calib_mon_rank *ranks = NULL;
    char *base = NULL, *text = NULL;
    size_t len;
    char path[4096], name[128], out[4096], what[400], source[1600];
    struct calib_baseline b;
    if ((rc = cli_setup_resolve(&s, &c, &e)) || (rc = plan_setup_plan(&c, -1, &p, &e)))
        goto fail;
    if ((rc = sim_hw_load(&hw, c.catalog, a.hw, &e))) {
        cli_err_flag(&e, "hw", "--hw");
        goto fail;
    }
    profile_path(&a, &c, &hw, path, sizeof path);
    if ((rc = rl_read_file(path, &base, &len, &e))) {
        rl_err_prefix(&e, "--hw");
        goto fail;
    }
    snprintf(name, sizeof name, "%s", a.name ? a.name : "");
    if (!a.name)
        snprintf(name, sizeof name, "%.100s-baseline", hw.name);
    for (const unsigned char *q = (const unsigned char *)name; *q; q++)
        if (*q < 0x20 || *q == 0x7f) {
            rc = rl_errf(&e, RL_EINVAL, "--name: a control character (0x%02x); allowed: printable text", *q);
            goto fail;
        }
    snprintf(out, sizeof out, "%s", a.out ? a.out : "");
    if (!a.out)
        snprintf(out, sizeof out, "%s.json", name);
    if ((rc = rl_outfile_check(out, &e))) {
        cli_err_flag(&e, "output", "--out");
        goto fail;
    }
    if ((rc = val_monitor_read(a.csv, &mon, &e))) {
        cli_err_flag(&e, "monitor_csv", "--host-baseline-from");
        goto fail;
    }
    ranks = calloc((size_t)mon.n_ranks + 1, sizeof *ranks);
    if (!ranks) {
        rc = rl_errf(&e, RL_ENOMEM, "calibrate: out of memory");
        goto fail;
    }
    int n_ranks = 0;
    for (int i = 0; i < mon.n_ranks; i++)
        ranks[n_ranks++] = (struct calib_mon_rank){.rank = mon.ranks[i].rank, .procs = mon.ranks[i].procs,
                                                   .peak_rss_bytes = val_monitor_rank_peak(&mon.ranks[i])};
    if (n_ranks == 0) {   /* no process carries a rank: the largest stands for one */
        const struct val_mon_proc *big = val_monitor_rank(&mon, 0);
        if (big)
            ranks[n_ranks++] = (struct calib_mon_rank){.rank = -1, .procs = 1, .peak_rss_bytes = big->peak_rss_bytes};
    }
    const int64_t tensors = plan_peak_cpu_bytes(&p);
    if ((rc = calib_baseline_of(ranks, n_ranks, tensors, a.csv, &b, &e))) {
        cli_err_flag(&e, "monitor_csv", "--host-baseline-from");
        goto fail;
    }
    if (c.zero.offload == PLAN_OFFLOAD_NONE)
        snprintf(what, sizeof what, "%s, no optimizer offload", c.model_desc);
    else
        snprintf(what, sizeof what, "%s, optimizer offload to the CPU at ratio %.2f", c.model_desc, c.zero.ratio);
    calib_baseline_source(&b, a.csv, what, source, sizeof source);
    if ((rc = calib_baseline_profile(base, name, &b, source, &text, &e))) {
        rl_err_prefix(&e, "--hw %s", path);
        goto fail;
    }
    struct hw_profile check; /* the profile must load as --hw FILE will load it */
    if ((rc = sim_hw_parse(&check, text, out, &e))) {
        rl_err_prefix(&e, "calibrate: the written profile does not load");
        goto fail;
    }
    struct rl_outfile of;
    if ((rc = rl_outfile_open(&of, out, &e)))
        goto fail;
    fprintf(of.fp, "%s\n", text);
    if ((rc = rl_outfile_commit(&of, &e)))
        goto fail;
    char g[4][32];
    if (b.rank < 0)
        printf("run        %s: no process carries RANK; its largest process peaked at %s GiB resident\n", a.csv,
               cli_gib(g[0], sizeof g[0], b.rss_bytes));
    else
        printf("run        %s: %d rank%s; rank %d peaked highest, at %s GiB resident over its %d process%s\n", a.csv,
               b.n_ranks, b.n_ranks == 1 ? "" : "s", b.rank, cli_gib(g[0], sizeof g[0], b.rss_bytes), b.n_procs,
               b.n_procs == 1 ? "" : "es");
    printf("tensors    %s GiB of host tensors per rank in the ledger (%s)\n", cli_gib(g[1], sizeof g[1], tensors), what);
    printf("baseline   %s GiB per rank (over the ranks %s-%s GiB); --hw %s had %s GiB\n",
           cli_gib(g[2], sizeof g[2], b.bytes_per_rank), cli_gib(g[3], sizeof g[3], b.min_bytes_per_rank), g[2],
           hw.name, cli_gib(g[0], sizeof g[0], hw.host_baseline_bytes));
    printf("profile    %s (use: --hw %s)\n", out, out);
fail:
    free(text);
    free(base);
    free(ranks);
    val_monitor_free(&mon);
    plan_free(&p);
    plan_setup_free(&c);
    return rc ? cli_fail("calibrate", &e) : 0;
}
