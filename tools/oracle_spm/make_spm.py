"""make_spm.py — SentencePiece tokenizer.model fixtures with the ids the sentencepiece library
itself gives (the outside oracle for plumb's C reader of the protobuf), and, where transformers
can convert the model, the tokenizer.json it writes with its ids for the same lines. Not a test:
it only writes fixtures. Usage, from the repository root:
  python3 tools/oracle_spm/make_spm.py OUT_DIR
Each case trains a small model on conformance/data/tokparity/text.txt with the trainer options of
a real family (README.md in OUT_DIR says which) and writes OUT_DIR/CASE/{tokenizer.model,
expected.jsonl, info.json[, tokenizer.json, hf.jsonl]}."""
import json
import os
import sys
import traceback

import sentencepiece as spm

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TEXT = os.path.join(ROOT, "conformance", "data", "tokparity", "text.txt")
HARD = os.path.join(ROOT, "conformance", "data", "tokparity", "pretok", "hard.txt")

# trainer options of the families that ship tokenizer.model (read from their released models'
# normalizer_spec / trainer_spec)
CASES = {
    # Llama 1/2, Mistral 7B v0.1, TinyLlama: BPE, byte fallback, identity normalizer, dummy
    # prefix, extra whitespace kept, digits split
    "llama-bpe": dict(model_type="bpe", vocab_size=5000, byte_fallback=True,
                      normalization_rule_name="identity", add_dummy_prefix=True,
                      remove_extra_whitespaces=False, split_digits=True,
                      allow_whitespace_only_pieces=True, character_coverage=0.98,
                      unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
    # Gemma: BPE, byte fallback, no dummy prefix, user-defined turn markers, pad 0 eos 1 bos 2
    "gemma-bpe": dict(model_type="bpe", vocab_size=5000, byte_fallback=True,
                      normalization_rule_name="identity", add_dummy_prefix=False,
                      remove_extra_whitespaces=False, split_digits=True,
                      allow_whitespace_only_pieces=True, character_coverage=0.98,
                      pad_id=0, eos_id=1, bos_id=2, unk_id=3,
                      user_defined_symbols=["<start_of_turn>", "<end_of_turn>", "<mask>",
                                            "\n\n", "    "]),
    # T5 / ALBERT / XLNet style: unigram, NFKC, whitespace collapsed, no byte fallback (unk)
    "unigram-nfkc": dict(model_type="unigram", vocab_size=5000, byte_fallback=False,
                         normalization_rule_name="nmt_nfkc", add_dummy_prefix=True,
                         remove_extra_whitespaces=True, character_coverage=0.98,
                         unk_id=2, bos_id=-1, eos_id=1, pad_id=0),
    # Unigram with byte fallback and identity normalizer (the mixed form some checkpoints carry)
    "unigram-bytes": dict(model_type="unigram", vocab_size=5000, byte_fallback=True,
                          normalization_rule_name="identity", add_dummy_prefix=True,
                          remove_extra_whitespaces=False, character_coverage=0.98,
                          unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
}


def lines():
    text = open(TEXT, encoding="utf-8").read().split("\n")
    hard = open(HARD, encoding="utf-8").read().split("\n")
    out = [l for l in text if l.strip()][:300] + hard
    out += ["", " ", "  leading spaces", "trailing  ", "a\tb\nc", "12345678 3.14159",
            "naïve café ﬁ ① Ｆｕｌｌ", "日本語のテキスト", "emoji 🤖🎉 done", "<start_of_turn>user\nhi<end_of_turn>",
            "\u00a0nbsp\u3000ideographic", "x" * 200]
    return out


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    summary = {"sentencepiece": spm.__version__}
    L = lines()
    for name, opts in CASES.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        prefix = os.path.join(d, "m")
        spm.SentencePieceTrainer.train(input=TEXT, model_prefix=prefix, num_threads=1,
                                       hard_vocab_limit=False, minloglevel=2, **opts)
        os.replace(prefix + ".model", os.path.join(d, "tokenizer.model"))
        os.remove(prefix + ".vocab")
        sp = spm.SentencePieceProcessor(model_file=os.path.join(d, "tokenizer.model"))
        with open(os.path.join(d, "expected.jsonl"), "w", encoding="utf-8") as f:
            for l in L:
                ids = sp.encode(l)
                f.write(json.dumps({"text": l, "ids": ids, "decoded": sp.decode(ids)},
                                   ensure_ascii=False) + "\n")
        info = {"options": opts, "vocab": sp.get_piece_size(),
                "bos": sp.bos_id(), "eos": sp.eos_id(), "unk": sp.unk_id(), "pad": sp.pad_id()}
        # transformers' conversion of the same model to tokenizer.json, with its ids
        try:
            import transformers
            cls = transformers.LlamaTokenizerFast if "gemma" not in name else \
                transformers.GemmaTokenizerFast
            tok = None
            for kw in (dict(vocab_file=os.path.join(d, "tokenizer.model")),
                       dict(vocab_file=os.path.join(d, "tokenizer.model"), from_slow=True)):
                try:
                    tok = cls(**kw)
                    break
                except Exception as e:
                    info.setdefault("hf_errors", []).append("%s: %s" % (type(e).__name__, e))
            if tok is not None:
                hd = os.path.join(d, "hf")
                tok.save_pretrained(hd)
                if os.path.exists(os.path.join(hd, "tokenizer.json")):
                    os.replace(os.path.join(hd, "tokenizer.json"), os.path.join(d, "tokenizer.json"))
                import shutil
                shutil.rmtree(hd, ignore_errors=True)
                agree = 0
                with open(os.path.join(d, "hf.jsonl"), "w", encoding="utf-8") as f:
                    for l in L:
                        ids = tok.encode(l, add_special_tokens=False)
                        agree += ids == sp.encode(l)
                        f.write(json.dumps({"text": l, "ids": ids}, ensure_ascii=False) + "\n")
                info["hf_class"] = type(tok).__name__
                info["hf_agrees_with_sentencepiece"] = "%d of %d lines" % (agree, len(L))
        except Exception:
            info["hf_errors"] = traceback.format_exc()[-800:]
        json.dump(info, open(os.path.join(d, "info.json"), "w"), indent=1, default=str)
        summary[name] = {k: info.get(k) for k in ("vocab", "hf_class",
                                                   "hf_agrees_with_sentencepiece")}
        print(name, json.dumps(summary[name]))
    json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
