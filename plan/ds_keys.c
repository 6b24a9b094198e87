/* plan/ds_keys.c — lookups in the generated table of DeepSpeed's strict config keys (ds_keys.h). */
#include <string.h>

#include "plan/ds_keys.h"

/* One strict block over a range of releases. */
struct ds_block {
    const char *path;           /* the block's JSON path */
    struct rl_version since;    /* first release where it is a strict model */
    struct rl_version until;    /* first release where it no longer is ({0,0,0}: still is) */
};

/* One key of a strict block over a range of releases. */
struct ds_key {
    const char *block;          /* the block's JSON path */
    const char *key;            /* a field name or an alias */
    struct rl_version since;    /* first release that declares it */
    struct rl_version until;    /* first release that does not ({0,0,0}: the last read still does) */
};

/* A field name and its alias. */
struct ds_alias {
    const char *block;          /* the block's JSON path */
    const char *name;           /* the field's name */
    const char *alias;          /* its alias */
};

#include "plan/ds_keys_table.h"

#define X_BLOCK(p, s1, s2, s3, u1, u2, u3) {p, {s1, s2, s3}, {u1, u2, u3}},
static const struct ds_block blocks[] = {PLAN_DS_KEYS_BLOCKS};
#undef X_BLOCK
#define X_KEY(b, k, s1, s2, s3, u1, u2, u3) {b, k, {s1, s2, s3}, {u1, u2, u3}},
static const struct ds_key keys[] = {PLAN_DS_KEYS_ROWS};
#undef X_KEY
#define X_ALIAS(b, n, a) {b, n, a},
static const struct ds_alias aliases[] = {PLAN_DS_KEYS_ALIASES};
#undef X_ALIAS

/* v in [since, until); an until of 0.0.0 is open. */
static bool in_range(struct rl_version v, struct rl_version since, struct rl_version until)
{
    const struct rl_version open = {0, 0, 0};
    return rl_version_cmp(v, since) >= 0 && (rl_version_cmp(until, open) == 0 || rl_version_cmp(v, until) < 0);
}

/* A release older than the first one read takes the first one's table. */
static struct rl_version clamp(struct rl_version v)
{
    return rl_version_cmp(v, blocks[0].since) < 0 ? blocks[0].since : v;
}

bool plan_ds_block_strict(const char *block, struct rl_version v)
{
    v = clamp(v);
    for (size_t i = 0; i < RL_COUNT(blocks); i++)
        if (!strcmp(blocks[i].path, block) && in_range(v, blocks[i].since, blocks[i].until))
            return true;
    return false;
}

bool plan_ds_key_known(const char *block, const char *key, struct rl_version v)
{
    v = clamp(v);
    for (size_t i = 0; i < RL_COUNT(keys); i++)
        if (!strcmp(keys[i].block, block) && !strcmp(keys[i].key, key) && in_range(v, keys[i].since, keys[i].until))
            return true;
    return false;
}

int plan_ds_block_keys(const char *block, struct rl_version v, bool any, const char **out, int max)
{
    v = clamp(v);
    int n = 0;
    for (size_t i = 0; i < RL_COUNT(keys) && n < max; i++)
        if (!strcmp(keys[i].block, block) && (any || in_range(v, keys[i].since, keys[i].until))) {
            bool dup = false;
            for (int k = 0; k < n; k++)
                dup |= !strcmp(out[k], keys[i].key);
            if (!dup)
                out[n++] = keys[i].key;
        }
    return n;
}

const char *plan_ds_key_alias(const char *block, const char *name)
{
    for (size_t i = 0; i < RL_COUNT(aliases); i++)
        if (!strcmp(aliases[i].block, block) && !strcmp(aliases[i].name, name))
            return aliases[i].alias;
    return NULL;
}
