// parity.mjs — one vocabulary's tokenizer parity: plumb (a vocabulary-only GGUF made by
// `plumb convert --vocab-only` from the package's tokenizer.json) against Hugging Face's
// `tokenizers` on the held-out text and the hard cases. Not the fixture (npm_setup.sh).
// Usage: node parity.mjs NAME MODEL_DIR PLUMB NPM_DIR TEXT HARD WORK_DIR
// Asserts, per text: ids identical with special tokens parsed and without; the text of the ids
// identical (HF decode(ids, false) vs plumb's detokenization, see README.md); invalid UTF-8
// round-trips through plumb byte for byte. Prints one table row; exit 1 on any difference.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const [name, modelDir, plumb, npmDir, textFile, hardFile, work] = process.argv.slice(2);
if (!work) {
  console.error('usage: node parity.mjs NAME MODEL_DIR PLUMB NPM_DIR TEXT HARD WORK_DIR');
  process.exit(2);
}
const require = createRequire(path.join(npmDir, 'package.json'));
const { Tokenizer } = require('tokenizers');

fs.mkdirSync(work, { recursive: true });
const gguf = path.join(work, `${name}.gguf`);
execFileSync(plumb, ['convert', '--vocab-only', modelDir, gguf], { stdio: 'inherit' });

const jsonText = fs.readFileSync(path.join(modelDir, 'tokenizer.json'), 'utf8');
const spec = JSON.parse(jsonText);
const hfSpecial = Tokenizer.fromString(jsonText);
// Without special-token parsing: HF has no such switch in this binding, so the special added
// tokens are dropped from added_tokens (they stay in model.vocab); non-special added tokens are
// matched either way, in HF as in plumb.
const plain = { ...spec, added_tokens: (spec.added_tokens || []).filter((t) => !t.special) };
const hfPlain = Tokenizer.fromString(JSON.stringify(plain));
// HF's Strip decoder (Llama 2 style) drops the first leading space of the whole text.
const decs = spec.decoder && spec.decoder.type === 'Sequence' ? spec.decoder.decoders : [];
const strip = decs.some((d) => d.type === 'Strip' && d.start === 1);

// texts: the held-out lines, the hard cases; invalid UTF-8 as bytes, plus its lossy decoding
const texts = []; // {label, bytes: Buffer, str}
const lines = fs.readFileSync(textFile, 'utf8').split('\n');
if (lines[lines.length - 1] === '') lines.pop();
lines.forEach((l, i) => texts.push({ label: `text.txt:${i + 1}`, bytes: Buffer.from(l, 'utf8'), str: l }));
const invalid = [];
for (const c of JSON.parse(fs.readFileSync(hardFile, 'utf8'))) {
  if (c.hex !== undefined) {
    const b = Buffer.from(c.hex, 'hex');
    invalid.push({ label: `hard:${c.name}`, bytes: b });
    const lossy = b.toString('utf8'); // each maximal invalid subpart -> U+FFFD (WHATWG)
    texts.push({ label: `hard:${c.name} (as U+FFFD)`, bytes: Buffer.from(lossy, 'utf8'), str: lossy });
  } else {
    texts.push({ label: `hard:${c.name}`, bytes: Buffer.from(c.text, 'utf8'), str: c.text });
  }
}
for (const t of texts)
  if (t.bytes.includes(0)) throw new Error(`${t.label}: a NUL byte cannot be a --batch record`);

function runPlumb(records, special, bos = false) {
  const input = Buffer.concat(records.flatMap((r) => [r.bytes, Buffer.from([0])]));
  const args = ['tokenize', '-m', gguf, '-f', '-', '--batch'];
  if (!bos) args.push('--no-bos');
  if (special) args.push('--special');
  const out = execFileSync(plumb, args, { input, maxBuffer: 1 << 30 }).toString('latin1');
  const rows = out.split('\n');
  rows.pop();
  if (rows.length !== records.length)
    throw new Error(`plumb printed ${rows.length} records for ${records.length}`);
  return rows.map((r) => {
    const [ids, hex] = r.split('\t');
    return { ids: ids === '' ? [] : ids.split(' ').map(Number), text: Buffer.from(hex, 'hex') };
  });
}

let compared = 0, failed = 0;
const fail = (msg) => {
  if (failed++ < 10) console.log(`MISMATCH ${name} ${msg}`);
};
for (const special of [true, false]) {
  const hf = special ? hfSpecial : hfPlain;
  const ours = runPlumb(texts, special);
  for (let i = 0; i < texts.length; i++) {
    const t = texts[i];
    const enc = await hf.encode(t.str, null, { addSpecialTokens: false });
    const want = enc.getIds();
    const got = ours[i].ids;
    compared += want.length;
    const mode = special ? 'special' : 'plain';
    if (want.length !== got.length || want.some((x, k) => x !== got[k])) {
      fail(`${t.label} [${mode}] ids\n  text ${JSON.stringify(t.str)}\n  hf    ${want.join(' ')}\n  plumb ${got.join(' ')}`);
      continue;
    }
    const hfText = await hf.decode(want, false);
    let ourText = ours[i].text.toString('utf8');
    if (strip && ourText.startsWith(' ')) ourText = ourText.slice(1);
    if (hfText !== ourText)
      fail(`${t.label} [${mode}] decode\n  hf    ${JSON.stringify(hfText)}\n  plumb ${JSON.stringify(ourText)}`);
  }
}
// The sequence's own BOS/EOS (plumb: PL_TOKENIZE_ADD_BOS, the add_bos/add_eos convert wrote):
// HF's post-processor (addSpecialTokens), except where tokenizer_config.json sets add_bos_token
// or add_eos_token — transformers' Llama tokenizers rebuild the post-processor from those, and
// llama.cpp reads them — then its bos_token/eos_token around the ids.
const cfgPath = path.join(modelDir, 'tokenizer_config.json');
const cfg = fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, 'utf8')) : {};
const tokId = (t) => (t == null ? null : hfSpecial.tokenToId(typeof t === 'string' ? t : t.content));
const flagged = typeof cfg.add_bos_token === 'boolean' || typeof cfg.add_eos_token === 'boolean';
const withBos = runPlumb(texts, true, true);
for (let i = 0; i < texts.length; i++) {
  let want;
  if (flagged) {
    const body = (await hfSpecial.encode(texts[i].str, null, { addSpecialTokens: false })).getIds();
    want = [...(cfg.add_bos_token ? [tokId(cfg.bos_token)] : []), ...body,
      ...(cfg.add_eos_token ? [tokId(cfg.eos_token)] : [])];
  } else {
    want = (await hfSpecial.encode(texts[i].str, null, { addSpecialTokens: true })).getIds();
  }
  const got = withBos[i].ids;
  compared += want.length;
  if (want.length !== got.length || want.some((x, k) => x !== got[k]))
    fail(`${texts[i].label} [special, BOS/EOS] ids\n  hf    ${want.join(' ')}\n  plumb ${got.join(' ')}`);
}
// invalid UTF-8: HF takes only Unicode strings, so the bytes never reach it; plumb's ids must
// give the bytes back exactly (byte tokens / byte-level pieces), after the documented strip
const raw = runPlumb(invalid, false);
for (let i = 0; i < invalid.length; i++) {
  let got = raw[i].text;
  const want = invalid[i].bytes;
  if (spec.normalizer && JSON.stringify(spec.normalizer).includes('"Prepend"') && got[0] === 0x20)
    got = got.subarray(1);
  if (!got.equals(want)) fail(`${invalid[i].label} round trip: ${got.toString('hex')} != ${want.toString('hex')}`);
}
const n = texts.length;
console.log(`| ${name} | ${n} texts (${lines.length} lines + ${n - lines.length} hard) x 3 modes | ${compared} tokens | ` +
  `${invalid.length} invalid-UTF-8 round trips | ${failed ? `${failed} DIFFERENT` : 'identical'} |`);
process.exit(failed ? 1 : 0);
