/* validation/audit.c — the audit file's reader and the per-sub-group verdict (audit.h,
 * docs/audit-format.md). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "kernels/adam_replay.h"
#include "validation/audit.h"

static const uint8_t MAGIC[8] = {'R', 'L', 'A', 'U', 'D', 'I', 'T', 0};

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static double rdf64(const uint8_t *p)
{
    uint64_t u = rd64(p);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

void val_audit_free(struct val_audit *a)
{
    free(a->rec);
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* The seven arrays of a record, in file order. */
enum { N_ARRAYS = 7 };

int val_audit_parse(const uint8_t *buf, size_t len, struct val_audit *a, struct rl_err *e)
{
    memset(a, 0, sizeof *a);
    if (len < VAL_AUDIT_HEADER_BYTES)
        return rl_errf(e, RL_EINVAL, "audit: %zu bytes, shorter than the %d-byte header", len,
                       VAL_AUDIT_HEADER_BYTES);
    if (memcmp(buf, MAGIC, 8) != 0)
        return rl_errf(e, RL_EINVAL, "audit: magic is not \"RLAUDIT\\0\" (not an audit file)");
    uint32_t version = rd32(buf + 8), hdr = rd32(buf + 12), nrec = rd32(buf + 16);
    uint32_t crc = rd32(buf + 20);
    uint64_t body = rd64(buf + 24);
    if (version != VAL_AUDIT_VERSION)
        return rl_errf(e, RL_EINVAL, "audit: version %u is not allowed (%d)", version,
                       VAL_AUDIT_VERSION);
    if (hdr != VAL_AUDIT_HEADER_BYTES)
        return rl_errf(e, RL_EINVAL, "audit: header_bytes %u is not allowed (%d)", hdr,
                       VAL_AUDIT_HEADER_BYTES);
    if (nrec > VAL_AUDIT_MAX_RECORDS)
        return rl_errf(e, RL_EINVAL, "audit: records %u is not allowed (at most %d)", nrec,
                       VAL_AUDIT_MAX_RECORDS);
    if (body != len - VAL_AUDIT_HEADER_BYTES)
        return rl_errf(e, RL_EINVAL, "audit: body_bytes %llu does not match the file's %zu "
                       "bytes after the header", (unsigned long long)body,
                       len - VAL_AUDIT_HEADER_BYTES);
    /* zlib's crc32 takes uInt lengths: feed the body in pieces. */
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < body;) {
        size_t k = body - off > (1u << 30) ? (1u << 30) : (size_t)(body - off);
        c = crc32(c, buf + VAL_AUDIT_HEADER_BYTES + off, (uInt)k);
        off += k;
    }
    if ((uint32_t)c != crc)
        return rl_errf(e, RL_EINVAL, "audit: crc32 0x%08x does not match the body's 0x%08x "
                       "(truncated or damaged)", crc, (unsigned)c);
    /* First pass: every record's size, so the arrays take one allocation. */
    uint64_t total = 0;
    size_t off = VAL_AUDIT_HEADER_BYTES;
    for (uint32_t i = 0; i < nrec; i++) {
        if (len - off < VAL_AUDIT_RECORD_HEAD_BYTES)
            return rl_errf(e, RL_EINVAL, "audit: record %u: %zu bytes left, shorter than its "
                           "%d-byte head", i, len - off, VAL_AUDIT_RECORD_HEAD_BYTES);
        uint32_t rbytes = rd32(buf + off);
        uint64_t numel = rd64(buf + off + 40);
        if (numel > (uint64_t)VAL_AUDIT_MAX_NUMEL)
            return rl_errf(e, RL_EINVAL, "audit: record %u: numel %llu is not allowed (at most "
                           "%lld)", i, (unsigned long long)numel, (long long)VAL_AUDIT_MAX_NUMEL);
        uint64_t step = rd64(buf + off + 32);
        if (step < 1 || step > (uint64_t)KERN_REPLAY_MAX_STEP)
            return rl_errf(e, RL_EINVAL, "audit: record %u: step %llu is not allowed (1 .. %lld)",
                           i, (unsigned long long)step, (long long)KERN_REPLAY_MAX_STEP);
        if ((uint64_t)rbytes != VAL_AUDIT_RECORD_HEAD_BYTES + 4 * N_ARRAYS * numel)
            return rl_errf(e, RL_EINVAL, "audit: record %u: record_bytes %u is not allowed (%d + "
                           "28 * numel %llu)", i, rbytes, VAL_AUDIT_RECORD_HEAD_BYTES,
                           (unsigned long long)numel);
        uint64_t first = rd32(buf + off + 128), sgn = rd32(buf + off + 132);
        if (sgn == 0 || first + numel > sgn)
            return rl_errf(e, RL_EINVAL, "audit: record %u: elements [%llu, %llu) of a sub-group of "
                           "subgroup_numel %llu are not allowed (within it, subgroup_numel >= 1)", i,
                           (unsigned long long)first, (unsigned long long)(first + numel),
                           (unsigned long long)sgn);
        if (rbytes > len - off)
            return rl_errf(e, RL_EINVAL, "audit: record %u: record_bytes %u, only %zu bytes left",
                           i, rbytes, len - off);
        total += N_ARRAYS * numel;
        off += rbytes;
    }
    if (off != len)
        return rl_errf(e, RL_EINVAL, "audit: %zu bytes after the last of %u records (allowed: "
                       "none)", len - off, nrec);
    a->rec = calloc(nrec ? nrec : 1, sizeof *a->rec);
    a->data = malloc(total ? total * sizeof(float) : 1);
    if (!a->rec || !a->data) {
        val_audit_free(a);
        return rl_errf(e, RL_ENOMEM, "audit: out of memory for %u records", nrec);
    }
    off = VAL_AUDIT_HEADER_BYTES;
    float *dst = a->data;
    for (uint32_t i = 0; i < nrec; i++) {
        const uint8_t *h = buf + off;
        struct val_audit_rec *r = &a->rec[i];
        uint32_t flags = rd32(h + 28);
        r->optimizer = (int)rd32(h + 4);
        r->rank = rd32(h + 8);
        r->sub_group = rd32(h + 12);
        r->param_group = rd32(h + 16);
        r->optimizer_object = rd32(h + 20);
        r->simd_width = (int32_t)rd32(h + 24);
        r->adamw_mode = flags & 1;
        r->bias_correction = flags & 2;
        r->tail_fma = flags & 4;
        r->step = (int64_t)rd64(h + 32);
        r->numel = (int64_t)rd64(h + 40);
        r->first_element = rd32(h + 128);
        r->subgroup_numel = rd32(h + 132);
        struct val_audit_hp *hp[2] = {&r->held, &r->group};
        for (int k = 0; k < 2; k++) {
            const uint8_t *q = h + 48 + 40 * k;
            hp[k]->lr = rdf64(q);
            hp[k]->beta1 = rdf64(q + 8);
            hp[k]->beta2 = rdf64(q + 16);
            hp[k]->eps = rdf64(q + 24);
            hp[k]->weight_decay = rdf64(q + 32);
        }
        if (flags > 7 || kern_replay_opt_name(r->optimizer) == NULL) {
            int bad_flags = flags > 7;
            val_audit_free(a);
            if (bad_flags)
                return rl_errf(e, RL_EINVAL, "audit: record %u: flags 0x%x is not allowed (bits "
                               "0 adamw_mode, 1 bias_correction, 2 tail_fma)", i, flags);
            return rl_errf(e, RL_EINVAL, "audit: record %u: optimizer %d is not allowed (1 "
                           "ds_cpu_adam, 2 torch_adamw, 3 torch_adamw_foreach)", i,
                           (int)rd32(h + 4));
        }
        const uint8_t *q = h + VAL_AUDIT_RECORD_HEAD_BYTES;
        const float **arr[N_ARRAYS] = {&r->param_before, &r->grad, &r->exp_avg_before,
                                       &r->exp_avg_sq_before, &r->param_after,
                                       &r->exp_avg_after, &r->exp_avg_sq_after};
        for (int k = 0; k < N_ARRAYS; k++) {
            *arr[k] = dst;
            for (int64_t j = 0; j < r->numel; j++, q += 4) {
                uint32_t u = rd32(q);
                memcpy(dst++, &u, sizeof u);
            }
        }
        off += rd32(h);
    }
    a->n = (int)nrec;
    return 0;
}

int val_audit_read(const char *path, struct val_audit *a, struct rl_err *e)
{
    char *buf = NULL;
    size_t len = 0;
    memset(a, 0, sizeof *a);
    int rc = rl_read_bytes(path, &buf, &len, e);
    if (rc)
        return rc;
    rc = val_audit_parse((const uint8_t *)buf, len, a, e);
    free(buf);
    if (rc) {
        char m[sizeof e->msg];
        snprintf(m, sizeof m, "%s", e->msg);
        return rl_errf(e, rc, "%s: %s", path, m);
    }
    return 0;
}

const char *val_audit_status_name(enum val_audit_status s)
{
    switch (s) {
    case VAL_AUDIT_IDENTICAL: return "bit-identical";
    case VAL_AUDIT_DIFFERS: return "differs";
    case VAL_AUDIT_NO_KERNEL: return "formula-only";
    }
    return "?";
}

/* ---- the verdict ------------------------------------------------------------------------- */

/* Distance in ulps between two floats (0 for equal bits; INT64_MAX when one is NaN). */
static int64_t ulps(float a, float b)
{
    if (a != a || b != b)
        return (a != a && b != b) ? 0 : INT64_MAX;
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia;   /* monotone in the value */
    int64_t ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return oa > ob ? oa - ob : ob - oa;
}

static bool same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Scratch: the replayed p, m, v of one record. */
struct scratch {
    float *p, *m, *v;
};

static struct kern_replay_hparams hp_of(const struct val_audit_rec *r, const struct val_audit_hp *h,
                                        int64_t step)
{
    struct kern_replay_hparams k = {
        .lr = h->lr, .beta1 = h->beta1, .beta2 = h->beta2, .eps = h->eps,
        .weight_decay = h->weight_decay, .adamw_mode = r->adamw_mode,
        .bias_correction = r->bias_correction, .step = step, .simd_width = r->simd_width,
        .tail_fma = r->tail_fma, .first_element = r->first_element,
        .subgroup_numel = r->subgroup_numel, .ds_step_call = r->ds_step_call,
    };
    return k;
}

/* (rank, sub-group) of a DeepSpeedCPUAdam record, for val_audit_set_release. */
struct rank_sg {
    uint32_t rank, sub_group;
};

static int cmp_rank_sg(const void *x, const void *y)
{
    const struct rank_sg *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->sub_group < b->sub_group ? -1 : a->sub_group > b->sub_group;
}

int val_audit_set_release(struct val_audit *a, struct rl_version v, struct rl_err *e)
{
    bool pow_steps = rl_version_cmp(v, (struct rl_version){0, 19, 0}) < 0;
    struct rank_sg *k = calloc(a->n ? (size_t)a->n : 1, sizeof *k);
    if (!k)
        return rl_errf(e, RL_ENOMEM, "audit: out of memory");
    int n = 0;
    for (int i = 0; i < a->n; i++) {
        a->rec[i].ds_step_call = KERN_REPLAY_DS_STEP_CHAIN;
        if (a->rec[i].optimizer == KERN_REPLAY_DS_CPU_ADAM)
            k[n++] = (struct rank_sg){a->rec[i].rank, a->rec[i].sub_group};
    }
    qsort(k, (size_t)n, sizeof *k, cmp_rank_sg);
    for (int i = 0; pow_steps && i < a->n; i++) {
        struct val_audit_rec *r = &a->rec[i];
        if (r->optimizer != KERN_REPLAY_DS_CPU_ADAM)
            continue;
        /* Its rank's lowest and highest CPU sub-group (a trimmed file holds two records per
         * sub-group): the first of several is the lowest. */
        int lo = 0, hi = n;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (k[mid].rank < r->rank)
                lo = mid + 1;
            else
                hi = mid;
        }
        int first = lo, last = lo;
        while (last + 1 < n && k[last + 1].rank == r->rank)
            last++;
        if (k[first].sub_group != k[last].sub_group)
            r->ds_step_call = r->sub_group == k[first].sub_group ? KERN_REPLAY_DS_STEP_FIRST : KERN_REPLAY_DS_STEP_LATER;
    }
    free(k);
    return 0;
}

/* Replays r from its "before" state with optimizer opt and hyperparameters k into s; then,
 * when twice, a second update at step k.step + 1 on top. Returns the number of elements whose
 * p, m or v differs from the recorded "after" (and the largest ulp distance in *maxu), or -1
 * when the replay refuses the hyperparameters. *nsqrt (when not NULL): elements that match only
 * with torch's sqrt one ulp off. */
static int64_t replay_diff(const struct val_audit_rec *r, int opt, struct kern_replay_hparams k,
                           bool twice, struct scratch *s, int64_t *maxu, int64_t *nsqrt)
{
    int64_t n = r->numel;
    memcpy(s->p, r->param_before, (size_t)n * sizeof(float));
    memcpy(s->m, r->exp_avg_before, (size_t)n * sizeof(float));
    memcpy(s->v, r->exp_avg_sq_before, (size_t)n * sizeof(float));
    if (kern_replay_step(opt, &k, s->p, s->m, s->v, r->grad, n, NULL))
        return -1;
    if (twice) {
        k.step++;
        if (kern_replay_step(opt, &k, s->p, s->m, s->v, r->grad, n, NULL))
            return -1;
    }
    int64_t nd = 0, mu = 0, nsq = 0;
    bool torch = opt != KERN_REPLAY_DS_CPU_ADAM;
    for (int64_t i = 0; i < n; i++) {
        const float got[3] = {r->param_after[i], r->exp_avg_after[i], r->exp_avg_sq_after[i]};
        float want[3] = {s->p[i], s->m[i], s->v[i]};
        /* torch's faithful sqrt (adam_replay.h): the element once more with the root one ulp
         * down, then up; m and v must already match. */
        if (torch && !twice && !same_bits(got[0], want[0]) && same_bits(got[1], want[1]) &&
            same_bits(got[2], want[2])) {
            for (int sh = -1; sh <= 1; sh += 2) {
                float p1 = r->param_before[i], m1 = r->exp_avg_before[i];
                float v1 = r->exp_avg_sq_before[i];
                struct kern_replay_hparams k2 = k;
                k2.sqrt_ulps = sh;
                if (kern_replay_step(opt, &k2, &p1, &m1, &v1, &r->grad[i], 1, NULL) == 0 &&
                    same_bits(p1, got[0])) {
                    want[0] = p1;
                    nsq++;
                    break;
                }
            }
        }
        bool d = false;
        for (int j = 0; j < 3; j++) {
            if (!same_bits(got[j], want[j])) {
                d = true;
                int64_t u = ulps(got[j], want[j]);
                mu = u > mu ? u : mu;
            }
        }
        nd += d;
    }
    if (maxu)
        *maxu = mu;
    if (nsqrt)
        *nsqrt = nsq;
    return nd;
}

/* Adam's formula in double with hyperparameters h at step t, against the recorded after-state:
 * the largest ratio of the difference to its bound over p, m and v (docs/audit-format.md). With
 * fit_lr non-NULL, also the lr that explains the recorded p best (median of per-element fits). */
static double formula_ratio(const struct val_audit_rec *r, const struct val_audit_hp *h, int64_t t,
                            double *fit_lr, double *work)
{
    const double u = ldexp(1.0, -24);
    double b1 = h->beta1, b2 = h->beta2, lr = h->lr, wd = h->weight_decay;
    double bt1 = pow(b1, (double)t), bt2 = pow(b2, (double)t);
    double bc1 = r->bias_correction ? 1.0 - bt1 : 1.0;
    double bc2 = r->bias_correction ? 1.0 - bt2 : 1.0;
    /* DeepSpeed forms beta^t by t float products of float(beta) and 1 - beta^t in float:
     * beta^t is then off by about 2 t u relative, so 1 - beta^t by 2 t u beta^t / (1 - beta^t).
     * (torch forms them in double: well inside the same bound.) */
    double td = (double)t;
    double rel_bc = r->bias_correction ? (2 * td + 2) * u / bc1 + 0.5 * (2 * td + 2) * u / bc2 : 0.0;
    /* float(beta) is off by u beta at most, so 1 - float(beta) by u beta / (1 - beta) relative. */
    double e1 = 4 * u + u * b1 / (1 - b1), e2 = 4 * u + u * b2 / (1 - b2);
    double worst = 0.0;
    int64_t nfit = 0;
    for (int64_t i = 0; i < r->numel; i++) {
        double p0 = r->param_before[i], g = r->grad[i];
        double m0 = r->exp_avg_before[i], v0 = r->exp_avg_sq_before[i];
        if (!r->adamw_mode && wd > 0)
            g += wd * p0;
        double mt1 = b1 * m0, mt2 = (1 - b1) * g;
        double vt1 = b2 * v0, vt2 = (1 - b2) * g * g;
        double m = mt1 + mt2, v = vt1 + vt2;
        double sv = sqrt(v / bc2), den = sv + h->eps;
        double upd = lr / bc1 * m / den;
        double decay = r->adamw_mode && wd > 0 ? lr * wd * p0 : 0.0;
        double p = p0 - decay - upd;
        /* A first-order bound on the float computation, each term's relative error summed (the
         * two terms of m may cancel, so m's is absolute), with a factor 2 of margin, plus a few
         * of the smallest subnormals for the operations that may underflow. */
        double bm = 4 * u * fabs(mt1) + e1 * fabs(mt2) + 0x1p-147;
        double bv = 4 * u * fabs(vt1) + e2 * fabs(vt2) + 0x1p-147;
        double rel_den = v > 0 ? sv / den * (0.5 * bv / v + 2 * u) + 2 * u : 2 * u;
        double bu = fabs(lr / bc1) / den * bm + fabs(upd) * (rel_den + rel_bc + 8 * u);
        double bp = 2 * (4 * u * (fabs(p0) + fabs(decay)) + bu) + 0x1p-146;
        bm *= 2;
        bv *= 2;
        double q[3] = {fabs(r->param_after[i] - p) / bp, fabs(r->exp_avg_after[i] - m) / bm,
                       fabs(r->exp_avg_sq_after[i] - v) / bv};
        for (int j = 0; j < 3; j++) {
            double x = q[j] == q[j] ? q[j] : INFINITY;
            worst = x > worst ? x : worst;
        }
        /* p0 - p1 = lr (wd p0 [AdamW] + m1 / (bc1 (sqrt(v1 / bc2) + eps))) */
        if (fit_lr) {
            double m1 = r->exp_avg_after[i], v1 = r->exp_avg_sq_after[i];
            double k = (r->adamw_mode && wd > 0 ? wd * p0 : 0.0) +
                       m1 / (bc1 * (sqrt(v1 / bc2) + h->eps));
            double dp = p0 - (double)r->param_after[i];
            if (fabs(k) > 0 && isfinite(dp / k) && fabs(dp) > 64 * u * fabs(p0))
                work[nfit++] = dp / k;
        }
    }
    if (fit_lr) {
        *fit_lr = NAN;
        if (nfit > 0) {
            /* median by partial selection sort of a bounded sample (at most 4097 elements) */
            int64_t k = nfit < 4097 ? nfit : 4097;
            for (int64_t a = 0; a <= k / 2; a++)
                for (int64_t b = a + 1; b < k; b++)
                    if (work[b] < work[a]) {
                        double x = work[a];
                        work[a] = work[b];
                        work[b] = x;
                    }
            *fit_lr = work[k / 2];
        }
    }
    return worst;
}

static bool hp_equal(const struct val_audit_hp *a, const struct val_audit_hp *b)
{
    return a->lr == b->lr && a->beta1 == b->beta1 && a->beta2 == b->beta2 && a->eps == b->eps &&
           a->weight_decay == b->weight_decay;
}

/* Names the first hyperparameter where the held and the group's differ. */
static void hp_cause(const struct val_audit_hp *held, const struct val_audit_hp *grp, char *out,
                     size_t cap)
{
    static const char *names[5] = {"lr", "beta1", "beta2", "eps", "weight_decay"};
    const double hv[5] = {held->lr, held->beta1, held->beta2, held->eps, held->weight_decay};
    const double gv[5] = {grp->lr, grp->beta1, grp->beta2, grp->eps, grp->weight_decay};
    for (int k = 0; k < 5; k++)
        if (hv[k] != gv[k]) {
            snprintf(out, cap, "hyperparameters: the stepping optimizer held %s = %.9g, the param "
                     "group has %.9g", names[k], hv[k], gv[k]);
            return;
        }
}

/* Tries one change at a time; the first that reproduces the recorded bits is the cause. */
static void name_cause(const struct val_audit_rec *r, struct scratch *s, double *work,
                       struct val_audit_finding *f)
{
    int64_t n = r->numel;
    bool unchanged = true;
    for (int64_t i = 0; i < n && unchanged; i++)
        unchanged = same_bits(r->param_after[i], r->param_before[i]) &&
                    same_bits(r->exp_avg_after[i], r->exp_avg_before[i]) &&
                    same_bits(r->exp_avg_sq_after[i], r->exp_avg_sq_before[i]);
    if (unchanged && n > 0) {
        snprintf(f->cause, sizeof f->cause, "skipped update: p, m and v are unchanged by step %lld",
                 (long long)r->step);
        return;
    }
    for (int64_t d = -2; d <= 2; d++) {
        if (d == 0 || r->step + d < 1)
            continue;
        if (replay_diff(r, r->optimizer, hp_of(r, &r->held, r->step + d), false, s, NULL, NULL) == 0) {
            snprintf(f->cause, sizeof f->cause, "step count: the bits are step %lld's, the "
                     "optimizer's count is %lld", (long long)(r->step + d), (long long)r->step);
            return;
        }
    }
    if (r->step >= 2 &&
        replay_diff(r, r->optimizer, hp_of(r, &r->held, r->step - 1), true, s, NULL, NULL) == 0) {
        snprintf(f->cause, sizeof f->cause, "doubled update: the bits are two updates (steps %lld "
                 "and %lld) from the recorded state", (long long)(r->step - 1), (long long)r->step);
        return;
    }
    if (!hp_equal(&r->held, &r->group) &&
        replay_diff(r, r->optimizer, hp_of(r, &r->group, r->step), false, s, NULL, NULL) == 0) {
        hp_cause(&r->held, &r->group, f->cause, sizeof f->cause);
        return;
    }
    static const int opts[3] = {KERN_REPLAY_DS_CPU_ADAM, KERN_REPLAY_TORCH_ADAMW,
                                KERN_REPLAY_TORCH_ADAMW_FOREACH};
    for (int k = 0; k < 3; k++) {
        if (opts[k] == r->optimizer)
            continue;
        if (replay_diff(r, opts[k], hp_of(r, &r->held, r->step), false, s, NULL, NULL) == 0) {
            snprintf(f->cause, sizeof f->cause, "optimizer: the bits are %s's arithmetic, the "
                     "record says %s stepped it", kern_replay_opt_name(opts[k]),
                     kern_replay_opt_name(r->optimizer));
            return;
        }
    }
    if (formula_ratio(r, &r->held, r->step, NULL, NULL) <= 1.0) {
        snprintf(f->cause, sizeof f->cause, "arithmetic: the bits are not %s's, but the update is "
                 "Adam's with the held hyperparameters within the formula's bound (a build or "
                 "release whose arithmetic is not emulated?)", kern_replay_opt_name(r->optimizer));
        return;
    }
    double lr_fit = NAN;
    formula_ratio(r, &r->held, r->step, &lr_fit, work);
    if (isfinite(lr_fit) && lr_fit != r->held.lr) {
        /* The fitted lr rounded to 1..7 significant digits: one may replay bit for bit. */
        for (int digits = 1; digits <= 7; digits++) {
            char buf[40];
            snprintf(buf, sizeof buf, "%.*g", digits, lr_fit);
            struct val_audit_hp h = r->held;
            h.lr = strtod(buf, NULL);
            if (replay_diff(r, r->optimizer, hp_of(r, &h, r->step), false, s, NULL, NULL) == 0) {
                snprintf(f->cause, sizeof f->cause, "lr: the update is lr = %s's bit for bit, the "
                         "optimizer held lr = %.9g", buf, r->held.lr);
                return;
            }
        }
        struct val_audit_hp h = r->held;
        h.lr = lr_fit;
        if (formula_ratio(r, &h, r->step, NULL, NULL) <= 1.0) {
            snprintf(f->cause, sizeof f->cause, "lr: the update fits lr = %.6g within the formula's "
                     "bound, the optimizer held lr = %.9g", lr_fit, r->held.lr);
            return;
        }
    }
    snprintf(f->cause, sizeof f->cause, "unexplained: no single change (step, skip, double, "
             "optimizer, lr) reproduces the bits");
}

int val_audit_replay(const struct val_audit *a, struct val_audit_finding *f, struct rl_err *e)
{
    int64_t maxn = 1;
    for (int i = 0; i < a->n; i++)
        maxn = a->rec[i].numel > maxn ? a->rec[i].numel : maxn;
    struct scratch s = {malloc((size_t)maxn * sizeof(float)), malloc((size_t)maxn * sizeof(float)),
                        malloc((size_t)maxn * sizeof(float))};
    double *work = malloc((size_t)maxn * sizeof(double));
    if (!s.p || !s.m || !s.v || !work) {
        free(s.p), free(s.m), free(s.v), free(work);
        return rl_errf(e, RL_ENOMEM, "audit: out of memory for %lld elements", (long long)maxn);
    }
    for (int i = 0; i < a->n; i++) {
        const struct val_audit_rec *r = &a->rec[i];
        struct val_audit_finding *fi = &f[i];
        memset(fi, 0, sizeof *fi);
        fi->hp_mismatch = !hp_equal(&r->held, &r->group);
        fi->formula_max = formula_ratio(r, &r->held, r->step, NULL, NULL);
        fi->formula_ok = fi->formula_max <= 1.0;
        int64_t mu = 0;
        int64_t nd = replay_diff(r, r->optimizer, hp_of(r, &r->held, r->step), false, &s, &mu,
                                 &fi->n_sqrt_faithful);
        if (nd < 0) {
            fi->status = VAL_AUDIT_NO_KERNEL;
            snprintf(fi->cause, sizeof fi->cause, "the replay refuses the held hyperparameters");
            continue;
        }
        fi->n_diff = nd;
        fi->max_ulps = mu;
        fi->status = nd == 0 ? VAL_AUDIT_IDENTICAL : VAL_AUDIT_DIFFERS;
        /* A run whose state already overflowed (a gradient of 1e21 gives v = inf) has no finite
         * bound: the formula level cannot judge it, the bitwise one still does. */
        if (nd == 0 && !isfinite(fi->formula_max)) {
            fi->formula_ok = true;
            fi->formula_na = true;
        }
        /* What the other optimizer would have left from the same state: the per-step rounding
         * difference that moving this sub-group across the ratio's boundary makes. */
        fi->other_optimizer = r->optimizer == KERN_REPLAY_DS_CPU_ADAM ? KERN_REPLAY_TORCH_ADAMW
                                                                      : KERN_REPLAY_DS_CPU_ADAM;
        struct kern_replay_hparams ko = hp_of(r, &r->held, r->step);
        if (fi->other_optimizer == KERN_REPLAY_DS_CPU_ADAM && ko.simd_width == 0)
            ko.simd_width = 8, ko.tail_fma = true;   /* a torch-only file: AVX2, as 0.19.8 builds */
        fi->other_n_diff = replay_diff(r, fi->other_optimizer, ko, false, &s, &fi->other_max_ulps,
                                       NULL);
        if (nd > 0)
            name_cause(r, &s, work, fi);
        else if (fi->hp_mismatch)
            hp_cause(&r->held, &r->group, fi->cause, sizeof fi->cause);
    }
    free(s.p), free(s.m), free(s.v), free(work);
    return 0;
}

/* ---- two runs' audits ------------------------------------------------------------------------ */

const char *val_audit_why_name(enum val_audit_why w)
{
    switch (w) {
    case VAL_WHY_IDENTICAL: return "identical";
    case VAL_WHY_OPTIMIZERS: return "optimizers";
    case VAL_WHY_INPUTS: return "inputs";
    case VAL_WHY_NOT_EXACT: return "not-exact";
    }
    return "?";
}

static bool exact(const struct val_audit_finding *f)
{
    return f->status == VAL_AUDIT_IDENTICAL && f->formula_ok && !f->hp_mismatch;
}

int val_audit_compare(const struct val_audit *a, const struct val_audit_finding *fa, const struct val_audit *b,
                      const struct val_audit_finding *fb, struct val_audit_pair **pairs, enum val_audit_why *why,
                      struct rl_err *e)
{
    *pairs = NULL;
    if (a->n != b->n)
        return rl_errf(e, RL_EINVAL, "the two audits hold %d and %d records: not two runs of one cell (the same "
                       "model, sub_group_size and ranks at another ratio)", a->n, b->n);
    struct val_audit_pair *pr = calloc(a->n ? (size_t)a->n : 1, sizeof *pr);
    if (!pr)
        return rl_errf(e, RL_ENOMEM, "audit: out of memory for %d pairs", a->n);
    bool moved = false, any_not_exact = false, after_differs = false, grad_differs = false;
    for (int i = 0; i < a->n; i++) {
        const struct val_audit_rec *x = &a->rec[i];
        int j = 0;
        while (j < b->n && !(b->rec[j].rank == x->rank && b->rec[j].sub_group == x->sub_group &&
                             b->rec[j].first_element == x->first_element))
            j++;
        const struct val_audit_rec *y = j < b->n ? &b->rec[j] : NULL;
        const char *bad = !y ? "has no record in the other audit"
                          : y->numel != x->numel || y->subgroup_numel != x->subgroup_numel ? "holds another size there"
                          : y->param_group != x->param_group ? "is in another param group there"
                          : y->step != x->step ? "was audited at another step there" : NULL;
        if (bad) {
            free(pr);
            return rl_errf(e, RL_EINVAL, "rank %u sub-group %u (elements from %lld, %lld of %lld, step %lld) %s: not "
                           "two runs of one cell", x->rank, x->sub_group, (long long)x->first_element,
                           (long long)x->numel, (long long)x->subgroup_numel, (long long)x->step, bad);
        }
        struct val_audit_pair *p = &pr[i];
        p->a = i;
        p->b = j;
        p->exact_a = exact(&fa[i]);
        p->exact_b = exact(&fb[j]);
        p->same_optimizer = x->optimizer == y->optimizer;
        p->numel = x->numel;
        for (int64_t k = 0; k < x->numel; k++) {
            p->n_diff_before += !same_bits(x->param_before[k], y->param_before[k]);
            p->n_diff_grad += !same_bits(x->grad[k], y->grad[k]);
            if (!same_bits(x->param_after[k], y->param_after[k])) {
                p->n_diff_after++;
                int64_t u = ulps(x->param_after[k], y->param_after[k]);
                if (u > p->max_ulps_after)
                    p->max_ulps_after = u;
                double d = fabs((double)x->param_after[k] - (double)y->param_after[k]);
                if (d > p->max_abs_after || d != d)
                    p->max_abs_after = d;
            }
        }
        moved |= !p->same_optimizer;
        any_not_exact |= !p->exact_a || !p->exact_b;
        after_differs |= p->n_diff_after > 0;
        grad_differs |= p->n_diff_grad > 0 || p->n_diff_before > 0;
    }
    /* Exactness first: an update that is not its optimizer's explains nothing. Then the
     * optimizers: a sub-group stepped by two optimizers rounds differently, and from the next
     * step every gradient differs with it. Only when every sub-group kept its optimizer do
     * differing gradients point at the inputs. */
    *why = any_not_exact ? VAL_WHY_NOT_EXACT : moved && after_differs ? VAL_WHY_OPTIMIZERS
           : after_differs || grad_differs ? VAL_WHY_INPUTS : VAL_WHY_IDENTICAL;
    *pairs = pr;
    return 0;
}
