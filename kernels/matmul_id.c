/* matmul_id.c — the expert matmul (ggml's mul_mat_id): each token against the experts its ids
 * select, driving any set's dense matmul. Not a kernel of its own: no arithmetic but mm's.
 *
 * Tokens are grouped by expert with a counting sort over ids (experts ascending, tokens
 * ascending within one, a token's duplicate slots after its first), so every expert's matrix is
 * read once per call. An expert with one distinct token runs mm on it in place (x and y rows as
 * they are: decode never copies); one with more has its rows gathered into scratch, mm runs
 * once on them into a y block, and the block's rows are scattered to their slots. mm's batch
 * invariance (pl_matmul_fn's contract) makes each row the bits of mm on that token alone. */
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#define ID_ALIGN ((size_t)64) /* gathered x rows and the y block start on a cache line */

/* The scratch layout from its aligned start: slots[T n_used] (the (t, u) slots sorted by
 * expert), off[n_expert + 1] (where each expert's slots begin), then for T > 1 the gathered
 * x rows (T of xs bytes) at xg and the y block (T rows of r1 - r0 floats) at yb. yb is at
 * least r0 floats into scratch so that yb - r0, the y mm indexes by absolute row, stays
 * inside it. Each offset is checked; 0 on overflow. */
typedef struct id_layout {
    size_t xs, xg, yb, total;
} id_layout;

static int add_ok(size_t *acc, size_t a, size_t b)
{
    if (a > SIZE_MAX - b) return 0;
    *acc = a + b;
    return 1;
}

static int mul_ok(size_t *acc, size_t a, size_t b)
{
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *acc = a * b;
    return 1;
}

static int round_up_ok(size_t *acc, size_t a)
{
    if (!add_ok(acc, a, ID_ALIGN - 1)) return 0;
    *acc &= ~(ID_ALIGN - 1);
    return 1;
}

/* Arguments already checked: T >= 0, n_used >= 0, n_expert >= 1, 0 <= r0 <= r1. */
static int layout(id_layout *l, int64_t T, int64_t n_used, int64_t n_expert, size_t x_row_bytes,
                  int64_t r0, int64_t r1)
{
    size_t slots, off, at, rows, ybytes, pad_r0;
    if (!mul_ok(&slots, (size_t)T, (size_t)n_used) || !mul_ok(&slots, slots, sizeof(int64_t)) ||
        !mul_ok(&off, (size_t)n_expert + 1, sizeof(int64_t)) || !add_ok(&at, slots, off))
        return 0;
    l->xs = l->xg = l->yb = 0;
    if (T > 1) { /* only a batch can put two tokens on one expert */
        if (!round_up_ok(&l->xs, x_row_bytes) || !round_up_ok(&l->xg, at) ||
            !mul_ok(&rows, l->xs, (size_t)T) || !add_ok(&at, l->xg, rows) ||
            !round_up_ok(&at, at) || !mul_ok(&pad_r0, (size_t)r0, sizeof(float)) ||
            !round_up_ok(&pad_r0, pad_r0) || !mul_ok(&ybytes, (size_t)T, (size_t)(r1 - r0)) ||
            !mul_ok(&ybytes, ybytes, sizeof(float)))
            return 0;
        l->yb = at > pad_r0 ? at : pad_r0;
        if (!add_ok(&at, l->yb, ybytes)) return 0;
    }
    return add_ok(&l->total, at, ID_ALIGN - 1); /* room to align the caller's pointer */
}

/* v >= 0 survives the cast to size_t (wasm32's is 32 bits). */
static int fits(int64_t v)
{
    return (int64_t)(size_t)v == v;
}

static int args_ok(int64_t ldy, int64_t n_expert, size_t x_row_bytes, int64_t n_used, int64_t K,
                   int64_t r0, int64_t r1, int64_t T)
{
    return n_expert >= 1 && n_used >= 0 && T >= 0 && K >= 1 && r0 >= 0 && r1 >= r0 && ldy >= r1 &&
           (n_used == 0 || T <= INT64_MAX / n_used) && x_row_bytes > 0 && fits(T) && fits(n_used) &&
           fits(n_expert) && fits(r1);
}

size_t pl_matmul_id_scratch(int64_t T, int64_t n_used, int64_t n_expert, size_t x_row_bytes,
                            int64_t r0, int64_t r1)
{
    id_layout l;
    if (!args_ok(r1, n_expert, x_row_bytes, n_used, 1, r0, r1, T) ||
        !layout(&l, T, n_used, n_expert, x_row_bytes, r0, r1))
        return SIZE_MAX;
    return l.total;
}

int pl_matmul_id(pl_matmul_fn mm, float *restrict y, int64_t ldy, const void *restrict w,
                 size_t w_row_bytes, size_t w_expert_bytes, int64_t n_expert,
                 const void *restrict x, size_t x_row_bytes, const int32_t *restrict ids,
                 int64_t n_used, int64_t K, int64_t r0, int64_t r1, int64_t T,
                 void *restrict scratch)
{
    id_layout l;
    size_t w_span;
    if (!args_ok(ldy, n_expert, x_row_bytes, n_used, K, r0, r1, T) ||
        !layout(&l, T, n_used, n_expert, x_row_bytes, r0, r1) ||
        !mul_ok(&w_span, (size_t)(n_expert - 1), w_expert_bytes))
        return -1;
    const int64_t S = T * n_used; /* slots: output rows */
    if (S == 0) return 0;
    if (!mm || !y || !w || !x || !ids || !scratch) return -1;

    unsigned char *base =
        (unsigned char *)scratch + ((ID_ALIGN - (uintptr_t)scratch % ID_ALIGN) % ID_ALIGN);
    int64_t *slots = (int64_t *)(void *)base;
    int64_t *off = slots + S;
    /* Count (and check every id before anything is written), then place by counting sort:
     * off[e] ends as the end of expert e's slots, so e's begin at off[e - 1] (0 for e = 0). */
    memset(off, 0, sizeof(int64_t) * (size_t)(n_expert + 1));
    for (int64_t s = 0; s < S; s++) {
        if (ids[s] < 0 || ids[s] >= n_expert) return -1;
        off[ids[s] + 1]++;
    }
    if (r0 == r1) return 0;
    for (int64_t e = 0; e < n_expert; e++) off[e + 1] += off[e];
    for (int64_t s = 0; s < S; s++) slots[off[ids[s]]++] = s;

    const unsigned char *xb = x;
    const int64_t n = r1 - r0;
    for (int64_t e = 0, begin = 0; e < n_expert; begin = off[e], e++) {
        const int64_t end = off[e];
        if (begin == end) continue;
        const void *we = (const unsigned char *)w + (size_t)e * w_expert_bytes;
        const int64_t t_first = slots[begin] / n_used;
        int64_t distinct = 1;
        for (int64_t i = begin + 1; i < end; i++)
            distinct += slots[i] / n_used != slots[i - 1] / n_used;
        if (distinct == 1) { /* one token: mm on it in place, copies for its duplicate slots */
            float *y0 = y + slots[begin] * ldy;
            mm(y0, ldy, we, w_row_bytes, xb + (size_t)t_first * x_row_bytes, x_row_bytes, K, r0, r1,
               1);
            for (int64_t i = begin + 1; i < end; i++)
                memcpy(y + slots[i] * ldy + r0, y0 + r0, sizeof(float) * (size_t)n);
            continue;
        }
        unsigned char *xg = base + l.xg;
        float *yb = (float *)(void *)(base + l.yb);
        int64_t rows = 0;
        for (int64_t i = begin; i < end; i++)
            if (i == begin || slots[i] / n_used != slots[i - 1] / n_used)
                memcpy(xg + (size_t)rows++ * l.xs, xb + (size_t)(slots[i] / n_used) * x_row_bytes,
                       x_row_bytes);
        mm(yb - r0, n, we, w_row_bytes, xg, l.xs, K, r0, r1, rows);
        rows = -1;
        for (int64_t i = begin; i < end; i++) {
            if (i == begin || slots[i] / n_used != slots[i - 1] / n_used) rows++;
            memcpy(y + slots[i] * ldy + r0, yb + rows * n, sizeof(float) * (size_t)n);
        }
    }
    return 0;
}
