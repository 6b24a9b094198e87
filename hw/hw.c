/* hw/hw.c — the hardware profile's one schema: its key table, the reader that validates a profile
 * against it and the writer that builds one through it (hw/hw.h, format: sim/README.md). */
#include <jansson.h>   /* json_loads, json_object_foreach, json_array_foreach */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>   /* strcasestr */

#include "hw/hw.h"

/* Every key a profile may hold (hw/hw.h says what a row is). Array members carry no offset: their
 * values go into hw_profile.socket[] and .sw[], which hw_parse fills by hand. */
#define F(p, k, m, lo, hi) {p, k, offsetof(struct hw_profile, m), lo, hi, false, 'r', 0}
#define O(p, k, m, lo, hi, def) {p, k, offsetof(struct hw_profile, m), lo, hi, false, 'o', def}
#define Q(p, k, m, lo, hi, def) {p, k, offsetof(struct hw_profile, m), lo, hi, false, 's', def}
#define C(p, k, m, lo, hi, def) {p, k, offsetof(struct hw_profile, m), lo, hi, false, 'c', def}
#define A(p, k, lo, hi) {p, k, HW_NO_FIELD, lo, hi, false, 'r', 0}
const struct hw_key hw_keys[] = {
    F("name", 's', name, 0, 0),
    {"description", 's', HW_NO_FIELD, 0, 0, false, 's', 0},
    F("node.gpus", 'i', gpus, 1, HW_MAX_GPUS),
    F("node.host_memory_bytes", 'b', host_mem_bytes, 1e9, 1e15),
    F("node.inter_socket_gbps", 'd', inter_socket_gbps, 0.1, 1e5),
    O("node.host_baseline_bytes_per_rank", 'b', host_baseline_bytes, 0, 1e13, HW_HOST_BASELINE),
    O("node.os_reserve_bytes", 'b', os_reserve_bytes, 0, 1e14, HW_OS_RESERVE),
    A("node.sockets[].cores", 'i', 1, 1024),
    A("node.sockets[].dram_gbps", 'd', 1, 1e5),
    A("node.pcie_switches[].socket", 'i', 0, HW_MAX_SOCKETS - 1),
    A("node.pcie_switches[].uplink_gbps", 'd', 0.1, 1e5),
    {"node.pcie_switches[].gpus", 'i', HW_NO_FIELD, 0, HW_MAX_GPUS - 1, true, 'r', 0},
    F("gpu.model", 's', gpu_model, 0, 0),
    Q("node.cpu_model", 's', cpu_model, 0, 0, 0),   /* "": unknown */
    O("gpu.bf16_tensor_cores", 'i', bf16_tensor_cores, 0, 1, 1),
    F("gpu.memory_bytes", 'b', gpu_mem_bytes, 1e9, 1e13),
    F("gpu.hbm_gbps", 'd', hbm_gbps, 1, 1e5),
    F("gpu.hbm_efficiency", 'd', hbm_efficiency, 0.01, 1),
    F("gpu.tensor_tflops", 'd', tensor_tflops, 1e-3, 1e5),
    F("gpu.tensor_efficiency", 'd', tensor_efficiency, 0.01, 1),
    F("gpu.fp32_tflops", 'd', fp32_tflops, 1e-3, 1e5),
    Q("gpu.gemm_efficiency", 'd', gemm_efficiency, 0, 1, 0),
    Q("gpu.sms", 'i', gpu_sms, 0, 1024, 0),
    Q("gpu.gemm_fixed_us", 'd', gemm_fixed_us, 0, 1e4, 0),
    F("gpu.fp32_efficiency", 'd', fp32_efficiency, 0.01, 1),
    F("gpu.h2d_pinned_gbps", 'd', h2d_pinned_gbps, 0.01, 1e4),
    F("gpu.d2h_pinned_gbps", 'd', d2h_pinned_gbps, 0.01, 1e4),
    F("gpu.h2d_pageable_gbps", 'd', h2d_pageable_gbps, 0.01, 1e4),
    F("gpu.d2h_pageable_gbps", 'd', d2h_pageable_gbps, 0.01, 1e4),
    F("gpu.context_bytes", 'b', context_bytes, 0, 1e11),
    F("gpu.allocator_overhead", 'd', allocator_overhead, 0, 1),
    O("gpu.nccl_bytes_per_communicator", 'b', nccl_comm_bytes, 0, 1e11, HW_DEFAULT_NCCL_COMM_BYTES),
    F("collectives.allgather_busbw_gbps", 'd', allgather_busbw_gbps, 0.1, 1e5),
    F("collectives.reduce_scatter_busbw_gbps", 'd', reduce_scatter_busbw_gbps, 0.1, 1e5),
    F("collectives.allreduce_busbw_gbps", 'd', allreduce_busbw_gbps, 0.1, 1e5),
    F("network.node_gbps", 'd', net_gbps, 0.01, 1e5),
    F("latency_us.kernel_launch", 'd', lat_launch_us, 0, 1e5),
    F("latency_us.pcie_copy", 'd', lat_copy_us, 0, 1e5),
    F("latency_us.collective_intra", 'd', lat_coll_intra_us, 0, 1e5),
    F("latency_us.collective_inter", 'd', lat_coll_inter_us, 0, 1e5),
    C("network.inter_busbw_gbps", 'd', net_inter_busbw_gbps, 0.01, 1e5, 0),
    C("latency_us.nccl_ring_step_intra", 'd', lat_ring_step_intra_us, 0, 1e5, HW_DEFAULT_RING_STEP_INTRA_US),
    C("latency_us.nccl_ring_step_inter", 'd', lat_ring_step_inter_us, 0, 1e5, HW_DEFAULT_RING_STEP_INTER_US),
    C("latency_us.nccl_tree_step_intra", 'd', lat_tree_step_intra_us, 0, 1e5, HW_DEFAULT_TREE_STEP_INTRA_US),
    C("latency_us.nccl_tree_step_inter", 'd', lat_tree_step_inter_us, 0, 1e5, HW_DEFAULT_TREE_STEP_INTER_US),
    F("cpu_adam.elements_per_s_per_core", 'd', cpu_adam_elems_per_core, 1e6, 1e12),
    F("cpu_adam.dram_bytes_per_element", 'd', cpu_adam_dram_bytes, 1, 1000),
    O("cpu_adam.torch_elements_per_s_per_core", 'd', torch_adam_elems_per_core, 1e5, 1e12, HW_DEFAULT_LATER),
    Q("gpu.emulated", 'i', gpu_emulated, 0, 1, 0),
    Q("gpu.emulated_cores", 'i', gpu_emulated_cores, 0, 4096, 0),
    Q("gpu.emulated_grad_elements_per_s", 'd', gpu_emulated_grad_per_s, 0, 1e13, 0),
    O("host.fault_gbps_per_thread", 'd', host_fault_gbps_per_thread, 0.01, 1e4, HW_DEFAULT_FAULT_GBPS_PER_THREAD),
    O("host.fault_gbps_per_socket", 'd', host_fault_gbps_per_socket, 0, 1e5, 0),
    O("host.memcpy_gbps_per_thread", 'd', host_memcpy_gbps_per_thread, 0, 1e4, 0),
    O("host.cast_elements_per_s_per_thread", 'd', host_cast_elems_per_thread, 1e6, 1e12, HW_DEFAULT_CAST_ELEMS_PER_THREAD),
    O("host.zero3_us_per_module_forward", 'd', host_zero3_us_fwd, 0, 1e5, HW_DEFAULT_ZERO3_US_FWD),
    O("host.zero3_us_per_module_backward", 'd', host_zero3_us_bwd, 0, 1e5, HW_DEFAULT_ZERO3_US_BWD),
    O("host.zero3_partitioned_us_per_module_forward", 'd', host_zero3_part_us_fwd, 0, 1e5, HW_DEFAULT_ZERO3_PART_US_FWD),
    O("host.zero3_partitioned_us_per_module_backward", 'd', host_zero3_part_us_bwd, 0, 1e5, HW_DEFAULT_ZERO3_PART_US_BWD),
    Q("host.thp_mode", 's', host_thp_mode, 0, 0, 0),
    Q("host.page_bytes", 'b', host_page_bytes, 4096, 1 << 30, 0),
    Q("host.fault_us_per_4k_page", 'd', host_fault_us_per_4k_page, 0.001, 1e4, 0),
    Q("host.fault_us_per_2m_page", 'd', host_fault_us_per_2m_page, 0.1, 1e6, 0),
};
#undef F
#undef O
#undef Q
#undef C
#undef A
static const char *containers[] = {"node", "node.sockets", "node.sockets[]", "node.pcie_switches",
                                   "node.pcie_switches[]", "gpu", "collectives", "network",
                                   "latency_us", "cpu_adam", "host"};
const size_t hw_n_keys = sizeof hw_keys / sizeof hw_keys[0];
#define N_CONTAINERS (sizeof containers / sizeof containers[0])

const struct hw_key *hw_key_find(const char *norm)
{
    for (size_t i = 0; i < hw_n_keys; i++)
        if (strcmp(hw_keys[i].path, norm) == 0)
            return &hw_keys[i];
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
    const struct hw_key *f = hw_key_find(norm);
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
        const struct hw_key *f = hw_key_find(norm);
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

/* The default of an absent optional key k (profiles written before it existed), noted in
 * hw->defaulted when the row says so ('o'); the first-touch keys ('s') are noted by the resolve
 * step, sim_hw_host_resolve, which knows which of them the prediction uses. */
static void set_default(struct hw_profile *hw, const struct hw_key *k)
{
    char *p = (char *)hw + k->off;
    switch (k->kind) {
    case 's': break;   /* "": unknown or resolved later (memset by hw_parse) */
    case 'i': *(int *)p = (int)k->def; break;
    case 'b': *(int64_t *)p = (int64_t)k->def; break;
    default: *(double *)p = k->def; break;
    }
    if (k->need == 'o')
        hw_note_default(hw, k->path);
    if (k->need == 'c') {
        size_t l = strlen(hw->coll_defaulted);
        snprintf(hw->coll_defaulted + l, sizeof hw->coll_defaulted - l, "%s%s", l ? "," : "", k->path);
    }
    if (strcmp(k->path, "host.fault_gbps_per_thread") == 0)
        hw->host_fault_rate_given = false;
}

/* Copies the scalar fields into *hw (values are validated by walk()). */
static int fill(struct hw_profile *hw, json_t *root, const char *what, struct rl_err *e)
{
    for (size_t i = 0; i < hw_n_keys; i++) {
        const struct hw_key *f = &hw_keys[i];
        if (f->off == HW_NO_FIELD)
            continue;
        char buf[128];
        snprintf(buf, sizeof buf, "%s", f->path);
        json_t *v = root;
        for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
            v = json_object_get(v, tok);
        if (!v && f->need != 'r') {
            set_default(hw, f);
            continue;
        }
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
    if (hw->torch_adam_elems_per_core == HW_DEFAULT_LATER)   /* a sixth of DeepSpeed's CPU Adam */
        hw->torch_adam_elems_per_core = hw->cpu_adam_elems_per_core / 6.0;
    return 0;
}

/* Notes every figure whose source calls it "unverified" (a secondary page or an assumption, not
 * sourced for this machine) in hw->defaulted. */
static void note_unverified(struct hw_profile *hw, json_t *sources)
{
    const char *k;
    json_t *v;
    json_object_foreach(sources, k, v) {
        const char *s = json_string_value(v);
        if (s && strcasestr(s, "unverified"))
            hw_note_default(hw, k);
    }
}

int hw_parse(struct hw_profile *hw, const char *text, const char *what, hw_resolve_fn *resolve, struct rl_err *e)
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
    hw->host_fault_rate_given = true;   /* set_default clears it when absent */
    if ((rc = walk(&w, root, "", "")) || (rc = fill(hw, root, what, e)) ||
        (resolve && (rc = resolve(hw, what, e))))
        goto out;
    note_unverified(hw, w.sources);
    hw->n_sources = (int)json_object_size(w.sources);
    json_t *sockets = json_object_get(json_object_get(root, "node"), "sockets");
    json_t *sw = json_object_get(json_object_get(root, "node"), "pcie_switches");
    if (!json_is_array(sockets) || json_array_size(sockets) < 1 ||
        json_array_size(sockets) > HW_MAX_SOCKETS) {
        rc = rl_errf(e, RL_EINVAL, "%s: node.sockets: must be an array of 1..%d sockets", what,
                     HW_MAX_SOCKETS);
        goto out;
    }
    if (!json_is_array(sw) || json_array_size(sw) < 1 || json_array_size(sw) > HW_MAX_SWITCHES) {
        rc = rl_errf(e, RL_EINVAL, "%s: node.pcie_switches: must be an array of 1..%d switches",
                     what, HW_MAX_SWITCHES);
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
    for (int g = 0; g < HW_MAX_GPUS; g++)
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
        struct hw_switch *x = &hw->sw[i];
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
            if (g >= hw->gpus || hw->gpu_switch[g] >= 0 || x->n_gpus >= HW_MAX_GPUS) {
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


void hw_note_default(struct hw_profile *hw, const char *path)
{
    size_t n = strlen(path), l = strlen(hw->defaulted);
    for (const char *p = hw->defaulted; (p = strstr(p, path)); p += n)
        if ((p == hw->defaulted || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return;   /* noted already */
    if (l + n + 2 < sizeof hw->defaulted)
        snprintf(hw->defaulted + l, sizeof hw->defaulted - l, "%s%s", l ? "," : "", path);
}


/* ---- the writer ------------------------------------------------------------------------------ */

/* Keeps the first error. */
static void w_fail(struct hw_writer *w, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void w_fail(struct hw_writer *w, int rc, const char *fmt, ...)
{
    if (w->rc)
        return;
    char msg[sizeof w->err.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    w->rc = rl_errf(&w->err, rc, "%s", msg);
}

int hw_writer_open(struct hw_writer *w, const char *base_text, struct rl_err *e)
{
    memset(w, 0, sizeof *w);
    if (!base_text) {
        w->root = json_object();
        w->sources = json_object();
        if (!w->root || !w->sources) {
            hw_writer_abort(w);
            return rl_errf(e, RL_ENOMEM, "hw: out of memory");
        }
        return 0;
    }
    json_error_t je;
    w->root = json_loads(base_text, 0, &je);
    if (!json_is_object(w->root)) {
        hw_writer_abort(w);
        return rl_errf(e, RL_EINVAL, "hw: not a profile (expected a JSON object%s%s)", je.text[0] ? ": " : "",
                       je.text);
    }
    w->sources = json_object_get(w->root, "sources");
    if (json_is_object(w->sources))
        json_incref(w->sources);
    else if (!(w->sources = json_object())) {
        hw_writer_abort(w);
        return rl_errf(e, RL_ENOMEM, "hw: out of memory");
    }
    return 0;
}

void hw_writer_abort(struct hw_writer *w)
{
    json_decref(w->root);
    json_decref(w->sources);
    w->root = w->sources = NULL;
}

/* The object that holds the last part of `path`: objects made on the way, the array member
 * `index` where the path has "[]" (made when index is the array's length). NULL and an error when
 * the path runs through a value that is no object or array, or past an array's end. */
static json_t *w_parent(struct hw_writer *w, const char *path, size_t index, const char **leaf)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *o = w->root;
    char *part = buf;
    for (char *dot; o && (dot = strchr(part, '.')); part = dot + 1) {
        *dot = 0;
        size_t l = strlen(part);
        bool member = l > 2 && strcmp(part + l - 2, "[]") == 0;
        if (member)
            part[l - 2] = 0;
        json_t *c = json_object_get(o, part);
        if (!c) {
            c = member ? json_array() : json_object();
            if (json_object_set_new(o, part, c)) {
                w_fail(w, RL_ENOMEM, "hw: out of memory");
                return NULL;
            }
        }
        if (member) {
            if (!json_is_array(c)) {
                w_fail(w, RL_EINVAL, "hw: %s: '%s' is not an array", path, part);
                return NULL;
            }
            if (index == json_array_size(c) && json_array_append_new(c, json_object())) {
                w_fail(w, RL_ENOMEM, "hw: out of memory");
                return NULL;
            }
            c = json_array_get(c, index);
        }
        if (!json_is_object(c)) {
            w_fail(w, RL_EINVAL, "hw: %s: no member %zu of '%s', or not an object", path, index, part);
            return NULL;
        }
        o = c;
    }
    *leaf = path + (part - buf);
    return o;
}

/* The row of `path`, with an error when it has none or is of another kind than the call's. */
static const struct hw_key *w_key(struct hw_writer *w, const char *path, bool member, bool text, bool list)
{
    const struct hw_key *k = hw_key_find(path);
    if (!k) {
        w_fail(w, RL_EINVAL, "hw: %s: not a key of the profile format (hw/hw.c's table)", path);
        return NULL;
    }
    if ((k->kind == 's') != text || k->array != list || (strstr(path, "[]") != NULL) != member) {
        w_fail(w, RL_EINVAL, "hw: %s: written as a %s%s, but the table has a %s%s", path,
               member ? "member's " : "", text ? "string" : list ? "list" : "number",
               strstr(path, "[]") ? "member's " : "", k->kind == 's' ? "string" : k->array ? "list" : "number");
        return NULL;
    }
    return k;
}

double hw_clamp(const char *path, double v)
{
    const struct hw_key *k = hw_key_find(path);
    if (!k)
        return v;
    return v < k->lo ? k->lo : v > k->hi ? k->hi : v;
}

/* The JSON value of v as key k writes it: clamped to the range, an integer for 'i' and 'b'. */
static json_t *w_number(struct hw_writer *w, const struct hw_key *k, double v)
{
    if (!isfinite(v)) {
        w_fail(w, RL_EINVAL, "hw: %s: %g is not a finite number", k->path, v);
        return NULL;
    }
    v = v < k->lo ? k->lo : v > k->hi ? k->hi : v;
    json_t *j = k->kind == 'd' ? json_real(v) : json_integer((json_int_t)llround(v));
    if (!j)
        w_fail(w, RL_ENOMEM, "hw: out of memory");
    return j;
}

static void w_set(struct hw_writer *w, const char *path, size_t index, json_t *v)
{
    const char *leaf;
    json_t *o = v ? w_parent(w, path, index, &leaf) : NULL;
    if (!o || json_object_set_new(o, leaf, v)) {
        if (o)
            w_fail(w, RL_ENOMEM, "hw: out of memory");
        else
            json_decref(v);
    }
}

void hw_put(struct hw_writer *w, const char *path, double v)
{
    const struct hw_key *k = w_key(w, path, false, false, false);
    if (k)
        w_set(w, path, 0, w_number(w, k, v));
}

void hw_put_at(struct hw_writer *w, const char *path, size_t index, double v)
{
    const struct hw_key *k = w_key(w, path, true, false, false);
    if (k)
        w_set(w, path, index, w_number(w, k, v));
}

void hw_put_str(struct hw_writer *w, const char *path, const char *s)
{
    if (!w_key(w, path, false, true, false))
        return;
    json_t *j = json_string(s);
    if (!j)
        w_fail(w, RL_EINVAL, "hw: %s: not valid UTF-8 text", path);
    w_set(w, path, 0, j);
}

void hw_put_list(struct hw_writer *w, const char *path, size_t index, const int *v, int n)
{
    const struct hw_key *k = w_key(w, path, true, false, true);
    json_t *a = k ? json_array() : NULL;
    for (int i = 0; a && i < n; i++) {
        json_t *x = w_number(w, k, v[i]);
        if (!x || json_array_append_new(a, x)) {
            json_decref(a);
            a = NULL;
        }
    }
    if (k && !a)
        w_fail(w, RL_ENOMEM, "hw: out of memory");
    w_set(w, path, index, a);
}

void hw_clear(struct hw_writer *w, const char *path)
{
    json_t *o = json_object_get(w->root, path);
    if (json_is_object(o))
        json_object_clear(o);
}

void hw_source(struct hw_writer *w, const char *path, const char *text)
{
    char norm[128];
    size_t o = 0;
    for (const char *p = path; *p && o + 1 < sizeof norm; p++) {   /* "[3]" -> "[]" */
        norm[o++] = *p;
        if (*p == '[')
            while (p[1] && p[1] != ']')
                p++;
    }
    norm[o] = 0;
    const struct hw_key *k = hw_key_find(norm);
    if (!k || k->kind == 's') {
        w_fail(w, RL_EINVAL, "hw: sources: %s: not a number of the profile format (hw/hw.c's table)", path);
        return;
    }
    json_t *j = json_string(text);
    if (!j || json_object_set_new(w->sources, path, j))
        w_fail(w, RL_EINVAL, "hw: sources: %s: not valid UTF-8 text", path);
}

int hw_writer_close(struct hw_writer *w, int precision, char **out, struct rl_err *e)
{
    *out = NULL;
    if (!w->rc && !json_object_get(w->root, "sources") && json_object_set(w->root, "sources", w->sources))
        w_fail(w, RL_ENOMEM, "hw: out of memory");
    char *text = w->rc ? NULL : json_dumps(w->root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(precision));
    if (!w->rc && !text)
        w_fail(w, RL_ENOMEM, "hw: out of memory");
    hw_writer_abort(w);
    if (w->rc) {
        if (e)
            *e = w->err;
        return w->rc;
    }
    struct hw_profile *back = malloc(sizeof *back);
    struct rl_err pe;
    int rc = back ? hw_parse(back, text, "the profile written", NULL, &pe) : RL_ENOMEM;
    free(back);
    if (rc) {
        free(text);
        return rc == RL_ENOMEM ? rl_errf(e, RL_ENOMEM, "hw: out of memory")
                               : rl_errf(e, rc, "hw: the writer made a profile its reader refuses: %s", pe.msg);
    }
    *out = text;
    return 0;
}
