/* sim/sweep.h — `ratiolab sweep`'s runs: one plan and one simulated step per requested ratio, the
 * ratio its policy honors and the prediction, kept as a table; and the table as the sweep's CSV
 * (a '#' comment header naming what the rows are of, then one row per ratio) and JSON, both
 * through the sweep's one key table in traces/schema.h (plots/ reads them by the same table).
 *
 * Cost: one plan (plan_setup_plan) and one step simulation (sim_step_run) per ratio; the plans are
 * freed as they are used, so memory is one plan and one row per ratio. */
#ifndef RL_SIM_SWEEP_H
#define RL_SIM_SWEEP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/rl.h"
#include "plan/inputs.h"   /* struct plan_setup, plan_setup_plan */
#include "sim/hw.h"
#include "sim/step.h"

struct sim_sweep_request {
    const struct plan_setup *setup;  /* model, layout, DeepSpeed config and policy: a plan per ratio */
    const struct hw_profile *hw;     /* the node simulated */
    const struct sim_train *train;   /* the simulator's settings, the same for every ratio */
    const double *ratios;            /* the requested ratios, in the rows' order */
    size_t n_ratios;                 /* of ratios, at least 1 */
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
    size_t n_rows;                   /* == the request's n_ratios once sim_sweep_run succeeded */
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

/* "offload_optimizer"'s value in the headers: "none", "cpu" or "nvme". */
const char *sim_sweep_offload_name(enum plan_offload o);
/* The CSV to f: the '#' comment lines (readers skip them; no time stamp, so the same inputs give
 * the same bytes), the column header of traces/schema.h (two columns per phase, then idle), then a
 * row per ratio. Write errors show in f's error flag. */
void sim_sweep_write_csv(FILE *f, const struct sim_sweep_request *q, const struct sim_sweep_table *t,
                         const struct sim_sweep_text *x);
/* The JSON document (docs/json-output.md): the header's keys, then "rows", each row's requested and
 * honored ratio, host elements and "prediction" (sim_step_result_json). The caller owns it; writing
 * it (schema_version, shortest reals, layout) is the caller's. NULL when out of memory. */
json_t *sim_sweep_json(const struct sim_sweep_request *q, const struct sim_sweep_table *t,
                       const struct sim_sweep_text *x);

#endif
