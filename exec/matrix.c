/* exec/matrix.c — `ratiolab run`'s runs of one launch (exec.h, ex_run_matrix): every ratio x
 * policy x schedule in that order, each the executor's plan of the setup (plan_exec_plan) run on
 * every rank, its result handed to the caller before the next starts; and what the launch must
 * satisfy before any of them (ex_launch_check). */
#include <string.h>

#include "exec/exec.h"
#include "plan/inputs.h"   /* plan_exec_plan */

int ex_launch_check(const struct plan_setup *c, const struct ex_opts *o, const struct ex_comm *comm,
                    struct rl_err *e)
{
    if (c->layout.pp > 1)
        return rl_errf(e, RL_EINVAL, "pp: %d; the executor runs the data-parallel ZeRO-3 dimension only, pipeline "
                       "parallelism is refused (plan and predict support it)", c->layout.pp);
    if (o->fail_rank >= comm->size)
        return rl_errf(e, RL_EINVAL, "fail_rank: %d; allowed: 0 to %d (the ranks mpirun started)", o->fail_rank,
                       comm->size - 1);
    return 0;
}

int ex_run_matrix(const struct ex_matrix *m, const struct ex_opts *o, struct ex_comm *comm, ex_matrix_fn *each,
                  void *ctx, struct rl_err *e)
{
    for (size_t ri = 0; ri < m->n_ratios; ri++)
        for (int pi = 0; pi < m->n_policies; pi++)
            for (int si = 0; si < m->n_schedules; si++) {
                struct plan p;
                memset(&p, 0, sizeof p);
                struct ex_opts run = *o;
                run.schedule = m->schedules[si];
                struct ex_result r;
                memset(&r, 0, sizeof r);
                int rc = plan_exec_plan(m->setup, m->scaled, m->scale, m->ratios[ri], m->policies[pi], &p, e);
                if (!rc)
                    rc = ex_run(&p, &run, comm, &r, e);
                if (!rc)
                    each(ctx, &p, &run, &r);
                plan_free(&p);
                ex_result_free(&r);
                if (rc)
                    return rc;
            }
    return 0;
}
