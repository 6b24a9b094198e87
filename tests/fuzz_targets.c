/* tests/fuzz_targets.c — see fuzz_targets.h. Each target does what the command line does with a
 * file of that kind after reading it (rl_read_file's NUL check, then the parser, then the first
 * consumer where one is cheap), so a finding is a finding a user can hit. */
#include "tests/fuzz_targets.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "cli/flag_values.h"
#include "common/rl.h"
#include "exec/ckpt.h"
#include "plan/groups.h"
#include "plan/megatron_args.h"
#include "plan/plan.h"
#include "plan/step.h"
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
    struct hw_profile hw;
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

/* A param-group file (plan/groups.h), then applied to the small model and planned, as plan
 * --param-groups FILE does. */
static void groups(const uint8_t *data, size_t size)
{
    char *t = as_text(data, size);
    if (!t)
        return;
    struct plan_group_spec gs;
    struct rl_err e = {0};
    if (plan_group_spec_parse(t, size, "groups.txt", &gs, &e) == 0) {
        struct plan_model m;
        struct plan_model_opts mo = {1, 1, 0, 0};
        if (plan_model_parse(&m, small_model, "gpt2.json", &mo, &e) == 0) {
            if (plan_model_group_spec(&m, &gs, &e) == 0) {
                struct plan_zero z;
                plan_zero_defaults(&z);
                z.offload = PLAN_OFFLOAD_CPU;
                z.sub_group_size = 4096;
                struct plan_layout l = {.tp = 1, .pp = 1, .dp = 1};
                struct plan p;
                if (plan_build(&p, &m, &l, &z, NULL, &e) == 0)
                    plan_free(&p);
            }
            plan_model_free(&m);
        }
        plan_group_spec_free(&gs);
    }
    free(t);
}

/* The configuration lines of a DeepSpeed log. */
static void dsconfig(const uint8_t *data, size_t size)
{
    struct trace_ds_config c;
    struct rl_err e = {0};
    (void)trace_ds_config_parse((const char *)data, size, "ds.log", &c, &e);
}

/* A scratch folder per process (made once, removed at exit), for the targets that need files. */
static char fuzz_dir[64];

static void remove_tree(const char *path);

static void remove_fuzz_dir(void)
{
    if (fuzz_dir[0])
        remove_tree(fuzz_dir);
}

static const char *scratch(void)
{
    if (!fuzz_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/rlfuzz.XXXXXX", t && t[0] && strlen(t) < 40 ? t : "/tmp");
        if (!mkdtemp(fuzz_dir)) {
            fuzz_dir[0] = 0;
            return NULL;
        }
        atexit(remove_fuzz_dir);
    }
    return fuzz_dir;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);   /* FTW_PHYS: a link is removed itself */
}

/* Removes the tree at path without following any link in it. */
static void remove_tree(const char *path)
{
    (void)nftw(path, rm_entry, 16, FTW_PHYS | FTW_DEPTH);
}

/* The readers below take a path, as the command line gives them one: the input is written to a
 * file in the scratch folder, named with suffix (".gz" when the input starts with the gzip magic,
 * so the inflating path is taken). NULL when it cannot be. */
static const char *as_file(const uint8_t *data, size_t size, const char *name)
{
    static char path[160];
    const char *root = scratch();
    if (!root)
        return NULL;
    bool gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    snprintf(path, sizeof path, "%s/%s%s", root, name, gz ? ".gz" : "");
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

/* A refusal is one non-empty line (the rule every message follows); anything else is a finding. */
static void check_refusal(int rc, const struct rl_err *e)
{
    if (rc && (!e->msg[0] || strchr(e->msg, '\n')))
        abort();
}

/* The flag-value parsers, as a user types a value: the first byte picks the parser, the rest is
 * the value (no NUL: argv cannot hold one). Each accepted value is checked against what the parser
 * promises (its bounds), each refusal for being one line. */
static void flags(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return;
    char *v = as_text(data + 1, size - 1);
    if (!v)
        return;
    struct rl_err e = {0};
    int rc = 0;
    int64_t x = 0;
    int k = 0;
    double d = 0;
    switch (data[0] % 10) {
    case 0:
        if (!(rc = rl_parse_bytes("--gpu-mem", v, &x, &e)) && x < 0)
            abort();
        break;
    case 1:
        if (!(rc = rl_parse_bytes_min("--device-mem", v, 1, &x, &e)) && x < 1)
            abort();
        break;
    case 2: {
        double *r = NULL;
        size_t n = 0;
        if (!(rc = rl_parse_ratio_list("--ratios", v, 0, 1, &r, &n, &e))) {
            if (n < 1)
                abort();
            for (size_t i = 0; i < n; i++)
                if (!(r[i] >= 0 && r[i] <= 1))
                    abort();
            free(r);
        }
        break;
    }
    case 3:
        if (!(rc = rl_parse_double("--tol", v, -1e6, 1e6, &d, &e)) && !(d >= -1e6 && d <= 1e6))
            abort();
        break;
    case 4:
        if (!(rc = rl_parse_i64("--steps", v, 1, 1000000, &x, &e)) && (x < 1 || x > 1000000))
            abort();
        if (!(rc = rl_parse_int("--dp", v, -5, 1 << 20, &k, &e)) && (k < -5 || k > 1 << 20))
            abort();
        break;
    case 5: {
        struct rl_version ver;
        if (!(rc = rl_parse_version("--deepspeed-version", v, &ver, &e)) &&
            (ver.major < 0 || ver.minor < 0 || ver.patch < 0))
            abort();
        break;
    }
    case 6:
        if (!(rc = cli_parse_interval(v, &x, &e)) && (x < 1000000 || x > INT64_C(3600000000000)))
            abort();
        break;
    case 7: {
        /* --gemm, then --gemm-last over the same list (each replaces only its own entries). */
        struct calib_run r;
        memset(&r, 0, sizeof r);
        for (int last = 0; last < 2; last++) {
            rc = cli_parse_gemms(last ? "--gemm-last" : "--gemm", v, last, &r, &e);
            check_refusal(rc, &e);
            if (r.n_gemm < 0 || r.n_gemm > CALIB_MAX_GEMMS)
                abort();
            for (int i = 0; i < r.n_gemm; i++)
                if (r.gemm[i].m < 1 || r.gemm[i].n < 1 || r.gemm[i].k < 1 || r.gemm[i].count < 1 ||
                    r.gemm[i].m > INT32_MAX || r.gemm[i].n > INT32_MAX || r.gemm[i].k > INT32_MAX)
                    abort();
        }
        break;
    }
    case 8: {
        enum plan_policy pol[16];
        if (!(rc = cli_parse_names(v, "--policies", 16, &k, pol, true, &e)) && (k < 0 || k > 16))
            abort();
        break;
    }
    case 9: {
        enum step_schedule sch[16];
        if (!(rc = cli_parse_names(v, "--schedules", 16, &k, sch, false, &e)) && (k < 0 || k > 16))
            abort();
        break;
    }
    }
    check_refusal(rc, &e);
    free(v);
}

/* Writes text to path, never through a link (the last name: O_NOFOLLOW). */
static void put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, text, strlen(text));
        (void)w;
        close(fd);
    }
}

/* True when path is a folder itself (not a link to one). */
static bool real_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool holds(const char *path, const char *text)
{
    char buf[64] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strcmp(buf, text) == 0;
}

/* The checkpoint folder (exec/ckpt_dir.c): the input builds a folder D beside a folder OUT that
 * must never be touched (pairs of bytes: make a generation, a rank file in one, a link of a
 * generation or of a rank file into OUT, a manifest naming a generation or garbage, a stale
 * CHECKPOINT.tmp, a flat rank file or a link of one, a plain file named like a generation), then
 * one save runs its steps (prepare, the rank file, the switch, the prune) and a load locates and
 * reads it. A save that goes through must be found by the load with its bytes and leave no
 * generation folder or link but its own; a refused one is one line; OUT is intact either way. */
static void ckpt_dir(const uint8_t *data, size_t size)
{
    const char *root = scratch();
    if (!root || size > 64)
        return;
    char D[128], out[128], p[256], q[256];
    snprintf(D, sizeof D, "%s/D", root);
    snprintf(out, sizeof out, "%s/OUT", root);
    remove_tree(D);
    mkdir(out, 0755);
    snprintf(p, sizeof p, "%s/gen-00000001", out);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/rank-00000.rlck", out);
    put(p, "keep");
    snprintf(p, sizeof p, "%s/gen-00000001/rank-00000.rlck", out);
    put(p, "keep");
    mkdir(D, 0755);
    for (size_t i = 0; i + 1 < size; i += 2) {
        int op = data[i] % 8, g = data[i + 1] % 8;
        switch (op) {
        case 0:
            snprintf(p, sizeof p, "%s/gen-%08d", D, g);
            mkdir(p, 0755);
            break;
        case 1:   /* the input's own files go into real generation folders only, never through a link */
            snprintf(q, sizeof q, "%s/gen-%08d", D, g);
            snprintf(p, sizeof p, "%s/rank-%05d.rlck%s", q, data[i + 1] / 8 % 2, data[i + 1] & 0x40 ? ".tmp" : "");
            if (real_dir(q))
                put(p, "x");
            break;
        case 2:
            snprintf(p, sizeof p, "%s/gen-%08d", D, g);
            snprintf(q, sizeof q, data[i + 1] & 0x80 ? "%s/gen-00000001" : "%s", out);
            (void)symlink(q, p);
            break;
        case 3:
            snprintf(q, sizeof q, "%s/gen-%08d", D, g);
            snprintf(p, sizeof p, "%s/rank-00000.rlck", q);
            if (real_dir(q)) {
                snprintf(q, sizeof q, "%s/rank-00000.rlck", out);
                (void)symlink(q, p);
            }
            break;
        case 4:
            snprintf(p, sizeof p, "%s/" EX_CKPT_MANIFEST, D);
            if (data[i + 1] & 0x80) {
                put(p, "ratiolab checkpoint manifest 1\ngeneration x\n");
            } else {
                char text[160];
                struct ex_ckpt_manifest m = {g, 1, 3};
                ex_ckpt_manifest_format(&m, text, sizeof text);
                put(p, text);
            }
            break;
        case 5:
            snprintf(p, sizeof p, "%s/" EX_CKPT_MANIFEST ".tmp", D);
            put(p, "stale");
            break;
        case 6:
            snprintf(p, sizeof p, "%s/rank-%05d.rlck", D, g % 2);
            snprintf(q, sizeof q, "%s/rank-00000.rlck", out);
            if (data[i + 1] & 0x80)
                (void)symlink(q, p);
            else
                put(p, "flat");
            break;
        case 7:
            snprintf(p, sizeof p, "%s/gen-%08d", D, g);
            put(p, "a file");
            break;
        }
    }
    struct ex_ckpt_dir d = {-1, -1, -1};
    struct rl_err e = {0};
    int64_t gen = 0;
    int rc = ex_ckpt_dir_prepare(D, &d, &gen, &e);
    check_refusal(rc, &e);
    static const char body[] = "rank file bytes";
    if (!rc) {
        /* Alone in the folder, holding its lock: every step of the save must go through. */
        if (gen < 1 || gen > 9 || ex_ckpt_dir_open_gen(D, &d, gen) != 0 ||
            ex_ckpt_write_at(d.gfd, "rank-00000.rlck.tmp", "rank-00000.rlck", body, 5, body + 5, sizeof body - 5,
                             false) != 0)
            abort();
        struct ex_ckpt_manifest m = {gen, 1, 3};
        if (ex_ckpt_dir_switch(&d, &m) != 0)
            abort();
        ex_ckpt_dir_prune(D, &d, gen);
    }
    ex_ckpt_dir_close(&d);
    char gdir[256];
    struct ex_ckpt_manifest m;
    bool have = false;
    int gfd = -1;
    int lrc = ex_ckpt_locate(D, gdir, sizeof gdir, &gfd, &m, &have, &e);
    check_refusal(lrc, &e);
    if (!rc && (lrc || !have || m.generation != gen))
        abort();
    if (!lrc) {
        char *buf = NULL;
        size_t len = 0;
        int rrc = ex_ckpt_read_at(gfd, "rank-00000.rlck", 1 << 20, &buf, &len, &e);
        check_refusal(rrc, &e);
        if (!rc && (rrc || len != sizeof body || memcmp(buf, body, len) != 0))
            abort();
        free(buf);
        close(gfd);
    }
    if (!rc) {
        /* Only the new generation is left of the folders and links named like one. */
        for (int g = 0; g <= 9; g++) {
            struct stat st;
            snprintf(p, sizeof p, "%s/gen-%08d", D, g);
            if (g != gen && lstat(p, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)))
                abort();
        }
    }
    snprintf(p, sizeof p, "%s/rank-00000.rlck", out);
    snprintf(q, sizeof q, "%s/gen-00000001/rank-00000.rlck", out);
    if (!holds(p, "keep") || !holds(q, "keep"))
        abort();   /* something outside the folder was removed or written */
}

/* Readers given a path whose name is the input (format characters, quotes, newlines, any byte but
 * NUL and '/'): the file holds text each reader refuses, so each builds a message naming the
 * path; a name used as a format crashes or writes memory here. Every refusal is one line. */
static void paths(const uint8_t *data, size_t size)
{
    const char *root = scratch();
    if (!root || size < 1 || size > 200)
        return;
    char name[256];
    for (size_t i = 0; i < size; i++)
        name[i] = data[i] == 0 || data[i] == '/' ? '_' : (char)data[i];
    name[size] = 0;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, name);
    /* A probe whose release is not X.Y.Z: the message that named the path through a format. */
    put(path, "{\"schema_version\": 1, \"kind\": \"ratiolab-probe\", \"rank\": 0, \"world_size\": 1, "
              "\"dp_world_size\": 1, \"deepspeed_version\": \"0.19.x\", \"torch_version\": \"2\", "
              "\"accelerator\": {\"name\": \"cuda\"}}");
    struct rl_err e = {0};
    struct val_probe pr;
    int rc = val_probe_read(path, &pr, &e);
    if (rc == 0)
        val_probe_free(&pr);
    check_refusal(rc, &e);
    char *text = NULL;
    size_t len = 0;
    if (rl_read_file(path, &text, &len, &e) == 0) {
        struct ex_ckpt_manifest m;
        check_refusal(ex_ckpt_manifest_parse(text, len, path, &m, &e), &e);
        struct ex_ckpt_file f;
        check_refusal(ex_ckpt_parse(text, len, path, NULL, &f, &e), &e);
        struct trace_ds_log log;
        if ((rc = trace_ds_parse(text, len, path, &log, &e)) == 0)
            trace_ds_free(&log);
        check_refusal(rc, &e);
        free(text);
    }
    struct trace_doc doc;
    if ((rc = trace_read(path, &doc, &e)) == 0)
        trace_doc_free(&doc);
    check_refusal(rc, &e);
    struct plot__sweep sw;
    if ((rc = plot__sweep_read(path, &sw, &e)) == 0)
        plot__sweep_free(&sw);
    check_refusal(rc, &e);
    unlink(path);
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
    {"groups", "param-group file (plan_group_spec_parse, then plan_model_group_spec and plan_build)", groups},
    {"dsconfig", "DeepSpeed log configuration lines (trace_ds_config_parse)", dsconfig},
    {"ckpt", "checkpoint rank file and manifest (ex_ckpt_parse, ex_ckpt_check_cover, ex_ckpt_manifest_parse)", ckpt},
    {"monitor_csv", "monitor CSV (val_monitor_read for validate --monitor, plot__monitor_read)", monitor_csv},
    {"plot_inputs", "plot inputs: sweep JSON/CSV, report.json, plain or gzip (plot__sweep_read, plot__report_read)",
     plot_inputs},
    {"trace_diff", "trace diff inputs from files, plain or gzip (trace_read, val_trace_times)", trace_diff},
    {"flags", "flag values: sizes, ratio lists, numbers, versions, --interval, --gemm, --policies, --schedules "
     "(rl_parse_*, cli/flag_values.c)", flags},
    {"ckpt_dir", "checkpoint folder: save, prune and locate over a scratch folder with links, missing and extra "
     "generations (exec/ckpt_dir.c)", ckpt_dir},
    {"paths", "readers given a path named by the input: format characters, quotes, newlines (val_probe_read, "
     "trace_read, plot__sweep_read, the checkpoint and log parsers' messages)", paths},
};
const int rl_fuzz_n_targets = (int)(sizeof rl_fuzz_targets / sizeof rl_fuzz_targets[0]);

const struct rl_fuzz_target *rl_fuzz_find(const char *name)
{
    for (int i = 0; i < rl_fuzz_n_targets; i++)
        if (strcmp(rl_fuzz_targets[i].name, name) == 0)
            return &rl_fuzz_targets[i];
    return NULL;
}
