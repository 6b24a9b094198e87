/* cli/json_out.c — schema_version and shortest reals for every --json output (cli/json_out.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_out.h"

json_t *cli_json_versioned(json_t *root)
{
    if (!json_is_object(root))
        return root;
    json_t *rest = json_copy(root); /* shallow: members are shared, not copied */
    if (!rest)
        return root;
    json_object_clear(root);
    json_object_set_new(root, "schema_version", json_integer(CLI_JSON_SCHEMA_VERSION));
    json_object_del(rest, "schema_version");
    json_object_update(root, rest);
    json_decref(rest);
    return root;
}

/* Writes the shortest form of v into buf (at least 32 bytes): the fewest significant digits
 * (1..17) whose "%.*g" strtod()s back to v bit for bit; 17 always does for a finite double. */
static void shortest(double v, char *buf, size_t n)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, n, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* jansson's spelling: no '+' and no leading zeros in the exponent, ".0" on integral values. */
    char *ex = strchr(buf, 'e');
    if (ex) {
        char *d = ex + 1, *s = ex + 1;
        if (*s == '+')
            s++;
        else if (*s == '-')
            *d++ = *s++;
        while (*s == '0' && s[1])
            s++;
        memmove(d, s, strlen(s) + 1);
    } else if (!strchr(buf, '.')) {
        strcat(buf, ".0");
    }
}

void cli_json_shorten_reals(char *text)
{
    char *w = text; /* the text is only ever shortened, so it is rewritten in place */
    const char *r = text;
    bool in_string = false;
    while (*r) {
        if (in_string) {
            if (*r == '\\' && r[1]) {
                *w++ = *r++;
            } else if (*r == '"') {
                in_string = false;
            }
            *w++ = *r++;
            continue;
        }
        if (*r == '"') {
            in_string = true;
            *w++ = *r++;
            continue;
        }
        if (*r == '-' || (*r >= '0' && *r <= '9')) {
            size_t len = strspn(r, "-+0123456789.eE");
            bool real = memchr(r, '.', len) || memchr(r, 'e', len) || memchr(r, 'E', len);
            char num[64], out[40];
            if (real && len < sizeof num) {
                memcpy(num, r, len);
                num[len] = 0;
                shortest(strtod(num, NULL), out, sizeof out);
                size_t ol = strlen(out);
                if (ol <= len) {
                    memcpy(w, out, ol);
                    w += ol;
                    r += len;
                    continue;
                }
            }
            memmove(w, r, len);
            w += len;
            r += len;
            continue;
        }
        *w++ = *r++;
    }
    *w = 0;
}

char *cli_json_dumps(const json_t *j, size_t flags)
{
    char *text = json_dumps(j, (flags & ~(size_t)JSON_REAL_PRECISION(31)) | JSON_REAL_PRECISION(17));
    if (text)
        cli_json_shorten_reals(text);
    return text;
}

int cli_json_dumpf(const json_t *j, FILE *f, size_t flags)
{
    char *text = cli_json_dumps(j, flags);
    if (!text)
        return -1;
    int rc = fputs(text, f) == EOF ? -1 : 0;
    free(text);
    return rc;
}
