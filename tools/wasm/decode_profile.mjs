// tools/wasm/decode_profile.mjs — where a decode step goes in the wasm build: V8's sampling
// profiler (node's inspector, 200 us) over a chat's second turn only, written as a .cpuprofile.
// Profile a turn of N tokens and one of 1 token and subtract their self times (DIFF mode) for the
// decode steps alone. The module must be linked with --profiling-funcs for function names
// (perf/NOTES.md, issue 52, says how).
//   node --no-experimental-fetch [--experimental-wasm-relaxed-simd] tools/wasm/decode_profile.mjs \
//     WEB_DIR MODEL VARIANT KERNELS N OUT.cpuprofile
//   node tools/wasm/decode_profile.mjs --diff ONE.cpuprofile N.cpuprofile   (ms and shares)
import fs from 'fs';
import path from 'path';
import inspector from 'inspector';

const selfMs = (f) => {
  const p = JSON.parse(fs.readFileSync(f));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const m = new Map();
  p.samples.forEach((id, i) => {
    const k = byId.get(id).callFrame.functionName || '(js)';
    m.set(k, (m.get(k) ?? 0) + p.timeDeltas[i] / 1000);
  });
  return m;
};
if (process.argv[2] === '--diff') {
  const a = selfMs(process.argv[3]), b = selfMs(process.argv[4]);
  const d = [...b].map(([k, v]) => [k, v - (a.get(k) ?? 0)]).sort((x, y) => y[1] - x[1]);
  const tot = d.reduce((s, [, v]) => s + v, 0);
  for (const [k, v] of d.slice(0, 16))
    console.log(`${(100 * v / tot).toFixed(1).padStart(5)}%  ${v.toFixed(0).padStart(6)} ms  ${k}`);
  console.log(`total ${tot.toFixed(0)} ms`);
  process.exit(0);
}
const [, , web, model, variant, kernels, nStr, out] = process.argv;
if (!out) {
  console.error('usage: decode_profile.mjs WEB_DIR MODEL VARIANT KERNELS N OUT | --diff A B');
  process.exit(2);
}
const { createEngine } = await import(path.resolve(web, 'plumb-engine.mjs'));
const file = fs.readFileSync(model);
const eng = await createEngine({ variant, threads: 1 });
const buf = eng.allocModel(file.length);
buf.set(file);
eng.loadModel(buf, { kernels });
const chat = eng.newChat({ system: 'You are a helpful assistant.', sampler: JSON.parse(process.env.SAMPLER ?? '{"temp":0}') });
chat.turn('The jury said it did find that the city executive committee deserves praise.', { maxTokens: 1, ignoreEos: true });
const s = new inspector.Session();
s.connect();
const post = (m, p) => new Promise((res, rej) => s.post(m, p ?? {}, (e, r) => (e ? rej(e) : res(r))));
await post('Profiler.enable');
await post('Profiler.setSamplingInterval', { interval: 200 });
await post('Profiler.start');
const st = chat.turn('More.', { maxTokens: Number(nStr), ignoreEos: true });
const { profile } = await post('Profiler.stop');
fs.writeFileSync(out, JSON.stringify(profile));
console.log(JSON.stringify({ prefilled: st.prefilled, generated: st.generated }));
process.exit(0);
