"""make_tok_fixtures.py — tokenizer parity fixtures for Qwen2's and Llama 3's byte-level BPE
configurations: small vocabularies trained by `tokenizers` with exactly their tokenizer.json
pipeline (normalizer, Split regex + ByteLevel, ignore_merges), each saved with a tiny random model
so `plumb convert` reads the directory, plus tokenizer_parity.jsonl (text -> ids from `tokenizers`).
Usage: python3 make_tok_fixtures.py CORPUS_TRAIN CORPUS_HELDOUT OUT_DIR   (CPU is enough)."""
import json
import os
import sys

import torch
from tokenizers import (Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,
                        processors, trainers)
from transformers import (LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, Qwen2Config,
                          Qwen2ForCausalLM)

train_path, heldout_path, out = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# ~2 MB of training text, whole lines.
train = []
size = 0
with open(train_path, encoding="utf-8") as f:
    for line in f:
        train.append(line)
        size += len(line.encode("utf-8"))
        if size >= 2_000_000:
            break

heldout = []
with open(heldout_path, encoding="utf-8") as f:
    for line in f:
        line = line.rstrip("\n")
        if line.strip():
            heldout.append(line)
        if len(heldout) == 200:
            break

HARD = [
    # decomposed accents (NFC composes them for qwen2; llama3 keeps them)
    "cafe\u0301", "e\u0301", "A\u030Angstro\u0308m", "\u1100\u1161\u11A8", "\u1112\u1161\u11AB\u1100\u116E\u11AF",
    "\u212B", "\u212Bngstr\u00F6m 5\u212B", "Cafe\u0301 Re\u0301sume\u0301",
    # already composed
    "caf\u00E9", "\u00C5ngstr\u00F6m", "\uAC01", "\uD55C\uAD6D\uC5B4", "na\u00EFve r\u00E9sum\u00E9",
    # NFKC-sensitive (NFC must leave them)
    "\uFB01nance", "x\u00B2 + y\u00B3 = z\u2074", "\uFF28\uFF45\uFF4C\uFF4C\uFF4F \uFF11\uFF12\uFF13",
    "\u2460\u2461 \u00BD \u2126 \u212A", "\u3300 \u337F",
    # whitespace runs
    "a  b   c    d", "a\tb\t\tc", "line1\r\nline2\r\n\r\nline3", "\u3000\u3000full\u3000width",
    "a\u00A0b\u00A0\u00A0c", "  \n\n  \t x", "x \n", "\n", "\r\n", "\t", "   ", " \u00A0 ",
    "a\u2009b\u202Fc\u205Fd", "a\u180Eb", "end.\n\n\nNext",
    # digit runs
    "1", "12", "123", "1234", "1234567", "3.14159", "12,345,678", "x1234y", "\u0661\u0662\u0663\u0664",
    "\uFF11\uFF12\uFF13\uFF14", "\u00B2\u00B3", "v2.0.10-rc1",
    # contractions
    "I'M here", "don't", "you'RE", "I'm", "WE'LL", "she'S", "they'Ve", "he'D", "It'S ok'",
    "rock 'n' roll", "''s", "x's'", "DON'T YOU'LL",
    # emoji
    "\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",
    "\U0001F3F3\uFE0F\u200D\U0001F308", "hi \U0001F44B\U0001F3FF there", "\u2764\uFE0F", "\U0001F1EF\U0001F1F5",
    # CJK, Arabic, other scripts
    "\u4F60\u597D\uFF0C\u4E16\u754C\uFF01", "\u6771\u4EAC\u306F\u65E5\u672C\u306E\u9996\u90FD\u3067\u3059\u3002",
    "\u0645\u0631\u062D\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0627\u0644\u0633\u0651\u064E\u0644\u0627\u0645\u064F", "\u05E9\u05DC\u05D5\u05DD", "\u041F\u0440\u0438\u0432\u0435\u0442 \u043C\u0438\u0440",
    "\u0928\u092E\u0938\u094D\u0924\u0947", "\u0E2A\u0E27\u0E31\u0E2A\u0E14\u0E35",
    # stacked combining marks
    "a\u0301\u0302\u0303\u0304", "Z\u0351\u036B\u0343\u036A\u0302\u036B\u033D\u034F\u0334\u0319\u0324",
    "o\u0328\u0304", "q\u0307\u0323", "\u0301", " \u0301x", "\u1E9B\u0323",
    # leading/trailing spaces
    " hello", "hello ", "  hello  ", " ", "\thello\t", "hello\n",
    # special-token strings inside text
    "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>\n", "a<|endoftext|>b",
    "<|begin_of_text|>Hello<|eot_id|>", "x <|end_of_text|> y", "<|im_start|><|im_start|>",
    "<|endoftext", "<|eot_id|",
    # punctuation and code
    "def f(x):\n    return x**2  # sq\n", "!!!???...", "a--b__c", "\"quoted\" 'single'", "$100.00!",
    "http://example.com/a?b=c&d=e", "\\n\\t", "{\"k\": [1, 2]}",
    # empty
    "",
]


def build(pattern, norm, ignore_merges, specials):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges, byte_fallback=False))
    if norm:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(train, trainer)
    # Pin the model fields the trainer might not carry over.
    j = json.loads(tok.to_str())
    j["model"]["ignore_merges"] = ignore_merges
    j["model"]["byte_fallback"] = False
    j["pre_tokenizer"]["pretokenizers"][1]["trim_offsets"] = False
    tok = Tokenizer.from_str(json.dumps(j))
    return tok


def tiny(cls, cfg_cls, n_vocab, **kw):
    torch.manual_seed(7)
    cfg = cfg_cls(vocab_size=n_vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                  rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=True, **kw)
    m = cls(cfg)
    with torch.no_grad():
        for n, p in m.named_parameters():
            p.copy_(1 + 0.1 * torch.randn_like(p) if "norm" in n else 0.08 * torch.randn_like(p))
    return m.float().eval()


def make(name, pattern, norm, ignore_merges, specials, post, cls, cfg_cls, tok_kw, cfg_kw):
    d = os.path.join(out, name)
    tok = build(pattern, norm, ignore_merges, specials)
    tok.post_processor = post(tok)
    n_vocab = tok.get_vocab_size(with_added_tokens=True)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **tok_kw)
    model = tiny(cls, cfg_cls, n_vocab, **cfg_kw)
    model.save_pretrained(d, safe_serialization=True)
    fast.save_pretrained(d)
    # The ids come from the tokenizer.json as saved, the file plumb convert reads.
    saved = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    differ = 0
    with open(os.path.join(d, "tokenizer_parity.jsonl"), "w", encoding="utf-8") as f:
        for kind, texts in (("heldout", heldout), ("hard", HARD)):
            for t in texts:
                ids = saved.encode(t, add_special_tokens=False).ids
                differ += ids != tok.encode(t, add_special_tokens=False).ids
                f.write(json.dumps({"kind": kind, "text": t, "ids": ids}, ensure_ascii=False) + "\n")
    print(name, "vocab", n_vocab, "merges", len(json.loads(saved.to_str())["model"]["merges"]),
          "in-memory vs saved differ on", differ, "lines")


import traceback
try:
  make("qwen2-tok", QWEN2_PATTERN, True, False, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
     lambda t: processors.ByteLevel(trim_offsets=False), Qwen2ForCausalLM, Qwen2Config,
     dict(eos_token="<|endoftext|>", pad_token="<|endoftext|>"), dict(use_sliding_window=False))
except Exception:
    traceback.print_exc()
try:
  make("llama3-tok", LLAMA3_PATTERN, False, True, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
     lambda t: processors.Sequence([
         processors.ByteLevel(trim_offsets=False),
         processors.TemplateProcessing(
             single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
             special_tokens=[("<|begin_of_text|>", t.token_to_id("<|begin_of_text|>"))])]),
     LlamaForCausalLM, LlamaConfig,
     dict(bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>"),
     dict(bos_token_id=0, eos_token_id=1))
except Exception:
    traceback.print_exc()

import tokenizers, transformers
print("transformers", transformers.__version__, "tokenizers", tokenizers.__version__,
      "torch", torch.__version__)
