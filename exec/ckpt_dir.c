/* exec/ckpt_dir.c — the checkpoint folder (exec/ckpt.h): its lock, generation folders, the
 * manifest's switch, the prune and the locate of a load, without any run state (exec/ckpt.c
 * saves and loads the run's state through these; the fuzzer drives them over scratch folders).
 * Every name inside the folder is resolved relative to a descriptor of the folder (openat,
 * mkdirat, renameat, unlinkat) and never through a symbolic link (O_NOFOLLOW, fstatat with
 * AT_SYMLINK_NOFOLLOW): a link named like a generation or a rank file is removed itself, never
 * what it points to, and a checkpoint whose generation or rank file is a link is refused. The
 * folder itself is the user's name and may be a link. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/ckpt.h"

/* Exit 2 for a path the user got wrong (no such folder), 3 for the environment (permissions, a
 * full or read-only disk), as common/'s output files. */
int ex_ckpt_write_code(int err)
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

/* The folder dir (following dir itself), or -1 with errno. */
static int open_dir(const char *dir)
{
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* The folder `name` inside dfd, never through a link: -1 with errno (ELOOP or ENOTDIR for a link). */
static int open_sub(int dfd, const char *name)
{
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* True when `name` inside dfd is a symbolic link (not followed). */
static bool is_link_at(int dfd, const char *name)
{
    struct stat st;
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

/* The number of a generation folder's name, "gen-" and exactly 8 decimal digits; -1 otherwise. */
static int64_t gen_number(const char *name)
{
    if (strncmp(name, "gen-", 4) != 0 || strlen(name) != 12)
        return -1;
    int64_t x = 0;
    for (int i = 4; i < 12; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        x = x * 10 + (name[i] - '0');
    }
    return x;
}

/* A rank file's name or its temporary file's ("rank-..." holding ".rlck"). */
static bool is_rank_name(const char *name)
{
    return strncmp(name, "rank-", 5) == 0 && strstr(name, ".rlck") != NULL;
}

/* Calls fn(dfd, name, arg) for every entry of the folder dfd but "." and ".." (a copy of the
 * descriptor is read from its start: the copy shares dfd's position, which an earlier walk left at
 * the end). An entry removed during the walk is allowed. Returns -1 with errno when the folder
 * cannot be read. */
static int each_entry(int dfd, void (*fn)(int, const char *, void *), void *arg)
{
    int d2 = dup(dfd);
    DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
    if (!d) {
        if (d2 >= 0)
            close(d2);
        return -1;
    }
    rewinddir(d);
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            fn(dfd, de->d_name, arg);
    closedir(d);
    return 0;
}

static void unlink_rank_file(int dfd, const char *name, void *arg)
{
    (void)arg;
    if (is_rank_name(name))
        (void)unlinkat(dfd, name, 0);   /* a link is removed itself: unlinkat never follows the name */
}

/* Removes the generation `name` of the folder dfd: a link of that name is removed itself; a folder
 * loses its rank files (and their temporary files) and then goes unless it holds anything else;
 * any other kind of file is left alone. */
static void remove_generation(int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if (S_ISLNK(st.st_mode)) {
        (void)unlinkat(dfd, name, 0);
        return;
    }
    if (!S_ISDIR(st.st_mode))
        return;
    int g = open_sub(dfd, name);   /* O_NOFOLLOW: replaced by a link since the fstatat, it fails */
    if (g < 0)
        return;
    (void)each_entry(g, unlink_rank_file, NULL);
    close(g);
    (void)unlinkat(dfd, name, AT_REMOVEDIR);   /* fails, leaving it, when it holds anything else */
}

static void max_gen_entry(int dfd, const char *name, void *arg)
{
    (void)dfd;
    int64_t x = gen_number(name), *g = arg;
    if (x > *g)
        *g = x;
}

/* The largest generation number among the folder's names (0: none). */
static int64_t max_generation(int dfd)
{
    int64_t g = 0;
    (void)each_entry(dfd, max_gen_entry, &g);
    return g;
}

/* Writes the bytes to tmp inside dfd (created, truncated, never through a link), fsyncs and
 * renames it to name (renameat: a link of that name is replaced itself). 0, or errno. With
 * half != 0 only the first half is written and nothing else happens (the injected failure). */
int ex_ckpt_write_at(int dfd, const char *tmp, const char *name, const void *a, size_t na, const void *b,
                     size_t nb, bool half)
{
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
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
    if (!err && renameat(dfd, tmp, dfd, name) != 0)
        err = errno;
    if (err)
        (void)unlinkat(dfd, tmp, 0);
    return err;
}

/* The manifest of dir: 1 and *m filled, 0 when there is none, or an RL_E* code (message in *e). */
static int read_manifest(const char *dir, struct ex_ckpt_manifest *m, struct rl_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" EX_CKPT_MANIFEST, dir);
    if (access(path, F_OK) != 0)
        return 0;
    char *text = NULL;
    size_t len = 0;
    int rc = rl_read_file(path, &text, &len, e);
    if (!rc)
        rc = ex_ckpt_manifest_parse(text, len, path, m, e);
    free(text);
    return rc ? rc : 1;
}

struct prune_arg {
    int64_t keep, named;   /* the generation just saved, the one the manifest names now */
};

static void prune_entry(int dfd, const char *name, void *arg)
{
    const struct prune_arg *p = arg;
    int64_t x = gen_number(name);
    if (x >= 0 && x != p->keep && x != p->named)
        remove_generation(dfd, name);
}

/* Step 5, under the folder's lock: every generation but `keep` and the one the manifest names
 * (read again here: a generation the manifest names is never removed; an unreadable manifest
 * removes nothing), the first format's flat files, a stale manifest tmp. */
void ex_ckpt_dir_prune(const char *dir, const struct ex_ckpt_dir *d, int64_t keep)
{
    const int dfd = d->dfd;
    struct ex_ckpt_manifest m;
    struct rl_err e2 = {0};
    if (read_manifest(dir, &m, &e2) != 1)
        return;
    struct prune_arg p = {keep, m.generation};
    (void)each_entry(dfd, prune_entry, &p);
    (void)each_entry(dfd, unlink_rank_file, NULL);
    (void)unlinkat(dfd, EX_CKPT_MANIFEST ".tmp", 0);
}

static void find_link(int dfd, const char *name, void *arg)
{
    char *found = arg;
    if (!found[0] && is_rank_name(name) && is_link_at(dfd, name))
        snprintf(found, 256, "%s", name);
}

/* RL_EINVAL naming the path when the generation gname of dfd (dir/gname), or a rank file in it, is
 * a symbolic link: a checkpoint is only what a save wrote. what: "save_dir" or "load_dir". */
static int refuse_links(int dfd, const char *dir, const char *gname, const char *what, struct rl_err *e)
{
    if (is_link_at(dfd, gname))
        return rl_errf(e, RL_EINVAL, "%s: %s/%s is a symbolic link; allowed: the generation folder a save wrote",
                       what, dir, gname);
    int g = open_sub(dfd, gname);
    if (g < 0)
        return 0;   /* missing: the caller says so where it matters */
    char found[256] = "";
    (void)each_entry(g, find_link, found);
    close(g);
    if (found[0])
        return rl_errf(e, RL_EINVAL, "%s: %s/%s/%s is a symbolic link; allowed: the rank file a save wrote", what, dir,
                       gname, found);
    return 0;
}

/* Rank 0, step 1: the folder, its lock, the next generation number, its folder. */
int ex_ckpt_dir_prepare(const char *dir, struct ex_ckpt_dir *s, int64_t *gen, struct rl_err *e)
{
    if (!dir[0])
        return rl_errf(e, RL_EINVAL, "save_dir: empty; allowed: a folder name");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return rl_errf(e, ex_ckpt_write_code(errno), "save_dir: cannot create %s: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return rl_errf(e, RL_EINVAL, "save_dir: %s is not a folder; allowed: a folder (created when missing)", dir);
    /* One save at a time: a second one exits at once (exit 3), naming the holder. */
    struct rl_err e2 = {0};
    int rc = rl_outdir_lock(dir, &s->lock_fd, &e2);
    if (rc)
        return rl_errf(e, rc, "save_dir: %s; nothing was written, %s keeps its previous checkpoint", e2.msg, dir);
    s->dfd = open_dir(dir);
    if (s->dfd < 0)
        return rl_errf(e, ex_ckpt_write_code(errno), "save_dir: cannot open %s: %s", dir, strerror(errno));
    int64_t g = max_generation(s->dfd);
    struct ex_ckpt_manifest m;
    rc = read_manifest(dir, &m, &e2);
    if (rc < 0)
        return rl_errf(e, RL_EINVAL, "save_dir: %s holds a manifest that is not a ratiolab checkpoint's (%s); "
                       "nothing was written", dir, e2.msg);
    if (rc == 1) {
        char gname[32];
        snprintf(gname, sizeof gname, EX_CKPT_GEN_FMT, (long long)m.generation);
        RL_TRY(refuse_links(s->dfd, dir, gname, "save_dir", e));
        g = m.generation > g ? m.generation : g;
    }
    if (g >= EX_CKPT_MAX_GENERATION)
        return rl_errf(e, RL_EINVAL, "save_dir: %s: generation %lld is the last one; allowed: a new folder", dir,
                       (long long)g);
    *gen = g + 1;
    char gname[32];
    snprintf(gname, sizeof gname, EX_CKPT_GEN_FMT, (long long)*gen);
    if (mkdirat(s->dfd, gname, 0755) != 0)
        return rl_errf(e, ex_ckpt_write_code(errno), "save_dir: cannot create %s/%s: %s", dir, gname, strerror(errno));
    return 0;
}

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a regular file";
}

/* Reads the whole regular file `name` of the folder dfd, of at most max_bytes, into *out
 * (malloc'd). Anything else (a link, a FIFO, a device, a directory) is refused at once without
 * blocking (O_NOFOLLOW, O_NONBLOCK, then fstat), and so is a file above the cap, before anything
 * is allocated. */
int ex_ckpt_read_at(int dfd, const char *name, int64_t max_bytes, char **out, size_t *len, struct rl_err *e)
{
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
    if (fd < 0 && errno == ELOOP && is_link_at(dfd, name))
        return rl_errf(e, RL_EINVAL, "a symbolic link; allowed: the rank file a save wrote");
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
 * the folder itself (the first format: no manifest); *gfd its folder, opened without following a
 * link (a generation that is a link is refused, naming it). */
int ex_ckpt_locate(const char *dir, char *gdir, size_t n, int *gfd, struct ex_ckpt_manifest *m, bool *have_manifest,
                   struct rl_err *e)
{
    struct rl_err e2 = {0};
    int rc = read_manifest(dir, m, &e2);
    if (rc < 0)
        return rl_errf(e, RL_EINVAL, "load_dir: %s", e2.msg);
    *have_manifest = rc == 1;
    if (!*have_manifest) {
        snprintf(gdir, n, "%s", dir);
        if ((*gfd = open_dir(dir)) < 0)
            return rl_errf(e, RL_EINVAL, "load_dir: %s/rank-00000.rlck: cannot read it (%s)", dir, strerror(errno));
        /* The first format kept the rank files in the folder itself; without them either the
         * folder is no checkpoint, which is what the message must say. */
        if (faccessat(*gfd, "rank-00000.rlck", F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
            close(*gfd);
            *gfd = -1;
            return rl_errf(e, RL_EINVAL, "load_dir: %s has no " EX_CKPT_MANIFEST " file (nor a rank-00000.rlck of "
                           "the first format): not a checkpoint folder; allowed: a folder a checkpoint save wrote",
                           dir);
        }
        return 0;
    }
    char gname[32];
    snprintf(gname, sizeof gname, EX_CKPT_GEN_FMT, (long long)m->generation);
    snprintf(gdir, n, "%s/%s", dir, gname);
    int dfd = open_dir(dir);
    if (dfd < 0)
        return rl_errf(e, RL_EINVAL, "load_dir: %s: cannot open it (%s)", dir, strerror(errno));
    if (is_link_at(dfd, gname)) {
        close(dfd);
        return rl_errf(e, RL_EINVAL, "load_dir: %s is a symbolic link; allowed: the generation folder a save wrote",
                       gdir);
    }
    *gfd = open_sub(dfd, gname);
    int err = errno;
    close(dfd);
    if (*gfd < 0)
        return rl_errf(e, RL_EINVAL, "load_dir: %s/rank-00000.rlck: cannot read it (%s)", gdir, strerror(err));
    return 0;
}

int ex_ckpt_dir_open_gen(const char *dir, struct ex_ckpt_dir *d, int64_t gen)
{
    char gname[32];
    snprintf(gname, sizeof gname, EX_CKPT_GEN_FMT, (long long)gen);
    if (d->dfd < 0 && (d->dfd = open_dir(dir)) < 0)
        return errno;
    if (d->gfd >= 0)
        close(d->gfd);
    if ((d->gfd = open_sub(d->dfd, gname)) < 0)
        return errno;
    return 0;
}

void ex_ckpt_dir_remove_gen(const struct ex_ckpt_dir *d, int64_t gen)
{
    char gname[32];
    snprintf(gname, sizeof gname, EX_CKPT_GEN_FMT, (long long)gen);
    if (d->dfd >= 0)
        remove_generation(d->dfd, gname);
}

int ex_ckpt_dir_switch(const struct ex_ckpt_dir *d, const struct ex_ckpt_manifest *m)
{
    char text[256];
    int len = ex_ckpt_manifest_format(m, text, sizeof text);
    int err = ex_ckpt_write_at(d->dfd, EX_CKPT_MANIFEST ".tmp", EX_CKPT_MANIFEST, text, (size_t)len, "", 0, false);
    if (!err)
        (void)fsync(d->dfd);
    return err;
}

void ex_ckpt_dir_close(struct ex_ckpt_dir *d)
{
    if (d->gfd >= 0)
        close(d->gfd);
    if (d->dfd >= 0)
        close(d->dfd);
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    d->gfd = d->dfd = d->lock_fd = -1;
}
