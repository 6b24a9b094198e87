/* validation/probe_json.h — the JSON document of `validate --probe` (--json and --report,
 * docs/json-validate.md): the probe's checks against the plan, every rank's, the
 * gathered digest, the hyperparameter records, the audit and the two runs' pairing, built from a
 * judged val_probe_run. cli/validate_probe.c adds "schema_version" and writes it. */
#ifndef RL_VALIDATION_PROBE_JSON_H
#define RL_VALIDATION_PROBE_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "plan/plan.h"
#include "validation/probe_run.h"

/* What the document says beside the run: the names the user gave and the plan it was judged by. */
struct val_probe_json_in {
    const char *probe;                      /* rank 0's file as given ("probe") */
    const char *model_desc;                 /* the model as the setup describes it ("model") */
    const char *hw_name;                    /* the profile the step was predicted for ("hardware") */
    const struct plan *p;                   /* the plan every rank was judged against */
    int64_t predicted_step_ns;              /* predict's step for that plan ("predicted_step_ns") */
    int64_t grad_accum;                     /* the micro-steps of that step, the run's
                                               ("gradient_accumulation_steps") */
    const struct val_probe_run_files *f;    /* the audit and the other run's files, as given (NULL
                                               names: not given) */
};

/* The whole document of a run val_probe_run_judge judged (without "schema_version"); NULL only
 * when out of memory. The caller owns it (json_decref). */
json_t *val_probe_run_json(const struct val_probe_run *run, const struct val_probe_json_in *in);

/* The ratio a probe's configuration records, -1 when it records none. */
double val_probe_ratio(const struct val_probe *p);
/* Whether DeepSpeed drew its extra random number in one run and not the other: it draws one
 * (torch.randn(1), stage3.py's backup parameter) when the ratio is below 1, so a run at 1 and a
 * run below it see other random numbers from the first forward on. */
bool val_probe_rng_shift(const struct val_probe *a, const struct val_probe *b);

#endif
