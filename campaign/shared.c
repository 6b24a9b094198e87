/* campaign/shared.c — what the campaign's phases and both of its modes use: the caller's hooks,
 * the one-row scale of the baseline, a row's measured side from an executor's result, and a
 * launched command's argv and captured stdout. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "campaign/campaign_impl.h"

void camp__say(const struct camp *k, const char *fmt, ...)
{
    if (!k->rank0 || !k->h.say)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    k->h.say(k->h.ctx, line);
}

int camp__exec_err(const struct camp *k, struct rl_err *e)
{
    return k->h.exec_err ? k->h.exec_err(k->h.ctx, e) : e->code;
}

double camp__one_row_scale(const struct camp *k)
{
    double rows = 1;
    for (int t = 0; t < k->c.model.n_tensors; t++)
        rows = (double)k->c.model.tensors[t].shape[0] > rows ? (double)k->c.model.tensors[t].shape[0] : rows;
    return rows > k->o.scale ? rows : k->o.scale;
}

/* Buffers outside the ledger count as device or host scratch (the executor's compute scratch is
 * part of what the device pool holds). */
void camp_row_from_result(struct val_row *w, const struct ex_result *r, const int64_t *baseline)
{
    w->digest = r->digest;
    w->measured.deepspeed_version[0] = 0;
    if (r->ds_step)   /* the release whose step the executor ran (its run record) */
        rl_version_str(r->ds_version, w->measured.deepspeed_version, sizeof w->measured.deepspeed_version);
    const struct ex_rank_result *cr = &r->ranks[r->critical_rank];
    w->measured.step_ns = cr->step_ns;
    for (int k = 0; k < VAL_PHASES && k < STEP_PH_COUNT; k++) {
        w->measured.busy_ns[k] = cr->phase[k].busy_ns;
        w->measured.exposed_ns[k] = cr->phase[k].exposed_ns;
    }
    w->n_ranks = r->world < VAL_MAX_RANKS ? r->world : VAL_MAX_RANKS;
    for (int k = 0; k < w->n_ranks; k++) {
        const struct ex_rank_result *q = &r->ranks[k];
        struct val_rank_mem *vm = &w->mem[k];
        vm->ledger_device_bytes = q->ledger_device_bytes;
        vm->ledger_host_bytes = q->ledger_host_bytes;
        vm->host_placed_numel = q->host_placed_numel;
        vm->per_rank_numel = q->per_rank_numel;
        vm->rss_bytes = q->mem.peak_rss_bytes;
        vm->baseline_rss_bytes = baseline[k];
        vm->pinned_bytes = q->mem.pinned_bytes;
        vm->device_used_bytes = q->mem.device_used_bytes;
        for (int b = 0; b < q->n_bufs; b++)
            if (q->bufs[b].ledger_bytes < 0 && q->bufs[b].device == PLAN_DEV_GPU)
                vm->scratch_device_bytes += q->bufs[b].bytes;
            else if (q->bufs[b].ledger_bytes < 0)
                vm->scratch_host_bytes += q->bufs[b].bytes;
    }
}

/* ---- running a command and capturing its stdout ------------------------------------------------ */
int camp__capture(char *const *argv, char **out)
{
    *out = NULL;
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (buf && n + 4096 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            } else {
                buf = nb;
            }
        }
        char sink[4096];
        ssize_t k = read(fd[0], buf ? buf + n : sink, 4096);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += buf ? (size_t)k : 0;
    }
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (buf)
        buf[n] = 0;
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- argv ---------------------------------------------------------------------------------------- */
void camp__arg(struct camp__argv *a, const char *s)
{
    if (a->n < CAMP__MAX_ARGS)
        a->v[a->n++] = (char *)s;
    a->v[a->n] = NULL;
}
void camp__argf(struct camp__argv *a, const char *fmt, ...)
{
    if (a->n >= CAMP__MAX_ARGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->store[a->n], sizeof a->store[a->n], fmt, ap);
    va_end(ap);
    camp__arg(a, a->store[a->n]);
}

void camp__launcher(struct camp__argv *a, int ranks)
{
    if (ranks <= 1)
        return;
    camp__arg(a, "mpirun");
    camp__arg(a, "--oversubscribe");
    camp__arg(a, "--mca");
    camp__arg(a, "mpi_yield_when_idle");
    camp__arg(a, "1");
    camp__arg(a, "-x");
    camp__arg(a, "OPENBLAS_NUM_THREADS");
    camp__arg(a, "-np");
    camp__argf(a, "%d", ranks);
}

/* --gemm (last false) or --gemm-last (true) MxNxK[xC],... for `ratiolab calibrate`. */
static void gemm_arg(const struct calib_run *r, bool last, char *buf, size_t n)
{
    buf[0] = 0;
    for (int i = 0; i < r->n_gemm; i++) {
        if (r->gemm[i].last != last)
            continue;
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%lldx%lldx%lldx%lld", l ? "," : "", (long long)r->gemm[i].m,
                 (long long)r->gemm[i].n, (long long)r->gemm[i].k, (long long)r->gemm[i].count);
    }
}

void camp__gemm_args(struct camp__argv *a, const struct calib_run *rs)
{
    static char gemms[CALIB_MAX_GEMMS * 64], last[CALIB_MAX_GEMMS * 64];
    gemm_arg(rs, false, gemms, sizeof gemms);
    gemm_arg(rs, true, last, sizeof last);
    if (!gemms[0])
        return;
    camp__arg(a, "--gemm");
    camp__arg(a, gemms);
    if (rs->layers > 0) {
        camp__arg(a, "--layers");
        camp__argf(a, "%.0f", (double)rs->layers);
        if (last[0]) {
            camp__arg(a, "--gemm-last");
            camp__arg(a, last);
        }
    }
}

