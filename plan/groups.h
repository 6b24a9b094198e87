/* plan/groups.h — param groups a user builds: a group file (docs/inputs.md, "Param-group files":
 * one line per group, in the order the optimizer gets them, each listing parameter names or
 * fnmatch(3) patterns) or the names a probe recorded per group, applied to a model's tensor list.
 * Pure: reads a file (plan_group_spec_read) and never prints. */
#ifndef RL_PLAN_GROUPS_H
#define RL_PLAN_GROUPS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/rl.h"
#include "plan/plan.h"

/* Bounds of a group file: larger is RL_EINVAL naming the line. */
#define PLAN_GROUP_FILE_MAX_BYTES (1 << 20)   /* the whole file */
#define PLAN_GROUP_MAX_PATTERNS 65536         /* names and patterns over all groups */
#define PLAN_GROUP_LABEL_MAX 32               /* a group's label, with its NUL */

/* One name or pattern of a group. */
struct plan_group_pattern {
    char *text;                    /* the name or pattern (owned), 1..PLAN_NAME_MAX-1 bytes */
    int group;                     /* the group it belongs to, 0-based */
    int line;                      /* its line in the file (0 for a spec built from a probe) */
    bool glob;                     /* has a *, ? or [: matched with fnmatch, else compared whole */
};

/* Groups as a user listed them. Invariant: every group has at least one pattern, groups are
 * numbered 0..n_groups-1 in file order, and at most one group (rest_group) is the single
 * pattern "*", which takes every parameter no other group names. */
struct plan_group_spec {
    char source[160];              /* "FILE" or "--probe FILE", for messages and headings */
    int n_groups;                  /* 1..PLAN_MAX_GROUPS */
    char label[PLAN_MAX_GROUPS][PLAN_GROUP_LABEL_MAX]; /* "label:" of each group, "" when none */
    int line[PLAN_MAX_GROUPS];     /* the line each group is on (0 from a probe) */
    int rest_group;                /* the group that is "*", -1 when none */
    bool ordered;                  /* the names are in the order DeepSpeed packed each group (a
                                      probe's): the plan packs them so (plan_tensor.pack_key) */
    struct plan_group_pattern *pat;/* every name and pattern, in file order (owned) */
    int n_pat;                     /* entries */
    int cap_pat;                   /* allocated entries */
};

void plan_group_spec_init(struct plan_group_spec *s, const char *source);
void plan_group_spec_free(struct plan_group_spec *s);
/* Parses a group file's text (len bytes, NUL not required); path names it in messages
 * ("groups.txt: line 3: ..."). A line is `[label:] NAME-OR-PATTERN ...`; `#` starts a comment;
 * blank lines are skipped. RL_EINVAL for a byte outside printable ASCII, a label or pattern
 * that is empty or too long, more than PLAN_MAX_GROUPS groups, a "*" beside other patterns or
 * in two groups, no group. O(len). */
int plan_group_spec_parse(const char *text, size_t len, const char *path, struct plan_group_spec *s,
                          struct rl_err *e);
/* The same on a file (at most PLAN_GROUP_FILE_MAX_BYTES). */
int plan_group_spec_read(const char *path, struct plan_group_spec *s, struct rl_err *e);
/* Appends one exact name to group g (creating groups up to g), for a spec built from a probe's
 * recorded names. */
int plan_group_spec_add_name(struct plan_group_spec *s, int g, const char *name, struct rl_err *e);

/* Assigns each tensor of m the group the spec gives it: a group that names it exactly, else the
 * one group whose pattern matches it, else rest_group. RL_EINVAL naming the tensor for one that
 * no group takes or two groups' patterns take (or two groups name exactly), and naming the group
 * for one that takes no tensor, and for an exact name (not a pattern) the model does not have. Sets m->n_groups and m->group_rule = PLAN_GROUPS_LIST; m is unchanged on
 * error. O(tensors x patterns). */
int plan_model_group_spec(struct plan_model *m, const struct plan_group_spec *s, struct rl_err *e);

#endif
