/* tests/util.h — helpers for tests that run the ratiolab binary or need scratch files. */
#ifndef RL_TESTS_UTIL_H
#define RL_TESTS_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <check.h>   /* Suite */
#include <jansson.h>

#include "plan/plan.h"   /* struct plan_zero */

/* The suite function of the file being compiled: the Makefile passes -DTU_SUITE=<module>_suite
 * to tests/check_<module>.c (tests/runner.c declares them all from build/gen/suites.h). */
#ifdef TU_SUITE
Suite *TU_SUITE(void);
#endif

struct tu_run {
    int status;      /* exit code, or 128 + signal */
    char *out;       /* stdout, NUL-terminated, owned */
    char *err;       /* stderr, NUL-terminated, owned */
};

const char *tu_bin(void);      /* $RATIOLAB_BIN (build/ratiolab) */
const char *tu_src(void);      /* $RATIOLAB_SRC (the source tree) */
/* tu_src()/rel, in one of four rotating static buffers (so up to four may be used at once). */
const char *tu_src_path(const char *rel);
/* fp16 ZeRO-3 with optimizer offload to pinned CPU memory at ratio (given on the command line) and
 * sub_group_size, DeepSpeed's defaults otherwise: the configuration the plan suites start from. */
struct plan_zero tu_zero_cpu_offload(double ratio, int64_t sub_group_size);
const char *tu_build(void);    /* $RATIOLAB_BUILD (build/ or build-san/) */
/* A fresh empty directory for this test process (removed at exit). */
const char *tu_tmpdir(void);
/* <tmpdir>/<name> (one of 8 static buffers used in turn, so a few may be held at once). */
const char *tu_path(const char *name);
/* The whole file at path, NUL-terminated (any bytes; *len its length when len is not NULL), or NULL
 * when it cannot be read. The caller frees it. */
char *tu_read(const char *path, size_t *len);
/* tu_read of <tmpdir>/<name>; fails the test, naming the file and why, when it cannot be read. */
char *tu_slurp(const char *name);
/* <RATIOLAB_SRC>/catalog, the models and hardware profiles. */
const char *tu_catalog(void);
/* Writes text to <tmpdir>/<name> and returns the full path (static buffer per call slot). */
const char *tu_write(const char *name, const char *text);
/* Runs `cd <tmpdir> && <RATIOLAB_BIN> <args>` through /bin/sh; args is shell text. */
void tu_ratiolab(struct tu_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* tu_ratiolab that must exit 0 and print one JSON document on stdout (the test fails, naming the
 * command and what went wrong, otherwise); the caller owns the result (json_decref). */
json_t *tu_ratiolab_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runs any shell command in <tmpdir>. */
void tu_sh(struct tu_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tu_run_free(struct tu_run *r);
/* Number of entries in <tmpdir> (to show no partial file was left behind). */
int tu_count_files(void);
bool tu_exists(const char *path);
/* Records a test that was not registered; the runner lists it as "skipped: <what>: <why>" and
 * counts it in its closing "N passed, N failed, N skipped" line. Call from a suite function. */
void tu_skip(const char *what, const char *why);
/* As tu_skip for a loop test that would have run `runs` times (counted as that many skips). */
void tu_skip_runs(const char *what, int runs, const char *why);
int tu_skips(void);
/* Prints every skip recorded so far, one "skipped: <what>: <why>" line each (the runner does this
 * just before its closing line). */
void tu_skips_print(void);
/* True when `prog` is found on $PATH (decided in the suite function, before tests are registered,
 * so that a missing tool is a skip and never a pass). */
bool tu_have_program(const char *prog);
/* The DeepSpeed example configs beside the repository: <RATIOLAB_SRC>/../shared/examples/<name>.
 * Returns the path; *found tells whether it exists. */
const char *tu_shared_example(const char *name, bool *found);
/* True when RL_TEST_LONG=1 (`make test-long`, `make mutate`): the long loop tests run at their
 * full length; `make test` runs their shorter form, chosen to kill the same mutants. */
bool tu_long(void);
/* A shell fragment that waits until `[ COND ]` holds, polling every 10 ms for at most 60 s (then
 * goes on, and the test's own checks fail): a test waits on a condition, never a fixed time. */
#define TU_WAIT_FOR(cond) "n=0; until [ " cond " ] || [ $n -ge 6000 ]; do sleep 0.01; n=$((n+1)); done; "
/* The executor tests' small run: gpt-2.7b (TP 8 shard) shrunk 10000 x, 220,418 elements, sub-groups
 * of 1e8 / 1e4 elements, on the cpu backend (named: a GPU machine must not pick cuda for these). */
#define TU_EXEC_SMALL "--backend cpu --scale 10000 --sub-group-size 1e8 --warmup 0"
/* mpirun as the tests start it, root allowed. Ranks started by mpirun run without LeakSanitizer
 * (under ASan): Open MPI dlclose's its plugins in MPI_Finalize and their leftovers show as
 * "<unknown module>", which tests/lsan.supp cannot name; our own code is leak-checked by the
 * single-process runs. */
#define TU_MPIRUN                                                                                \
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 " \
    "timeout 120 mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
/* The 8 hex digits after "digest " in text (a `run --hash` line), or "" when absent; returns out. */
const char *tu_digest_of(const char *text, char out[9]);
/* Seed for randomized tests: $RL_SEED when set, else from the time; printed either way. */
unsigned long tu_seed(const char *test);

#endif
