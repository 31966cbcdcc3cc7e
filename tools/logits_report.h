/* logits_report.h — how `plumb logits compare` and `plumb perplexity --kl-divergence-base`
 * print a pl_logits_stats (one format for both). Tools only; the numbers come from the library. */
#ifndef PLUMB_TOOLS_LOGITS_REPORT_H
#define PLUMB_TOOLS_LOGITS_REPORT_H

#include <stdio.h>

#include "plumb.h"

/* The span a windowed file keeps, as both reports name it: "positions [first, window - 1) of
 * each (predicting tokens [first + 1, window))" — position i's logits predict token i + 1. */
void logits_report_span(char *buf, size_t size, int64_t first, int64_t window);
/* "A: PATH (model 'NAME', tokenizer HASH, rows [lo, hi) of N tokens)", or for a windowed file
 * its windows and the positions kept in each. */
void logits_report_file(FILE *out, const char *tag, const char *path, const pl_logits *l);
/* The statistics of B against A, one per line: KLD (mean ± SE, max and where, percentiles,
 * min), logit differences, top-1 and top-5 agreement, then PPL(A), PPL(B), their difference
 * and ratio, and the correlation of the per-token NLLs. a: the file A (its shape). */
void logits_report_stats(FILE *out, const pl_logits_stats *s, const pl_logits *a);

#endif
