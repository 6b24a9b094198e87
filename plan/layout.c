/* plan/layout.c — parallel layout: world = tp x pp x dp = nodes x gpus_per_node. Messages name the
 * fields (tp, pp, dp, gpus for the world size, nodes, gpus_per_node, rank). */
#include "plan/plan.h"

#define MAX_RANKS (1 << 20)

int plan_layout_resolve(struct plan_layout *l, struct rl_err *e)
{
    const struct { const char *name; int v; } f[] = {
        {"tp", l->tp}, {"pp", l->pp}, {"dp", l->dp}, {"gpus", l->world},
        {"nodes", l->nodes}, {"gpus_per_node", l->gpus_per_node},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v > MAX_RANKS)
            return rl_errf(e, RL_EINVAL, "%s: %d is too large; allowed 1..%d", f[i].name, f[i].v, MAX_RANKS);
    if (l->tp <= 0)
        l->tp = 1;
    if (l->pp <= 0)
        l->pp = 1;
    int64_t mp = (int64_t)l->tp * l->pp;
    if (mp > MAX_RANKS)
        return rl_errf(e, RL_EINVAL, "tp x pp: %lld is too large; allowed up to %d", (long long)mp, MAX_RANKS);
    if (l->world <= 0 && l->nodes > 0 && l->gpus_per_node > 0) {
        int64_t w = (int64_t)l->nodes * l->gpus_per_node;
        if (w > MAX_RANKS)
            return rl_errf(e, RL_EINVAL, "nodes x gpus_per_node: %lld ranks is too large; allowed up to %d",
                           (long long)w, MAX_RANKS);
        l->world = (int)w;
    }
    if (l->world <= 0) {
        int64_t w = mp * (l->dp > 0 ? l->dp : 1);
        if (w > MAX_RANKS)
            return rl_errf(e, RL_EINVAL, "tp x pp x dp: %lld ranks is too large; allowed up to %d",
                           (long long)w, MAX_RANKS);
        l->world = (int)w;
    }
    if (l->world % mp != 0)
        return rl_errf(e, RL_EINVAL, "gpus: %d is not a multiple of tp x pp = %lld", l->world, (long long)mp);
    int dp = (int)(l->world / mp);
    if (l->dp > 0 && l->dp != dp)
        return rl_errf(e, RL_EINVAL, "dp: %d does not match gpus %d / (tp %d x pp %d) = %d", l->dp,
                       l->world, l->tp, l->pp, dp);
    l->dp = dp;
    if (l->nodes <= 0 && l->gpus_per_node <= 0) {
        l->gpus_per_node = l->world < 8 ? l->world : 8;
        if (l->world % l->gpus_per_node)
            l->gpus_per_node = l->world;
    }
    if (l->nodes <= 0) {
        if (l->world % l->gpus_per_node)
            return rl_errf(e, RL_EINVAL, "gpus_per_node: %d does not divide %d ranks", l->gpus_per_node, l->world);
        l->nodes = l->world / l->gpus_per_node;
    }
    if (l->gpus_per_node <= 0) {
        if (l->world % l->nodes)
            return rl_errf(e, RL_EINVAL, "nodes: %d does not divide %d ranks", l->nodes, l->world);
        l->gpus_per_node = l->world / l->nodes;
    }
    if ((int64_t)l->nodes * l->gpus_per_node != l->world)
        return rl_errf(e, RL_EINVAL, "nodes %d x gpus_per_node %d = %lld does not equal %d ranks", l->nodes,
                       l->gpus_per_node, (long long)l->nodes * l->gpus_per_node, l->world);
    if (l->rank < 0 || l->rank >= l->world)
        return rl_errf(e, RL_EINVAL, "rank: %d is outside [0, %d]", l->rank, l->world - 1);
    return 0;
}
