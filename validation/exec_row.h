/* validation/exec_row.h — one row of `ratiolab validate --ratios`, computed: the plan the executor
 * builds for a ratio (as `ratiolab run` builds it), the row's predicted side from the simulator,
 * its measured side from the executor's result (in this process) or from `ratiolab run --json`,
 * and what one rank of that run does, for the calibration under the run's own launch. Never
 * prints and never launches: cli/validate_exec.c runs the executor and reports. */
#ifndef RL_VALIDATION_EXEC_ROW_H
#define RL_VALIDATION_EXEC_ROW_H

#include <stdint.h>

#include "common/rl.h"
#include "exec/exec.h"
#include "plan/inputs.h"
#include "sim/hw.h"
#include "sim/step.h"
#include "calib/calib.h"
#include "validation/val.h"


/* The row's predicted side: the executor's plan for w->ratio simulated on hw with t (its
 * schedule is the row's); the trace goes to trace_path (NULL: none). The plan's host figures
 * include DeepSpeed's pinned flat gradient buffer under the deepspeed-0.12 schedule, which the
 * exec ledger leaves to the schedule. */
int val_row_predict(const struct plan_setup *c, const struct plan_model *scaled, double scale,
                    const struct sim_hw *hw, const struct sim_train *t, const char *trace_path, struct val_row *w,
                    struct rl_err *e);

/* The row's measured side from a run in this process (rank 0's result holds every rank's);
 * baseline[k] is rank k's RSS besides its ledger buffers (bytes, -1 unknown). */
void val_row_from_result(struct val_row *w, const struct ex_result *r, const int64_t *baseline);

/* The same from the text `ratiolab run --json` printed. RL_EINVAL when it is not JSON. */
int val_row_from_run_json(struct val_row *w, const char *json_text, const int64_t *baseline, struct rl_err *e);

/* What one rank of the run of plan p does, as the simulator charges it and the executor's
 * --compute gemm runs it (exec/compute.c): per layer a GEMM per weight on micro_batch x seq
 * tokens (2-D weights as they are, other tensors rank-1), attention scores and values per
 * sequence and local head, the logits once after the layers, nothing for the embedding lookup;
 * grouped by shape (at most CALIB_MAX_GEMMS). Then the rank's partition (device Adam), the
 * host chunk, a layer's all-gather, a flush's reduce-scatter and the rank's model states. */
void calib_run_of_plan(const struct plan *p, int64_t micro_batch, int64_t seq, struct calib_run *r);

#endif
