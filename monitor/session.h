/* monitor/session.h — one monitor run from start to end: the command started under the monitor
 * (or the given root processes), the sampling loop on its deadlines, the command's output passed
 * through with the lines matching a regular expression turned into marks, and the end (the
 * output still in the pipes, complete files, the command waited for after a signal).
 *
 * The session installs no signal handler and never reads argv: the caller (cli/cmd_monitor.c)
 * installs SIGINT/SIGTERM handlers that record into the session's struct mon_signals, and gives
 * the options as data. Phases, in order: mon_session_start, mon_session_sample,
 * mon_session_close (the summary is readable from then on), mon_session_wait_command,
 * mon_session_free. */
#ifndef RL_MONITOR_SESSION_H
#define RL_MONITOR_SESSION_H

#include <signal.h>      /* sig_atomic_t, struct sigaction */
#include <stdbool.h>
#include <sys/types.h>   /* pid_t */

#include "common/rl.h"
#include "monitor/monitor.h"

/* What a SIGINT/SIGTERM handler shares with a session. The caller's handler writes stop_sig and
 * n_sig and reads cmd_pid (to forward a signal sent to the monitor alone); the session reads the
 * first two, clears stop_sig while it waits for the command after a stop, and sets cmd_pid once
 * the command runs. The dispositions the handlers replaced are given back to the command. */
struct mon_signals {
    volatile sig_atomic_t stop_sig;   /* last SIGINT/SIGTERM received, 0 if none */
    volatile sig_atomic_t n_sig;      /* how many were received */
    volatile pid_t cmd_pid;           /* the command the session started, 0 if none */
    struct sigaction cmd_int;         /* SIGINT's disposition before the caller's handler */
    struct sigaction cmd_term;        /* SIGTERM's, likewise */
    struct sigaction cmd_pipe;        /* SIGPIPE's (the caller ignores SIGPIPE) */
};

struct mon_session_config {
    struct mon_config mon;      /* the monitor: roots (n_pids 0 with argv), interval, outputs */
    char *const *argv;          /* the command to start and follow, NULL-terminated; NULL with roots */
    const char *mark_regex;     /* POSIX extended: matching lines of the command's output become
                                   marks; NULL for none (the output is then not captured) */
    int out_fd;                 /* where the command's stdout passes through with mark_regex (1) */
    int err_fd;                 /* where its stderr passes through with mark_regex (2) */
};

/* How a session ended, valid after mon_session_wait_command. */
struct mon_session_end {
    int stop_sig;               /* the signal that stopped the sampling, 0 if none */
    bool cmd_reaped;            /* a command was started and has been waited for */
    int cmd_wait_status;        /* its wait status (WIFEXITED, WIFSIGNALED) when cmd_reaped */
};

struct mon_session;

/* Compiles mark_regex (RL_EINVAL naming "mark_regex"), opens the monitor (outputs as temporary
 * files, NVML loaded: a bad output path is refused before anything runs; mon_open's errors), then
 * starts the command (RL_EINVAL "command: cannot run ..." when it cannot be executed, detected
 * before any sample; RL_EENV when no pipe or process can be made) and follows it. sig must live
 * until mon_session_free. On failure nothing is left: no files, no command. */
int mon_session_start(struct mon_session **s, const struct mon_session_config *c, struct mon_signals *sig,
                      struct rl_err *e);
/* The sampling loop: a sample every interval until every followed process has exited or a
 * signal was recorded, the command's output passed through meanwhile and its exit noticed at once
 * (pidfd). Returns 0, or the negative RL_E* of a failed sample (the outputs are then removed). */
int mon_session_sample(struct mon_session *s, struct rl_err *e);
/* Passes through the output already in the pipes (its marks belong before the end of the
 * trace), then finishes and commits the outputs (mon_close). Returns 0 or mon_close's error. */
int mon_session_close(struct mon_session *s, struct rl_err *e);
/* The peaks, valid from mon_session_close until mon_session_free. */
const struct mon_summary *mon_session_summary(const struct mon_session *s);
/* When a signal stopped the sampling while the command runs: keeps passing its output through
 * until it exits (a second signal stops waiting). Then reads the pipes to their end. */
void mon_session_wait_command(struct mon_session *s);
const struct mon_session_end *mon_session_end(const struct mon_session *s);
/* Frees the session; a command still running is left alone. */
void mon_session_free(struct mon_session *s);

#endif
