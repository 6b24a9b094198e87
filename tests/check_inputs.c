/* tests/check_inputs.c — the seams every front end shares: resolving the inputs (plan/inputs.h),
 * field-named messages and the flags cli/ puts in their place, the one honored-within-tolerance
 * test, check's verdict (sim/check.h), the JSON of a plan and of a prediction, and the error
 * path of common/rl.h (RL_TRY, rl_err_first). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan/inputs.h"
#include "plan/plan_json.h"
#include "sim/check.h"
#include "sim/step_json.h"
#include "tests/util.h"

static const char *catalog(void)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/catalog", tu_src());
    return buf;
}

static void init(struct plan_inputs *in)
{
    plan_inputs_init(in);
    in->catalog = catalog();
}

START_TEST(builtin_default_case)
{
    struct plan_inputs in;
    init(&in);
    struct plan_setup s;
    struct rl_err e = {0};
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(s.model.name, "gpt-2.7b");
    ck_assert_int_eq(s.layout.tp, 8);
    ck_assert_int_eq(s.layout.world, 8);
    ck_assert_int_eq(s.layout.dp, 1);
    ck_assert(s.zero.ratio == 0.3);
    ck_assert_int_eq(s.zero.stage, 3);
    ck_assert_int_eq(s.zero.dtype, PLAN_FP16);
    ck_assert_ptr_null(s.ds_text);
    ck_assert_int_ge(s.n_notes, 1);
    ck_assert_msg(strncmp(s.notes[0], "no ds_config:", 13) == 0, "%s", s.notes[0]);   /* the field */
    plan_setup_free(&s);
}
END_TEST

START_TEST(config_then_explicit_settings)
{
    const char *cfg = tu_write("c.json", "{\"train_micro_batch_size_per_gpu\": 2, \"zero_optimization\": "
                                         "{\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.5}}}");
    struct plan_inputs in;
    init(&in);
    in.ds_config = cfg;
    in.model = "gpt-2.7b";
    in.layout.tp = 8;
    struct plan_setup s;
    struct rl_err e = {0};
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert(s.zero.ratio == 0.5);   /* the config's */
    ck_assert_int_eq(s.zero.micro_batch, 2);
    ck_assert_ptr_nonnull(s.ds_text);
    plan_setup_free(&s);
    in.ratio = 0.7;   /* an explicit setting wins */
    in.ratio_set = true;
    in.micro_batch = 4;
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert(s.zero.ratio == 0.7);
    ck_assert_int_eq(s.zero.src_ratio, PLAN_SRC_CLI);
    ck_assert_int_eq(s.zero.micro_batch, 4);
    plan_setup_free(&s);
}
END_TEST

START_TEST(mpi_world_is_the_dp_degree_unless_the_layout_says)
{
    struct plan_inputs in;
    init(&in);
    in.layout.tp = 1;
    in.mpi_world = 4;
    struct plan_setup s;
    struct rl_err e = {0};
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(s.layout.dp, 4);
    ck_assert_int_eq(s.layout.world, 4);
    plan_setup_free(&s);
    in.layout.world = 2;   /* the layout says otherwise */
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(s.layout.dp, 2);
    plan_setup_free(&s);
}
END_TEST

/* DeepSpeed's batch rule (runtime/config.py _set_batch_related_parameters, _batch_assertion):
 * train_batch_size = micro-batch x accumulation x DP. Given train_batch_size 16 and micro-batch 4,
 * the accumulation is 16 / 4 / DP; all three given must agree; a remainder is refused. */
START_TEST(accumulation_from_train_batch_size)
{
    const char *cfg = tu_write("tb.json", "{\"train_batch_size\": 16, \"train_micro_batch_size_per_gpu\": 4, "
                                          "\"zero_optimization\": {\"stage\": 3}}");
    struct plan_inputs in;
    init(&in);
    in.ds_config = cfg;
    in.model = "gpt-350m";
    in.layout.tp = 1;
    in.layout.world = 1;
    struct plan_setup s;
    struct rl_err e = {0};
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(s.zero.grad_accum, 4);   /* 16 / 4 / 1 */
    ck_assert_int_eq(s.zero.src_grad_accum, PLAN_SRC_AUTO);
    plan_setup_free(&s);
    in.layout.world = 2;   /* DP 2: 16 / 4 / 2 */
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(s.zero.grad_accum, 2);
    plan_setup_free(&s);
    in.layout.world = 1;
    in.micro_batch = 8;   /* a micro-batch given over the config's re-derives the accumulation */
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(s.zero.grad_accum, 2);
    plan_setup_free(&s);
    in.micro_batch = 0;
    in.layout.world = 8;   /* 16 / (4 x 8): not whole */
    ck_assert_int_eq(plan_inputs_resolve(&in, &s, &e), RL_EINVAL);
    plan_setup_free(&s);
    ck_assert_msg(strstr(e.msg, "train_batch_size: 16") && strstr(e.msg, "multiple of 32"), "%s", e.msg);
    in.layout.world = 1;
    in.ds_config = tu_write("tb3.json", "{\"train_batch_size\": 16, \"train_micro_batch_size_per_gpu\": 4, "
                                        "\"gradient_accumulation_steps\": 2, \"zero_optimization\": {\"stage\": 3}}");
    ck_assert_int_eq(plan_inputs_resolve(&in, &s, &e), RL_EINVAL);   /* 4 x 2 x 1 = 8, not 16 */
    plan_setup_free(&s);
    ck_assert_msg(strstr(e.msg, "train_batch_size: 16") && strstr(e.msg, "(= 8)"), "%s", e.msg);
    in.layout.world = 2;   /* 4 x 2 x 2 = 16: agrees */
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(s.zero.grad_accum, 2);
    ck_assert_int_eq(s.zero.src_grad_accum, PLAN_SRC_CONFIG);
    plan_setup_free(&s);
    in.ds_config = tu_write("tb0.json", "{\"train_micro_batch_size_per_gpu\": 4, \"zero_optimization\": {\"stage\": 3}}");
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(s.zero.grad_accum, 1);   /* no train_batch_size: DeepSpeed's default 1 */
    plan_setup_free(&s);
}
END_TEST

START_TEST(messages_name_fields)
{
    struct plan_inputs in;
    init(&in);
    in.layout.tp = 3;   /* gpt-2.7b has 32 heads */
    struct plan_setup s;
    struct rl_err e = {0};
    ck_assert_int_eq(plan_inputs_resolve(&in, &s, &e), RL_EINVAL);
    plan_setup_free(&s);
    ck_assert_msg(strncmp(e.msg, "tp 3: ", 6) == 0, "%s", e.msg);
    ck_assert_msg(!strstr(e.msg, "--"), "%s", e.msg);
    init(&in);
    in.layout.world = 12;
    ck_assert_int_eq(plan_inputs_resolve(&in, &s, &e), RL_EINVAL);
    plan_setup_free(&s);
    ck_assert_str_eq(e.msg, "gpus: 12 is not a multiple of tp x pp = 8");
    /* A DP degree taken from the MPI world says so. */
    init(&in);
    in.mpi_world = 1;
    in.layout.gpus_per_node = 3;
    ck_assert_int_eq(plan_inputs_resolve(&in, &s, &e), RL_EINVAL);
    plan_setup_free(&s);
    ck_assert_str_eq(e.msg, "dp 1 (the MPI world size): gpus_per_node: 3 does not divide 8 ranks");
}
END_TEST

/* cli/ names the flags the user typed, and only those. */
START_TEST(cli_names_the_flags_typed)
{
    struct tu_run r;
    tu_ratiolab(&r, "plan --gpus 12 --tp 8");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "ratiolab plan: --gpus: 12 is not a multiple of --tp x pp = 8\n");
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --gpus 12");   /* TP 8 is the built-in case's, not typed */
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.err, "ratiolab plan: --gpus: 12 is not a multiple of tp x pp = 8\n");
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --model gpt2 --megatron-version new");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "--megatron-version: applies to Megatron models only") &&
                  strstr(r.err, "(use --param-groups)"), "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "run --gpus-per-node 3 --scale 1000");   /* one rank, no mpirun: DP 1 from the world */
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "dp 1 (the MPI world size): --gpus-per-node: 3") && !strstr(r.err, "--dp"), "%s",
                  r.err);
    tu_run_free(&r);
}
END_TEST

START_TEST(honored_within_tolerance)
{
    ck_assert(plan_ratio_within(0.31, 0.3, 0.02));
    ck_assert(plan_ratio_within(0.29, 0.3, 0.02));
    ck_assert(!plan_ratio_within(0.33, 0.3, 0.02));
    ck_assert(!plan_ratio_within(0.27, 0.3, 0.02));   /* below counts like above */
    ck_assert(plan_ratio_within(0.5, 0.5, 0));
    ck_assert(plan_ratio_within(0.25, 0.5, 0.25));    /* the bound itself is within (exact in binary) */
}
END_TEST

/* check's verdict: the built-in case (ratio 0.3, sub_group_size 1e9 on gpt-2.7b TP 8) against
 * DeepSpeed 0.12's rule, and its fix, judged independently by rebuilding the plan. */
START_TEST(check_verdict_and_fix)
{
    struct plan_inputs in;
    init(&in);
    struct plan_setup s;
    struct rl_err e = {0};
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    const double tol = 0.02;
    struct sim_check_request q = {.tol = tol};
    struct sim_check_verdict v;
    ck_assert_msg(sim_check(&s, &q, &v, &e) == 0, "%s", e.msg);
    ck_assert(v.requested == 0.3);
    ck_assert_int_eq(v.ratio_ok, fabs(v.honored - v.requested) <= tol);
    ck_assert(v.memory_ok);   /* not judged */
    if (!v.ratio_ok) {
        ck_assert(v.fix_sgs > 0);
        struct plan_setup t = s;
        t.zero.sub_group_size = v.fix_sgs;
        struct plan p;
        ck_assert_msg(plan_setup_plan(&t, -1, &p, &e) == 0, "%s", e.msg);
        ck_assert_msg(fabs(p.honored_ratio - 0.3) <= tol, "fix %lld honors %g", (long long)v.fix_sgs, p.honored_ratio);
        plan_free(&p);
    }
    /* A model-states budget below ratio 0's and above ratio 1's: the fix is the smallest fitting
     * ratio on the 0.01 grid, and the ratio 0.01 below it does not fit when honored exactly. */
    struct plan p0, p1;
    struct plan_setup x = s;
    x.popt.policy = PLAN_POLICY_EXACT;
    ck_assert(plan_setup_plan(&x, 0.0, &p0, &e) == 0 && plan_setup_plan(&x, 1.0, &p1, &e) == 0);
    q.gpu_mem_bytes = (plan_peak_gpu_bytes(&p0) + plan_peak_gpu_bytes(&p1)) / 2;
    q.states_only = true;
    plan_free(&p0);
    plan_free(&p1);
    ck_assert_msg(sim_check(&s, &q, &v, &e) == 0, "%s", e.msg);
    ck_assert(!v.memory_ok);
    ck_assert(v.fix_fits);
    ck_assert(v.fix_ratio > 0 && v.fix_ratio < 1);
    ck_assert_int_le(v.fix_gpu_bytes, q.gpu_mem_bytes);
    ck_assert(plan_setup_plan(&x, v.fix_ratio - 0.01, &p0, &e) == 0);
    ck_assert_int_gt(plan_peak_gpu_bytes(&p0), q.gpu_mem_bytes);
    plan_free(&p0);
    plan_setup_free(&s);
}
END_TEST

START_TEST(plan_and_prediction_json)
{
    struct plan_inputs in;
    init(&in);
    struct plan_setup s;
    struct rl_err e = {0};
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    struct plan p;
    ck_assert_msg(plan_setup_plan(&s, 0.5, &p, &e) == 0, "%s", e.msg);
    json_t *j = plan_json(&p);
    ck_assert(json_real_value(json_object_get(j, "requested_ratio")) == 0.5);
    ck_assert(json_real_value(json_object_get(j, "honored_ratio")) == p.honored_ratio);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "cpu_numel")), p.cpu_numel);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "subgroups")), p.n_subgroups);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "layout"), "tp")), 8);
    json_decref(j);
    plan_free(&p);
    plan_setup_free(&s);

    struct sim_step_result r;
    memset(&r, 0, sizeof r);
    r.step_ns = 123456789;
    r.ranks = 2;
    r.gpu_ids[0] = 4;
    r.gpu_ids[1] = 6;
    r.phase[0].busy_ns = 100;
    r.phase[0].exposed_ns = 30;
    r.gpu_total_bytes = INT64_C(1) << 40;
    j = sim_step_result_json(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "step_ns")), 123456789);
    json_t *ids = json_object_get(j, "gpu_ids");
    ck_assert_int_eq((int)json_array_size(ids), 2);
    ck_assert_int_eq(json_integer_value(json_array_get(ids, 1)), 6);
    json_t *ph = json_object_get(json_object_get(j, "phases"), sim_phase_name(0));
    ck_assert_int_eq(json_integer_value(json_object_get(ph, "overlapped_ns")), 70);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "gpu_memory_per_rank"), "total_bytes")),
                     INT64_C(1) << 40);
    json_decref(j);
}
END_TEST

static int calls;
static int step(int rc)
{
    calls++;
    return rc;
}
static int three_steps(int a, int b, int c)
{
    RL_TRY(step(a));
    RL_TRY(step(b));
    RL_TRY(step(c));
    return 0;
}

START_TEST(forwarding_and_first_error)
{
    calls = 0;
    ck_assert_int_eq(three_steps(0, RL_EIO, RL_ENOMEM), RL_EIO);
    ck_assert_int_eq(calls, 2);   /* the third is never evaluated */
    calls = 0;
    ck_assert_int_eq(three_steps(0, 0, 0), 0);
    ck_assert_int_eq(calls, 3);

    int first = 0;
    struct rl_err e = {0};
    ck_assert_int_eq(rl_err_first(&first, &e, RL_EENV, "disk %s", "full"), RL_EENV);
    ck_assert_int_eq(rl_err_first(&first, &e, RL_EIO, "later"), RL_EIO);
    ck_assert_int_eq(first, RL_EENV);
    ck_assert_int_eq(e.code, RL_EENV);
    ck_assert_str_eq(e.msg, "disk full");
}
END_TEST

/* A real run's facts (a log, a probe) one step up the precedence: over the defaults, under what
 * the user set. Expected values from the rule (inputs.h): nobody set the ratio, sub_group_size and
 * layout of the built-in case, so the run's are taken (dp 2 with TP 8: 16 GPUs); a ratio or a dp
 * the user gave that differs is refused, naming the run, the field and both values. */
START_TEST(run_facts_fill_defaults_and_contradict_settings)
{
    struct plan_inputs in;
    init(&in);
    struct plan_setup s;
    struct rl_err e = {0};
    struct plan_run_facts f = {.stage = -1, .have_ratio = true, .ratio = 0.8, .sub_group_size = 1000,
                               .reduce_bucket_size = -1, .prefetch_bucket_size = -1, .pin_memory = -1, .dp = 2};
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_msg(plan_inputs_apply_facts(&in, &f, "run.log", &s, &e) == 0, "%s", e.msg);
    ck_assert(s.zero.ratio == 0.8);
    ck_assert_int_eq(s.zero.sub_group_size, 1000);
    ck_assert_int_eq(s.layout.dp, 2);
    ck_assert_int_eq(s.layout.world, 16);
    plan_setup_free(&s);

    init(&in);
    in.ratio = 0.3;
    in.ratio_set = true;
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(plan_inputs_apply_facts(&in, &f, "run.log", &s, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "run.log: zero_optimization.offload_optimizer.ratio: the run used 0.8, the command line "
                            "says 0.3; give the run's own config (or none: the run's values are taken)");
    plan_setup_free(&s);

    init(&in);
    in.layout.dp = 4;
    f.have_ratio = false;
    f.sub_group_size = -1;
    ck_assert_msg(plan_inputs_resolve(&in, &s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(plan_inputs_apply_facts(&in, &f, "probe.json", &s, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "probe.json: dp (data-parallel ranks): the run used 2, the command line says 4"), "%s",
                  e.msg);
    plan_setup_free(&s);
}
END_TEST

Suite *inputs_suite(void)
{
    Suite *s = suite_create("inputs");
    TCase *tc = tcase_create("inputs");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, builtin_default_case);
    tcase_add_test(tc, config_then_explicit_settings);
    tcase_add_test(tc, mpi_world_is_the_dp_degree_unless_the_layout_says);
    tcase_add_test(tc, accumulation_from_train_batch_size);
    tcase_add_test(tc, messages_name_fields);
    tcase_add_test(tc, cli_names_the_flags_typed);
    tcase_add_test(tc, honored_within_tolerance);
    tcase_add_test(tc, check_verdict_and_fix);
    tcase_add_test(tc, plan_and_prediction_json);
    tcase_add_test(tc, forwarding_and_first_error);
    tcase_add_test(tc, run_facts_fill_defaults_and_contradict_settings);
    suite_add_tcase(s, tc);
    return s;
}
