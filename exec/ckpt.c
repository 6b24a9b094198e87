/* exec/ckpt.c — checkpoints of the optimizer state, addressed by global element index, so a run
 * with another world size, ratio, policy or schedule continues bit for bit. The format (one file
 * per rank, the manifest) is exec/ckpt.h's; this file saves and loads it with the run's state.
 *
 * A save is all or nothing across ranks (exec/README.md, "Checkpoints"):
 *   1. rank 0 creates DIR/gen-G (G one above every generation in DIR) and broadcasts G;
 *   2. every rank writes DIR/gen-G/rank-K.rlck.tmp, fsyncs it, renames it to rank-K.rlck and
 *      fsyncs the folder;
 *   3. the ranks agree (a maximum over ranks of "failed"): when any failed, each removes its own
 *      file, rank 0 removes gen-G, and DIR keeps its previous checkpoint;
 *   4. rank 0 writes DIR/CHECKPOINT.tmp (the manifest: generation G, world, iterations), fsyncs
 *      it, renames it to DIR/CHECKPOINT (one rename: the switch) and fsyncs DIR;
 *   5. rank 0 removes every other generation (and a folder's flat files of the first format).
 * A process killed anywhere leaves DIR/CHECKPOINT naming a complete generation (the old one before
 * step 4, the new one after it); the debris of a killed save is removed by the next save.
 * A load reads DIR/CHECKPOINT and the generation it names (a folder without it: the first
 * format, DIR/rank-NNNNN.rlck), reads and checks every rank file, and checks that their records
 * cover the model exactly once, before it changes any state. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/ckpt.h"
#include "exec/exec_impl.h"

static const char *const fail_phase_names[EX_FAIL_PHASE_COUNT] = {
    "step", "save-prepare", "save-write", "save-written", "save-switch", "save-switched",
};

const char *ex_fail_phase_name(enum ex_fail_phase p) { return fail_phase_names[p]; }

int ex_fail_phase_parse(const char *s, enum ex_fail_phase *p, struct rl_err *e)
{
    for (int i = 0; i < EX_FAIL_PHASE_COUNT; i++)
        if (strcmp(s, fail_phase_names[i]) == 0) {
            *p = (enum ex_fail_phase)i;
            return 0;
        }
    return rl_errf(e, RL_EINVAL, "fail_phase: '%s'; allowed: step, save-prepare, save-write, save-written, "
                   "save-switch, save-switched", s);
}

/* The injected failure of --fail-rank at phase ph: an error, returned before any cleanup. */
static bool fails_at(const struct ex_run *r, enum ex_fail_phase ph)
{
    return r->o->fail_rank == r->k && r->o->fail_phase == ph;
}

static int fail_here(const struct ex_run *r, struct rl_err *e)
{
    return rl_errf(e, RL_EENV, "rank %d: failing on purpose at %s (fail_rank)", r->k,
                   ex_fail_phase_name(r->o->fail_phase));
}

/* Exit 2 for a path the user got wrong (no such folder), 3 for the environment (permissions, a
 * full or read-only disk), as common/'s output files. */
static int write_code(int err)
{
    return err == ENOENT || err == ENOTDIR || err == EISDIR || err == ENAMETOOLONG || err == ELOOP ? RL_EIO
                                                                                                      : RL_EENV;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static void fsync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
}

/* Writes n bytes to tmp (created, truncated), fsyncs and renames it to path. 0, or errno. With
 * half != 0 only the first half is written and nothing else happens (the injected failure). */
static int write_file(const char *tmp, const char *path, const void *a, size_t na, const void *b, size_t nb,
                      bool half)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return errno;
    if (half) {
        (void)write_all(fd, a, na);
        (void)write_all(fd, b, nb / 2);
        close(fd);
        return 0;
    }
    int err = 0;
    if (write_all(fd, a, na) != 0 || write_all(fd, b, nb) != 0 || fsync(fd) != 0)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err)
        unlink(tmp);
    return err;
}

/* The largest generation number in dir (0: none). */
static int64_t max_generation(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int64_t g = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        long long x;
        int end = 0;
        if (sscanf(de->d_name, "gen-%8lld%n", &x, &end) == 1 && de->d_name[end] == 0 && end == 12 && x > g)
            g = x;
    }
    closedir(d);
    return g;
}

/* Removes the rank files (and their temporary files) of one folder, then the folder itself when
 * it is a generation folder (keep_dir false). Anything else in it is left alone. */
static void remove_rank_files(const char *dir, bool keep_dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char path[4200];
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "rank-", 5) != 0 || !strstr(de->d_name, ".rlck"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    if (!keep_dir)
        rmdir(dir);
}

/* Step 5: every generation but `keep`, the first format's flat files, a stale manifest tmp. */
static void prune(const char *dir, int64_t keep)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    char path[4200];
    while ((de = readdir(d))) {
        long long x;
        int end = 0;
        if (sscanf(de->d_name, "gen-%8lld%n", &x, &end) == 1 && de->d_name[end] == 0 && end == 12 && x != keep) {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            remove_rank_files(path, false);
        }
    }
    closedir(d);
    remove_rank_files(dir, true);
    snprintf(path, sizeof path, "%s/" EX_CKPT_MANIFEST ".tmp", dir);
    unlink(path);
}

/* Rank 0, step 1: the folder, the next generation number, its folder. */
static int prepare(const char *dir, int64_t *gen, struct rl_err *e)
{
    if (!dir[0])
        return rl_errf(e, RL_EINVAL, "save_dir: empty; allowed: a folder name");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return rl_errf(e, write_code(errno), "save_dir: cannot create %s: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return rl_errf(e, RL_EINVAL, "save_dir: %s is not a folder; allowed: a folder (created when missing)", dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/" EX_CKPT_MANIFEST, dir);
    int64_t g = max_generation(dir);
    char *text = NULL;
    size_t len = 0;
    struct rl_err e2 = {0};
    if (access(path, F_OK) == 0) {
        struct ex_ckpt_manifest m;
        if (rl_read_file(path, &text, &len, &e2) || ex_ckpt_manifest_parse(text, len, path, &m, &e2)) {
            free(text);
            return rl_errf(e, RL_EINVAL, "save_dir: %s holds a manifest that is not a ratiolab checkpoint's (%s); "
                           "nothing was written", dir, e2.msg);
        }
        free(text);
        g = m.generation > g ? m.generation : g;
    }
    if (g >= EX_CKPT_MAX_GENERATION)
        return rl_errf(e, RL_EINVAL, "save_dir: %s: generation %lld is the last one; allowed: a new folder", dir,
                       (long long)g);
    *gen = g + 1;
    snprintf(path, sizeof path, "%s/" EX_CKPT_GEN_FMT, dir, (long long)*gen);
    if (mkdir(path, 0755) != 0)
        return rl_errf(e, write_code(errno), "save_dir: cannot create %s: %s", path, strerror(errno));
    return 0;
}

int ex__ckpt_save(struct ex_run *r, const char *dir, struct rl_err *e)
{
    /* 1. The generation, chosen and created by rank 0; [generation, error code] to every rank. */
    int64_t msg[2] = {0, 0};
    if (r->k == 0)
        msg[1] = prepare(dir, &msg[0], e);
    RL_TRY(ex_comm_bcast(r->c, msg, sizeof msg, e));
    if (msg[1])
        return r->k == 0 ? (int)msg[1]
                         : rl_errf(e, (int)msg[1], "save_dir: rank 0 could not prepare %s; nothing was written", dir);
    if (fails_at(r, EX_FAIL_SAVE_PREPARE))
        return fail_here(r, e);
    char gdir[4200], path[4300], tmp[4400];
    snprintf(gdir, sizeof gdir, "%s/" EX_CKPT_GEN_FMT, dir, (long long)msg[0]);
    snprintf(path, sizeof path, "%s/rank-%05d.rlck", gdir, r->k);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);

    /* 2. This rank's file. */
    int n = 0;
    int64_t elems = 0;
    for (int t = 0; t < r->T; t++)
        if (r->tm[t].real > 0) {
            n++;
            elems += r->tm[t].real;
        }
    size_t payload = (size_t)n * EX_CKPT_RECORD_BYTES + (size_t)elems * 12;
    unsigned char *buf = malloc(payload ? payload : 1);
    if (!buf)
        return rl_errf(e, RL_ENOMEM, "save_dir: out of host memory for %zu bytes", payload);
    unsigned char *rec = buf;
    float *data = (float *)(buf + (size_t)n * EX_CKPT_RECORD_BYTES);
    int rc = 0;
    for (int t = 0; t < r->T && !rc; t++) {
        const struct ex_tmap *x = &r->tm[t];
        if (x->real == 0)
            continue;
        int64_t g0 = x->goff + (int64_t)r->k * x->s;
        memcpy(rec, &g0, 8);   /* little-endian hosts only (x86-64, aarch64) */
        memcpy(rec + 8, &x->real, 8);
        rec += EX_CKPT_RECORD_BYTES;
        rc = ex__get_range(r, x->foff, x->real, data, data + x->real, data + 2 * x->real, NULL, e);
        data += 3 * x->real;
    }
    if (rc) {
        free(buf);
        return rc;
    }
    struct ex_ckpt_header_in h = {
        .world = (uint32_t)r->W, .rank = (uint32_t)r->k, .iterations = r->iterations, .adam_step = r->adam_step,
        .seed = r->o->seed, .total_numel = r->total_numel, .n_rec = n, .payload_bytes = (int64_t)payload,
        .payload_crc = ex_ckpt_crc(buf, payload),
    };
    unsigned char hb[EX_CKPT_HEADER_BYTES];
    ex_ckpt_header_encode(&h, hb);
    int err = write_file(tmp, path, hb, sizeof hb, buf, payload, fails_at(r, EX_FAIL_SAVE_WRITE));
    free(buf);
    if (fails_at(r, EX_FAIL_SAVE_WRITE))
        return fail_here(r, e);
    if (!err)
        fsync_dir(gdir);
    if (fails_at(r, EX_FAIL_SAVE_WRITTEN))
        return fail_here(r, e);

    /* 3. Agreement: the highest failing rank + 1, or 0. */
    int64_t failed = err ? r->k + 1 : 0;
    RL_TRY(ex_comm_max_i64(r->c, &failed, 1, e));
    if (failed) {
        if (!err)
            unlink(path);
        RL_TRY(ex_comm_barrier(r->c, e));
        if (r->k == 0)
            remove_rank_files(gdir, false);
        if (err)
            return rl_errf(e, write_code(err), "save_dir: writing %s failed: %s; %s keeps its previous checkpoint",
                           path, strerror(err), dir);
        return rl_errf(e, RL_EENV, "save_dir: rank %lld could not write its checkpoint file; %s keeps its previous "
                       "checkpoint", (long long)(failed - 1), dir);
    }
    if (fails_at(r, EX_FAIL_SAVE_SWITCH))
        return fail_here(r, e);

    /* 4. The switch, by rank 0; its result to every rank. */
    int64_t sw = 0;
    if (r->k == 0) {
        struct ex_ckpt_manifest m = {.generation = msg[0], .world = (uint32_t)r->W, .iterations = r->iterations};
        char text[256];
        int len = ex_ckpt_manifest_format(&m, text, sizeof text);
        char mpath[4200], mtmp[4300];
        snprintf(mpath, sizeof mpath, "%s/" EX_CKPT_MANIFEST, dir);
        snprintf(mtmp, sizeof mtmp, "%s.tmp", mpath);
        sw = write_file(mtmp, mpath, text, (size_t)len, "", 0, false);
        if (!sw)
            fsync_dir(dir);
        else
            remove_rank_files(gdir, false);
    }
    RL_TRY(ex_comm_bcast(r->c, &sw, sizeof sw, e));
    if (sw)
        return r->k == 0 ? rl_errf(e, write_code((int)sw), "save_dir: writing %s/" EX_CKPT_MANIFEST " failed: %s; %s "
                                   "keeps its previous checkpoint", dir, strerror((int)sw), dir)
                         : rl_errf(e, RL_EENV, "save_dir: rank 0 could not switch %s/" EX_CKPT_MANIFEST "; %s keeps "
                                   "its previous checkpoint", dir, dir);
    if (fails_at(r, EX_FAIL_SAVE_SWITCHED))
        return fail_here(r, e);

    /* 5. The older generations. */
    if (r->k == 0)
        prune(dir, msg[0]);
    return 0;
}

/* The largest checkpoint file a run of this model can have written: the header, one record per
 * tensor and master, m and v of every global element (a rank never holds more). common/'s
 * readers cap inputs at RL_INPUT_MAX_BYTES (64 MiB), far below a real checkpoint (12 bytes per
 * element: 4 GB for gpt-2.7b's TP shard), so checkpoints are read here with this cap instead. */
static int64_t ckpt_max_bytes(const struct ex_run *r)
{
    return EX_CKPT_HEADER_BYTES + EX_CKPT_RECORD_BYTES * (int64_t)r->T + 12 * r->total_numel;
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

/* Where the save lives: the generation the manifest names (*m filled, *have_manifest true), or
 * the folder itself (the first format: no manifest). */
static int locate(const char *dir, char *gdir, size_t n, struct ex_ckpt_manifest *m, bool *have_manifest,
                  struct rl_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" EX_CKPT_MANIFEST, dir);
    *have_manifest = false;
    if (access(path, F_OK) != 0) {
        /* The first format kept the rank files in the folder itself; without them either the
         * folder is no checkpoint, which is what the message must say. */
        char r0[4200];
        snprintf(r0, sizeof r0, "%s/rank-00000.rlck", dir);
        if (access(r0, F_OK) != 0)
            return rl_errf(e, RL_EINVAL, "load_dir: %s has no " EX_CKPT_MANIFEST " file (nor a rank-00000.rlck of "
                           "the first format): not a checkpoint folder; allowed: a folder a checkpoint save wrote",
                           dir);
        snprintf(gdir, n, "%s", dir);
        return 0;
    }
    char *text = NULL;
    size_t len = 0;
    struct rl_err e2 = {0};
    if (rl_read_file(path, &text, &len, &e2) || ex_ckpt_manifest_parse(text, len, path, m, &e2)) {
        free(text);
        return rl_errf(e, RL_EINVAL, "load_dir: %s", e2.msg);
    }
    free(text);
    *have_manifest = true;
    snprintf(gdir, n, "%s/" EX_CKPT_GEN_FMT, dir, (long long)m->generation);
    return 0;
}

/* Reads and checks rank file q of the save in gdir against the model; *out (malloc'd) holds it
 * whole, *f points into it. first: rank 0's file, whose save every other file must belong to. */
static int read_checked(const struct ex_run *r, const struct ex_ckpt_model *model, const char *gdir, int q,
                        const struct ex_ckpt_file *first, struct ex_ckpt_file *f, char **out, struct rl_err *e)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/rank-%05d.rlck", gdir, q);
    char *buf = NULL;
    size_t len = 0;
    struct rl_err e2 = {0};
    if (read_whole(path, ckpt_max_bytes(r), &buf, &len, &e2))
        return rl_errf(e, RL_EINVAL, "load_dir: %s: cannot read it (%s)", path, e2.msg);
    int rc = 0;
    if (ex_ckpt_parse(buf, len, path, model, f, &e2))
        rc = rl_errf(e, RL_EINVAL, "load_dir: %s", e2.msg);
    else if (f->rank != (uint32_t)q)
        rc = rl_errf(e, RL_EINVAL, "load_dir: %s: header field rank: %" PRIu32 "; allowed: %d (its name)", path,
                     f->rank, q);
    else if (first && (f->world != first->world || f->iterations != first->iterations ||
                       f->adam_step != first->adam_step || f->seed != first->seed))
        rc = rl_errf(e, RL_EINVAL, "load_dir: %s: belongs to another save (iteration %lld, rank 0's is %lld)", path,
                     (long long)f->iterations, (long long)first->iterations);
    if (rc)
        free(buf);
    else
        *out = buf;
    return rc;
}

int ex__ckpt_load(struct ex_run *r, const char *dir, struct rl_err *e)
{
    if (!dir[0])
        return rl_errf(e, RL_EINVAL, "load_dir: empty; allowed: a folder written by a save");
    char gdir[4200];
    struct ex_ckpt_manifest man;
    bool have_manifest;
    RL_TRY(locate(dir, gdir, sizeof gdir, &man, &have_manifest, e));
    int64_t *starts = malloc(((size_t)r->T + 1) * sizeof *starts);
    if (!starts)
        return rl_errf(e, RL_ENOMEM, "load_dir: out of host memory");
    for (int t = 0; t < r->T; t++)
        starts[t] = r->tm[t].goff;
    starts[r->T] = r->total_numel;
    const struct ex_ckpt_model model = {r->total_numel, r->T, starts};

    struct ex_ckpt_file f0, f;
    char *buf = NULL;
    int rc = read_checked(r, &model, gdir, 0, NULL, &f0, &buf, e);
    free(buf);
    buf = NULL;
    if (!rc && f0.seed != r->o->seed)
        rc = rl_errf(e, RL_EINVAL, "seed: %llu; the checkpoint in %s was made with seed %llu",
                     (unsigned long long)r->o->seed, dir, (unsigned long long)f0.seed);
    if (!rc && have_manifest && (f0.world != man.world || f0.iterations != man.iterations))
        rc = rl_errf(e, RL_EINVAL, "load_dir: %s/rank-00000.rlck: world %u, iteration %lld; the manifest %s/"
                     EX_CKPT_MANIFEST " says world %u, iteration %lld", gdir, f0.world, (long long)f0.iterations, dir,
                     man.world, (long long)man.iterations);
    if (rc) {
        free(starts);
        return rc;
    }
    float *hm = calloc((size_t)r->P + 1, 4), *h1 = calloc((size_t)r->P + 1, 4), *h2 = calloc((size_t)r->P + 1, 4);
    struct ex_ckpt_rec *all = NULL;
    int64_t n_all = 0, cap_all = 0;
    if (!hm || !h1 || !h2)
        rc = rl_errf(e, RL_ENOMEM, "load_dir: out of host memory");
    for (uint32_t q = 0; q < f0.world && !rc; q++) {
        if ((rc = read_checked(r, &model, gdir, (int)q, &f0, &f, &buf, e)))
            break;
        if (n_all + f.n_rec > cap_all) {
            int64_t nc = (n_all + f.n_rec) * 2 + 16;
            struct ex_ckpt_rec *na = realloc(all, (size_t)nc * sizeof *na);
            if (!na) {
                rc = rl_errf(e, RL_ENOMEM, "load_dir: out of host memory");
                break;
            }
            all = na;
            cap_all = nc;
        }
        const unsigned char *data = f.data;
        for (int64_t i = 0; i < f.n_rec; i++) {
            int64_t g0, len;
            ex_ckpt_record(&f, i, &g0, &len);   /* inside one tensor (ex_ckpt_parse checked it) */
            all[n_all++] = (struct ex_ckpt_rec){g0, len, (int32_t)q, (int32_t)i};
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
            if (end > s) {
                size_t d = (size_t)(s - g0), cnt = (size_t)(end - s);
                int64_t fo = x->foff + (s - a);
                memcpy(hm + fo, data + 4 * d, 4 * cnt);
                memcpy(h1 + fo, data + 4 * ((size_t)len + d), 4 * cnt);
                memcpy(h2 + fo, data + 4 * (2 * (size_t)len + d), 4 * cnt);
            }
            data += 12 * (size_t)len;
        }
        free(buf);
        buf = NULL;
    }
    if (!rc)
        rc = ex_ckpt_check_cover(all, n_all, r->total_numel, have_manifest ? gdir : dir, e);
    if (rc == RL_EINVAL && strncmp(e->msg, "load_dir: ", 10) != 0)
        rl_err_prefix(e, "load_dir");
    for (int t = 0; t < r->T && !rc; t++)
        rc = ex__put_range(r, r->tm[t].foff, r->tm[t].s, hm + r->tm[t].foff, h1 + r->tm[t].foff,
                           h2 + r->tm[t].foff, e);
    free(all);
    free(starts);
    free(hm);
    free(h1);
    free(h2);
    if (!rc) {
        r->iterations = f0.iterations;
        r->adam_step = f0.adam_step;
    }
    return rc;
}
