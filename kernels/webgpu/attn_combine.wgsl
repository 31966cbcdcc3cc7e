// attn_combine.wgsl — the last of a split attention's three dispatches (attention.wgsl's modes 1
// and 2 come first), and the quantize of its rows for the next matmul (after quantize.wgsl and
// the dot type's block file): per output element (t, h, d), the chunks' O_c[d] and L_c added in
// chunk order from +0, then O = (sum O_c) / (sum L_c), attention.wgsl's running sums, into O
// ([T][H][D]); with quant, each row of H D floats then quantized into Y (quantize.wgsl's chunks,
// rows q_row bytes apart from byte q_off). A query that sees no entry gets 0: its chunks' weights
// are all skipped, so its L sum is +0; one that sees any has L >= 1 (the max entry's weight is
// exactly 1) or NaN, so L == 0 says what the one-dispatch mode's count says.
// A workgroup of 256 per chunk of 256 floats of a row (a thread an element): the bits of
// attention.wgsl's mode 0 and, with quant, of quantize.wgsl's kernel on them. The scratch S holds
// what modes 1 and 2 left (attention.wgsl: [T][H][N] scores, MX, LC [T][H][nc], OC [T][H][nc][D]).
struct PC { T: u32, H: u32, D: u32, N: u32, s_off: u32, q_off: u32, q_row: u32, quant: u32,
  zero: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<storage, read> S: array<f32>;
@group(0) @binding(1) var<storage, read_write> O: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<u32>;
@group(0) @binding(3) var<uniform> P: PC;

fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }

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
  let lc = P.s_off + P.T * P.H * P.N + 2u * P.T * P.H * nc;
  let oc = lc + P.T * P.H * nc;
  let e = k * 256u + li; // the thread's element of row t
  var u = 0u;
  if (e < n) {
    let th = t * P.H + e / P.D;
    let d = e % P.D;
    var acco = 0.0;
    var accl = 0.0;
    for (var c = 0u; c < nc; c++) {
      acco = acco + S[oc + (th * nc + c) * P.D + d];
      accl = accl + S[lc + th * nc + c];
    }
    let o = select(acco / accl, 0.0, accl == 0.0);
    O[t * n + e] = o;
    u = bitcast<u32>(o);
  }
  if (P.quant == 0u) { return; }
  quantize_chunk(u, k, n / QB, (P.q_off + t * P.q_row) / 4u, li);
}
