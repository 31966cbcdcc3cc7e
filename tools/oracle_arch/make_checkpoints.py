"""make_checkpoints.py — tiny random checkpoints of real model configs (dimensions shrunk, every
structural feature kept), saved by transformers, with the float32 CPU logits transformers computes
for two fixed id sequences: the outside oracle of conformance/oracle_arch (README.md there).
Not a test: it only writes fixtures. Usage, from the repository root (the tokenizer files are
relative links to models/plumb-en-8m-hf, so OUT_DIR belongs inside this tree):
  python3 tools/oracle_arch/make_checkpoints.py conformance/oracle_arch [--summary F] [CASE ...]

Each case is tried with the config spelled several ways (legacy `rope_scaling` kwargs as hub
config.json files carry them, then transformers 5's `rope_parameters`); the first spelling whose
model has exactly the RoPE inverse frequencies the scaling's definition gives (computed here
independently) is kept, so a version that silently ignores a key cannot slip through. The saved
directory is reloaded with from_pretrained and the logits of the RELOADED model are the oracle
(and must equal the in-memory model's bit for bit). Ablations (the same weights with one
feature switched off) measure how far each feature moves the logits: an oracle is only as
sharp as that distance is large against the comparison bound."""
import copy
import json
import math
import os
import shutil
import struct
import sys
import traceback

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
TOK_DIR = os.path.join(HERE, "..", "..", "models", "plumb-en-8m-hf")
V = 4096          # the tokenizer's vocabulary (byte-level BPE, models/plumb-en-8m-hf)
SEQ_LENS = (20, 21)
SPECIAL = dict(bos_token_id=0, eos_token_id=0, pad_token_id=0)  # <|endoftext|> is id 0

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


def fixed_ids():
    rng = np.random.RandomState(27)
    seqs = []
    for i, n in enumerate(SEQ_LENS):
        ids = rng.randint(3, V, size=n).tolist()
        if i == 0:
            ids[0] = 0  # the first sequence begins with BOS, as the tokenizer would add it
        seqs.append(ids)
    return seqs


# ---- RoPE inverse frequencies from their definitions (float64), for verification -------------

def inv_default(base, dim):
    return 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))


def inv_linear(base, dim, factor):
    return inv_default(base, dim) / factor


def inv_llama3(base, dim, factor, low, high, old_ctx):
    inv = inv_default(base, dim)
    wavelen = 2 * math.pi / inv
    out = np.where(wavelen > old_ctx / low, inv / factor, inv)
    smooth = (old_ctx / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * out / factor + smooth * out
    medium = ~(wavelen < old_ctx / high) & ~(wavelen > old_ctx / low)
    return np.where(medium, smoothed, out), {
        "unchanged": int(np.sum(wavelen < old_ctx / high)),
        "smoothed": int(np.sum(medium)),
        "divided_by_factor": int(np.sum(wavelen > old_ctx / low)),
        "wavelengths": wavelen.tolist()}


def inv_yarn(base, dim, factor, orig, truncate, beta_fast=32.0, beta_slow=1.0):
    def corr_dim(rot):
        return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))
    lo, hi = corr_dim(beta_fast), corr_dim(beta_slow)
    if truncate:
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    if lo == hi:
        hi += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
    extra = 1 - ramp
    pos = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    return (1.0 / (factor * pos)) * (1 - extra) + (1.0 / pos) * extra


def inv_longrope(base, dim, factors):
    return 1.0 / (np.asarray(factors, dtype=np.float64) * base ** (np.arange(0, dim, 2) / dim))


# ---- the cases ---------------------------------------------------------------------------------

HD = 16  # head_dim of every case


def short_long_factors(n):
    short = [round(1.0 + 0.9 * i + 0.35 * i * i, 4) for i in range(n)]
    long = [round(1.1 * (2.0 ** i) + 0.07 * i, 4) for i in range(n)]
    return short, long


def spellings(base_kw, theta, scaling, extra_rp=None, style="plain"):
    """The ways one config can be written: legacy kwargs (rope_theta + rope_scaling with 'type'
    or 'rope_type'), then transformers 5's rope_parameters."""
    out = []
    if scaling is None:
        out.append(("rope_theta", dict(base_kw, rope_theta=theta)))
        out.append(("rope_parameters", dict(base_kw, rope_parameters=dict(
            {"rope_type": "default", "rope_theta": theta}, **(extra_rp or {})))))
        return out
    rtype = scaling["rope_type"]
    body = {k: v for k, v in scaling.items() if k != "rope_type"}
    if style == "phi3":  # Phi-3.5's config.json: {"type": "longrope", short_factor, long_factor}
        out.append(("rope_scaling{type}", dict(base_kw, rope_theta=theta,
                                               rope_scaling=dict({"type": rtype}, **body))))
    out.append(("rope_scaling{rope_type}", dict(base_kw, rope_theta=theta,
                                                rope_scaling=dict({"rope_type": rtype}, **body))))
    out.append(("rope_scaling{type}", dict(base_kw, rope_theta=theta,
                                           rope_scaling=dict({"type": rtype}, **body))))
    out.append(("rope_parameters", dict(base_kw, rope_parameters=dict(
        {"rope_type": rtype, "rope_theta": theta}, **body, **(extra_rp or {})))))
    return out


def gemma3_spellings(base_kw, scaling):
    out = []
    leg = dict(base_kw, rope_theta=1e6, rope_local_base_freq=1e4)
    if scaling is None:
        out.append(("rope_theta+rope_local_base_freq", leg))
    else:
        body = {k: v for k, v in scaling.items() if k != "rope_type"}
        out.append(("rope_theta+rope_local_base_freq+rope_scaling{rope_type}",
                    dict(leg, rope_scaling=dict({"rope_type": scaling["rope_type"]}, **body))))
    full = {"rope_type": "default", "rope_theta": 1e6} if scaling is None else \
        dict({"rope_theta": 1e6}, **scaling)
    out.append(("rope_parameters{full_attention,sliding_attention}", dict(base_kw, rope_parameters={
        "full_attention": full,
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}})))
    return out


def no_partial(kw, lr, orig):
    """Spellings of a longrope case for a Phi3 without partial_rotary_factor: all 16 dims
    rotate, 8 factors (README says when this was used)."""
    short, long = short_long_factors(8)
    lr8 = dict(lr, short_factor=short, long_factor=long)
    sp = spellings(kw, 10000.0, lr8, style="phi3",
                   extra_rp={"original_max_position_embeddings": orig})
    return [(n + " (no partial rotary)", k, {"global": inv_longrope(10000.0, HD, short)},
             {"global": inv_longrope(10000.0, HD, long)}) for n, k in sp]


def llama_kw(**kw):
    base = dict(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, head_dim=HD, rms_norm_eps=1e-5,
                hidden_act="silu", attention_bias=False, mlp_bias=False, **SPECIAL)
    base.update(kw)
    return base


def cases():
    from transformers import LlamaConfig, LlamaForCausalLM
    C = {}
    # Control: what plumb runs today (llama, default RoPE, tied).
    C["llama-plain"] = dict(
        cls=("LlamaConfig", "LlamaForCausalLM"),
        spell=spellings(llama_kw(max_position_embeddings=2048, tie_word_embeddings=True),
                        10000.0, None),
        expect={"global": inv_default(10000.0, HD)}, ablate={})
    # Llama 3.1 / 3.2: llama3 rope_scaling, theta 500000, tied (3.2 1B/3B).
    l3 = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}
    inv_l3, l3_bands = inv_llama3(500000.0, HD, 32.0, 1.0, 4.0, 8192)
    C["llama31-rope-llama3"] = dict(
        cls=("LlamaConfig", "LlamaForCausalLM"),
        spell=spellings(llama_kw(max_position_embeddings=131072, tie_word_embeddings=True),
                        500000.0, l3),
        expect={"global": inv_l3}, notes={"llama3_bands": l3_bands},
        ablate={"no_rope_scaling": ("strip_scaling",)})
    # DeepSeek-Coder: linear factor 4, theta 100000, MHA, untied.
    lin = {"rope_type": "linear", "factor": 4.0}
    C["llama-rope-linear"] = dict(
        cls=("LlamaConfig", "LlamaForCausalLM"),
        spell=spellings(llama_kw(num_key_value_heads=2, max_position_embeddings=16384,
                                 tie_word_embeddings=False), 100000.0, lin),
        expect={"global": inv_linear(100000.0, HD, 4.0)},
        ablate={"no_rope_scaling": ("strip_scaling",)})
    # Qwen2.5 long context: yarn factor 4 over 32768 (max_position_embeddings 131072 = 4 x
    # 32768, so transformers' factor-from-ratio rule gives the same 4), q/k/v biases, tied.
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    C["qwen2-rope-yarn"] = dict(
        cls=("Qwen2Config", "Qwen2ForCausalLM"),
        spell=spellings(dict(vocab_size=V, hidden_size=32, intermediate_size=64,
                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                             rms_norm_eps=1e-6, hidden_act="silu", max_position_embeddings=131072,
                             use_sliding_window=False, tie_word_embeddings=True, **SPECIAL),
                        1000000.0, yarn),
        expect={"global": ("yarn", [inv_yarn(1e6, HD, 4.0, 32768, True),
                                    inv_yarn(1e6, HD, 4.0, 32768, False)],
                           inv_default(1e6, HD))},
        expect_scale=0.1 * math.log(4.0) + 1.0,
        ablate={"no_rope_scaling": ("strip_scaling",)})
    # Gemma 2 (2B shape): soft-caps 50 / 30, query_pre_attn_scalar = head_dim, alternating
    # sliding (even layers) / global layers with a window of 8 tokens, GeGLU (tanh), tied.
    g2 = dict(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
              num_attention_heads=4, num_key_value_heads=2, head_dim=HD,
              hidden_activation="gelu_pytorch_tanh", max_position_embeddings=8192,
              rms_norm_eps=1e-6, attention_bias=False, query_pre_attn_scalar=HD,
              sliding_window=8, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
              tie_word_embeddings=True, **SPECIAL)
    C["gemma2"] = dict(
        cls=("Gemma2Config", "Gemma2ForCausalLM"), gemma=True, qk_gain=3.0,
        spell=spellings(g2, 10000.0, None),
        expect={"global": inv_default(10000.0, HD)},
        expect_layers=["sliding_attention", "full_attention"] * 2,
        ablate={"no_attn_softcap": ("set", {"attn_logit_softcapping": None}),
                "no_final_softcap": ("set", {"final_logit_softcapping": None}),
                "no_sliding_window": ("set", {"sliding_window": 4096})})
    # Gemma 3 1B: q/k norms, 5 local : 1 global (6 layers: layer 5 global), window 8, local
    # RoPE base 10000, global 1e6, no scaling; pre/post norms, sqrt(hidden) embedding scale.
    g3 = dict(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=6,
              num_attention_heads=4, num_key_value_heads=2, head_dim=HD,
              hidden_activation="gelu_pytorch_tanh", max_position_embeddings=32768,
              rms_norm_eps=1e-6, attention_bias=False, query_pre_attn_scalar=HD,
              sliding_window=8, final_logit_softcapping=None, attn_logit_softcapping=None,
              tie_word_embeddings=True, **SPECIAL)
    g3_layers = ["sliding_attention"] * 5 + ["full_attention"]
    C["gemma3"] = dict(
        cls=("Gemma3TextConfig", "Gemma3ForCausalLM"), gemma=True,
        spell=gemma3_spellings(g3, None),
        expect={"global": inv_default(1e6, HD), "local": inv_default(1e4, HD)},
        expect_layers=g3_layers,
        ablate={"no_sliding_window": ("set", {"sliding_window": 4096}),
                "local_base_equals_global": ("local_base", 1e6)})
    # Gemma 3 4B+: the global layers' linear factor 8 (local layers unscaled).
    C["gemma3-rope-linear"] = dict(
        cls=("Gemma3TextConfig", "Gemma3ForCausalLM"), gemma=True,
        spell=gemma3_spellings(dict(g3, max_position_embeddings=131072),
                               {"rope_type": "linear", "factor": 8.0}),
        expect={"global": inv_linear(1e6, HD, 8.0), "local": inv_default(1e4, HD)},
        expect_layers=g3_layers,
        ablate={"no_rope_scaling": ("strip_scaling",),
                "no_sliding_window": ("set", {"sliding_window": 4096})})
    # Phi-3-mini-4k: fused qkv_proj / gate_up_proj, MHA, untied, sliding_window 2047 as its
    # config.json has it (no effect on 22 tokens).
    p3 = dict(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
              num_attention_heads=2, num_key_value_heads=2, hidden_act="silu",
              max_position_embeddings=4096, original_max_position_embeddings=4096,
              rms_norm_eps=1e-5, sliding_window=2047, tie_word_embeddings=False, **SPECIAL)
    C["phi3"] = dict(cls=("Phi3Config", "Phi3ForCausalLM"),
                     spell=spellings(p3, 10000.0, None),
                     expect={"global": inv_default(10000.0, HD)}, ablate={})
    # Phi-3.5-mini's longrope (short/long factors, original 4096, max 131072) with Phi-4-mini's
    # partial_rotary_factor 0.75 (12 of 16 dims rotate: 6 factors), GQA and tied embeddings.
    # Sequences of 22 <= 4096 tokens: transformers uses short_factor.
    short, long = short_long_factors(6)
    p4 = dict(p3, num_key_value_heads=1, max_position_embeddings=131072,
              original_max_position_embeddings=4096, sliding_window=262144,
              tie_word_embeddings=True)
    lr = {"rope_type": "longrope", "short_factor": short, "long_factor": long}
    C["phi3-longrope"] = dict(
        cls=("Phi3Config", "Phi3ForCausalLM"), partial=0.75,
        spell=[(n + "+partial_rotary_factor", dict(kw, partial_rotary_factor=0.75))
               for n, kw in spellings(p4, 10000.0, lr, style="phi3",
                                      extra_rp={"original_max_position_embeddings": 4096,
                                                "partial_rotary_factor": 0.75})],
        expect={"global": inv_longrope(10000.0, 12, short)},
        fallback=no_partial(p4, lr, 4096),
        expect_scale=math.sqrt(1 + math.log(131072 / 4096) / math.log(4096)),
        ablate={"no_rope_scaling": ("strip_scaling",)})
    # The same with the context shrunk (original 16, max 512: factor 32 as above) so that the
    # 20- and 22-token sequences exceed it and transformers uses long_factor, as llama.cpp does
    # for any context window above original_max_position_embeddings.
    p4l = dict(p4, max_position_embeddings=512, original_max_position_embeddings=16)
    C["phi3-longrope-long"] = dict(
        cls=("Phi3Config", "Phi3ForCausalLM"), partial=0.75,
        spell=[(n + "+partial_rotary_factor", dict(kw, partial_rotary_factor=0.75))
               for n, kw in spellings(p4l, 10000.0, lr, style="phi3",
                                      extra_rp={"original_max_position_embeddings": 16,
                                                "partial_rotary_factor": 0.75})],
        # the buffer at rest holds short_factor; long_factor is swapped in on forward
        expect={"global": inv_longrope(10000.0, 12, short)},
        expect_forward={"global": inv_longrope(10000.0, 12, long)},
        fallback=no_partial(p4l, lr, 16),
        expect_scale=math.sqrt(1 + math.log(512 / 16) / math.log(16)),
        ablate={"no_rope_scaling": ("strip_scaling",)})
    # Mixtures of experts (issue 33), 8 experts of which 2 are used, every layer sparse.
    # Mixtral-8x7B: llama with experts intermediate_size wide, top-2 renormalised, untied.
    moe = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               num_key_value_heads=1, head_dim=HD, rms_norm_eps=1e-6, hidden_act="silu",
               max_position_embeddings=4096, tie_word_embeddings=False, **SPECIAL)
    C["mixtral"] = dict(
        cls=("MixtralConfig", "MixtralForCausalLM"), moe=True,
        spell=spellings(dict(moe, intermediate_size=64, num_local_experts=8,
                             num_experts_per_tok=2, sliding_window=None), 1e6, None),
        expect={"global": inv_default(1e6, HD)}, ablate={})
    # Qwen1.5-MoE-A2.7B: q/k/v biases, experts of moe_intermediate_size, top-k NOT
    # renormalised (norm_topk_prob false), a shared expert behind a sigmoid gate.
    C["qwen2moe"] = dict(
        cls=("Qwen2MoeConfig", "Qwen2MoeForCausalLM"), moe=True,
        spell=spellings(dict(moe, intermediate_size=64, moe_intermediate_size=32,
                             shared_expert_intermediate_size=48, num_experts=8,
                             num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=1,
                             mlp_only_layers=[], use_sliding_window=False), 1e6, None),
        expect={"global": inv_default(1e6, HD)},
        ablate={"norm_topk_prob": ("set", {"norm_topk_prob": True})})
    # Qwen3-30B-A3B: q/k norms, no biases, top-k renormalised (norm_topk_prob true).
    C["qwen3moe"] = dict(
        cls=("Qwen3MoeConfig", "Qwen3MoeForCausalLM"), moe=True,
        spell=spellings(dict(moe, intermediate_size=64, moe_intermediate_size=32, num_experts=8,
                             num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1,
                             mlp_only_layers=[], attention_bias=False,
                             use_sliding_window=False), 1e6, None),
        expect={"global": inv_default(1e6, HD)},
        ablate={"no_norm_topk_prob": ("set", {"norm_topk_prob": False})})
    # ---- issue 49: the next families (dimensions shrunk, every structural feature kept) ----
    fam = dict(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=2, num_key_value_heads=1, hidden_act="silu",
               max_position_embeddings=4096, **SPECIAL)
    # SmolLM3-3B: llama with every 4th layer without RoPE (no_rope_layers: 1 = RoPE, 0 = NoPE).
    C["smollm3"] = dict(
        cls=("SmolLM3Config", "SmolLM3ForCausalLM"),
        spell=spellings(dict(fam, num_hidden_layers=4, rms_norm_eps=1e-6,
                             no_rope_layers=[1, 1, 1, 0], no_rope_layer_interval=4,
                             use_sliding_window=False, attention_bias=False, mlp_bias=False,
                             tie_word_embeddings=True), 2000000.0, None),
        expect={"global": inv_default(2e6, HD)},
        ablate={"rope_everywhere": ("set", {"no_rope_layers": [1, 1, 1, 1]})})
    # OLMo 2 (7B/13B MHA, 32B GQA): no pre-norms; RMSNorm after attention and after the MLP,
    # q/k norms over the whole projection (heads x head_dim), untied.
    C["olmo2"] = dict(
        cls=("Olmo2Config", "Olmo2ForCausalLM"),
        spell=spellings(dict(fam, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                             rms_norm_eps=1e-6, attention_bias=False,
                             tie_word_embeddings=False), 500000.0, None),
        expect={"global": inv_default(5e5, HD)}, ablate={})
    # Granite 3.x: embedding, residual, attention and logit multipliers (3.1 8B: 12, 0.22,
    # 1/128, 16), tied.
    gr = dict(fam, rms_norm_eps=1e-5, attention_bias=False, mlp_bias=False,
              tie_word_embeddings=True, embedding_multiplier=12.0, residual_multiplier=0.22,
              attention_multiplier=0.0625, logits_scaling=2.0)
    C["granite"] = dict(
        cls=("GraniteConfig", "GraniteForCausalLM"),
        spell=spellings(gr, 10000.0, None),
        expect={"global": inv_default(1e4, HD)},
        ablate={"no_multipliers": ("set", {"embedding_multiplier": 1.0,
                                           "residual_multiplier": 1.0,
                                           "attention_multiplier": HD ** -0.5,
                                           "logits_scaling": 1.0})})
    # Command R7B: LayerNorm (mean-centred, no bias), attention and MLP in parallel from one
    # norm, 3 sliding layers : 1 global, the global layers without RoPE, logit_scale, tied.
    c2_layers = ["sliding_attention"] * 3 + ["full_attention"]
    C["cohere2"] = dict(
        cls=("Cohere2Config", "Cohere2ForCausalLM"),
        spell=spellings(dict(fam, num_hidden_layers=4, num_attention_heads=2,
                             num_key_value_heads=1, layer_norm_eps=1e-5, logit_scale=0.5,
                             sliding_window=8, layer_types=c2_layers, attention_bias=False,
                             tie_word_embeddings=True), 50000.0, None),
        expect={"global": inv_default(5e4, HD)}, expect_layers=c2_layers,
        ablate={"no_sliding_window": ("set", {"sliding_window": 4096}),
                "logit_scale_1": ("set", {"logit_scale": 1.0})})
    # EXAONE 4.0 32B: post-norms with per-head q/k norms, 3 sliding : 1 global, the global
    # layers without RoPE, untied.
    C["exaone4"] = dict(
        cls=("Exaone4Config", "Exaone4ForCausalLM"),
        spell=spellings(dict(fam, num_hidden_layers=4, head_dim=HD, rms_norm_eps=1e-5,
                             sliding_window=8, sliding_window_pattern=4, layer_types=c2_layers,
                             tie_word_embeddings=False), 1000000.0, None),
        expect={"global": inv_default(1e6, HD)}, expect_layers=c2_layers,
        ablate={"no_sliding_window": ("set", {"sliding_window": 4096})})
    # GLM-4-9B-0414: partial rotary (half of head_dim), q/k/v biases, fused gate_up_proj,
    # norms after attention and after the MLP as well as before, GQA, untied.
    C["glm4"] = dict(
        cls=("Glm4Config", "Glm4ForCausalLM"), partial=0.5,
        spell=[(n + "+partial_rotary_factor", dict(kw, partial_rotary_factor=0.5))
               for n, kw in spellings(dict(fam, num_attention_heads=4, num_key_value_heads=2,
                                           head_dim=HD, rms_norm_eps=1e-5, attention_bias=True,
                                           tie_word_embeddings=False), 10000.0, None,
                                      extra_rp={"partial_rotary_factor": 0.5})],
        expect={"global": inv_default(1e4, HD // 2)}, ablate={})
    # gpt-oss-20b: 8 experts (32 in the release), top-4 with a router bias and a softmax over
    # the chosen four, expert and attention biases, learned attention sinks, sliding (even) /
    # full layers, YaRN factor 32 over 4096 (truncate false), the clamped SwiGLU; the experts
    # are saved as MXFP4 blocks and scales as the released checkpoint holds them ("gpt-oss"),
    # or dense as transformers saves them ("gpt-oss-dense", the layout of BF16 re-releases).
    go_layers = ["sliding_attention", "full_attention"] * 2
    go_yarn = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
               "truncate": False, "original_max_position_embeddings": 4096}
    go = dict(fam, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
              head_dim=HD, intermediate_size=64, num_local_experts=8, num_experts_per_tok=4,
              rms_norm_eps=1e-5, sliding_window=8, layer_types=go_layers, attention_bias=True,
              max_position_embeddings=131072, swiglu_limit=7.0, tie_word_embeddings=False)
    for nm, mx in (("gpt-oss", True), ("gpt-oss-dense", False)):
        C[nm] = dict(
            cls=("GptOssConfig", "GptOssForCausalLM"), gptoss=True, mxfp4=mx,
            spell=spellings(go, 150000.0, go_yarn),
            expect={"global": ("yarn", [inv_yarn(150000.0, HD, 32.0, 4096, False)],
                               inv_default(150000.0, HD))},
            expect_scale=0.1 * math.log(32.0) + 1.0, expect_layers=go_layers,
            ablate={"no_sliding_window": ("set", {"sliding_window": 4096}),
                    "no_rope_scaling": ("rope_default", 150000.0)})
    return C


# ---- MXFP4 (OCP microscaling: 32 E2M1 values sharing one E8M0 scale) -------------------------

FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float64)


def mxfp4_quantize(w):
    """w: (..., K) float, K a multiple of 32. Returns (blocks uint8 (..., K/32, 16), scales uint8
    (..., K/32), dequantized float32 (..., K)) in transformers' checkpoint layout: byte j of a
    block holds element 2j in its low nibble, 2j+1 in its high nibble; value = FP4[code] *
    2^(scale - 127). The scale puts the block's largest magnitude at or under 6; each value
    takes the nearest level (ties to the lower code)."""
    w = np.asarray(w, dtype=np.float64)
    blk = w.reshape(w.shape[:-1] + (w.shape[-1] // 32, 32))
    amax = np.abs(blk).max(-1)
    e = np.where(amax > 0, np.ceil(np.log2(np.maximum(amax, 1e-30) / 6.0)), 0).astype(np.int64)
    e = np.clip(e, -127, 127)
    x = blk / np.ldexp(1.0, e)[..., None]
    codes = np.abs(x[..., None] - FP4[None, :]).argmin(-1).astype(np.uint8)
    deq = FP4[codes] * np.ldexp(1.0, e)[..., None]
    packed = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    return packed, (e + 127).astype(np.uint8), deq.reshape(w.shape).astype(np.float32)


def mxfp4_experts(model):
    """Replaces every expert weight by its MXFP4 round trip (the model then IS the quantized
    one) and returns the hub tensors {name_blocks, name_scales} for each, checked against
    transformers' own unpacking (integrations.mxfp4.convert_moe_packed_tensors)."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    hub = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim != 3 or not name.endswith(("gate_up_proj", "down_proj")):
                continue
            rows = p.detach().double().numpy().transpose(0, 2, 1)  # (E, out, in)
            blocks, scales, deq = mxfp4_quantize(rows)
            p.copy_(torch.from_numpy(deq.transpose(0, 2, 1).copy()))
            back = convert_moe_packed_tensors(torch.from_numpy(blocks), torch.from_numpy(scales),
                                              dtype=torch.float32)
            if not torch.equal(back, p.detach()):
                raise RuntimeError("MXFP4 packing of %s disagrees with transformers" % name)
            hub[name + "_blocks"] = torch.from_numpy(blocks)
            hub[name + "_scales"] = torch.from_numpy(scales)
    return hub


def hubify_mxfp4(d, hub):
    from safetensors.torch import load_file, save_file
    path = os.path.join(d, "model.safetensors")
    sd = load_file(path)
    out = {k: v.contiguous() for k, v in sd.items() if k not in
           {h[: -len("_blocks")] for h in hub if h.endswith("_blocks")}}
    out.update({k: v.contiguous() for k, v in hub.items()})
    save_file(out, path, metadata={"format": "pt"})
    cp = os.path.join(d, "config.json")
    cfg = json.load(open(cp))
    cfg["quantization_config"] = {
        "quant_method": "mxfp4",
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                   "model.embed_tokens", "lm_head"]}
    with open(cp, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)


# ---- building, checking, saving ------------------------------------------------------------------

def rope_buffers(model):
    out = {}
    for name, b in model.named_buffers():
        if name.endswith("inv_freq") and "original" not in name and "long_inv_freq" not in name:
            out[name] = b.detach().double().cpu().numpy().copy()
    return out


def scalings(model):
    out = {}
    for name, mod in model.named_modules():
        for attr in ("attention_scaling",):
            if hasattr(mod, attr) and not callable(getattr(mod, attr)):
                v = getattr(mod, attr)
                out[name + "." + attr] = v if isinstance(v, (int, float)) else str(v)
        for attr in dir(mod):  # transformers 5 keeps one scaling per layer type
            if attr.endswith("_attention_scaling"):
                v = getattr(mod, attr)
                if isinstance(v, (int, float)):
                    out[name + "." + attr] = v
    return out


LOOSE = []  # yarn buffers accepted only as "scaled" (matching neither truncate variant)


def match(vec, want):
    if isinstance(want, tuple):  # ("yarn", [alternatives], unscaled default)
        if any(match(vec, w) for w in want[1]):
            return True
        if vec.shape == want[2].shape and not np.allclose(vec, want[2], rtol=1e-3, atol=0):
            LOOSE.append(vec.tolist())
            return True
        return False
    return vec.shape == want.shape and np.allclose(vec, want, rtol=2e-6, atol=0)


def check_rope(model, expect):
    bufs = rope_buffers(model)
    if not bufs:
        return False, "no inv_freq buffer"
    for label, want in expect.items():
        if not any(match(b, want) for b in bufs.values()):
            return False, "no buffer matches the %s definition; buffers: %s" % (
                label, {k: v.tolist() for k, v in bufs.items()})
    for name, b in bufs.items():
        if not any(match(b, w) for w in expect.values()):
            return False, "buffer %s = %s matches no expected vector" % (name, b.tolist())
    return True, {k: v.tolist() for k, v in bufs.items()}


def build(case, kw):
    cfg_cls = getattr(transformers, case["cls"][0])
    mdl_cls = getattr(transformers, case["cls"][1])
    kw = dict(kw, attn_implementation="eager")
    cfg = cfg_cls(**kw)
    try:
        cfg._attn_implementation = "eager"
    except Exception:
        pass
    torch.manual_seed(0)
    model = mdl_cls(cfg).eval().float()
    return cfg, model


def randomize(model, case, seed):
    """Peaked logits: linear weights N(0, 1/fan_in), q/k rows times qk_gain (large attention
    scores, so RoPE and soft-capping move them visibly), embeddings and lm_head N(0, 1), biases
    N(0, 0.2^2), norm weights 1 + N(0, 0.1^2) — for Gemma, whose RMSNorm multiplies by (1 + w),
    w = N(0, 0.1^2)."""
    g = torch.Generator().manual_seed(seed)
    gain = case.get("qk_gain", 1.5)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if name.endswith("sinks"):  # gpt-oss: one logit per head joining the softmax
                p.copy_(2.0 * r)
            elif "norm" in name and p.ndim == 1:
                p.copy_(0.1 * r if case.get("gemma") else 1 + 0.1 * r)
            elif name.endswith("bias"):
                p.copy_(0.2 * r)
            elif "embed_tokens" in name or "lm_head" in name:
                p.copy_(r)
            elif p.ndim == 3 and case.get("gptoss"):  # GptOssExperts: (experts, in, out)
                p.copy_(r / math.sqrt(p.shape[1]))
            elif p.ndim == 3:  # fused experts (transformers 5): (experts, out, in)
                p.copy_(r / math.sqrt(p.shape[2]))
            elif p.ndim == 2:
                w = r / math.sqrt(p.shape[1])
                if name.endswith(("q_proj.weight", "k_proj.weight")):
                    w *= gain
                elif name.endswith("qkv_proj.weight"):  # Phi-3: rows q (H*D), k (KV*D), v
                    cfg = model.config
                    nq = cfg.num_attention_heads * (cfg.hidden_size // cfg.num_attention_heads)
                    nk = cfg.num_key_value_heads * (cfg.hidden_size // cfg.num_attention_heads)
                    w[: nq + nk] *= gain
                p.copy_(w)
            else:
                raise RuntimeError("no init rule for %s %s" % (name, tuple(p.shape)))
    return model


def logits_of(model, seqs):
    out = []
    with torch.no_grad():
        for ids in seqs:
            l = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0]
            out.append(l.detach().float().cpu().numpy().astype("<f4"))
    return out


def max_diff(a, b):
    return float(max(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))
                     for x, y in zip(a, b)))


def ablated_kwargs(kw, how):
    kw = copy.deepcopy(kw)
    op = how[0]
    if op == "set":
        kw.update(how[1])
    elif op == "strip_scaling":
        kw.pop("rope_scaling", None)
        rp = kw.get("rope_parameters")
        if rp is not None:
            def strip(d):
                if "rope_type" in d:
                    keep = {"rope_type": "default", "rope_theta": d["rope_theta"]}
                    if "partial_rotary_factor" in d:
                        keep["partial_rotary_factor"] = d["partial_rotary_factor"]
                    return keep
                return {k: strip(v) for k, v in d.items()}
            kw["rope_parameters"] = strip(rp)
    elif op == "rope_default":  # a config class whose default is itself a scaling (gpt-oss)
        kw.pop("rope_scaling", None)
        kw.pop("rope_theta", None)
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": how[1]}
    elif op == "local_base":
        if "rope_parameters" in kw:
            kw["rope_parameters"]["sliding_attention"]["rope_theta"] = how[1]
        else:
            kw["rope_local_base_freq"] = how[1]
    return kw


def layer_types(model, cfg):
    lt = getattr(cfg, "layer_types", None)
    per_layer = []
    for layer in model.model.layers:
        a = layer.self_attn
        info = {}
        for attr in ("is_sliding", "sliding_window", "attention_type"):
            for obj in (a, layer):
                if hasattr(obj, attr) and not callable(getattr(obj, attr)):
                    v = getattr(obj, attr)
                    info[attr] = v if isinstance(v, (bool, int, float, str, type(None))) else str(v)
        per_layer.append(info)
    return (list(lt) if lt is not None else None), per_layer


def write_plor(path, seqs, logits):
    with open(path, "wb") as f:
        f.write(b"PLOR" + struct.pack("<III", 1, len(seqs), V))
        for ids, l in zip(seqs, logits):
            assert l.shape == (len(ids), V)
            f.write(struct.pack("<I", len(ids)))
            f.write(np.asarray(ids, dtype="<i4").tobytes())
            f.write(np.ascontiguousarray(l, dtype="<f4").tobytes())


def hubify_experts(d, case):
    """Rewrites a saved MoE checkpoint with its experts as the released checkpoints on the hub
    hold them (model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight; Mixtral's
    block_sparse_moe.experts.E.w1/w3/w2.weight), whatever layout this transformers version
    saves (version 5 keeps the experts fused in 3-D tensors). The reloaded model's logits are
    the oracle, so a wrong split would show as a mismatch against the in-memory model."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(d, "model.safetensors")
    sd = load_file(path)
    out = {}
    mixtral = case["cls"][1] == "MixtralForCausalLM"
    for k, v in sd.items():
        if v.ndim != 3:
            out[k] = v.contiguous()
            continue
        # fused layouts: experts.gate_up_proj (X, 2F, E) or (X, E, 2F); experts.down_proj
        pre = k.rsplit("experts.", 1)[0] + "experts."
        X = v.shape[0]
        names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
        for e in range(X):
            m = v[e]
            if k.endswith("gate_up_proj"):
                if m.shape[1] == model_hidden(sd):  # (2F, E) expected: out x in
                    g, u = m.chunk(2, dim=0)
                else:  # (E, 2F)
                    g, u = m.t().chunk(2, dim=0)
                out[pre + "%d.%s.weight" % (e, names[0])] = g.contiguous()
                out[pre + "%d.%s.weight" % (e, names[1])] = u.contiguous()
            elif k.endswith("down_proj"):
                dn = m if m.shape[0] == model_hidden(sd) else m.t()
                out[pre + "%d.%s.weight" % (e, names[2])] = dn.contiguous()
            else:
                raise RuntimeError("unknown fused tensor %s %s" % (k, tuple(v.shape)))
    if mixtral:  # transformers 5 may name Mixtral's block mlp; the hub says block_sparse_moe
        out = {k.replace(".mlp.experts.", ".block_sparse_moe.experts.")
                .replace(".mlp.gate.", ".block_sparse_moe.gate."): v for k, v in out.items()}
    save_file(out, path, metadata={"format": "pt"})


def model_hidden(sd):
    return sd["model.embed_tokens.weight"].shape[1]


def from_pretrained(cls, d):
    try:
        return cls.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
    except TypeError:
        return cls.from_pretrained(d, torch_dtype=torch.float32, attn_implementation="eager").eval()


RELOAD_NOTES = []


def reload_mxfp4(cls, d, model):
    """The MXFP4 checkpoint reloaded by transformers with dequantize=True where this version
    can on the CPU; otherwise the in-memory model (whose expert weights are the exact MXFP4
    values, checked against transformers' unpacking when the hub tensors were made)."""
    try:
        q = transformers.Mxfp4Config(dequantize=True)
        m = cls.from_pretrained(d, dtype=torch.float32, attn_implementation="eager",
                                quantization_config=q).eval().float()
        RELOAD_NOTES.append("reloaded with Mxfp4Config(dequantize=True)")
        return m
    except Exception as e:
        RELOAD_NOTES.append("reload with Mxfp4Config(dequantize=True) failed (%s: %s); the "
                            "oracle is the in-memory model" % (type(e).__name__, str(e)[:200]))
        return model


def make_case(out, name, case, seed, seqs):
    errors = []
    for entry in case["spell"] + case.get("fallback", []):
        spelling, kw = entry[0], entry[1]
        if len(entry) > 2:  # a fallback spelling with its own expectations
            case = dict(case, expect=entry[2], partial=None)
            if "expect_forward" in case:
                case["expect_forward"] = entry[3]
        del LOOSE[:]
        try:
            cfg, model = build(case, kw)
            ok, info = check_rope(model, case["expect"])
            if not ok:
                errors.append("%s: %s" % (spelling, info))
                continue
            if "expect_layers" in case:
                lt, _ = layer_types(model, cfg)
                if lt is not None and lt != case["expect_layers"]:
                    errors.append("%s: layer_types %s" % (spelling, lt))
                    continue
            break
        except Exception as e:  # a spelling this version rejects
            errors.append("%s: %s: %s" % (spelling, type(e).__name__, str(e)[:300]))
    else:
        return {"name": name, "skipped": True, "errors": errors}
    randomize(model, case, seed)
    hub = mxfp4_experts(model) if case.get("mxfp4") else None
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    if hub:
        hubify_mxfp4(d, hub)
    if case.get("moe"):  # the hub's layout: one 2-D tensor per expert, as released checkpoints
        hubify_experts(d, case)
    # The tokenizer files are the demo model's, linked (relative) rather than copied: 10 copies
    # of a 264 kB tokenizer.json would be a fifth of the fixtures' bytes.
    for f in ("tokenizer.json", "tokenizer_config.json"):
        os.symlink(os.path.relpath(os.path.join(TOK_DIR, f), d), os.path.join(d, f))
    mem = logits_of(model, seqs)
    loose = list(LOOSE)
    mdl_cls = getattr(transformers, case["cls"][1])
    if hub:
        reloaded = reload_mxfp4(mdl_cls, d, model)
    else:
        reloaded = from_pretrained(mdl_cls, d).float()
    rest_ok, _ = check_rope(reloaded, case["expect"])
    rest_bufs = {k: v.tolist() for k, v in rope_buffers(reloaded).items()}
    ref = logits_of(reloaded, seqs)
    meta = {"name": name, "class": case["cls"][1], "spelling": spelling,
            "spellings_rejected": errors, "seed": seed,
            "attn_implementation": getattr(reloaded.config, "_attn_implementation", None),
            "reload_vs_memory_max_dlogit": max_diff(mem, ref),
            "rope_inv_freq": rest_bufs,
            "rope_unverified_scaled_buffers": loose,
            "partial_rotary_factor": case.get("partial"),
            "rope_attention_scaling": scalings(reloaded),
            "max_abs_logit": float(max(np.abs(l).max() for l in ref)),
            "mean_top1_prob": float(np.mean(np.concatenate([
                torch.softmax(torch.from_numpy(l).double(), -1).max(-1).values.numpy()
                for l in ref]))),
            "ids": seqs,
            "reload_notes": list(RELOAD_NOTES)}
    del RELOAD_NOTES[:]
    meta.update(case.get("notes", {}))
    meta["reloaded_rope_matches_definition"] = rest_ok
    if "expect_scale" in case:
        sc = list(meta["rope_attention_scaling"].values())
        meta["expected_attention_scaling"] = case["expect_scale"]
        meta["attention_scaling_matches"] = any(
            isinstance(v, float) and abs(v - case["expect_scale"]) < 1e-6 for v in sc)
    if "expect_forward" in case:  # the buffer after a forward over the sequence (longrope)
        ok, info = check_rope(reloaded, case["expect_forward"])
        meta["rope_after_forward_matches_long_factor"] = ok
        meta["rope_inv_freq_after_forward"] = info if ok else str(info)
    if "expect_layers" in case or case.get("gemma"):
        meta["layer_types"], meta["layers"] = layer_types(reloaded, reloaded.config)
    # transformers' own float32 error: the same model in float64
    try:
        m64 = copy.deepcopy(reloaded).double()
        with torch.no_grad():
            l64 = [m64(input_ids=torch.tensor([ids]), use_cache=False).logits[0].numpy()
                   for ids in seqs]
        meta["f32_vs_f64_max_dlogit"] = max_diff(ref, l64)
    except Exception as e:
        meta["f32_vs_f64_max_dlogit"] = "failed: %s" % e
    # how far each feature moves the logits (same weights, feature off)
    meta["ablation_max_dlogit"] = {}
    for label, how in case["ablate"].items():
        try:
            _, m2 = build(case, ablated_kwargs(kw, how))
            m2.load_state_dict(reloaded.state_dict(), strict=True)
            meta["ablation_max_dlogit"][label] = max_diff(ref, logits_of(m2, seqs))
        except Exception as e:
            meta["ablation_max_dlogit"][label] = "failed: %s: %s" % (type(e).__name__, e)
    write_plor(os.path.join(d, "logits.bin"), seqs, ref)
    meta["config"] = json.load(open(os.path.join(d, "config.json")))
    meta["bytes"] = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                        if not os.path.islink(os.path.join(d, f)))
    with open(os.path.join(d, "oracle.json"), "w") as f:
        json.dump({k: v for k, v in meta.items() if k != "config"}, f, indent=1)
    return meta


def main():
    out = sys.argv[1]
    summary_path = os.path.join(out, "summary.json")
    only = sys.argv[2:]
    if only[:1] == ["--summary"]:
        summary_path, only = only[1], only[2:]
    os.makedirs(out, exist_ok=True)
    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "numpy": np.__version__, "python": sys.version.split()[0]}
    print(json.dumps(versions))
    seqs = fixed_ids()
    summary = {"versions": versions, "cases": {}}
    for i, (name, case) in enumerate(cases().items()):
        if only and name not in only:
            continue
        try:
            if not hasattr(transformers, case["cls"][1]):
                meta = {"name": name, "skipped": True,
                        "errors": ["transformers %s has no %s" % (transformers.__version__,
                                                                  case["cls"][1])]}
            else:
                meta = make_case(out, name, case, 1000 + i, seqs)
        except Exception:
            meta = {"name": name, "skipped": True, "errors": [traceback.format_exc()]}
        summary["cases"][name] = meta
        brief = {k: meta.get(k) for k in ("spelling", "skipped", "reload_vs_memory_max_dlogit",
                                          "f32_vs_f64_max_dlogit", "ablation_max_dlogit",
                                          "max_abs_logit", "mean_top1_prob", "bytes",
                                          "attention_scaling_matches",
                                          "rope_after_forward_matches_long_factor", "layer_types")}
        print(name, json.dumps(brief))
        if meta.get("skipped"):
            print("  errors:", json.dumps(meta["errors"], indent=1))
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
