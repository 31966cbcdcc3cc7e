/* utf8.h — strict UTF-8 helpers (utf8.c) for the tokenizer layer. Internal. Not a normalizer:
 * bytes are checked and decoded, never changed. */
#ifndef PLUMB_UTF8_H
#define PLUMB_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "plumb.h" /* pl_utf8_char: the length of the valid character at p, 0 if invalid */

/* 1 if p[0..n) could still become a valid character with more bytes (a strict prefix). */
int pl_utf8_incomplete(const unsigned char *p, size_t n);
/* The code point of the valid character at p, len bytes (len from pl_utf8_char). */
uint32_t pl_utf8_cp(const unsigned char *p, size_t len);

#endif
