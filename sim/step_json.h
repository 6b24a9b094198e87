/* sim/step_json.h — a prediction as JSON: the "prediction" object of `ratiolab predict`, `sweep`
 * and `tune` (docs/json-prediction.md), built here next to struct sim_step_result so every writer
 * of a prediction writes the same fields. The caller owns the object; printing (schema_version,
 * shortest reals) is the writer's. */
#ifndef RL_SIM_STEP_JSON_H
#define RL_SIM_STEP_JSON_H

#include <jansson.h>

#include "sim/step.h"

/* Every field of a prediction; bytes and nanoseconds as exact integers. */
json_t *sim_step_result_json(const struct sim_step_result *r);

#endif
