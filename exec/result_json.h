/* exec/result_json.h — the run record: an executor's result (struct ex_result) as the JSON that
 * `ratiolab run --json` prints (docs/json-run.md), and that JSON read back into the same struct.
 * Writer and reader are driven by one table of keys per struct (result_json.c), so a field added
 * to the table is written and read alike; tests/check_exec.c round-trips a result. */
#ifndef RL_EXEC_RESULT_JSON_H
#define RL_EXEC_RESULT_JSON_H

#include <jansson.h>

#include "common/rl.h"
#include "exec/exec.h"

/* The result's fields (backend, world, steps, digest, "measurement" of the critical rank, "ranks"
 * with every rank's phases, buffers and memory), appended to the object o in the documented order.
 * r->ranks must hold r->world entries (rank 0's result). */
void ex_result_json_put(json_t *o, const struct ex_result *r);

/* The whole object `ratiolab run --json` prints for one run (docs/json-run.md): the model (as the
 * setup describes it), --scale, the options the run took (schedule, compute, comm dtype), the
 * plan's policy and ratios with the ratio the critical rank measured (host-placed over per-rank
 * elements), then ex_result_json_put's fields. The caller owns the object. */
json_t *ex_run_json(const char *model_desc, double scale, const struct ex_opts *o, const struct plan *p,
                    const struct ex_result *r);
/* Time of a rank's step no phase accounts for as exposed (its "idle_ns"; never negative). */
int64_t ex_rank_idle_ns(const struct ex_rank_result *x);

/* Reads the text `ratiolab run --json` printed (or the object ex_result_json_put wrote) into r:
 * r->ranks is malloc'd (ex_result_free releases it). A memory reading written as null reads as -1;
 * a missing key reads as 0 (-1 for memory readings). RL_EINVAL "run record: ..." when the text is
 * not a JSON object, a listed key has the wrong type, or the ranks are more than EX_MAX_WORLD. */
int ex_result_from_json(const char *text, struct ex_result *r, struct rl_err *e);

#endif
