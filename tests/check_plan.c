/* tests/check_plan.c — partitioning, sub-group packing, the placement rules and the ledger. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "tests/util.h"

/* A model of n tensors with given sizes and param groups, built by hand (module order). */
struct handmodel {
    struct plan_model m;
    struct plan_tensor t[64];
};

static void mk(struct handmodel *h, int n, const int64_t *numel, const int *group, int n_groups)
{
    memset(h, 0, sizeof *h);
    snprintf(h->m.name, sizeof h->m.name, "hand");
    h->m.tensors = h->t;
    h->m.n_tensors = n;
    h->m.cap_tensors = 64;
    h->m.n_groups = n_groups;
    for (int i = 0; i < n; i++) {
        snprintf(h->t[i].name, sizeof h->t[i].name, "t%d", i);
        h->t[i].ndim = 1;
        h->t[i].shape[0] = numel[i];
        h->t[i].numel = numel[i];
        h->t[i].group = group ? group[i] : 0;
        h->m.total_numel += numel[i];
    }
}


static void build(struct plan *p, const struct handmodel *h, int dp, double ratio, int64_t sgs,
                  enum plan_policy pol)
{
    struct plan_layout l = {.dp = dp, .tp = 1, .pp = 1};
    struct plan_zero z = tu_zero_cpu_offload(ratio, sgs);
    struct plan_options o = {.policy = pol};
    struct rl_err e = {0};
    int rc = plan_build(p, &h->m, &l, &z, &o, &e);
    ck_assert_msg(rc == 0, "plan_build: %s", e.msg);
}

START_TEST(partition_is_ceil_per_tensor)
{
    struct handmodel h;
    const int64_t n[] = {10, 7, 1};
    mk(&h, 3, n, NULL, 1);
    struct plan p;
    build(&p, &h, 4, 0, 1000, PLAN_POLICY_DS012);
    ck_assert_int_eq(p.part_numel[0], 3);   /* ceil(10/4) */
    ck_assert_int_eq(p.part_numel[1], 2);   /* ceil(7/4) */
    ck_assert_int_eq(p.part_numel[2], 1);   /* ceil(1/4): padded */
    ck_assert_int_eq(p.per_rank_numel, 6);
    plan_free(&p);
}
END_TEST

START_TEST(group_at_or_below_sgs_is_one_subgroup)
{
    struct handmodel h;
    const int64_t n[] = {40, 60};
    mk(&h, 2, n, NULL, 1);
    struct plan p;
    build(&p, &h, 1, 0, 100, PLAN_POLICY_DS012);   /* group == sgs */
    ck_assert_int_eq(p.n_subgroups, 1);
    plan_free(&p);
    build(&p, &h, 1, 0, 1000, PLAN_POLICY_DS012);  /* group < sgs */
    ck_assert_int_eq(p.n_subgroups, 1);
    plan_free(&p);
}
END_TEST

START_TEST(group_above_sgs_closes_at_threshold)
{
    struct handmodel h;
    const int64_t n[] = {30, 30, 30, 30, 5};
    mk(&h, 5, n, NULL, 1);
    struct plan p;
    build(&p, &h, 1, 0, 60, PLAN_POLICY_DS012);
    /* 30+30 >= 60 closes; 30+30 closes; 5 is the last tensor */
    ck_assert_int_eq(p.n_subgroups, 3);
    ck_assert_int_eq(p.subgroups[0].numel, 60);
    ck_assert_int_eq(p.subgroups[1].numel, 60);
    ck_assert_int_eq(p.subgroups[2].numel, 5);
    ck_assert_int_eq(p.subgroups[2].offset, 120);
    plan_free(&p);
    build(&p, &h, 1, 0, 61, PLAN_POLICY_DS012);    /* 30+30 < 61, third tensor closes at 90 */
    ck_assert_int_eq(p.n_subgroups, 2);
    ck_assert_int_eq(p.subgroups[0].numel, 90);
    ck_assert_int_eq(p.subgroups[1].numel, 35);
    plan_free(&p);
}
END_TEST

START_TEST(tensor_larger_than_sgs_is_never_split)
{
    struct handmodel h;
    const int64_t n[] = {5, 500, 5, 5};
    mk(&h, 4, n, NULL, 1);
    struct plan p;
    build(&p, &h, 1, 0, 100, PLAN_POLICY_DS012);
    ck_assert_int_eq(p.n_subgroups, 2);
    ck_assert_int_eq(p.subgroups[0].numel, 505);   /* 5 + 500 */
    ck_assert_int_eq(p.subgroups[0].n_tensors, 2);
    ck_assert_int_eq(p.subgroups[1].numel, 10);
    plan_free(&p);
}
END_TEST

START_TEST(subgroups_never_span_groups_and_index_runs_over_groups)
{
    struct handmodel h;
    /* module order interleaves groups: decay, no-decay, decay, no-decay, ... */
    const int64_t n[] = {50, 1, 50, 1, 50, 1};
    const int g[] = {0, 1, 0, 1, 0, 1};
    mk(&h, 6, n, g, 2);
    struct plan p;
    build(&p, &h, 1, 0, 100, PLAN_POLICY_DS012);
    ck_assert_int_eq(p.n_groups, 2);
    ck_assert_int_eq(p.group_numel[0], 150);
    ck_assert_int_eq(p.group_numel[1], 3);
    ck_assert_int_eq(p.n_subgroups, 3);            /* {50,50}, {50}, {1,1,1} */
    ck_assert_int_eq(p.subgroups[0].group, 0);
    ck_assert_int_eq(p.subgroups[1].group, 0);
    ck_assert_int_eq(p.subgroups[2].group, 1);
    ck_assert_int_eq(p.subgroups[2].index, 2);
    ck_assert_int_eq(p.subgroups[2].numel, 3);
    /* the flat order lists group 0 tensors first, in module order */
    ck_assert_int_eq(p.order[0], 0);
    ck_assert_int_eq(p.order[1], 2);
    ck_assert_int_eq(p.order[3], 1);
    plan_free(&p);
}
END_TEST

static void ten_subgroups(struct handmodel *h)
{
    int64_t n[10];
    for (int i = 0; i < 10; i++)
        n[i] = 100;
    mk(h, 10, n, NULL, 1);
}

START_TEST(ds012_puts_first_floor_ratio_n_on_cpu)
{
    struct handmodel h;
    ten_subgroups(&h);
    struct plan p;
    build(&p, &h, 1, 0.3, 100, PLAN_POLICY_DS012);
    ck_assert_int_eq(p.n_subgroups, 10);
    ck_assert_int_eq(p.cpu_subgroups, 3);
    ck_assert_int_eq(p.subgroups[0].cpu_numel, 100);
    ck_assert_int_eq(p.subgroups[2].cpu_numel, 100);
    ck_assert_int_eq(p.subgroups[3].cpu_numel, 0);
    plan_free(&p);
    build(&p, &h, 1, 0.8, 100, PLAN_POLICY_DS012);
    ck_assert_int_eq(p.cpu_subgroups, 8);
    plan_free(&p);
    build(&p, &h, 1, 0.09, 100, PLAN_POLICY_DS012);
    ck_assert_int_eq(p.cpu_subgroups, 0);
    plan_free(&p);
}
END_TEST

START_TEST(ds018_puts_last_and_rounds_in_binary)
{
    struct handmodel h;
    ten_subgroups(&h);
    struct plan p;
    /* 1 - 0.8 = 0.19999999999999996 in binary, x 10 floors to 1: nine sub-groups on the CPU */
    build(&p, &h, 1, 0.8, 100, PLAN_POLICY_DS018);
    ck_assert_int_eq(p.cpu_subgroups, 9);
    ck_assert_int_eq(p.subgroups[0].cpu_numel, 0);
    ck_assert_int_eq(p.subgroups[1].cpu_numel, 100);
    ck_assert_int_eq(p.subgroups[9].cpu_numel, 100);
    ck_assert(fabs(p.honored_ratio - 0.9) < 1e-12);
    plan_free(&p);
    build(&p, &h, 1, 0.3, 100, PLAN_POLICY_DS018);   /* floor(0.7 x 10) = 7 -> 3 on the CPU */
    ck_assert_int_eq(p.cpu_subgroups, 3);
    ck_assert_int_eq(p.subgroups[7].cpu_numel, 100);
    ck_assert_int_eq(p.subgroups[6].cpu_numel, 0);
    plan_free(&p);
}
END_TEST

START_TEST(single_subgroup_staircase)
{
    struct handmodel h;
    const int64_t n[] = {1000};
    mk(&h, 1, n, NULL, 1);
    struct plan p;
    build(&p, &h, 1, 0.99, INT64_C(1000000000), PLAN_POLICY_DS012);
    ck_assert(p.honored_ratio == 0.0);   /* old rule: nothing below 1 */
    plan_free(&p);
    build(&p, &h, 1, 1.0, INT64_C(1000000000), PLAN_POLICY_DS012);
    ck_assert(p.honored_ratio == 1.0);
    plan_free(&p);
    build(&p, &h, 1, 0.01, INT64_C(1000000000), PLAN_POLICY_DS018);
    ck_assert(p.honored_ratio == 1.0);   /* new rule: everything above 0 */
    plan_free(&p);
    build(&p, &h, 1, 0.0, INT64_C(1000000000), PLAN_POLICY_DS018);
    ck_assert(p.honored_ratio == 0.0);
    plan_free(&p);
}
END_TEST

START_TEST(two_subgroups_give_three_plateaus)
{
    struct handmodel h;
    const int64_t n[] = {700, 300};
    const int g[] = {0, 1};
    mk(&h, 2, n, g, 2);
    double seen[16];
    int distinct = 0;
    for (int i = 0; i <= 20; i++) {
        struct plan p;
        build(&p, &h, 1, i / 20.0, INT64_C(1000000000), PLAN_POLICY_DS012);
        bool dup = false;
        for (int k = 0; k < distinct; k++)
            dup |= seen[k] == p.honored_ratio;
        if (!dup)
            seen[distinct++] = p.honored_ratio;
        plan_free(&p);
    }
    ck_assert_int_eq(distinct, 3);   /* 0, 0.7, 1 */
}
END_TEST

START_TEST(exact_is_within_half_a_granule)
{
    unsigned long seed = tu_seed("exact_is_within_half_a_granule");
    srand((unsigned)seed);
    for (int trial = 0; trial < 200; trial++) {
        struct handmodel h;
        int nt = 1 + rand() % 20;
        int64_t n[64];
        for (int i = 0; i < nt; i++)
            n[i] = 1 + rand() % 100000;
        mk(&h, nt, n, NULL, 1);
        double r = (rand() % 10001) / 10000.0;
        struct plan p;
        build(&p, &h, 1 + rand() % 8, r, 1 + rand() % 200000, PLAN_POLICY_EXACT);
        double bound = (double)PLAN_EXACT_GRANULE / (2.0 * (double)p.per_rank_numel) + 1e-15;
        ck_assert_msg(fabs(p.honored_ratio - r) <= bound, "seed %lu trial %d: ratio %g honored %g bound %g",
                      seed, trial, r, p.honored_ratio, bound);
        ck_assert(p.cpu_numel % PLAN_EXACT_GRANULE == 0 || p.cpu_numel == p.per_rank_numel);
        int64_t sum = 0;
        for (int i = 0; i < p.n_subgroups; i++)
            sum += p.subgroups[i].cpu_numel;
        ck_assert_int_eq(sum, p.cpu_numel);
        plan_free(&p);
    }
}
END_TEST

START_TEST(ledger_ds012_totals)
{
    struct handmodel h;
    ten_subgroups(&h);   /* P = 1000 elements per rank */
    struct plan p;
    build(&p, &h, 1, 0.3, 100, PLAN_POLICY_DS012);   /* Pc = 300, Pg = 700 */
    const int64_t P = 1000, Pc = 300, Pg = 700, rbs = 500000000, tiles = INT64_C(1) << 30;
    const struct plan_stage_total *s = p.stages;
    ck_assert_int_eq(s[PLAN_STAGE_FP16_PARTITIONS].gpu_bytes, 2 * P);
    ck_assert_int_eq(s[PLAN_STAGE_FP16_PARTITIONS].cpu_bytes, tiles);
    ck_assert_int_eq(s[PLAN_STAGE_FP32_PARTITIONS].gpu_bytes, 2 * P + 4 * Pg);
    ck_assert_int_eq(s[PLAN_STAGE_FP32_PARTITIONS].cpu_bytes, tiles + 4 * Pc);
    ck_assert_int_eq(s[PLAN_STAGE_OPTIMIZER_STATES].gpu_bytes, 2 * P + 4 * Pg + 4 * Pg + 8 * Pg);
    ck_assert_int_eq(s[PLAN_STAGE_OPTIMIZER_STATES].cpu_bytes, tiles + 4 * Pc + 4 * Pc + 8 * Pc);
    ck_assert_int_eq(s[PLAN_STAGE_ZERO_OPTIMIZER].gpu_bytes, 2 * P + 16 * Pg + 2 * rbs);
    ck_assert_int_eq(s[PLAN_STAGE_ZERO_OPTIMIZER].cpu_bytes, tiles + 16 * Pc + 2 * P);
    ck_assert_int_eq(s[PLAN_STAGE_ZERO_OPTIMIZER].cpu_pinned_bytes, tiles + 4 * Pc + 2 * P);
    ck_assert_int_eq(plan_peak_gpu_bytes(&p), 2 * P + 16 * Pg + 2 * rbs);
    plan_free(&p);
}
END_TEST

START_TEST(ledger_ds013_adam_at_first_step_and_exec)
{
    struct handmodel h;
    ten_subgroups(&h);
    struct plan_layout l = {.dp = 1};
    struct plan_zero z = tu_zero_cpu_offload(0.3, 100);
    z.ds_version = (struct rl_version){0, 16, 0};
    struct plan_options o = {.policy = PLAN_POLICY_DS012};
    struct plan p;
    struct rl_err e = {0};
    ck_assert_int_eq(plan_build(&p, &h.m, &l, &z, &o, &e), 0);
    ck_assert_int_eq(p.ledger_kind, PLAN_LEDGER_DS013);
    const int64_t P = 1000, Pc = 300, Pg = 700, rbs = 500000000;
    /* no CPU-Adam tiles after 0.14.2; Adam states only after the first step */
    ck_assert_int_eq(p.stages[PLAN_STAGE_OPTIMIZER_STATES].gpu_bytes, 2 * P + 8 * Pg);
    ck_assert_int_eq(p.stages[PLAN_STAGE_OPTIMIZER_STATES].cpu_bytes, 8 * Pc);
    ck_assert_int_eq(p.stages[PLAN_STAGE_FIRST_STEP].gpu_bytes, 2 * P + 16 * Pg + 2 * rbs);
    ck_assert_int_eq(p.stages[PLAN_STAGE_FIRST_STEP].cpu_bytes, 16 * Pc + 2 * P);
    plan_free(&p);
    o.ledger = PLAN_LEDGER_EXEC;
    ck_assert_int_eq(plan_build(&p, &h.m, &l, &z, &o, &e), 0);
    /* exec: everything of the CPU share pinned; bucket capped at the model size; 2 staging chunks */
    ck_assert_int_eq(plan_peak_gpu_bytes(&p), 2 * P + 16 * Pg + 2 * P);
    ck_assert_int_eq(plan_peak_cpu_bytes(&p), 16 * Pc + 2 * 2 * Pc);
    ck_assert_int_eq(p.stages[PLAN_STAGE_COUNT - 1].cpu_pinned_bytes, plan_peak_cpu_bytes(&p));
    plan_free(&p);
}
END_TEST

START_TEST(no_offload_means_nothing_on_cpu)
{
    struct handmodel h;
    ten_subgroups(&h);
    struct plan_layout l = {.dp = 1};
    struct plan_zero z;
    plan_zero_defaults(&z);
    z.stage = 3;
    struct plan p;
    struct rl_err e = {0};
    ck_assert_int_eq(plan_build(&p, &h.m, &l, &z, NULL, &e), 0);
    ck_assert(p.honored_ratio == 0.0);
    ck_assert_int_eq(plan_peak_cpu_bytes(&p), 0);
    plan_free(&p);
}
END_TEST

START_TEST(max_honoring_sub_group_size_honors)
{
    struct handmodel h;
    int64_t n[40];
    for (int i = 0; i < 40; i++)
        n[i] = 1000 + 37 * i;
    mk(&h, 40, n, NULL, 1);
    struct plan p;
    build(&p, &h, 1, 0.3, INT64_C(1000000000), PLAN_POLICY_DS012);
    ck_assert(p.honored_ratio == 0.0);
    int64_t s = plan_max_honoring_sub_group_size(&p, 0.01);
    ck_assert_int_gt(s, 0);
    double hr;
    int k;
    ck_assert_int_eq(plan_honored_for(&p, s, 0.3, &hr, &k), 0);
    ck_assert_msg(fabs(hr - 0.3) <= 0.01, "sgs %lld gives %g", (long long)s, hr);
    ck_assert_int_gt(k, 1);
    /* a size above the whole group packs one sub-group and cannot honor 0.3 */
    ck_assert_int_eq(plan_honored_for(&p, p.per_rank_numel, 0.3, &hr, &k), 0);
    ck_assert(hr == 0.0);
    plan_free(&p);
    /* a single tensor cannot be split: no size honors 0.3 */
    const int64_t one[] = {1000};
    mk(&h, 1, one, NULL, 1);
    build(&p, &h, 1, 0.3, INT64_C(1000000000), PLAN_POLICY_DS012);
    ck_assert_int_eq(plan_max_honoring_sub_group_size(&p, 0.01), 0);
    ck_assert_int_eq(plan_closest_sub_group_size(&p, &hr), 1000);   /* all equal: the largest */
    ck_assert(hr == 0.0);
    plan_free(&p);
    /* Unequal tensors {600, 300, 100} at ratio 0.7: no sub_group_size honors it, the closest is 0.6. */
    const int64_t three[] = {600, 300, 100};
    mk(&h, 3, three, NULL, 1);
    build(&p, &h, 1, 0.7, INT64_C(1000000000), PLAN_POLICY_DS012);
    /* sizes: 1 sub-group -> 0; {600},{400} -> floor(1.4)=1 -> 0.6; {600},{300},{100} -> 2 -> 0.9 */
    ck_assert_int_eq(plan_max_honoring_sub_group_size(&p, 0.01), 0);
    int64_t c = plan_closest_sub_group_size(&p, &hr);
    ck_assert(hr == 0.6);
    ck_assert_int_ge(c, 301);   /* 600 closes alone, 300 + 100 together: sizes 301..600 */
    ck_assert_int_le(c, 600);
    plan_free(&p);
}
END_TEST

START_TEST(version_selects_rule)
{
    enum plan_policy p;
    ck_assert_int_eq(plan_policy_for_version((struct rl_version){0, 12, 4}, &p, NULL), 0);
    ck_assert_int_eq(p, PLAN_POLICY_DS012);
    ck_assert_int_eq(plan_policy_for_version((struct rl_version){0, 17, 9}, &p, NULL), 0);
    ck_assert_int_eq(p, PLAN_POLICY_DS012);
    ck_assert_int_eq(plan_policy_for_version((struct rl_version){0, 18, 0}, &p, NULL), 0);
    ck_assert_int_eq(p, PLAN_POLICY_DS018);
    struct rl_err e = {0};
    ck_assert_int_eq(plan_policy_for_version((struct rl_version){0, 12, 2}, &p, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "0.12.3"));
    ck_assert_msg(strncmp(e.msg, "deepspeed_version: ", 19) == 0, "%s", e.msg);
    /* the library names its field, not the flag cli/ puts in its place */
    ck_assert_int_eq(plan_policy_parse("fastest", &p, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "policy: 'fastest' is not a policy; allowed: auto, deepspeed-0.12, deepspeed-0.18, exact");
}
END_TEST

START_TEST(layout_resolves_and_rejects)
{
    struct plan_layout l = {.tp = 8, .world = 16};
    struct rl_err e = {0};
    ck_assert_int_eq(plan_layout_resolve(&l, &e), 0);
    ck_assert_int_eq(l.dp, 2);
    ck_assert_int_eq(l.nodes, 2);
    ck_assert_int_eq(l.gpus_per_node, 8);
    l = (struct plan_layout){.tp = 8, .world = 12};
    ck_assert_int_eq(plan_layout_resolve(&l, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpus: 12"));   /* the field; cli/ names the flag */
    ck_assert_ptr_null(strstr(e.msg, "--"));
    l = (struct plan_layout){.tp = 2, .dp = 3, .world = 8};
    ck_assert_int_eq(plan_layout_resolve(&l, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "dp: 3"));
    l = (struct plan_layout){.nodes = 128, .gpus_per_node = 8, .tp = 8};
    ck_assert_int_eq(plan_layout_resolve(&l, &e), 0);
    ck_assert_int_eq(l.world, 1024);
    ck_assert_int_eq(l.dp, 128);
}
END_TEST

/* ---- DeepSpeed config ingest -------------------------------------------------------------- */

static int parse(const char *json, struct plan_zero *z, struct rl_err *e)
{
    return plan_zero_parse(z, json, "cfg.json", e);
}

START_TEST(hf_example_config_resolves_auto)
{
    /* The examples live beside the repository; without them the suite skips this test. */
    bool found;
    const char *path = tu_shared_example("ds_config_zero3_hf.json", &found);
    struct plan_zero z;
    struct rl_err e = {0};
    ck_assert_msg(plan_zero_load(&z, path, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(z.stage, 3);
    ck_assert_int_eq(z.offload, PLAN_OFFLOAD_CPU);
    ck_assert(z.pin_memory);
    ck_assert(z.ratio == 0.0);
    ck_assert(z.has_optimizer_block);
    ck_assert_str_eq(z.optimizer_type, "AdamW");
    ck_assert_int_eq(z.sub_group_size, 1000000000);
    ck_assert_int_eq(z.src_sub_group_size, PLAN_SRC_DEFAULT);
    ck_assert_int_eq(z.micro_batch, 1);
    ck_assert_int_eq(z.src_micro_batch, PLAN_SRC_AUTO);
    ck_assert_int_eq(z.dtype, PLAN_FP32);
    ck_assert_int_gt(z.n_notes, 0);
}
END_TEST

START_TEST(template_placeholder_is_named)
{
    bool found;
    const char *path = tu_shared_example("ds_config_gpt_TEMPLATE.json", &found);
    struct plan_zero z;
    struct rl_err e = {0};
    int rc = plan_zero_load(&z, path, &e);
    ck_assert_int_eq(rc, RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "train_batch_size: CONFIG_BATCH_SIZE is an unreplaced template placeholder"));
    ck_assert_int_eq(parse("{\"fp16\": {\"enabled\": CONFIG_FP16_ENABLED}}", &z, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "fp16.enabled: CONFIG_FP16_ENABLED"));
}
END_TEST

START_TEST(numbers_in_e_notation_and_versions)
{
    struct plan_zero z;
    struct rl_err e = {0};
    ck_assert_msg(parse("{\"zero_optimization\":{\"stage\":3,\"sub_group_size\":1e8,\"reduce_bucket_size\":5e8,"
                        "\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":0.25}},\"bf16\":{\"enabled\":true}}",
                        &z, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(z.sub_group_size, 100000000);
    ck_assert_int_eq(z.reduce_bucket_size, 500000000);
    ck_assert(z.ratio == 0.25);
    ck_assert_int_eq(z.dtype, PLAN_BF16);
    ck_assert(!z.pin_memory);
}
END_TEST

/* The offload device's name is the config's: each of "none", "cpu", "nvme" read from
 * offload_optimizer.device is written back as the same word by plan_offload_name. */
START_TEST(offload_device_names_read_back)
{
    static const char *const dev[] = {"none", "cpu", "nvme"};
    for (int i = 0; i < 3; i++) {
        char json[160];
        snprintf(json, sizeof json, "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"%s\"}}}",
                 dev[i]);
        struct plan_zero z;
        struct rl_err e = {0};
        ck_assert_msg(plan_zero_parse(&z, json, "cfg.json", &e) == 0, "%s: %s", dev[i], e.msg);
        ck_assert_str_eq(plan_offload_name(z.offload), dev[i]);
    }
    ck_assert_str_eq(plan_offload_name((enum plan_offload)7), "?");
}
END_TEST

Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("partition");
    tcase_add_test(tc, partition_is_ceil_per_tensor);
    tcase_add_test(tc, offload_device_names_read_back);
    tcase_add_test(tc, group_at_or_below_sgs_is_one_subgroup);
    tcase_add_test(tc, group_above_sgs_closes_at_threshold);
    tcase_add_test(tc, tensor_larger_than_sgs_is_never_split);
    tcase_add_test(tc, subgroups_never_span_groups_and_index_runs_over_groups);
    suite_add_tcase(s, tc);
    tc = tcase_create("placement");
    tcase_add_test(tc, ds012_puts_first_floor_ratio_n_on_cpu);
    tcase_add_test(tc, ds018_puts_last_and_rounds_in_binary);
    tcase_add_test(tc, single_subgroup_staircase);
    tcase_add_test(tc, two_subgroups_give_three_plateaus);
    tcase_add_test(tc, exact_is_within_half_a_granule);
    tcase_add_test(tc, max_honoring_sub_group_size_honors);
    tcase_add_test(tc, version_selects_rule);
    suite_add_tcase(s, tc);
    tc = tcase_create("ledger");
    tcase_add_test(tc, ledger_ds012_totals);
    tcase_add_test(tc, ledger_ds013_adam_at_first_step_and_exec);
    tcase_add_test(tc, no_offload_means_nothing_on_cpu);
    suite_add_tcase(s, tc);
    tc = tcase_create("config");
    tcase_add_test(tc, layout_resolves_and_rejects);
    /* Tests of the DeepSpeed example configs in ../shared: a skip, never a pass, without them. */
    const struct {
        const char *file;
        const char *test;
        const TTest *fn;
    } examples[] = {{"ds_config_zero3_hf.json", "plan: hf_example_config_resolves_auto", hf_example_config_resolves_auto},
                    {"ds_config_gpt_TEMPLATE.json", "plan: template_placeholder_is_named", template_placeholder_is_named}};
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        bool found;
        const char *path = tu_shared_example(examples[i].file, &found);
        if (found) {
            tcase_add_test(tc, examples[i].fn);
        } else {
            char why[4300];
            snprintf(why, sizeof why, "%s not found (the DeepSpeed examples beside the repository)", path);
            tu_skip(examples[i].test, why);
        }
    }
    tcase_add_test(tc, numbers_in_e_notation_and_versions);
    suite_add_tcase(s, tc);
    return s;
}
