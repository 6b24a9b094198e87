/* tests/runner.c — runs every Check suite. Suites come from tests/check_<module>.c (listed by
 * the Makefile in suites.h). Suites named gpu_* run in a no-fork runner: a forked child must not
 * use CUDA. CK_RUN_SUITE / CK_RUN_CASE select as usual with Check. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    const size_t n = sizeof suites / sizeof suites[0];
    SRunner *forked = NULL, *nofork = NULL;
    for (size_t i = 0; i < n; i++) {
        bool gpu = strncmp(suites[i].name, "gpu_", 4) == 0;
        SRunner **r = gpu ? &nofork : &forked;
        if (!*r)
            *r = srunner_create(suites[i].make());
        else
            srunner_add_suite(*r, suites[i].make());
    }
    int failed = 0;
    if (forked) {
        srunner_run_all(forked, CK_NORMAL);
        failed += srunner_ntests_failed(forked);
        srunner_free(forked);
    }
    if (nofork) {
        srunner_set_fork_status(nofork, CK_NOFORK);
        srunner_run_all(nofork, CK_NORMAL);
        failed += srunner_ntests_failed(nofork);
        srunner_free(nofork);
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
