// quantize_q8_0.wgsl — Q8_0 blocks {f16 d; int8 qs[32]} (34 bytes) from 32 floats, for
// quantize.wgsl's chunks: d = amax / 127, id = 1 / d (0 when d is 0), qs = roundf(x id) clamped
// to [-128, 127] (a non-finite product gives 0); a block holding NaN or Inf is ref's NaN block
// (d = f16 NaN, qs 0). A block's first thread forms d and id from the block's amax (two
// div_rn), puts d and leaves id's bits in workgroup memory; after a barrier each thread of the
// block forms and puts its own quant with that id (the same bits as forming it itself).
const QB: u32 = 32u;
const BB: u32 = 34u;
const CB: u32 = 8u; // blocks a chunk: 256 floats, 272 bytes, 68 words
const CW: u32 = 68u;

// roundf: to nearest, halves away from zero (WGSL's round() takes halves to even).
fn roundf(v: f32) -> f32 {
  let t = trunc(v);
  if (abs(v - t) >= 0.5) { return t + sign(v); }
  return t;
}

var<workgroup> qid: array<u32, CB>; // per block: id's bits (its first thread's)

// qid needs no clear: a block's first thread writes its entry before the barrier its readers wait
// on, and the next chunk's writes come after quantize_chunk's barriers.
fn block_clear(li: u32) {}

// Thread li: element li % 32 of the chunk's block b (on: b is one of the row's blocks), its bits u.
// Called by all 256 threads (a barrier: uniform control flow).
fn block_quantize(li: u32, b: u32, on: bool, u: u32) {
  let j = li % QB;
  let yo = b * BB;
  let bad = on && atomicLoad(&qbad[b]) != 0u;
  if (on && !bad && j == 0u) {
    let d = div_rn(bitcast<f32>(atomicLoad(&qmax[b])), 127.0);
    var id = 0.0;
    if ((bitcast<u32>(d) & 0x7fffffffu) != 0u) { id = div_rn(1.0, d); } // d == 0, as bits
    put16(yo, f32_to_f16(d));
    qid[b] = bitcast<u32>(id);
  }
  workgroupBarrier();
  if (!on) { return; }
  if (bad) {
    if (j == 0u) { put16(yo, 0x7e00u); }
    return;
  }
  let v = mul_x(u, bitcast<f32>(qid[b]));
  var q = 0;
  if (finite_bits(bitcast<u32>(v))) { q = i32(clamp(roundf(v), -128.0, 127.0)); }
  put8(yo + 2u + j, u32(q));
}
