/* sim/hw_host.c — the first touch of fresh pageable memory, per page (sim/hw.h; sim/README.md
 * "Host costs of PyTorch's copies"). A fresh anonymous mapping of B bytes takes ceil(B / page)
 * faults, each costing the profile's time per page of that size on the faulting thread (the
 * kernel's fault entry, the page's allocation and its zeroing). The page is what the kernel gives
 * a plain mapping: neither glibc nor PyTorch's CPU allocator advises one, so it gets 2 MiB
 * transparent huge pages only when the mode is "always", 4 KiB pages under "madvise" and "never". */
#include <math.h>
#include <string.h>

#include "sim/hw.h"

static bool thp_mode_ok(const char *m)
{
    return strcmp(m, "always") == 0 || strcmp(m, "madvise") == 0 || strcmp(m, "never") == 0;
}

/* Time per page of `page` bytes, us. */
static double us_per_page(const struct hw_profile *hw, int64_t page)
{
    return page == HW_PAGE_2M ? hw->host_fault_us_per_2m_page : hw->host_fault_us_per_4k_page;
}

/* The per-thread rate the flow model charges: page / time per page, GB/s. */
static double rate_of(const struct hw_profile *hw)
{
    return (double)hw->host_page_bytes / (us_per_page(hw, hw->host_page_bytes) * 1e3);
}

int sim_hw_host_resolve(struct hw_profile *hw, const char *what, struct rl_err *e)
{
    if (!hw->host_thp_mode[0]) {
        snprintf(hw->host_thp_mode, sizeof hw->host_thp_mode, "madvise");   /* a common distribution default */
        hw_note_default(hw, "host.thp_mode");
    }
    if (!thp_mode_ok(hw->host_thp_mode))
        return rl_errf(e, RL_EINVAL, "%s: host.thp_mode: '%s' is not allowed; allowed: always, madvise, never", what,
                       hw->host_thp_mode);
    int64_t mode_page = strcmp(hw->host_thp_mode, "always") == 0 ? HW_PAGE_2M : HW_PAGE_4K;
    /* host.fault_gbps_per_thread was measured at host.page_bytes when the profile gives it (calibrate
       writes both), else at 4 KiB pages (what every earlier profile's source cites) */
    int64_t rate_page = hw->host_page_bytes ? hw->host_page_bytes : HW_PAGE_4K;
    if (hw->host_page_bytes == 0)
        hw->host_page_bytes = mode_page;
    if (hw->host_page_bytes != HW_PAGE_4K && hw->host_page_bytes != HW_PAGE_2M)
        return rl_errf(e, RL_EINVAL, "%s: host.page_bytes: %lld is not allowed; allowed: 4096 (base pages) or "
                       "2097152 (transparent huge pages)", what, (long long)hw->host_page_bytes);
    /* The per-thread rate stands for the time per page of the size it was measured at when the
       profile gives no per-page figure for that size. */
    bool have4 = hw->host_fault_us_per_4k_page > 0, have2 = hw->host_fault_us_per_2m_page > 0;
    bool rate_fills = hw->host_fault_rate_given && !(rate_page == HW_PAGE_2M ? have2 : have4);
    bool keep_rate = rate_fills && rate_page == hw->host_page_bytes;
    if (rate_fills) {
        double us = (double)rate_page / (hw->host_fault_gbps_per_thread * 1e3);
        if (rate_page == HW_PAGE_2M)
            hw->host_fault_us_per_2m_page = us, have2 = true;
        else
            hw->host_fault_us_per_4k_page = us, have4 = true;
    }
    if (!have4)
        hw->host_fault_us_per_4k_page = HW_DEFAULT_FAULT_US_PER_4K_PAGE;
    if (!have2)
        hw->host_fault_us_per_2m_page = HW_DEFAULT_FAULT_US_PER_2M_PAGE;
    /* Only the figure of the page the prediction uses is a default it relies on. */
    if (hw->host_page_bytes == HW_PAGE_2M ? !have2 : !have4)
        hw_note_default(hw, hw->host_page_bytes == HW_PAGE_2M ? "host.fault_us_per_2m_page"
                                                                      : "host.fault_us_per_4k_page");
    if (!keep_rate)
        hw->host_fault_gbps_per_thread = rate_of(hw);
    return 0;
}

int sim_hw_set_thp(struct hw_profile *hw, const char *mode, struct rl_err *e)
{
    if (!mode || !thp_mode_ok(mode))
        return rl_errf(e, RL_EINVAL, "thp_mode: '%s' is not allowed; allowed: always, madvise, never", mode ? mode : "");
    snprintf(hw->host_thp_mode, sizeof hw->host_thp_mode, "%s", mode);
    int64_t page = strcmp(mode, "always") == 0 ? HW_PAGE_2M : HW_PAGE_4K;
    if (page == hw->host_page_bytes)
        return 0;   /* the same page: the profile's rate stands */
    hw->host_page_bytes = page;
    hw->host_fault_gbps_per_thread = rate_of(hw);
    return 0;
}

int64_t sim_hw_faults(const struct hw_profile *hw, int64_t bytes)
{
    int64_t page = hw->host_page_bytes > 0 ? hw->host_page_bytes : HW_PAGE_4K;
    return bytes > 0 ? (bytes + page - 1) / page : 0;
}

double sim_hw_fault_ns(const struct hw_profile *hw, int64_t bytes)
{
    return (double)sim_hw_faults(hw, bytes) * us_per_page(hw, hw->host_page_bytes) * 1e3;
}

double sim_hw_pageable_gbps(const struct hw_profile *hw, bool h2d)
{
    double pinned = h2d ? hw->h2d_pinned_gbps : hw->d2h_pinned_gbps;
    if (hw->host_memcpy_gbps_per_thread <= 0)
        return h2d ? hw->h2d_pageable_gbps : hw->d2h_pageable_gbps;
    return hw->host_memcpy_gbps_per_thread < pinned ? hw->host_memcpy_gbps_per_thread : pinned;
}
