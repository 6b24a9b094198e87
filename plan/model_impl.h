/* plan/model_impl.h — helpers shared by the model builders inside plan/ (model.c, megatron.c,
 * hf.c, model_load.c). Not for use outside plan/. */
#ifndef RL_PLAN_MODEL_IMPL_H
#define RL_PLAN_MODEL_IMPL_H

#include <jansson.h>   /* json_t: the parsed preset or config.json */

#include "plan/plan.h"

/* Largest accepted layer count and dimension: anything above is a typo, not a model. */
#define PLAN__MAX_LAYERS 10000
#define PLAN__MAX_DIM 2147483647LL

/* Clears *m and sets its name (truncated to fit). Every builder starts with it. */
void plan__model_init(struct plan_model *m, const char *name);

/* plan_model_add() with a printf-style name and up to two dimensions (ndim 1 or 2). */
int plan__addf(struct plan_model *m, struct rl_err *e, enum plan_tp_split tp, unsigned flags,
               int layer, int ndim, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));

/* Typed JSON field readers. `what` names the file in errors. A missing (or null) key gives
 * `def` when !required and an error naming the key otherwise. Integers must lie in [min, max]. */
int plan__json_int(const json_t *root, const char *what, const char *key, bool required,
                   int64_t def, int64_t min, int64_t max, int64_t *out, struct rl_err *e);
int plan__json_bool(const json_t *root, const char *what, const char *key, bool def, bool *out,
                    struct rl_err *e);
/* *out points into root (valid while root lives); def when missing or null. */
int plan__json_str(const json_t *root, const char *what, const char *key, const char *def,
                   const char **out, struct rl_err *e);

/* Megatron's --ffn-hidden-size default: 4 x hidden, or int(4 hidden x 2 / 3 / 64) x 64 with
 * --swiglu (arguments.py), computed exactly in integers as floor(hidden / 24) x 64. */
int64_t plan__megatron_default_ffn(int64_t hidden, bool swiglu);

/* Builders from parsed JSON (o is never NULL here; tp, pp >= 1). */
int plan__hf_from_json(struct plan_model *m, const json_t *root, const char *what,
                       const struct plan_model_opts *o, struct rl_err *e);
int plan__megatron_from_json(struct plan_model *m, const json_t *root, const char *what,
                             const struct plan_model_opts *o, struct rl_err *e);

/* json_loads as DeepSpeed's Python reader sees the text: integers beyond int64 and reals beyond
 * double become strings starting with PLAN__JSON_WIDE_MARK followed by the number as written,
 * "\u0000" in strings is allowed. Internal to plan/ (and its fuzz target). */
#define PLAN__JSON_WIDE_MARK '\x01'
json_t *plan__json_loads(const char *text, size_t flags, json_error_t *je);

#endif
