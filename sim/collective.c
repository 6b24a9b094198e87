/* sim/collective.c — see sim/collective.h. */
#include "sim/collective.h"

/* floor(log2 n), n >= 1 (NCCL's log2i). */
static int log2_floor(int n)
{
    int l = 0;
    while (n >>= 1)
        l++;
    return l;
}

double sim_coll_busbw_gbps(const struct hw_profile *hw)
{
    return hw->net_inter_busbw_gbps > 0 ? hw->net_inter_busbw_gbps : hw->net_gbps;
}

const char *sim_coll_algo_name(enum sim_coll_algo a)
{
    return a == SIM_COLL_TREE ? "tree" : "ring";
}

int sim_coll_cost(const struct hw_profile *hw, enum sim_coll_kind kind, double bytes, int n, int nodes,
                  struct sim_coll_cost *out)
{
    if (n < 2 || nodes < 1 || nodes > n || n % nodes != 0 || bytes < 0)
        return RL_EINVAL;
    int local = n / nodes;
    bool ar = kind == SIM_COLL_AR;
    double bw = sim_coll_busbw_gbps(hw) * 1e3;   /* bytes per us */
    struct sim_coll_cost ring = {
        .algo = SIM_COLL_RING,
        .steps = ar ? 2 * (n - 1) : n - 1,
        .inter_steps = nodes == 1 ? 0 : ar ? 2 * (nodes - 1) : nodes - 1,
        .bus_bytes = bytes * (ar ? 2.0 : 1.0) * (n - 1) / n,
    };
    ring.latency_us = hw->lat_coll_inter_us + (ring.steps - ring.inter_steps) * hw->lat_ring_step_intra_us +
                      ring.inter_steps * hw->lat_ring_step_inter_us;
    ring.time_us = ring.latency_us + ring.bus_bytes / bw;
    *out = ring;
    if (!ar || nodes == 1)
        return 0;
    /* The double binary tree: up to the node's first rank through its local chain, up and down
     * log2(nodes) levels across nodes, and back down the chain. */
    struct sim_coll_cost tree = {
        .algo = SIM_COLL_TREE,
        .steps = 2 * (local - 1 + log2_floor(nodes)),
        .inter_steps = 2 * log2_floor(nodes),
        .bus_bytes = 2.0 * bytes,
    };
    tree.latency_us = hw->lat_coll_inter_us + (tree.steps - tree.inter_steps) * hw->lat_tree_step_intra_us +
                      tree.inter_steps * hw->lat_tree_step_inter_us;
    tree.time_us = tree.latency_us + tree.bus_bytes / bw;
    if (tree.time_us <= ring.time_us)   /* a tie goes to the tree: NCCL tries it first and keeps the first minimum */
        *out = tree;
    return 0;
}
