/* cli/cmd_run.c — `ratiolab run`: the real ratio-split ZeRO-3 step on this machine (exec/),
 * one MPI rank per process (`mpirun -np N ratiolab run ...`; without mpirun: one rank). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/flag_values.h"
#include "cli/json_out.h"
#include "exec/exec.h"
#include "exec/result_json.h"

enum {
    R_SCHEDULE = 1, R_BACKEND, R_COMPUTE, R_STEPS, R_WARMUP, R_SEED, R_SCALE, R_NAN, R_DEVMEM, R_THREADS,
    R_HASH, R_JSON, R_TRACE, R_SAVE, R_LOAD, R_REFERENCE, R_RATIOS, R_POLICIES, R_SCHEDULES, R_FAIL,
    R_LR, R_WD, R_CKPT_ACT, R_COMM_DTYPE,
};
static const struct cli_opt opts[] = {
    {"schedule", "S", "overlap (default) or deepspeed-0.12", R_SCHEDULE},
    {"backend", "B", "auto (cuda when a GPU is visible), cpu, cuda", R_BACKEND},
    {"compute", "C", "none (default) or gemm: the blocks' GEMMs on micro-batch x seq tokens", R_COMPUTE},
    {"comm-dtype", "T", "reduce-scatter type: fp32 (default, exact) or the model dtype bf16/fp16 (NOT exact: "
                        "16-bit partial sums round, so the digest may differ from the fp32 reference)", R_COMM_DTYPE},
    {"scale", "F", "shrink every tensor's element count by F (>= 1; default 1)", R_SCALE},
    {"steps", "K", "timed steps (default 3); the median is reported", R_STEPS},
    {"warmup", "W", "steps before them (default 1); they update the state too", R_WARMUP},
    {"seed", "N", "synthetic data seed (default 1)", R_SEED},
    {"lr", "X", "learning rate (default 1e-3)", R_LR},
    {"weight-decay", "X", "AdamW weight decay of param group 0 (default 0.01; other groups 0)", R_WD},
    {"threads", "N", "host Adam threads (default 1)", R_THREADS},
    {"device-mem", "BYTES", "cpu backend: emulated device capacity, e.g. 2GiB (default unlimited)", R_DEVMEM},
    {"checkpoint-activations", NULL, "with --compute gemm: backward runs the forward GEMMs again", R_CKPT_ACT},
    {"inject-nan", "STEP", "iteration (1-based) whose gradient holds a NaN: the step is skipped", R_NAN},
    {"hash", NULL, "print the digest of the final master, m, v and 16-bit parameters", R_HASH},
    {"json", NULL, "machine-readable output (exec/README.md documents the schema)", R_JSON},
    {"trace", "FILE", "write a Chrome trace (Perfetto) of every step; FILE ending in .gz is gzipped", R_TRACE},
    {"save", "DIR", "write a checkpoint of the optimizer state at the end (one save at a time: DIR is locked, "
     "and a save into a DIR another save holds exits 3 at once naming it)", R_SAVE},
    {"load", "DIR", "start from a checkpoint (any world size, ratio, policy, schedule)", R_LOAD},
    {"reference", NULL, "compute the expected digest in one process with the scalar reference Adam", R_REFERENCE},
    {"ratios", "LIST", "run each ratio in turn (e.g. 0,0.1,0.5): one digest line each", R_RATIOS},
    {"policies", "LIST", "with --ratios: placement policies to run (e.g. exact,deepspeed-0.12)", R_POLICIES},
    {"schedules", "LIST", "with --ratios: schedules to run (e.g. overlap,deepspeed-0.12)", R_SCHEDULES},
    {"fail-rank", "R[:PHASE]", "testing: rank R fails at PHASE (step: its first step, the default; save-prepare, "
     "save-write, save-written, save-switch, save-switched: that point of --save) and every rank exits", R_FAIL},
    {NULL, NULL, NULL, 0},
};

#define MAX_LIST 16
struct run_args {
    struct ex_opts o;                    /* executor options */
    double scale;                        /* --scale */
    bool hash, json, reference;          /* --hash, --json, --reference */
    double *ratios;                      /* --ratios, NULL when absent */
    size_t n_ratios;
    enum plan_policy policies[MAX_LIST]; /* --policies */
    int n_policies;
    enum step_schedule schedules[MAX_LIST]; /* --schedules */
    int n_schedules;
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct run_args *a = ctx;
    int64_t x;
    int rc;
    switch (id) {
    case R_SCHEDULE:
        return step_schedule_parse(v, &a->o.schedule, e) ? cli_err_flag(e, "schedule", "--schedule") : 0;
    case R_BACKEND: return ex_backend_parse(v, &a->o.backend, e) ? cli_err_flag(e, "backend", "--backend") : 0;
    case R_COMPUTE:
        if (rl_streq(v, "none")) a->o.compute = EX_COMPUTE_NONE;
        else if (rl_streq(v, "gemm")) a->o.compute = EX_COMPUTE_GEMM;
        else return rl_errf(e, RL_EINVAL, "--compute: '%s'; allowed: none, gemm", v);
        return 0;
    case R_COMM_DTYPE:
        if (rl_streq(v, "fp32")) a->o.comm_dtype = KERN_F32;
        else if (rl_streq(v, "bf16")) a->o.comm_dtype = KERN_BF16;
        else if (rl_streq(v, "fp16")) a->o.comm_dtype = KERN_F16;
        else return rl_errf(e, RL_EINVAL, "--comm-dtype: '%s'; allowed: fp32, bf16, fp16", v);
        return 0;
    case R_SCALE: return rl_parse_double("--scale", v, 1, 1e12, &a->scale, e);
    case R_STEPS: return rl_parse_int("--steps", v, 1, 1000000, &a->o.steps, e);
    case R_WARMUP: return rl_parse_int("--warmup", v, 0, 1000000, &a->o.warmup, e);
    case R_SEED:
        if ((rc = rl_parse_i64("--seed", v, 0, INT64_MAX, &x, e)))
            return rc;
        a->o.seed = (uint64_t)x;
        return 0;
    case R_LR: return rl_parse_double("--lr", v, 0, 1e6, &a->o.lr, e);
    case R_WD: return rl_parse_double("--weight-decay", v, 0, 1e6, &a->o.weight_decay, e);
    case R_THREADS: return rl_parse_int("--threads", v, 1, 1024, &a->o.threads, e);
    case R_DEVMEM: return rl_parse_bytes("--device-mem", v, &a->o.device_mem_bytes, e);
    case R_CKPT_ACT: a->o.checkpoint_activations = true; return 0;
    case R_NAN: return rl_parse_i64("--inject-nan", v, 1, INT64_MAX, &a->o.inject_nan_step, e);
    case R_HASH: a->hash = true; return 0;
    case R_JSON: a->json = true; return 0;
    case R_TRACE: a->o.trace_path = v; return 0;
    case R_SAVE:
    case R_LOAD:
        if (!v[0])
            return rl_errf(e, RL_EINVAL, "%s: empty; allowed: a folder name", id == R_SAVE ? "--save" : "--load");
        *(id == R_SAVE ? &a->o.save_dir : &a->o.load_dir) = v;
        return 0;
    case R_REFERENCE: a->reference = true; return 0;
    case R_RATIOS:
        free(a->ratios);
        a->ratios = NULL;
        return rl_parse_ratio_list("--ratios", v, 0, 1, &a->ratios, &a->n_ratios, e);
    case R_POLICIES: return cli_parse_names(v, "--policies", MAX_LIST, &a->n_policies, a->policies, true, e);
    case R_SCHEDULES: return cli_parse_names(v, "--schedules", MAX_LIST, &a->n_schedules, a->schedules, false, e);
    case R_FAIL:
        if (ex_fail_spec_parse(v, &a->o.fail_rank, &a->o.fail_phase, e) == 0)
            return 0;
        cli_err_flag(e, "fail_phase", "--fail-rank's PHASE");
        return cli_err_flag(e, "fail_rank", "--fail-rank");
    }
    return rl_errf(e, RL_EINTERNAL, "option id %d not handled", id);
}

static double sec(int64_t ns) { return (double)ns * 1e-9; }

static const char *human_bytes(char *buf, size_t n, int64_t v)
{
    if (v < 0)
        snprintf(buf, n, "unavailable");
    else
        snprintf(buf, n, "%.2f MiB", (double)v / 1048576.0);
    return buf;
}

static char *digest_hex(uint32_t d, char buf[9])
{
    snprintf(buf, 9, "%08x", d);
    return buf;
}

static void print_human(const struct plan_setup *c, const struct plan *p, const struct run_args *a,
                        const struct ex_result *r)
{
    const struct ex_rank_result *cr = &r->ranks[r->critical_rank];
    char b1[32], b2[32], b3[32], b4[32], b5[32], hex[9];
    char seq[256];
    printf("model      %s, --scale %g: %lld elements, %lld per rank; %s\n", c->model_desc, a->scale,
           (long long)r->total_numel, (long long)p->per_rank_numel, cli_seq_text(c, seq, sizeof seq));
    char ran[64] = "";   /* the release whose step the deepspeed schedule ran */
    if (r->ds_step)
        snprintf(ran, sizeof ran, " (DeepSpeed %s's step)", RL_VERSION_S(r->ds_version));
    printf("run        backend %s, %d rank%s, schedule %s%s, compute %s, %lld iterations (%d timed), %lld Adam steps\n",
           ex_backend_name(r->backend), r->world, r->world == 1 ? "" : "s", step_schedule_name(a->o.schedule), ran,
           a->o.compute == EX_COMPUTE_GEMM ? "gemm" : "none", (long long)r->iterations, a->o.steps,
           (long long)r->adam_step);
    if (a->o.comm_dtype != KERN_F32)
        printf("comm       reduce-scatter in %s: 16-bit partial sums round (not exact), results may differ from the "
               "fp32 reference\n", kern_dtype_name(a->o.comm_dtype));
    printf("ratio      requested %.4f, honored %.4f (policy %s), host-placed %lld of %lld elements per rank\n",
           p->requested_ratio, p->honored_ratio, plan_policy_name(p->policy), (long long)cr->host_placed_numel,
           (long long)cr->per_rank_numel);
    printf("prefetch   %lld block%s gathered ahead of the compute (stage3_prefetch_bucket_size %lld elements), "
           "%d gather buffers\n", (long long)r->prefetch_depth, r->prefetch_depth == 1 ? "" : "s",
           (long long)p->zero.prefetch_bucket_size, r->gather_buffers);
    if (p->layout.tp > 1)
        printf("layout     TP %d: each rank runs one tensor-parallel shard as its model (the data-parallel "
               "ZeRO-3 dimension is what runs)\n", p->layout.tp);
    if (r->skipped)
        printf("skipped    %lld step%s: a gradient was NaN or Inf (no state changed)\n", (long long)r->skipped,
               r->skipped == 1 ? "" : "s");
    printf("\nstep       %.6f s (median; slowest rank %d)\n", sec(cr->step_ns), r->critical_rank);
    printf("  %-16s %10s %10s %10s %10s\n", "phase", "busy s", "exposed s", "overlap s", "GB/s");
    for (int i = 0; i < STEP_PH_COUNT; i++) {
        const struct ex_phase_stat *x = &cr->phase[i];
        if (!x->busy_ns)
            continue;
        char gb[16] = "";
        if (x->bytes)
            snprintf(gb, sizeof gb, "%.2f", (double)x->bytes / (double)x->busy_ns);
        printf("  %-16s %10.6f %10.6f %10.6f %10s\n", step_phase_name(i), sec(x->busy_ns), sec(x->exposed_ns),
               sec(x->busy_ns - x->exposed_ns), gb);
    }
    printf("  %-16s %10s %10.6f\n", "other", "", sec(ex_rank_idle_ns(cr)));
    printf("\nbuffers of rank %d (ledger check: %s)\n", r->critical_rank, r->ledger_ok ? "equal to the plan, to the byte" : "MISMATCH");
    printf("  %-26s %-14s %14s %14s\n", "buffer", "device", "bytes", "ledger");
    for (int i = 0; i < cr->n_bufs; i++) {
        char lb[24];
        if (cr->bufs[i].ledger_bytes < 0)
            snprintf(lb, sizeof lb, "(transient)");
        else
            snprintf(lb, sizeof lb, "%lld", (long long)cr->bufs[i].ledger_bytes);
        printf("  %-26s %-14s %14lld %14s\n", cr->bufs[i].name, plan_device_name(cr->bufs[i].device),
               (long long)cr->bufs[i].bytes, lb);
    }
    printf("\nmemory of rank %d: RSS %s, peak %s, locked %s, pinned %s, device pool %s\n", r->critical_rank,
           human_bytes(b1, sizeof b1, cr->mem.rss_bytes), human_bytes(b2, sizeof b2, cr->mem.peak_rss_bytes),
           human_bytes(b3, sizeof b3, cr->mem.locked_bytes), human_bytes(b4, sizeof b4, cr->mem.pinned_bytes),
           human_bytes(b5, sizeof b5, cr->mem.device_used_bytes));
    if (a->hash)
        printf("\ndigest %s\n", digest_hex(r->digest, hex));
}

int cli_run_err(struct rl_err *e)
{
    static const char *const flags[][2] = {
        {"backend", "--backend"}, {"pp", "--pp"}, {"dtype", "--dtype"}, {"steps/warmup", "--steps/--warmup"},
        {"comm_dtype", "--comm-dtype"}, {"scale", "--scale"}, {"seed", "--seed"}, {"save_dir", "--save"},
        {"load_dir", "--load"}, {"compute", "--compute"},
    };
    for (size_t i = 0; i < RL_COUNT(flags); i++)
        cli_err_flag(e, flags[i][0], flags[i][1]);
    /* fields the executor names inside its messages ("(after scale)", "free (device_mem); ratio
     * 0.30 fits") */
    static const char *const words[][2] = {
        {"scale", "--scale"}, {"device_mem", "--device-mem"}, {"fail_rank", "--fail-rank"}, {"ratio", "--ratio"},
    };
    for (size_t i = 0; i < RL_COUNT(words); i++)
        cli_err_word(e, words[i][0], words[i][1]);
    return e->code;
}

static int fail_rank(struct ex_comm *comm, struct rl_err *e)
{
    cli_run_err(e);
    int code = cli_fail("run", e);
    fflush(stdout);
    fflush(stderr);
    if (comm->mpi && comm->size > 1)
        ex_comm_abort(comm, code);
    return code;
}

/* What each run of the matrix prints, on rank 0 only. */
struct shown_run {
    const struct plan_setup *c;    /* the setup */
    const struct run_args *a;      /* the options */
    int rank;                      /* this process's rank */
    bool matrix;                   /* --ratios, --policies or --schedules: one line per run */
};
static void print_run(void *ctx, const struct plan *p, const struct ex_opts *o, const struct ex_result *r)
{
    const struct shown_run *s = ctx;
    if (s->rank != 0)
        return;
    struct run_args shown = *s->a;
    shown.o = *o;
    char hex[9];
    if (s->matrix)
        printf("ratio %.4f policy %s schedule %s honored %.4f world %d digest %s\n", p->requested_ratio,
               plan_policy_name(p->policy), step_schedule_name(o->schedule), p->honored_ratio, r->world,
               digest_hex(r->digest, hex));
    else if (s->a->json) {
        json_t *j = ex_run_json(s->c->model_desc, s->a->scale, o, p, r);
        char *text = cli_json_dumps(cli_json_versioned(j), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", text);
        free(text);
        json_decref(j);
    } else
        print_human(s->c, p, &shown, r);
}

static int run(int argc, char **argv)
{
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct run_args a;
    memset(&a, 0, sizeof a);
    ex_opts_default(&a.o);
    a.scale = 1;
    struct cli_optset sets[] = {
        {"run options", opts, on_opt, &a},
        {"model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
    };
    int rc = cli_command_parse("run", argc, argv, "ratiolab run [--model NAME] [--ratio R] [--scale F] [--schedule S] [--hash] [--json]\n"
                 "       mpirun -np N ratiolab run ...   (N ranks = --dp)",
                 "Runs the ratio-split ZeRO-3 step for real: every rank allocates the buffers of the plan's\n"
                 "exec ledger (checked to the byte), reduce-scatters exact synthetic gradients, runs the\n"
                 "device and host shares of Adam (kernels/, bitwise equal) and reports the time per phase,\n"
                 "the memory and a digest of the final state that depends on no ratio, policy, schedule or\n"
                 "world size. Ranks are MPI processes (mpirun -np N = --dp); without mpirun: one rank.\n"
                 "A TP > 1 layout runs one TP shard as each rank's model. The reduce-scatter runs in fp32\n"
                 "(exact); --comm-dtype bf16|fp16 runs it in the model dtype, which is not exact: the digest\n"
                 "then may differ from the reference. Exit 1: the ledger check failed;\n"
                 "2: bad input; 3: environment (device memory: the bytes needed, free and a ratio that fits).",
                               sets, 2);
    if (rc != CLI_GO_ON) {
        free(a.ratios);
        return rc;
    }
    struct rl_err e = {0};
    struct plan_setup c;
    memset(&c, 0, sizeof c);
    struct ex_comm comm;
    if ((rc = ex_comm_init(&comm, &e))) {
        free(a.ratios);
        return cli_fail("run", &e);
    }
    s.mpi_world = comm.size;   /* the data-parallel degree unless the layout says otherwise */
    struct plan_model scaled;
    memset(&scaled, 0, sizeof scaled);
    int code = 0;
    if ((rc = cli_setup_resolve(&s, &c, &e)) || (rc = ex_scale_model(&c.model, a.scale, &scaled, &e))) {
        cli_run_err(&e);
        code = cli_fail("run", &e);
        goto out;
    }
    if ((rc = ex_launch_check(&c, &a.o, &comm, &e))) {
        cli_run_err(&e);
        code = cli_fail("run", &e);
        goto out;
    }
    if (c.layout.dp != comm.size) {
        rl_errf(&e, RL_EINVAL, "world size: the layout has %d data-parallel ranks (--dp), mpirun started %d; "
                "allowed: equal", c.layout.dp, comm.size);
        code = cli_fail("run", &e);
        goto out;
    }
    a.o.micro_batch = c.zero.micro_batch > 0 ? c.zero.micro_batch : 1;   /* config or --micro-batch */
    a.o.seq_len = s.seq_len;
    a.o.checkpoint_activations |= c.checkpoint_activations;
    if (a.reference) {
        /* The expected digest: one process, no MPI collectives. */
        a.o.ref_dtype = c.zero.dtype;
        uint32_t d = 0;
        int64_t steps = 0;
        if ((rc = ex_reference(&scaled, &a.o, a.o.warmup + a.o.steps, &d, &steps, &e))) {
            code = cli_fail("run", &e);
            goto out;
        }
        char hex[9];
        if (comm.rank == 0)
            printf("reference: %lld elements, %d iterations, %lld Adam steps\ndigest %s\n",
                   (long long)scaled.total_numel, a.o.warmup + a.o.steps, (long long)steps, digest_hex(d, hex));
        goto out;
    }
    /* One combination, or the matrix of --ratios x --policies x --schedules. */
    double one_ratio = -1;
    enum plan_policy pol1 = c.popt.policy;
    enum step_schedule sch1 = a.o.schedule;
    const struct ex_matrix m = {
        .setup = &c, .scaled = &scaled, .scale = a.scale,
        .ratios = a.ratios ? a.ratios : &one_ratio, .n_ratios = a.ratios ? a.n_ratios : 1,
        .policies = a.n_policies ? a.policies : &pol1, .n_policies = a.n_policies ? a.n_policies : 1,
        .schedules = a.n_schedules ? a.schedules : &sch1, .n_schedules = a.n_schedules ? a.n_schedules : 1,
    };
    struct shown_run sr = {.c = &c, .a = &a, .rank = comm.rank, .matrix = a.ratios || a.n_policies || a.n_schedules};
    if (ex_run_matrix(&m, &a.o, &comm, print_run, &sr, &e))
        code = fail_rank(&comm, &e);
out:
    plan_model_free(&scaled);
    plan_setup_free(&c);
    free(a.ratios);
    fflush(stdout);
    ex_comm_finalize(&comm);
    return code;
}

const struct cli_cmd cli_cmd_run = {"run", "run the ratio-split ZeRO-3 step for real (MPI ranks, cpu or cuda backend)", run};
