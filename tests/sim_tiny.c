/* tests/sim_tiny.c — the tiny node and the rounding of tests/sim_tiny.h. */
#include <check.h>

#include "tests/sim_tiny.h"
#include "tests/util.h"

struct hw_profile tu_sim_tiny_hw(void)
{
    struct hw_profile hw;
    struct rl_err e;
    ck_assert_msg(sim_hw_load(&hw, tu_catalog(), "dgx1-v100", &e) == 0, "%s", e.msg);
    hw.gpus = 1;
    hw.n_sockets = 1;
    hw.socket[0] = (struct hw_socket){.cores = 4, .dram_gbps = 100};
    hw.n_switches = 1;
    hw.sw[0] = (struct hw_switch){.socket = 0, .uplink_gbps = 1000, .n_gpus = 1, .gpus = {0}};
    hw.gpu_switch[0] = 0;
    hw.h2d_pinned_gbps = hw.d2h_pinned_gbps = 20;
    hw.h2d_pageable_gbps = hw.d2h_pageable_gbps = 10;
    hw.hbm_gbps = 1000;
    hw.hbm_efficiency = 1;
    hw.lat_launch_us = hw.lat_copy_us = hw.lat_coll_intra_us = hw.lat_coll_inter_us = 0;
    hw.cpu_adam_elems_per_core = 1e9;
    hw.host_fault_gbps_per_thread = 1;
    hw.host_fault_gbps_per_socket = 2;
    hw.host_memcpy_gbps_per_thread = 5;
    hw.host_cast_elems_per_thread = 1e9;
    hw.host_zero3_us_fwd = hw.host_zero3_us_bwd = 0;   /* the host issues every block at once */
    hw.host_zero3_part_us_fwd = hw.host_zero3_part_us_bwd = 0;
    return hw;
}

int64_t tu_ceil_ns(long double ns)
{
    int64_t n = (int64_t)ns;
    return (long double)n < ns - 1e-6L ? n + 1 : n;
}
