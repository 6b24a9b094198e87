/* validation/exec_row.c — one row of `ratiolab validate --ratios`, computed (see exec_row.h). */
#include "validation/exec_row.h"

int val_row_predict(const struct plan *p, const struct hw_profile *hw, const struct sim_train *t,
                    const char *trace_path, struct val_row *w, struct rl_err *e)
{
    struct sim_step_result sr;
    RL_TRY(sim_step_run(p, hw, t, trace_path, &sr, e));
    w->predicted.step_ns = sr.step_ns;
    w->predicted.deepspeed_version[0] = 0;
    if (t->schedule == STEP_SCHED_DS012)   /* the simulator's step is this release's (plan/ds_rules.c) */
        rl_version_str(p->zero.ds_version, w->predicted.deepspeed_version, sizeof w->predicted.deepspeed_version);
    for (int k = 0; k < VAL_PHASES; k++) {
        w->predicted.busy_ns[k] = sr.phase[k].busy_ns;
        w->predicted.exposed_ns[k] = sr.phase[k].exposed_ns;
    }
    w->plan_cpu_numel = p->cpu_numel;
    w->plan_per_rank_numel = p->per_rank_numel;
    w->plan_honored_ratio = p->honored_ratio;
    w->plan_device_bytes = plan_peak_gpu_bytes(p);
    w->plan_host_bytes = plan_peak_cpu_bytes(p);
    w->plan_host_pinned_bytes = p->stages[PLAN_STAGE_COUNT - 1].cpu_pinned_bytes;
    if (t->schedule == STEP_SCHED_DS012) {
        /* DeepSpeed's flat gradient buffer (the deepspeed-0.12 ledger's entry, P elements of the
         * model dtype; pinned with pin_memory), which the exec ledger leaves to the schedule */
        int64_t flat = p->per_rank_numel * plan_dtype_bytes(p->zero.dtype);
        w->plan_host_bytes += flat;
        if (p->zero.pin_memory)
            w->plan_host_pinned_bytes += flat;
    }
    return 0;
}
