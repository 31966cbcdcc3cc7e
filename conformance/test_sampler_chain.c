/* test_sampler_chain.c — the sampler chain: greedy, determinism per seed, the distribution
 * after top-k/top-p/min-p (chi-square, GSL), penalties, parameter validation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "testutil.h"
#include "tinymodel.h"

static void *model_buf;
static pl_model *model;
static int64_t V;

static int setup(void)
{
    tiny_spec s = tiny_default("llama", PL_TYPE_F32);
    size_t size;
    if (tiny_build(&s, &model_buf, &size)) return -1;
    V = s.V;
    return pl_model_load_memory(&model, model_buf, size, NULL, NULL) == PL_OK ? 0 : -1;
}

static float *random_logits(uint64_t seed)
{
    tu_rng r;
    tu_rng_init(&r, seed);
    float *l = malloc((size_t)V * sizeof *l);
    for (int64_t i = 0; i < V; i++) l[i] = (float)(3.0 * tu_rng_normal(&r));
    return l;
}

static pl_sampler *make(pl_sampler_params p)
{
    pl_sampler *s = NULL;
    pl_error e;
    if (pl_sampler_new(&s, model, &p, &e)) fprintf(stderr, "sampler: %s\n", e.msg);
    return s;
}

static void greedy_picks_argmax_lowest_id_on_ties(void)
{
    float *l = random_logits(1);
    l[17] = 100.0f;
    l[200] = 100.0f;
    pl_sampler_params p = pl_sampler_default_params();
    p.temperature = 0.0f;
    pl_sampler *s = make(p);
    int32_t t = -1;
    CU_ASSERT_EQUAL(pl_sampler_sample(s, l, NULL, 0, &t, NULL), PL_OK);
    CU_ASSERT_EQUAL(t, 17);
    pl_sampler_free(s);
    free(l);
}

static void same_seed_same_tokens_other_seed_differs(void)
{
    float *l = random_logits(2);
    for (int64_t i = 0; i < V; i++) l[i] *= 0.1f; /* flat: draws vary */
    pl_sampler_params p = pl_sampler_default_params();
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    int32_t a[64], b[64], c[64];
    pl_sampler *s1 = make(p), *s2 = make(p);
    p.seed += 1;
    pl_sampler *s3 = make(p);
    for (int i = 0; i < 64; i++) {
        pl_sampler_sample(s1, l, NULL, 0, &a[i], NULL);
        pl_sampler_sample(s2, l, NULL, 0, &b[i], NULL);
        pl_sampler_sample(s3, l, NULL, 0, &c[i], NULL);
    }
    CU_ASSERT(memcmp(a, b, sizeof a) == 0);
    CU_ASSERT(memcmp(a, c, sizeof a) != 0);
    pl_sampler_free(s1);
    pl_sampler_free(s2);
    pl_sampler_free(s3);
    free(l);
}

/* The expected distribution after the chain, computed in double from the definition. */
static void expected(const float *l, pl_sampler_params p, double *q)
{
    int64_t *idx = malloc((size_t)V * sizeof *idx);
    for (int64_t i = 0; i < V; i++) idx[i] = i;
    /* sort by logit descending, ties by id */
    for (int64_t i = 1; i < V; i++)
        for (int64_t j = i; j > 0 && (l[idx[j]] > l[idx[j - 1]]); j--) {
            int64_t t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    int64_t n = p.top_k > 0 && p.top_k < V ? p.top_k : V;
    if (n < 1) n = 1;
    double *pr = calloc((size_t)n, sizeof *pr), sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += pr[i] = exp(((double)l[idx[i]] - l[idx[0]]) / p.temperature);
    for (int64_t i = 0; i < n; i++) pr[i] /= sum;
    double cum = 0;
    int64_t keep = n;
    for (int64_t i = 0; i < n; i++) {
        cum += pr[i];
        if (cum >= p.top_p) {
            keep = i + 1;
            break;
        }
    }
    int64_t keep2 = 1;
    while (keep2 < keep && pr[keep2] >= p.min_p * pr[0]) keep2++;
    double tot = 0;
    for (int64_t i = 0; i < keep2; i++) tot += pr[i];
    memset(q, 0, (size_t)V * sizeof *q);
    for (int64_t i = 0; i < keep2; i++) q[idx[i]] = pr[i] / tot;
    free(pr);
    free(idx);
}

static void draws_follow_the_truncated_distribution_chi_square(void)
{
    float *l = random_logits(3);
    pl_sampler_params cases[3];
    for (int i = 0; i < 3; i++) cases[i] = pl_sampler_default_params();
    cases[0].top_k = 8, cases[0].top_p = 1.0f, cases[0].min_p = 0.0f, cases[0].temperature = 1.5f;
    cases[1].top_k = 0, cases[1].top_p = 0.7f, cases[1].min_p = 0.0f, cases[1].temperature = 1.0f;
    cases[2].top_k = 40, cases[2].top_p = 0.95f, cases[2].min_p = 0.1f, cases[2].temperature = 0.8f;
    double *q = malloc((size_t)V * sizeof *q);
    long *cnt = malloc((size_t)V * sizeof *cnt);
    for (int c = 0; c < 3; c++) {
        expected(l, cases[c], q);
        pl_sampler *s = make(cases[c]);
        memset(cnt, 0, (size_t)V * sizeof *cnt);
        const int N = 100000;
        for (int i = 0; i < N; i++) {
            int32_t t;
            pl_sampler_sample(s, l, NULL, 0, &t, NULL);
            cnt[t]++;
        }
        double chi = 0;
        int dof = -1, impossible = 0;
        for (int64_t i = 0; i < V; i++) {
            if (q[i] == 0) {
                impossible += cnt[i] != 0;
                continue;
            }
            double e = q[i] * N;
            chi += (cnt[i] - e) * (cnt[i] - e) / e;
            dof++;
        }
        double pval = dof > 0 ? gsl_cdf_chisq_Q(chi, dof) : 1.0;
        TU_CHECK(impossible == 0, "case %d: %d tokens drawn that the chain excludes", c,
                 impossible);
        TU_CHECK(pval > 1e-4, "case %d: chi-square %.1f, dof %d, p = %.3g", c, chi, dof, pval);
        pl_sampler_free(s);
    }
    free(q);
    free(cnt);
    free(l);
}

static void repeat_penalty_demotes_recent_tokens(void)
{
    float *l = calloc((size_t)V, sizeof *l);
    l[5] = 2.0f;
    l[6] = 1.9f;
    pl_sampler_params p = pl_sampler_default_params();
    p.temperature = 0.0f;
    p.repeat_penalty = 1.5f;
    pl_sampler *s = make(p);
    int32_t hist[3] = {5, 9, 5}, t;
    CU_ASSERT_EQUAL(pl_sampler_sample(s, l, hist, 3, &t, NULL), PL_OK);
    CU_ASSERT_EQUAL(t, 6);
    CU_ASSERT_EQUAL(l[5], 2.0f); /* the caller's logits are untouched */
    pl_sampler_free(s);
    free(l);
}

static void bad_sampler_params_are_config_errors(void)
{
    pl_sampler_params p[5];
    for (int i = 0; i < 5; i++) p[i] = pl_sampler_default_params();
    p[0].temperature = NAN;
    p[1].top_p = 1.5f;
    p[2].min_p = -0.1f;
    p[3].repeat_penalty = 0.0f;
    p[4].penalty_last_n = -1;
    const char *needle[5] = {"temperature", "top_p", "min_p", "repeat_penalty", "penalty_last_n"};
    for (int i = 0; i < 5; i++) {
        pl_sampler *s = (pl_sampler *)1;
        pl_error e;
        CU_ASSERT_EQUAL(pl_sampler_new(&s, model, &p[i], &e), PL_ERR_CONFIG);
        CU_ASSERT_PTR_NULL(s);
        TU_CHECK(strstr(e.msg, needle[i]) != NULL, "message '%s' lacks '%s'", e.msg, needle[i]);
    }
    pl_sampler_free(NULL);
}

int main(void)
{
    if (setup()) {
        fprintf(stderr, "cannot build the test model\n");
        return 1;
    }
    static const tu_test tests[] = {
        {"greedy_picks_argmax_lowest_id_on_ties", greedy_picks_argmax_lowest_id_on_ties},
        {"same_seed_same_tokens_other_seed_differs", same_seed_same_tokens_other_seed_differs},
        {"draws_follow_the_truncated_distribution_chi_square",
         draws_follow_the_truncated_distribution_chi_square},
        {"repeat_penalty_demotes_recent_tokens", repeat_penalty_demotes_recent_tokens},
        {"bad_sampler_params_are_config_errors", bad_sampler_params_are_config_errors},
        {NULL, NULL},
    };
    int rc = tu_run("sampler_chain", tests);
    pl_model_free(model);
    pl_buffer_free(model_buf);
    return rc;
}
