/* monitor/monitor_impl.h — what monitor.c uses of proc.c beyond the public readers, and what
 * session.c uses of monitor.c. */
#ifndef RL_MONITOR_MONITOR_IMPL_H
#define RL_MONITOR_MONITOR_IMPL_H

#include "monitor/monitor.h"

/* Only /proc/<pid>/stat (pid, ppid, state, times, comm, threads): the cheap read used to walk
 * the process tree. Returns 0, RL_ENOENT or RL_EIO; memory figures stay 0. */
int mon__read_stat(int pid, struct mon_proc_stat *s);

/* The monotonic clock in nanoseconds (CLOCK_MONOTONIC): sample times, marks, deadlines. */
int64_t mon__mono_ns(void);

#endif
