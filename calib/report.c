/* calib/report.c — what `ratiolab calibrate` hands back besides the measurements: the profile's
 * default name and file and the check of a given name, every measured figure as the JSON `calibrate --json` prints, and the GPU
 * profile assembled over the --base profile's file (see calib.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"

void calib_profile_names(const char *name, const char *out, const char *host, char *name_buf, size_t name_size,
                         char *out_buf, size_t out_size)
{
    if (name)
        snprintf(name_buf, name_size, "%s", name);
    else
        snprintf(name_buf, name_size, "calibrated-%s", host);
    if (out)
        snprintf(out_buf, out_size, "%s", out);
    else
        snprintf(out_buf, out_size, "%s.json", name_buf);
}

int calib_profile_name_check(const char *name, struct rl_err *e)
{
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return rl_errf(e, RL_EINVAL, "name: a control character (0x%02x) at byte %d; allowed: printable text (it is "
                           "the profile's name, printed in predict's tables)", *p, (int)(p - (const unsigned char *)name));
    if (!name[0])
        return rl_errf(e, RL_EINVAL, "name: empty; allowed: printable text");
    return 0;
}

json_t *calib_report_json(const struct calib *c, const char *out)
{
    json_t *o = json_object();
    json_object_set_new(o, "host", json_string(c->host));
    json_object_set_new(o, "date", json_string(c->date));
    json_object_set_new(o, "cpu", json_string(c->cpu_model));
    json_object_set_new(o, "cores", json_integer(c->cores));
    json_t *d = json_array(), *ad = json_array();
    for (int t = 0; t < c->n_threads; t++) {
        json_t *x = calib_figure_json(&c->dram_gbps[t]);
        json_object_set_new(x, "threads", json_integer(t + 1));
        json_array_append_new(d, x);
        x = calib_figure_json(&c->adam_elems_per_s[t]);
        json_object_set_new(x, "threads", json_integer(t + 1));
        json_array_append_new(ad, x);
    }
    json_object_set_new(o, "dram_triad_gbps", d);
    json_object_set_new(o, "cpu_adam_elements_per_s", ad);
    json_object_set_new(o, "copy_gbps", calib_figure_json(&c->copy_gbps));
    json_object_set_new(o, "copy_all_devices_gbps", calib_figure_json(&c->copy_all_gbps));
    json_object_set_new(o, "device_threads", json_integer(c->device_threads));
    json_object_set_new(o, "device_adam_elements_per_s", calib_figure_json(&c->device_adam_elems_per_s));
    json_object_set_new(o, "device_gemm_flops", calib_figure_json(&c->gemm_flops));
    json_object_set_new(o, "launch_us", calib_figure_json(&c->launch_us));
    const struct calib_host *h = &c->host_costs;
    json_t *hf = json_array();
    for (int t = 0; t < h->n_threads; t++) {
        json_t *x = json_object();
        json_object_set_new(x, "threads", json_integer(t + 1));
        json_object_set_new(x, "first_touch_gbps", calib_figure_json(&h->fault_gbps[t]));
        json_object_set_new(x, "memcpy_gbps", calib_figure_json(&h->memcpy_gbps[t]));
        json_object_set_new(x, "bf16_to_fp32_elements_per_s", calib_figure_json(&h->cast_elems_per_s[t]));
        json_array_append_new(hf, x);
    }
    json_object_set_new(o, "host_costs", hf);
    json_object_set_new(o, "transparent_hugepages", json_string(h->thp));
    json_object_set_new(o, "transparent_hugepages_defrag", json_string(h->thp_defrag));
    json_object_set_new(o, "host_costs_faults_per_block", json_integer(h->faults_per_block));
    json_object_set_new(o, "host_costs_load_average", json_pack("{s:f,s:f}", "before", h->load_before[0], "after",
                                                                h->load_after[0]));
    json_object_set_new(o, "host_costs_wall_s", json_real(h->wall_s));
    json_object_set_new(o, "profile", json_string(out));
    return o;
}

int calib_gpu_profile_over(const struct calib *c, const struct calib_gpu *g, const char *catalog_dir,
                           const char *base, const char *name, char **out, struct rl_err *e)
{
    char path[4096];
    size_t n = strlen(base);
    if (strchr(base, '/') || (n > 5 && strcmp(base + n - 5, ".json") == 0))
        snprintf(path, sizeof path, "%s", base);
    else
        snprintf(path, sizeof path, "%s/hardware/%s.json", catalog_dir, base);
    char *text = NULL;
    size_t len;
    if (rl_read_file(path, &text, &len, e))
        return rl_err_prefix(e, "base");
    int rc = calib_gpu_profile(c, g, text, name, out, e);
    free(text);
    return rc;
}
