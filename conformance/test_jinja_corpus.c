/* test_jinja_corpus.c — plumb's Jinja engine against Python's jinja2 on real chat templates:
 * every template of conformance/jinja/templates/ rendered with every conversation of
 * conformance/jinja/conversations/ must give the bytes jinja2 gave (expected/<t>/<c>.txt, made
 * by tools/jinja_oracle/render.py), or fail where jinja2 raised (expected/<t>/<c>.error).
 * Not the unit tests of the language (test_jinja.c); no Python at test time. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "testutil.h"

#ifndef PLUMB_JINJA_CORPUS
#error "PLUMB_JINJA_CORPUS must name conformance/jinja"
#endif

#define NOW 1721000000 /* render.py's NOW: strftime_now's fixed clock */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the names in dir ending in ext, without it, sorted; returns the count */
static size_t list(const char *dir, const char *ext, char ***out)
{
    DIR *d = opendir(dir);
    size_t n = 0, cap = 0;
    char **v = NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name), el = strlen(ext);
        if (l <= el || strcmp(e->d_name + l - el, ext)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            v = realloc(v, cap * sizeof *v);
        }
        v[n] = strndup(e->d_name, l - el);
        n++;
    }
    if (d) closedir(d);
    if (n) qsort(v, n, sizeof *v, by_name);
    *out = v;
    return n;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void jinja_corpus_renders_as_jinja2(void)
{
    char path[1024];
    char **tmpls, **convs;
    snprintf(path, sizeof path, "%s/templates", PLUMB_JINJA_CORPUS);
    size_t nt = list(path, ".jinja", &tmpls);
    snprintf(path, sizeof path, "%s/conversations", PLUMB_JINJA_CORPUS);
    size_t nc = list(path, ".json", &convs);
    TU_CHECK(nt >= 20 && nc >= 10, "corpus: %zu templates, %zu conversations", nt, nc);
    size_t same = 0, both_fail = 0, bad = 0;
    pl_jinja_limits lim = {.now = NOW, .has_now = 1};
    for (size_t i = 0; i < nt; i++) {
        size_t len;
        snprintf(path, sizeof path, "%s/templates/%s.jinja", PLUMB_JINJA_CORPUS, tmpls[i]);
        char *src = tu_read_file(path, &len);
        TU_CHECK(src != NULL, "%s: unreadable", path);
        if (!src) continue;
        pl_jinja_template *t = NULL;
        pl_error err = {0};
        pl_status cs = pl_jinja_compile(src, len, &t, &err);
        free(src);
        snprintf(path, sizeof path, "%s/templates/%s.json", PLUMB_JINJA_CORPUS, tmpls[i]);
        json_t *tokens = json_load_file(path, 0, NULL);
        for (size_t k = 0; k < nc; k++) {
            snprintf(path, sizeof path, "%s/conversations/%s.json", PLUMB_JINJA_CORPUS, convs[k]);
            json_t *ctx = json_load_file(path, 0, NULL);
            TU_CHECK(ctx != NULL, "%s: bad JSON", path);
            if (!ctx) continue;
            if (tokens) json_object_update(ctx, tokens);
            char *out = NULL;
            size_t out_len = 0;
            pl_status rs = cs;
            if (cs == PL_OK) rs = pl_jinja_render(t, ctx, &lim, &out, &out_len, &err);
            snprintf(path, sizeof path, "%s/expected/%s/%s.txt", PLUMB_JINJA_CORPUS, tmpls[i],
                     convs[k]);
            size_t want_len;
            char *want = tu_read_file(path, &want_len);
            if (want) {
                int eq = rs == PL_OK && out_len == want_len && !memcmp(out, want, want_len);
                if (eq) {
                    same++;
                } else {
                    size_t at = 0;
                    while (rs == PL_OK && at < out_len && at < want_len && out[at] == want[at])
                        at++;
                    TU_CHECK(eq, "%s x %s: %s", tmpls[i], convs[k],
                             rs != PL_OK ? err.msg : "differs from jinja2");
                    if (rs == PL_OK)
                        fprintf(stderr,
                                "    first difference at byte %zu (plumb %zu bytes, jinja2 "
                                "%zu)\n",
                                at, out_len, want_len);
                    bad++;
                }
            } else {
                snprintf(path, sizeof path, "%s/expected/%s/%s.error", PLUMB_JINJA_CORPUS, tmpls[i],
                         convs[k]);
                FILE *f = fopen(path, "rb");
                TU_CHECK(f != NULL, "%s x %s: no expected output (run render.py)", tmpls[i],
                         convs[k]);
                if (f) fclose(f);
                TU_CHECK(rs != PL_OK, "%s x %s: jinja2 raised, plumb rendered %zu bytes", tmpls[i],
                         convs[k], out_len);
                if (rs != PL_OK) {
                    /* the error names where it happened */
                    TU_CHECK(strstr(err.msg, "line ") != NULL,
                             "%s x %s: error without a "
                             "position: %s",
                             tmpls[i], convs[k], err.msg);
                    both_fail++;
                } else {
                    bad++;
                }
            }
            free(want);
            free(out);
            json_decref(ctx);
        }
        json_decref(tokens);
        pl_jinja_free(t);
    }
    printf("\n  jinja corpus: %zu templates x %zu conversations: %zu byte-identical, %zu errors "
           "where jinja2 raised too, %zu wrong\n",
           nt, nc, same, both_fail, bad);
    free_list(tmpls, nt);
    free_list(convs, nc);
}

int main(void)
{
    static const tu_test tests[] = {
        {"jinja_corpus_renders_as_jinja2", jinja_corpus_renders_as_jinja2},
        {NULL, NULL},
    };
    return tu_run("jinja_corpus", tests);
}
