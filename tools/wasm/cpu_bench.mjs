// tools/wasm/cpu_bench.mjs — one engine module's prefill and decode per CPU-second in node, one
// thread, for A/B runs on a loaded machine (perf/NOTES.md, issue 52): run it once per build and
// round, builds interleaved, and compare medians. Prints one JSON line.
//   node --no-experimental-fetch [--experimental-wasm-relaxed-simd] tools/wasm/cpu_bench.mjs \
//     WEB_DIR MODEL [VARIANT=simd-relaxed] [KERNELS=wasm128r] [N=49]
// A fresh chat, a 106-token prompt (USER_TEXT overrides the message), greedy, ignoreEos:
// prefill = prompt tokens over the CPU of a turn to 1 token; decode = N - 1 steps over
// cpu(turn to N tokens) - cpu(turn to 1 token), the same prompt, so the prefill cancels.
// CPU time is process.cpuUsage() (user + sys): the engine's own with one thread. Node 20's relaxed
// dot computes wrong sums on some CPUs (web/README.md): the logits of a forced simd-relaxed
// module are then garbage, its instructions and time are the module's.
import fs from 'fs';
import path from 'path';

const [, , web, model, variant = 'simd-relaxed', kernels = 'wasm128r', nStr = '49'] = process.argv;
if (!web || !model) {
  console.error('usage: cpu_bench.mjs WEB_DIR MODEL [VARIANT] [KERNELS] [N]');
  process.exit(2);
}
const N = Number(nStr);
const { createEngine } = await import(path.resolve(web, 'plumb-engine.mjs'));
const file = fs.readFileSync(model);
const eng = await createEngine({ variant, threads: 1 });
const buf = eng.allocModel(file.length);
buf.set(file);
eng.loadModel(buf, { kernels });
const user = process.env.USER_TEXT ?? 'The jury said it did find that the city executive committee, ' +
  'which had over-all charge of the election, deserves the praise and thanks of the city. Tell me more.';
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const turn = (n) => {
  const chat = eng.newChat({ system: 'You are a helpful assistant.', sampler: { temp: 0 } });
  const c0 = cpu();
  const st = chat.turn(user, { maxTokens: n, ignoreEos: true });
  const c1 = cpu();
  chat.free();
  return { cpu: c1 - c0, st };
};
turn(1); // warm-up: the arena, first touches
const a = turn(1), b = turn(N);
console.log(JSON.stringify({ web, model: path.basename(model), variant, kernels, n: N,
  prompt: a.st.prefilled, prefillTokCpuS: a.st.prefilled / a.cpu,
  decodeTokCpuS: (N - 1) / (b.cpu - a.cpu), generated: b.st.generated }));
process.exit(0);
