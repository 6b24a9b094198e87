/* tests/fuzz_targets.c — see fuzz_targets.h. Each target does what the command line does with a
 * file of that kind after reading it (rl_read_file's NUL check, then the parser, then the first
 * consumer where one is cheap), so a finding is a finding a user can hit. */
#include "tests/fuzz_targets.h"

#include <stdlib.h>
#include <string.h>

#include "common/rl.h"
#include "plan/megatron_args.h"
#include "plan/plan.h"
#include "sim/hw.h"
#include "traces/dslog.h"
#include "traces/trace.h"
#include "traces/dsconfig.h"
#include "validation/probe.h"

/* The input as the readers hand it over: NUL-terminated, refused when it holds a NUL. NULL when
 * the reader would have refused it. */
static char *as_text(const uint8_t *data, size_t size)
{
    if (size > RL_INPUT_MAX_BYTES || rl_check_text("fuzz", (const char *)data, size, NULL) != 0)
        return NULL;
    char *t = malloc(size + 1);
    if (!t)
        return NULL;
    memcpy(t, data, size);
    t[size] = 0;
    return t;
}

/* A small model for the DeepSpeed config to be planned against. */
static const char *const small_model =
    "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 64, \"n_head\": 4, \"vocab_size\": 1000}";

static void ds_config(const uint8_t *data, size_t size)
{
    char *text = as_text(data, size);
    if (!text)
        return;
    struct plan_zero z;
    struct rl_err e = {0};
    if (plan_zero_parse(&z, text, "fuzz.json", &e) == 0) {
        struct plan_model m;
        struct plan_model_opts mo = {1, 1, 0, 0};
        if (plan_model_parse(&m, small_model, "gpt2.json", &mo, &e) == 0) {
            struct plan_layout l = {.tp = 1, .pp = 1, .world = 2};
            struct plan p;
            if (plan_build(&p, &m, &l, &z, NULL, &e) == 0)
                plan_free(&p);
            plan_model_free(&m);
        }
    }
    free(text);
}

static void hf_config(const uint8_t *data, size_t size)
{
    char *text = as_text(data, size);
    if (!text)
        return;
    struct plan_model m;
    struct plan_model_opts mo = {1, 1, 0, 0};
    struct rl_err e = {0};
    if (plan_model_parse(&m, text, "config.json", &mo, &e) == 0) {
        struct plan_zero z;
        plan_zero_defaults(&z);
        z.stage = 3;
        z.offload = PLAN_OFFLOAD_CPU;
        z.ratio = 0.3;
        z.src_ratio = PLAN_SRC_CLI;
        struct plan_layout l = {.tp = 1, .pp = 1, .world = 8};
        struct plan p;
        if (plan_build(&p, &m, &l, &z, NULL, &e) == 0)
            plan_free(&p);
        plan_model_free(&m);
    }
    free(text);
}

static void hw_profile(const uint8_t *data, size_t size)
{
    char *text = as_text(data, size);
    if (!text)
        return;
    struct sim_hw hw;
    struct rl_err e = {0};
    (void)sim_hw_parse(&hw, text, "profile.json", &e);
    free(text);
}

static void megatron_args(const uint8_t *data, size_t size)
{
    char *text = as_text(data, size);
    if (!text)
        return;
    struct plan_megatron_launch l;
    struct rl_err e = {0};
    (void)plan_megatron_args_parse(text, &l, &e);   /* builds the stage-0 model itself */
    free(text);
}

static void trace(const uint8_t *data, size_t size)
{
    struct trace_doc doc;
    struct rl_err e = {0};
    if (trace_parse((const char *)data, size, "trace.json", &doc, &e) == 0)
        trace_doc_free(&doc);
}

static void dslog(const uint8_t *data, size_t size)
{
    struct trace_ds_log log;
    struct rl_err e = {0};
    if (trace_ds_parse((const char *)data, size, "ds.log", &log, &e) == 0)
        trace_ds_free(&log);
}

/* A ratiolab-probe document, then judged against a plan of the small model with its settings. */
static void probe(const uint8_t *data, size_t size)
{
    struct val_probe pr;
    struct rl_err e = {0};
    if (val_probe_parse((const char *)data, size, "probe.json", &pr, &e) != 0)
        return;
    struct plan_model m;
    struct plan_model_opts mo = {1, 1, 0, 0};
    if (plan_model_parse(&m, small_model, "gpt2.json", &mo, &e) == 0) {
        struct plan_zero z;
        plan_zero_defaults(&z);
        if (pr.config.have_ratio)
            z.ratio = pr.config.ratio;
        if (pr.config.sub_group_size > 0)
            z.sub_group_size = pr.config.sub_group_size;
        z.ds_version = pr.config.version;
        if (strcmp(pr.config.offload_device, "cpu") == 0)
            z.offload = PLAN_OFFLOAD_CPU;
        struct plan_layout l = {.tp = 1, .pp = 1, .dp = pr.dp};
        struct plan p;
        if (plan_build(&p, &m, &l, &z, NULL, &e) == 0) {
            struct val_probe_opts o = {.tol_bytes = 1 << 20, .tol_time_pct = 10, .predicted_step_ns = 1000};
            struct val_probe_result r;
            val_probe_compare(&p, &pr, &o, &r);
            plan_free(&p);
        }
        plan_model_free(&m);
    }
    val_probe_free(&pr);
}

/* The configuration lines of a DeepSpeed log. */
static void dsconfig(const uint8_t *data, size_t size)
{
    struct trace_ds_config c;
    struct rl_err e = {0};
    (void)trace_ds_config_parse((const char *)data, size, "ds.log", &c, &e);
}

const struct rl_fuzz_target rl_fuzz_targets[] = {
    {"ds_config", "DeepSpeed config (plan_zero_parse, then plan_build)", ds_config},
    {"hf_config", "HF config / model preset (plan_model_parse, then plan_build)", hf_config},
    {"hw_profile", "hardware profile (sim_hw_parse)", hw_profile},
    {"megatron_args", "Megatron launch line (plan_megatron_args_parse, then the model)", megatron_args},
    {"trace", "Chrome trace reader (trace_parse)", trace},
    {"dslog", "DeepSpeed see_memory_usage log (trace_ds_parse)", dslog},
    {"probe", "ratiolab-probe JSON (val_probe_parse, then val_probe_compare)", probe},
    {"dsconfig", "DeepSpeed log configuration lines (trace_ds_config_parse)", dsconfig},
};
const int rl_fuzz_n_targets = (int)(sizeof rl_fuzz_targets / sizeof rl_fuzz_targets[0]);

const struct rl_fuzz_target *rl_fuzz_find(const char *name)
{
    for (int i = 0; i < rl_fuzz_n_targets; i++)
        if (strcmp(rl_fuzz_targets[i].name, name) == 0)
            return &rl_fuzz_targets[i];
    return NULL;
}
