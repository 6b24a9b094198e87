/* calib/host.c — what DeepSpeed's step costs the host beyond DRAM bandwidth (sim/README.md,
 * "Host costs of PyTorch's copies"): the first touch of fresh large allocations, the pageable
 * memcpy a copy thread (the CUDA driver's staging copy) achieves, and the bf16 -> fp32 cast of
 * PyTorch's CPU copy kernel, each against threads. See calib.h. */
#include <jansson.h>
#include <omp.h>
#include <sched.h>          /* sched_getaffinity, sched_setaffinity: each measuring thread on its own core */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>       /* mmap, madvise, munmap: the fresh blocks */
#include <sys/resource.h>   /* getrusage(RUSAGE_THREAD): minor faults, the page size check */
#include <time.h>

#include "calib/calib.h"

/* The calling thread's CPU time (user + system), seconds. These costs are work on the thread that
 * pays them (page faults and zeroing are system time of the faulting thread), so CPU time measures
 * them without the time other processes of a loaded machine take from it: at a load average of 9
 * on 2 cores a 256 MiB first touch took 0.14-0.27 s on the CPU and 0.25-0.87 s more waiting in the
 * run queue (/proc/thread-self/schedstat). */
static double host_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double host_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The calling thread's minor page faults so far. */
static int64_t host_minflt(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? (int64_t)ru.ru_minflt : 0;
}

/* A fresh anonymous mapping of `bytes`, as glibc's malloc makes for a block above its mmap
 * threshold (c10's CPU allocator: posix_memalign of a large tensor), with the page size fixed:
 * huge pages when asked (what "always" gives a plain mapping when the kernel has 2 MiB blocks
 * free), 4 KiB pages otherwise (what "madvise" and "never" give it). Fixing it keeps the
 * figure from depending on how fragmented the machine's memory happens to be. NULL on failure. */
static void *host_map(size_t bytes, bool huge)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);   /* advice: failure leaves the default */
    return p;
}

/* Per-thread buffers of one thread count, each first touched by the thread that uses it. */
struct host_bufs {
    char *warm;        /* fault_bytes, the warm write's block */
    char *src, *dst;   /* memcpy_bytes each */
    uint16_t *s16;     /* cast_numel bf16 elements */
    float *f32;        /* cast_numel floats */
};

/* One round on thread i (of the parallel region): a fresh block mapped, written and unmapped; the
 * warm block written; a memcpy; a cast. Each timed on the thread's CPU time into its slot of the
 * round (k = round * t + i); the threads meet between pieces so all t run each piece at once.
 * *faults: the fresh block's minor faults. Returns 0, -1 when the fresh mapping failed. */
static int host_round(const struct calib_host *h, const struct host_bufs *bf, int k, double *fresh, double *warm,
                      double *cp, double *cast, int64_t *faults)
{
    size_t fb = (size_t)h->fault_bytes, mb = (size_t)h->memcpy_bytes;
    int64_t n = h->cast_numel;
    int failed = 0;
#pragma omp barrier
    int64_t f0 = host_minflt();
    double t0 = host_cpu_s();
    char *p = host_map(fb, h->huge);
    if (p) {
        memset(p, 1, fb);
        __asm__ volatile("" : : "r"(p) : "memory");
        munmap(p, fb);
    } else {
        failed = 1;
    }
    fresh[k] = host_cpu_s() - t0;
    *faults = host_minflt() - f0;
#pragma omp barrier
    t0 = host_cpu_s();
    memset(bf->warm, k & 0x7f, fb);
    __asm__ volatile("" : : "r"(bf->warm) : "memory");
    warm[k] = host_cpu_s() - t0;
#pragma omp barrier
    t0 = host_cpu_s();
    memcpy(bf->dst, bf->src, mb);
    __asm__ volatile("" : : "r"(bf->dst) : "memory");
    cp[k] = host_cpu_s() - t0;
#pragma omp barrier
    t0 = host_cpu_s();
    for (int64_t j = 0; j < n; j++) {   /* the bf16 bits are the upper half of the float's */
        uint32_t u = (uint32_t)bf->s16[j] << 16;
        float v;
        memcpy(&v, &u, sizeof v);
        bf->f32[j] = v;
    }
    __asm__ volatile("" : : "r"(bf->f32) : "memory");
    cast[k] = host_cpu_s() - t0;
    return failed ? -1 : 0;
}

/* Thread i's buffers, allocated and written by thread i (so their pages are its and warm). */
static int host_bufs_alloc(const struct calib_host *h, struct host_bufs *bf)
{
    memset(bf, 0, sizeof *bf);
    size_t fb = (size_t)h->fault_bytes, mb = (size_t)h->memcpy_bytes, n = (size_t)h->cast_numel;
    if (posix_memalign((void **)&bf->warm, 64, fb) || posix_memalign((void **)&bf->src, 64, mb) ||
        posix_memalign((void **)&bf->dst, 64, mb) || posix_memalign((void **)&bf->s16, 64, n * 2) ||
        posix_memalign((void **)&bf->f32, 64, n * 4))
        return -1;
    memset(bf->warm, 0, fb);
    memset(bf->src, 2, mb);
    memset(bf->dst, 0, mb);
    for (size_t j = 0; j < n; j++) {
        bf->s16[j] = (uint16_t)(0x3f80 + (j & 127));
        bf->f32[j] = 0;
    }
    return 0;
}

static void host_bufs_free(struct host_bufs *bf)
{
    free(bf->warm);
    free(bf->src);
    free(bf->dst);
    free(bf->s16);
    free(bf->f32);
}

/* The CPU of `all` (the process's affinity mask) that thread i runs on: the i-th one, cyclically. */
static int host_cpu_of(const cpu_set_t *all, int i)
{
    int n = CPU_COUNT(all);
    if (n < 1)
        return -1;
    for (int c = 0, seen = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, all) && seen++ == i % n)
            return c;
    return -1;
}

/* t threads at once, `rounds` rounds (the first h->warmup not counted), each thread pinned to its
 * own core for the measurement (its affinity restored after): a thread that moves between cores
 * mid-measurement loses its cache and pays the move. The figures for t threads from the rounds'
 * times (calib_figure_best_of). */
static int host_run(struct calib_host *h, int t, int rounds, struct rl_err *e)
{
    size_t slots = (size_t)rounds * (size_t)t;
    double *fresh = calloc(slots, sizeof *fresh), *warm = calloc(slots, sizeof *warm);
    double *cp = calloc(slots, sizeof *cp), *cast = calloc(slots, sizeof *cast);
    struct host_bufs *bf = calloc((size_t)t, sizeof *bf);
    cpu_set_t all;
    CPU_ZERO(&all);
    bool pin = sched_getaffinity(0, sizeof all, &all) == 0;
    int alloc_bad = 0, failed = 0;
    int64_t faults = 0;
    if (fresh && warm && cp && cast && bf) {
#pragma omp parallel num_threads(t) reduction(+ : failed)
        {
            int i = omp_get_thread_num();
            cpu_set_t mine, one;
            bool pinned = false;
            if (pin && sched_getaffinity(0, sizeof mine, &mine) == 0) {
                int c = host_cpu_of(&all, i);
                CPU_ZERO(&one);
                if (c >= 0)
                    CPU_SET(c, &one);
                pinned = c >= 0 && sched_setaffinity(0, sizeof one, &one) == 0;
            }
            int bad = host_bufs_alloc(h, &bf[i]);
            if (bad) {
#pragma omp atomic
                alloc_bad++;
            }
#pragma omp barrier
            int any;
#pragma omp atomic read
            any = alloc_bad;
            int64_t fl = 0;
            /* every thread runs the same rounds, so the barriers inside meet */
            for (int r = 0; r < rounds && !any; r++)
                bad |= host_round(h, &bf[i], r * t + i, fresh, warm, cp, cast, &fl);
            if (i == 0)
                faults = fl;
            if (pinned)
                (void)sched_setaffinity(0, sizeof mine, &mine);
            failed += bad ? 1 : 0;
        }
    } else {
        failed = 1;
    }
    int rc = 0;
    if (failed)
        rc = rl_errf(e, RL_ENOMEM, "calibrate: cannot allocate the host-cost buffers (%d thread%s, %lld MiB per "
                     "fresh block)", t, t == 1 ? "" : "s", (long long)(h->fault_bytes >> 20));
    int w = h->warmup;
    if (!rc && (calib_figure_best_of(&h->fault_gbps[t - 1], fresh, warm, rounds, t, w, (double)h->fault_bytes * 1e-9) ||
                calib_figure_best_of(&h->memcpy_gbps[t - 1], cp, NULL, rounds, t, w, (double)h->memcpy_bytes * 1e-9) ||
                calib_figure_best_of(&h->cast_elems_per_s[t - 1], cast, NULL, rounds, t, w, (double)h->cast_numel)))
        rc = rl_errf(e, RL_EINVAL, "calibrate: a host-cost time was not positive (the CPU-time clock)");
    if (!rc && t == 1)
        h->faults_per_block = faults;
    for (int i = 0; bf && i < t; i++)
        host_bufs_free(&bf[i]);
    free(bf);
    free(fresh);
    free(warm);
    free(cp);
    free(cast);
    return rc;
}

/* The bracketed choice of a /sys/kernel/mm/transparent_hugepage file ("madvise"), or "unknown". */
static void thp_mode(const char *path, char *out, size_t n)
{
    snprintf(out, n, "unknown");
    FILE *fp = fopen(path, "r");
    char line[128];
    if (fp && fgets(line, sizeof line, fp)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && b > a + 1)
            snprintf(out, n, "%.*s", (int)(b - a - 1), a + 1);
    }
    if (fp)
        fclose(fp);
}

static void host_load(double l[3])
{
    if (getloadavg(l, 3) != 3)
        l[0] = l[1] = l[2] = -1;
}

int calib_measure_host(const struct calib_opts *o, int n_threads, struct calib_host *h, struct rl_err *e)
{
    memset(h, 0, sizeof *h);
    double w0 = host_wall_s();
    host_load(h->load_before);
    h->n_threads = n_threads > 0 ? n_threads : 1;
    if (h->n_threads > CALIB_MAX_THREADS)
        h->n_threads = CALIB_MAX_THREADS;
    thp_mode("/sys/kernel/mm/transparent_hugepage/enabled", h->thp, sizeof h->thp);
    thp_mode("/sys/kernel/mm/transparent_hugepage/defrag", h->thp_defrag, sizeof h->thp_defrag);
    /* glibc's mmap of a large block is advised nothing: it gets huge pages only under "always" */
    h->huge = strcmp(h->thp, "always") == 0;
    /* The same sizes in both modes (a different size is a different measurement: glibc's memcpy
     * switches to non-temporal stores above its threshold, 99 MiB on the 260 MiB-L3 machine this
     * was written on); --thorough only runs more rounds. One warm-up round first: the first
     * mapping after a pause may get pages the kernel has not handed out for a while (in a VM,
     * reported free to the host and backed again on touch), DeepSpeed's per-parameter temporaries
     * follow one another. Many short rounds rather than a few long ones: the fastest of them is
     * the figure, and the more rounds the likelier one falls in a quiet moment of a busy machine.
     * Sizes: a fresh block of 64 MiB per thread, twice glibc's largest mmap threshold (32 MiB), as
     * DeepSpeed's per-parameter temporaries of a multi-billion-parameter model are (a 20B GPT's MLP
     * weight over 4 ranks: 75 MiB of bf16); a memcpy of 128 MiB per thread, above that memcpy
     * threshold; a cast of 16 Mi elements (96 MiB) per thread. */
    h->warmup = 1;
    int rounds = h->warmup + (o->thorough ? 47 : 15);
    h->fault_bytes = (int64_t)64 << 20;
    h->memcpy_bytes = (int64_t)128 << 20;
    h->cast_numel = (int64_t)16 << 20;
    int rc;
    for (int t = 1; t <= h->n_threads; t++) {
        if (o->gpu_host && (t & (t - 1)) != 0 && t != h->n_threads)
            continue;   /* --backend cuda: 1, 2, 4, ... and all threads (the curve's shape, in less time) */
        if (o->progress)
            o->progress(o->progress_ctx, "host: first touch, memcpy, bf16 cast", t - 1, h->n_threads);
        if ((rc = host_run(h, t, rounds, e)))
            return rc;
    }
    host_load(h->load_after);
    h->wall_s = host_wall_s() - w0;
    h->measured = true;
    return 0;
}

/* The best aggregate over the thread counts, and where. */
static const struct calib_figure *host_best(const struct calib_figure *f, int n, int *at)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (f[i].best > f[b].best)
            b = i;
    *at = b + 1;
    return &f[b];
}

/* "threads: figure (median of the repeats, min..max)" for each thread count. */
static void host_curve(const struct calib_figure *f, int n, double scale, char *buf, size_t len)
{
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        if (f[i].repeats == 0)   /* a thread count not measured */
            continue;
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%d: %.4g (median %.4g, %.4g..%.4g)", l ? ", " : "", i + 1, f[i].best * scale,
                 f[i].median * scale, f[i].min * scale, f[i].max * scale);
    }
}

static void host_src(struct hw_writer *w, const char *key, const char *host, const char *date, const char *body)
{
    char all[2400];
    snprintf(all, sizeof all, "measured by ratiolab calibrate on %s, %s: %s", host, date, body);
    hw_source(w, key, all);
}

/* What every host figure's source says of the method: how each thread ran and what was counted. */
static void host_method(const struct calib_host *h, char *buf, size_t len)
{
    snprintf(buf, len, "each of t threads pinned to its own core, all at once, timed on its CPU time "
             "(CLOCK_THREAD_CPUTIME_ID: user + system, so a loaded machine's other processes do not count); "
             "%d round%s not counted, then %d rounds of first touch, warm write, memcpy and cast; the figure "
             "from each thread's fastest round (other work only adds time), summed over the threads; load "
             "average %.2f before, %.2f after", h->warmup, h->warmup == 1 ? "" : "s", h->fault_gbps[0].repeats,
             h->load_before[0], h->load_after[0]);
}

void calib_host_json(const struct calib_host *h, const char *host, const char *date, struct hw_writer *w)
{
    if (!h->measured)
        return;
    hw_clear(w, "host");   /* what the base measured otherwise (per-page figures) is not this host's */
    int n = h->n_threads, at;
    char curve[1024], method[512], body[2000];
    host_method(h, method, sizeof method);
    const struct calib_figure *f1 = &h->fault_gbps[0], *fb = host_best(h->fault_gbps, n, &at);
    hw_put(w, "host.fault_gbps_per_thread", f1->best);
    hw_put(w, "host.fault_gbps_per_socket", fb->best);
    host_curve(h->fault_gbps, n, 1, curve, sizeof curve);
    snprintf(body, sizeof body, "first touch of fresh allocations: per thread an mmap of %lld MiB (what glibc's "
             "malloc, so c10's CPU allocator, makes of a block above its mmap threshold) with %s pages (transparent "
             "huge pages: %s, defrag %s; a plain mapping gets %s pages; %lld faults per block), memset and munmap, "
             "beyond a memset of a warm block of the same size; %s; one thread: %.4g GB/s; GB/s by threads (each "
             "thread's rate, summed): %s",
             (long long)(h->fault_bytes >> 20), h->huge ? "2 MiB" : "4 KiB", h->thp, h->thp_defrag,
             h->huge ? "2 MiB" : "4 KiB", (long long)h->faults_per_block, method, f1->best, curve);
    host_src(w, "host.fault_gbps_per_thread", host, date, body);
    /* The mode and the page the figure was measured with: the simulator charges faults per page of
       that size (sim/hw_host.c), and "unknown" (no /sys) leaves the profile's default. */
    if (strcmp(h->thp, "always") == 0 || strcmp(h->thp, "madvise") == 0 || strcmp(h->thp, "never") == 0)
        hw_put_str(w, "host.thp_mode", h->thp);
    hw_put(w, "host.page_bytes", h->huge ? HW_PAGE_2M : HW_PAGE_4K);
    snprintf(body, sizeof body, "the page a plain mapping gets under transparent huge pages '%s' (2 MiB only under "
             "always), read from /sys/kernel/mm/transparent_hugepage/enabled; the first-touch figure was measured "
             "with it (%lld faults per %lld MiB block)", h->thp, (long long)h->faults_per_block,
             (long long)(h->fault_bytes >> 20));
    host_src(w, "host.page_bytes", host, date, body);
    snprintf(body, sizeof body, "the best all-threads figure of the first-touch curve (%d thread%s: %.4g GB/s, "
             "median of the rounds %.4g, spread %.4g..%.4g); the machine's cores seen as one socket", at,
             at == 1 ? "" : "s", fb->best, fb->median, fb->min, fb->max);
    host_src(w, "host.fault_gbps_per_socket", host, date, body);
    const struct calib_figure *m1 = &h->memcpy_gbps[0];
    hw_put(w, "host.memcpy_gbps_per_thread", m1->best);
    host_curve(h->memcpy_gbps, n, 1, curve, sizeof curve);
    snprintf(body, sizeof body, "memcpy between two warm pageable buffers of %lld MiB per thread, bytes over the "
             "thread's CPU time; %s; one thread: %.4g GB/s; GB/s by threads (each thread's rate, summed): %s",
             (long long)(h->memcpy_bytes >> 20), method, m1->best, curve);
    host_src(w, "host.memcpy_gbps_per_thread", host, date, body);
    const struct calib_figure *c1 = &h->cast_elems_per_s[0];
    hw_put(w, "host.cast_elements_per_s_per_thread", c1->best);
    host_curve(h->cast_elems_per_s, n, 1e-9, curve, sizeof curve);
    snprintf(body, sizeof body, "bf16 -> fp32 (the 16 bits shifted into the float's upper half, as PyTorch's CPU "
             "copy kernel converts) over %lld Mi warm elements per thread, elements over the thread's CPU time; "
             "%s; one thread: %.4g elements/s; G elements/s by threads (each thread's rate, summed): %s",
             (long long)(h->cast_numel >> 20), method, c1->best, curve);
    host_src(w, "host.cast_elements_per_s_per_thread", host, date, body);
}
