/* tests/check_cli.c — the ratiolab binary: bad input exits 2 with a one-line message naming the
 * field and leaves no output file; `plan` reports the staircase of the default case. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/util.h"

/* Each bad DeepSpeed config and the text its error must contain. */
static const struct {
    const char *json;
    const char *expect;
} bad_configs[] = {
    {"{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":1.5}}}",
     "zero_optimization.offload_optimizer.ratio: 1.5 is outside [0, 1]"},
    {"{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":-0.1}}}",
     "zero_optimization.offload_optimizer.ratio: -0.1 is outside [0, 1]"},
    {"{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":\"half\"}}}",
     "zero_optimization.offload_optimizer.ratio: \"half\""},
    {"{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":NaN}}}",
     "zero_optimization.offload_optimizer.ratio: NaN"},
    {"{\"zero_optimization\":{\"stage\":4}}", "zero_optimization.stage: 4"},
    {"{\"zero_optimization\":{\"stage\":\"three\"}}", "zero_optimization.stage: \"three\""},
    {"{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"gpu\"}}}",
     "zero_optimization.offload_optimizer.device: \"gpu\""},
    {"{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"pin_memory\":\"maybe\"}}}",
     "zero_optimization.offload_optimizer.pin_memory: \"maybe\""},
    {"{\"zero_optimization\":{\"stage\":3,\"sub_group_size\":0}}", "zero_optimization.sub_group_size: 0"},
    {"{\"zero_optimization\":{\"stage\":3,\"sub_group_size\":-5}}", "zero_optimization.sub_group_size: -5"},
    {"{\"zero_optimization\":{\"stage\":3,\"sub_group_size\":\"1.5\"}}", "zero_optimization.sub_group_size: \"1.5\""},
    {"{\"zero_optimization\":{\"stage\":3,\"sub_group_size\":1e30}}", "zero_optimization.sub_group_size: 1e30 is not allowed"},
    {"{\"zero_optimization\":{\"stage\":3,\"reduce_bucket_size\":\"big\"}}", "zero_optimization.reduce_bucket_size: \"big\""},
    {"{\"zero_optimization\":{\"stage\":3,\"stage3_prefetch_bucket_size\":[1]}}",
     "zero_optimization.stage3_prefetch_bucket_size: [1]"},
    {"{\"fp16\":{\"enabled\":true},\"bf16\":{\"enabled\":true}}", "fp16.enabled and bf16.enabled"},
    {"{\"fp16\":null}", "fp16: null is not allowed"},
    {"{\"zero_optimization\":[]}", "zero_optimization: [] is not allowed"},
    {"[1, 2]", "top level must be a JSON object"},
    {"{\"zero_optimization\":{\"stage\":3,,}}", "not valid JSON at line 1"},
    {"{\"train_batch_size\" : CONFIG_BATCH_SIZE}", "train_batch_size: CONFIG_BATCH_SIZE is an unreplaced template placeholder"},
    {"{\"zero_optimization\":{\"stage\":3},\"zero_optimization\":{\"stage\":2}}", "duplicate"},
    {"{\"train_micro_batch_size_per_gpu\":0}", "train_micro_batch_size_per_gpu: 0"},
    {"{\"optimizer\":{\"type\":5}}", "optimizer.type: 5"},
    {"{\"train_batch_size\":7,\"train_micro_batch_size_per_gpu\":2}", "train_batch_size: 7 is not a multiple"},
    {"", "not valid JSON"},
    {"{\"gradient_accumulation_steps\":99999999999999999999999}", "cfg.json"},
};

START_TEST(bad_config_exits_2_names_field_writes_nothing)
{
    int i = _i;
    tu_write("cfg.json", bad_configs[i].json);
    int before = tu_count_files();
    struct tu_run r;
    tu_ratiolab(&r, "plan --ds-config cfg.json --out out.json --json");
    ck_assert_msg(r.status == 2, "config %d: exit %d, stderr: %s", i, r.status, r.err);
    ck_assert_msg(strstr(r.err, bad_configs[i].expect), "config %d: stderr '%s' lacks '%s'", i, r.err,
                  bad_configs[i].expect);
    ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "config %d: not one line: %s", i, r.err);
    ck_assert_int_eq(tu_count_files(), before);
    ck_assert_str_eq(r.out, "");
    tu_run_free(&r);
}
END_TEST

static const struct {
    const char *args;
    const char *expect;
} bad_args[] = {
    {"plan --ratio nan", "--ratio: 'nan' is not finite"},
    {"plan --ratio 2", "--ratio: 2 is outside [0, 1]"},
    {"plan --tp 0", "--tp"},
    {"plan --gpus 12 --tp 8", "--gpus: 12 is not a multiple"},
    {"plan --model no-such-model", "no-such-model"},
    {"plan --deepspeed-version 0.11.0", "--deepspeed-version: 0.11.0"},
    {"plan --sub-group-size 99999999999999999999", "--sub-group-size"},
    {"plan --policy sometimes", "--policy: 'sometimes'"},
    {"plan --ratios 0:1:0", "--ratios"},
    {"plan --ds-config missing.json", "missing.json"},
    {"plan --frobnicate", "unknown option '--frobnicate'"},
    {"plan --dtype fp8", "--dtype: 'fp8'"},
    {"nosuchcommand", "unknown command 'nosuchcommand'"},
};

START_TEST(bad_argument_exits_2)
{
    int i = _i;
    int before = tu_count_files();
    struct tu_run r;
    tu_ratiolab(&r, "%s --out out.txt", bad_args[i].args);
    ck_assert_msg(r.status == 2, "'%s': exit %d, stderr: %s", bad_args[i].args, r.status, r.err);
    ck_assert_msg(strstr(r.err, bad_args[i].expect), "'%s': stderr '%s' lacks '%s'", bad_args[i].args, r.err,
                  bad_args[i].expect);
    ck_assert_int_eq(tu_count_files(), before);
    tu_run_free(&r);
}
END_TEST

START_TEST(every_command_has_help)
{
    struct tu_run r;
    tu_ratiolab(&r, "--help");
    ck_assert_int_eq(r.status, 0);
    /* each command line in the list is "  NAME  summary" */
    char *save = NULL, *dup = strdup(r.out);
    int n = 0;
    for (char *line = strtok_r(dup, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[64];
        if (line[0] != ' ' || sscanf(line, " %63s", name) != 1)
            continue;
        struct tu_run h;
        tu_ratiolab(&h, "%s --help", name);
        ck_assert_msg(h.status == 0, "%s --help: exit %d", name, h.status);
        ck_assert_msg(strstr(h.out, "usage: ratiolab"), "%s --help prints no usage", name);
        tu_run_free(&h);
        tu_ratiolab(&h, "%s --version", name);
        ck_assert_msg(h.status == 0 && strncmp(h.out, "ratiolab ", 9) == 0, "%s --version: exit %d, '%s'", name,
                      h.status, h.out);
        tu_run_free(&h);
        n++;
    }
    ck_assert_int_ge(n, 2);
    free(dup);
    tu_run_free(&r);
}
END_TEST

START_TEST(default_case_shows_the_staircase)
{
    struct tu_run r;
    tu_ratiolab(&r, "plan --ratios 0:1:0.1");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    /* gpt-2.7b on TP 8: two param groups, one sub-group each under the 1e9 default */
    ck_assert_ptr_nonnull(strstr(r.out, "2 sub-groups"));
    ck_assert_ptr_nonnull(strstr(r.out, "3 distinct GPU footprints over 11 ratios under deepspeed-0.12; 11 under exact"));
    tu_run_free(&r);
}
END_TEST

START_TEST(json_is_deterministic_and_exact)
{
    struct tu_run a, b;
    tu_ratiolab(&a, "plan --json --ratio 0.3 --sub-group-size 2e7");
    tu_ratiolab(&b, "plan --json --ratio 0.3 --sub-group-size 2e7");
    ck_assert_int_eq(a.status, 0);
    ck_assert_str_eq(a.out, b.out);
    ck_assert_ptr_nonnull(strstr(a.out, "\"requested_ratio\""));
    ck_assert_ptr_nonnull(strstr(a.out, "\"honored_ratio\""));
    ck_assert_ptr_nonnull(strstr(a.out, "\"per_rank_numel\""));
    ck_assert_ptr_nonnull(strstr(a.out, "\"buffers\""));
    ck_assert_ptr_null(strstr(a.out, "e+"));   /* bytes are exact integers */
    tu_run_free(&a);
    tu_run_free(&b);
}
END_TEST

START_TEST(out_file_is_written_whole)
{
    struct tu_run r;
    tu_ratiolab(&r, "plan --json --out plan.json");
    ck_assert_int_eq(r.status, 0);
    char p[600];
    snprintf(p, sizeof p, "%s/plan.json", tu_tmpdir());
    ck_assert(tu_exists(p));
    tu_run_free(&r);
}
END_TEST

START_TEST(launch_line_checkpointing_reaches_the_simulator)
{
    struct tu_run r;
    const char *line = "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
                       "--max-position-embeddings 1024 --vocab-size 32000 --fp16 --micro-batch-size 2";
    tu_ratiolab(&r, "predict --gpus 8 --megatron-args \"%s --checkpoint-activations\"", line);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "activation checkpointing on"));
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --gpus 8 --megatron-args \"%s\"", line);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "activation checkpointing off"));
    tu_run_free(&r);
}
END_TEST

/* The inter-node collective figures (sim/collective.h) are named in the defaults warning only when
 * the layout spans nodes: polaris-a100-40g gives none of them. */
START_TEST(nccl_defaults_are_named_only_across_nodes)
{
    struct tu_run r;
    const char *line = "--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
                       "--max-position-embeddings 1024 --vocab-size 32000 --bf16 --micro-batch-size 1";
    tu_ratiolab(&r, "predict --hw polaris-a100-40g --gpus 4 --megatron-args \"%s\"", line);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "defaults or unverified"));
    ck_assert_ptr_null(strstr(r.err, "latency_us.nccl_ring_step_inter"));
    /* ZeRO-3's host time per submodule is a default of every catalog profile; calibrate does not
     * measure it, so the warning says what does. */
    ck_assert_ptr_nonnull(strstr(r.err, "host.zero3_us_per_module_forward, host.zero3_us_per_module_backward, "
                                         "host.zero3_partitioned_us_per_module_forward, "
                                         "host.zero3_partitioned_us_per_module_backward"));
    ck_assert_ptr_nonnull(strstr(r.err, "the host.zero3_* figures with scripts/ds_hook_cost.py"));
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --hw polaris-a100-40g --gpus 8 --gpus-per-node 4 --megatron-args \"%s\"", line);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, ", network.inter_busbw_gbps, latency_us.nccl_ring_step_intra, "
                                        "latency_us.nccl_ring_step_inter, latency_us.nccl_tree_step_intra, "
                                        "latency_us.nccl_tree_step_inter (measure them"));
    tu_run_free(&r);
}
END_TEST

Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("bad input");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, bad_config_exits_2_names_field_writes_nothing, 0,
                        (int)(sizeof bad_configs / sizeof bad_configs[0]));
    tcase_add_loop_test(tc, bad_argument_exits_2, 0, (int)(sizeof bad_args / sizeof bad_args[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("plan");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_command_has_help);
    tcase_add_test(tc, default_case_shows_the_staircase);
    tcase_add_test(tc, json_is_deterministic_and_exact);
    tcase_add_test(tc, out_file_is_written_whole);
    tcase_add_test(tc, launch_line_checkpointing_reaches_the_simulator);
    tcase_add_test(tc, nccl_defaults_are_named_only_across_nodes);
    suite_add_tcase(s, tc);
    return s;
}
