/* exec/digest.c — the world-size independent digest of a run's final state, and the
 * single-process scalar reference that predicts it.
 *
 * Digest = zlib crc32 of the byte string  master | m | v | p16, where each array lists every
 * global element (model order, no padding) once: fp32 little-endian for master, m and v, the
 * model dtype's 16 bits for p16. Each rank computes the crc of its contiguous global ranges (one
 * per tensor); rank 0 sorts them by global start and joins them with crc32_combine, so no rank
 * ever holds more than its own partition. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>   /* crc32, crc32_combine */

#include "exec/exec_impl.h"
#include "kernels/lowp.h"

static int cmp_rec(const void *a, const void *b)
{
    int64_t x = ((const struct ex__crc_rec *)a)->gstart, y = ((const struct ex__crc_rec *)b)->gstart;
    return (x > y) - (x < y);
}

/* Continues the crc c over bytes at p. */
static uLong crc_more(uLong c, const void *p, int64_t bytes)
{
    const unsigned char *b = p;
    while (bytes > 0) {
        uInt n = bytes > (1 << 30) ? (1u << 30) : (uInt)bytes;
        c = crc32(c, b, n);
        b += n;
        bytes -= n;
    }
    return c;
}

static uint32_t crc_of(const void *p, int64_t bytes)
{
    return (uint32_t)crc_more(crc32(0L, Z_NULL, 0), p, bytes);
}

uint32_t ex__digest_combine(struct ex__crc_rec *rec, int64_t n)
{
    qsort(rec, (size_t)n, sizeof *rec, cmp_rec);
    uLong acc[4] = {0, 0, 0, 0};
    int64_t total = 0;
    static const int bytes[4] = {4, 4, 4, 2};
    for (int64_t i = 0; i < n; i++) {
        for (int a = 0; a < 4; a++)
            acc[a] = crc32_combine(acc[a], rec[i].crc[a], (z_off_t)(rec[i].len * bytes[a]));
        total += rec[i].len;
    }
    uLong d = acc[0];
    for (int a = 1; a < 4; a++)
        d = crc32_combine(d, acc[a], (z_off_t)(total * bytes[a]));
    return (uint32_t)d;
}

/* Reads each partition EX_HOST_CHUNK elements at a time (the host scratch stays a few MiB at any
 * scale) and continues its four crcs across the chunks. */
int ex__digest(struct ex_run *r, uint32_t *digest, struct rl_err *e)
{
    int64_t maxs = 1;
    for (int t = 0; t < r->T; t++)
        maxs = r->tm[t].real > maxs ? r->tm[t].real : maxs;
    int64_t cap = maxs < EX_HOST_CHUNK ? maxs : EX_HOST_CHUNK;
    float *hm = malloc((size_t)cap * 4), *h1 = malloc((size_t)cap * 4), *h2 = malloc((size_t)cap * 4);
    uint16_t *hp = malloc((size_t)cap * 2);
    struct ex__crc_rec *rec = calloc((size_t)r->T + 1, sizeof *rec);
    int rc = 0;
    if (!hm || !h1 || !h2 || !hp || !rec)
        rc = rl_errf(e, RL_ENOMEM, "out of host memory for the digest");
    int n = 0;
    for (int t = 0; t < r->T && !rc; t++) {
        const struct ex_tmap *x = &r->tm[t];
        if (x->real == 0)
            continue;
        uLong c[4];
        for (int a = 0; a < 4; a++)
            c[a] = crc32(0L, Z_NULL, 0);
        for (int64_t c0 = 0; c0 < x->real && !rc; c0 += cap) {
            int64_t len = x->real - c0 < cap ? x->real - c0 : cap;
            rc = ex__get_range(r, x->foff + c0, len, hm, h1, h2, hp, e);
            c[0] = crc_more(c[0], hm, len * 4);
            c[1] = crc_more(c[1], h1, len * 4);
            c[2] = crc_more(c[2], h2, len * 4);
            c[3] = crc_more(c[3], hp, len * 2);
        }
        rec[n] = (struct ex__crc_rec){.gstart = x->goff + (int64_t)r->k * x->s, .len = x->real,
                                      .crc = {(uint32_t)c[0], (uint32_t)c[1], (uint32_t)c[2], (uint32_t)c[3]}};
        n++;
    }
    free(hm);
    free(h1);
    free(h2);
    free(hp);
    void *all = NULL;
    int64_t bytes = 0;
    if (!rc)
        rc = ex_comm_gatherv(r->c, rec, (int64_t)n * (int64_t)sizeof *rec, &all, &bytes, e);
    free(rec);
    if (!rc && r->k == 0) {
        int64_t nrec = bytes / (int64_t)sizeof(struct ex__crc_rec);
        struct ex__crc_rec *a = all;
        qsort(a, (size_t)nrec, sizeof *a, cmp_rec);
        int64_t next = 0;
        for (int64_t i = 0; i < nrec && !rc; i++) {
            if (a[i].gstart != next)
                rc = rl_errf(e, RL_EINTERNAL, "digest: ranks cover global elements up to %lld, then %lld",
                             (long long)next, (long long)a[i].gstart);
            next = a[i].gstart + a[i].len;
        }
        if (!rc && next != r->total_numel)
            rc = rl_errf(e, RL_EINTERNAL, "digest: ranks cover %lld of %lld elements", (long long)next,
                         (long long)r->total_numel);
        *digest = ex__digest_combine(a, nrec);
    }
    free(all);
    return rc;
}

/* ---- the reference ----------------------------------------------------------------------------- */

int ex_reference(const struct plan_model *m, const struct ex_opts *o, int64_t iterations, uint32_t *digest,
                 int64_t *adam_step, struct rl_err *e)
{
    const int64_t N = m->total_numel;
    float *p = malloc((size_t)(N ? N : 1) * 4), *mm = calloc((size_t)(N ? N : 1), 4);
    float *v = calloc((size_t)(N ? N : 1), 4), *g = malloc((size_t)(N ? N : 1) * 4);
    uint16_t *p16 = malloc((size_t)(N ? N : 1) * 2);
    int rc = 0;
    if (!p || !mm || !v || !g || !p16)
        rc = rl_errf(e, RL_ENOMEM, "reference: out of host memory for %lld elements (18 bytes each)",
                     (long long)N);
    *adam_step = 0;
    for (int64_t i = 0; i < N && !rc; i++)
        p[i] = ex_synth_param(o->seed, i);
    enum kern_dtype lt = o->ref_dtype == PLAN_FP16 ? KERN_F16 : KERN_BF16;
    if (!rc)
        ex__narrow_host(p16, lt, p, N);
    for (int64_t it = 1; it <= iterations && !rc; it++) {
        if (it == o->inject_nan_step)
            continue;   /* the NaN step is skipped everywhere */
        ++*adam_step;
        for (int64_t i = 0; i < N; i++)
            g[i] = ex_synth_grad(o->seed, it, i);   /* the whole sum, no shares */
        int64_t off = 0;
        for (int t = 0; t < m->n_tensors && !rc; t++) {
            int64_t n = m->tensors[t].numel;
            struct kern_adam_hparams h = ex_hparams(o, m->tensors[t].group);
            struct kern_adam_scalars sc;
            rc = kern_adam_scalars_make(&h, *adam_step, &sc, e);
            struct kern_adam_bufs b = {.param = p + off, .exp_avg = mm + off, .exp_avg_sq = v + off,
                                       .grad = g + off, .grad_dtype = KERN_F32, .param_lowp = p16 + off,
                                       .param_lowp_dtype = lt, .numel = n};
            if (!rc)
                rc = kern_adam_ref(&sc, &b, e);
            off += n;
        }
    }
    if (!rc) {
        uLong d = crc_of(p, N * 4);
        d = crc32_combine(d, crc_of(mm, N * 4), (z_off_t)(N * 4));
        d = crc32_combine(d, crc_of(v, N * 4), (z_off_t)(N * 4));
        d = crc32_combine(d, crc_of(p16, N * 2), (z_off_t)(N * 2));
        *digest = (uint32_t)d;
    }
    free(p);
    free(mm);
    free(v);
    free(g);
    free(p16);
    return rc;
}
