/* test_forward_hook.c — sessions whose forward is a pl_forward_hook (issue 50's page seam): a
 * hook relaying to a second CPU session gives the plain session's bits; failing hooks are named.
 * Not the GPU forward (conformance/web/webgpu_page.mjs runs that) and not the hook's speed. */
#include <stdlib.h>
#include <string.h>

#include "chat_ops.h"
#include "mkmodel.h"
#include "testutil.h"

static pl_model *bpe, *spm;

static pl_session_params params(const pl_model *m, int64_t ctx, int64_t window)
{
    pl_session_params p = pl_session_default_params(m);
    p.n_threads = 1;
    p.context_window = window ? 0 : ctx;
    p.sliding_window = window;
    p.attention_sinks = window ? 2 : 0;
    p.prefill_chunk = 16;
    return p;
}

/* A plain session and a hooked one (its relay r) with the same params. */
typedef struct pair {
    pl_session *plain, *hooked;
    chat_ops_relay r;
    pl_forward_hook hook;
    int64_t V;
    float *l1, *l2;
} pair;

static int pair_new(pair *p, const pl_model *m, int64_t ctx, int64_t window)
{
    memset(p, 0, sizeof *p);
    pl_session_params sp = params(m, ctx, window);
    pl_error e = {0};
    if (pl_session_new(&p->plain, m, &sp, &e) || chat_ops_relay_init(&p->r, &p->hook, m, &sp, &e))
        goto bad;
    sp.forward = &p->hook;
    if (pl_session_new(&p->hooked, m, &sp, &e)) goto bad;
    p->V = pl_vocab_n_tokens(m);
    p->l1 = malloc((size_t)p->V * 64 * sizeof *p->l1);
    p->l2 = malloc((size_t)p->V * 64 * sizeof *p->l2);
    return 0;
bad:
    fprintf(stderr, "pair: %s\n", e.msg);
    return 1;
}

static void pair_free(pair *p)
{
    pl_session_free(p->plain);
    pl_session_free(p->hooked);
    chat_ops_relay_free(&p->r);
    free(p->l1);
    free(p->l2);
}

/* 1 when the two sessions hold the same ids and text, the relay holds as many, and the
 * next-token logits (probed by evaluating `probe` and truncating it away) are the same bits. */
static int same_state(pair *p, int32_t probe, const char *when)
{
    const int32_t *a, *b;
    const char *ta, *tb;
    int64_t na, nb;
    size_t la, lb;
    pl_session_history(p->plain, &a, &na, &ta, &la, NULL);
    pl_session_history(p->hooked, &b, &nb, &tb, &lb, NULL);
    TU_CHECK(na == nb && la == lb && !memcmp(a, b, (size_t)na * sizeof *a) && !memcmp(ta, tb, la),
             "%s: histories differ (%lld/%lld ids, %zu/%zu bytes)", when, (long long)na,
             (long long)nb, la, lb);
    if (na != nb) return 0;
    TU_CHECK(pl_session_n_past(p->r.inner) == nb, "%s: the relay holds %lld, the session %lld",
             when, (long long)pl_session_n_past(p->r.inner), (long long)nb);
    pl_error e = {0};
    pl_status s1 = pl_session_eval(p->plain, &probe, 1, p->l1, 0, &e);
    pl_status s2 = pl_session_eval(p->hooked, &probe, 1, p->l2, 0, &e);
    TU_CHECK(s1 == PL_OK && s2 == PL_OK, "%s: probe eval %d/%d: %s", when, s1, s2, e.msg);
    int same = s1 == PL_OK && s2 == PL_OK && !memcmp(p->l1, p->l2, (size_t)p->V * sizeof *p->l1);
    TU_CHECK(same, "%s: next-token logits differ from the plain session's", when);
    if (s1 == PL_OK) pl_session_truncate(p->plain, na, NULL);
    if (s2 == PL_OK) pl_session_truncate(p->hooked, nb, NULL);
    return same;
}

typedef struct sink {
    char buf[8192];
    size_t len;
} sink;

static int collect(void *user, const char *t, size_t n)
{
    sink *s = user;
    if (s->len + n <= sizeof s->buf) memcpy(s->buf + s->len, t, n);
    s->len += n;
    return 0;
}

/* One pl_chat turn on both sessions with equal seeded samplers: same status, path, counts,
 * text; returns the path (0 on a mismatch). */
static pl_chat_path turn_both(pair *p, pl_sampler *sa, pl_sampler *sb, const char *text, sink *out,
                              const char *when)
{
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 12;
    gp.ignore_eog = 1;
    sink o2 = {0};
    out->len = 0;
    pl_chat_stats s1, s2;
    pl_error e1 = {0}, e2 = {0};
    pl_status r1 = pl_chat(p->plain, text, strlen(text), sa, &gp, collect, out, &s1, &e1);
    pl_status r2 = pl_chat(p->hooked, text, strlen(text), sb, &gp, collect, &o2, &s2, &e2);
    TU_CHECK(r1 == PL_OK && r2 == PL_OK, "%s: pl_chat %d (%s) / %d (%s)", when, r1, e1.msg, r2,
             e2.msg);
    if (r1 || r2) return 0;
    int ok = s1.path == s2.path && s1.n_reused == s2.n_reused && s1.n_prefilled == s2.n_prefilled &&
             s1.n_generated == s2.n_generated && out->len == o2.len &&
             !memcmp(out->buf, o2.buf, out->len);
    TU_CHECK(ok,
             "%s: the hooked turn differs: path %s/%s, reused %lld/%lld, prefilled %lld/%lld, "
             "text '%.*s' / '%.*s'",
             when, pl_chat_path_str(s1.path), pl_chat_path_str(s2.path), (long long)s1.n_reused,
             (long long)s2.n_reused, (long long)s1.n_prefilled, (long long)s2.n_prefilled,
             (int)out->len, out->buf, (int)o2.len, o2.buf);
    return ok ? s1.path : 0;
}

#define USER1 "<|im_start|>user\nTell me a story about the sea.<|im_end|>\n<|im_start|>assistant\n"
#define USER1_EDITED                                                                               \
    "<|im_start|>user\nTell me a story about the sky.<|im_end|>\n<|im_start|>assistant\n"
#define OTHER "Once upon a time there was a lighthouse<|im_end|>\n<|im_start|>assistant\n"

/* The four turns: slow, fast, partial (an edited message), slow (nothing in common). */
static void chat_paths(const pl_model *m, int64_t window, unsigned faults, int *caught)
{
    pair p;
    if (pair_new(&p, m, 256, window)) {
        CU_FAIL("pair_new");
        return;
    }
    p.r.faults = faults;
    pl_sampler_params spp = pl_sampler_default_params();
    spp.seed = 11;
    pl_sampler *sa = NULL, *sb = NULL;
    pl_sampler_new(&sa, m, &spp, NULL);
    pl_sampler_new(&sb, m, &spp, NULL);
    sink out = {0};
    char next[8192];
    int diverged = 0;
    pl_chat_path want[4] = {PL_CHAT_SLOW, PL_CHAT_FAST, PL_CHAT_PARTIAL, PL_CHAT_SLOW};
    for (int t = 0; t < 4 && !diverged; t++) {
        const char *text = USER1;
        if (t == 1)
            snprintf(next, sizeof next,
                     "%s%.*s<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n<|im_start|>"
                     "assistant\n",
                     USER1, (int)out.len, out.buf);
        if (t == 2) snprintf(next, sizeof next, "%s", USER1_EDITED);
        if (t == 3) snprintf(next, sizeof next, "%s", OTHER);
        if (t > 0) text = next;
        char when[64];
        snprintf(when, sizeof when, "turn %d (window %lld)", t + 1, (long long)window);
        if (faults) { /* the planted fault: some turn or probe must part from the plain one */
            pl_gen_params gp = pl_gen_default_params();
            gp.max_tokens = 12;
            gp.ignore_eog = 1;
            sink o2 = {0};
            out.len = 0;
            pl_chat(p.plain, text, strlen(text), sa, &gp, collect, &out, NULL, NULL);
            pl_status st = pl_chat(p.hooked, text, strlen(text), sb, &gp, collect, &o2, NULL, NULL);
            const int32_t *a, *b;
            int64_t na, nb;
            pl_session_history(p.plain, &a, &na, NULL, NULL, NULL);
            pl_session_history(p.hooked, &b, &nb, NULL, NULL, NULL);
            diverged = st != PL_OK || out.len != o2.len || memcmp(out.buf, o2.buf, out.len) ||
                       na != nb || memcmp(a, b, (size_t)na * sizeof *a);
            if (!diverged && na > 0) { /* the next-token logits */
                int32_t probe = a[na - 1];
                diverged = pl_session_eval(p.plain, &probe, 1, p.l1, 0, NULL) ||
                           pl_session_eval(p.hooked, &probe, 1, p.l2, 0, NULL) ||
                           memcmp(p.l1, p.l2, (size_t)p.V * sizeof *p.l1);
                pl_session_truncate(p.plain, na, NULL);
                pl_session_truncate(p.hooked, nb, NULL);
            }
            continue;
        }
        pl_chat_path path = turn_both(&p, sa, sb, text, &out, when);
        /* (a sliding window evicts what the partial turn would keep: there it starts over) */
        TU_CHECK(window || path == want[t], "%s: path %s, expected %s", when,
                 pl_chat_path_str(path), pl_chat_path_str(want[t]));
        if (!path || !same_state(&p, 5, when)) break;
    }
    if (caught) *caught = diverged;
    /* Every row at once (PL_EVAL_ALL_LOGITS over chunks: out0 = 0 for each) from a reset. */
    if (!faults) {
        int32_t ids[40];
        for (int i = 0; i < 40; i++) ids[i] = (int32_t)(3 + (i * 37) % 200);
        pl_session_reset(p.plain);
        pl_session_reset(p.hooked);
        pl_error e = {0};
        CU_ASSERT_EQUAL(pl_session_eval(p.plain, ids, 40, p.l1, PL_EVAL_ALL_LOGITS, &e), PL_OK);
        CU_ASSERT_EQUAL(pl_session_eval(p.hooked, ids, 40, p.l2, PL_EVAL_ALL_LOGITS, &e), PL_OK);
        TU_CHECK(!memcmp(p.l1, p.l2, (size_t)(40 * p.V) * sizeof *p.l1),
                 "window %lld: all 40 rows of logits differ from the plain session's",
                 (long long)window);
        same_state(&p, 9, "after 40 ids from a reset");
    }
    pl_sampler_free(sa);
    pl_sampler_free(sb);
    pair_free(&p);
}

static void relay_gives_the_plain_sessions_bits_on_every_chat_path(void)
{
    chat_paths(bpe, 0, 0, NULL);
}

static void relay_gives_the_plain_sessions_bits_with_a_sliding_window(void)
{
    chat_paths(bpe, 40, 0, NULL);
}

/* The planted fault: a hook that keeps what it was told to drop. */
static void a_hook_that_ignores_truncate_is_caught_by_the_chat_paths(void)
{
    int caught = 0;
    chat_paths(bpe, 0, CHAT_RELAY_NO_TRUNCATE | CHAT_RELAY_NO_POS_CHECK, &caught);
    TU_CHECK(caught, "a relay that ignores truncate gave the plain session's turns and logits");
}

static void random_operations(const pl_model *m, int byte_level, int hook, int runs, int *failed)
{
    chat_ops_model cm = {.m = m, .byte_level = byte_level, .n_threads = 1, .hook = hook};
    uint64_t seed = tu_seed();
    tu_rng r;
    tu_rng_init(&r, seed);
    char why[512];
    int run = -1;
    size_t n = 0;
    /* failed: a planted fault's count, every run; else the first failure fails the test */
    int bad = chat_ops_random(&cm, &r, tu_rng_range_v, tu_rng_u64_v, runs, !failed, &run, &n, why,
                              sizeof why);
    if (failed) {
        *failed += bad;
        return;
    }
    TU_CHECK(!bad, "seed %llu run %d (%zu bytes, %s, hooked): %s", (unsigned long long)seed, run, n,
             byte_level ? "bpe" : "spm", why);
}

/* The prefix cache's property (test_chat_cache's, every operation: turns, edits, truncation,
 * reset, overflow, cancellation, allocation failure, sliding windows) on hooked sessions. */
static void relay_holds_the_chat_invariants_under_random_operations_bpe(void)
{
    random_operations(bpe, 1, 1, 30, NULL);
}

static void relay_holds_the_chat_invariants_under_random_operations_spm(void)
{
    random_operations(spm, 0, 1, 12, NULL);
}

static void a_hook_that_ignores_truncate_is_caught_by_the_invariants(void)
{
    int failed = 0;
    random_operations(bpe, 1, 2, 12, &failed);
    TU_CHECK(failed > 0, "no run of 12 caught a relay that ignores truncate");
}

/* The eval failing at each of its calls in turn 2 (prefill chunks and decode steps): the
 * hook's status and message come back named, the relay holds what the session holds, and the
 * next-token logits and a following turn are the plain session's. */
static void a_failing_eval_is_named_and_leaves_a_consistent_session(void)
{
    const char *t2 = USER1 "Once<|im_end|>\n<|im_start|>user\nAnd then what happened to "
                           "the ship and its crew?<|im_end|>\n<|im_start|>assistant\n";
    int k = 1;
    for (; k <= 64; k++) {
        pair p;
        if (pair_new(&p, bpe, 256, 0)) {
            CU_FAIL("pair_new");
            return;
        }
        pl_gen_params gp = pl_gen_default_params();
        gp.max_tokens = 4;
        gp.ignore_eog = 1;
        pl_error e = {0};
        CU_ASSERT_EQUAL(pl_chat(p.hooked, USER1, strlen(USER1), NULL, &gp, NULL, NULL, NULL, &e),
                        PL_OK);
        p.r.fail_eval = p.r.n_eval + k;
        p.r.fail_msg = "GPU device lost";
        pl_status st = pl_chat(p.hooked, t2, strlen(t2), NULL, &gp, NULL, NULL, NULL, &e);
        if (st == PL_OK && p.r.n_eval < p.r.fail_eval) { /* the turn has fewer calls than k */
            pair_free(&p);
            break;
        }
        TU_CHECK(st == PL_ERR_IO && strstr(e.msg, "external forward 'relay'") &&
                     strstr(e.msg, "GPU device lost"),
                 "eval failing at call %d of the turn: status %d, message '%s'", k, st, e.msg);
        /* The plain session catches up with what the hooked one holds, then both go on. */
        const int32_t *ids;
        int64_t n;
        pl_session_history(p.hooked, &ids, &n, NULL, NULL, NULL);
        if (n) CU_ASSERT_EQUAL(pl_session_eval(p.plain, ids, n, NULL, 0, &e), PL_OK);
        char when[48];
        snprintf(when, sizeof when, "after eval failed at call %d", k);
        same_state(&p, 7, when);
        sink out = {0};
        turn_both(&p, NULL, NULL, t2, &out, when);
        same_state(&p, 7, when);
        pair_free(&p);
    }
    /* prefill chunks of 16 and decode steps: every one of them failed once */
    TU_CHECK(k > 5, "the turn made only %d eval calls", k - 1);
}

static void a_failing_truncate_is_named_and_changes_nothing(void)
{
    pair p;
    if (pair_new(&p, bpe, 256, 0)) {
        CU_FAIL("pair_new");
        return;
    }
    sink out = {0};
    turn_both(&p, NULL, NULL, USER1, &out, "turn 1");
    /* the partial path truncates before it evaluates anything: that truncation fails */
    p.r.fail_truncate = p.r.n_truncate + 1;
    p.r.fail_msg = "the GPU worker is gone";
    int64_t n0 = pl_session_n_past(p.hooked);
    pl_error e = {0};
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 4;
    pl_status st =
        pl_chat(p.hooked, USER1_EDITED, strlen(USER1_EDITED), NULL, &gp, NULL, NULL, NULL, &e);
    TU_CHECK(st == PL_ERR_IO && strstr(e.msg, "truncate to") &&
                 strstr(e.msg, "the GPU worker is gone"),
             "a failing truncate on the partial path: status %d, message '%s'", st, e.msg);
    TU_CHECK(pl_session_n_past(p.hooked) == n0, "the session changed: %lld -> %lld", (long long)n0,
             (long long)pl_session_n_past(p.hooked));
    same_state(&p, 5, "after a failed truncate");
    /* pl_session_reset cannot fail: the truncation it could not pass on is asked again first
     * by the next eval (here it works, so the relay starts from 0 as the session does). */
    p.r.fail_truncate = p.r.n_truncate + 1;
    pl_session_reset(p.plain);
    pl_session_reset(p.hooked);
    TU_CHECK(pl_session_n_past(p.r.inner) == n0, "the planted failure did not hold the relay");
    turn_both(&p, NULL, NULL, USER1_EDITED, &out, "after a reset whose truncate failed");
    same_state(&p, 5, "after a reset whose truncate failed");
    /* ... and while it keeps failing, every eval fails with its message. */
    p.r.fail_truncate = p.r.n_truncate + 1;
    pl_session_reset(p.hooked);
    p.r.fail_truncate = p.r.n_truncate + 1;
    int32_t id = 5;
    st = pl_session_eval(p.hooked, &id, 1, NULL, 0, &e);
    TU_CHECK(st == PL_ERR_IO && strstr(e.msg, "truncate to 0"),
             "an eval after a failed reset: status %d, message '%s'", st, e.msg);
    CU_ASSERT_EQUAL(pl_session_eval(p.hooked, &id, 1, NULL, 0, &e), PL_OK);
    CU_ASSERT_EQUAL(pl_session_n_past(p.r.inner), 1);
    pair_free(&p);
}

static void hook_errors_without_a_message_or_a_known_status_are_named(void)
{
    pair p;
    if (pair_new(&p, bpe, 64, 0)) {
        CU_FAIL("pair_new");
        return;
    }
    int32_t id = 5;
    pl_error e = {0};
    p.r.fail_eval = 1;
    p.r.fail_msg = "";
    p.r.fail_status = PL_ERR_UNSUPPORTED;
    pl_status st = pl_session_eval(p.hooked, &id, 1, NULL, 0, &e);
    TU_CHECK(st == PL_ERR_UNSUPPORTED && strstr(e.msg, "with no message") &&
                 strstr(e.msg, "PL_ERR_UNSUPPORTED"),
             "an empty message: status %d, '%s'", st, e.msg);
    p.r.fail_eval = 2;
    p.r.fail_status = (pl_status)7;
    st = pl_session_eval(p.hooked, &id, 1, NULL, 0, &e);
    TU_CHECK(st == PL_ERR_INVALID_ARG && strstr(e.msg, "returned 7"),
             "an unknown status: status %d, '%s'", st, e.msg);
    CU_ASSERT_EQUAL(pl_session_n_past(p.hooked), 0);
    CU_ASSERT_EQUAL(pl_session_eval(p.hooked, &id, 1, NULL, 0, NULL), PL_OK);
    pair_free(&p);
}

static void a_hook_needs_eval_and_truncate_and_allocates_no_cache(void)
{
    pl_forward_hook h = {0};
    chat_ops_relay r;
    pl_session_params sp = params(bpe, 128, 0);
    CU_ASSERT_EQUAL_FATAL(chat_ops_relay_init(&r, &h, bpe, &sp, NULL), PL_OK);
    pl_forward_hook half = h;
    half.truncate = NULL;
    sp.forward = &half;
    pl_session *s = NULL;
    pl_error e = {0};
    CU_ASSERT_EQUAL(pl_session_new(&s, bpe, &sp, &e), PL_ERR_CONFIG);
    CU_ASSERT_PTR_NULL(s);
    half = h;
    half.eval = NULL;
    CU_ASSERT_EQUAL(pl_session_new(&s, bpe, &sp, &e), PL_ERR_CONFIG);
    sp.forward = &h;
    pl_session_info est, info;
    CU_ASSERT_EQUAL(pl_session_estimate(bpe, &sp, &est, &e), PL_OK);
    CU_ASSERT_EQUAL_FATAL(pl_session_new(&s, bpe, &sp, &e), PL_OK);
    h.eval = NULL; /* the session copied the hook */
    CU_ASSERT_EQUAL(pl_session_get_info(s, &info, &e), PL_OK);
    TU_CHECK(info.kv_bytes == 0 && info.scratch_bytes == 0 && est.kv_bytes == 0 &&
                 est.scratch_bytes == 0 && !strcmp(info.kernels, "relay") &&
                 !strcmp(est.kernels, "relay") && info.kv_capacity == 128,
             "hooked session info: kv %llu scratch %llu kernels '%s' capacity %lld",
             (unsigned long long)info.kv_bytes, (unsigned long long)info.scratch_bytes,
             info.kernels, (long long)info.kv_capacity);
    int32_t id = 5;
    CU_ASSERT_EQUAL(pl_session_eval(s, &id, 1, NULL, 0, &e), PL_OK);
    pl_session_free(s);
    chat_ops_relay_free(&r);
}

int main(void)
{
    pl_error e = {0};
    if (mk_load_tiny(DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 0, &bpe, &e) ||
        mk_load_tiny(DEMO_VOCAB_SPM, PL_FTYPE_F32, 0, &spm, &e)) {
        fprintf(stderr, "test_forward_hook: could not build the models: %s\n", e.msg);
        return 1;
    }
    static const tu_test tests[] = {
        {"relay_gives_the_plain_sessions_bits_on_every_chat_path",
         relay_gives_the_plain_sessions_bits_on_every_chat_path},
        {"relay_gives_the_plain_sessions_bits_with_a_sliding_window",
         relay_gives_the_plain_sessions_bits_with_a_sliding_window},
        {"a_hook_that_ignores_truncate_is_caught_by_the_chat_paths",
         a_hook_that_ignores_truncate_is_caught_by_the_chat_paths},
        {"relay_holds_the_chat_invariants_under_random_operations_bpe",
         relay_holds_the_chat_invariants_under_random_operations_bpe},
        {"relay_holds_the_chat_invariants_under_random_operations_spm",
         relay_holds_the_chat_invariants_under_random_operations_spm},
        {"a_hook_that_ignores_truncate_is_caught_by_the_invariants",
         a_hook_that_ignores_truncate_is_caught_by_the_invariants},
        {"a_failing_eval_is_named_and_leaves_a_consistent_session",
         a_failing_eval_is_named_and_leaves_a_consistent_session},
        {"a_failing_truncate_is_named_and_changes_nothing",
         a_failing_truncate_is_named_and_changes_nothing},
        {"hook_errors_without_a_message_or_a_known_status_are_named",
         hook_errors_without_a_message_or_a_known_status_are_named},
        {"a_hook_needs_eval_and_truncate_and_allocates_no_cache",
         a_hook_needs_eval_and_truncate_and_allocates_no_cache},
        {NULL, NULL},
    };
    int rc = tu_run("forward_hook", tests);
    pl_model_free(bpe);
    pl_model_free(spm);
    return rc;
}
