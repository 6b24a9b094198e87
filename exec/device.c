/* exec/device.c — which GPU a rank takes and how much of its memory the rank uses (see
 * backend.h); pure, so tested without a GPU. */
#include "exec/backend.h"

int ex_gpu_for_rank(int local_rank, int local_size, int n_gpus, int *device, struct rl_err *e)
{
    if (n_gpus < 1)
        return rl_errf(e, RL_EENV, "backend cuda: no GPU is visible");
    if (local_size < 1)
        local_size = 1;
    if (local_rank < 0 || local_rank >= local_size)
        return rl_errf(e, RL_EINTERNAL, "backend cuda: local rank %d of %d", local_rank, local_size);
    if (local_size > n_gpus)
        return rl_errf(e, RL_EENV, "backend cuda: %d ranks on this node but %d GPU%s visible; NCCL takes one GPU per "
                       "rank; allowed: at most %d rank%s per node", local_size, n_gpus, n_gpus == 1 ? "" : "s",
                       n_gpus, n_gpus == 1 ? "" : "s");
    *device = local_rank;
    return 0;
}

int64_t ex_device_used(int64_t total, int64_t free_now, int64_t used_at_open, int64_t lib_bytes, int64_t rounding_bytes)
{
    int64_t u = total - free_now - used_at_open - lib_bytes - rounding_bytes;
    return u > 0 ? u : 0;
}

int64_t ex_device_granted(int64_t bytes)
{
    int64_t b = bytes > 0 ? bytes : 1;   /* a 0-byte buffer is a 1-byte cudaMalloc */
    return (b + EX_DEVICE_GRANULE - 1) / EX_DEVICE_GRANULE * EX_DEVICE_GRANULE;
}
