/* campaign/campaign_impl.h — one campaign's state and the two ways its runs start, shared by
 * campaign.c (the phases), launched.c and inproc.c (the two entries of camp_modes). */
#ifndef RL_CAMPAIGN_CAMPAIGN_IMPL_H
#define RL_CAMPAIGN_CAMPAIGN_IMPL_H

#include "calib/calib.h"
#include "campaign/campaign.h"
#include "exec/exec.h"

/* ---- argv for a launched `ratiolab run` or `ratiolab calibrate` ------------------------------ */
#define CAMP__MAX_ARGS 160
struct camp__argv {
    char *v[CAMP__MAX_ARGS + 1];          /* NULL-terminated */
    int n;                                /* entries */
    char store[CAMP__MAX_ARGS][64];       /* storage for formatted numbers */
};
void camp__arg(struct camp__argv *a, const char *s);
void camp__argf(struct camp__argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* mpirun for ranks > 1 (nothing for one): oversubscription allowed (ranks, copy threads and
 * OpenBLAS may outnumber the cores), a waiting rank yields its core instead of spinning, and the
 * OpenBLAS thread count travels to the ranks. The runs and their calibration launch alike. */
void camp__launcher(struct camp__argv *a, int ranks);
/* The run's GEMM list for `ratiolab calibrate`: --gemm (one layer's with --layers) and, when the
 * model has uniform layers, --layers N and --gemm-last (the logits). The lists live in static
 * buffers until the next call. */
void camp__gemm_args(struct camp__argv *a, const struct calib_run *rs);
/* Runs argv (argv[0] looked up in PATH) with stdout captured into *out (malloc'd); stderr passes
 * through. Returns the exit status (128 + signal when killed), or -1 when it could not start. */
int camp__capture(char *const *argv, char **out);

/* One campaign, from camp_open to camp_close. */
struct camp {
    struct camp_opts o;              /* the options (ranks set from the world under mpirun) */
    struct camp_hooks h;             /* the caller's hooks */
    const struct camp__mode *mode;   /* in-process (under mpirun) or launched */
    struct plan_setup c;             /* the caller's resolved setup, copied (its model stays the
                                        caller's, never freed here); popt.policy is the row's */
    struct sim_train *train;         /* the simulator's training settings (schedule of the row) */
    struct plan_model scaled;        /* c's model shrunk by scale */
    struct hw_profile hw;                /* the hardware the predictions use */
    char hw_path[600];               /* where it came from (DIR/hw-calibrated.json with calibrate) */
    struct val_report *rep;          /* what rank 0 reports */
    struct hw_profile hw_also;           /* also_hw's profile, adjusted as hw is (when given) */
    struct val_report *rep_also;     /* rank 0: rep's runs predicted with hw_also; NULL without also_hw */
    struct ex_comm comm;             /* the world under an existing mpirun; size 1 otherwise */
    bool in_mpi;                     /* started under mpirun: the executor runs in this process */
    bool rank0;                      /* this process predicts, reports and writes */
    char exe[4096];                  /* this executable, for the launched runs */
    int dev_threads;                 /* OpenBLAS threads of a rank (the emulated device's kernels) */
    struct camp__argv base;          /* launched: the common part of every `ratiolab run` */
    int n_launch;                    /* launched: base's leading mpirun arguments */
    bool run_traces;                 /* launched: the executor writes traces (--trace) */
    struct ex_opts xo;               /* in-process: the runs' options, as `ratiolab run` sets them */
    int64_t baseline[VAL_MAX_RANKS]; /* per rank: RSS besides the ledger buffers, bytes; -1 unknown */
    int64_t extra_rss;               /* in-process: what a run adds besides its ledger, bytes */
    int lock_fd;                     /* rank 0: the folder's lock (rl_outdir_lock), -1 none */
};

/* How the runs start: every phase that differs between a campaign that launches its runs and one
 * whose processes are the ranks (started by mpirun). Every member returns 0 or RL_E* with *e. */
struct camp__mode {
    const char *name;   /* "launched", "in-process" */
    /* What the runs need before the first: the common argv, or the executor's options. */
    void (*prepare)(struct camp *k, const char *const *fwd, int n_fwd);
    /* What one rank of the run does, measured into *cal (the run's GEMMs, Adam and copies, the
     * collectives at its message sizes), as the runs will run. */
    int (*calibrate_run)(struct camp *k, const struct calib_run *rs, struct calib *cal, struct rl_err *e);
    /* The reference digest (scalar Adam) into the report. */
    int (*reference)(struct camp *k, struct rl_err *e);
    /* The baseline (every tensor one row): what a rank holds besides its ledger buffers. */
    int (*baseline)(struct camp *k, struct rl_err *e);
    /* The row's run, its measured side into *w (rank 0); mtrace: the executor's trace. */
    int (*measure)(struct camp *k, struct val_row *w, const char *mtrace, struct rl_err *e);
};
extern const struct camp__mode camp__launched;
extern const struct camp__mode camp__inproc;

/* A progress line through the caller's hook (rank 0 only; nothing without a hook). */
void camp__say(const struct camp *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The caller's names in an executor message; returns e->code. */
int camp__exec_err(const struct camp *k, struct rl_err *e);
/* The scale that cuts every tensor to one row: the largest first dimension (smaller it cannot
 * get), or the campaign's scale when that is larger. */
double camp__one_row_scale(const struct camp *k);

#endif
