/* tests/runner.c — runs every Check suite. Suites come from tests/check_<module>.c (listed by
 * the Makefile in suites.h). Suites named gpu_* run in a no-fork runner: a forked child must not
 * use CUDA. A suite function that returns NULL has called tu_skip() to say why (e.g. "skipped:
 * no GPU"); a suite may also leave single tests out with tu_skip() (a missing compiler, a missing
 * ../shared, a CPU without AVX-512). Skips are counted as skipped, never as passed, and listed by
 * name with their reason just before the last line. CK_RUN_SUITE / CK_RUN_CASE select as usual
 * with Check. The last line is "N passed, N failed, N skipped" over all runners.
 *
 * Check's per-test timeouts need a fork, so the no-fork runner has its own: CK_NOFORK_TIMEOUT
 * seconds (default 900) for all its suites together, after which the runner prints that the
 * limit was reached and exits with 124 (as timeout(1) does). */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>   /* alarm, write, _exit */
#include <signal.h>

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

int main(void)
{
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
    tu_skips_print();   /* every skipped test by name, with its reason */
    printf("%d passed, %d failed, %d skipped\n", run - failed, failed, tu_skips());
    return failed || run == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
