/* test_registry.c — the kernel registry: the compiled sets, choosing one (by CPU, by name,
 * by PLUMB_KERNELS), resolving NULL entries to ref with every fallback recorded, the report. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "testutil.h"

static void registry_lists_ref_last_and_finds_by_name(void)
{
    const int n = pl_kernel_set_count();
    TU_CHECK(n >= 1, "%d compiled sets", n);
    TU_CHECK(pl_kernel_set(n - 1) == &pl_kernels_ref, "ref is not the last (fallback) set");
    TU_CHECK(pl_kernel_set(-1) == NULL && pl_kernel_set(n) == NULL, "out-of-range index");
    for (int i = 0; i < n; i++)
        TU_CHECK(pl_kernel_set_find(pl_kernel_set(i)->name) == pl_kernel_set(i), "find '%s'",
                 pl_kernel_set(i)->name);
    TU_CHECK(pl_kernel_set_find("no-such-set") == NULL, "found a set that does not exist");
    TU_CHECK(pl_kernel_set_find(NULL) == NULL, "found NULL");
}

static void registry_auto_selects_first_supported_set(void)
{
    const struct pl_kernels *want = NULL;
    for (int i = 0; i < pl_kernel_set_count() && !want; i++)
        if (pl_kernel_set(i)->supported() && !pl_kernel_set_by_name_only(pl_kernel_set(i)))
            want = pl_kernel_set(i);
    pl_kernel_table *t = malloc(sizeof *t);
    pl_error err;
    for (int empty = 0; empty < 2; empty++) {
        TU_CHECK(pl_kernels_init(t, empty ? "" : NULL, &err) == PL_OK, "%s", err.msg);
        TU_CHECK(t->set == want && t->by_name == 0, "chose '%s' (by_name %d), want '%s'", t->k.name,
                 t->by_name, want->name);
    }
    free(t);
}

static void registry_unknown_name_is_an_error_listing_the_sets(void)
{
    pl_kernel_table *t = malloc(sizeof *t);
    pl_error err;
    const pl_status st = pl_kernels_init(t, "avx9000", &err);
    TU_CHECK(st == PL_ERR_NOT_FOUND && err.code == PL_ERR_NOT_FOUND, "status %d", st);
    TU_CHECK(strstr(err.msg, "avx9000") && strstr(err.msg, "ref"),
             "message should name the request and the compiled sets: %s", err.msg);
    free(t);
}

static void registry_unsupported_set_is_an_error(void)
{
    pl_kernel_table *t = malloc(sizeof *t);
    int tried = 0;
    for (int i = 0; i < pl_kernel_set_count(); i++) {
        const struct pl_kernels *s = pl_kernel_set(i);
        if (s->supported()) continue;
        pl_error err;
        tried++;
        TU_CHECK(pl_kernels_init(t, s->name, &err) == PL_ERR_UNSUPPORTED, "set %s", s->name);
        TU_CHECK(strstr(err.msg, s->name) && strstr(err.msg, "supported"), "message: %s", err.msg);
    }
    if (!tried) printf("(every compiled set runs on this CPU: nothing to refuse) ");
    free(t);
}

static void registry_plumb_kernels_env_overrides_choice(void)
{
    pl_kernel_table *t = malloc(sizeof *t);
    pl_error err;
    const char *old = getenv("PLUMB_KERNELS");
    char *saved = old ? strdup(old) : NULL;

    setenv("PLUMB_KERNELS", "ref", 1);
    TU_CHECK(pl_kernels_init_env(t, &err) == PL_OK, "%s", err.msg);
    TU_CHECK(t->set == &pl_kernels_ref && t->by_name == 1, "PLUMB_KERNELS=ref chose '%s'",
             t->k.name);

    setenv("PLUMB_KERNELS", "bogus", 1);
    TU_CHECK(pl_kernels_init_env(t, &err) == PL_ERR_NOT_FOUND, "PLUMB_KERNELS=bogus accepted");
    TU_CHECK(strstr(err.msg, "PLUMB_KERNELS") && strstr(err.msg, "bogus"),
             "message should say where the name came from: %s", err.msg);

    setenv("PLUMB_KERNELS", "", 1);
    TU_CHECK(pl_kernels_init_env(t, &err) == PL_OK && t->by_name == 0, "empty PLUMB_KERNELS");
    unsetenv("PLUMB_KERNELS");
    TU_CHECK(pl_kernels_init_env(t, &err) == PL_OK && t->by_name == 0, "unset PLUMB_KERNELS");

    if (saved) setenv("PLUMB_KERNELS", saved, 1);
    free(saved);
    free(t);
}

static void own_softmax(float *restrict y, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i];
}

static int yes(void)
{
    return 1;
}

/* ref with three entries removed and one replaced: what a partial SIMD set looks like. */
static struct pl_kernels partial_set(void)
{
    struct pl_kernels p = pl_kernels_ref;
    p.name = "partial";
    p.supported = yes;
    p.quantize_row[PL_TYPE_F16] = NULL;
    p.matmul[PL_TYPE_Q4_K] = NULL;
    p.rmsnorm = NULL;
    p.softmax = own_softmax;
    return p;
}

static void registry_resolve_fills_nulls_from_ref_and_records_them(void)
{
    const struct pl_kernels p = partial_set();
    pl_kernel_table *t = malloc(sizeof *t);
    pl_error err;
    TU_CHECK(pl_kernels_resolve(t, &p, &err) == PL_OK, "%s", err.msg);
    TU_CHECK(t->set == &p && strcmp(t->k.name, "partial") == 0, "resolved name %s", t->k.name);
    TU_CHECK(t->k.quantize_row[PL_TYPE_F16] == pl_kernels_ref.quantize_row[PL_TYPE_F16] &&
                 t->k.matmul[PL_TYPE_Q4_K] == pl_kernels_ref.matmul[PL_TYPE_Q4_K] &&
                 t->k.rmsnorm == pl_kernels_ref.rmsnorm,
             "a NULL entry was not filled from ref");
    TU_CHECK(t->k.softmax == own_softmax, "the set's own entry was replaced");
    TU_CHECK(t->k.matmul[PL_TYPE_Q4_0] == p.matmul[PL_TYPE_Q4_0], "an own entry changed");
    TU_CHECK(t->k.matmul[16] == NULL && t->k.quantize_row[16] == NULL,
             "IQ2_XXS (not implemented) must stay NULL, not be reported as a fallback");
    const pl_kernel_fallback want[3] = {{pl_kernel_family_find("quantize_row"), PL_TYPE_F16},
                                        {pl_kernel_family_find("matmul"), PL_TYPE_Q4_K},
                                        {pl_kernel_family_find("rmsnorm"), -1}};
    TU_CHECK(t->n_fallbacks == 3, "%d fallbacks recorded, want 3", t->n_fallbacks);
    for (int i = 0; i < 3 && i < t->n_fallbacks; i++)
        TU_CHECK(t->fallbacks[i].family == want[i].family && t->fallbacks[i].type == want[i].type,
                 "fallback %d is (%s, %d), want (%s, %d)", i,
                 pl_kernel_family_name(t->fallbacks[i].family), t->fallbacks[i].type,
                 pl_kernel_family_name(want[i].family), want[i].type);
    free(t);
}

static void registry_resolve_of_ref_has_no_fallbacks(void)
{
    pl_kernel_table *t = malloc(sizeof *t);
    pl_error err;
    TU_CHECK(pl_kernels_resolve(t, &pl_kernels_ref, &err) == PL_OK, "%s", err.msg);
    TU_CHECK(t->n_fallbacks == 0, "ref resolved with %d fallbacks", t->n_fallbacks);
    free(t);
}

static void registry_resolve_rejects_incomplete_set_description(void)
{
    struct pl_kernels p = partial_set();
    pl_kernel_table *t = malloc(sizeof *t);
    pl_error err;
    p.supported = NULL;
    TU_CHECK(pl_kernels_resolve(t, &p, &err) == PL_ERR_INVALID_ARG, "no supported() accepted");
    TU_CHECK(strstr(err.msg, "partial") && strstr(err.msg, "supported"), "message: %s", err.msg);
    p.supported = yes;
    p.name = NULL;
    TU_CHECK(pl_kernels_resolve(t, &p, &err) == PL_ERR_INVALID_ARG, "no name accepted");
    TU_CHECK(pl_kernels_resolve(NULL, &p, &err) == PL_ERR_INVALID_ARG, "NULL out accepted");
    free(t);
}

static void registry_report_shows_sets_choice_and_fallbacks(void)
{
    const struct pl_kernels p = partial_set();
    pl_kernel_table *t = malloc(sizeof *t);
    pl_error err;
    pl_kernels_resolve(t, &p, &err);
    char buf[8192];
    const size_t len = pl_kernels_report_buf(buf, sizeof buf, t);
    TU_CHECK(len < sizeof buf && strlen(buf) == len, "length %zu", len);
    static const char *const want[] = {"kernel sets",
                                       "ref",
                                       "supported",
                                       "chosen: partial",
                                       "matmul",
                                       "Q4_K",
                                       "fallbacks to ref: 3",
                                       "quantize_row F16 -> ref",
                                       "matmul Q4_K -> ref",
                                       "rmsnorm -> ref"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        TU_CHECK(strstr(buf, want[i]) != NULL, "report lacks '%s':\n%s", want[i], buf);

    /* truncation: snprintf-like, always terminated, a prefix of the full text */
    char small[40];
    const size_t len2 = pl_kernels_report_buf(small, sizeof small, t);
    TU_CHECK(len2 == len && strlen(small) == sizeof small - 1 &&
                 strncmp(small, buf, sizeof small - 1) == 0,
             "truncated report: length %zu, text '%s'", len2, small);
    TU_CHECK(pl_kernels_report_buf(NULL, 0, t) == len, "cap 0 must only measure");

    /* without a table: the sets only */
    const size_t len3 = pl_kernels_report_buf(buf, sizeof buf, NULL);
    TU_CHECK(len3 > 0 && strstr(buf, "ref") && !strstr(buf, "chosen"), "set-only report:\n%s", buf);
    free(t);
}

/* The rows cover struct pl_kernels: every field but name, supported and repack is one family,
 * named as its field, with no two rows on one slot. A field added without its row fails. */
static void registry_family_rows_cover_every_kernel_slot(void)
{
    const size_t slot = sizeof(void (*)(void));
    size_t covered =
        sizeof(const char *) + sizeof(int (*)(void)) + sizeof(const pl_repack *[PL_TYPE_COUNT]);
    for (int i = 0; i < pl_kernel_family_count(); i++) {
        const pl_kernel_family *f = pl_kernel_family_at(i);
        covered += f->per_type ? PL_TYPE_COUNT * slot : slot;
        TU_CHECK(pl_kernel_family_find(f->name) == i, "family '%s' listed twice", f->name);
        TU_CHECK(f->offset % slot == 0 && f->offset < sizeof(struct pl_kernels),
                 "family '%s' at offset %zu", f->name, f->offset);
        for (int j = 0; j < i; j++)
            TU_CHECK(pl_kernel_family_at(j)->offset != f->offset,
                     "families '%s' and '%s' share a slot", pl_kernel_family_at(j)->name, f->name);
    }
    TU_CHECK(covered == sizeof(struct pl_kernels),
             "the family rows cover %zu of the table's %zu bytes: a field without its row?",
             covered, sizeof(struct pl_kernels));
    TU_CHECK(pl_kernel_family_at(-1) == NULL &&
                 pl_kernel_family_at(pl_kernel_family_count()) == NULL &&
                 pl_kernel_family_find("no-such-family") == -1 && pl_kernel_family_find(NULL) == -1,
             "out-of-range family lookups");
    const int rope = pl_kernel_family_find("rope"), matmul = pl_kernel_family_find("matmul");
    TU_CHECK(rope >= 0 && pl_kernel_family_at(rope)->offset == offsetof(struct pl_kernels, rope) &&
                 matmul >= 0 && pl_kernel_family_at(matmul)->per_type &&
                 pl_kernel_family_at(matmul)->offset == offsetof(struct pl_kernels, matmul),
             "rows 'rope' and 'matmul' do not name their fields");
}

int main(void)
{
    static const tu_test tests[] = {
        {"registry_lists_ref_last_and_finds_by_name", registry_lists_ref_last_and_finds_by_name},
        {"registry_auto_selects_first_supported_set", registry_auto_selects_first_supported_set},
        {"registry_unknown_name_is_an_error_listing_the_sets",
         registry_unknown_name_is_an_error_listing_the_sets},
        {"registry_unsupported_set_is_an_error", registry_unsupported_set_is_an_error},
        {"registry_plumb_kernels_env_overrides_choice",
         registry_plumb_kernels_env_overrides_choice},
        {"registry_resolve_fills_nulls_from_ref_and_records_them",
         registry_resolve_fills_nulls_from_ref_and_records_them},
        {"registry_resolve_of_ref_has_no_fallbacks", registry_resolve_of_ref_has_no_fallbacks},
        {"registry_resolve_rejects_incomplete_set_description",
         registry_resolve_rejects_incomplete_set_description},
        {"registry_report_shows_sets_choice_and_fallbacks",
         registry_report_shows_sets_choice_and_fallbacks},
        {"registry_family_rows_cover_every_kernel_slot",
         registry_family_rows_cover_every_kernel_slot},
        {NULL, NULL},
    };
    return tu_run("registry", tests);
}
