/* monitor/proc.c — readers for /proc/<pid>/stat, /proc/<pid>/status and /proc/meminfo.
 *
 * Each reader opens, reads and closes one small file (a few kB): O(file size), no allocation. A
 * process may exit between two reads; that is reported as RL_ENOENT, never as an error the
 * caller must print. */
#include "monitor/monitor.h"
#include "monitor/monitor_impl.h"   /* mon__read_stat */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads a /proc file into buf (NUL-terminated). Returns bytes read, or -1 with errno set. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            close(fd);
            errno = err;
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

/* Parses /proc/<pid>/stat. The command name is in parentheses and may itself contain spaces and
 * parentheses, so the fields after it are found from the last ')'. */
static int parse_stat(const char *text, struct mon_proc_stat *s)
{
    const char *open_p = strchr(text, '(');
    const char *close_p = strrchr(text, ')');
    if (!open_p || !close_p || close_p < open_p || close_p[1] != ' ')
        return -1;
    size_t n = (size_t)(close_p - open_p - 1);
    if (n >= sizeof s->comm)
        n = sizeof s->comm - 1;
    memcpy(s->comm, open_p + 1, n);
    s->comm[n] = 0;
    /* Fields from 3 (state) on: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
     * cmajflt utime(14) stime(15) cutime cstime priority nice num_threads(20) itrealvalue
     * starttime(22). */
    const char *p = close_p + 2;
    char state;
    int ppid;
    unsigned long long utime, stime, start;
    long threads;
    int got = sscanf(p,
                     "%c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %ld %*d %llu",
                     &state, &ppid, &utime, &stime, &threads, &start);
    if (got != 6)
        return -1;
    s->state = state;
    s->ppid = ppid;
    s->cpu_ticks = utime + stime;
    s->start_ticks = start;
    s->threads = (int)threads;
    return 0;
}

/* "Key:   1234 kB" -> bytes; missing keys leave *out unchanged. */
static void status_kb(const char *text, const char *key, int64_t *out)
{
    size_t klen = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
            long long kb = strtoll(p + klen + 1, NULL, 10);
            *out = (int64_t)kb * 1024;
            return;
        }
    }
}

int mon__read_stat(int pid, struct mon_proc_stat *s)
{
    memset(s, 0, sizeof *s);
    s->pid = pid;
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (read_small(path, buf, sizeof buf) < 0)
        return RL_ENOENT;
    return parse_stat(buf, s) == 0 ? 0 : RL_EIO;
}

int mon_read_proc(int pid, struct mon_proc_stat *s, struct rl_err *e)
{
    char path[64];
    int rc = mon__read_stat(pid, s);
    if (rc == RL_ENOENT)
        return rl_errf(e, RL_ENOENT, "pid %d: no such process", pid);
    if (rc)
        return rl_errf(e, RL_EIO, "/proc/%d/stat: unexpected format", pid);
    if (s->state == 'Z' || s->state == 'X')
        return 0;   /* a zombie has no memory left: all figures stay 0 */
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    char st[8192];
    if (read_small(path, st, sizeof st) < 0)
        return rl_errf(e, RL_ENOENT, "pid %d: no such process", pid);
    status_kb(st, "VmRSS", &s->rss_bytes);
    status_kb(st, "RssAnon", &s->anon_bytes);
    status_kb(st, "RssFile", &s->file_bytes);
    status_kb(st, "RssShmem", &s->shmem_bytes);
    status_kb(st, "VmHWM", &s->hwm_bytes);
    status_kb(st, "VmLck", &s->locked_bytes);
    status_kb(st, "VmPin", &s->pinned_bytes);
    status_kb(st, "VmSwap", &s->swap_bytes);
    int64_t threads = -1;
    const char *t = strstr(st, "\nThreads:");
    if (t)
        threads = strtoll(t + 9, NULL, 10);
    if (threads > 0)
        s->threads = (int)threads;
    return 0;
}

int mon_read_meminfo(struct mon_sys_stat *s, struct rl_err *e)
{
    memset(s, 0, sizeof *s);
    char buf[8192];
    if (read_small("/proc/meminfo", buf, sizeof buf) < 0)
        return rl_errf(e, RL_EENV, "/proc/meminfo: cannot read (%s)", strerror(errno));
    int64_t avail = -1, swap_total = 0, swap_free = 0;
    status_kb(buf, "MemTotal", &s->total_bytes);
    status_kb(buf, "MemAvailable", &avail);
    status_kb(buf, "SwapTotal", &swap_total);
    status_kb(buf, "SwapFree", &swap_free);
    if (avail < 0) {   /* kernels before 3.14: estimate as psutil does, free + buffers + cached */
        int64_t fr = 0, bu = 0, ca = 0;
        status_kb(buf, "MemFree", &fr);
        status_kb(buf, "Buffers", &bu);
        status_kb(buf, "Cached", &ca);
        avail = fr + bu + ca;
    }
    s->available_bytes = avail;
    s->used_bytes = s->total_bytes - avail;
    s->swap_used_bytes = swap_total - swap_free;
    return 0;
}

int mon_read_rank(int pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* NUL-separated KEY=VALUE entries; environments are rarely above a few tens of kB. */
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            if (cap >= (1u << 24))
                break;
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (!buf)
        return -1;
    buf[n] = 0;
    int rank = -1, mpi_rank = -1;
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
        const char *kv = buf + i;
        char *end;
        if (strncmp(kv, "RANK=", 5) == 0) {
            long v = strtol(kv + 5, &end, 10);
            if (end != kv + 5 && *end == 0 && v >= 0 && v < (1L << 30))
                rank = (int)v;
        } else if (strncmp(kv, "OMPI_COMM_WORLD_RANK=", 21) == 0) {
            long v = strtol(kv + 21, &end, 10);
            if (end != kv + 21 && *end == 0 && v >= 0 && v < (1L << 30))
                mpi_rank = (int)v;
        }
    }
    free(buf);
    return rank >= 0 ? rank : mpi_rank;
}
