/* hf_util.h — the helpers convert.c and safetensors.c share (defined in safetensors.c).
 * Internal to features/. */
#ifndef PLUMB_FEATURES_HF_UTIL_H
#define PLUMB_FEATURES_HF_UTIL_H

#include <jansson.h>

/* What a jansson value is, in words for error messages, is pl_json_kind (plumb.h). */
/* "dir/name" in a new pl_malloc'ed string, or NULL without memory. */
char *pl_join_path(const char *dir, const char *name);

#endif
