/* common/rl.h — error values, checked parsing and atomic output files shared by every module.
 *
 * Library functions return 0 or a negative RL_E* code and fill a `struct rl_err` with one line
 * naming the field, the value and what is allowed. Only cli/ prints it and maps it to an exit
 * code with rl_exit_code(). */
#ifndef RL_COMMON_RL_H
#define RL_COMMON_RL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* X(name, value, exit code, description) */
#define RL_ERRORS(X)                                                          \
    X(RL_OK, 0, 0, "ok")                                                      \
    X(RL_EINVAL, -1, 2, "bad input")                                          \
    X(RL_ENOENT, -2, 2, "not found")                                          \
    X(RL_EIO, -3, 2, "input/output error")                                    \
    X(RL_ENOMEM, -4, 3, "out of memory")                                      \
    X(RL_EENV, -5, 3, "environment (missing GPU, library or resource)")       \
    X(RL_ECHECK, -6, 1, "a check failed")                                     \
    X(RL_EINTERNAL, -7, 3, "internal error")

enum rl_status {
#define RL__ENUM(n, v, x, d) n = v,
    RL_ERRORS(RL__ENUM)
#undef RL__ENUM
};

#define RL_ERR_MSG_MAX 1024

struct rl_err {
    int code;                  /* 0 or an RL_E* value */
    char msg[RL_ERR_MSG_MAX];  /* one line: field, value, what is allowed */
};

const char *rl_strerror(int code);
int rl_exit_code(int code);   /* 0 ok, 1 check failed, 2 bad input, 3 environment */

/* Sets *e (when e is not NULL) and returns code, so `return rl_errf(e, RL_EINVAL, ...)` works. */
int rl_errf(struct rl_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prepends "prefix: " to an existing message (adding context on the way up). */
int rl_err_prefix(struct rl_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* First error wins: when *first is 0, stores code in it and the message in *e (as rl_errf does);
 * a later error leaves both alone. Returns code either way, so `return rl_err_first(...)` works
 * in writers and callbacks that go on after a failure and report the first one at the end. */
int rl_err_first(int *first, struct rl_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int rl_err_vfirst(int *first, struct rl_err *e, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* The one forwarding step of the tree (zstd's FORWARD_IF_ERROR): evaluates x, an int that is 0 or
 * an RL_E* code, and returns it from the calling function when it is not 0. The callee has
 * already filled the error message; add context on the way up with rl_err_prefix instead. */
#define RL_TRY(x)                                                                                  \
    do {                                                                                           \
        int rl_try_rc_ = (x);                                                                      \
        if (rl_try_rc_)                                                                            \
            return rl_try_rc_;                                                                     \
    } while (0)

/* Text from an input (a file's field, a log line, a path) as data on one line of a report or a
 * message: control characters (below 0x20, DEL, the C1 controls U+0080..U+009F) are written as
 * escapes (\n, \r, \t, \xNN, \uNNNN), so no input can end a line, start another or send a
 * terminal sequence. Writes at most cap bytes into out (cut short when longer) and returns out.
 * rl_errf and rl_err_prefix pass every message through it. O(length). */
const char *rl_text_data(char *out, size_t cap, const char *s);

/* ---- checked parsing: each names `field` in its error ---------------------------------------- */
int rl_parse_i64(const char *field, const char *s, int64_t min, int64_t max, int64_t *out,
                 struct rl_err *e);
int rl_parse_int(const char *field, const char *s, int min, int max, int *out, struct rl_err *e);
/* Finite doubles in [lo, hi]; NaN and infinities are rejected. */
int rl_parse_double(const char *field, const char *s, double lo, double hi, double *out,
                    struct rl_err *e);
/* Sizes need a unit: "16GiB", "16G", "80GB", "512MiB", "1e9B"; binary (KiB..TiB, K..T) and decimal
 * (kB..TB). A bare number ("80": 80 bytes or 80 GiB?) is refused, listing the accepted forms. */
int rl_parse_bytes(const char *field, const char *s, int64_t *out, struct rl_err *e);
/* The same, refusing values below min bytes (e.g. 1 for a GPU memory: 0, -0 and 1e-400GiB fail). */
int rl_parse_bytes_min(const char *field, const char *s, int64_t min, int64_t *out, struct rl_err *e);
/* "lo:hi:step" (or a single value, or a comma list) into values in [min, max]. Each value is
 * lo + i*step rounded to 10 significant digits, so 0:1:0.1 gives exactly the doubles 0.3 and 0.7
 * a user would type (DeepSpeed's floor rules are sensitive to the last bit). *out is malloc'd. */
int rl_parse_ratio_list(const char *field, const char *s, double min, double max, double **out,
                        size_t *n, struct rl_err *e);
bool rl_streq(const char *a, const char *b);
/* "Did you mean": the candidate closest to word by edit distance (case-insensitive; insertions,
 * deletions, substitutions and swaps of neighbours), when it is within max(2, |word| / 3) edits;
 * NULL otherwise or when word is one of them. O(n x |word| x |candidate|). */
const char *rl_nearest(const char *word, const char *const *cands, int n);

/* ---- versions ------------------------------------------------------------------------------ */
struct rl_version {
    int major, minor, patch;   /* "0.12.4" -> 0, 12, 4 */
};
/* "X.Y.Z" or "X.Y" (Z = 0), each part decimal digits up to RL_VERSION_PART_MAX. */
#define RL_VERSION_PART_MAX 999999
int rl_parse_version(const char *field, const char *s, struct rl_version *v, struct rl_err *e);
int rl_version_cmp(struct rl_version a, struct rl_version b);   /* <0, 0, >0 */
/* The one way a version is written, "0.12.4", into buf of n bytes (RL_VERSION_STR_MAX hold any);
 * returns buf. */
#define RL_VERSION_STR_MAX 40
const char *rl_version_str(struct rl_version v, char *buf, size_t n);
/* rl_version_str into a buffer of its own that lives to the end of the enclosing block (a
 * compound literal): for an argument of printf and the like, RL_VERSION_S(v) with "%s". */
#define RL_VERSION_S(v) rl_version_str((v), (char[RL_VERSION_STR_MAX]){0}, RL_VERSION_STR_MAX)

/* ---- output files ----------------------------------------------------------------------------
 * Every command writes its files through these, so the rules hold everywhere:
 *   "-"                 standard output, written in place;
 *   a regular file      written to a temporary file in the same folder and renamed over the name
 *                       on commit (a failed or interrupted run never leaves a partial file); the
 *                       new file keeps the old one's mode (a new one honours the umask);
 *   a symbolic link     followed: its final target is replaced atomically, the link stays;
 *   a device, FIFO, socket (exists, not regular)  written in place, never renamed over.
 * A failed write or rename is RL_EENV (exit 3) naming the file and strerror ("No space left on
 * device"); a name in a folder that does not exist is RL_EIO (exit 2). */
struct rl_outfile {
    FILE *fp;          /* write here */
    char *path;        /* the name given (for messages) */
    char *target;      /* the regular file replaced on commit (path with links followed), or NULL */
    char *tmp;         /* temporary name, NULL when written in place */
    bool in_place;     /* standard output or a non-regular file */
    void *sink;        /* the descriptor and the errno of its first failed write */
};
int rl_outfile_open(struct rl_outfile *o, const char *path, struct rl_err *e);
int rl_outfile_commit(struct rl_outfile *o, struct rl_err *e);
void rl_outfile_abort(struct rl_outfile *o);
/* The descriptor under o->fp (flushed first), for writers that bypass stdio such as zlib. */
int rl_outfile_fd(const struct rl_outfile *o);
/* Checks, before any work, that rl_outfile_open(path) will succeed as far as the file system can
 * tell now (a temporary file is created beside the target and removed; a device or FIFO must be
 * writable); the same messages and codes as rl_outfile_open. Nothing is left behind. */
int rl_outfile_check(const char *path, struct rl_err *e);
/* An output folder that one process writes at a time: created when missing (one level), refused
 * when it is not a folder, and locked (flock on DIR/.ratiolab.lock, opened without following a
 * link, held until *lock_fd is closed or the process ends, however it ends; the holder writes
 * "pid N on host H" into it). Another holder is RL_EENV at once naming the folder and the holder. */
#define RL_OUTDIR_LOCK ".ratiolab.lock"
int rl_outdir_lock(const char *dir, int *lock_fd, struct rl_err *e);
/* Removes every temporary file still open (called from a signal handler on Ctrl-C). */
void rl_outfile_abort_all(void);

/* ---- input files -----------------------------------------------------------------------------
 * Every file input is read through these: only regular files are read (a directory, FIFO, socket
 * or device is refused at once, without blocking), at most RL_INPUT_MAX_BYTES, and text inputs
 * must not hold a NUL byte ("NUL byte at offset N"). Messages start with the path; callers prefix
 * the option. */
#define RL_INPUT_MAX_BYTES (64 << 20)   /* 64 MiB: the largest config, profile, log or trace read */
/* Reads a whole text file (NUL-terminated); *out is malloc'd. With allow_stdin, "-" reads
 * standard input (same size limit). */
int rl_read_input(const char *path, bool allow_stdin, char **out, size_t *len, struct rl_err *e);
/* rl_read_input without standard input. */
int rl_read_file(const char *path, char **out, size_t *len, struct rl_err *e);
/* The same checks and limit for binary content (no NUL check), e.g. a gzip stream. */
int rl_read_bytes(const char *path, char **out, size_t *len, struct rl_err *e);
/* Opens path for reading after the type and size checks; *fd is the descriptor. */
int rl_open_input(const char *path, int *fd, struct rl_err *e);
/* RL_EINVAL "name: NUL byte at offset N" when text[0..len) holds a NUL. */
int rl_check_text(const char *name, const char *text, size_t len, struct rl_err *e);

/* ---- arrays ---------------------------------------------------------------------------------- */
/* Elements of an array (not a pointer): name tables are checked against their enum's count with
 * _Static_assert(RL_COUNT(names) == X_COUNT, ...), so a value without a name does not build. */
#define RL_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Room for `need` elements of elem_bytes each in the array *array_ptr (any object pointer, passed
 * by address) of *cap allocated elements: when need > *cap, *cap doubles (from `first` when 0)
 * until it holds need, and the array is reallocated. On failure the array and *cap are unchanged.
 * Returns 0 or RL_ENOMEM (no message: the caller names what it was growing). */
int rl_grow(void *array_ptr, int *cap, size_t elem_bytes, int need, int first);
/* A map from an int64 key to an int (an index into the caller's array), for readers that meet
 * keys such as pids in any order: open addressing with linear probing, the table doubled at half
 * full, so each call is O(1) expected and n keys cost O(n) (a linear search per row made a monitor
 * CSV of 200 k pids take minutes). Zero-initialise; rl_imap_free releases it. */
struct rl_imap {
    int64_t *keys;   /* the keys, cap entries */
    int *vals;       /* their values + 1, 0 in an empty slot */
    int cap;         /* slots (a power of two, or 0) */
    int n;           /* keys held */
};
/* The value stored under key, or -1 when none. */
int rl_imap_get(const struct rl_imap *m, int64_t key);
/* Stores val (>= 0) under key (replacing one there). 0 or RL_ENOMEM (no message; the map is unchanged). */
int rl_imap_put(struct rl_imap *m, int64_t key, int val);
void rl_imap_free(struct rl_imap *m);

/* Median of n values (the mean of the two middle ones when n is even); 0 when n == 0 or on
 * allocation failure. Does not modify v. O(n log n). */
double rl_median(const double *v, int n);

/* 1024^3 */
#define RL_GIB 1073741824.0

/* Directory holding catalog/ (models, hardware): $RATIOLAB_CATALOG, else next to the executable
 * (<exe>/../catalog, <exe>/../share/ratiolab/catalog), else RL_CATALOG_FALLBACK. */
const char *rl_catalog_dir(void);

/* The two offload ratios as every output names them (JSON keys, CSV columns, trace metadata): the
 * ratio asked for (DeepSpeed's offload_optimizer.ratio) and the share of a rank's elements the
 * placement puts on the host. Defined once; writers and readers use these. */
#define RL_KEY_REQUESTED_RATIO "requested_ratio"
#define RL_KEY_HONORED_RATIO "honored_ratio"

#endif
