/* exec/ckpt.c — checkpoints of the optimizer state, addressed by global element index, so a run
 * with another world size, ratio, policy or schedule continues bit for bit. The format (one file
 * per rank, the manifest) is exec/ckpt.h's; this file saves and loads it with the run's state.
 *
 * A save is all or nothing across ranks (exec/README.md, "Checkpoints"):
 *   1. rank 0 locks DIR (flock on DIR/.ratiolab.lock until step 5 is done: a second save exits 3
 *      at once), creates DIR/gen-G (G one above every generation in DIR) and broadcasts G;
 *   2. every rank writes DIR/gen-G/rank-K.rlck.tmp, fsyncs it, renames it to rank-K.rlck and
 *      fsyncs the folder;
 *   3. the ranks agree (a maximum over ranks of "failed"): when any failed, each removes its own
 *      file, rank 0 removes gen-G, and DIR keeps its previous checkpoint;
 *   4. rank 0 writes DIR/CHECKPOINT.tmp (the manifest: generation G, world, iterations), fsyncs
 *      it, renames it to DIR/CHECKPOINT (one rename: the switch) and fsyncs DIR;
 *   5. rank 0 removes every other generation but the one the manifest names, read again (and a
 *      folder's flat files of the first format); a link is removed itself, never followed.
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

int ex_fail_spec_parse(const char *v, int *rank, enum ex_fail_phase *phase, struct rl_err *e)
{
    char r[32];
    const char *colon = strchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    snprintf(r, sizeof r, "%.*s", (int)(n < sizeof r ? n : sizeof r - 1), v);
    if (n >= sizeof r)
        return rl_errf(e, RL_EINVAL, "fail_rank: '%s'; allowed: R or R:PHASE", v);
    *phase = EX_FAIL_STEP;
    RL_TRY(rl_parse_int("fail_rank", r, 0, EX_MAX_WORLD - 1, rank, e));
    return colon ? ex_fail_phase_parse(colon + 1, phase, e) : 0;
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

static int save(struct ex_run *r, const char *dir, struct ex_ckpt_dir *s, struct rl_err *e);

int ex__ckpt_save(struct ex_run *r, const char *dir, struct rl_err *e)
{
    struct ex_ckpt_dir s = {-1, -1, -1};
    int rc = save(r, dir, &s, e);
    ex_ckpt_dir_close(&s);   /* the lock goes last: after the prune */
    return rc;
}

static int save(struct ex_run *r, const char *dir, struct ex_ckpt_dir *s, struct rl_err *e)
{
    /* 1. The generation, chosen and created by rank 0 (holding the folder's lock until the end);
     * [generation, error code] to every rank. */
    int64_t msg[2] = {0, 0};
    if (r->k == 0)
        msg[1] = ex_ckpt_dir_prepare(dir, s, &msg[0], e);
    RL_TRY(ex_comm_bcast(r->c, msg, sizeof msg, e));
    if (msg[1])
        return r->k == 0 ? (int)msg[1]
                         : rl_errf(e, (int)msg[1], "save_dir: rank 0 could not prepare %s; nothing was written", dir);
    if (fails_at(r, EX_FAIL_SAVE_PREPARE))
        return fail_here(r, e);
    char name[32], tname[40], gdir[4200], path[4300];
    snprintf(name, sizeof name, "rank-%05d.rlck", r->k);
    snprintf(tname, sizeof tname, "%s.tmp", name);
    snprintf(gdir, sizeof gdir, "%s/" EX_CKPT_GEN_FMT, dir, (long long)msg[0]);
    snprintf(path, sizeof path, "%s/%s", gdir, name);

    /* 2. This rank's file, inside the generation rank 0 made (opened without following a link). */
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
    int err = ex_ckpt_dir_open_gen(dir, s, msg[0]);
    if (!err)
        err = ex_ckpt_write_at(s->gfd, tname, name, hb, sizeof hb, buf, payload, fails_at(r, EX_FAIL_SAVE_WRITE));
    free(buf);
    if (fails_at(r, EX_FAIL_SAVE_WRITE))
        return fail_here(r, e);
    if (!err)
        (void)fsync(s->gfd);
    if (fails_at(r, EX_FAIL_SAVE_WRITTEN))
        return fail_here(r, e);

    /* 3. Agreement: the highest failing rank + 1, or 0. */
    int64_t failed = err ? r->k + 1 : 0;
    RL_TRY(ex_comm_max_i64(r->c, &failed, 1, e));
    if (failed) {
        if (!err)
            (void)unlinkat(s->gfd, name, 0);
        RL_TRY(ex_comm_barrier(r->c, e));
        if (r->k == 0)
            ex_ckpt_dir_remove_gen(s, msg[0]);
        if (err)
            return rl_errf(e, ex_ckpt_write_code(err), "save_dir: writing %s failed: %s; %s keeps its previous checkpoint",
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
        sw = ex_ckpt_dir_switch(s, &m);
        if (sw)
            ex_ckpt_dir_remove_gen(s, msg[0]);
    }
    RL_TRY(ex_comm_bcast(r->c, &sw, sizeof sw, e));
    if (sw)
        return r->k == 0 ? rl_errf(e, ex_ckpt_write_code((int)sw), "save_dir: writing %s/" EX_CKPT_MANIFEST " failed: %s; %s "
                                   "keeps its previous checkpoint", dir, strerror((int)sw), dir)
                         : rl_errf(e, RL_EENV, "save_dir: rank 0 could not switch %s/" EX_CKPT_MANIFEST "; %s keeps "
                                   "its previous checkpoint", dir, dir);
    if (fails_at(r, EX_FAIL_SAVE_SWITCHED))
        return fail_here(r, e);

    /* 5. The older generations, still under the lock. */
    if (r->k == 0)
        ex_ckpt_dir_prune(dir, s, msg[0]);
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

/* Reads and checks rank file q of the save in gdir (the folder gfd) against the model; *out
 * (malloc'd) holds it whole, *f points into it. first: rank 0's file, whose save every other file
 * must belong to. */
static int read_checked(const struct ex_run *r, const struct ex_ckpt_model *model, const char *gdir, int gfd, int q,
                        const struct ex_ckpt_file *first, struct ex_ckpt_file *f, char **out, struct rl_err *e)
{
    char name[32], path[4400];
    snprintf(name, sizeof name, "rank-%05d.rlck", q);
    snprintf(path, sizeof path, "%s/%s", gdir, name);
    char *buf = NULL;
    size_t len = 0;
    struct rl_err e2 = {0};
    if (ex_ckpt_read_at(gfd, name, ckpt_max_bytes(r), &buf, &len, &e2))
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

static int load(struct ex_run *r, const char *dir, const char *gdir, int gfd, const struct ex_ckpt_manifest *man,
                struct rl_err *e);

int ex__ckpt_load(struct ex_run *r, const char *dir, struct rl_err *e)
{
    if (!dir[0])
        return rl_errf(e, RL_EINVAL, "load_dir: empty; allowed: a folder written by a save");
    char gdir[4200];
    struct ex_ckpt_manifest man;
    bool have_manifest = false;
    int gfd = -1;
    RL_TRY(ex_ckpt_locate(dir, gdir, sizeof gdir, &gfd, &man, &have_manifest, e));
    int rc = load(r, dir, gdir, gfd, have_manifest ? &man : NULL, e);
    close(gfd);
    return rc;
}

/* ex__ckpt_load once the save is located: gdir its folder (the descriptor gfd), man its manifest
 * (NULL: the first format). */
static int load(struct ex_run *r, const char *dir, const char *gdir, int gfd, const struct ex_ckpt_manifest *man,
                struct rl_err *e)
{
    const bool have_manifest = man != NULL;
    int64_t *starts = malloc(((size_t)r->T + 1) * sizeof *starts);
    if (!starts)
        return rl_errf(e, RL_ENOMEM, "load_dir: out of host memory");
    for (int t = 0; t < r->T; t++)
        starts[t] = r->tm[t].goff;
    starts[r->T] = r->total_numel;
    const struct ex_ckpt_model model = {r->total_numel, r->T, starts};

    struct ex_ckpt_file f0, f;
    char *buf = NULL;
    int rc = read_checked(r, &model, gdir, gfd, 0, NULL, &f0, &buf, e);
    free(buf);
    buf = NULL;
    if (!rc && f0.seed != r->o->seed)
        rc = rl_errf(e, RL_EINVAL, "seed: %llu; the checkpoint in %s was made with seed %llu",
                     (unsigned long long)r->o->seed, dir, (unsigned long long)f0.seed);
    if (!rc && have_manifest && (f0.world != man->world || f0.iterations != man->iterations))
        rc = rl_errf(e, RL_EINVAL, "load_dir: %s/rank-00000.rlck: world %u, iteration %lld; the manifest %s/"
                     EX_CKPT_MANIFEST " says world %u, iteration %lld", gdir, f0.world, (long long)f0.iterations, dir,
                     man->world, (long long)man->iterations);
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
        if ((rc = read_checked(r, &model, gdir, gfd, (int)q, &f0, &f, &buf, e)))
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
