// matmul_q.wgsl — the driver of the quantized matmuls: y[t ldy + r] = W[r] . X[t] for r < R, t < T,
// as kernels/ref/matmul.c forms it: per block an exact integer sum and one float term, the terms
// added in block order into one float (ref's bits). The runtime appends one type's source
// (matmul_q8_0.wgsl, matmul_q4_0.wgsl, matmul_q4_k.wgsl), which defines QB (elements per block)
// and block_term(r, t, b).
//
// One workgroup per (row, token): its 64 threads form the block terms of a chunk of blocks into
// workgroup memory, then thread 0 adds them to the row's sum in block order, chunk after chunk.
// The sum order is ref's whatever the shape, so the result is batch- and slice-invariant.
//
// Buffers are byte streams (ggml's blocks are 18, 34 or 144 bytes: rows need not be 4-aligned),
// read as u32 words. W and X start at byte offsets w_off, x_off; rows w_row, x_row bytes apart.

struct MM {
  K: u32, R: u32, T: u32, w_off: u32,
  w_row: u32, x_off: u32, x_row: u32, y_off: u32,
  ldy: u32, rsplit: u32, zero: u32, pad: u32,
}
@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: MM;

fn wb(i: u32) -> u32 { return (W[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }
fn xb(i: u32) -> u32 { return (X[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }
fn w16(i: u32) -> u32 { return wb(i) | (wb(i + 1u) << 8u); }
fn x16(i: u32) -> u32 { return xb(i) | (xb(i + 1u) << 8u); }
fn x32(i: u32) -> u32 { return x16(i) | (x16(i + 2u) << 16u); }
// A rounding point: the product is stored as an f32 before it meets an add, so no compiler can
// fuse the two into an fma (ref is built with -ffp-contract=off). P.zero is 0 at run time.
fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }

const CHUNK: u32 = 1024u;
var<workgroup> terms: array<f32, CHUNK>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = wg.x + wg.y * P.rsplit;
  let t = wg.z;
  if (r >= P.R) { return; }
  let nb = P.K / QB;
  var s = 0.0;
  for (var c0 = 0u; c0 < nb; c0 += CHUNK) {
    let n = min(CHUNK, nb - c0);
    for (var b = li; b < n; b += 64u) { terms[b] = block_term(r, t, c0 + b); }
    workgroupBarrier();
    if (li == 0u) {
      for (var b = 0u; b < n; b++) { s = s + terms[b]; }
    }
    workgroupBarrier();
  }
  if (li == 0u) { Y[P.y_off + t * P.ldy + r] = s; }
}
