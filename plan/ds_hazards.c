/* plan/ds_hazards.c — the table of DeepSpeed partial-offload hazards and its matcher.
 *
 * Every entry was read in DeepSpeed's source or issue tracker (plan/README.md lists what was read).
 * An entry applies when its predicate holds for the parsed config and the row of plan/ds_rules.c
 * that holds for the config's DeepSpeed version satisfies the entry's `releases`; the table starts
 * at the release that brought partial offload, so no entry applies earlier. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "plan/ds_hazards.h"

const char *plan_hazard_kind_name(enum plan_hazard_kind k)
{
    switch (k) {
    case PLAN_HAZARD_CRASH: return "crash";
    case PLAN_HAZARD_ASSERT: return "assert";
    case PLAN_HAZARD_IGNORED: return "ignored";
    case PLAN_HAZARD_SUSPECT: return "suspect";
    }
    return "?";
}

/* Is the optimizer block's type one that DeepSpeed turns into DeepSpeedCPUAdam under offload?
 * DeepSpeed lower-cases the names it knows (runtime/config.py get_optimizer_name), and
 * runtime/engine.py _configure_basic_optimizer builds DeepSpeedCPUAdam for "adam" and "adamw". */
static bool cpu_adam_type(const char *t) { return !strcasecmp(t, "adam") || !strcasecmp(t, "adamw"); }

typedef bool hazard_pred(const struct plan_zero *z);

static bool pred_nvme(const struct plan_zero *z) { return z->offload == PLAN_OFFLOAD_NVME; }
static bool pred_stage(const struct plan_zero *z) { return z->stage < 3; }
static bool pred_torch_adam(const struct plan_zero *z)
{
    return z->has_optimizer_block && cpu_adam_type(z->optimizer_type) && z->torch_adam;
}
static bool pred_opt_type(const struct plan_zero *z)
{
    return z->has_optimizer_block && !cpu_adam_type(z->optimizer_type);
}
/* A schedule moves the lr: DeepSpeed's own (a "scheduler" block) or the client's, the norm for an HF
 * Trainer config and a Megatron-DeepSpeed launch (plan_zero.client_scheduler). */
static bool pred_scheduler(const struct plan_zero *z) { return z->has_scheduler_block || z->client_scheduler; }
/* offload_param "cpu" with pin_memory false as DeepSpeed reads it (the config's, else the
 * release's default). */
static bool pred_param_pin(const struct plan_zero *z) { return !plan_zero_param_pin(z); }
/* offload_param "cpu" with sub-groups the GPU updates: no optimizer offload, or a ratio < 1. */
static bool pred_param_gpu_update(const struct plan_zero *z)
{
    return z->offload == PLAN_OFFLOAD_NONE || (z->src_ratio != PLAN_SRC_DEFAULT && z->ratio < 1.0);
}

/* Which releases an entry applies to, as predicates over the rows of plan/ds_rules.c. */
static bool every_release(const struct plan_ds_rules *r) { (void)r; return true; }
static bool ratio_check_silent(const struct plan_ds_rules *r) { return !r->ratio_check_asserts; }
static bool ratio_check_asserts(const struct plan_ds_rules *r) { return r->ratio_check_asserts; }

static bool partial_offload(const struct plan_zero *z)
{
    /* stage3.py builds the backup (GPU) optimizer when offload is on and ratio != 1.0. */
    return z->src_ratio != PLAN_SRC_DEFAULT && z->ratio < 1.0 &&
           (z->offload == PLAN_OFFLOAD_CPU || z->offload == PLAN_OFFLOAD_NVME);
}

/* Parameter offload to the CPU (ZeRO-Infinity), whatever the ratio. */
static bool param_offload(const struct plan_zero *z) { return z->offload_param == PLAN_OFFLOAD_CPU; }

static const struct {
    struct plan_hazard h;    /* what is reported */
    hazard_pred *gate;       /* the kind of config the entry is about: a partial optimizer offload or
                                a parameter offload */
    hazard_pred *applies;    /* when, besides the gate and the version range */
} table[] = {
    {{"nvme-ratio", PLAN_HAZARD_CRASH, "zero_optimization.offload_optimizer.device", every_release,
      "crashes at initialisation (\"RuntimeError: expected input to be on cuda\"); partial offload "
      "splits the optimizer between GPU and CPU only",
      "DeepSpeed issue #4872 (maintainers: partial offload needs device \"cpu\"; #5508 asks for a CPU+NVMe split)",
      "set offload_optimizer.device to \"cpu\" (and pin_memory true)", PLAN_REPAIR_DEVICE_CPU},
     partial_offload, pred_nvme},
    {{"stage-ignored", PLAN_HAZARD_IGNORED, "zero_optimization.stage", ratio_check_silent,
      "the ratio is silently ignored (stages 1 and 2 offload the whole optimizer; the validator reads "
      "the values dict with getattr(), never finds the key and never fires)",
      "runtime/zero/config.py DeepSpeedZeroConfig.offload_ratio_check (root_validator)",
      "set zero_optimization.stage to 3 (partial offload exists only in ZeRO-3's stage3.py)", PLAN_REPAIR_STAGE_3},
     partial_offload, pred_stage},
    {{"stage-assert", PLAN_HAZARD_ASSERT, "zero_optimization.stage", ratio_check_asserts,
      "asserts while the config is parsed (\"Partial offloading only supported for ZeRO Stage 3.\")",
      "runtime/zero/config.py DeepSpeedZeroConfig.offload_ratio_check (model_validator since the "
      "pydantic v2 migration, PR #5167)",
      "set zero_optimization.stage to 3", PLAN_REPAIR_STAGE_3},
     partial_offload, pred_stage},
    {{"torch-adam", PLAN_HAZARD_ASSERT, "optimizer.params.torch_adam", every_release,
      "asserts at initialisation (\"Hybrid Optimizer Only Supports DeepSpeedCPUAdam\"): torch_adam makes "
      "the engine build torch.optim.Adam/AdamW instead of DeepSpeedCPUAdam",
      "runtime/engine.py _configure_basic_optimizer; runtime/zero/stage3.py DeepSpeedZeroOptimizer_Stage3.__init__",
      "remove \"torch_adam\" (DeepSpeed then builds DeepSpeedCPUAdam)", PLAN_REPAIR_NONE},
     partial_offload, pred_torch_adam},
    {{"optimizer-type", PLAN_HAZARD_ASSERT, "optimizer.type", every_release,
      "asserts at initialisation (\"Hybrid Optimizer Only Supports DeepSpeedCPUAdam\"): only Adam and "
      "AdamW become DeepSpeedCPUAdam (Adagrad becomes DeepSpeedCPUAdagrad, Lamb FusedLamb)",
      "runtime/engine.py _configure_basic_optimizer; runtime/zero/stage3.py DeepSpeedZeroOptimizer_Stage3.__init__",
      "use \"Adam\" or \"AdamW\", or ratio 1.0", PLAN_REPAIR_NONE},
     partial_offload, pred_opt_type},
    {{"scheduler-lr", PLAN_HAZARD_SUSPECT, "scheduler", every_release,
      "the schedule is ignored by the GPU-side sub-groups of param group 0: the backup optimizer's group 0 is "
      "a copy made at initialisation (groups 1+ are the CPU optimizer's own), so they are stepped with the lr "
      "of that moment while the schedule moves the group's; observed with WarmupLR, WarmupDecayLR, a client "
      "LambdaLR and the HF Trainer's linear warmup on DeepSpeed 0.14.1, 0.15.4, 0.16.9, 0.17.6, 0.18.9 and "
      "0.19.8 (make ds-oracle; the probe's hparams record)",
      "runtime/zero/stage3.py DeepSpeedZeroOptimizer_Stage3.__init__ (backup_optimizer: "
      "torch.optim.AdamW([backup_gpu_param], lr=self.optimizer.param_groups[0][\"lr\"], ...)) and _optimizer_step",
      "use ratio 1.0 or a constant lr; validate --probe on a short run shows every sub-group's lr per step",
      PLAN_REPAIR_NONE},
     partial_offload, pred_scheduler},
    {{"param-pin-ignored", PLAN_HAZARD_IGNORED, "zero_optimization.offload_param.pin_memory", every_release,
      "is ignored for the training copy: the 16-bit partitions' flat host buffer is pinned whatever it says "
      "(page-locked, limited by ulimit -l); it only decides whether zero.Init pins each partition before the "
      "optimizer copies it into that buffer",
      "runtime/zero/stage3.py _create_param_groups_fp16_flat_cpu_memory (pin_memory(torch.empty(...)): "
      "v0.12.4:647, v0.16.4:696, v0.19.5:826); partition_parameters.py Init._partition_param (v0.12.4:1495)",
      "set offload_param.pin_memory true and allow that many pinned bytes per rank (ulimit -l, memlock)",
      PLAN_REPAIR_NONE},
     param_offload, pred_param_pin},
    {{"param-gpu-update", PLAN_HAZARD_SUSPECT, "zero_optimization.offload_optimizer", every_release,
      "a reading of the code, not yet observed in a run: each sub-group the GPU updates is written back to "
      "the host partitions every step by a blocking copy_ of its fp32 master into the pinned 16-bit buffer, "
      "a D2H of 4 bytes per element into a pageable temporary and a host cast (step task param_writeback_d2h)",
      "runtime/zero/stage3.py _reassign_or_swap_out_partitioned_parameters (same in 0.12.3-0.19.5); "
      "PyTorch aten/src/ATen/native/cuda/Copy.cu copy_kernel_cuda (a blocking copy converts on the CPU)",
      "offload the whole optimizer with the parameters (device \"cpu\", ratio 1.0), or compare both with predict",
      PLAN_REPAIR_NONE},
     param_offload, pred_param_gpu_update},
};

static bool in_range(const struct plan_hazard *h, struct rl_version v)
{
    return rl_version_cmp(v, plan_ds_first_version()) >= 0 && h->releases(plan_ds_rules_for(v));
}

int plan_ds_hazards(const struct plan_zero *z, const struct plan_hazard **out, int cap)
{
    int n = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0] && n < cap; i++)
        if (table[i].gate(z) && in_range(&table[i].h, z->ds_version) && table[i].applies(z))
            out[n++] = &table[i].h;
    return n;
}

void plan_hazard_versions(const struct plan_hazard *h, char *buf, size_t n)
{
    plan_ds_rows_versions(h->releases, buf, n);
}

/* The config's value at the hazard's key, as the user wrote it. */
static void value_text(const struct plan_hazard *h, const struct plan_zero *z, char *buf, size_t n)
{
    if (!strcmp(h->id, "nvme-ratio"))
        snprintf(buf, n, "\"nvme\"");
    else if (!strncmp(h->id, "stage-", 6))
        snprintf(buf, n, "%d", z->stage);
    else if (!strcmp(h->id, "torch-adam"))
        snprintf(buf, n, "true");
    else if (!strcmp(h->id, "optimizer-type"))
        snprintf(buf, n, "\"%s\"", z->optimizer_type);
    else if (!strcmp(h->id, "param-pin-ignored"))
        snprintf(buf, n, "false%s", z->src_offload_param_pin == PLAN_SRC_DEFAULT ? " (the release's default)" : "");
    else if (!strcmp(h->id, "param-gpu-update") && z->offload == PLAN_OFFLOAD_NONE)
        snprintf(buf, n, "absent (every sub-group on the GPU)");
    else if (!strcmp(h->id, "param-gpu-update"))
        snprintf(buf, n, "ratio %g", z->ratio);
    else if (z->scheduler_type[0])
        snprintf(buf, n, "type \"%s\"", z->scheduler_type);
    else if (!z->has_scheduler_block && !strcmp(h->id, "scheduler-lr"))
        snprintf(buf, n, "absent (the client's: an HF Trainer or Megatron run)");
    else
        snprintf(buf, n, "present");
}

void plan_hazard_line(const struct plan_hazard *h, const struct plan_zero *z, char *buf, size_t n)
{
    char val[64], ver[48];
    value_text(h, z, val, sizeof val);
    plan_hazard_versions(h, ver, sizeof ver);
    if (!strncmp(h->id, "param-", 6))
        snprintf(buf, n, "%s %s with offload_param.device \"cpu\": %s [DeepSpeed %s; source: %s]; fix: %s", h->key,
                 val, h->what, ver, h->source, h->fix);
    else
        snprintf(buf, n, "%s %s with offload_optimizer.ratio %g: %s [DeepSpeed %s; source: %s]; fix: %s", h->key,
                 val, z->ratio, h->what, ver, h->source, h->fix);
}

int plan_ds_hazards_assume_fixed(struct plan_zero *z)
{
    const struct plan_hazard *hz[PLAN_HAZARDS_MAX];
    int n = plan_ds_hazards(z, hz, PLAN_HAZARDS_MAX), applied = 0;
    for (int i = 0; i < n; i++) {
        if (hz[i]->repair == PLAN_REPAIR_DEVICE_CPU && z->offload != PLAN_OFFLOAD_CPU) {
            z->offload = PLAN_OFFLOAD_CPU;
            applied++;
        } else if (hz[i]->repair == PLAN_REPAIR_STAGE_3 && z->stage != 3) {
            z->stage = 3;
            applied++;
        }
    }
    return applied;
}
