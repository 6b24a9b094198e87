/* tests/check_sim_hw.c — hardware profiles: every catalog profile loads, every number is
 * sourced, and bad profiles are refused with the JSON path, the value and what is allowed. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/collective.h"
#include "sim/gemm.h"
#include "sim/hw.h"
#include "tests/util.h"

START_TEST(hw_every_catalog_profile_loads)
{
    char **names;
    int n;
    struct rl_err e;
    ck_assert_int_eq(sim_hw_list(tu_catalog(), &names, &n, &e), 0);
    const char *want[] = {"alps-gh200", "dgx-a100-40g", "dgx-a100-80g", "dgx-h100", "dgx1-v100", "gh200", "hgx-h200", "polaris-a100-40g"};
    ck_assert_int_ge(n, 8);
    for (int i = 0; i < 8; i++) {
        bool found = false;
        for (int k = 0; k < n; k++)
            found |= strcmp(names[k], want[i]) == 0;
        ck_assert_msg(found, "profile %s missing", want[i]);
    }
    for (int k = 0; k < n; k++) {
        struct hw_profile hw;
        ck_assert_msg(sim_hw_load(&hw, tu_catalog(), names[k], &e) == 0, "%s: %s", names[k], e.msg);
        ck_assert_str_eq(hw.name, names[k]);
        ck_assert_int_gt(hw.n_sources, 20);
        free(names[k]);
    }
    free(names);
}
END_TEST

START_TEST(hw_dgx1_v100_topology)
{
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_int_eq(sim_hw_load(&hw, tu_catalog(), "dgx1-v100", &e), 0);
    ck_assert_int_eq(hw.gpus, 8);
    ck_assert_int_eq(hw.n_sockets, 2);
    ck_assert_int_eq(hw.socket[0].cores, 12);
    ck_assert_int_eq(hw.n_switches, 4);
    for (int g = 0; g < 8; g++) {
        ck_assert_int_eq(hw.gpu_switch[g], g / 2);   /* two GPUs per PCIe switch */
        ck_assert_int_eq(hw.sw[hw.gpu_switch[g]].socket, g / 4);
    }
    ck_assert_int_eq(hw.gpu_mem_bytes, 17179869184LL);
    ck_assert(hw.h2d_pinned_gbps == 12.2);
    ck_assert(hw.d2h_pinned_gbps == 12.9);
    /* A path works as well as a name. */
    char path[4200];
    snprintf(path, sizeof path, "%s/hardware/dgx1-v100.json", tu_catalog());
    ck_assert_int_eq(sim_hw_load(&hw, tu_catalog(), path, &e), 0);
    ck_assert_int_eq(sim_hw_load(&hw, tu_catalog(), "dgx-9000", &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "dgx-9000"));
    ck_assert_ptr_nonnull(strstr(e.msg, "dgx1-v100"));   /* lists what is allowed */
}
END_TEST

/* Loads the V100 profile, applies `edit` (jansson on the parsed document), and parses it back. */
static int parse_edited(void (*edit)(json_t *), struct rl_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/hardware/dgx1-v100.json", tu_catalog());
    json_t *root = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(root);
    edit(root);
    char *text = json_dumps(root, 0);
    struct hw_profile hw;
    int rc = sim_hw_parse(&hw, text, "edited.json", e);
    free(text);
    json_decref(root);
    return rc;
}

static void drop_source(json_t *r) { json_object_del(json_object_get(r, "sources"), "gpu.hbm_gbps"); }
static void name_with_newline(json_t *r) { json_object_set_new(r, "name", json_string("my-node\nhardware x")); }
static void model_with_tab(json_t *r) { json_object_set_new(json_object_get(r, "gpu"), "model", json_string("V100\tSXM2")); }
static void unknown_key(json_t *r) { json_object_set_new(json_object_get(r, "gpu"), "hbm_gbs", json_real(900)); }
static void negative(json_t *r) { json_object_set_new(json_object_get(r, "gpu"), "h2d_pinned_gbps", json_real(-3)); }
static void twice(json_t *r)
{
    json_t *sw = json_object_get(json_object_get(r, "node"), "pcie_switches");
    json_array_set_new(json_object_get(json_array_get(sw, 1), "gpus"), 0, json_integer(0));
}
static void missing(json_t *r) { json_object_del(json_object_get(r, "cpu_adam"), "dram_bytes_per_element"); }
static void fractional(json_t *r)
{
    json_object_set_new(json_array_get(json_object_get(json_object_get(r, "node"), "sockets"), 1),
                        "cores", json_real(11.5));
}

/* Arrays where a number belongs: read as 0 before (a 0-byte GPU that "does not fit", a 0-core
 * socket reported as an internal resource). */
static void array_for_number(json_t *r)
{
    json_object_set_new(json_object_get(r, "gpu"), "memory_bytes", json_array());
}
static void array_for_cores(json_t *r)
{
    json_t *a = json_array();
    json_array_append_new(a, json_integer(12));
    json_object_set_new(json_array_get(json_object_get(json_object_get(r, "node"), "sockets"), 0), "cores", a);
}
static void number_in_socket_list(json_t *r)
{
    json_array_append_new(json_object_get(json_object_get(r, "node"), "sockets"), json_integer(3));
}

/* The host.* keys are optional: a profile without them gets the documented defaults; a value out
 * of range is refused naming its path. */
static void no_host(json_t *r)
{
    json_object_del(r, "host");
    const char *k[] = {"host.fault_gbps_per_thread", "host.fault_gbps_per_socket", "host.memcpy_gbps_per_thread",
                       "host.cast_elements_per_s_per_thread"};
    for (int i = 0; i < 4; i++)
        json_object_del(json_object_get(r, "sources"), k[i]);
}
static void zero_fault(json_t *r) { json_object_set_new(json_object_get(r, "host"), "fault_gbps_per_thread", json_real(0)); }

START_TEST(hw_host_keys_are_optional)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/hardware/dgx1-v100.json", tu_catalog());
    json_t *root = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(root);
    no_host(root);
    char *text = json_dumps(root, 0);
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_msg(sim_hw_parse(&hw, text, "nohost.json", &e) == 0, "%s", e.msg);
    ck_assert(hw.host_fault_gbps_per_thread == HW_DEFAULT_FAULT_GBPS_PER_THREAD);
    ck_assert(hw.host_cast_elems_per_thread == HW_DEFAULT_CAST_ELEMS_PER_THREAD);
    ck_assert(hw.host_fault_gbps_per_socket == 0 && hw.host_memcpy_gbps_per_thread == 0);
    free(text);
    json_decref(root);
    ck_assert_int_eq(parse_edited(zero_fault, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "host.fault_gbps_per_thread"));
}
END_TEST

START_TEST(hw_bad_profiles_name_the_path)
{
    struct rl_err e;
    ck_assert_int_eq(parse_edited(drop_source, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpu.hbm_gbps"));
    ck_assert_ptr_nonnull(strstr(e.msg, "source"));
    ck_assert_int_eq(parse_edited(unknown_key, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpu.hbm_gbs: unknown key"));
    ck_assert_int_eq(parse_edited(negative, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpu.h2d_pinned_gbps: -3 is outside"));
    ck_assert_int_eq(parse_edited(twice, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "node.pcie_switches[1].gpus[0]"));
    ck_assert_int_eq(parse_edited(missing, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "cpu_adam.dram_bytes_per_element: missing"));
    ck_assert_int_eq(parse_edited(fractional, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "node.sockets[1].cores: 11.5"));
    ck_assert_int_eq(parse_edited(array_for_number, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpu.memory_bytes: must be a number, not an array"));
    ck_assert_int_eq(parse_edited(array_for_cores, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "node.sockets[0].cores: must be a number, not an array"));
    ck_assert_int_eq(parse_edited(number_in_socket_list, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "node.sockets[2]: must be an object"));
    /* A name printed on one line of a table holds no control character (a newline made predict's
     * hardware row two lines). */
    ck_assert_int_eq(parse_edited(name_with_newline, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "edited.json: name: a control character (0x0a)"));
    ck_assert_int_eq(parse_edited(model_with_tab, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpu.model: a control character (0x09)"));
    struct hw_profile hw;
    ck_assert_int_eq(sim_hw_parse(&hw, "{\"name\": ", "trunc.json", &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "trunc.json"));
}
END_TEST

/* dgx1-v100 with the first-touch keys of a machine under THP `mode` (NULL: no mode key): 2 us per
 * 4 KiB fault, 400 us per 2 MiB fault (round figures, not the defaults). */
static int parse_thp(const char *mode, bool per_page, struct hw_profile *hw, struct rl_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/hardware/dgx1-v100.json", tu_catalog());
    json_t *root = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(root);
    json_t *h = json_object_get(root, "host"), *src = json_object_get(root, "sources");
    if (mode)
        json_object_set_new(h, "thp_mode", json_string(mode));
    if (per_page) {
        json_object_set_new(h, "fault_us_per_4k_page", json_real(2));
        json_object_set_new(h, "fault_us_per_2m_page", json_real(400));
        json_object_set_new(src, "host.fault_us_per_4k_page", json_string("test figure"));
        json_object_set_new(src, "host.fault_us_per_2m_page", json_string("test figure"));
    }
    char *text = json_dumps(root, 0);
    int rc = sim_hw_parse(hw, text, "thp.json", e);
    free(text);
    json_decref(root);
    return rc;
}

/* Is `path` one of hw->defaulted's comma-separated entries? */
static bool defaulted(const struct hw_profile *hw, const char *path)
{
    char buf[sizeof hw->defaulted + 2];
    snprintf(buf, sizeof buf, ",%s,", hw->defaulted);
    char want[128];
    snprintf(want, sizeof want, ",%s,", path);
    return strstr(buf, want) != NULL;
}

/* A 32 MiB temporary (glibc's mmap threshold) takes 32 MiB / 2 MiB = 16 faults with THP always and
 * 32 MiB / 4 KiB = 8192 with madvise or never: 16 x 400 us = 6.4 ms against 8192 x 2 us = 16.384 ms
 * on one thread, and the flow model's per-thread rate is the page over its time. */
START_TEST(hw_first_touch_faults_per_page)
{
    struct hw_profile hw;
    struct rl_err e;
    const int64_t t32 = INT64_C(32) << 20;
    ck_assert_msg(parse_thp("always", true, &hw, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(hw.host_page_bytes, 2097152);
    ck_assert_int_eq(sim_hw_faults(&hw, t32), 16);
    ck_assert(fabs(sim_hw_fault_ns(&hw, t32) - 6.4e6) < 1e-3);
    ck_assert(fabs(hw.host_fault_gbps_per_thread - 2097152.0 / 400e3) < 1e-12);
    ck_assert(!defaulted(&hw, "host.thp_mode") && !defaulted(&hw, "host.fault_us_per_2m_page"));
    ck_assert_msg(parse_thp("madvise", true, &hw, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(hw.host_page_bytes, 4096);
    ck_assert_int_eq(sim_hw_faults(&hw, t32), 8192);
    ck_assert(fabs(sim_hw_fault_ns(&hw, t32) - 16.384e6) < 1e-3);
    ck_assert(fabs(hw.host_fault_gbps_per_thread - 4096.0 / 2e3) < 1e-12);
    /* --thp always on that profile: its 2 MiB figure */
    ck_assert_int_eq(sim_hw_set_thp(&hw, "always", &e), 0);
    ck_assert_int_eq(sim_hw_faults(&hw, t32), 16);
    ck_assert(fabs(sim_hw_fault_ns(&hw, t32) - 6.4e6) < 1e-3);
    ck_assert_int_eq(sim_hw_set_thp(&hw, "never", &e), 0);
    ck_assert_int_eq(sim_hw_faults(&hw, t32), 8192);
    ck_assert_int_eq(sim_hw_set_thp(&hw, "sometimes", &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "thp_mode: 'sometimes' is not allowed; allowed: always, madvise, never"));
    /* no per-page keys: the catalog's 4 KiB rate (a desktop page, unverified) stands for 4 KiB pages,
       and the mode and the rate are named as defaults */
    ck_assert_msg(parse_thp(NULL, false, &hw, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(hw.host_thp_mode, "madvise");
    ck_assert(hw.host_fault_gbps_per_thread == 2.1);
    ck_assert(fabs(sim_hw_fault_ns(&hw, t32) - 8192.0 * 4096.0 / 2.1) < 1e-3);
    ck_assert(defaulted(&hw, "host.thp_mode") && defaulted(&hw, "host.fault_gbps_per_thread"));
    /* THP always without a 2 MiB figure: the default one, named */
    ck_assert_msg(parse_thp("always", false, &hw, &e) == 0, "%s", e.msg);
    ck_assert(fabs(sim_hw_fault_ns(&hw, t32) - 16.0 * HW_DEFAULT_FAULT_US_PER_2M_PAGE * 1e3) < 1e-3);
    ck_assert(defaulted(&hw, "host.fault_us_per_2m_page"));
    ck_assert_int_eq(parse_thp("sometimes", false, &hw, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "thp.json: host.thp_mode: 'sometimes' is not allowed; allowed: always, madvise, never"));
}
END_TEST

/* CUDA's staged pageable copy: the bounce buffer's DMA at the pinned rate and the calling thread's
 * memcpy, pipelined: min(pinned, memcpy); without a memcpy figure the profile's pageable rate. */
START_TEST(hw_pageable_copy_is_a_bounce_buffer)
{
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_msg(sim_hw_load(&hw, tu_catalog(), "dgx1-v100", &e) == 0, "%s", e.msg);
    hw.h2d_pinned_gbps = 12, hw.d2h_pinned_gbps = 13, hw.h2d_pageable_gbps = 2, hw.d2h_pageable_gbps = 3;
    hw.host_memcpy_gbps_per_thread = 0;
    ck_assert(sim_hw_pageable_gbps(&hw, true) == 2 && sim_hw_pageable_gbps(&hw, false) == 3);
    hw.host_memcpy_gbps_per_thread = 10;
    ck_assert(sim_hw_pageable_gbps(&hw, true) == 10 && sim_hw_pageable_gbps(&hw, false) == 10);
    hw.host_memcpy_gbps_per_thread = 20;
    ck_assert(sim_hw_pageable_gbps(&hw, true) == 12 && sim_hw_pageable_gbps(&hw, false) == 13);
}
END_TEST

/* The per-shape GEMM model on a round GPU: 1000 TFLOP/s, large-GEMM efficiency 0.8, 100 SMs (8e12
 * FLOP/s each), 5 us per kernel, HBM 1000 GB/s at efficiency 1. */
/* An inter-node bus bandwidth given in the profile, with its source. */
static void inter_busbw_15(json_t *r)
{
    json_object_set_new(json_object_get(r, "network"), "inter_busbw_gbps", json_real(15));
    json_object_set_new(json_object_get(r, "sources"), "network.inter_busbw_gbps", json_string("test figure"));
}

/* NCCL's collectives across nodes (sim/collective.h), worked out by hand from NCCL's
 * src/graph/tuning.cc with the profile's base latency (latency_us.collective_inter, 40 us on
 * dgx-a100-40g) and the default per-step latencies (ring 3.4 us inside a node, 9.6 us across;
 * tree 28 and 50 us), at the line rate 200 GB/s when network.inter_busbw_gbps is absent. */
START_TEST(hw_nccl_ring_and_tree_across_nodes)
{
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_msg(sim_hw_load(&hw, tu_catalog(), "dgx-a100-40g", &e) == 0, "%s", e.msg);
    ck_assert(hw.lat_coll_inter_us == 40 && hw.net_gbps == 200 && hw.net_inter_busbw_gbps == 0);
    ck_assert_str_eq(hw.coll_defaulted, "network.inter_busbw_gbps,latency_us.nccl_ring_step_intra,"
                     "latency_us.nccl_ring_step_inter,latency_us.nccl_tree_step_intra,latency_us.nccl_tree_step_inter");
    /* named only for a layout across nodes */
    ck_assert(!strstr(hw.defaulted, "latency_us.nccl_") && !strstr(hw.defaulted, "inter_busbw"));
    struct sim_coll_cost c;
    /* all-gather of 100 MB, 16 ranks on 2 nodes: a ring of 15 steps, 1 across nodes:
       40 + 14 x 3.4 + 9.6 = 97.2 us; bus 1e8 x 15/16 = 93.75e6 B at 200 GB/s = 468.75 us */
    ck_assert_int_eq(sim_coll_cost(&hw, SIM_COLL_AG, 1e8, 16, 2, &c), 0);
    ck_assert(c.algo == SIM_COLL_RING && c.steps == 15 && c.inter_steps == 1);
    ck_assert_double_eq_tol(c.latency_us, 97.2, 1e-9);
    ck_assert_double_eq_tol(c.bus_bytes, 93.75e6, 1e-6);
    ck_assert_double_eq_tol(c.time_us, 565.95, 1e-9);
    /* all-reduce of 1 MB, 64 ranks on 8 nodes: ring 126 steps, 14 across: 40 + 112 x 3.4 + 14 x
       9.6 = 555.2 us + 1.96875e6 B / 200 GB/s = 565.04375 us; tree 2 (7 + 3) = 20 steps, 6
       across: 40 + 14 x 28 + 6 x 50 = 732 us + 2e6 B / 200 GB/s = 742 us: the ring */
    ck_assert_int_eq(sim_coll_cost(&hw, SIM_COLL_AR, 1e6, 64, 8, &c), 0);
    ck_assert(c.algo == SIM_COLL_RING && c.steps == 126 && c.inter_steps == 14);
    ck_assert_double_eq_tol(c.time_us, 565.04375, 1e-9);
    /* the same on 32 nodes (256 ranks): ring 510 steps, 62 across: 40 + 448 x 3.4 + 62 x 9.6 =
       2158.4 us (+ 9.9609375); tree 2 (7 + 5) = 24 steps, 10 across: 40 + 14 x 28 + 10 x 50 =
       932 us + 10 us = 942 us: the tree */
    ck_assert_int_eq(sim_coll_cost(&hw, SIM_COLL_AR, 1e6, 256, 32, &c), 0);
    ck_assert(c.algo == SIM_COLL_TREE && c.steps == 24 && c.inter_steps == 10);
    ck_assert_double_eq_tol(c.latency_us, 932, 1e-9);
    ck_assert_double_eq_tol(c.time_us, 942, 1e-9);
    ck_assert_str_eq(sim_coll_algo_name(c.algo), "tree");
    /* all-gather and reduce-scatter have no tree */
    ck_assert_int_eq(sim_coll_cost(&hw, SIM_COLL_RS, 1e6, 256, 32, &c), 0);
    ck_assert(c.algo == SIM_COLL_RING && c.steps == 255 && c.inter_steps == 31);
    /* an effective bus bandwidth of 15 GB/s (far below the 200 GB/s line rate): the 100 MB
       all-gather's bus bytes take 93.75e6 / 15e3 = 6250 us, 6347.2 us with its latency */
    char path[4200];
    snprintf(path, sizeof path, "%s/hardware/dgx1-v100.json", tu_catalog());
    json_t *root = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(root);
    inter_busbw_15(root);
    char *text = json_dumps(root, 0);
    ck_assert_msg(sim_hw_parse(&hw, text, "busbw.json", &e) == 0, "%s", e.msg);
    free(text);
    json_decref(root);
    ck_assert(hw.net_inter_busbw_gbps == 15 && sim_coll_busbw_gbps(&hw) == 15);
    ck_assert_ptr_null(strstr(hw.coll_defaulted, "inter_busbw"));
    hw.lat_coll_inter_us = 40;
    ck_assert_int_eq(sim_coll_cost(&hw, SIM_COLL_AG, 1e8, 16, 2, &c), 0);
    ck_assert_double_eq_tol(c.time_us, 6347.2, 1e-9);
    /* not a group */
    ck_assert_int_eq(sim_coll_cost(&hw, SIM_COLL_AG, 1e6, 1, 1, &c), RL_EINVAL);
    ck_assert_int_eq(sim_coll_cost(&hw, SIM_COLL_AG, 1e6, 6, 4, &c), RL_EINVAL);
}
END_TEST

START_TEST(hw_gemm_rate_depends_on_the_shape)
{
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_msg(sim_hw_load(&hw, tu_catalog(), "dgx1-v100", &e) == 0, "%s", e.msg);
    ck_assert(!sim_gemm_model_on(&hw));   /* a profile without gpu.gemm_efficiency keeps the constant */
    hw.tensor_tflops = 1000, hw.gemm_efficiency = 0.8, hw.gpu_sms = 100, hw.gemm_fixed_us = 5;
    hw.hbm_gbps = 1000, hw.hbm_efficiency = 1;
    ck_assert(sim_gemm_model_on(&hw));
    /* 4096^3: 32 x 32 = 1024 tiles in ceil(1024 / 100) = 11 waves of 2 x 128 x 128 x 4096 / 8e12 =
       16.777216 us, the 32 MiB output at 1000 GB/s 33.554432 us, 5 us: 223.103808 us */
    ck_assert(fabs(sim_gemm_time_s(&hw, 1, 4096, 4096, 4096, true) - 223.103808e-6) < 1e-12);
    /* 256 x 2048 x 4096: 2 x 16 = 32 tiles, split-K min(floor(100 / 32), 4096 / 1024) = 3, one wave of
       2 x 128 x 128 x 4096 / 3 / 8e12 = 5.592405 us, the output written 3 times and read twice
       (256 x 2048 x 2 x 5 B, 5.24288 us), 5 us */
    ck_assert(fabs(sim_gemm_time_s(&hw, 1, 256, 2048, 4096, true) - (2.0 * 128 * 128 * 4096 / 3 / 8e12 + 5.24288e-6 + 5e-6)) < 1e-12);
    /* attention of 32 heads at seq 2048, materialized: Q K^T is 32 x 16 x 16 = 8192 tiles in 82 waves;
       head dim 16: 82 x 0.065536 us + the 256 MiB of scores 268.435456 us + 5 us = 278.809408 us for
       4.29e9 FLOPs (15.4 TFLOP/s); head dim 128: 82 x 0.524288 + 268.435456 + 5 = 316.427072 us for
       8 times the FLOPs (108.6 TFLOP/s, 7.0 times the rate) */
    double t16 = sim_gemm_time_s(&hw, 32, 2048, 2048, 16, true), t128 = sim_gemm_time_s(&hw, 32, 2048, 2048, 128, true);
    ck_assert(fabs(t16 - 278.809408e-6) < 1e-12);
    ck_assert(fabs(t128 - 316.427072e-6) < 1e-12);
    double r16 = 2.0 * 32 * 2048 * 2048 * 16 / t16, r128 = 2.0 * 32 * 2048 * 2048 * 128 / t128;
    ck_assert(fabs(r128 / r16 - 8.0 * 278.809408 / 316.427072) < 1e-9);
    /* FlashAttention keeps the scores on chip: the tiles and the kernel's time only */
    ck_assert(fabs(sim_gemm_time_s(&hw, 32, 2048, 2048, 16, false) - (82 * 0.065536e-6 + 5e-6)) < 1e-12);
    hw.gpu_emulated = 1;   /* an emulated device's GEMM rate is measured on its own list */
    ck_assert(!sim_gemm_model_on(&hw));
}
END_TEST

/* The memory-bound kernels around a layer's GEMMs, counted by hand from the frameworks' code
 * (sim/gemm.h). A Megatron-DeepSpeed Llama-like layer: h 4096, FFN 11008, 32 heads, 4 KV heads,
 * rotary, SwiGLU, dropouts 0, TP 1, seq 2048, micro-batch 4 (s b = 8192 tokens), materialized:
 * per token in units of h: norms 2 x 4 = 8, adds 2 x 6 = 12, SwiGLU 10 x 11008 / 4096 = 26.875,
 * the GQA repeat 2 (2 + 2 x 4 / 32) = 4.5, rotary of q and the repeated k 20 x 2 = 40, q's split 4
 * and the context permute 4: 99.375 x 4096 B x 8192 tokens = 3,334,471,680 B; the fused softmax
 * 4 B x 32 heads x 2048^2 x 4 = 2,147,483,648 B. With both dropouts at 0.1: the adds' masks
 * 2 x 4096 x 8192 = 67,108,864 B more, the attention dropout 5 B per score 2,684,354,560 B more.
 * The same shape in transformers (LlamaRMSNorm unfused, rotary before the repeat, sdpa's flash):
 * norms 72, adds 12, SwiGLU 26.875, repeat 4.5, rotary 20 x (1 + 4 / 32) = 22.5, the context
 * transpose 4: 141.875 x 4096 x 8192 = 4,760,535,040 B. */
START_TEST(hw_layer_elementwise_bytes_by_hand)
{
    struct plan_arch a = {.kind = PLAN_ARCH_MEGATRON_GPT, .hidden = 4096, .ffn_hidden = 11008, .heads = 32,
                          .kv_heads = 4, .head_dim = 128, .swiglu = true, .rotary = true, .tp = 1,
                          .dropout_known = true, .attention_dropout = 0, .hidden_dropout = 0};
    ck_assert_double_eq(sim_layer_elementwise_bytes(&a, 2048, 4, true), 3334471680.0 + 2147483648.0);
    /* with --use-flash-attn: no scores, Megatron's rearranges of q, k, v and the context 16
       instead of the permute's 4: 12 x 4096 x 8192 = 402,653,184 B more per token */
    ck_assert_double_eq(sim_layer_elementwise_bytes(&a, 2048, 4, false), 3334471680.0 + 402653184.0);
    a.attention_dropout = a.hidden_dropout = 0.1;
    ck_assert_double_eq(sim_layer_elementwise_bytes(&a, 2048, 4, true),
                        3334471680.0 + 67108864.0 + 2147483648.0 + 2684354560.0);
    a.dropout_known = false;   /* a hand-built arch: both dropouts on */
    a.attention_dropout = a.hidden_dropout = 0;
    ck_assert_double_eq(sim_layer_elementwise_bytes(&a, 2048, 4, true),
                        3334471680.0 + 67108864.0 + 2147483648.0 + 2684354560.0);
    struct plan_arch f = a;
    f.kind = PLAN_ARCH_HF_LLAMA, f.dropout_known = true;
    ck_assert_double_eq(sim_layer_elementwise_bytes(&f, 2048, 4, false), 4760535040.0);
}
END_TEST

/* Each profile with the per-shape model gives the measured rates it was solved from (the rates as
 * the sources print them, not the model's output): dgx-h100 OpenXLA's sm_90 table's largest and
 * smallest bf16 entries, 783.33 TFLOP/s at 4096^3 and 11.46 TFLOP/s at 512 x 256 x 256; the A100
 * profiles ml-engineering's Maximum Achievable Matmul FLOPS table's A100 SXM entry, 271.2 TFLOP/s at
 * 1024 x 10240 x 5120. The profiles round their efficiency to 4 digits, hence 0.05 %. */
START_TEST(hw_gemm_profiles_give_their_sourced_rates)
{
    static const struct { const char *hw; double m, n, k, tflops; } cases[] = {
        {"dgx-h100", 4096, 4096, 4096, 783.33},
        {"dgx-h100", 512, 256, 256, 11.46},
        {"dgx-a100-40g", 1024, 10240, 5120, 271.2},
        {"dgx-a100-80g", 1024, 10240, 5120, 271.2},
        {"polaris-a100-40g", 1024, 10240, 5120, 271.2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct hw_profile hw;
        struct rl_err e;
        ck_assert_msg(sim_hw_load(&hw, tu_catalog(), cases[i].hw, &e) == 0, "%s", e.msg);
        ck_assert_msg(sim_gemm_model_on(&hw), "%s has no per-shape GEMM model", cases[i].hw);
        double m = cases[i].m, n = cases[i].n, k = cases[i].k;
        double tflops = 2.0 * m * n * k / sim_gemm_time_s(&hw, 1, m, n, k, true) / 1e12;
        ck_assert_msg(fabs(tflops / cases[i].tflops - 1) < 5e-4, "%s %g x %g x %g: %.3f TFLOP/s, measured %.2f",
                      cases[i].hw, m, n, k, tflops, cases[i].tflops);
    }
}
END_TEST

Suite *sim_hw_suite(void)
{
    Suite *s = suite_create("sim_hw");
    TCase *c = tcase_create("profiles");
    tcase_add_test(c, hw_every_catalog_profile_loads);
    tcase_add_test(c, hw_dgx1_v100_topology);
    tcase_add_test(c, hw_bad_profiles_name_the_path);
    tcase_add_test(c, hw_host_keys_are_optional);
    tcase_add_test(c, hw_first_touch_faults_per_page);
    tcase_add_test(c, hw_pageable_copy_is_a_bounce_buffer);
    tcase_add_test(c, hw_gemm_rate_depends_on_the_shape);
    tcase_add_test(c, hw_layer_elementwise_bytes_by_hand);
    tcase_add_test(c, hw_gemm_profiles_give_their_sourced_rates);
    tcase_add_test(c, hw_nccl_ring_and_tree_across_nodes);
    suite_add_tcase(s, c);
    return s;
}
