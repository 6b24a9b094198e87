/* calib/figure.c — a measured figure from its repeats (calib.h), used by every measuring file of
 * calib/ and calling none of them. */
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
}
