/* tests/util.c — see util.h. */
#include "tests/util.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/rl.h"

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

const char *tu_bin(void) { return env_or("RATIOLAB_BIN", "build/ratiolab"); }
const char *tu_src(void) { return env_or("RATIOLAB_SRC", "."); }
const char *tu_build(void) { return env_or("RATIOLAB_BUILD", "build"); }

static char tmpdir[256];
static pid_t tmp_owner;

static void cleanup(void)
{
    if (tmpdir[0] && getpid() == tmp_owner) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "warning: could not remove %s\n", tmpdir);
    }
}

const char *tu_src_path(const char *rel)
{
    static char buf[4][1024];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", tu_src(), rel);
    return b;
}

struct plan_zero tu_zero_cpu_offload(double ratio, int64_t sub_group_size)
{
    struct plan_zero z;
    plan_zero_defaults(&z);
    z.stage = 3;
    z.offload = PLAN_OFFLOAD_CPU;
    z.pin_memory = true;
    z.ratio = ratio;
    z.src_ratio = PLAN_SRC_CLI;
    z.sub_group_size = sub_group_size;
    z.dtype = PLAN_FP16;
    return z;
}

const char *tu_tmpdir(void)
{
    if (!tmpdir[0] || tmp_owner != getpid()) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/ratiolab-test-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            abort();
        }
        tmp_owner = getpid();
        atexit(cleanup);
    }
    return tmpdir;
}

const char *tu_write(const char *name, const char *text)
{
    static char paths[8][512];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, 512, "%s/%s", tu_tmpdir(), name);
    FILE *f = fopen(p, "w");
    if (!f) {
        perror(p);
        abort();
    }
    fputs(text, f);
    fclose(f);
    return p;
}

const char *tu_path(const char *name)
{
    static char paths[8][600];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", tu_tmpdir(), name);
    return p;
}

char *tu_read(const char *path, size_t *len)
{
    char *text = NULL;
    size_t n = 0;
    if (rl_read_bytes(path, &text, &n, NULL) != 0)
        return NULL;
    if (len)
        *len = n;
    return text;
}

char *tu_slurp(const char *name)
{
    char *s = NULL;
    struct rl_err e = {0};
    ck_assert_msg(rl_read_bytes(tu_path(name), &s, NULL, &e) == 0, "%s", e.msg);
    return s;
}

const char *tu_catalog(void)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/catalog", tu_src());
    return path;
}

static char *slurp(const char *path)
{
    char *s = NULL;
    if (rl_read_file(path, &s, NULL, NULL) != 0)
        s = strdup("");
    return s;
}

static void run_shell(struct tu_run *r, const char *cmdline)
{
    const char *d = tu_tmpdir();
    size_t n = strlen(cmdline) + 1024;
    char *cmd = malloc(n);
    snprintf(cmd, n, "cd '%s' && ( %s ) >'%s/.out' 2>'%s/.err' </dev/null", d, cmdline, d, d);
    int st = system(cmd);
    free(cmd);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    char p[600];
    snprintf(p, sizeof p, "%s/.out", d);
    r->out = slurp(p);
    unlink(p);
    snprintf(p, sizeof p, "%s/.err", d);
    r->err = slurp(p);
    unlink(p);
}

void tu_ratiolab(struct tu_run *r, const char *fmt, ...)
{
    char args[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' %s", tu_bin(), args);
    run_shell(r, cmd);
}

json_t *tu_ratiolab_json(const char *fmt, ...)
{
    char args[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    struct tu_run r;
    tu_ratiolab(&r, "%s", args);
    ck_assert_msg(r.status == 0, "%s: exit %d: %s", args, r.status, r.err);
    json_error_t je;
    json_t *o = json_loads(r.out, 0, &je);
    ck_assert_msg(o != NULL, "%s: not JSON (%s)", args, je.text);
    tu_run_free(&r);
    return o;
}

void tu_sh(struct tu_run *r, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    run_shell(r, cmd);
}

void tu_run_free(struct tu_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

int tu_count_files(void)
{
    DIR *d = opendir(tu_tmpdir());
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

bool tu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

unsigned long tu_seed(const char *test)
{
    const char *s = getenv("RL_SEED");
    unsigned long seed = s && *s ? strtoul(s, NULL, 0) : (unsigned long)time(NULL) ^ (unsigned long)getpid();
    fprintf(stderr, "%s: seed %lu (replay with RL_SEED=%lu)\n", test, seed, seed);
    return seed;
}

/* Skips recorded in the runner process (suite functions run there, before any fork). */
static int n_skips;
static struct {
    char what[160];   /* test name */
    char why[320];    /* reason */
    int runs;         /* test runs it stands for (loop tests: the loop count) */
} skips[64];
static int n_skip_entries;

void tu_skip_runs(const char *what, int runs, const char *why)
{
    n_skips += runs;
    if (n_skip_entries < (int)(sizeof skips / sizeof skips[0])) {
        snprintf(skips[n_skip_entries].what, sizeof skips[0].what, "%s", what);
        snprintf(skips[n_skip_entries].why, sizeof skips[0].why, "%s", why);
        skips[n_skip_entries++].runs = runs;
    }
}

void tu_skip(const char *what, const char *why) { tu_skip_runs(what, 1, why); }

int tu_skips(void) { return n_skips; }

void tu_skips_print(void)
{
    for (int i = 0; i < n_skip_entries; i++) {
        if (skips[i].runs > 1)
            printf("skipped: %s (%d runs): %s\n", skips[i].what, skips[i].runs, skips[i].why);
        else
            printf("skipped: %s: %s\n", skips[i].what, skips[i].why);
    }
}

bool tu_have_program(const char *prog)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

const char *tu_shared_example(const char *name, bool *found)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/../shared/examples/%s", tu_src(), name);
    *found = tu_exists(path);
    return path;
}

bool tu_long(void)
{
    const char *v = getenv("RL_TEST_LONG");
    return v && strcmp(v, "1") == 0;
}

const char *tu_digest_of(const char *text, char out[9])
{
    const char *d = text ? strstr(text, "digest ") : NULL;
    out[0] = 0;
    if (d && sscanf(d + 7, "%8[0-9a-f]", out) != 1)
        out[0] = 0;
    return out;
}
