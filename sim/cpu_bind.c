/* sim/cpu_bind.c — where a node's ranks run their CPU threads (sim/step.h "enum sim_cpu_binding";
 * sim/README.md "CPU binding"). DeepSpeed's launcher binds only with --bind_cores_to_rank
 * (deepspeed/launcher/runner.py: store_true, default off; launch.py sets OMP_NUM_THREADS to
 * cores_per_rank = physical cores // local ranks, deepspeed/utils/numa.py get_numactl_cmd). */
#include <string.h>

#include "sim/hw.h"
#include "sim/step.h"

static const char *const binding_names[] = {"none", "per-rank"};

const char *sim_cpu_binding_name(enum sim_cpu_binding b)
{
    return (int)b >= 0 && (size_t)b < RL_COUNT(binding_names) ? binding_names[b] : "?";
}

int sim_cpu_binding_parse(const char *s, enum sim_cpu_binding *out, struct rl_err *e)
{
    for (size_t i = 0; i < RL_COUNT(binding_names); i++)
        if (rl_streq(s, binding_names[i])) {
            *out = (enum sim_cpu_binding)i;
            return 0;
        }
    return rl_errf(e, RL_EINVAL, "cpu_binding: '%s' is not allowed; allowed: none, per-rank", s ? s : "");
}

int sim_cpu_node_cores(const struct hw_profile *hw, const struct sim_train *t)
{
    if (t->cpu_cores > 0)
        return t->cpu_cores;
    int c = 0;
    for (int k = 0; k < hw->n_sockets; k++)
        c += hw->socket[k].cores;
    return c > 0 ? c : 1;
}

int sim_cpu_team_threads(const struct hw_profile *hw, const struct sim_train *t, int ranks)
{
    int cores = sim_cpu_node_cores(hw, t);
    if (t->cpu_binding != SIM_BIND_PER_RANK)
        return cores;
    int c = cores / (ranks > 0 ? ranks : 1);
    return c > 0 ? c : 1;
}

double sim_cpu_rank_cores(const struct hw_profile *hw, const struct sim_train *t, int ranks, int socket_cores,
                          int ranks_on_socket)
{
    if (t->cpu_binding == SIM_BIND_PER_RANK) {
        double c = sim_cpu_team_threads(hw, t, ranks);
        return c < socket_cores ? c : socket_cores;
    }
    return (double)socket_cores / (ranks_on_socket > 0 ? ranks_on_socket : 1);
}

/* The fork-join wait of `regions` regions whose teams of `threads` per rank, over the node's
 * `ranks`, run o = ranks x threads / cores threads per core: (o - 1) scheduler slices each, 0 when
 * o <= 1 (sim/step.h sim_cpu_oversub_ns). */
static int64_t regions_wait_ns(const struct hw_profile *hw, const struct sim_train *t, int ranks, int64_t threads,
                               int64_t regions)
{
    double o = (double)ranks * (double)threads / sim_cpu_node_cores(hw, t);
    if (o <= 1.0)
        return 0;
    return (int64_t)((double)regions * (o - 1.0) * (double)SIM_SCHED_SLICE_NS + 0.5);
}

int64_t sim_cpu_intraop_oversub_ns(const struct hw_profile *hw, const struct sim_train *t, int ranks, int threads,
                                   int64_t elems)
{
    if (t->cpu_binding == SIM_BIND_PER_RANK || elems <= SIM_TORCH_GRAIN_SIZE)
        return 0;
    int64_t chunks = (elems + SIM_TORCH_GRAIN_SIZE - 1) / SIM_TORCH_GRAIN_SIZE;
    int64_t used = threads > 0 ? (chunks < threads ? chunks : threads) : 1;
    return regions_wait_ns(hw, t, ranks, used, 1);
}

int64_t sim_cpu_oversub_ns(const struct hw_profile *hw, const struct sim_train *t, int ranks, int64_t elems)
{
    if (t->cpu_binding == SIM_BIND_PER_RANK || elems <= 0)
        return 0;
    return regions_wait_ns(hw, t, ranks, sim_cpu_team_threads(hw, t, ranks),
                           (elems + SIM_CPU_ADAM_TILE - 1) / SIM_CPU_ADAM_TILE);
}
