"""make_tiny_models.py — tiny random Llama / Qwen2 / Qwen3 checkpoints saved by transformers
(save_pretrained) with a byte-level BPE tokenizer trained by `tokenizers`, plus the float32
logits transformers computes for fixed token ids: an outside oracle for `plumb convert`.
Usage: python3 make_tiny_models.py OUT_DIR (CPU is enough). The checked-in llama-bf16/ and qwen3/
were made with transformers 5.17.0, tokenizers 0.23.2, torch 2.11.0; check_oracle.sh compares.
Note: .to(torch.bfloat16) also rounds the RoPE inverse-frequency buffer, so the llama-bf16
reference logits carry that rounding (check_oracle.sh's bound for it says so)."""
import json
import os
import sys

import numpy as np
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, Qwen2Config,
                          Qwen2ForCausalLM)

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
text = ["The quick brown fox jumps over the lazy dog. " * 3,
        "Pack my box with five dozen liquor jugs! 12345 67890",
        "Sphinx of black quartz, judge my vow; héllo wörld — naïve café.",
        "def main():\n    return printf('%d\\n', 42)\n"] * 20

tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(text, trainer)
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|im_end|>",
                               pad_token="<|endoftext|>")
fast.chat_template = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
ids = [5, 17, 33, 100, 250, 7, 399, 1, 64, 128, 200, 301]

def save(name, model):
    d = os.path.join(out, name)
    model.save_pretrained(d, safe_serialization=True)
    fast.save_pretrained(d)
    with torch.no_grad():
        logits = model.float()(torch.tensor([ids])).logits[0].numpy()
    logits.astype("<f4").tofile(os.path.join(d, "logits.f32"))
    with open(os.path.join(d, "ids.txt"), "w") as f:
        f.write(",".join(map(str, ids)) + "\n")
    print(name, logits.shape, float(np.abs(logits).max()))

torch.manual_seed(3)
common = dict(vocab_size=len(tok.get_vocab()) + 20, hidden_size=64, intermediate_size=96,
              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0)
def randomize(m):
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "norm" in n:
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.08 * torch.randn_like(p))
    return m.eval()
save("llama", randomize(LlamaForCausalLM(LlamaConfig(**common, tie_word_embeddings=False))))
save("llama-tied", randomize(LlamaForCausalLM(LlamaConfig(**common, tie_word_embeddings=True))))
save("qwen2", randomize(Qwen2ForCausalLM(Qwen2Config(**common, tie_word_embeddings=False))))
try:
    from transformers import Qwen3Config, Qwen3ForCausalLM
    save("qwen3", randomize(Qwen3ForCausalLM(Qwen3Config(**common, head_dim=16, tie_word_embeddings=False))))
except ImportError as e:
    print("no qwen3:", e)
llama_bf16 = randomize(LlamaForCausalLM(LlamaConfig(**common))).to(torch.bfloat16)
save("llama-bf16", llama_bf16)
import transformers, tokenizers
print("transformers", transformers.__version__, "tokenizers", tokenizers.__version__, "torch", torch.__version__)
