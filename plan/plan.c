/* plan/plan.c — ZeRO-3 partitioning, sub-groups, placement policies and the memory ledger.
 *
 * Complexity: plan_build is O(T) in the number of tensors T (plus the ledger, O(1) buffers);
 * plan_max_honoring_sub_group_size evaluates O(log(max group) x 256) candidate sizes at O(T)
 * each. */
#include <limits.h>   /* INT_MAX */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ds_rules.h"
#include "plan/plan.h"
#include "plan/step.h"

/* ---- names ----------------------------------------------------------------------------------- */

/* The sub-groups [*lo, *hi) of n that a DeepSpeed rule puts on the CPU, as its Python computes it
 * in double. */
typedef void ds_cpu_range_fn(double ratio, int n, int *lo, int *hi);
static void cpu_range_ds012(double ratio, int n, int *lo, int *hi)
{
    *lo = 0;
    *hi = (int)floor(ratio * (double)n);
}
static void cpu_range_ds018(double ratio, int n, int *lo, int *hi)
{
    *lo = (int)floor((1.0 - ratio) * (double)n);
    *hi = n;
}
/* The worked numbers of a rule for ratio r over N sub-groups, after its sentence. */
typedef void rule_worked_fn(double r, int N, char *buf, size_t n);
static void worked_ds012(double r, int N, char *buf, size_t n)
{
    snprintf(buf, n, " = floor(%g x %d) = %d", r, N, (int)floor(r * N));
}
static void worked_ds018(double r, int N, char *buf, size_t n)
{
    snprintf(buf, n, " = floor(%.17g x %d) = %d", 1.0 - r, N, (int)floor((1.0 - r) * N));
}
static void worked_exact(double r, int N, char *buf, size_t n)
{
    (void)r, (void)N;
    snprintf(buf, n, " (granule %d elements)", PLAN_EXACT_GRANULE);
}
static bool rows_ds012(const struct plan_ds_rules *r) { return r->policy == PLAN_POLICY_DS012; }
static bool rows_ds018(const struct plan_ds_rules *r) { return r->policy == PLAN_POLICY_DS018; }

/* The placement policies, a row each in enum plan_policy's order: the name, the rule as the plan
 * states it, and what applies it. A DeepSpeed rule (cpu_range set) counts sub-groups and names
 * the releases it holds for (their rows in ds_rules.c); the exact policy splits elements. */
static const struct {
    const char *name;              /* as --policy names it */
    const char *rule;              /* the rule as a sentence's predicate (NULL: auto, resolved first) */
    ds_cpu_range_fn *cpu_range;    /* the sub-groups on the CPU (NULL: element granularity) */
    plan_ds_rows_fn *releases;     /* the ds_rules.c rows with this rule (NULL: none) */
    rule_worked_fn *worked;        /* the rule's numbers for one plan */
} policy_rows[] = {
    {"auto", NULL, NULL, NULL, NULL},
    {"deepspeed-0.12", "puts sub-group i on the CPU iff i < floor(ratio x N)", cpu_range_ds012, rows_ds012,
     worked_ds012},
    {"deepspeed-0.18", "puts sub-group i on the CPU iff i >= floor((1 - ratio) x N)", cpu_range_ds018, rows_ds018,
     worked_ds018},
    {"exact", "the exact policy splits at element granularity", NULL, NULL, worked_exact},
};
static const char *const device_names[] = {"gpu", "cpu-pinned", "cpu-pageable"};
static const char *const ledger_names[] = {"auto", "deepspeed-0.12", "deepspeed-0.13", "exec"};
static const char *const stage_names[] = {"after_fp16_partitions", "after_fp32_partitions",
                                          "after_optimizer_states", "after_zero_optimizer",
                                          "after_first_step"};
_Static_assert(RL_COUNT(policy_rows) == PLAN_POLICY_COUNT, "a row per enum plan_policy");
_Static_assert(RL_COUNT(device_names) == PLAN_DEVICE_COUNT, "a name per enum plan_device");
_Static_assert(RL_COUNT(ledger_names) == PLAN_LEDGER_COUNT, "a name per enum plan_ledger_kind");
_Static_assert(RL_COUNT(stage_names) == PLAN_STAGE_COUNT, "a name per enum plan_stage");

const char *plan_policy_name(enum plan_policy p) { return policy_rows[p].name; }
const char *plan_device_name(enum plan_device d) { return device_names[d]; }
const char *plan_ledger_name(enum plan_ledger_kind k) { return ledger_names[k]; }
const char *plan_stage_name(enum plan_stage s) { return stage_names[s]; }

/* "a, b, c": the names of an enum, for the "allowed:" part of a message and for help texts. */
static void names_text(const char *const *names, int n_names, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n_names && o + 1 < n; i++) {
        int w = snprintf(buf + o, n - o, "%s%s", i ? ", " : "", names[i]);
        o = w > 0 && o + (size_t)w < n ? o + (size_t)w : n - 1;
    }
}

void plan_policy_names(char *buf, size_t n)
{
    const char *names[PLAN_POLICY_COUNT];
    for (int i = 0; i < PLAN_POLICY_COUNT; i++)
        names[i] = policy_rows[i].name;
    names_text(names, PLAN_POLICY_COUNT, buf, n);
}
void plan_ledger_names(char *buf, size_t n) { names_text(ledger_names, PLAN_LEDGER_COUNT, buf, n); }

int plan_policy_parse(const char *s, enum plan_policy *p, struct rl_err *e)
{
    for (int i = 0; i < PLAN_POLICY_COUNT; i++)
        if (rl_streq(s, policy_rows[i].name)) {
            *p = (enum plan_policy)i;
            return 0;
        }
    char allowed[128];
    plan_policy_names(allowed, sizeof allowed);
    return rl_errf(e, RL_EINVAL, "policy: '%s' is not a policy; allowed: %s", s ? s : "", allowed);
}

int plan_ledger_parse(const char *s, enum plan_ledger_kind *k, struct rl_err *e)
{
    for (int i = 0; i < PLAN_LEDGER_COUNT; i++)
        if (rl_streq(s, ledger_names[i])) {
            *k = (enum plan_ledger_kind)i;
            return 0;
        }
    char allowed[128];
    plan_ledger_names(allowed, sizeof allowed);
    return rl_errf(e, RL_EINVAL, "ledger: '%s' is not a ledger; allowed: %s", s ? s : "", allowed);
}

int plan_policy_for_version(struct rl_version v, enum plan_policy *p, struct rl_err *e)
{
    int rc = plan_ds_version_check(v, e);
    if (rc)
        return rc;
    *p = plan_ds_rules_for(v)->policy;
    return 0;
}

void plan_rule_sentence(const struct plan *p, char *buf, size_t n)
{
    enum plan_policy pol = p->policy >= 0 && p->policy < PLAN_POLICY_COUNT ? p->policy : PLAN_POLICY_AUTO;
    char worked[96] = "", lines[96] = "";
    if (!policy_rows[pol].rule) {
        snprintf(buf, n, "policy %s: no rule until it is resolved", policy_rows[pol].name);
        return;
    }
    policy_rows[pol].worked(p->requested_ratio, p->n_subgroups, worked, sizeof worked);
    if (!policy_rows[pol].releases) {
        snprintf(buf, n, "%s%s", policy_rows[pol].rule, worked);
        return;
    }
    plan_ds_rows_lines(policy_rows[pol].releases, lines, sizeof lines);
    snprintf(buf, n, "DeepSpeed %s %s%s", lines, policy_rows[pol].rule, worked);
}

/* ---- sub-groups and placement ------------------------------------------------------------- */

/* Packs sub-groups the way DeepSpeed's _create_fp16_sub_groups does, per param group in order:
 * a group whose per-rank size is <= sgs is one sub-group; otherwise tensors are appended and a
 * sub-group closes once it holds >= sgs elements (or at the group's last tensor). Fills sizes
 * (numel per sub-group) when not NULL and returns the count. */
static int pack_range(const struct plan *p, int64_t sgs, struct plan_subgroup *out, int lo, int hi,
                      int64_t *range_numel);

static int pack(const struct plan *p, int64_t sgs, struct plan_subgroup *out)
{
    return pack_range(p, sgs, out, 0, 0, NULL);
}

/* pack(), also summing into *range_numel (when not NULL) the elements of sub-groups lo..hi-1. */
static int pack_range(const struct plan *p, int64_t sgs, struct plan_subgroup *out, int lo, int hi,
                      int64_t *range_numel)
{
    int n = 0, pos = 0;
    if (range_numel)
        *range_numel = 0;
    int64_t offset = 0;
    for (int g = 0; g < p->n_groups; g++) {
        int start = pos;
        while (pos < p->model->n_tensors && p->model->tensors[p->order[pos]].group == g)
            pos++;
        if (pos == start)
            continue;
        bool whole = p->group_numel[g] <= sgs;
        int first = start;
        int64_t acc = 0;
        for (int i = start; i < pos; i++) {
            acc += p->part_numel[p->order[i]];
            if ((!whole && acc >= sgs) || i == pos - 1) {
                if (out)
                    out[n] = (struct plan_subgroup){.index = n, .group = g, .first = first,
                                                    .n_tensors = i - first + 1, .offset = offset,
                                                    .numel = acc, .cpu_numel = 0};
                offset += acc;
                if (range_numel && n >= lo && n < hi)
                    *range_numel += acc;
                n++;
                first = i + 1;
                acc = 0;
            }
        }
    }
    return n;
}

/* The sub-groups [*lo, *hi) of n that DeepSpeed's rule puts on the CPU (the policy's row): the
 * first floor(ratio x n) under 0.12 (PLAN_POLICY_DS012), the last n - floor((1 - ratio) x n) under
 * 0.18. Returns their number. */
static int ds_cpu_subgroups(enum plan_policy pol, double ratio, int n, int *lo, int *hi)
{
    policy_rows[pol].cpu_range(ratio, n, lo, hi);
    if (*hi > n)
        *hi = n;
    if (*lo < 0)
        *lo = 0;
    return *hi > *lo ? *hi - *lo : 0;
}

static int64_t exact_cpu_numel(double ratio, int64_t total)
{
    if (ratio >= 1.0)
        return total;
    int64_t granules = (int64_t)llround(ratio * (double)total / PLAN_EXACT_GRANULE);
    int64_t c = granules * PLAN_EXACT_GRANULE;
    return c > total ? total : c;
}

/* Marks cpu_numel on sub-groups sg[0..n) and returns the CPU element count. */
static int64_t place(enum plan_policy pol, double ratio, struct plan_subgroup *sg, int n, int64_t total)
{
    int64_t cpu = 0;
    if (pol == PLAN_POLICY_EXACT) {
        int64_t left = exact_cpu_numel(ratio, total);
        for (int i = 0; i < n; i++) {
            sg[i].cpu_numel = left < sg[i].numel ? left : sg[i].numel;
            left -= sg[i].cpu_numel;
            cpu += sg[i].cpu_numel;
        }
        return cpu;
    }
    int lo, hi;
    ds_cpu_subgroups(pol, ratio, n, &lo, &hi);
    for (int i = 0; i < n; i++) {
        sg[i].cpu_numel = (i >= lo && i < hi) ? sg[i].numel : 0;
        cpu += sg[i].cpu_numel;
    }
    return cpu;
}

/* ---- ledger --------------------------------------------------------------------------------- */

static int add_buf(struct plan *p, const char *name, enum plan_device dev, enum plan_dtype dt,
                   int64_t numel, enum plan_stage st)
{
    if (numel <= 0)
        return 0;
    struct plan_buffer *b = &p->buffers[p->n_buffers++];
    snprintf(b->name, sizeof b->name, "%s", name);
    b->device = dev;
    b->dtype = dt;
    b->numel = numel;
    b->stage = st;
    /* plan_build bounds every element count far below the overflow; checked all the same. */
    return __builtin_mul_overflow(numel, (int64_t)plan_dtype_bytes(dt), &b->bytes) ? -1 : 0;
}

/* Fills p->buffers and p->stages; -1 when a byte count would overflow int64. */
static int build_ledger(struct plan *p)
{
    int bad = 0;
    const struct plan_zero *z = &p->zero;
    const int64_t P = p->per_rank_numel, Pc = p->cpu_numel, Pg = p->gpu_numel;
    const enum plan_dtype md = z->dtype;
    const bool off = z->offload == PLAN_OFFLOAD_CPU;
    const enum plan_device pinned_or_not = z->pin_memory ? PLAN_DEV_CPU_PINNED : PLAN_DEV_CPU_PAGEABLE;

    if (p->ledger_kind == PLAN_LEDGER_EXEC) {
        bad |= add_buf(p, "param_partition", PLAN_DEV_GPU, md, P, PLAN_STAGE_FP16_PARTITIONS);
        bad |= add_buf(p, "fp32_master_gpu", PLAN_DEV_GPU, PLAN_FP32, Pg, PLAN_STAGE_FP32_PARTITIONS);
        bad |= add_buf(p, "fp32_master_cpu", PLAN_DEV_CPU_PINNED, PLAN_FP32, Pc, PLAN_STAGE_FP32_PARTITIONS);
        bad |= add_buf(p, "fp32_grad_gpu", PLAN_DEV_GPU, PLAN_FP32, Pg, PLAN_STAGE_OPTIMIZER_STATES);
        bad |= add_buf(p, "fp32_grad_cpu", PLAN_DEV_CPU_PINNED, PLAN_FP32, Pc, PLAN_STAGE_OPTIMIZER_STATES);
        bad |= add_buf(p, "adam_m_gpu", PLAN_DEV_GPU, PLAN_FP32, Pg, PLAN_STAGE_OPTIMIZER_STATES);
        bad |= add_buf(p, "adam_v_gpu", PLAN_DEV_GPU, PLAN_FP32, Pg, PLAN_STAGE_OPTIMIZER_STATES);
        bad |= add_buf(p, "adam_m_cpu", PLAN_DEV_CPU_PINNED, PLAN_FP32, Pc, PLAN_STAGE_OPTIMIZER_STATES);
        bad |= add_buf(p, "adam_v_cpu", PLAN_DEV_CPU_PINNED, PLAN_FP32, Pc, PLAN_STAGE_OPTIMIZER_STATES);
        bad |= add_buf(p, "reduce_scatter_bucket", PLAN_DEV_GPU, md, plan_exec_bucket_numel(p),
                       PLAN_STAGE_ZERO_OPTIMIZER);
        if (Pc > 0)
            bad |= add_buf(p, "h2d_staging", PLAN_DEV_CPU_PINNED, md, 2 * step_chunk_buffer_numel(Pc, p->exec_chunk_numel),
                           PLAN_STAGE_ZERO_OPTIMIZER);
    } else {
        const bool ds012 = p->ledger_kind == PLAN_LEDGER_DS012;
        if (off && plan_ds_rules_for(z->ds_version)->cpu_adam_tiles)
            bad |= add_buf(p, "cpu_adam_tiles", PLAN_DEV_CPU_PINNED, PLAN_FP32,
                           PLAN_DS_CPU_ADAM_TILES * PLAN_DS_CPU_ADAM_TILE_NUMEL, PLAN_STAGE_FP16_PARTITIONS);
        /* offload_param "cpu": the 16-bit partitions live in one flat host buffer per param group,
         * pinned whatever offload_param.pin_memory says (stage3.py
         * _create_param_groups_fp16_flat_cpu_memory: get_accelerator().pin_memory(torch.empty(...));
         * v0.12.4 line 647, v0.14.4 line 654, v0.16.4 line 696), and are fetched to the GPU before
         * each all-gather (sim/step.c param_fetch). */
        bad |= add_buf(p, "fp16_partitions", z->offload_param == PLAN_OFFLOAD_CPU ? PLAN_DEV_CPU_PINNED : PLAN_DEV_GPU,
                       md, P, PLAN_STAGE_FP16_PARTITIONS);
        bad |= add_buf(p, "fp32_partitions_gpu", PLAN_DEV_GPU, PLAN_FP32, Pg, PLAN_STAGE_FP32_PARTITIONS);
        bad |= add_buf(p, "fp32_partitions_cpu", PLAN_DEV_CPU_PAGEABLE, PLAN_FP32, Pc, PLAN_STAGE_FP32_PARTITIONS);
        /* The fp32 gradients of the sub-groups: with optimizer offload each sub-group's own buffer,
         * kept (stage3.py initialize_optimizer_states: pinned on the host, `.to()` the GPU for the
         * sub-groups it keeps; v0.12.4:998-1002). Without offload they share one buffer of the largest
         * sub-group while the states are initialized, set to None after it (v0.12.4:1030-1032,
         * v0.19.8:1366-1368): nothing stays; each step forms one sub-group's fp32 gradient at a time
         * (_prepare_fp32_grad_for_sub_group) and frees it. */
        if (off) {
            bad |= add_buf(p, "fp32_grads_gpu", PLAN_DEV_GPU, PLAN_FP32, Pg, PLAN_STAGE_OPTIMIZER_STATES);
            bad |= add_buf(p, "fp32_grads_cpu", PLAN_DEV_CPU_PINNED, PLAN_FP32, Pc, PLAN_STAGE_OPTIMIZER_STATES);
        }
        enum plan_stage adam_at = ds012 ? PLAN_STAGE_OPTIMIZER_STATES : PLAN_STAGE_FIRST_STEP;
        bad |= add_buf(p, "adam_m_gpu", PLAN_DEV_GPU, PLAN_FP32, Pg, adam_at);
        bad |= add_buf(p, "adam_v_gpu", PLAN_DEV_GPU, PLAN_FP32, Pg, adam_at);
        bad |= add_buf(p, "adam_m_cpu", PLAN_DEV_CPU_PAGEABLE, PLAN_FP32, Pc, adam_at);
        bad |= add_buf(p, "adam_v_cpu", PLAN_DEV_CPU_PAGEABLE, PLAN_FP32, Pc, adam_at);
        /* stage3 IPG bucket: reduce_bucket_size elements of the model dtype */
        bad |= add_buf(p, "reduce_bucket", PLAN_DEV_GPU, md, z->reduce_bucket_size, PLAN_STAGE_ZERO_OPTIMIZER);
        /* grad_partitions_flat_buffer: every partition's gradient in the gradient accumulation dtype
         * (the model's under ZeRO, engine.py get_data_types) on self.device: the host with optimizer
         * offload (pinned with pin_memory), the GPU without (v0.12.4:492-494, v0.19.8:791-795). */
        bad |= add_buf(p, "flat_grad_buffer", off ? pinned_or_not : PLAN_DEV_GPU, md, P, PLAN_STAGE_ZERO_OPTIMIZER);
    }
    for (int s = 0; s < PLAN_STAGE_COUNT; s++) {
        struct plan_stage_total t = s ? p->stages[s - 1] : (struct plan_stage_total){0, 0, 0};
        for (int i = 0; i < p->n_buffers; i++) {
            const struct plan_buffer *b = &p->buffers[i];
            if ((int)b->stage != s)
                continue;
            if (b->device == PLAN_DEV_GPU)
                bad |= __builtin_add_overflow(t.gpu_bytes, b->bytes, &t.gpu_bytes);
            else
                bad |= __builtin_add_overflow(t.cpu_bytes, b->bytes, &t.cpu_bytes);
            if (b->device == PLAN_DEV_CPU_PINNED)
                bad |= __builtin_add_overflow(t.cpu_pinned_bytes, b->bytes, &t.cpu_pinned_bytes);
        }
        p->stages[s] = t;
    }
    return bad ? -1 : 0;
}

int64_t plan_exec_bucket_numel(const struct plan *p)
{
    const int64_t all = p->per_rank_numel * (p->layout.dp > 0 ? p->layout.dp : 1);
    return p->zero.reduce_bucket_size < all ? p->zero.reduce_bucket_size : all;
}

static int64_t scaled(int64_t v, double F)
{
    int64_t s = (int64_t)ceil((double)v / F);
    return s < 1 ? 1 : s;
}

void plan_scale_zero(struct plan_zero *z, int64_t *chunk_numel, double F)
{
    z->sub_group_size = scaled(z->sub_group_size, F);
    z->reduce_bucket_size = scaled(z->reduce_bucket_size, F);
    z->prefetch_bucket_size = scaled(z->prefetch_bucket_size, F);
    if (chunk_numel)
        *chunk_numel = scaled(*chunk_numel, F);
}

/* ---- build ------------------------------------------------------------------------------------ */

void plan_free(struct plan *p)
{
    free(p->part_numel);
    free(p->order);
    free(p->subgroups);
    free(p->buffers);
    memset(p, 0, sizeof *p);
}

int plan_build(struct plan *p, const struct plan_model *m, const struct plan_layout *l,
               const struct plan_zero *z, const struct plan_options *o, struct rl_err *e)
{
    memset(p, 0, sizeof *p);
    int rc;
    if (m->n_tensors <= 0)
        return rl_errf(e, RL_EINVAL, "model %s: has no parameters", m->name);
    if (m->n_groups < 1 || m->n_groups > PLAN_MAX_GROUPS)
        return rl_errf(e, RL_EINVAL, "model %s: %d param groups; allowed 1..%d (call plan_model_group)",
                       m->name, m->n_groups, PLAN_MAX_GROUPS);
    if ((rc = plan_zero_validate(z, e)))
        return rc;
    if (z->offload == PLAN_OFFLOAD_NVME)
        return rl_errf(e, RL_EINVAL, "zero_optimization.offload_optimizer.device: \"nvme\" is not modelled; allowed: \"cpu\", \"none\"");
    p->model = m;
    p->layout = *l;
    p->zero = *z;
    if ((rc = plan_layout_resolve(&p->layout, e)))
        return rc;
    p->policy = o ? o->policy : PLAN_POLICY_AUTO;
    if (p->policy == PLAN_POLICY_AUTO && (rc = plan_policy_for_version(z->ds_version, &p->policy, e)))
        return rc;
    p->ledger_kind = o ? o->ledger : PLAN_LEDGER_AUTO;
    if (p->ledger_kind == PLAN_LEDGER_AUTO)
        p->ledger_kind = plan_ds_rules_for(z->ds_version)->ledger;
    if (p->ledger_kind == PLAN_LEDGER_EXEC && z->offload_param != PLAN_OFFLOAD_NONE)
        return rl_errf(e, RL_EINVAL, "zero_optimization.offload_param: the executor does not offload parameters "
                       "(ZeRO-Infinity); plan and predict model it, run cannot run it");
    p->exec_chunk_numel = o && o->exec_chunk_numel > 0 ? o->exec_chunk_numel : STEP_CHUNK_DEFAULT_NUMEL;
    /* Without offload nothing goes to the CPU, whatever the ratio says. */
    p->requested_ratio = z->offload == PLAN_OFFLOAD_CPU ? z->ratio : 0.0;

    const int T = m->n_tensors, dp = p->layout.dp;
    p->part_numel = malloc((size_t)T * sizeof *p->part_numel);
    p->order = malloc((size_t)T * sizeof *p->order);
    p->subgroups = malloc((size_t)T * sizeof *p->subgroups);
    p->buffers = calloc(32, sizeof *p->buffers);
    if (!p->part_numel || !p->order || !p->subgroups || !p->buffers) {
        plan_free(p);
        return rl_errf(e, RL_ENOMEM, "plan: out of memory for %d tensors", T);
    }
    p->n_groups = m->n_groups;
    int pos = 0;
    for (int g = 0; g < m->n_groups; g++) {
        int first = pos;
        bool keyed = false;
        for (int t = 0; t < T; t++)
            if (m->tensors[t].group == g) {
                p->order[pos++] = t;
                keyed |= m->tensors[t].pack_key > 0;
            }
        /* A group whose packing order was recorded (pack_key > 0) is packed in that order, the
         * unkeyed tensors after it in module order: a stable insertion sort of the group's
         * segment, O(n^2) in its tensors and only for such a group. */
        for (int i = first + 1; keyed && i < pos; i++) {
            int t = p->order[i], k = m->tensors[t].pack_key > 0 ? m->tensors[t].pack_key : INT_MAX, j = i;
            while (j > first && (m->tensors[p->order[j - 1]].pack_key > 0 ? m->tensors[p->order[j - 1]].pack_key
                                                                          : INT_MAX) > k) {
                p->order[j] = p->order[j - 1];
                j--;
            }
            p->order[j] = t;
        }
    }
    if (pos != T) {
        plan_free(p);
        return rl_errf(e, RL_EINVAL, "model %s: a tensor has a param group outside 0..%d", m->name, m->n_groups - 1);
    }
    for (int t = 0; t < T; t++) {
        int64_t n = m->tensors[t].numel;
        if (n <= 0) {
            plan_free(p);
            return rl_errf(e, RL_EINVAL, "model %s: tensor %s has %lld elements; expected > 0", m->name,
                           m->tensors[t].name, (long long)n);
        }
        p->part_numel[t] = n / dp + (n % dp != 0);   /* ceil(n / dp): the last rank is padded */
        p->group_numel[m->tensors[t].group] += p->part_numel[t];
        p->per_rank_numel += p->part_numel[t];   /* <= the model's total, itself checked */
    }
    /* Every ledger total is at most ~24 bytes per element plus the buckets: with at most 2^56
     * elements per rank no byte count can overflow int64. */
    if (p->per_rank_numel > PLAN_MAX_RANK_NUMEL) {
        rc = rl_errf(e, RL_EINVAL, "model %s: %lld parameters per rank (from the config's sizes such as "
                     "vocab_size, hidden_size and layers, divided by DP %d); at most %lld (2^56) can be "
                     "counted in bytes", m->name, (long long)p->per_rank_numel, dp,
                     (long long)PLAN_MAX_RANK_NUMEL);
        plan_free(p);
        return rc;
    }
    p->n_subgroups = pack(p, z->sub_group_size, p->subgroups);
    p->cpu_numel = place(p->policy, p->requested_ratio, p->subgroups, p->n_subgroups, p->per_rank_numel);
    p->gpu_numel = p->per_rank_numel - p->cpu_numel;
    p->honored_ratio = (double)p->cpu_numel / (double)p->per_rank_numel;
    for (int i = 0; i < p->n_subgroups; i++)
        p->cpu_subgroups += p->subgroups[i].cpu_numel > 0;
    if (build_ledger(p) != 0) {
        rc = rl_errf(e, RL_EINVAL, "model %s with zero_optimization.reduce_bucket_size %lld: a memory "
                     "ledger total overflows 8 EiB; allowed: smaller sizes", m->name,
                     (long long)z->reduce_bucket_size);
        plan_free(p);
        return rc;
    }
    return 0;
}

int64_t plan_peak_gpu_bytes(const struct plan *p) { return p->stages[PLAN_STAGE_COUNT - 1].gpu_bytes; }
int64_t plan_peak_cpu_bytes(const struct plan *p) { return p->stages[PLAN_STAGE_COUNT - 1].cpu_bytes; }

int plan_honored_for(const struct plan *p, int64_t sgs, double ratio, double *honored, int *n_subgroups)
{
    /* Two packing passes instead of a sub-group array: nothing to allocate, nothing can fail.
     * The same sums as place(): exact takes its granules, the DeepSpeed rules whole sub-groups. */
    int n = pack(p, sgs, NULL);
    int64_t cpu;
    if (p->policy == PLAN_POLICY_EXACT) {
        int64_t want = exact_cpu_numel(ratio, p->per_rank_numel);
        cpu = want < p->per_rank_numel ? want : p->per_rank_numel;
    } else {
        int lo, hi;
        ds_cpu_subgroups(p->policy, ratio, n, &lo, &hi);
        pack_range(p, sgs, NULL, lo, hi, &cpu);
    }
    *honored = (double)cpu / (double)p->per_rank_numel;
    if (n_subgroups)
        *n_subgroups = n;
    return 0;
}

bool plan_ratio_within(double honored, double requested, double tol)
{
    return fabs(honored - requested) <= tol;
}

bool plan_honors(const struct plan *p, double tol)
{
    return plan_ratio_within(p->honored_ratio, p->requested_ratio, tol);
}

static bool honors(const struct plan *p, int64_t sgs, double tol)
{
    double h;
    return plan_honored_for(p, sgs, p->requested_ratio, &h, NULL) == 0 && plan_ratio_within(h, p->requested_ratio, tol);
}

/* Rounds v down to `digits` significant decimal digits. */
static int64_t round_down_sig(int64_t v, int digits)
{
    int64_t scale = 1;
    while (v / scale >= (int64_t)pow(10, digits))
        scale *= 10;
    return v / scale * scale;
}

int64_t plan_closest_sub_group_size(const struct plan *p, double *honored)
{
    int64_t top = 0, best = 0;
    double best_err = INFINITY;
    for (int g = 0; g < p->n_groups; g++)
        if (p->group_numel[g] > top)
            top = p->group_numel[g];
    for (int64_t s = top; s >= 1; s -= s / 256 > 0 ? s / 256 : 1) {
        double h;
        if (plan_honored_for(p, s, p->requested_ratio, &h, NULL) != 0)
            break;
        if (fabs(h - p->requested_ratio) < best_err) {   /* strict: ties keep the larger size */
            best_err = fabs(h - p->requested_ratio);
            best = s;
            *honored = h;
        }
    }
    return best;
}

bool plan_honors_under(const struct plan *p, int64_t sgs, const enum plan_policy *policies, int n, double tol)
{
    if (!honors(p, sgs, tol))
        return false;
    for (int i = 0; i < n; i++) {
        struct plan q = *p;   /* read-only view: plan_honored_for reads the policy and the groups */
        q.policy = policies[i];
        if (!honors(&q, sgs, tol))
            return false;
    }
    return true;
}

int64_t plan_max_honoring_sub_group_size_under(const struct plan *p, const enum plan_policy *policies, int n,
                                               double tol)
{
    int64_t top = 0;
    for (int g = 0; g < p->n_groups; g++)
        if (p->group_numel[g] > top)
            top = p->group_numel[g];
    int64_t found = 0;
    for (int64_t s = top; s >= 1; s -= s / 256 > 0 ? s / 256 : 1) {
        if (plan_honors_under(p, s, policies, n, tol)) {
            found = s;
            break;
        }
    }
    if (found == 0)
        return 0;
    for (int d = 1; d <= 3; d++) {
        int64_t r = round_down_sig(found, d);
        if (r >= 1 && r * 10 >= found * 9 && plan_honors_under(p, r, policies, n, tol))
            return r;
    }
    return found;
}

int64_t plan_max_honoring_sub_group_size(const struct plan *p, double tol)
{
    int64_t top = 0;
    for (int g = 0; g < p->n_groups; g++)
        if (p->group_numel[g] > top)
            top = p->group_numel[g];
    /* Any size >= the largest group packs every group whole: the current maximum is that. */
    int64_t found = 0;
    for (int64_t s = top; s >= 1; s -= s / 256 > 0 ? s / 256 : 1) {
        if (honors(p, s, tol)) {
            found = s;
            break;
        }
    }
    if (found == 0)
        return 0;
    /* Prefer a round number: the fewest significant digits that still honors. */
    for (int d = 1; d <= 3; d++) {
        int64_t r = round_down_sig(found, d);
        if (r >= 1 && r * 10 >= found * 9 && honors(p, r, tol))
            return r;
    }
    return found;
}

int plan_honor_advice(const struct plan *p, double tol, char *buf, size_t n)
{
    if (plan_honors(p, tol)) {
        buf[0] = 0;
        return 0;
    }
    char rule[256];
    plan_rule_sentence(p, rule, sizeof rule);
    int64_t sgs = p->policy == PLAN_POLICY_EXACT ? 0 : plan_max_honoring_sub_group_size(p, tol);
    int used = snprintf(buf, n, "honored ratio %.4f differs from requested %.4f by %.1f points: %d sub-group%s "
                        "(sub_group_size %lld); %s.",
                        p->honored_ratio, p->requested_ratio, 100 * fabs(p->honored_ratio - p->requested_ratio),
                        p->n_subgroups, p->n_subgroups == 1 ? "" : "s", (long long)p->zero.sub_group_size, rule);
    if ((size_t)used >= n)
        return 1;
    if (sgs > 0) {
        double h;
        int k;
        plan_honored_for(p, sgs, p->requested_ratio, &h, &k);
        snprintf(buf + used, n - (size_t)used,
                 " Fix: sub_group_size %lld (the largest found) gives %d sub-groups and honored ratio %.4f.",
                 (long long)sgs, k, h);
    } else if (p->policy != PLAN_POLICY_EXACT) {
        double h;
        int64_t c = plan_closest_sub_group_size(p, &h);
        snprintf(buf + used, n - (size_t)used,
                 " No sub_group_size honors it within %.1f points: the rule counts sub-groups, not elements, and "
                 "tensors are never split; the closest is sub_group_size %lld (honored %.4f), or use a ratio "
                 "the sub-groups allow.", 100 * tol, (long long)c, h);
    }
    return 1;
}
