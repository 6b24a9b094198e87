/* validation/calib_gpu.c — the GPU part of `ratiolab calibrate --backend cuda` (see calib.h).
 * Built only with CUDA (RL_HAVE_CUDA); scripts/gpu-check.sh runs it on a GPU machine. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adam.h"
#include "validation/calib.h"
#include "validation/val.h"

#ifdef RL_HAVE_CUDA
#include <cuda_runtime_api.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                 \
            rc = rl_errf(e, RL_EENV, "calibrate: %s:%d: %s: %s", __FILE__, __LINE__, #call,        \
                         cudaGetErrorString(err_));                                                \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static void figure(struct val_figure *f, const double *v, int n)
{
    f->median = val_median(v, n);
    f->min = f->max = v[0];
    for (int i = 1; i < n; i++) {
        f->min = v[i] < f->min ? v[i] : f->min;
        f->max = v[i] > f->max ? v[i] : f->max;
    }
    f->repeats = n;
}

/* One copy of `bytes` timed with events on `s`; GB/s. */
static int timed_copy(void *dst, const void *src, int64_t bytes, enum cudaMemcpyKind k, cudaStream_t s,
                      double *gbps, struct rl_err *e)
{
    int rc = 0;
    cudaEvent_t a = NULL, b = NULL;
    float ms = 0;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a, s));
    CK(cudaMemcpyAsync(dst, src, (size_t)bytes, k, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms, a, b));
    *gbps = ms > 0 ? (double)bytes / (ms * 1e-3) * 1e-9 : 0;
out:
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    return rc;
}

int val_calibrate_gpu(const struct val_calib_opts *o, struct val_calib_gpu *g, struct rl_err *e)
{
    memset(g, 0, sizeof *g);
    int n = kern_cuda_device_count();
    if (n <= 0)
        return rl_errf(e, RL_EENV, "calibrate --backend cuda: no GPU visible (cudaGetDeviceCount found none)");
    g->n_gpus = n > VAL_CALIB_MAX_GPUS ? VAL_CALIB_MAX_GPUS : n;
    int reps = o->thorough ? 15 : 7, rc = 0;
    g->copy_bytes = (int64_t)(o->thorough ? 1024 : 256) << 20;
    struct cudaDeviceProp prop;
    void *pinned[VAL_CALIB_MAX_GPUS] = {0}, *dev[VAL_CALIB_MAX_GPUS] = {0}, *pageable = NULL, *dev2 = NULL;
    cudaStream_t st[VAL_CALIB_MAX_GPUS] = {0};
    float *p = NULL, *m = NULL, *v = NULL, *gr = NULL;
    CK(cudaGetDeviceProperties(&prop, 0));
    snprintf(g->model, sizeof g->model, "%s", prop.name);
    g->memory_bytes = (int64_t)prop.totalGlobalMem;
    pageable = malloc((size_t)g->copy_bytes);
    if (!pageable) {
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %lld pageable bytes", (long long)g->copy_bytes);
        goto out;
    }
    memset(pageable, 1, (size_t)g->copy_bytes);
    for (int d = 0; d < g->n_gpus; d++) {
        CK(cudaSetDevice(d));
        CK(cudaStreamCreate(&st[d]));
        CK(cudaMalloc(&dev[d], (size_t)g->copy_bytes));
        CK(cudaMallocHost(&pinned[d], (size_t)g->copy_bytes));
        memset(pinned[d], 1, (size_t)g->copy_bytes);
    }
    double x[64];
    const struct {
        struct val_figure *f;      /* per-GPU figure array */
        bool pin, h2d;             /* pinned or pageable, direction */
    } kinds[4] = {{g->h2d_pinned_gbps, true, true}, {g->d2h_pinned_gbps, true, false},
                  {g->h2d_pageable_gbps, false, true}, {g->d2h_pageable_gbps, false, false}};
    for (int d = 0; d < g->n_gpus; d++) {
        if (o->progress) {
            char what[64];
            snprintf(what, sizeof what, "GPU %d copies", d);
            o->progress(o->progress_ctx, what, d, g->n_gpus + 3);
        }
        CK(cudaSetDevice(d));
        for (int k = 0; k < 4; k++) {
            void *host = kinds[k].pin ? pinned[d] : pageable;
            for (int r = 0; r <= reps && !rc; r++) {
                double gb;
                rc = kinds[k].h2d ? timed_copy(dev[d], host, g->copy_bytes, cudaMemcpyHostToDevice, st[d], &gb, e)
                                  : timed_copy(host, dev[d], g->copy_bytes, cudaMemcpyDeviceToHost, st[d], &gb, e);
                if (r > 0)
                    x[r - 1] = gb;
            }
            if (rc)
                goto out;
            figure(&kinds[k].f[d], x, reps);
        }
    }
    /* Every GPU at once: H2D from pinned memory, wall time over all of them. */
    if (o->progress)
        o->progress(o->progress_ctx, "all GPUs at once", g->n_gpus, g->n_gpus + 3);
    for (int r = 0; r <= reps; r++) {
        cudaEvent_t a[VAL_CALIB_MAX_GPUS], b[VAL_CALIB_MAX_GPUS];
        for (int d = 0; d < g->n_gpus; d++) {
            CK(cudaSetDevice(d));
            CK(cudaEventCreate(&a[d]));
            CK(cudaEventCreate(&b[d]));
            CK(cudaEventRecord(a[d], st[d]));
            CK(cudaMemcpyAsync(dev[d], pinned[d], (size_t)g->copy_bytes, cudaMemcpyHostToDevice, st[d]));
            CK(cudaEventRecord(b[d], st[d]));
        }
        double sum = 0;
        for (int d = 0; d < g->n_gpus; d++) {
            float ms = 0;
            CK(cudaSetDevice(d));
            CK(cudaEventSynchronize(b[d]));
            CK(cudaEventElapsedTime(&ms, a[d], b[d]));
            sum += ms > 0 ? (double)g->copy_bytes / (ms * 1e-3) * 1e-9 : 0;
            cudaEventDestroy(a[d]);
            cudaEventDestroy(b[d]);
        }
        if (r > 0)
            x[r - 1] = sum;
    }
    figure(&g->h2d_all_gbps, x, reps);
    /* HBM: a device-to-device copy on GPU 0, read + write bytes. */
    if (o->progress)
        o->progress(o->progress_ctx, "GPU 0 device-to-device copy", g->n_gpus + 1, g->n_gpus + 3);
    CK(cudaSetDevice(0));
    CK(cudaMalloc(&dev2, (size_t)g->copy_bytes));
    for (int r = 0; r <= reps; r++) {
        double gb;
        if ((rc = timed_copy(dev2, dev[0], g->copy_bytes, cudaMemcpyDeviceToDevice, st[0], &gb, e)))
            goto out;
        if (r > 0)
            x[r - 1] = 2 * gb;
    }
    figure(&g->d2d_gbps, x, reps);
    /* GPU Adam: kernels/adam.cu on GPU 0 (AdamW, fp32 gradient, bf16 copy). */
    if (o->progress)
        o->progress(o->progress_ctx, "GPU 0 Adam", g->n_gpus + 2, g->n_gpus + 3);
    g->adam_numel = (int64_t)(o->thorough ? 256 : 64) << 20;
    size_t nb = (size_t)g->adam_numel * 4;
    CK(cudaMalloc((void **)&p, nb));
    CK(cudaMalloc((void **)&m, nb));
    CK(cudaMalloc((void **)&v, nb));
    CK(cudaMalloc((void **)&gr, nb));
    CK(cudaMemset(p, 0, nb));
    CK(cudaMemset(m, 0, nb));
    CK(cudaMemset(v, 0, nb));
    CK(cudaMemset(gr, 0, nb));
    {
        struct kern_adam_hparams h = kern_adam_hparams_default();
        struct kern_adam_bufs b = {.param = p, .exp_avg = m, .exp_avg_sq = v, .grad = gr, .grad_dtype = KERN_F32,
                                   .numel = g->adam_numel};
        for (int r = 0; r <= reps; r++) {
            struct kern_adam_scalars sc;
            cudaEvent_t a = NULL, z = NULL;
            float ms = 0;
            if ((rc = kern_adam_scalars_make(&h, r + 1, &sc, e)))
                goto out;
            CK(cudaEventCreate(&a));
            CK(cudaEventCreate(&z));
            CK(cudaEventRecord(a, st[0]));
            if ((rc = kern_adam_cuda(&sc, &b, st[0], e)))
                goto out;
            CK(cudaEventRecord(z, st[0]));
            CK(cudaEventSynchronize(z));
            CK(cudaEventElapsedTime(&ms, a, z));
            cudaEventDestroy(a);
            cudaEventDestroy(z);
            if (r > 0)
                x[r - 1] = ms > 0 ? (double)g->adam_numel / (ms * 1e-3) : 0;
        }
        figure(&g->adam_elems_per_s, x, reps);
    }
    if (o->progress)
        o->progress(o->progress_ctx, "done", g->n_gpus + 3, g->n_gpus + 3);
out:
    for (int d = 0; d < g->n_gpus; d++) {
        cudaSetDevice(d);
        if (dev[d])
            cudaFree(dev[d]);
        if (pinned[d])
            cudaFreeHost(pinned[d]);
        if (st[d])
            cudaStreamDestroy(st[d]);
    }
    cudaSetDevice(0);
    if (dev2)
        cudaFree(dev2);
    if (p)
        cudaFree(p);
    if (m)
        cudaFree(m);
    if (v)
        cudaFree(v);
    if (gr)
        cudaFree(gr);
    free(pageable);
    return rc;
}
#else
int val_calibrate_gpu(const struct val_calib_opts *o, struct val_calib_gpu *g, struct rl_err *e)
{
    (void)o;
    memset(g, 0, sizeof *g);
    return rl_errf(e, RL_EENV, "calibrate --backend cuda: this ratiolab was built without CUDA (nvcc not found)");
}
#endif

static void setsrc(json_t *sources, const char *key, const char *host, const char *date, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void setsrc(json_t *sources, const char *key, const char *host, const char *date, const char *fmt, ...)
{
    char body[800], all[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(all, sizeof all, "measured by ratiolab calibrate on %s, %s: %s", host, date, body);
    json_object_set_new(sources, key, json_string(all));
}

int val_calib_gpu_profile(const struct val_calib *c, const struct val_calib_gpu *g, const char *base_text,
                          const char *name, char **out, struct rl_err *e)
{
    json_error_t je;
    json_t *root = json_loads(base_text, 0, &je);
    if (!root || !json_is_object(json_object_get(root, "gpu")) || !json_is_object(json_object_get(root, "sources"))) {
        json_decref(root);
        return rl_errf(e, RL_EINVAL, "--base: not a hardware profile (line %d: %s)", je.line, je.text);
    }
    json_t *gpu = json_object_get(root, "gpu"), *node = json_object_get(root, "node"),
           *src = json_object_get(root, "sources");
    json_object_set_new(root, "name", json_string(name));
    json_object_set_new(gpu, "model", json_string(g->model));
    json_object_set_new(gpu, "memory_bytes", json_integer(g->memory_bytes));
    setsrc(src, "gpu.memory_bytes", c->host, c->date, "cudaDeviceProp.totalGlobalMem of GPU 0");
    /* Copies: the slowest GPU's median (the step waits for the slowest). */
    const char *keys[4] = {"h2d_pinned_gbps", "d2h_pinned_gbps", "h2d_pageable_gbps", "d2h_pageable_gbps"};
    const struct val_figure *arr[4] = {g->h2d_pinned_gbps, g->d2h_pinned_gbps, g->h2d_pageable_gbps, g->d2h_pageable_gbps};
    for (int k = 0; k < 4; k++) {
        double lo = arr[k][0].median;
        char per[400] = "";
        for (int d = 0; d < g->n_gpus; d++) {
            lo = arr[k][d].median < lo ? arr[k][d].median : lo;
            size_t l = strlen(per);
            snprintf(per + l, sizeof per - l, "%sGPU %d %.2f (%.2f..%.2f)", d ? ", " : "", d, arr[k][d].median,
                     arr[k][d].min, arr[k][d].max);
        }
        json_object_set_new(gpu, keys[k], json_real(lo));
        char key[64];
        snprintf(key, sizeof key, "gpu.%s", keys[k]);
        setsrc(src, key, c->host, c->date, "cudaMemcpyAsync of %lld MiB, one GPU at a time, %d repeats, slowest GPU's "
               "median; GB/s per GPU: %s", (long long)(g->copy_bytes >> 20), arr[k][0].repeats, per);
    }
    /* One uplink shared by every GPU, as the all-at-once measurement shows it. */
    json_t *sws = json_object_get(node, "pcie_switches");
    double per_switch = g->h2d_all_gbps.median / (json_array_size(sws) ? (double)json_array_size(sws) : 1);
    size_t i;
    json_t *sw;
    json_array_foreach(sws, i, sw)
        json_object_set_new(sw, "uplink_gbps", json_real(per_switch));
    setsrc(src, "node.pcie_switches[].uplink_gbps", c->host, c->date, "all %d GPUs at once, pinned H2D of %lld MiB "
           "each: sum %.2f GB/s (%.2f..%.2f), divided over the profile's %zu switches", g->n_gpus,
           (long long)(g->copy_bytes >> 20), g->h2d_all_gbps.median, g->h2d_all_gbps.min, g->h2d_all_gbps.max,
           json_array_size(sws));
    json_object_set_new(gpu, "hbm_gbps", json_real(g->d2d_gbps.median));
    setsrc(src, "gpu.hbm_gbps", c->host, c->date, "GPU 0 device-to-device cudaMemcpyAsync, read + write bytes: %.1f "
           "GB/s (%.1f..%.1f)", g->d2d_gbps.median, g->d2d_gbps.min, g->d2d_gbps.max);
    double eff = g->adam_elems_per_s.median * 28 / (g->d2d_gbps.median * 1e9);
    eff = eff < 0.01 ? 0.01 : eff > 1 ? 1 : eff;
    json_object_set_new(gpu, "hbm_efficiency", json_real(eff));
    setsrc(src, "gpu.hbm_efficiency", c->host, c->date, "kernels/ CUDA Adam on GPU 0, %lld elements, fp32 gradient: "
           "%.3g elements/s (%.3g..%.3g) x 28 B over the D2D bandwidth", (long long)g->adam_numel,
           g->adam_elems_per_s.median, g->adam_elems_per_s.min, g->adam_elems_per_s.max);
    /* Host side from the CPU measurements. */
    json_t *sockets = json_object_get(node, "sockets");
    double best = 0;
    for (int t = 0; t < c->n_threads; t++)
        best = c->dram_gbps[t].median > best ? c->dram_gbps[t].median : best;
    json_array_foreach(sockets, i, sw)
        json_object_set_new(sw, "dram_gbps", json_real(best / (double)json_array_size(sockets)));
    setsrc(src, "node.sockets[].dram_gbps", c->host, c->date, "triad over all %d online cores: %.1f GB/s, divided over "
           "the profile's %zu sockets", c->cores, best, json_array_size(sockets));
    json_object_set_new(json_object_get(root, "cpu_adam"), "elements_per_s_per_core", json_real(c->adam_elems_per_s[0].median));
    setsrc(src, "cpu_adam.elements_per_s_per_core", c->host, c->date, "kernels/ CPU Adam (%s) on one thread: %.3g "
           "elements/s (%.3g..%.3g)", c->isa, c->adam_elems_per_s[0].median, c->adam_elems_per_s[0].min,
           c->adam_elems_per_s[0].max);
    *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(root);
    return *out ? 0 : rl_errf(e, RL_ENOMEM, "calibrate: out of memory");
}
