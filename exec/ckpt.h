/* exec/ckpt.h — the checkpoint's on-disk format, checked without any run state: one rank file's
 * bytes and the generation manifest (exec/README.md, "Checkpoints"). exec/ckpt.c saves and loads
 * with these; the fuzzer (tests/fuzz_targets.c) feeds them arbitrary bytes. Every header field is
 * bounded before any arithmetic uses it; nothing here reads outside the buffer it is given. */
#ifndef RL_EXEC_CKPT_H
#define RL_EXEC_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rl.h"

#define EX_CKPT_MAGIC "RLEXCKPT"
#define EX_CKPT_VERSION 1u
#define EX_CKPT_HEADER_BYTES 80
#define EX_CKPT_RECORD_BYTES 16
/* Iterations and Adam steps a checkpoint may hold: far beyond any run (a million steps per run),
 * far below int64 overflow of the counters that continue from it. */
#define EX_CKPT_MAX_ITERATIONS ((int64_t)1 << 40)
/* Global elements a checkpoint may describe: 12 bytes each stays far below INT64_MAX. */
#define EX_CKPT_MAX_NUMEL ((int64_t)1 << 56)
/* The manifest's name in the checkpoint folder, and each generation's folder name (printf). */
#define EX_CKPT_MANIFEST "CHECKPOINT"
#define EX_CKPT_GEN_FMT "gen-%08lld"
#define EX_CKPT_MAX_GENERATION 99999999LL

/* One record: a run of global elements whose master, m and v the file holds. */
struct ex_ckpt_rec {
    int64_t gstart;          /* first global element */
    int64_t numel;           /* elements (>= 1) */
    int32_t file_rank;       /* the file it came from */
    int32_t index;           /* its position there */
};

/* One rank file, checked. Pointers point into the caller's buffer. */
struct ex_ckpt_file {
    uint32_t world;          /* ranks of the saving run, 1..EX_MAX_WORLD */
    uint32_t rank;           /* this file's rank, < world */
    int64_t iterations;      /* iterations done, 0..EX_CKPT_MAX_ITERATIONS */
    int64_t adam_step;       /* Adam steps applied, 0..iterations */
    uint64_t seed;           /* synthetic data seed */
    int64_t total_numel;     /* global elements of the model, 1..EX_CKPT_MAX_NUMEL */
    int64_t n_rec;           /* records */
    const unsigned char *recs;   /* n_rec x {int64 global start, int64 elements}, little-endian */
    const unsigned char *data;   /* per record: master, m, v (fp32, numel each) */
};

/* The model a file must fit: its global elements and the first global element of each tensor
 * (tensor_start[0] = 0, ascending, tensor_start[n_tensors] = total_numel). A record must lie
 * inside one tensor. tensor_start may be NULL (then only the total bounds records). */
struct ex_ckpt_model {
    int64_t total_numel;           /* global elements */
    int n_tensors;                 /* tensors */
    const int64_t *tensor_start;   /* n_tensors + 1 entries, or NULL */
};

/* The header bytes of a file (the header CRC filled in). */
struct ex_ckpt_header_in {
    uint32_t world, rank;          /* saving world, this rank */
    int64_t iterations, adam_step; /* counters */
    uint64_t seed;                 /* data seed */
    int64_t total_numel;           /* global elements */
    int64_t n_rec, payload_bytes;  /* records, bytes after the header */
    uint32_t payload_crc;          /* crc32 of the payload */
};
void ex_ckpt_header_encode(const struct ex_ckpt_header_in *h, unsigned char out[EX_CKPT_HEADER_BYTES]);
uint32_t ex_ckpt_crc(const void *p, size_t n);

/* Checks buf[0..len) as one rank file: magic, version, header CRC, every header field bounded,
 * the payload size and CRC, every record inside the model (and one tensor), records ascending and
 * disjoint, and the data exactly 12 bytes per recorded element. m may be NULL (no model: only
 * the file's own consistency). RL_EINVAL "<path>: <field>: <value>; allowed: ..." otherwise. */
int ex_ckpt_parse(const void *buf, size_t len, const char *path, const struct ex_ckpt_model *m,
                  struct ex_ckpt_file *f, struct rl_err *e);
/* Record i of a checked file. */
void ex_ckpt_record(const struct ex_ckpt_file *f, int64_t i, int64_t *gstart, int64_t *numel);

/* Sorts the records of every file of a save (n of them) by global start and checks that they
 * cover [0, total_numel) exactly once: no gap, no overlap. dir names the save in messages. */
int ex_ckpt_check_cover(struct ex_ckpt_rec *r, int64_t n, int64_t total_numel, const char *dir,
                        struct rl_err *e);

/* The manifest: which generation folder holds the last complete save. */
struct ex_ckpt_manifest {
    int64_t generation;      /* 1..EX_CKPT_MAX_GENERATION */
    uint32_t world;          /* rank files in it, 1..EX_MAX_WORLD */
    int64_t iterations;      /* the save's iterations, 0..EX_CKPT_MAX_ITERATIONS */
};
/* Writes the manifest's text into out (at most n bytes, NUL-terminated); returns its length. */
int ex_ckpt_manifest_format(const struct ex_ckpt_manifest *m, char *out, size_t n);
/* Parses a manifest's text (len bytes, NUL-terminated): exactly the lines the writer writes. */
int ex_ckpt_manifest_parse(const char *text, size_t len, const char *path, struct ex_ckpt_manifest *m,
                           struct rl_err *e);

/* ---- the checkpoint folder (exec/ckpt_dir.c) -----------------------------------------------------
 * Every name inside DIR is resolved relative to a descriptor of it and never through a link; DIR
 * itself may be one. A link named like a generation or a rank file is removed itself by the prune,
 * never what it points to; a generation or rank file that is a link is refused (RL_EINVAL). */

/* What a save holds while it runs. */
struct ex_ckpt_dir {
    int lock_fd;   /* rank 0: flock of DIR/.ratiolab.lock (rl_outdir_lock) for the whole save, or -1 */
    int dfd;       /* DIR, or -1 */
    int gfd;       /* the new generation's folder, or -1 */
};

/* RL_EIO (exit 2) for a path the user got wrong (no such folder), RL_EENV (exit 3) otherwise. */
int ex_ckpt_write_code(int err);
/* Rank 0, step 1 of a save (*d = {-1, -1, -1} before): creates DIR when missing, locks it (a held
 * lock is RL_EENV at once naming the holder), opens it, refuses a manifest that is not ours or
 * names a generation (or rank file in it) that is a link, and creates the next generation, *gen:
 * one above every generation name in DIR and the manifest's. */
int ex_ckpt_dir_prepare(const char *dir, struct ex_ckpt_dir *d, int64_t *gen, struct rl_err *e);
/* Any rank: d->dfd (opened when -1) and d->gfd, generation gen's folder opened without following
 * a link. 0 or errno. */
int ex_ckpt_dir_open_gen(const char *dir, struct ex_ckpt_dir *d, int64_t gen);
/* Writes a then b to tmp inside the folder dfd (created, never through a link), fsyncs it and
 * renames it to name (a link of that name is replaced itself). 0 or errno; on failure tmp is
 * removed. half: only half of b is written and nothing else (the injected failure). */
int ex_ckpt_write_at(int dfd, const char *tmp, const char *name, const void *a, size_t na, const void *b,
                     size_t nb, bool half);
/* Step 4: DIR/CHECKPOINT.tmp, fsync, rename to DIR/CHECKPOINT, fsync DIR. 0 or errno. */
int ex_ckpt_dir_switch(const struct ex_ckpt_dir *d, const struct ex_ckpt_manifest *m);
/* Removes generation gen (its rank files and temporary files, then the folder unless it holds
 * anything else; a link of that name is removed itself). */
void ex_ckpt_dir_remove_gen(const struct ex_ckpt_dir *d, int64_t gen);
/* Step 5, under the lock: reads the manifest again and removes every generation but keep and the
 * one it names (an unreadable manifest removes nothing), DIR's flat rank files of the first
 * format and a stale CHECKPOINT.tmp. */
void ex_ckpt_dir_prune(const char *dir, const struct ex_ckpt_dir *d, int64_t keep);
/* Closes the descriptors, the lock last. */
void ex_ckpt_dir_close(struct ex_ckpt_dir *d);
/* A load's save: the generation the manifest names (*m, *have_manifest true) or DIR itself (the
 * first format); gdir its path (n bytes), *gfd its folder opened without following a link (the
 * caller closes it). RL_EINVAL naming the path otherwise. */
int ex_ckpt_locate(const char *dir, char *gdir, size_t n, int *gfd, struct ex_ckpt_manifest *m, bool *have_manifest,
                   struct rl_err *e);
/* The whole regular file name of the folder dfd, at most max_bytes, into *out (malloc'd, NUL
 * after the *len bytes). A link, FIFO, device or directory is refused at once without blocking,
 * and so is a larger file, before anything is allocated. The message does not name the file. */
int ex_ckpt_read_at(int dfd, const char *name, int64_t max_bytes, char **out, size_t *len, struct rl_err *e);

#endif
