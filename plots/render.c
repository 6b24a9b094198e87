/* plots/render.c — a figure drawn from its FILE.gp (plot.h, plot_render): gnuplot run in the
 * script's folder onto a temporary name (the figure's own temporary file, or a scratch file beside
 * the script when the figure is written in place), the PDF's date and the SVG's size made stable,
 * then renamed into place, so a failed run leaves no figure. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>   /* PATH_MAX */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plots/plot.h"

const char *plot_find_gnuplot(char *buf, size_t n)
{
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *c = strchr(path, ':');
        size_t len = c ? (size_t)(c - path) : strlen(path);
        if (len && snprintf(buf, n, "%.*s/gnuplot", (int)len, path) < (int)n && access(buf, X_OK) == 0)
            return buf;
        path = c ? c + 1 : NULL;
    }
    return NULL;
}

void plot_split_dir(const char *path, char *dir, size_t n, const char **base)
{
    const char *s = strrchr(path, '/');
    if (!s) {
        snprintf(dir, n, ".");
        *base = path;
    } else {
        snprintf(dir, n, "%.*s", s == path ? 1 : (int)(s - path), path);
        *base = s + 1;
    }
}

/* Runs `gnuplot -e "outfile='tmp'" script` in the script's folder; gnuplot's messages are kept
 * and returned in err_text (shown only when it fails). */
static int run_gnuplot(const char *gnuplot, const char *gp_path, const char *tmp_path, char *err_text, size_t n,
                       struct rl_err *e)
{
    char dir[1024], expr[4200];
    const char *gp_base, *tmp_base;
    plot_split_dir(gp_path, dir, sizeof dir, &gp_base);
    char tdir[1024], tabs[PATH_MAX + 512];
    plot_split_dir(tmp_path, tdir, sizeof tdir, &tmp_base);
    /* gnuplot runs in the script's folder; the temporary figure may lie elsewhere (beside the
     * target of a link), so it gets the folder's absolute path. */
    char *rdir = realpath(tdir, NULL);
    if (!rdir)
        return rl_errf(e, RL_EIO, "out: cannot resolve the folder %s (%s)", tdir, strerror(errno));
    snprintf(tabs, sizeof tabs, "%s/%s", strcmp(rdir, "/") ? rdir : "", tmp_base);
    free(rdir);
    /* The temporary name holds the figure's name: it goes in quoted, as data, like every string. */
    FILE *mf = fmemopen(expr, sizeof expr, "w");
    if (!mf)
        return rl_errf(e, RL_EENV, "plot: fmemopen failed (%s)", strerror(errno));
    fputs("outfile=", mf);
    int qrc = plot_gp_quote(mf, "out", tabs, e);
    bool full = ftell(mf) >= (long)sizeof expr - 1;
    fclose(mf);
    if (qrc)
        return qrc;
    if (full)
        return rl_errf(e, RL_EINVAL, "out: file name of %zu characters; too long for gnuplot's command line",
                       strlen(tabs));
    int pfd[2];
    if (pipe(pfd) != 0)
        return rl_errf(e, RL_EENV, "plot: pipe failed (%s)", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return rl_errf(e, RL_EENV, "plot: fork failed (%s)", strerror(errno));
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
        }
        dup2(pfd[1], 2);
        close(pfd[0]);
        if (chdir(dir) != 0)
            _exit(126);
        execl(gnuplot, "gnuplot", "-e", expr, gp_base, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    size_t got = 0;
    ssize_t r;
    char sink[512];
    while ((r = read(pfd[0], got + 1 < n ? err_text + got : sink, got + 1 < n ? n - 1 - got : sizeof sink)) > 0 ||
           (r < 0 && errno == EINTR))
        if (r > 0 && got + 1 < n)
            got += (size_t)r;
    err_text[got] = 0;
    close(pfd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *nl = strchr(err_text, '\n');
        while (nl && nl[1] && (nl == err_text || nl[-1] == '\n'))
            nl = strchr(nl + 1, '\n');
        return rl_errf(e, RL_EENV, "plot: gnuplot failed on %s (exit %d)%s%s", gp_path,
                       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), got ? ": " : "",
                       got ? err_text : "");
    }
    struct stat st;
    if (stat(tmp_path, &st) != 0 || st.st_size == 0)
        return rl_errf(e, RL_EENV, "plot: gnuplot wrote no figure from %s", gp_path);
    return 0;
}


int plot_render(const char *gnuplot, const char *out, enum plot_format fmt, const struct plot_files *files,
                struct rl_err *e)
{
    int rc;
    struct rl_outfile fig, draw = {0};
    if ((rc = rl_outfile_open(&fig, out, e)))
        return rc;
    /* gnuplot writes a temporary file itself: the figure's own, or, when the figure is written in
     * place (a device, a FIFO, standard output), a scratch file beside the script whose bytes are
     * then copied there. */
    if (!fig.tmp) {
        char scratch[sizeof files->gp + 16];
        snprintf(scratch, sizeof scratch, "%s.figure", files->gp);
        if ((rc = rl_outfile_open(&draw, scratch, e)) || !draw.tmp) {
            if (!rc)
                rc = rl_errf(e, RL_EIO, "out %s: no scratch file for gnuplot beside %s", out, files->gp);
            rl_outfile_abort(&draw);
            rl_outfile_abort(&fig);
            return rc;
        }
        fclose(draw.fp);
        draw.fp = NULL;
    } else {
        fclose(fig.fp);
        fig.fp = NULL;
    }
    const char *drawn = fig.tmp ? fig.tmp : draw.tmp;
    char err_text[2048];
    rc = run_gnuplot(gnuplot, files->gp, drawn, err_text, sizeof err_text, e);
    if (!rc && fmt == PLOT_PDF)
        rc = plot_pdf_stable_date(drawn, e);
    if (!rc && fmt == PLOT_SVG)
        rc = plot_svg_physical_size(drawn, e);
    if (!rc && !fig.tmp) {   /* in place: copy the drawn bytes */
        char *bytes;
        size_t len;
        if (!(rc = rl_read_bytes(drawn, &bytes, &len, e))) {
            if (fwrite(bytes, 1, len, fig.fp) != len)
                rc = rl_errf(e, RL_EENV, "out %s: write failed (%s)", out, strerror(errno));
            free(bytes);
        }
    }
    rl_outfile_abort(&draw);
    if (rc) {
        rl_outfile_abort(&fig);
        return rc;
    }
    /* rl_outfile_commit closes fp; hand it a stream on the finished file. */
    if (!fig.fp && !(fig.fp = fopen(fig.tmp, "rb"))) {
        rc = rl_errf(e, RL_EIO, "out %s: cannot reopen the figure (%s)", out, strerror(errno));
        rl_outfile_abort(&fig);
        return rc;
    }
    return rl_outfile_commit(&fig, e);
}
