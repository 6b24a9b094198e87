/* tests/check_traces.c — the Chrome trace writer and reader (traces/). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rl.h"
#include "tests/util.h"
#include "traces/dslog.h"
#include "traces/trace.h"

/* A fixed set of calls covering every event kind; names carry characters JSON must escape. */
static void write_sample(const char *path)
{
    struct trace *t;
    struct rl_err e = {0};
    ck_assert_int_eq(trace_open(&t, path, &e), 0);
    ck_assert_int_eq(trace_process_name(t, 7, "rank \"0\"\\gpu"), 0);
    ck_assert_int_eq(trace_thread_name(t, 7, 3, "copy\tthread\n"), 0);
    ck_assert_int_eq(trace_span(t, 7, 3, "h2d", "pcie", 1500, 2000001, "{\"bytes\": 4096, \"sub\":\"a\"}"), 0);
    ck_assert_int_eq(trace_span(t, 7, 3, "neg-start", NULL, -1500, 0, NULL), 0);
    ck_assert_int_eq(trace_counter(t, 7, "memory", 1000, "rss_bytes", 123456789012.0), 0);
    ck_assert_int_eq(trace_counter(t, 7, "memory", 2000, "ratio", 0.1), 0);
    ck_assert_int_eq(trace_counter(t, 7, "memory", 3000, "neg", -3.0), 0);
    ck_assert_int_eq(trace_instant(t, 7, 0, "After creating fp16 partitions", 4000, 'g', NULL), 0);
    ck_assert_int_eq(trace_instant(t, 7, 3, "mark", 5000, 't', "{\"line\":\"x\\u0001y\"}"), 0);
    ck_assert_int_eq(trace_n_events(t), 9);
    ck_assert_int_eq(trace_close(t, &e), 0);
}

START_TEST(round_trip_gives_same_events)
{
    const char *names[2] = {"rt.json", "rt.json.gz"};
    for (int k = 0; k < 2; k++) {
        const char *p = tu_path(names[k]);
        write_sample(p);
        struct trace_doc d;
        struct rl_err e = {0};
        ck_assert_msg(trace_read(p, &d, &e) == 0, "%s", e.msg);
        ck_assert_int_eq(d.n_events, 9);
        struct trace_event *ev = d.events;
        ck_assert_int_eq(ev[0].ph, 'M');
        ck_assert_str_eq(ev[0].name, "process_name");
        ck_assert_str_eq(ev[0].args_json, "{\"name\":\"rank \\\"0\\\"\\\\gpu\"}");
        ck_assert_int_eq(ev[1].tid, 3);
        ck_assert_str_eq(ev[1].args_json, "{\"name\":\"copy\\tthread\\n\"}");
        ck_assert_int_eq(ev[2].ph, 'X');
        ck_assert_int_eq(ev[2].pid, 7);
        ck_assert_int_eq(ev[2].tid, 3);
        ck_assert_str_eq(ev[2].name, "h2d");
        ck_assert_str_eq(ev[2].cat, "pcie");
        ck_assert_int_eq(ev[2].ts_ns, 1500);
        ck_assert_int_eq(ev[2].dur_ns, 2000001);
        ck_assert_str_eq(ev[2].args_json, "{\"bytes\":4096,\"sub\":\"a\"}");
        ck_assert_ptr_null(ev[3].cat);
        ck_assert_int_eq(ev[3].ts_ns, -1500);
        ck_assert_ptr_null(ev[3].args_json);
        ck_assert_int_eq(ev[4].ph, 'C');
        ck_assert_str_eq(ev[4].series, "rss_bytes");
        ck_assert(ev[4].value == 123456789012.0);
        ck_assert(ev[5].value == 0.1);
        ck_assert(ev[6].value == -3.0);
        ck_assert_int_eq(ev[7].ph, 'i');
        ck_assert_int_eq(ev[7].scope, 'g');
        ck_assert_str_eq(ev[7].name, "After creating fp16 partitions");
        ck_assert_int_eq(ev[7].ts_ns, 4000);
        ck_assert_int_eq(ev[8].scope, 't');
        ck_assert_str_eq(ev[8].args_json, "{\"line\":\"x\\u0001y\"}");
        trace_doc_free(&d);
    }
}
END_TEST

START_TEST(number_formats_are_fixed)
{
    const char *p = tu_path("fmt.json");
    struct trace *t;
    struct rl_err e = {0};
    ck_assert_int_eq(trace_open(&t, p, &e), 0);
    trace_span(t, 1, 2, "s", NULL, 12345, 1, NULL);
    trace_counter(t, 1, "c", 0, "v", 0.1);
    trace_counter(t, 1, "c", 1, "v", 4096.0);
    ck_assert_int_eq(trace_close(t, &e), 0);
    char *s;
    ck_assert_int_eq(rl_read_bytes(p, &s, NULL, &e), 0);
    ck_assert_ptr_nonnull(strstr(s, "\"ts\":12.345,\"dur\":0.001"));
    ck_assert_ptr_nonnull(strstr(s, "\"ts\":0.000,\"args\":{\"v\":0.10000000000000001}"));
    ck_assert_ptr_nonnull(strstr(s, "\"ts\":0.001,\"args\":{\"v\":4096}"));
    ck_assert_ptr_nonnull(strstr(s, "\"displayTimeUnit\":\"ns\"}"));
    ck_assert(strncmp(s, "{\"traceEvents\":[", 16) == 0);
    free(s);
}
END_TEST

START_TEST(writing_twice_gives_identical_bytes)
{
    const char *names[2][2] = {{"a.json", "b.json"}, {"a.json.gz", "b.json.gz"}};
    for (int k = 0; k < 2; k++) {
        const char *pa = tu_path(names[k][0]), *pb = tu_path(names[k][1]);
        write_sample(pa);
        sleep(k == 1 ? 1 : 0);   /* a gzip header with a time stamp would differ now */
        write_sample(pb);
        char *a, *b;
        size_t na, nb;
        struct rl_err e = {0};
        ck_assert_int_eq(rl_read_bytes(pa, &a, &na, &e), 0);
        ck_assert_int_eq(rl_read_bytes(pb, &b, &nb, &e), 0);
        ck_assert_uint_eq(na, nb);
        ck_assert(memcmp(a, b, na) == 0);
        if (k == 1)
            ck_assert(na > 2 && (unsigned char)a[0] == 0x1f && (unsigned char)a[1] == 0x8b);
        free(a);
        free(b);
    }
}
END_TEST

START_TEST(odd_names_are_escaped)
{
    /* Quotes, backslashes, every control character, a valid multi-byte character and bytes
     * that are not UTF-8: the file must stay valid JSON and read back as written (invalid bytes
     * become U+FFFD). */
    char name[64];
    int k = 0;
    for (int c = 1; c < 0x20; c++)
        name[k++] = (char)c;
    memcpy(name + k, "\"\\/\xc3\xa9\xff\xc3", 8);
    k += 7;
    name[k] = 0;
    const char *p = tu_path("esc.json");
    struct trace *t;
    struct rl_err e = {0};
    ck_assert_int_eq(trace_open(&t, p, &e), 0);
    ck_assert_int_eq(trace_span(t, 1, 1, name, name, 0, 0, NULL), 0);
    ck_assert_int_eq(trace_close(t, &e), 0);
    struct trace_doc d;
    ck_assert_msg(trace_read(p, &d, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(d.n_events, 1);
    char want[80];
    memcpy(want, name, (size_t)(k - 2));
    memcpy(want + k - 2, "\xef\xbf\xbd\xef\xbf\xbd", 7);   /* two U+FFFD */
    ck_assert_str_eq(d.events[0].name, want);
    ck_assert_str_eq(d.events[0].cat, want);
    trace_doc_free(&d);
}
END_TEST

/* Copies the first `keep` bytes of src to dst. */
static void truncate_copy(const char *src, const char *dst, size_t keep)
{
    char *s;
    size_t n;
    ck_assert_int_eq(rl_read_bytes(src, &s, &n, NULL), 0);
    ck_assert_uint_gt(n, keep);
    FILE *f = fopen(dst, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(s, 1, keep, f);
    fclose(f);
    free(s);
}

START_TEST(truncated_gzip_is_rejected)
{
    const char *full = tu_path("full.json.gz"), *cut = tu_path("cut.json.gz");
    write_sample(full);
    struct trace_doc d;
    struct rl_err e = {0};
    char *s;
    size_t n;
    ck_assert_int_eq(rl_read_bytes(full, &s, &n, NULL), 0);
    free(s);
    size_t keeps[3] = {n / 2, n - 4, 1};   /* mid-stream, inside the trailer, inside the header */
    for (int i = 0; i < 3; i++) {
        truncate_copy(full, cut, keeps[i]);
        memset(&e, 0, sizeof e);
        ck_assert_int_eq(trace_read(cut, &d, &e), RL_EINVAL);
        ck_assert_ptr_nonnull(strstr(e.msg, "cut.json.gz"));
        ck_assert_msg(strstr(e.msg, "truncated gzip stream") != NULL, "%s", e.msg);
        ck_assert_ptr_null(d.events);
    }
    /* A flipped byte in the compressed data fails the CRC or the inflater. */
    ck_assert_int_eq(rl_read_bytes(full, &s, &n, NULL), 0);
    s[n / 2] ^= 0x55;
    FILE *f = fopen(cut, "wb");
    fwrite(s, 1, n, f);
    fclose(f);
    free(s);
    ck_assert_int_eq(trace_read(cut, &d, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "cut.json.gz"));
}
END_TEST

START_TEST(malformed_json_is_rejected)
{
    struct trace_doc d;
    struct rl_err e = {0};
    const char *p = tu_write("bad.json", "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,}]}");
    ck_assert_int_eq(trace_read(p, &d, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "bad.json"));
    p = tu_write("noarr.json", "{\"events\":[]}");
    ck_assert_int_eq(trace_read(p, &d, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "traceEvents"));
    p = tu_write("noph.json", "[{\"name\":\"x\"}]");
    ck_assert_int_eq(trace_read(p, &d, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "ph"));
    /* A plain JSON file named .gz is not a gzip stream. */
    p = tu_write("plain.json.gz", "[]");
    ck_assert_int_eq(trace_read(p, &d, &e), RL_EINVAL);
    /* A bare array is accepted, as Chrome does. */
    p = tu_write("bare.json", "[{\"ph\":\"i\",\"pid\":2,\"name\":\"x\",\"ts\":1.5}]");
    ck_assert_msg(trace_read(p, &d, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(d.n_events, 1);
    ck_assert_int_eq(d.events[0].ts_ns, 1500);
    ck_assert_int_eq(d.events[0].scope, 't');
    trace_doc_free(&d);
    ck_assert_int_eq(trace_read(tu_path("missing.json"), &d, &e), RL_ENOENT);
}
END_TEST

START_TEST(abort_and_errors_leave_no_file)
{
    int before = tu_count_files();
    struct trace *t;
    struct rl_err e = {0};
    const char *names[2] = {"ab.json", "ab.json.gz"};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(trace_open(&t, tu_path(names[k]), &e), 0);
        for (int i = 0; i < 20000; i++)   /* past the flush size: bytes reach the temporary file */
            trace_counter(t, 1, "c", i, "v", i);
        ck_assert_int_eq(tu_count_files(), before + 1);
        trace_abort(t);
        ck_assert_int_eq(tu_count_files(), before);
    }
    /* A bad value makes the whole trace fail at close, naming the file; nothing is left. */
    ck_assert_int_eq(trace_open(&t, tu_path("bad.json"), &e), 0);
    ck_assert_int_eq(trace_counter(t, 1, "c", 0, "v", NAN), RL_EINVAL);
    ck_assert_int_eq(trace_span(t, 1, 1, "later", NULL, 0, 1, NULL), RL_EINVAL);
    ck_assert_int_eq(trace_close(t, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "bad.json"));
    ck_assert_int_eq(tu_count_files(), before);
    ck_assert_int_eq(trace_open(&t, tu_path("args.json"), &e), 0);
    ck_assert_int_eq(trace_span(t, 1, 1, "s", NULL, 0, 1, "[1,2]"), RL_EINVAL);
    ck_assert_int_eq(trace_close(t, &e), RL_EINVAL);
    ck_assert_int_eq(trace_open(&t, tu_path("dur.json"), &e), 0);
    ck_assert_int_eq(trace_span(t, 1, 1, "s", NULL, 0, -1, NULL), RL_EINVAL);
    ck_assert_int_eq(trace_instant(t, 1, 1, "s", 0, 'x', NULL), RL_EINVAL);
    ck_assert_int_eq(trace_close(t, &e), RL_EINVAL);
    ck_assert_int_eq(tu_count_files(), before);
    /* Unwritable folder: open fails, names the file. */
    ck_assert_int_eq(trace_open(&t, "/nonexistent-dir/x.json", &e), RL_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent-dir/x.json"));
}
END_TEST

START_TEST(large_trace_round_trips_through_gzip)
{
    unsigned long seed = tu_seed("large_trace_round_trips_through_gzip");
    srand((unsigned)seed);
    const char *p = tu_path("big.json.gz");
    struct trace *t;
    struct rl_err e = {0};
    enum { N = 30000 };
    static int64_t ts[N];
    static double val[N];
    ck_assert_int_eq(trace_open(&t, p, &e), 0);
    for (int i = 0; i < N; i++) {
        ts[i] = (int64_t)rand() * 1000 + rand() % 1000;
        val[i] = (double)rand() / RAND_MAX * 1e9;
        ck_assert_int_eq(trace_counter(t, i % 5, "mem", ts[i], "bytes", val[i]), 0);
    }
    ck_assert_int_eq(trace_close(t, &e), 0);
    struct trace_doc d;
    ck_assert_msg(trace_read(p, &d, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(d.n_events, N);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(d.events[i].ts_ns, ts[i]);
        ck_assert(d.events[i].value == val[i]);   /* %.17g round-trips every double */
        ck_assert_int_eq(d.events[i].pid, i % 5);
    }
    trace_doc_free(&d);
}
END_TEST

/* A log as DeepSpeed 0.12 writes it (logger format "[time] [LEVEL] [file:line:func] msg"), with
 * a launcher's rank prefix, unrelated lines, a stage logged across midnight of a leap day and a
 * stage without figures. Expected bytes are the logged GiB x 1024^3, rounded. */
static const char ds_log[] =
    "[2024-02-29 23:59:58,000] [INFO] [engine.py:1:_configure] using ZeRO stage 3\n"
    "[default0]:[2024-02-29 23:59:59,900] [INFO] [utils.py:802:see_memory_usage] Stage 3 initialize beginning\n"
    "[default0]:[2024-02-29 23:59:59,901] [INFO] [utils.py:803:see_memory_usage] MA 0.0 GB         Max_MA 0.0 GB         CA 0.0 GB         Max_CA 0 GB \n"
    "[default0]:[2024-02-29 23:59:59,902] [INFO] [utils.py:810:see_memory_usage] CPU Virtual Memory:  used = 30.5 GB, percent = 12.1%\n"
    "\n"
    "[default0]:[2024-03-01 00:00:00,100] [INFO] [utils.py:802:see_memory_usage] After creating fp16 partitions: 1\r\n"
    "[default0]:[2024-03-01 00:00:00,101] [INFO] [utils.py:803:see_memory_usage] MA 1.23 GB         Max_MA 1.5 GB         CA 2.0 GB         Max_CA 2 GB \r\n"
    "some unrelated line\n"
    "[2024-03-01 00:00:01,000] [INFO] [utils.py:802:see_memory_usage] After initializing ZeRO optimizer\n";

START_TEST(deepspeed_memory_log_is_parsed)
{
    const char *names[2] = {"ds.log", "ds.log.gz"};
    const char *p = tu_write("ds.log", ds_log);
    /* The same log compressed must read the same. */
    char gz[600];
    snprintf(gz, sizeof gz, "%s.gz", p);
    struct tu_run r;
    tu_sh(&r, "gzip -c ds.log > ds.log.gz");
    ck_assert_int_eq(r.status, 0);
    tu_run_free(&r);
    for (int k = 0; k < 2; k++) {
        struct trace_ds_log log;
        struct rl_err e = {0};
        ck_assert_msg(trace_ds_read(k ? gz : p, &log, &e) == 0, "%s: %s", names[k], e.msg);
        ck_assert_int_eq(log.n_stages, 3);
        struct trace_ds_stage *s = log.stages;
        ck_assert_str_eq(s[0].name, "Stage 3 initialize beginning");
        ck_assert_int_eq(s[0].line, 2);
        ck_assert_int_eq(s[0].t_ns, 0);
        ck_assert_int_eq(s[0].ma_bytes, 0);
        ck_assert_int_eq(s[0].max_ca_bytes, 0);
        ck_assert_int_eq(s[0].cpu_used_bytes, 32749125632LL);   /* 30.5 x 2^30 */
        ck_assert(s[0].cpu_percent == 12.1);
        ck_assert_str_eq(s[1].name, "After creating fp16 partitions: 1");
        ck_assert_int_eq(s[1].line, 6);
        ck_assert_int_eq(s[1].t_ns, 200000000LL);               /* across midnight of Feb 29 */
        ck_assert_int_eq(s[1].ma_bytes, 1320702444LL);           /* 1.23 x 2^30 = 1320702443.52 */
        ck_assert_int_eq(s[1].max_ma_bytes, 1610612736LL);
        ck_assert_int_eq(s[1].ca_bytes, 2147483648LL);
        ck_assert_int_eq(s[1].max_ca_bytes, 2147483648LL);
        ck_assert_int_eq(s[1].cpu_used_bytes, -1);
        ck_assert_str_eq(s[2].name, "After initializing ZeRO optimizer");
        ck_assert_int_eq(s[2].t_ns, 1100000000LL);
        ck_assert_int_eq(s[2].ma_bytes, -1);
        /* Written into a trace and read back: instants at the stage times, counters beside. */
        const char *tp = tu_path("ds.json");
        struct trace *t;
        ck_assert_int_eq(trace_open(&t, tp, &e), 0);
        ck_assert_int_eq(trace_ds_write(t, &log, 5, 1000), 0);
        ck_assert_int_eq(trace_close(t, &e), 0);
        struct trace_doc d;
        ck_assert_msg(trace_read(tp, &d, &e) == 0, "%s", e.msg);
        ck_assert_int_eq(d.n_events, 3 + 5 + 4 + 0);
        ck_assert_int_eq(d.events[0].ph, 'i');
        ck_assert_int_eq(d.events[0].ts_ns, 1000);
        ck_assert_str_eq(d.events[6].name, "After creating fp16 partitions: 1");
        ck_assert_int_eq(d.events[6].ts_ns, 200001000LL);
        ck_assert_str_eq(d.events[7].series, "ma_bytes");
        ck_assert(d.events[7].value == 1320702444.0);
        ck_assert_int_eq(d.events[7].pid, 5);
        trace_doc_free(&d);
        trace_ds_free(&log);
    }
    struct trace_ds_log log;
    struct rl_err e = {0};
    ck_assert_int_eq(trace_ds_read(tu_write("none.log", "hello\nworld\n"), &log, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "none.log"));
    ck_assert_int_eq(trace_ds_read(tu_path("absent.log"), &log, &e), RL_ENOENT);
}
END_TEST

Suite *traces_suite(void)
{
    Suite *s = suite_create("traces");
    TCase *tc = tcase_create("writer_reader");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, round_trip_gives_same_events);
    tcase_add_test(tc, number_formats_are_fixed);
    tcase_add_test(tc, writing_twice_gives_identical_bytes);
    tcase_add_test(tc, odd_names_are_escaped);
    tcase_add_test(tc, truncated_gzip_is_rejected);
    tcase_add_test(tc, malformed_json_is_rejected);
    tcase_add_test(tc, abort_and_errors_leave_no_file);
    tcase_add_test(tc, large_trace_round_trips_through_gzip);
    tcase_add_test(tc, deepspeed_memory_log_is_parsed);
    suite_add_tcase(s, tc);
    return s;
}
