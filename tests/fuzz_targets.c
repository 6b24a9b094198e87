/* tests/fuzz_targets.c — see fuzz_targets.h. Each target does what the command line does with a
 * file of that kind after reading it (rl_read_file's NUL check, then the parser, then the first
 * consumer where one is cheap), so a finding is a finding a user can hit. */
#include "tests/fuzz_targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "common/rl.h"
#include "exec/ckpt.h"
#include "plan/megatron_args.h"
#include "plan/plan.h"
#include "sim/hw.h"
#include "traces/dslog.h"
#include "traces/trace.h"
#include "plots/input.h"
#include "traces/dsconfig.h"
#include "validation/audit.h"
#include "validation/probe.h"
#include "validation/val.h"

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
/* An audit file (validation/audit.h): parsed, then every record replayed (bounded: the fuzzer's
 * inputs are small, so are their records). */
static void audit_one(const uint8_t *data, size_t size)
{
    struct val_audit a;
    struct rl_err e = {0};
    if (val_audit_parse(data, size, &a, &e) != 0)
        return;
    struct val_audit_finding *f = calloc(a.n ? (size_t)a.n : 1, sizeof *f);
    if (f)
        val_audit_replay(&a, f, &e);
    free(f);
    val_audit_free(&a);
}

/* The input as it is, then with its body_bytes and crc32 made right, so that mutations reach the
 * records' checks and the replay instead of stopping at the checksum. */
static void audit(const uint8_t *data, size_t size)
{
    audit_one(data, size);
    if (size < 32)
        return;
    uint8_t *c = malloc(size);
    if (!c)
        return;
    memcpy(c, data, size);
    uint64_t body = size - 32;
    uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), c + 32, (uInt)body);
    for (int i = 0; i < 4; i++)
        c[20 + i] = (uint8_t)(crc >> (8 * i));
    for (int i = 0; i < 8; i++)
        c[24 + i] = (uint8_t)(body >> (8 * i));
    audit_one(c, size);
    free(c);
}

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

/* The readers below take a path, as the command line gives them one: the input is written to a
 * file in a folder made once per process (removed at exit), named with suffix (".gz" when the
 * input starts with the gzip magic, so the inflating path is taken). NULL when it cannot be. */
static char fuzz_dir[64];

static void remove_fuzz_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir);
    if (fuzz_dir[0] && system(cmd) != 0)
        fuzz_dir[0] = 0;
}

static const char *as_file(const uint8_t *data, size_t size, const char *name)
{
    static char path[160];
    if (!fuzz_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/rlfuzz.XXXXXX", t && t[0] && strlen(t) < 40 ? t : "/tmp");
        if (!mkdtemp(fuzz_dir)) {
            fuzz_dir[0] = 0;
            return NULL;
        }
        atexit(remove_fuzz_dir);
    }
    bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    snprintf(path, sizeof path, "%s/%s%s", fuzz_dir, name, gz ? ".gz" : "");
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    bool ok = fwrite(data, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    return ok ? path : NULL;
}

/* A checkpoint rank file or manifest (exec/ckpt.h), as --load reads them: the bytes as given, and
 * again with both CRCs made right so the fuzzer reaches the field checks behind them; a file
 * that passes is checked against a small model and its records for cover. */
static void ckpt_one(const uint8_t *data, size_t size)
{
    static const int64_t starts[] = {0, 10, 40, 64};   /* the seeds' model: 64 elements, 3 tensors */
    const struct ex_ckpt_model model = {64, 3, starts};
    struct ex_ckpt_file f;
    struct rl_err e = {0};
    if (ex_ckpt_parse(data, size, "rank-00000.rlck", NULL, &f, &e) == 0 &&
        ex_ckpt_parse(data, size, "rank-00000.rlck", &model, &f, &e) == 0 && f.n_rec < 100000) {
        struct ex_ckpt_rec *r = malloc(((size_t)f.n_rec + 1) * sizeof *r);
        if (r) {
            for (int64_t i = 0; i < f.n_rec; i++) {
                ex_ckpt_record(&f, i, &r[i].gstart, &r[i].numel);
                r[i].file_rank = 0;
                r[i].index = (int32_t)i;
            }
            (void)ex_ckpt_check_cover(r, f.n_rec, model.total_numel, "ck", &e);
            free(r);
        }
    }
}

static void ckpt(const uint8_t *data, size_t size)
{
    static const char mk[] = "ratiolab checkpoint manifest";
    if (size >= sizeof mk - 1 && memcmp(data, mk, sizeof mk - 1) == 0) {
        char *text = as_text(data, size);
        struct ex_ckpt_manifest m;
        struct rl_err e = {0};
        if (text)
            (void)ex_ckpt_manifest_parse(text, size, "CHECKPOINT", &m, &e);
        free(text);
        return;
    }
    ckpt_one(data, size);
    if (size < EX_CKPT_HEADER_BYTES || size > (64u << 20))
        return;
    uint8_t *b = malloc(size);
    if (!b)
        return;
    memcpy(b, data, size);
    uint32_t pc = ex_ckpt_crc(b + EX_CKPT_HEADER_BYTES, size - EX_CKPT_HEADER_BYTES);
    for (int i = 0; i < 4; i++)
        b[72 + i] = (uint8_t)(pc >> (8 * i));
    uint32_t hc = ex_ckpt_crc(b, 76);
    for (int i = 0; i < 4; i++)
        b[76 + i] = (uint8_t)(hc >> (8 * i));
    ckpt_one(b, size);
    free(b);
}

/* validate --monitor and plot's monitor input: the same CSV through both readers. */
static void monitor_csv(const uint8_t *data, size_t size)
{
    const char *path = as_file(data, size, "m.csv");
    if (!path)
        return;
    struct rl_err e = {0};
    struct val_monitor m;
    if (val_monitor_read(path, &m, &e) == 0) {
        (void)val_monitor_rank(&m, 0);
        val_monitor_free(&m);
    }
    struct plot__monitor pm;
    if (plot__monitor_read(path, &pm, &e) == 0)
        plot__monitor_free(&pm);
}

/* plot's file inputs: a sweep (JSON or CSV) and a validate report.json (plain or gzip). */
static void plot_inputs(const uint8_t *data, size_t size)
{
    const char *path = as_file(data, size, "in.json");
    if (!path)
        return;
    struct rl_err e = {0};
    struct plot__sweep s;
    if (plot__sweep_read(path, &s, &e) == 0)
        plot__sweep_free(&s);
    struct plot__report r;
    if (plot__report_read(path, &r, &e) == 0)
        plot__report_free(&r);
}

/* trace diff: each trace read from a file (plain or gzip) and split into per-rank phase times. */
static void trace_diff(const uint8_t *data, size_t size)
{
    const char *path = as_file(data, size, "t.json");
    if (!path)
        return;
    struct trace_doc d;
    struct rl_err e = {0};
    if (trace_read(path, &d, &e) == 0) {
        struct val_trace_times t;
        if (val_trace_times(&d, &t, &e) == 0) {
            (void)val_trace_rank(&t, 0);
            val_trace_times_free(&t);
        }
        trace_doc_free(&d);
    }
}

const struct rl_fuzz_target rl_fuzz_targets[] = {
    {"ds_config", "DeepSpeed config (plan_zero_parse, then plan_build)", ds_config},
    {"hf_config", "HF config / model preset (plan_model_parse, then plan_build)", hf_config},
    {"hw_profile", "hardware profile (sim_hw_parse)", hw_profile},
    {"megatron_args", "Megatron launch line (plan_megatron_args_parse, then the model)", megatron_args},
    {"trace", "Chrome trace reader (trace_parse)", trace},
    {"dslog", "DeepSpeed see_memory_usage log (trace_ds_parse)", dslog},
    {"probe", "ratiolab-probe JSON (val_probe_parse, then val_probe_compare)", probe},
    {"audit", "ratiolab-probe audit file (val_audit_parse, then val_audit_replay)", audit},
    {"dsconfig", "DeepSpeed log configuration lines (trace_ds_config_parse)", dsconfig},
    {"ckpt", "checkpoint rank file and manifest (ex_ckpt_parse, ex_ckpt_check_cover, ex_ckpt_manifest_parse)", ckpt},
    {"monitor_csv", "monitor CSV (val_monitor_read for validate --monitor, plot__monitor_read)", monitor_csv},
    {"plot_inputs", "plot inputs: sweep JSON/CSV, report.json, plain or gzip (plot__sweep_read, plot__report_read)",
     plot_inputs},
    {"trace_diff", "trace diff inputs from files, plain or gzip (trace_read, val_trace_times)", trace_diff},
};
const int rl_fuzz_n_targets = (int)(sizeof rl_fuzz_targets / sizeof rl_fuzz_targets[0]);

const struct rl_fuzz_target *rl_fuzz_find(const char *name)
{
    for (int i = 0; i < rl_fuzz_n_targets; i++)
        if (strcmp(rl_fuzz_targets[i].name, name) == 0)
            return &rl_fuzz_targets[i];
    return NULL;
}
