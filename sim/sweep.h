/* sim/sweep.h — `ratiolab sweep`'s runs: one plan and one simulated step per requested ratio, the
 * ratio its policy honors and the prediction, kept as a table; and its rows as the sweep's CSV
 * (a '#' comment header naming what the rows are of, then one row per ratio) and JSON, both
 * through the sweep's one key table in traces/schema.h (plots/ reads them by the same table).
 *
 * The rows are handed to the caller as they are computed (sim_sweep_row_fn), so a long sweep shows
 * its first rows at once. Cost: one plan (plan_setup_plan) and one step simulation (sim_step_run)
 * per ratio; the plans are freed as they are used, so memory is one plan and one row (640 bytes)
 * per ratio (one row in all with stream_only). */
#ifndef RL_SIM_SWEEP_H
#define RL_SIM_SWEEP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/rl.h"
#include "plan/inputs.h"   /* struct plan_setup, plan_setup_plan */
#include "sim/hw.h"
#include "sim/step.h"

struct sim_sweep_table;
/* Called by sim_sweep_run after the row of ratio i is added (it is t->rows[t->n_rows - 1]), so a
 * caller can write the rows as they are computed; a nonzero return (a negative RL_E* with e
 * filled) stops the sweep with that code. */
typedef int sim_sweep_row_fn(void *ctx, const struct sim_sweep_table *t, size_t i, struct rl_err *e);

struct sim_sweep_request {
    const struct plan_setup *setup;  /* model, layout, DeepSpeed config and policy: a plan per ratio */
    const struct hw_profile *hw;     /* the node simulated */
    const struct sim_train *train;   /* the simulator's settings, the same for every ratio */
    const double *ratios;            /* the requested ratios, in the rows' order */
    size_t n_ratios;                 /* of ratios, at least 1 */
    sim_sweep_row_fn *on_row;        /* after each row; NULL: none */
    void *ctx;                       /* on_row's */
    bool stream_only;                /* on_row takes each row and the table keeps only the newest
                                        (rows[0], n_rows 1): memory is one row whatever the count */
};

/* One ratio's plan and step. */
struct sim_sweep_row {
    double requested;                /* the ratio asked for */
    double honored;                  /* what the plan's policy honors */
    int64_t cpu_numel;               /* elements whose optimizer state the plan puts on the host */
    struct sim_step_result r;        /* the predicted step */
};

/* The rows of a sweep and what its header says of them (taken from the first ratio's plan; every
 * plan of a sweep has the same policy, DeepSpeed rules and offload device). */
struct sim_sweep_table {
    enum plan_policy policy;         /* the placement policy that applied */
    struct rl_version ds_version;    /* the DeepSpeed whose rules applied */
    enum plan_offload offload;       /* where offload_optimizer sends the states (none, cpu, nvme);
                                        says whether offload was configured, which ratio 0 does not */
    struct sim_sweep_row *rows;      /* n_rows, malloc'd; owned by the table (sim_sweep_free) */
    size_t n_rows;                   /* rows held: those computed so far (the request's n_ratios once
                                        sim_sweep_run succeeded), or 1, the newest, with stream_only */
};

/* Plans and simulates every ratio of q into *t (a table of its own, freed with sim_sweep_free also
 * on failure). Errors are the plan's or the simulator's, prefixed with "ratio R". */
int sim_sweep_run(const struct sim_sweep_request *q, struct sim_sweep_table *t, struct rl_err *e);
void sim_sweep_free(struct sim_sweep_table *t);

/* What the headers say that only the caller knows (how the user gave it). */
struct sim_sweep_text {
    const char *version;             /* ratiolab's version, in the CSV's first comment line */
    const char *seq;                 /* the sequence length and where it came from, e.g. "2048 (from --seq-len)" */
    const char *attention_origin;    /* where the attention implementation came from */
    const char *settings;            /* the simulator's settings in one line (the CSV's "settings") */
};

/* The CSV's head to f: the '#' comment lines (readers skip them; no time stamp, so the same inputs
 * give the same bytes), then the column header of traces/schema.h (two columns per phase, then
 * idle). Reads rows[0], the first row (its micro-batch and attention; with stream_only, call it at
 * the first row). Write errors show in f's error flag. */
void sim_sweep_csv_head(FILE *f, const struct sim_sweep_request *q, const struct sim_sweep_table *t,
                        const struct sim_sweep_text *x);
/* One row of the CSV to f. */
void sim_sweep_csv_row(FILE *f, const struct sim_sweep_row *w);
/* The JSON document's top level (docs/json-output.md) without its "rows": what the rows are of,
 * from rows[0] as sim_sweep_csv_head. The caller owns it; writing it (schema_version, shortest reals, layout, the
 * "rows" array after it) is the caller's. NULL when out of memory. */
json_t *sim_sweep_json_head(const struct sim_sweep_request *q, const struct sim_sweep_table *t,
                            const struct sim_sweep_text *x);
/* One member of "rows": the requested and honored ratio, the host elements and the "prediction"
 * (sim_step_result_json). NULL when out of memory. */
json_t *sim_sweep_json_row(const struct sim_sweep_row *w);

#endif
