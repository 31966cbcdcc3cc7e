// matmul_qv.wgsl — the quantized matmuls' second decode driver (v2, createKernels' decodeDriver,
// the default): y[t ldy + r] = W[r] . X[t] for r < R, t < T, as kernels/ref/matmul.c forms it:
// per block an exact integer sum and one float term, the terms added in block order into one
// float per row, starting from +0 (ref's bits). The runtime appends the same type files as for
// matmul_q.wgsl — this driver uses their QB, bsum(r, t, b) (a whole block's integer sums: Q8_0's
// and Q4_0's from aligned word windows without a branch, the K-quants' as their parts added) and
// term(r, t, b, sums) — and puts `const NR` (rows per workgroup), `const TPR` (threads per
// row) and `const GP` (lanes per block: 1, or the K-quants' grouped mode, 8) in front.
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
// batch-, slice- and shape-invariant and equal to the first driver's. Each row's float goes out
// through emit(row in the workgroup, row, token, float, whether this thread holds it), called by
// every thread of the workgroup (matmul_emit.wgsl: into Y; matmul_rope.wgsl: the decode step's
// q | k | v with RoPE and the cache writes folded in).
//
// The grouped mode (GP = 8, Q4_K and Q6_K; createKernels' decodeGP): GP lanes share a block,
// lane g forming its part of the block's sums — word g of each of the block's 32-byte runs, so 8
// lanes read 32 contiguous bytes an instruction where a whole block a thread has each lane on a
// block of its own — and the chunk is TPR / GP blocks. A thread works for RPT rows (`const RPT`,
// createKernels' decodeRPT: the workgroup's NR rows are NR / RPT groups of RPT, thread li for
// rows RPT (li / TPR) + i of it): it reads its activation words once (gx_load) and forms each
// row's lane sums against them (gpart_x), so a row's weights cost one read of the activations
// in RPT instead of one each. The lanes' integer sums go to workgroup memory; after a barrier
// each block's lanes g < RPT add the GP sums of row g (i32: exact, any order: the block's sums)
// and form ref's term from them — the blocks' terms in parallel, their scale loads too — into
// workgroup memory; after a second barrier each row's adder (lane i < RPT of the group's first
// block, row i) adds the chunk's terms to the row's float in block order. Blocks past the row's
// end are skipped. The same chain of float adds of the same terms, whatever RPT.

const WG: u32 = (NR / RPT) * TPR;
const CB: u32 = TPR / GP; // blocks of each row a chunk
// GP = 1: two chunks' terms, [chunk & 1][row lr][lane lb], the term's bits in x; grouped: one
// chunk's lane sums [row i of the group][thread li]
var<workgroup> terms: array<vec2<i32>, max(2u, RPT) * WG>;
var<workgroup> tg: array<f32, NR * CB>; // grouped: the chunk's terms [row][block]

// The adder (GP = 1): the row's float s plus the TPR terms of a chunk whose values start at
// terms[o], in block order.
fn add_chunk(s0: f32, o: u32) -> f32 {
  var s = s0;
  for (var j = 0u; j < TPR; j++) { s = s + bitcast<f32>(terms[o + j].x); }
  return s;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r0 = (wg.x + wg.y * P.rsplit) * NR;
  let t = wg.z;
  if (r0 >= P.R) { return; }
  let lr = li / TPR;
  let lb = li % TPR;
  let nb = P.K / QB;
  var s = 0.0;
  var c0 = 0u;
  if (GP > 1u) {
    let g = lb % GP;
    let rg = r0 + lr * RPT; // the group's first row
    loop {
      if (c0 >= nb) { break; }
      let b = c0 + lb / GP;
      if (b < nb) {
        let x = gx_load(t, b, g);
        for (var i = 0u; i < RPT; i++) {
          var e = vec2<i32>(0, 0);
          if (rg + i < P.R) { e = gpart_x(rg + i, b, g, x); }
          terms[i * WG + li] = e;
        }
      }
      workgroupBarrier();
      if (g < RPT && rg + g < P.R && b < nb) { // row g's term of this block
        var v = vec2<i32>(0, 0);
        for (var k = 0u; k < GP; k++) { v += terms[g * WG + li - g + k]; }
        tg[(lr * RPT + g) * CB + lb / GP] = term(rg + g, t, b, v);
      }
      workgroupBarrier();
      if (lb < RPT && rg + lb < P.R) { // row lb's adder
        for (var j = 0u; j < CB; j++) {
          if (c0 + j < nb) { s = s + tg[(lr * RPT + lb) * CB + j]; }
        }
      }
      c0 += CB;
    }
    emit(lr * RPT + lb, rg + lb, t, s, lb < RPT && rg + lb < P.R);
    return;
  }
  let r = r0 + lr;
  var cur = 0u; // the buffer this chunk's terms go to: 0 or WG
  loop {
    if (c0 >= nb) { break; }
    let b = c0 + lb;
    var e = vec2<i32>(0, 0); // +0's bits
    if (r < P.R && b < nb) { e.x = bitcast<i32>(term(r, t, b, bsum(r, t, b))); }
    // the previous chunk's terms (written before the last barrier), in block order
    if (lb == 0u && c0 > 0u && r < P.R) { s = add_chunk(s, (WG - cur) + lr * TPR); }
    terms[cur + li] = e;
    workgroupBarrier();
    c0 += CB;
    cur = WG - cur;
  }
  let own = lb == 0u && r < P.R;
  if (own && c0 > 0u) { s = add_chunk(s, (WG - cur) + lr * TPR); } // the last chunk
  emit(lr, r, t, s, own);
}
