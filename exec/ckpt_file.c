/* exec/ckpt_file.c — the checkpoint format (exec/ckpt.h): one rank file's bytes and the manifest,
 * checked field by field before any arithmetic uses a field. Pure: no run state, no I/O. */
#include "exec/ckpt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>   /* crc32 */

#include "exec/exec.h"   /* EX_MAX_WORLD */

/* Header layout (little-endian):
 *   0 magic[8]  8 version u32  12 world u32  16 rank u32  20 reserved u32 (0)
 *   24 iterations i64  32 adam_step i64  40 seed u64  48 total_numel i64  56 n_rec i64
 *   64 payload_bytes i64  72 payload_crc u32  76 header_crc u32 (crc32 of bytes 0..75) */
enum { H_VERSION = 8, H_WORLD = 12, H_RANK = 16, H_RESERVED = 20, H_ITER = 24, H_ADAM = 32, H_SEED = 40,
       H_TOTAL = 48, H_NREC = 56, H_PAYLOAD = 64, H_PCRC = 72, H_HCRC = 76 };

uint32_t ex_ckpt_crc(const void *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    const unsigned char *b = p;
    while (n > 0) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, b, k);
        b += k;
        n -= k;
    }
    return (uint32_t)c;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Two's complement without implementation-defined conversion. */
static int64_t get_i64(const unsigned char *p)
{
    uint64_t u = get_u64(p);
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

void ex_ckpt_header_encode(const struct ex_ckpt_header_in *h, unsigned char out[EX_CKPT_HEADER_BYTES])
{
    memset(out, 0, EX_CKPT_HEADER_BYTES);
    memcpy(out, EX_CKPT_MAGIC, 8);
    put_u32(out + H_VERSION, EX_CKPT_VERSION);
    put_u32(out + H_WORLD, h->world);
    put_u32(out + H_RANK, h->rank);
    put_u64(out + H_ITER, (uint64_t)h->iterations);
    put_u64(out + H_ADAM, (uint64_t)h->adam_step);
    put_u64(out + H_SEED, h->seed);
    put_u64(out + H_TOTAL, (uint64_t)h->total_numel);
    put_u64(out + H_NREC, (uint64_t)h->n_rec);
    put_u64(out + H_PAYLOAD, (uint64_t)h->payload_bytes);
    put_u32(out + H_PCRC, h->payload_crc);
    put_u32(out + H_HCRC, ex_ckpt_crc(out, H_HCRC));
}

void ex_ckpt_record(const struct ex_ckpt_file *f, int64_t i, int64_t *gstart, int64_t *numel)
{
    *gstart = get_i64(f->recs + i * EX_CKPT_RECORD_BYTES);
    *numel = get_i64(f->recs + i * EX_CKPT_RECORD_BYTES + 8);
}

#define BAD(...) rl_errf(e, RL_EINVAL, __VA_ARGS__)

int ex_ckpt_parse(const void *buf, size_t len, const char *path, const struct ex_ckpt_model *m,
                  struct ex_ckpt_file *f, struct rl_err *e)
{
    const unsigned char *b = buf;
    memset(f, 0, sizeof *f);
    if (len < EX_CKPT_HEADER_BYTES)
        return BAD("%s: truncated (%zu bytes, the header alone is %d)", path, len, EX_CKPT_HEADER_BYTES);
    if (memcmp(b, EX_CKPT_MAGIC, 8) != 0)
        return BAD("%s: not a ratiolab checkpoint (bad magic)", path);
    if (get_u32(b + H_HCRC) != ex_ckpt_crc(b, H_HCRC))
        return BAD("%s: header CRC32 mismatch (corrupt)", path);
    uint32_t version = get_u32(b + H_VERSION);
    if (version != EX_CKPT_VERSION)
        return BAD("%s: version: %" PRIu32 "; allowed: %u", path, version, EX_CKPT_VERSION);
    f->world = get_u32(b + H_WORLD);
    f->rank = get_u32(b + H_RANK);
    f->iterations = get_i64(b + H_ITER);
    f->adam_step = get_i64(b + H_ADAM);
    f->seed = get_u64(b + H_SEED);
    f->total_numel = get_i64(b + H_TOTAL);
    f->n_rec = get_i64(b + H_NREC);
    int64_t payload = get_i64(b + H_PAYLOAD);
    if (f->world < 1 || f->world > EX_MAX_WORLD)
        return BAD("%s: header field world: %" PRIu32 "; allowed: 1 to %d", path, f->world, EX_MAX_WORLD);
    if (f->rank >= f->world)
        return BAD("%s: header field rank: %" PRIu32 "; allowed: 0 to %" PRIu32 " (world - 1)", path, f->rank,
                   f->world - 1);
    if (get_u32(b + H_RESERVED) != 0)
        return BAD("%s: header field reserved: %" PRIu32 "; allowed: 0", path, get_u32(b + H_RESERVED));
    if (f->iterations < 0 || f->iterations > EX_CKPT_MAX_ITERATIONS)
        return BAD("%s: header field iterations: %" PRId64 "; allowed: 0 to %" PRId64, path, f->iterations,
                   EX_CKPT_MAX_ITERATIONS);
    if (f->adam_step < 0 || f->adam_step > f->iterations)
        return BAD("%s: header field adam_step: %" PRId64 "; allowed: 0 to %" PRId64 " (the iterations)", path,
                   f->adam_step, f->iterations);
    if (f->total_numel < 1 || f->total_numel > EX_CKPT_MAX_NUMEL)
        return BAD("%s: header field total_numel: %" PRId64 "; allowed: 1 to %" PRId64, path, f->total_numel,
                   EX_CKPT_MAX_NUMEL);
    if (m && f->total_numel != m->total_numel)
        return BAD("%s: header field total_numel: %" PRId64 "; this run's model has %" PRId64
                   " elements (the same model and scale needed)", path, f->total_numel, m->total_numel);
    const size_t have = len - EX_CKPT_HEADER_BYTES;
    if (payload < 0 || (uint64_t)payload != (uint64_t)have)
        return BAD("%s: header field payload_bytes: %" PRId64 "; the file holds %zu bytes after the header "
                   "(truncated or padded)", path, payload, have);
    if (get_u32(b + H_PCRC) != ex_ckpt_crc(b + EX_CKPT_HEADER_BYTES, have))
        return BAD("%s: payload CRC32 mismatch (corrupt)", path);
    if (f->n_rec < 0 || (uint64_t)f->n_rec > have / EX_CKPT_RECORD_BYTES)
        return BAD("%s: header field n_rec: %" PRId64 "; allowed: 0 to %zu (payload bytes / %d)", path, f->n_rec,
                   have / EX_CKPT_RECORD_BYTES, EX_CKPT_RECORD_BYTES);
    f->recs = b + EX_CKPT_HEADER_BYTES;
    f->data = f->recs + (size_t)f->n_rec * EX_CKPT_RECORD_BYTES;
    /* Elements the data part can hold; each record takes 12 bytes per element out of it, so the
     * running sum below never exceeds it (no overflow). */
    const size_t data_bytes = have - (size_t)f->n_rec * EX_CKPT_RECORD_BYTES;
    int64_t room = (int64_t)(data_bytes / 12), sum = 0, prev_end = 0;
    int t = 0;
    for (int64_t i = 0; i < f->n_rec; i++) {
        int64_t g0, n;
        ex_ckpt_record(f, i, &g0, &n);
        if (n < 1 || n > f->total_numel)
            return BAD("%s: record %" PRId64 " field elements: %" PRId64 "; allowed: 1 to %" PRId64
                       " (the model's elements)", path, i, n, f->total_numel);
        if (g0 < 0 || g0 > f->total_numel - n)
            return BAD("%s: record %" PRId64 " field global start: %" PRId64 "; allowed: 0 to %" PRId64
                       " (the model's elements minus the record's %" PRId64 ")", path, i, g0, f->total_numel - n, n);
        if (g0 < prev_end)
            return BAD("%s: record %" PRId64 " field global start: %" PRId64 "; allowed: at least %" PRId64
                       " (records ascending and disjoint)", path, i, g0, prev_end);
        if (m && m->tensor_start) {
            while (t < m->n_tensors && m->tensor_start[t + 1] <= g0)
                t++;
            if (t >= m->n_tensors || g0 + n > m->tensor_start[t + 1])
                return BAD("%s: record %" PRId64 " [%" PRId64 ", %" PRId64 ") spans a tensor boundary; allowed: "
                           "inside one tensor", path, i, g0, g0 + n);
        }
        if (n > room - sum)
            return BAD("%s: record %" PRId64 " field elements: %" PRId64 "; the data holds %" PRId64
                       " more elements (12 bytes each)", path, i, n, room - sum);
        sum += n;
        prev_end = g0 + n;
    }
    if (data_bytes != (size_t)sum * 12)
        return BAD("%s: header field payload_bytes: %" PRId64 "; the records need %zu (%d per record, 12 per "
                   "element)", path, payload, (size_t)f->n_rec * EX_CKPT_RECORD_BYTES + (size_t)sum * 12,
                   EX_CKPT_RECORD_BYTES);
    return 0;
}

static int cmp_rec(const void *a, const void *b)
{
    const struct ex_ckpt_rec *x = a, *y = b;
    if (x->gstart != y->gstart)
        return x->gstart < y->gstart ? -1 : 1;
    return (x->file_rank > y->file_rank) - (x->file_rank < y->file_rank);
}

int ex_ckpt_check_cover(struct ex_ckpt_rec *r, int64_t n, int64_t total_numel, const char *dir,
                        struct rl_err *e)
{
    qsort(r, (size_t)n, sizeof *r, cmp_rec);
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        if (r[i].gstart > at)
            return BAD("%s: no rank file holds global elements [%" PRId64 ", %" PRId64 "); allowed: the records of "
                       "all rank files cover the model exactly once", dir, at, r[i].gstart);
        if (r[i].gstart < at)
            return BAD("%s: rank-%05d.rlck record %d overlaps another record at global element %" PRId64
                       "; allowed: the records of all rank files cover the model exactly once", dir,
                       (int)r[i].file_rank, (int)r[i].index, r[i].gstart);
        at = r[i].gstart + r[i].numel;
    }
    if (at != total_numel)
        return BAD("%s: no rank file holds global elements [%" PRId64 ", %" PRId64 "); allowed: the records of all "
                   "rank files cover the model exactly once", dir, at, total_numel);
    return 0;
}

int ex_ckpt_manifest_format(const struct ex_ckpt_manifest *m, char *out, size_t n)
{
    return snprintf(out, n, "ratiolab checkpoint manifest %u\ngeneration %lld\nworld %u\niterations %lld\n",
                    EX_CKPT_VERSION, (long long)m->generation, m->world, (long long)m->iterations);
}

/* One line "<key> <decimal>\n" at *p, the value within [lo, hi]. */
static int manifest_line(const char **p, const char *end, const char *key, int64_t lo, int64_t hi, int64_t *v,
                         const char *path, struct rl_err *e)
{
    size_t kl = strlen(key);
    if ((size_t)(end - *p) <= kl || memcmp(*p, key, kl) != 0 || (*p)[kl] != ' ')
        return BAD("%s: line '%s N' missing; allowed: the manifest as a save writes it", path, key);
    const char *s = *p + kl + 1;
    int64_t x = 0;
    int digits = 0;
    /* At most 18 digits (every bound here is far below 10^18): no overflow; a 19th is refused. */
    while (s < end && *s >= '0' && *s <= '9' && digits < 18) {
        x = x * 10 + (*s - '0');
        s++;
        digits++;
    }
    if (digits == 0 || s >= end || *s != '\n' || x < lo || x > hi)
        return BAD("%s: field %s: not an integer from %" PRId64 " to %" PRId64 " on its own line", path, key, lo,
                   hi);
    *v = x;
    *p = s + 1;
    return 0;
}

int ex_ckpt_manifest_parse(const char *text, size_t len, const char *path, struct ex_ckpt_manifest *m,
                           struct rl_err *e)
{
    const char *p = text, *end = text + len;
    memset(m, 0, sizeof *m);
    int64_t version, world;
    int rc;
    if ((rc = manifest_line(&p, end, "ratiolab checkpoint manifest", EX_CKPT_VERSION, EX_CKPT_VERSION, &version,
                            path, e)) ||
        (rc = manifest_line(&p, end, "generation", 1, EX_CKPT_MAX_GENERATION, &m->generation, path, e)) ||
        (rc = manifest_line(&p, end, "world", 1, EX_MAX_WORLD, &world, path, e)) ||
        (rc = manifest_line(&p, end, "iterations", 0, EX_CKPT_MAX_ITERATIONS, &m->iterations, path, e)))
        return rc;
    if (p != end)
        return BAD("%s: %zu bytes after the last line; allowed: none", path, (size_t)(end - p));
    m->world = (uint32_t)world;
    return 0;
}
