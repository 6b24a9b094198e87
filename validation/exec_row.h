/* validation/exec_row.h — one row of `ratiolab validate --ratios`: its predicted side, from the
 * plan the executor builds for the row's ratio. Never prints and never launches:
 * campaign/ builds the plan, runs the executor, fills the measured side from its result
 * (exec/result_json.h reads `ratiolab run --json`); cli/validate_exec.c reports. */
#ifndef RL_VALIDATION_EXEC_ROW_H
#define RL_VALIDATION_EXEC_ROW_H

#include <stdint.h>

#include "common/rl.h"
#include "plan/plan.h"
#include "sim/hw.h"
#include "sim/step.h"
#include "validation/val.h"

/* The row's predicted side: the executor's plan for w->ratio simulated on hw with t (its
 * schedule is the row's); the trace goes to trace_path (NULL: none). The plan's host figures
 * include DeepSpeed's flat gradient buffer under the deepspeed schedule (pinned with pin_memory),
 * which the exec ledger leaves to the schedule; under that schedule the side names the DeepSpeed
 * release whose step it predicts (the plan's zero.ds_version). */
int val_row_predict(const struct plan *p, const struct hw_profile *hw, const struct sim_train *t,
                    const char *trace_path, struct val_row *w, struct rl_err *e);

#endif
