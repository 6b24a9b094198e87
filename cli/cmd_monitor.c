/* cli/cmd_monitor.c — `ratiolab monitor`: per-process memory of any process tree over time.
 *
 * Drives monitor/ (which samples and writes the trace and CSV): parses the options, starts the
 * command (or checks the PIDs), runs the sampling loop, passes the command's output through when
 * --mark is given, handles SIGINT/SIGTERM (stop sampling, write complete files, forward the
 * signal to the command when it was sent to us alone) and prints the peak table. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <regex.h>      /* regcomp, regexec: --mark, POSIX extended */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>   /* SYS_pidfd_open */
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/flag_values.h"
#include "monitor/monitor.h"

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
    int pids[MAX_PIDS];      /* --pid */
    int n_pids;              /* entries in pids */
    int64_t interval_ns;     /* --interval */
    const char *out;         /* --out */
    const char *csv;         /* --csv */
    const char *mark;        /* --mark */
    bool no_gpu;             /* --no-gpu */
    bool quiet;              /* --quiet */
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
            if (a->n_pids == MAX_PIDS)
                rc = rl_errf(e, RL_EINVAL, "--pid: more than %d PIDs", MAX_PIDS);
            else
                rc = rl_parse_int("--pid", tok, 1, 1 << 30, &a->pids[a->n_pids++], e);
        }
        free(dup);
        if (!rc && a->n_pids == 0)
            rc = rl_errf(e, RL_EINVAL, "--pid: '%s' has no PID; expected P[,P...]", v);
        return rc;
    }
    case OPT_INTERVAL: return cli_parse_interval(v, &a->interval_ns, e);
    case OPT_OUT: a->out = v; return 0;
    case OPT_CSV: a->csv = v; return 0;
    case OPT_MARK: a->mark = v; return 0;
    case OPT_NO_GPU: a->no_gpu = true; return 0;
    case OPT_QUIET: a->quiet = true; return 0;
    }
    return 0;
}

/* ---- signals: the handler only records and forwards --------------------------------------- */

static volatile sig_atomic_t g_stop_sig;   /* last SIGINT/SIGTERM received, 0 if none */
static volatile sig_atomic_t g_n_sig;      /* how many were received */
static volatile pid_t g_child;             /* the command we started, 0 if none */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    g_stop_sig = sig;
    g_n_sig++;
    /* A terminal's Ctrl-C reaches the whole foreground group (the command included) with
     * si_code SI_KERNEL; forward only what was sent to us alone (kill: SI_USER, SI_QUEUE...). */
    if (g_child > 0 && si && si->si_code <= 0)
        kill(g_child, sig);
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the command's output with --mark ------------------------------------------------------ */

#define MAX_LINE_BYTES (1 << 20)   /* a longer line is matched in pieces of this size */

struct stream {
    int fd;              /* read end of the pipe, -1 once closed */
    int out_fd;          /* where the bytes pass through: 1 or 2 */
    const char *name;    /* "stdout" or "stderr" */
    char *line;          /* the current, unfinished line */
    size_t len;          /* bytes in line */
    size_t cap;          /* allocated */
    bool out_broken;     /* our own output failed (EPIPE): keep draining, stop writing */
};

static void write_all(struct stream *s, const char *p, size_t n)
{
    while (n && !s->out_broken) {
        ssize_t w = write(s->out_fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            s->out_broken = true;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

struct marker {
    regex_t re;          /* --mark, compiled */
    bool on;             /* --mark given */
    struct mon *m;       /* where marks go; NULL once monitoring stopped */
    int64_t t0_ns;       /* monotonic time of the first sample */
};

static void line_done(struct marker *mk, struct stream *s)
{
    s->line[s->len] = 0;
    if (s->len && s->line[s->len - 1] == '\r')
        s->line[s->len - 1] = 0;
    if (mk->m && regexec(&mk->re, s->line, 0, NULL, 0) == 0)
        mon_mark(mk->m, mono_ns() - mk->t0_ns, s->name, s->line);
    s->len = 0;
}

/* Reads what is available on s, passes it through at once and matches complete lines. */
static void pump(struct marker *mk, struct stream *s)
{
    char buf[65536];
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        if (s->len)
            line_done(mk, s);
        close(s->fd);
        s->fd = -1;
        return;
    }
    write_all(s, buf, (size_t)n);
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n' || s->len == MAX_LINE_BYTES) {
            if (buf[i] == '\n') {
                line_done(mk, s);
                continue;
            }
            line_done(mk, s);
        }
        if (s->len + 2 > s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 4096;
            char *nl = realloc(s->line, cap);
            if (!nl)
                continue;   /* out of memory: the byte still passed through, only matching loses it */
            s->line = nl;
            s->cap = cap;
        }
        s->line[s->len++] = buf[i];
    }
}

/* Waits until deadline_ns (monotonic), a signal, or the exit of the process behind pidfd (-1:
 * none), serving the output pipes meanwhile. A pidfd turns readable when its process exits, so a
 * command that ends is noticed at once, not at the next sample (which may be an hour away). */
static void wait_until(struct marker *mk, struct stream *st, int n_st, int pidfd, int64_t deadline_ns)
{
    for (;;) {
        int64_t left = deadline_ns - mono_ns();
        if (left <= 0 || g_stop_sig)
            return;
        struct pollfd pf[3];
        int map[3], n = 0;
        for (int i = 0; i < n_st; i++)
            if (st[i].fd >= 0) {
                pf[n].fd = st[i].fd;
                pf[n].events = POLLIN;
                map[n++] = i;
            }
        if (pidfd >= 0) {
            pf[n].fd = pidfd;
            pf[n].events = POLLIN;
            map[n++] = -1;
        }
        struct timespec ts = {left / 1000000000, left % 1000000000};
        int r = ppoll(pf, (nfds_t)n, &ts, NULL);
        if (r < 0)
            return;   /* EINTR: a signal or a child; the caller checks */
        for (int i = 0; i < n; i++) {
            if (!pf[i].revents)
                continue;
            if (map[i] < 0)
                return;   /* the command exited */
            pump(mk, &st[map[i]]);
        }
    }
}

/* ---- starting the command ---------------------------------------------------------------- */

struct saved_sig {
    struct sigaction intr, term, pipe;   /* dispositions we inherited, restored in the command */
};

/* Forks and execs argv. With `capture`, stdout/stderr go to pipes (read ends in out_fds).
 * Returns the pid, or -1 with e filled (exec failure is detected through a close-on-exec pipe,
 * so a missing command is an error here, before any sample). */
static pid_t start_command(char **argv, bool capture, int out_fds[2], const struct saved_sig *ss,
                           struct rl_err *e)
{
    int errp[2], p_out[2] = {-1, -1}, p_err[2] = {-1, -1};
    if (pipe2(errp, O_CLOEXEC) != 0 ||
        (capture && (pipe2(p_out, O_CLOEXEC) != 0 || pipe2(p_err, O_CLOEXEC) != 0))) {
        rl_errf(e, RL_EENV, "command: cannot create a pipe (%s)", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        rl_errf(e, RL_EENV, "command: cannot fork (%s)", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        sigaction(SIGINT, &ss->intr, NULL);
        sigaction(SIGTERM, &ss->term, NULL);
        sigaction(SIGPIPE, &ss->pipe, NULL);
        if (capture) {
            dup2(p_out[1], 1);   /* dup2 clears close-on-exec on the new descriptor */
            dup2(p_err[1], 2);
        }
        execvp(argv[0], argv);
        int err = errno;
        ssize_t w = write(errp[1], &err, sizeof err);
        (void)w;
        _exit(127);
    }
    close(errp[1]);
    if (capture) {
        close(p_out[1]);
        close(p_err[1]);
        out_fds[0] = p_out[0];
        out_fds[1] = p_err[0];
    }
    int err = 0;
    ssize_t n;
    do
        n = read(errp[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    close(errp[0]);
    if (n == (ssize_t)sizeof err) {
        waitpid(pid, NULL, 0);
        if (capture) {
            close(out_fds[0]);
            close(out_fds[1]);
        }
        rl_errf(e, RL_EINVAL, "command: cannot run '%s' (%s)", argv[0], strerror(err));
        return -1;
    }
    return pid;
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

static int fail_input(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail_input(const char *fmt, ...)
{
    struct rl_err e = {0};
    char msg[RL_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rl_errf(&e, RL_EINVAL, "%s", msg);   /* one line, whatever the user typed */
    return cli_fail("monitor", &e);
}

/* What the phases of a monitor run share, from the options to the exit status. */
struct session {
    struct args a;           /* the options */
    struct cli_rest rest;    /* the command after -- */
    bool cmd;                /* a command is started (-- CMD), not --pid */
    struct marker mk;        /* --mark */
    struct saved_sig ss;     /* the dispositions the command gets back */
    struct stream st[2];     /* the command's stdout and stderr with --mark */
    int n_st;                /* streams in use: 2 with --mark, else 0 */
    struct mon *m;           /* the monitor */
    pid_t child;             /* the command, 0 with --pid */
    int pidfd;               /* readable when the command exits; -1 none */
    bool child_done;         /* the command was reaped (or there is none) */
    int child_status;        /* its wait status once reaped */
};

/* The options: --help and --version, then either --pid or -- CMD, and --mark compiled. Returns
 * false with *code the exit status when the run ends here. */
static bool parse_session(struct session *s, int argc, char **argv, int *code)
{
    struct cli_optset set = {"options", opts, on_opt, &s->a};
    struct rl_err e = {0};
    int rc = cli_parse(argc, argv, &set, 1, &s->rest, &e);
    *code = 0;
    if (rc == CLI_VERSION) {
        printf("ratiolab %s\n", RL_VERSION_STRING);
        return false;
    }
    if (rc == CLI_HELP) {
        cli_help(stdout, usage, description, &set, 1);
        return false;
    }
    if (rc) {
        *code = cli_fail("monitor", &e);
        return false;
    }
    if (s->rest.n_pos) {
        *code = fail_input("unexpected argument '%s'; put the command after --", s->rest.pos[0]);
        return false;
    }
    s->cmd = s->rest.n_after > 0;
    if (s->cmd == (s->a.n_pids > 0)) {
        *code = fail_input("%s", s->cmd ? "--pid: give either --pid or -- CMD, not both"
                                        : "nothing to monitor: give --pid P[,P...] or -- CMD [ARGS...]");
        return false;
    }
    s->mk.on = s->a.mark != NULL;
    if (!s->a.mark)
        return true;
    if (!s->cmd) {
        *code = fail_input("--mark: '%s' needs a command started by the monitor (-- CMD); the "
                           "output of --pid processes cannot be read", s->a.mark);
        return false;
    }
    int rr = regcomp(&s->mk.re, s->a.mark, REG_EXTENDED | REG_NOSUB);
    if (rr) {
        char why[200];
        regerror(rr, &s->mk.re, why, sizeof why);
        rl_errf(&e, RL_EINVAL, "--mark: '%s' is not a POSIX extended regular expression (%s)", s->a.mark, why);
        *code = cli_fail("monitor", &e);
        return false;
    }
    return true;
}

/* Signals first, so a Ctrl-C between here and the end still writes complete files. */
static void install_signals(struct saved_sig *ss)
{
    struct sigaction sa = {0};
    sa.sa_sigaction = on_signal;
    /* SA_RESTART keeps file writes and waits going; ppoll and nanosleep still return EINTR. */
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &ss->intr);
    sigaction(SIGTERM, &sa, &ss->term);
    struct sigaction ign = {0};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &ss->pipe);   /* a closed stdout must not kill us before the files are written */
}

/* The monitor, then the command (or the --pid processes) under it. The outputs are opened (as
 * temporary files) and NVML loaded before the command starts: a bad --out or --csv is reported
 * without running anything, and the first sample is not delayed by NVML's start-up. Returns 0, or
 * the exit status of a failure. */
/* Puts the flags in place of the fields mon_open and mon_add_root name. */
static int monitor_err(struct rl_err *e)
{
    static const char *const flags[][2] = {
        {"pids", "--pid"}, {"pid", "--pid"}, {"interval_ns", "--interval"}, {"trace_path", "--out"}, {"csv_path", "--csv"},
    };
    for (size_t i = 0; i < RL_COUNT(flags); i++)
        cli_err_flag(e, flags[i][0], flags[i][1]);
    return e->code;
}

static int start_session(struct session *s)
{
    struct rl_err e = {0};
    struct mon_config cfg = {s->a.pids, s->a.n_pids, s->a.interval_ns, s->a.out, s->a.csv, s->a.no_gpu,
                             "# ratiolab " RL_VERSION_STRING " monitor\n"};   /* the CSV's comment header */
    if (s->cmd)
        cfg.n_pids = 0;
    if (mon_open(&s->m, &cfg, &e) != 0) {
        monitor_err(&e);
        if (s->mk.on)
            regfree(&s->mk.re);
        return cli_fail("monitor", &e);
    }
    if (s->cmd) {
        int fds[2] = {-1, -1};
        s->child = start_command(s->rest.after, s->mk.on, fds, &s->ss, &e);
        if (s->child < 0 || mon_add_root(s->m, s->child, &e) != 0) {
            if (s->child > 0) {
                kill(s->child, SIGTERM);
                waitpid(s->child, NULL, 0);
            }
            mon_free(s->m);
            if (s->mk.on)
                regfree(&s->mk.re);
            monitor_err(&e);
            return cli_fail("monitor", &e);
        }
        g_child = s->child;
        if (s->mk.on) {
            s->st[0].fd = fds[0];
            s->st[1].fd = fds[1];
        }
    }
    /* pidfd_open (Linux 5.3): without it the exit is noticed at the next sample, as before. */
#ifdef SYS_pidfd_open
    s->pidfd = s->child > 0 ? (int)syscall(SYS_pidfd_open, s->child, 0) : -1;
#else
    s->pidfd = -1;
#endif
    s->n_st = s->mk.on ? 2 : 0;
    s->child_done = s->child == 0;
    return 0;
}

/* Reaps the command when it has exited, without blocking. */
static bool reap(struct session *s)
{
    int wst;
    if (waitpid(s->child, &wst, WNOHANG) != s->child)
        return false;
    s->child_done = true;
    s->child_status = wst;
    return true;
}

/* Reads what is already in the pipe of st, without waiting. */
static void drain(struct marker *mk, struct stream *st)
{
    while (st->fd >= 0) {
        struct pollfd pf = {st->fd, POLLIN, 0};
        if (poll(&pf, 1, 0) <= 0)
            break;
        pump(mk, st);
    }
}

/* The sampling loop: a sample every interval until the followed processes are gone or a signal
 * stops it, the command's output passed through meanwhile. Returns 0, or the exit status of a
 * failed sample. */
static int sample_session(struct session *s)
{
    struct rl_err e = {0};
    int64_t t0 = mono_ns(), next = t0;
    s->mk.m = s->m;
    s->mk.t0_ns = t0;
    for (;;) {
        /* Not wait4's ru_maxrss: it is the largest of the command and every descendant it waited
         * for (a launcher would show its ranks' peak), not the command's own. */
        if (!s->child_done && reap(s)) {
            next = mono_ns();   /* sample now: the tree may be gone already */
            if (s->pidfd >= 0) {
                close(s->pidfd);
                s->pidfd = -1;
            }
        }
        if (g_stop_sig)
            break;
        int64_t now = mono_ns();
        if (now >= next) {
            /* Lines already written come before this sample, so marks and samples keep order. */
            for (int i = 0; i < s->n_st; i++) {
                struct pollfd pf = {s->st[i].fd, POLLIN, 0};
                if (s->st[i].fd >= 0 && poll(&pf, 1, 0) > 0)
                    pump(&s->mk, &s->st[i]);
            }
            now = mono_ns();
            int live = mon_sample(s->m, now - t0, &e);
            if (live < 0) {
                mon_abort(s->m);
                mon_free(s->m);
                if (s->mk.on)
                    regfree(&s->mk.re);
                monitor_err(&e);
                return cli_fail("monitor", &e);
            }
            while (next <= now)
                next += s->a.interval_ns;
            /* The command is a zombie (it exited since the last reap): collect it now. Not
             * blocking: should it still run (unreadable for a moment), sampling goes on. */
            if (live == 0 && !s->child_done)
                reap(s);
            if (live == 0 && s->child_done)
                break;
        }
        wait_until(&s->mk, s->st, s->n_st, s->pidfd, next);
    }
    if (s->pidfd >= 0)
        close(s->pidfd);
    s->pidfd = -1;
    return 0;
}

/* The end: the output still in the pipes (it belongs before the end of the trace), complete
 * files, the peak table, then the command's end when a signal stopped the sampling. Returns the
 * exit status. */
static int finish_session(struct session *s)
{
    struct rl_err e = {0};
    int exit_code = 0;
    for (int i = 0; i < s->n_st; i++)
        drain(&s->mk, &s->st[i]);
    int stop_sig = g_stop_sig;
    int rc = mon_close(s->m, &e);
    s->mk.m = NULL;
    if (!s->a.quiet)
        print_summary(stderr, mon_summary(s->m), s->a.interval_ns);
    mon_free(s->m);
    if (rc) {
        monitor_err(&e);
        cli_fail("monitor", &e);
        exit_code = rl_exit_code(rc);
    }
    /* Stopped by a signal while the command runs: the files are written; keep passing its output
     * through until it exits (a second signal stops waiting). */
    while (!s->child_done && g_n_sig < 2) {
        int64_t until = mono_ns() + 100000000;
        g_stop_sig = 0;
        wait_until(&s->mk, s->st, s->n_st, -1, until);
        reap(s);
    }
    for (int i = 0; i < 2; i++) {
        drain(&s->mk, &s->st[i]);
        if (s->st[i].fd >= 0)
            close(s->st[i].fd);
        free(s->st[i].line);
    }
    if (s->mk.on)
        regfree(&s->mk.re);
    if (exit_code)
        return exit_code;
    if (stop_sig)
        return 128 + stop_sig;
    if (s->child > 0 && s->child_done) {
        if (WIFEXITED(s->child_status))
            return WEXITSTATUS(s->child_status);
        if (WIFSIGNALED(s->child_status))
            return 128 + WTERMSIG(s->child_status);
    }
    return 0;
}

static int run(int argc, char **argv)
{
    struct session s = {
        .a = {.interval_ns = 100000000},
        .st = {{.fd = -1, .out_fd = 1, .name = "stdout"}, {.fd = -1, .out_fd = 2, .name = "stderr"}},
        .pidfd = -1,
    };
    int code;
    if (!parse_session(&s, argc, argv, &code))
        return code;
    install_signals(&s.ss);
    if ((code = start_session(&s)) != 0 || (code = sample_session(&s)) != 0)
        return code;
    return finish_session(&s);
}

const struct cli_cmd cli_cmd_monitor = {"monitor", "follow memory of any process tree over time (trace, CSV, peaks)", run};
