/* plan/ds_hazards.h — DeepSpeed configs with a partial optimizer offload (offload_optimizer.ratio
 * < 1) or a parameter offload (offload_param "cpu") that DeepSpeed crashes on, asserts on, or
 * silently gets wrong.
 *
 * One table (ds_hazards.c) holds what is known: the JSON key, the DeepSpeed releases (as a
 * predicate over the rows of plan/ds_rules.h, so a release's behaviour is stated once), the source
 * (file and function, or issue number), the reason and the fix. plan_ds_hazards() returns the
 * entries that apply to a parsed config under its DeepSpeed version; the cli turns each into one
 * line (`check` fails on them, `plan` warns). Pure data: nothing here prints. */
#ifndef RL_PLAN_DS_HAZARDS_H
#define RL_PLAN_DS_HAZARDS_H

#include <stdbool.h>
#include <stddef.h>

#include "plan/ds_rules.h"
#include "plan/plan.h"

/* What DeepSpeed does with the config. */
enum plan_hazard_kind {
    PLAN_HAZARD_CRASH,     /* an exception at initialisation */
    PLAN_HAZARD_ASSERT,    /* an assert at initialisation */
    PLAN_HAZARD_IGNORED,   /* the ratio is silently ignored */
    PLAN_HAZARD_SUSPECT,   /* a warning: a reading of the code not yet observed, or an observed effect on the
                              numerics that does not stop the run (scheduler-lr) */
};
const char *plan_hazard_kind_name(enum plan_hazard_kind k);   /* "crash", "assert", ... */

/* Which repair the planner can apply to go on with the analysis (plan_ds_hazards_assume_fixed). */
enum plan_hazard_repair {
    PLAN_REPAIR_NONE,          /* nothing the planner models changes */
    PLAN_REPAIR_DEVICE_CPU,    /* offload_optimizer.device -> "cpu" */
    PLAN_REPAIR_STAGE_3,       /* zero_optimization.stage -> 3 */
};

struct plan_hazard {
    const char *id;                  /* short stable name, e.g. "nvme-ratio" (JSON output, tests) */
    enum plan_hazard_kind kind;      /* crash, assert, ignored, suspect */
    const char *key;                 /* the JSON path the user edits */
    plan_ds_rows_fn *releases;       /* which releases: the rows of plan/ds_rules.c it holds for */
    const char *what;                /* what DeepSpeed does, with its message when there is one */
    const char *source;              /* DeepSpeed file and function, or issue number */
    const char *fix;                 /* the change that avoids it */
    enum plan_hazard_repair repair;  /* what plan_ds_hazards_assume_fixed() changes */
};

/* The most hazards one config can match (the table has fewer entries). */
#define PLAN_HAZARDS_MAX 8

/* Fills out[] with the table entries that apply to z under z->ds_version (its row of
 * plan/ds_rules.h satisfies the entry's `releases`), in table order, and
 * returns their number. Only configs with a partial offload (ratio < 1 set by the config or the
 * command line, offload_optimizer.device "cpu" or "nvme") or with offload_param.device "cpu" can
 * match. O(table size). */
int plan_ds_hazards(const struct plan_zero *z, const struct plan_hazard **out, int cap);

/* The releases a hazard applies to, as text from the table's rows (plan_ds_rows_versions):
 * ">= 0.15.0" or ">= 0.12.3, < 0.15.0". */
void plan_hazard_versions(const struct plan_hazard *h, char *buf, size_t n);

/* One line: key, the config's value, what DeepSpeed does, versions, source and fix (at most about
 * 900 characters: callers give 1024). */
void plan_hazard_line(const struct plan_hazard *h, const struct plan_zero *z, char *buf, size_t n);

/* Applies the repairs of the hazards that match z (device cpu, stage 3), so the ratio and memory
 * analysis can describe the config the user gets after the fixes. Returns how many it applied. */
int plan_ds_hazards_assume_fixed(struct plan_zero *z);

#endif
