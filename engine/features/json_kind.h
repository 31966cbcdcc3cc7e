/* json_kind.h — the one JSON helper convert.c and safetensors.c share: what a jansson value
 * is, in words for error messages ("an object", "a string", ...). Internal to features/. */
#ifndef PLUMB_FEATURES_JSON_KIND_H
#define PLUMB_FEATURES_JSON_KIND_H

#include <jansson.h>

const char *pl_json_kind(const json_t *v);

#endif
