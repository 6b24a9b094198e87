/* tests/progs/memhog.c — allocates and touches known amounts of memory in phases, so the monitor
 * tests can compare what `ratiolab monitor` reports with what was allocated.
 *
 * usage: memhog PHASE...   (phases run in order; sizes in MiB, times in ms)
 *   idle:MS                 sleep (marked like the others: a baseline for the next phase)
 *   anon:MIB:MS             private anonymous memory, every page written, held, unmapped
 *   file:MIB:MS:DIR         a file of MIB written in DIR, mapped shared read-only, every page read
 *   shmem:MIB:MS            a memfd (shared memory), mapped, every page written
 *   lock:MIB:MS             anonymous memory locked with mlock (VmLck)
 *   pin:MIB:MS              a buffer registered with io_uring (the kernel pins it: VmPin)
 *   tree:N:MIB:MS           N children, each with one grandchild; all 2N touch MIB anonymous
 * Prints "PID <pid>" first, then "PHASE <name> begin" / "PHASE <name> end" around each hold (on
 * stdout, flushed; the memory is freed after "end" and the next phase starts GAP_MS later), and "SKIP <name>: <reason>" when the kernel refuses (mlock limits, io_uring
 * disabled). Memory is touched through a volatile pointer in a function that is not
 * instrumented, so a sanitizer build touches no shadow memory for it.
 *
 * MEMHOG_CSV=FILE: a monitor CSV being written (a copy of `ratiolab monitor --csv FIFO`): every
 * hold (and every tree process) lasts MS and then until FILE has a row of this process whose
 * column for the phase (anon_bytes, file_bytes, shmem_bytes, locked_bytes, pinned_bytes) reaches
 * the phase's size, so the monitor has sampled it however loaded the machine is; at most
 * SEEN_DEADLINE_S seconds ("MEMHOG not seen ..." on stderr then). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024L * 1024L)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

__attribute__((no_sanitize("address"))) static void touch(char *p, long bytes, int write)
{
    volatile char *v = p;
    long page = sysconf(_SC_PAGESIZE);
    char sink = 0;
    for (long i = 0; i < bytes; i += page) {
        if (write)
            v[i] = (char)(i / page + 1);
        else
            sink ^= v[i];
    }
    (void)sink;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

#define SEEN_DEADLINE_S 120

/* With MEMHOG_CSV: waits until that CSV has a row of this process whose `column` is at least
 * `bytes` (column NULL: returns at once). */
static void wait_seen(const char *column, long bytes)
{
    const char *path = getenv("MEMHOG_CSV");
    if (!path || !*path || !column)
        return;
    const long pid = (long)getpid();
    for (long waited = 0; waited < SEEN_DEADLINE_S * 1000L; waited += 10) {
        FILE *f = fopen(path, "r");
        char line[1024];
        int pid_col = -1, col = -1;
        bool seen = false;
        while (f && !seen && fgets(line, sizeof line, f)) {
            if (line[0] == '#' || !strchr(line, '\n'))
                continue;   /* a comment, or a row not written whole yet */
            char *save = NULL, *tok = strtok_r(line, ",\n", &save);
            if (pid_col < 0 && tok && strcmp(tok, "t_ns") == 0) {
                for (int i = 0; tok; i++, tok = strtok_r(NULL, ",\n", &save)) {
                    pid_col = strcmp(tok, "pid") == 0 ? i : pid_col;
                    col = strcmp(tok, column) == 0 ? i : col;
                }
                continue;
            }
            /* strtok_r skips empty fields; the columns before the ones read here are never empty */
            long p = -1, v = -1;
            for (int i = 0; tok && pid_col >= 0 && col >= 0; i++, tok = strtok_r(NULL, ",\n", &save)) {
                if (i == pid_col)
                    p = atol(tok);
                if (i == col)
                    v = atol(tok);
            }
            seen = p == pid && v >= bytes;
        }
        if (f)
            fclose(f);
        if (seen)
            return;
        sleep_ms(10);
    }
    fprintf(stderr, "MEMHOG not seen: pid %ld, %s >= %ld, in %s within %d s\n", pid, column, bytes, path,
            SEEN_DEADLINE_S);
}

/* Holds a phase between its marks: ms, then until the monitor has seen `column` at `bytes`
 * (MEMHOG_CSV). The caller frees the memory after "end"; the pause before the next phase
 * allocates gives the monitor samples of the freed state (a baseline) even when it reads the
 * "end" line a little late. */
#define GAP_MS 100

static void hold(const char *name, long ms, const char *column, long bytes)
{
    say("PHASE %s begin", name);
    sleep_ms(ms);
    wait_seen(column, bytes);
    say("PHASE %s end", name);
}

static char *map_anon(long bytes)
{
    void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("memhog: mmap");
        exit(1);
    }
    return p;
}

/* io_uring without liburing: only setup and buffer registration are needed. */
struct uring_params {
    uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd;
    uint32_t resv[3];
    uint32_t sq_off[10];
    uint32_t cq_off[10];
};

static void phase_pin(long mib, long ms)
{
#ifdef SYS_io_uring_setup
    struct uring_params prm;
    memset(&prm, 0, sizeof prm);
    int fd = (int)syscall(SYS_io_uring_setup, 4, &prm);
    if (fd < 0) {
        printf("SKIP pin: io_uring_setup: %s\n", strerror(errno));
        fflush(stdout);
        return;
    }
    long bytes = mib * MIB;
    char *p = map_anon(bytes);
    touch(p, bytes, 1);
    struct iovec {
        void *base;
        size_t len;
    } iov = {p, (size_t)bytes};
    if (syscall(SYS_io_uring_register, fd, 0 /* IORING_REGISTER_BUFFERS */, &iov, 1) != 0) {
        printf("SKIP pin: io_uring_register: %s\n", strerror(errno));
        fflush(stdout);
    } else {
        hold("pin", ms, "pinned_bytes", bytes);
    }
    close(fd);
    munmap(p, (size_t)bytes);
#else
    (void)mib;
    (void)ms;
    printf("SKIP pin: no io_uring on this system\n");
    fflush(stdout);
#endif
}

int main(int argc, char **argv)
{
    /* A background shell starts us with SIGINT ignored; the Ctrl-C test needs the default. */
    signal(SIGINT, SIG_DFL);
    printf("PID %d\n", (int)getpid());
    fflush(stdout);
    for (int i = 1; i < argc; i++) {
        char name[16] = "";
        long a = 0, b = 0, c = 0;
        char dir[512] = ".";
        char *colon = strchr(argv[i], ':');
        size_t nl = colon ? (size_t)(colon - argv[i]) : strlen(argv[i]);
        if (nl >= sizeof name)
            nl = sizeof name - 1;
        memcpy(name, argv[i], nl);
        name[nl] = 0;
        if (colon)
            sscanf(colon + 1, "%ld:%ld:%ld", &a, &b, &c);
        if (strcmp(name, "idle") == 0) {
            hold(name, a, NULL, 0);
        } else if (strcmp(name, "anon") == 0) {
            char *p = map_anon(a * MIB);
            touch(p, a * MIB, 1);
            hold(name, b, "anon_bytes", a * MIB);
            munmap(p, (size_t)(a * MIB));
        } else if (strcmp(name, "file") == 0) {
            const char *d = strchr(strchr(colon + 1, ':') + 1, ':');
            snprintf(dir, sizeof dir, "%s", d ? d + 1 : ".");
            char path[600];
            snprintf(path, sizeof path, "%s/memhog.%d.dat", dir, (int)getpid());
            int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
            if (fd < 0) {
                perror("memhog: file");
                return 1;
            }
            char buf[65536];
            memset(buf, 'x', sizeof buf);
            for (long w = 0; w < a * MIB; w += (long)sizeof buf)
                if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
                    perror("memhog: write");
                    return 1;
                }
            char *p = mmap(NULL, (size_t)(a * MIB), PROT_READ, MAP_SHARED, fd, 0);
            if (p == MAP_FAILED) {
                perror("memhog: mmap file");
                return 1;
            }
            touch(p, a * MIB, 0);
            hold(name, b, "file_bytes", a * MIB);
            munmap(p, (size_t)(a * MIB));
            close(fd);
            unlink(path);
        } else if (strcmp(name, "shmem") == 0) {
            int fd = (int)syscall(SYS_memfd_create, "memhog", 0);
            if (fd < 0 || ftruncate(fd, a * MIB) != 0) {
                perror("memhog: memfd");
                return 1;
            }
            char *p = mmap(NULL, (size_t)(a * MIB), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p == MAP_FAILED) {
                perror("memhog: mmap memfd");
                return 1;
            }
            touch(p, a * MIB, 1);
            hold(name, b, "shmem_bytes", a * MIB);
            munmap(p, (size_t)(a * MIB));
            close(fd);
        } else if (strcmp(name, "lock") == 0) {
            char *p = map_anon(a * MIB);
            /* The raw system call: sanitizer runtimes replace mlock() with a no-op. */
            if (syscall(SYS_mlock, p, (size_t)(a * MIB)) != 0) {
                printf("SKIP lock: mlock: %s\n", strerror(errno));
                fflush(stdout);
            } else {
                touch(p, a * MIB, 1);
                hold(name, b, "locked_bytes", a * MIB);
                syscall(SYS_munlock, p, (size_t)(a * MIB));
            }
            munmap(p, (size_t)(a * MIB));
        } else if (strcmp(name, "pin") == 0) {
            phase_pin(a, b);
        } else if (strcmp(name, "tree") == 0) {
            say("PHASE %s begin", name);
            pid_t kids[64];
            int n = a > 64 ? 64 : (int)a;
            for (int k = 0; k < n; k++) {
                kids[k] = fork();
                if (kids[k] == 0) {
                    pid_t g = fork();   /* the grandchild */
                    char *p = map_anon(b * MIB);
                    touch(p, b * MIB, 1);
                    sleep_ms(c);
                    wait_seen("anon_bytes", b * MIB);
                    if (g > 0)
                        waitpid(g, NULL, 0);
                    _exit(0);
                }
            }
            for (int k = 0; k < n; k++)
                if (kids[k] > 0)
                    waitpid(kids[k], NULL, 0);
            say("PHASE %s end", name);
        } else {
            fprintf(stderr, "memhog: unknown phase '%s'\n", argv[i]);
            return 2;
        }
        sleep_ms(GAP_MS);
    }
    /* _exit: a sanitizer build's leak checker would otherwise start a helper task at exit,
     * which the monitor would rightly follow as one more process of the tree. */
    fflush(stdout);
    _exit(0);
}
