/* kernel_sets.c — iterates the registry's compiled sets for the conformance suites.
 * Not selection: every supported set runs, not just the one the engine would pick. */
#include "kernel_sets.h"
#include "registry.h"

int for_each_supported_set(ks_visit_fn fn, void *ctx)
{
    int ran = 0;
    for (int i = 0; i < pl_kernel_set_count(); i++) {
        const struct pl_kernels *ks = pl_kernel_set(i);
        if (!ks->supported()) continue;
        fn(ks, ctx);
        ran++;
    }
    return ran;
}
