// bench_pretok_hf.js — the HF tokenizers (0.23.2, node binding) side of perf/bench_pretok.sh:
// GPT-2's vocabulary under each pre-tokenizer form of conformance/data/tokparity/pretok/*.json,
// encoding the same text as bench_pretok.c; prints the same JSON lines (engine "hf").
// Run: node bench_pretok_hf.js tokenizer.json text.txt [repeat=5] [runs=5]
'use strict';
process.env.TOKENIZERS_PARALLELISM = 'false'; // one thread, as plumb
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const [tokPath, textPath, repeatArg, runsArg] = process.argv.slice(2);
const repeat = Number(repeatArg || 5), runs = Number(runsArg || 5);
const base = JSON.parse(fs.readFileSync(tokPath, 'utf8'));
// Each line is one encode (the text's '\n' are not encoded), as in bench_pretok.c.
const lines = fs.readFileSync(textPath, 'utf8').repeat(repeat).split('\n').filter((l) => l.length);
const bytes = lines.reduce((a, l) => a + Buffer.byteLength(l), 0);
const dir = path.resolve(__dirname, '../conformance/data/tokparity/pretok');
const only = process.env.PRE ? process.env.PRE.split(',') : null;
const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];

(async () => {
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const form = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    if (only && !only.includes(form.name)) continue;
    const j = Object.assign({}, base, { pre_tokenizer: form.pre_tokenizer, normalizer: form.normalizer });
    j.model = Object.assign({}, base.model, { ignore_merges: form.model.ignore_merges });
    const t = Tokenizer.fromString(JSON.stringify(j));
    const pt = t.getPreTokenizer();
    const enc = [], pre = [];
    let ids = null, pieces = 0;
    for (let r = -1; r < runs; r++) {
      const a = process.hrtime.bigint();
      const e = await t.encodeBatch(lines, { addSpecialTokens: false });
      const b = process.hrtime.bigint();
      pieces = 0;
      for (const l of lines) pieces += pt.preTokenizeString(l).length;
      const c = process.hrtime.bigint();
      if (r < 0) { ids = [].concat(...e.map((x) => x.getIds())); continue; }
      enc.push(Number(b - a) / 1e9);
      pre.push(Number(c - b) / 1e9);
    }
    let h = 0xcbf29ce484222325n;
    for (const id of ids)
      for (let k = 0; k < 4; k++) h = ((h ^ BigInt((id >>> (8 * k)) & 255)) * 0x100000001b3n) & 0xffffffffffffffffn;
    const mb = bytes / 1e6;
    console.log(JSON.stringify({ engine: 'hf', pre: form.name, bytes, ids: ids.length, pieces,
      ids_fnv: h.toString(16).padStart(16, '0'), encode_mb_s: +(mb / median(enc)).toFixed(3),
      pretok_mb_s: +(mb / median(pre)).toFixed(3) }));
  }
})();
