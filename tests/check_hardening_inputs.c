/* tests/check_hardening_inputs.c — issue 35's remaining input defects, each at the reader that had
 * it: DeepSpeed logs that disagree or hold several runs (each run judged against its own
 * configuration and named by its log and first line), a monitor CSV whose RSS sums overflowed and
 * whose reader was quadratic in pids, a zero_config line wrapped over lines, a version part past
 * int, "MA nan GB", a .gz with bytes after its stream, plot ratios outside [0, 1], a folder without
 * CHECKPOINT, a trace span of negative duration, and validate's stale traces in --out.
 *
 * The logs are the shipped example of a real run (tests/deepspeed/example/deepspeed-0.14.1.log:
 * ratio 0.5, sub_group_size 16896, 6 sub-groups, validate passes it), edited in one value. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "campaign/campaign.h"
#include "common/rl.h"
#include "plots/input.h"
#include "tests/util.h"
#include "traces/dsconfig.h"
#include "traces/dslog.h"
#include "traces/trace.h"
#include "validation/val.h"


/* The example log, whole (malloc'd). */
static char *example_log(size_t *len)
{
    char *t = tu_read(tu_src_path("tests/deepspeed/example/deepspeed-0.14.1.log"), len);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* text with the first `from` replaced by `to` (malloc'd); the text must hold it. */
static char *replace1(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    ck_assert_msg(at, "'%s' not in the example", from);
    size_t n = strlen(text) - strlen(from) + strlen(to);
    char *o = malloc(n + 1);
    snprintf(o, n + 1, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return o;
}

static int count_lines(const char *t)
{
    int n = 0;
    for (; *t; t++)
        n += *t == '\n';
    return n;
}

static void validate_logs(struct tu_run *r, const char *logs, const char *more)
{
    tu_ratiolab(r, "validate --deepspeed-log %s --model '%s' --param-groups hf %s", logs,
                tu_src_path("tests/deepspeed/models/gpt2-tiny.json"), more);
}

/* ---- item 6: each run against its own configuration ------------------------------------------- */

/* A: the example (6 sub-groups of 16896, as the plan makes them). B: the same log claiming
 * sub_group_size 100000, under which the plan makes 3, so its "After creating fp16 partitions: 6"
 * fails. Each alone gives the verdict the pair must give per run. */
static void write_a_b(const char **a, const char **b, int *a_lines)
{
    static char pa[600], pb[600];   /* tu_write's own buffers are reused */
    size_t len;
    char *t = example_log(&len);
    snprintf(pa, sizeof pa, "%s", tu_write("a.log", t));
    *a = pa;
    char *t2 = replace1(t, "sub_group_size=16896", "sub_group_size=100000");
    snprintf(pb, sizeof pb, "%s", tu_write("b.log", t2));
    *b = pb;
    *a_lines = count_lines(t);
    free(t);
    free(t2);
}

START_TEST(logs_of_two_configs_judged_each)
{
    const char *a, *b;
    int na;
    write_a_b(&a, &b, &na);
    struct tu_run r;
    validate_logs(&r, a, "");   /* each alone: the verdicts the pair must repeat */
    ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
    tu_run_free(&r);
    validate_logs(&r, b, "");
    ck_assert_msg(r.status == 1 && strstr(r.out, "6 vs 3  FAIL"), "%s%s", r.out, r.err);
    tu_run_free(&r);

    char both[2200];
    snprintf(both, sizeof both, "'%s' '%s'", a, b);
    validate_logs(&r, both, "");
    char want_a[1200], want_b[1200];
    snprintf(want_a, sizeof want_a, "verdict    PASS (run %s:1)", a);
    snprintf(want_b, sizeof want_b, "verdict    FAIL (run %s:1)", b);
    ck_assert_msg(r.status == 1 && strstr(r.out, want_a) && strstr(r.out, want_b) &&
                  strstr(r.out, "verdict    FAIL (2 of 2 runs judged, each against its own configuration)"),
                  "exit %d\n%s%s", r.status, r.out, r.err);
    tu_run_free(&r);

    /* --json: one object per run, each naming its log and line. */
    validate_logs(&r, both, "--json");
    ck_assert_int_eq(r.status, 1);
    json_t *j = json_loads(r.out, 0, NULL);
    ck_assert_msg(j, "%s", r.out);
    tu_run_free(&r);
    json_t *runs = json_object_get(j, "runs");
    ck_assert_int_eq(json_array_size(runs), 2);
    static const char *const verdict[2] = {"PASS", "FAIL"};
    for (size_t i = 0; i < 2; i++) {
        json_t *x = json_array_get(runs, i);
        ck_assert_str_eq(json_string_value(json_object_get(x, "verdict")), verdict[i]);
        json_t *where = json_array_get(json_object_get(x, "runs"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(where, "log")), i ? b : a);
        ck_assert_int_eq(json_integer_value(json_object_get(where, "line")), 1);
    }
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "FAIL");
    json_decref(j);
}
END_TEST

START_TEST(log_of_two_appended_runs_split)
{
    const char *a, *b;
    int na;
    write_a_b(&a, &b, &na);
    size_t la, lb;
    char *ta = tu_read(a, &la), *tb = tu_read(b, &lb);
    char *cat = malloc(la + lb + 1);
    memcpy(cat, ta, la);
    memcpy(cat + la, tb, lb + 1);
    const char *c = tu_write("appended.log", cat);
    free(ta);
    free(tb);
    free(cat);
    struct tu_run r;
    char q[1100];
    snprintf(q, sizeof q, "'%s'", c);
    validate_logs(&r, q, "");
    /* The second run starts at B's first line (its accelerator line, before its version line). */
    char want_a[1200], want_b[1200];
    snprintf(want_a, sizeof want_a, "verdict    PASS (run %s:1)", c);
    snprintf(want_b, sizeof want_b, "verdict    FAIL (run %s:%d)", c, na + 1);
    ck_assert_msg(r.status == 1 && strstr(r.out, want_a) && strstr(r.out, want_b), "exit %d\n%s%s", r.status, r.out,
                  r.err);
    tu_run_free(&r);
}
END_TEST

START_TEST(ratio_checked_against_the_run_it_applies_to)
{
    size_t len;
    char *t = example_log(&len);
    char *t3 = replace1(t, "ratio=0.5)", "ratio=0.3)");
    char *cat = malloc(2 * len + 64);
    snprintf(cat, 2 * len + 64, "%s%s", t, t3);
    const char *c = tu_write("ratios.log", cat);
    int second = count_lines(t) + 1;
    struct tu_run r;
    char q[1100];
    snprintf(q, sizeof q, "'%s'", c);
    validate_logs(&r, q, "--ratio 0.3");   /* before: refused as "the run used 0.5" */
    char skip[1200], judged[1200];
    snprintf(skip, sizeof skip, "run        %s:1: not judged: ", c);
    snprintf(judged, sizeof judged, "verdict    PASS (run %s:%d)", c, second);
    ck_assert_msg(r.status == 0 && strstr(r.out, skip) && strstr(r.out, "the run used 0.5, the command line says 0.3") &&
                  strstr(r.out, judged), "exit %d\n%s%s", r.status, r.out, r.err);
    tu_run_free(&r);
    validate_logs(&r, q, "--ratio 0.7");   /* no run used it: the first contradiction, exit 2 */
    ck_assert_msg(r.status == 2 && strstr(r.err, "the run used 0.5, the command line says 0.7"), "exit %d\n%s",
                  r.status, r.err);
    tu_run_free(&r);
    /* A log of iterations only beside runs of two configurations belongs to neither. */
    const char *meg = tu_write("megatron.log", " iteration        1/      10 | elapsed time per iteration (ms): 900.0 |\n"
                                               " iteration        2/      10 | elapsed time per iteration (ms): 800.0 |\n");
    char q3[2200];
    snprintf(q3, sizeof q3, "'%s' '%s'", c, meg);
    validate_logs(&r, q3, "");
    ck_assert_msg(r.status == 2 && strstr(r.err, "holds iteration times but no DeepSpeed configuration"), "exit %d\n%s",
                  r.status, r.err);
    tu_run_free(&r);
    free(t);
    free(t3);
    free(cat);
}
END_TEST

START_TEST(runs_split_where_engines_start)
{
    /* By hand: two engines, the second's import line before its version line. */
    const char *text = "[x] [INFO] [a] Setting ds_accelerator to cpu\n"          /* 1 */
                       "[x] [INFO] [b] DeepSpeed info: version=0.14.1\n"         /* 2 */
                       "[x] [INFO] [utils.py:1:see_memory_usage] After x\n"      /* 3 */
                       "[x] [INFO] [config.py:1:print]   zero_config .... stage=3\n" /* 4 */
                       "[x] [INFO] [a] Setting ds_accelerator to cpu\n"          /* 5 */
                       "[x] [INFO] [b] DeepSpeed info: version=0.14.1\n"         /* 6 */
                       "[x] [INFO] [config.py:1:print]   zero_config .... stage=3\n"; /* 7 */
    struct trace_ds_run *runs;
    int n;
    struct rl_err e = {0};
    ck_assert_int_eq(trace_ds_split_runs(text, strlen(text), "t.log", &runs, &n, &e), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(runs[0].first_line, 1);
    ck_assert_int_eq(runs[1].first_line, 5);
    ck_assert_uint_eq(runs[0].offset, 0);
    ck_assert_uint_eq(runs[1].offset, (size_t)(strstr(strstr(text, "After x"), "[x] [INFO] [a]") - text));
    ck_assert_uint_eq(runs[0].len + runs[1].len, strlen(text));
    free(runs);
}
END_TEST

/* ---- item 9: monitor CSV ------------------------------------------------------------------------ */

static const char mon_header[] =
    "t_ns,time_utc,pid,ppid,comm,rank,rss_bytes,anon_bytes,file_bytes,shmem_bytes,hwm_bytes,locked_bytes,"
    "pinned_bytes,swap_bytes,gpu_bytes,cpu_percent,threads,system_used_bytes,status\n";

START_TEST(monitor_rss_bounded_and_summed_checked)
{
    /* Four processes of rank 0 with RSS 2^62 at one sample: the sum was 2^64 in int64. */
    char csv[4096];
    size_t n = (size_t)snprintf(csv, sizeof csv, "%s", mon_header);
    for (int p = 0; p < 4; p++)
        n += (size_t)snprintf(csv + n, sizeof csv - n, "0,t,%d,1,python,0,4611686018427387904,0,0,0,0,0,0,0,,1,1,0,ok\n",
                              100 + p);
    const char *f = tu_write("rss62.csv", csv);
    struct val_monitor m;
    struct rl_err e = {0};
    ck_assert_int_eq(val_monitor_read(f, &m, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "line 2: column 'rss_bytes': 4611686018427387904; allowed: -1..1125899906842624"), "%s",
                  e.msg);
    /* Within the bound each, 8192 processes of 2^50 at one sample sum to 2^63, past INT64_MAX at
     * the last one (line 8193: the header is line 1). */
    size_t cap = 8200 * 80 + 512;
    char *big = malloc(cap);
    n = (size_t)snprintf(big, cap, "%s", mon_header);
    for (int p = 0; p < 8192; p++)
        n += (size_t)snprintf(big + n, cap - n, "0,t,%d,1,py,0,1125899906842624,0,0,0,0,0,0,0,,1,1,0,ok\n", 100 + p);
    f = tu_write("rss-sum.csv", big);
    free(big);
    ck_assert_int_eq(val_monitor_read(f, &m, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "line 8193: rank 0: the rss_bytes of its processes at one sample sum past 2^63"), "%s",
                  e.msg);
}
END_TEST

START_TEST(monitor_many_pids_linear)
{
    /* 200 000 distinct pids in one sample, then the first 100 again: each reader took minutes (a
     * linear search per row, 2e10 comparisons here). The time limit of this case (30 s) is what
     * fails a quadratic reader; the counts are what the file holds. The sanitizer build, whose
     * allocator triples the cost, reads 70 000 (a quadratic reader still needs minutes there:
     * 40 000 took 18.7 s under ASan before the fix). */
#if defined(__SANITIZE_ADDRESS__)
    enum { PIDS = 70000, AGAIN = 100 };
#else
    enum { PIDS = 200000, AGAIN = 100 };
#endif
    size_t cap = (size_t)(PIDS + AGAIN) * 64 + 512;
    char *csv = malloc(cap);
    size_t n = (size_t)snprintf(csv, cap, "%s", mon_header);
    for (int p = 0; p < PIDS + AGAIN; p++) {
        int s = p >= PIDS, pid = 1000 + (s ? p - PIDS : p);
        n += (size_t)snprintf(csv + n, cap - n, "%d,t,%d,1,w,%d,%d,0,0,0,0,0,0,0,,1,1,0,ok\n", s, pid, (pid - 1000) % 7,
                              4096 * (1 + s));
    }
    const char *f = tu_write("pids.csv", csv);
    free(csv);
    struct val_monitor m;
    struct rl_err e = {0};
    ck_assert_msg(val_monitor_read(f, &m, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(m.n_procs, PIDS);
    ck_assert_int_eq(m.n_ranks, 7);
    ck_assert_int_eq(m.procs[PIDS - 1].pid, 1000 + PIDS - 1);
    ck_assert_int_eq(m.procs[PIDS - 1].samples, 1);
    ck_assert_int_eq(m.procs[5].samples, 2);
    ck_assert_int_eq(m.procs[5].peak_rss_bytes, 8192);
    /* Rank 0 holds the pids 1000 + p with p = 0 mod 7: ceil(PIDS / 7) of them (28572 of 200000),
     * 4096 B each at sample 0 (at sample 1 only the 15 of the first 100, 8192 B each). */
    ck_assert_int_eq(m.ranks[0].procs, (PIDS + 6) / 7);
    ck_assert_int_eq(val_monitor_rank_peak(&m.ranks[0]), (PIDS + 6) / 7 * 4096LL);
    val_monitor_free(&m);
    struct plot__monitor pm;
    ck_assert_msg(plot__monitor_read(f, &pm, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(pm.n_procs, PIDS);
    plot__monitor_free(&pm);
}
END_TEST

/* ---- item 9: DeepSpeed log lines ---------------------------------------------------------------- */

START_TEST(zero_config_wrapped_read_or_refused)
{
    size_t len;
    char *t = example_log(&len);
    char *zc = strstr(t, "zero_config ....");
    ck_assert_ptr_nonnull(zc);
    char *ls = zc;
    while (ls > t && ls[-1] != '\n')
        ls--;
    char *le = strchr(zc, '\n');
    int zline = 1;
    for (char *p = t; p < ls; p++)
        zline += *p == '\n';
    /* Folded at 100 columns, as `fold` or a terminal wraps it: read as if whole. */
    size_t cap = len * 2;
    char *w = malloc(cap);
    size_t n = (size_t)(ls - t);
    memcpy(w, t, n);
    for (char *p = ls; p < le; p += 100) {
        size_t k = (size_t)(le - p) < 100 ? (size_t)(le - p) : 100;
        memcpy(w + n, p, k);
        n += k;
        w[n++] = '\n';
    }
    snprintf(w + n, cap - n, "%s", le + 1);
    struct trace_ds_config c;
    struct rl_err e = {0};
    ck_assert_msg(trace_ds_config_parse(w, strlen(w), "w.log", &c, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(c.sub_group_size, 16896);   /* the example's, from the log by eye */
    ck_assert_int_eq(c.prefetch_bucket_size, 50000000);
    ck_assert(c.have_ratio && c.ratio == 0.5);
    ck_assert_int_eq(c.zero_line, zline);
    /* Cut inside offload_optimizer(...), the rest lost: refused naming the line, not defaulted. */
    char *off = strstr(zc, "offload_optimizer=DeepSpeedZeroOffloadOptimizerConfig(device=");
    ck_assert_ptr_nonnull(off);
    char *cut = malloc(len + 1);
    n = (size_t)(off + 60 - t);
    memcpy(cut, t, n);
    snprintf(cut + n, len + 1 - n, "%s", le);
    ck_assert_int_eq(trace_ds_config_parse(cut, strlen(cut), "cut.log", &c, &e), RL_EINVAL);
    char want[80];
    snprintf(want, sizeof want, "cut.log:%d: zero_config: its value's parentheses do not close", zline);
    ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
    free(w);
    free(cut);
    free(t);
}
END_TEST

START_TEST(version_part_past_int_refused)
{
    struct rl_version v;
    struct rl_err e = {0};
    ck_assert_int_eq(rl_parse_version("v", "99999999999.1.1", &v, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "'99999999999.1.1': a part above 999999"), "%s", e.msg);
    ck_assert_int_eq(rl_parse_version("v", "0.14.1.", &v, &e), RL_EINVAL);
    ck_assert_int_eq(rl_parse_version("v", "0.14.1", &v, &e), 0);
    ck_assert(v.major == 0 && v.minor == 14 && v.patch == 1);
    ck_assert_int_eq(rl_parse_version("v", "999999.2", &v, &e), 0);
    ck_assert(v.major == 999999 && v.minor == 2 && v.patch == 0);
    const char *log = "x\n[t] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=99999999999.1.1, git\n";
    struct trace_ds_config c;
    ck_assert_int_eq(trace_ds_config_parse(log, strlen(log), "v.log", &c, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "v.log:2: DeepSpeed info: version: '99999999999.1.1': a part above"), "%s", e.msg);
}
END_TEST

START_TEST(ma_nan_refused_naming_line)
{
    static const char *const bad[] = {"nan", "-inf", "-0.5", "GB"};
    for (size_t i = 0; i < RL_COUNT(bad); i++) {
        char log[512];
        snprintf(log, sizeof log, "[t] [INFO] [utils.py:772:see_memory_usage] After creating fp16 partitions: 6\n"
                                  "[t] [INFO] [utils.py:773:see_memory_usage] MA %s GB         Max_MA 0.5 GB\n", bad[i]);
        struct trace_ds_log l;
        struct rl_err e = {0};
        ck_assert_int_eq(trace_ds_parse(log, strlen(log), "n.log", &l, &e), RL_EINVAL);
        char want[80];
        snprintf(want, sizeof want, "n.log: line 2: MA '%s' GB is not a figure", bad[i]);
        ck_assert_msg(strstr(e.msg, want), "%s: %s", bad[i], e.msg);
    }
}
END_TEST

/* ---- item 9: gzip, plot, checkpoint, trace ------------------------------------------------------ */

static size_t gz(const char *text, unsigned char *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)(uintptr_t)text;
    z.avail_in = (uInt)strlen(text);
    z.next_out = out;
    z.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    return n;
}

START_TEST(gz_trailing_bytes_refused)
{
    unsigned char b[512];
    size_t n = gz("hello ", b, sizeof b);
    size_t m = gz("world\n", b + n, sizeof b - n);   /* a second member: gzip -c a b */
    const char *p = tu_path("two.txt.gz");
    FILE *f = fopen(p, "wb");
    ck_assert_uint_eq(fwrite(b, 1, n + m, f), n + m);
    fclose(f);
    char *text;
    size_t len;
    struct rl_err e = {0};
    ck_assert_msg(trace_read_file(p, &text, &len, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(text, "hello world\n");
    free(text);
    f = fopen(p, "ab");
    fputs("trailing garbage", f);
    fclose(f);
    ck_assert_int_eq(trace_read_file(p, &text, &len, &e), RL_EINVAL);
    char want[120];
    snprintf(want, sizeof want, "16 bytes after the gzip stream at byte %zu, not another gzip member", n + m);
    ck_assert_msg(strstr(e.msg, want), "%s", e.msg);
}
END_TEST

START_TEST(plot_ratio_outside_unit_refused)
{
    size_t len;
    char *t = tu_read(tu_src_path("tests/fuzz/seeds/plot_inputs/sweep.json"), &len);
    ck_assert_ptr_nonnull(t);
    static const char *const bad[] = {"1e308", "-1e308", "1.5"};
    for (size_t i = 0; i < RL_COUNT(bad); i++) {
        char to[64];
        snprintf(to, sizeof to, "\"requested_ratio\":%s,", bad[i]);
        char *x = replace1(t, "\"requested_ratio\":0.0,", to);
        const char *f = tu_write("sweep-bad.json", x);
        free(x);
        struct plot__sweep s;
        struct rl_err e = {0};
        ck_assert_int_eq(plot__sweep_read(f, &s, &e), RL_EINVAL);
        ck_assert_msg(strstr(e.msg, "rows[0]: field 'requested_ratio'") && strstr(e.msg, "allowed: a ratio in [0, 1]"),
                      "%s", e.msg);
        struct tu_run r;
        tu_ratiolab(&r, "plot memory --in '%s' --out '%s'", f, tu_path("bad.svg"));
        ck_assert_msg(r.status == 2 && !tu_exists(tu_path("bad.svg")), "exit %d\n%s", r.status, r.err);
        tu_run_free(&r);
    }
    free(t);
}
END_TEST

START_TEST(folder_without_checkpoint_says_so)
{
    const char *d = tu_path("not-a-checkpoint");
    mkdir(d, 0755);
    struct tu_run r;
    tu_ratiolab(&r, "run --model gpt2 --load '%s'", d);
    char want[1200];
    snprintf(want, sizeof want, "--load: %s has no CHECKPOINT file", d);
    ck_assert_msg(r.status == 2 && strstr(r.err, want) && strstr(r.err, "not a checkpoint folder"), "exit %d\n%s",
                  r.status, r.err);
    tu_run_free(&r);
}
END_TEST

START_TEST(trace_negative_duration_refused)
{
    const char *t = tu_write("neg.json", "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"fwd\",\"cat\":\"forward\",\"pid\":1,"
                                         "\"tid\":1,\"ts\":0,\"dur\":10},{\"ph\":\"X\",\"name\":\"late\",\"cat\":"
                                         "\"backward\",\"pid\":1,\"tid\":1,\"ts\":20,\"dur\":-5}]}");
    struct tu_run r;
    tu_ratiolab(&r, "trace diff '%s' '%s'", t, t);
    ck_assert_msg(r.status == 2 && strstr(r.err, "traceEvents[1] (\"late\"): dur -5 us; allowed: a duration >= 0"),
                  "exit %d\n%s%s", r.status, r.out, r.err);
    tu_run_free(&r);
}
END_TEST

START_TEST(stale_traces_removed_only_validates_own)
{
    const char *d = tu_path("vout");
    mkdir(d, 0755);
    char p[5][1200];
    static const char *const names[] = {"predicted-0.3-overlap.json.gz", "measured-0.3-overlap.json.gz",
                                        "predicted-user.json.gz", "measured-link.json.gz", "notes.txt"};
    for (int i = 0; i < 5; i++)
        snprintf(p[i], sizeof p[i], "%s/%s", d, names[i]);
    char outside[600];
    snprintf(outside, sizeof outside, "%s", tu_write("outside.json.gz", "keep"));
    char rel[600];
    for (int i = 0; i < 5; i++) {
        snprintf(rel, sizeof rel, "vout/%s", names[i]);
        if (i != 3)
            tu_write(rel, i == 4 ? "mine" : "x");
    }
    ck_assert_int_eq(symlink(outside, p[3]), 0);
    struct rl_err e = {0};
    /* An earlier validate listed its two traces, the link and a name it never writes. */
    ck_assert_int_eq(camp_outputs_note(d, p[0], &e), 0);
    ck_assert_int_eq(camp_outputs_note(d, p[1], &e), 0);
    ck_assert_int_eq(camp_outputs_note(d, p[3], &e), 0);
    ck_assert_int_eq(camp_outputs_note(d, "notes.txt", &e), 0);
    ck_assert_int_eq(camp_outputs_forget(d, &e), 0);
    ck_assert(!tu_exists(p[0]) && !tu_exists(p[1]));
    ck_assert(tu_exists(p[2]));   /* never listed */
    struct stat st;
    ck_assert_int_eq(lstat(p[3], &st), 0);   /* a link: left, and what it points to */
    ck_assert(tu_exists(outside));
    ck_assert(tu_exists(p[4]));   /* not a name validate writes */
    char list[1300];
    snprintf(list, sizeof list, "%s/" CAMP_OUTPUTS, d);
    ck_assert(!tu_exists(list));
    ck_assert_int_eq(camp_outputs_forget(d, &e), 0);   /* nothing listed: nothing done */
}
END_TEST

Suite *hardening_inputs_suite(void)
{
    Suite *s = suite_create("hardening_inputs");
    TCase *tc = tcase_create("log_runs");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, logs_of_two_configs_judged_each);
    tcase_add_test(tc, log_of_two_appended_runs_split);
    tcase_add_test(tc, ratio_checked_against_the_run_it_applies_to);
    tcase_add_test(tc, runs_split_where_engines_start);
    suite_add_tcase(s, tc);
    tc = tcase_create("low");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, monitor_rss_bounded_and_summed_checked);
    tcase_add_test(tc, monitor_many_pids_linear);
    tcase_add_test(tc, zero_config_wrapped_read_or_refused);
    tcase_add_test(tc, version_part_past_int_refused);
    tcase_add_test(tc, ma_nan_refused_naming_line);
    tcase_add_test(tc, gz_trailing_bytes_refused);
    tcase_add_test(tc, plot_ratio_outside_unit_refused);
    tcase_add_test(tc, folder_without_checkpoint_says_so);
    tcase_add_test(tc, trace_negative_duration_refused);
    tcase_add_test(tc, stale_traces_removed_only_validates_own);
    suite_add_tcase(s, tc);
    return s;
}
