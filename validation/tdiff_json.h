/* validation/tdiff_json.h — `ratiolab trace diff --json`: two traces' per-rank times (val.h's
 * val_trace_times) lined up by rank and phase as one JSON object, built here beside the line-up
 * so the cli only prints it (schema: docs/json-output.md). */
#ifndef RL_VALIDATION_TDIFF_JSON_H
#define RL_VALIDATION_TDIFF_JSON_H

#include <jansson.h>

#include "validation/val.h"

/* {"a": path_a, "b": path_b, "ranks": [{"rank", "a", "b", "diff"}]}: every rank of either trace,
 * ascending (val_trace_ranks_union); "a" and "b" are that rank's side ({"extent_ns", "idle_ns",
 * "phases": {phase: {"busy_ns", "exposed_ns"}}}, every phase of plan/step.h in order) or null
 * when its trace lacks the rank; "diff" is b - a in the same shape, null unless both have it.
 * Exact integer nanoseconds. The caller owns the object. */
json_t *val_trace_diff_json(const char *path_a, const char *path_b, const struct val_trace_times *a,
                            const struct val_trace_times *b);

#endif
