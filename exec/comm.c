/* exec/comm.c — ranks: MPI (Open MPI) when started by mpirun, otherwise one rank without MPI.
 * Built with the flags of `mpicc --showme:compile` and RL_HAVE_MPI when mpicc exists. */
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "kernels/lowp.h"   /* kern_bf16_to_f32, kern_f32_to_bf16, ... (the 16-bit sums) */

#ifdef RL_HAVE_MPI
#include <mpi.h>   /* MPI_Init, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Gatherv, MPI_Abort */

static MPI_Comm comm_of(const struct ex_comm *c) { return (MPI_Comm)c->impl; }

#include "common/rl_api.h"   /* RL_API_TRY: the one check of MPI (and CUDA, NCCL, cuBLAS) calls */

/* A failed MPI call's code, through the one check; `what` names the call. */
static int mpi_err(struct rl_err *e, int rc, const char *what)
{
    return rl_api_check_mpi(rc, what, __FILE__, __LINE__, e);
}
#define MPI_TRY(call, what) RL_API_TRY(mpi, call, e)
#endif

static bool launched_by_mpi(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int ex_comm_init(struct ex_comm *c, struct rl_err *e)
{
    memset(c, 0, sizeof *c);
    c->size = 1;
    if (!launched_by_mpi())
        return 0;
#ifdef RL_HAVE_MPI
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited)
        MPI_TRY(MPI_Init(NULL, NULL), "MPI_Init");
    /* Errors come back as values, so a rank can print its message before MPI_Abort. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    c->impl = (void *)MPI_COMM_WORLD;
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    c->mpi = true;
    return 0;
#else
    return rl_errf(e, RL_EENV, "started by an MPI launcher, but this ratiolab was built without MPI "
                   "(install libopenmpi-dev and rebuild)");
#endif
}

void ex_comm_finalize(struct ex_comm *c)
{
#ifdef RL_HAVE_MPI
    if (c->mpi)
        MPI_Finalize();
#endif
    c->mpi = false;
}

void ex_comm_abort(struct ex_comm *c, int code)
{
#ifdef RL_HAVE_MPI
    if (c->mpi && c->size > 1)
        MPI_Abort(comm_of(c), code);
#endif
    (void)c;
    (void)code;
}

int ex_comm_barrier(struct ex_comm *c, struct rl_err *e)
{
#ifdef RL_HAVE_MPI
    if (c->mpi)
        MPI_TRY(MPI_Barrier(comm_of(c)), "MPI_Barrier");
#endif
    (void)c;
    (void)e;
    return 0;
}

int ex_comm_max_i64(struct ex_comm *c, int64_t *v, int n, struct rl_err *e)
{
#ifdef RL_HAVE_MPI
    if (c->mpi)
        MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_MAX, comm_of(c)), "MPI_Allreduce");
#endif
    (void)c;
    (void)v;
    (void)n;
    (void)e;
    return 0;
}

#ifdef RL_HAVE_MPI
/* MPI has no 16-bit float types: a 16-bit reduction is MPI_UINT16_T with a user operation that
 * widens both operands, adds in fp32 and rounds the sum back (RNE): one rounding per addition,
 * as a 16-bit NCCL reduction does. */
static void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = kern_f32_to_bf16(kern_bf16_to_f32(a[i]) + kern_bf16_to_f32(b[i]));
}

static void sum_f16(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = kern_f32_to_f16(kern_f16_to_f32(a[i]) + kern_f16_to_f32(b[i]));
}
#endif

int ex_comm_reduce_scatter(struct ex_comm *c, void *buf, int64_t count, enum kern_dtype t, struct rl_err *e)
{
    if (count > INT32_MAX)
        return rl_errf(e, RL_EINTERNAL, "reduce-scatter of %lld elements per rank exceeds MPI's int count",
                       (long long)count);
    if (t != KERN_F32 && t != KERN_BF16 && t != KERN_F16)
        return rl_errf(e, RL_EINTERNAL, "reduce-scatter in %s", kern_dtype_name(t));
#ifdef RL_HAVE_MPI
    if (c->mpi && c->size > 1) {
        if (t == KERN_F32) {
            /* In place: the input is the whole buffer, the result lands at its front. */
            MPI_TRY(MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, comm_of(c)),
                    "MPI_Reduce_scatter_block");
            return 0;
        }
        MPI_Op op;
        MPI_TRY(MPI_Op_create(t == KERN_BF16 ? sum_bf16 : sum_f16, 1, &op), "MPI_Op_create");
        int rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, buf, (int)count, MPI_UINT16_T, op, comm_of(c));
        MPI_Op_free(&op);
        if (rc != MPI_SUCCESS)
            return mpi_err(e, rc, "MPI_Reduce_scatter_block (16-bit)");
        return 0;
    }
#endif
    (void)c;
    (void)buf;
    return 0;
}

int ex_comm_reduce_scatter_f32(struct ex_comm *c, float *buf, int64_t count, struct rl_err *e)
{
    return ex_comm_reduce_scatter(c, buf, count, KERN_F32, e);
}

int ex_comm_allgather(struct ex_comm *c, const void *in, void *out, int64_t bytes, struct rl_err *e)
{
    if (bytes > INT32_MAX)
        return rl_errf(e, RL_EINTERNAL, "all-gather of %lld bytes per rank exceeds MPI's int count",
                       (long long)bytes);
#ifdef RL_HAVE_MPI
    if (c->mpi && c->size > 1) {
        MPI_TRY(MPI_Allgather(in == out ? MPI_IN_PLACE : in, (int)bytes, MPI_BYTE, out, (int)bytes,
                              MPI_BYTE, comm_of(c)), "MPI_Allgather");
        return 0;
    }
#endif
    (void)c;
    if (in != out)
        memcpy(out, in, (size_t)bytes);
    return 0;
}

#ifdef RL_HAVE_MPI
/* A started non-blocking collective. */
struct ex_comm_req {
    MPI_Request req;   /* MPI's handle */
};
#endif

int ex_comm_iallgather(struct ex_comm *c, void *buf, int64_t bytes, struct ex_comm_req **req, struct rl_err *e)
{
    *req = NULL;
    if (bytes > INT32_MAX)
        return rl_errf(e, RL_EINTERNAL, "all-gather of %lld bytes per rank exceeds MPI's int count",
                       (long long)bytes);
#ifdef RL_HAVE_MPI
    if (c->mpi && c->size > 1) {
        struct ex_comm_req *q = malloc(sizeof *q);
        if (!q)
            return rl_errf(e, RL_ENOMEM, "out of host memory for an all-gather request");
        int rc = MPI_Iallgather(MPI_IN_PLACE, (int)bytes, MPI_BYTE, buf, (int)bytes, MPI_BYTE, comm_of(c), &q->req);
        if (rc != MPI_SUCCESS) {
            free(q);
            return mpi_err(e, rc, "MPI_Iallgather");
        }
        *req = q;
        return 0;
    }
#endif
    (void)c;
    (void)buf;
    return 0;
}

int ex_comm_test(struct ex_comm *c, struct ex_comm_req *req, bool *done, struct rl_err *e)
{
    (void)c;
    *done = true;
    if (!req)
        return 0;
#ifdef RL_HAVE_MPI
    int flag = 0;
    MPI_TRY(MPI_Test(&req->req, &flag, MPI_STATUS_IGNORE), "MPI_Test (all-gather)");
    *done = flag != 0;
#endif
    (void)e;
    return 0;
}

int ex_comm_wait(struct ex_comm *c, struct ex_comm_req *req, struct rl_err *e)
{
    (void)c;
    if (!req)
        return 0;
#ifdef RL_HAVE_MPI
    int rc = MPI_Wait(&req->req, MPI_STATUS_IGNORE);
    free(req);
    if (rc != MPI_SUCCESS)
        return mpi_err(e, rc, "MPI_Wait (all-gather)");
#endif
    (void)e;
    return 0;
}

void ex_comm_req_free(struct ex_comm_req *req)
{
    free(req);
}

int ex_comm_bcast(struct ex_comm *c, void *buf, int64_t bytes, struct rl_err *e)
{
    if (bytes > INT32_MAX)
        return rl_errf(e, RL_EINTERNAL, "broadcast of %lld bytes exceeds MPI's int count", (long long)bytes);
#ifdef RL_HAVE_MPI
    if (c->mpi && c->size > 1)
        MPI_TRY(MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, comm_of(c)), "MPI_Bcast");
#endif
    (void)c;
    (void)buf;
    return 0;
}

int ex_comm_gatherv(struct ex_comm *c, const void *in, int64_t bytes, void **out, int64_t *out_bytes,
                    struct rl_err *e)
{
    *out = NULL;
    *out_bytes = 0;
    if (bytes > INT32_MAX)
        return rl_errf(e, RL_EINTERNAL, "gather of %lld bytes exceeds MPI's int count", (long long)bytes);
#ifdef RL_HAVE_MPI
    if (c->mpi && c->size > 1) {
        int n = (int)bytes;
        int *counts = c->rank == 0 ? calloc((size_t)c->size, sizeof *counts) : NULL;
        int *displs = c->rank == 0 ? calloc((size_t)c->size, sizeof *displs) : NULL;
        if (c->rank == 0 && (!counts || !displs)) {
            free(counts);
            free(displs);
            return rl_errf(e, RL_ENOMEM, "out of host memory for a gather");
        }
        int rc = MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, comm_of(c));
        if (rc != MPI_SUCCESS) {
            free(counts);
            free(displs);
            return mpi_err(e, rc, "MPI_Gather");
        }
        int64_t total = 0;
        if (c->rank == 0)
            for (int q = 0; q < c->size; q++) {
                displs[q] = (int)total;
                total += counts[q];
            }
        if (total > INT32_MAX) {
            free(counts);
            free(displs);
            return rl_errf(e, RL_EINTERNAL, "gather of %lld bytes exceeds MPI's int count", (long long)total);
        }
        void *buf = c->rank == 0 ? malloc(total ? (size_t)total : 1) : NULL;
        rc = MPI_Gatherv(in, n, MPI_BYTE, buf, counts, displs, MPI_BYTE, 0, comm_of(c));
        free(counts);
        free(displs);
        if (rc != MPI_SUCCESS) {
            free(buf);
            return mpi_err(e, rc, "MPI_Gatherv");
        }
        *out = buf;
        *out_bytes = total;
        return 0;
    }
#endif
    (void)c;
    void *buf = malloc(bytes ? (size_t)bytes : 1);
    if (!buf)
        return rl_errf(e, RL_ENOMEM, "out of host memory for a gather");
    memcpy(buf, in, (size_t)bytes);
    *out = buf;
    *out_bytes = bytes;
    return 0;
}
