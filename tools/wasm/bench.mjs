// tools/wasm/bench.mjs — a first speed number for the engine module in node: prefill and decode
// tok/s of one greedy chat turn on a model, per (variant, kernel set), run interleaved (A B C, A B
// C, ...) so that the machine's load hits all alike; medians. Not a test: a measurement.
//   node --no-experimental-fetch tools/wasm/bench.mjs [WEB_DIR] [MODEL] [ROUNDS]
import fs from 'fs';
import path from 'path';

const [, , web = 'build-wasm/web', model = 'models/plumb-en-8m-Q8_0.gguf', rounds = '5'] = process.argv;
const { createEngine } = await import(path.resolve(web, 'plumb-engine.mjs'));
const file = fs.readFileSync(model);
const configs = [];
for (const [variant, threads] of [['scalar', 1], ['simd', 1], ['simd-threads', 2]]) {
  if (!fs.existsSync(path.resolve(web, `plumb-${variant}.wasm`))) continue;
  const eng = await createEngine({ variant, threads });
  for (const kernels of eng.info().kernelSets) {
    const e = kernels === 'ref' ? eng : await createEngine({ variant, threads });
    const buf = e.allocModel(file.length);
    buf.set(file);
    e.loadModel(buf, { kernels });
    configs.push({ name: `${variant} t${threads} ${kernels}`, eng: e, pre: [], dec: [] });
  }
}
const user = 'The jury said it did find that the city executive committee, which had over-all ' +
  'charge of the election, deserves the praise and thanks of the city. Tell me more.';
for (let r = 0; r < Number(rounds); r++)
  for (const c of configs) {
    const chat = c.eng.newChat({ system: 'You are a helpful assistant.', sampler: { temp: 0 } });
    const st = chat.turn(user, { maxTokens: 48 });
    chat.free();
    c.pre.push(st.prefillTokS);
    if (st.generated >= 8) c.dec.push(st.decodeTokS);
  }
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[s.length >> 1] : NaN; };
console.log(`model ${path.basename(model)}, ${rounds} interleaved rounds, node ${process.version}`);
console.log('| variant, threads, kernels | prefill tok/s | decode tok/s |\n| --- | ---: | ---: |');
for (const c of configs)
  console.log(`| ${c.name} | ${med(c.pre).toFixed(1)} | ${med(c.dec).toFixed(1)} |`);
process.exit(0);
