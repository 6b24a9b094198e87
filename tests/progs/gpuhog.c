/* tests/progs/gpuhog.c — holds known amounts of GPU memory (cudaMalloc) and pinned host memory
 * (cudaHostAlloc) so the monitor's NVML path can be checked on a machine with a GPU.
 *
 * usage: gpuhog DEVICE_MIB PINNED_MIB HOLD_MS
 * Prints "PID <pid>", then "PHASE gpu begin" / "PHASE gpu end" around the hold. Exits 3 with
 * "skipped: no GPU" when CUDA is not built in or no device is usable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef RL_HAVE_CUDA
#include <cuda_runtime_api.h>   /* cudaMalloc, cudaHostAlloc, cudaMemset */
#endif

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: gpuhog DEVICE_MIB PINNED_MIB HOLD_MS\n");
        return 2;
    }
    long dev_mib = atol(argv[1]), pin_mib = atol(argv[2]), ms = atol(argv[3]);
    printf("PID %d\n", (int)getpid());
    fflush(stdout);
#ifdef RL_HAVE_CUDA
    void *d = NULL, *h = NULL;
    cudaError_t err = cudaMalloc(&d, (size_t)dev_mib << 20);
    if (err != cudaSuccess) {
        printf("skipped: no GPU (%s)\n", cudaGetErrorString(err));
        return 3;
    }
    if (cudaMemset(d, 1, (size_t)dev_mib << 20) != cudaSuccess ||
        cudaHostAlloc(&h, (size_t)pin_mib << 20, cudaHostAllocDefault) != cudaSuccess) {
        printf("gpuhog: cudaMemset/cudaHostAlloc failed\n");
        return 1;
    }
    memset(h, 1, (size_t)pin_mib << 20);
    cudaDeviceSynchronize();
    printf("PHASE gpu begin\n");
    fflush(stdout);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    printf("PHASE gpu end\n");
    fflush(stdout);
    cudaFreeHost(h);
    cudaFree(d);
    return 0;
#else
    (void)dev_mib;
    (void)pin_mib;
    (void)ms;
    printf("skipped: no GPU (built without CUDA)\n");
    return 3;
#endif
}
