/* jinja.h — plumb's sandboxed Jinja2 interpreter for chat templates: compile the model's
 * template source once to an immutable AST, render it per turn from JSON data. Not a general
 * Jinja: no I/O, no autoescape, no inheritance/include/import; what chat templates use. */
#ifndef PLUMB_JINJA_H
#define PLUMB_JINJA_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/core.h"

/* A compiled template: immutable after pl_jinja_compile, so one template may be rendered
 * from several threads at once. */
typedef struct pl_jinja_template pl_jinja_template;

/* Bounds of one render; a render that passes any is PL_ERR_LIMIT naming the limit (and the
 * template position). Zero in a field means its default (the PL_JINJA_DEFAULT_* below). */
typedef struct pl_jinja_limits {
    uint64_t max_steps;      /* evaluated nodes (expressions and statements) */
    uint32_t max_depth;      /* nesting of macro calls, loops and expression evaluation */
    uint64_t max_iterations; /* loop iterations over the whole render */
    size_t max_output;       /* bytes of rendered text */
    size_t max_memory;       /* bytes of values (strings, lists, dicts) the render may build */
    /* strftime_now's clock, seconds since the epoch, shown in UTC. has_now == 0: the current
     * time (UTC). Tests and the oracle fix it so renders are reproducible. */
    int64_t now;
    int has_now;
} pl_jinja_limits;

#define PL_JINJA_DEFAULT_STEPS      50000000u
#define PL_JINJA_DEFAULT_DEPTH      256u
#define PL_JINJA_DEFAULT_ITERATIONS 10000000u
#define PL_JINJA_DEFAULT_OUTPUT     ((size_t)64 << 20)
#define PL_JINJA_DEFAULT_MEMORY     ((size_t)512 << 20)

/* Parses src (len bytes, UTF-8; NUL bytes allowed) as transformers' jinja2 environment does
 * (trim_blocks, lstrip_blocks, loop controls). Errors (PL_ERR_FORMAT for bad syntax or bad
 * UTF-8, PL_ERR_LIMIT for nesting past the parser's bound, PL_ERR_UNSUPPORTED for a literal
 * plumb cannot hold, PL_ERR_NOMEM) name line and column ("line 3, column 14: ...", columns in
 * code points); *out is NULL then. */
pl_status pl_jinja_compile(const char *src, size_t len, pl_jinja_template **out, pl_error *err);

/* Renders t with the variables of context (a JSON object: messages, tools,
 * add_generation_prompt, bos_token, eos_token, and whatever else the template reads; NULL is
 * an empty one), as transformers' apply_chat_template passes them. lim NULL: the defaults. On
 * success *out is a NUL-terminated pl_malloc'd string of *out_len bytes (free with pl_free).
 * Errors name the template's line and column: PL_ERR_INVALID_ARG for what jinja2 raises at run
 * time (an attribute of an undefined value, a type error, raise_exception: "raised: <its
 * message>"), PL_ERR_UNSUPPORTED for what plumb does not implement (a filter it does not know,
 * integers past 64 bits), PL_ERR_LIMIT for a limit, PL_ERR_NOMEM; *out is NULL then. Never
 * modifies t or context: renders of one template may run on several threads at once. */
pl_status pl_jinja_render(const pl_jinja_template *t, const json_t *context,
                          const pl_jinja_limits *lim, char **out, size_t *out_len, pl_error *err);

void pl_jinja_free(pl_jinja_template *t);

#endif
