/* test_oracle_arch.c — plumb against transformers on tiny random checkpoints of real configs
 * (RoPE scalings, Gemma 2/3, Phi-3; made by tools/oracle_arch/make_checkpoints.py on the device):
 * each row of cases.txt is converted with pl_convert_hf to F32 and its logits compared with
 * PyTorch's, or, for a row plumb does not run yet, must be refused with PL_ERR_UNSUPPORTED.
 * Not a tokenizer test: the ids are given. Bounds (README.md): max |dlogit| <= 1e-3 over every
 * position; the same argmax at every position unless transformers' own logits for the two
 * tokens lie within that bound (an exact tie). Environment: PLUMB_ORACLE_ARCH_DIR (this folder).
 * Usage: test_oracle_arch [CASE ...] (default: every row). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels.h"
#include "plumb.h"
#include "testutil.h"

#define MAX_DLOGIT 1e-3
#define MAX_CASES  64
#define MAX_SEQS   8

/* One row of cases.txt: the case folder and whether plumb is expected to run it yet. */
typedef struct oa_case {
    char name[64];
    int runs;
} oa_case;

static oa_case cases[MAX_CASES];
static int n_cases;
static const char *oracle_dir;
static char tmpdir[] = "/tmp/plumb-oracle-arch-XXXXXX";

/* logits.bin: "PLOR", u32 version 1, u32 n_seq, u32 vocab; per sequence u32 n, n i32 ids,
 * n x vocab f32 logits (README.md). */
typedef struct oa_seq {
    uint32_t n;
    int32_t *ids;
    float *logits;
} oa_seq;

typedef struct oa_fixture {
    uint32_t n_seq, n_vocab;
    oa_seq seq[MAX_SEQS];
} oa_fixture;

static int read_u32(FILE *f, uint32_t *v)
{
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4) return 0;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return 1;
}

static void fixture_free(oa_fixture *fx)
{
    for (uint32_t i = 0; i < fx->n_seq && i < MAX_SEQS; i++) {
        free(fx->seq[i].ids);
        free(fx->seq[i].logits);
    }
    memset(fx, 0, sizeof *fx);
}

static int fixture_load(const char *name, oa_fixture *fx)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/logits.bin", oracle_dir, name);
    memset(fx, 0, sizeof *fx);
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "  %s: %s\n", path, strerror(errno)), 0;
    char magic[4];
    uint32_t version, n_seq = 0;
    int ok = fread(magic, 1, 4, f) == 4 && memcmp(magic, "PLOR", 4) == 0 && read_u32(f, &version) &&
             version == 1 && read_u32(f, &n_seq) && n_seq >= 1 && n_seq <= MAX_SEQS &&
             read_u32(f, &fx->n_vocab) && fx->n_vocab >= 2 && fx->n_vocab <= (1u << 20);
    for (uint32_t i = 0; ok && i < n_seq; i++) {
        oa_seq *s = &fx->seq[i];
        fx->n_seq = i + 1;
        ok = read_u32(f, &s->n) && s->n >= 1 && s->n <= 4096;
        if (!ok) break;
        s->ids = malloc(s->n * sizeof(int32_t));
        s->logits = malloc((size_t)s->n * fx->n_vocab * sizeof(float));
        ok = s->ids && s->logits && fread(s->ids, sizeof(int32_t), s->n, f) == s->n &&
             fread(s->logits, sizeof(float), (size_t)s->n * fx->n_vocab, f) ==
                 (size_t)s->n * fx->n_vocab;
    }
    if (ok && fgetc(f) != EOF) ok = 0;
    fclose(f);
    if (!ok) {
        fprintf(stderr, "  %s: not the format README.md describes\n", path);
        fixture_free(fx);
    }
    return ok;
}

/* cases.txt: one "NAME yes|no" per line; '#' starts a comment. */
static int read_cases(void)
{
    char path[1024], line[256];
    snprintf(path, sizeof path, "%s/cases.txt", oracle_dir);
    FILE *f = fopen(path, "r");
    if (!f) return fprintf(stderr, "%s: %s\n", path, strerror(errno)), 0;
    int ok = 1, lineno = 0;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char name[64], runs[8], extra[8];
        int k = sscanf(line, "%63s %7s %7s", name, runs, extra);
        if (k <= 0) continue;
        ok = k == 2 && (!strcmp(runs, "yes") || !strcmp(runs, "no")) && n_cases < MAX_CASES;
        if (!ok) {
            fprintf(stderr, "%s:%d: want 'NAME yes|no'\n", path, lineno);
            break;
        }
        snprintf(cases[n_cases].name, sizeof cases[n_cases].name, "%s", name);
        cases[n_cases++].runs = !strcmp(runs, "yes");
    }
    fclose(f);
    return ok && n_cases > 0;
}

/* What plumb made of one case: where it stopped, and the comparison when it ran. */
typedef struct oa_result {
    pl_status convert, load, eval; /* the first failure ends the run */
    char msg[sizeof(((pl_error *)0)->msg)];
    double max_dlogit, max_abs_ref;
    int64_t rows, top1_differ, top1_ties, nonfinite;
} oa_result;

static void compare_rows(const oa_fixture *fx, const oa_seq *s, const float *got, oa_result *r)
{
    int64_t V = fx->n_vocab;
    for (uint32_t t = 0; t < s->n; t++) {
        const float *want = s->logits + (size_t)t * V, *have = got + (size_t)t * V;
        int64_t a = 0, b = 0;
        for (int64_t v = 0; v < V; v++) {
            if (!isfinite(have[v])) {
                r->nonfinite++;
                continue;
            }
            double d = fabs((double)have[v] - (double)want[v]);
            if (d > r->max_dlogit) r->max_dlogit = d;
            if (fabs((double)want[v]) > r->max_abs_ref) r->max_abs_ref = fabs((double)want[v]);
            if (want[v] > want[a]) a = v;
            if (have[v] > have[b]) b = v;
        }
        r->rows++;
        if (a != b) {
            if ((double)want[a] - (double)want[b] <= MAX_DLOGIT)
                r->top1_ties++;
            else
                r->top1_differ++;
        }
    }
}

static void run_case(const oa_case *c, const oa_fixture *fx, oa_result *r)
{
    char hf[1024], gguf[1024];
    snprintf(hf, sizeof hf, "%s/%s", oracle_dir, c->name);
    snprintf(gguf, sizeof gguf, "%s/%s.gguf", tmpdir, c->name);
    memset(r, 0, sizeof *r);
    pl_error err = {0};
    pl_convert_params cp = {.ftype = PL_FTYPE_F32};
    pl_model *m = NULL;
    pl_session *s = NULL;
    if ((r->convert = pl_convert_hf(hf, gguf, &cp, &err)) != PL_OK ||
        (r->load = pl_model_load(&m, gguf, NULL, &err)) != PL_OK) {
        snprintf(r->msg, sizeof r->msg, "%s", err.msg);
        remove(gguf);
        return;
    }
    pl_model_info info;
    pl_session_params sp = pl_session_default_params(m);
    sp.n_threads = 1;
    sp.kv_type = PL_TYPE_F32;
    if ((r->eval = pl_model_get_info(m, &info, &err)) == PL_OK && info.n_vocab != fx->n_vocab) {
        r->eval = PL_ERR_TYPE;
        snprintf(err.msg, sizeof err.msg, "model vocabulary %lld, fixture %u",
                 (long long)info.n_vocab, fx->n_vocab);
    }
    if (r->eval == PL_OK) r->eval = pl_session_new(&s, m, &sp, &err);
    for (uint32_t i = 0; r->eval == PL_OK && i < fx->n_seq; i++) {
        const oa_seq *q = &fx->seq[i];
        float *got = malloc((size_t)q->n * fx->n_vocab * sizeof(float));
        if (!got) {
            r->eval = PL_ERR_NOMEM;
            snprintf(err.msg, sizeof err.msg, "logits of sequence %u", i);
            break;
        }
        pl_session_reset(s);
        r->eval = pl_session_eval(s, q->ids, q->n, got, PL_EVAL_ALL_LOGITS, &err);
        if (r->eval == PL_OK) compare_rows(fx, q, got, r);
        free(got);
    }
    if (r->eval != PL_OK) snprintf(r->msg, sizeof r->msg, "%s", err.msg);
    pl_session_free(s);
    pl_model_free(m);
    remove(gguf);
}

static int selected(const oa_case *c, int argc, char **argv)
{
    if (argc <= 1) return 1;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], c->name)) return 1;
    return 0;
}

static int g_argc;
static char **g_argv;

/* Rows marked yes: converted, loaded and evaluated, every position within the bounds. */
static void expected_cases_match_transformers(void)
{
    for (int i = 0; i < n_cases; i++) {
        const oa_case *c = &cases[i];
        if (!c->runs || !selected(c, g_argc, g_argv)) continue;
        oa_fixture fx;
        TU_CHECK(fixture_load(c->name, &fx), "case %s: fixture unreadable", c->name);
        if (!fx.n_seq) continue;
        oa_result r;
        run_case(c, &fx, &r);
        TU_CHECK(r.convert == PL_OK, "case %s: pl_convert_hf: %s: %s", c->name,
                 pl_status_str(r.convert), r.msg);
        TU_CHECK(r.load == PL_OK, "case %s: pl_model_load: %s: %s", c->name, pl_status_str(r.load),
                 r.msg);
        TU_CHECK(r.eval == PL_OK, "case %s: evaluation: %s: %s", c->name, pl_status_str(r.eval),
                 r.msg);
        if (r.convert == PL_OK && r.load == PL_OK && r.eval == PL_OK) {
            printf("\n  %-22s runs: max |dlogit| %.3g (|logit| up to %.1f), %lld rows, "
                   "top-1 differs at %lld (+%lld ties)",
                   c->name, r.max_dlogit, r.max_abs_ref, (long long)r.rows,
                   (long long)r.top1_differ, (long long)r.top1_ties);
            TU_CHECK(r.nonfinite == 0, "case %s: %lld non-finite logits", c->name,
                     (long long)r.nonfinite);
            TU_CHECK(r.max_dlogit <= MAX_DLOGIT, "case %s: max |dlogit| %.3g > %.3g", c->name,
                     r.max_dlogit, MAX_DLOGIT);
            TU_CHECK(r.top1_differ == 0,
                     "case %s: argmax differs from transformers at %lld of "
                     "%lld positions (beyond ties within %.3g)",
                     c->name, (long long)r.top1_differ, (long long)r.rows, MAX_DLOGIT);
        }
        fixture_free(&fx);
    }
}

/* Rows marked no: refused by name (PL_ERR_UNSUPPORTED from convert or load), never run wrong.
 * When plumb does run one, the test fails and says how close it came: flip the row. */
static void unexpected_cases_are_refused_as_unsupported(void)
{
    for (int i = 0; i < n_cases; i++) {
        const oa_case *c = &cases[i];
        if (c->runs || !selected(c, g_argc, g_argv)) continue;
        oa_fixture fx;
        TU_CHECK(fixture_load(c->name, &fx), "case %s: fixture unreadable", c->name);
        if (!fx.n_seq) continue;
        oa_result r;
        run_case(c, &fx, &r);
        pl_status s = r.convert != PL_OK ? r.convert : r.load;
        const char *where = r.convert != PL_OK ? "pl_convert_hf" : "pl_model_load";
        if (s == PL_ERR_UNSUPPORTED) {
            printf("\n  %-22s refused by %s: %s", c->name, where, r.msg);
        } else if (s != PL_OK) {
            TU_CHECK(0, "case %s: %s gave %s, not PL_ERR_UNSUPPORTED: %s", c->name, where,
                     pl_status_str(s), r.msg);
        } else if (r.eval != PL_OK) {
            TU_CHECK(0, "case %s: converted and loaded, then evaluation failed: %s: %s", c->name,
                     pl_status_str(r.eval), r.msg);
        } else {
            TU_CHECK(0,
                     "case %s: plumb now runs it (max |dlogit| %.3g, argmax differs at %lld "
                     "of %lld positions): mark it 'yes' in cases.txt",
                     c->name, r.max_dlogit, (long long)r.top1_differ, (long long)r.rows);
        }
        fixture_free(&fx);
    }
}

/* ---- issue 49 (archA): configs whose math GGUF cannot carry are refused by name ---- */

/* One edit of a 'yes' case's config.json: the text `from` (first occurrence) becomes `to`;
 * pl_convert_hf must then refuse the copy with `code`, its message naming `names`. */
static const struct {
    const char *name, *from, *to;
    pl_status code;
    const char *names;
} edits[] = {
    {"granite", "\"attention_bias\": false", "\"attention_bias\": true", PL_ERR_UNSUPPORTED,
     "attention_bias"},
    {"granite", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", PL_ERR_UNSUPPORTED,
     "hidden_act"},
    {"granite", "\"logits_scaling\": 2.0", "\"logits_scaling\": 0.0", PL_ERR_LIMIT,
     "logits_scaling"},
    {"olmo2", "\"attention_bias\": false", "\"attention_bias\": true", PL_ERR_UNSUPPORTED,
     "attention_bias"},
    {"exaone4", "\"sliding_window_pattern\": 4", "\"sliding_window_pattern\": 2",
     PL_ERR_UNSUPPORTED, "sliding_window_pattern"},
    {"exaone4", "\"sliding_window_pattern\": 4", "\"sliding_window_pattern\": \"LLGG\"",
     PL_ERR_UNSUPPORTED, "sliding_window_pattern"},
    {"exaone4", "\"sliding_window_pattern\": 4", "\"sliding_window_pattern\": \"LLLG\"", PL_OK,
     NULL},
    /* no window while layer_types says local layers: refused by layer_types */
    {"exaone4", "\"sliding_window\": 8", "\"sliding_window\": null", PL_ERR_UNSUPPORTED,
     "layer_types"},
    {"glm4", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", PL_ERR_UNSUPPORTED,
     "hidden_act"},
    {"glm4", "\"partial_rotary_factor\": 0.5,\n    \"rope_theta\"",
     "\"partial_rotary_factor\": 0.1,\n    \"rope_theta\"", PL_ERR_FORMAT, "partial_rotary_factor"},
    /* layer 2 without RoPE, layer 3 with it: not llama.cpp's every-4th rule */
    {"smollm3", "1,\n    1,\n    0\n", "1,\n    0,\n    1\n", PL_ERR_UNSUPPORTED, "no_rope_layers"},
    {"smollm3", "\"no_rope_layers\": [", "\"no_rope_layers_was\": [", PL_OK, NULL},
    {"smollm3", "\"no_rope_layer_interval\": 4,\n  \"no_rope_layers\": [",
     "\"no_rope_layer_interval\": 3,\n  \"no_rope_layers_was\": [", PL_ERR_UNSUPPORTED,
     "no_rope_layer_interval"},
    /* gpt-oss: a clamp llama.cpp does not apply, another quantization, a routing flag */
    {"gpt-oss", "\"swiglu_limit\": 7.0", "\"swiglu_limit\": 8.0", PL_ERR_UNSUPPORTED,
     "swiglu_limit"},
    {"gpt-oss", "\"quant_method\": \"mxfp4\"", "\"quant_method\": \"fp8\"", PL_ERR_UNSUPPORTED,
     "quant_method"},
    {"gpt-oss-dense", "\"swiglu_limit\": 7.0", "\"swiglu_limit\": 7.0, \"norm_topk_prob\": true",
     PL_ERR_UNSUPPORTED, "norm_topk_prob"},
    /* the dense checkpoint said to be MXFP4: its _blocks are missing */
    {"gpt-oss-dense", "\"swiglu_limit\": 7.0",
     "\"swiglu_limit\": 7.0, \"quantization_config\": {\"quant_method\": \"mxfp4\"}",
     PL_ERR_NOT_FOUND, "_blocks"},
};

static char *slurp_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (t) t[fread(t, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return t;
}

static void issue49_configs_gguf_cannot_say_are_refused(void)
{
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        char dir[1024], path[1200], cmd[2600], gguf[1200];
        snprintf(dir, sizeof dir, "%s/edit-%zu", tmpdir, i);
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -rL '%s/%s' '%s'", dir, oracle_dir,
                 edits[i].name, dir);
        TU_CHECK(system(cmd) == 0, "%s", cmd);
        snprintf(path, sizeof path, "%s/config.json", dir);
        char *t = slurp_text(path);
        char *at = t ? strstr(t, edits[i].from) : NULL;
        TU_CHECK(at != NULL, "edit %zu: '%s' not in %s", i, edits[i].from, path);
        if (!at) {
            free(t);
            continue;
        }
        FILE *f = fopen(path, "wb");
        fprintf(f, "%.*s%s%s", (int)(at - t), t, edits[i].to, at + strlen(edits[i].from));
        fclose(f);
        free(t);
        snprintf(gguf, sizeof gguf, "%s/edit.gguf", tmpdir);
        pl_error err = {0};
        const pl_convert_params cp = {.ftype = PL_FTYPE_F32};
        const pl_status st = pl_convert_hf(dir, gguf, &cp, &err);
        TU_CHECK(st == edits[i].code && (!edits[i].names || strstr(err.msg, edits[i].names)),
                 "edit %zu of %s: %s \"%s\", want %s naming '%s'", i, edits[i].name,
                 pl_status_str(st), err.msg, pl_status_str(edits[i].code),
                 edits[i].names ? edits[i].names : "");
        remove(gguf);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        TU_CHECK(system(cmd) == 0, "%s", cmd);
    }
}

/* gpt-oss's MXFP4 experts converted to MXFP4 are its blocks as they are (the nibbles moved, the
 * scale bytes kept): dequantized they equal the F32 conversion's values exactly, which
 * transformers' own unpacking gives (FP4[c] 2^(s - 127)), and the logits match. */
static void gpt_oss_mxfp4_experts_convert_byte_for_byte(void)
{
    char src[1024], f32[1200], mx[1200];
    snprintf(src, sizeof src, "%s/gpt-oss", oracle_dir);
    snprintf(f32, sizeof f32, "%s/oss-f32.gguf", tmpdir);
    snprintf(mx, sizeof mx, "%s/oss-mxfp4.gguf", tmpdir);
    pl_error err = {0};
    const pl_convert_params pf = {.ftype = PL_FTYPE_F32}, pm = {.ftype = PL_FTYPE_MXFP4_MOE};
    TU_CHECK(pl_convert_hf(src, f32, &pf, &err) == PL_OK, "F32: %s", err.msg);
    TU_CHECK(pl_convert_hf(src, mx, &pm, &err) == PL_OK, "MXFP4_MOE: %s", err.msg);
    pl_gguf *a = NULL, *b = NULL;
    TU_CHECK(pl_gguf_open(&a, f32, &err) == PL_OK && pl_gguf_open(&b, mx, &err) == PL_OK, "%s",
             err.msg);
    int n = 0;
    for (int l = 0; a && b && l < 4; l++)
        for (int k = 0; k < 3; k++) {
            static const char *const which[3] = {"gate", "up", "down"};
            char name[64];
            snprintf(name, sizeof name, "blk.%d.ffn_%s_exps.weight", l, which[k]);
            const int64_t ia = pl_gguf_find_tensor(a, name), ib = pl_gguf_find_tensor(b, name);
            pl_tensor_info ta, tb;
            TU_CHECK(ia >= 0 && ib >= 0 && !pl_gguf_tensor(a, (uint64_t)ia, &ta, NULL) &&
                         !pl_gguf_tensor(b, (uint64_t)ib, &tb, NULL),
                     "%s missing", name);
            if (ia < 0 || ib < 0) continue;
            TU_CHECK(ta.type == PL_TYPE_F32 && tb.type == PL_TYPE_MXFP4, "%s: types %s, %s", name,
                     pl_type_name(ta.type), pl_type_name(tb.type));
            if (tb.type != PL_TYPE_MXFP4) continue;
            const int64_t cols = ta.ne[0], rows = ta.ne[1] * ta.ne[2];
            size_t rb;
            pl_type_row_bytes(PL_TYPE_MXFP4, cols, &rb, NULL);
            float *y = malloc((size_t)cols * sizeof *y);
            int64_t bad = 0;
            for (int64_t r = 0; r < rows; r++) {
                pl_kernels_ref.dequantize_row[PL_TYPE_MXFP4](y, (const uint8_t *)tb.data + r * rb,
                                                             cols);
                bad += memcmp(y, (const float *)ta.data + r * cols, (size_t)cols * sizeof *y) != 0;
            }
            free(y);
            TU_CHECK(bad == 0, "%s: %lld of %lld rows differ from the F32 conversion", name,
                     (long long)bad, (long long)rows);
            n++;
        }
    TU_CHECK(n == 12, "%d expert tensors compared, want 12", n);
    pl_gguf_free(a);
    pl_gguf_free(b);
    remove(f32);
    remove(mx);
}

/* An MXFP4 scale of 255 (E8M0's NaN, which transformers would read as 2^128) is refused by
 * name, for every target type: no weight is NaN. */
static void gpt_oss_mxfp4_nan_scale_is_refused(void)
{
    char dir[1024], path[1200], cmd[2600], gguf[1200];
    snprintf(dir, sizeof dir, "%s/oss-nan", tmpdir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -rL '%s/gpt-oss' '%s'", dir, oracle_dir, dir);
    TU_CHECK(system(cmd) == 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    pl_safetensors *st = NULL;
    pl_error err = {0};
    TU_CHECK(pl_safetensors_open(&st, path, &err) == PL_OK, "%s", err.msg);
    const pl_st_tensor *t =
        st ? pl_safetensors_find(st, "model.layers.2.mlp.experts.down_proj_scales") : NULL;
    TU_CHECK(t != NULL, "no down_proj_scales in layer 2");
    const uint64_t at = t ? t->offset + t->n_bytes / 2 : 0;
    pl_safetensors_free(st);
    if (!t) return;
    FILE *f = fopen(path, "r+b");
    TU_CHECK(f && fseek(f, (long)at, SEEK_SET) == 0 && fputc(255, f) == 255, "patch %s", path);
    if (f) fclose(f);
    static const pl_ftype types[] = {PL_FTYPE_F32, PL_FTYPE_MXFP4_MOE};
    for (size_t i = 0; i < 2; i++) {
        snprintf(gguf, sizeof gguf, "%s/nan.gguf", tmpdir);
        const pl_convert_params cp = {.ftype = types[i]};
        const pl_status s = pl_convert_hf(dir, gguf, &cp, &err);
        TU_CHECK(s == PL_ERR_FORMAT && strstr(err.msg, "down_proj_scales") &&
                     strstr(err.msg, "255"),
                 "type %zu: %s \"%s\", want FORMAT naming the scale", i, pl_status_str(s), err.msg);
        remove(gguf);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TU_CHECK(system(cmd) == 0, "%s", cmd);
}

/* Every case named on the command line is a row of cases.txt (a typo must not pass). */
static void named_cases_exist(void)
{
    for (int i = 1; i < g_argc; i++) {
        int found = 0;
        for (int k = 0; k < n_cases; k++) found |= !strcmp(cases[k].name, g_argv[i]);
        TU_CHECK(found, "no case '%s' in cases.txt", g_argv[i]);
    }
}

int main(int argc, char **argv)
{
    g_argc = argc;
    g_argv = argv;
    oracle_dir = getenv("PLUMB_ORACLE_ARCH_DIR");
    if (!oracle_dir) return fprintf(stderr, "PLUMB_ORACLE_ARCH_DIR not set\n"), 1;
    if (!read_cases()) return 1;
    if (!mkdtemp(tmpdir)) return fprintf(stderr, "mkdtemp: %s\n", strerror(errno)), 1;
    static const tu_test tests[] = {
        {"named_cases_exist", named_cases_exist},
        {"issue49_configs_gguf_cannot_say_are_refused",
         issue49_configs_gguf_cannot_say_are_refused},
        {"expected_cases_match_transformers", expected_cases_match_transformers},
        {"gpt_oss_mxfp4_experts_convert_byte_for_byte",
         gpt_oss_mxfp4_experts_convert_byte_for_byte},
        {"gpt_oss_mxfp4_nan_scale_is_refused", gpt_oss_mxfp4_nan_scale_is_refused},
        {"unexpected_cases_are_refused_as_unsupported",
         unexpected_cases_are_refused_as_unsupported},
        {NULL, NULL},
    };
    int rc = tu_run("oracle_arch", tests);
    rmdir(tmpdir);
    return rc;
}
