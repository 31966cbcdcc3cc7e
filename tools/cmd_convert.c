/* cmd_convert.c — `plumb convert HF_DIR OUT.gguf [--type T]`: pl_convert_hf with a progress bar
 * on a terminal and a one-line summary. The mapping, permutation and tokenizer live in the library.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "progress.h"

static void usage(FILE *out)
{
    fputs("usage: plumb convert [options] HF_DIR OUT.gguf\n"
          "\n"
          "Converts a Hugging Face model directory to GGUF: config.json (its architectures[0]\n"
          "one of the classes below), model.safetensors or a sharded checkpoint\n"
          "(model.safetensors.index.json), tokenizer.json (byte-level BPE: the pre-tokenizer\n"
          "is identified and written as tokenizer.ggml.pre; or SentencePiece-style BPE with\n"
          "byte fallback: written as a \"llama\" vocabulary with scores) or, without it,\n"
          "tokenizer.model (SentencePiece BPE, identity normalizer: its pieces, scores and\n"
          "types), tokenizer_config.json (special tokens, add_bos_token, chat template),\n"
          "generation_config.json and chat_template.jinja when present. Keys and tensor\n"
          "names are llama.cpp's; llama checkpoints get llama.cpp's q/k row permutation (the\n"
          "NeoX-RoPE architectures are copied as they are). Norms and biases stay F32.\n"
          "\n"
          "classes (config.json \"architectures\"):\n",
          out);
    cli_put_wrapped(out, 2, 88, pl_arch_hf_list());
    fputs("\n"
          "options:\n"
          "  --type TYPE        F32 (default), F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,\n"
          "                     Q2_K, Q2_K_S, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M,\n"
          "                     Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS, MXFP4_MOE (= MXFP4):\n"
          "                     the same tensor types\n"
          "                     and bytes as 'plumb quantize' of the F32 conversion\n"
          "  --pure             every weight matrix in TYPE, no llama.cpp mix\n"
          "  --vocab-only       the tokenizer alone: tokenizer.json or tokenizer.model\n"
          "                     (+ tokenizer_config.json;\n"
          "                     config.json optional, no weights read) -> a GGUF with no\n"
          "                     tensors that 'plumb tokenize -m' loads\n"
          "  -h, --help         show this help\n"
          "\n"
          "OUT is written to OUT.tmp and renamed when complete; on failure or Ctrl-C nothing\n"
          "is left behind. Progress goes to stderr: a bar on a terminal, else a line every\n"
          "5 s.\n"
          "Exit status: 0 success, 1 failure (the message names the file, key or tensor),\n"
          "2 bad command line.\n",
          out);
}

/* 1 if dir/name can be opened for reading (or the path is too long to tell). */
static int has_file(const char *dir, const char *name)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return 1;
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

int cmd_convert(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "convert", usage);
    const char *pos[2] = {NULL, NULL}, *type = "F32";
    int n_pos = 0, pure = 0, vocab_only = 0;
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        if (k == CLI_ARG_POSITIONAL) {
            if (n_pos == 2) return cli_usage_error(&a, "unexpected argument '%s'", a.arg);
            pos[n_pos++] = a.arg;
            continue;
        }
        if (cli_is_help(&a)) return cli_help(&a);
        if (cli_is(&a, NULL, "--pure")) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            pure = 1;
            continue;
        }
        if (cli_is(&a, NULL, "--vocab-only")) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            vocab_only = 1;
            continue;
        }
        if (cli_is(&a, NULL, "--type")) {
            if (!(type = cli_value(&a))) return CLI_EXIT_USAGE;
            continue;
        }
        return cli_unknown_option(&a);
    }
    if (n_pos < 2)
        return cli_usage_error(&a, "expected HF_DIR OUT.gguf, got %d argument%s", n_pos,
                               n_pos == 1 ? "" : "s");
    pl_error err = {0};
    pl_ftype ftype;
    if (pl_ftype_from_name(type, &ftype, &err) != PL_OK) return cli_usage_error(&a, "%s", err.msg);
    /* Checked here so that the message names the folder once, before any work. */
    if (!vocab_only && has_file(pos[0], "config.json") && !has_file(pos[0], "model.safetensors") &&
        !has_file(pos[0], "model.safetensors.index.json"))
        return cli_errorf("%s: no weights: neither model.safetensors nor "
                          "model.safetensors.index.json can be read there",
                          pos[0]);

    progress_bar bar;
    progress_bar_init(&bar, "convert");
    pl_convert_stats st;
    pl_convert_params p = {.ftype = ftype,
                           .pure = pure,
                           .progress = progress_bar_cb,
                           .progress_user = &bar,
                           .stats = &st,
                           .vocab_only = vocab_only};
    pl_status s = pl_convert_hf(pos[0], pos[1], &p, &err);
    progress_bar_finish(&bar);
    if (s == PL_ERR_CANCELLED) return cli_errorf("convert: interrupted; '%s' not written", pos[1]);
    if (s) return cli_fail(s, &err);
    char size[32];
    if (vocab_only) {
        cli_format_size(size, sizeof size, st.out_bytes);
        printf("converted %s -> %s: vocabulary only, %" PRIu64 " tokens (pre-tokenizer %s), %s\n",
               pos[0], pos[1], st.n_vocab, st.pre, size);
        return CLI_EXIT_OK;
    }
    cli_format_size(size, sizeof size, st.out_bytes);
    printf("converted %s -> %s: %s, %s%s, %" PRIu64 " tensors, %" PRIu64 " parameters, %" PRIu64
           " tokens (pre-tokenizer %s), %s, %.2f s\n",
           pos[0], pos[1], st.arch, pl_ftype_name(ftype), pure ? " (pure)" : "", st.n_tensors,
           st.n_params, st.n_vocab, st.pre, size, pl_clock_s() - bar.t0);
    return CLI_EXIT_OK;
}
