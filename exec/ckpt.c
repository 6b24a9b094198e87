/* exec/ckpt.c — checkpoints of the optimizer state, addressed by global element index, so a run
 * with another world size, ratio, policy or schedule continues bit for bit.
 *
 * DIR/rank-NNNNN.rlck, one per rank of the saving run:
 *   header (80 bytes, little-endian, struct ckpt_header below; header_crc = crc32 of the 76
 *   bytes before it), then n_rec records {int64 global start, int64 elements} (one per tensor
 *   the rank holds real elements of), then per record master, m, v (fp32 each).
 *   payload_crc = crc32 of everything after the header. The 16-bit parameters are not stored:
 *   they are always the RNE cast of the master.
 * Each file is written to a temporary name, fsynced and renamed; a load reads and checks every
 * file before it changes any state, and refuses a truncated or corrupt one. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>   /* offsetof */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>   /* crc32 */

#include "exec/exec_impl.h"

#define CKPT_MAGIC "RLEXCKPT"
#define CKPT_VERSION 1u

struct ckpt_header {
    char magic[8];            /* "RLEXCKPT" */
    uint32_t version;         /* CKPT_VERSION */
    uint32_t world;           /* ranks of the saving run */
    uint32_t rank;            /* this file's rank */
    uint32_t reserved;        /* 0 */
    int64_t iterations;       /* iterations done */
    int64_t adam_step;        /* Adam steps applied */
    uint64_t seed;            /* synthetic data seed */
    int64_t total_numel;      /* global elements of the model */
    int64_t n_rec;            /* records */
    int64_t payload_bytes;    /* bytes after the header */
    uint32_t payload_crc;     /* crc32 of the payload */
    uint32_t header_crc;      /* crc32 of the bytes above */
};
_Static_assert(sizeof(struct ckpt_header) == 80, "checkpoint header layout");

static uint32_t crc_bytes(const void *p, size_t n)
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

static int write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int ex__ckpt_save(struct ex_run *r, const char *dir, struct rl_err *e)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return rl_errf(e, RL_EIO, "save_dir: cannot create %s: %s", dir, strerror(errno));
    int n = 0;
    int64_t elems = 0;
    for (int t = 0; t < r->T; t++)
        if (r->tm[t].real > 0) {
            n++;
            elems += r->tm[t].real;
        }
    size_t payload = (size_t)n * 16 + (size_t)elems * 12;
    char *buf = malloc(payload ? payload : 1);
    if (!buf)
        return rl_errf(e, RL_ENOMEM, "save_dir: out of host memory for %zu bytes", payload);
    int64_t *recs = (int64_t *)buf;
    float *data = (float *)(buf + (size_t)n * 16);
    int i = 0, rc = 0;
    for (int t = 0; t < r->T && !rc; t++) {
        const struct ex_tmap *x = &r->tm[t];
        if (x->real == 0)
            continue;
        recs[2 * i] = x->goff + (int64_t)r->k * x->s;
        recs[2 * i + 1] = x->real;
        rc = ex__get_range(r, x->foff, x->real, data, data + x->real, data + 2 * x->real, NULL, e);
        data += 3 * x->real;
        i++;
    }
    if (rc) {
        free(buf);
        return rc;
    }
    struct ckpt_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CKPT_MAGIC, 8);
    h.version = CKPT_VERSION;
    h.world = (uint32_t)r->W;
    h.rank = (uint32_t)r->k;
    h.iterations = r->iterations;
    h.adam_step = r->adam_step;
    h.seed = r->o->seed;
    h.total_numel = r->total_numel;
    h.n_rec = n;
    h.payload_bytes = (int64_t)payload;
    h.payload_crc = crc_bytes(buf, payload);
    h.header_crc = crc_bytes(&h, offsetof(struct ckpt_header, header_crc));
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/rank-%05d.rlck", dir, r->k);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        free(buf);
        return rl_errf(e, RL_EIO, "save_dir: cannot write %s: %s", tmp, strerror(errno));
    }
    bool ok = write_all(fd, &h, sizeof h) == 0 && write_all(fd, buf, payload) == 0 && fsync(fd) == 0;
    int err = errno;
    ok = close(fd) == 0 && ok;
    free(buf);
    if (!ok || rename(tmp, path) != 0) {
        err = ok ? errno : err;
        unlink(tmp);
        return rl_errf(e, RL_EIO, "save_dir: writing %s failed: %s", path, strerror(err));
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* The largest checkpoint file a run of this model can have written: the header, one record per
 * tensor and master, m and v of every global element (a rank never holds more). common/'s
 * readers cap inputs at RL_INPUT_MAX_BYTES (64 MiB), far below a real checkpoint (12 bytes per
 * element: 4 GB for gpt-2.7b's TP shard), so checkpoints are read here with this cap instead. */
static int64_t ckpt_max_bytes(const struct ex_run *r)
{
    return (int64_t)sizeof(struct ckpt_header) + 16 * (int64_t)r->T + 12 * r->total_numel;
}

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a regular file";
}

/* Reads a whole regular file of at most max_bytes into *out (malloc'd). Anything else (a FIFO,
 * a device, a directory) is refused at once without blocking (O_NONBLOCK, then fstat), and so
 * is a file above the cap, before anything is allocated. */
static int read_whole(const char *path, int64_t max_bytes, char **out, size_t *len, struct rl_err *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return rl_errf(e, RL_EIO, "%s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return rl_errf(e, RL_EIO, "%s", strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return rl_errf(e, RL_EINVAL, "%s; allowed: a regular file", file_kind(st.st_mode));
    }
    if ((int64_t)st.st_size > max_bytes) {
        close(fd);
        return rl_errf(e, RL_EINVAL, "%lld bytes; allowed: at most %lld for this model (header, a record per "
                       "tensor, 12 bytes per element)", (long long)st.st_size, (long long)max_bytes);
    }
    size_t n = (size_t)st.st_size, got = 0;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return rl_errf(e, RL_ENOMEM, "%zu bytes: out of memory", n);
    }
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int err = k < 0 ? errno : 0;
            free(buf);
            close(fd);
            return rl_errf(e, RL_EIO, "read failed after %zu of %zu bytes%s%s", got, n, err ? ": " : "",
                           err ? strerror(err) : "");
        }
        got += (size_t)k;
    }
    close(fd);
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

/* Reads and checks one file; *out (malloc'd) holds it whole. */
static int read_checked(const struct ex_run *r, const char *dir, int q, const struct ckpt_header *first,
                        struct ckpt_header *h, char **out, struct rl_err *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%05d.rlck", dir, q);
    char *buf = NULL;
    size_t len = 0;
    struct rl_err e2 = {0};
    if (read_whole(path, ckpt_max_bytes(r), &buf, &len, &e2))
        return rl_errf(e, RL_EINVAL, "load_dir: %s: cannot read it (%s)", path, e2.msg);
    int rc = 0;
    if (len < sizeof *h)
        rc = rl_errf(e, RL_EINVAL, "load_dir: %s: truncated (%zu bytes, the header alone is %zu)", path, len, sizeof *h);
    else {
        memcpy(h, buf, sizeof *h);
        if (memcmp(h->magic, CKPT_MAGIC, 8) != 0)
            rc = rl_errf(e, RL_EINVAL, "load_dir: %s: not a ratiolab checkpoint (bad magic)", path);
        else if (h->header_crc != crc_bytes(h, offsetof(struct ckpt_header, header_crc)))
            rc = rl_errf(e, RL_EINVAL, "load_dir: %s: header CRC32 mismatch (corrupt)", path);
        else if (h->version != CKPT_VERSION)
            rc = rl_errf(e, RL_EINVAL, "load_dir: %s: version %u; allowed: %u", path, h->version, CKPT_VERSION);
        else if (h->payload_bytes < 0 || (size_t)h->payload_bytes != len - sizeof *h)
            rc = rl_errf(e, RL_EINVAL, "load_dir: %s: truncated or padded (%zu payload bytes, the header says %lld)",
                         path, len - sizeof *h, (long long)h->payload_bytes);
        else if (h->payload_crc != crc_bytes(buf + sizeof *h, (size_t)h->payload_bytes))
            rc = rl_errf(e, RL_EINVAL, "load_dir: %s: payload CRC32 mismatch (corrupt)", path);
        else if (h->rank != (uint32_t)q || h->n_rec < 0 || h->n_rec * 16 > h->payload_bytes)
            rc = rl_errf(e, RL_EINVAL, "load_dir: %s: inconsistent header (rank %u, %lld records)", path, h->rank,
                         (long long)h->n_rec);
        else if (first && (h->world != first->world || h->iterations != first->iterations ||
                           h->seed != first->seed || h->total_numel != first->total_numel))
            rc = rl_errf(e, RL_EINVAL, "load_dir: %s: belongs to another save (iteration %lld, rank 0's is %lld)",
                         path, (long long)h->iterations, (long long)first->iterations);
    }
    if (rc)
        free(buf);
    else
        *out = buf;
    return rc;
}

int ex__ckpt_load(struct ex_run *r, const char *dir, struct rl_err *e)
{
    struct ckpt_header h0, h;
    char *buf = NULL;
    int rc = read_checked(r, dir, 0, NULL, &h0, &buf, e);
    if (rc)
        return rc;
    free(buf);
    buf = NULL;
    if (h0.seed != r->o->seed)
        return rl_errf(e, RL_EINVAL, "seed: %llu; the checkpoint in %s was made with seed %llu",
                       (unsigned long long)r->o->seed, dir, (unsigned long long)h0.seed);
    if (h0.total_numel != r->total_numel)
        return rl_errf(e, RL_EINVAL, "load_dir: %s holds a model of %lld elements, this run's has %lld (same "
                       "model and scale needed)", dir, (long long)h0.total_numel, (long long)r->total_numel);
    float *hm = calloc((size_t)r->P + 1, 4), *h1 = calloc((size_t)r->P + 1, 4), *h2 = calloc((size_t)r->P + 1, 4);
    if (!hm || !h1 || !h2) {
        free(hm);
        free(h1);
        free(h2);
        return rl_errf(e, RL_ENOMEM, "load_dir: out of host memory");
    }
    int64_t filled = 0, want = 0;
    for (int t = 0; t < r->T; t++)
        want += r->tm[t].real;
    for (uint32_t q = 0; q < h0.world && !rc; q++) {
        if ((rc = read_checked(r, dir, (int)q, &h0, &h, &buf, e)))
            break;
        const int64_t *recs = (const int64_t *)(buf + sizeof h);
        const float *data = (const float *)(buf + sizeof h + (size_t)h.n_rec * 16);
        int64_t data_elems = (h.payload_bytes - h.n_rec * 16) / 12;
        int64_t seen = 0;
        for (int64_t i = 0; i < h.n_rec && !rc; i++) {
            int64_t g0 = recs[2 * i], len = recs[2 * i + 1];
            if (len < 0 || seen + len > data_elems || g0 < 0 || g0 + len > r->total_numel) {
                rc = rl_errf(e, RL_EINVAL, "load_dir: %s/rank-%05u.rlck: record %lld out of range", dir, q, (long long)i);
                break;
            }
            /* The tensor holding g0 (records never span tensors). */
            int lo = 0, hi = r->T - 1;
            while (lo < hi) {
                int mid = (lo + hi + 1) / 2;
                if (r->tm[mid].goff <= g0)
                    lo = mid;
                else
                    hi = mid - 1;
            }
            const struct ex_tmap *x = &r->tm[lo];
            int64_t a = x->goff + (int64_t)r->k * x->s, b = a + x->real;
            int64_t s = g0 > a ? g0 : a, end = g0 + len < b ? g0 + len : b;
            for (int64_t gi = s; gi < end; gi++) {
                int64_t f = x->foff + (gi - a), d = gi - g0;
                hm[f] = data[d];
                h1[f] = data[len + d];
                h2[f] = data[2 * len + d];
            }
            filled += end > s ? end - s : 0;
            data += 3 * len;
            seen += len;
        }
        free(buf);
        buf = NULL;
    }
    if (!rc && filled != want)
        rc = rl_errf(e, RL_EINVAL, "load_dir: %s covers %lld of the %lld elements rank %d needs", dir,
                     (long long)filled, (long long)want, r->k);
    for (int t = 0; t < r->T && !rc; t++)
        rc = ex__put_range(r, r->tm[t].foff, r->tm[t].s, hm + r->tm[t].foff, h1 + r->tm[t].foff,
                           h2 + r->tm[t].foff, e);
    free(hm);
    free(h1);
    free(h2);
    if (!rc) {
        r->iterations = h0.iterations;
        r->adam_step = h0.adam_step;
    }
    return rc;
}
