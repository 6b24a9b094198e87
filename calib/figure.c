/* calib/figure.c — a measured figure from its repeats (calib.h), used by every measuring file of
 * calib/ and calling none of them. */
#include <stdlib.h>

#include "calib/calib.h"

void calib_figure_of(struct calib_figure *f, const double *v, int n)
{
    f->median = rl_median(v, n);
    f->min = f->max = v[0];
    for (int i = 1; i < n; i++) {
        f->min = v[i] < f->min ? v[i] : f->min;
        f->max = v[i] > f->max ? v[i] : f->max;
    }
    f->repeats = n;
    f->best = 0;
}

/* Thread i's fastest time over repeats warmup..n-1 of sec (t threads per repeat). */
static double fastest(const double *sec, int n, int t, int warmup, int i)
{
    double m = sec[warmup * t + i];
    for (int r = warmup + 1; r < n; r++)
        m = sec[r * t + i] < m ? sec[r * t + i] : m;
    return m;
}

/* units over (s - b), with s - b bounded below by 1e-3 s. */
static double rate(double units, double s, double b)
{
    double d = s - b;
    return units / (d < 1e-3 * s ? 1e-3 * s : d);
}

int calib_figure_best_of(struct calib_figure *f, const double *sec, const double *base, int n, int t, int warmup,
                         double units)
{
    if (t < 1 || warmup < 0 || n - warmup < 1)
        return -1;
    for (int k = warmup * t; k < n * t; k++)
        if (!(sec[k] > 0) || (base && !(base[k] > 0)))
            return -1;
    int m = n - warmup;
    double *v = malloc(sizeof *v * (size_t)m);
    double *b = calloc((size_t)t, sizeof *b);
    if (!v || !b) {
        free(v);
        free(b);
        return -1;
    }
    double best = 0;
    for (int i = 0; i < t; i++) {
        b[i] = base ? fastest(base, n, t, warmup, i) : 0;
        best += rate(units, fastest(sec, n, t, warmup, i), b[i]);
    }
    for (int r = warmup; r < n; r++) {
        v[r - warmup] = 0;
        for (int i = 0; i < t; i++)
            v[r - warmup] += rate(units, sec[r * t + i], b[i]);
    }
    calib_figure_of(f, v, m);
    f->best = best;
    free(v);
    free(b);
    return 0;
}
