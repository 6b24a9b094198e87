/* calib/host.c — what DeepSpeed's step costs the host beyond DRAM bandwidth (sim/README.md,
 * "Host costs of PyTorch's copies"): the first touch of fresh large allocations, the pageable
 * memcpy a copy thread (the CUDA driver's staging copy) achieves, and the bf16 -> fp32 cast of
 * PyTorch's CPU copy kernel, each against threads. See calib.h. */
#include <jansson.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calib/calib.h"

/* The calling thread's CPU time (user + system), seconds. These costs are work on the thread that
 * pays them (page faults and zeroing are system time of the faulting thread), so CPU time measures
 * them without the time other processes of a loaded machine take from it. */
static double host_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* c10's CPU allocator (c10/core/impl/alloc_cpu.cpp) takes its memory with posix_memalign at a
 * 64-byte alignment; for blocks above glibc's mmap threshold that is a fresh mmap each time. */
static void *host_alloc(size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, 64, bytes) == 0 ? p : NULL;
}

/* One repeat of the first-touch measurement on t threads, each with `per` bytes: each thread's
 * CPU time of allocating, writing and freeing a fresh block (fresh = 1) or of writing a block
 * written before (fresh = 0, warm[i] given) into sec[i]. Returns 0, -1 when an allocation failed. */
static int touch_once(int t, size_t per, int fresh, char **warm, double *sec)
{
    int failed = 0;
#pragma omp parallel num_threads(t) reduction(+ : failed)
    {
        int i = omp_get_thread_num();
        double t0 = host_cpu_s();
        char *p = fresh ? host_alloc(per) : warm[i];
        if (!p) {
            failed++;
        } else {
            memset(p, 1, per);
            __asm__ volatile("" : : "r"(p) : "memory");
            if (fresh)
                free(p);
        }
        sec[i] = host_cpu_s() - t0;
    }
    return failed ? -1 : 0;
}

/* First touch on t threads at once: per thread, the CPU time of a fresh block's allocate + write +
 * free beyond that of writing a warm block; per repeat the sum over threads of bytes over that
 * extra time. */
static int fault_run(int64_t bytes, int t, int reps, struct calib_figure *f, struct rl_err *e)
{
    size_t per = (size_t)(bytes / t);
    char **warm = calloc((size_t)t, sizeof *warm);
    int rc = warm ? 0 : rl_errf(e, RL_ENOMEM, "calibrate: out of memory");
    for (int i = 0; !rc && i < t; i++)
        if (!(warm[i] = host_alloc(per)))
            rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %zu bytes for the first-touch test", per);
#pragma omp parallel num_threads(t)
    {
        int i = omp_get_thread_num();
        if (!rc && warm[i])
            memset(warm[i], 0, per);   /* faulted in by the thread that writes it later */
    }
    double x[64], sf[CALIB_MAX_THREADS], sw[CALIB_MAX_THREADS];
    for (int r = 0; r < reps && !rc; r++) {
        if (touch_once(t, per, 1, warm, sf) || touch_once(t, per, 0, warm, sw)) {
            rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %zu bytes for the first-touch test", per);
            break;
        }
        x[r] = 0;
        for (int i = 0; i < t; i++) {
            double extra = sf[i] - sw[i];
            if (extra < 1e-3 * sf[i])   /* never faster than a warm write: bounded, not negative */
                extra = 1e-3 * sf[i];
            x[r] += (double)per / extra * 1e-9;
        }
    }
    if (!rc)
        calib_figure_of(f, x, reps);
    for (int i = 0; warm && i < t; i++)
        free(warm[i]);
    free(warm);
    return rc;
}

/* t threads each memcpy their own warm `bytes / t` between two pageable buffers at once; per
 * repeat the sum over threads of bytes over the thread's CPU time. */
static int memcpy_run(int64_t bytes, int t, int reps, struct calib_figure *f, struct rl_err *e)
{
    size_t per = (size_t)(bytes / t);
    char *src = host_alloc(per * (size_t)t), *dst = host_alloc(per * (size_t)t);
    if (!src || !dst) {
        free(src);
        free(dst);
        return rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate 2 x %lld bytes for the memcpy test", (long long)bytes);
    }
#pragma omp parallel num_threads(t)
    {
        size_t i = (size_t)omp_get_thread_num();
        memset(src + i * per, 2, per);
        memset(dst + i * per, 0, per);
    }
    double x[64];
    for (int r = 0; r < reps; r++) {
        double gb = 0;
#pragma omp parallel num_threads(t) reduction(+ : gb)
        {
            size_t i = (size_t)omp_get_thread_num();
            double t0 = host_cpu_s();
            memcpy(dst + i * per, src + i * per, per);
            gb += (double)per / (host_cpu_s() - t0) * 1e-9;
        }
        x[r] = gb;
    }
    calib_figure_of(f, x, reps);
    free(src);
    free(dst);
    return 0;
}

/* bf16 -> fp32 as PyTorch's CPU copy kernel does it (the bf16 bits are the upper half of the
 * float's), over n elements in equal chunks on t threads; per repeat the sum over threads of
 * elements over the thread's CPU time. Both buffers are warm: the temporary's first touch is
 * measured apart (fault_run). */
static int cast_run(int64_t n, int t, int reps, struct calib_figure *f, struct rl_err *e)
{
    uint16_t *src = host_alloc((size_t)n * 2);
    float *dst = host_alloc((size_t)n * 4);
    if (!src || !dst) {
        free(src);
        free(dst);
        return rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate %lld elements for the cast test", (long long)n);
    }
#pragma omp parallel for num_threads(t) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        src[i] = (uint16_t)(0x3f80 + (i & 127));
        dst[i] = 0;
    }
    double x[64];
    int64_t per = n / t;
    for (int r = 0; r < reps; r++) {
        double el = 0;
#pragma omp parallel num_threads(t) reduction(+ : el)
        {
            int64_t lo = (int64_t)omp_get_thread_num() * per, hi = lo + per;
            double t0 = host_cpu_s();
            for (int64_t i = lo; i < hi; i++) {
                uint32_t u = (uint32_t)src[i] << 16;
                float v;
                memcpy(&v, &u, sizeof v);
                dst[i] = v;
            }
            el += (double)per / (host_cpu_s() - t0);
        }
        x[r] = el;
    }
    calib_figure_of(f, x, reps);
    free(src);
    free(dst);
    return 0;
}

/* /sys/kernel/mm/transparent_hugepage/enabled, the bracketed choice ("madvise"), or "unknown":
 * with "always" fresh blocks fault in 2 MiB pages and the first touch is far cheaper. */
static void thp_mode(char *out, size_t n)
{
    snprintf(out, n, "unknown");
    FILE *fp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128];
    if (fp && fgets(line, sizeof line, fp)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && b > a + 1)
            snprintf(out, n, "%.*s", (int)(b - a - 1), a + 1);
    }
    if (fp)
        fclose(fp);
}

int calib_measure_host(const struct calib_opts *o, int n_threads, struct calib_host *h, struct rl_err *e)
{
    memset(h, 0, sizeof *h);
    h->n_threads = n_threads > 0 ? n_threads : 1;
    if (h->n_threads > CALIB_MAX_THREADS)
        h->n_threads = CALIB_MAX_THREADS;
    thp_mode(h->thp, sizeof h->thp);
    int reps = o->thorough ? 15 : 9;
    /* Blocks of at least 128 MiB per thread: far above glibc's largest mmap threshold (32 MiB), as
     * DeepSpeed's per-parameter temporaries of a multi-billion-parameter model are. */
    h->fault_bytes = (int64_t)(o->thorough ? 512 : 128) << 20;
    h->memcpy_bytes = (int64_t)(o->thorough ? 256 : 64) << 20;
    h->cast_numel = (int64_t)(o->thorough ? 64 : 16) << 20;
    int rc;
    for (int t = 1; t <= h->n_threads; t++) {
        if (o->progress)
            o->progress(o->progress_ctx, "host: first touch, memcpy, bf16 cast", t - 1, h->n_threads);
        if ((rc = fault_run(h->fault_bytes * t, t, reps, &h->fault_gbps[t - 1], e)) ||
            (rc = memcpy_run(h->memcpy_bytes * t, t, reps, &h->memcpy_gbps[t - 1], e)) ||
            (rc = cast_run(h->cast_numel * t, t, reps, &h->cast_elems_per_s[t - 1], e)))
            return rc;
    }
    h->measured = true;
    return 0;
}

/* The best aggregate over the thread counts, and where. */
static const struct calib_figure *host_best(const struct calib_figure *f, int n, int *at)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (f[i].median > f[b].median)
            b = i;
    *at = b + 1;
    return &f[b];
}

static void host_curve(const struct calib_figure *f, int n, double scale, char *buf, size_t len)
{
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%d: %.4g (%.4g..%.4g)", i ? ", " : "", i + 1, f[i].median * scale,
                 f[i].min * scale, f[i].max * scale);
    }
}

static void host_src(json_t *s, const char *key, const char *host, const char *date, const char *body)
{
    char all[1600];
    snprintf(all, sizeof all, "measured by ratiolab calibrate on %s, %s: %s", host, date, body);
    json_object_set_new(s, key, json_string(all));
}

int calib_host_json(const struct calib_host *h, const char *host, const char *date, json_t *root, json_t *sources,
                    struct rl_err *e)
{
    if (!h->measured)
        return 0;
    json_t *o = json_object();
    if (!o)
        return rl_errf(e, RL_ENOMEM, "calibrate: out of memory");
    int n = h->n_threads, at;
    char curve[1024], body[1500];
    const struct calib_figure *f1 = &h->fault_gbps[0], *fb = host_best(h->fault_gbps, n, &at);
    json_object_set_new(o, "fault_gbps_per_thread", json_real(f1->median));
    json_object_set_new(o, "fault_gbps_per_socket", json_real(fb->median));
    host_curve(h->fault_gbps, n, 1, curve, sizeof curve);
    snprintf(body, sizeof body, "first touch of fresh allocations: per thread a posix_memalign(64) block of %lld MiB "
             "(above glibc's mmap threshold, so a fresh mmap, as c10's CPU allocator gets it), memset and free, "
             "the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID: user + system, so a loaded machine's other processes do not count) beyond that of a memset of a warm block; one thread: median %.4g GB/s (spread %.4g..%.4g, %d "
             "repeats); transparent huge pages: %s; GB/s by threads (each thread's rate, summed, all running at once): %s",
             (long long)(h->fault_bytes >> 20), f1->median, f1->min, f1->max, f1->repeats, h->thp, curve);
    host_src(sources, "host.fault_gbps_per_thread", host, date, body);
    snprintf(body, sizeof body, "the best all-threads figure of the first-touch curve (%d thread%s: median %.4g GB/s, "
             "spread %.4g..%.4g); the machine's cores seen as one socket", at, at == 1 ? "" : "s", fb->median,
             fb->min, fb->max);
    host_src(sources, "host.fault_gbps_per_socket", host, date, body);
    const struct calib_figure *m1 = &h->memcpy_gbps[0];
    json_object_set_new(o, "memcpy_gbps_per_thread", json_real(m1->median));
    host_curve(h->memcpy_gbps, n, 1, curve, sizeof curve);
    snprintf(body, sizeof body, "memcpy between two warm pageable buffers of %lld MiB per thread, bytes over the thread's CPU time; one thread: median "
             "%.4g GB/s (spread %.4g..%.4g, %d repeats); GB/s by threads (each thread's rate, summed, all running at once): %s",
             (long long)(h->memcpy_bytes >> 20), m1->median, m1->min, m1->max, m1->repeats, curve);
    host_src(sources, "host.memcpy_gbps_per_thread", host, date, body);
    const struct calib_figure *c1 = &h->cast_elems_per_s[0];
    json_object_set_new(o, "cast_elements_per_s_per_thread", json_real(c1->median));
    host_curve(h->cast_elems_per_s, n, 1e-9, curve, sizeof curve);
    snprintf(body, sizeof body, "bf16 -> fp32 (the 16 bits shifted into the float's upper half, as PyTorch's CPU "
             "copy kernel converts) over %lld Mi warm elements per thread, elements over the thread's CPU time; one thread: median "
             "%.4g elements/s (spread %.4g..%.4g, %d repeats); G elements/s by threads (each thread's rate, summed, all running at once): %s",
             (long long)(h->cast_numel >> 20), c1->median, c1->min, c1->max, c1->repeats, curve);
    host_src(sources, "host.cast_elements_per_s_per_thread", host, date, body);
    json_object_set_new(root, "host", o);
    return 0;
}
