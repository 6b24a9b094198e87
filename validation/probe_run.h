/* validation/probe_run.h — the analysis behind `validate --probe FILE`: rank 0's probe and every
 * rank's file beside it read and checked to be one run, each rank judged against one plan, the
 * ranks' gathered digest, the hyperparameter records, the audit replayed and, given another run of
 * the same cell, the two audits paired (why their digests differ). The plan is the caller's: it
 * is resolved from the probe read here (val_probe_run_read) and the user's inputs. */
#ifndef RL_VALIDATION_PROBE_RUN_H
#define RL_VALIDATION_PROBE_RUN_H

#include <stdbool.h>

#include "common/rl.h"
#include "plan/inputs.h"
#include "sim/step.h"
#include "validation/audit.h"
#include "validation/hparams.h"
#include "validation/probe.h"

/* The files judged beside the probe. */
struct val_probe_run_files {
    const char *probe_name;        /* how a message about the other run names rank 0's probe (the
                                      caller's word for it: cli/ gives its flag) */
    const char *audit;             /* the probe's audit file, NULL when absent */
    const char *against_probe;     /* rank 0's probe of the same cell at another ratio, NULL when absent */
    const char *against_audit;     /* that run's audit file (the same rank as audit) */
};

/* Which step of val_probe_run_judge an error came from, so the caller can name the input. */
enum val_probe_run_stage {
    VAL_RUN_OK,                    /* no error */
    VAL_RUN_HPARAMS,               /* a rank's hparams record (the probe's file) */
    VAL_RUN_AUDIT_READ,            /* the audit file, refused by val_audit_read, or no memory for its
                                      findings (the message's field "audit") */
    VAL_RUN_AUDIT,                 /* the audit's replay */
    VAL_RUN_AGAINST_AUDIT_READ,    /* the other run's audit, as VAL_RUN_AUDIT_READ (field "audit") */
    VAL_RUN_AGAINST,               /* the other run's probe ("against_probe" when it names it) or the pairing */
};

/* One `validate --probe` run; owns what it allocates (val_probe_run_free). Zero it before
 * val_probe_run_read. */
struct val_probe_run {
    struct val_probe *prs;         /* every rank's probe, rank i at i (n entries) */
    char **paths;                  /* each rank's file, rank i at i (n entries) */
    int n;                         /* ranks: rank 0's world_size (0 until read) */
    struct val_probe_result *rs;   /* each rank's checks against the plan (n entries) */
    struct val_probe_result r0;    /* rank 0's checks, its overall every rank's verdict, the
                                      gathered digest's and the hparams' (a copy of rs[0]'s checks) */
    enum val_status digest;        /* the digest gathered over the ranks (val_probe_ranks_digest) */
    char digest_detail[200];       /* what digest says */
    struct val_hparams_result hp;  /* rank 0's hparams judgement, or the first rank's that fails
                                      (its detail ends " (rank R)") */
    struct val_audit au;           /* the audit file (n 0 without one) */
    struct val_audit_finding *af;  /* au's findings, one per record (NULL without an audit) */
    int audit_bad;                 /* au's records with a finding, plus 1 when the two runs' digests'
                                      difference is not explained */
    struct val_probe pb;           /* the other run's rank 0 probe (zero without one) */
    struct val_audit bu;           /* the other run's audit */
    struct val_audit_finding *bf;  /* bu's findings */
    struct val_audit_pair *pairs;  /* au's records paired with bu's (NULL without the other run) */
    enum val_audit_why why;        /* why the two runs' digests differ */
    bool pass;                     /* every rank's checks, the digest, hparams and the audit pass */
    enum val_probe_run_stage failed; /* where val_probe_run_judge's error came from */
};

/* Reads rank 0's file at path and, for a run of several ranks, every rank's file beside it
 * (val_probe_rank_path), each checked to belong to rank 0's run. RL_EINVAL for a file of another
 * rank than 0 or a missing rank's file; what val_probe_read refuses. r is filled as far as it got:
 * val_probe_run_free it either way. */
int val_probe_run_read(const char *path, struct val_probe_run *r, struct rl_err *e);

/* What the plan of the run is made from beside rank 0's probe. */
struct val_probe_plan_in {
    const struct plan_inputs *in;  /* the user's inputs */
    const char *what;              /* the caller's words for the probe in a contradiction ("--probe PATH") */
    const struct sim_train *train; /* the user's training settings (copied before load_hw) */
    val_resolve_fn *resolve;       /* resolves inputs into a setup (twice more to compare groupings) */
    val_load_hw_fn *load_hw;       /* loads the profile */
    void *ctx;                     /* load_hw's */
};

/* Which step of val_probe_run_plan an error came from, so the caller can name the input. */
enum val_probe_plan_stage {
    VAL_PLAN_OK,                   /* no error */
    VAL_PLAN_GROUPS,               /* the user's grouping against the probe's ("param_groups ...: ...;
                                      leave param_groups out ...") */
    VAL_PLAN_ACCUM,                /* the user's accumulation or micro-batch against the run's (the fields
                                      grad_accum, micro_batch, ds_config; the probe is "the run (probe)") */
    VAL_PLAN_OTHER,                /* the resolve hook, the run's configuration (val_facts_apply), the
                                      profile, the plan or the predicted step */
};

/* The plan of the run rank 0's probe records; owns what it holds (val_probe_plan_free). */
struct val_probe_plan {
    struct plan_setup c;           /* the setup: the user's inputs with the run's configuration over them */
    struct sim_train train;        /* the predicted step's settings: the user's, with the run's gradient
                                      accumulation and micro-batch */
    struct hw_profile hw;          /* the profile of the predicted step */
    struct plan p;                 /* the plan every rank is judged against */
    struct sim_step_result sr;     /* the predicted step */
    enum val_probe_plan_stage failed; /* where val_probe_run_plan's error came from */
};

/* The plan of pr's run from the user's inputs: the run's data-parallel degree unless the user gave
 * a layout (then val_facts_apply compares), the run's param groups when the probe names them (a
 * grouping the user gave must be the same: RL_EINVAL naming both counts and the first parameter
 * they place apart), its configuration, its accumulation and micro-batch (a step of the probe is
 * an optimizer step of grad_accum micro-steps: a user's other value is RL_EINVAL); then the
 * profile and the predicted step. Zero *pl first; free it either way. */
int val_probe_run_plan(const struct val_probe *pr, const struct val_probe_plan_in *in, struct val_probe_plan *pl,
                       struct rl_err *e);
void val_probe_plan_free(struct val_probe_plan *pl);

/* Judges the ranks read against the plan p (o's tolerances and predicted step), reads every
 * rank's hparams record, replays f->audit and pairs it with f->against_probe's run. An error is
 * returned with r->failed saying which step gave it (the caller names the input); the other run's
 * probe is the field "against_probe" in the messages of val_probe_run_judge's own that name it. */
int val_probe_run_judge(struct val_probe_run *r, const struct plan *p, const struct val_probe_opts *o,
                        const struct val_probe_run_files *f, struct rl_err *e);

/* The two runs' pairing (r->pairs) summed over the audit's records: what the verdict's sentence
 * says. The records that moved between the optimizers are also summed apart. */
struct val_probe_why_totals {
    int64_t step;                  /* the audits' optimizer step (0 without a record) */
    int64_t numel;                 /* elements audited */
    int64_t n_diff_after;          /* of them, those whose fp32 master differs between the runs after step */
    int64_t n_diff_grad;           /* those whose gradient at step differs */
    double max_abs_after;          /* the largest difference after step, in value */
    int64_t moved_numel;           /* elements of the records stepped by another optimizer in each run */
    int64_t moved_n_diff_after;    /* of them, those that differ after step */
    int64_t moved_max_ulps;        /* their largest difference after step, ulps */
    double moved_max_abs;          /* and in value */
    int64_t other_n_diff;          /* the moved records' elements one step of the other optimizer from
                                      this run's state would leave with other bits */
    int64_t other_max_ulps;        /* the largest such difference, ulps */
};
void val_probe_run_why_totals(const struct val_probe_run *r, struct val_probe_why_totals *t);

/* Frees what r holds and zeroes it. */
void val_probe_run_free(struct val_probe_run *r);
#endif
