/* tests/check_newcomer.c — the planning commands with the inputs a new user brings: a Hugging Face
 * model folder (its config.json states the context the model supports, not a training length;
 * the model is named after its Hub id or folder), every header saying the sequence length and
 * where it comes from, and answers that DeepSpeed can run as printed. */
#include <check.h>
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rl.h"
#include "plan/json_edit.h"
#include "tests/util.h"

static int64_t jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }
static double jreal(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* <tmpdir>/<folder>/config.json: the Llama-3.1-8B preset as the Hub publishes it (without the
 * preset's own keys), with _name_or_path when name_or_path is not NULL. */
static void hf_folder(const char *folder, const char *name_or_path)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/models/llama3.1-8b.json", tu_catalog());
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    ck_assert_msg(o != NULL, "%s: %s", path, je.text);
    json_object_del(o, "source");
    json_object_del(o, "seq_len_default");
    if (name_or_path)
        json_object_set_new(o, "_name_or_path", json_string(name_or_path));
    struct tu_run r;
    tu_sh(&r, "mkdir -p '%s'", folder);
    ck_assert_int_eq(r.status, 0);
    tu_run_free(&r);
    char name[512];
    snprintf(name, sizeof name, "%s/config.json", folder);
    ck_assert_int_eq(json_dump_file(o, tu_path(name), JSON_INDENT(2)), 0);
    json_decref(o);
}

#define FOUR_A100 "--hw dgx-a100-40g --gpus 4 --host-mem 256GiB"

/* A Hub folder given as a folder is read through its config.json, named by its _name_or_path,
 * and trained at ratiolab's documented default length rather than its 131072-token context: the
 * answer is the preset's. */
START_TEST(hf_folder_is_the_preset_at_the_default_length)
{
    hf_folder("Llama-3.1-8B", "meta-llama/Llama-3.1-8B");
    json_t *hf = tu_ratiolab_json("tune --model ./Llama-3.1-8B/ " FOUR_A100 " --json");
    json_t *pre = tu_ratiolab_json("tune --model llama3.1-8b " FOUR_A100 " --json");
    const char *model = json_string_value(json_object_get(hf, "model"));
    ck_assert_msg(model && strncmp(model, "meta-llama/Llama-3.1-8B (", 25) == 0, "model: %s", model);
    json_t *a = json_object_get(hf, "answer"), *b = json_object_get(pre, "answer");
    ck_assert_msg(json_is_object(a), "no answer for the Hub folder");
    ck_assert_int_eq(jint(json_object_get(a, "prediction"), "seq_len"), 8192);
    ck_assert_int_eq(jint(json_object_get(a, "prediction"), "step_ns"), jint(json_object_get(b, "prediction"), "step_ns"));
    json_decref(hf);
    json_decref(pre);
    /* The header says where the length comes from and how to change it. */
    struct tu_run r;
    tu_ratiolab(&r, "tune --model Llama-3.1-8B " FOUR_A100);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "model      meta-llama/Llama-3.1-8B (hf-llama)") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, "seq 8192 (from ratiolab's default 8192: the config's max_position_embeddings "
                                "131072") != NULL && strstr(r.out, "--seq-len") != NULL, "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* Without _name_or_path a config.json is named after its folder, not "config.json". */
START_TEST(config_json_is_named_after_its_folder)
{
    hf_folder("my-llama", NULL);
    struct tu_run r;
    tu_ratiolab(&r, "plan --model my-llama/config.json --gpus 4");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "model      my-llama (hf-llama)") != NULL, "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* Every planning command's header says the sequence length and its origin; --seq-len wins. */
START_TEST(every_header_says_the_sequence_length)
{
    static const char *const cmds[] = {
        "plan --model llama3.1-8b --gpus 4",
        "predict --model llama3.1-8b --gpus 4 --hw dgx-a100-80g",
        "sweep --model llama3.1-8b --gpus 4 --hw dgx-a100-80g --ratios 0:1:0.5",
        "tune --model llama3.1-8b --gpus 4 --hw dgx-a100-80g --micro-batches 1",
        "check --ds-config ds.json --model llama3.1-8b --gpus 4",
    };
    tu_write("ds.json", "{\"zero_optimization\": {\"stage\": 3, \"sub_group_size\": 100000000, \"offload_optimizer\": "
                        "{\"device\": \"cpu\", \"ratio\": 0.5}}, \"bf16\": {\"enabled\": true}}");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        struct tu_run r;
        tu_ratiolab(&r, "%s", cmds[i]);
        ck_assert_msg(r.status == 0 || r.status == 1, "%s: exit %d: %s", cmds[i], r.status, r.err);
        ck_assert_msg(strstr(r.out, "8192 (from the preset's seq_len_default; --seq-len to change)") != NULL,
                      "%s: no sequence length in the header:\n%s", cmds[i], r.out);
        tu_run_free(&r);
        tu_ratiolab(&r, "%s --seq-len 2048", cmds[i]);
        ck_assert_msg(strstr(r.out, "2048 (from --seq-len)") != NULL, "%s --seq-len 2048:\n%s", cmds[i], r.out);
        tu_run_free(&r);
    }
}
END_TEST

/* Under a DeepSpeed policy tune answers with a (ratio, sub_group_size) pair DeepSpeed honors:
 * predict given exactly the printed sub_group_size and ratio honors the printed ratio and predicts
 * the printed step; the text prints that config block; the exact policy's best is an aside. On 4
 * x A100-40GB the element-granular best (ratio 0.80) is one DeepSpeed 0.12 cannot run with a
 * sub_group_size that fits, so the answer is another ratio. */
START_TEST(answer_is_a_pair_deepspeed_honors)
{
    static const char *const policies[] = {"", " --policy deepspeed-0.12", " --policy deepspeed-0.18"};
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
        json_t *t = tu_ratiolab_json("tune --model llama3.1-8b " FOUR_A100 "%s --json", policies[i]);
        json_t *a = json_object_get(t, "answer");
        ck_assert_msg(json_is_object(a), "%s: no answer", policies[i]);
        ck_assert_str_eq(json_string_value(json_object_get(a, "offload")), "cpu");
        double ratio = jreal(a, "requested_ratio"), honored = jreal(a, "honored_ratio");
        int64_t sgs = jint(a, "sub_group_size");
        ck_assert_msg(fabs(honored - ratio) <= 0.01, "%s: honored %g for ratio %g", policies[i], honored, ratio);
        json_t *cfg = json_object_get(json_object_get(t, "deepspeed_config"), "zero_optimization");
        ck_assert_int_eq(jint(cfg, "sub_group_size"), sgs);
        ck_assert(jreal(json_object_get(cfg, "offload_optimizer"), "ratio") == ratio);
        /* the answer's precision too: tune plans the checkpoint's (llama3.1-8b: bf16) */
        json_t *p = tu_ratiolab_json("predict --model llama3.1-8b " FOUR_A100 "%s --dtype %s --ratio %.17g --sub-group-size %lld "
                                     "--micro-batch %lld --grad-accum %lld%s --json", policies[i],
                                     json_string_value(json_object_get(t, "dtype")), ratio, (long long)sgs,
                                     (long long)jint(a, "micro_batch"), (long long)jint(a, "grad_accum"),
                                     json_is_true(json_object_get(a, "checkpoint_activations")) ? " --checkpoint-activations" : "");
        ck_assert_msg(jreal(p, "honored_ratio") == honored, "%s: predict honors %.17g, tune printed %.17g", policies[i],
                      jreal(p, "honored_ratio"), honored);
        ck_assert_int_eq(jint(json_object_get(p, "prediction"), "step_ns"), jint(json_object_get(a, "prediction"), "step_ns"));
        json_decref(p);
        json_decref(t);
    }
    /* The default policy's answer is not the element-granular 0.80 (DeepSpeed 0.12 honors 0.80
     * only with a sub_group_size that no longer fits); the text prints the block and the aside. */
    json_t *t = tu_ratiolab_json("tune --model llama3.1-8b " FOUR_A100 " --json");
    ck_assert(jreal(json_object_get(t, "best_exact"), "requested_ratio") == 0.8);
    ck_assert(jreal(json_object_get(t, "answer"), "requested_ratio") != 0.8);
    json_decref(t);
    struct tu_run r;
    tu_ratiolab(&r, "tune --model llama3.1-8b " FOUR_A100);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "\"sub_group_size\": ") && strstr(r.out, "\"ratio\": ") &&
                  strstr(r.out, "aside      an element-granular rule (not in DeepSpeed) would give ratio 0.80"),
                  "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* When nothing fits, tune says what binds and what would fit. 64 GiB of host RAM: the GPU side
 * fits, host RAM binds, and the smallest node RAM and GPU count that fit are named; re-running with
 * that RAM finds an answer. 1 GiB GPUs: GPU memory binds. */
START_TEST(nothing_fits_says_what_binds)
{
    struct tu_run r;
    tu_ratiolab(&r, "tune --model llama3.1-8b --hw dgx-a100-40g --gpus 4 --host-mem 64GiB");
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "host RAM binds") != NULL && strstr(r.err, "above the node's 64.00 GiB") != NULL &&
                  strstr(r.err, "8 GPUs would fit (--gpus 8") != NULL && strstr(r.err, "--seq-len") != NULL, "%s", r.err);
    const char *at = strstr(r.err, "a node with ");
    ck_assert_msg(at != NULL, "%s", r.err);
    double gib = strtod(at + strlen("a node with "), NULL);
    tu_run_free(&r);
    tu_ratiolab(&r, "tune --model llama3.1-8b --hw dgx-a100-40g --gpus 4 --host-mem %.2fGiB", gib + 0.01);
    ck_assert_msg(r.status == 0, "--host-mem %.2fGiB: exit %d: %s", gib + 0.01, r.status, r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "tune --model llama3.1-8b --hw dgx-a100-40g --gpus 4 --gpu-mem 1GiB");
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "GPU memory binds: the smallest prediction is ") != NULL &&
                  strstr(r.err, "would fit") != NULL, "%s", r.err);
    tu_run_free(&r);
}
END_TEST

/* The figure after `flag` ("--gpu-mem 52.74GiB") in the class line that starts with `cls`, in GiB. */
static double class_fix(const char *out, const char *cls, const char *flag)
{
    const char *l = strstr(out, cls);
    ck_assert_msg(l != NULL, "no line for %s: %s", cls, out);
    const char *nl = strchr(l, '\n'), *f = strstr(l, flag);
    ck_assert_msg(f != NULL && (!nl || f < nl), "%s: no %s: %s", cls, flag, out);
    return strtod(f + strlen(flag), NULL);
}

static json_t *tune_class(json_t *o, const char *key)
{
    json_t *a = json_object_get(o, "classes");
    for (size_t i = 0; i < json_array_size(a); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(a, i), "class")), key) == 0)
            return json_array_get(a, i);
    ck_abort_msg("no class %s", key);
    return NULL;
}

/* tune --json when nothing may fit (exit 0 or 1). */
static json_t *tune_json_any(const char *args)
{
    struct tu_run r;
    tu_ratiolab(&r, "tune --model llama3.1-8b --hw dgx-a100-40g --gpus 4 %s --json", args);
    ck_assert_msg(r.status == 0 || r.status == 1, "%s: exit %d: %s", args, r.status, r.err);
    json_error_t je;
    json_t *o = json_loads(r.out, 0, &je);
    ck_assert_msg(o != NULL, "%s: not JSON (%s)", args, je.text);
    tu_run_free(&r);
    return o;
}

/* When nothing fits, each class of candidates says what binds it and what alone would make it fit:
 * with 64 GiB of host RAM, GPU memory binds without offload, host RAM with full offload, one or
 * the other with partial offload. Each figure printed, given back alone, makes its class fit (the
 * JSON's classes[].fit), and the JSON carries the same facts. 16 GiB GPUs: full offload is bound
 * by both and needs the two together. */
START_TEST(nothing_fits_names_what_binds_each_class)
{
    struct tu_run r;
    tu_ratiolab(&r, "tune --model llama3.1-8b --hw dgx-a100-40g --gpus 4 --host-mem 64GiB");
    ck_assert_int_eq(r.status, 1);
    const char *no = "no offload (offload_optimizer none or ratio 0), 28 candidates: GPU memory binds: the lightest needs ";
    const char *part = "partial offload (ratio 0.10 to 0.90), 238 candidates: GPU memory or host RAM binds";
    const char *full = "full offload (ratio 1), 14 candidates: host RAM binds: 2 fit the GPU";
    ck_assert_msg(strstr(r.out, "nothing fits 4 GPUs of 40.00 GiB (38.00 GiB usable: 2.00 GiB headroom) with 64.00 GiB")
                  && strstr(r.out, no) && strstr(r.out, part) && strstr(r.out, full), "%s", r.out);
    double no_gpu = class_fix(r.out, "no offload (", "--gpu-mem "), part_gpu = class_fix(r.out, "partial offload (", "--gpu-mem ");
    double part_host = class_fix(r.out, "partial offload (", "--host-mem "), full_host = class_fix(r.out, "full offload (", "--host-mem ");
    ck_assert_msg(strstr(strstr(r.out, "no offload ("), "8 GPUs (--gpus 8: DP 8 on 1 node") != NULL, "%s", r.out);
    tu_run_free(&r);

    json_t *o = tune_json_any("--host-mem 64GiB");
    ck_assert_int_eq(jint(o, "host_mem_bytes"), INT64_C(64) << 30);
    const char *binds[][2] = {{"no_offload", "gpu"}, {"partial_offload", "gpu_or_host"}, {"full_offload", "host"}};
    for (int i = 0; i < 3; i++) {
        json_t *k = tune_class(o, binds[i][0]);
        ck_assert_str_eq(json_string_value(json_object_get(k, "binds")), binds[i][1]);
        ck_assert_int_eq(jint(k, "fit"), 0);
        ck_assert(json_is_object(json_object_get(k, "fits_with")));
    }
    json_t *w = json_object_get(tune_class(o, "full_offload"), "fits_with");
    ck_assert(json_is_null(json_object_get(w, "gpu_mem_bytes")));   /* host binds: more GPU memory does not help */
    ck_assert(fabs((double)jint(w, "host_mem_bytes") / (double)(INT64_C(1) << 30) - full_host) < 0.011);
    ck_assert_int_eq(jint(json_object_get(tune_class(o, "no_offload"), "fits_with"), "gpus"), 8);
    json_decref(o);

    struct { const char *args, *cls; double gib; } again[] = {
        {"--host-mem 64GiB --gpu-mem %.2fGiB", "no_offload", no_gpu},
        {"--host-mem 64GiB --gpu-mem %.2fGiB", "partial_offload", part_gpu},
        {"--host-mem %.2fGiB", "partial_offload", part_host},
        {"--host-mem %.2fGiB", "full_offload", full_host},
    };
    for (size_t i = 0; i < sizeof again / sizeof again[0]; i++) {
        char args[128];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"   /* again[]'s literals above, one %.2f each */
        snprintf(args, sizeof args, again[i].args, again[i].gib);
#pragma GCC diagnostic pop
        o = tune_json_any(args);
        ck_assert_msg(jint(tune_class(o, again[i].cls), "fit") > 0, "%s: class %s does not fit", args, again[i].cls);
        json_decref(o);
    }

    tu_ratiolab(&r, "tune --model llama3.1-8b --hw dgx-a100-40g --gpus 4 --host-mem 64GiB --gpu-mem 16GiB");
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.out, "full offload (ratio 1), 14 candidates: GPU memory and host RAM both bind") &&
                  strstr(r.out, "partial offload (ratio 0.10 to 0.90), 238 candidates: GPU memory binds"), "%s", r.out);
    double both_gpu = class_fix(r.out, "full offload (", "--gpu-mem "), both_host = class_fix(r.out, "full offload (", "--host-mem ");
    tu_run_free(&r);
    char args[128];
    snprintf(args, sizeof args, "--gpu-mem %.2fGiB --host-mem %.2fGiB", both_gpu, both_host);
    o = tune_json_any(args);
    ck_assert_msg(jint(tune_class(o, "full_offload"), "fit") > 0, "%s", args);
    json_decref(o);
}
END_TEST

/* A monitor CSV of a run: a launcher (no rank), rank 0 (one process: 5.5 GiB by its VmHWM) and
 * rank 1 (its process and a data-loader worker that carries its RANK: 5 GiB together at the second
 * sample, where the sum of their separate peaks would be 6), over base bytes of tensors. The header
 * is the one `ratiolab monitor --csv` writes (monitor/README.md). */
static const char *baseline_csv(const char *name, int64_t base)
{
    static char csv[8192];
    const int64_t g = INT64_C(1) << 30;
#define ROW "%lld,2026-12-01T15:00:00.000Z,%d,%d,%s,%d,%lld,1,1,1,%lld,0,0,0,,1.0,9,100,gpu_bytes: disabled by --no-gpu\n"
    struct { long long t; int pid, ppid; const char *comm; int rank; int64_t rss, hwm; } r[] = {
        {0, 10, 1, "torchrun", -1, 50000000, 50000000},
        {0, 11, 10, "python", 0, base + g, base + g},
        {0, 12, 10, "python", 1, base + 4 * g, base + 4 * g},
        {50000000, 10, 1, "torchrun", -1, 50000000, 50000000},
        {50000000, 11, 10, "python", 0, base + 5 * g, base + 5 * g + g / 2},
        {50000000, 12, 10, "python", 1, base + 4 * g, base + 4 * g},
        {50000000, 13, 12, "pt_data_worker", 1, g, g},
        {100000000, 11, 10, "python", 0, base + 5 * g, base + 5 * g + g / 2},
        {100000000, 12, 10, "python", 1, base + 2 * g, base + 4 * g},
        {100000000, 13, 12, "pt_data_worker", 1, 2 * g, 2 * g},
    };
    int w = snprintf(csv, sizeof csv, "# ratiolab 0.1.0 monitor\n"
                     "t_ns,time_utc,pid,ppid,comm,rank,rss_bytes,anon_bytes,file_bytes,shmem_bytes,hwm_bytes,locked_bytes,"
                     "pinned_bytes,swap_bytes,gpu_bytes,cpu_percent,threads,system_used_bytes,status\n"
                     "# followed: pid 10 and its descendants\n");
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        w += snprintf(csv + w, sizeof csv - (size_t)w, ROW, r[i].t, r[i].pid, r[i].ppid, r[i].comm, r[i].rank,
                      (long long)r[i].rss, (long long)r[i].hwm);
#undef ROW
    return tu_write(name, csv);
}

/* calibrate --host-baseline-from takes the per-rank host baseline from a monitor CSV of a real run:
 * per rank its processes' peak RSS less the ledger's host tensors for the run's model and config,
 * the largest over the ranks, written with its source into a profile that predict then uses. A bad
 * CSV, a peak below the tensors or a missing config: one line, exit 2, no profile written. */
START_TEST(host_baseline_from_a_monitor_csv)
{
    const int64_t g = INT64_C(1) << 30;
    const char *none = tu_write("ds_none.json", "{\"zero_optimization\": {\"stage\": 3}, \"bf16\": {\"enabled\": true}}");
    const char *off = tu_write("ds_off.json", "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": "
                               "{\"device\": \"cpu\", \"ratio\": 0.5}}, \"bf16\": {\"enabled\": true}}");
    const char *prof = tu_path("mine.json");
    struct tu_run r;
    for (int k = 0; k < 2; k++) {
        const char *cfg = k == 0 ? none : off;
        json_t *pr = tu_ratiolab_json("predict --model llama3.1-8b --gpus 2 --hw dgx-a100-40g --ds-config %s --json", cfg);
        int64_t tensors = jint(json_object_get(json_object_get(pr, "prediction"), "host_memory"), "rank_bytes");
        json_decref(pr);
        ck_assert(k == 0 ? tensors == 0 : tensors > g);
        const char *csv = baseline_csv("run.csv", tensors);
        remove(prof);
        tu_ratiolab(&r, "calibrate --host-baseline-from %s --model llama3.1-8b --gpus 2 --ds-config %s --hw dgx-a100-40g "
                    "--out %s", csv, cfg, prof);
        ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
        ck_assert_msg(strstr(r.out, "rank 0 peaked highest") && strstr(r.out, "baseline   5.50 GiB per rank (over the "
                      "ranks 5.00-5.50 GiB)"), "%s", r.out);
        tu_run_free(&r);
        json_error_t je;
        json_t *o = json_load_file(prof, 0, &je);
        ck_assert_msg(o != NULL, "%s", je.text);
        ck_assert_int_eq(jint(json_object_get(o, "node"), "host_baseline_bytes_per_rank"), 5 * g + g / 2);
        const char *src = json_string_value(json_object_get(json_object_get(o, "sources"), "node.host_baseline_bytes_per_rank"));
        ck_assert_msg(src && strstr(src, "run.csv") && strstr(src, "rank 0's 1 process") && strstr(src, "2 ranks, 5.00-5.50 GiB") && strstr(src, "= 5.50 GiB"), "%s",
                      src ? src : "(none)");
        ck_assert_str_eq(json_string_value(json_object_get(o, "name")), "dgx-a100-40g-baseline");
        json_decref(o);
    }
    json_t *pr = tu_ratiolab_json("predict --model llama3.1-8b --gpus 2 --hw %s --ds-config %s --json", prof, off);
    ck_assert_int_eq(jint(json_object_get(json_object_get(pr, "prediction"), "host_memory"), "baseline_node_bytes"),
                     2 * (5 * g + g / 2));
    json_decref(pr);

    /* Refused: one line naming the flag, exit 2, no profile. */
    struct { const char *csv, *cfg, *want; } bad[] = {
        {"t_ns,pid,comm\n0,1,python\n", none, "--host-baseline-from"},                 /* not the monitor's header */
        {NULL, none, "is not an integer"},                                            /* a malformed row */
        {"RANKS", off, "below the"},                                                  /* peaks below the tensors */
        {"RANKS", NULL, "--ds-config"},                                               /* no config */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *csv;
        if (!bad[i].csv) {
            char t[4096];
            snprintf(t, sizeof t, "%s", baseline_csv("b.csv", 0));
            char *text;
            size_t len;
            struct rl_err e;
            ck_assert_int_eq(rl_read_file(t, &text, &len, &e), 0);
            char *at = strstr(text, ",python,0,");
            memcpy(at + strlen(",python,0,"), "x", 1);   /* rss "x..." */
            csv = tu_write("b.csv", text);
            free(text);
        } else if (strcmp(bad[i].csv, "RANKS") == 0) {
            csv = baseline_csv("b.csv", 0);
        } else {
            csv = tu_write("b.csv", bad[i].csv);
        }
        remove(prof);
        if (bad[i].cfg)
            tu_ratiolab(&r, "calibrate --host-baseline-from %s --model llama3.1-8b --gpus 2 --ds-config %s --out %s",
                        csv, bad[i].cfg, prof);
        else
            tu_ratiolab(&r, "calibrate --host-baseline-from %s --model llama3.1-8b --gpus 2 --out %s", csv, prof);
        ck_assert_msg(r.status == 2, "case %zu: exit %d: %s", i, r.status, r.err);
        ck_assert_msg(strncmp(r.err, "ratiolab calibrate: ", 20) == 0 && strchr(r.err, '\n') == r.err + strlen(r.err) - 1 &&
                      strstr(r.err, bad[i].want) && strstr(r.err, "--host-baseline-from"), "case %zu: %s", i, r.err);
        ck_assert_msg(r.out[0] == 0, "case %zu: printed %s", i, r.out);
        ck_assert_msg(access(prof, F_OK) != 0, "case %zu: a profile was written", i);
        tu_run_free(&r);
    }
}
END_TEST

#define RATIO03 "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.3}}, " \
                "\"bf16\": {\"enabled\": true}}"

/* check and tune take several DeepSpeed versions and find one sub_group_size honored within the
 * tolerance under every listed rule: the fix --fix-to writes passes under each version alone. */
START_TEST(several_versions_one_sub_group_size)
{
    tu_write("ds.json", RATIO03);
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config ds.json --model llama3.1-8b --dp 4 --deepspeed-version 0.14.4,0.18.0 --fix-to fixed.json");
    ck_assert_msg(r.status == 1, "exit %d: %s%s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.out, "every listed version") != NULL, "%s", r.out);
    tu_run_free(&r);
    static const char *const versions[] = {"0.14.4", "0.18.0", "0.14.4,0.18.0", "0.18.0,0.14.4"};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        tu_ratiolab(&r, "check --ds-config fixed.json --model llama3.1-8b --dp 4 --deepspeed-version %s", versions[i]);
        ck_assert_msg(r.status == 0, "the common fix under %s: exit %d: %s%s", versions[i], r.status, r.out, r.err);
        tu_run_free(&r);
    }
    /* tune's answer: predict under each version alone honors the ratio with that sub_group_size. */
    json_t *t = tu_ratiolab_json("tune --model llama3.1-8b " FOUR_A100 " --deepspeed-version 0.14.4,0.18.0 --json");
    json_t *a = json_object_get(t, "answer");
    ck_assert(json_is_object(a));
    double ratio = jreal(a, "requested_ratio");
    for (size_t i = 0; i < 2; i++) {
        json_t *p = tu_ratiolab_json("predict --model llama3.1-8b " FOUR_A100 " --deepspeed-version %s --ratio %.17g "
                                     "--sub-group-size %lld --json", versions[i], ratio, (long long)jint(a, "sub_group_size"));
        ck_assert_msg(fabs(jreal(p, "honored_ratio") - ratio) <= 0.01, "%s honors %g for %g", versions[i],
                      jreal(p, "honored_ratio"), ratio);
        json_decref(p);
    }
    json_decref(t);
    /* A fixed policy with several versions is a contradiction. */
    tu_ratiolab(&r, "check --ds-config ds.json --model llama3.1-8b --dp 4 --deepspeed-version 0.14.4,0.18.0 --policy exact");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "--deepspeed-version") != NULL, "%s", r.err);
    tu_run_free(&r);
}
END_TEST

/* make demo is simulation only (seconds): scripts/demo.sh never starts the executor; figure 4 is
 * scripts/demo-validate.sh (make demo-validate). Both are run with a stand-in binary that records
 * the subcommands it is given, so the test costs no simulation. */
START_TEST(demo_runs_no_executor)
{
    tu_write("fake.sh", "#!/bin/sh\necho \"$1\" >> \"$(dirname \"$0\")/calls.txt\"\nexit 0\n");
    struct tu_run r;
    tu_sh(&r, "chmod +x fake.sh && RATIOLAB_OUT=out '%s/scripts/demo.sh' \"$PWD/fake.sh\"", tu_src());
    ck_assert_msg(r.status == 0, "demo.sh: exit %d: %s%s", r.status, r.out, r.err);
    ck_assert_msg(strstr(r.out, "make demo-validate") != NULL, "demo.sh does not point to make demo-validate:\n%s", r.out);
    tu_run_free(&r);
    char *calls = tu_slurp("calls.txt");
    ck_assert_msg(strstr(calls, "sweep\n") != NULL && strstr(calls, "tune\n") != NULL, "%s", calls);
    ck_assert_msg(strstr(calls, "validate") == NULL && strstr(calls, "run\n") == NULL && strstr(calls, "calibrate") == NULL,
                  "make demo starts the executor:\n%s", calls);
    free(calls);
    tu_sh(&r, "rm -f calls.txt && RATIOLAB_OUT=out '%s/scripts/demo-validate.sh' \"$PWD/fake.sh\"", tu_src());
    ck_assert_msg(r.status == 0, "demo-validate.sh: exit %d: %s%s", r.status, r.out, r.err);
    tu_run_free(&r);
    calls = tu_slurp("calls.txt");
    ck_assert_msg(strcmp(calls, "validate\nplot\nplot\n") == 0, "%s", calls);
    free(calls);
}
END_TEST

/* Units and what is modelled: a GPU size in decimal units warns; --gpu-mem shows in the GPU's name;
 * bf16 on a profile without bf16 tensor cores warns; an "auto" dtype says what it was planned as;
 * the catalog stores what the DIMMs hold and names the CPUs. */
START_TEST(units_and_what_is_modelled)
{
    struct tu_run r;
    tu_ratiolab(&r, "predict --gpu-mem 80GB");
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strstr(r.err, "--gpu-mem 80GB is 74.51 GiB") != NULL && strstr(r.err, "80GiB") != NULL, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --gpu-mem 80GiB");   /* binary units: no units warning (the profile's defaults are named) */
    ck_assert_msg(r.status == 0 && strstr(r.err, "--gpu-mem") == NULL && strstr(r.err, "defaults or unverified") != NULL,
                  "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "tune --hw dgx1-v100 --gpu-mem 32GiB --ratios 0:1:0.5 --micro-batches 1");
    /* issue 38: the GPU's name says its memory was set, and "per node" follows no GiB figure */
    ck_assert_msg(strstr(r.out, "x V100-SXM2-16GB (memory set to 32.00 GiB) per node, 32.00 GiB per GPU") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, "GiB per node") == NULL || strstr(r.out, "32.00 GiB per node") == NULL, "%s", r.out);
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --dtype bf16");
    ck_assert_msg(strstr(r.err, "no bf16 tensor cores") != NULL, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --dtype bf16 --hw dgx-a100-40g");
    ck_assert_msg(strstr(r.err, "no bf16 tensor cores") == NULL, "%s", r.err);
    tu_run_free(&r);
    tu_write("auto.json", "{\"zero_optimization\": {\"stage\": 3}, \"bf16\": {\"enabled\": \"auto\"}}");
    static const char *const cmds[] = {"plan", "predict", "sweep --ratios 0:1:0.5", "tune --ratios 0:1:0.5 --micro-batches 1"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        tu_ratiolab(&r, "%s --ds-config auto.json", cmds[i]);
        ck_assert_msg(strstr(r.err, "\"auto\": planned as fp32") != NULL && strstr(r.err, "--dtype") != NULL,
                      "%s: %s", cmds[i], r.err);
        tu_run_free(&r);
    }
    json_t *c = tu_ratiolab_json("catalog --json");
    json_t *hw = json_object_get(c, "hardware");
    bool seen = false;
    for (size_t i = 0; i < json_array_size(hw); i++) {
        json_t *h = json_array_get(hw, i);
        ck_assert_msg(json_string_length(json_object_get(h, "cpu_model")) > 0, "%s: no CPU model",
                      json_string_value(json_object_get(h, "name")));
        if (strcmp(json_string_value(json_object_get(h, "name")), "dgx-a100-40g") == 0) {
            ck_assert_int_eq(jint(h, "host_mem_bytes"), INT64_C(1) << 40);   /* 16 x 64 GiB DIMMs */
            seen = true;
        }
    }
    ck_assert(seen);
    json_decref(c);
}
END_TEST

/* Small things a newcomer trips over: misspelt names get a suggestion, preset and profile names
 * match without regard to case, sweep --csv - writes to standard output, --hw a,b on a command
 * that takes one profile says so. */
START_TEST(misspellings_and_small_things)
{
    struct tu_run r;
    tu_ratiolab(&r, "plan --model lama3.1-8b");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "did you mean 'llama3.1-8b'?") != NULL, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "plna");
    ck_assert_msg(r.status == 2 && strstr(r.err, "did you mean 'plan'?") != NULL, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --ratoi 0.3");
    ck_assert_msg(r.status == 2 && strstr(r.err, "did you mean --ratio?") != NULL, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --hw dgx-h10");
    ck_assert_msg(r.status == 2 && strstr(r.err, "did you mean 'dgx-h100'?") != NULL, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --model Llama3.1-8B --gpus 4");
    ck_assert_msg(r.status == 0 && strstr(r.out, "model      llama3.1-8b (hf-llama)") != NULL, "%s%s", r.out, r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "predict --hw DGX-H100");
    ck_assert_msg(r.status == 0 && strstr(r.out, "dgx-h100") != NULL, "%s%s", r.out, r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "sweep --ratios 0:1:0.5 --csv -");
    ck_assert_msg(r.status == 0 && strncmp(r.out, "# ratiolab ", 11) == 0 && strstr(r.out, "\nrequested_ratio,") != NULL,
                  "%s%s", r.out, r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "sweep --ratios 0:1:0.5 --csv s.csv");
    ck_assert_msg(r.status == 0 && r.out[0] == 0, "%s%s", r.out, r.err);
    tu_run_free(&r);
    char *csv = tu_slurp("s.csv");
    ck_assert(strstr(csv, "\nrequested_ratio,") != NULL);
    free(csv);
    tu_ratiolab(&r, "predict --hw dgx-a100-40g,dgx-h100");
    ck_assert_msg(r.status == 2 && strstr(r.err, "names several profiles; this command takes one") != NULL, "%s", r.err);
    tu_run_free(&r);
}
END_TEST

/* The scheduler hazard follows DeepSpeed's stage3.py: the backup (GPU) optimizer, which copies
 * param group 0's lr once, exists whenever optimizer offload is on and ratio != 1.0
 * (`if self.offload_optimizer and self.partial_offload != 1.0`), so at ratio 0 every sub-group of
 * group 0 keeps the initial lr: it fires there; without optimizer offload there is no backup
 * optimizer and it does not. */
START_TEST(scheduler_hazard_follows_the_backup_optimizer)
{
    static const struct { const char *off; bool fires; } cases[] = {
        {"\"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.0}", true},
        {"\"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.3}", true},
        {"\"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 1.0}", false},
        {"\"offload_optimizer\": {\"device\": \"none\"}", false},
        {"\"stage3_param_persistence_threshold\": 0", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cfg[512];
        snprintf(cfg, sizeof cfg, "{\"zero_optimization\": {\"stage\": 3, %s}, \"optimizer\": {\"type\": \"AdamW\", "
                 "\"params\": {\"lr\": 1e-4}}, \"scheduler\": {\"type\": \"WarmupLR\", \"params\": {}}}", cases[i].off);
        tu_write("s.json", cfg);
        struct tu_run r;
        tu_ratiolab(&r, "check --ds-config s.json --model gpt2");
        ck_assert_msg((strstr(r.out, "scheduler") != NULL) == cases[i].fires, "%s: %s", cases[i].off, r.out);
        tu_run_free(&r);
    }
}
END_TEST

/* check --fix-to changes only what it must: the rest of the file keeps its bytes (one-line
 * objects, 1e9 spelt as typed, no trailing newline), so the diff is the fix. */
START_TEST(fix_to_changes_only_the_fixed_lines)
{
    const char *cfg = "{\n  \"train_micro_batch_size_per_gpu\": 1,\n  \"bf16\": {\"enabled\": true},\n"
                      "  \"zero_optimization\": {\n    \"stage\": 3,\n    \"sub_group_size\": 1e9,\n"
                      "    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true, \"ratio\": 0.3}\n  },\n"
                      "  \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 1e-4, \"torch_adam\": true}}\n}";
    tu_write("ds.json", cfg);
    struct tu_run r;
    tu_ratiolab(&r, "check --ds-config ds.json --model llama3.1-8b --dp 4 --fix-to fixed.json");
    ck_assert_msg(r.status == 1, "exit %d: %s%s", r.status, r.out, r.err);
    tu_run_free(&r);
    char *got = tu_slurp("fixed.json");
    const char *want = "{\n  \"train_micro_batch_size_per_gpu\": 1,\n  \"bf16\": {\"enabled\": true},\n"
                       "  \"zero_optimization\": {\n    \"stage\": 3,\n    \"sub_group_size\": 600000000,\n"
                       "    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true, \"ratio\": 0.3}\n  },\n"
                       "  \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 1e-4}}\n}";
    ck_assert_str_eq(got, want);
    free(got);
    tu_ratiolab(&r, "check --ds-config fixed.json --model llama3.1-8b --dp 4");
    ck_assert_msg(r.status == 0, "the fixed config: exit %d: %s", r.status, r.out);
    tu_run_free(&r);
}
END_TEST

/* The text edits themselves: replace, append with the neighbour's indentation, create the missing
 * objects on the path, remove the first, a middle and the only member; refuse a non-object. */
START_TEST(json_text_edits)
{
    struct rl_err e = {0};
    static const struct { const char *in; const char *path[3]; int n; const char *val; const char *out; } c[] = {
        {"{\"a\": {\"b\": 1}}", {"a", "b"}, 2, "2", "{\"a\": {\"b\": 2}}"},
        {"{\n  \"a\": {\n    \"x\": [1, {\"b\": 0}]\n  }\n}", {"a", "b"}, 2, "7",
         "{\n  \"a\": {\n    \"x\": [1, {\"b\": 0}],\n    \"b\": 7\n  }\n}"},
        {"{\"z\": \"a\\\"b\", \"a\": {}}", {"a", "b", "c"}, 3, "true", "{\"z\": \"a\\\"b\", \"a\": {\"b\": {\"c\": true}}}"},
        {"{}", {"a"}, 1, "1", "{\"a\": 1}"},
        {"{\"a\": 1, \"b\": 2, \"c\": 3}", {"a"}, 1, NULL, "{\"b\": 2, \"c\": 3}"},
        {"{\"a\": 1, \"b\": 2, \"c\": 3}", {"b"}, 1, NULL, "{\"a\": 1, \"c\": 3}"},
        {"{\"p\": {\"b\": 2}}", {"p", "b"}, 2, NULL, "{\"p\": {}}"},
        {"{\"p\": {\"b\": 2}}", {"p", "q"}, 2, NULL, "{\"p\": {\"b\": 2}}"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char *t = strdup(c[i].in);
        int rc = c[i].val ? plan_json_text_set(&t, c[i].path, c[i].n, c[i].val, &e)
                          : plan_json_text_del(&t, c[i].path, c[i].n, &e);
        ck_assert_msg(rc == 0, "case %zu: %s", i, e.msg);
        ck_assert_str_eq(t, c[i].out);
        free(t);
    }
    char *t = strdup("{\"a\": 3}");
    ck_assert_int_eq(plan_json_text_set(&t, (const char *[]){"a", "b"}, 2, "1", &e), RL_EINVAL);
    free(t);
    t = strdup("{\"a\": }");
    ck_assert_int_eq(plan_json_text_set(&t, (const char *[]){"a"}, 1, "1", &e), RL_EINVAL);
    free(t);
}
END_TEST

/* Host memory counts the processes and the OS, not the tensors alone: a node whose RAM holds the
 * offloaded optimizer with 1 GiB to spare does not fit once each rank's baseline and the OS
 * reserve are counted; with --host-baseline 0B and room for the reserve it does. */
START_TEST(host_memory_counts_processes_and_os)
{
    json_t *p = tu_ratiolab_json("predict --ratio 1 --json");
    json_t *h = json_object_get(json_object_get(p, "prediction"), "host_memory");
    int64_t tensors = jint(h, "node_bytes"), base = jint(h, "baseline_node_bytes"), os = jint(h, "os_reserve_bytes");
    ck_assert_int_eq(base, INT64_C(8) * (INT64_C(4) << 30));   /* 8 ranks x 4 GiB */
    ck_assert_int_eq(os, INT64_C(8) << 30);
    ck_assert_int_eq(jint(h, "total_node_bytes"), tensors + base + os);
    json_decref(p);
    long long mib = (long long)((tensors >> 20) + 1024);   /* the tensors and 1 GiB */
    p = tu_ratiolab_json("predict --ratio 1 --host-mem %lldMiB --json", mib);
    ck_assert(json_is_false(json_object_get(json_object_get(json_object_get(p, "prediction"), "host_memory"), "fits")));
    json_decref(p);
    p = tu_ratiolab_json("predict --ratio 1 --host-mem %lldMiB --host-baseline 0B --json", mib + 8192);
    ck_assert(json_is_true(json_object_get(json_object_get(json_object_get(p, "prediction"), "host_memory"), "fits")));
    json_decref(p);
    struct tu_run r;
    tu_ratiolab(&r, "predict --ratio 1");
    ck_assert_msg(strstr(r.out, "with the processes and the OS: ") != NULL && strstr(r.out, "OS reserve 8.00") != NULL,
                  "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* offload_param "cpu" (ZeRO-Infinity) is modelled, not ignored: the 16-bit partitions move from
 * the GPU ledger to pinned host memory (DeepSpeed pins that flat buffer whatever pin_memory says),
 * the step fetches each block's partition over PCIe before its all-gather in forward and backward
 * (the H2D busy time is at least their bytes at the link's rate), the executor refuses it,
 * and nvme is refused as not modelled. */
START_TEST(offload_param_is_modelled)
{
#define BASE "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.5}%s}, " \
             "\"fp16\": {\"enabled\": true}}"
    char cfg[512];
    snprintf(cfg, sizeof cfg, BASE, "");
    tu_write("off.json", cfg);
    snprintf(cfg, sizeof cfg, BASE, ", \"offload_param\": {\"device\": \"cpu\", \"pin_memory\": false}");
    tu_write("param.json", cfg);
    const char *q = "--model gpt-350m --gpus 4 --hw dgx-a100-40g";
    json_t *a = tu_ratiolab_json("predict --ds-config off.json %s --json", q);
    json_t *b = tu_ratiolab_json("predict --ds-config param.json %s --json", q);
    json_t *pa = json_object_get(a, "prediction"), *pb = json_object_get(b, "prediction");
    int64_t P = jint(a, "per_rank_numel"), bytes = 2 * P;   /* fp16 */
    ck_assert_int_eq(jint(json_object_get(pa, "gpu_memory_per_rank"), "ledger_bytes") - bytes,
                     jint(json_object_get(pb, "gpu_memory_per_rank"), "ledger_bytes"));
    ck_assert_int_eq(jint(json_object_get(pa, "host_memory"), "rank_bytes") + bytes,
                     jint(json_object_get(pb, "host_memory"), "rank_bytes"));
    int64_t ha = jint(json_object_get(json_object_get(pa, "phases"), "param_h2d"), "busy_ns");
    int64_t hb = jint(json_object_get(json_object_get(pb, "phases"), "param_h2d"), "busy_ns");
    /* forward and backward at the A100 link's 25 GB/s at best; the CPU sub-groups' copy-back H2D
     * of `a` is gone (they cast into the host partitions) */
    double min_ns = 2.0 * (double)bytes / 25e9 * 1e9;
    ck_assert_msg((double)hb >= min_ns * 0.99, "param_h2d %lld -> %lld ns, want at least %.0f", (long long)ha,
                  (long long)hb, min_ns);
    /* not ignored: the step changes (here it is shorter: the CPU sub-group's blocking pageable
     * copy back becomes a host cast, and its H2D the next forward's pinned fetch) */
    ck_assert_int_ne(jint(pb, "step_ns"), jint(pa, "step_ns"));
    json_decref(a);
    json_decref(b);
    json_t *pl = tu_ratiolab_json("plan --ds-config param.json --model gpt-350m --gpus 4 --json");
    json_t *bufs = json_object_get(pl, "buffers");
    bool seen = false;
    for (size_t i = 0; i < json_array_size(bufs); i++) {
        json_t *x = json_array_get(bufs, i);
        if (strcmp(json_string_value(json_object_get(x, "name")), "fp16_partitions") == 0) {
            ck_assert_str_eq(json_string_value(json_object_get(x, "device")), "cpu-pinned");
            seen = true;
        }
    }
    ck_assert(seen);
    json_decref(pl);
    struct tu_run r;
    tu_ratiolab(&r, "run --ds-config param.json --model gpt-350m --scale 100");
    ck_assert_msg(r.status == 2 && strstr(r.err, "offload_param") != NULL, "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    snprintf(cfg, sizeof cfg, BASE, ", \"offload_param\": {\"device\": \"nvme\"}");
    tu_write("nvme.json", cfg);
    tu_ratiolab(&r, "predict --ds-config nvme.json %s", q);
    ck_assert_msg(r.status == 2 && strstr(r.err, "offload_param.device") != NULL, "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
}
END_TEST
#undef BASE

/* ---- every README example runs as written ---------------------------------------------------- */

/* line with every number (a run of digits and '.' that is not part of a word) replaced by '#' and runs of blanks by one: step times
 * and memory readings of a real run differ from run to run (and so do the widths of their
 * columns), the words around them and the digest's letters do not. */
static void mask_numbers(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 2 < n;) {
        bool starts = (in[i] >= '0' && in[i] <= '9') || (in[i] == '.' && in[i + 1] >= '0' && in[i + 1] <= '9');
        if (starts && (i == 0 || !isalnum((unsigned char)in[i - 1]))) {
            size_t j = i;
            while ((in[j] >= '0' && in[j] <= '9') || in[j] == '.')
                j++;
            if (!isalnum((unsigned char)in[j])) {   /* a number, not part of a word (a digest, fp32) */
                out[o++] = '#';
                i = j;
                continue;
            }
        }
        if (in[i] == ' ' && o > 0 && out[o - 1] == ' ') {   /* columns realign with the numbers' widths */
            i++;
            continue;
        }
        out[o++] = in[i++];
    }
    out[o] = 0;
}

/* Does got[0..ng) match want[0..nw), where a want line "..." stands for any number of lines? */
static bool lines_match(char **want, int nw, char **got, int ng, bool masked)
{
    if (nw == 0)
        return ng == 0;
    const char *w = want[0] + strspn(want[0], " ");
    if (strcmp(w, "...") == 0) {
        for (int k = 0; k <= ng; k++)
            if (lines_match(want + 1, nw - 1, got + k, ng - k, masked))
                return true;
        return false;
    }
    if (ng == 0)
        return false;
    char a[1024], b[1024];   /* trailing blanks do not count (editors strip them from the README) */
    if (masked) {
        mask_numbers(want[0], a, sizeof a);
        mask_numbers(got[0], b, sizeof b);
    } else {
        snprintf(a, sizeof a, "%s", want[0]);
        snprintf(b, sizeof b, "%s", got[0]);
    }
    for (char *t = a + strlen(a); t > a && t[-1] == ' '; t--)
        t[-1] = 0;
    for (char *t = b + strlen(b); t > b && t[-1] == ' '; t--)
        t[-1] = 0;
    return strcmp(a, b) == 0 && lines_match(want + 1, nw - 1, got + 1, ng - 1, masked);
}

/* Splits text into lines in place (the last without '\n' too); returns their count (at most cap). */
static int split_lines(char *text, char **lines, int cap)
{
    int n = 0;
    for (char *p = text; *p && n < cap;) {
        lines[n++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = 0;
        p = nl + 1;
    }
    return n;
}

/* The guides the front page sends a newcomer to, whose examples are held to what they print. */
static const char *const guides[] = {"README.md", "docs/plan-and-predict.md", "docs/run.md", "docs/figures.md",
                                     "docs/validation.md", "docs/deepspeed-oracle.md", "docs/ci.md",
                                     "docs/inputs.md", "docs/development.md"};

/* An example already run (the front page repeats a few of the guides'): its command and output. */
struct ran {
    char *cmd;   /* as written after "$ " */
    char *out;   /* what it printed */
};

/* Runs every example of the file at rel (from the source root) and checks what it prints; an
 * example run before (ran[0..*n_ran)) is checked against that run's output instead of run again.
 * Returns the number of examples checked. */
static int check_examples(const char *rel, struct ran *ran, int *n_ran, int cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tu_src(), rel);
    char *text = tu_read(path, NULL);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    static char *lines[20000];
    int n = split_lines(text, lines, 20000), examples = 0;
    for (int i = 0; i < n; i++) {
        if (strncmp(lines[i], "```", 3) != 0)
            continue;
        int end = i + 1;
        while (end < n && strncmp(lines[end], "```", 3) != 0)
            end++;
        for (int j = i + 1; j < end;) {
            if (strncmp(lines[j], "$ ", 2) != 0) {
                j++;
                continue;
            }
            const char *cmd = lines[j] + 2;
            int k = j + 1;
            while (k < end && strncmp(lines[k], "$ ", 2) != 0)
                k++;
            const char *rl = strstr(cmd, "ratiolab ");
            ck_assert_msg(rl != NULL, "%s: an example that is not ratiolab: %s", rel, cmd);
            if (strncmp(rl, "ratiolab validate ", 18) != 0) {
                int seen = 0;
                while (seen < *n_ran && strcmp(ran[seen].cmd, cmd) != 0)
                    seen++;
                if (seen == *n_ran) {
                    struct tu_run r;
                    /* Ranks started by mpirun run without LeakSanitizer, as in check_exec.c: Open
                     * MPI's dlclose'd plugins leak where no suppression can name them. */
                    bool mpi = rl != cmd;
                    tu_sh(&r, "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 %s%.*s'%s' %s",
                          mpi ? "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 " : "", (int)(rl - cmd), cmd, tu_bin(),
                          rl + strlen("ratiolab "));
                    ck_assert_msg(r.status == 0, "%s example `%s`: exit %d: %.2000s", rel, cmd, r.status, r.err);
                    ck_assert_int_lt(*n_ran, cap);
                    ran[*n_ran].cmd = strdup(cmd);
                    ran[*n_ran].out = strdup(r.out);
                    (*n_ran)++;
                    tu_run_free(&r);
                }
                char *out = strdup(ran[seen].out);
                static char *got[20000];
                int ng = split_lines(out, got, 20000);
                if (ng > 0 && got[ng - 1][0] == 0)
                    ng--;
                bool masked = strstr(rl, "ratiolab run ") == rl;
                ck_assert_msg(lines_match(lines + j + 1, k - j - 1, got, ng, masked),
                              "%s shows another output of `%s` than it prints now:\n%.3000s", rel, cmd, ran[seen].out);
                free(out);
                examples++;
            }
            j = k;
        }
        i = end;
    }
    free(text);
    return examples;
}

/* Every "$ ratiolab ..." and "$ mpirun ... ratiolab ..." example of the front page and its guides
 * runs as written and prints what the page shows: exactly for the planning commands, with the
 * numbers of a real run (`run`: times, memory) free; "..." stands for lines left out. The validate
 * examples are left out: one needs the user's DeepSpeed log, the other runs for minutes (make
 * demo-validate runs it). An example on two pages runs once. Cost: about 20 s on a loaded 2-core
 * machine (the mpirun examples). */
START_TEST(readme_examples_run_as_written)
{
    static struct ran ran[64];
    int n_ran = 0, examples = 0, front = 0;
    for (size_t g = 0; g < sizeof guides / sizeof guides[0]; g++) {
        int k = check_examples(guides[g], ran, &n_ran, (int)(sizeof ran / sizeof ran[0]));
        front += g == 0 ? k : 0;
        examples += k;
    }
    ck_assert_int_ge(front, 3);      /* one for each job on the front page */
    ck_assert_int_ge(examples, 8);   /* 13 ran from the README when the guides were split from it */
    for (int i = 0; i < n_ran; i++) {
        free(ran[i].cmd);
        free(ran[i].out);
    }
}
END_TEST

/* The front page: under 250 lines, `make demo` and `make test` its first two commands, and every
 * docs/ page it names is there. */
START_TEST(readme_is_a_front_page)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/README.md", tu_src());
    char *text = tu_read(path, NULL);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    ck_assert_msg(lines < 250, "README.md has %d lines; a front page has under 250", lines);
    const char *block = strstr(text, "```sh\n");
    ck_assert_msg(block, "README.md: no ```sh block with the commands");
    block += strlen("```sh\n");
    ck_assert_msg(strncmp(block, "make demo ", 10) == 0, "README.md: the first command is not make demo: %.40s", block);
    const char *second = strchr(block, '\n') + 1;
    ck_assert_msg(strncmp(second, "make test ", 10) == 0, "README.md: the second command is not make test: %.40s", second);
    int named = 0;
    for (const char *p = strstr(text, "docs/"); p; p = strstr(p + 1, "docs/")) {
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-_./*");
        while (n > 0 && p[n - 1] == '.')
            n--;   /* the end of a sentence */
        if (n < 8 || memchr(p, '*', n) || p[n - 1] == '/')
            continue;   /* docs/json-*.md names a family, docs/figures/ a folder */
        char f[4096];
        snprintf(f, sizeof f, "%s/%.*s", tu_src(), (int)n, p);
        ck_assert_msg(access(f, R_OK) == 0, "README.md names %.*s, which is not there", (int)n, p);
        named++;
    }
    ck_assert_int_ge(named, 8);
    for (size_t g = 1; g < sizeof guides / sizeof guides[0]; g++)
        ck_assert_msg(strstr(text, guides[g]), "README.md does not send the reader to %s", guides[g]);
    free(text);
}
END_TEST

Suite *newcomer_suite(void)
{
    Suite *s = suite_create("newcomer");
    TCase *t = tcase_create("inputs");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, hf_folder_is_the_preset_at_the_default_length);
    tcase_add_test(t, config_json_is_named_after_its_folder);
    tcase_add_test(t, every_header_says_the_sequence_length);
    tcase_add_test(t, answer_is_a_pair_deepspeed_honors);
    tcase_add_test(t, nothing_fits_says_what_binds);
    tcase_add_test(t, nothing_fits_names_what_binds_each_class);
    tcase_add_test(t, host_baseline_from_a_monitor_csv);
    tcase_add_test(t, several_versions_one_sub_group_size);
    tcase_add_test(t, demo_runs_no_executor);
    tcase_add_test(t, units_and_what_is_modelled);
    tcase_add_test(t, misspellings_and_small_things);
    tcase_add_test(t, scheduler_hazard_follows_the_backup_optimizer);
    tcase_add_test(t, fix_to_changes_only_the_fixed_lines);
    tcase_add_test(t, json_text_edits);
    tcase_add_test(t, host_memory_counts_processes_and_os);
    tcase_add_test(t, readme_examples_run_as_written);
    tcase_add_test(t, readme_is_a_front_page);
    tcase_add_test(t, offload_param_is_modelled);
    suite_add_tcase(s, t);
    return s;
}
