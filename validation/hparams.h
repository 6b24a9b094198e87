/* validation/hparams.h — the hyperparameters every sub-group was stepped with, as the probe
 * recorded them at every optimizer step (docs/json-probe.md "hparams"), against its param
 * group's current ones: the lr, betas, eps and weight decay the engine's param group held when
 * the step began (what a scheduler set), the optimizer its placement calls for, one update per
 * optimizer step and the step count that step gives. Never prints. */
#ifndef RL_VALIDATION_HPARAMS_H
#define RL_VALIDATION_HPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rl.h"
#include "validation/probe.h"
#include "validation/val.h"

#define VAL_HP_MAX_STEPS 100000     /* optimizer steps a probe may record */
#define VAL_HP_MAX_GROUPS 4096      /* param groups */
#define VAL_HP_MAX_UPDATES 4000000  /* sub-group updates */

/* Adam's hyperparameters of one param group. */
struct val_hp {
    double lr;                     /* learning rate */
    double beta1;                  /* first-moment decay */
    double beta2;                  /* second-moment decay */
    double eps;                    /* denominator's epsilon */
    double weight_decay;           /* decoupled (AdamW) or L2 decay */
};

/* One sub-group's update as the probe saw it inside the stepping optimizer's step. */
struct val_hp_update {
    int step;                      /* the optimizer step (1-based) */
    int sub_group;                 /* DeepSpeed's sub-group index, -1 when the probe could not tell */
    int param_group;               /* the optimizer's param group that held the sub-group, -1 when none did */
    char optimizer[24];            /* "optimizer" (DeepSpeed's own) or "backup_optimizer" */
    char optimizer_class[48];      /* its class ("DeepSpeedCPUAdam", "AdamW") */
    struct val_hp held;            /* what that param group held when the optimizer stepped */
    int64_t opt_step;              /* the parameter's step count after the update, -1 when null */
};

struct val_hparams {
    bool present;                  /* the probe has an "hparams" member */
    int n_steps;                   /* optimizer steps of `engine` */
    int n_groups;                  /* param groups per step (the first step's count) */
    struct val_hp *engine;         /* [n_steps * n_groups]: the engine's groups when each step began (owned) */
    struct val_hp_update *up;      /* updates, in the order they ran (owned) */
    int n_up;                      /* entries */
};

/* What was wrong with a sub-group's updates (the first finding, in step order). */
enum val_hp_kind {
    VAL_HP_OK,                     /* stepped once per step, by its optimizer, with its group's current values */
    VAL_HP_HELD_OTHER,             /* the stepping optimizer held a value other than the group's current one */
    VAL_HP_NOT_STEPPED,            /* no update at some step */
    VAL_HP_STEPPED_TWICE,          /* more than one update at some step */
    VAL_HP_STEP_COUNT,             /* the step count after the update is not the optimizer step's */
    VAL_HP_OTHER_OPTIMIZER,        /* stepped by an optimizer other than the one holding its state */
};

struct val_hp_sub {
    enum val_hp_kind kind;         /* the first finding */
    int step;                      /* at which optimizer step (0 for VAL_HP_OK) */
    int n_steps_bad;               /* steps with any finding */
    const char *field;             /* VAL_HP_HELD_OTHER: "lr", "beta1", "beta2", "eps", "weight_decay" */
    double held;                   /* that field as held (or the step count / update count) */
    double current;                /* as the param group had it (or the expected count) */
};

struct val_hparams_result {
    enum val_status status;        /* PASS, FAIL, or info when the probe has no hparams */
    char detail[640];              /* one line: what was checked, or the first findings */
    struct val_hp_sub *sub;        /* [n_sub] of the probe's placement (owned) */
    int n_sub;                     /* entries */
    int n_bad;                     /* sub-groups with a finding */
    bool lr_changed;               /* some group's lr differs between two recorded steps (a schedule ran) */
};

/* Parses the "hparams" member of a probe document (absent: present = false, 0). What is
 * malformed is RL_EINVAL naming the file and the JSON path. O(size). */
int val_hparams_parse(const char *text, size_t len, const char *path, struct val_hparams *h, struct rl_err *e);
int val_hparams_read(const char *path, struct val_hparams *h, struct rl_err *e);
void val_hparams_free(struct val_hparams *h);

/* Judges every sub-group of pr's placement against h. r->sub is allocated (RL_ENOMEM). */
int val_hparams_check(const struct val_probe *pr, const struct val_hparams *h, struct val_hparams_result *r,
                      struct rl_err *e);
void val_hparams_result_free(struct val_hparams_result *r);
const char *val_hp_kind_name(enum val_hp_kind k);

#endif
