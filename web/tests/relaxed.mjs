// relaxed.mjs — the relaxed-SIMD modules as built: both .wasm files hold the final opcode of
// i32x4.relaxed_dot_i8x16_i7x16_add_s (fd 93 02: emcc's binaryen did not rewrite it), validate
// with node's --experimental-wasm-relaxed-simd and not without; node 20 computes the dot wrongly
// even with the flag, so plumb-engine.mjs's detection (validate, then run the dot) gives node the
// simd variant either way. Their logits and chat run in chromium (web_relaxed).
// Usage: node relaxed.mjs WEB_DIR PLUMB MODEL
import fs from 'fs';
import path from 'path';
import { execFileSync } from 'child_process';
import { WEB, check, done } from './util.mjs';

const inChild = (flags, code) =>
  execFileSync(process.execPath, [...flags, '--input-type=module', '-e', code]).toString().trim();
for (const m of ['simd-relaxed', 'simd-relaxed-threads']) {
  const file = path.join(WEB, `plumb-${m}.wasm`);
  if (!fs.existsSync(file)) { check(false, `${m}: plumb-${m}.wasm is built`); continue; }
  const b = fs.readFileSync(file);
  let n = 0;
  for (let i = b.indexOf(0xfd); i >= 0 && i + 2 < b.length; i = b.indexOf(0xfd, i + 1))
    if (b[i + 1] === 0x93 && b[i + 2] === 0x02) n++;
  check(n > 0, `${m}: ${n} byte runs fd 93 02 (i32x4.relaxed_dot_i8x16_i7x16_add_s)`);
  const validate = `import fs from 'fs'; console.log(WebAssembly.validate(fs.readFileSync(${JSON.stringify(file)})))`;
  const on = inChild(['--experimental-wasm-relaxed-simd'], validate), off = inChild([], validate);
  check(on === 'true' && off === 'false', `${m}: validates with relaxed SIMD on (${on}), not off (${off})`);
}
const engine = JSON.stringify(path.join(WEB, 'plumb-engine.mjs'));
const detect = `const e = await import(${engine}); console.log(e.detectVariant(), e.relaxedDotExact())`;
for (const flags of [[], ['--experimental-wasm-relaxed-simd']]) {
  const [variant, exact] = inChild(flags, detect).split(' ');
  check(!variant.startsWith('simd-relaxed') || exact === 'true',
    `node ${flags.join(' ') || '(no flags)'}: detectVariant() ${variant}, the relaxed dot exact: ${exact}`);
}
done();
