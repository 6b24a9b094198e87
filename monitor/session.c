/* monitor/session.c — one monitor run: starts the command (fork/exec, a close-on-exec pipe for
 * exec failures, pipes for its output when lines are marked, a pidfd for its exit), samples on
 * the interval's deadlines while passing the command's output through, and ends with complete
 * files and, after a signal, the command waited for.
 *
 * Time: every deadline and mark is on the monotonic clock, relative to the first sample. A wait
 * between two samples is one ppoll over the output pipes and the pidfd, so a command that exits
 * or writes is served at once, and a signal (ppoll returns EINTR; the handlers are installed with
 * SA_RESTART, which ppoll ignores) ends the wait. */
#include "monitor/session.h"
#include "monitor/monitor_impl.h"   /* mon__mono_ns */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>         /* regcomp, regexec: the marks, POSIX extended */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>   /* SYS_pidfd_open */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the command's output with marks ------------------------------------------------------- */

#define MON__MAX_LINE_BYTES (1 << 20)   /* a longer line is matched in pieces of this size */

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
    regex_t re;          /* mark_regex, compiled */
    bool on;             /* mark_regex given */
    struct mon *m;       /* where marks go; NULL once monitoring stopped */
    int64_t t0_ns;       /* monotonic time of the first sample */
};

static void line_done(struct marker *mk, struct stream *s)
{
    s->line[s->len] = 0;
    if (s->len && s->line[s->len - 1] == '\r')
        s->line[s->len - 1] = 0;
    if (mk->m && regexec(&mk->re, s->line, 0, NULL, 0) == 0)
        mon_mark(mk->m, mon__mono_ns() - mk->t0_ns, s->name, s->line);
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
        if (buf[i] == '\n' || s->len == MON__MAX_LINE_BYTES) {
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

/* Waits until deadline_ns (monotonic), a signal, or the exit of the process behind pidfd (-1:
 * none), serving the output pipes meanwhile. A pidfd turns readable when its process exits, so a
 * command that ends is noticed at once, not at the next sample (which may be an hour away). */
static void wait_until(struct marker *mk, struct stream *st, int n_st, int pidfd, int64_t deadline_ns,
                       const struct mon_signals *sig)
{
    for (;;) {
        int64_t left = deadline_ns - mon__mono_ns();
        if (left <= 0 || sig->stop_sig)
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

/* Forks and execs argv. With `capture`, stdout/stderr go to pipes (read ends in out_fds). The
 * command gets back the dispositions in sig. Returns 0 with *pidp its pid, or RL_EINVAL / RL_EENV
 * with e filled (exec failure is detected through a close-on-exec pipe, so a missing command is an
 * error here, before any sample). */
static int start_command(char *const *argv, bool capture, int out_fds[2], const struct mon_signals *sig,
                         pid_t *pidp, struct rl_err *e)
{
    int errp[2], p_out[2] = {-1, -1}, p_err[2] = {-1, -1};
    if (pipe2(errp, O_CLOEXEC) != 0 ||
        (capture && (pipe2(p_out, O_CLOEXEC) != 0 || pipe2(p_err, O_CLOEXEC) != 0))) {
        return rl_errf(e, RL_EENV, "command: cannot create a pipe (%s)", strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        return rl_errf(e, RL_EENV, "command: cannot fork (%s)", strerror(errno));
    }
    if (pid == 0) {
        sigaction(SIGINT, &sig->cmd_int, NULL);
        sigaction(SIGTERM, &sig->cmd_term, NULL);
        sigaction(SIGPIPE, &sig->cmd_pipe, NULL);
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
        return rl_errf(e, RL_EINVAL, "command: cannot run '%s' (%s)", argv[0], strerror(err));
    }
    *pidp = pid;
    return 0;
}

/* ---- the session ------------------------------------------------------------------------- */

struct mon_session {
    struct mon_signals *sig;     /* shared with the caller's signal handlers */
    int64_t interval_ns;         /* sampling interval */
    struct marker mk;            /* mark_regex */
    struct stream st[2];         /* the command's stdout and stderr with mark_regex */
    int n_st;                    /* streams in use: 2 with mark_regex, else 0 */
    struct mon *m;               /* the monitor */
    pid_t child;                 /* the command, 0 with roots given */
    int pidfd;                   /* readable when the command exits; -1 none */
    bool child_done;             /* the command was reaped (or there is none) */
    struct mon_session_end end;  /* how it ended */
};

void mon_session_free(struct mon_session *s)
{
    if (!s)
        return;
    mon_free(s->m);
    if (s->pidfd >= 0)
        close(s->pidfd);
    for (int i = 0; i < 2; i++) {
        if (s->st[i].fd >= 0)
            close(s->st[i].fd);
        free(s->st[i].line);
    }
    if (s->mk.on)
        regfree(&s->mk.re);
    free(s);
}

/* The monitor, then the command (or the roots) under it. The outputs are opened (as temporary
 * files) and NVML loaded before the command starts: a bad output path is reported without running
 * anything, and the first sample is not delayed by NVML's start-up. */
int mon_session_start(struct mon_session **sp, const struct mon_session_config *c, struct mon_signals *sig,
                      struct rl_err *e)
{
    *sp = NULL;
    struct mon_session *s = calloc(1, sizeof *s);
    if (!s)
        return rl_errf(e, RL_ENOMEM, "session: out of memory");
    s->sig = sig;
    s->interval_ns = c->mon.interval_ns;
    s->st[0] = (struct stream){.fd = -1, .out_fd = c->out_fd, .name = "stdout"};
    s->st[1] = (struct stream){.fd = -1, .out_fd = c->err_fd, .name = "stderr"};
    s->pidfd = -1;
    if (c->mark_regex) {
        int rr = regcomp(&s->mk.re, c->mark_regex, REG_EXTENDED | REG_NOSUB);
        if (rr) {
            char why[200];
            regerror(rr, &s->mk.re, why, sizeof why);
            free(s);
            return rl_errf(e, RL_EINVAL, "mark_regex: '%s' is not a POSIX extended regular expression (%s)",
                           c->mark_regex, why);
        }
        s->mk.on = true;
    }
    int rc = mon_open(&s->m, &c->mon, e);
    if (rc == 0 && c->argv) {
        int fds[2] = {-1, -1};
        rc = start_command(c->argv, s->mk.on, fds, sig, &s->child, e);
        if (rc == 0 && s->mk.on) {
            s->st[0].fd = fds[0];
            s->st[1].fd = fds[1];
        }
        if (rc == 0 && (rc = mon_add_root(s->m, s->child, e)) != 0) {
            kill(s->child, SIGTERM);
            waitpid(s->child, NULL, 0);
        }
    }
    if (rc) {
        mon_session_free(s);
        return rc;
    }
    sig->cmd_pid = s->child;
    /* pidfd_open (Linux 5.3): without it the exit is noticed at the next sample, as before. */
#ifdef SYS_pidfd_open
    s->pidfd = s->child > 0 ? (int)syscall(SYS_pidfd_open, s->child, 0) : -1;
#endif
    s->n_st = s->mk.on ? 2 : 0;
    s->child_done = s->child == 0;
    *sp = s;
    return 0;
}

/* Reaps the command when it has exited, without blocking. */
static bool reap(struct mon_session *s)
{
    int wst;
    if (waitpid(s->child, &wst, WNOHANG) != s->child)
        return false;
    s->child_done = true;
    s->end.cmd_reaped = true;
    s->end.cmd_wait_status = wst;
    return true;
}

int mon_session_sample(struct mon_session *s, struct rl_err *e)
{
    int64_t t0 = mon__mono_ns(), next = t0;
    s->mk.m = s->m;
    s->mk.t0_ns = t0;
    for (;;) {
        /* Not wait4's ru_maxrss: it is the largest of the command and every descendant it waited
         * for (a launcher would show its ranks' peak), not the command's own. */
        if (!s->child_done && reap(s)) {
            next = mon__mono_ns();   /* sample now: the tree may be gone already */
            if (s->pidfd >= 0) {
                close(s->pidfd);
                s->pidfd = -1;
            }
        }
        if (s->sig->stop_sig)
            break;
        int64_t now = mon__mono_ns();
        if (now >= next) {
            /* Lines already written come before this sample, so marks and samples keep order. */
            for (int i = 0; i < s->n_st; i++) {
                struct pollfd pf = {s->st[i].fd, POLLIN, 0};
                if (s->st[i].fd >= 0 && poll(&pf, 1, 0) > 0)
                    pump(&s->mk, &s->st[i]);
            }
            now = mon__mono_ns();
            int live = mon_sample(s->m, now - t0, e);
            if (live < 0) {
                mon_abort(s->m);
                s->mk.m = NULL;
                return live;
            }
            while (next <= now)
                next += s->interval_ns;
            /* The command is a zombie (it exited since the last reap): collect it now. Not
             * blocking: should it still run (unreadable for a moment), sampling goes on. */
            if (live == 0 && !s->child_done)
                reap(s);
            if (live == 0 && s->child_done)
                break;
        }
        wait_until(&s->mk, s->st, s->n_st, s->pidfd, next, s->sig);
    }
    if (s->pidfd >= 0)
        close(s->pidfd);
    s->pidfd = -1;
    return 0;
}

int mon_session_close(struct mon_session *s, struct rl_err *e)
{
    for (int i = 0; i < s->n_st; i++)
        drain(&s->mk, &s->st[i]);
    s->end.stop_sig = s->sig->stop_sig;
    int rc = mon_close(s->m, e);
    s->mk.m = NULL;
    return rc;
}

const struct mon_summary *mon_session_summary(const struct mon_session *s)
{
    return mon_summary(s->m);
}

void mon_session_wait_command(struct mon_session *s)
{
    /* Stopped by a signal while the command runs: the files are written; keep passing its output
     * through until it exits (a second signal stops waiting). */
    while (!s->child_done && s->sig->n_sig < 2) {
        int64_t until = mon__mono_ns() + 100000000;
        s->sig->stop_sig = 0;
        wait_until(&s->mk, s->st, s->n_st, -1, until, s->sig);
        reap(s);
    }
    for (int i = 0; i < 2; i++)
        drain(&s->mk, &s->st[i]);
}

const struct mon_session_end *mon_session_end(const struct mon_session *s)
{
    return &s->end;
}
