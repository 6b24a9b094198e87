/* cli/cmd_predict.c — `ratiolab predict`: the simulated step time of one ratio, where the time
 * goes (exposed vs overlapped per phase), the per-rank GPU and host memory, and a Chrome trace. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/sim_opts.h"
#include "plan/ds_rules.h"   /* PLAN_DS_DEFAULT_VERSION_STR */
#include "plan/plan_json.h"

enum { P_JSON = 1, P_TRACE };
static const struct cli_opt opts[] = {
    {"json", NULL, "machine-readable output (exact integers: bytes, nanoseconds)", P_JSON},
    {"trace", "FILE", "write a Chrome trace (Perfetto); FILE ending in .gz is gzipped; - for standard output (the report then goes to standard error)", P_TRACE},
    {NULL, NULL, NULL, 0},
};

struct predict_args {
    bool json;           /* --json */
    const char *trace;   /* --trace FILE, NULL when absent */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    (void)e;
    struct predict_args *a = ctx;
    if (id == P_JSON)
        a->json = true;
    else if (id == P_TRACE)
        a->trace = v;
    return 0;
}

static double sec(int64_t ns) { return (double)ns * 1e-9; }

static void print_human(FILE *f, const struct plan_setup *c, const struct plan *p, const struct hw_profile *hw,
                        const struct sim_train *t, const struct sim_step_result *r, bool verbose)
{
    char set[256], g[8][32];
    cli_sim_settings(r, t, set, sizeof set);
    char head[512];
    fprintf(f, "model      %s\n", cli_model_head(c, head, sizeof head));
    fprintf(f, "hardware   %s: %d x %s per node\n", hw->name, hw->gpus, hw->gpu_model);
    fprintf(f, "schedule   %s\n", set);
    fprintf(f, "ratio      requested %.4f, honored %.4f (policy %s, %d of %d sub-groups on the CPU)\n",
           p->requested_ratio, p->honored_ratio, plan_policy_name(p->policy), p->cpu_subgroups, p->n_subgroups);
    for (int i = 0; verbose && i < c->n_notes; i++)
        fprintf(f, "note       %s\n", c->notes[i]);
    char ids[128] = "";
    for (int i = 0; i < r->ranks; i++) {
        size_t l = strlen(ids);
        snprintf(ids + l, sizeof ids - l, "%s%d", i ? "," : "", r->gpu_ids[i]);
    }
    fprintf(f, "GPUs       %s of the node's %d (%d of %d sockets)%s\n", ids, hw->gpus, r->sockets_used, hw->n_sockets,
           t->n_gpu_ids ? "  (--gpu-ids)" : r->ranks < hw->gpus ? "  (the first ones, as a launcher; --gpu-ids to choose)" : "");
    fprintf(f, "\nstep       %.4f s (all %d GPUs of a node; slowest rank %d), %.0f tokens/s per GPU\n", sec(r->step_ns),
           p->layout.gpus_per_node, r->critical_rank, r->tokens_per_s);
    if (r->simulated_micro_steps < r->grad_accum)
        fprintf(f, "           %d micro-steps simulated, the other %lld repeat the steady-state one\n",
               r->simulated_micro_steps, (long long)(r->grad_accum - r->simulated_micro_steps));
    fprintf(f, "\nwhere the time goes on rank %d (exposed: nothing of a higher row was running)\n", r->critical_rank);
    fprintf(f, "  %-16s %10s %10s %10s\n", "phase", "busy s", "exposed s", "overlap s");
    int64_t sum = 0;
    for (int i = 0; i < STEP_PH_COUNT; i++) {
        if (!r->phase[i].busy_ns)
            continue;
        sum += r->phase[i].exposed_ns;
        fprintf(f, "  %-16s %10.4f %10.4f %10.4f\n", sim_phase_name(i), sec(r->phase[i].busy_ns),
               sec(r->phase[i].exposed_ns), sec(r->phase[i].busy_ns - r->phase[i].exposed_ns));
    }
    if (r->idle_ns)
        fprintf(f, "  %-16s %10s %10.4f\n", "idle", "", sec(r->idle_ns));
    fprintf(f, "  %-16s %10s %10.4f\n", "step", "", sec(sum + r->idle_ns));
    fprintf(f, "as DeepSpeed's timers cut it (fwd / bwd / step): %.4f / %.4f / %.4f s\n", sec(r->window_forward_ns),
            sec(r->window_backward_ns), sec(r->window_step_ns));
    fprintf(f, "\nGPU memory per rank (GiB = 1024^3)\n");
    fprintf(f, "  model states (ledger)     %8s\n", cli_gib(g[0], sizeof g[0], r->gpu_ledger_bytes));
    fprintf(f, "  activations               %8s  (attention %s: %s)\n", cli_gib(g[1], sizeof g[1], r->gpu_activation_bytes),
            plan_attention_name(r->attention), cli_sim_attention_origin(t, &c->model.arch));
    fprintf(f, "  gathered parameters       %8s\n", cli_gib(g[2], sizeof g[2], r->gpu_live_param_bytes));
    fprintf(f, "  allocated                 %8s\n", cli_gib(g[3], sizeof g[3], r->gpu_allocated_bytes));
    if (t->gpu_reserve_bytes >= 0) {
        fprintf(f, "  context/NCCL/allocator    %8s  (--reserve)\n", cli_gib(g[4], sizeof g[4], r->gpu_reserve_bytes));
    } else {
        char x[3][32];
        fprintf(f, "  CUDA context              %8s\n", cli_gib(x[0], sizeof x[0], r->gpu_context_bytes));
        fprintf(f, "  NCCL buffers              %8s  (%d communicators)\n", cli_gib(x[1], sizeof x[1], r->gpu_nccl_bytes),
               r->nccl_communicators);
        fprintf(f, "  caching allocator         %8s  (2 MiB rounding + fragmentation)\n",
               cli_gib(x[2], sizeof x[2], r->gpu_allocator_bytes));
    }
    fprintf(f, "  total (NVML)              %8s of %s  %s\n", cli_gib(g[5], sizeof g[5], r->gpu_total_bytes),
           cli_gib(g[6], sizeof g[6], r->gpu_capacity_bytes), r->fits_gpu ? "fits" : "DOES NOT FIT");
    fprintf(f, "host memory: %s GiB per rank, %s GiB per node of %s  %s\n", cli_gib(g[0], sizeof g[0], r->host_rank_bytes),
           cli_gib(g[1], sizeof g[1], r->host_node_bytes), cli_gib(g[2], sizeof g[2], r->host_capacity_bytes),
           r->fits_host ? "fits" : "DOES NOT FIT");
    char h[3][32];
    fprintf(f, "  with the processes and the OS: %s GiB per node = tensors %s + processes %s (the profile's per-rank "
            "baseline x ranks) + OS reserve %s\n", cli_gib(h[0], sizeof h[0], r->host_total_node_bytes),
            cli_gib(g[1], sizeof g[1], r->host_node_bytes), cli_gib(h[1], sizeof h[1], r->host_baseline_node_bytes),
            cli_gib(h[2], sizeof h[2], r->host_os_reserve_bytes));
}

static int run(int argc, char **argv)
{
    struct plan_inputs s;
    plan_inputs_init(&s);
    struct cli_sim sim;
    cli_sim_init(&sim);
    struct predict_args a = {0};
    struct cli_optset sets[] = {
        {"predict options", opts, on_opt, &a},
        {"hardware and training", cli_sim_opts, cli_sim_opt, &sim},
        {"model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
    };
    struct rl_err e = {0};
    int rc = cli_command_parse("predict", argc, argv, "ratiolab predict [--model NAME] [--ratio R] [--hw NAME|FILE] [--schedule S] [--cpu-optimizer O] [--gpu-ids LIST] [--trace FILE] [--json]",
                 "Simulates one training step for one ratio on every GPU of a node (contention on PCIe\n"
                 "switches, host DRAM and CPU cores included): step time, where it goes (exposed vs\n"
                 "overlapped per phase) and the per-rank GPU and host memory.\n"
                 "Default: Megatron gpt-2.7b, TP 8 on 8 x V100 (dgx1-v100), DeepSpeed " PLAN_DS_DEFAULT_VERSION_STR " rules.",
                               sets, 3);
    if (rc != CLI_GO_ON)
        return rc;
    struct plan_setup c;
    struct hw_profile hw;
    struct plan p;
    memset(&p, 0, sizeof p);
    if ((rc = cli_setup_resolve(&s, &c, &e)) || (rc = cli_sim_load_hw(&sim, &c, &hw, &e)) ||
        (rc = plan_setup_plan(&c, -1, &p, &e))) {
        plan_free(&p);
        plan_setup_free(&c);
        return cli_fail("predict", &e);
    }
    struct sim_step_result r;
    rc = sim_step_run(&p, &hw, &sim.train, a.trace, &r, &e);
    if (rc)
        cli_sim_err(&e);
    if (rc && a.trace && strstr(e.msg, a.trace))
        rl_err_prefix(&e, "--trace");
    if (rc) {
        plan_free(&p);
        plan_setup_free(&c);
        return cli_fail("predict", &e);
    }
    /* The trace owns standard output when it goes there; the report must not mix into it. */
    FILE *rep = a.trace && strcmp(a.trace, "-") == 0 ? stderr : stdout;
    if (a.json) {
        json_t *o = json_object();
        json_object_set_new(o, "model", json_string(c.model_desc));
        json_object_set_new(o, "hardware", json_string(hw.name));
        json_object_set_new(o, "schedule", json_string(sim_schedule_name(sim.train.schedule)));
        json_object_set_new(o, "cpu_optimizer", json_string(sim_cpu_optimizer_name(sim.train.cpu_optimizer)));
        json_object_set_new(o, "checkpoint_activations", json_boolean(sim.train.checkpoint_activations));
        json_object_set_new(o, "attention", json_string(plan_attention_name(r.attention)));
        json_object_set_new(o, "attention_origin", json_string(cli_sim_attention_origin(&sim.train, &c.model.arch)));
        json_object_set_new(o, "policy", json_string(plan_policy_name(p.policy)));
        plan_json_ratio(o, &p);
        json_object_set_new(o, "cpu_numel", json_integer(p.cpu_numel));
        json_object_set_new(o, "per_rank_numel", json_integer(p.per_rank_numel));
        json_object_set_new(o, "prediction", sim_step_result_json(&r));
        if (a.trace)
            json_object_set_new(o, "trace", json_string(a.trace));
        char *text = cli_json_dumps(cli_json_versioned(o), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fprintf(rep, "%s\n", text);
        free(text);
        json_decref(o);
    } else {
        print_human(rep, &c, &p, &hw, &sim.train, &r, s.verbose);
        if (a.trace)
            fprintf(rep, "trace: %s\n", a.trace);
    }
    cli_sim_warn_layout(&c.layout);
    cli_sim_warn_defaults(&hw, &c.layout);   /* after the report: a refused input stays a one-line error */
    plan_free(&p);
    plan_setup_free(&c);
    return 0;
}

const struct cli_cmd cli_cmd_predict = {"predict", "simulate one step for one ratio: time, breakdown, memory, trace", run};
