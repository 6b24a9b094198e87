/* exec/nvml_self.c — this process's GPU memory as NVML reports it (monitor/'s reader, dlopen'ed):
 * the cuda backend's process_bytes member (backend.h). */
#include <unistd.h>

#include "exec/backend.h"
#include "monitor/monitor.h"

int64_t ex__nvml_process_bytes(struct ex_dev *d)
{
    (void)d;   /* NVML lists every process of every GPU; this one is found by its pid */
    struct mon_gpu *g = NULL;
    struct rl_err ge = {0};   /* NVML missing: the figure stays unavailable */
    enum { MAXP = 256 };
    int pids[MAXP], n = 0;
    int64_t bytes[MAXP], used[MON_MAX_GPUS], total[MON_MAX_GPUS];
    int64_t mine = -1;
    if (mon_gpu_open(&g, &ge) == 0) {
        if (mon_gpu_sample(g, used, total, pids, bytes, MAXP, &n) == 0)
            for (int i = 0; i < n; i++)
                if (pids[i] == (int)getpid())
                    mine = bytes[i];
        mon_gpu_close(g);
    }
    return mine;
}
