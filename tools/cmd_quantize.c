/* cmd_quantize.c — `plumb quantize IN.gguf OUT.gguf TYPE`: pl_model_quantize with a progress
 * bar on a terminal and a one-line summary. The per-tensor rules live in the library. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "progress.h"

static void usage(FILE *out)
{
    fputs("usage: plumb quantize [options] IN.gguf OUT.gguf TYPE\n"
          "\n"
          "Converts every weight matrix of IN (any type plumb implements) to TYPE and writes\n"
          "OUT with all of IN's metadata (general.file_type updated). Norms, biases and\n"
          "other 1-D tensors are copied unchanged. Mixes follow llama-quantize (c392e509,\n"
          "no imatrix): output.weight (token_embd.weight when tied) gets Q6_K; attn_v,\n"
          "attn_output, ffn_down and attn_qkv get more bits by mix, layer and model (GQA,\n"
          "experts), e.g. Q3_K_M: attn_v Q5_K on the first two layers then Q4_K,\n"
          "attn_output Q4_K, ffn_down Q5_K on the first 1/16 then Q4_K; Q4_K_M/Q5_K_M:\n"
          "attn_v and ffn_down Q6_K on the first and last eighth and every third layer\n"
          "between (the full list: engine/include/plumb.h). A row length that is not a\n"
          "multiple of 256 turns Q2_K, Q3_K and IQ4_XS into IQ4_NL, Q4_K into Q5_0, Q5_K\n"
          "into Q5_1 and Q6_K into Q8_0 (counted as fallbacks). MXFP4_MOE: the experts of\n"
          "MoE layers (tensors with a third dimension > 1) in MXFP4, every other weight\n"
          "matrix Q8_0; with --pure every weight matrix in MXFP4.\n"
          "\n"
          "TYPE: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q2_K_S,\n"
          "      Q3_K (= Q3_K_M), Q3_K_S, Q3_K_M, Q3_K_L, Q4_K (= Q4_K_M), Q4_K_S,\n"
          "      Q4_K_M, Q5_K (= Q5_K_M), Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS,\n"
          "      MXFP4_MOE (= MXFP4)\n"
          "      (the short names as llama-quantize reads them)\n"
          "\n"
          "options:\n"
          "  --pure             every weight matrix in TYPE, no llama.cpp mix\n"
          "  --allow-requantize quantize weights that are already quantized (each\n"
          "                     quantization loses; quantize from F32/F16/BF16 instead)\n"
          "  -t, --threads N    threads (default: PLUMB_THREADS, else one per physical\n"
          "                     core); the output does not depend on it\n"
          "  -h, --help         show this help\n"
          "\n"
          "OUT is written to OUT.tmp and renamed when complete; on failure or Ctrl-C nothing\n"
          "is left behind. Progress goes to stderr: a bar on a terminal, else a line every\n"
          "5 s.\n"
          "Exit status: 0 success, 1 failure, 2 bad command line.\n",
          out);
}

/* CLI_EXIT_FAIL after a message when a weight matrix of path is already quantized. */
static int refuse_quantized(const char *path)
{
    pl_gguf *g = NULL;
    pl_error err;
    pl_status st = pl_gguf_open(&g, path, &err);
    if (st) return cli_fail(st, &err);
    int rc = 0;
    for (uint64_t i = 0; i < pl_gguf_n_tensors(g) && !rc; i++) {
        pl_tensor_info t;
        if (pl_gguf_tensor(g, i, &t, NULL) || t.n_dims < 2) continue;
        if (t.type != PL_TYPE_F32 && t.type != PL_TYPE_F16 && t.type != PL_TYPE_BF16)
            rc = cli_errorf("%s is already quantized (tensor '%.*s' is %s): quantize from an "
                            "F32/F16/BF16 file, or give --allow-requantize",
                            path, (int)t.name.len, t.name.ptr, pl_type_name(t.type));
    }
    pl_gguf_free(g);
    return rc;
}

int cmd_quantize(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "quantize", usage);
    const char *pos[3] = {NULL, NULL, NULL};
    int n_pos = 0, pure = 0, requant = 0;
    long threads = 0;
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        const char *v;
        if (k == CLI_ARG_POSITIONAL) {
            if (n_pos == 3) return cli_usage_error(&a, "unexpected argument '%s'", a.arg);
            pos[n_pos++] = a.arg;
            continue;
        }
        if (cli_is_help(&a)) return cli_help(&a);
        if (cli_is(&a, NULL, "--pure") || cli_is(&a, NULL, "--allow-requantize")) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            *(cli_is(&a, NULL, "--pure") ? &pure : &requant) = 1;
            continue;
        }
        if (cli_is(&a, "-t", "--threads")) {
            if (!(v = cli_value(&a))) return CLI_EXIT_USAGE;
            char *end;
            errno = 0;
            threads = strtol(v, &end, 10);
            if (errno || end == v || *end || threads < 1 || threads > 4096)
                return cli_usage_error(&a, "--threads: '%s' is not an integer in 1..4096", v);
            continue;
        }
        return cli_unknown_option(&a);
    }
    if (n_pos < 3)
        return cli_usage_error(&a, "expected IN.gguf OUT.gguf TYPE, got %d argument%s", n_pos,
                               n_pos == 1 ? "" : "s");
    pl_error err = {0};
    pl_ftype ftype;
    if (pl_ftype_from_name(pos[2], &ftype, &err) != PL_OK)
        return cli_usage_error(&a, "%s", err.msg);

    if (cli_same_file(pos[0], pos[1]))
        return cli_usage_error(&a, "OUT '%s' is IN: give another output path", pos[1]);
    int rc = cli_check_input(pos[0]);
    if (rc || (rc = cli_check_output(pos[1]))) return rc;
    if (!requant && (rc = refuse_quantized(pos[0]))) return rc;

    progress_bar bar;
    progress_bar_init(&bar, "quantize");
    pl_quantize_stats st;
    pl_quantize_params p = {.ftype = ftype,
                            .n_threads = (int)threads,
                            .pure = pure,
                            .progress = progress_bar_cb,
                            .progress_user = &bar,
                            .stats = &st};
    pl_status s = pl_model_quantize(pos[0], pos[1], &p, &err);
    progress_bar_finish(&bar);
    if (s == PL_ERR_CANCELLED) return cli_errorf("quantize: interrupted; '%s' not written", pos[1]);
    if (s) return cli_fail(s, &err);

    char in_size[32], out_size[32], types[256] = "";
    cli_format_size(in_size, sizeof in_size, st.in_bytes);
    cli_format_size(out_size, sizeof out_size, st.out_bytes);
    size_t len = 0;
    for (uint32_t t = 0; t < PL_TYPE_COUNT && len < sizeof types; t++) {
        if (!st.n_by_type[t]) continue;
        int w = snprintf(types + len, sizeof types - len, "%s%s %" PRIu64, len ? ", " : "",
                         pl_type_name(t), st.n_by_type[t]);
        if (w > 0) len += (size_t)w;
    }
    printf("quantized %s -> %s: %s%s, %" PRIu64 " tensors (%" PRIu64 " converted, %" PRIu64
           " fallbacks; %s), %s -> %s, %.2f s\n",
           pos[0], pos[1], pl_ftype_name(ftype), pure ? " (pure)" : "", st.n_tensors,
           st.n_converted, st.n_fallback, types, in_size, out_size, pl_clock_s() - bar.t0);
    return CLI_EXIT_OK;
}
