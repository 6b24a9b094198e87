/* tests/sim_tiny.h — what the simulator's hand-computed tests share: a tiny node with round rates
 * and no latencies, so every piece's time is bytes / rate, and the simulator's rounding of a
 * time to whole nanoseconds. */
#ifndef RL_TESTS_SIM_TINY_H
#define RL_TESTS_SIM_TINY_H

#include <stdint.h>

#include "sim/hw.h"

/* dgx1-v100 cut down to one GPU on one socket of 4 cores: pinned copies 20 GB/s, pageable 10,
 * HBM 1000 GB/s, DRAM 100 GB/s, CPU Adam 1e9 elements/s per core, first touch 1 GB/s per thread
 * (2 per socket), host memcpy 5 GB/s and casts 1e9 elements/s per thread; no latencies. */
struct hw_profile tu_sim_tiny_hw(void);

/* ceil(ns) with the simulator's convention: within 1e-6 above an integer counts as it. */
int64_t tu_ceil_ns(long double ns);

#endif
