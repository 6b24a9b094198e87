/* tests/check_monitor_proc.c — the /proc readers against the kernel's other views of the same
 * counters: RSS exactly equal to /proc/self/statm's resident pages x page size, CPU time
 * (utime + stime) equal to times(2), MemTotal equal to sysinfo(2), and a command name with
 * ") (" in it. Each comparison retries until the process was quiet between the two reads. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sysinfo.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <unistd.h>

#include "monitor/monitor.h"
#include "tests/util.h"

/* Resident pages from /proc/self/statm (second field). */
static long statm_resident(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    long size = 0, res = -1;
    ck_assert_int_eq(fscanf(f, "%ld %ld", &size, &res), 2);
    fclose(f);
    return res;
}

START_TEST(rss_equals_statm_exactly)
{
    /* 48 MiB touched and unmapped again: the high-water mark stays above the current RSS, so
     * reading the wrong key shows. kB in /proc/<pid>/status are KiB. */
    const size_t big = (size_t)48 << 20;
    char *p = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(p != MAP_FAILED);
    memset(p, 1, big);
    munmap(p, big);
    const long page = sysconf(_SC_PAGESIZE);
    struct mon_proc_stat s;
    struct rl_err e = {0};
    int tries = 0;
    for (; tries < 200; tries++) {
        long before = statm_resident();
        ck_assert_msg(mon_read_proc(getpid(), &s, &e) == 0, "%s", e.msg);
        if (statm_resident() == before) {
            ck_assert_msg(s.rss_bytes == (int64_t)before * page, "VmRSS %lld bytes, statm %ld pages of %ld",
                          (long long)s.rss_bytes, before, page);
            break;
        }
    }
    ck_assert_msg(tries < 200, "RSS never stable across two statm reads");
    ck_assert_int_eq(s.anon_bytes + s.file_bytes + s.shmem_bytes, s.rss_bytes);
    ck_assert_int_ge(s.hwm_bytes, s.rss_bytes + (int64_t)big - (int64_t)(4 << 20));
    ck_assert_int_eq(s.rss_bytes % 1024, 0);
    ck_assert_int_eq(s.pid, getpid());
    ck_assert_int_eq(s.ppid, getppid());
}
END_TEST

START_TEST(cpu_ticks_equal_times)
{
    /* Burn user time and system time (syscalls), then compare utime + stime with times(2), which
     * reports the same thread-group counters in the same clock ticks. */
    volatile double x = 0;
    struct tms a, b;
    const long hz = sysconf(_SC_CLK_TCK);
    char buf[4096];
    clock_t t0 = times(&a);
    /* Until both counters moved by a few ticks (at most 20 s of wall time on a loaded machine). */
    while ((a.tms_utime < 3 || a.tms_stime < 3) && times(&a) - t0 < 20 * hz) {
        for (int i = 0; i < 200000; i++)
            x += i * 0.5;
        for (int i = 0; i < 50; i++) {
            FILE *f = fopen("/proc/self/stat", "r");
            if (f) {
                (void)!fread(buf, 1, sizeof buf, f);
                fclose(f);
            }
        }
    }
    (void)x;   /* the burn's sum is never read: volatile keeps the loop, this keeps clang quiet */
    struct mon_proc_stat s;
    struct rl_err e = {0};
    int tries = 0;
    for (; tries < 200; tries++) {
        times(&a);
        ck_assert_msg(mon_read_proc(getpid(), &s, &e) == 0, "%s", e.msg);
        times(&b);
        if (a.tms_utime == b.tms_utime && a.tms_stime == b.tms_stime)
            break;
    }
    ck_assert_msg(tries < 200, "CPU time never stable across a read");
    ck_assert_msg(a.tms_stime > 0 && a.tms_utime > 0, "utime %ld stime %ld: the burn did not register",
                  (long)a.tms_utime, (long)a.tms_stime);
    ck_assert_msg(s.cpu_ticks == (uint64_t)(a.tms_utime + a.tms_stime), "cpu_ticks %llu, times() %ld + %ld",
                  (unsigned long long)s.cpu_ticks, (long)a.tms_utime, (long)a.tms_stime);
}
END_TEST

START_TEST(meminfo_total_equals_sysinfo)
{
    struct sysinfo si;
    ck_assert_int_eq(sysinfo(&si), 0);
    struct mon_sys_stat m;
    struct rl_err e = {0};
    ck_assert_msg(mon_read_meminfo(&m, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(m.total_bytes, (int64_t)si.totalram * (int64_t)si.mem_unit);
    ck_assert_int_gt(m.available_bytes, 0);
    ck_assert_int_le(m.available_bytes, m.total_bytes);
    ck_assert_int_eq(m.used_bytes, m.total_bytes - m.available_bytes);
}
END_TEST

START_TEST(command_name_with_parentheses)
{
    /* The name sits in parentheses in /proc/<pid>/stat and may itself hold ") (": the fields
     * after it start after the last ')'. */
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        prctl(PR_SET_NAME, "a) (b c", 0, 0, 0);
        close(fd[0]);
        (void)!write(fd[1], "x", 1);
        pause();
        _exit(0);
    }
    close(fd[1]);
    char ch;
    ck_assert_int_eq(read(fd[0], &ch, 1), 1);
    close(fd[0]);
    struct mon_proc_stat s;
    struct rl_err e = {0};
    int rc = mon_read_proc(c, &s, &e);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    ck_assert_msg(rc == 0, "%s", e.msg);
    ck_assert_str_eq(s.comm, "a) (b c");
    ck_assert_int_eq(s.ppid, getpid());
    ck_assert_int_eq(s.threads, 1);
    ck_assert_int_gt(s.rss_bytes, 0);
}
END_TEST

Suite *monitor_proc_suite(void)
{
    Suite *s = suite_create("monitor_proc");
    TCase *tc = tcase_create("proc");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, rss_equals_statm_exactly);
    tcase_add_test(tc, cpu_ticks_equal_times);
    tcase_add_test(tc, meminfo_total_equals_sysinfo);
    tcase_add_test(tc, command_name_with_parentheses);
    suite_add_tcase(s, tc);
    return s;
}
