/* traces/layout.h — where things go in a ratiolab trace, shared by the simulator, the executor and
 * the monitor so their traces lay over each other in Perfetto:
 *   process TRACE_PID_RANK(g)     GPU rank g of the node: one thread per stream (enum trace_tid);
 *   process TRACE_PID_SOCKET(k)   host socket k: thread TRACE_TID_POOL(g) is rank g's CPU Adam pool;
 *   process TRACE_PID_LINKS       links and shared resources: one load counter per resource, named
 *                                 by the resource ("gpu0.pcie.h2d", "socket1.dram", ...).
 * Counters: TRACE_COUNTER_GPU_MEMORY under a rank, one series per source (TRACE_SERIES_*). */
#ifndef RL_TRACES_LAYOUT_H
#define RL_TRACES_LAYOUT_H

#define TRACE_PID_RANK(g) (1 + (g))       /* GPU rank g of the node (g < 99) */
#define TRACE_PID_SOCKET(k) (100 + (k))   /* host socket k */
#define TRACE_PID_LINKS 200               /* link and resource load counters */

/* Threads of a rank's process: its streams and copy engines. */
enum trace_tid {
    TRACE_TID_COMPUTE,    /* compute stream: forward, backward, TP all-reduce, GPU Adam */
    TRACE_TID_GATHER,     /* NCCL stream: parameter all-gather */
    TRACE_TID_REDUCE,     /* NCCL reduction stream: reduce-scatter */
    TRACE_TID_D2H,        /* copy engine device to host */
    TRACE_TID_H2D,        /* copy engine host to device */
    TRACE_TID_CPU_ADAM,   /* the rank's CPU Adam threads: drawn under its socket, TRACE_TID_POOL */
    TRACE_TID_BUBBLE,     /* pipeline bubble */
    TRACE_TID_HOST,       /* the rank's host thread: blocking copies, host casts, syncs */
    TRACE_TID_COUNT
};
/* Thread of rank g's CPU Adam pool under its socket's process. */
#define TRACE_TID_POOL(g) (g)

/* The thread's name ("compute stream", "copy engine D2H", ...); "?" outside the enum. */
const char *trace_tid_name(int tid);

#define TRACE_COUNTER_GPU_MEMORY "GPU memory (bytes)"   /* per rank, bytes */
#define TRACE_SERIES_PREDICTED "predicted"              /* the simulator's series */
#define TRACE_SERIES_MEASURED "measured"                /* an executor's or monitor's series */

#endif
