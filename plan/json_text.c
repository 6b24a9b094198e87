/* plan/json_text.c — comments and trailing commas blanked out of a config's text (json_text.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "plan/json_text.h"

/* Line number (from 1) of offset i of s. */
static int line_of(const char *s, size_t i)
{
    int line = 1;
    for (size_t k = 0; k < i; k++)
        line += s[k] == '\n';
    return line;
}

int plan_json_relax(const char *text, char **out, int *blanked, struct rl_err *e)
{
    size_t len = strlen(text);
    char *o = malloc(len + 1);
    *out = NULL;
    if (blanked)
        *blanked = 0;
    if (!o)
        return rl_errf(e, RL_ENOMEM, "out of memory reading the config's text");
    memcpy(o, text, len + 1);
    /* The last comma seen outside strings and comments, while only whitespace and comments
     * followed it (SIZE_MAX: none): a '}' or ']' next makes it a trailing comma. */
    size_t comma = (size_t)-1;
    int n = 0;
    for (size_t i = 0; i < len;) {
        char c = o[i];
        if (c == '"') {   /* a string, escapes included: nothing inside is a comment */
            comma = (size_t)-1;
            for (i++; i < len && o[i] != '"'; i++)
                if (o[i] == '\\' && i + 1 < len)
                    i++;
            i++;
            continue;
        }
        if (c == '\'') {
            bool multi = i + 2 < len && o[i + 1] == '\'' && o[i + 2] == '\'';
            free(o);
            return rl_errf(e, RL_EINVAL, "line %d: a %s (hjson syntax ratiolab does not read); allowed: "
                           "JSON with // # /* */ comments and trailing commas, strings in double quotes",
                           line_of(text, i), multi ? "''' multi-line string" : "single-quoted string");
        }
        bool line_comment = c == '#' || (c == '/' && i + 1 < len && o[i + 1] == '/');
        if (line_comment) {
            while (i < len && o[i] != '\n')
                o[i++] = ' ';
            n++;
            continue;
        }
        if (c == '/' && i + 1 < len && o[i + 1] == '*') {
            size_t start = i;
            char *end = strstr(o + i + 2, "*/");
            if (!end) {
                free(o);
                return rl_errf(e, RL_EINVAL, "line %d: a /* comment that is never closed with */", line_of(text, start));
            }
            for (size_t stop = (size_t)(end - o) + 2; i < stop; i++)
                if (o[i] != '\n')
                    o[i] = ' ';
            n++;
            continue;
        }
        if (c == ',') {
            comma = i++;
            continue;
        }
        if ((c == '}' || c == ']') && comma != (size_t)-1) {
            o[comma] = ' ';
            n++;
        }
        if (!strchr(" \t\r\n", c))
            comma = (size_t)-1;
        i++;
    }
    *out = o;
    if (blanked)
        *blanked = n;
    return 0;
}
