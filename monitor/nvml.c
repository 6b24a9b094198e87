/* monitor/nvml.c — GPU memory per device and per process through NVML, loaded with dlopen so
 * that ratiolab builds and runs without the NVIDIA driver (the figures are then unavailable).
 *
 * Only the few NVML entry points used are declared here, with the ABI of nvml.h. The process
 * queries use the _v2 entry points (four-field nvmlProcessInfo_v2_t, 24 bytes) or, on old
 * drivers, the unversioned ones (two fields, 16 bytes). The _v3 ones are avoided on purpose:
 * the structure they take gained a field (usedGpuCcProtectedMemory) in some nvml.h releases and
 * not in others, and a wrong stride would read garbage PIDs. */
#include "monitor/monitor.h"

#include <dlfcn.h>   /* dlopen, dlsym, dlclose */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvml_return;                      /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device;   /* nvmlDevice_t */
enum { NVML_OK = 0, NVML_INSUFFICIENT_SIZE = 7 };
#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)

struct nvml_memory {             /* nvmlMemory_t */
    unsigned long long total;    /* bytes */
    unsigned long long free;     /* bytes */
    unsigned long long used;     /* bytes */
};

struct nvml_process_v1 {         /* nvmlProcessInfo_v1_t, taken by the unversioned queries */
    unsigned int pid;            /* process id */
    unsigned long long used;     /* bytes, or NVML_VALUE_NOT_AVAILABLE */
};

struct nvml_process {            /* nvmlProcessInfo_v2_t, taken by the _v2 queries */
    unsigned int pid;            /* process id, in the PID namespace NVML runs in */
    unsigned long long used;     /* bytes, or NVML_VALUE_NOT_AVAILABLE */
    unsigned int gpu_instance;   /* MIG GPU instance, or ~0 */
    unsigned int compute_instance; /* MIG compute instance, or ~0 */
};

typedef nvml_return nvml_init_fn(void);
typedef nvml_return nvml_count_fn(unsigned int *);
typedef nvml_return nvml_handle_fn(unsigned int, nvml_device *);
typedef nvml_return nvml_mem_fn(nvml_device, struct nvml_memory *);
typedef nvml_return nvml_procs_fn(nvml_device, unsigned int *, void *);
typedef const char *nvml_errstr_fn(nvml_return);

#define MON__MAX_GPU_PROCS 256   /* processes per device read per sample */

struct mon_gpu {
    void *lib;                          /* dlopen handle */
    nvml_init_fn *shutdown;             /* nvmlShutdown */
    nvml_mem_fn *mem;                   /* nvmlDeviceGetMemoryInfo */
    nvml_procs_fn *compute;             /* nvmlDeviceGetComputeRunningProcesses_v2 (or v1), or NULL */
    nvml_procs_fn *graphics;            /* nvmlDeviceGetGraphicsRunningProcesses_v2 (or v1), or NULL */
    bool v1;                            /* the queries take the 16-byte v1 structure */
    int n;                              /* devices */
    nvml_device dev[MON_MAX_GPUS];      /* handles by index */
    struct nvml_process buf[MON__MAX_GPU_PROCS]; /* scratch for one query */
};

static void *sym2(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    return p || !b ? p : dlsym(lib, b);
}

int mon_gpu_open(struct mon_gpu **gp, struct rl_err *e)
{
    *gp = NULL;
    /* $RATIOLAB_NVML_LIB names another library (a driver in an unusual place, or a test's). */
    const char *env = getenv("RATIOLAB_NVML_LIB");
    void *lib = NULL;
    if (env && *env) {
        lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            return rl_errf(e, RL_EENV, "RATIOLAB_NVML_LIB=%s: cannot load (%s)", env, dlerror());
        }
    } else {
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            lib = dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) {
        return rl_errf(e, RL_EENV, "NVML not found (libnvidia-ml.so.1: no NVIDIA driver)");
    }
    nvml_init_fn *init = (nvml_init_fn *)sym2(lib, "nvmlInit_v2", "nvmlInit");
    nvml_count_fn *count = (nvml_count_fn *)sym2(lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    nvml_handle_fn *handle =
        (nvml_handle_fn *)sym2(lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    nvml_errstr_fn *errstr = (nvml_errstr_fn *)dlsym(lib, "nvmlErrorString");
    struct mon_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        dlclose(lib);
        return rl_errf(e, RL_ENOMEM, "out of memory");
    }
    g->lib = lib;
    g->shutdown = (nvml_init_fn *)dlsym(lib, "nvmlShutdown");
    g->mem = (nvml_mem_fn *)dlsym(lib, "nvmlDeviceGetMemoryInfo");
    g->compute = (nvml_procs_fn *)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
    g->graphics = (nvml_procs_fn *)dlsym(lib, "nvmlDeviceGetGraphicsRunningProcesses_v2");
    if (!g->compute) {
        g->v1 = true;
        g->compute = (nvml_procs_fn *)dlsym(lib, "nvmlDeviceGetComputeRunningProcesses");
        g->graphics = (nvml_procs_fn *)dlsym(lib, "nvmlDeviceGetGraphicsRunningProcesses");
    }
    if (!init || !count || !handle || !g->mem || !g->shutdown) {
        dlclose(lib);
        free(g);
        return rl_errf(e, RL_EENV, "NVML library lacks nvmlInit/nvmlDeviceGetMemoryInfo");
    }
    nvml_return r = init();
    if (r != NVML_OK) {
        rl_errf(e, RL_EENV, "nvmlInit failed: %s", errstr ? errstr(r) : "unknown error");
        dlclose(lib);
        free(g);
        return RL_EENV;
    }
    unsigned int n = 0;
    r = count(&n);
    if (r != NVML_OK || n == 0) {
        rl_errf(e, RL_EENV, "NVML reports no GPU (%s)", r != NVML_OK && errstr ? errstr(r) : "0 devices");
        g->shutdown();
        dlclose(lib);
        free(g);
        return RL_EENV;
    }
    if (n > MON_MAX_GPUS)
        n = MON_MAX_GPUS;
    for (unsigned int i = 0; i < n; i++) {
        if (handle(i, &g->dev[i]) != NVML_OK) {
            rl_errf(e, RL_EENV, "nvmlDeviceGetHandleByIndex(%u) failed", i);
            g->shutdown();
            dlclose(lib);
            free(g);
            return RL_EENV;
        }
    }
    g->n = (int)n;
    *gp = g;
    return 0;
}

int mon_gpu_count(const struct mon_gpu *g) { return g ? g->n : 0; }

/* Adds (pid, bytes) to the list, summing over devices and over compute + graphics contexts of
 * one process. O(n) per call; n is the number of GPU processes (small). */
static void add_proc(int *pids, int64_t *bytes, int max, int *n, int pid, int64_t b)
{
    for (int i = 0; i < *n; i++) {
        if (pids[i] == pid) {
            if (bytes[i] == MON_UNAVAILABLE || b == MON_UNAVAILABLE)
                bytes[i] = MON_UNAVAILABLE;
            else
                bytes[i] += b;
            return;
        }
    }
    if (*n < max) {
        pids[*n] = pid;
        bytes[*n] = b;
        (*n)++;
    }
}

static int query(struct mon_gpu *g, nvml_procs_fn *fn, nvml_device d, int *pids, int64_t *bytes,
                 int max, int *n)
{
    if (!fn)
        return 0;
    unsigned int cnt = MON__MAX_GPU_PROCS;
    nvml_return r = fn(d, &cnt, g->buf);
    if (r == NVML_INSUFFICIENT_SIZE)
        cnt = MON__MAX_GPU_PROCS;   /* more processes than we read: the first ones are kept */
    else if (r != NVML_OK)
        return RL_EENV;
    if (cnt > MON__MAX_GPU_PROCS)
        cnt = MON__MAX_GPU_PROCS;
    const struct nvml_process_v1 *v1 = (const struct nvml_process_v1 *)(const void *)g->buf;
    for (unsigned int i = 0; i < cnt; i++) {
        unsigned int pid = g->v1 ? v1[i].pid : g->buf[i].pid;
        unsigned long long u = g->v1 ? v1[i].used : g->buf[i].used;
        add_proc(pids, bytes, max, n, (int)pid,
                 u == NVML_VALUE_NOT_AVAILABLE_ULL ? MON_UNAVAILABLE : (int64_t)u);
    }
    return 0;
}

int mon_gpu_sample(struct mon_gpu *g, int64_t *dev_used_bytes, int64_t *dev_total_bytes,
                   int *pids, int64_t *bytes, int max_procs, int *n_procs)
{
    *n_procs = 0;
    int rc = 0;
    for (int i = 0; i < g->n; i++) {
        struct nvml_memory m;
        if (g->mem(g->dev[i], &m) == NVML_OK) {
            dev_used_bytes[i] = (int64_t)m.used;
            dev_total_bytes[i] = (int64_t)m.total;
        } else {
            dev_used_bytes[i] = dev_total_bytes[i] = MON_UNAVAILABLE;
            rc = RL_EENV;
        }
        if (query(g, g->compute, g->dev[i], pids, bytes, max_procs, n_procs) ||
            query(g, g->graphics, g->dev[i], pids, bytes, max_procs, n_procs))
            rc = RL_EENV;
    }
    return rc;
}

void mon_gpu_close(struct mon_gpu *g)
{
    if (!g)
        return;
    g->shutdown();
    dlclose(g->lib);
    free(g);
}
