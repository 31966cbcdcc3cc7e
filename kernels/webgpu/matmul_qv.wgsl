// matmul_qv.wgsl — the quantized matmuls' second decode driver (v2, createKernels' decodeDriver,
// the default): y[t ldy + r] = W[r] . X[t] for r < R, t < T, as kernels/ref/matmul.c forms it:
// per block an exact integer sum and one float term, the terms added in block order into one
// float per row, starting from +0 (ref's bits). The runtime appends the same type files as for
// matmul_q.wgsl — this driver uses their QB, bsum(r, t, b) (a whole block's integer sums: Q8_0's
// and Q4_0's from aligned word windows without a branch, the K-quants' as their parts added) and
// term(r, t, b, sums) — and puts `const NR` (rows per workgroup) and `const TPR` (threads per
// row) in front.
//
// One workgroup of NR x TPR threads per NR rows and one token (grid z). Thread li works for row
// lr = li / TPR on blocks lb, lb + TPR, lb + 2 TPR, ... (lb = li % TPR): a chunk is TPR blocks
// of each row, one whole block a thread (its integer sums exact in i32, in any order; then its
// term), so consecutive threads read consecutive blocks of one row. The terms go to workgroup
// memory, double-buffered by chunk; the row's first thread (lb = 0, one per row group: no bank
// conflicts between the adders of one warp) owns the row's float and adds the previous chunk's
// TPR terms to it in block order while the others already work on the next chunk: one barrier a
// chunk. Blocks past the row's end give the term +0: s + (+0) = s for every s but -0, and s,
// starting at +0, is never -0 (a sum is -0 only when both addends are), so the padded adds
// change no bit. The order of the float adds is ref's whatever NR and TPR, so the result is
// batch-, slice- and shape-invariant and equal to the first driver's.

const WG: u32 = NR * TPR;
var<workgroup> terms: array<f32, 2u * WG>; // two chunks: [chunk & 1][row lr][block lb]

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r0 = (wg.x + wg.y * P.rsplit) * NR;
  let t = wg.z;
  if (r0 >= P.R) { return; }
  let lr = li / TPR;
  let lb = li % TPR;
  let r = r0 + lr;
  let nb = P.K / QB;
  var s = 0.0;
  var c0 = 0u;
  var cur = 0u; // the buffer this chunk's terms go to: 0 or WG
  loop {
    if (c0 >= nb) { break; }
    let b = c0 + lb;
    var e = 0.0;
    if (r < P.R && b < nb) { e = term(r, t, b, bsum(r, t, b)); }
    // the previous chunk's terms (written before the last barrier), in block order
    if (lb == 0u && c0 > 0u) {
      let o = (WG - cur) + lr * TPR;
      for (var j = 0u; j < TPR; j++) { s = s + terms[o + j]; }
    }
    terms[cur + li] = e;
    workgroupBarrier();
    c0 += TPR;
    cur = WG - cur;
  }
  if (lb == 0u && r < P.R) {
    if (c0 > 0u) { // the last chunk's terms
      let o = (WG - cur) + lr * TPR;
      for (var j = 0u; j < TPR; j++) { s = s + terms[o + j]; }
    }
    Y[P.y_off + t * P.ldy + r] = s;
  }
}
