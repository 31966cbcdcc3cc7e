/* logits_report.c — the text report of a logits comparison, shared by `plumb logits compare`
 * and `plumb perplexity --kl-divergence-base`. Not the statistics: pl_logits_compare computes. */
#include <inttypes.h>
#include <math.h>

#include "logits_report.h"

void logits_report_span(char *buf, size_t size, int64_t first, int64_t window)
{
    snprintf(buf, size, "positions [%lld, %lld) of each (predicting tokens [%lld, %lld))",
             (long long)first, (long long)(window - 1), (long long)first + 1, (long long)window);
}

void logits_report_file(FILE *out, const char *tag, const char *path, const pl_logits *l)
{
    fprintf(out, "%s: %s (model '%s', tokenizer %016" PRIx64 ", ", tag, path, l->model_name,
            l->tokenizer_hash);
    char span[128];
    logits_report_span(span, sizeof span, l->first_row, l->window);
    if (l->window)
        fprintf(out, "%lld windows of %lld tokens, %s: %lld rows)\n",
                (long long)(l->n_tokens / l->window), (long long)l->window, span,
                (long long)l->n_rows);
    else
        fprintf(out, "rows [%lld, %lld) of %lld tokens)\n", (long long)l->first_row,
                (long long)(l->first_row + l->n_rows), (long long)l->n_tokens);
}

static void print_se(FILE *out, const char *label, double v, double se, double scale,
                     const char *unit)
{
    if (isnan(se))
        fprintf(out, "%-16s %12.6f%s\n", label, v * scale, unit);
    else
        fprintf(out, "%-16s %12.6f ± %.6f%s\n", label, v * scale, se * scale, unit);
}

void logits_report_stats(FILE *out, const pl_logits_stats *s, const pl_logits *a)
{
    if (a->window)
        fprintf(out, "compared: %lld positions (%lld windows), vocab %lld\n", (long long)s->n_rows,
                (long long)(s->n_rows / (a->window - 1 - a->first_row)), (long long)a->n_vocab);
    else
        fprintf(out, "compared: %lld positions (rows [%lld, %lld)), vocab %lld\n",
                (long long)s->n_rows, (long long)s->first_row,
                (long long)(s->first_row + s->n_rows), (long long)a->n_vocab);
    print_se(out, "Mean    KLD:", s->kld_mean, s->kld_mean_se, 1, "");
    fprintf(out, "%-16s %12.6f (position %lld)\n", "Maximum KLD:", s->kld_max,
            (long long)s->kld_max_row);
    fprintf(out, "%-16s %12.6f\n", "99.9%   KLD:", s->kld_p999);
    fprintf(out, "%-16s %12.6f\n", "99.0%   KLD:", s->kld_p99);
    fprintf(out, "%-16s %12.6f\n", "Median  KLD:", s->kld_median);
    fprintf(out, "%-16s %12.6f\n", "Minimum KLD:", s->kld_min);
    fprintf(out, "%-16s %12.6f\n", "Max |dlogit|:", s->max_abs_diff);
    fprintf(out, "%-16s %12.6f\n", "RMS |dlogit|:", s->rms_abs_diff);
    print_se(out, "Same top-1:", s->top1_agree, s->top1_agree_se, 100, " %");
    print_se(out, "Top-5 overlap:", s->top5_overlap, s->top5_overlap_se, 100, " %");
    if (s->n_ppl == 0) return;
    fprintf(out, "perplexity over %lld positions with a next token:\n", (long long)s->n_ppl);
    print_se(out, "PPL(A):", s->ppl_a, s->ppl_a_se, 1, "");
    print_se(out, "PPL(B):", s->ppl_b, s->ppl_b_se, 1, "");
    print_se(out, "PPL(B)-PPL(A):", s->ppl_diff, s->ppl_diff_se, 1, "");
    print_se(out, "ln(PPL(B/A)):", s->ln_ratio, s->ln_ratio_se, 1, "");
    if (!isnan(s->ppl_corr)) fprintf(out, "%-16s %12.6f %%\n", "Cor(NLL A, B):", 100 * s->ppl_corr);
}
