/* traces/layout.c — names of the trace layout's threads. */
#include "traces/layout.h"

#include "common/rl.h"   /* RL_COUNT */

static const char *const tid_names[] = {
    "compute stream", "NCCL all-gather stream", "NCCL reduce-scatter stream", "copy engine D2H",
    "copy engine H2D", "CPU Adam", "pipeline bubble", "host thread"};
_Static_assert(RL_COUNT(tid_names) == TRACE_TID_COUNT, "a name per thread id");

const char *trace_tid_name(int tid) { return tid >= 0 && tid < TRACE_TID_COUNT ? tid_names[tid] : "?"; }
