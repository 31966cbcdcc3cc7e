/* hold.h — a streaming text filter for the commands that print generated text: it holds back
 * what may still become one of its patterns, and either stops at a pattern or drops it. */
#ifndef PLUMB_TOOLS_HOLD_H
#define PLUMB_TOOLS_HOLD_H

#include <stddef.h>
#include <stdio.h>

#include "plumb.h"

/* HOLD_STOP: the first pattern ends the text (it is not written: --stop in `plumb run`);
 * HOLD_DROP: every pattern is removed (control tokens' text in `plumb chat` without
 * --special). */
enum { HOLD_STOP = 0, HOLD_DROP = 1 };

typedef struct hold {
    char *buf; /* bytes not yet written */
    size_t len, cap;
    char **pats; /* owned copies */
    size_t n_pats;
    int mode, stopped;
} hold;

/* 0, or -1 when out of memory. pats may be empty (then every byte passes at once). */
int hold_init(hold *h, int mode, const char *const *pats, size_t n_pats);
/* HOLD_DROP over the text of every control token of m (empty when m has no tokenizer). */
int hold_init_control(hold *h, const pl_model *m);
void hold_free(hold *h);
/* Writes to f the part of text that no pattern can still claim. Returns 1 once a HOLD_STOP
 * pattern appeared (nothing after it is written, ever), 0 otherwise, -1 when out of memory. */
int hold_push(hold *h, FILE *f, const char *text, size_t n);
/* At the end of the text: writes what was held back (unless stopped). */
void hold_flush(hold *h, FILE *f);

#endif
