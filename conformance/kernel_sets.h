/* kernel_sets.h — which kernel sets the conformance suites run over: every compiled set the
 * CPU supports, as kernels/registry.h lists them. Not a registry of its own. */
#ifndef PLUMB_KERNEL_SETS_H
#define PLUMB_KERNEL_SETS_H

#include "kernels.h"

/* Calls fn(ks, ctx) for every compiled kernel set whose supported() says yes, in registry
 * order (best first, ref last); returns how many sets ran. A set's NULL entries fall back
 * to ref, which is checked on its own, so callers skip them. */
typedef void (*ks_visit_fn)(const struct pl_kernels *ks, void *ctx);
int for_each_supported_set(ks_visit_fn fn, void *ctx);

#endif
