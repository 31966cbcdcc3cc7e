/* test_logits.c — the .logits format (round trip, hostile bytes, allocation failure), the
 * comparison math against a GSL double reference, and F32 vs Q8_0 vs Q4_K_M on a tiny model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_sf_exp.h>
#include <gsl/gsl_sf_log.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_math.h>

#include "core/core.h"
#include "testutil.h"
#include "tinymodel.h"

static char tmpdir[64];

static void tmp_path(char *path, size_t cap, const char *name)
{
    if (!tmpdir[0]) {
        strcpy(tmpdir, "/tmp/plumb-logits-XXXXXX");
        if (!mkdtemp(tmpdir)) abort();
    }
    snprintf(path, cap, "%s/%s", tmpdir, name);
}

/* Random logits: n_rows rows of V values ~ N(0, scale^2); a few -inf when masked. */
typedef struct owned {
    pl_logits l;
    int32_t *tok;
    float *lg;
} owned;

static void make(owned *o, tu_rng *r, int64_t V, int64_t T, int64_t first, int64_t rows,
                 double scale, int masked)
{
    o->tok = malloc((size_t)T * 4);
    o->lg = malloc((size_t)(rows * V) * 4);
    for (int64_t i = 0; i < T; i++) o->tok[i] = (int32_t)tu_rng_range(r, 0, V - 1);
    for (int64_t i = 0; i < rows * V; i++) o->lg[i] = (float)(scale * tu_rng_normal(r));
    if (masked)
        for (int64_t i = 0; i < rows; i++)
            if (V > 1) o->lg[i * V + tu_rng_range(r, 0, V - 1)] = -INFINITY;
    o->l = (pl_logits){.n_vocab = V,
                       .n_tokens = T,
                       .first_row = first,
                       .n_rows = rows,
                       .tokenizer_hash = 0x1234,
                       .model_name = "m.gguf",
                       .tokens = o->tok,
                       .logits = o->lg};
}

static void drop(owned *o)
{
    free(o->tok);
    free(o->lg);
}

/* B = A + noise (same ids), as a quantized model would give. */
static void perturb(owned *b, const owned *a, tu_rng *r, double noise)
{
    int64_t n = a->l.n_rows * a->l.n_vocab;
    b->tok = malloc((size_t)a->l.n_tokens * 4);
    b->lg = malloc((size_t)n * 4);
    memcpy(b->tok, a->tok, (size_t)a->l.n_tokens * 4);
    for (int64_t i = 0; i < n; i++) b->lg[i] = a->lg[i] + (float)(noise * tu_rng_normal(r));
    b->l = a->l;
    b->l.tokens = b->tok;
    b->l.logits = b->lg;
}

static void logits_round_trip_is_exact_and_self_compare_is_zero(void)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    owned a;
    make(&a, &r, 37, 9, 0, 9, 3.0, 1);
    void *buf = NULL;
    size_t size = 0;
    pl_error err;
    CU_ASSERT_EQUAL_FATAL(pl_logits_write_memory(&a.l, &buf, &size, &err), PL_OK);
    CU_ASSERT_EQUAL(size, 64 + 6 + 9 * 4 + 9 * 37 * 4);
    pl_logits *p = NULL;
    TU_CHECK(pl_logits_parse(&p, buf, size, &err) == PL_OK, "parse: %s", err.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->n_vocab, 37);
    CU_ASSERT_EQUAL(p->n_tokens, 9);
    CU_ASSERT_EQUAL(p->first_row, 0);
    CU_ASSERT_EQUAL(p->n_rows, 9);
    CU_ASSERT_EQUAL(p->tokenizer_hash, 0x1234);
    CU_ASSERT_STRING_EQUAL(p->model_name, "m.gguf");
    CU_ASSERT(memcmp(p->tokens, a.tok, 9 * 4) == 0);
    CU_ASSERT(memcmp(p->logits, a.lg, 9 * 37 * 4) == 0);

    char path[128];
    tmp_path(path, sizeof path, "rt.logits");
    CU_ASSERT_EQUAL(pl_logits_write(&a.l, path, &err), PL_OK);
    pl_logits *q = NULL;
    CU_ASSERT_EQUAL_FATAL(pl_logits_read(&q, path, &err), PL_OK);
    CU_ASSERT(memcmp(q->logits, a.lg, 9 * 37 * 4) == 0);
    char t[140];
    snprintf(t, sizeof t, "%s.tmp", path);
    CU_ASSERT(access(t, F_OK) != 0);

    pl_logits_stats s;
    double kld[9];
    CU_ASSERT_EQUAL(pl_logits_compare(p, q, &s, kld, 9, &err), PL_OK);
    CU_ASSERT_EQUAL(s.n_rows, 9);
    CU_ASSERT(s.kld_mean == 0 && s.kld_max == 0 && s.kld_min == 0 && s.kld_median == 0);
    CU_ASSERT(s.max_abs_diff == 0 && s.rms_abs_diff == 0);
    CU_ASSERT(s.top1_agree == 1 && s.top5_overlap == 1 && s.top1_agree_se == 0);
    CU_ASSERT_EQUAL(s.tokenizer_match, 1);
    for (int i = 0; i < 9; i++) CU_ASSERT(kld[i] == 0);
    remove(path);
    pl_logits_free(p);
    pl_logits_free(q);
    pl_buffer_free(buf);
    drop(&a);
}

/* ---- the double reference, GSL ------------------------------------------------------ */

static void ref_softmax(const float *x, int64_t V, double *p)
{
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < V; j++) m = fmax(m, x[j]);
    for (int64_t j = 0; j < V; j++) s += p[j] = isinf(x[j]) ? 0 : gsl_sf_exp((double)x[j] - m);
    for (int64_t j = 0; j < V; j++) p[j] /= s;
}

static void logits_compare_matches_gsl_reference(void)
{
    const int64_t shapes[][2] = {{1, 1},    {2, 2},      {5, 3},    {7, 17},
                                 {320, 64}, {1031, 200}, {4, 1000}, {151, 2}};
    tu_rng r;
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        int64_t V = shapes[c][0], N = shapes[c][1];
        uint64_t seed = tu_seed() + c;
        tu_rng_init(&r, seed);
        owned a, b;
        make(&a, &r, V, N, 0, N, 4.0, c % 2);
        perturb(&b, &a, &r, 0.3);
        double *kl = malloc((size_t)N * 8), *ref = malloc((size_t)N * 8),
               *t1 = malloc((size_t)N * 8), *t5 = malloc((size_t)N * 8), *p = malloc((size_t)V * 8),
               *q = malloc((size_t)V * 8);
        pl_logits_stats s;
        pl_error err;
        TU_CHECK(pl_logits_compare(&a.l, &b.l, &s, kl, (size_t)N, &err) == PL_OK, "%s", err.msg);
        double maxd = 0, ss = 0;
        for (int64_t i = 0; i < N; i++) {
            const float *x = a.lg + i * V, *y = b.lg + i * V;
            ref_softmax(x, V, p);
            ref_softmax(y, V, q);
            double d = 0;
            for (int64_t j = 0; j < V; j++)
                if (p[j] > 0) d += p[j] * (gsl_sf_log(p[j]) - gsl_sf_log(q[j]));
            ref[i] = d;
            size_t ia[5], ib[5], k = V < 5 ? (size_t)V : 5;
            gsl_sort_largest_index(ia, k, p, 1, (size_t)V);
            gsl_sort_largest_index(ib, k, q, 1, (size_t)V);
            t1[i] = ia[0] == ib[0];
            int common = 0;
            for (size_t u = 0; u < k; u++)
                for (size_t v = 0; v < k; v++) common += ia[u] == ib[v];
            t5[i] = (double)common / (double)k;
            for (int64_t j = 0; j < V; j++) {
                double e = isinf(x[j]) && isinf(y[j]) ? 0 : fabs((double)x[j] - (double)y[j]);
                maxd = fmax(maxd, e);
                ss += e * e;
            }
            TU_CHECK(fabs(kl[i] - d) <= 1e-12 + 1e-9 * d,
                     "seed %llu V %lld N %lld row %lld: kld %.17g ref %.17g",
                     (unsigned long long)seed, (long long)V, (long long)N, (long long)i, kl[i], d);
        }
        /* Perplexity: row i predicts token i + 1 (the last row predicts nothing). */
        int64_t np = N - 1;
        double *xa = malloc((size_t)(np > 0 ? np : 1) * 8),
               *xb = malloc((size_t)(np > 0 ? np : 1) * 8),
               *xd = malloc((size_t)(np > 0 ? np : 1) * 8);
        for (int64_t i = 0; i < np && c % 2 == 0; i++) { /* unmasked: every NLL finite */
            ref_softmax(a.lg + i * V, V, p);
            ref_softmax(b.lg + i * V, V, q);
            xa[i] = -gsl_sf_log(p[a.tok[i + 1]]);
            xb[i] = -gsl_sf_log(q[a.tok[i + 1]]);
            xd[i] = xb[i] - xa[i];
        }
        CU_ASSERT_EQUAL(s.n_ppl, np);
        if (np >= 2 && c % 2 == 0) {
            double ma = gsl_stats_mean(xa, 1, (size_t)np), mb = gsl_stats_mean(xb, 1, (size_t)np);
            double sa = gsl_stats_sd(xa, 1, (size_t)np) / sqrt((double)np);
            double sb = gsl_stats_sd(xb, 1, (size_t)np) / sqrt((double)np);
            double pa = exp(ma), pb = exp(mb);
            double cov = gsl_stats_covariance(xa, 1, xb, 1, (size_t)np) / (double)np;
            struct {
                const char *name;
                double got, want;
            } pc[] = {
                {"ppl_a", s.ppl_a, pa},
                {"ppl_a_se", s.ppl_a_se, pa * sa},
                {"ppl_b", s.ppl_b, pb},
                {"ppl_b_se", s.ppl_b_se, pb * sb},
                {"ln_ratio", s.ln_ratio, gsl_stats_mean(xd, 1, (size_t)np)},
                {"ln_ratio_se", s.ln_ratio_se, gsl_stats_sd(xd, 1, (size_t)np) / sqrt((double)np)},
                {"ppl_diff", s.ppl_diff, pb - pa},
                /* llama.cpp's formula, as written there */
                {"ppl_diff_se", s.ppl_diff_se,
                 sqrt(pa * sa * pa * sa + pb * sb * pb * sb - 2 * pa * pb * cov)},
                {"ppl_corr", s.ppl_corr, gsl_stats_correlation(xa, 1, xb, 1, (size_t)np)},
            };
            for (size_t k = 0; k < sizeof pc / sizeof pc[0]; k++)
                TU_CHECK(fabs(pc[k].got - pc[k].want) <= 1e-12 + 1e-8 * fabs(pc[k].want),
                         "seed %llu V %lld N %lld: %s = %.17g, reference %.17g",
                         (unsigned long long)seed, (long long)V, (long long)N, pc[k].name,
                         pc[k].got, pc[k].want);
        }
        free(xa), free(xb), free(xd);
        double mean = gsl_stats_mean(ref, 1, (size_t)N);
        double se = N > 1 ? gsl_stats_sd(ref, 1, (size_t)N) / sqrt((double)N) : NAN;
        double t1m = gsl_stats_mean(t1, 1, (size_t)N), t5m = gsl_stats_mean(t5, 1, (size_t)N);
        double t1se = N > 1 ? sqrt(t1m * (1 - t1m) / (double)(N - 1)) : NAN;
        double t5se = N > 1 ? gsl_stats_sd(t5, 1, (size_t)N) / sqrt((double)N) : NAN;
        gsl_sort(ref, 1, (size_t)N);
        struct {
            const char *name;
            double got, want;
        } chk[] = {
            {"mean", s.kld_mean, mean},
            {"se", s.kld_mean_se, se},
            {"min", s.kld_min, ref[0]},
            {"max", s.kld_max, ref[N - 1]},
            {"median", s.kld_median, gsl_stats_median_from_sorted_data(ref, 1, (size_t)N)},
            {"p90", s.kld_p90, gsl_stats_quantile_from_sorted_data(ref, 1, (size_t)N, 0.90)},
            {"p95", s.kld_p95, gsl_stats_quantile_from_sorted_data(ref, 1, (size_t)N, 0.95)},
            {"p99", s.kld_p99, gsl_stats_quantile_from_sorted_data(ref, 1, (size_t)N, 0.99)},
            {"p99.9", s.kld_p999, gsl_stats_quantile_from_sorted_data(ref, 1, (size_t)N, 0.999)},
            {"top1", s.top1_agree, t1m},
            {"top1 se", s.top1_agree_se, t1se},
            {"top5", s.top5_overlap, t5m},
            {"top5 se", s.top5_overlap_se, t5se},
            {"max diff", s.max_abs_diff, maxd},
            {"rms diff", s.rms_abs_diff, sqrt(ss / (double)(N * V))},
        };
        for (size_t k = 0; k < sizeof chk / sizeof chk[0]; k++) {
            int ok = (isnan(chk[k].got) && isnan(chk[k].want)) ||
                     fabs(chk[k].got - chk[k].want) <= 1e-12 + 1e-9 * fabs(chk[k].want);
            TU_CHECK(ok, "seed %llu V %lld N %lld: %s = %.17g, reference %.17g",
                     (unsigned long long)seed, (long long)V, (long long)N, chk[k].name, chk[k].got,
                     chk[k].want);
        }
        free(kl), free(ref), free(t1), free(t5), free(p), free(q);
        drop(&a);
        drop(&b);
    }
}

static void logits_compare_uses_common_rows_and_reports_max_row(void)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    owned a, b;
    make(&a, &r, 50, 10, 0, 10, 2.0, 0);
    perturb(&b, &a, &r, 0.0);
    b.lg[9 * 50 + 3] += 5; /* only the last row differs */
    owned last = b;
    last.l.first_row = 9;
    last.l.n_rows = 1;
    last.l.logits = b.lg + 9 * 50;
    pl_logits_stats s;
    CU_ASSERT_EQUAL(pl_logits_compare(&a.l, &last.l, &s, NULL, 0, NULL), PL_OK);
    CU_ASSERT_EQUAL(s.n_rows, 1);
    CU_ASSERT_EQUAL(s.first_row, 9);
    CU_ASSERT(s.kld_mean > 0 && isnan(s.kld_mean_se));
    CU_ASSERT_EQUAL(pl_logits_compare(&a.l, &b.l, &s, NULL, 0, NULL), PL_OK);
    CU_ASSERT_EQUAL(s.kld_max_row, 9);
    CU_ASSERT(s.kld_min == 0 && fabs(s.max_abs_diff - 5) < 1e-5);
    double one[1];
    CU_ASSERT_EQUAL(pl_logits_compare(&a.l, &b.l, &s, one, 1, NULL), PL_ERR_BUFFER_TOO_SMALL);
    drop(&a);
    drop(&b);
}

static void expect_refusal(const pl_logits *a, const pl_logits *b, const char *needle)
{
    pl_logits_stats s;
    pl_error err = {0};
    CU_ASSERT_EQUAL(pl_logits_compare(a, b, &s, NULL, 0, &err), PL_ERR_INVALID_ARG);
    TU_CHECK(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
}

static void logits_compare_refuses_other_text_or_vocab(void)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    owned a, b;
    make(&a, &r, 40, 6, 0, 6, 1.0, 0);
    perturb(&b, &a, &r, 0.1);
    b.tok[4] = (b.tok[4] + 1) % 40;
    expect_refusal(&a.l, &b.l, "token ids differ at index 4");
    b.tok[4] = a.tok[4];
    b.l.n_vocab = 20;
    b.l.n_rows = 3;
    for (int i = 0; i < 6; i++) b.tok[i] = a.tok[i] % 20;
    expect_refusal(&a.l, &b.l, "vocab sizes differ");
    memcpy(b.tok, a.tok, 6 * 4);
    b.l = a.l;
    b.l.tokens = b.tok;
    b.l.logits = b.lg;
    b.l.n_tokens = 5;
    b.l.n_rows = 5;
    expect_refusal(&a.l, &b.l, "token counts differ");
    owned c = a;
    c.l.n_rows = 2; /* rows [0, 2) */
    owned d = b;
    d.l = a.l;
    d.l.logits = b.lg;
    d.l.first_row = 4; /* rows [4, 6) */
    d.l.n_rows = 2;
    expect_refusal(&c.l, &d.l, "no common rows");
    b.l = a.l;
    b.l.logits = b.lg;
    b.lg[7] = NAN;
    expect_refusal(&a.l, &b.l, "B: logits row 0, token 7 is NaN");
    drop(&a);
    drop(&b);
}

/* ---- hostile files ------------------------------------------------------------------- */

static unsigned char *valid_file(size_t *size)
{
    tu_rng r;
    tu_rng_init(&r, 7);
    owned a;
    make(&a, &r, 6, 4, 1, 3, 1.0, 1);
    void *buf;
    CU_ASSERT_FATAL(pl_logits_write_memory(&a.l, &buf, size, NULL) == PL_OK);
    drop(&a);
    return buf;
}

static void set_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void expect_reject(const unsigned char *d, size_t n, pl_status code, const char *needle,
                          const char *what)
{
    pl_logits *l = (pl_logits *)1;
    pl_error err = {0};
    pl_status s = pl_logits_parse(&l, d, n, &err);
    TU_CHECK(s == code, "%s: status %s, expected %s (%s)", what, pl_status_str(s),
             pl_status_str(code), err.msg);
    TU_CHECK(l == NULL, "%s: *out not NULL", what);
    TU_CHECK(strstr(err.msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, err.msg, needle);
}

/* ---- windowed files (plumb perplexity --save-logits) ------------------------------------ */

/* 3 windows of 6 tokens, rows at positions 2..4 of each: 9 rows. */
static void make_windowed(owned *o, tu_rng *r)
{
    make(o, r, 13, 18, 2, 9, 2.0, 0);
    o->l.window = 6;
}

static void logits_windowed_file_round_trips_and_maps_rows(void)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    owned a;
    make_windowed(&a, &r);
    void *buf = NULL;
    size_t size = 0;
    pl_error err;
    TU_CHECK(pl_logits_write_memory(&a.l, &buf, &size, &err) == PL_OK, "%s", err.msg);
    CU_ASSERT_EQUAL(size, 64 + 6 + 18 * 4 + 9 * 13 * 4);
    const unsigned char *u = buf;
    CU_ASSERT(u[12] == 1 && u[60] == 6); /* flags: windows; the window length at offset 60 */
    pl_logits *p = NULL;
    TU_CHECK(pl_logits_parse(&p, buf, size, &err) == PL_OK, "%s", err.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT(p->window == 6 && p->first_row == 2 && p->n_rows == 9);
    CU_ASSERT(memcmp(p->logits, a.lg, 9 * 13 * 4) == 0);
    /* Row r: window r / 3, position 2 + r % 3 in it. */
    const int64_t pos[9] = {2, 3, 4, 8, 9, 10, 14, 15, 16};
    for (int64_t i = 0; i < 9; i++) CU_ASSERT_EQUAL(pl_logits_row_position(p, i), pos[i]);
    /* Against itself: nothing lost; the perplexity scores tokens pos + 1 of every row. */
    pl_logits_stats s;
    CU_ASSERT_EQUAL_FATAL(pl_logits_compare(p, &a.l, &s, NULL, 0, &err), PL_OK);
    CU_ASSERT(s.kld_max == 0 && s.top1_agree == 1 && s.n_ppl == 9);
    CU_ASSERT(s.ppl_diff == 0 && s.ppl_diff_se == 0 && s.ln_ratio == 0);
    double sum = 0;
    for (int64_t i = 0; i < 9; i++) sum += pl_logits_nll(a.lg + i * 13, 13, a.tok[pos[i] + 1]);
    TU_CHECK(fabs(log(s.ppl_a) - sum / 9) <= 1e-12, "ln PPL %.17g, mean NLL %.17g", log(s.ppl_a),
             sum / 9);
    /* kld_max_row is a text position. */
    owned b;
    perturb(&b, &a, &r, 0.0);
    b.lg[7 * 13 + 1] += 3; /* row 7: window 2, position 15 */
    CU_ASSERT_EQUAL(pl_logits_compare(&a.l, &b.l, &s, NULL, 0, NULL), PL_OK);
    CU_ASSERT_EQUAL(s.kld_max_row, 15);
    /* Refusals: one evaluation against windows, another window, other scored positions. */
    owned c = b;
    c.l.window = 0;
    expect_refusal(&a.l, &c.l, "windows differ");
    c.l.window = 9;
    c.l.first_row = 4;
    c.l.n_rows = 8; /* 2 windows of 9, rows 4..7 */
    expect_refusal(&a.l, &c.l, "windows differ");
    pl_logits_free(p);
    pl_buffer_free(buf);
    drop(&a);
    drop(&b);
}

static void logits_windowed_rejects_bad_shapes(void)
{
    tu_rng r;
    tu_rng_init(&r, 9);
    owned a;
    make_windowed(&a, &r);
    void *buf = NULL;
    size_t size = 0;
    CU_ASSERT_FATAL(pl_logits_write_memory(&a.l, &buf, &size, NULL) == PL_OK);
    unsigned char *c = malloc(size);
    struct {
        size_t off;
        uint32_t value;
        const char *needle;
    } cases[] = {
        {60, 2, "window (offset 60) is 2"},                      /* too short to score */
        {60, 4, "not a multiple of the window (offset 60)"},     /* 18 % 4 */
        {60, 9, "n_rows (offset 40) is 9; 2 windows of 6 rows"}, /* 9: rows 2..7 */
        {32, 5, "first_row (offset 32) = 5 leaves no row"},
        {32, 1, "n_rows (offset 40) is 9; 3 windows of 4 rows"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(c, buf, size);
        for (int k = 0; k < 4; k++)
            c[cases[i].off + k] = (unsigned char)(cases[i].value >> (8 * k));
        char what[48];
        snprintf(what, sizeof what, "windowed case %zu", i);
        expect_reject(c, size, PL_ERR_FORMAT, cases[i].needle, what);
    }
    /* The writer checks the same rules. */
    a.l.n_rows = 8;
    void *out = NULL;
    size_t n;
    pl_error err;
    CU_ASSERT_EQUAL(pl_logits_write_memory(&a.l, &out, &n, &err), PL_ERR_FORMAT);
    TU_CHECK(strstr(err.msg, "n_rows") != NULL, "%s", err.msg);
    CU_ASSERT_PTR_NULL(out);
    free(c);
    pl_buffer_free(buf);
    drop(&a);
}

static void logits_rejects_truncation_at_every_offset(void)
{
    size_t size;
    unsigned char *f = valid_file(&size);
    for (size_t n = 0; n < size; n++) {
        unsigned char *c = malloc(n ? n : 1); /* exact size, so ASan sees any overread */
        memcpy(c, f, n);
        char what[48];
        snprintf(what, sizeof what, "truncated at %zu", n);
        expect_reject(c, n, PL_ERR_FORMAT, "truncated", what);
        free(c);
    }
    pl_buffer_free(f);
}

static void logits_rejects_hostile_headers(void)
{
    size_t size;
    unsigned char *f = valid_file(&size), *c = malloc(size + 8);
    struct {
        size_t off;
        uint64_t value;
        int width;
        pl_status code;
        const char *needle;
    } cases[] = {
        {0, 0x53544947474f4c4cull, 8, PL_ERR_FORMAT, "magic (offset 0)"}, /* "LLOGGITS" */
        {8, 2, 4, PL_ERR_UNSUPPORTED, "version (offset 8) is 2"},
        {8, 0, 4, PL_ERR_UNSUPPORTED, "version (offset 8) is 0"},
        {12, 2, 4, PL_ERR_UNSUPPORTED, "flags (offset 12)"},
        {12, 1, 4, PL_ERR_FORMAT, "window (offset 60) is 0"}, /* windowed, without a window */
        {16, 0, 8, PL_ERR_FORMAT, "n_vocab (offset 16) is 0"},
        {16, UINT64_MAX, 8, PL_ERR_LIMIT, "n_vocab (offset 16)"},
        {16, 1ull << 62, 8, PL_ERR_LIMIT, "n_vocab (offset 16)"},
        {16, PL_LOGITS_MAX_VOCAB, 8, PL_ERR_FORMAT, "truncated"}, /* n_vocab x n_rows past EOF */
        {16, 5, 8, PL_ERR_FORMAT, "size mismatch"},               /* the file is too long */
        {24, 0, 8, PL_ERR_FORMAT, "n_tokens (offset 24) is 0"},
        {24, 1ull << 40, 8, PL_ERR_LIMIT, "n_tokens (offset 24)"},
        {24, 2, 8, PL_ERR_FORMAT, "go past n_tokens"},
        {32, UINT64_MAX, 8, PL_ERR_FORMAT, "first_row (offset 32)"}, /* + n_rows overflows */
        {40, 0, 8, PL_ERR_FORMAT, "n_rows (offset 40) is 0"},
        {40, UINT64_MAX - 0, 8, PL_ERR_FORMAT, "n_rows (offset 40)"},
        {56, 0xffffffffu, 4, PL_ERR_LIMIT, "name_len (offset 56)"},
        {56, 7, 4, PL_ERR_FORMAT, "truncated"},
        {56, 5, 4, PL_ERR_FORMAT, "size mismatch"},
        {60, 1, 4, PL_ERR_FORMAT, "reserved (offset 60)"},
        {66, 0, 1, PL_ERR_FORMAT, "NUL byte at offset 66"},
        {70, 6, 4, PL_ERR_FORMAT, "token 0 (offset 70) is 6"},
        {74, 0xffffffffu, 4, PL_ERR_FORMAT, "token 1 (offset 74) is -1"},
        {86, 0x7fc00000u, 4, PL_ERR_FORMAT, "logits row 0, token 0 (offset 86) is NaN"},
        {90, 0x7f800000u, 4, PL_ERR_FORMAT, "is +inf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(c, f, size);
        if (cases[i].width == 8)
            set_u64(c + cases[i].off, cases[i].value);
        else
            for (int k = 0; k < cases[i].width; k++)
                c[cases[i].off + k] = (unsigned char)(cases[i].value >> (8 * k));
        char what[48];
        snprintf(what, sizeof what, "case %zu (offset %zu)", i, cases[i].off);
        expect_reject(c, size, cases[i].code, cases[i].needle, what);
    }
    /* A row of -inf only: no distribution. Row 1 starts at 86 + 6 * 4. */
    memcpy(c, f, size);
    for (int j = 0; j < 6; j++) {
        unsigned char *e = c + 110 + 4 * j; /* -inf: 0xff800000 */
        e[0] = e[1] = 0, e[2] = 0x80, e[3] = 0xff;
    }
    expect_reject(c, size, PL_ERR_FORMAT, "row 1 has no finite logit", "all -inf row");
    memcpy(c, f, size);
    memset(c + size, 0, 8);
    expect_reject(c, size + 3, PL_ERR_FORMAT, "3 trailing bytes", "trailing bytes");
    pl_logits *l = NULL;
    CU_ASSERT_EQUAL(pl_logits_parse(&l, f, size, NULL), PL_OK);
    pl_logits_free(l);
    CU_ASSERT_EQUAL(pl_logits_parse(&l, NULL, 0, NULL), PL_ERR_FORMAT);
    CU_ASSERT_EQUAL(pl_logits_read(&l, "/nonexistent/x.logits", NULL), PL_ERR_IO);
    free(c);
    pl_buffer_free(f);
}

static void logits_write_refuses_invalid_input(void)
{
    tu_rng r;
    tu_rng_init(&r, 3);
    owned a;
    make(&a, &r, 8, 4, 0, 4, 1.0, 0);
    void *buf = NULL;
    size_t n;
    a.tok[2] = 8;
    CU_ASSERT_EQUAL(pl_logits_write_memory(&a.l, &buf, &n, NULL), PL_ERR_INVALID_ARG);
    a.tok[2] = 0;
    a.lg[5] = INFINITY;
    CU_ASSERT_EQUAL(pl_logits_write_memory(&a.l, &buf, &n, NULL), PL_ERR_INVALID_ARG);
    a.lg[5] = 0;
    a.l.first_row = 1;
    CU_ASSERT_EQUAL(pl_logits_write_memory(&a.l, &buf, &n, NULL), PL_ERR_FORMAT);
    a.l.first_row = 0;
    CU_ASSERT_EQUAL(pl_logits_write(&a.l, "/nonexistent/dir/x.logits", NULL), PL_ERR_IO);
    CU_ASSERT_PTR_NULL(buf);
    drop(&a);
}

/* ---- allocation failure ---------------------------------------------------------------- */

static void logits_alloc_failure_at_every_n_is_nomem(void)
{
    size_t size;
    unsigned char *f = valid_file(&size);
    tu_rng r;
    tu_rng_init(&r, 11);
    owned a, b;
    make(&a, &r, 30, 8, 0, 8, 1.0, 0);
    perturb(&b, &a, &r, 0.2);
    char path[128];
    tmp_path(path, sizeof path, "alloc.logits");
    for (int op = 0; op < 4; op++) {
        for (int persistent = 0; persistent < 2; persistent++) {
            for (uint64_t n = 1;; n++) {
                tu_alloc_fail_at(n, persistent);
                pl_logits *l = NULL;
                pl_logits_stats s;
                void *buf = NULL;
                size_t bn;
                pl_status st = op == 0   ? pl_logits_parse(&l, f, size, NULL)
                               : op == 1 ? pl_logits_compare(&a.l, &b.l, &s, NULL, 0, NULL)
                               : op == 2 ? pl_logits_write_memory(&a.l, &buf, &bn, NULL)
                                         : pl_logits_write(&a.l, path, NULL);
                uint64_t failed = tu_alloc_failed();
                tu_alloc_reset();
                pl_logits_free(l);
                pl_buffer_free(buf);
                if (!failed) {
                    TU_CHECK(st == PL_OK, "op %d n %llu: %s", op, (unsigned long long)n,
                             pl_status_str(st));
                    break;
                }
                TU_CHECK(st == PL_ERR_NOMEM, "op %d n %llu persistent %d: %s", op,
                         (unsigned long long)n, persistent, pl_status_str(st));
            }
        }
    }
    remove(path);
    drop(&a);
    drop(&b);
    pl_buffer_free(f);
}

/* ---- tokenizer hash -------------------------------------------------------------------- */

static pl_gguf *vocab_gguf(const char *const *tokens, int n, int scores_type, void **mem)
{
    pl_gguf_writer *w;
    size_t size;
    pl_gguf *g = NULL;
    CU_ASSERT_FATAL(pl_gguf_writer_new(&w, 3, NULL) == PL_OK);
    pl_gguf_writer_set_array_str(w, "tokenizer.ggml.tokens", tokens, NULL, (uint64_t)n, NULL);
    float sc[8] = {0, -1, -2, -3, -4, -5, -6, -7};
    int32_t si[8] = {0};
    if (scores_type == PL_GGUF_FLOAT32)
        pl_gguf_writer_set_array(w, "tokenizer.ggml.scores", PL_GGUF_FLOAT32, sc, (uint64_t)n,
                                 NULL);
    else
        pl_gguf_writer_set_array(w, "tokenizer.ggml.scores", PL_GGUF_INT32, si, (uint64_t)n, NULL);
    CU_ASSERT_FATAL(pl_gguf_writer_write_memory(w, mem, &size, NULL) == PL_OK);
    pl_gguf_writer_free(w);
    CU_ASSERT_FATAL(pl_gguf_parse(&g, *mem, size, NULL) == PL_OK);
    return g;
}

static void logits_tokenizer_hash_tells_vocabularies_apart(void)
{
    const char *v1[] = {"a", "b", "cd"}, *v2[] = {"a", "bc", "d"};
    void *m1, *m2, *m3, *m4;
    pl_gguf *g1 = vocab_gguf(v1, 3, PL_GGUF_FLOAT32, &m1),
            *g2 = vocab_gguf(v1, 3, PL_GGUF_FLOAT32, &m2);
    pl_gguf *g3 = vocab_gguf(v2, 3, PL_GGUF_FLOAT32, &m3),
            *g4 = vocab_gguf(v1, 3, PL_GGUF_INT32, &m4);
    uint64_t h1 = 0, h2 = 0, h3 = 0, h4 = 0;
    CU_ASSERT_EQUAL(pl_logits_tokenizer_hash(g1, &h1, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_logits_tokenizer_hash(g2, &h2, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_logits_tokenizer_hash(g3, &h3, NULL), PL_OK);
    CU_ASSERT(h1 != 0 && h1 == h2 && h1 != h3);
    pl_error err;
    CU_ASSERT_EQUAL(pl_logits_tokenizer_hash(g4, &h4, &err), PL_ERR_TYPE);
    TU_CHECK(strstr(err.msg, "tokenizer.ggml.scores") != NULL, "%s", err.msg);
    pl_gguf_free(g1), pl_gguf_free(g2), pl_gguf_free(g3), pl_gguf_free(g4);
    pl_buffer_free(m1), pl_buffer_free(m2), pl_buffer_free(m3), pl_buffer_free(m4);
}

/* ---- a quantized model against its F32 weights ---------------------------------------- */

static pl_status eval_file(const char *path, const int32_t *tok, int64_t n, const char *out,
                           pl_error *err)
{
    pl_model *m = NULL;
    pl_session *s = NULL;
    float *lg = NULL;
    pl_status st;
    pl_model_info info;
    if ((st = pl_model_load(&m, path, NULL, err)) || (st = pl_model_get_info(m, &info, err)))
        goto out;
    pl_session_params sp = pl_session_default_params(m);
    sp.context_window = n;
    sp.n_threads = 1;
    if ((st = pl_session_new(&s, m, &sp, err))) goto out;
    lg = malloc((size_t)(n * info.n_vocab) * 4);
    if ((st = pl_session_eval(s, tok, n, lg, PL_EVAL_ALL_LOGITS, err))) goto out;
    uint64_t h;
    if ((st = pl_logits_tokenizer_hash(pl_model_gguf(m), &h, err))) goto out;
    pl_logits l = {.n_vocab = info.n_vocab,
                   .n_tokens = n,
                   .n_rows = n,
                   .tokenizer_hash = h,
                   .model_name = strrchr(path, '/') + 1,
                   .tokens = tok,
                   .logits = lg};
    st = pl_logits_write(&l, out, err);
out:
    free(lg);
    pl_session_free(s);
    pl_model_free(m);
    return st;
}

static void logits_q8_0_is_closer_to_f32_than_q4_k_m(void)
{
    tiny_spec sp = tiny_default("llama", PL_TYPE_F32);
    sp.seed = 42;
    void *img;
    size_t size;
    CU_ASSERT_FATAL(tiny_build(&sp, &img, &size) == 0);
    char f32[128], q8[128], q4[128], lf[128], l8[128], l4[128];
    tmp_path(f32, sizeof f32, "f32.gguf");
    tmp_path(q8, sizeof q8, "q8_0.gguf");
    tmp_path(q4, sizeof q4, "q4_k_m.gguf");
    tmp_path(lf, sizeof lf, "f32.logits");
    tmp_path(l8, sizeof l8, "q8_0.logits");
    tmp_path(l4, sizeof l4, "q4_k_m.logits");
    FILE *f = fopen(f32, "wb");
    CU_ASSERT_FATAL(f && fwrite(img, 1, size, f) == size && fclose(f) == 0);
    pl_buffer_free(img);
    pl_error err;
    pl_quantize_params qp = {.ftype = PL_FTYPE_Q8_0, .n_threads = 1};
    CU_ASSERT_FATAL(pl_model_quantize(f32, q8, &qp, &err) == PL_OK);
    qp.ftype = PL_FTYPE_Q4_K_M;
    CU_ASSERT_FATAL(pl_model_quantize(f32, q4, &qp, &err) == PL_OK);
    enum { T = 128 };
    int32_t tok[T];
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    for (int i = 0; i < T; i++) tok[i] = (int32_t)tu_rng_range(&r, 0, sp.V - 1);
    TU_CHECK(eval_file(f32, tok, T, lf, &err) == PL_OK, "%s", err.msg);
    TU_CHECK(eval_file(q8, tok, T, l8, &err) == PL_OK, "%s", err.msg);
    TU_CHECK(eval_file(q4, tok, T, l4, &err) == PL_OK, "%s", err.msg);
    pl_logits *a = NULL, *b8 = NULL, *b4 = NULL;
    CU_ASSERT_FATAL(pl_logits_read(&a, lf, &err) == PL_OK);
    CU_ASSERT_FATAL(pl_logits_read(&b8, l8, &err) == PL_OK);
    CU_ASSERT_FATAL(pl_logits_read(&b4, l4, &err) == PL_OK);
    pl_logits_stats s8, s4;
    CU_ASSERT_EQUAL(pl_logits_compare(a, b8, &s8, NULL, 0, &err), PL_OK);
    CU_ASSERT_EQUAL(pl_logits_compare(a, b4, &s4, NULL, 0, &err), PL_OK);
    printf("\n  tiny llama (E %lld, L %lld, V %lld), %d random tokens, seed %llu\n"
           "  %-7s %-22s %-10s %-10s %-10s %-18s %-18s\n",
           (long long)sp.E, (long long)sp.L, (long long)sp.V, T, (unsigned long long)tu_seed(),
           "vs F32", "mean KLD", "median", "p99", "max", "top-1 %", "top-5 %");
    const pl_logits_stats *ss[2] = {&s8, &s4};
    const char *nm[2] = {"Q8_0", "Q4_K_M"};
    for (int i = 0; i < 2; i++)
        printf("  %-7s %.6f ± %.6f   %-10.6f %-10.6f %-10.6f %6.2f ± %-9.2f %6.2f ± %.2f\n", nm[i],
               ss[i]->kld_mean, ss[i]->kld_mean_se, ss[i]->kld_median, ss[i]->kld_p99,
               ss[i]->kld_max, 100 * ss[i]->top1_agree, 100 * ss[i]->top1_agree_se,
               100 * ss[i]->top5_overlap, 100 * ss[i]->top5_overlap_se);
    CU_ASSERT(s8.kld_mean > 0 && s8.kld_mean < s4.kld_mean);
    CU_ASSERT(s8.top1_agree >= s4.top1_agree);
    CU_ASSERT(s8.kld_mean < 0.01);
    CU_ASSERT_EQUAL(s8.tokenizer_match, 1);
    pl_logits_free(a), pl_logits_free(b8), pl_logits_free(b4);
    remove(f32), remove(q8), remove(q4), remove(lf), remove(l8), remove(l4);
}

/* ---- the standalone converter (tools/logits_convert.c) --------------------------------- */

static void logits_converter_output_reads_back(void)
{
    const char *conv = getenv("PLUMB_LOGITS_CONVERT");
    if (!conv || !*conv) {
        printf("(PLUMB_LOGITS_CONVERT not set: skipped) ");
        return;
    }
    tu_rng r;
    tu_rng_init(&r, 5);
    owned a;
    make(&a, &r, 11, 7, 0, 7, 2.0, 0);
    char rows[128], ids[128], out[128], cmd[600];
    tmp_path(rows, sizeof rows, "dump.f32");
    tmp_path(ids, sizeof ids, "ids.txt");
    tmp_path(out, sizeof out, "conv.logits");
    FILE *f = fopen(rows, "wb");
    fwrite(a.lg + 4 * 11, 4, 3 * 11, f); /* the last 3 rows only */
    fclose(f);
    f = fopen(ids, "w");
    for (int i = 0; i < 7; i++) fprintf(f, "%d%s", a.tok[i], i % 2 ? ",\n" : " ");
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' '%s' 11 '%s' other-engine '%s'", conv, rows, ids, out);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    pl_logits *l = NULL;
    pl_error err;
    TU_CHECK(pl_logits_read(&l, out, &err) == PL_OK, "%s", err.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    CU_ASSERT(l->first_row == 4 && l->n_rows == 3 && l->tokenizer_hash == 0);
    CU_ASSERT_STRING_EQUAL(l->model_name, "other-engine");
    pl_logits_stats s;
    CU_ASSERT_EQUAL(pl_logits_compare(&a.l, l, &s, NULL, 0, NULL), PL_OK);
    CU_ASSERT(s.n_rows == 3 && s.kld_max == 0 && s.tokenizer_match == -1);
    pl_logits_free(l);
    remove(rows), remove(ids), remove(out);
    drop(&a);
}

int main(void)
{
    static const tu_test tests[] = {
        {"logits_round_trip_is_exact_and_self_compare_is_zero",
         logits_round_trip_is_exact_and_self_compare_is_zero},
        {"logits_compare_matches_gsl_reference", logits_compare_matches_gsl_reference},
        {"logits_compare_uses_common_rows_and_reports_max_row",
         logits_compare_uses_common_rows_and_reports_max_row},
        {"logits_compare_refuses_other_text_or_vocab", logits_compare_refuses_other_text_or_vocab},
        {"logits_windowed_file_round_trips_and_maps_rows",
         logits_windowed_file_round_trips_and_maps_rows},
        {"logits_windowed_rejects_bad_shapes", logits_windowed_rejects_bad_shapes},
        {"logits_rejects_truncation_at_every_offset", logits_rejects_truncation_at_every_offset},
        {"logits_rejects_hostile_headers", logits_rejects_hostile_headers},
        {"logits_write_refuses_invalid_input", logits_write_refuses_invalid_input},
        {"logits_alloc_failure_at_every_n_is_nomem", logits_alloc_failure_at_every_n_is_nomem},
        {"logits_tokenizer_hash_tells_vocabularies_apart",
         logits_tokenizer_hash_tells_vocabularies_apart},
        {"logits_q8_0_is_closer_to_f32_than_q4_k_m", logits_q8_0_is_closer_to_f32_than_q4_k_m},
        {"logits_converter_output_reads_back", logits_converter_output_reads_back},
        {NULL, NULL},
    };
    int rc = tu_run("logits", tests);
    rmdir(tmpdir);
    return rc;
}
