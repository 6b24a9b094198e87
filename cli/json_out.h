/* cli/json_out.h — how every --json output of ratiolab is written: a "schema_version" key first
 * (docs/json-*.md describe each schema), and every real as the shortest text that reads back to
 * the same double (0.3, never 0.29999999999999999). */
#ifndef RL_CLI_JSON_OUT_H
#define RL_CLI_JSON_OUT_H

#include <jansson.h>
#include <stdio.h>

/* Raised when a field of any --json output changes meaning or is removed (adding one is not). */
#define CLI_JSON_SCHEMA_VERSION 1

/* Puts "schema_version" first in the object root (moving its other members after it); returns
 * root. A NULL or non-object root is returned unchanged. */
json_t *cli_json_versioned(json_t *root);
/* json_dumps with shortest reals (any JSON_REAL_PRECISION in flags is replaced). Returns malloc'd
 * text, NULL when out of memory. */
char *cli_json_dumps(const json_t *j, size_t flags);
/* Same, written to f. Returns 0, -1 when the dump or the write failed. */
int cli_json_dumpf(const json_t *j, FILE *f, size_t flags);
/* Rewrites, in place, every real in JSON text as the shortest "%.*g" that reads back to the same
 * double (at most 17 digits), keeping a ".0" on integral values so they stay reals. Exposed for the
 * tests. */
void cli_json_shorten_reals(char *text);

#endif
