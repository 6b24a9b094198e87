/* cli/cmd_tune.c — `ratiolab tune`: the micro-batch, activation checkpointing and offload ratio
 * with the most tokens/s per GPU that fit with a headroom, the host RAM a node needs, and the
 * DeepSpeed settings that get it. The search, one profile's run of it and its analysis are
 * sim/tune.c, the JSON and the config block sim/tune_json.c; this file parses, calls and prints. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_out.h"
#include "cli/sim_opts.h"
#include "sim/tune.h"
#include "sim/tune_json.h"

enum { T_RATIOS = 1, T_TOL, T_JSON, T_HEADROOM, T_GLOBAL, T_MBS };
static const struct cli_opt opts[] = {
    {"headroom", "BYTES", "GPU memory left free beyond the prediction, e.g. 4GiB (default 5% of GPU memory)", T_HEADROOM},
    {"ratios", "LO:HI:STEP", "candidate ratios (default 0:1:0.05)", T_RATIOS},
    {"micro-batches", "A,B,..", "candidate micro-batches (default 1,2,4,...,64 and the config's; --micro-batch fixes one)", T_MBS},
    {"global-batch", "N", "sequences per step over all data-parallel ranks; accumulation follows (default: train_batch_size)", T_GLOBAL},
    {"tolerance", "T", "how close DeepSpeed's honored ratio must come (default 0.01)", T_TOL},
    {"json", NULL, "JSON output (exact integers)", T_JSON},
    {NULL, NULL, NULL, 0},
};

struct tune_args {
    int64_t headroom;       /* --headroom, < 0: the default fraction */
    const char *ratios;     /* --ratios, the candidates */
    const char *mbs;        /* --micro-batches, NULL: the default set */
    int64_t global_batch;   /* --global-batch, 0: the config's train_batch_size or none */
    double tol;             /* --tolerance on the honored ratio */
    bool json;              /* --json */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct tune_args *a = ctx;
    switch (id) {
    case T_HEADROOM: return rl_parse_bytes("--headroom", v, &a->headroom, e);
    case T_RATIOS: a->ratios = v; return 0;
    case T_MBS: a->mbs = v; return 0;
    case T_GLOBAL: return rl_parse_i64("--global-batch", v, 1, INT64_C(1) << 30, &a->global_batch, e);
    case T_TOL: return rl_parse_double("--tolerance", v, 0, 1, &a->tol, e);
    case T_JSON: a->json = true; return 0;
    }
    return RL_EINTERNAL;
}

#define MAX_MBS SIM_TUNE_MAX_MICRO_BATCHES
#define MAX_HW 8

/* bytes rounded up to the 0.01 GiB the text prints, so that the printed figure fits. */
static int64_t gib_up(int64_t bytes)
{
    const double step = (double)RL_GIB / 100.0;
    return (int64_t)ceil(ceil((double)bytes / step) * step);
}

/* With fewer GPUs than the profile has, the simulator models GPUs 0..n-1: say which, and on
 * which sockets they sit. */
static void print_modelled(const struct hw_profile *hw, int gpn, const struct sim_train *tr)
{
    int gpu[HW_MAX_GPUS];
    unsigned on;
    struct rl_err e;
    if (gpn >= hw->gpus || sim_place_gpus(hw, tr, gpn, gpu, &on, &e) != 0)
        return;   /* every GPU, or a list the search already refused */
    char ids[128];
    snprintf(ids, sizeof ids, "0-%d", gpn - 1);
    for (int g = 0; tr->n_gpu_ids > 0 && g < gpn; g++) {
        size_t l = g ? strlen(ids) : 0;
        snprintf(ids + l, sizeof ids - l, "%s%d", g ? "," : "", gpu[g]);
    }
    printf("modelled   GPUs %s of the profile's %d, on socket%s", ids, hw->gpus, __builtin_popcount(on) > 1 ? "s" : "");
    for (int k = 0, first = 1; k < hw->n_sockets; k++)
        if (on & 1u << k) {
            printf("%s%d", first ? " " : ", ", k);
            first = 0;
        }
    printf(" (their PCIe switches, DRAM and cores)\n");
}

/* What was searched, on what, and the ratios skipped. */
static void print_search(const struct plan_setup *c, const struct sim_tune_run *t, const struct tune_args *a,
                         const struct sim_tune_request *q)
{
    char g[2][32], head[512];
    printf("model      %s\n", cli_model_head(c, head, sizeof head));
    printf("hardware   %s: %d of %d x %s per node, %s GiB per GPU; headroom %s GiB left free (%s)\n", t->hw.name,
           c->layout.gpus_per_node, t->hw.gpus, t->hw.gpu_model, cli_gib(g[0], sizeof g[0], t->hw.gpu_mem_bytes),
           cli_gib(g[1], sizeof g[1], t->headroom_bytes),
           a->headroom >= 0 ? "--headroom" : "default: 5% of GPU memory, see sim/tune.h");
    print_modelled(&t->hw, c->layout.gpus_per_node, &q->train);
    printf("searched   no offload and %zu ratios (%s) x %d micro-batch%s (", q->n_ratios, a->ratios, q->n_micro_batches,
           q->n_micro_batches == 1 ? "" : "es");
    for (int i = 0; i < q->n_micro_batches; i++)
        printf("%s%lld", i ? "," : "", (long long)q->micro_batches[i]);
    printf(") x activation checkpointing %s", q->ckpt_off && q->ckpt_on ? "off/on" : q->ckpt_on ? "on" : "off");
    if (q->global_batch > 0)
        printf(", global batch %lld sequences", (long long)q->global_batch);
    printf(": %d candidates, %d fit and were simulated; schedule %s", t->res.ans.evaluated, t->res.ans.simulated,
           sim_schedule_name(q->train.schedule));
    if (c->popt.policy != PLAN_POLICY_EXACT) {
        printf("; each ratio with a sub_group_size %s", plan_policy_name(c->popt.policy));
        for (int i = 0; i < c->n_more; i++)
            printf("%s%s", i == c->n_more - 1 ? " and " : ", ", plan_policy_name(c->more_policies[i]));
        printf(" honor%s it with (within %g)", c->n_more ? "" : "s", a->tol);
    }
    printf("\n");
    printf("attention  %s (%s)\n", plan_attention_name(cli_sim_attention(&q->train, &c->model.arch)),
           cli_sim_attention_origin(&q->train, &c->model.arch));
    printf("dtype      %s (%s)\n", plan_dtype_name(c->zero.dtype), cli_dtype_source(c));
    const bool ds = c->popt.policy != PLAN_POLICY_EXACT;
    if (ds && t->res.n_unhonored > 0) {
        printf("skipped    %d ratio%s no sub_group_size makes %s%s honor within %g (", t->res.n_unhonored,
               t->res.n_unhonored == 1 ? "" : "s", plan_policy_name(c->popt.policy),
               c->n_more ? " and the other versions" : "", a->tol);
        for (int i = 0; i < t->res.n_unhonored && i < (int)(sizeof t->res.unhonored / sizeof t->res.unhonored[0]); i++)
            printf("%s%.2f", i ? ", " : "", t->res.unhonored[i]);
        printf("%s)\n", t->res.n_unhonored > (int)(sizeof t->res.unhonored / sizeof t->res.unhonored[0]) ? ", ..." : "");
    }
}

/* The answer (t found one): the choice, its speed and memory, the config block that runs it, and
 * the asides (the best with offload when the answer needs none, the exact policy's best). */
static void print_answer(const struct plan_setup *c, const struct sim_tune_run *t)
{
    char g[6][32];
    const bool ds = c->popt.policy != PLAN_POLICY_EXACT;
    const struct sim_tune_choice *k = &t->res.ans.best;
    char off[400];
    if (!k->offload)
        snprintf(off, sizeof off, "no optimizer offload");
    else if (ds) {
        char more[200] = "";
        for (int i = 0, w = 0; i < c->n_more && w >= 0 && (size_t)w < sizeof more; i++)
            w += snprintf(more + w, sizeof more - (size_t)w, ", %s %.4f", plan_policy_name(c->more_policies[i]),
                          k->more_honored[i]);
        snprintf(off, sizeof off, "offload ratio %.2f (%s honors %.4f%s with sub_group_size %lld, %d sub-groups)", k->ratio,
                 plan_policy_name(c->popt.policy), k->honored, more, (long long)k->sub_group_size, k->n_subgroups);
    }
    else
        snprintf(off, sizeof off, "offload ratio %.2f", k->ratio);
    printf("\nanswer     micro-batch %lld, grad accum %lld, activation checkpointing %s, %s\n",
           (long long)k->micro_batch, (long long)k->grad_accum, k->ckpt ? "on" : "off", off);
    printf("speed      %.0f tokens/s per GPU, %.0f tokens/s per node (%d GPUs); step %.4f s\n", k->tokens_per_s_gpu,
           k->tokens_per_s_node, c->layout.gpus_per_node, (double)k->r.step_ns * 1e-9);
    printf("GPU        %s GiB per rank of %s GiB (%s GiB free)\n", cli_gib(g[0], sizeof g[0], k->r.gpu_total_bytes),
           cli_gib(g[1], sizeof g[1], k->r.gpu_capacity_bytes), cli_gib(g[2], sizeof g[2], k->free_gpu_bytes));
    printf("host RAM   %s GiB per node for the offloaded optimizer (%s GiB per rank)\n",
           cli_gib(g[3], sizeof g[3], k->r.host_node_bytes), cli_gib(g[4], sizeof g[4], k->r.host_rank_bytes));
    printf("host total %s GiB per node with the processes (%s GiB: %d ranks x the profile's baseline) and the OS "
           "reserve (%s GiB): the node needs at least this\n", cli_gib(g[5], sizeof g[5], k->r.host_total_node_bytes),
           cli_gib(g[1], sizeof g[1], k->r.host_baseline_node_bytes), c->layout.gpus_per_node,
           cli_gib(g[2], sizeof g[2], k->r.host_os_reserve_bytes));
    const struct sim_tune_best *b = &t->res.ans;
    if (!k->offload && b->offload_found) {
        const struct sim_tune_choice *o = &b->best_offload;
        char what[160];
        if (o->ratio == 0)   /* an offload_optimizer block that keeps every sub-group on the GPU */
            snprintf(what, sizeof what, "with an offload_optimizer block (ratio 0.00: no sub-group on the CPU, yet its "
                     "host buffers are allocated)");
        else
            snprintf(what, sizeof what, "with offload (ratio %.2f)", o->ratio);
        printf("offload    not needed: the best %s, micro-batch %lld, checkpointing %s, gives %.0f tokens/s per GPU "
               "and needs %s GiB of host RAM per node\n", what, (long long)o->micro_batch, o->ckpt ? "on" : "off",
               o->tokens_per_s_gpu, cli_gib(g[5], sizeof g[5], o->r.host_node_bytes));
    }
    if (!ds && k->offload)
        printf("policy     exact: the ratio honored at element granularity, which DeepSpeed does not implement "
               "(--policy auto for an answer DeepSpeed runs)\n");
    json_t *blk = sim_tune_ds_config_json(k, ds, c->zero.dtype);
    char *text = json_dumps(blk, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(blk);
    printf("%s %s:\n", ds ? "DeepSpeed " : "config    ", ds ? "the config block that runs it (these keys into your DeepSpeed config)"
                                                         : "the config block (without the sub_group_size DeepSpeed would need)");
    for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        printf("           %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
    }
    free(text);
    if (k->ckpt)
        printf("           and activation checkpointing in the training script\n");
    const struct sim_tune_best *x = &t->res.exact;
    if (ds && x->found && x->best.offload) {
        const struct sim_tune_choice *e = &x->best;
        double gain = (e->tokens_per_s_gpu / k->tokens_per_s_gpu - 1.0) * 100.0;
        printf("aside      an element-granular rule (not in DeepSpeed) would give ratio %.2f, micro-batch %lld, "
               "checkpointing %s: %.0f tokens/s per GPU (%+.1f %%)\n", e->ratio, (long long)e->micro_batch,
               e->ckpt ? "on" : "off", e->tokens_per_s_gpu, gain);
    }
}

/* What binds when nothing fits, and the smallest GPU or host memory that would make something
 * fit (everything else unchanged). Returns buf. */
static const char *binding(const struct sim_tune_run *t, char *buf, size_t n)
{
    const struct sim_tune_best *b = &t->res.ans;
    char g[4][32];
    if (b->evaluated == 0) {
        snprintf(buf, n, "no candidate ratio is honored by DeepSpeed (see skipped)");
        return buf;
    }
    if (b->gpu_fit == 0) {
        int w = snprintf(buf, n, "GPU memory binds: the smallest prediction is %s GiB per GPU, above %s GiB less the "
                         "%s GiB headroom", cli_gib(g[0], sizeof g[0], gib_up(b->min_gpu_bytes)),
                         cli_gib(g[1], sizeof g[1], t->hw.gpu_mem_bytes), cli_gib(g[2], sizeof g[2], t->headroom_bytes));
        if (t->fix[SIM_TUNE_N_CLASSES].gpu_mem_bytes && w > 0 && (size_t)w < n)   /* sim_tune_fixes' figure */
            snprintf(buf + w, n - (size_t)w, "; GPUs with %s GiB each would fit%s",
                     cli_gib(g[3], sizeof g[3], gib_up(t->fix[SIM_TUNE_N_CLASSES].gpu_mem_bytes)),
                     b->host_fit < b->evaluated ? " (with the host RAM given)" : "");
        return buf;
    }
    snprintf(buf, n, "host RAM binds: %d candidate%s fit the GPU, the one needing the least host RAM needs %s GiB per "
             "node, above the node's %s GiB (--host-mem); a node with %s GiB would fit", b->gpu_fit,
             b->gpu_fit == 1 ? "" : "s", cli_gib(g[0], sizeof g[0], gib_up(b->min_host_node_bytes)),
             cli_gib(g[1], sizeof g[1], t->hw.host_mem_bytes), cli_gib(g[2], sizeof g[2], gib_up(b->min_host_node_bytes)));
    return buf;
}

static void print_table(const struct plan_setup *c, const struct sim_train *train, const struct sim_tune_run *runs, int n)
{
    char g[3][32], head[512];
    printf("model      %s\nattention  %s (%s)\n\n", cli_model_head(c, head, sizeof head), plan_attention_name(cli_sim_attention(train, &c->model.arch)),
           cli_sim_attention_origin(train, &c->model.arch));
    printf("%-14s %5s %6s %5s %6s %8s %10s %11s %8s %9s %13s\n", "hardware", "GPUs", "micro", "accum", "ckpt", "ratio",
           "tok/s/GPU", "tok/s/node", "step s", "GPU GiB", "host GiB/node");
    for (int i = 0; i < n; i++) {
        const struct sim_tune_run *t = &runs[i];
        if (!t->res.found) {
            char why[512];
            printf("%-14s %5d  nothing fits: %s\n", t->hw.name, c->layout.gpus_per_node, binding(t, why, sizeof why));
            continue;
        }
        const struct sim_tune_choice *k = &t->res.ans.best;
        char ratio[16];
        snprintf(ratio, sizeof ratio, k->offload ? "%.2f" : "none", k->ratio);
        printf("%-14s %5d %6lld %5lld %6s %8s %10.0f %11.0f %8.4f %9s %13s\n", t->hw.name, c->layout.gpus_per_node,
               (long long)k->micro_batch, (long long)k->grad_accum, k->ckpt ? "on" : "off", ratio, k->tokens_per_s_gpu,
               k->tokens_per_s_node, (double)k->r.step_ns * 1e-9, cli_gib(g[1], sizeof g[1], k->r.gpu_total_bytes),
               cli_gib(g[2], sizeof g[2], k->r.host_node_bytes));
    }
}

/* "N GPUs<verb> (--gpus N: DP D on K nodes, T tokens/s per GPU)" for f into buf, or "" when none. */
static const char *gpus_text(const struct sim_tune_fix *f, const char *verb, char *buf, size_t n)
{
    buf[0] = 0;
    if (f->gpus)
        snprintf(buf, n, "%d GPUs%s (--gpus %d: DP %d on %d node%s, %.0f tokens/s per GPU)", f->gpus, verb, f->gpus,
                 f->dp, f->nodes, f->nodes == 1 ? "" : "s", f->gpus_tokens_per_s_gpu);
    return buf;
}

/* When nothing fits: per class of candidates, what binds and what alone would make it fit. Host
 * RAM figures are node totals (the tensors, the ranks' processes and the OS reserve). */
static void print_classes(const struct plan_setup *c, const struct sim_tune_run *t)
{
    char g[6][32], usable[32], host[32];
    cli_gib(usable, sizeof usable, t->hw.gpu_mem_bytes - t->headroom_bytes);
    cli_gib(host, sizeof host, t->hw.host_mem_bytes);
    printf("\nno fit     nothing fits %d GPU%s of %s GiB (%s GiB usable: %s GiB headroom) with %s GiB of host RAM per "
           "node; host RAM counts the tensors, the ranks' processes and the OS reserve. By class of candidate:\n",
           c->layout.world, c->layout.world == 1 ? "" : "s", cli_gib(g[0], sizeof g[0], t->hw.gpu_mem_bytes), usable,
           cli_gib(g[1], sizeof g[1], t->headroom_bytes), host);
    for (int cl = 0; cl < SIM_TUNE_N_CLASSES; cl++) {
        const struct sim_tune_class_stats *k = &t->res.ans.cls[cl];
        const struct sim_tune_fix *f = &t->fix[cl];
        char name[96];
        if (cl == SIM_TUNE_NO_OFFLOAD)
            snprintf(name, sizeof name, "no offload (offload_optimizer none%s)", k->ratio_hi > 0 || k->evaluated == 0 ? "" : " or ratio 0");
        else if (cl == SIM_TUNE_PARTIAL)
            snprintf(name, sizeof name, "partial offload (ratio %.2f to %.2f)", k->ratio_lo, k->ratio_hi);
        else
            snprintf(name, sizeof name, "full offload (ratio 1)");
        if (k->evaluated == 0) {
            printf("           %s: not searched (no candidate ratio of the class)\n", cl == SIM_TUNE_PARTIAL ?
                   "partial offload" : name);
            continue;
        }
        const char *b = sim_tune_binds(k);
        printf("           %s, %d candidates: ", name, k->evaluated);
        if (strcmp(b, "gpu") == 0) {
            printf("GPU memory binds: the lightest needs %s GiB per GPU, above the %s GiB usable",
                   cli_gib(g[0], sizeof g[0], gib_up(k->min_gpu_bytes)), usable);
            if (k->min_gpu_bytes_host_ok > k->min_gpu_bytes)   /* the lightest on the GPU is too heavy on the host */
                printf(" (the lightest that also fits the host RAM needs %s GiB)",
                       cli_gib(g[1], sizeof g[1], gib_up(k->min_gpu_bytes_host_ok)));
        }
        else if (strcmp(b, "host") == 0)
            printf("host RAM binds: %d fit the GPU, and the lightest of them on the host needs %s GiB per node, "
                   "above the node's %s GiB", k->gpu_fit, cli_gib(g[0], sizeof g[0], gib_up(k->min_host_node_bytes)), host);
        else if (strcmp(b, "gpu_or_host") == 0)
            printf("GPU memory or host RAM binds, one or the other: the %d that fit the GPU need %s GiB of host RAM "
                   "per node or more (the node has %s GiB), the %d that fit the host need %s GiB per GPU or more (%s "
                   "GiB usable)", k->gpu_fit, cli_gib(g[0], sizeof g[0], gib_up(k->min_host_node_bytes)), host,
                   k->host_fit, cli_gib(g[1], sizeof g[1], gib_up(k->min_gpu_bytes_host_ok)), usable);
        else
            printf("GPU memory and host RAM both bind: every candidate needs more of each; the lightest on the GPU "
                   "needs %s GiB per GPU (%s GiB usable) and %s GiB of host RAM per node (the node has %s GiB)",
                   cli_gib(g[0], sizeof g[0], gib_up(k->min_gpu_bytes)), usable,
                   cli_gib(g[1], sizeof g[1], gib_up(k->host_at_min_gpu_bytes)), host);
        char alt[4][160];
        int n = 0;
        if (f->host_mem_bytes) {
            cli_gib(g[2], sizeof g[2], gib_up(f->host_mem_bytes));
            snprintf(alt[n++], sizeof alt[0], "%s GiB of host RAM per node (--host-mem %sGiB)", g[2], g[2]);
        }
        if (f->gpu_mem_bytes) {
            cli_gib(g[3], sizeof g[3], gib_up(f->gpu_mem_bytes));
            snprintf(alt[n++], sizeof alt[0], "GPUs of %s GiB (--gpu-mem %sGiB)", g[3], g[3]);
        }
        if (f->both_gpu_mem_bytes) {
            cli_gib(g[4], sizeof g[4], gib_up(f->both_gpu_mem_bytes));
            cli_gib(g[5], sizeof g[5], gib_up(f->both_host_mem_bytes));
            snprintf(alt[n++], sizeof alt[0], "GPUs of %s GiB together with %s GiB of host RAM per node (--gpu-mem "
                     "%sGiB --host-mem %sGiB)", g[4], g[5], g[4], g[5]);
        }
        if (f->gpus)
            gpus_text(f, "", alt[n++], sizeof alt[0]);
        if (n == 0) {
            printf("; neither more GPU memory, more host RAM nor up to %d GPUs makes it fit\n", c->layout.world * 64);
            continue;
        }
        printf("; it would fit with ");
        for (int i = 0; i < n; i++)
            printf("%s%s", i == 0 ? "" : i == n - 1 ? ", or " : ", ", alt[i]);
        if (!f->gpus)
            printf(" (more GPUs alone do not: none up to %d)", c->layout.world * 64);
        printf("\n");
    }
}

/* --hw's comma-separated profile names, split in buf (n bytes) into names[0..*n_hw). */
static int hw_names(const char *list, char *buf, size_t n, char **names, int *n_hw, struct rl_err *e)
{
    snprintf(buf, n, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n_hw == MAX_HW)
            return rl_errf(e, RL_EINVAL, "--hw: '%s' names more than %d profiles", list, MAX_HW);
        names[(*n_hw)++] = tok;
    }
    return *n_hw == 0 ? rl_errf(e, RL_EINVAL, "--hw: '%s' names no profile", list) : 0;
}

/* The searches' output (JSON, one profile's text, or the table of several), the warnings once
 * something fits, and when nothing does, what binds on standard error. Returns 0, or 1 when
 * nothing fits. */
static int report(const struct plan_setup *c, const struct sim_train *train, const struct tune_args *a,
                  const struct sim_tune_request *q, const struct sim_tune_run *runs, int n_hw)
{
    int found = 0;
    for (int i = 0; i < n_hw; i++)
        found += runs[i].res.found;
    if (a->json) {
        const struct sim_tune_json_text x = {
            .dtype_origin = cli_dtype_source(c), .attention = cli_sim_attention(train, &c->model.arch),
            .attention_origin = cli_sim_attention_origin(train, &c->model.arch),
            .reserve_origin = train->gpu_reserve_bytes >= 0 ? "--reserve" : "profile"};
        json_t *o = sim_tune_json(c, runs, n_hw, train, &x);
        char *text = cli_json_dumps(cli_json_versioned(o), JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        printf("%s\n", text);
        free(text);
        json_decref(o);
    } else if (n_hw == 1) {
        print_search(c, &runs[0], a, q);
        if (runs[0].res.found)
            print_answer(c, &runs[0]);
        else
            print_classes(c, &runs[0]);
    } else {
        print_table(c, train, runs, n_hw);
    }
    if (found)
        cli_sim_warn_layout(&c->layout);
    for (int i = 0; found && i < n_hw; i++)   /* after the answer: a refusal stays one line */
        cli_sim_warn_defaults(&runs[i].hw, &c->layout);
    if (found)
        return 0;
    char why[512], more[256] = "; ";
    if (n_hw == 1 && runs[0].fix[SIM_TUNE_N_CLASSES].gpus)
        gpus_text(&runs[0].fix[SIM_TUNE_N_CLASSES], " would fit", more + 2, sizeof more - 2);
    else
        more[0] = 0;
    fprintf(stderr, "ratiolab tune: no ratio fits: %s%s; or a shorter --seq-len (now %lld)\n",
            binding(&runs[0], why, sizeof why), more, (long long)c->model.arch.seq_len);
    return 1;
}

static int run(int argc, char **argv)
{
    struct plan_inputs s;
    plan_inputs_init(&s);
    s.dtype_from_model = true;   /* the Trainer runs the checkpoint's precision */
    struct cli_sim sim;
    cli_sim_init(&sim);
    struct tune_args a = {.ratios = "0:1:0.05", .tol = PLAN_RATIO_TOLERANCE, .headroom = -1};
    struct cli_optset sets[] = {
        {"tune options", opts, on_opt, &a},
        {"hardware and training", cli_sim_opts, cli_sim_opt, &sim},
        {"model, layout and DeepSpeed config", cli_setup_opts, cli_setup_opt, &s},
    };
    struct rl_err e = {0};
    int rc = cli_command_parse("tune", argc, argv,
                 "ratiolab tune --model NAME --hw NAME[,NAME..] [--gpus N] [--ds-config FILE] [--headroom 4GiB]\n"
                 "                     [--global-batch N] [--micro-batches 1,2,4] [--ratios 0:1:0.05] [--json]",
                 "Answers \"which ratio, how much host RAM, how fast?\": searches micro-batch (powers of two\n"
                 "and the config's), activation checkpointing off/on (--checkpoint-activations: on only)\n"
                 "and the offload ratio together, for a fixed global batch when one is given (gradient\n"
                 "accumulation follows), and prints the configuration with the most tokens/s per GPU whose\n"
                 "predicted GPU memory leaves --headroom free, the host RAM a node needs, and the DeepSpeed\n"
                 "config block to paste. Under a DeepSpeed policy (the default) every candidate is a\n"
                 "(ratio, sub_group_size) pair that DeepSpeed honors, so the answer is one DeepSpeed runs;\n"
                 "the exact policy's best is shown beside it. --hw a,b,c compares profiles side by side.\n"
                 "Exit 1 when nothing fits, saying what binds and what would fit.",
                               sets, 3);
    if (rc != CLI_GO_ON)
        return rc;
    double *ratios = NULL;
    size_t n_ratios = 0;
    if ((rc = rl_parse_ratio_list("--ratios", a.ratios, 0, 1, &ratios, &n_ratios, &e)))
        return cli_fail("tune", &e);
    struct plan_setup c;
    if ((rc = cli_setup_resolve(&s, &c, &e))) {
        free(ratios);
        plan_setup_free(&c);
        return cli_fail("tune", &e);
    }
    int64_t mbs[MAX_MBS];
    int n_mbs = 0, n_hw = 0;
    char hwlist[1024], *names[MAX_HW];
    if (!(rc = hw_names(sim.hw, hwlist, sizeof hwlist, names, &n_hw, &e)))
        rc = sim_tune_micro_batches_parse(a.mbs, &c.zero, mbs, &n_mbs, &e) ? cli_err_flag(&e, "micro_batches", "--micro-batches") : 0;
    struct sim_tune_run *runs = calloc((size_t)(n_hw > 0 ? n_hw : 1), sizeof *runs);
    if (!rc && !runs)
        rc = rl_errf(&e, RL_ENOMEM, "tune: out of memory");
    const struct sim_tune_request q = {
        .model = &c.model, .layout = &c.layout, .zero = &c.zero, .popt = c.popt, .train = sim.train,
        .ratios = ratios, .n_ratios = n_ratios, .micro_batches = mbs, .n_micro_batches = n_mbs,
        .ckpt_off = !sim.train.checkpoint_activations, .ckpt_on = true, .no_offload = true,
        .global_batch = a.global_batch > 0 ? a.global_batch : c.zero.src_train_batch == PLAN_SRC_CONFIG ? c.zero.train_batch : 0,
        .tol = a.tol, .more_policies = c.more_policies, .n_more = c.n_more};
    for (int i = 0; i < n_hw && !rc; i++) {
        sim.hw = names[i];
        if ((rc = cli_sim_load_hw(&sim, &c, &runs[i].hw, &e)))
            break;
        if ((rc = sim_tune_profile(&q, a.headroom, &runs[i], &e))) {
            cli_sim_err(&e);
            rl_err_prefix(&e, "--hw %s", names[i]);
        }
    }
    if (!rc)
        rc = report(&c, &sim.train, &a, &q, runs, n_hw);
    free(runs);
    free(ratios);
    plan_setup_free(&c);
    if (rc < 0)
        return cli_fail("tune", &e);
    return rc;
}

const struct cli_cmd cli_cmd_tune = {"tune", "the micro-batch, checkpointing and ratio with the most tokens/s that fit, and the host RAM", run};
