/* sim/collective.h — NCCL's collectives across nodes as algorithms (sim/README.md "Collectives
 * across nodes"): a ring or a tree, a latency per step on the link the step crosses, and the bus
 * bytes at the profile's effective inter-node bus bandwidth. The step counts and the choice between
 * ring and tree follow NCCL's own cost model (src/graph/tuning.cc, ncclTopoTuneModel and
 * ncclTopoGetAlgoTime); the per-step latencies are profile figures (latency_us.nccl_*) whose
 * defaults are that file's Simple-protocol hwLat entries. */
#ifndef RL_SIM_COLLECTIVE_H
#define RL_SIM_COLLECTIVE_H

#include "sim/hw.h"

/* The collectives ZeRO-3 and TP issue. */
enum sim_coll_kind { SIM_COLL_AG, SIM_COLL_RS, SIM_COLL_AR };
/* NCCL's algorithms for them: all-gather and reduce-scatter have only the ring; all-reduce has
 * both, and NCCL takes the one with the smaller predicted time. */
enum sim_coll_algo { SIM_COLL_RING, SIM_COLL_TREE };

/* One collective's cost as the algorithm sees it. */
struct sim_coll_cost {
    enum sim_coll_algo algo;   /* the algorithm taken */
    int steps;                 /* its steps: ring n - 1 (AG, RS) or 2 (n - 1) (AR); tree
                                  2 (local - 1 + log2 nodes) */
    int inter_steps;           /* of those, the steps that cross nodes: ring nodes - 1 (AG, RS) or
                                  2 (nodes - 1) (AR); tree 2 log2 nodes */
    double bus_bytes;          /* bytes each rank moves: ring (n - 1) / n x bytes (AG, RS) or
                                  2 (n - 1) / n x bytes (AR); tree 2 x bytes (NCCL's tree algorithm
                                  bandwidth is half its bus bandwidth) */
    double latency_us;         /* latency_us.collective_inter (the collective's launch and base
                                  latency) + every step's latency on the link it crosses, us */
    double time_us;            /* latency_us + bus_bytes at network.inter_busbw_gbps, us: what NCCL
                                  compares to choose the algorithm, and the time of a collective
                                  alone on the network */
};

/* The cost of one collective over `bytes` (the full array, nccl-tests convention) among n ranks
 * on `nodes` nodes, n / nodes on each (n > 1, 1 <= nodes <= n; n a multiple of nodes). A ring's
 * steps each take the latency of the slowest link they cross; the tree is considered for an
 * all-reduce across nodes only. Returns 0, or RL_EINVAL on a group that is not one. */
int sim_coll_cost(const struct hw_profile *hw, enum sim_coll_kind kind, double bytes, int n, int nodes,
                  struct sim_coll_cost *out);
/* The bus bandwidth of a collective spanning nodes, per node, GB/s: network.inter_busbw_gbps, or
 * the line rate network.node_gbps when the profile leaves it out. */
double sim_coll_busbw_gbps(const struct hw_profile *hw);
/* The name of an algorithm ("ring", "tree"). */
const char *sim_coll_algo_name(enum sim_coll_algo a);

#endif
