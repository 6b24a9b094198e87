/* sim/tune_json.h — `ratiolab tune --json` (docs/json-tune.md): one profile's search as the JSON
 * object its readers take, every key through tune's one table in traces/schema.h, and the
 * DeepSpeed config block that runs a choice (the JSON tune prints to paste). Built here next to
 * struct sim_tune_result so the writer of the answer and of its config block are one; the caller
 * owns the objects, and printing (schema_version, shortest reals) is the caller's. */
#ifndef RL_SIM_TUNE_JSON_H
#define RL_SIM_TUNE_JSON_H

#include <jansson.h>
#include <stdbool.h>

#include "plan/inputs.h"   /* struct plan_setup */
#include "sim/tune.h"

/* The DeepSpeed config block that runs choice k: what to paste into the user's config. The
 * precision block for dtype (none for fp32: DeepSpeed runs fp32 without one), the micro-batch and
 * accumulation, ZeRO stage 3 and, with offload, offload_optimizer (cpu, pinned, the ratio to 6
 * decimals) and, when with_sgs, the sub_group_size that honors it. */
json_t *sim_tune_ds_config_json(const struct sim_tune_choice *k, bool with_sgs, enum plan_dtype dtype);

/* What the object says that only the caller knows (how the user gave it). */
struct sim_tune_json_text {
    const char *dtype_origin;        /* where the dtype came from */
    enum plan_attention attention;   /* the attention implementation simulated */
    const char *attention_origin;    /* where it came from */
    const char *reserve_origin;      /* what set the GPU memory reserve ("profile" or the flag) */
};

/* One profile's search (t, of the setup c and the simulator's train) as the object of
 * docs/json-tune.md: the inputs, the answer, its config block, the best with offload, the exact
 * policy's best, the unhonored ratios (under a DeepSpeed policy), and the per-class facts and, when
 * nothing fits, what would make each class fit. */
json_t *sim_tune_run_json(const struct plan_setup *c, const struct sim_tune_run *t, const struct sim_train *train,
                          const struct sim_tune_json_text *x);
/* The document of runs[0..n): the one profile's object, or {"profiles": [one object per profile]}
 * for more than one. */
json_t *sim_tune_json(const struct plan_setup *c, const struct sim_tune_run *runs, int n, const struct sim_train *train,
                      const struct sim_tune_json_text *x);

#endif
