/* cli/cmd_calibrate.c — `ratiolab calibrate`: measures this machine and writes a hardware profile
 * (`--hw FILE` reads it) for the emulated device of the cpu backend. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/flag_values.h"
#include "cli/json_out.h"
#include "exec/exec.h"
#include "sim/hw.h"
#include "calib/calib.h"
#include "campaign/calib_out.h"

enum { C_OUT = 1, C_NAME, C_THOROUGH, C_DEVICES, C_DEVTHREADS, C_MAXTHREADS, C_BACKEND, C_JSON, C_QUIET, C_COLL, C_BASE, C_GEMM, C_GEMM_LAST, C_LAYERS, C_ADAMN, C_CHUNKN, C_AGB, C_RSB, C_WSET, C_BASELINE };
/* Fails with --backend in place of the field a calib/ message begins with ("backend cuda: ..."). */
static int calib_fail(struct rl_err *e)
{
    cli_err_flag(e, "backend", "--backend");
    return cli_fail("calibrate", e);
}

static const struct cli_opt opts[] = {
    {"out", "FILE", "write the profile here (default: calibrated-<host>.json)", C_OUT},
    {"name", "NAME", "profile name (default: calibrated-<host>)", C_NAME},
    {"thorough", NULL, "larger arrays and more repeats (a few minutes instead of seconds)", C_THOROUGH},
    {"devices", "N", "emulated devices (ranks per node) the profile describes (default 2)", C_DEVICES},
    {"device-threads", "N", "threads of one emulated device's kernels (default: cores / devices, at least 1)", C_DEVTHREADS},
    {"max-threads", "N", "measure DRAM and CPU Adam for 1..N threads (default: the online cores)", C_MAXTHREADS},
    {"backend", "B", "cpu (the emulated device; default) or cuda (the GPUs; needs --base)", C_BACKEND},
    {"base", "NAME|FILE", "with --backend cuda: the catalog profile of this machine type, for what is not measured", C_BASE},
    {"json", NULL, "print every measured figure as JSON instead of the table", C_JSON},
    {"quiet", NULL, "no progress line", C_QUIET},
    {"collectives-only", NULL, "under mpirun: only the MPI collectives, printed as JSON by rank 0 (no profile)", C_COLL},
    {"gemm", "MxNxK[xC],...", "under mpirun: one rank's GEMM list (C times each), run on every rank at once", C_GEMM},
    {"layers", "N", "with --gemm: the list is one layer's, run as N blocks and then --gemm-last's, an all-gather of --allgather-bytes after each block (as the run's forward)", C_LAYERS},
    {"gemm-last", "MxNxK[xC],...", "with --layers: the GEMMs of the block after the layers (the logits)", C_GEMM_LAST},
    {"adam-numel", "N", "under mpirun: elements of one rank's device Adam (and of its host Adam in chunks)", C_ADAMN},
    {"chunk-numel", "N", "under mpirun: elements of one host Adam call and copy (a chunk)", C_CHUNKN},
    {"allgather-bytes", "N", "under mpirun: the run's per-rank all-gather message", C_AGB},
    {"reduce-scatter-bytes", "N", "under mpirun: the run's per-rank reduce-scatter output (fp32)", C_RSB},
    {"working-set", "BYTES", "under mpirun: a rank's model states, for a triad on every rank at once", C_WSET},
    {"host-baseline-from", "FILE.csv", "instead of measuring: a profile whose per-rank host baseline comes from a ratiolab monitor CSV of a real run (--host-baseline-from F --help)", C_BASELINE},
    {NULL, NULL, NULL, 0},
};

struct calib_args {
    const char *out;               /* --out */
    const char *name;              /* --name */
    struct calib_opts o;       /* measurement options */
    bool cuda;                     /* --backend cuda */
    bool json;                     /* --json */
    bool quiet;                    /* --quiet */
    bool coll_only;                /* --collectives-only */
    const char *base;              /* --base NAME|FILE */
    struct calib_run run;      /* --gemm, --adam-numel, ...: what one rank of a run does */
    bool have_run;                 /* any of those was given */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct calib_args *a = ctx;
    switch (id) {
    case C_OUT: a->out = v; return 0;
    case C_NAME: a->name = v; return 0;
    case C_THOROUGH: a->o.thorough = true; return 0;
    case C_DEVICES: return rl_parse_int("--devices", v, 1, HW_MAX_GPUS, &a->o.devices, e);
    case C_DEVTHREADS: return rl_parse_int("--device-threads", v, 1, 4096, &a->o.device_threads, e);
    case C_MAXTHREADS: return rl_parse_int("--max-threads", v, 1, CALIB_MAX_THREADS, &a->o.max_threads, e);
    case C_BACKEND:
    {
        enum ex_backend_kind k = EX_BACKEND_CPU;
        int rc = ex_backend_parse_named("--backend", v, &k, e);
        a->cuda = k == EX_BACKEND_CUDA;
        return rc;
    }
    case C_JSON: a->json = true; return 0;
    case C_QUIET: a->quiet = true; return 0;
    case C_COLL: a->coll_only = true; return 0;
    case C_BASE: a->base = v; return 0;
    case C_GEMM: a->have_run = true; return cli_parse_gemms("--gemm", v, false, &a->run, e);
    case C_GEMM_LAST: a->have_run = true; return cli_parse_gemms("--gemm-last", v, true, &a->run, e);
    case C_LAYERS: a->have_run = true; return rl_parse_i64("--layers", v, 1, 1000000, &a->run.layers, e);
    case C_ADAMN: a->have_run = true; return rl_parse_i64("--adam-numel", v, 1, INT64_C(1) << 32, &a->run.device_adam_numel, e);
    case C_CHUNKN: a->have_run = true; return rl_parse_i64("--chunk-numel", v, 1, INT64_C(1) << 32, &a->run.host_adam_numel, e);
    case C_AGB: a->have_run = true; return rl_parse_i64("--allgather-bytes", v, 1, INT64_C(1) << 32, &a->run.allgather_bytes, e);
    case C_RSB: a->have_run = true; return rl_parse_i64("--reduce-scatter-bytes", v, 4, INT64_C(1) << 32, &a->run.reduce_scatter_bytes, e);
    case C_WSET: a->have_run = true; return rl_parse_i64("--working-set", v, 12, INT64_C(1) << 36, &a->run.working_set_bytes, e);
    case C_BASELINE: return 0;   /* run() hands such a command line to run_baseline first */
    }
    return rl_errf(e, RL_EINTERNAL, "option id %d not handled", id);
}

static void on_progress(void *ctx, const char *what, int done, int total)
{
    (void)ctx;
    fprintf(stderr, "\rcalibrate [%2d/%2d] %-40s", done, total, what);
    if (done == total)
        fprintf(stderr, "\n");
    fflush(stderr);
}

/* The measurements across the ranks (calib_calibrate: rank 0 the node or the GPUs, then all ranks
 * the collectives and, with --gemm, --adam-numel, ..., what one rank of the run does). Returns
 * false with *code the exit status when this process ends here (an error, or a rank other than 0). */
static bool measure(struct calib_args *a, struct calib *c, struct calib_gpu *g, int *code)
{
    struct rl_err e = {0};
    if (!a->quiet)
        a->o.progress = on_progress;   /* rank 0 reports it */
    const struct calib_world_request q = {.o = &a->o, .run = a->have_run ? &a->run : NULL,
                                          .collectives_only = a->coll_only, .cuda = a->cuda};
    bool rank0;
    int rc = calib_calibrate(&q, c, g, &rank0, &e);
    *code = rc ? calib_fail(&e) : 0;
    return !rc && rank0;
}

/* --backend cuda: the GPUs (copies, D2D, Adam, cuBLAS at the --gemm shapes) and the host on rank
 * 0, then NCCL on every rank under mpirun; written over the --base profile. */
static int run_cuda(struct calib_args *a)
{
    struct rl_err e = {0};
    if (!a->base) {
        rl_errf(&e, RL_EINVAL, "--backend cuda: needs --base NAME|FILE (the catalog profile of this machine type: "
                "tensor rate, collectives and topology are taken from it)");
        return calib_fail(&e);
    }
    struct hw_profile hw;
    if (sim_hw_load(&hw, rl_catalog_dir(), a->base, &e)) {
        rl_err_prefix(&e, "--base");
        return calib_fail(&e);
    }
    a->o.devices = hw.gpus;
    a->o.gpu_host = true;   /* the host side only: no emulated-device sweeps on a GPU machine */
    static struct calib c;
    static struct calib_gpu g;
    char *text = NULL;
    int rc;
    if (!measure(a, &c, &g, &rc))
        return rc;
    char name[128], out[300];
    calib_profile_names(a->name, a->out, c.host, name, sizeof name, out, sizeof out);
    if ((rc = calib_gpu_profile_over(&c, &g, rl_catalog_dir(), a->base, name, &text, &e)) == 0)
        rc = camp_profile_write(text, out, &e);
    free(text);
    if (rc) {
        cli_err_flag(&e, "base_profile", "--base");
        cli_err_flag(&e, "base", "--base");
        return calib_fail(&e);
    }
    printf("host       %s (%s, %d cores), %s; %d x %s\n", c.host, c.cpu_model, c.cores, c.date, g.n_gpus, g.model);
    printf("  %-5s %22s %22s %22s %22s\n", "GPU", "H2D pinned GB/s", "D2H pinned GB/s", "H2D pageable GB/s",
           "D2H pageable GB/s");
    for (int d = 0; d < g.n_gpus; d++)
        printf("  %-5d %9.2f (%5.2f..%5.2f) %9.2f (%5.2f..%5.2f) %9.2f (%5.2f..%5.2f) %9.2f (%5.2f..%5.2f)\n", d,
               g.h2d_pinned_gbps[d].median, g.h2d_pinned_gbps[d].min, g.h2d_pinned_gbps[d].max,
               g.d2h_pinned_gbps[d].median, g.d2h_pinned_gbps[d].min, g.d2h_pinned_gbps[d].max,
               g.h2d_pageable_gbps[d].median, g.h2d_pageable_gbps[d].min, g.h2d_pageable_gbps[d].max,
               g.d2h_pageable_gbps[d].median, g.d2h_pageable_gbps[d].min, g.d2h_pageable_gbps[d].max);
    printf("  all GPUs at once, H2D pinned: %.2f GB/s\n  D2D (GPU 0): %.1f GB/s\n  GPU Adam (GPU 0): %.3g elements/s\n",
           g.h2d_all_gbps.median, g.d2d_gbps.median, g.adam_elems_per_s.median);
    printf("  cuBLAS (GPU 0) over %s: sgemm %.1f TFLOP/s, bf16 GemmEx %.1f TFLOP/s\n", g.gemm_shapes,
           g.sgemm_flops.median * 1e-12, g.bf16_flops.median * 1e-12);
    if (g.have_nccl) {
        printf("  NCCL, %d ranks      %12s %22s %22s\n", g.nccl_ranks, "bytes/rank", "all-gather busbw GB/s",
               "reduce-scatter busbw GB/s");
        for (int k = 0; k < g.n_nccl_sizes; k++)
            printf("  %30lld %10.2f (%5.2f..%5.2f) %10.2f (%5.2f..%5.2f)\n", (long long)g.nccl_bytes[k],
                   g.nccl_allgather_busbw_gbps[k].median, g.nccl_allgather_busbw_gbps[k].min,
                   g.nccl_allgather_busbw_gbps[k].max, g.nccl_reduce_scatter_busbw_gbps[k].median,
                   g.nccl_reduce_scatter_busbw_gbps[k].min, g.nccl_reduce_scatter_busbw_gbps[k].max);
    } else {
        printf("  NCCL collectives: not measured (run it under mpirun -np GPUS); taken from %s\n", a->base);
    }
    printf("  not measured (taken from %s): topology, peak rates\n", a->base);
    printf("\nprofile    %s (use: --hw %s)\n", out, out);
    return 0;
}

/* --collectives-only: the collectives and the run's figures as JSON, no profile. */
static int print_collectives(const struct calib *c)
{
    if (!c->have_mpi && !c->have_run) {
        struct rl_err e = {0};
        rl_errf(&e, RL_EINVAL, "--collectives-only: needs at least 2 ranks (run it under mpirun -np N) or the "
                "run's sizes (--gemm, --adam-numel, ...)");
        return calib_fail(&e);
    }
    json_t *o = calib_collectives_json(c);
    char *t = cli_json_dumps(cli_json_versioned(o), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("%s\n", t);
    free(t);
    json_decref(o);
    return 0;
}

/* The profile, to --out (default calibrated-<host>.json, named calibrated-<host>), checked to load
 * as --hw FILE will load it. Returns 0, or the exit status of a failure. */
static int write_profile(const struct calib_args *a, const struct calib *c, char *out, size_t out_size)
{
    struct rl_err e = {0};
    char name[128];
    calib_profile_names(a->name, a->out, c->host, name, sizeof name, out, out_size);
    char *text;
    if (calib_profile(c, name, &text, &e))
        return calib_fail(&e);
    int rc = camp_profile_write(text, out, &e);
    free(text);
    return rc ? calib_fail(&e) : 0;
}

/* The table: every figure with its spread, and where the profile went. */
static void print_table(const struct calib *c, const char *out)
{
    printf("host       %s (%s, %d cores, %.1f GiB), %s, CPU Adam kernel %s\n", c->host, c->cpu_model, c->cores,
           (double)c->host_mem_bytes / RL_GIB, c->date, c->isa);
    printf("\n  %-8s %22s %30s\n", "threads", "DRAM triad GB/s", "CPU Adam G elements/s");
    for (int t = 0; t < c->n_threads; t++)
        printf("  %-8d %8.2f (%6.2f..%6.2f) %12.3f (%6.3f..%6.3f)\n", t + 1, c->dram_gbps[t].median,
               c->dram_gbps[t].min, c->dram_gbps[t].max, c->adam_elems_per_s[t].median * 1e-9,
               c->adam_elems_per_s[t].min * 1e-9, c->adam_elems_per_s[t].max * 1e-9);
    printf("\n  copy thread              %8.2f GB/s (%.2f..%.2f)\n", c->copy_gbps.median, c->copy_gbps.min,
           c->copy_gbps.max);
    printf("  %d copy threads at once   %8.2f GB/s (%.2f..%.2f)\n", c->devices, c->copy_all_gbps.median,
           c->copy_all_gbps.min, c->copy_all_gbps.max);
    printf("  device Adam (%d thr)      %8.3f G elements/s (%.3f..%.3f)\n", c->device_threads,
           c->device_adam_elems_per_s.median * 1e-9, c->device_adam_elems_per_s.min * 1e-9,
           c->device_adam_elems_per_s.max * 1e-9);
    if (c->gemm_flops.median > 0)
        printf("  device GEMM %4d^3        %8.1f GFLOP/s (%.1f..%.1f)\n", c->gemm_n, c->gemm_flops.median * 1e-9,
               c->gemm_flops.min * 1e-9, c->gemm_flops.max * 1e-9);
    else
        printf("  device GEMM              not measured (built without OpenBLAS)\n");
    printf("  launch (parallel region) %8.2f us\n", c->launch_us.median);
    const struct calib_host *h = &c->host_costs;
    printf("\n  %-8s %26s %26s %30s   (best round; the rounds' min..max)\n", "threads", "first touch GB/s",
           "pageable memcpy GB/s", "bf16->fp32 G elements/s");
    for (int t = 0; t < h->n_threads; t++)
        printf("  %-8d %8.3f (%6.3f..%6.3f) %8.3f (%6.3f..%6.3f) %12.3f (%6.3f..%6.3f)\n", t + 1,
               h->fault_gbps[t].best, h->fault_gbps[t].min, h->fault_gbps[t].max, h->memcpy_gbps[t].best,
               h->memcpy_gbps[t].min, h->memcpy_gbps[t].max, h->cast_elems_per_s[t].best * 1e-9,
               h->cast_elems_per_s[t].min * 1e-9, h->cast_elems_per_s[t].max * 1e-9);
    printf("  (transparent huge pages: %s, defrag %s; load average %.2f before, %.2f after, %.1f s)\n", h->thp,
           h->thp_defrag, h->load_before[0], h->load_after[0], h->wall_s);
    if (c->have_mpi)
        printf("  MPI, %d ranks              all-gather %.2f GB/s bus (%.2f..%.2f), reduce-scatter %.2f GB/s bus, "
               "latency %.1f us\n", c->coll_ranks, c->allgather_busbw_gbps.median, c->allgather_busbw_gbps.min,
               c->allgather_busbw_gbps.max, c->reduce_scatter_busbw_gbps.median, c->collective_latency_us.median);
    else
        printf("  collectives              not measured (not under mpirun): estimated, said so in the profile\n");
    printf("\nprofile    %s (use: --hw %s)\n", out, out);
}

/* ---- calibrate --host-baseline-from RUN.csv -------------------------------------------------- */
enum { B_FROM = 1, B_HW, B_OUT, B_NAME };
static const struct cli_opt baseline_opts[] = {
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

static int on_baseline_opt(void *ctx, int id, const char *v, struct rl_err *e)
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

/* argv (a calibrate command line) asks for --host-baseline-from. */
static bool baseline_asked(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--host-baseline-from") == 0 || strncmp(argv[i], "--host-baseline-from=", 21) == 0)
            return true;
    return false;
}

/* calibrate --host-baseline-from: its own options (the run's model and config, which the measuring
 * calibrate does not take), one call to campaign/calib_out.c, the lines. */
static int run_baseline(int argc, char **argv)
{
    struct baseline_args a = {.hw = "dgx1-v100"};
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct cli_optset sets[] = {
        {"host baseline options", baseline_opts, on_baseline_opt, &a},
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
    struct plan_setup c;
    memset(&c, 0, sizeof c);
    struct camp_baseline r;
    const struct camp_baseline_request q = {.csv = a.csv, .setup = &c, .hw = a.hw, .name = a.name, .out = a.out};
    if ((rc = cli_setup_resolve(&s, &c, &e)) || (rc = camp_host_baseline(&q, &r, &e))) {
        static const char *const flags[][2] = {
            {"hw", "--hw"}, {"name", "--name"}, {"output", "--out"}, {"monitor_csv", "--host-baseline-from"},
        };
        for (size_t i = 0; i < RL_COUNT(flags); i++)
            cli_err_flag(&e, flags[i][0], flags[i][1]);
        plan_setup_free(&c);
        return cli_fail("calibrate", &e);
    }
    const struct calib_baseline *b = &r.b;
    char g[4][32];
    if (b->rank < 0)
        printf("run        %s: no process carries RANK; its largest process peaked at %s GiB resident\n", a.csv,
               cli_gib(g[0], sizeof g[0], b->rss_bytes));
    else
        printf("run        %s: %d rank%s; rank %d peaked highest, at %s GiB resident over its %d process%s\n", a.csv,
               b->n_ranks, b->n_ranks == 1 ? "" : "s", b->rank, cli_gib(g[0], sizeof g[0], b->rss_bytes), b->n_procs,
               b->n_procs == 1 ? "" : "es");
    printf("tensors    %s GiB of host tensors per rank in the ledger (%s)\n", cli_gib(g[1], sizeof g[1], r.tensor_bytes),
           r.what);
    printf("baseline   %s GiB per rank (over the ranks %s-%s GiB); --hw %s had %s GiB\n",
           cli_gib(g[2], sizeof g[2], b->bytes_per_rank), cli_gib(g[3], sizeof g[3], b->min_bytes_per_rank), g[2],
           r.hw_name, cli_gib(g[0], sizeof g[0], r.hw_baseline_bytes));
    printf("profile    %s (use: --hw %s)\n", r.out, r.out);
    plan_setup_free(&c);
    return 0;
}

static int run(int argc, char **argv)
{
    if (baseline_asked(argc, argv))   /* its own options (the run's model and config) */
        return run_baseline(argc, argv);
    struct calib_args a = {0};
    calib_opts_default(&a.o);
    struct cli_optset sets[] = {{"calibrate options", opts, on_opt, &a}};
    int rc = cli_command_parse("calibrate", argc, argv, "ratiolab calibrate [--out FILE] [--thorough] [--devices N]",
        "Measures this machine and writes a hardware profile that --hw FILE accepts, every number\n"
        "sourced \"measured by ratiolab calibrate\" with the method, host, date and spread (median of\n"
        "the repeats, min..max): DRAM bandwidth (triad) and the project's CPU Adam against threads,\n"
        "copy-thread bandwidth alone and all devices at once, the emulated device's Adam, GEMM\n"
        "(OpenBLAS sgemm) and launch cost. Collective bandwidth is measured under mpirun only.\n"
        "With --gemm, --adam-numel, ... it also measures what one rank of a run does, on every rank at\n"
        "once (validate --calibrate passes the run's own); with --layers the GEMMs run block by block\n"
        "as the run's forward, the ranks meeting at an all-gather after each block. --backend cuda --base P: copies per GPU and\n"
        "all at once, D2D, GPU Adam, cuBLAS at the --gemm shapes and, under mpirun, NCCL.\n"
        "Quick by default (seconds); --thorough for larger arrays and more repeats.", sets, 1);
    if (rc != CLI_GO_ON)
        return rc;
    bool layer_list = false, last_list = false;
    for (int i = 0; i < a.run.n_gemm; i++) {
        last_list = last_list || a.run.gemm[i].last;
        layer_list = layer_list || !a.run.gemm[i].last;
    }
    if ((last_list || a.run.layers > 0) && !layer_list) {
        struct rl_err e;
        rl_errf(&e, RL_EINVAL, "%s: needs --gemm (one layer's GEMM list)", a.run.layers > 0 ? "--layers" : "--gemm-last");
        return calib_fail(&e);
    }
    if (last_list && a.run.layers == 0) {
        struct rl_err e;
        rl_errf(&e, RL_EINVAL, "--gemm-last: needs --layers N (the --gemm list is then one layer's)");
        return calib_fail(&e);
    }
    /* Flags that only mean something together, and the output, before anything is measured. */
    struct rl_err e = {0};
    if (a.base && !a.cuda) {
        rl_errf(&e, RL_EINVAL, "--base %s: only with --backend cuda (the cpu backend measures the emulated device "
                "whole); allowed: leave it out, or add --backend cuda", a.base);
        return cli_fail("calibrate", &e);
    }
    if (a.name && calib_profile_name_check(a.name, &e)) {
        cli_err_flag(&e, "name", "--name");
        return cli_fail("calibrate", &e);
    }
    if (!a.coll_only) {
        char host[64] = "unknown", out[300];
        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "unknown");
        host[sizeof host - 1] = 0;
        char name[128];
        calib_profile_names(a.name, a.out, host, name, sizeof name, out, sizeof out);
        if (rl_outfile_check(out, &e)) {
            cli_err_flag(&e, "output", "--out");
            return cli_fail("calibrate", &e);
        }
    }
    if (a.cuda)
        return run_cuda(&a);
    struct calib c;
    int code;
    if (!measure(&a, &c, NULL, &code))
        return code;
    if (a.coll_only)
        return print_collectives(&c);
    char out[300];
    if ((code = write_profile(&a, &c, out, sizeof out)) != 0)
        return code;
    if (a.json) {
        json_t *o = calib_report_json(&c, out);
        char *t = cli_json_dumps(cli_json_versioned(o), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", t);
        free(t);
        json_decref(o);
    } else
        print_table(&c, out);
    return 0;
}

const struct cli_cmd cli_cmd_calibrate = {"calibrate", "measure this machine and write a hardware profile (--hw FILE)", run};
