/* sim/hw.c — loads and validates hardware profiles (see sim/hw.h and sim/README.md). */
#include <dirent.h>
#include <jansson.h>   /* json_loads, json_object_foreach, json_array_foreach */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>   /* strcasecmp */

#include "sim/hw.h"

/* A scalar field of the profile: JSON path (array indices as "[]"), kind, offset, range. */
struct hw_field {
    const char *path;
    char kind;          /* 's' string, 'i' int, 'b' bytes (int64), 'd' double */
    size_t off;         /* offset in struct sim_hw; (size_t)-1 for array members */
    double lo, hi;      /* allowed range, inclusive */
    bool array;         /* the value is an array of numbers (pcie_switches[].gpus) */
};

#define F(p, k, m, lo, hi) {p, k, offsetof(struct sim_hw, m), lo, hi, false}
#define A(p, k, lo, hi) {p, k, (size_t)-1, lo, hi, false}
static const struct hw_field fields[] = {
    {"name", 's', offsetof(struct sim_hw, name), 0, 0, false},
    {"description", 's', (size_t)-1, 0, 0, false},
    F("node.gpus", 'i', gpus, 1, SIM_HW_MAX_GPUS),
    F("node.host_memory_bytes", 'b', host_mem_bytes, 1e9, 1e15),
    F("node.inter_socket_gbps", 'd', inter_socket_gbps, 0.1, 1e5),
    F("node.host_baseline_bytes_per_rank", 'b', host_baseline_bytes, 0, 1e13),
    F("node.os_reserve_bytes", 'b', os_reserve_bytes, 0, 1e14),
    A("node.sockets[].cores", 'i', 1, 1024),
    A("node.sockets[].dram_gbps", 'd', 1, 1e5),
    A("node.pcie_switches[].socket", 'i', 0, SIM_HW_MAX_SOCKETS - 1),
    A("node.pcie_switches[].uplink_gbps", 'd', 0.1, 1e5),
    {"node.pcie_switches[].gpus", 'i', (size_t)-1, 0, SIM_HW_MAX_GPUS - 1, true},
    {"gpu.model", 's', offsetof(struct sim_hw, gpu_model), 0, 0, false},
    {"node.cpu_model", 's', offsetof(struct sim_hw, cpu_model), 0, 0, false},
    F("gpu.bf16_tensor_cores", 'i', bf16_tensor_cores, 0, 1),
    F("gpu.memory_bytes", 'b', gpu_mem_bytes, 1e9, 1e13),
    F("gpu.hbm_gbps", 'd', hbm_gbps, 1, 1e5),
    F("gpu.hbm_efficiency", 'd', hbm_efficiency, 0.01, 1),
    F("gpu.tensor_tflops", 'd', tensor_tflops, 1e-3, 1e5),
    F("gpu.tensor_efficiency", 'd', tensor_efficiency, 0.01, 1),
    F("gpu.fp32_tflops", 'd', fp32_tflops, 1e-3, 1e5),
    F("gpu.gemm_efficiency", 'd', gemm_efficiency, 0, 1),
    F("gpu.sms", 'i', gpu_sms, 0, 1024),
    F("gpu.gemm_fixed_us", 'd', gemm_fixed_us, 0, 1e4),
    F("gpu.fp32_efficiency", 'd', fp32_efficiency, 0.01, 1),
    F("gpu.h2d_pinned_gbps", 'd', h2d_pinned_gbps, 0.01, 1e4),
    F("gpu.d2h_pinned_gbps", 'd', d2h_pinned_gbps, 0.01, 1e4),
    F("gpu.h2d_pageable_gbps", 'd', h2d_pageable_gbps, 0.01, 1e4),
    F("gpu.d2h_pageable_gbps", 'd', d2h_pageable_gbps, 0.01, 1e4),
    F("gpu.context_bytes", 'b', context_bytes, 0, 1e11),
    F("gpu.allocator_overhead", 'd', allocator_overhead, 0, 1),
    F("gpu.nccl_bytes_per_communicator", 'b', nccl_comm_bytes, 0, 1e11),
    F("collectives.allgather_busbw_gbps", 'd', allgather_busbw_gbps, 0.1, 1e5),
    F("collectives.reduce_scatter_busbw_gbps", 'd', reduce_scatter_busbw_gbps, 0.1, 1e5),
    F("collectives.allreduce_busbw_gbps", 'd', allreduce_busbw_gbps, 0.1, 1e5),
    F("network.node_gbps", 'd', net_gbps, 0.01, 1e5),
    F("latency_us.kernel_launch", 'd', lat_launch_us, 0, 1e5),
    F("latency_us.pcie_copy", 'd', lat_copy_us, 0, 1e5),
    F("latency_us.collective_intra", 'd', lat_coll_intra_us, 0, 1e5),
    F("latency_us.collective_inter", 'd', lat_coll_inter_us, 0, 1e5),
    F("network.inter_busbw_gbps", 'd', net_inter_busbw_gbps, 0.01, 1e5),
    F("latency_us.nccl_ring_step_intra", 'd', lat_ring_step_intra_us, 0, 1e5),
    F("latency_us.nccl_ring_step_inter", 'd', lat_ring_step_inter_us, 0, 1e5),
    F("latency_us.nccl_tree_step_intra", 'd', lat_tree_step_intra_us, 0, 1e5),
    F("latency_us.nccl_tree_step_inter", 'd', lat_tree_step_inter_us, 0, 1e5),
    F("cpu_adam.elements_per_s_per_core", 'd', cpu_adam_elems_per_core, 1e6, 1e12),
    F("cpu_adam.dram_bytes_per_element", 'd', cpu_adam_dram_bytes, 1, 1000),
    F("cpu_adam.torch_elements_per_s_per_core", 'd', torch_adam_elems_per_core, 1e5, 1e12),
    F("gpu.emulated", 'i', gpu_emulated, 0, 1),
    F("gpu.emulated_cores", 'i', gpu_emulated_cores, 0, 4096),
    F("gpu.emulated_grad_elements_per_s", 'd', gpu_emulated_grad_per_s, 0, 1e13),
    F("host.fault_gbps_per_thread", 'd', host_fault_gbps_per_thread, 0.01, 1e4),
    F("host.fault_gbps_per_socket", 'd', host_fault_gbps_per_socket, 0, 1e5),
    F("host.memcpy_gbps_per_thread", 'd', host_memcpy_gbps_per_thread, 0, 1e4),
    F("host.cast_elements_per_s_per_thread", 'd', host_cast_elems_per_thread, 1e6, 1e12),
    {"host.thp_mode", 's', offsetof(struct sim_hw, host_thp_mode), 0, 0, false},
    F("host.page_bytes", 'b', host_page_bytes, 4096, 1 << 30),
    F("host.fault_us_per_4k_page", 'd', host_fault_us_per_4k_page, 0.001, 1e4),
    F("host.fault_us_per_2m_page", 'd', host_fault_us_per_2m_page, 0.1, 1e6),
};
#undef F
#undef A
static const char *containers[] = {"node", "node.sockets", "node.sockets[]", "node.pcie_switches",
                                   "node.pcie_switches[]", "gpu", "collectives", "network",
                                   "latency_us", "cpu_adam", "host"};
#define N_FIELDS (sizeof fields / sizeof fields[0])
#define N_CONTAINERS (sizeof containers / sizeof containers[0])

static const struct hw_field *find_field(const char *norm)
{
    for (size_t i = 0; i < N_FIELDS; i++)
        if (strcmp(fields[i].path, norm) == 0)
            return &fields[i];
    return NULL;
}

static bool is_container(const char *norm)
{
    for (size_t i = 0; i < N_CONTAINERS; i++)
        if (strcmp(containers[i], norm) == 0)
            return true;
    return false;
}

struct walk {
    const char *what;       /* file name for errors */
    json_t *sources;        /* the "sources" object */
    struct rl_err *e;
};

/* A number at `exact` (normalized `norm`) must have a non-empty source under either name. */
static int check_source(struct walk *w, const char *exact, const char *norm)
{
    json_t *s = json_object_get(w->sources, exact);
    if (!s)
        s = json_object_get(w->sources, norm);
    if (!s || !json_is_string(s) || !json_string_length(s))
        return rl_errf(w->e, RL_EINVAL, "%s: %s: a number without a source (add \"%s\": \"<where "
                       "the figure comes from>\" to \"sources\")", w->what, exact, norm);
    return 0;
}

static int check_leaf(struct walk *w, json_t *v, const char *exact, const char *norm)
{
    const struct hw_field *f = find_field(norm);
    if (!f)
        return rl_errf(w->e, RL_EINVAL, "%s: %s: unknown key (see sim/README.md for the profile "
                       "format)", w->what, exact);
    if (f->kind == 's') {
        if (!json_is_string(v))
            return rl_errf(w->e, RL_EINVAL, "%s: %s: must be a string", w->what, exact);
        /* Names are printed on one line of a table (predict's "hardware" row): no control
         * character, a newline least of all. */
        for (const unsigned char *c = (const unsigned char *)json_string_value(v); *c; c++)
            if (*c < 0x20 || *c == 0x7f)
                return rl_errf(w->e, RL_EINVAL, "%s: %s: a control character (0x%02x); allowed: printable "
                               "text on one line", w->what, exact, *c);
        return 0;
    }
    if (!json_is_number(v))
        return rl_errf(w->e, RL_EINVAL, "%s: %s: must be a number", w->what, exact);
    double x = json_number_value(v);
    if (!isfinite(x) || x < f->lo || x > f->hi)
        return rl_errf(w->e, RL_EINVAL, "%s: %s: %g is outside the allowed range [%g, %g]", w->what,
                       exact, x, f->lo, f->hi);
    if ((f->kind == 'i' || f->kind == 'b') && x != floor(x))
        return rl_errf(w->e, RL_EINVAL, "%s: %s: %g must be a whole number", w->what, exact, x);
    return check_source(w, exact, norm);
}

static int walk(struct walk *w, json_t *v, const char *exact, const char *norm)
{
    if (json_is_object(v)) {
        if (*norm && !is_container(norm))
            return rl_errf(w->e, RL_EINVAL, "%s: %s: unknown object", w->what, exact);
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c) {
            if (!*norm && strcmp(k, "sources") == 0)
                continue;
            char ex[256], no[256];
            snprintf(ex, sizeof ex, "%s%s%s", exact, *exact ? "." : "", k);
            snprintf(no, sizeof no, "%s%s%s", norm, *norm ? "." : "", k);
            int rc = walk(w, c, ex, no);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (json_is_array(v)) {
        const struct hw_field *f = find_field(norm);
        if (f && !f->array)
            return rl_errf(w->e, RL_EINVAL, "%s: %s: must be a %s, not an array", w->what, exact,
                           f->kind == 's' ? "string" : "number");
        if (!f && !is_container(norm))
            return rl_errf(w->e, RL_EINVAL, "%s: %s: unknown array", w->what, exact);
        char no[256];
        snprintf(no, sizeof no, "%s[]", norm);
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) {
            char ex[256];
            snprintf(ex, sizeof ex, "%s[%zu]", exact, i);
            int rc;
            if (f && f->array)   /* an array of numbers: its members share the array's path */
                rc = check_leaf(w, c, ex, norm);
            else if (json_is_object(c))
                rc = walk(w, c, ex, no);
            else
                rc = rl_errf(w->e, RL_EINVAL, "%s: %s: must be an object", w->what, ex);
            if (rc)
                return rc;
        }
        return 0;
    }
    return check_leaf(w, v, exact, norm);
}

/* The inter-node collective keys (sim/collective.h): a default, noted in hw->coll_defaulted, which
 * the warning names only for a layout that spans nodes. The bus bandwidth's default is 0: the line
 * rate network.node_gbps (sim_coll_busbw_gbps). */
static bool coll_default(struct sim_hw *hw, const char *path)
{
    static const struct {
        const char *path;
        size_t off;
        double def;
    } keys[] = {
        {"network.inter_busbw_gbps", offsetof(struct sim_hw, net_inter_busbw_gbps), 0},
        {"latency_us.nccl_ring_step_intra", offsetof(struct sim_hw, lat_ring_step_intra_us), SIM_HW_DEFAULT_RING_STEP_INTRA_US},
        {"latency_us.nccl_ring_step_inter", offsetof(struct sim_hw, lat_ring_step_inter_us), SIM_HW_DEFAULT_RING_STEP_INTER_US},
        {"latency_us.nccl_tree_step_intra", offsetof(struct sim_hw, lat_tree_step_intra_us), SIM_HW_DEFAULT_TREE_STEP_INTRA_US},
        {"latency_us.nccl_tree_step_inter", offsetof(struct sim_hw, lat_tree_step_inter_us), SIM_HW_DEFAULT_TREE_STEP_INTER_US},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strcmp(path, keys[i].path) != 0)
            continue;
        *(double *)((char *)hw + keys[i].off) = keys[i].def;
        size_t l = strlen(hw->coll_defaulted);
        snprintf(hw->coll_defaulted + l, sizeof hw->coll_defaulted - l, "%s%s", l ? "," : "", path);
        return true;
    }
    return false;
}

/* Keys a profile may leave out (profiles written before they existed): their default, set once
 * the required fields are in. Returns false for a required key. */
static bool optional_default_value(struct sim_hw *hw, const char *path)
{
    if (strcmp(path, "gpu.nccl_bytes_per_communicator") == 0) {
        hw->nccl_comm_bytes = INT64_C(2) * 16 * (INT64_C(4) << 20);
        return true;
    }
    if (strcmp(path, "node.host_baseline_bytes_per_rank") == 0) {
        hw->host_baseline_bytes = SIM_HW_HOST_BASELINE;
        return true;
    }
    if (strcmp(path, "node.os_reserve_bytes") == 0) {
        hw->os_reserve_bytes = SIM_HW_OS_RESERVE;
        return true;
    }
    if (strcmp(path, "node.cpu_model") == 0)
        return true;   /* "": unknown (memset by sim_hw_parse) */
    if (strcmp(path, "gpu.bf16_tensor_cores") == 0) {
        hw->bf16_tensor_cores = 1;
        return true;
    }
    if (strcmp(path, "gpu.emulated") == 0 || strcmp(path, "gpu.emulated_cores") == 0 ||
        strcmp(path, "gpu.emulated_grad_elements_per_s") == 0)
        return true;   /* 0: a real GPU (memset by sim_hw_parse) */
    if (strcmp(path, "host.fault_gbps_per_thread") == 0) {
        hw->host_fault_gbps_per_thread = SIM_HW_DEFAULT_FAULT_GBPS_PER_THREAD;
        return true;
    }
    if (strcmp(path, "host.cast_elements_per_s_per_thread") == 0) {
        hw->host_cast_elems_per_thread = SIM_HW_DEFAULT_CAST_ELEMS_PER_THREAD;
        return true;
    }
    if (strcmp(path, "host.fault_gbps_per_socket") == 0 || strcmp(path, "host.memcpy_gbps_per_thread") == 0)
        return true;   /* 0: cores x the per-thread rate; no cap */
    if (strcmp(path, "cpu_adam.torch_elements_per_s_per_core") == 0) {
        hw->torch_adam_elems_per_core = -1;   /* resolved after the fill */
        return true;
    }
    if (strcmp(path, "gpu.gemm_efficiency") == 0 || strcmp(path, "gpu.sms") == 0 ||
        strcmp(path, "gpu.gemm_fixed_us") == 0)
        return true;   /* 0: the per-shape GEMM model is off (memset by sim_hw_parse) */
    if (strcmp(path, "host.thp_mode") == 0 || strcmp(path, "host.page_bytes") == 0 ||
        strcmp(path, "host.fault_us_per_4k_page") == 0 || strcmp(path, "host.fault_us_per_2m_page") == 0)
        return true;   /* ""/0: resolved by sim_hw_host_resolve, which notes what it defaults */
    if (coll_default(hw, path))
        return true;
    return false;
}

/* optional_default_value, noting a defaulted figure in hw->defaulted (the first-touch keys are
 * noted by sim_hw_host_resolve, which knows which of them the prediction uses). */
static bool optional_default(struct sim_hw *hw, const char *path)
{
    bool ok = optional_default_value(hw, path);
    if (ok && strcmp(path, "node.cpu_model") != 0 && strncmp(path, "gpu.emulated", 12) != 0 &&
        strncmp(path, "gpu.gemm_", 9) != 0 && strcmp(path, "gpu.sms") != 0 &&
        strncmp(path, "host.thp_mode", 13) != 0 && strcmp(path, "host.page_bytes") != 0 &&
        strncmp(path, "host.fault_us_per_", 18) != 0 && strcmp(path, "network.inter_busbw_gbps") != 0 &&
        strncmp(path, "latency_us.nccl_", 16) != 0)
        sim_hw_note_default(hw, path);
    if (ok && strcmp(path, "host.fault_gbps_per_thread") == 0)
        hw->host_fault_rate_given = false;
    return ok;
}

/* Copies the scalar fields into *hw (values are validated by walk()). */
static int fill(struct sim_hw *hw, json_t *root, const char *what, struct rl_err *e)
{
    for (size_t i = 0; i < N_FIELDS; i++) {
        const struct hw_field *f = &fields[i];
        if (f->off == (size_t)-1)
            continue;
        char buf[128];
        snprintf(buf, sizeof buf, "%s", f->path);
        json_t *v = root;
        for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
            v = json_object_get(v, tok);
        if (!v && optional_default(hw, f->path))
            continue;
        if (!v)
            return rl_errf(e, RL_EINVAL, "%s: %s: missing (required)", what, f->path);
        char *p = (char *)hw + f->off;
        switch (f->kind) {
        case 's': snprintf(p, 64, "%s", json_string_value(v)); break;
        case 'i': *(int *)p = (int)json_number_value(v); break;
        case 'b': *(int64_t *)p = (int64_t)json_number_value(v); break;
        default: *(double *)p = json_number_value(v); break;
        }
    }
    if (hw->torch_adam_elems_per_core < 0)
        hw->torch_adam_elems_per_core = hw->cpu_adam_elems_per_core / 6.0;
    return 0;
}

/* Notes every figure whose source calls it "unverified" (a secondary page or an assumption, not
 * sourced for this machine) in hw->defaulted. */
static void note_unverified(struct sim_hw *hw, json_t *sources)
{
    const char *k;
    json_t *v;
    json_object_foreach(sources, k, v) {
        const char *s = json_string_value(v);
        if (s && strcasestr(s, "unverified"))
            sim_hw_note_default(hw, k);
    }
}

int sim_hw_parse(struct sim_hw *hw, const char *text, const char *what, struct rl_err *e)
{
    memset(hw, 0, sizeof *hw);
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return rl_errf(e, RL_EINVAL, "%s: line %d: %s (a JSON object is expected)", what, je.line,
                       je.text);
    int rc = 0;
    struct walk w = {what, json_object_get(root, "sources"), e};
    if (!json_is_object(root)) {
        rc = rl_errf(e, RL_EINVAL, "%s: the top level must be a JSON object", what);
        goto out;
    }
    if (!json_is_object(w.sources)) {
        rc = rl_errf(e, RL_EINVAL, "%s: sources: missing (an object naming the source of every "
                     "number)", what);
        goto out;
    }
    hw->host_fault_rate_given = true;   /* fill's optional_default clears it when absent */
    if ((rc = walk(&w, root, "", "")) || (rc = fill(hw, root, what, e)) || (rc = sim_hw_host_resolve(hw, what, e)))
        goto out;
    note_unverified(hw, w.sources);
    hw->n_sources = (int)json_object_size(w.sources);
    json_t *sockets = json_object_get(json_object_get(root, "node"), "sockets");
    json_t *sw = json_object_get(json_object_get(root, "node"), "pcie_switches");
    if (!json_is_array(sockets) || json_array_size(sockets) < 1 ||
        json_array_size(sockets) > SIM_HW_MAX_SOCKETS) {
        rc = rl_errf(e, RL_EINVAL, "%s: node.sockets: must be an array of 1..%d sockets", what,
                     SIM_HW_MAX_SOCKETS);
        goto out;
    }
    if (!json_is_array(sw) || json_array_size(sw) < 1 || json_array_size(sw) > SIM_HW_MAX_SWITCHES) {
        rc = rl_errf(e, RL_EINVAL, "%s: node.pcie_switches: must be an array of 1..%d switches",
                     what, SIM_HW_MAX_SWITCHES);
        goto out;
    }
    hw->n_sockets = (int)json_array_size(sockets);
    for (int i = 0; i < hw->n_sockets; i++) {
        json_t *s = json_array_get(sockets, (size_t)i);
        json_t *c = json_object_get(s, "cores"), *d = json_object_get(s, "dram_gbps");
        if (!c || !d) {
            rc = rl_errf(e, RL_EINVAL, "%s: node.sockets[%d]: needs cores and dram_gbps", what, i);
            goto out;
        }
        hw->socket[i].cores = (int)json_number_value(c);
        hw->socket[i].dram_gbps = json_number_value(d);
    }
    for (int g = 0; g < SIM_HW_MAX_GPUS; g++)
        hw->gpu_switch[g] = -1;
    hw->n_switches = (int)json_array_size(sw);
    for (int i = 0; i < hw->n_switches; i++) {
        json_t *s = json_array_get(sw, (size_t)i);
        json_t *so = json_object_get(s, "socket"), *up = json_object_get(s, "uplink_gbps"),
               *gp = json_object_get(s, "gpus");
        if (!so || !up || !json_is_array(gp)) {
            rc = rl_errf(e, RL_EINVAL, "%s: node.pcie_switches[%d]: needs socket, uplink_gbps and "
                         "gpus", what, i);
            goto out;
        }
        struct sim_hw_switch *x = &hw->sw[i];
        x->socket = (int)json_number_value(so);
        x->uplink_gbps = json_number_value(up);
        if (x->socket >= hw->n_sockets) {
            rc = rl_errf(e, RL_EINVAL, "%s: node.pcie_switches[%d].socket: %d is not a socket "
                         "(0..%d)", what, i, x->socket, hw->n_sockets - 1);
            goto out;
        }
        size_t k;
        json_t *gv;
        json_array_foreach(gp, k, gv) {
            int g = (int)json_number_value(gv);
            if (g >= hw->gpus || hw->gpu_switch[g] >= 0 || x->n_gpus >= SIM_HW_MAX_GPUS) {
                rc = rl_errf(e, RL_EINVAL, "%s: node.pcie_switches[%d].gpus[%zu]: GPU %d is out of "
                             "range or attached twice (each of GPUs 0..%d attaches to one switch)",
                             what, i, k, g, hw->gpus - 1);
                goto out;
            }
            hw->gpu_switch[g] = i;
            x->gpus[x->n_gpus++] = g;
        }
    }
    for (int g = 0; g < hw->gpus; g++)
        if (hw->gpu_switch[g] < 0) {
            rc = rl_errf(e, RL_EINVAL, "%s: node.pcie_switches: GPU %d is attached to no switch "
                         "(each of GPUs 0..%d must appear once)", what, g, hw->gpus - 1);
            goto out;
        }
out:
    json_decref(root);
    return rc;
}

int sim_hw_load(struct sim_hw *hw, const char *catalog_dir, const char *name_or_path,
                struct rl_err *e)
{
    char path[4096];
    size_t n = strlen(name_or_path);
    if (strchr(name_or_path, ','))
        return rl_errf(e, RL_EINVAL, "hw: '%s' names several profiles; this command takes one (tune compares "
                       "several side by side)", name_or_path);
    bool is_path = strchr(name_or_path, '/') || (n > 5 && strcmp(name_or_path + n - 5, ".json") == 0);
    if (is_path)
        snprintf(path, sizeof path, "%s", name_or_path);
    else
        snprintf(path, sizeof path, "%s/hardware/%s.json", catalog_dir ? catalog_dir : ".", name_or_path);
    char *text;
    size_t len;
    struct rl_err fe;
    if (rl_read_file(path, &text, &len, &fe)) {
        if (is_path)
            return rl_errf(e, RL_EINVAL, "hw: %s: cannot read it (%s)", path, fe.msg);
        char **names;
        int k;
        char list[512] = "", hint[96] = "", canon[128] = "";
        if (sim_hw_list(catalog_dir, &names, &k, NULL) == 0) {
            const char *near = rl_nearest(name_or_path, (const char *const *)names, k);
            if (near)
                snprintf(hint, sizeof hint, "; did you mean '%s'?", near);
            for (int i = 0; i < k; i++) {
                size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", names[i]);
                if (strcasecmp(names[i], name_or_path) == 0)   /* names match without regard to case */
                    snprintf(canon, sizeof canon, "%s", names[i]);
                free(names[i]);
            }
            free(names);
        }
        if (canon[0])
            return sim_hw_load(hw, catalog_dir, canon, e);
        return rl_errf(e, RL_EINVAL, "hw: %s: no such profile in %s/hardware%s (allowed: %s, or a "
                       "path to a profile file)", name_or_path, catalog_dir ? catalog_dir : ".", hint, list);
    }
    int rc = sim_hw_parse(hw, text, path, e);
    free(text);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sim_hw_list(const char *catalog_dir, char ***names, int *n, struct rl_err *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware", catalog_dir ? catalog_dir : ".");
    DIR *d = opendir(path);
    if (!d)
        return rl_errf(e, RL_ENOENT, "hw: %s: cannot open the profile folder", path);
    int cap = 0, k = 0;
    char **v = NULL;
    (void)rl_grow(&v, &cap, sizeof *v, 1, 16);   /* v stays NULL on failure: reported below */
    struct dirent *de;
    while (v && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        if (rl_grow(&v, &cap, sizeof *v, k + 1, 16))
            break;
        v[k++] = strndup(de->d_name, len - 5);
    }
    closedir(d);
    if (!v)
        return rl_errf(e, RL_ENOMEM, "hw: out of memory");
    qsort(v, (size_t)k, sizeof *v, cmp_str);
    *names = v;
    *n = k;
    return 0;
}

void sim_hw_use_rank_threads(struct sim_hw *hw, int ranks, int threads)
{
    int per[SIM_HW_MAX_SOCKETS] = {0};
    for (int g = 0; g < ranks && g < hw->gpus && g < SIM_HW_MAX_GPUS; g++) {
        int sw = hw->gpu_switch[g];
        int k = sw >= 0 ? hw->sw[sw].socket : 0;
        if (k >= 0 && k < hw->n_sockets)
            per[k]++;
    }
    for (int k = 0; k < hw->n_sockets; k++) {
        int c = per[k] * (threads > 0 ? threads : 1);
        hw->socket[k].cores = c > 0 ? c : 1;
    }
}
