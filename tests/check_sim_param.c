/* tests/check_sim_param.c — offload_param "cpu" (ZeRO-Infinity parameters on the host) in the
 * deepspeed schedule, the memory prediction and check's hazards, against values computed by
 * hand from DeepSpeed's code (plan/README.md "offload_param, release by release"):
 *   the optimizer's write-back into the host partitions (a host cast for a CPU sub-group; for a
 *   GPU sub-group a blocking copy_ that PyTorch does as a fresh pageable fp32 temporary, a D2H
 *   of 4 bytes per element and a host cast), the per-block fetch (non-blocking at DP 1, blocking
 *   the issuing hook at DP > 1), the GPU's gathered blocks and fetched partition copies, and the
 *   hazards param-pin-ignored and param-gpu-update with the release's pin_memory default. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ds_hazards.h"
#include "plan/ds_rules.h"
#include "plan/plan.h"
#include "sim/hw.h"
#include "sim/step.h"
#include "tests/sim_tiny.h"
#include "tests/util.h"

/* gpt-350m, ZeRO-3 fp16 with the optimizer offloaded at `ratio` (or not at all: ratio < 0) and,
 * with `param`, offload_param "cpu"; world = gpus_per_node = dp; DeepSpeed 0.12.4's placement. */
struct fixture {
    struct plan_model m;
    struct plan_layout l;
    struct plan_zero z;
    struct plan_options o;
    struct plan p;
};

static void fx_init(struct fixture *f, int dp, double ratio, bool param)
{
    struct rl_err e;
    memset(f, 0, sizeof *f);
    f->l.tp = 1;
    f->l.world = dp;
    f->l.gpus_per_node = dp;
    ck_assert_msg(plan_layout_resolve(&f->l, &e) == 0, "%s", e.msg);
    struct plan_model_opts mo = {.tp = 1, .pp = 1, .pp_stage = 0, .seq_len = 0};
    ck_assert_msg(plan_model_load(&f->m, tu_catalog(), "gpt-350m", &mo, &e) == 0, "%s", e.msg);
    plan_model_group(&f->m, PLAN_GROUPS_AUTO, false);
    plan_zero_defaults(&f->z);
    f->z.stage = 3;
    f->z.offload = ratio < 0 ? PLAN_OFFLOAD_NONE : PLAN_OFFLOAD_CPU;
    f->z.pin_memory = true;
    f->z.dtype = PLAN_FP16;
    f->z.ratio = ratio < 0 ? 1.0 : ratio;
    f->z.src_ratio = ratio < 0 ? PLAN_SRC_DEFAULT : PLAN_SRC_CONFIG;
    f->z.offload_param = param ? PLAN_OFFLOAD_CPU : PLAN_OFFLOAD_NONE;
    f->o.policy = PLAN_POLICY_DS012;
    ck_assert_msg(plan_build(&f->p, &f->m, &f->l, &f->z, &f->o, &e) == 0, "%s", e.msg);
}

static void fx_free(struct fixture *f)
{
    plan_free(&f->p);
    plan_model_free(&f->m);
}

/* The model's blocks by hand: embeddings before the first layer, one per layer, what follows. */
struct hand_blocks {
    int n;
    int64_t full[64], part[64];
};
static void hand_blocks(const struct plan *p, struct hand_blocks *b)
{
    const struct plan_model *m = p->model;
    int lo = 1 << 30, hi = -1;
    for (int i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].layer >= 0) {
            lo = m->tensors[i].layer < lo ? m->tensors[i].layer : lo;
            hi = m->tensors[i].layer > hi ? m->tensors[i].layer : hi;
        }
    memset(b, 0, sizeof *b);
    b->n = hi - lo + 3;
    ck_assert_int_le(b->n, 64);
    bool seen = false;
    for (int i = 0; i < m->n_tensors; i++) {
        int l = m->tensors[i].layer, k = l >= 0 ? 1 + l - lo : seen ? b->n - 1 : 0;
        seen |= l >= 0;
        b->full[k] += m->tensors[i].numel;
        b->part[k] += p->part_numel[i];
    }
}

/* Everything on the CPU (ratio 1): the write-back is PyTorch's host cast of each sub-group
 * straight into the pinned 16-bit buffer (4 + 2 B per element on the 2 intra-op threads at
 * 1e9 elements/s each): no 16-bit temporary to fault, no pageable H2D. The only H2D left is the
 * fetch of every block before its use, forward and backward, pinned at 20 GB/s, non-blocking at
 * DP 1. Without offload_param the same step casts into a temporary and copies it H2D. */
START_TEST(cpu_subgroups_cast_into_the_host_partitions)
{
    struct hw_profile hw = tu_sim_tiny_hw();
    struct sim_train t;
    sim_train_defaults(&t);
    t.intraop_threads = 2;
    struct rl_err e;
    struct fixture f, g;
    fx_init(&f, 1, 1.0, true);
    fx_init(&g, 1, 1.0, false);
    ck_assert_int_eq(f.p.cpu_numel, f.p.per_rank_numel);
    struct sim_step_result r, q;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_msg(sim_step_run(&g.p, &hw, &t, NULL, &q, &e) == 0, "%s", e.msg);
    int64_t cast = 0;
    for (int s = 0; s < f.p.n_subgroups; s++)
        cast += tu_ceil_ns((long double)f.p.subgroups[s].cpu_numel / 2e9L * 1e9L);
    ck_assert_int_eq(r.phase[STEP_PH_PARAM_CAST].busy_ns, cast);
    struct hand_blocks b;
    hand_blocks(&f.p, &b);
    int64_t fetch = 0;
    for (int i = 0; i < b.n; i++)
        fetch += 2 * tu_ceil_ns((long double)b.part[i] * 2.0L / 20e9L * 1e9L);
    ck_assert_int_eq(r.phase[STEP_PH_PARAM_H2D].busy_ns, fetch);
    /* no parameter temporary: the faults left are the gradients' and fp16's scan, as without
     * offload_param less the sub-groups' 16-bit temporaries of the copy back */
    int64_t temps = 0;
    for (int s = 0; s < f.p.n_subgroups; s++) {
        long double c = (long double)f.p.subgroups[s].cpu_numel;
        if (c * 2.0L >= 32.0L * 1024 * 1024)
            temps += tu_ceil_ns(c * 2.0L / 2e9L * 1e9L);
    }
    ck_assert_int_gt(temps, 0);
    ck_assert_int_eq(q.phase[STEP_PH_PAGE_FAULT].busy_ns - r.phase[STEP_PH_PAGE_FAULT].busy_ns, temps);
    fx_free(&f);
    fx_free(&g);
}
END_TEST

/* Ratio 0 (every sub-group on the GPU): each sub-group's write-back is a blocking copy_ of its
 * fp32 master into the host partition: a fresh pageable fp32 temporary first touched by the
 * driver's staging copy (1 thread, 1 GB/s) when it is at least 32 MiB, a pageable D2H of 4 B per
 * element (10 GB/s capped by the 5 GB/s memcpy thread), then the host cast on 2 threads. The
 * same without offload_param is a GPU cast kernel (4 + 2 B of HBM per element at 1000 GB/s). */
START_TEST(gpu_subgroups_copy_back_to_the_host)
{
    struct hw_profile hw = tu_sim_tiny_hw();
    struct sim_train t;
    sim_train_defaults(&t);
    t.intraop_threads = 2;
    struct rl_err e;
    struct fixture f, g;
    fx_init(&f, 1, 0.0, true);
    fx_init(&g, 1, 0.0, false);
    ck_assert_int_eq(f.p.cpu_numel, 0);
    ck_assert_int_ge(f.p.n_subgroups, 1);
    struct sim_step_result r, q;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_msg(sim_step_run(&g.p, &hw, &t, NULL, &q, &e) == 0, "%s", e.msg);
    int64_t wb = 0, faults = 0, gpu_cast = 0;
    for (int s = 0; s < f.p.n_subgroups; s++) {
        long double n = (long double)f.p.subgroups[s].numel;
        wb += tu_ceil_ns(n * 4.0L / 5e9L * 1e9L) + tu_ceil_ns(n / 2e9L * 1e9L);
        if (n * 4.0L >= 32.0L * 1024 * 1024)
            faults += tu_ceil_ns(n * 4.0L / 1e9L * 1e9L);
        gpu_cast += tu_ceil_ns(n * 6.0L / 1000e9L * 1e9L);
    }
    ck_assert_int_gt(faults, 0);
    ck_assert_int_eq(r.phase[STEP_PH_PARAM_CAST].busy_ns, wb);
    ck_assert_int_eq(q.phase[STEP_PH_PARAM_CAST].busy_ns, gpu_cast);
    /* fp16's scan of the flat buffer faults 2 x P bytes at 2 GB/s in both */
    long double P = (long double)f.p.per_rank_numel;
    ck_assert_int_eq(q.phase[STEP_PH_PAGE_FAULT].busy_ns, tu_ceil_ns(2.0L * P / 2e9L * 1e9L));
    ck_assert_int_eq(r.phase[STEP_PH_PAGE_FAULT].busy_ns, tu_ceil_ns(2.0L * P / 2e9L * 1e9L) + faults);
    /* the write-back blocks the host: it is all exposed */
    ck_assert_int_eq(r.phase[STEP_PH_PARAM_CAST].exposed_ns, wb);
    ck_assert_int_gt(r.step_ns, q.step_ns);
    fx_free(&f);
    fx_free(&g);
}
END_TEST

/* DP 4 on dgx-a100-40g slowed to 1 TFLOP/s (the compute dwarfs the copies) with a prefetch
 * bucket larger than the model: every block's forward fetch is issued in block 0's pre-forward
 * hook and each `.to(device)` blocks the host, so no forward kernel runs before the last fetch
 * returns: the forward's fetches (half of all, the backward fetches the same bytes) are exposed.
 * Without the host block they ran under the first blocks' compute. */
START_TEST(blocking_fetch_holds_the_issuing_hook)
{
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_msg(sim_hw_load(&hw, tu_catalog(), "dgx-a100-40g", &e) == 0, "%s", e.msg);
    hw.tensor_tflops = 1;
    struct sim_train t;
    sim_train_defaults(&t);
    struct fixture f;
    fx_init(&f, 4, 1.0, true);
    f.p.zero.prefetch_bucket_size = INT64_C(1) << 40;
    struct sim_step_result r;
    ck_assert_msg(sim_step_run(&f.p, &hw, &t, NULL, &r, &e) == 0, "%s", e.msg);
    ck_assert_int_gt(r.phase[STEP_PH_PARAM_H2D].busy_ns, 0);
    ck_assert_int_eq(r.phase[STEP_PH_PARAM_H2D].busy_ns % 2, 0);
    ck_assert_int_ge(r.phase[STEP_PH_PARAM_H2D].exposed_ns, r.phase[STEP_PH_PARAM_H2D].busy_ns / 2);
    /* one copy per parameter: the profile's copy latency each, forward and backward */
    struct hand_blocks b;
    hand_blocks(&f.p, &b);
    int64_t lat = llround(hw.lat_copy_us * 1000) * (int64_t)f.m.n_tensors * 2;
    ck_assert_int_ge(r.phase[STEP_PH_PARAM_H2D].busy_ns, lat);
    fx_free(&f);
}
END_TEST

/* The GPU under offload_param: no 16-bit partition in the ledger, the gathered blocks as
 * without it (step_gather_buffers(depth) of the largest block), and at DP > 1 the fetched
 * partition copies of one gather besides (the largest block's partition); at DP 1 the fetched
 * blocks are the gathered ones (without offload_param nothing is gathered there). */
START_TEST(gpu_holds_gathered_blocks_and_fetched_partitions)
{
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_msg(sim_hw_load(&hw, tu_catalog(), "dgx-a100-40g", &e) == 0, "%s", e.msg);
    struct sim_train t;
    sim_train_defaults(&t);
    struct fixture a, b4, c1, d1;
    fx_init(&a, 4, 1.0, false);
    fx_init(&b4, 4, 1.0, true);
    fx_init(&c1, 1, 1.0, true);
    fx_init(&d1, 1, 1.0, false);
    struct sim_step_result ra, rb, rc, rd;
    ck_assert_msg(sim_step_memory(&a.p, &hw, &t, &ra, &e) == 0, "%s", e.msg);
    ck_assert_msg(sim_step_memory(&b4.p, &hw, &t, &rb, &e) == 0, "%s", e.msg);
    ck_assert_msg(sim_step_memory(&c1.p, &hw, &t, &rc, &e) == 0, "%s", e.msg);
    ck_assert_msg(sim_step_memory(&d1.p, &hw, &t, &rd, &e) == 0, "%s", e.msg);
    struct hand_blocks hb;
    hand_blocks(&b4.p, &hb);
    int64_t full = 0, part = 0;
    for (int i = 0; i < hb.n; i++) {
        full = hb.full[i] > full ? hb.full[i] : full;
        part = hb.part[i] > part ? hb.part[i] : part;
    }
    /* the largest block is gpt-350m's embeddings (50304 x 1024 + 1024 x 2048 positions) */
    ck_assert_int_eq(full, INT64_C(50304) * 1024 + INT64_C(2048) * 1024);
    ck_assert_int_gt(ra.gpu_live_param_bytes, 0);
    ck_assert_int_eq(rb.gpu_live_param_bytes, ra.gpu_live_param_bytes + part * 2);
    ck_assert_int_eq(rd.gpu_live_param_bytes, 0);
    ck_assert_int_eq(rc.gpu_live_param_bytes, ra.gpu_live_param_bytes);
    ck_assert_int_eq(ra.gpu_live_param_bytes % (full * 2), 0);
    /* the ledger: the 16-bit partitions left the GPU for pinned host memory */
    ck_assert_int_eq(ra.gpu_ledger_bytes - rb.gpu_ledger_bytes, b4.p.per_rank_numel * 2);
    fx_free(&a);
    fx_free(&b4);
    fx_free(&c1);
    fx_free(&d1);
}
END_TEST

/* Which hazards a config matches, as a comma-separated list of ids. */
static void ids(const struct plan_zero *z, char *buf, size_t n)
{
    const struct plan_hazard *hz[PLAN_HAZARDS_MAX];
    int k = plan_ds_hazards(z, hz, PLAN_HAZARDS_MAX);
    buf[0] = 0;
    for (int i = 0; i < k; i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? "," : "", hz[i]->id);
}

/* param-pin-ignored: offload_param.pin_memory false as DeepSpeed reads it (given false, or unset
 * before 0.19.5 whose default is false); param-gpu-update: offload_param with GPU-updated
 * sub-groups (no optimizer offload, or a ratio < 1). Neither without offload_param. */
START_TEST(param_offload_hazards)
{
    struct plan_zero z;
    char got[256];
    plan_zero_defaults(&z);
    z.stage = 3;
    z.offload = PLAN_OFFLOAD_CPU;
    z.offload_param = PLAN_OFFLOAD_CPU;
    ids(&z, got, sizeof got);   /* 0.12.4, pin_memory unset: DeepSpeed's default false */
    ck_assert_str_eq(got, "param-pin-ignored");
    z.ds_version = (struct rl_version){0, 19, 4};
    ids(&z, got, sizeof got);
    ck_assert_str_eq(got, "param-pin-ignored");
    z.ds_version = (struct rl_version){0, 19, 5};   /* the default is true from 0.19.5 */
    ids(&z, got, sizeof got);
    ck_assert_str_eq(got, "");
    z.src_offload_param_pin = PLAN_SRC_CONFIG;   /* "pin_memory": false given */
    z.offload_param_pin = false;
    ids(&z, got, sizeof got);
    ck_assert_str_eq(got, "param-pin-ignored");
    const struct plan_hazard *hz[PLAN_HAZARDS_MAX];
    ck_assert_int_eq(plan_ds_hazards(&z, hz, PLAN_HAZARDS_MAX), 1);
    char line[1024];
    plan_hazard_line(hz[0], &z, line, sizeof line);
    ck_assert_msg(strstr(line, "zero_optimization.offload_param.pin_memory false with offload_param.device \"cpu\"") &&
                      strstr(line, "stage3.py") && strlen(line) < 1000,
                  "%s", line);
    ck_assert_int_eq(hz[0]->kind, PLAN_HAZARD_IGNORED);
    z.offload_param_pin = true;
    ids(&z, got, sizeof got);
    ck_assert_str_eq(got, "");
    z.src_ratio = PLAN_SRC_CONFIG;
    z.ratio = 0.5;
    ids(&z, got, sizeof got);
    ck_assert_str_eq(got, "param-gpu-update");
    ck_assert_int_eq(plan_ds_hazards(&z, hz, PLAN_HAZARDS_MAX), 1);
    ck_assert_int_eq(hz[0]->kind, PLAN_HAZARD_SUSPECT);
    plan_hazard_line(hz[0], &z, line, sizeof line);
    ck_assert_msg(strstr(line, "zero_optimization.offload_optimizer ratio 0.5 with offload_param") && strlen(line) < 1000,
                  "%s", line);
    z.offload = PLAN_OFFLOAD_NONE;
    z.src_ratio = PLAN_SRC_DEFAULT;
    z.ratio = 1.0;
    ids(&z, got, sizeof got);
    ck_assert_str_eq(got, "param-gpu-update");
    z.offload_param = PLAN_OFFLOAD_NONE;
    z.offload_param_pin = false;
    ids(&z, got, sizeof got);
    ck_assert_str_eq(got, "");
    /* the release table's default, read in offload_config.py (7dfa67aea, #8207, first in 0.19.5) */
    ck_assert(!plan_ds_rules_for((struct rl_version){0, 19, 4})->offload_pin_default);
    ck_assert(plan_ds_rules_for((struct rl_version){0, 19, 5})->offload_pin_default);
}
END_TEST

/* check on a config with offload_param: pin_memory false fails it (ignored by DeepSpeed), a ratio
 * < 1 with offload_param warns; the JSON names both. */
START_TEST(check_reports_param_offload_hazards)
{
    tu_write("pp.json", "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", "
                        "\"pin_memory\": true, \"ratio\": 0.5}, \"offload_param\": {\"device\": \"cpu\", "
                        "\"pin_memory\": false}}, \"bf16\": {\"enabled\": true}}");
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config pp.json --model gpt-350m --dp 4 --hw dgx-a100-40g");
    ck_assert_msg(r.status == 1, "exit %d: %s%s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.out, "zero_optimization.offload_param.pin_memory false with offload_param.device") != NULL,
                  "%s", r.out);
    ck_assert_msg(strstr(r.out, "param_writeback_d2h") != NULL, "%s", r.out);
    tu_run_free(&r);
    tu_ratiolab(&r, "check --ds-config pp.json --model gpt-350m --dp 4 --hw dgx-a100-40g --json");
    ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", je.text, r.out);
    tu_run_free(&r);
    json_t *hz = json_object_get(j, "hazards");
    ck_assert_int_eq((int)json_array_size(hz), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(hz, 0), "id")), "param-pin-ignored");
    ck_assert(json_is_true(json_object_get(json_array_get(hz, 0), "fails")));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(hz, 1), "id")), "param-gpu-update");
    ck_assert(json_is_false(json_object_get(json_array_get(hz, 1), "fails")));
    json_decref(j);
}
END_TEST

Suite *TU_SUITE(void)
{
    Suite *s = suite_create("sim_param");
    TCase *c = tcase_create("offload_param");
    tcase_add_test(c, cpu_subgroups_cast_into_the_host_partitions);
    tcase_add_test(c, gpu_subgroups_copy_back_to_the_host);
    tcase_add_test(c, blocking_fetch_holds_the_issuing_hook);
    tcase_add_test(c, gpu_holds_gathered_blocks_and_fetched_partitions);
    tcase_add_test(c, param_offload_hazards);
    tcase_add_test(c, check_reports_param_offload_hazards);
    suite_add_tcase(s, c);
    return s;
}
