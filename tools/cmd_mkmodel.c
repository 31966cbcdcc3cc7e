/* cmd_mkmodel.c — `plumb mkmodel OUT.gguf [--preset …] [shape options] [--type T]`: writes a
 * synthetic model with mkmodel.c. Parses and reports; the generator and the library do the work. */
#include <math.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mkmodel.h"
#include "progress.h"

static void usage(FILE *out)
{
    fputs("usage: plumb mkmodel [options] OUT.gguf\n"
          "\n"
          "Writes a synthetic model in llama.cpp's GGUF conventions (metadata keys, tensor\n"
          "names and shapes): seeded random weights at scales that give non-degenerate\n"
          "logits, and a working tokenizer in the real formats (--vocab) but not the\n"
          "model's own: its regular tokens are merges learned from a small English text\n"
          "(long pieces pad it to --n-vocab), and the family's turn tokens (<|im_start|>,\n"
          "<start_of_turn>, <|user|> ...) take the last ids, not the real model's\n"
          "(Qwen2's <|im_start|> is 151644; the qwen2-0.5b preset's is 151934 of 151936).\n"
          "The chat template is the family's real one: the vocabulary's (bpe: Qwen2's\n"
          "ChatML, llama3: Llama 3's, spm: Llama 2's, gemma: Gemma 2's, phi3: Phi-3's),\n"
          "or the preset's (gemma3-1b: Gemma 3's, mixtral-8x7b: Mistral Instruct's),\n"
          "whatever the architecture. The preset is applied first; the other options\n"
          "override its values, whatever their order.\n"
          "\n"
          "options:\n"
          "  --preset NAME      tiny (default; < 2 MB at F32), qwen2-0.5b, llama-1b,\n"
          "                     qwen3-0.6b, gemma2-2b, gemma3-1b, phi3-mini,\n"
          "                     granite-3-2b, smollm3-3b, olmo2-7b, exaone4-32b,\n"
          "                     glm4-9b, qwen3-30b-a3b, qwen2-moe-a2.7b, gpt-oss-20b,\n"
          "                     mixtral-8x7b\n"
          "                     (real dimensions, random weights; --n-layer to shrink),\n"
          "                     tiny-moe\n"
          "  --arch NAME        llama, qwen2 (q/k/v biases), qwen3 (per-head q/k norms),\n"
          "                     gemma2, gemma3 (need --local-window unless the preset\n"
          "                     is theirs), phi3 (fused q/k/v and gate/up; without\n"
          "                     --local-window, llama.cpp's window for Phi-3's shapes),\n"
          "                     qwen2moe, qwen3moe (mixtures of experts), granite (with\n"
          "                     --multipliers unless the preset is its), smollm3, olmo2,\n"
          "                     exaone4 (--local-window optional), glm4, cohere2 (needs\n"
          "                     --local-window and --logit-scale)\n"
          "  --local-window N   the local layers' sliding window (Gemma, Phi-3, EXAONE 4,\n"
          "                     Command R7B)\n"
          "  --n-rot N          rotated dims of a head (GLM-4: half of it; default: all)\n"
          "  --multipliers E,R,A,L  Granite's embedding, residual, attention and logit\n"
          "                     multipliers (granite requires them)\n"
          "  --n-embd N         embedding length\n"
          "  --n-layer N        blocks\n"
          "  --n-head N         query heads\n"
          "  --n-head-kv N      key/value heads (divides --n-head)\n"
          "  --head-dim N       dimension of a head (default: n_embd / n_head)\n"
          "  --n-ff N           feed-forward length\n"
          "  --n-expert N       experts per layer (0: dense; qwen2moe, qwen3moe and llama as\n"
          "                     Mixtral), --n-expert-used N of them per token\n"
          "  --n-ff-exp N       an expert's feed-forward length (qwen2moe, qwen3moe)\n"
          "  --n-ff-shexp N     the shared expert's (qwen2moe)\n"
          "  --n-vocab N        vocabulary size\n"
          "  --ctx N            context length written to the file\n"
          "  --rope-base F      RoPE frequency base\n"
          "  --rms-eps F        RMSNorm epsilon (cohere2: LayerNorm's)\n"
          "  --logit-scale F    the logits times F (cohere2's logit_scale)\n"
          "  --type T           F32 (default), F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,\n"
          "                     Q2_K, Q2_K_S, Q3_K (= Q3_K_M), Q3_K_S, Q3_K_M, Q3_K_L,\n"
          "                     Q4_K (= Q4_K_M), Q4_K_S, Q4_K_M, Q5_K (= Q5_K_M), Q5_K_S,\n"
          "                     Q5_K_M, Q6_K, IQ4_NL, IQ4_XS, MXFP4_MOE (= MXFP4);\n"
          "                     per-tensor types as\n"
          "                     llama.cpp's quantizer chooses them (same rules as\n"
          "                     'plumb quantize')\n"
          "  --pure             every weight matrix in T, no llama.cpp mix\n"
          "  --vocab KIND       the tokenizer: bpe (byte-level BPE with Qwen2's special\n"
          "                     tokens; default), llama3 (byte-level BPE with Llama 3's;\n"
          "                     default of llama-1b), spm (SentencePiece, Llama 2 style),\n"
          "                     gemma (SentencePiece, Gemma's ids and turn tokens;\n"
          "                     default of the Gemma presets), phi3 (SentencePiece with\n"
          "                     Phi-3's specials; default of phi3-mini)\n"
          "  --seed S           weights seed (default 1); same options, same bytes\n"
          "  --tied, --untied   share token_embd as the output projection, or write\n"
          "                     output.weight (default: as the preset's real model)\n"
          "  --name TEXT        general.name\n"
          "  -t, --threads N    threads (default: every CPU); the bytes do not depend on it\n"
          "  -h, --help         show this help\n"
          "\n"
          "Progress goes to stderr: a bar on a terminal, else a line every 5 s; Ctrl-C\n"
          "cancels and leaves no file. Exit status: 0 success, 1 failure, 2 bad command line.\n",
          out);
}

/* The integer options: name, and where their value goes in mk_config. */
static const struct int_opt {
    const char *name;
    size_t offset;
    int64_t lo;
} int_opts[] = {
    {"--n-embd", offsetof(mk_config, n_embd), 1},
    {"--n-layer", offsetof(mk_config, n_layer), 1},
    {"--n-head", offsetof(mk_config, n_head), 1},
    {"--n-head-kv", offsetof(mk_config, n_head_kv), 1},
    {"--head-dim", offsetof(mk_config, head_dim), 1},
    {"--n-ff", offsetof(mk_config, n_ff), 1},
    {"--n-vocab", offsetof(mk_config, n_vocab), 1},
    {"--ctx", offsetof(mk_config, n_ctx), 1},
    {"--local-window", offsetof(mk_config, local_window), 1},
    {"--n-rot", offsetof(mk_config, n_rot), 2},
    {"--n-expert", offsetof(mk_config, n_expert), 0},
    {"--n-expert-used", offsetof(mk_config, n_expert_used), 0},
    {"--n-ff-exp", offsetof(mk_config, n_ff_exp), 1},
    {"--n-ff-shexp", offsetof(mk_config, n_ff_shexp), 1},
};
enum { N_INT_OPTS = sizeof int_opts / sizeof int_opts[0] };

int cmd_mkmodel(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "mkmodel", usage);
    const char *out = NULL, *preset = "tiny", *arch = NULL, *type = NULL, *vocab = NULL;
    const char *name = NULL, *mult = NULL;
    const struct {
        const char *name;
        const char **dst;
    } str_opts[] = {{"--preset", &preset}, {"--arch", &arch}, {"--type", &type},
                    {"--vocab", &vocab},   {"--name", &name}, {"--multipliers", &mult}};
    enum { N_STR_OPTS = sizeof str_opts / sizeof str_opts[0] };
    int64_t ints[N_INT_OPTS];
    int given[N_INT_OPTS] = {0};
    float rope_base = 0, rms_eps = 0, logit_scale = 0;
    int64_t seed = -1, threads = 0;
    int tied = -1, pure = 0;
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        const char *v;
        if (k == CLI_ARG_POSITIONAL) {
            if (out) return cli_usage_error(&a, "unexpected argument '%s'", a.arg);
            out = a.arg;
            continue;
        }
        if (cli_is_help(&a)) return cli_help(&a);
        int matched = 0;
        for (int i = 0; i < N_INT_OPTS && !matched; i++) {
            if (!cli_is(&a, NULL, int_opts[i].name)) continue;
            matched = 1;
            if (!(v = cli_value(&a))) return CLI_EXIT_USAGE;
            if (cli_parse_i64(&a, v, int_opts[i].lo, INT32_MAX, &ints[i])) return CLI_EXIT_USAGE;
            given[i] = 1;
        }
        if (matched) continue;
        const char **str_dst = NULL;
        for (int i = 0; i < N_STR_OPTS && !str_dst; i++)
            if (cli_is(&a, NULL, str_opts[i].name)) str_dst = str_opts[i].dst;
        if (str_dst) {
            if (!(*str_dst = cli_value(&a))) return CLI_EXIT_USAGE;
            continue;
        }
        float *f_dst = cli_is(&a, NULL, "--rope-base")     ? &rope_base
                       : cli_is(&a, NULL, "--rms-eps")     ? &rms_eps
                       : cli_is(&a, NULL, "--logit-scale") ? &logit_scale
                                                           : NULL;
        if (f_dst) {
            if (!(v = cli_value(&a)) || cli_parse_f32(&a, v, 1e-30, INFINITY, f_dst))
                return CLI_EXIT_USAGE;
            continue;
        }
        if (cli_is(&a, "-t", "--threads")) {
            if (!(v = cli_value(&a)) || cli_parse_i64(&a, v, 1, 256, &threads))
                return CLI_EXIT_USAGE;
            continue;
        }
        if (cli_is(&a, NULL, "--seed")) {
            if (!(v = cli_value(&a)) || cli_parse_i64(&a, v, 0, INT64_MAX, &seed))
                return CLI_EXIT_USAGE;
            continue;
        }
        int *flag = NULL, flag_value = 1;
        if (cli_is(&a, NULL, "--tied")) {
            flag = &tied;
        } else if (cli_is(&a, NULL, "--untied")) {
            flag = &tied;
            flag_value = 0;
        } else if (cli_is(&a, NULL, "--pure")) {
            flag = &pure;
        }
        if (flag) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            *flag = flag_value;
            continue;
        }
        return cli_unknown_option(&a);
    }
    if (!out) return cli_usage_error(&a, "missing the output file OUT.gguf");

    mk_config c;
    if (mk_preset(preset, &c) != 0)
        return cli_usage_error(&a, "unknown preset '%s' (known: %s)", preset, mk_preset_list());
    if (arch && mk_arch_from_name(arch, &c) != 0)
        return cli_usage_error(&a, "unknown arch '%s' (known: %s)", arch, pl_arch_list());
    for (int i = 0; i < N_INT_OPTS; i++)
        if (given[i]) memcpy((char *)&c + int_opts[i].offset, &ints[i], sizeof ints[i]);
    if (rope_base > 0) c.rope_base = rope_base;
    if (rms_eps > 0) c.rms_eps = rms_eps;
    if (logit_scale > 0) c.logit_scale = logit_scale;
    if (seed >= 0) c.seed = (uint64_t)seed;
    if (tied >= 0) c.tied = tied;
    c.pure = pure;
    c.n_threads = (int)threads;
    if (name) snprintf(c.name, sizeof c.name, "%s", name);
    if (mult) {
        char end = 0;
        if (sscanf(mult, "%f,%f,%f,%f%c", &c.mult[0], &c.mult[1], &c.mult[2], &c.mult[3], &end) !=
                4 ||
            !(c.mult[0] > 0 && c.mult[1] > 0 && c.mult[2] > 0 && c.mult[3] > 0))
            return cli_usage_error(&a, "--multipliers '%s': four positive numbers E,R,A,L", mult);
    }
    if (vocab && mk_vocab_from_name(vocab, &c.vocab) != 0)
        return cli_usage_error(&a, "unknown vocabulary '%s' (known: spm, bpe, llama3)", vocab);
    pl_error err = {0};
    if (type && pl_ftype_from_name(type, &c.ftype, &err) != PL_OK)
        return cli_usage_error(&a, "%s", err.msg);
    if (mk_validate(&c, &err) != PL_OK) return cli_usage_error(&a, "%s", err.msg);

    progress_bar bar;
    progress_bar_init(&bar, "mkmodel");
    mk_stats st;
    pl_status s = mk_write(&c, out, progress_bar_cb, &bar, &st, &err);
    progress_bar_finish(&bar);
    if (s == PL_ERR_CANCELLED) return cli_errorf("mkmodel: interrupted; '%s' not written", out);
    if (s) return cli_fail(s, &err);
    char size[32];
    cli_format_size(size, sizeof size, st.file_bytes);
    printf("wrote %s: %s %s, %s%s, %" PRIu64 " tensors, %.2f M parameters, %" PRIu64
           " fallbacks, %s, %.2f s\n",
           out, preset, c.arch, pl_ftype_name(c.ftype), c.pure ? " (pure)" : "", st.n_tensors,
           (double)st.n_params / 1e6, st.n_fallback, size, pl_clock_s() - bar.t0);
    return CLI_EXIT_OK;
}
