/* common/rl_api.h — the one check of a CUDA, NCCL, cuBLAS or MPI call. Every failure reads
 *   "<file>:<line>: <the call as written>: <code name> (<code number>): <code text>"
 * and returns RL_EENV through struct rl_err (common/rl.h). Include this header after the API's
 * own header: the check of an API is defined only when its header was included first
 * (cuda_runtime_api.h, nccl.h, cublas_api.h / cublas_v2.h, mpi.h), so this file needs none of them.
 *
 *   RL_API_TRY(cuda, cudaMalloc(&p, n), e);            returns the error from the calling function
 *   if ((rc = RL_API_CHECK(nccl, ncclAllGather(...), e))) goto out;
 *   RL_API_TRY(cuda_query, cudaEventQuery(ev), e, &done);   not-ready is no error (see below)
 *
 * cuBLAS is loaded with dlopen by its users, so its status names are this file's table (the
 * values of cublas_api.h's cublasStatus_t); NCCL has no name function either (ncclResult_t's). */
#ifndef RL_COMMON_RL_API_H
#define RL_COMMON_RL_API_H

#include <stdbool.h>

#include "common/rl.h"

#define RL_API_CHECK(api, call, e, ...) rl_api_check_##api((call), #call, __FILE__, __LINE__, (e), ##__VA_ARGS__)
#define RL_API_TRY(api, call, e, ...) RL_TRY(RL_API_CHECK(api, call, e, ##__VA_ARGS__))

/* The message of every check: 0 when ok, else RL_EENV with the one format above. */
static inline int rl_api_fail(struct rl_err *e, const char *call, const char *file, int line, long code,
                              const char *name, const char *text)
{
    return rl_errf(e, RL_EENV, "%s:%d: %s: %s (%ld): %s", file, line, call, name, code, text);
}

/* A query that may answer "not ready" (cudaEventQuery, cudaStreamQuery): rc is the query's answer.
 * Ready: *done = true. Not ready: *done = false, no error, and the runtime's last error, which the
 * not-ready answer has set, is cleared with clear() (cudaGetLastError), so the next kernel
 * launch's check does not report it. Anything else is an error. The pure part of the CUDA query
 * check, testable without a GPU (tests/check_common.c). */
static inline int rl_api_poll(int rc, int ok, int not_ready, int (*clear)(void), bool *done)
{
    *done = rc == ok;
    if (rc == not_ready) {
        clear();
        return 0;
    }
    return rc == ok ? 0 : -1;
}

#if defined(CUDART_VERSION)
static inline int rl_api_check_cuda(cudaError_t rc, const char *call, const char *file, int line, struct rl_err *e)
{
    return rc == cudaSuccess ? 0 : rl_api_fail(e, call, file, line, (long)rc, cudaGetErrorName(rc), cudaGetErrorString(rc));
}
static inline int rl_api_cuda_clear(void)
{
    return (int)cudaGetLastError();
}
static inline int rl_api_check_cuda_query(cudaError_t rc, const char *call, const char *file, int line, struct rl_err *e,
                                          bool *done)
{
    if (rl_api_poll((int)rc, (int)cudaSuccess, (int)cudaErrorNotReady, rl_api_cuda_clear, done) == 0)
        return 0;
    return rl_api_check_cuda(rc, call, file, line, e);
}
#endif

#if defined(NCCL_MAJOR)
static inline const char *rl_api_nccl_name(ncclResult_t rc)
{
    static const char *const names[] = {"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError",
                                        "ncclInternalError", "ncclInvalidArgument", "ncclInvalidUsage",
                                        "ncclRemoteError", "ncclInProgress"};
    return (int)rc >= 0 && (int)rc < (int)(sizeof names / sizeof names[0]) ? names[rc] : "ncclResult";
}
static inline int rl_api_check_nccl(ncclResult_t rc, const char *call, const char *file, int line, struct rl_err *e)
{
    if (rc == ncclSuccess || rc == ncclInProgress)
        return 0;
    /* ncclGetLastError (NCCL >= 2.13) says which check failed inside NCCL. */
    const char *last = ncclGetLastError(NULL);
    char text[512];
    snprintf(text, sizeof text, "%s%s%s", ncclGetErrorString(rc), last && *last ? "; " : "", last ? last : "");
    return rl_api_fail(e, call, file, line, (long)rc, rl_api_nccl_name(rc), text);
}
#endif

#if defined(CUBLAS_VER_MAJOR) || defined(CUBLAS_API_H_)
static inline int rl_api_check_cublas(cublasStatus_t rc, const char *call, const char *file, int line,
                                      struct rl_err *e)
{
    static const struct {
        int code;                /* cublasStatus_t value */
        const char *name, *text; /* its name and what it means (cuBLAS documentation) */
    } t[] = {{0, "CUBLAS_STATUS_SUCCESS", "success"},
             {1, "CUBLAS_STATUS_NOT_INITIALIZED", "the cuBLAS library was not initialized"},
             {3, "CUBLAS_STATUS_ALLOC_FAILED", "resource allocation failed inside cuBLAS"},
             {7, "CUBLAS_STATUS_INVALID_VALUE", "an unsupported value or parameter was passed"},
             {8, "CUBLAS_STATUS_ARCH_MISMATCH", "the function needs a feature absent from the device"},
             {11, "CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"},
             {13, "CUBLAS_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"},
             {14, "CUBLAS_STATUS_INTERNAL_ERROR", "an internal cuBLAS operation failed"},
             {15, "CUBLAS_STATUS_NOT_SUPPORTED", "the functionality requested is not supported"},
             {16, "CUBLAS_STATUS_LICENSE_ERROR", "the functionality requested requires a license"}};
    if (rc == CUBLAS_STATUS_SUCCESS)
        return 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].code == (int)rc)
            return rl_api_fail(e, call, file, line, (long)rc, t[i].name, t[i].text);
    return rl_api_fail(e, call, file, line, (long)rc, "cublasStatus_t", "unknown status");
}
#endif

#if defined(MPI_VERSION)
static inline int rl_api_check_mpi(int rc, const char *call, const char *file, int line, struct rl_err *e)
{
    if (rc == MPI_SUCCESS)
        return 0;
    char text[MPI_MAX_ERROR_STRING + 1] = "", name[64];
    int n = 0, cls = 0;
    MPI_Error_string(rc, text, &n);
    MPI_Error_class(rc, &cls);
    snprintf(name, sizeof name, "MPI error class %d", cls);
    return rl_api_fail(e, call, file, line, (long)rc, name, text);
}
#endif

#endif
