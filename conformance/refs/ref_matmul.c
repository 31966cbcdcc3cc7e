/* ref_matmul.c — exact dequantization in double and the gsl_blas_dgemm matmul reference.
 * Element-at-a-time decoding straight from the ggml layouts; slow on purpose, test-only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_matrix.h>

#include "refs.h"

/* IEEE half from its fields, computed in double (exact). */
static double half(uint16_t h)
{
    const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
    double v;
    if (exp == 31)
        v = man ? NAN : INFINITY;
    else if (exp == 0)
        v = ldexp(man, -24);
    else
        v = ldexp(1024 + man, exp - 25);
    return sign ? -v : v;
}

static double bfloat(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* Six-bit scale (which = 0) or min (which = 1) of sub-block j of a Q4_K/Q5_K block:
 * 12 bytes s; for j < 4 the low 6 bits of s[j] (scale) / s[4 + j] (min); for j >= 4 the
 * low (scale) / high (min) nibble of s[8 + (j - 4)] plus 2 high bits from the top of
 * s[j - 4] (scale) / s[j] (min). */
static int k4_scale(const uint8_t *s, int j, int which)
{
    if (j < 4) return s[4 * which + j] % 64;
    const int low = which ? s[j + 4] / 16 : s[j + 4] % 16;
    const int high = s[which ? j : j - 4] / 64;
    return low + 16 * high;
}

/* The 16 levels of IQ4_NL and IQ4_XS, as ggml's kvalues_iq4nl lists them. */
static const int iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

/* An E2M1 code's value from its fields (OCP MX spec): sign bit 3, exponent bits 2..1 (bias 1),
 * mantissa bit 0; exponent 0 is subnormal (0 or 0.5). */
static double e2m1(int c)
{
    const int ex = (c >> 1) & 3, m = c & 1;
    const double v = ex == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, ex - 1);
    return c & 8 ? -v : v;
}

/* Two-bit quant of element e of a Q2_K/Q3_K block whose 64 qs bytes start at qs: the
 * elements 128 h + 32 g + l (g = 0..3) share byte qs[32 h + l], at bits 2 g, 2 g + 1. */
static int two_bits(const uint8_t *qs, int e)
{
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    return (qs[32 * h + l] >> (2 * g)) % 4;
}

/* Element e of one block, as scale part and offset part. */
static void element(pl_type type, const uint8_t *b, int e, double *sc, double *off)
{
    *off = 0.0;
    switch (type) {
    case PL_TYPE_F32: {
        float f;
        memcpy(&f, b, 4);
        *sc = f;
        return;
    }
    case PL_TYPE_F16:
        *sc = half(rd16(b));
        return;
    case PL_TYPE_BF16:
        *sc = bfloat(rd16(b));
        return;
    case PL_TYPE_Q4_0: { /* d | qs[16]; element e < 16 low nibble of qs[e], else high of qs[e-16] */
        const int q = e < 16 ? b[2 + e] % 16 : b[2 + e - 16] / 16;
        *sc = half(rd16(b)) * (q - 8);
        return;
    }
    case PL_TYPE_Q4_1: { /* d | m | qs[16] */
        const int q = e < 16 ? b[4 + e] % 16 : b[4 + e - 16] / 16;
        *sc = half(rd16(b)) * q;
        *off = half(rd16(b + 2));
        return;
    }
    case PL_TYPE_Q5_0: { /* d | qh[4] | qs[16]; bit 4 of element e is bit e of qh (LE) */
        const int low = e < 16 ? b[6 + e] % 16 : b[6 + e - 16] / 16;
        const int high = (b[2 + e / 8] >> (e % 8)) & 1;
        *sc = half(rd16(b)) * (low + 16 * high - 16);
        return;
    }
    case PL_TYPE_Q5_1: { /* d | m | qh[4] | qs[16] */
        const int low = e < 16 ? b[8 + e] % 16 : b[8 + e - 16] / 16;
        const int high = (b[4 + e / 8] >> (e % 8)) & 1;
        *sc = half(rd16(b)) * (low + 16 * high);
        *off = half(rd16(b + 2));
        return;
    }
    case PL_TYPE_Q8_0: /* d | qs[32] */
        *sc = half(rd16(b)) * (int8_t)b[2 + e];
        return;
    case PL_TYPE_Q4_K:   /* d | dmin | scales[12] | qs[128] */
    case PL_TYPE_Q5_K: { /* d | dmin | scales[12] | qh[32] | qs[128] */
        const int j = e / 32, p = e / 64, l = e % 32, upper = (e % 64) / 32;
        const uint8_t *qs = b + (type == PL_TYPE_Q4_K ? 16 : 48);
        int q = upper ? qs[32 * p + l] / 16 : qs[32 * p + l] % 16;
        if (type == PL_TYPE_Q5_K) q += 16 * ((b[16 + l] >> (2 * p + upper)) & 1);
        *sc = half(rd16(b)) * k4_scale(b + 4, j, 0) * q;
        *off = -half(rd16(b + 2)) * k4_scale(b + 4, j, 1);
        return;
    }
    case PL_TYPE_Q6_K: { /* ql[128] | qh[64] | scales[16] (int8) | d */
        const int h = e / 128, g = (e % 128) / 32, l = e % 32;
        const uint8_t lo_byte = b[64 * h + 32 * (g % 2) + l];
        const int low = g < 2 ? lo_byte % 16 : lo_byte / 16;
        const int high = (b[128 + 32 * h + l] >> (2 * g)) & 3;
        *sc = half(rd16(b + 208)) * (int8_t)b[192 + e / 16] * (low + 16 * high - 32);
        return;
    }
    case PL_TYPE_Q2_K: { /* scales[16] (scale low nibble, min high) | qs[64] | d | dmin */
        const int s = b[e / 16];
        *sc = half(rd16(b + 80)) * (s % 16) * two_bits(b + 16, e);
        *off = -half(rd16(b + 82)) * (s / 16);
        return;
    }
    case PL_TYPE_Q3_K: { /* hmask[32] | qs[64] | scales[12] | d */
        const int j = e / 16;
        const uint8_t *s = b + 96;
        const int low = j < 8 ? s[j] % 16 : s[j - 8] / 16;
        const int high = (s[8 + j % 4] >> (2 * (j / 4))) % 4;
        const int hbit = (b[e % 32] >> (e / 32)) % 2; /* set: q as is; clear: q - 4 */
        *sc = half(rd16(b + 108)) * (low + 16 * high - 32) * (two_bits(b + 32, e) - 4 + 4 * hbit);
        return;
    }
    case PL_TYPE_IQ4_NL: { /* d | qs[16]; nibbles as Q4_0 */
        const int q = e < 16 ? b[2 + e] % 16 : b[2 + e - 16] / 16;
        *sc = half(rd16(b)) * iq4_levels[q];
        return;
    }
    case PL_TYPE_IQ4_XS: { /* d | scales_h (u16) | scales_l[4] | qs[128]; 32-groups as IQ4_NL */
        const int ib = e / 32, l = e % 32;
        const int ls =
            (b[4 + ib / 2] >> (4 * (ib % 2))) % 16 + 16 * ((rd16(b + 2) >> (2 * ib)) % 4);
        const uint8_t byte = b[8 + 16 * ib + l % 16];
        const int q = l < 16 ? byte % 16 : byte / 16;
        *sc = half(rd16(b)) * (ls - 32) * iq4_levels[q];
        return;
    }
    case PL_TYPE_MXFP4: { /* e (E8M0: 2^(e - 127), 255 NaN) | qs[16]; nibbles as Q4_0 */
        const int q = e < 16 ? b[1 + e] % 16 : b[1 + e - 16] / 16;
        *sc = b[0] == 255 ? NAN : e2m1(q) * ldexp(1.0, b[0] - 127);
        return;
    }
    case PL_TYPE_Q8_K: { /* float d | qs[256] | bsums[16] */
        float d;
        memcpy(&d, b, 4);
        *sc = (double)d * (int8_t)b[4 + e];
        return;
    }
    default:
        *sc = NAN;
        return;
    }
}

int ref_dequantize(pl_type type, const void *x, int64_t n, double *scale, double *offset)
{
    const struct pl_type_traits *tr = pl_type_traits_of(type);
    if (!tr || tr->block_size == 0) return -1;
    const int64_t bs = tr->block_size;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *b = (const uint8_t *)x + (size_t)(i / bs) * tr->block_bytes;
        double off;
        element(type, b, (int)(i % bs), &scale[i], &off);
        if (offset) offset[i] = off;
    }
    return 0;
}

int ref_matmul(pl_type wtype, const void *w, size_t w_row_bytes, const void *x, size_t x_row_bytes,
               int64_t K, int64_t R, int64_t T, double *y, double *mag)
{
    const struct pl_type_traits *tr = pl_type_traits_of(wtype);
    if (!tr || tr->block_size == 0) return -1;
    const pl_type xtype = tr->dot_type;
    double *W = malloc(sizeof(double) * (size_t)(R * K));
    double *Wabs = malloc(sizeof(double) * (size_t)(R * K));
    double *X = malloc(sizeof(double) * (size_t)(T * K));
    double *Xabs = malloc(sizeof(double) * (size_t)(T * K));
    double *off = malloc(sizeof(double) * (size_t)K);
    int rc = -1;
    if (!W || !Wabs || !X || !Xabs || !off) goto out;
    for (int64_t r = 0; r < R; r++) {
        double *wr = W + r * K, *ar = Wabs + r * K;
        if (ref_dequantize(wtype, (const char *)w + (size_t)r * w_row_bytes, K, wr, off)) goto out;
        for (int64_t k = 0; k < K; k++) {
            ar[k] = fabs(wr[k]) + fabs(off[k]);
            wr[k] += off[k]; /* exact: both are multiples of 2^-24 well inside 2^53 ulps */
        }
    }
    for (int64_t t = 0; t < T; t++) {
        double *xr = X + t * K;
        if (ref_dequantize(xtype, (const char *)x + (size_t)t * x_row_bytes, K, xr, NULL)) goto out;
        for (int64_t k = 0; k < K; k++) Xabs[t * K + k] = fabs(xr[k]);
    }
    gsl_matrix_view Wm = gsl_matrix_view_array(W, (size_t)R, (size_t)K);
    gsl_matrix_view Xm = gsl_matrix_view_array(X, (size_t)T, (size_t)K);
    gsl_matrix_view Ym = gsl_matrix_view_array(y, (size_t)T, (size_t)R);
    gsl_blas_dgemm(CblasNoTrans, CblasTrans, 1.0, &Xm.matrix, &Wm.matrix, 0.0, &Ym.matrix);
    if (mag) {
        gsl_matrix_view Am = gsl_matrix_view_array(Wabs, (size_t)R, (size_t)K);
        gsl_matrix_view Bm = gsl_matrix_view_array(Xabs, (size_t)T, (size_t)K);
        gsl_matrix_view Mm = gsl_matrix_view_array(mag, (size_t)T, (size_t)R);
        gsl_blas_dgemm(CblasNoTrans, CblasTrans, 1.0, &Bm.matrix, &Am.matrix, 0.0, &Mm.matrix);
    }
    rc = 0;
out:
    free(W);
    free(Wabs);
    free(X);
    free(Xabs);
    free(off);
    return rc;
}
