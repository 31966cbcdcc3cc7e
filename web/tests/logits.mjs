// logits.mjs — the ref kernel set compiled to wasm gives the native ref set's logits bit for bit
// (same operations, IEEE arithmetic): last-position logits of a few prompts on the demo model,
// compared as uint32 bit patterns, for each variant built (scalar, simd, simd-threads at 2
// threads). Usage: node logits.mjs WEB_DIR PLUMB MODEL
import fs from 'fs';
import path from 'path';
import { MODEL, WEB, check, done, engine, load, plumb, readLogits, tmp } from './util.mjs';

const prompts = [
  'Once upon a time',
  'The jury said it did find that the city executive committee, which had over-all charge of the election,',
  'Hello, world! 123 456.789 -- "quoted" text; éàü ñ 日本語',
  'x',
];
const native = prompts.map((p, i) => {
  const out = path.join(tmp, `p${i}.logits`);
  plumb(['logits', '-m', MODEL, '-p', p, '--last', '--kernels', 'ref', '-t', '1', '-o', out]);
  return readLogits(out);
});

const runs = [['scalar', 1], ['simd', 1], ['simd-threads', 2]];
for (const [variant, threads] of runs) {
  if (!fs.existsSync(path.join(WEB, `plumb-${variant}.wasm`))) {
    check(false, `${variant}: plumb-${variant}.wasm is built`);
    continue;
  }
  const eng = await engine(variant, threads);
  load(eng, MODEL, 'ref');
  prompts.forEach((p, i) => {
    const w = eng.logits(p, { kernels: 'ref' });
    const a = new Uint32Array(w.buffer), b = new Uint32Array(native[i].buffer);
    let diff = -1;
    if (a.length === b.length) diff = a.findIndex((x, j) => x !== b[j]);
    check(a.length === b.length && diff < 0,
      `${variant} (${threads} thread${threads > 1 ? 's' : ''}) ref logits of prompt ${i} ` +
      `bit-identical to native ref (${b.length} floats)` +
      (diff >= 0 ? `: first difference at ${diff}: ${w[diff]} vs ${native[i][diff]}` : ''));
  });
  eng.freeModel();
}
done();
