/* attn_span.h — the blocks of KV entries an attention kernel must scan for queries at
 * positions [qmin, qmax]: all of them, or (kv_sorted) those a binary search leaves inside the
 * windows. Not the mask: every kernel still tests each entry of a scanned block. */
#ifndef PLUMB_KERNELS_ATTN_SPAN_H
#define PLUMB_KERNELS_ATTN_SPAN_H

#include "kernels.h"

/* Up to two disjoint block ranges [lo, hi), ascending: the sinks, then the window. Blocks are
 * B entries from j = 0, so a kernel's lanes (j mod B) do not depend on what is skipped. */
typedef struct pl_attn_span {
    int n;
    int64_t lo[2], hi[2];
} pl_attn_span;

/* First j in [j0, j1) with kv_pos[j] > x, else j1; kv_pos non-decreasing on [j0, j1).
 * Galloping down from j1 (steps 1, 2, 4, ...) then bisecting: a decode's window sits at the
 * cache's end, so this reads O(log window) entries, none far before the answer. */
static inline int64_t pl_attn_upper(const int32_t *kv_pos, int64_t j0, int64_t j1, int64_t x)
{
    for (int64_t step = 1; j0 < j1; step *= 2) {
        const int64_t p = j1 - step > j0 ? j1 - step : j0;
        if ((int64_t)kv_pos[p] <= x) {
            j0 = p + 1;
            break;
        }
        j1 = p;
    }
    while (j0 < j1) {
        const int64_t mid = j0 + (j1 - j0) / 2;
        if ((int64_t)kv_pos[mid] > x)
            j1 = mid;
        else
            j0 = mid + 1;
    }
    return j0;
}

/* qp - w, or INT64_MIN where that lies below every int32 (w > qp - INT32_MIN): kv_pos[j] >
 * pl_attn_floor(qp, w) is qp - kv_pos[j] < w, with no overflow for any w >= 0. */
static inline int64_t pl_attn_floor(int32_t qp, int64_t w)
{
    return w > (int64_t)qp - INT32_MIN ? INT64_MIN : (int64_t)qp - w;
}

static inline void pl_attn_span_add(pl_attn_span *s, int64_t lo, int64_t hi)
{
    if (lo >= hi) return;
    if (s->n > 0 && lo <= s->hi[s->n - 1]) { /* touches or overlaps the last range: merge */
        if (lo < s->lo[s->n - 1]) s->lo[s->n - 1] = lo;
        if (hi > s->hi[s->n - 1]) s->hi[s->n - 1] = hi;
        return;
    }
    s->lo[s->n] = lo, s->hi[s->n] = hi, s->n++;
}

/* Blocks of B entries that may hold an entry visible to a query at a position in
 * [qmin, qmax] (pl_attn_args's rule). Unsorted: every block. Sorted: entries past the last
 * kv_pos <= qmax are in everyone's future; a non-sink entry needs kv_pos > qmin - w (w the
 * tighter of the two windows), a sink (window > 0, j < n_sinks) kv_pos > qmin - layer_window. */
static inline pl_attn_span pl_attn_span_of(const pl_attn_args *a, int32_t qmin, int32_t qmax,
                                           int64_t B)
{
    pl_attn_span s = {0};
    if (!a->kv_sorted) {
        pl_attn_span_add(&s, 0, (a->N + B - 1) / B);
        return s;
    }
    const int64_t hi = pl_attn_upper(a->kv_pos, 0, a->N, qmax);
    int64_t w = a->layer_window > 0 ? a->layer_window : 0;
    if (a->window > 0 && (w == 0 || a->window < w)) w = a->window;
    const int64_t lo = w > 0 ? pl_attn_upper(a->kv_pos, 0, hi, pl_attn_floor(qmin, w)) : 0;
    if (a->window > 0 && a->n_sinks > 0 && lo > 0) {
        const int64_t sh = a->n_sinks < lo ? a->n_sinks : lo;
        const int64_t sl = a->layer_window > 0 ? pl_attn_upper(a->kv_pos, 0, sh,
                                                               pl_attn_floor(qmin, a->layer_window))
                                               : 0;
        pl_attn_span_add(&s, sl / B, (sh + B - 1) / B);
    }
    pl_attn_span_add(&s, lo / B, (hi + B - 1) / B);
    return s;
}

/* s restricted to blocks [lo, hi): after a first pass found where the visible entries are. */
static inline void pl_attn_span_clip(pl_attn_span *s, int64_t lo, int64_t hi)
{
    pl_attn_span c = {0};
    for (int r = 0; r < s->n; r++)
        pl_attn_span_add(&c, s->lo[r] > lo ? s->lo[r] : lo, s->hi[r] < hi ? s->hi[r] : hi);
    *s = c;
}

#endif
