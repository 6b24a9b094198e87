/* plots/input.h — readers for the files ratiolab writes, reduced to what the figures need
 * (internal to plots/). Each reader names the file and the field in its errors. */
#ifndef RL_PLOTS_INPUT_H
#define RL_PLOTS_INPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"

#define PLOT__PH_MAX 24   /* phases of a sweep or report row */

/* One simulated ratio of `ratiolab sweep`. */
struct plot__sweep_row {
    double requested;                  /* requested ratio */
    double honored;                    /* honored ratio of the placement policy */
    int64_t gpu_bytes;                 /* predicted GPU memory per rank (NVML-visible) */
    int64_t host_rank_bytes;           /* host memory per rank; -1 when the input lacks it (CSV) */
    int64_t host_node_bytes;           /* host memory per node */
    int64_t step_ns;                   /* step time */
    double tokens_per_s;               /* per GPU; 0 when the input lacks it */
    int64_t exposed_ns[PLOT__PH_MAX];  /* exposed time per phase, in the sweep's phase order */
    int64_t idle_ns;                   /* step time no phase accounts for */
    bool fits_gpu;                     /* GPU memory fits the profile's capacity */
    bool fits_host;                    /* host memory fits */
};

/* A whole `sweep --json` or `sweep --csv` file. */
struct plot__sweep {
    char name[256];                    /* base name of the file */
    char model[256];                   /* "unknown" when the input lacks it (CSV) */
    char hardware[128];                /* profile name */
    char schedule[64];                 /* deepspeed-0.12 or overlap */
    char policy[64];                   /* deepspeed-0.12, deepspeed-0.18, exact */
    char ds_version[32];               /* DeepSpeed whose rules applied ("0.12.6"); "" when the input
                                          lacks it (sweeps before the field) */
    char offload[16];                  /* offload_optimizer.device: cpu, nvme or none; "" when the
                                          input lacks it */
    int64_t micro_batch;               /* 0 when unknown */
    int64_t seq_len;                   /* 0 when unknown */
    int gpus;                          /* total GPUs; 0 when unknown */
    int64_t params;                    /* model parameters, rank_numel x TP x PP (tensors TP replicates
                                          count once per rank); 0 when unknown */
    int64_t gpu_capacity_bytes;        /* the profile's GPU memory; 0 when unknown */
    bool has_phases;                   /* rows carry the per-phase breakdown (JSON) */
    int n_phases;                      /* entries in phase */
    char phase[PLOT__PH_MAX][32];      /* phase names (sim_phase_name) */
    struct plot__sweep_row *rows;      /* in file order */
    int n_rows;                        /* entries in rows */
};
int plot__sweep_read(const char *path, struct plot__sweep *s, struct rl_err *e);
void plot__sweep_free(struct plot__sweep *s);

/* Predicted or measured side of a validate report row. */
struct plot__side {
    int64_t step_ns;                   /* step time */
    int64_t busy_ns[PLOT__PH_MAX];     /* per phase (report's phase order); -1 when absent */
    int64_t exposed_ns[PLOT__PH_MAX];  /* per phase; -1 when absent */
};
struct plot__report_row {
    double ratio;                      /* requested ratio */
    char schedule[64];                 /* schedule of the row */
    char policy[64];                   /* policy of the row */
    struct plot__side pred, meas;      /* predicted and measured */
    double step_error_pct;             /* as the report states it */
    double others_cpu_pct;             /* share of the cores other processes used while measuring; < 0 unknown */
};
/* A `ratiolab validate` report.json (schema_version 1, kind ratiolab-validate-report). */
struct plot__report {
    char name[256];                    /* base name of the file */
    char model[256];                   /* model description */
    char hardware[128];                /* profile name */
    char backend[32];                  /* cpu or cuda */
    char policy[64];                   /* placement policy */
    int ranks;                         /* ranks of the run */
    int n_phases;                      /* entries in phase (union over rows, first-seen order) */
    char phase[PLOT__PH_MAX][32];      /* phase names */
    struct plot__report_row *rows;     /* in file order */
    int n_rows;                        /* entries in rows */
};
int plot__report_read(const char *path, struct plot__report *r, struct rl_err *e);
void plot__report_free(struct plot__report *r);

/* One sample of one process from a `ratiolab monitor --csv` file. */
struct plot__mon_sample {
    int64_t t_ns;                      /* since the start of monitoring */
    int pid;                           /* process */
    int64_t rss_bytes;                 /* resident set */
    int64_t gpu_bytes;                 /* NVML used by the process; -1 unavailable */
    int64_t locked_pinned_bytes;       /* locked (VmLck) + pinned (VmPin) host memory; -1 unavailable */
};
struct plot__mon_proc {
    int pid;                           /* process id */
    int rank;                          /* rank from its environment, -1 none */
    char comm[64];                     /* command name at its resident peak */
    int64_t peak_rss_bytes;            /* largest rss sample */
    int64_t peak_gpu_bytes;            /* largest gpu sample, -1 never available */
    int64_t peak_locked_pinned_bytes;  /* largest locked + pinned sample, 0 when never any */
};
struct plot__monitor {
    char name[256];                    /* base name of the file */
    struct plot__mon_sample *samples;  /* in file order */
    int n_samples;                     /* entries in samples */
    struct plot__mon_proc *procs;      /* in order of first appearance */
    int n_procs;                       /* entries in procs */
};
int plot__monitor_read(const char *path, struct plot__monitor *m, struct rl_err *e);
void plot__monitor_free(struct plot__monitor *m);

/* Base name of a path (the part after the last '/'). */
const char *plot__base(const char *path);

#endif
