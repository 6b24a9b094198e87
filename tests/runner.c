/* tests/runner.c — runs every Check suite. Suites come from tests/check_<module>.c (listed by
 * the Makefile in suites.h). Suites named gpu_* run in a no-fork runner: a forked child must not
 * use CUDA. A suite function that returns NULL has called tu_skip() to say why (e.g. "skipped:
 * no GPU"); a suite may also leave single tests out with tu_skip() (a missing compiler, a missing
 * ../shared, a CPU without AVX-512). Skips are counted as skipped, never as passed, and listed by
 * name with their reason just before the last line. CK_RUN_SUITE / CK_RUN_CASE select as usual
 * with Check. Just before the last line come the slowest tests, by wall time (CK_SLOWEST=N, default
 * 10; 0 for none), read back from Check's XML log (CK_XML_LOG_FILE_NAME when given, else a
 * temporary file). OMP_WAIT_POLICY is PASSIVE unless given (see main). The last line is
 * "N passed, N failed, N skipped" over all runners.
 *
 * Check's per-test timeouts need a fork, so the no-fork runner has its own: CK_NOFORK_TIMEOUT
 * seconds (default 900) for all its suites together, after which the runner prints that the
 * limit was reached and exits with 124 (as timeout(1) does).
 *
 * RL_TEST_JOBS=N runs the suites N at a time, each in a worker of its own (run_parallel below);
 * `make test` sets it to the machine's cores. */
#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>   /* signal, SIGALRM: the no-fork runner's limit */
#include <unistd.h>
#include <ftw.h>       /* nftw: a worker's Open MPI session folder removed */
#include <sys/wait.h>  /* wait, WIFSIGNALED: the workers of RL_TEST_JOBS */

#include "tests/util.h"

#define RL_SUITE(n) Suite *n##_suite(void);
#include "suites.h"
#undef RL_SUITE

struct entry {
    const char *name;
    Suite *(*make)(void);
};

static const struct entry suites[] = {
#define RL_SUITE(n) {#n, n##_suite},
#include "suites.h"
#undef RL_SUITE
};

/* One test's wall time, as Check's XML log gives it. */
struct timing {
    char name[200];    /* suite:tcase:test, with [iteration] for a loop test */
    double seconds;    /* <duration> */
};

static int by_seconds_desc(const void *a, const void *b)
{
    double x = ((const struct timing *)a)->seconds, y = ((const struct timing *)b)->seconds;
    return (x < y) - (x > y);
}

/* The text between <tag> and </tag> on `line`, into out (empty when absent). */
static void xml_field(const char *line, const char *tag, char *out, size_t cap)
{
    char open[32], close[32];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *a = strstr(line, open), *b = a ? strstr(a, close) : NULL;
    out[0] = 0;
    if (a && b)
        snprintf(out, cap, "%.*s", (int)(b - a - (ptrdiff_t)strlen(open)), a + strlen(open));
}

/* Adds the tests of Check's XML log at path to *t (n of cap used; grows it). Check writes one
 * element per line: <title> of the suite, then per test <id>, <iteration>, <duration>,
 * <description> (the tcase). */
static void timings_read(const char *path, struct timing **t, int *n, int *cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[4096], suite[64] = "", id[128] = "", iter[16] = "", dur[32] = "", tcase[64] = "", v[128];
    while (fgets(line, sizeof line, f)) {
        xml_field(line, "title", v, sizeof v);
        if (*v)
            snprintf(suite, sizeof suite, "%s", v);
        xml_field(line, "id", v, sizeof v);
        if (*v)
            snprintf(id, sizeof id, "%s", v);
        xml_field(line, "iteration", v, sizeof v);
        if (*v)
            snprintf(iter, sizeof iter, "%s", v);
        xml_field(line, "duration", v, sizeof v);
        if (*v)
            snprintf(dur, sizeof dur, "%s", v);
        xml_field(line, "description", v, sizeof v);
        if (*v)
            snprintf(tcase, sizeof tcase, "%s", v);
        if (!strstr(line, "</test>"))
            continue;
        if (*n == *cap) {
            int nc = *cap ? 2 * *cap : 256;
            struct timing *q = realloc(*t, (size_t)nc * sizeof *q);
            if (!q)
                break;
            *t = q;
            *cap = nc;
        }
        struct timing *x = &(*t)[(*n)++];
        snprintf(x->name, sizeof x->name, "%s:%s:%s%s%s%s", suite, tcase, id, strcmp(iter, "0") ? "[" : "",
                 strcmp(iter, "0") ? iter : "", strcmp(iter, "0") ? "]" : "");
        x->seconds = atof(dur);
        id[0] = iter[0] = dur[0] = tcase[0] = 0;
    }
    fclose(f);
}

/* Prints the `top` slowest tests of the XML logs paths[0..n). */
static void timings_print(char paths[][300], int n, int top)
{
    struct timing *t = NULL;
    int nt = 0, cap = 0;
    for (int i = 0; i < n; i++)
        timings_read(paths[i], &t, &nt, &cap);
    if (nt > 0)   /* t is NULL when no test ran (a suite that only skipped): qsort wants an array */
        qsort(t, (size_t)nt, sizeof *t, by_seconds_desc);
    double total = 0;
    for (int i = 0; i < nt; i++)
        total += t[i].seconds > 0 ? t[i].seconds : 0;
    if (nt)
        printf("slowest %d of %d tests (wall s; all tests together %.1f s):\n", top < nt ? top : nt, nt, total);
    for (int i = 0; i < nt && i < top; i++) {
        if (t[i].seconds >= 0)
            printf("  %8.2f  %s\n", t[i].seconds, t[i].name);
        else   /* Check gives no duration for a test that ended by a signal */
            printf("  %8s  %s\n", "-", t[i].name);
    }
    free(t);
}

/* Points runner r's XML log at a file of its own (Check's CK_XML_LOG_FILE_NAME when given, for the
 * first runner; else a fresh temporary file), recorded in paths[*n] (unlink[*n]: ours to remove). */
static void timing_log(SRunner *r, char paths[][300], bool *unlink_it, int *n)
{
    const char *given = getenv("CK_XML_LOG_FILE_NAME");
    if (given && *given && *n == 0) {
        snprintf(paths[*n], 300, "%s", given);
        unlink_it[*n] = false;
    } else {
        snprintf(paths[*n], 300, "/tmp/ratiolab-timing-XXXXXX");
        int fd = mkstemp(paths[*n]);
        if (fd < 0)
            return;
        close(fd);
        unlink_it[*n] = true;
    }
    srunner_set_xml(r, paths[*n]);
    (*n)++;
}

static void nofork_expired(int sig)
{
    (void)sig;
    static const char msg[] = "\nrun_tests: the no-fork (GPU) suites ran past CK_NOFORK_TIMEOUT; stopped\n";
    if (write(STDOUT_FILENO, msg, sizeof msg - 1) < 0)
        _exit(125);
    _exit(124);
}

/* Seconds the no-fork runner may take (CK_NOFORK_TIMEOUT; 900 when unset or not a positive
 * whole number). */
static unsigned nofork_limit(void)
{
    const char *v = getenv("CK_NOFORK_TIMEOUT");
    char *end = NULL;
    long s = v ? strtol(v, &end, 10) : 0;
    return v && end != v && !*end && s > 0 && s < 86400 ? (unsigned)s : 900;
}

/* ---- suites side by side (RL_TEST_JOBS) ---------------------------------------------------------
 * With RL_TEST_JOBS=N (N > 1) and no CK_RUN_SUITE, the runner starts itself once per suite
 * (CK_RUN_SUITE=<suite>, RL_TEST_WORKER=1), N at a time, each worker's output into a file of its
 * own, and prints a worker's output whole when it ends, so no two suites' lines interleave. The
 * suites named in RL_TEST_FIRST (space-separated; the longest ones) start first, then the rest in
 * suites.h order: a long suite started last would end the run alone. The closing lines are the
 * runner's usual ones over all workers: the slowest tests (from every worker's XML log), every
 * skip in suites.h order, and "N passed, N failed, N skipped". A worker that ends without its
 * summary line (a signal, a crash of the runner itself) counts as one failed test, named. */
struct worker {
    pid_t pid;             /* 0: not started or reaped */
    char out[64];          /* the worker's stdout and stderr */
    char xml[64];          /* its Check XML log */
    char mpi_tmp[64];      /* its Open MPI session folder base (OMPI_MCA_orte_tmpdir_base), "" if none */
    int passed, failed;    /* from its summary line */
    int skipped;
    char *skip_lines;      /* its "skipped: ..." lines, kept for the end (malloc'd) */
    bool done;
};

/* Index of the suite that should start next: the first not yet started of RL_TEST_FIRST, else
 * the first not yet started in suites.h order; -1 when all have. */
static int next_suite(const bool *started, size_t n)
{
    const char *first = getenv("RL_TEST_FIRST");
    for (const char *p = first ? first : ""; *p;) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, " ");
        for (size_t i = 0; i < n && len; i++)
            if (!started[i] && strlen(suites[i].name) == len && strncmp(suites[i].name, p, len) == 0)
                return (int)i;
        p += len;
    }
    for (size_t i = 0; i < n; i++)
        if (!started[i])
            return (int)i;
    return -1;
}

static pid_t worker_start(const char *self, const char *suite, struct worker *w)
{
    snprintf(w->out, sizeof w->out, "/tmp/ratiolab-worker-out-XXXXXX");
    snprintf(w->xml, sizeof w->xml, "/tmp/ratiolab-worker-xml-XXXXXX");
    int fd = mkstemp(w->out), fx = mkstemp(w->xml);
    if (fd < 0 || fx < 0) {
        perror("run_tests: mkstemp");
        exit(EXIT_FAILURE);
    }
    close(fx);
    /* Two workers' mpiruns starting at once race to create the one session folder Open MPI 4
     * keeps per host and user (/tmp/ompi.HOST.UID: "mkdir ... File exists", the launch fails):
     * each worker gets a base folder of its own, unless the caller chose one. */
    w->mpi_tmp[0] = 0;
    if (!getenv("OMPI_MCA_orte_tmpdir_base")) {
        snprintf(w->mpi_tmp, sizeof w->mpi_tmp, "/tmp/ratiolab-worker-mpi-XXXXXX");
        if (!mkdtemp(w->mpi_tmp))
            w->mpi_tmp[0] = 0;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("run_tests: fork");
        exit(EXIT_FAILURE);
    }
    if (pid == 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
        setenv("CK_RUN_SUITE", suite, 1);
        setenv("RL_TEST_WORKER", "1", 1);
        setenv("CK_XML_LOG_FILE_NAME", w->xml, 1);
        if (w->mpi_tmp[0])
            setenv("OMPI_MCA_orte_tmpdir_base", w->mpi_tmp, 1);
        execl(self, self, (char *)NULL);
        perror("run_tests: exec");
        _exit(127);
    }
    close(fd);
    return pid;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;   /* best effort: go on with the rest */
}

/* Prints worker w's output but its closing lines, which it parses into w (and keeps the skips). */
static void worker_finish(struct worker *w, const char *suite, int status)
{
    FILE *f = fopen(w->out, "r");
    char *buf = NULL;
    size_t len = 0;
    if (f) {
        FILE *m = open_memstream(&buf, &len);
        char chunk[8192];
        size_t k;
        while (m && (k = fread(chunk, 1, sizeof chunk, f)) > 0)
            fwrite(chunk, 1, k, m);
        if (m)
            fclose(m);
        fclose(f);
    }
    unlink(w->out);
    if (w->mpi_tmp[0])   /* what the worker's mpiruns left (a killed launch leaves its folder) */
        nftw(w->mpi_tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    /* The summary is the last line; the skip lines are the run of "skipped: " lines before it. */
    char *end = buf ? buf + len : NULL;
    while (end && end > buf && end[-1] == '\n')
        end--;
    char *last = end;
    while (last && last > buf && last[-1] != '\n')
        last--;
    bool ok = last && sscanf(last, "%d passed, %d failed, %d skipped", &w->passed, &w->failed, &w->skipped) == 3;
    char *skips = last;
    while (ok && skips > buf) {
        char *p = skips - 1;   /* the newline ending the line before */
        while (p > buf && p[-1] != '\n')
            p--;
        if (strncmp(p, "skipped: ", 9) != 0)
            break;
        skips = p;
    }
    if (ok) {
        w->skip_lines = strndup(skips, (size_t)(last - skips));
        fwrite(buf, 1, (size_t)(skips - buf), stdout);
    } else {
        if (buf)
            fwrite(buf, 1, len, stdout);
        printf("run_tests: suite %s: its worker ended without a summary (%s %d)\n", suite,
               WIFSIGNALED(status) ? "signal" : "exit status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        w->passed = w->skipped = 0;
        w->failed = 1;
    }
    fflush(stdout);
    free(buf);
    w->done = true;
}

static int run_parallel(int jobs, int top)
{
    const size_t n = sizeof suites / sizeof suites[0];
    struct worker *w = calloc(n, sizeof *w);
    bool *started = calloc(n, sizeof *started);
    if (!w || !started) {
        perror("run_tests");
        return EXIT_FAILURE;
    }
    char self[4096];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) {
        perror("run_tests: /proc/self/exe");
        return EXIT_FAILURE;
    }
    self[k] = 0;
    int running = 0;
    for (;;) {
        int i;
        while (running < jobs && (i = next_suite(started, n)) >= 0) {
            started[i] = true;
            w[i].pid = worker_start(self, suites[i].name, &w[i]);
            running++;
        }
        if (running == 0)
            break;
        int status;
        pid_t pid = wait(&status);
        if (pid < 0) {
            perror("run_tests: wait");
            return EXIT_FAILURE;
        }
        for (size_t j = 0; j < n; j++)
            if (w[j].pid == pid && !w[j].done) {
                worker_finish(&w[j], suites[j].name, status);
                running--;
            }
    }
    int passed = 0, failed = 0, skipped = 0;
    char (*logs)[300] = calloc(n, sizeof *logs);
    int n_logs = 0;
    for (size_t j = 0; j < n; j++) {
        passed += w[j].passed;
        failed += w[j].failed;
        skipped += w[j].skipped;
        if (logs)
            snprintf(logs[n_logs++], 300, "%s", w[j].xml);
    }
    if (top > 0 && logs)
        timings_print(logs, n_logs, top);
    for (size_t j = 0; j < n; j++) {
        unlink(w[j].xml);
        if (w[j].skip_lines)
            fputs(w[j].skip_lines, stdout);
        free(w[j].skip_lines);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    free(logs);
    free(w);
    free(started);
    return failed || passed == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    /* OpenMP threads that wait for work spin by default (OMP_WAIT_POLICY active, libgomp's spin
     * count): on a loaded machine with more threads than free cores, every parallel region of
     * the kernels' tests then waits for spinning threads' time slices (the bitwise loops took
     * minutes instead of seconds). Passive waits change no result; libgomp reads the variable
     * when it loads, so the runner sets it and starts itself again (its children inherit it). */
    (void)argc;
    if (!getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        execv("/proc/self/exe", argv);   /* returns only on failure: carry on as we are */
    }
    const char *jobs_env = getenv("RL_TEST_JOBS"), *only_env = getenv("CK_RUN_SUITE");
    int jobs = jobs_env ? atoi(jobs_env) : 1;
    bool worker = getenv("RL_TEST_WORKER") != NULL;
    if (jobs > 1 && !worker && !(only_env && *only_env)) {
        const char *sl = getenv("CK_SLOWEST");
        return run_parallel(jobs, sl && *sl ? atoi(sl) : 10);
    }
    const size_t n = sizeof suites / sizeof suites[0];
    SRunner *forked = NULL, *nofork = NULL;
    /* With CK_RUN_SUITE only that suite is built, so only its skips are counted. */
    const char *only = getenv("CK_RUN_SUITE");
    for (size_t i = 0; i < n; i++) {
        if (only && *only && strcmp(only, suites[i].name) != 0)
            continue;
        bool gpu = strncmp(suites[i].name, "gpu_", 4) == 0;
        Suite *s = suites[i].make();
        if (!s)   /* it called tu_skip() to say why */
            continue;
        SRunner **r = gpu ? &nofork : &forked;
        if (!*r)
            *r = srunner_create(s);
        else
            srunner_add_suite(*r, s);
    }
    const char *slowest = getenv("CK_SLOWEST");
    int top = slowest && *slowest ? atoi(slowest) : 10;
    /* A worker of run_parallel keeps its XML log (given) for the parent and prints no timings. */
    if (worker)
        top = 1;
    char logs[2][300];
    bool unlink_log[2] = {false, false};
    int n_logs = 0;
    if (top > 0) {
        if (forked)
            timing_log(forked, logs, unlink_log, &n_logs);
        if (nofork)
            timing_log(nofork, logs, unlink_log, &n_logs);
    }
    int failed = 0, run = 0;
    if (nofork) {
        srunner_set_fork_status(nofork, CK_NOFORK);
        signal(SIGALRM, nofork_expired);
        alarm(nofork_limit());
        srunner_run_all(nofork, CK_NORMAL);
        alarm(0);
        failed += srunner_ntests_failed(nofork);
        run += srunner_ntests_run(nofork);
        srunner_free(nofork);
    }
    if (forked) {
        srunner_run_all(forked, CK_NORMAL);
        failed += srunner_ntests_failed(forked);
        run += srunner_ntests_run(forked);
        srunner_free(forked);
    }
    if (top > 0 && !worker)
        timings_print(logs, n_logs, top);
    for (int i = 0; i < n_logs; i++)
        if (unlink_log[i])
            unlink(logs[i]);
    tu_skips_print();   /* every skipped test by name, with its reason */
    printf("%d passed, %d failed, %d skipped\n", run - failed, failed, tu_skips());
    return failed || run == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
