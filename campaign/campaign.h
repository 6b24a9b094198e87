/* campaign/campaign.h — the validate campaign (`ratiolab validate --ratios ...`): for every ratio,
 * policy and schedule the executor runs the step (launched as `ratiolab run --json`, under mpirun
 * for several ranks, or in this process when validate itself was started by mpirun) and the
 * simulator predicts the same run (the same scaled model, the same exec ledger); one report row
 * each, then the checks, DIR/report.md, DIR/report.json and both sides' traces.
 *
 * Never prints and never exits: what the campaign has to say goes through the caller's hooks,
 * errors come back as RL_E* with the field named (cli/validate_exec.c puts back the flags). */
#ifndef RL_CAMPAIGN_CAMPAIGN_H
#define RL_CAMPAIGN_CAMPAIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rl.h"
#include "exec/exec.h"   /* enum ex_backend_kind, struct ex_result */
#include "plan/inputs.h"
#include "plan/plan.h"
#include "sim/hw.h"
#include "sim/step.h"
#include "validation/val.h"

#define CAMP_MAX_LIST 8   /* policies, schedules of one campaign */

/* What the campaign runs. Its messages name these fields ("ranks", "out_dir", "also_hw",
 * "calibration"), which the caller renames to its flags. */
struct camp_opts {
    const double *ratios;          /* the ratios, in order; n_ratios x policies x schedules <= VAL_MAX_ROWS */
    size_t n_ratios;               /* entries */
    int ranks;                     /* MPI ranks of each run (1: no mpirun); under mpirun the world's */
    enum ex_backend_kind backend;  /* cpu or cuda */
    bool calibrate;                /* measure this machine first and predict with that profile */
    int steps;                     /* timed steps per run (one warm-up step before them) */
    const char *out_dir;           /* where report.md, report.json and the traces go */
    double gate_time_pct;          /* step MAPE gate, percent; < 0: time not gated */
    double mem_tol_pct;            /* RSS/pinned/device against prediction + baseline, percent */
    double scale;                  /* the executor's and the prediction's model is 1/scale (>= 1) */
    int64_t seq_len;               /* the training sequence length as given, tokens (0: the model's) */
    const char *also_hw;           /* every run predicted with this profile too (DIR/also/), NULL none */
    const char *hw;                /* the profile the predictions use (name or file); with calibrate on
                                      cuda the base of the GPU calibration */
    bool hw_given;                 /* hw was chosen by the user (not the default) */
    int n_policies;                /* entries of policies (0: the one policy of the setup) */
    enum plan_policy policies[CAMP_MAX_LIST];   /* each run's placement policy */
    int n_schedules;               /* entries of schedules (0: the one schedule of the training settings) */
    enum step_schedule schedules[CAMP_MAX_LIST]; /* each run's schedule */
};
/* 1 rank on the cpu backend, 3 steps, time not gated, memory tolerance 10 %, scale 1. */
void camp_opts_init(struct camp_opts *o);

/* A progress line for the user (no newline), rank 0's. */
typedef void camp_say_fn(void *ctx, const char *line);
/* Under mpirun, a rank's run failed (e, its names already the caller's): reports it and returns the
 * exit code every rank then ends with (the world is aborted). */
typedef int camp_rank_failed_fn(void *ctx, int rank, const struct rl_err *e);
/* Renames the fields an executor message names to the caller's flags; returns e->code. */
typedef int camp_exec_err_fn(void *ctx, struct rl_err *e);
/* Loads the profile name_or_path for the setup c as the caller's options adjust it (memory,
 * PCIe generation, THP overrides), taking over into the caller's training settings what the setup
 * says for the simulator; used for hw (or the calibrated profile), then also_hw. */
typedef int camp_load_hw_fn(void *ctx, const char *name_or_path, const struct plan_setup *c, struct hw_profile *hw,
                            struct rl_err *e);
/* The setup resolved from the inputs s (the caller's names in its messages). */
typedef int camp_resolve_fn(void *ctx, const struct plan_inputs *s, struct plan_setup *c, struct rl_err *e);

struct camp_hooks {
    camp_say_fn *say;              /* progress; NULL: silent */
    camp_resolve_fn *resolve;      /* required by camp_validate */
    camp_exec_err_fn *exec_err;    /* NULL: executor messages as they are */
    camp_load_hw_fn *load_hw;      /* required */
    camp_rank_failed_fn *rank_failed; /* required under mpirun */
    void *ctx;                     /* passed to each */
};

struct camp;   /* one campaign's state, from camp_open to camp_close */

/* Under an existing MPI launcher (as exec/comm.c tells it): the runs are then this process's. */
bool camp_under_mpirun(void);
/* Starts a campaign: the world under an existing mpirun (o->ranks must be 1 or its size), then,
 * on rank 0, the output folder created and locked for as long as the campaign runs, and an
 * earlier campaign's report and listed traces removed, before anything is measured. *k is set
 * whenever camp_open returns (camp_close frees it, even after an error). */
int camp_open(struct camp **k, const struct camp_opts *o, const struct camp_hooks *h, struct rl_err *e);
/* The executor's layout in the inputs before they are resolved: the campaign's ranks
 * data-parallel on one node, TP 1 unless given; the exact policy unless one was chosen. */
void camp_exec_inputs(const struct camp *k, struct plan_inputs *s);
/* The campaign: setup c resolved from camp_exec_inputs' inputs (read, not kept), the training
 * settings t (their schedule is set per row; the executor's micro-batch and fp32 reduce-scatter are
 * taken over). Calibrates (opts.calibrate), loads the profiles, runs the reference, the baseline
 * and every row, and on rank 0 writes the report. */
int camp_run(struct camp *k, const struct plan_setup *c, struct sim_train *t, const char *const *fwd, int n_fwd,
             struct rl_err *e);
/* The whole campaign, in order: camp_open, the executor's layout in s (camp_exec_inputs), the setup
 * *c resolved from s through h->resolve (the caller frees it after camp_close: the campaign reads
 * it to the end), camp_run. *k is set whenever it returns (camp_close frees it, even after an
 * error); an error of h->resolve comes back as it gave it. */
int camp_validate(struct camp **k, const struct camp_opts *o, const struct camp_hooks *h, struct plan_inputs *s,
                  struct plan_setup *c, struct sim_train *t, const char *const *fwd, int n_fwd, struct rl_err *e);
/* The finished report on the rank that writes it (rank 0), NULL on the others. */
const struct val_report *camp_report(const struct camp *k);
/* Ends the world under mpirun, releases the folder's lock, frees k (NULL: nothing). */
void camp_close(struct camp *k);

/* The row's measured side from an executor's result (rank 0's: every rank's figures), from this
 * process or read back from `ratiolab run --json` (ex_result_from_json); baseline[k] is rank k's
 * RSS besides its ledger buffers (bytes, -1 unknown). */
void camp_row_from_result(struct val_row *w, const struct ex_result *r, const int64_t *baseline);

/* The traces a campaign writes into its folder are listed, as they are started, in
 * DIR/.ratiolab.outputs, one name a line; the next campaign in DIR removes what an earlier one
 * listed before it runs, so traces of ratios the new one does not have do not stay beside its
 * report. Only names a campaign writes are removed (predicted-*.json.gz, measured-*.json.gz, no
 * folder part), and only regular files (lstat: a link is left alone, as is a user's file that
 * was never listed). Both return 0 or RL_EENV naming the file. */
#define CAMP_OUTPUTS ".ratiolab.outputs"
int camp_outputs_forget(const char *dir, struct rl_err *e);
int camp_outputs_note(const char *dir, const char *path, struct rl_err *e);

#endif
