/* gguf.h — what the gguf layer offers the engine beyond plumb.h: giving back mapped pages.
 * Not the reader's API (that is public, in plumb.h). */
#ifndef PLUMB_GGUF_H
#define PLUMB_GGUF_H

#include "core/core.h"

/* Drops the pages of [p, p + n) from memory when g maps its file there (pl_gguf_open); a
 * no-op for a parsed memory buffer. The bytes stay readable: they fault back in from the file. */
void pl_gguf_release(const pl_gguf *g, const void *p, size_t n);

#endif
