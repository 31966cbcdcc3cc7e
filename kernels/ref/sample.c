/* sample.c — reference sampling primitives: temperature, penalties, candidate softmax,
 * top-k / top-p / min-p truncation and the categorical draw. Pure; the uniform is an
 * argument. Not a sampler chain: engine/runtime/sampler.c orders these. Nothing here allocates.
 *
 * Bounds (u = 2^-24) are the contract for every set, checked in conformance/test_sample.c. */
#include <math.h>
#include <string.h>

#include "ref.h"

/* logits[i] /= temp, temp > 0 (temp <= 0 is the chain's greedy case and never comes here:
 * it would make +-inf and NaN); -inf stays -inf.
 * Bound: |y - y_ref| <= 2 u |y_ref| + FLT_MIN.
 * Why: one correctly rounded division (u); a set multiplying by 1/temp rounds twice. */
void temperature_ref(float *restrict logits, int64_t V, float temp)
{
    for (int64_t i = 0; i < V; i++) logits[i] /= temp;
}

/* llama.cpp's penalties: for each distinct token id in history[0..n) seen c times,
 *     l = l > 0 ? l / repeat : l * repeat;   l -= c * freq + (c > 0) * presence.
 * An infinite l stays as it is: c * freq + presence may overflow to an infinity, and
 * inf - inf would be NaN. Ids outside [0, V) are ignored. Occurrences are counted by scanning
 * history (O(n^2) for the usual n <= a few hundred) so that nothing is allocated.
 * Bound: |y - y_ref| <= 4 u (|l'_ref| + c |freq| + |presence|) + FLT_MIN, l'_ref the
 * logit after the repeat step. Why: four roundings (repeat, c * freq, + presence, the
 * subtraction), each relative to a term no larger than that sum. */
void penalties_ref(float *restrict logits, int64_t V, const int32_t *restrict history, int64_t n,
                   float repeat, float freq, float presence)
{
    for (int64_t i = 0; i < n; i++) {
        int32_t id = history[i];
        if (id < 0 || id >= V) continue;
        int first = 1;
        for (int64_t j = 0; j < i && first; j++) first = history[j] != id;
        if (!first) continue; /* penalised at its first occurrence */
        int64_t c = 0;
        for (int64_t j = i; j < n; j++) c += history[j] == id;
        float l = logits[id];
        l = l > 0 ? l / repeat : l * repeat;
        if (isfinite(l)) l -= (float)c * freq + presence;
        logits[id] = l;
    }
}

/* ---- candidate order: logit descending, ties (-0 == +0 included) by smaller id, NaN
 * last. As one 64-bit key, ascending: high half the logit's bits mapped so that unsigned
 * order is descending logit order, low half the id with its sign bit flipped. Keys are
 * distinct when ids are, so the sorted list is unique whatever the algorithm. ---- */

/* The high half of the key, kept in the candidate's p (output only) while sorting. */
static uint32_t logit_key(float l)
{
    uint32_t b;
    if (l == 0.0f) l = 0.0f; /* -0 ties +0 */
    memcpy(&b, &l, sizeof b);
    uint32_t asc = (b & 0x80000000u) ? ~b : (b | 0x80000000u); /* unsigned order = float order */
    if (isnan(l)) asc = 0;                                     /* below -inf */
    return ~asc;
}

static uint64_t sort_key(const pl_candidate *c)
{
    uint32_t hi;
    memcpy(&hi, &c->p, sizeof hi);
    return ((uint64_t)hi << 32) | ((uint32_t)c->id ^ 0x80000000u);
}

static void insertion_sort(pl_candidate *c, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        pl_candidate x = c[i];
        uint64_t kx = sort_key(&x);
        int64_t j = i;
        for (; j > 0 && kx < sort_key(&c[j - 1]); j--) c[j] = c[j - 1];
        c[j] = x;
    }
}

/* In-place MSD radix sort (American flag sort), a byte per level, starting at the highest
 * byte in which the range's keys differ. No allocation: 4 KiB of counts per level, at most
 * 8 levels deep. O(8 n) worst case. For V = 152k on one Zen 4 core the whole
 * cand_softmax takes ~5 ms (~8 ms with heavy ties), against ~13 ms with an introsort. */
static void radix_sort(pl_candidate *c, int64_t n)
{
    if (n <= 32) {
        insertion_sort(c, n);
        return;
    }
    const uint64_t k0 = sort_key(&c[0]);
    uint64_t diff = 0;
    for (int64_t i = 1; i < n; i++) diff |= sort_key(&c[i]) ^ k0;
    if (diff == 0) return; /* equal keys: duplicate ids, nothing to order */
    int shift = 56;
    while (!(diff >> shift)) shift -= 8;

    int64_t count[256] = {0}, next[256];
    for (int64_t i = 0; i < n; i++) count[(sort_key(&c[i]) >> shift) & 255]++;
    for (int64_t b = 0, at = 0; b < 256; b++) next[b] = at, at += count[b];
    int64_t end = 0;
    for (int b = 0; b < 256; b++) {
        end += count[b]; /* bucket b is [end - count[b], end) */
        /* place every element of bucket b's region by cycling displaced ones home */
        while (next[b] < end) {
            pl_candidate x = c[next[b]];
            int d = (int)((sort_key(&x) >> shift) & 255);
            while (d != b) {
                pl_candidate t = c[next[d]];
                c[next[d]++] = x;
                x = t;
                d = (int)((sort_key(&x) >> shift) & 255);
            }
            c[next[b]++] = x;
        }
    }
    for (int64_t b = 0, at = 0; b < 256; at += count[b], b++)
        if (count[b] > 1) radix_sort(c + at, count[b]);
}

/* exp(l - m) with the conventions below: the max (and its ties) weighs exactly 1, NaN 0. */
static double cand_weight(float l, double m)
{
    if (isnan(l)) return 0.0;
    return (double)l == m ? 1.0 : exp((double)l - m);
}

/* Sorts c[0..n) by logit descending (ties: smaller id first; NaN last) and sets
 * p = exp(l - l_max) / sum exp(l - l_max), in double, rounded once. Candidates equal to the
 * max get exp(0) = 1 exactly: all-equal logits, all -inf included, come out uniform. A NaN
 * logit gets p = 0 (all NaN: p NaN). n <= 0 does nothing.
 * Bound: |p - p_ref| <= 1e-6 p_ref + 2^-149 (the sampler contract: distributions within
 * 1e-6). Why here: double exp and sum leave only the final rounding to float (<= u p). */
void cand_softmax_ref(pl_candidate *restrict c, int64_t n)
{
    if (n <= 0) return;
    for (int64_t i = 0; i < n; i++) {
        uint32_t k = logit_key(c[i].logit);
        memcpy(&c[i].p, &k, sizeof k);
    }
    radix_sort(c, n);

    const double m = c[0].logit;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += cand_weight(c[i].logit, m);
    /* exp again rather than staged in float p, which would round twice. */
    const double inv = 1.0 / sum;
    for (int64_t i = 0; i < n; i++) c[i].p = (float)(cand_weight(c[i].logit, m) * inv);
}

/* Keeps the first k candidates: returns min(k, n), n when k <= 0, 0 when n <= 0. Exact.
 * Ties at the cut are resolved by the sort order (smaller id kept). */
int64_t top_k_ref(pl_candidate *restrict c, int64_t n, int64_t k)
{
    (void)c;
    if (n <= 0) return 0;
    if (k <= 0 || k >= n) return n;
    return k;
}

/* Keeps the shortest prefix whose mass reaches p of the list's total mass (the mass of
 * c[0..n), so a list already cut by top-k behaves as llama.cpp's re-softmaxed one), and at
 * least min_keep candidates (clamped to n). p >= 1 keeps all; p <= 0 keeps max(1, min_keep).
 * Exact given the float p: the cumulative sum runs in double in list order. */
int64_t top_p_ref(pl_candidate *restrict c, int64_t n, float p, int64_t min_keep)
{
    if (n <= 0) return 0;
    if (p >= 1.0f) return n;
    double total = 0.0;
    for (int64_t i = 0; i < n; i++) total += c[i].p;
    const double target = (double)p * total;
    double cum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        cum += c[i].p;
        if (cum >= target && i + 1 >= min_keep) return i + 1;
    }
    return n; /* rounding kept the prefix short of target, or min_keep >= n */
}

/* Keeps the candidates with p >= min_p * p_max (a prefix, since p descends along the
 * list), and at least max(1, min_keep) (clamped to n), as llama.cpp. min_p <= 0 (or NaN)
 * keeps all; min_p = 1 keeps the candidates tied with the max, min_p > 1 only the first.
 * Exact given the float p: the threshold is a double. */
int64_t min_p_ref(pl_candidate *restrict c, int64_t n, float p, int64_t min_keep)
{
    if (n <= 0) return 0;
    if (!(p > 0.0f)) return n; /* NaN too */
    const double threshold = (double)p * (double)c[0].p;
    int64_t keep = 1;
    while (keep < n && (double)c[keep].p >= threshold) keep++;
    if (keep < min_keep) keep = min_keep < n ? min_keep : n;
    return keep;
}

/* Returns the first i whose cumulative p (double, list order) exceeds u * total, total the
 * mass of c[0..n); candidates with p = 0 are never returned while any p > 0.
 * Edges: n <= 0 returns -1. u < 0 or NaN acts as 0 (the first candidate with p > 0).
 * u so close to 1 that u * total rounds up to total (or u >= 1) returns the last candidate
 * with p > 0. A total that is not positive (every p zero) draws uniformly: floor(u * n),
 * clamped to n - 1.
 * Exact: the reference repeats the same double sums. */
int64_t draw_ref(const pl_candidate *restrict c, int64_t n, double u)
{
    if (n <= 0) return -1;
    if (!(u >= 0.0)) u = 0.0;
    double total = 0.0;
    for (int64_t i = 0; i < n; i++) total += c[i].p;
    if (!(total > 0.0)) {
        if (u >= 1.0) return n - 1;
        int64_t i = (int64_t)(u * (double)n);
        return i < n ? i : n - 1;
    }
    const double target = u * total;
    double cum = 0.0;
    int64_t last = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(c[i].p > 0.0f)) continue;
        cum += c[i].p;
        last = i;
        if (cum > target) return i;
    }
    return last;
}
