/* monitor/monitor.h — per-process memory and CPU sampling of any process tree, written as a
 * Chrome trace (the simulator's and executor's format) and a CSV.
 *
 * One `struct mon` follows a set of root PIDs and all their descendants (found each sample by
 * walking the ppid links in /proc/<pid>/stat; a process stays followed after its parent exits).
 * Each call to mon_sample reads /proc/<pid>/status for every live followed process, /proc/meminfo
 * for the system and, when NVML can be loaded, per-GPU and per-process GPU memory; it streams
 * the figures to the outputs and keeps per-process and whole-tree peaks, so memory does not grow
 * with the run length. The library never prints and never installs signal handlers:
 * cli/cmd_monitor.c does, and monitor/session.h runs a whole monitor session around struct mon. */
#ifndef RL_MONITOR_MONITOR_H
#define RL_MONITOR_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"

/* GPU memory that is not known (NVML missing, or NVML cannot attribute it to processes here). */
#define MON_UNAVAILABLE (-1)

/* ---- raw /proc readers (exposed for tests) ------------------------------------------------- */

/* One process as /proc shows it at one instant. Byte figures are the kernel's kB values x 1024. */
struct mon_proc_stat {
    int pid;                 /* process id */
    int ppid;                /* parent process id */
    char state;              /* /proc/<pid>/stat state: 'R', 'S', 'Z' (zombie), ... */
    uint64_t start_ticks;    /* start time since boot in clock ticks: (pid, start_ticks) is identity */
    uint64_t cpu_ticks;      /* utime + stime in clock ticks */
    char comm[32];           /* executable name (at most 15 characters from the kernel) */
    int64_t rss_bytes;       /* VmRSS: resident set = anon + file + shmem */
    int64_t anon_bytes;      /* RssAnon: private anonymous pages (heap, stacks, anonymous mmap) */
    int64_t file_bytes;      /* RssFile: file-backed pages mapped (code, libraries, mmap'd files) */
    int64_t shmem_bytes;     /* RssShmem: shared memory (tmpfs, memfd, MAP_SHARED|MAP_ANONYMOUS) */
    int64_t hwm_bytes;       /* VmHWM: the kernel's peak RSS over the process life */
    int64_t locked_bytes;    /* VmLck: mlock'ed memory */
    int64_t pinned_bytes;    /* VmPin: pages pinned by drivers/io_uring/RDMA (pinned_vm) */
    int64_t swap_bytes;      /* VmSwap: swapped-out anonymous memory */
    int threads;             /* Threads */
};

/* Reads /proc/<pid>/stat and, unless the process is a zombie, /proc/<pid>/status. Returns 0,
 * or RL_ENOENT when the process does not exist (or vanished while being read). */
int mon_read_proc(int pid, struct mon_proc_stat *s, struct rl_err *e);

/* The whole machine, from /proc/meminfo. */
struct mon_sys_stat {
    int64_t total_bytes;       /* MemTotal */
    int64_t available_bytes;   /* MemAvailable */
    int64_t used_bytes;        /* MemTotal - MemAvailable: what DeepSpeed logs as "CPU Virtual
                                  Memory: used" (psutil), for every process on the machine */
    int64_t swap_used_bytes;   /* SwapTotal - SwapFree */
};
int mon_read_meminfo(struct mon_sys_stat *s, struct rl_err *e);
/* The distributed rank a process was started with: RANK (torchrun, the DeepSpeed launcher) or
 * else OMPI_COMM_WORLD_RANK (mpirun), read from /proc/<pid>/environ (its environment at exec).
 * Returns -1 when neither is set or the environment cannot be read (another user's process). */
int mon_read_rank(int pid);

/* ---- GPU memory through NVML (libnvidia-ml.so.1, loaded with dlopen) ----------------------- */

#define MON_MAX_GPUS 64

struct mon_gpu;   /* opaque: the loaded library and device handles */

/* Loads NVML (libnvidia-ml.so.1, or the library $RATIOLAB_NVML_LIB names). Returns 0, or RL_EENV
 * with e saying what is missing (no library, no driver, no device); the monitor then reports GPU
 * columns as unavailable, never as 0. */
int mon_gpu_open(struct mon_gpu **g, struct rl_err *e);
int mon_gpu_count(const struct mon_gpu *g);
/* Per-device used and total bytes, and for every process on any GPU its summed used bytes
 * (MON_UNAVAILABLE when NVML does not know it). pids/bytes hold up to max_procs entries; the
 * number filled is returned in *n_procs. Returns 0 or RL_EENV. */
int mon_gpu_sample(struct mon_gpu *g, int64_t *dev_used_bytes, int64_t *dev_total_bytes,
                   int *pids, int64_t *bytes, int max_procs, int *n_procs);
void mon_gpu_close(struct mon_gpu *g);

/* ---- the monitor ----------------------------------------------------------------------------- */

struct mon_config {
    const int *pids;          /* root processes to follow (with their descendants) */
    int n_pids;               /* entries in pids (0: roots come from mon_add_root) */
    int64_t interval_ns;      /* sampling interval, recorded in the outputs */
    const char *trace_path;   /* Chrome trace (".gz" compresses), or NULL */
    const char *csv_path;     /* one row per sample per process, or NULL */
    bool no_gpu;              /* do not load NVML (GPU columns say unavailable) */
    const char *csv_comment;  /* lines starting with '#' written before the CSV's column header
                                 (e.g. the version), or NULL; then a "# followed: pid N ..." line
                                 per root (before the header for pids, after it for mon_add_root) */
};

/* Peak figures of one followed process. Each is the largest value seen at a sample, except
 * hwm_bytes (the kernel's own high-water mark, which also catches peaks between samples). */
struct mon_peak {
    int pid;                  /* process id */
    int ppid;                 /* parent when first seen */
    char comm[32];            /* last executable name seen */
    int rank;                 /* RANK (or OMPI_COMM_WORLD_RANK) from its environment, or -1 */
    int64_t rss_bytes;        /* sampled VmRSS */
    int64_t hwm_bytes;        /* VmHWM at the last sample (the kernel's peak RSS so far) */
    int64_t anon_bytes;       /* RssAnon */
    int64_t file_bytes;       /* RssFile */
    int64_t shmem_bytes;      /* RssShmem */
    int64_t locked_bytes;     /* VmLck */
    int64_t pinned_bytes;     /* VmPin */
    int64_t swap_bytes;       /* VmSwap */
    int64_t gpu_bytes;        /* per-process GPU memory summed over GPUs, or MON_UNAVAILABLE */
    double cpu_percent;       /* largest CPU utilisation between two samples (100 = one core) */
    int threads;              /* largest thread count */
    int n_samples;            /* samples in which the process was alive */
    int64_t first_ns;         /* time of the first of them */
    int64_t last_ns;          /* time of the last of them */
    bool alive;               /* alive at the last sample */
};

/* Whole-tree peaks: each field is the maximum over samples of the sum over the processes alive
 * at that sample (a peak of the sum at one instant, not the sum of per-process peaks); fields
 * may peak at different samples. Pages shared between processes are counted once per process
 * that maps them, as RSS does. */
struct mon_tree_peak {
    int64_t rss_bytes;        /* sum of VmRSS */
    int64_t anon_bytes;       /* sum of RssAnon */
    int64_t file_bytes;       /* sum of RssFile */
    int64_t shmem_bytes;      /* sum of RssShmem */
    int64_t locked_bytes;     /* sum of VmLck */
    int64_t pinned_bytes;     /* sum of VmPin */
    int64_t swap_bytes;       /* sum of VmSwap */
    int64_t gpu_bytes;        /* sum of per-process GPU memory, or MON_UNAVAILABLE */
    int64_t rss_t_ns;         /* when the RSS sum peaked */
    int max_procs;            /* most processes alive at one sample */
};

struct mon_summary {
    const struct mon_peak *procs;  /* every process followed, in order of discovery */
    int n_procs;                   /* entries in procs */
    struct mon_tree_peak tree;     /* peaks of the per-sample sums */
    int64_t system_used_peak_bytes;/* peak of MemTotal - MemAvailable (whole machine) */
    int64_t system_total_bytes;    /* MemTotal */
    int n_gpus;                    /* GPUs NVML reported (0 when unavailable) */
    int64_t gpu_used_peak_bytes[MON_MAX_GPUS]; /* per-device peak of NVML "used" (all processes) */
    bool gpu_available;            /* NVML loaded */
    bool gpu_per_process;          /* NVML attributes memory to PIDs visible here */
    char gpu_note[256];            /* why GPU figures are unavailable, or "" */
    int n_samples;                 /* samples taken */
    int n_marks;                   /* instant events from mon_mark */
    int64_t sample_cost_ns;        /* total time spent inside mon_sample (overhead) */
    int64_t last_t_ns;             /* time of the last sample */
};

struct mon;

/* Checks that every root PID exists (RL_ENOENT naming "--pid" and the PID otherwise), loads NVML
 * unless disabled, and opens the outputs (atomic: nothing appears until mon_close). n_pids may
 * be 0 when the roots are added later with mon_add_root (a command started after the outputs
 * were checked). */
int mon_open(struct mon **m, const struct mon_config *c, struct rl_err *e);
/* Follows one more root process (and its descendants). RL_ENOENT when it does not exist. A
 * zombie is accepted: a command we started and have not reaped yet may already have exited
 * (it is then retired at the first sample). */
int mon_add_root(struct mon *m, int pid, struct rl_err *e);
/* Takes one sample at t_ns (nanoseconds since the start of monitoring, non-decreasing). Returns
 * the number of followed processes alive (>= 0), or a negative RL_E* code (output failure). */
int mon_sample(struct mon *m, int64_t t_ns, struct rl_err *e);
/* Records a matching output line as an instant event ("ph":"i") at t_ns on the tree track;
 * `stream` is "stdout" or "stderr". */
int mon_mark(struct mon *m, int64_t t_ns, const char *stream, const char *line);
/* The peaks so far (valid until the next call on m and until mon_close/mon_abort). */
const struct mon_summary *mon_summary(const struct mon *m);
/* Finishes and commits the outputs. The summary stays readable until mon_free. */
int mon_close(struct mon *m, struct rl_err *e);
/* Removes unfinished outputs (no partial files). */
void mon_abort(struct mon *m);
void mon_free(struct mon *m);

/* Pseudo-process id of the trace track holding system-wide and whole-tree counters and marks. */
#define MON_TREE_PID 0

#endif
