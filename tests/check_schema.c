/* tests/check_schema.c — one key table per file format (traces/schema.h): the monitor's CSV written
 * by monitor/ and read by validation/ and plots/ through the table, whatever the order of its
 * columns; the sweep's CSV and JSON and tune's JSON parsed with their tables, so a writer that
 * disagrees with its table fails here. The monitor in process; sweep and tune are three short runs
 * of the binary (well under a second together). */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "monitor/monitor.h"
#include "plots/input.h"
#include "traces/schema.h"
#include "validation/val.h"
#include "tests/util.h"

/* The header of a CSV text: its first line that is not a comment, split in place. */
static int header_of(char *text, char **f, int max, char **rest)
{
    char *line = text;
    while (*line == '#' && strchr(line, '\n'))
        line = strchr(line, '\n') + 1;
    char *nl = strchr(line, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = 0;
    *rest = nl + 1;
    return trace_csv_split(line, f, max);
}

/* The monitor writes its CSV through the table: its header is the table's columns, in order, and
 * this process's row reads back alike through validation/'s reader and plots/'. */
START_TEST(monitor_csv_is_written_through_the_table)
{
    struct mon *m;
    struct rl_err e = {0};
    int self = getpid();
    const char *path = tu_path("mon.csv");
    struct mon_config c = {&self, 1, 20000000, NULL, path, true, "# made by tests/check_schema.c\n"};
    ck_assert_msg(mon_open(&m, &c, &e) == 0, "%s", e.msg);
    ck_assert_int_ge(mon_sample(m, 0, &e), 1);
    ck_assert_int_ge(mon_sample(m, 20000000, &e), 1);
    ck_assert_msg(mon_close(m, &e) == 0, "%s", e.msg);
    mon_free(m);
    char *text = tu_read(path, NULL), *rows;
    char *f[64];
    int n = header_of(text, f, 64, &rows);
    ck_assert_int_eq(n, TRACE_MON_N);
    for (int k = 0; k < TRACE_MON_N; k++)
        ck_assert_str_eq(f[k], trace_mon_cols[k]);
    char *nl = strchr(rows, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = 0;
    ck_assert_int_eq(trace_csv_split(rows, f, 64), TRACE_MON_N);
    ck_assert_int_eq(atoi(f[TRACE_MON_PID]), self);
    ck_assert_int_eq(strtoll(f[TRACE_MON_T_NS], NULL, 10), 0);
    ck_assert_int_gt(strtoll(f[TRACE_MON_RSS], NULL, 10), 0);
    ck_assert_int_gt(atoi(f[TRACE_MON_THREADS]), 0);
    ck_assert_str_eq(f[TRACE_MON_GPU], "");   /* no NVML: unknown, and the status says so */
    ck_assert_msg(strstr(f[TRACE_MON_STATUS], "gpu_bytes"), "%s", f[TRACE_MON_STATUS]);
    int64_t rss0 = strtoll(f[TRACE_MON_RSS], NULL, 10);
    free(text);
    struct val_monitor v;
    ck_assert_msg(val_monitor_read(path, &v, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(v.n_procs, 1);
    ck_assert_int_eq(v.procs[0].pid, self);
    ck_assert_int_eq(v.procs[0].samples, 2);
    ck_assert_int_eq(v.procs[0].first_rss_bytes, rss0);
    struct plot__monitor p;
    ck_assert_msg(plot__monitor_read(path, &p, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(p.n_samples, 2);
    ck_assert_int_eq(p.samples[0].pid, self);
    ck_assert_int_eq(p.samples[0].rss_bytes, rss0);
    ck_assert_int_eq(p.samples[0].gpu_bytes, -1);
    ck_assert_str_eq(p.procs[0].comm, v.procs[0].comm);
    val_monitor_free(&v);
    plot__monitor_free(&p);
}
END_TEST

/* Readers find the monitor's columns by name: the same rows with the columns in reverse order (a
 * later monitor may add or move columns) read as they were; a comm holding a comma and a quote
 * (quoted, RFC 4180) stays one field in both readers, where validation/'s once split it and read
 * the next column's figure as its rss. The figures are made up. */
START_TEST(monitor_readers_find_columns_by_name)
{
    const char *rows[2][TRACE_MON_N] = {{"0", "", "41", "1", "py,\"x\"", "3", "1000", "0", "0", "0", "1500", "7", "8",
                                         "0", "", "12.5", "4", "99", "ok"},
                                        {"5", "", "41", "1", "py,\"x\"", "3", "3000", "0", "0", "0", "2500", "7", "8",
                                         "0", "640", "12.5", "4", "99", "ok"}};
    for (int order = 0; order < 2; order++) {
        const char *names[TRACE_MON_N], *cells[TRACE_MON_N];
        char name[32];
        snprintf(name, sizeof name, "order%d.csv", order);
        FILE *fp = fopen(tu_path(name), "w");
        ck_assert_ptr_nonnull(fp);
        fputs("# a comment\n", fp);
        for (int k = 0; k < TRACE_MON_N; k++)
            names[k] = trace_mon_cols[order ? TRACE_MON_N - 1 - k : k];
        trace_csv_header(fp, names, TRACE_MON_N);
        for (int r = 0; r < 2; r++) {
            for (int k = 0; k < TRACE_MON_N; k++)
                cells[k] = rows[r][order ? TRACE_MON_N - 1 - k : k];
            trace_csv_row(fp, cells, TRACE_MON_N);
        }
        fclose(fp);
        struct rl_err e = {0};
        struct val_monitor v;
        ck_assert_msg(val_monitor_read(tu_path(name), &v, &e) == 0, "%s: %s", name, e.msg);
        ck_assert_int_eq(v.n_procs, 1);
        ck_assert_int_eq(v.procs[0].pid, 41);
        ck_assert_int_eq(v.procs[0].rank, 3);
        ck_assert_str_eq(v.procs[0].comm, "py,\"x\"");
        ck_assert_int_eq(v.procs[0].first_rss_bytes, 1000);
        ck_assert_int_eq(v.procs[0].peak_rss_bytes, 3000);   /* max(rss, hwm) over the rows */
        val_monitor_free(&v);
        struct plot__monitor p;
        ck_assert_msg(plot__monitor_read(tu_path(name), &p, &e) == 0, "%s: %s", name, e.msg);
        ck_assert_int_eq(p.n_samples, 2);
        ck_assert_int_eq(p.samples[1].t_ns, 5);
        ck_assert_int_eq(p.samples[1].rss_bytes, 3000);
        ck_assert_int_eq(p.samples[0].gpu_bytes, -1);
        ck_assert_int_eq(p.samples[1].gpu_bytes, 640);
        ck_assert_int_eq(p.samples[1].locked_pinned_bytes, 15);
        ck_assert_str_eq(p.procs[0].comm, "py,\"x\"");
        plot__monitor_free(&p);
    }
    /* a header without a column the readers need: both name it */
    tu_write("norss.csv", "t_ns,pid,comm,rank,hwm_bytes,locked_bytes,pinned_bytes,gpu_bytes\n0,1,a,0,1,0,0,\n");
    struct rl_err e = {0};
    struct val_monitor v;
    struct plot__monitor p;
    ck_assert_int_eq(val_monitor_read(tu_path("norss.csv"), &v, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "'rss_bytes'"), "%s", e.msg);
    ck_assert_int_eq(plot__monitor_read(tu_path("norss.csv"), &p, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "'rss_bytes'"), "%s", e.msg);
}
END_TEST

/* sweep --csv and --json name their columns and keys through the table, and plots/ reads both
 * alike: the CSV's header is the table's fixed columns, then two per phase, then idle_s; every
 * top-level and row key of the JSON is the table's; both give the same rows. */
START_TEST(sweep_formats_are_the_tables)
{
    struct tu_run r;
    tu_ratiolab(&r, "sweep --ratios 0,0.5 --csv --out s.csv");
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "sweep --ratios 0,0.5 --json --out s.json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    char *text = tu_read(tu_path("s.csv"), NULL), *rows;
    char *f[96];
    int n = header_of(text, f, 96, &rows);
    ck_assert_int_gt(n, TRACE_SWEEP_N + 1);
    ck_assert_int_eq((n - TRACE_SWEEP_N - 1) % 2, 0);
    for (int k = 0; k < TRACE_SWEEP_N; k++)
        ck_assert_str_eq(f[k], trace_sweep_cols[k]);
    ck_assert_str_eq(f[TRACE_SWEEP_N], "forward_busy_s");   /* the first phase, then its exposed time */
    ck_assert_str_eq(f[TRACE_SWEEP_N + 1], "forward_exposed_s");
    ck_assert_str_eq(f[n - 1], TRACE_SWEEP_IDLE);
    ck_assert_ptr_nonnull(strstr(text, "\n# model: "));     /* the comments' keys, as the JSON's */
    ck_assert_ptr_nonnull(strstr(text, "\n# deepspeed_version: "));
    free(text);
    json_t *j = json_load_file(tu_path("s.json"), 0, NULL);
    ck_assert_ptr_nonnull(j);
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        bool known = strcmp(key, "schema_version") == 0;
        for (int k = 0; k < TRACE_SWEEP_K_REQUESTED && !known; k++)
            known = strcmp(key, trace_sweep_keys[k]) == 0;
        ck_assert_msg(known, "sweep --json: top-level key '%s' is not in the table", key);
    }
    for (int k = 0; k < TRACE_SWEEP_K_REQUESTED; k++)
        ck_assert_msg(json_object_get(j, trace_sweep_keys[k]), "sweep --json: no '%s'", trace_sweep_keys[k]);
    json_t *row = json_array_get(json_object_get(j, "rows"), 1);
    ck_assert_int_eq((int)json_object_size(row), TRACE_SWEEP_K_SEQ_LEN - TRACE_SWEEP_K_REQUESTED);
    for (int k = TRACE_SWEEP_K_REQUESTED; k < TRACE_SWEEP_K_SEQ_LEN; k++)
        ck_assert_msg(json_object_get(row, trace_sweep_keys[k]), "sweep --json: a row without '%s'", trace_sweep_keys[k]);
    ck_assert_double_eq(json_number_value(json_object_get(row, RL_KEY_REQUESTED_RATIO)), 0.5);
    json_decref(j);
    struct plot__sweep sc, sj;
    struct rl_err e = {0};
    ck_assert_msg(plot__sweep_read(tu_path("s.csv"), &sc, &e) == 0, "%s", e.msg);
    ck_assert_msg(plot__sweep_read(tu_path("s.json"), &sj, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(sc.n_rows, 2);
    ck_assert_int_eq(sj.n_rows, 2);
    ck_assert_str_eq(sc.policy, sj.policy);
    ck_assert_str_eq(sc.schedule, sj.schedule);
    ck_assert_str_eq(sc.ds_version, sj.ds_version);
    ck_assert_str_eq(sc.offload, sj.offload);
    for (int i = 0; i < 2; i++) {
        ck_assert_double_eq(sc.rows[i].requested, sj.rows[i].requested);
        ck_assert_double_eq_tol(sc.rows[i].honored, sj.rows[i].honored, 1e-6);   /* the CSV: 6 decimals */
        ck_assert_int_eq(sc.rows[i].gpu_bytes, sj.rows[i].gpu_bytes);
        ck_assert_int_eq(sc.rows[i].host_node_bytes, sj.rows[i].host_node_bytes);
        ck_assert_int_le(llabs(sc.rows[i].step_ns - sj.rows[i].step_ns), 500);   /* the CSV: step_s to 1 us */
        ck_assert_int_eq(sc.rows[i].fits_gpu, sj.rows[i].fits_gpu);
    }
    plot__sweep_free(&sc);
    plot__sweep_free(&sj);
}
END_TEST

/* Checks every key of o against the table's rows of `object` ('t', 'c', 'k', 'f'): each is a row,
 * and (all) every row is there. */
static void tune_keys(json_t *o, char object, bool all, const char *what)
{
    ck_assert_msg(json_is_object(o), "tune --json: %s is not an object", what);
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        bool known = object == 't' && strcmp(key, "schema_version") == 0;
        for (int k = 0; k < TRACE_TUNE_N && !known; k++)
            known = trace_tune_key_object((enum trace_tune_key)k) == object && strcmp(key, trace_tune_keys[k]) == 0;
        ck_assert_msg(known, "tune --json: %s: key '%s' is not in the table", what, key);
    }
    for (int k = 0; all && k < TRACE_TUNE_N; k++)
        if (trace_tune_key_object((enum trace_tune_key)k) == object && k != TRACE_TUNE_PROFILES)
            ck_assert_msg(json_object_get(o, trace_tune_keys[k]), "tune --json: %s: no '%s'", what, trace_tune_keys[k]);
}

/* tune --json's keys are its table's, at every level: an answer found (its choices), nothing
 * found (each class's fits_with), and two profiles side by side ("profiles"). */
START_TEST(tune_json_is_the_table)
{
    json_t *t = tu_ratiolab_json("tune --gpu-mem 4GiB --ratios 0:1:0.5 --micro-batches 1 --json");
    tune_keys(t, 't', true, "top level");
    tune_keys(json_object_get(t, "answer"), 'c', true, "answer");
    tune_keys(json_object_get(t, "best_with_offload"), 'c', true, "best_with_offload");
    json_t *cls = json_object_get(t, "classes");
    ck_assert_int_eq((int)json_array_size(cls), 3);
    for (size_t i = 0; i < 3; i++)
        tune_keys(json_array_get(cls, i), 'k', true, "a class");
    json_decref(t);
    struct tu_run r;   /* nothing fits: exit 1, the JSON still printed */
    tu_ratiolab(&r, "tune --gpu-mem 1GiB --ratios 0:1:0.5 --micro-batches 1 --json");
    ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
    t = json_loads(r.out, 0, NULL);
    tu_run_free(&r);
    ck_assert_ptr_nonnull(t);
    ck_assert(json_is_null(json_object_get(t, "answer")));
    cls = json_object_get(t, "classes");
    for (size_t i = 0; i < json_array_size(cls); i++)
        tune_keys(json_object_get(json_array_get(cls, i), "fits_with"), 'f', true, "fits_with");
    json_decref(t);
    t = tu_ratiolab_json("tune --hw dgx1-v100,dgx-h100 --ratios 0:1:0.5 --micro-batches 1 --json");
    ck_assert_int_eq((int)json_object_size(t), 2);   /* schema_version and profiles */
    json_t *pr = json_object_get(t, trace_tune_keys[TRACE_TUNE_PROFILES]);
    ck_assert_int_eq((int)json_array_size(pr), 2);
    tune_keys(json_array_get(pr, 1), 't', true, "profiles[1]");
    json_decref(t);
}
END_TEST

/* The CSV helpers: quoting on the way out, undone on the way in; a field too many or a quote not
 * closed is refused. */
START_TEST(csv_split_undoes_the_quoting)
{
    const char *cells[4] = {"a", "b,c", "say \"hi\"", NULL};
    const char *path = tu_path("q.csv");
    FILE *fp = fopen(path, "w");
    trace_csv_row(fp, cells, 4);
    fclose(fp);
    char *text = tu_read(path, NULL);
    ck_assert_str_eq(text, "a,\"b,c\",\"say \"\"hi\"\"\",\n");
    text[strcspn(text, "\n")] = 0;
    char *f[4];
    ck_assert_int_eq(trace_csv_split(text, f, 4), 4);
    ck_assert_str_eq(f[1], "b,c");
    ck_assert_str_eq(f[2], "say \"hi\"");
    ck_assert_str_eq(f[3], "");
    free(text);
    char two[] = "a,b,c", open_quote[] = "a,\"b";
    ck_assert_int_eq(trace_csv_split(two, f, 2), -1);
    ck_assert_int_eq(trace_csv_split(open_quote, f, 4), -1);
}
END_TEST

Suite *schema_suite(void)
{
    Suite *s = suite_create("schema");
    TCase *c = tcase_create("schema");
    tcase_add_test(c, monitor_csv_is_written_through_the_table);
    tcase_add_test(c, monitor_readers_find_columns_by_name);
    tcase_add_test(c, sweep_formats_are_the_tables);
    tcase_add_test(c, tune_json_is_the_table);
    tcase_add_test(c, csv_split_undoes_the_quoting);
    suite_add_tcase(s, c);
    return s;
}
