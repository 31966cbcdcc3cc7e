// attn_combine.wgsl — the second of a split attention's two dispatches (attention.wgsl's mode 1
// comes first), and the quantize of its rows for the next matmul (after quantize.wgsl and the dot
// type's block file): per output element (t, h, d), attention.wgsl's step 4 — m, the max of the
// chunks' maxes m_c; then, chunk by chunk in order, those with a visible entry only, A += r_c
// O_c[d] and B += r_c L_c from +0 (r_c = attn_rescale(m_c, m), each product rounded), and O =
// A / B — into O ([T][H][D]); a query that sees no entry gets 0. With quant, each row of H D
// floats then quantized into Y (quantize.wgsl's chunks, rows q_row bytes apart from byte q_off).
// A workgroup of 256 per chunk of 256 floats of a row (a thread an element): the bits of
// attention.wgsl's mode 0 and, with quant, of quantize.wgsl's kernel on them. The scratch S holds
// what mode 1 left (attention.wgsl: MC [T][H][nc] (m_c, n_c), LC [T][H][nc], OC [T][H][nc][D],
// from s_off).
struct PC { T: u32, H: u32, D: u32, N: u32, s_off: u32, q_off: u32, q_row: u32, quant: u32,
  zero: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<storage, read> S: array<f32>;
@group(0) @binding(1) var<storage, read_write> O: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<u32>;
@group(0) @binding(3) var<uniform> P: PC;

fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }

// Chunks c0 .. c0 + 7 of a query's MC pairs (m_c, n_c) from S[mc + 2 (row + c)], indices clamped
// to the last chunk (nc - 1; a chunk past nc is loaded and not to be used): the batch's loads in
// flight together.
fn mc_batch(mc: u32, row: u32, nc: u32, c0: u32) -> array<vec2f, 8> {
  var mv: array<vec2f, 8>;
  for (var k = 0u; k < 8u; k++) {
    let i = mc + 2u * (row + min(c0 + k, nc - 1u));
    mv[k] = vec2f(S[i], S[i + 1u]);
  }
  return mv;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let n = P.H * P.D; // a row
  let nk = (n + 255u) / 256u; // chunks a row
  let idx = wg.x + wg.y * nw.x;
  if (idx >= nk * P.T) { return; }
  let t = idx / nk;
  let k = idx % nk;
  let nc = (P.N + 63u) / 64u;
  let mc = P.s_off; // the split's MC, LC, OC (attention.wgsl)
  let lc = mc + 2u * P.T * P.H * nc;
  let oc = lc + P.T * P.H * nc;
  let e = k * 256u + li; // the thread's element of row t
  var u = 0u;
  if (e < n) {
    let th = t * P.H + e / P.D;
    let d = e % P.D;
    // the chunks eight at a time, their loads first (indices clamped to the last chunk; a chunk
    // past nc is loaded and skipped): a batch's loads in flight together; the same adds in chunk
    // order
    var m = 0.0;
    var seen = false;
    for (var c0 = 0u; c0 < nc; c0 += 8u) {
      let mv = mc_batch(mc, th * nc, nc, c0);
      for (var k = 0u; k < 8u; k++) {
        if (c0 + k < nc && mv[k].y != 0.0) {
          m = select(mv[k].x, max(m, mv[k].x), seen);
          seen = true;
        }
      }
    }
    var acco = 0.0;
    var accl = 0.0;
    for (var c0 = 0u; c0 < nc; c0 += 8u) {
      let mv = mc_batch(mc, th * nc, nc, c0);
      var ov: array<f32, 8>;
      var lv: array<f32, 8>;
      for (var k = 0u; k < 8u; k++) {
        let c = min(c0 + k, nc - 1u);
        ov[k] = S[oc + (th * nc + c) * P.D + d];
        lv[k] = S[lc + th * nc + c];
      }
      for (var k = 0u; k < 8u; k++) {
        if (c0 + k < nc && mv[k].y != 0.0) {
          let rc = attn_rescale(mv[k].x, m);
          acco = acco + rnd(rc * ov[k]);
          accl = accl + rnd(rc * lv[k]);
        }
      }
    }
    let o = select(0.0, acco / accl, seen);
    O[t * n + e] = o;
    u = bitcast<u32>(o);
  }
  if (P.quant == 0u) { return; }
  quantize_chunk(u, k, n / QB, (P.q_off + t * P.q_row) / 4u, li);
}
