/* tests/check_verdicts.c — issue 41: the verdicts and edges a blind mutation audit found unheld.
 * Each test holds one behaviour at the boundary where a wrong comparison shows, with its expected
 * value computed here, independently of the code under test: sub-groups packed and placed by a
 * second implementation of DeepSpeed's rules (stage3.py, as plan/README.md states them), ledger
 * bytes counted by hand from where stage3.py allocates each buffer, medians of a handful of
 * written-out numbers, a key's height measured from keys whose rows are whole, decimal ratios as a
 * user types them. Each names the curated mutant of tests/mutants/ that it kills (`make mutate
 * MUTANTS=...`).
 *
 * In-process calls, except where the behaviour lives in cli/ (tune's flags, checkpoints through
 * `run`, standard input): 13 runs of the binary on tiny models. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "plan/plan.h"   /* plan_honor_advice */
#include "common/rl.h"
#include "plan/plan.h"
#include "plots/plot_impl.h"
#include "tests/util.h"
#include "traces/dsconfig.h"
#include "validation/probe.h"

/* ---- a second implementation of DeepSpeed's packing and placement ------------------------------ */

/* One param group's per-rank tensor sizes in module order, packed as stage3.py does: a sub-group
 * is closed once it holds >= sgs elements; the rest is the last one. Returns the count. */
static int hand_pack(const int64_t *t, int n, int64_t sgs, int64_t *groups)
{
    int k = 0;
    int64_t cur = 0;
    for (int i = 0; i < n; i++) {
        cur += t[i];
        if (cur >= sgs) {
            groups[k++] = cur;
            cur = 0;
        }
    }
    if (cur > 0)
        groups[k++] = cur;
    return k;
}

/* The offloaded share of the elements: 0.12.3-0.17.x offload sub-group i iff i < floor(r N),
 * 0.18 and later iff i >= floor((1 - r) N), 1 - r in binary floating point as Python computes it. */
static double hand_honored(const int64_t *g, int N, double r, bool new_rule)
{
    int lo = new_rule ? (int)floor((1.0 - r) * N) : 0, hi = new_rule ? N : (int)floor(r * N);
    int64_t cpu = 0, all = 0;
    for (int i = 0; i < N; i++) {
        all += g[i];
        if (i >= lo && i < hi)
            cpu += g[i];
    }
    return (double)cpu / (double)all;
}

/* A hand-made model of n tensors of the given sizes in one param group. */
struct hand {
    struct plan_model m;
    struct plan_tensor t[64];
};

static void hand_model(struct hand *h, const int64_t *numel, int n)
{
    memset(h, 0, sizeof *h);
    snprintf(h->m.name, sizeof h->m.name, "hand");
    h->m.tensors = h->t;
    h->m.n_tensors = n;
    h->m.cap_tensors = 64;
    h->m.n_groups = 1;
    for (int i = 0; i < n; i++) {
        snprintf(h->t[i].name, sizeof h->t[i].name, "t%d", i);
        h->t[i].ndim = 1;
        h->t[i].shape[0] = h->t[i].numel = numel[i];
        h->m.total_numel += numel[i];
    }
}

/* fp16 ZeRO-3 with pinned CPU offload at ratio, the given sub_group_size and reduce bucket, for
 * DeepSpeed version (a, b, c); dp 1; placement and ledger from the version. */
static void hand_plan(struct plan *p, const struct hand *h, double ratio, int64_t sgs, int64_t rbs, int a, int b, int c)
{
    struct plan_zero z = tu_zero_cpu_offload(ratio, sgs);
    z.reduce_bucket_size = rbs;
    z.ds_version = (struct rl_version){a, b, c};
    struct plan_layout l = {.dp = 1, .tp = 1, .pp = 1};
    struct plan_options o = {.policy = PLAN_POLICY_AUTO, .ledger = PLAN_LEDGER_AUTO};
    struct rl_err e = {0};
    ck_assert_msg(plan_build(p, &h->m, &l, &z, &o, &e) == 0, "plan_build: %s", e.msg);
}

/* ---- item 1: plan's "Fix: sub_group_size N" --------------------------------------------------- */

/* 40 tensors of 100 elements, ratio 0.7, sub_group_size 1e9: one sub-group, so 0.12's rule offloads
 * nothing (floor(0.7) = 0) and 0.18's everything (i >= floor(0.3) = 0). The advised size, packed
 * and placed here under the same version's rule, honors 0.7 within 0.01, and the advice states the
 * count and the ratio that size gives. The round numbers just below the largest honoring sizes do
 * not honor (2700: sub-groups of 2700 and 1300, 0.675 under 0.12's rule; 1100: three of 1100 and
 * one of 700, 0.725 under 0.18's), so a suggestion rounded without a check shows. Kills
 * plan-fix-round-unchecked. */
START_TEST(fix_advice_honors_the_ratio_under_the_versions_rule)
{
    int64_t t[40], g[40];
    for (int i = 0; i < 40; i++)
        t[i] = 100;
    struct hand h;
    hand_model(&h, t, 40);
    static const struct { int a, b, c; bool new_rule; } vers[] = {{0, 12, 4, false}, {0, 19, 8, true}};
    for (size_t v = 0; v < sizeof vers / sizeof vers[0]; v++) {
        struct plan p;
        hand_plan(&p, &h, 0.7, 1000000000, 1000, vers[v].a, vers[v].b, vers[v].c);
        ck_assert_int_eq(p.n_subgroups, 1);
        ck_assert(p.honored_ratio == (vers[v].new_rule ? 1.0 : 0.0));
        char buf[2048];
        ck_assert_int_eq(plan_honor_advice(&p, 0.01, buf, sizeof buf), 1);
        const char *fix = strstr(buf, "Fix: sub_group_size ");
        ck_assert_msg(fix, "0.%d: no fix in: %s", vers[v].b, buf);
        long long sgs = strtoll(fix + strlen("Fix: sub_group_size "), NULL, 10);
        int N = hand_pack(t, 40, sgs, g);
        double hr = hand_honored(g, N, 0.7, vers[v].new_rule);
        ck_assert_msg(fabs(hr - 0.7) <= 0.01, "0.%d: advised sub_group_size %lld gives %d sub-groups and honored %.4f "
                      "for 0.7: %s", vers[v].b, sgs, N, hr, buf);
        char want[128];
        snprintf(want, sizeof want, "gives %d sub-groups and honored ratio %.4f.", N, hr);
        ck_assert_msg(strstr(fix, want), "0.%d: '%s' not in: %s", vers[v].b, want, fix);
        plan_free(&p);
    }
}
END_TEST

/* ---- items 2-6: validate --probe --------------------------------------------------------------- */

/* Four tensors of 100 elements, sub_group_size 100: four sub-groups of 100 (each closes at its
 * tensor). DeepSpeed 0.19.8 at ratio 0.5 offloads i >= floor(0.5 x 4) = 2: sub-groups 2 and 3.
 * fp16, reduce_bucket_size 1000. Where stage3.py allocates each buffer, the device holds after
 * init: the 16-bit partition 2 x 400, the fp32 master and the fp32 gradient of the GPU sub-groups
 * 4 x 200 each, and the IPG bucket 2 x 1000: 4400 bytes; from 0.13.2 Adam's m and v (8 x 200 on the
 * device) appear at the first step, so a later stage holds 6000. */
#define PROBE_AFTER_INIT 4400
#define PROBE_AFTER_STEP 6000

static void probe_plan(struct plan *p)
{
    static const int64_t t[4] = {100, 100, 100, 100};
    static struct hand h;
    hand_model(&h, t, 4);
    hand_plan(p, &h, 0.5, 100, 1000, 0, 19, 8);
}

/* A GPU run's probe of that plan: sub-groups 2 and 3 "cpu" with the CPU optimizer, 0 and 1 "cuda"
 * with the backup one, each with fp32 4 x 100, Adam state 8 x 100 and a 16-bit partition of
 * model_bytes[i]; device memory after init as given; steps_ms the steps' wall times, the first
 * being the warm-up. */
static void probe_of(struct val_probe *pr, const int64_t model_bytes[4], long long after_init, const double *steps_ms,
                     int n_steps)
{
    char subs[2048] = "", steps[1024] = "", doc[4096];
    size_t n = 0, m = 0;
    for (int i = 0; i < 4; i++) {
        bool cpu = i >= 2;
        n += (size_t)snprintf(subs + n, sizeof subs - n,
                              "%s{\"index\":%d,\"param_group\":0,\"numel\":100,\"assigned_device\":\"%s\","
                              "\"fp32_device\":\"%s\",\"fp32_bytes\":400,\"model_partition_bytes\":%lld,"
                              "\"optimizer\":\"%s\",\"optimizer_class\":\"%s\",\"state_bytes\":800}",
                              i ? "," : "", i, cpu ? "cpu" : "cuda", cpu ? "cpu" : "cuda:0", (long long)model_bytes[i],
                              cpu ? "optimizer" : "backup_optimizer", cpu ? "DeepSpeedCPUAdam" : "AdamW");
    }
    for (int i = 0; i < n_steps; i++)
        m += (size_t)snprintf(steps + m, sizeof steps - m, "%s{\"step\":%d,\"wall_ns\":%lld}", i ? "," : "", i + 1,
                              (long long)llround(steps_ms[i] * 1e6));
    snprintf(doc, sizeof doc,
             "{\"schema_version\":1,\"kind\":\"ratiolab-probe\",\"rank\":0,\"world_size\":1,\"dp_world_size\":1,"
             "\"deepspeed_version\":\"0.19.8\",\"accelerator\":{\"name\":\"cuda\"},"
             "\"zero\":{\"stage\":3,\"sub_group_size\":100,\"reduce_bucket_size\":1000,"
             "\"offload_optimizer\":{\"device\":\"cpu\",\"pin_memory\":true,\"ratio\":0.5}},\"dtype\":\"fp16\","
             "\"memory\":{\"device_source\":\"torch.cuda.memory_allocated\",\"device_after_init_bytes\":%lld},"
             "\"steps\":[%s],\"placement\":{\"optimizer_class\":\"DeepSpeedCPUAdam\",\"subgroups\":[%s]}}",
             after_init, steps, subs);
    struct rl_err e = {0};
    ck_assert_msg(val_probe_parse(doc, strlen(doc), "probe.json", pr, &e) == 0, "%s", e.msg);
}

static const int64_t MODEL_OK[4] = {200, 200, 200, 200};   /* 2 bytes x 100 elements each */
static const double STEPS_OK[3] = {900, 100, 100};        /* warm-up, then predict's 100 ms */

static enum val_status judge(const struct val_probe *pr, int64_t tol_bytes, int k, struct val_probe_result *r)
{
    struct plan p;
    probe_plan(&p);
    struct val_probe_opts o = {.tol_bytes = tol_bytes, .tol_time_pct = 10, .predicted_step_ns = 100000000};
    val_probe_compare(&p, pr, &o, r);
    plan_free(&p);
    return r->checks[k].status;
}

/* Item 2: the 16-bit partitions summed over the sub-groups (800 bytes) against the ledger's
 * fp16_partitions (2 x 400): two bytes more or two fewer in one sub-group fail. Kills
 * val-probe-model-partition-one-sided. */
START_TEST(probe_model_partition_bytes_are_gated)
{
    struct val_probe pr;
    struct val_probe_result r;
    probe_of(&pr, MODEL_OK, PROBE_AFTER_INIT, STEPS_OK, 3);
    ck_assert_msg(judge(&pr, 0, VAL_PROBE_LEDGER, &r) == VAL_PASS, "%s", r.checks[VAL_PROBE_LEDGER].detail);
    ck_assert_int_eq(r.overall, VAL_PASS);
    val_probe_free(&pr);
    static const int64_t more[4] = {200, 202, 200, 200}, fewer[4] = {200, 200, 198, 200};
    probe_of(&pr, more, PROBE_AFTER_INIT, STEPS_OK, 3);
    ck_assert_msg(judge(&pr, 0, VAL_PROBE_LEDGER, &r) == VAL_FAIL, "802 of 800: %s", r.checks[VAL_PROBE_LEDGER].detail);
    ck_assert_int_eq(r.overall, VAL_FAIL);
    val_probe_free(&pr);
    probe_of(&pr, fewer, PROBE_AFTER_INIT, STEPS_OK, 3);
    ck_assert_msg(judge(&pr, 0, VAL_PROBE_LEDGER, &r) == VAL_FAIL, "798 of 800: %s", r.checks[VAL_PROBE_LEDGER].detail);
    val_probe_free(&pr);
}
END_TEST

/* Item 3: device memory after init is the after-init stage's 4400 bytes, not the first step's
 * 6000 (GPU-side Adam state, 0.13.2 and later): 4400 passes within 100 bytes, 6000 fails. Kills
 * val-probe-device-later-stage. */
START_TEST(probe_device_memory_is_held_at_after_init)
{
    struct val_probe pr;
    struct val_probe_result r;
    probe_of(&pr, MODEL_OK, PROBE_AFTER_INIT, STEPS_OK, 3);
    ck_assert_msg(judge(&pr, 100, VAL_PROBE_DEVICE_MEMORY, &r) == VAL_PASS, "%s",
                  r.checks[VAL_PROBE_DEVICE_MEMORY].detail);
    val_probe_free(&pr);
    probe_of(&pr, MODEL_OK, PROBE_AFTER_STEP, STEPS_OK, 3);
    ck_assert_msg(judge(&pr, 100, VAL_PROBE_DEVICE_MEMORY, &r) == VAL_FAIL, "%s",
                  r.checks[VAL_PROBE_DEVICE_MEMORY].detail);
    val_probe_free(&pr);
}
END_TEST

/* Item 4: against predict's 100 ms within 10 %: 50 ms (twice as fast) fails as 150 ms does; 95 and
 * 105 (median 100) pass. Kills val-probe-time-signed. */
START_TEST(probe_step_time_much_faster_fails_too)
{
    static const struct { double ms[3]; enum val_status want; } cases[] = {
        {{900, 50, 50}, VAL_FAIL}, {{900, 150, 150}, VAL_FAIL}, {{900, 95, 105}, VAL_PASS}, {{900, 89, 89}, VAL_FAIL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct val_probe pr;
        struct val_probe_result r;
        probe_of(&pr, MODEL_OK, PROBE_AFTER_INIT, cases[i].ms, 3);
        ck_assert_msg(judge(&pr, 0, VAL_PROBE_STEP_TIME, &r) == cases[i].want, "steps %g, %g after the warm-up: %s",
                      cases[i].ms[1], cases[i].ms[2], r.checks[VAL_PROBE_STEP_TIME].detail);
        val_probe_free(&pr);
    }
}
END_TEST

/* Item 5: a device-memory difference of exactly the tolerance (1000 bytes, either way) passes; one
 * byte more fails. Kills val-probe-device-tol-strict. */
START_TEST(probe_device_difference_equal_to_tolerance_passes)
{
    static const struct { long long bytes; enum val_status want; } cases[] = {
        {PROBE_AFTER_INIT + 1000, VAL_PASS}, {PROBE_AFTER_INIT - 1000, VAL_PASS},
        {PROBE_AFTER_INIT + 1001, VAL_FAIL}, {PROBE_AFTER_INIT - 1001, VAL_FAIL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct val_probe pr;
        struct val_probe_result r;
        probe_of(&pr, MODEL_OK, cases[i].bytes, STEPS_OK, 3);
        ck_assert_msg(judge(&pr, 1000, VAL_PROBE_DEVICE_MEMORY, &r) == cases[i].want, "%lld bytes: %s", cases[i].bytes,
                      r.checks[VAL_PROBE_DEVICE_MEMORY].detail);
        val_probe_free(&pr);
    }
}
END_TEST

/* Item 6: the median of the steps after the warm-up: of 30 and 10 it is 20; of 40, 10, 30 and 20 it
 * is 25 (the mean of the middle two, 20 and 30); the 900 ms warm-up counts in neither. Kills
 * val-probe-median-upper and val-probe-median-warmup-kept. */
START_TEST(probe_step_median_of_two_and_four)
{
    static const struct { double ms[5]; int n; long long want_ns; } cases[] = {
        {{900, 30, 10}, 3, 20000000}, {{900, 40, 10, 30, 20}, 5, 25000000}, {{900, 10, 30, 20}, 4, 20000000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct val_probe pr;
        probe_of(&pr, MODEL_OK, PROBE_AFTER_INIT, cases[i].ms, cases[i].n);
        ck_assert_int_eq(pr.n_steps, cases[i].n);
        ck_assert_msg(pr.step_median_ns == cases[i].want_ns, "%d steps: median %lld ns, want %lld", cases[i].n,
                      (long long)pr.step_median_ns, cases[i].want_ns);
        val_probe_free(&pr);
    }
}
END_TEST

/* ---- items 7, 8: --deepspeed-log's configuration lines ----------------------------------------- */

#define ZLINE "[2026-01-01 00:00:00,000] [INFO] [config.py:1000:print]   zero_config .................. stage=3 "

/* Item 7: ratio=1.0, DeepSpeed's default (every full-offload run prints it), is read as 1; so is a
 * probe's "ratio": 1.0. Kills traces-dsconfig-ratio-one-refused and val-probe-ratio-one-refused. */
START_TEST(log_ratio_one_is_read)
{
    const char *t = ZLINE "offload_param=None offload_optimizer=DeepSpeedZeroOffloadOptimizerConfig(device='cpu', "
                    "nvme_path=None, buffer_count=4, pin_memory=True, pipeline=False, ratio=1.0) sub_group_size=1000\n";
    struct trace_ds_config c;
    struct rl_err e = {0};
    ck_assert_msg(trace_ds_config_parse(t, strlen(t), "run.log", &c, &e) == 0, "%s", e.msg);
    ck_assert(c.have_ratio);
    ck_assert(c.ratio == 1.0);
    ck_assert_str_eq(c.offload_device, "cpu");
    const char *doc = "{\"schema_version\":1,\"kind\":\"ratiolab-probe\",\"world_size\":1,\"deepspeed_version\":\"0.19.8\","
                      "\"accelerator\":{\"name\":\"cuda\"},\"zero\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\","
                      "\"ratio\":1.0}},\"placement\":{\"subgroups\":[{\"index\":0,\"param_group\":0,\"numel\":10}]}}";
    struct val_probe pr;
    ck_assert_msg(val_probe_parse(doc, strlen(doc), "probe.json", &pr, &e) == 0, "%s", e.msg);
    ck_assert(pr.config.have_ratio && pr.config.ratio == 1.0);
    val_probe_free(&pr);
}
END_TEST

/* Item 8: DeepSpeed prints offload_param before offload_optimizer; pin_memory is the optimizer
 * block's, whatever the param block says, both ways round. Kills traces-dsconfig-pin-from-param. */
START_TEST(log_pin_memory_is_the_optimizer_blocks)
{
    static const struct { const char *param, *opt; int want; } cases[] = {{"True", "False", 0}, {"False", "True", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char t[1024];
        snprintf(t, sizeof t, ZLINE "offload_param=DeepSpeedZeroOffloadParamConfig(device='cpu', nvme_path=None, "
                 "buffer_count=5, buffer_size=100,000,000, max_in_cpu=1,000,000,000, pin_memory=%s) "
                 "offload_optimizer=DeepSpeedZeroOffloadOptimizerConfig(device='cpu', nvme_path=None, buffer_count=4, "
                 "pin_memory=%s, pipeline=False, ratio=0.5) sub_group_size=1000\n", cases[i].param, cases[i].opt);
        struct trace_ds_config c;
        struct rl_err e = {0};
        ck_assert_msg(trace_ds_config_parse(t, strlen(t), "run.log", &c, &e) == 0, "%s", e.msg);
        ck_assert_msg(c.pin_memory == cases[i].want, "param pin_memory=%s, optimizer pin_memory=%s: read %d",
                      cases[i].param, cases[i].opt, c.pin_memory);
        ck_assert(c.ratio == 0.5);
    }
}
END_TEST

/* ---- items 9, 10: tune ------------------------------------------------------------------------- */

static char *tiny(void)
{
    static char b[1024];
    snprintf(b, sizeof b, "%s/tests/deepspeed/models/gpt2-tiny.json", tu_src());
    return b;
}

#define TUNE_TINY "tune --model '%s' --param-groups flat --hw hgx-h200 --gpus 1 --tp 1 --micro-batches 1 " \
                  "--checkpoint-activations "

static int64_t jint(json_t *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *part = buf, *dot; o && part; part = dot ? dot + 1 : NULL) {
        dot = strchr(part, '.');
        if (dot)
            *dot = 0;
        o = json_object_get(o, part);
    }
    ck_assert_msg(json_is_integer(o), "%s: not an integer", path);
    return json_integer_value(o);
}

/* Item 9: --headroom 0B is a headroom of 0 bytes (not the 5 % default); full offload (ratio 1)
 * needs T bytes of a capacity C; with --headroom C - T it is the answer (nothing else fits: no
 * offload needs more), with one byte more nothing fits (exit 1). Kills tune-fit-strict and
 * tune-headroom-zero-is-default. */
START_TEST(tune_fits_at_capacity_minus_headroom_exactly)
{
    json_t *j = tu_ratiolab_json(TUNE_TINY "--ratios 1 --headroom 0B --json", tiny());
    ck_assert_int_eq(jint(j, "headroom_bytes"), 0);
    json_t *full = json_object_get(j, "best_with_offload");
    ck_assert(json_is_object(full));
    int64_t T = jint(full, "prediction.gpu_memory_per_rank.total_bytes");
    int64_t C = jint(full, "prediction.gpu_memory_per_rank.capacity_bytes");
    ck_assert_int_gt(C - T, 0);
    json_decref(j);
    j = tu_ratiolab_json(TUNE_TINY "--ratios 1 --headroom %lldB --json", tiny(), (long long)(C - T));
    ck_assert_int_eq(jint(j, "headroom_bytes"), C - T);
    json_t *ans = json_object_get(j, "answer");
    ck_assert_msg(json_is_object(ans), "GPU bytes equal to capacity minus headroom: not an answer");
    ck_assert_str_eq(json_string_value(json_object_get(ans, "offload")), "cpu");
    ck_assert_int_eq(jint(ans, "prediction.gpu_memory_per_rank.total_bytes"), T);
    json_decref(j);
    struct tu_run r;
    tu_ratiolab(&r, TUNE_TINY "--ratios 1 --headroom %lldB --json", tiny(), (long long)(C - T + 1));
    ck_assert_msg(r.status == 1, "one byte less room: exit %d: %s", r.status, r.err);
    tu_run_free(&r);
}
END_TEST

/* Item 10: GPT-2 tiny (vocabulary 512, 64 positions, width 64, 2 layers, tied output) in one flat
 * group; its tensors by hand: wte 512 x 64, wpe 64 x 64, per layer ln_1 64 + 64, c_attn 64 x 192
 * + 192, attn c_proj 64 x 64 + 64, ln_2 64 + 64, c_fc 64 x 256 + 256, mlp c_proj 256 x 64 + 64, then
 * ln_f 64 + 64. At ratio 0.25 within 0.02 the config's sub_group_size 35000 honors 0.12's rule
 * only; tune for 0.12.4 and 0.19.8 must answer a size that honors both. Kills
 * tune-candidate-first-version-only. */
START_TEST(tune_answer_honors_every_listed_version)
{
    static const int64_t L[12] = {64, 64, 12288, 192, 4096, 64, 64, 64, 16384, 256, 16384, 64};
    int64_t t[28], g[28];
    int n = 0;
    t[n++] = 512 * 64;
    t[n++] = 64 * 64;
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 12; i++)
            t[n++] = L[i];
    t[n++] = 64;
    t[n++] = 64;
    int N = hand_pack(t, n, 35000, g);   /* not vacuous: the config's size honors the old rule only */
    ck_assert(fabs(hand_honored(g, N, 0.25, false) - 0.25) <= 0.02);
    ck_assert(fabs(hand_honored(g, N, 0.25, true) - 0.25) > 0.02);
    json_t *j = tu_ratiolab_json(TUNE_TINY "--deepspeed-version 0.12.4,0.19.8 --ratios 0.25 --sub-group-size 35000 "
                                 "--tolerance 0.02 --json", tiny());
    json_t *k = json_object_get(j, "best_with_offload");
    ck_assert(json_is_object(k));
    int64_t sgs = jint(k, "sub_group_size");
    N = hand_pack(t, n, sgs, g);
    double old = hand_honored(g, N, 0.25, false), new = hand_honored(g, N, 0.25, true);
    ck_assert_msg(fabs(old - 0.25) <= 0.02 && fabs(new - 0.25) <= 0.02,
                  "sub_group_size %lld: %d sub-groups, 0.12 honors %.4f, 0.19 %.4f", (long long)sgs, N, old, new);
    ck_assert_int_eq(jint(k, "sub_groups"), N);
    json_decref(j);
}
END_TEST

/* ---- item 11: checkpoints ------------------------------------------------------------------------ */

#define CK_RUN "run " TU_EXEC_SMALL " --steps 1"

/* The generation folders in dir, and whether a temporary file lies in dir or in one of them. */
static int generations(const char *dir, bool *tmp)
{
    int gens = 0;
    *tmp = false;
    DIR *d = opendir(dir);
    ck_assert_msg(d, "%s: cannot open", dir);
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        *tmp |= strstr(de->d_name, ".tmp") != NULL;
        if (strncmp(de->d_name, "gen-", 4) != 0)
            continue;
        gens++;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        DIR *g = opendir(sub);
        ck_assert_msg(g, "%s: cannot open", sub);
        for (struct dirent *ge; (ge = readdir(g)) != NULL;)
            *tmp |= strstr(ge->d_name, ".tmp") != NULL;
        closedir(g);
    }
    closedir(d);
    return gens;
}

/* One rank saves into a folder; then saves stopped at each point of the protocol before the switch
 * (an empty generation folder, a half-written temporary file, a whole rank file the manifest does
 * not name) pile up, and the next plain save succeeds; then one stopped after the switch, before
 * the older generations are pruned, and again the next save succeeds. Each plain save leaves one
 * generation and no temporary file. (On one rank save-switch leaves what save-written leaves: the
 * agreement between them has no other rank; check_hardening.c stops a rank there among two.)
 * Last, the manifest made to say iteration 2 while its rank file holds iteration 1: loading is
 * exit 2 naming both. Kills exec-ckpt-generation-from-manifest-only and
 * exec-ckpt-manifest-iterations-unchecked. */
START_TEST(checkpoint_saves_after_interrupted_ones_and_checks_its_manifest)
{
    static const char *const phases[] = {"save-prepare", "save-write", "save-written", NULL, "save-switched", NULL};
    struct tu_run r;
    tu_ratiolab(&r, CK_RUN " --save ck");
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
        if (phases[i]) {
            tu_ratiolab(&r, CK_RUN " --save ck --fail-rank 0:%s", phases[i]);
            ck_assert_msg(r.status != 0 && strstr(r.err, "failing on purpose"), "%s: exit %d: %s", phases[i], r.status,
                          r.err);
            tu_run_free(&r);
            continue;
        }
        tu_ratiolab(&r, CK_RUN " --save ck");
        ck_assert_msg(r.status == 0, "the save after one stopped at %s: exit %d: %s", phases[i - 1], r.status, r.err);
        tu_run_free(&r);
        bool tmp;
        int gens = generations(tu_path("ck"), &tmp);
        ck_assert_msg(gens == 1 && !tmp, "after %s and a whole save: %d generations, temporary files %s", phases[i - 1],
                      gens, tmp ? "left" : "none");
    }
    tu_sh(&r, "sed -i 's/^iterations 1$/iterations 2/' ck/CHECKPOINT && grep -c '^iterations 2$' ck/CHECKPOINT");
    ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, CK_RUN " --load ck");
    ck_assert_msg(r.status == 2, "a manifest of iteration 2 over a rank file of iteration 1: exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "iteration 1") && strstr(r.err, "iteration 2") && strstr(r.err, "CHECKPOINT"), "%s",
                  r.err);
    tu_run_free(&r);
}
END_TEST

/* ---- item 12: a key whose last row is partial ----------------------------------------------------- */

/* The key of n entries of 10 characters placed in a 2 x 2 in panel whose data (a box from the
 * bottom) reach data_top_in. */
static bool key_in(int n, double data_top_in, struct plot__key *k)
{
    struct plot__occ o;
    memset(&o, 0, sizeof o);
    plot__occ_panel(&o, 0, 0, 2, 2, 0, 1, 0, 1, false, false);
    if (data_top_in > 0)
        plot__occ_box_in(&o, 0, 0, 2, data_top_in);
    plot__key_init(k, n);
    for (int i = 0; i < n; i++)
        plot__key_title(k, i, "0123456789");
    bool in = plot__key_fit(NULL, &o, k);
    plot__occ_free(&o);
    return in;
}

/* Five entries in two columns are three rows, as tall as three entries in one column (measured in
 * an empty panel, where one column fits first). Where the data leave room for three rows under
 * the top, the key takes two columns and that height; where they leave room for two rows only,
 * a key inside the panel (if any) keeps its true height clear of the data. Kills
 * plots-key-rows-floor. */
START_TEST(key_with_a_partial_last_row)
{
    struct plot__key k3, k2, k;
    ck_assert(key_in(3, 0, &k3) && k3.cols == 1);
    ck_assert(key_in(2, 0, &k2) && k2.cols == 1);
    const double row = k3.h_in - k2.h_in;   /* one row's height */
    ck_assert(row > 0);
    /* Room for three rows (plus the inset and the padding), not for five. */
    double top3 = 2 - 0.1 - k3.h_in - 0.01;
    ck_assert(key_in(5, top3, &k));
    ck_assert_int_eq(k.cols, 2);
    ck_assert_msg(fabs(k.h_in - k3.h_in) < 1e-12, "5 entries in 2 columns: %.4f in high, 3 rows are %.4f", k.h_in,
                  k3.h_in);
    ck_assert(k.top_in - k.h_in >= top3);
    /* Room for two rows and a half: no three-row key fits at the top, and any key placed keeps its
     * rows (ceil(5 / cols)) off the data. */
    double top2 = 2 - 0.1 - k2.h_in - row / 2;
    if (key_in(5, top2, &k)) {
        int rows = (5 + k.cols - 1) / k.cols;
        double bottom = k.top_in - (k2.h_in + (rows - 2) * row);
        ck_assert_msg(bottom >= top2, "a key of %d columns (%d rows) reaches %.3f in, the data %.3f in", k.cols, rows,
                      bottom, top2);
    }
}
END_TEST

/* ---- item 13: the 64 MiB cap on standard input ------------------------------------------------------- */

/* Standard input of exactly 64 MiB is read whole; `--ds-config -` of 64 MiB + 1 byte is exit 2 with one
 * line naming standard input and the cap. Kills rl-stdin-cap-at-buffer. */
START_TEST(standard_input_is_capped_at_64_mib)
{
    const size_t cap = 64u << 20;
    char *big = malloc(cap);
    ck_assert_ptr_nonnull(big);
    memset(big, ' ', cap);
    big[0] = '{';
    big[cap - 1] = '}';
    const char *path = tu_path("big.json");
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite(big, 1, cap, f), cap);
    fclose(f);
    free(big);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
    close(fd);
    char *text = NULL;
    size_t len = 0;
    struct rl_err e = {0};
    ck_assert_msg(rl_read_input("-", true, &text, &len, &e) == 0, "64 MiB: %s", e.msg);
    ck_assert_int_eq(len, cap);
    free(text);
    f = fopen(path, "ab");
    ck_assert_int_eq(fputc(' ', f), ' ');
    fclose(f);
    struct tu_run r;
    tu_ratiolab(&r, "plan --ds-config - --model gpt2 < big.json");
    ck_assert_msg(r.status == 2, "64 MiB + 1 byte: exit %d: %s", r.status, r.err);
    const char *nl = strchr(r.err, '\n');
    ck_assert_msg(strstr(r.err, "--ds-config: (standard input): larger than 64 MiB") && nl && !nl[1], "%s", r.err);
    tu_run_free(&r);
}
END_TEST

/* ---- item 14: a ratio list's end point ------------------------------------------------------------ */

/* 0:0.7:0.1 is the 8 values 0, 0.1, ..., 0.7 and 0:0.3:0.1 the 4 values 0 ... 0.3, each the double a
 * user types ("0.i"), although 0.7 / 0.1 and 0.3 / 0.1 fall just below 7 and 3 in binary. Kills
 * rl-ratio-list-end-dropped. */
START_TEST(ratio_list_keeps_its_end_point)
{
    static const struct { const char *spec; size_t n; } cases[] = {{"0:0.7:0.1", 8}, {"0:0.3:0.1", 4}, {"0.1:0.7:0.3", 3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double *v = NULL;
        size_t n = 0;
        struct rl_err e = {0};
        ck_assert_msg(rl_parse_ratio_list("--ratios", cases[c].spec, 0, 1, &v, &n, &e) == 0, "%s", e.msg);
        ck_assert_msg(n == cases[c].n, "%s: %zu values, want %zu", cases[c].spec, n, cases[c].n);
        double lo = strtod(cases[c].spec, NULL), step = strtod(strrchr(cases[c].spec, ':') + 1, NULL);
        for (size_t i = 0; i < n; i++) {
            char typed[16];
            snprintf(typed, sizeof typed, "%.1f", lo + (double)i * step);   /* "0.3", not 0.30000000000000004 */
            ck_assert_msg(v[i] == strtod(typed, NULL), "%s: value %zu is %.17g, want %s", cases[c].spec, i, v[i], typed);
        }
        free(v);
    }
}
END_TEST

Suite *TU_SUITE(void)
{
    Suite *s = suite_create("verdicts");
    TCase *t = tcase_create("in_process");
    tcase_add_test(t, fix_advice_honors_the_ratio_under_the_versions_rule);
    tcase_add_test(t, probe_model_partition_bytes_are_gated);
    tcase_add_test(t, probe_device_memory_is_held_at_after_init);
    tcase_add_test(t, probe_step_time_much_faster_fails_too);
    tcase_add_test(t, probe_device_difference_equal_to_tolerance_passes);
    tcase_add_test(t, probe_step_median_of_two_and_four);
    tcase_add_test(t, log_ratio_one_is_read);
    tcase_add_test(t, log_pin_memory_is_the_optimizer_blocks);
    tcase_add_test(t, key_with_a_partial_last_row);
    tcase_add_test(t, ratio_list_keeps_its_end_point);
    suite_add_tcase(s, t);
    t = tcase_create("binary");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, tune_fits_at_capacity_minus_headroom_exactly);
    tcase_add_test(t, tune_answer_honors_every_listed_version);
    tcase_add_test(t, checkpoint_saves_after_interrupted_ones_and_checks_its_manifest);
    tcase_add_test(t, standard_input_is_capped_at_64_mib);
    suite_add_tcase(s, t);
    return s;
}
