/* hf_util.h — the helpers convert.c and safetensors.c share (both defined in safetensors.c).
 * Internal to features/. */
#ifndef PLUMB_FEATURES_HF_UTIL_H
#define PLUMB_FEATURES_HF_UTIL_H

#include <jansson.h>

/* What a jansson value is, in words for error messages ("an object", "a string", ...). */
const char *pl_json_kind(const json_t *v);
/* "dir/name" in a new pl_malloc'ed string, or NULL without memory. */
char *pl_join_path(const char *dir, const char *name);

#endif
