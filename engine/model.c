/* model.c — pl_model: a GGUF view (mapped file or caller memory) plus what is bound from it.
 * Not the forward pass: architectures and tensor binding are added by the runtime. */
#include <string.h>

#include "internal.h"

struct pl_model {
    pl_gguf *gguf;
};

static pl_status check_params(const pl_model_params *params, pl_error *err)
{
    if (params && params->flags != 0)
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "pl_model_params.flags = 0x%x: no flags are defined", params->flags);
    return PL_OK;
}

static pl_status wrap(pl_model **out, pl_gguf *g, pl_error *err)
{
    pl_model *m = pl_calloc(1, sizeof *m);
    if (!m) {
        pl_gguf_free(g);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for the model");
    }
    m->gguf = g;
    *out = m;
    return pl_ok(err);
}

pl_status pl_model_load(pl_model **out, const char *path, const pl_model_params *params,
                        pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    pl_status s = check_params(params, err);
    if (s) return s;
    pl_gguf *g;
    if ((s = pl_gguf_open(&g, path, err))) return s;
    return wrap(out, g, err);
}

pl_status pl_model_load_memory(pl_model **out, const void *data, size_t size,
                               const pl_model_params *params, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    pl_status s = check_params(params, err);
    if (s) return s;
    pl_gguf *g;
    if ((s = pl_gguf_parse(&g, data, size, err))) return s;
    return wrap(out, g, err);
}

void pl_model_free(pl_model *m)
{
    if (!m) return;
    pl_gguf_free(m->gguf);
    pl_free(m);
}

const pl_gguf *pl_model_gguf(const pl_model *m)
{
    return m ? m->gguf : NULL;
}
