/* sim/hw.h — hardware profiles as the simulator uses them. The profile itself (struct
 * hw_profile, its keys, bounds, reader and writer) is hw/hw.h's; here a profile is loaded by name
 * or path, its first-touch model resolved, and a run's share of the host's cores taken. */
#ifndef RL_SIM_HW_H
#define RL_SIM_HW_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "hw/hw.h"

/* name_or_path: a profile name looked up as <catalog_dir>/hardware/<name>.json, or a path (it
 * contains '/' or ends in ".json"). */
int sim_hw_load(struct hw_profile *hw, const char *catalog_dir, const char *name_or_path,
                struct rl_err *e);
/* Parses profile text (hw_parse) and resolves its first-touch model (sim_hw_host_resolve);
 * `what` names it in errors. */
int sim_hw_parse(struct hw_profile *hw, const char *text, const char *what, struct rl_err *e);
/* The host cores a run of `ranks` ranks (one per GPU, GPUs 0 .. ranks - 1) with `threads` host
 * Adam threads each actually uses: each socket keeps threads x its ranks cores (at least 1), so
 * the prediction's CPU Adam runs on the cores the run gives it, not on the whole socket. */
void sim_hw_use_rank_threads(struct hw_profile *hw, int ranks, int threads);
/* sim/hw_host.c: the first-touch model. Resolves the THP mode, the page size and the per-page
 * figures after parsing and sets host_fault_gbps_per_thread to page / time per page (unless the
 * profile measured that rate at its own page size). Errors name the field and what is allowed. */
int sim_hw_host_resolve(struct hw_profile *hw, const char *what, struct rl_err *e);
/* Overrides the THP mode ("always", "madvise", "never"): the page size and the fault rate follow. */
int sim_hw_set_thp(struct hw_profile *hw, const char *mode, struct rl_err *e);
/* Faults of a fresh mapping of `bytes` (whole pages of host_page_bytes). */
int64_t sim_hw_faults(const struct hw_profile *hw, int64_t bytes);
/* Time one thread takes to first-touch a fresh mapping of `bytes`: faults x time per page, ns. */
double sim_hw_fault_ns(const struct hw_profile *hw, int64_t bytes);
/* A pageable copy's rate, GB/s: CUDA stages it through pinned bounce buffers, the DMA on the link
 * and the calling thread's memcpy between the bounce buffer and the user's pages, pipelined, so the
 * slower of the pinned link rate and one thread's memcpy bounds it. Without a memcpy figure
 * (host.memcpy_gbps_per_thread 0) the profile's gpu.*_pageable_gbps. */
double sim_hw_pageable_gbps(const struct hw_profile *hw, bool h2d);

/* Names of the profiles in <catalog_dir>/hardware, sorted; free each and the array. */
int sim_hw_list(const char *catalog_dir, char ***names, int *n, struct rl_err *e);

#endif
