// matmul_q.wgsl — the driver of the quantized matmuls: y[t ldy + r] = W[r] . X[t] for r < R, t < T,
// as kernels/ref/matmul.c forms it: per block an exact integer sum and one float term, the terms
// added in block order into one float (ref's bits). The runtime appends one type's source
// (matmul_q8_0.wgsl, matmul_q4_0.wgsl, matmul_q4_k.wgsl), which defines QB (elements per block),
// NP (integer parts per block), CH (blocks per chunk), part(r, t, b, p) (the p-th part of block
// b's integer sums: exact, so the parts may be added in any order) and term(r, t, b, sums) (ref's
// float term from the block's integer sums).
//
// One workgroup of 256 threads per NR = 8 rows and one token (grid z). Per chunk of CH blocks:
//   1. the NR x CH x NP integer parts, one per thread at a time; consecutive threads take
//      consecutive parts of consecutive blocks of one row, so they read consecutive words;
//   2. the parts of each block added (i32: exact, order free) and its float term formed, as ref;
//   3. one thread per row adds its CH terms to the row's float, in block order.
// The sum order is ref's whatever the shape, so the result is batch- and slice-invariant.
//
// Buffers are byte streams (ggml's blocks are 18, 34 or 144 bytes: rows need not be 4-aligned),
// read as u32 words (matmul_io.wgsl, matmul_xq.wgsl, which the runtime puts in front). W and X
// start at byte offsets w_off, x_off; rows w_row, x_row bytes apart.

const WG: u32 = 256u;
const NR: u32 = 8u;
var<workgroup> parts: array<vec2<i32>, 1024>; // NR CH NP <= 1024
var<workgroup> terms: array<f32, 512>;        // NR CH <= 512

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r0 = (wg.x + wg.y * P.rsplit) * NR;
  let t = wg.z;
  if (r0 >= P.R) { return; }
  let nb = P.K / QB;
  var s = 0.0;
  for (var c0 = 0u; c0 < nb; c0 += CH) {
    let n = min(CH, nb - c0);
    for (var i = li; i < NR * n * NP; i += WG) {
      let q = i / NP;
      let r = r0 + q / n;
      var v = vec2<i32>(0, 0);
      if (r < P.R) { v = part(r, t, c0 + q % n, i % NP); }
      parts[i] = v;
    }
    workgroupBarrier();
    for (var q = li; q < NR * n; q += WG) {
      let r = r0 + q / n;
      var v = vec2<i32>(0, 0);
      for (var p = 0u; p < NP; p++) { v += parts[q * NP + p]; }
      var e = 0.0;
      if (r < P.R) { e = term(r, t, c0 + q % n, v); }
      terms[q] = e;
    }
    workgroupBarrier();
    if (li < NR) {
      for (var b = 0u; b < n; b++) { s = s + terms[li * n + b]; }
    }
    workgroupBarrier();
  }
  if (li < NR && r0 + li < P.R) { Y[P.y_off + t * P.ldy + r0 + li] = s; }
}
