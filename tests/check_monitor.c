/* tests/check_monitor.c — `ratiolab monitor` and monitor/: peaks against known allocations,
 * descendants, the trace read back with the project's reader, vanished PIDs, Ctrl-C, --mark,
 * bad input, the NVML path (skipped without a GPU), and monitor/session.c in process (output
 * passed through and marked, the command's status, a stop by signal, refused starts).
 *
 * Tolerance for every memory comparison: 4 MiB + 5 % of the expected amount. It covers page
 * granularity, the per-CPU batching of the kernel's RSS counters, libc and loader pages, and
 * the memory the sanitizer runtime adds. Expected amounts are differences from a baseline read
 * just before the phase began (the last sample before the "PHASE x begin" mark), so the
 * program's own start-up memory does not count. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/rl.h"
#include "monitor/monitor.h"
#include "monitor/session.h"
#include "tests/util.h"
#include "traces/trace.h"

#define MIB (1024LL * 1024LL)
#define TOL(expected) (4 * MIB + (expected) / 20)

static const char *memhog(void)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/tests/progs/memhog", tu_build());
    return p;
}

/* `ratiolab monitor --csv <csv> <args>` with the CSV written through a FIFO (in place, as the
 * monitor writes to a FIFO) and copied into <csv> as it comes, and MEMHOG_CSV naming that copy:
 * memhog then holds each phase until the monitor has sampled it (tests/progs/memhog.c), a
 * condition with a deadline instead of a hold long enough for a quiet machine. */
static void monitor_live(struct tu_run *r, const char *csv, const char *args)
{
    tu_sh(r, "mkfifo 'live.%s' && { timeout 300 cat 'live.%s' > '%s' & } && MEMHOG_CSV=\"$PWD/%s\" '%s' monitor "
             "--csv 'live.%s' %s; rc=$?; wait; rm -f 'live.%s'; exit $rc",
          csv, csv, csv, csv, tu_bin(), csv, args, csv);
}

/* The PID memhog printed first ("PID 123"). */
static int printed_pid(const char *out)
{
    const char *p = strstr(out, "PID ");
    ck_assert_msg(p != NULL, "no PID line in output: %s", out);
    return atoi(p + 4);
}

/* Time of the instant event named exactly `name` (a --mark line), or -1. */
static int64_t mark_ns(const struct trace_doc *d, const char *name)
{
    for (int i = 0; i < d->n_events; i++)
        if (d->events[i].ph == 'i' && strcmp(d->events[i].name, name) == 0)
            return d->events[i].ts_ns;
    return -1;
}

/* Value of a counter series of pid at time t: the last event at or before t (counters are step
 * functions and the monitor writes a value only when it changed). 0 when none. */
static double value_at(const struct trace_doc *d, int pid, const char *series, int64_t t)
{
    double v = 0;
    for (int i = 0; i < d->n_events; i++) {
        const struct trace_event *ev = &d->events[i];
        if (ev->ph == 'C' && ev->pid == pid && ev->series && strcmp(ev->series, series) == 0 &&
            ev->ts_ns <= t)
            v = ev->value;
    }
    return v;
}

/* Largest value of a series of pid over [t0, t1]. */
static double max_in(const struct trace_doc *d, int pid, const char *series, int64_t t0, int64_t t1)
{
    double v = value_at(d, pid, series, t0);
    for (int i = 0; i < d->n_events; i++) {
        const struct trace_event *ev = &d->events[i];
        if (ev->ph == 'C' && ev->pid == pid && ev->series && strcmp(ev->series, series) == 0 &&
            ev->ts_ns >= t0 && ev->ts_ns <= t1 && ev->value > v)
            v = ev->value;
    }
    return v;
}

/* Checks that during phase `phase` the series grew by `expected` bytes over its baseline. */
static void check_phase(const struct trace_doc *d, int pid, const char *phase, const char *series,
                        long long expected)
{
    char b[64], en[64];
    snprintf(b, sizeof b, "PHASE %s begin", phase);
    snprintf(en, sizeof en, "PHASE %s end", phase);
    int64_t t0 = mark_ns(d, b), t1 = mark_ns(d, en);
    ck_assert_msg(t0 >= 0 && t1 > t0, "phase %s: marks missing", phase);
    /* Baseline: the smallest value between the previous phase's end mark and this one's begin
     * mark. memhog frees after "end" and waits GAP_MS (100 ms, five intervals) before the next
     * allocation, so that window holds samples of the freed state even when the monitor reads
     * the "end" line a little late (a mark is timed when the line is read). */
    char prev[64] = "start";
    int64_t tb = 0;
    for (int i = 0; i < d->n_events; i++) {
        const struct trace_event *ev = &d->events[i];
        if (ev->ph == 'i' && strncmp(ev->name, "PHASE ", 6) == 0 && strstr(ev->name, " end") &&
            ev->ts_ns < t0 && ev->ts_ns >= tb) {
            tb = ev->ts_ns;
            snprintf(prev, sizeof prev, "%s", ev->name);
        }
    }
    ck_assert_msg(tb > 0, "phase %s: no phase ended before it (start with idle)", phase);
    /* Counters are written only when they change: start from the value in effect at tb. */
    double base = value_at(d, pid, series, tb);
    bool any = true;
    for (int i = 0; i < d->n_events; i++) {
        const struct trace_event *ev = &d->events[i];
        if (ev->ph == 'C' && ev->pid == pid && strcmp(ev->series, series) == 0 && ev->ts_ns >= tb &&
            ev->ts_ns < t0 && (!any || ev->value < base)) {
            base = ev->value;
            any = true;
        }
    }
    double peak = max_in(d, pid, series, t0, t1);
    double got = peak - base;
    fprintf(stderr, "monitor phase %-6s %-13s expected %6.1f MiB, got %6.1f MiB (baseline %.1f MiB since '%s')\n",
            phase, series, expected / (double)MIB, got / MIB, base / MIB, prev);
    ck_assert_msg(got >= (double)(expected - TOL(expected)) && got <= (double)(expected + TOL(expected)),
                  "phase %s: %s grew by %.0f bytes; expected %lld +- %lld", phase, series, got,
                  expected, TOL(expected));
}

static bool skipped(const char *out, const char *what)
{
    char key[32];
    snprintf(key, sizeof key, "SKIP %s:", what);
    const char *p = strstr(out, key);
    if (p) {
        const char *nl = strchr(p, '\n');
        fprintf(stderr, "monitor phase %s skipped: %.*s\n", what, nl ? (int)(nl - p) : (int)strlen(p), p);
    }
    return p != NULL;
}

/* Largest value of a CSV column for one pid (columns as in the header: 0 t_ns, 1 time_utc, 2 pid). */
static long long csv_max(const char *path, int pid, int column)
{
    char *text;
    ck_assert_int_eq(rl_read_file(path, &text, NULL, NULL), 0);
    long long best = -1;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *f[24];
        int n = 0;
        for (char *p = line; n < 24;) {
            f[n++] = p;
            p = strchr(p, ',');
            if (!p)
                break;
            *p++ = 0;
        }
        if (n < 19 || atoi(f[2]) != pid)
            continue;
        long long v = atoll(f[column]);
        if (v > best)
            best = v;
    }
    free(text);
    return best;
}

START_TEST(proc_reader_sees_own_memory)
{
    struct mon_proc_stat a, b;
    struct rl_err e = {0};
    ck_assert_int_eq(mon_read_proc(getpid(), &a, &e), 0);
    ck_assert_int_eq(a.pid, getpid());
    ck_assert_int_eq(a.ppid, getppid());
    ck_assert_int_gt(a.rss_bytes, 0);
    ck_assert_int_ge(a.threads, 1);
    const long long bytes = 48 * MIB;
    char *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(p != MAP_FAILED);
    for (long long i = 0; i < bytes; i += 4096)
        p[i] = 1;
    ck_assert_int_eq(mon_read_proc(getpid(), &b, &e), 0);
    long long grew = b.anon_bytes - a.anon_bytes;
    ck_assert_msg(grew >= bytes - TOL(bytes) && grew <= bytes + TOL(bytes), "anon grew %lld", grew);
    ck_assert_int_eq(b.rss_bytes, b.anon_bytes + b.file_bytes + b.shmem_bytes);
    ck_assert_int_ge(b.hwm_bytes, b.rss_bytes);
    munmap(p, (size_t)bytes);
    ck_assert_int_eq(mon_read_proc(999999999, &b, &e), RL_ENOENT);
    struct mon_sys_stat s;
    ck_assert_int_eq(mon_read_meminfo(&s, &e), 0);
    ck_assert_int_gt(s.total_bytes, 0);
    ck_assert_int_gt(s.used_bytes, 0);
    ck_assert_int_eq(s.used_bytes, s.total_bytes - s.available_bytes);
}
END_TEST

START_TEST(phase_peaks_match_allocations)
{
    struct tu_run r;
    /* The file phase needs a disk-backed folder: on tmpfs the pages would count as shmem. */
    struct statfs sf;
    bool file_ok = statfs(tu_tmpdir(), &sf) == 0 && sf.f_type != 0x01021994 /* TMPFS_MAGIC */;
    char args[1024];
    snprintf(args, sizeof args, "--interval 20ms --no-gpu --mark '^PHASE' --out p.json.gz "
             "-- '%s' idle:150 anon:64:250 %s shmem:32:250 lock:16:250 pin:8:250",
             memhog(), file_ok ? "file:48:250:." : "");
    monitor_live(&r, "p.csv", args);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    int pid = printed_pid(r.out);
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(tu_path("p.json.gz"), &d, &e) == 0, "%s", e.msg);
    check_phase(&d, pid, "anon", "anon_bytes", 64 * MIB);
    if (file_ok)
        check_phase(&d, pid, "file", "file_bytes", 48 * MIB);
    else
        fprintf(stderr, "monitor phase file skipped: %s is tmpfs\n", tu_tmpdir());
    check_phase(&d, pid, "shmem", "shmem_bytes", 32 * MIB);
    if (!skipped(r.out, "lock")) {
        check_phase(&d, pid, "lock", "locked_bytes", 16 * MIB);
        check_phase(&d, pid, "lock", "anon_bytes", 16 * MIB);
    }
    if (!skipped(r.out, "pin"))
        check_phase(&d, pid, "pin", "pinned_bytes", 8 * MIB);
    /* RSS is the sum of its parts in every sample the trace holds. */
    check_phase(&d, pid, "anon", "rss_bytes", 64 * MIB);
    /* CSV and trace agree on the peak (same samples), and the summary names the process. */
    double trace_peak = max_in(&d, pid, "anon_bytes", 0, INT64_MAX);
    ck_assert(csv_max(tu_path("p.csv"), pid, 7) == (long long)trace_peak);
    char row[32];
    snprintf(row, sizeof row, "%8d ", pid);
    ck_assert_ptr_nonnull(strstr(r.err, row));
    ck_assert_ptr_nonnull(strstr(r.err, "(peak of sum)"));
    ck_assert_ptr_nonnull(strstr(r.err, "MemTotal - MemAvailable"));
    /* --no-gpu: GPU figures are unknown, never 0: the numeric column is empty and the status
     * column says why; no word in a numeric column. */
    ck_assert_ptr_nonnull(strstr(r.err, "unavail"));
    ck_assert(csv_max(tu_path("p.csv"), pid, 14) == 0);   /* atoll("") */
    ck_assert(csv_max(tu_path("p.csv"), pid, 5) == -1);   /* no RANK in its environment */
    char *csv;
    ck_assert_int_eq(rl_read_file(tu_path("p.csv"), &csv, NULL, NULL), 0);
    ck_assert_ptr_null(strstr(csv, "unavailable"));
    ck_assert_ptr_nonnull(strstr(csv, ",,"));
    ck_assert_ptr_nonnull(strstr(csv, ",gpu_bytes: disabled by --no-gpu\n"));
    /* time_utc: ISO 8601 UTC with milliseconds, within a minute of now (the run took < 1 s). */
    const char *row1 = strstr(csv, "\nt_ns,");   /* the column header, after the comment lines */
    ck_assert_ptr_nonnull(row1);
    row1 = strchr(row1 + 1, '\n') + 1;
    while (*row1 == '#')   /* the command's "# followed: pid" line */
        row1 = strchr(row1, '\n') + 1;
    struct tm tm = {0};
    int ms = -1;
    char z = 0;
    ck_assert_msg(sscanf(strchr(row1, ',') + 1, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &tm.tm_year, &tm.tm_mon,
                         &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms, &z) == 8 && z == 'Z',
                  "time_utc of '%.60s'", row1);
    ck_assert(strchr(row1, ',')[25] == ',');   /* exactly YYYY-MM-DDTHH:MM:SS.mmmZ */
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    ck_assert_int_lt(llabs((long long)(timegm(&tm) - time(NULL))), 60);
    free(csv);
    for (int i = 0; i < d.n_events; i++)
        ck_assert(!(d.events[i].ph == 'C' && strcmp(d.events[i].series, "gpu_bytes") == 0));
    ck_assert_int_ge(mark_ns(&d, "gpu memory unavailable"), 0);
    trace_doc_free(&d);
    tu_run_free(&r);
}
END_TEST

START_TEST(descendants_are_found)
{
    struct tu_run r;
    char args[1024];
    snprintf(args, sizeof args, "--interval 20ms --no-gpu --mark '^PHASE' --out t.json "
             "-- env RANK=5 '%s' idle:100 tree:2:16:100", memhog());
    monitor_live(&r, "t.csv", args);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    int root = printed_pid(r.out);
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(tu_path("t.json"), &d, &e) == 0, "%s", e.msg);
    /* Process tracks: the root, two children, two grandchildren. */
    int pids[16], n = 0;
    for (int i = 0; i < d.n_events && n < 16; i++)
        if (d.events[i].ph == 'M' && strcmp(d.events[i].name, "process_name") == 0 &&
            d.events[i].pid != MON_TREE_PID && d.events[i].pid != root)
            pids[n++] = d.events[i].pid;
    ck_assert_int_eq(n, 4);
    int64_t t0 = mark_ns(&d, "PHASE tree begin"), t1 = mark_ns(&d, "PHASE tree end");
    ck_assert(t0 >= 0 && t1 > t0);
    int grandchildren = 0;
    for (int k = 0; k < n; k++) {
        double peak = max_in(&d, pids[k], "anon_bytes", t0, t1);
        ck_assert_msg(peak >= 16 * MIB - TOL(16 * MIB) && peak <= 16 * MIB + TOL(16 * MIB) + 2 * MIB,
                      "pid %d anon peak %.0f", pids[k], peak);
        long long ppid = csv_max(tu_path("t.csv"), pids[k], 3);
        if (ppid != root) {
            grandchildren++;
            bool parent_followed = false;
            for (int j = 0; j < n; j++)
                parent_followed |= pids[j] == ppid;
            ck_assert(parent_followed);
        }
    }
    ck_assert_int_eq(grandchildren, 2);
    /* The rank from the environment names the tracks and fills the CSV column (inherited). */
    char want[64];
    snprintf(want, sizeof want, "memhog (%d) rank 5", root);
    bool named = false;
    for (int i = 0; i < d.n_events; i++)
        if (d.events[i].ph == 'M' && d.events[i].pid == root && d.events[i].args_json &&
            strstr(d.events[i].args_json, want))
            named = true;
    ck_assert_msg(named, "no track named '%s'", want);
    ck_assert_int_eq(csv_max(tu_path("t.csv"), pids[0], 5), 5);
    ck_assert_ptr_nonnull(strstr(r.err, "memhog[r5]"));
    /* Tree total: the peak of the per-sample sum includes the four 16 MiB processes at once. */
    double tree = max_in(&d, MON_TREE_PID, "anon_bytes", t0, t1);
    ck_assert_msg(tree >= 4 * 16 * MIB - TOL(4 * 16 * MIB), "tree anon %.0f", tree);
    /* Every process that ended has its tracks back at 0 and an "exited" instant. */
    for (int k = 0; k < n; k++)
        ck_assert(value_at(&d, pids[k], "anon_bytes", INT64_MAX) == 0);
    trace_doc_free(&d);
    tu_run_free(&r);
}
END_TEST

START_TEST(vanished_pids_are_handled)
{
    struct tu_run r;
    int before = tu_count_files();
    /* A PID that does not exist: exit 2, the option named, no file. */
    tu_ratiolab(&r, "monitor --pid 999999999 --out x.json --csv x.csv");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--pid"));
    ck_assert_ptr_nonnull(strstr(r.err, "999999999"));
    ck_assert_int_eq(tu_count_files(), before);
    tu_run_free(&r);
    /* Two processes, one gone early: both followed, the file complete, exit 0. */
    tu_sh(&r, "sleep 0.5 & a=$!; sleep 1 & b=$!; echo \"A $a B $b\"; "
                    "'%s' monitor --pid $a,$b --interval 20ms --no-gpu --out v.json --csv v.csv",
                tu_bin());
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    int a = 0, b = 0;
    ck_assert_int_eq(sscanf(strstr(r.out, "A "), "A %d B %d", &a, &b), 2);
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(tu_path("v.json"), &d, &e) == 0, "%s", e.msg);
    int64_t exit_a = -1, exit_b = -1;
    for (int i = 0; i < d.n_events; i++) {
        if (d.events[i].ph == 'i' && strcmp(d.events[i].name, "exited") == 0) {
            if (d.events[i].pid == a)
                exit_a = d.events[i].ts_ns;
            if (d.events[i].pid == b)
                exit_b = d.events[i].ts_ns;
        }
    }
    ck_assert(exit_a > 0 && exit_b > exit_a);
    ck_assert_int_ge(mark_ns(&d, "monitor end"), exit_b);
    trace_doc_free(&d);
    tu_run_free(&r);
}
END_TEST

START_TEST(ctrl_c_still_writes_a_complete_file)
{
    struct tu_run r;
    /* SIGINT sent to the monitor alone: it stops sampling, writes the files, forwards the signal
     * to the command (memhog dies of it long before its 5 s phase ends) and exits 130. The signal
     * is sent once the command has started (it creates `started`), so the monitor's handlers are
     * in place whatever the machine's load; a fixed wait would race them. */
    tu_ratiolab(&r, "monitor --interval 20ms --no-gpu --out c.json.gz --csv c.csv -- "
                    "sh -c ': > started; exec \"$0\" anon:16:5000' '%s' & p=$!; " TU_WAIT_FOR("-e started")
                    "sleep 0.1; kill -INT $p; wait $p; echo \"rc=$?\"", memhog());
    ck_assert_msg(strstr(r.out, "rc=130") != NULL, "%s / %s", r.out, r.err);
    ck_assert_ptr_null(strstr(r.out, "PHASE anon end"));
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(tu_path("c.json.gz"), &d, &e) == 0, "%s", e.msg);
    int64_t end = mark_ns(&d, "monitor end");
    ck_assert(end > 0 && end < 3000000000LL);
    int samples = 0;
    for (int i = 0; i < d.n_events; i++)
        samples += d.events[i].ph == 'C';
    ck_assert_int_gt(samples, 0);   /* 0.1 s after the command started, at a 20 ms interval */
    trace_doc_free(&d);
    char *csv;
    ck_assert_int_eq(rl_read_file(tu_path("c.csv"), &csv, NULL, NULL), 0);
    /* A comment header (the version, then the followed pid), then the columns. */
    struct tu_run v;
    tu_ratiolab(&v, "--version");   /* "ratiolab X.Y.Z" */
    char head[160];
    snprintf(head, sizeof head, "# %.*s monitor\nt_ns,time_utc,pid,", (int)strcspn(v.out, "\n"), v.out);
    tu_run_free(&v);
    ck_assert_msg(strncmp(csv, head, strlen(head)) == 0 && csv[strlen(csv) - 1] == '\n', "%.200s", csv);
    ck_assert_ptr_nonnull(strstr(csv, "\n# followed: pid "));
    free(csv);
    tu_run_free(&r);
    /* SIGTERM with --pid: the files are written, the followed process is left alone. */
    /* The signal is sent once the monitor catches SIGTERM (bit 14 of /proc's SigCgt mask). */
    tu_sh(&r, "sleep 3 & s=$!; '%s' monitor --pid $s --interval 20ms --no-gpu "
                    "--out s.json & p=$!; " TU_WAIT_FOR("$(( 0x$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$p/status) & 0x4000 )) -ne 0")
                    "kill -TERM $p; wait $p; echo \"rc=$?\"; "
                    "kill -0 $s && echo alive; kill $s", tu_bin());
    ck_assert_msg(strstr(r.out, "rc=143") != NULL, "%s / %s", r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "alive"));
    ck_assert_msg(trace_read(tu_path("s.json"), &d, &e) == 0, "%s", e.msg);
    ck_assert_int_ge(mark_ns(&d, "monitor end"), 0);
    trace_doc_free(&d);
    tu_run_free(&r);
}
END_TEST

START_TEST(mark_passes_output_through)
{
    struct tu_run r;
    tu_ratiolab(&r, "monitor --quiet --interval 20ms --no-gpu --mark '^(out|err)[0-9]$' --out m.json -- "
                    "sh -c 'echo out1; echo err1 >&2; echo \"out 2\"; sleep 0.1; echo err2 >&2; "
                    "printf \"tail\\r\\nno-newline\"'");
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    ck_assert_str_eq(r.out, "out1\nout 2\ntail\r\nno-newline");
    ck_assert_str_eq(r.err, "err1\nerr2\n");
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(tu_path("m.json"), &d, &e) == 0, "%s", e.msg);
    ck_assert_int_ge(mark_ns(&d, "out1"), 0);
    ck_assert_int_ge(mark_ns(&d, "err1"), 0);
    ck_assert_int_gt(mark_ns(&d, "err2"), mark_ns(&d, "err1"));
    ck_assert_int_lt(mark_ns(&d, "out 2"), 0);
    ck_assert_int_lt(mark_ns(&d, "no-newline"), 0);
    for (int i = 0; i < d.n_events; i++)
        if (strcmp(d.events[i].name, "err1") == 0)
            ck_assert_str_eq(d.events[i].args_json, "{\"stream\":\"stderr\"}");
    trace_doc_free(&d);
    tu_run_free(&r);
    /* The command's exit status is ours. */
    tu_ratiolab(&r, "monitor --quiet --no-gpu -- sh -c 'exit 7'");
    ck_assert_int_eq(r.status, 7);
    tu_run_free(&r);
}
END_TEST

START_TEST(bad_input_exits_2_without_files)
{
    static const struct {
        const char *args;
        const char *names;
    } cases[] = {
        {"--interval 0 -- true", "--interval"},
        {"--interval 5h -- true", "--interval"},
        {"--interval abc -- true", "--interval"},
        {"--mark '(' --out b.json -- true", "--mark"},
        {"--mark x --pid 1", "--mark"},
        {"--out /nonexistent-dir/b.json -- true", "--out"},
        {"--csv /nonexistent-dir/b.csv --out b.json -- true", "--csv"},
        {"--pid abc", "--pid"},
        {"--pid 1 --out b.json -- true", "--pid"},
        {"--out b.json", "--pid"},
        {"--out b.json -- /nonexistent-command-xyz", "nonexistent-command-xyz"},
    };
    int before = tu_count_files();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tu_run r;
        tu_ratiolab(&r, "monitor --no-gpu %s", cases[i].args);
        ck_assert_msg(r.status == 2, "%s: status %d", cases[i].args, r.status);
        ck_assert_msg(strstr(r.err, cases[i].names) != NULL, "%s: %s", cases[i].args, r.err);
        ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "%s: not one line: %s",
                      cases[i].args, r.err);
        ck_assert_int_eq(tu_count_files(), before);
        tu_run_free(&r);
    }
    struct tu_run r;
    tu_ratiolab(&r, "monitor --help");
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--interval"));
    tu_run_free(&r);
}
END_TEST

/* Registered only when NVML finds a GPU (see monitor_suite), so a machine without one does not
 * count it as passed. */
START_TEST(nvml_gpu_memory_per_process)
{
    struct tu_run r;
    tu_ratiolab(&r, "monitor --interval 20ms --mark '^PHASE' --out g.json --csv g.csv -- "
                    "'%s/tests/progs/gpuhog' 512 256 600", tu_build());
    ck_assert_msg(r.status == 0, "status %d: %s %s", r.status, r.out, r.err);
    int pid = printed_pid(r.out);
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(tu_path("g.json"), &d, &e) == 0, "%s", e.msg);
    int64_t t0 = mark_ns(&d, "PHASE gpu begin"), t1 = mark_ns(&d, "PHASE gpu end");
    ck_assert(t0 >= 0 && t1 > t0);
    double dev = max_in(&d, MON_TREE_PID, "used_bytes", t0, t1);
    ck_assert(dev >= 512 * MIB);
    if (strstr(r.err, "per-process GPU memory unavailable")) {
        fprintf(stderr, "nvml_gpu_memory_per_process: per-process attribution unavailable here: %s", r.err);
    } else {
        /* 512 MiB allocated plus the CUDA context (a few hundred MiB): at least the allocation. */
        double gpu = max_in(&d, pid, "gpu_bytes", t0, t1);
        fprintf(stderr, "nvml: gpuhog 512 MiB cudaMalloc -> NVML per-process %.1f MiB; 256 MiB "
                        "cudaHostAlloc -> VmLck %.1f MiB, VmPin %.1f MiB, RssShmem %.1f MiB\n",
                gpu / MIB, max_in(&d, pid, "locked_bytes", t0, t1) / MIB,
                max_in(&d, pid, "pinned_bytes", t0, t1) / MIB, max_in(&d, pid, "shmem_bytes", t0, t1) / MIB);
        ck_assert_msg(gpu >= 512 * MIB && gpu <= 512 * MIB + 4096 * MIB, "gpu %.0f", gpu);
    }
    trace_doc_free(&d);
    tu_run_free(&r);
}
END_TEST

/* A stand-in for libnvidia-ml.so.1 with the NVML ABI the monitor uses: two GPUs with 1 and 2 GiB
 * used of 80 GiB, and on each the process $FAKE_NVML_PID using 100 MiB x (device index + 1). It
 * lets the NVML code path run on machines without a GPU. */
static const char fake_nvml_src[] =
    "#include <stdint.h>\n#include <stdlib.h>\n"
    "typedef struct { unsigned long long total, free, used; } mem_t;\n"
    "typedef struct { unsigned int pid; unsigned long long used; unsigned int gi, ci; } proc_t;\n"
    "int nvmlInit_v2(void) { return 0; }\n"
    "int nvmlShutdown(void) { return 0; }\n"
    "const char *nvmlErrorString(int r) { (void)r; return \"fake\"; }\n"
    "int nvmlDeviceGetCount_v2(unsigned *n) { *n = 2; return 0; }\n"
    "int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) { *d = (void *)(uintptr_t)(i + 1); return 0; }\n"
    "int nvmlDeviceGetMemoryInfo(void *d, mem_t *m) {\n"
    "    m->total = 80ULL << 30; m->used = (uintptr_t)d << 30; m->free = m->total - m->used; return 0; }\n"
    "int nvmlDeviceGetComputeRunningProcesses_v2(void *d, unsigned *n, proc_t *p) {\n"
    "    const char *e = getenv(\"FAKE_NVML_PID\");\n"
    "    if (!e) { *n = 0; return 0; }\n"
    "    if (*n < 1) { *n = 1; return 7; }\n"
    "    p[0].pid = (unsigned)atoi(e); p[0].used = ((uintptr_t)d * 100ULL) << 20;\n"
    "    p[0].gi = p[0].ci = 0xFFFFFFFFu; *n = 1; return 0; }\n";

START_TEST(nvml_path_with_a_stand_in_library)
{
    struct tu_run r;
    tu_write("fake_nvml.c", fake_nvml_src);
    tu_sh(&r, "cc -shared -fPIC -o fake_nvml.so fake_nvml.c");   /* cc was found by the suite */
    ck_assert_msg(r.status == 0, "cc could not build the stand-in NVML library: %s", r.err);
    tu_run_free(&r);
    /* The followed process is the one NVML lists: 100 + 200 MiB summed over both GPUs. */
    tu_sh(&r, "sleep 0.6 & s=$!; echo \"S $s\"; RATIOLAB_NVML_LIB=./fake_nvml.so FAKE_NVML_PID=$s "
              "'%s' monitor --pid $s --interval 20ms --out n.json --csv n.csv", tu_bin());
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    int pid = 0;
    ck_assert_int_eq(sscanf(strstr(r.out, "S "), "S %d", &pid), 1);
    ck_assert_int_eq(csv_max(tu_path("n.csv"), pid, 14), 300 * MIB);
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(tu_path("n.json"), &d, &e) == 0, "%s", e.msg);
    ck_assert(max_in(&d, pid, "gpu_bytes", 0, INT64_MAX) == 300.0 * MIB);
    ck_assert(max_in(&d, MON_TREE_PID, "gpu_bytes", 0, INT64_MAX) == 300.0 * MIB);
    bool gpu0 = false, gpu1 = false;
    for (int i = 0; i < d.n_events; i++) {
        const struct trace_event *ev = &d.events[i];
        if (ev->ph == 'C' && strcmp(ev->name, "gpu0 memory") == 0 && strcmp(ev->series, "used_bytes") == 0)
            gpu0 = ev->value == 1.0 * RL_GIB;
        if (ev->ph == 'C' && strcmp(ev->name, "gpu1 memory") == 0 && strcmp(ev->series, "used_bytes") == 0)
            gpu1 = ev->value == 2.0 * RL_GIB;
    }
    ck_assert(gpu0 && gpu1);
    ck_assert_ptr_nonnull(strstr(r.err, "gpu1: NVML used (all processes) peaked at 2.000 GiB"));
    ck_assert_ptr_null(strstr(r.err, "unavail"));
    trace_doc_free(&d);
    tu_run_free(&r);
    /* NVML lists a PID that does not exist here (another PID namespace): per-process figures are
     * unavailable, never 0; per-device figures remain. */
    tu_sh(&r, "sleep 0.3 & s=$!; RATIOLAB_NVML_LIB=./fake_nvml.so FAKE_NVML_PID=999999999 "
              "'%s' monitor --pid $s --interval 20ms --csv u.csv", tu_bin());
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "per-process GPU memory unavailable"));
    ck_assert_ptr_nonnull(strstr(r.err, "gpu0: NVML used"));
    char *csv;
    ck_assert_int_eq(rl_read_file(tu_path("u.csv"), &csv, NULL, NULL), 0);
    ck_assert_ptr_null(strstr(csv, ",unavailable,"));   /* never as a numeric cell */
    ck_assert_ptr_nonnull(strstr(csv, "gpu_bytes: "));   /* the status column says why */
    free(csv);
    tu_run_free(&r);
    /* A library that cannot be loaded: unavailable, with the reason. */
    tu_sh(&r, "sleep 0.1 & s=$!; RATIOLAB_NVML_LIB=./missing.so '%s' monitor --pid $s --interval 20ms", tu_bin());
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "RATIOLAB_NVML_LIB=./missing.so: cannot load"));
    tu_run_free(&r);
}
END_TEST

START_TEST(lingering_zombie_is_followed_once)
{
    /* A child whose own child has exited and is not reaped until the test lets it go: the zombie
     * is listed at every sample meanwhile and must count as one process, not one more per sample.
     * The child reports once its child is a zombie (waitid WNOWAIT) and exits when the test closes
     * the pipe, so no step depends on how fast this machine is. */
    int ready[2], go[2];
    ck_assert(pipe(ready) == 0 && pipe(go) == 0);
    pid_t a = fork();
    ck_assert_int_ge(a, 0);
    if (a == 0) {
        close(ready[0]);
        close(go[1]);
        pid_t b = fork();
        if (b == 0)
            _exit(0);
        siginfo_t si;
        while (waitid(P_PID, (id_t)b, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
            ;
        char ch = 1;
        if (write(ready[1], &ch, 1) != 1)
            _exit(1);
        while (read(go[0], &ch, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    char ch;
    ck_assert_int_eq(read(ready[0], &ch, 1), 1);
    close(ready[0]);
    struct mon *m;
    struct rl_err e = {0};
    int root = a;
    struct mon_config c = {&root, 1, 20000000, NULL, NULL, true, NULL};
    ck_assert_msg(mon_open(&m, &c, &e) == 0, "%s", e.msg);
    int samples = 0;
    for (; samples < 8; samples++) {
        int live = mon_sample(m, samples * 20000000LL, &e);
        ck_assert_msg(live >= 1, "sample %d: %d live (%s)", samples, live, e.msg);
    }
    close(go[1]);   /* the child exits now; sample until the monitor sees nothing live */
    for (int live = 1; live > 0; samples++) {
        ck_assert_msg(samples < 8 + 3000, "the child is still live after 3000 more samples");
        live = mon_sample(m, samples * 20000000LL, &e);
        ck_assert_int_ge(live, 0);
        if (live > 0)
            usleep(5000);
    }
    const struct mon_summary *s = mon_summary(m);
    ck_assert_int_le(s->n_procs, 2);
    ck_assert_int_eq(s->procs[0].pid, a);
    ck_assert_int_ge(s->procs[0].n_samples, 8);
    ck_assert_int_gt(s->procs[0].rss_bytes, 0);
    mon_free(m);
    waitpid(a, NULL, 0);
    /* refused roots and intervals name the field; cli/ puts --pid and --interval in its place */
    char want[128];
    snprintf(want, sizeof want, "pids: %d: no such process (or already exited)", a);
    ck_assert_int_eq(mon_open(&m, &c, &e), RL_ENOENT);
    ck_assert_str_eq(e.msg, want);
    c.interval_ns = 0;
    ck_assert_int_eq(mon_open(&m, &c, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "interval_ns: 0 ns; expected > 0");
}
END_TEST

/* A session over `sh -c script` with marks, the command's stdout and stderr passed through into
 * files of the scratch folder, and a trace. */
static struct mon_session *start_sh(const char *script, const char *regex, struct mon_signals *sig, int fds[2])
{
    static char *argv[4];
    argv[0] = "sh";
    argv[1] = "-c";
    argv[2] = (char *)script;
    argv[3] = NULL;
    fds[0] = open(tu_path("sess.out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    fds[1] = open(tu_path("sess.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert(fds[0] >= 0 && fds[1] >= 0);
    struct mon_session_config c = {
        .mon = {NULL, 0, 20000000, tu_path("sess.json"), NULL, true, NULL},
        .argv = argv, .mark_regex = regex, .out_fd = fds[0], .err_fd = fds[1],
    };
    struct mon_session *s;
    struct rl_err e = {0};
    ck_assert_msg(mon_session_start(&s, &c, sig, &e) == 0, "%s", e.msg);
    ck_assert_int_gt(sig->cmd_pid, 0);
    return s;
}

START_TEST(session_passes_output_through_and_marks)
{
    /* Two of the three complete lines match; the CR of a CRLF line is not part of it; the last,
     * unfinished line is a line too (matched at the end of the output), so three marks. The exit
     * status is the script's. */
    struct mon_signals sig = {0};
    int fds[2];
    struct mon_session *s = start_sh("printf 'keep1\\nskip\\n'; printf 'keep2\\r\\n' >&2; printf tail; exit 3",
                                     "^(keep[0-9]|tail)$", &sig, fds);
    struct rl_err e = {0};
    ck_assert_msg(mon_session_sample(s, &e) == 0, "%s", e.msg);
    ck_assert_msg(mon_session_close(s, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(mon_session_summary(s)->n_marks, 3);
    mon_session_wait_command(s);
    const struct mon_session_end *end = mon_session_end(s);
    ck_assert_int_eq(end->stop_sig, 0);
    ck_assert(end->cmd_reaped && WIFEXITED(end->cmd_wait_status));
    ck_assert_int_eq(WEXITSTATUS(end->cmd_wait_status), 3);
    mon_session_free(s);
    close(fds[0]);
    close(fds[1]);
    char *out = tu_slurp("sess.out"), *err = tu_slurp("sess.err");
    ck_assert_str_eq(out, "keep1\nskip\ntail");
    ck_assert_str_eq(err, "keep2\r\n");
    free(out);
    free(err);
    struct trace_doc d;
    ck_assert_msg(trace_read(tu_path("sess.json"), &d, &e) == 0, "%s", e.msg);
    ck_assert_int_ge(mark_ns(&d, "keep1"), 0);
    ck_assert_int_ge(mark_ns(&d, "keep2"), 0);
    ck_assert_int_lt(mark_ns(&d, "skip"), 0);
    ck_assert_int_ge(mark_ns(&d, "tail"), 0);
    ck_assert_int_ge(mark_ns(&d, "monitor end"), 0);
    trace_doc_free(&d);
}
END_TEST

START_TEST(session_stopped_by_a_signal_waits_for_the_command)
{
    /* A signal recorded before sampling: no sample, complete files, and the command (held on a
     * FIFO until the files are written) is then waited for, its output passed through but no
     * longer marked. A second signal stops the waiting: the command is left running. */
    ck_assert_int_eq(mkfifo(tu_path("sess.go"), 0600), 0);
    char script[512];
    snprintf(script, sizeof script, "read x < '%s'; echo late; exit 5", tu_path("sess.go"));
    struct mon_signals sig = {.stop_sig = SIGTERM, .n_sig = 1};
    int fds[2];
    struct mon_session *s = start_sh(script, "late", &sig, fds);
    struct rl_err e = {0};
    ck_assert_msg(mon_session_sample(s, &e) == 0, "%s", e.msg);
    ck_assert_msg(mon_session_close(s, &e) == 0, "%s", e.msg);
    ck_assert(tu_exists(tu_path("sess.json")));
    ck_assert_int_eq(mon_session_summary(s)->n_samples, 0);
    int go = open(tu_path("sess.go"), O_WRONLY);   /* the command has it open for reading */
    ck_assert(go >= 0 && write(go, "go\n", 3) == 3);
    close(go);
    mon_session_wait_command(s);
    const struct mon_session_end *end = mon_session_end(s);
    ck_assert_int_eq(end->stop_sig, SIGTERM);
    ck_assert(end->cmd_reaped && WIFEXITED(end->cmd_wait_status));
    ck_assert_int_eq(WEXITSTATUS(end->cmd_wait_status), 5);
    ck_assert_int_eq(mon_session_summary(s)->n_marks, 0);
    mon_session_free(s);
    close(fds[0]);
    close(fds[1]);
    char *out = tu_slurp("sess.out");
    ck_assert_str_eq(out, "late\n");
    free(out);
    /* The second signal: waiting stops at once, the command still holds on the FIFO. */
    struct mon_signals sig2 = {.stop_sig = SIGINT, .n_sig = 2};
    s = start_sh(script, NULL, &sig2, fds);
    ck_assert_int_eq(mon_session_sample(s, &e), 0);
    ck_assert_int_eq(mon_session_close(s, &e), 0);
    mon_session_wait_command(s);
    ck_assert(!mon_session_end(s)->cmd_reaped);
    ck_assert_int_eq(mon_session_end(s)->stop_sig, SIGINT);
    mon_session_free(s);
    ck_assert_int_eq(kill(sig2.cmd_pid, SIGKILL), 0);
    int wst;
    ck_assert_int_eq(waitpid(sig2.cmd_pid, &wst, 0), sig2.cmd_pid);
    ck_assert(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
    close(fds[0]);
    close(fds[1]);
}
END_TEST

START_TEST(session_refused_starts_leave_nothing)
{
    /* A command that cannot run and a regex that does not compile: RL_EINVAL naming what, no
     * session, no output file. */
    int before = tu_count_files();
    char *argv[] = {"/nonexistent-command-xyz", NULL};
    struct mon_session_config c = {
        .mon = {NULL, 0, 20000000, tu_path("refused.json"), tu_path("refused.csv"), true, NULL},
        .argv = argv, .out_fd = 1, .err_fd = 2,
    };
    struct mon_signals sig = {0};
    struct mon_session *s = (struct mon_session *)&sig;   /* must be reset */
    struct rl_err e = {0};
    ck_assert_int_eq(mon_session_start(&s, &c, &sig, &e), RL_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(e.msg, "command: cannot run '/nonexistent-command-xyz' (No such file or directory)");
    ck_assert_int_eq(sig.cmd_pid, 0);
    c.mark_regex = "(";
    ck_assert_int_eq(mon_session_start(&s, &c, &sig, &e), RL_EINVAL);
    ck_assert_ptr_null(s);
    ck_assert_msg(strncmp(e.msg, "mark_regex: '(' is not a POSIX extended regular expression (", 60) == 0, "%s", e.msg);
    ck_assert_int_eq(tu_count_files(), before);
}
END_TEST

Suite *monitor_suite(void)
{
    Suite *s = suite_create("monitor");
    TCase *tc = tcase_create("monitor");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, proc_reader_sees_own_memory);
    tcase_add_test(tc, lingering_zombie_is_followed_once);
    tcase_add_test(tc, phase_peaks_match_allocations);
    tcase_add_test(tc, descendants_are_found);
    tcase_add_test(tc, vanished_pids_are_handled);
    tcase_add_test(tc, ctrl_c_still_writes_a_complete_file);
    tcase_add_test(tc, mark_passes_output_through);
    tcase_add_test(tc, bad_input_exits_2_without_files);
    tcase_add_test(tc, session_passes_output_through_and_marks);
    tcase_add_test(tc, session_stopped_by_a_signal_waits_for_the_command);
    tcase_add_test(tc, session_refused_starts_leave_nothing);
    struct mon_gpu *g;
    struct rl_err why = {0};
    if (mon_gpu_open(&g, &why) == 0) {
        mon_gpu_close(g);
        tcase_add_test(tc, nvml_gpu_memory_per_process);
    } else {
        char msg[320];
        snprintf(msg, sizeof msg, "no GPU (%s)", why.msg);
        tu_skip("monitor: nvml_gpu_memory_per_process", msg);
    }
    if (tu_have_program("cc"))
        tcase_add_test(tc, nvml_path_with_a_stand_in_library);
    else
        tu_skip("monitor: nvml_path_with_a_stand_in_library", "no C compiler (cc not on PATH)");
    suite_add_tcase(s, tc);
    return s;
}
