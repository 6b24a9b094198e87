/* monitor/monitor.c — follows a process tree, samples it and writes the trace and CSV.
 *
 * Per sample: one pass over /proc (a directory listing, and the stat file of each pid not seen
 * at the previous sample; O(P log P) for P processes on the machine) finds the followed set, a fixpoint over ppid links adds new descendants (O(P x depth)),
 * then each followed live process costs one read of /proc/<pid>/status. Peaks are kept per
 * process and for the per-sample sums; samples are streamed out, so memory is O(processes ever
 * followed), not O(samples).
 *
 * Trace layout: one process track per PID (named "<comm> (<pid>)", plus " rank <r>" when its
 * environment has RANK or OMPI_COMM_WORLD_RANK) with counter "memory"
 * (series rss_bytes, anon_bytes, file_bytes, shmem_bytes, locked_bytes, pinned_bytes,
 * swap_bytes), "gpu" (gpu_bytes) and "cpu" (cpu_percent, threads); a value is written only
 * when it changed since the previous sample of that process (counters are step functions, so
 * this loses nothing), and all go to 0 when the process is seen gone. Track MON_TREE_PID holds
 * "tree memory" (the per-sample sums), "system memory" (used_bytes = MemTotal - MemAvailable,
 * the machine-wide figure DeepSpeed logs), "gpu<i> memory" (NVML used per device) and the marks. */
#include "monitor/monitor.h"
#include "monitor/monitor_impl.h"   /* mon__read_stat, mon__mono_ns */
#include "traces/layout.h"          /* TRACE_COUNTER_* */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "traces/schema.h"         /* trace_mon_cols, trace_csv_header, trace_csv_row: the CSV's one table */
#include "traces/trace.h"

#define MON__MAX_GPU_PIDS 1024   /* GPU processes read per sample, all devices together */
#define MON__FULL_EVERY 50       /* every this many samples, every /proc/<pid>/stat is read again */

/* Series written on each process's "memory" counter, in this order. */
enum { S_RSS, S_ANON, S_FILE, S_SHMEM, S_LOCKED, S_PINNED, S_SWAP, S_GPU, S_CPU, S_THREADS, S_N };
static const char *const series_name[] = {
    "rss_bytes", "anon_bytes", "file_bytes", "shmem_bytes", "locked_bytes", "pinned_bytes",
    "swap_bytes", "gpu_bytes", "cpu_percent", "threads",
};
/* Memory counters take the trace layout's names, so a monitored process's tracks read as an
 * executor's rank's (traces/layout.h). */
static const char *const series_counter[] = {
    TRACE_COUNTER_HOST_MEMORY, TRACE_COUNTER_HOST_MEMORY, TRACE_COUNTER_HOST_MEMORY, TRACE_COUNTER_HOST_MEMORY,
    TRACE_COUNTER_HOST_MEMORY, TRACE_COUNTER_HOST_MEMORY, TRACE_COUNTER_HOST_MEMORY, TRACE_COUNTER_GPU_MEMORY,
    "cpu", "cpu",
};
_Static_assert(RL_COUNT(series_name) == S_N && RL_COUNT(series_counter) == S_N, "a name and a counter per series");

/* One followed process. */
struct mon__proc {
    struct mon_peak peak;     /* what the summary shows */
    uint64_t start_ticks;     /* identity with pid, against PID reuse */
    uint64_t prev_cpu_ticks;  /* utime + stime at the previous sample */
    int64_t prev_t_ns;        /* time of the previous sample, -1 before the first */
    double last[S_N];         /* last values written to the trace (NaN: none yet) */
    bool named;               /* process_name metadata written for the current comm */
    int rank_tries;           /* samples since naming in which the rank was looked for again */
    bool seen;                /* alive at the sample being taken */
    bool gone;                /* seen exited; never followed again */
};

/* The stat of every process on the machine at one sample (for the tree walk). */
struct mon__all {
    struct mon_proc_stat *s;  /* entries */
    int n;                    /* used */
    int cap;                  /* allocated */
};

struct mon {
    struct mon_config cfg;        /* copy of the configuration (paths not owned) */
    struct mon__proc *procs;      /* followed processes, in order of discovery */
    int n_procs;                  /* used */
    int cap_procs;                /* allocated */
    struct mon_peak *peaks;       /* summary view, rebuilt by mon_summary */
    struct mon_summary sum;       /* the summary */
    struct mon__all all;          /* every process's stat at the last sample, sorted by pid */
    struct mon__all all_next;     /* scratch for the next listing (swapped with all) */
    int *pids_buf;                /* scratch: pids read from /proc */
    int cap_pids;                 /* allocated entries in pids_buf */
    struct trace *trace;          /* or NULL */
    struct rl_outfile csv;        /* csv.fp NULL when no CSV */
    struct mon_gpu *gpu;          /* or NULL (unavailable) */
    int gpu_pids[MON__MAX_GPU_PIDS];      /* scratch: PIDs NVML reported */
    int64_t gpu_bytes[MON__MAX_GPU_PIDS]; /* scratch: their bytes */
    double last_sys[4 + 2 * MON_MAX_GPUS]; /* last system values written (NaN: none) */
    double last_tree[S_N];        /* last tree sums written (NaN: none) */
    long clk_tck;                 /* sysconf(_SC_CLK_TCK) */
    uint64_t boot_ticks_at_open;  /* uptime in ticks at mon_open minus monotonic time then */
    int64_t mono_at_open_ns;      /* CLOCK_MONOTONIC at mon_open */
    int64_t real_at_open_ns;      /* CLOCK_REALTIME at mon_open (the CSV's time_utc = this + t_ns) */
    int err;                      /* sticky output error: the first one (rl_err_first) */
    struct rl_err err_e;          /* its message */
};

int64_t mon__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- enumeration of /proc ------------------------------------------------------------------ */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Lists /proc into m->all, sorted by pid. Reading every /proc/<pid>/stat costs about 20 us per
 * process, so a pid already listed at the previous sample keeps its entry (ppid, start time)
 * and only new pids are read; every MON__FULL_EVERY samples all are read again. Followed
 * processes are re-read by mon_read_proc anyway (state, identity). A pid that exited and was
 * reused within one interval keeps the old entry until the next full read: a descendant
 * started that way is found up to MON__FULL_EVERY samples late. O(P log P). */
static int read_all_procs(struct mon *m, bool full, struct rl_err *e)
{
    DIR *d = opendir("/proc");
    if (!d)
        return rl_errf(e, RL_EENV, "monitor: cannot list /proc (%s)", strerror(errno));
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        if (rl_grow(&m->pids_buf, &m->cap_pids, sizeof *m->pids_buf, n + 1, 1024)) {
            closedir(d);
            return rl_errf(e, RL_ENOMEM, "monitor: out of memory for %d process ids", n + 1);
        }
        m->pids_buf[n++] = atoi(de->d_name);
    }
    closedir(d);
    qsort(m->pids_buf, (size_t)n, sizeof *m->pids_buf, cmp_int);
    struct mon__all *old = &m->all, *nw = &m->all_next;
    if (nw->cap < n) {
        struct mon_proc_stat *ns = realloc(nw->s, (size_t)n * sizeof *ns);
        if (!ns)
            return rl_errf(e, RL_ENOMEM, "monitor: out of memory for %d processes", n);
        nw->s = ns;
        nw->cap = n;
    }
    nw->n = 0;
    int j = 0;
    for (int i = 0; i < n; i++) {
        int pid = m->pids_buf[i];
        while (j < old->n && old->s[j].pid < pid)
            j++;
        if (!full && j < old->n && old->s[j].pid == pid)
            nw->s[nw->n++] = old->s[j];
        else if (mon__read_stat(pid, &nw->s[nw->n]) == 0)
            nw->n++;
    }
    struct mon__all tmp = *old;   /* swap the two buffers */
    *old = *nw;
    *nw = tmp;
    return 0;
}

static struct mon__proc *find_proc(struct mon *m, int pid, uint64_t start_ticks)
{
    for (int i = 0; i < m->n_procs; i++)
        if (m->procs[i].peak.pid == pid && m->procs[i].start_ticks == start_ticks)
            return &m->procs[i];
    return NULL;
}

static struct mon__proc *add_proc(struct mon *m, const struct mon_proc_stat *s)
{
    if (rl_grow(&m->procs, &m->cap_procs, sizeof *m->procs, m->n_procs + 1, 16))
        return NULL;
    struct mon__proc *p = &m->procs[m->n_procs++];
    memset(p, 0, sizeof *p);
    p->peak.pid = s->pid;
    p->peak.ppid = s->ppid;
    snprintf(p->peak.comm, sizeof p->peak.comm, "%s", s->comm);
    p->peak.rank = -1;
    p->peak.gpu_bytes = MON_UNAVAILABLE;
    p->start_ticks = s->start_ticks;
    p->prev_t_ns = -1;
    for (int k = 0; k < S_N; k++)
        p->last[k] = NAN;
    return p;
}

/* Index of pid in m->all (sorted by pid), or -1. O(log P). */
static int index_of(const struct mon__all *a, int pid)
{
    int lo = 0, hi = a->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (a->s[mid].pid == pid)
            return mid;
        if (a->s[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Marks every process in m->all that is followed: a known one (same pid and start time), or
 * one whose parent is followed (and started no later than it, against PID reuse). The listing
 * is sorted by pid so a parent is found by binary search; passes repeat until nothing changes,
 * one per generation of new descendants: O(P log P x depth) for P processes. */
static int discover(struct mon *m, bool *followed /* 2 x m->all.n entries */, struct rl_err *e)
{
    struct mon__all *a = &m->all;   /* sorted by pid (read_all_procs) */
    /* known[i]: already in m->procs (followed now, or retired: a retired process listed again
     * is a zombie not yet reaped and must not be added a second time). */
    bool *known = followed + a->n;
    for (int i = 0; i < a->n; i++) {
        const struct mon__proc *p = find_proc(m, a->s[i].pid, a->s[i].start_ticks);
        known[i] = p != NULL;
        followed[i] = p && !p->gone;
    }
    bool changed = true;
    while (changed) {
        changed = false;
        for (int i = 0; i < a->n; i++) {
            if (followed[i] || known[i])
                continue;
            int j = index_of(a, a->s[i].ppid);
            if (j >= 0 && followed[j] && a->s[j].start_ticks <= a->s[i].start_ticks) {
                if (!add_proc(m, &a->s[i]))
                    return rl_errf(e, RL_ENOMEM, "monitor: out of memory for %d followed processes",
                                   m->n_procs + 1);
                followed[i] = changed = true;
            }
        }
    }
    return 0;
}

/* ---- outputs ---------------------------------------------------------------------------------- */

/* Records the first output error. The failed output is closed (its temporary file removed) and
 * sampling goes on into the other one, which mon_close still writes: a full disk under the CSV
 * does not cost the trace. */
static void trace_failed(struct mon *m)
{
    struct rl_err e = {0};
    int rc = trace_close(m->trace, &e);   /* fails (the writer's error) and removes the file */
    m->trace = NULL;
    rl_err_first(&m->err, &m->err_e, rc ? rc : RL_EENV, "trace_path: %s", rc ? e.msg : "trace write failed");
}

static void csv_failed(struct mon *m)
{
    struct rl_err e = {0};
    int rc = rl_outfile_commit(&m->csv, &e);   /* fails (stream error) and removes the file */
    rl_err_first(&m->err, &m->err_e, rc ? rc : RL_EENV, "csv_path: %s", rc ? e.msg : "CSV write failed");
}

static void counter(struct mon *m, int pid, const char *name, int64_t t_ns, const char *series,
                    double v, double *last)
{
    if (!m->trace || (last && *last == v))
        return;
    if (last)
        *last = v;
    if (trace_counter(m->trace, pid, name, t_ns, series, v) != 0)
        trace_failed(m);
}

/* A numeric column stays numeric: empty when the figure is unknown (the status column says why). */
static const char *csv_i64(char *buf, size_t n, int64_t v)
{
    if (v == MON_UNAVAILABLE)
        return "";
    snprintf(buf, n, "%" PRId64, v);
    return buf;
}

/* Wall-clock time as ISO 8601 UTC with milliseconds ("2026-11-30T15:38:12.345Z"), the resolution
 * of DeepSpeed's log time stamps, so rows line up with its lines; "" when unknown. */
static const char *csv_utc(char *out, size_t n, int64_t real_ns)
{
    time_t sec = (time_t)(real_ns / 1000000000);
    struct tm tm;
    char buf[32];
    if (real_ns < 0 || !gmtime_r(&sec, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm))
        return "";
    snprintf(out, n, "%s.%03dZ", buf, (int)(real_ns / 1000000 % 1000));
    return out;
}

int mon_open(struct mon **mp, const struct mon_config *c, struct rl_err *e)
{
    *mp = NULL;
    if (!c || c->n_pids < 0)
        return rl_errf(e, RL_EINVAL, "pids: %d processes; allowed: 0 or more (0: roots come from mon_add_root)",
                       c ? c->n_pids : -1);
    if (c->interval_ns <= 0)
        return rl_errf(e, RL_EINVAL, "interval_ns: %" PRId64 " ns; expected > 0", c->interval_ns);
    struct mon *m = calloc(1, sizeof *m);
    if (!m)
        return rl_errf(e, RL_ENOMEM, "monitor: out of memory");
    m->cfg = *c;
    m->clk_tck = sysconf(_SC_CLK_TCK);
    if (m->clk_tck <= 0)
        m->clk_tck = 100;
    for (size_t k = 0; k < sizeof m->last_sys / sizeof m->last_sys[0]; k++)
        m->last_sys[k] = NAN;
    for (int k = 0; k < S_N; k++)
        m->last_tree[k] = NAN;
    m->sum.tree.gpu_bytes = MON_UNAVAILABLE;
    /* Roots given by PID must be running now (a zombie has already exited). */
    for (int i = 0; i < c->n_pids; i++) {
        struct mon_proc_stat s;
        int rc = c->pids[i] > 0 && mon__read_stat(c->pids[i], &s) == 0 && s.state != 'Z' && s.state != 'X'
                     ? mon_add_root(m, c->pids[i], e)
                     : rl_errf(e, RL_ENOENT, "pids: %d: no such process (or already exited)", c->pids[i]);
        if (rc) {
            mon_free(m);
            return rc;
        }
    }
    /* Uptime in ticks now, to turn a process's start time into an age for its first CPU figure. */
    FILE *up = fopen("/proc/uptime", "r");
    double up_s = 0;
    if (up) {
        if (fscanf(up, "%lf", &up_s) != 1)
            up_s = 0;
        fclose(up);
    }
    m->boot_ticks_at_open = (uint64_t)(up_s * (double)m->clk_tck);
    m->mono_at_open_ns = mon__mono_ns();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    m->real_at_open_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
    if (c->no_gpu) {
        snprintf(m->sum.gpu_note, sizeof m->sum.gpu_note, "disabled by --no-gpu");
    } else {
        struct rl_err ge = {0};
        if (mon_gpu_open(&m->gpu, &ge) == 0) {
            m->sum.gpu_available = true;
            m->sum.gpu_per_process = true;
            m->sum.n_gpus = mon_gpu_count(m->gpu);
        } else {
            snprintf(m->sum.gpu_note, sizeof m->sum.gpu_note, "%s", ge.msg);
        }
    }
    int rc;
    if (c->trace_path) {
        rc = trace_open(&m->trace, c->trace_path, e);
        if (rc) {
            rl_err_prefix(e, "trace_path");
            mon_free(m);
            return rc;
        }
        char args[160];
        snprintf(args, sizeof args, "{\"interval_ns\":%" PRId64 ",\"gpu\":\"%s\"}", c->interval_ns,
                 m->sum.gpu_available ? "nvml" : "unavailable");
        trace_process_name(m->trace, MON_TREE_PID, "monitored tree + system");
        trace_instant(m->trace, MON_TREE_PID, 0, "monitor start", 0, 'g', args);
        if (!m->sum.gpu_available) {
            /* The note is free text: let the writer escape it through a JSON string. */
            char note[600];
            size_t k = 0;
            note[k++] = '{';
            k += (size_t)snprintf(note + k, sizeof note - k, "\"reason\":\"");
            for (const char *p = m->sum.gpu_note; *p && k < sizeof note - 8; p++) {
                if (*p == '"' || *p == '\\')
                    note[k++] = '\\';
                note[k++] = (char)((unsigned char)*p < 0x20 ? ' ' : *p);
            }
            snprintf(note + k, sizeof note - k, "\"}");
            trace_instant(m->trace, MON_TREE_PID, 0, "gpu memory unavailable", 0, 'g', note);
        }
    }
    if (c->csv_path) {
        rc = rl_outfile_open(&m->csv, c->csv_path, e);
        if (rc) {
            rl_err_prefix(e, "csv_path");
            mon_abort(m);
            mon_free(m);
            return rc;
        }
        if (c->csv_comment)
            fputs(c->csv_comment, m->csv.fp);
        for (int i = 0; i < c->n_pids; i++)
            fprintf(m->csv.fp, "# followed: pid %d and its descendants\n", c->pids[i]);
        trace_csv_header(m->csv.fp, trace_mon_cols, TRACE_MON_N);   /* the columns of traces/schema.h */
    }
    *mp = m;
    return 0;
}

int mon_add_root(struct mon *m, int pid, struct rl_err *e)
{
    struct mon_proc_stat s;
    if (pid <= 0 || mon__read_stat(pid, &s) != 0)
        return rl_errf(e, RL_ENOENT, "pid: %d: no such process", pid);
    if (!find_proc(m, s.pid, s.start_ticks) && !add_proc(m, &s))
        return rl_errf(e, RL_ENOMEM, "monitor: out of memory");
    if (m->csv.fp)   /* a root added after mon_open (the command): a comment line, readers skip it */
        fprintf(m->csv.fp, "# followed: pid %d and its descendants\n", pid);
    return 0;
}

static void name_track(struct mon *m, struct mon__proc *p)
{
    if (!m->trace || p->named)
        return;
    char name[80];
    if (p->peak.rank >= 0)
        snprintf(name, sizeof name, "%s (%d) rank %d", p->peak.comm, p->peak.pid, p->peak.rank);
    else
        snprintf(name, sizeof name, "%s (%d)", p->peak.comm, p->peak.pid);
    trace_process_name(m->trace, p->peak.pid, name);
    p->named = true;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Writes zeros for a process seen gone, so its tracks drop to 0 where it ended. */
static void retire(struct mon *m, struct mon__proc *p, int64_t t_ns)
{
    p->gone = true;
    p->peak.alive = false;
    if (!m->trace)
        return;
    for (int k = 0; k < S_N; k++)
        if (!isnan(p->last[k]))
            counter(m, p->peak.pid, series_counter[k], t_ns, series_name[k], 0, &p->last[k]);
    if (p->peak.n_samples > 0)
        trace_instant(m->trace, p->peak.pid, 0, "exited", t_ns, 'p', NULL);
}

/* What one sample reads once and every process row of it uses. */
struct sample {
    int64_t t_ns;                      /* the sample's time, ns since mon_open */
    struct mon_sys_stat sys;           /* system memory (valid when have_sys) */
    bool have_sys;                     /* /proc/meminfo was read */
    int64_t dev_used[MON_MAX_GPUS];    /* per-device used bytes (MON_UNAVAILABLE: unknown) */
    int64_t dev_total[MON_MAX_GPUS];   /* per-device total bytes */
    int n_gpu_pids;                    /* entries of m->gpu_pids and m->gpu_bytes */
    bool per_proc_gpu;                 /* per-process GPU memory is known this sample */
    int64_t tree[S_N];                 /* sums over the followed live processes (CPU in tenths of a percent) */
    int alive;                         /* followed processes alive */
};

/* The sample's GPU figures: per device, and per process when NVML can attribute them here. */
static void sample_gpus(struct mon *m, struct sample *sm)
{
    bool gpu_ok = false;
    if (m->gpu) {
        gpu_ok = mon_gpu_sample(m->gpu, sm->dev_used, sm->dev_total, m->gpu_pids, m->gpu_bytes,
                                MON__MAX_GPU_PIDS, &sm->n_gpu_pids) == 0;
        if (!gpu_ok && m->sum.gpu_per_process) {
            m->sum.gpu_per_process = false;   /* sticky: the columns must not flip to 0 */
            snprintf(m->sum.gpu_note, sizeof m->sum.gpu_note,
                     "NVML could not list the processes using a GPU (unsupported here)");
        }
        /* NVML in a container may report PIDs of the host namespace: when none of the PIDs it
         * lists exists here, per-process figures cannot be attributed. */
        if (gpu_ok && sm->n_gpu_pids > 0 && m->sum.gpu_per_process) {
            int visible = 0;
            for (int i = 0; i < sm->n_gpu_pids; i++) {
                char path[32];
                snprintf(path, sizeof path, "/proc/%d", m->gpu_pids[i]);
                visible += access(path, F_OK) == 0;
            }
            if (visible == 0) {
                m->sum.gpu_per_process = false;
                snprintf(m->sum.gpu_note, sizeof m->sum.gpu_note,
                         "NVML lists GPU processes whose PIDs are not visible here (another PID "
                         "namespace): per-process GPU memory unavailable, per-device shown");
            }
        }
    }
    sm->per_proc_gpu = gpu_ok && m->sum.gpu_per_process;
}

/* A live process's name and rank: renamed after an exec, its rank looked for again. */
static void proc_identify(struct mon *m, struct mon__proc *p, const struct mon_proc_stat *s)
{
    if (strcmp(p->peak.comm, s->comm) != 0) {   /* exec'd: rename the track */
        snprintf(p->peak.comm, sizeof p->peak.comm, "%s", s->comm);
        p->named = false;
    }
    if (!p->named) {   /* first sight, or after an exec: the environment may be new */
        p->peak.rank = mon_read_rank(s->pid);
        p->rank_tries = 0;
    } else if (p->peak.rank < 0 && p->rank_tries < 10) {
        /* Mid-exec the new comm is visible before the new stack's environment is, so an
         * empty environ is looked at again for a few samples; a rank found renames. */
        p->rank_tries++;
        int r = mon_read_rank(s->pid);
        if (r >= 0) {
            p->peak.rank = r;
            p->named = false;
        }
    }
    name_track(m, p);
}

/* CPU use in percent of one core since the previous sample (first sample: since the process
 * started), at 0.1 % resolution. */
static double proc_cpu_percent(struct mon *m, struct mon__proc *p, const struct mon_proc_stat *s, int64_t t_ns)
{
    double cpu;
    if (p->prev_t_ns >= 0 && t_ns > p->prev_t_ns) {
        cpu = (double)(s->cpu_ticks - p->prev_cpu_ticks) / (double)m->clk_tck /
              ((double)(t_ns - p->prev_t_ns) * 1e-9) * 100.0;
    } else {
        /* First sample: the average since the process started. */
        uint64_t now_ticks = m->boot_ticks_at_open +
            (uint64_t)((double)(mon__mono_ns() - m->mono_at_open_ns) * 1e-9 * (double)m->clk_tck);
        uint64_t age = now_ticks > s->start_ticks ? now_ticks - s->start_ticks : 0;
        cpu = age > 0 ? (double)s->cpu_ticks / (double)age * 100.0 : 0.0;
    }
    cpu = (double)llround(cpu * 10.0) / 10.0;   /* 0.1 % resolution: ticks are coarse anyway */
    p->prev_cpu_ticks = s->cpu_ticks;
    p->prev_t_ns = t_ns;
    return cpu;
}

/* The process's peaks raised by this reading (gpu: MON_UNAVAILABLE when unknown). */
static void proc_peaks(struct mon_peak *pk, const struct mon_proc_stat *s, int64_t gpu, double cpu, int64_t t_ns)
{
    pk->rss_bytes = max64(pk->rss_bytes, s->rss_bytes);
    pk->hwm_bytes = max64(pk->hwm_bytes, max64(s->hwm_bytes, s->rss_bytes));
    pk->anon_bytes = max64(pk->anon_bytes, s->anon_bytes);
    pk->file_bytes = max64(pk->file_bytes, s->file_bytes);
    pk->shmem_bytes = max64(pk->shmem_bytes, s->shmem_bytes);
    pk->locked_bytes = max64(pk->locked_bytes, s->locked_bytes);
    pk->pinned_bytes = max64(pk->pinned_bytes, s->pinned_bytes);
    pk->swap_bytes = max64(pk->swap_bytes, s->swap_bytes);
    if (gpu != MON_UNAVAILABLE)
        pk->gpu_bytes = max64(pk->gpu_bytes, gpu);
    if (cpu > pk->cpu_percent)
        pk->cpu_percent = cpu;
    if (s->threads > pk->threads)
        pk->threads = s->threads;
    if (pk->n_samples == 0)
        pk->first_ns = t_ns;
    pk->n_samples++;
    pk->last_ns = t_ns;
    pk->alive = true;
}

/* One CSV row: the process's reading, the system's used memory, and "ok" or why a column is empty;
 * each cell at its column of traces/schema.h. */
static void proc_csv_row(struct mon *m, const struct mon__proc *p, const struct mon_proc_stat *s,
                         const struct sample *sm, int64_t gpu, double cpu)
{
    char num[TRACE_MON_N][40];
    const char *cell[TRACE_MON_N];
    for (int k = 0; k < TRACE_MON_N; k++)
        cell[k] = num[k];
    snprintf(num[TRACE_MON_T_NS], sizeof num[0], "%" PRId64, sm->t_ns);
    cell[TRACE_MON_TIME_UTC] = csv_utc(num[TRACE_MON_TIME_UTC], sizeof num[0], m->real_at_open_ns + sm->t_ns);
    snprintf(num[TRACE_MON_PID], sizeof num[0], "%d", s->pid);
    snprintf(num[TRACE_MON_PPID], sizeof num[0], "%d", s->ppid);
    cell[TRACE_MON_COMM] = s->comm;
    snprintf(num[TRACE_MON_RANK], sizeof num[0], "%d", p->peak.rank);
    const struct {
        enum trace_mon_col col;   /* the column */
        int64_t v;                /* its figure */
    } bytes[] = {{TRACE_MON_RSS, s->rss_bytes},       {TRACE_MON_ANON, s->anon_bytes},
                 {TRACE_MON_FILE, s->file_bytes},     {TRACE_MON_SHMEM, s->shmem_bytes},
                 {TRACE_MON_HWM, s->hwm_bytes},       {TRACE_MON_LOCKED, s->locked_bytes},
                 {TRACE_MON_PINNED, s->pinned_bytes}, {TRACE_MON_SWAP, s->swap_bytes}};
    for (size_t i = 0; i < RL_COUNT(bytes); i++)
        snprintf(num[bytes[i].col], sizeof num[0], "%" PRId64, bytes[i].v);
    cell[TRACE_MON_GPU] = csv_i64(num[TRACE_MON_GPU], sizeof num[0], gpu);
    snprintf(num[TRACE_MON_CPU], sizeof num[0], "%.1f", cpu);
    snprintf(num[TRACE_MON_THREADS], sizeof num[0], "%d", s->threads);
    cell[TRACE_MON_SYSTEM_USED] = csv_i64(num[TRACE_MON_SYSTEM_USED], sizeof num[0],
                                          sm->have_sys ? sm->sys.used_bytes : MON_UNAVAILABLE);
    /* status: "ok", or why a column is empty */
    char status[sizeof m->sum.gpu_note + 96];
    snprintf(status, sizeof status, "%s%s%s%s", gpu == MON_UNAVAILABLE ? "gpu_bytes: " : "",
             gpu == MON_UNAVAILABLE ? (m->sum.gpu_note[0] ? m->sum.gpu_note : "no per-process GPU memory") : "",
             gpu == MON_UNAVAILABLE && !sm->have_sys ? "; " : "",
             sm->have_sys ? "" : "system_used_bytes: /proc/meminfo unreadable");
    cell[TRACE_MON_STATUS] = status[0] ? status : "ok";
    trace_csv_row(m->csv.fp, cell, TRACE_MON_N);
}

/* One followed process from the listing: its status read, its peaks updated, its counters and CSV
 * row written, its figures added to the tree's. Nothing when it exited since the listing (it is
 * retired by the caller). */
static void sample_proc(struct mon *m, const struct mon_proc_stat *st, struct sample *sm)
{
    struct mon__proc *p = find_proc(m, st->pid, st->start_ticks);
    if (!p || p->gone)
        return;
    struct mon_proc_stat s;
    if (st->state == 'Z' || st->state == 'X' || mon_read_proc(st->pid, &s, NULL) != 0 ||
        s.start_ticks != p->start_ticks || s.state == 'Z' || s.state == 'X')
        return;   /* exited (or became a zombie) since the listing: retired below */
    sm->alive++;
    p->seen = true;
    proc_identify(m, p, &s);
    int64_t t_ns = sm->t_ns;
    double cpu = proc_cpu_percent(m, p, &s, t_ns);
    int64_t gpu = MON_UNAVAILABLE;
    if (sm->per_proc_gpu) {
        gpu = 0;
        for (int k = 0; k < sm->n_gpu_pids; k++)
            if (m->gpu_pids[k] == s.pid)
                gpu = m->gpu_bytes[k];
    }
    proc_peaks(&p->peak, &s, gpu, cpu, t_ns);

    double v[S_N] = {(double)s.rss_bytes, (double)s.anon_bytes, (double)s.file_bytes,
                     (double)s.shmem_bytes, (double)s.locked_bytes, (double)s.pinned_bytes,
                     (double)s.swap_bytes, (double)gpu, cpu, (double)s.threads};
    for (int k = 0; k < S_N; k++) {
        if (k == S_GPU && gpu == MON_UNAVAILABLE)
            continue;   /* unavailable is never written as a number */
        counter(m, s.pid, series_counter[k], t_ns, series_name[k], v[k], &p->last[k]);
        if (k != S_CPU && k != S_THREADS)
            sm->tree[k] += (int64_t)v[k];
    }
    sm->tree[S_CPU] += (int64_t)llround(cpu * 10.0);   /* tenths of a percent, summed exactly */
    sm->tree[S_THREADS] += s.threads;
    if (m->csv.fp)
        proc_csv_row(m, p, &s, sm, gpu, cpu);
}

/* Tree sums and their peaks on MON_TREE_PID. */
static void sample_tree(struct mon *m, const struct sample *sm)
{
    const int64_t *tree = sm->tree;
    int64_t t_ns = sm->t_ns;
    struct mon_tree_peak *tp = &m->sum.tree;
    if (sm->alive > tp->max_procs)
        tp->max_procs = sm->alive;
    if (tree[S_RSS] > tp->rss_bytes) {
        tp->rss_bytes = tree[S_RSS];
        tp->rss_t_ns = t_ns;
    }
    tp->anon_bytes = max64(tp->anon_bytes, tree[S_ANON]);
    tp->file_bytes = max64(tp->file_bytes, tree[S_FILE]);
    tp->shmem_bytes = max64(tp->shmem_bytes, tree[S_SHMEM]);
    tp->locked_bytes = max64(tp->locked_bytes, tree[S_LOCKED]);
    tp->pinned_bytes = max64(tp->pinned_bytes, tree[S_PINNED]);
    tp->swap_bytes = max64(tp->swap_bytes, tree[S_SWAP]);
    if (sm->per_proc_gpu)
        tp->gpu_bytes = max64(tp->gpu_bytes, tree[S_GPU]);
    for (int k = 0; k < S_N; k++) {
        if (k == S_GPU && !sm->per_proc_gpu)
            continue;
        double v = k == S_CPU ? (double)tree[k] / 10.0 : (double)tree[k];
        counter(m, MON_TREE_PID, k == S_CPU || k == S_THREADS ? "tree cpu" :
                k == S_GPU ? "tree gpu" : "tree memory", t_ns, series_name[k], v, &m->last_tree[k]);
    }
}

/* System memory and per-device GPU memory, and their peaks, on MON_TREE_PID. */
static void sample_system(struct mon *m, const struct sample *sm)
{
    int64_t t_ns = sm->t_ns;
    if (sm->have_sys) {
        const struct mon_sys_stat *sys = &sm->sys;
        m->sum.system_total_bytes = sys->total_bytes;
        m->sum.system_used_peak_bytes = max64(m->sum.system_used_peak_bytes, sys->used_bytes);
        counter(m, MON_TREE_PID, "system memory", t_ns, "used_bytes", (double)sys->used_bytes, &m->last_sys[0]);
        counter(m, MON_TREE_PID, "system memory", t_ns, "total_bytes", (double)sys->total_bytes, &m->last_sys[1]);
        counter(m, MON_TREE_PID, "system memory", t_ns, "swap_used_bytes", (double)sys->swap_used_bytes,
                &m->last_sys[2]);
    }
    if (m->gpu) {
        for (int g = 0; g < m->sum.n_gpus; g++) {
            if (sm->dev_used[g] == MON_UNAVAILABLE)
                continue;
            m->sum.gpu_used_peak_bytes[g] = max64(m->sum.gpu_used_peak_bytes[g], sm->dev_used[g]);
            char name[32];
            snprintf(name, sizeof name, "gpu%d memory", g);
            counter(m, MON_TREE_PID, name, t_ns, "used_bytes", (double)sm->dev_used[g], &m->last_sys[4 + 2 * g]);
            counter(m, MON_TREE_PID, name, t_ns, "total_bytes", (double)sm->dev_total[g], &m->last_sys[5 + 2 * g]);
        }
    }
}

int mon_sample(struct mon *m, int64_t t_ns, struct rl_err *e)
{
    int64_t t_start = mon__mono_ns();
    int rc = read_all_procs(m, m->sum.n_samples % MON__FULL_EVERY == 0, e);
    if (rc)
        return rc;
    bool *followed = calloc(2 * (size_t)m->all.n + 1, sizeof *followed);   /* + discover's known[] */
    if (!followed)
        return rl_errf(e, RL_ENOMEM, "monitor: out of memory");
    rc = discover(m, followed, e);
    if (rc) {
        free(followed);
        return rc;
    }

    struct sample sm = {.t_ns = t_ns};
    sm.have_sys = mon_read_meminfo(&sm.sys, NULL) == 0;
    sample_gpus(m, &sm);

    for (int i = 0; i < m->n_procs; i++)
        m->procs[i].seen = false;
    /* Every followed live process: read its status, update peaks, write it out. */
    for (int i = 0; i < m->all.n; i++)
        if (followed[i])
            sample_proc(m, &m->all.s[i], &sm);
    /* Followed processes not alive now are retired (their tracks go to 0). */
    for (int i = 0; i < m->n_procs; i++) {
        struct mon__proc *p = &m->procs[i];
        if (!p->gone && !p->seen)
            retire(m, p, t_ns);
    }
    free(followed);

    sample_tree(m, &sm);
    sample_system(m, &sm);
    m->sum.n_samples++;
    m->sum.last_t_ns = t_ns;
    m->sum.sample_cost_ns += mon__mono_ns() - t_start;
    if (m->csv.fp && ferror(m->csv.fp))
        csv_failed(m);
    return sm.alive;   /* an output error is reported by mon_close; the other output goes on */
}

int mon_mark(struct mon *m, int64_t t_ns, const char *stream, const char *line)
{
    m->sum.n_marks++;
    if (!m->trace)
        return 0;
    /* The line is the event name (the writer escapes it); args name the stream, a fixed word. */
    char args[64];
    snprintf(args, sizeof args, "{\"stream\":\"%s\"}", rl_streq(stream, "stderr") ? "stderr" : "stdout");
    if (trace_instant(m->trace, MON_TREE_PID, 0, line, t_ns, 'g', args) != 0)
        trace_failed(m);
    return 0;
}

const struct mon_summary *mon_summary(const struct mon *mc)
{
    struct mon *m = (struct mon *)mc;
    struct mon_peak *np = realloc(m->peaks, (size_t)(m->n_procs ? m->n_procs : 1) * sizeof *np);
    if (np) {
        m->peaks = np;
        for (int i = 0; i < m->n_procs; i++)
            np[i] = m->procs[i].peak;
        m->sum.procs = np;
        m->sum.n_procs = m->n_procs;
    }
    return &m->sum;
}

int mon_close(struct mon *m, struct rl_err *e)
{
    /* Each output is finished on its own: one that failed does not take the other with it. */
    if (m->trace) {
        char args[128];
        snprintf(args, sizeof args, "{\"samples\":%d,\"marks\":%d}", m->sum.n_samples, m->sum.n_marks);
        trace_instant(m->trace, MON_TREE_PID, 0, "monitor end", m->sum.last_t_ns, 'g', args);
        struct rl_err te = {0};
        int rc = trace_close(m->trace, &te);
        m->trace = NULL;
        if (rc)
            rl_err_first(&m->err, &m->err_e, rc, "trace_path: %s", te.msg);
    }
    if (m->csv.fp) {
        struct rl_err ce = {0};
        int rc = rl_outfile_commit(&m->csv, &ce);
        if (rc)
            rl_err_first(&m->err, &m->err_e, rc, "csv_path: %s", ce.msg);
    }
    if (m->err)
        return rl_errf(e, m->err, "%s", m->err_e.msg);
    return 0;
}

void mon_abort(struct mon *m)
{
    if (!m)
        return;
    if (m->trace)
        trace_abort(m->trace);
    m->trace = NULL;
    if (m->csv.fp)
        rl_outfile_abort(&m->csv);
}

void mon_free(struct mon *m)
{
    if (!m)
        return;
    mon_abort(m);
    mon_gpu_close(m->gpu);
    free(m->procs);
    free(m->peaks);
    free(m->all.s);
    free(m->all_next.s);
    free(m->pids_buf);
    free(m);
}
