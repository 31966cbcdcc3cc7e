/* quant_cmp.c — compares a llama-quantize output with plumb's, tensor by tensor (perf/
 * quant_identity.sh runs it). An instrument, not a test: it reads what the peer wrote.
 *
 * usage: quant_cmp IN.gguf LLAMA.gguf TYPE [PLUMB.gguf]
 * For every tensor of LLAMA.gguf: its type against the type plumb writes (PLUMB.gguf's when
 * given, else pl_ftype_plan_tensors on IN.gguf as pl_model_quantize reads it), and its bytes
 * against PLUMB.gguf's. Prints each tensor that differs, then one line:
 *   tensors N same_type T same_bytes B            (B is "-" without PLUMB.gguf)
 * Exit status: 0 all the same, 1 a difference, 2 bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plumb.h"

static int fail(const char *what, const pl_error *err)
{
    fprintf(stderr, "quant_cmp: %s: %s\n", what, err->msg);
    return 2;
}

static char *cstr(pl_str s)
{
    char *p = malloc((size_t)s.len + 1);
    if (!p) return NULL;
    memcpy(p, s.ptr, (size_t)s.len);
    p[s.len] = 0;
    return p;
}

/* "<arch>.<key>" as an unsigned integer, or def. */
static int64_t hp(const pl_gguf *g, const char *arch, const char *key, int64_t def)
{
    char full[160];
    uint32_t v;
    snprintf(full, sizeof full, "%s.%s", arch, key);
    return pl_gguf_get_u32(g, full, &v, NULL) == PL_OK ? (int64_t)v : def;
}

/* The plan for every tensor of in, with the model facts pl_model_quantize reads. */
static int plan_of(const pl_gguf *in, pl_ftype f, pl_tensor_plan *plans, char **names)
{
    uint64_t n = pl_gguf_n_tensors(in);
    pl_tensor_spec *sp = calloc(n ? n : 1, sizeof *sp);
    if (!sp) return 2;
    for (uint64_t i = 0; i < n; i++) {
        pl_tensor_info ti;
        if (pl_gguf_tensor(in, i, &ti, NULL) != PL_OK) return 2;
        sp[i] = (pl_tensor_spec){.name = names[i], .type = ti.type, .n_dims = ti.n_dims};
        memcpy(sp[i].ne, ti.ne, sizeof sp[i].ne);
    }
    pl_str a;
    char arch[64] = "";
    if (pl_gguf_get_string(in, "general.architecture", &a, NULL) == PL_OK && a.len < 64) {
        memcpy(arch, a.ptr, (size_t)a.len);
        arch[a.len] = 0;
    }
    pl_plan_model m = {.arch = arch[0] ? arch : NULL};
    m.n_layer = hp(in, arch, "block_count", 0);
    m.n_head = hp(in, arch, "attention.head_count", 0);
    m.n_head_kv = hp(in, arch, "attention.head_count_kv", m.n_head);
    m.n_expert = hp(in, arch, "expert_count", 0);
    pl_error err;
    int rc = 0;
    if (pl_ftype_plan_tensors(f, 0, &m, sp, n, plans, &err) != PL_OK) rc = fail("plan", &err);
    free(sp);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: quant_cmp IN.gguf LLAMA.gguf TYPE [PLUMB.gguf]\n");
        return 2;
    }
    pl_error err;
    pl_ftype f;
    if (pl_ftype_from_name(argv[3], &f, &err) != PL_OK) return fail(argv[3], &err);
    pl_gguf *in = NULL, *ll = NULL, *pb = NULL;
    if (pl_gguf_open(&in, argv[1], &err) != PL_OK) return fail(argv[1], &err);
    if (pl_gguf_open(&ll, argv[2], &err) != PL_OK) return fail(argv[2], &err);
    if (argc == 5 && pl_gguf_open(&pb, argv[4], &err) != PL_OK) return fail(argv[4], &err);

    uint64_t n_in = pl_gguf_n_tensors(in);
    char **names = calloc(n_in ? n_in : 1, sizeof *names);
    pl_tensor_plan *plans = calloc(n_in ? n_in : 1, sizeof *plans);
    if (!names || !plans) return 2;
    for (uint64_t i = 0; i < n_in; i++) {
        pl_tensor_info ti;
        if (pl_gguf_tensor(in, i, &ti, &err) != PL_OK) return fail(argv[1], &err);
        if (!(names[i] = cstr(ti.name))) return 2;
    }
    if (plan_of(in, f, plans, names)) return 2;

    uint64_t n = pl_gguf_n_tensors(ll), same_type = 0, same_bytes = 0;
    if (n != n_in)
        printf("  tensor count: llama-quantize %llu, input %llu\n", (unsigned long long)n,
               (unsigned long long)n_in);
    for (uint64_t i = 0; i < n; i++) {
        pl_tensor_info lt, pt, it;
        if (pl_gguf_tensor(ll, i, &lt, &err) != PL_OK) return fail(argv[2], &err);
        char *name = cstr(lt.name);
        if (!name) return 2;
        int64_t ii = pl_gguf_find_tensor(in, name);
        if (ii < 0 || pl_gguf_tensor(in, (uint64_t)ii, &it, &err) != PL_OK) {
            printf("  %-32s not in the input\n", name);
            free(name);
            continue;
        }
        uint32_t want;
        int have_pb = 0;
        if (pb) {
            int64_t pi = pl_gguf_find_tensor(pb, name);
            if (pi < 0 || pl_gguf_tensor(pb, (uint64_t)pi, &pt, &err) != PL_OK) {
                printf("  %-32s not in plumb's output\n", name);
                free(name);
                continue;
            }
            want = pt.type;
            have_pb = 1;
        } else {
            want = plans[ii].quantize ? (uint32_t)plans[ii].type : it.type;
        }
        const char *ln = pl_type_name(lt.type), *pn = pl_type_name(want);
        if (lt.type != want) {
            printf("  %-32s type: llama-quantize %s, plumb %s\n", name, ln ? ln : "?",
                   pn ? pn : "?");
        } else {
            same_type++;
            if (have_pb) {
                if (lt.n_bytes == pt.n_bytes && memcmp(lt.data, pt.data, lt.n_bytes) == 0) {
                    same_bytes++;
                } else {
                    /* the first block that differs says where to look */
                    uint64_t off = 0;
                    while (off < lt.n_bytes && off < pt.n_bytes &&
                           ((const uint8_t *)lt.data)[off] == ((const uint8_t *)pt.data)[off])
                        off++;
                    size_t bb = pl_type_block_bytes(lt.type);
                    printf("  %-32s %s: bytes differ from byte %llu (block %llu of %llu B)\n", name,
                           ln ? ln : "?", (unsigned long long)off,
                           (unsigned long long)(bb ? off / bb : off), (unsigned long long)bb);
                }
            }
        }
        free(name);
    }
    if (pb)
        printf("tensors %llu same_type %llu same_bytes %llu\n", (unsigned long long)n,
               (unsigned long long)same_type, (unsigned long long)same_bytes);
    else
        printf("tensors %llu same_type %llu same_bytes -\n", (unsigned long long)n,
               (unsigned long long)same_type);
    int diff = same_type != n || n != n_in || (pb && same_bytes != n);
    for (uint64_t i = 0; i < n_in; i++) free(names[i]);
    free(names);
    free(plans);
    pl_gguf_free(in);
    pl_gguf_free(ll);
    pl_gguf_free(pb);
    return diff ? 1 : 0;
}
