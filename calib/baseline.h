/* calib/baseline.h — a rank's host baseline (hw/hw.h `node.host_baseline_bytes_per_rank`: the
 * host memory of one training process beyond its model states) taken from the processes of a real
 * run that `ratiolab monitor --csv` followed, and the profile that carries it.
 *
 * The figure of one rank is its peak resident set: the largest, over the samples, of the VmRSS of
 * the processes that carry that rank (RANK or OMPI_COMM_WORLD_RANK in their environment: the rank's
 * process and the data-loader workers it forks, which inherit it) summed at one sample, or the
 * largest VmHWM of one of them when that is larger (a peak between samples); less the host tensors
 * the plan's ledger puts on a rank for the run's model and DeepSpeed config. The baseline is the
 * largest such figure over the ranks. It is an upper bound where a rank and its forked workers
 * share pages (RSS counts a shared page in each process), and it undercounts when the peak came
 * before the offloaded optimizer existed (e.g. a model loaded on the CPU whole before
 * ZeRO partitions it) by up to the tensors subtracted. */
#ifndef RL_CALIB_BASELINE_H
#define RL_CALIB_BASELINE_H

#include <stdint.h>

#include "common/rl.h"

/* One rank of a monitored run (rank -1: a run whose processes carry no rank, stood for by its
 * largest process). */
struct calib_mon_rank {
    int rank;                      /* the rank, or -1 */
    int procs;                     /* its processes */
    int64_t peak_rss_bytes;        /* its peak resident set, as above */
};

struct calib_baseline {
    int64_t bytes_per_rank;        /* the baseline: the largest over ranks of rss_bytes - tensor_bytes */
    int rank;                      /* the rank it comes from (-1: the run's processes carry no rank) */
    int n_ranks;                   /* ranks seen */
    int n_procs;                   /* processes counted for that rank */
    int64_t rss_bytes;             /* its peak resident set */
    int64_t tensor_bytes;          /* the ledger's host tensors per rank, subtracted */
    int64_t min_bytes_per_rank;    /* the smallest rank's figure (with bytes_per_rank: the spread) */
};

/* The baseline of the run whose ranks are r[0..n), read from the file csv (named in messages).
 * Returns RL_EINVAL naming the field "monitor_csv" and the file when there is no rank, or when a rank's peak is below the tensors (the CSV is
 * then not a run of that model and config, or its samples missed the run). */
int calib_baseline_of(const struct calib_mon_rank *r, int n, int64_t tensor_bytes_per_rank, const char *csv,
                      struct calib_baseline *b, struct rl_err *e);

/* The profile's source text for the figure: where it was taken from (csv, a file name, printed as
 * data) and how, the tensors' description (what, e.g. "llama3.1-8b, ratio 0.30, ...") and the
 * caveats above. Returns buf. */
const char *calib_baseline_source(const struct calib_baseline *b, const char *csv, const char *what,
                                  char *buf, size_t n);

/* base_text (a profile, sim/README.md format) renamed to name, with node.host_baseline_bytes_per_rank
 * set to b->bytes_per_rank and sources["node.host_baseline_bytes_per_rank"] to source; everything
 * else as in the base. *out is malloc'd. RL_EINVAL when base_text is not a profile object. */
int calib_baseline_profile(const char *base_text, const char *name, const struct calib_baseline *b,
                           const char *source, char **out, struct rl_err *e);

#endif
