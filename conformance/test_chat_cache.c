/* test_chat_cache.c — generation and the chat prefix cache: the seeded random-operation
 * property (chat_ops.c), and one test per documented behaviour (paths, merges, stops, overflow,
 * end of turn, cancellation, allocation failure, sessions on threads). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_ops.h"
#include "mkmodel.h"
#include "testutil.h"

static pl_model *bpe, *spm;

static pl_model *make_model(enum demo_vocab_kind vocab, pl_ftype ftype)
{
    pl_error e = {0};
    pl_model *m = NULL;
    if (mk_load_tiny(vocab, ftype, 0, &m, &e)) fprintf(stderr, "model: %s\n", e.msg);
    return m;
}

static int setup(void)
{
    bpe = make_model(DEMO_VOCAB_BPE, PL_FTYPE_Q8_0);
    spm = make_model(DEMO_VOCAB_SPM, PL_FTYPE_F32);
    return bpe && spm ? 0 : -1;
}

/* ---- the property, over random operation sequences ---- */

static void random_sequences(const pl_model *m, int byte_level, int threads, int runs)
{
    chat_ops_model cm = {.m = m, .byte_level = byte_level, .n_threads = threads};
    uint64_t seed = tu_seed();
    tu_rng r;
    tu_rng_init(&r, seed);
    char why[512];
    int run = -1;
    size_t n = 0;
    int bad =
        chat_ops_random(&cm, &r, tu_rng_range_v, tu_rng_u64_v, runs, 1, &run, &n, why, sizeof why);
    TU_CHECK(!bad, "seed %llu run %d (%zu bytes, %s): %s", (unsigned long long)seed, run, n,
             byte_level ? "bpe" : "spm", why);
}

static void invariants_hold_after_random_operations_bpe(void)
{
    random_sequences(bpe, 1, 1, 60);
}

static void invariants_hold_after_random_operations_spm(void)
{
    random_sequences(spm, 0, 1, 25);
}

static void invariants_hold_after_random_operations_two_threads(void)
{
    random_sequences(bpe, 1, 2, 10);
}

/* ---- helpers for the behaviour tests ---- */

typedef struct sink {
    char buf[8192];
    size_t len;
    int cancel_at, calls;
} sink;

static int collect(void *user, const char *t, size_t n)
{
    sink *s = user;
    if (s->len + n <= sizeof s->buf) memcpy(s->buf + s->len, t, n);
    s->len += n;
    s->calls++;
    return s->cancel_at && s->calls >= s->cancel_at;
}

static pl_session *session(const pl_model *m, int64_t ctx)
{
    pl_session_params p = pl_session_default_params(m);
    p.n_threads = 1;
    p.context_window = ctx;
    p.prefill_chunk = 16;
    pl_session *s = NULL;
    pl_error e = {0};
    if (pl_session_new(&s, m, &p, &e)) fprintf(stderr, "session: %s\n", e.msg);
    return s;
}

static void history(const pl_session *s, const char **text, size_t *len, int64_t *n)
{
    pl_session_history(s, NULL, n, text, len, NULL);
}

#define USER1 "<|im_start|>user\nTell me a story about the sea.<|im_end|>\n<|im_start|>assistant\n"

/* ---- behaviours ---- */

static void second_turn_takes_fast_path_and_prefills_only_new_tokens(void)
{
    pl_session *s = session(bpe, 256);
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 8;
    gp.ignore_eog = 1;
    sink out = {0};
    pl_chat_stats st;
    pl_error e = {0};
    CU_ASSERT_EQUAL_FATAL(pl_chat(s, USER1, strlen(USER1), NULL, &gp, collect, &out, &st, &e),
                          PL_OK);
    CU_ASSERT_EQUAL(st.path, PL_CHAT_SLOW);
    CU_ASSERT_EQUAL(st.n_reused, 0);
    const char *text;
    size_t len;
    int64_t n1;
    history(s, &text, &len, &n1);
    TU_CHECK(len == strlen(USER1) + out.len && memcmp(text + strlen(USER1), out.buf, out.len) == 0,
             "history is not conversation + delivered (%zu vs %zu + %zu)", len, strlen(USER1),
             out.len);
    char next[4096];
    int k =
        snprintf(next, sizeof next,
                 "%s%.*s<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n<|im_start|>assistant\n",
                 USER1, (int)out.len, out.buf);
    size_t suffix_tokens = 0;
    const char *suffix = next + strlen(USER1) + out.len;
    pl_tokenize(bpe, suffix, strlen(suffix), PL_TOKENIZE_PARSE_SPECIAL, NULL, 0, &suffix_tokens,
                NULL);
    out.len = 0;
    CU_ASSERT_EQUAL_FATAL(pl_chat(s, next, (size_t)k, NULL, &gp, collect, &out, &st, &e), PL_OK);
    CU_ASSERT_EQUAL(st.path, PL_CHAT_FAST);
    TU_CHECK(st.n_reused == n1, "reused %lld of %lld", (long long)st.n_reused, (long long)n1);
    TU_CHECK(st.n_prefilled == (int64_t)suffix_tokens, "prefilled %lld, the new text is %zu tokens",
             (long long)st.n_prefilled, suffix_tokens);
    pl_session_free(s);
}

/* The cached text ends inside a word: the last token is tokenized again with the new bytes. */
static void fast_path_retokenizes_a_tail_that_merges_with_the_new_bytes(void)
{
    pl_session *s = session(bpe, 256);
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 0;
    const char *a = "<|im_start|>user\nthe sea and the wa",
               *b = "<|im_start|>user\nthe sea and the water";
    pl_chat_stats st;
    pl_error e = {0};
    CU_ASSERT_EQUAL_FATAL(pl_chat(s, a, strlen(a), NULL, &gp, NULL, NULL, &st, &e), PL_OK);
    int64_t n1;
    const int32_t *ids;
    pl_session_history(s, &ids, &n1, NULL, NULL, NULL);
    int32_t tail = ids[n1 - 1];
    CU_ASSERT_EQUAL_FATAL(pl_chat(s, b, strlen(b), NULL, &gp, NULL, NULL, &st, &e), PL_OK);
    CU_ASSERT_EQUAL(st.path, PL_CHAT_FAST);
    /* Expected: what tokenizing the tail's text with the new bytes gives. */
    size_t n_whole = 0;
    int32_t whole[64];
    pl_tokenize(bpe, b, strlen(b), PL_TOKENIZE_PARSE_SPECIAL, whole, 64, &n_whole, NULL);
    const char *text;
    size_t len;
    int64_t n2;
    pl_session_history(s, &ids, &n2, &text, &len, NULL);
    TU_CHECK(len == strlen(b) && memcmp(text, b, len) == 0, "history text is not the new text");
    /* "wa" + "ter" merge in this vocabulary into fewer tokens than "wa" | "ter". */
    int merged = st.n_reused == n1 - 1;
    TU_CHECK(merged || ids[n1 - 1] == tail, "the kept tail changed");
    TU_CHECK(n2 == (int64_t)n_whole && memcmp(ids, whole, n_whole * sizeof *ids) == 0,
             "ids (%lld) differ from tokenizing the whole text (%zu): the merge was not redone",
             (long long)n2, n_whole);
    pl_session_free(s);
}

static void stop_string_across_pieces_is_held_back_and_never_delivered(void)
{
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 24;
    gp.ignore_eog = 1;
    sink free_run = {0};
    pl_session *s = session(bpe, 256);
    pl_error e = {0};
    CU_ASSERT_EQUAL_FATAL(pl_chat(s, USER1, strlen(USER1), NULL, &gp, collect, &free_run, NULL, &e),
                          PL_OK);
    pl_session_free(s);
    /* A stop string that starts inside one piece and ends in a later one. */
    const int32_t *ids;
    int64_t n;
    s = session(bpe, 256);
    CU_ASSERT_EQUAL_FATAL(pl_chat(s, USER1, strlen(USER1), NULL, &gp, NULL, NULL, NULL, &e), PL_OK);
    pl_session_history(s, &ids, &n, NULL, NULL, NULL);
    size_t p0 = strlen(USER1), cut = 0;
    for (int64_t i = 0; i < n && !cut; i++) {
        size_t end = pl_session_text_end(s, i);
        if (end > p0 + 2 && end + 2 < p0 + free_run.len)
            cut = end - 1 - p0; /* 3 bytes over a boundary */
    }
    pl_session_free(s);
    TU_CHECK(cut > 0, "the free run (%zu bytes) has no piece boundary to straddle", free_run.len);
    char stop[4] = {free_run.buf[cut], free_run.buf[cut + 1], free_run.buf[cut + 2], 0};
    const char *stops[] = {stop};
    gp.stops = stops;
    gp.n_stops = 1;
    sink out = {0};
    pl_chat_stats st;
    s = session(bpe, 256);
    CU_ASSERT_EQUAL_FATAL(pl_chat(s, USER1, strlen(USER1), NULL, &gp, collect, &out, &st, &e),
                          PL_OK);
    const char *first = strstr(free_run.buf, stop);
    size_t expect =
        first && (size_t)(first - free_run.buf) < cut ? (size_t)(first - free_run.buf) : cut;
    CU_ASSERT_EQUAL(st.gen.stop, PL_STOP_STRING);
    TU_CHECK(out.len == expect && memcmp(out.buf, free_run.buf, expect) == 0,
             "delivered %zu bytes, want the %zu before the stop string", out.len, expect);
    const char *text;
    size_t len;
    history(s, &text, &len, &n);
    TU_CHECK(len == strlen(USER1) + out.len && memcmp(text + strlen(USER1), out.buf, out.len) == 0,
             "after a stop string the history is not conversation + delivered");
    pl_session_free(s);
}

static void overflow_returns_context_full_and_changes_nothing(void)
{
    pl_session *s = session(bpe, 48);
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 4;
    gp.ignore_eog = 1;
    pl_error e = {0};
    CU_ASSERT_EQUAL_FATAL(pl_chat(s, USER1, strlen(USER1), NULL, &gp, NULL, NULL, NULL, &e), PL_OK);
    const int32_t *ids;
    const char *text;
    int64_t n0;
    size_t len0;
    pl_session_history(s, &ids, &n0, &text, &len0, NULL);
    int32_t *ids0 = malloc((size_t)n0 * sizeof *ids0);
    memcpy(ids0, ids, (size_t)n0 * sizeof *ids0);
    char *text0 = malloc(len0);
    memcpy(text0, text, len0);
    char big[2048];
    int k = snprintf(big, sizeof big, "%.*s", (int)len0, text0);
    for (; k < 1500; k++) big[k] = (char)('a' + k % 23);
    pl_chat_stats st;
    CU_ASSERT_EQUAL(pl_chat(s, big, (size_t)k, NULL, &gp, NULL, NULL, &st, &e),
                    PL_ERR_CONTEXT_FULL);
    TU_CHECK(strstr(e.msg, "context") != NULL, "message does not say context: %s", e.msg);
    int64_t n1;
    size_t len1;
    pl_session_history(s, &ids, &n1, &text, &len1, NULL);
    TU_CHECK(n1 == n0 && len1 == len0 && !memcmp(ids, ids0, (size_t)n0 * sizeof *ids) &&
                 !memcmp(text, text0, len0) && pl_session_n_past(s) == n0,
             "the overflowing turn changed the session");
    /* and it is still usable: the same conversation continues on the fast path */
    char next[1024];
    k = snprintf(next, sizeof next, "%.*s<|im_end|>\n", (int)len0, text0);
    CU_ASSERT_EQUAL(pl_chat(s, next, k, NULL, &gp, NULL, NULL, &st, &e), PL_OK);
    CU_ASSERT_EQUAL(st.path, PL_CHAT_FAST);
    free(ids0);
    free(text0);
    pl_session_free(s);
}

/* A generated end-of-generation token ends the turn unevaluated; the next turn's template
 * writes it, and the fast path evaluates it as the first new token. */
static void end_of_turn_token_is_not_kept_and_the_template_adds_it(void)
{
    pl_sampler_params sp = pl_sampler_default_params();
    sp.temperature = 50.0f; /* nearly uniform over 320 tokens: <|im_end|> comes up */
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 200;
    int32_t im_end = pl_vocab_eot(bpe);
    CU_ASSERT_FATAL(im_end >= 0);
    int found = 0;
    for (uint64_t seed = 1; seed < 40 && !found; seed++) {
        sp.seed = seed;
        pl_sampler *smp = NULL;
        pl_sampler_new(&smp, bpe, &sp, NULL);
        pl_session *s = session(bpe, 256);
        sink out = {0};
        pl_chat_stats st;
        pl_error e = {0};
        CU_ASSERT_EQUAL_FATAL(pl_chat(s, USER1, strlen(USER1), smp, &gp, collect, &out, &st, &e),
                              PL_OK);
        if (st.gen.stop == PL_STOP_EOG) {
            found = 1;
            const int32_t *ids;
            int64_t n;
            const char *text;
            size_t len;
            pl_session_history(s, &ids, &n, &text, &len, NULL);
            for (int64_t i = st.n_reused + st.n_prefilled; i < n; i++)
                CU_ASSERT(!pl_vocab_is_eog(bpe, ids[i]));
            TU_CHECK(len == strlen(USER1) + out.len,
                     "the end-of-turn token left text in the history");
            /* by memcpy, not "%.*s": a random model's reply may hold a NUL byte */
            static const char tail[] =
                "<|im_end|>\n<|im_start|>user\nok<|im_end|>\n<|im_start|>assistant\n";
            char next[16384];
            CU_ASSERT_FATAL(len + sizeof tail <= sizeof next);
            memcpy(next, text, len);
            memcpy(next + len, tail, sizeof tail);
            size_t k = len + sizeof tail - 1;
            int64_t n_before = n;
            gp.max_tokens = 0;
            CU_ASSERT_EQUAL(pl_chat(s, next, k, NULL, &gp, NULL, NULL, &st, &e), PL_OK);
            CU_ASSERT_EQUAL(st.path, PL_CHAT_FAST);
            pl_session_history(s, &ids, &n, NULL, NULL, NULL);
            TU_CHECK(n > n_before && ids[n_before] == im_end,
                     "the next turn's first new token is not <|im_end|>");
        }
        pl_sampler_free(smp);
        pl_session_free(s);
    }
    TU_CHECK(found, "no seed in 1..39 ended a turn with an end-of-generation token");
}

static int32_t id_of(const pl_model *m, const char *text)
{
    for (int32_t i = 0; i < pl_vocab_n_tokens(m); i++) {
        pl_str t = pl_vocab_token_text(m, i);
        if (t.len == strlen(text) && memcmp(t.ptr, text, t.len) == 0) return i;
    }
    return -1;
}

/* The end-of-generation set is llama.cpp's: eos (here <|im_end|>) and the control tokens named
 * like an end (<|endoftext|>, here only bos and pad), not the other control tokens. */
static void end_named_control_tokens_are_end_of_generation(void)
{
    int32_t endoftext = id_of(bpe, "<|endoftext|>"), im_end = id_of(bpe, "<|im_end|>");
    int32_t im_start = id_of(bpe, "<|im_start|>");
    CU_ASSERT_FATAL(endoftext >= 0 && im_end >= 0 && im_start >= 0);
    CU_ASSERT_EQUAL(pl_vocab_eos(bpe), im_end);
    TU_CHECK(pl_vocab_is_eog(bpe, im_end), "<|im_end|> (eos, id %d) is not an end", im_end);
    TU_CHECK(pl_vocab_is_eog(bpe, endoftext), "<|endoftext|> (id %d) is not an end", endoftext);
    TU_CHECK(!pl_vocab_is_eog(bpe, im_start), "<|im_start|> (id %d) is an end", im_start);
    int n = 0;
    for (int32_t i = 0; i < pl_vocab_n_tokens(bpe); i++) n += pl_vocab_is_eog(bpe, i);
    TU_CHECK(n == 2, "%d end-of-generation tokens, want 2", n);
}

/* ignore_eog: the end-of-generation tokens are impossible to draw (llama.cpp's ignore_eos), not
 * drawn and hidden: a nearly uniform sampler that draws one within 200 tokens for most seeds
 * never draws one, and every turn runs to max_tokens. */
static void ignore_eog_never_draws_an_end_of_generation_token(void)
{
    CU_ASSERT_FATAL(pl_vocab_eos(bpe) >= 0 && pl_vocab_eot(bpe) >= 0);
    pl_sampler_params sp = pl_sampler_default_params();
    sp.temperature = 50.0f;
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 200;
    int drawn_without = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        for (int ignore = 0; ignore < 2; ignore++) {
            sp.seed = seed;
            gp.ignore_eog = ignore;
            pl_sampler *smp = NULL;
            pl_sampler_new(&smp, bpe, &sp, NULL);
            pl_session *s = session(bpe, 512);
            sink out = {0};
            pl_chat_stats st;
            pl_error e = {0};
            CU_ASSERT_EQUAL_FATAL(
                pl_chat(s, USER1, strlen(USER1), smp, &gp, collect, &out, &st, &e), PL_OK);
            if (!ignore) {
                drawn_without += st.gen.stop == PL_STOP_EOG;
            } else {
                const int32_t *ids;
                int64_t n;
                pl_session_history(s, &ids, &n, NULL, NULL, NULL);
                for (int64_t i = st.n_reused + st.n_prefilled; i < n; i++)
                    TU_CHECK(!pl_vocab_is_eog(bpe, ids[i]),
                             "seed %llu: token %lld of the reply is end-of-generation id %d",
                             (unsigned long long)seed,
                             (long long)(i - st.n_reused - st.n_prefilled), ids[i]);
                TU_CHECK(st.gen.stop == PL_STOP_MAX_TOKENS && st.gen.n_generated == 200,
                         "seed %llu: stopped by %s after %lld tokens, want max_tokens after 200",
                         (unsigned long long)seed, pl_stop_reason_str(st.gen.stop),
                         (long long)st.gen.n_generated);
            }
            pl_sampler_free(smp);
            pl_session_free(s);
        }
    }
    /* the draw above is one that reaches the end tokens without the flag */
    TU_CHECK(drawn_without >= 4, "only %d of 8 seeds drew an end token without ignore_eog",
             drawn_without);
}

static void cancel_keeps_exactly_what_was_delivered(void)
{
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 20;
    gp.ignore_eog = 1;
    for (int at = 1; at <= 4; at++) {
        pl_session *s = session(bpe, 256);
        sink out = {.cancel_at = at};
        pl_chat_stats st;
        pl_error e = {0};
        CU_ASSERT_EQUAL_FATAL(pl_chat(s, USER1, strlen(USER1), NULL, &gp, collect, &out, &st, &e),
                              PL_OK);
        CU_ASSERT_EQUAL(st.gen.stop, PL_STOP_CANCELLED);
        CU_ASSERT_EQUAL(out.calls, at);
        const char *text;
        size_t len;
        int64_t n;
        history(s, &text, &len, &n);
        TU_CHECK(len == strlen(USER1) + out.len && !memcmp(text + strlen(USER1), out.buf, out.len),
                 "cancel at piece %d: history is not conversation + delivered", at);
        pl_session_free(s);
    }
}

static void bad_generation_parameters_are_refused_before_any_change(void)
{
    pl_session *s = session(bpe, 256);
    pl_error e = {0};
    pl_gen_params gp = pl_gen_default_params();
    CU_ASSERT_EQUAL_FATAL(pl_chat(s, USER1, strlen(USER1), NULL, &gp, NULL, NULL, NULL, &e), PL_OK);
    int64_t n = pl_session_n_past(s);
    gp.max_tokens = -1;
    CU_ASSERT_EQUAL(pl_chat(s, "x", 1, NULL, &gp, NULL, NULL, NULL, &e), PL_ERR_CONFIG);
    TU_CHECK(strstr(e.msg, "max_tokens") != NULL, "message: %s", e.msg);
    gp = pl_gen_default_params();
    const char *stops[] = {""};
    gp.stops = stops;
    gp.n_stops = 1;
    CU_ASSERT_EQUAL(pl_chat(s, "x", 1, NULL, &gp, NULL, NULL, NULL, &e), PL_ERR_CONFIG);
    TU_CHECK(strstr(e.msg, "stops[0]") != NULL, "message: %s", e.msg);
    gp.n_stops = PL_GEN_MAX_STOP + 1;
    CU_ASSERT_EQUAL(pl_generate(s, NULL, 0, NULL, &gp, NULL, NULL, NULL, &e), PL_ERR_CONFIG);
    CU_ASSERT_EQUAL(pl_session_n_past(s), n);
    pl_session *empty = session(bpe, 64);
    gp = pl_gen_default_params();
    CU_ASSERT_EQUAL(pl_generate(empty, NULL, 0, NULL, &gp, NULL, NULL, NULL, &e),
                    PL_ERR_INVALID_ARG);
    CU_ASSERT_EQUAL(pl_chat(empty, "", 0, NULL, &gp, NULL, NULL, NULL, &e), PL_ERR_INVALID_ARG);
    pl_session_free(empty);
    pl_session_free(s);
}

/* Allocation N of a turn fails, for every N: the turn reports PL_ERR_NOMEM or succeeds, the
 * invariants hold (chat_ops' oracle), and the next turn works. */
static void allocation_failure_at_every_point_leaves_a_usable_session(void)
{
    chat_ops_model cm = {.m = bpe, .byte_level = 1, .n_threads = 1};
    char why[512];
    /* config 0 (context 48, F16), then: turn (user "hi there", max 5 tokens), then nomem at
     * allocation k, transient and persistent, followed by a plain turn. */
    unsigned k = 0;
    for (;; k++) {
        uint64_t failed = 0;
        for (unsigned persistent = 0; persistent < 2; persistent++) {
            uint8_t in[] = {0x00,
                            0,
                            8,
                            'h',
                            'i',
                            ' ',
                            't',
                            'h',
                            'e',
                            'r',
                            'e',
                            5,
                            0,
                            0,
                            7,
                            (uint8_t)k,
                            (uint8_t)persistent,
                            4,
                            'm',
                            'o',
                            'r',
                            'e',
                            3,
                            0,
                            0,
                            3,
                            'o',
                            'k',
                            '?',
                            2,
                            0,
                            0};
            int bad = chat_ops_run(&cm, in, sizeof in, why, sizeof why);
            TU_CHECK(!bad, "allocation %u (%s): %s", k + 1, persistent ? "persistent" : "transient",
                     why);
            if (!persistent) failed = chat_ops_alloc_failures();
        }
        if (failed == 0 || k == 47) break; /* the turn makes fewer than k + 1 allocations */
    }
    TU_CHECK(k > 3 && k < 47, "the turn's allocations were not all reached: stopped at %u", k + 1);
}

/* One model, sessions on threads: each thread's conversation equals a single-threaded run. */
typedef struct job {
    int id;
    char out[2048];
    size_t len;
    int ok;
} job;

static void conversation(job *j)
{
    pl_session *s = session(bpe, 256);
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = 6;
    gp.ignore_eog = 1;
    pl_sampler_params sp = pl_sampler_default_params();
    sp.seed = (uint64_t)j->id;
    char conv[8192];
    int k = 0;
    j->ok = 1;
    j->len = 0;
    for (int t = 0; t < 4 && j->ok; t++) {
        k += snprintf(conv + k, sizeof conv - (size_t)k,
                      "<|im_start|>user\nthread %d turn %d<|im_end|>\n<|im_start|>assistant\n",
                      j->id, t);
        pl_sampler *smp = NULL;
        pl_sampler_new(&smp, bpe, &sp, NULL);
        sink out = {0};
        pl_chat_stats st;
        j->ok = pl_chat(s, conv, (size_t)k, smp, &gp, collect, &out, &st, NULL) == PL_OK &&
                (t == 0 || st.path == PL_CHAT_FAST);
        pl_sampler_free(smp);
        k += snprintf(conv + k, sizeof conv - (size_t)k, "%.*s<|im_end|>\n", (int)out.len, out.buf);
        if (j->len + out.len < sizeof j->out) {
            memcpy(j->out + j->len, out.buf, out.len);
            j->len += out.len;
        }
    }
    pl_session_free(s);
}

static void *run_job(void *arg)
{
    conversation(arg);
    return NULL;
}

static void sessions_on_threads_share_one_model(void)
{
    enum { N = 4 };
    job solo[N], par[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        solo[i].id = par[i].id = i;
        conversation(&solo[i]);
    }
    for (int i = 0; i < N; i++) pthread_create(&th[i], NULL, run_job, &par[i]);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        TU_CHECK(solo[i].ok && par[i].ok, "conversation %d failed or missed the fast path", i);
        TU_CHECK(solo[i].len == par[i].len && !memcmp(solo[i].out, par[i].out, solo[i].len),
                 "conversation %d differs when run beside others", i);
    }
}

int main(void)
{
    if (setup()) {
        fprintf(stderr, "test_chat_cache: could not build the models\n");
        return 1;
    }
    static const tu_test tests[] = {
        {"second_turn_takes_fast_path_and_prefills_only_new_tokens",
         second_turn_takes_fast_path_and_prefills_only_new_tokens},
        {"fast_path_retokenizes_a_tail_that_merges_with_the_new_bytes",
         fast_path_retokenizes_a_tail_that_merges_with_the_new_bytes},
        {"stop_string_across_pieces_is_held_back_and_never_delivered",
         stop_string_across_pieces_is_held_back_and_never_delivered},
        {"overflow_returns_context_full_and_changes_nothing",
         overflow_returns_context_full_and_changes_nothing},
        {"end_of_turn_token_is_not_kept_and_the_template_adds_it",
         end_of_turn_token_is_not_kept_and_the_template_adds_it},
        {"end_named_control_tokens_are_end_of_generation",
         end_named_control_tokens_are_end_of_generation},
        {"ignore_eog_never_draws_an_end_of_generation_token",
         ignore_eog_never_draws_an_end_of_generation_token},
        {"cancel_keeps_exactly_what_was_delivered", cancel_keeps_exactly_what_was_delivered},
        {"bad_generation_parameters_are_refused_before_any_change",
         bad_generation_parameters_are_refused_before_any_change},
        {"allocation_failure_at_every_point_leaves_a_usable_session",
         allocation_failure_at_every_point_leaves_a_usable_session},
        {"sessions_on_threads_share_one_model", sessions_on_threads_share_one_model},
        {"invariants_hold_after_random_operations_bpe",
         invariants_hold_after_random_operations_bpe},
        {"invariants_hold_after_random_operations_spm",
         invariants_hold_after_random_operations_spm},
        {"invariants_hold_after_random_operations_two_threads",
         invariants_hold_after_random_operations_two_threads},
        {NULL, NULL},
    };
    int rc = tu_run("chat_cache", tests);
    pl_model_free(bpe);
    pl_model_free(spm);
    return rc;
}
