/* sim/check_json.h — the verdict of `ratiolab check` (sim/check.h) and the DeepSpeed hazards judged
 * beside it as the JSON `check --json` prints (docs/json-output.md), built here next to the verdict
 * so the cli only prints it. */
#ifndef RL_SIM_CHECK_JSON_H
#define RL_SIM_CHECK_JSON_H

#include <jansson.h>

#include "plan/ds_fix.h"
#include "sim/check.h"

/* What the verdict was judged on beside the request. */
struct sim_check_report {
    const struct plan_setup *setup;        /* the resolved setup judged */
    const struct sim_check_request *q;     /* tolerance, GPU memory, states only */
    const struct sim_check_verdict *v;     /* the verdict */
    const struct plan_hazard_set *hz;      /* the config's DeepSpeed hazards (plan/ds_fix.h) */
    const struct plan_zero *written;       /* the config as written, before the hazards' repairs */
    bool strict;                           /* suspected hazards fail too */
    const char *dtype_source;              /* where the dtype came from, as the text report says it */
};

/* The overall verdict: the ratio honored under every version, the memory fits and no hazard fails
 * (check exits 0 exactly then). */
bool sim_check_passed(const struct sim_check_report *r);
/* "ok" (sim_check_passed), "hazards", the ratio (with "versions" when several
 * DeepSpeed versions were judged), the memory ("model_states_bytes" and its parts for the whole
 * prediction) and "fix" ({"possible": false} when no fix exists). The caller owns the object. */
json_t *sim_check_json(const struct sim_check_report *r);

#endif
