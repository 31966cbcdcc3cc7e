/* bench_tokenize.c — tokenizer throughput: ~1 MB of generated English-like text through a
 * 151,936-token byte-level BPE vocabulary (Qwen2's size and pre-tokenizer), one core, median of
 * 5 runs; also a 128,256-token Llama 3 style and a 32,000-token SentencePiece vocabulary.
 * A benchmark, not a test: it checks only that each run gives the same ids.
 *
 * The vocabularies come from synth/demo_vocab.c (merges learned from its text, then
 * synthetic merges up to the size), so hash tables and merge chains have real sizes.
 * Run: ./bench_tokenize [megabytes=1] [runs=5]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_vocab.h"
#include "tokenizer/tokenizer.h"

static uint64_t rnd(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* English-like text: words of the demo corpus's English paragraphs drawn with a Zipf-like
 * bias, some made-up words, numbers, punctuation, sentence capitals and paragraphs. */
static char *make_text(size_t target, size_t *len)
{
    size_t clen;
    const char *corpus = demo_vocab_corpus(&clen);
    const char *words[4096];
    size_t wlen[4096], nw = 0;
    for (size_t i = 0; i < clen && nw < 4096;) {
        while (i < clen && !((corpus[i] | 32) >= 'a' && (corpus[i] | 32) <= 'z')) i++;
        size_t j = i;
        while (j < clen &&
               (((corpus[j] | 32) >= 'a' && (corpus[j] | 32) <= 'z') || corpus[j] == '\''))
            j++;
        if (j > i) {
            words[nw] = corpus + i;
            wlen[nw++] = j - i;
        }
        i = j;
    }
    static const char *const syl[] = {"ka", "ter", "mon", "li",  "ve", "stra", "qu", "ing",
                                      "ol", "ex",  "an",  "dro", "pi", "el",   "sh"};
    char *t = malloc(target + 64);
    if (!t) return NULL;
    uint64_t s = 42;
    size_t o = 0;
    int start = 1;
    while (o < target) {
        uint64_t r = rnd(&s) % 100;
        if (r < 84) {
            uint64_t u = rnd(&s) % nw, v = rnd(&s) % nw; /* min of two: favours early words */
            size_t k = u < v ? u : v;
            if (!start) t[o++] = ' ';
            memcpy(t + o, words[k], wlen[k]);
            if (start && t[o] >= 'a' && t[o] <= 'z') t[o] -= 32;
            o += wlen[k];
        } else if (r < 90) {
            if (!start) t[o++] = ' ';
            for (int n = 2 + (int)(rnd(&s) % 3); n > 0; n--) {
                const char *p = syl[rnd(&s) % 15];
                size_t l = strlen(p);
                memcpy(t + o, p, l);
                o += l;
            }
        } else if (r < 93) {
            o += (size_t)snprintf(t + o, 32, " %u", (unsigned)(rnd(&s) % 100000));
        } else if (r < 98) {
            static const char punct[] = ",,,;:";
            t[o++] = punct[rnd(&s) % 5];
            start = 0;
            continue;
        } else {
            t[o++] = '.';
            if (rnd(&s) % 4 == 0) {
                t[o++] = '\n';
                t[o++] = '\n';
            } else {
                t[o++] = ' ';
            }
            start = 1;
            continue;
        }
        start = 0;
    }
    *len = o;
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench(const char *label, enum demo_vocab_kind kind, uint32_t n_vocab, const char *text,
                 size_t len, int runs)
{
    pl_error err;
    pl_gguf_writer *w;
    void *bytes = NULL;
    size_t size;
    pl_gguf *g = NULL;
    struct pl_tokenizer *t = NULL;
    double t0 = pl_clock_s();
    if (pl_gguf_writer_new(&w, 3, &err) || demo_vocab_write(w, kind, n_vocab, &err) ||
        pl_gguf_writer_write_memory(w, &bytes, &size, &err) ||
        pl_gguf_parse(&g, bytes, size, &err)) {
        fprintf(stderr, "bench_tokenize: %s: %s\n", label, err.msg);
        return 1;
    }
    pl_gguf_writer_free(w);
    double t1 = pl_clock_s();
    if (pl_tokenizer_load(&t, g, &err)) {
        fprintf(stderr, "bench_tokenize: %s: load: %s\n", label, err.msg);
        return 1;
    }
    double load_s = pl_clock_s() - t1;
    int32_t *ids = malloc((len + 1) * sizeof *ids), *first = malloc((len + 1) * sizeof *ids);
    if (!ids || !first) return 1;
    size_t n = 0, n0 = 0;
    double secs[16];
    for (int r = -1; r < runs; r++) { /* run -1 warms caches and page-faults the buffers */
        double a = pl_clock_s();
        if (pl_tok_encode(t, text, len, 0, ids, len + 1, &n, &err)) {
            fprintf(stderr, "bench_tokenize: %s: %s\n", label, err.msg);
            return 1;
        }
        double b = pl_clock_s();
        if (r < 0) {
            n0 = n;
            memcpy(first, ids, n * sizeof *ids);
            continue;
        }
        if (n != n0 || memcmp(ids, first, n * sizeof *ids) != 0) {
            fprintf(stderr, "bench_tokenize: %s: run %d gave different ids\n", label, r);
            return 1;
        }
        secs[r] = b - a;
    }
    qsort(secs, (size_t)runs, sizeof secs[0], cmp_double);
    double med = secs[runs / 2], mb = (double)len / 1e6;
    printf("%-34s %7u tokens  load %6.1f ms  vocab %5.1f s  %8zu ids  %.2f B/token  median %7.1f "
           "ms  %6.2f MB/s  (min %.2f, max %.2f)\n",
           label, n_vocab, load_s * 1e3, t1 - t0, n, (double)len / (double)n, med * 1e3, mb / med,
           mb / secs[runs - 1], mb / secs[0]);
    printf("{\"bench\":\"tokenize\",\"vocab\":\"%s\",\"n_vocab\":%u,\"bytes\":%zu,\"tokens\":%zu,"
           "\"runs\":%d,\"median_s\":%.6f,\"mb_per_s\":%.3f,\"load_ms\":%.1f}\n",
           label, n_vocab, len, n, runs, med, mb / med, load_s * 1e3);
    free(ids);
    free(first);
    pl_tokenizer_free(t);
    pl_gguf_free(g);
    pl_buffer_free(bytes);
    return 0;
}

int main(int argc, char **argv)
{
    double mbytes = argc > 1 ? atof(argv[1]) : 1.0;
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    if (mbytes <= 0 || mbytes > 1024 || runs < 1 || runs > 16) {
        fprintf(stderr, "usage: bench_tokenize [megabytes=1 (0..1024)] [runs=5 (1..16)]\n");
        return 2;
    }
    size_t len;
    char *text = make_text((size_t)(mbytes * 1e6), &len);
    if (!text) return 1;
    printf("text: %zu bytes of generated English-like text, %d runs, one thread\n", len, runs);
    int rc =
        bench("byte-level BPE, qwen2 pre", DEMO_VOCAB_BPE, 151936, text, len, runs) ||
        bench("byte-level BPE, llama-bpe pre", DEMO_VOCAB_BPE_LLAMA3, 128256, text, len, runs) ||
        bench("SentencePiece BPE", DEMO_VOCAB_SPM, 32000, text, len, runs);
    free(text);
    return rc;
}
