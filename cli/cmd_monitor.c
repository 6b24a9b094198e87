/* cli/cmd_monitor.c — `ratiolab monitor`: per-process memory of any process tree over time.
 *
 * Options, signals and printing around monitor/session.c (which starts the command, samples,
 * passes the command's output through with --mark and writes the trace and CSV): parses the
 * options, installs the SIGINT/SIGTERM handlers (they record into the session's struct
 * mon_signals and forward the signal to the command when it was sent to us alone), prints the
 * peak table and decides the exit status. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>   /* WIFEXITED, WEXITSTATUS, WIFSIGNALED, WTERMSIG */

#include "cli/cli.h"
#include "cli/flag_values.h"
#include "monitor/monitor.h"
#include "monitor/session.h"

#define MAX_PIDS 256

enum { OPT_PID = 1, OPT_INTERVAL, OPT_OUT, OPT_CSV, OPT_MARK, OPT_NO_GPU, OPT_QUIET };
static const struct cli_opt opts[] = {
    {"pid", "P[,P...]", "follow these running processes and their descendants", OPT_PID},
    {"interval", "DUR", "sampling interval: 100ms (default), 0.5s, 20ms, 5 (seconds); 1ms to 3600s", OPT_INTERVAL},
    {"out", "FILE", "Chrome trace (Perfetto); FILE.json.gz is compressed", OPT_OUT},
    {"csv", "FILE", "one row per sample per process", OPT_CSV},
    {"mark", "REGEX", "lines of the command's output matching REGEX (POSIX extended) become "
                      "instant events; output still passes through unchanged", OPT_MARK},
    {"no-gpu", NULL, "do not load NVML (GPU columns empty, status says why)", OPT_NO_GPU},
    {"quiet", NULL, "no summary table", OPT_QUIET},
    {NULL, NULL, NULL, 0},
};

struct args {
    int pids[MAX_PIDS];              /* --pid (c.mon.pids points here, c.mon.n_pids counts them) */
    struct mon_session_config c;     /* --interval, --out, --csv, --mark, --no-gpu, the command */
    bool quiet;                      /* --quiet */
};

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct args *a = ctx;
    switch (id) {
    case OPT_PID: {
        char *dup = strdup(v), *save = NULL;
        int rc = 0;
        if (!dup)
            return rl_errf(e, RL_ENOMEM, "--pid: out of memory");
        for (char *tok = strtok_r(dup, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
            if (a->c.mon.n_pids == MAX_PIDS)
                rc = rl_errf(e, RL_EINVAL, "--pid: more than %d PIDs", MAX_PIDS);
            else
                rc = rl_parse_int("--pid", tok, 1, 1 << 30, &a->pids[a->c.mon.n_pids++], e);
        }
        free(dup);
        if (!rc && a->c.mon.n_pids == 0)
            rc = rl_errf(e, RL_EINVAL, "--pid: '%s' has no PID; expected P[,P...]", v);
        return rc;
    }
    case OPT_INTERVAL: return cli_parse_interval(v, &a->c.mon.interval_ns, e);
    case OPT_OUT: a->c.mon.trace_path = v; return 0;
    case OPT_CSV: a->c.mon.csv_path = v; return 0;
    case OPT_MARK: a->c.mark_regex = v; return 0;
    case OPT_NO_GPU: a->c.mon.no_gpu = true; return 0;
    case OPT_QUIET: a->quiet = true; return 0;
    }
    return 0;
}

/* ---- signals: the handler only records and forwards --------------------------------------- */

static struct mon_signals g_sig;   /* what the handlers record; the session reads it */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    g_sig.stop_sig = sig;
    g_sig.n_sig++;
    /* A terminal's Ctrl-C reaches the whole foreground group (the command included) with
     * si_code SI_KERNEL; forward only what was sent to us alone (kill: SI_USER, SI_QUEUE...). */
    if (g_sig.cmd_pid > 0 && si && si->si_code <= 0)
        kill(g_sig.cmd_pid, sig);
}

/* Signals first, so a Ctrl-C between here and the end still writes complete files. The
 * dispositions replaced are kept in ss for the command. */
static void install_signals(struct mon_signals *ss)
{
    struct sigaction sa = {0};
    sa.sa_sigaction = on_signal;
    /* SA_RESTART keeps file writes and waits going; ppoll and nanosleep still return EINTR. */
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &ss->cmd_int);
    sigaction(SIGTERM, &sa, &ss->cmd_term);
    struct sigaction ign = {0};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &ss->cmd_pipe);   /* a closed stdout must not kill us before the files are written */
}

/* ---- the summary table ----------------------------------------------------------------------- */

static void gib(char *buf, size_t n, int64_t bytes)
{
    if (bytes == MON_UNAVAILABLE)
        snprintf(buf, n, "unavail");
    else
        snprintf(buf, n, "%.3f", (double)bytes / RL_GIB);
}

/* The nine memory columns of the peak table (rss, rss_hwm, anon, file, shmem, locked, pinned,
 * swap, gpu) as GiB text. */
static void gib_cols(char c[][24], const int64_t v[9])
{
    for (int i = 0; i < 9; i++)
        gib(c[i], 24, v[i]);
}

static void print_summary(FILE *f, const struct mon_summary *s, int64_t interval_ns)
{
    fprintf(f, "\nratiolab monitor: %d samples every %.0f ms over %.2f s, %d processes followed "
               "(sampling cost %.2f ms per sample)\n",
            s->n_samples, (double)interval_ns / 1e6, (double)s->last_t_ns / 1e9, s->n_procs,
            s->n_samples ? (double)s->sample_cost_ns / s->n_samples / 1e6 : 0.0);
    fprintf(f, "peaks per process, GiB (rss_hwm is the kernel's VmHWM, which also catches peaks "
               "between samples; the others are sampled):\n");
    fprintf(f, "%8s %8s %-16s %8s %8s %8s %8s %8s %8s %8s %8s %8s %7s %4s\n", "pid", "ppid",
            "command", "rss", "rss_hwm", "anon", "file", "shmem", "locked", "pinned", "swap", "gpu",
            "cpu%", "thr");
    char c[10][24];
    for (int i = 0; i < s->n_procs; i++) {
        const struct mon_peak *p = &s->procs[i];
        if (p->n_samples == 0)
            continue;
        gib_cols(c, (const int64_t[9]){p->rss_bytes, p->hwm_bytes, p->anon_bytes, p->file_bytes, p->shmem_bytes,
                                       p->locked_bytes, p->pinned_bytes, p->swap_bytes, p->gpu_bytes});
        char cmdname[48];
        if (p->rank >= 0)
            snprintf(cmdname, sizeof cmdname, "%s[r%d]", p->comm, p->rank);
        else
            snprintf(cmdname, sizeof cmdname, "%s", p->comm);
        fprintf(f, "%8d %8d %-16s %8s %8s %8s %8s %8s %8s %8s %8s %8s %7.1f %4d\n", p->pid, p->ppid,
                cmdname, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], p->cpu_percent,
                p->threads);
    }
    const struct mon_tree_peak *t = &s->tree;
    gib_cols(c, (const int64_t[9]){t->rss_bytes, 0, t->anon_bytes, t->file_bytes, t->shmem_bytes,
                                   t->locked_bytes, t->pinned_bytes, t->swap_bytes, t->gpu_bytes});
    fprintf(f, "%8s %8s %-16s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "tree", "", "(peak of sum)",
            c[0], "", c[2], c[3], c[4], c[5], c[6], c[7], c[8]);
    fprintf(f, "tree: each column is the largest per-sample sum over the processes alive at that "
               "sample (not the sum of per-process peaks); RSS peaked at %.2f s with up to %d "
               "processes alive.\n", (double)t->rss_t_ns / 1e9, t->max_procs);
    gib(c[0], 24, s->system_used_peak_bytes);
    gib(c[1], 24, s->system_total_bytes);
    fprintf(f, "system (whole machine, every process): used = MemTotal - MemAvailable peaked at %s "
               "of %s GiB; this is the figure DeepSpeed logs as \"CPU Virtual Memory: used\".\n",
            c[0], c[1]);
    if (!s->gpu_available || !s->gpu_per_process)
        fprintf(f, "gpu: per-process GPU memory unavailable: %s\n", s->gpu_note);
    for (int g = 0; g < s->n_gpus; g++) {
        gib(c[0], 24, s->gpu_used_peak_bytes[g]);
        fprintf(f, "gpu%d: NVML used (all processes) peaked at %s GiB\n", g, c[0]);
    }
    if (s->n_marks)
        fprintf(f, "marks: %d output lines matched --mark\n", s->n_marks);
}

/* ---- run ------------------------------------------------------------------------------------ */

static const char usage[] = "ratiolab monitor (--pid P[,P...] | [options] -- CMD [ARGS...])";
static const char description[] =
    "Samples the memory of a process tree from /proc (RSS split into anonymous, file and shared,\n"
    "peak RSS, VmLck, VmPin, swap, CPU, threads) and GPU memory from NVML, per process and for the\n"
    "whole tree, next to the system-wide figure DeepSpeed logs. Follows descendants (a launcher and\n"
    "its ranks). Stops when the processes exit or on Ctrl-C/SIGTERM, and still writes complete\n"
    "files. Writes a Chrome trace (--out, the simulator's and executor's format) and a CSV, then\n"
    "prints peaks per process and for the tree to stderr.\n"
    "Exit status: with -- CMD the command's (128+N if killed by signal N); with --pid 0;\n"
    "130/143 when stopped by SIGINT/SIGTERM; 2 bad input; 3 environment.";

/* Either --pid or -- CMD, and --mark only with a command. Returns 0 or RL_EINVAL. */
static int check_args(const struct args *a, const struct cli_rest *rest, struct rl_err *e)
{
    if (rest->n_pos)
        return rl_errf(e, RL_EINVAL, "unexpected argument '%s'; put the command after --", rest->pos[0]);
    if ((a->c.argv != NULL) == (a->c.mon.n_pids > 0))
        return rl_errf(e, RL_EINVAL, "%s", a->c.argv ? "--pid: give either --pid or -- CMD, not both"
                                                  : "nothing to monitor: give --pid P[,P...] or -- CMD [ARGS...]");
    if (a->c.mark_regex && !a->c.argv)
        return rl_errf(e, RL_EINVAL, "--mark: '%s' needs a command started by the monitor (-- CMD); the "
                       "output of --pid processes cannot be read", a->c.mark_regex);
    return 0;
}

/* Puts the flags in place of the fields the session's messages name (mon_open's, mon_add_root's,
 * the mark regex's) and prints the message. Returns the exit status. */
static int monitor_fail(struct rl_err *e)
{
    static const char *const flags[][2] = {
        {"pids", "--pid"}, {"pid", "--pid"}, {"interval_ns", "--interval"}, {"trace_path", "--out"}, {"csv_path", "--csv"},
        {"mark_regex", "--mark"},
    };
    for (size_t i = 0; i < RL_COUNT(flags); i++)
        cli_err_flag(e, flags[i][0], flags[i][1]);
    return cli_fail("monitor", e);
}

/* The exit status of a run without an error of its own: 128+N when signal N stopped the sampling,
 * else the command's (128+N when it was killed by signal N), else 0 (--pid). */
static int end_status(const struct mon_session_end *end)
{
    if (end->stop_sig)
        return 128 + end->stop_sig;
    if (end->cmd_reaped && WIFEXITED(end->cmd_wait_status))
        return WEXITSTATUS(end->cmd_wait_status);
    if (end->cmd_reaped && WIFSIGNALED(end->cmd_wait_status))
        return 128 + WTERMSIG(end->cmd_wait_status);
    return 0;
}

static int run(int argc, char **argv)
{
    struct args a = {
        .c = {.mon = {.interval_ns = 100000000, .csv_comment = "# ratiolab " RL_VERSION_STRING " monitor\n"},
              .out_fd = 1, .err_fd = 2},   /* the command's output passes through to ours */
    };
    a.c.mon.pids = a.pids;
    struct cli_optset set = {"options", opts, on_opt, &a};
    struct cli_rest rest;
    int code = cli_command_parse_rest("monitor", argc, argv, usage, description, &set, 1, &rest);
    if (code != CLI_GO_ON)
        return code;
    a.c.argv = rest.n_after > 0 ? rest.after : NULL;
    struct rl_err e = {0};
    if (check_args(&a, &rest, &e) != 0)
        return cli_fail("monitor", &e);
    install_signals(&g_sig);
    struct mon_session *s;
    if (mon_session_start(&s, &a.c, &g_sig, &e) != 0)
        return monitor_fail(&e);
    if (mon_session_sample(s, &e) != 0) {
        mon_session_free(s);
        return monitor_fail(&e);
    }
    /* The end: complete files, the peak table, then the command's end when a signal stopped the
     * sampling (its output still passes through meanwhile). */
    int rc = mon_session_close(s, &e);
    if (!a.quiet)
        print_summary(stderr, mon_session_summary(s), a.c.mon.interval_ns);
    code = rc ? monitor_fail(&e) : 0;
    mon_session_wait_command(s);
    if (!code)
        code = end_status(mon_session_end(s));
    mon_session_free(s);
    return code;
}

const struct cli_cmd cli_cmd_monitor = {"monitor", "follow memory of any process tree over time (trace, CSV, peaks)", run};
