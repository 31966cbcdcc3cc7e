/* test_arch_contract.c — what every architecture in the table (pl_arch_at) must have before it
 * is done: a tiny model that builds and loads, logits matching the double-precision reference
 * transformer on every kernel set the CPU runs, a Hugging Face checkpoint that converts to it
 * (where it has an HF class), a fuzz seed that loads as it, and an outside oracle case (or a
 * reasoned "none" row below). Not the arithmetic in depth (test_e2e) nor the oracles' bounds
 * (test_oracle_arch). Environment: PLUMB_SOURCE_DIR (the repository root). */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel_sets.h"
#include "ref_transformer.h"
#include "runtime/arch.h"
#include "testutil.h"
#include "tinymodel.h"

/* Architectures without an outside oracle case, each with its reason. A row here is the one
 * way to waive the oracle contract; leave the table empty when every architecture has one. */
static const struct {
    const char *arch, *why;
} no_oracle[] = {
    {NULL, NULL},
};

static const char *root(void)
{
    const char *r = getenv("PLUMB_SOURCE_DIR");
    return r && r[0] ? r : ".";
}

/* ---- a tiny model of every architecture loads ---- */

static pl_model *tiny_load(const char *arch, uint32_t wtype, const char *set, void **buf,
                           tiny_spec *spec)
{
    *spec = tiny_default(arch, wtype);
    size_t size;
    *buf = NULL;
    if (tiny_build(spec, buf, &size)) return NULL;
    pl_model *m = NULL;
    pl_error e = {0};
    const pl_model_params mp = {.kernels = set};
    if (pl_model_load_memory(&m, *buf, size, &mp, &e)) {
        TU_CHECK(0, "%s (kernels %s): the tiny model does not load: %s", arch,
                 set ? set : "default", e.msg);
        return NULL;
    }
    return m;
}

static void contract_every_arch_has_a_tiny_model_that_loads(void)
{
    for (size_t i = 0; pl_arch_at(i); i++) {
        const pl_arch *a = pl_arch_at(i);
        void *buf;
        tiny_spec spec;
        pl_model *m = tiny_load(a->name, PL_TYPE_Q8_0, NULL, &buf, &spec);
        TU_CHECK(m != NULL, "%s: tiny_build/load failed", a->name);
        pl_model_info info;
        if (m && pl_model_get_info(m, &info, NULL) == PL_OK)
            TU_CHECK(strcmp(info.arch, a->name) == 0, "%s: loaded as '%s'", a->name, info.arch);
        pl_model_free(m);
        pl_buffer_free(buf);
    }
}

/* ---- ... and matches the reference transformer on every kernel set ---- */

#define N_TOK 6

typedef struct set_ctx {
    const pl_arch *a;
    int ran;
} set_ctx;

/* F32 weights and KV: only float rounding separates the engine from the reference (test_e2e's
 * bound for F32: 1e-4 of the position's logit RMS); a step computed differently is O(100%). */
static void match_on_set(const struct pl_kernels *ks, void *ctx)
{
    set_ctx *c = ctx;
    const char *arch = c->a->name;
    void *buf;
    tiny_spec spec;
    pl_model *m = tiny_load(arch, PL_TYPE_F32, ks->name, &buf, &spec);
    if (!m) {
        pl_buffer_free(buf);
        return;
    }
    int32_t tok[N_TOK];
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    for (int i = 0; i < N_TOK; i++) tok[i] = (int32_t)tu_rng_range(&r, 0, spec.V - 1);
    const int64_t V = spec.V;
    float *y = malloc((size_t)(N_TOK * V) * sizeof *y);
    double *ref = malloc((size_t)(N_TOK * V) * sizeof *ref);
    pl_session_params p = pl_session_default_params(m);
    p.n_threads = 2;
    p.kv_type = PL_TYPE_F32;
    p.context_window = 64;
    p.kernels = ks->name;
    pl_session *s = NULL;
    pl_error e = {0};
    ref_model *rm = NULL;
    char msg[256] = "";
    if (pl_session_new(&s, m, &p, &e) ||
        pl_session_eval(s, tok, N_TOK, y, PL_EVAL_ALL_LOGITS, &e)) {
        TU_CHECK(0, "%s on %s: eval: %s", arch, ks->name, e.msg);
    } else if (ref_model_load(&rm, pl_model_gguf(m), msg, sizeof msg)) {
        TU_CHECK(0, "%s: the reference does not load it: %s", arch, msg);
    } else {
        const ref_window w = {0, 0, 64};
        ref_model_forward(rm, tok, N_TOK, &w, ref, NULL);
        for (int64_t t = 0; t < N_TOK; t++) {
            double ss = 0, worst = 0;
            for (int64_t v = 0; v < V; v++) ss += ref[t * V + v] * ref[t * V + v];
            for (int64_t v = 0; v < V; v++) {
                const double d = fabs((double)y[t * V + v] - ref[t * V + v]);
                worst = d > worst ? d : worst;
            }
            const double bound = 1e-4 * sqrt(ss / (double)V);
            TU_CHECK(worst <= bound,
                     "%s on %s: position %lld: max |engine - reference| %.3g > %.3g (seed %llu)",
                     arch, ks->name, (long long)t, worst, bound, (unsigned long long)tu_seed());
        }
        c->ran++;
    }
    ref_model_free(rm);
    pl_session_free(s);
    pl_model_free(m);
    pl_buffer_free(buf);
    free(y);
    free(ref);
}

static void contract_every_arch_matches_the_reference_on_every_kernel_set(void)
{
    for (size_t i = 0; pl_arch_at(i); i++) {
        set_ctx c = {.a = pl_arch_at(i)};
        const int sets = for_each_supported_set(match_on_set, &c);
        TU_CHECK(sets > 0 && c.ran == sets, "%s: compared on %d of %d kernel sets", c.a->name,
                 c.ran, sets);
    }
}

/* ---- Hugging Face checkpoints in the repository, by the architecture they convert to ---- */

/* The table row config.json's "architectures"[0] maps to, or NULL. */
static const pl_arch *checkpoint_arch(const char *dir)
{
    char path[1600];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *j = json_load_file(path, 0, NULL);
    const json_t *a = j ? json_array_get(json_object_get(j, "architectures"), 0) : NULL;
    const pl_arch *r = json_is_string(a) ? pl_arch_find_hf(json_string_value(a)) : NULL;
    json_decref(j);
    return r;
}

static int file_exists(const char *dir, const char *name)
{
    char path[1600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, R_OK) == 0;
}

/* The outside oracle cases: cases.txt rows marked "yes" (test_oracle_arch), and data/hf
 * checkpoints with transformers' logits for ids.txt (check_oracle.sh). Calls fn for each case
 * folder; `oracle` says whether it is one. */
typedef void (*ckpt_fn)(void *user, const char *dir, int oracle);

static void for_each_checkpoint(ckpt_fn fn, void *user)
{
    char path[1024], dir[1400], line[256];
    snprintf(path, sizeof path, "%s/conformance/oracle_arch/cases.txt", root());
    FILE *f = fopen(path, "r");
    TU_CHECK(f != NULL, "cannot read %s (PLUMB_SOURCE_DIR)", path);
    while (f && fgets(line, sizeof line, f)) {
        char name[128], runs[16];
        if (line[0] == '#' || sscanf(line, "%127s %15s", name, runs) != 2) continue;
        snprintf(dir, sizeof dir, "%s/conformance/oracle_arch/%s", root(), name);
        fn(user, dir, strcmp(runs, "yes") == 0);
    }
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/conformance/data/hf", root());
    DIR *d = opendir(path);
    TU_CHECK(d != NULL, "cannot list %s", path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        snprintf(dir, sizeof dir, "%s/%s", path, e->d_name);
        if (!file_exists(dir, "config.json")) continue;
        fn(user, dir, file_exists(dir, "logits.f32") && file_exists(dir, "ids.txt"));
    }
    if (d) closedir(d);
}

typedef struct ckpt_find {
    const pl_arch *a;
    char dir[1400]; /* the first checkpoint of a ("" none) */
    int oracle;     /* cases of a with transformers' logits */
} ckpt_find;

static void find_visit(void *user, const char *dir, int oracle)
{
    ckpt_find *c = user;
    if (checkpoint_arch(dir) != c->a) return;
    if (!c->dir[0]) snprintf(c->dir, sizeof c->dir, "%s", dir);
    c->oracle += oracle;
}

/* ---- ... round-trips through convert ---- */

static void contract_every_hf_arch_converts_from_a_checkpoint(void)
{
    char tmp[] = "/tmp/plumb-contract-XXXXXX";
    TU_CHECK(mkdtemp(tmp) != NULL, "mkdtemp failed");
    for (size_t i = 0; pl_arch_at(i); i++) {
        ckpt_find c = {.a = pl_arch_at(i)};
        if (!c.a->hf_class) continue;
        for_each_checkpoint(find_visit, &c);
        TU_CHECK(c.dir[0],
                 "%s: no Hugging Face checkpoint of %s in conformance/oracle_arch or "
                 "conformance/data/hf to convert",
                 c.a->name, c.a->hf_class);
        if (!c.dir[0]) continue;
        char out[1500];
        snprintf(out, sizeof out, "%s/%s.gguf", tmp, c.a->name);
        pl_convert_params cp = {.ftype = PL_FTYPE_F32};
        pl_error e = {0};
        pl_status st = pl_convert_hf(c.dir, out, &cp, &e);
        TU_CHECK(st == PL_OK, "%s: converting %s: %s", c.a->name, c.dir, e.msg);
        pl_model *m = NULL;
        if (st == PL_OK) {
            st = pl_model_load(&m, out, NULL, &e);
            TU_CHECK(st == PL_OK, "%s: the conversion of %s does not load: %s", c.a->name, c.dir,
                     e.msg);
        }
        pl_model_info info;
        if (m && pl_model_get_info(m, &info, NULL) == PL_OK)
            TU_CHECK(strcmp(info.arch, c.a->name) == 0, "%s: %s converted to '%s'", c.a->name,
                     c.dir, info.arch);
        pl_model_free(m);
        remove(out);
    }
    rmdir(tmp);
}

/* ---- ... has an outside oracle case, or a reasoned none ---- */

static void contract_every_arch_has_an_oracle_case_or_a_reasoned_none(void)
{
    for (size_t i = 0; pl_arch_at(i); i++) {
        ckpt_find c = {.a = pl_arch_at(i)};
        for_each_checkpoint(find_visit, &c);
        const char *why = NULL;
        for (size_t j = 0; no_oracle[j].arch; j++)
            if (strcmp(no_oracle[j].arch, c.a->name) == 0) why = no_oracle[j].why;
        TU_CHECK(c.oracle > 0 || (why && strlen(why) >= 20),
                 "%s: no oracle case (a 'yes' row of conformance/oracle_arch/cases.txt or a "
                 "conformance/data/hf checkpoint with logits) and no reasoned no_oracle row",
                 c.a->name);
        TU_CHECK(!(c.oracle > 0 && why), "%s: has an oracle case and a no_oracle row: drop the row",
                 c.a->name);
    }
}

/* ---- ... has a fuzz seed that loads as it ---- */

static void *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = len > 0 ? malloc((size_t)len) : NULL;
    *n = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    return buf;
}

static void contract_every_arch_has_a_fuzz_seed_that_loads(void)
{
    size_t n_archs = 0;
    while (pl_arch_at(n_archs)) n_archs++;
    int *seeds = calloc(n_archs, sizeof *seeds);
    char path[1024];
    snprintf(path, sizeof path, "%s/fuzz/corpus/gguf", root());
    DIR *d = opendir(path);
    TU_CHECK(d != NULL, "cannot list %s", path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char file[1400];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        size_t n = 0;
        void *buf = slurp(file, &n);
        pl_model *m = NULL;
        pl_model_info info;
        if (buf && pl_model_load_memory(&m, buf, n, NULL, NULL) == PL_OK &&
            pl_model_get_info(m, &info, NULL) == PL_OK)
            for (size_t i = 0; i < n_archs; i++)
                seeds[i] += strcmp(info.arch, pl_arch_at(i)->name) == 0;
        pl_model_free(m);
        free(buf);
    }
    if (d) closedir(d);
    for (size_t i = 0; i < n_archs; i++)
        TU_CHECK(seeds[i] > 0,
                 "%s: no seed in fuzz/corpus/gguf loads as it (give it a base in "
                 "fuzz/mkseeds.c and rerun the seeding)",
                 pl_arch_at(i)->name);
    free(seeds);
}

int main(void)
{
    static const tu_test tests[] = {
        {"contract_every_arch_has_a_tiny_model_that_loads",
         contract_every_arch_has_a_tiny_model_that_loads},
        {"contract_every_arch_matches_the_reference_on_every_kernel_set",
         contract_every_arch_matches_the_reference_on_every_kernel_set},
        {"contract_every_hf_arch_converts_from_a_checkpoint",
         contract_every_hf_arch_converts_from_a_checkpoint},
        {"contract_every_arch_has_an_oracle_case_or_a_reasoned_none",
         contract_every_arch_has_an_oracle_case_or_a_reasoned_none},
        {"contract_every_arch_has_a_fuzz_seed_that_loads",
         contract_every_arch_has_a_fuzz_seed_that_loads},
        {NULL, NULL},
    };
    return tu_run("arch_contract", tests);
}
