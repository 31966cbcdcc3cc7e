/* bench_jinja.c — µs per render of a chat template: a compiled corpus template (default the
 * largest, functionary-v3.2) rendered with the corpus's 100-message conversation
 * (conformance/jinja/conversations/13_long_100.json, with tools). Python's jinja2 on the same
 * case: tools/jinja_oracle/render.py --bench TEMPLATE. A benchmark, not a test.
 *
 * Run: ./bench_jinja [CORPUS_DIR] [TEMPLATE] [-n RENDERS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"

#ifndef PLUMB_JINJA_CORPUS
#define PLUMB_JINJA_CORPUS "conformance/jinja"
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *corpus = PLUMB_JINJA_CORPUS, *name = "functionary-v3.2";
    int n = 200, pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (pos++ == 0)
            corpus = argv[i];
        else
            name = argv[i];
    }
    if (n < 1) n = 1;
    char path[1024];
    snprintf(path, sizeof path, "%s/templates/%s.jinja", corpus, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_jinja: cannot open %s\n", path);
        return 1;
    }
    static char src[1 << 20];
    size_t len = fread(src, 1, sizeof src, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/conversations/13_long_100.json", corpus);
    json_t *ctx = json_load_file(path, 0, NULL);
    snprintf(path, sizeof path, "%s/templates/%s.json", corpus, name);
    json_t *tok = json_load_file(path, 0, NULL);
    if (!ctx) {
        fprintf(stderr, "bench_jinja: cannot read the conversation\n");
        return 1;
    }
    if (tok) json_object_update(ctx, tok);
    pl_jinja_template *t;
    pl_error err = {0};
    double t0 = (1e-3 * (double)pl_clock_ns());
    if (pl_jinja_compile(src, len, &t, &err) != PL_OK) {
        fprintf(stderr, "bench_jinja: %s\n", err.msg);
        return 1;
    }
    double compile_us = (1e-3 * (double)pl_clock_ns()) - t0;
    pl_jinja_limits lim = {.now = 1721000000, .has_now = 1};
    double *us = malloc((size_t)n * sizeof *us);
    size_t out_len = 0;
    for (int i = -3; i < n; i++) { /* three warm-up renders */
        char *out;
        double a = (1e-3 * (double)pl_clock_ns());
        if (pl_jinja_render(t, ctx, &lim, &out, &out_len, &err) != PL_OK) {
            fprintf(stderr, "bench_jinja: %s\n", err.msg);
            return 1;
        }
        double b = (1e-3 * (double)pl_clock_ns());
        free(out);
        if (i >= 0) us[i] = b - a;
    }
    qsort(us, (size_t)n, sizeof *us, cmp_double);
    printf("plumb jinja: %s: %.1f us per render (median of %d; p10 %.1f, p90 %.1f), %zu bytes out, "
           "100 messages; compile %.1f us\n",
           name, us[n / 2], n, us[n / 10], us[n * 9 / 10], out_len, compile_us);
    free(us);
    pl_jinja_free(t);
    json_decref(ctx);
    json_decref(tok);
    return 0;
}
