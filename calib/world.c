/* calib/world.c — the measurements of one `ratiolab calibrate` across the ranks mpirun started
 * (calib.h, calib_measure_world and calib_measure_gpu_world): rank 0 measures the node while the
 * others wait, then every rank joins the collectives (a failure on rank 0 is first agreed on, so
 * it ends all of them) and what one rank of a run does, every rank at once. */
#include <string.h>

#include "calib/calib.h"
#include "exec/exec.h"

static void say(const struct calib_opts *o, const struct ex_comm *comm, const char *what, int done)
{
    if (o->progress && comm->rank == 0)
        o->progress(o->progress_ctx, what, done, 1);
}

/* Whether every rank goes on: rank 0's rc, agreed on by all (a failed agreement stops them too). */
static bool all_go_on(struct ex_comm *comm, int rc)
{
    struct rl_err be;
    int64_t bad = rc != 0;
    return ex_comm_max_i64(comm, &bad, 1, &be) == 0 && !bad;
}

int calib_measure_world(struct ex_comm *comm, const struct calib_opts *o, const struct calib_run *run,
                        bool collectives_only, struct calib *c, struct rl_err *e)
{
    int rc = 0;
    memset(c, 0, sizeof *c);
    if (comm->rank == 0 && !collectives_only)
        rc = calib_measure(o, c, e);
    if (comm->size > 1 && all_go_on(comm, rc)) {
        say(o, comm, "MPI all-gather / reduce-scatter", 0);
        rc = calib_measure_collectives(comm, o->thorough, c, e);
        say(o, comm, "done", 1);
    }
    if (!rc && run) {   /* what one rank of the run does, every rank at once */
        say(o, comm, "the run's GEMMs, Adam, copies, memory", 0);
        rc = calib_measure_run(comm, run, o->thorough, c, e);
        say(o, comm, "done", 1);
    }
    return rc;
}

int calib_measure_gpu_world(const struct ex_backend *be, struct ex_comm *comm, const struct calib_opts *o,
                            const struct calib_run *run, struct calib *c, struct calib_gpu *g, struct rl_err *e)
{
    int rc = 0;
    if (comm->rank == 0 && !(rc = calib_measure_gpu(be, o, g, e))) {
        say(o, comm, "cuBLAS GEMMs", 0);
        if (!(rc = calib_measure_gpu_gemm(be, run, o->thorough, g, e)))
            rc = calib_measure(o, c, e);
    }
    if (comm->size > 1 && all_go_on(comm, rc)) {
        say(o, comm, "NCCL all-gather / reduce-scatter", 0);
        rc = calib_measure_nccl(be, comm, o->thorough, g, e);
    }
    return rc;
}

int calib_calibrate(const struct calib_world_request *q, struct calib *c, struct calib_gpu *g, bool *rank0,
                    struct rl_err *e)
{
    *rank0 = false;
    struct ex_comm comm;
    RL_TRY(ex_comm_init(&comm, e));
    struct calib_opts o = *q->o;
    int rc;
    if (q->cuda) {
        const struct ex_backend *gpu = ex_backend_named(ex_backend_name(EX_BACKEND_CUDA));   /* NULL: built without it */
        rc = calib_measure_gpu_world(gpu, &comm, &o, q->run, c, g, e);
    } else {
        if (comm.size > 1 && o.devices == 2)
            o.devices = comm.size > HW_MAX_GPUS ? HW_MAX_GPUS : comm.size;
        rc = calib_measure_world(&comm, &o, q->run, q->collectives_only, c, e);
    }
    *rank0 = comm.rank == 0;
    ex_comm_finalize(&comm);
    return rc;
}
