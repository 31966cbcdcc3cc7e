// quantize_q8_k.wgsl — a Q8_K block {f32 d; int8 qs[256]; int16 bsums[16]} (292 bytes) from
// 256 floats, quantize.wgsl's chunk: max = the element of largest |x| (the first on ties),
// iscale = -127 / max, qs = min(127, nearest_int(iscale x)) kept to its low 8 bits, bsums the
// sums of 16 quants, d = 1 / iscale; an all-zero block is zeros, a block holding NaN or Inf is
// ref's NaN block (d NaN, the rest 0). nearest_int is ggml's: v + 1.5 2^23, the low mantissa
// bits. The first on ties: the threads whose |x| is the max put (index << 1 | sign) into an
// atomicMin, so the least index wins and its sign bit is max's. Each thread forms iscale (the
// same division in each) and puts its quant; bsums by atomicAdd (exact); thread 0 puts d.
const QB: u32 = 256u;
const BB: u32 = 292u;
const CB: u32 = 1u; // blocks a chunk: 256 floats, 292 bytes, 73 words
const CW: u32 = 73u;

var<workgroup> qkey: atomic<u32>; // the first element of largest |x|: index << 1 | its sign
var<workgroup> qsum: array<atomic<i32>, 16>; // the bsums

fn block_clear(li: u32) {
  if (li == 0u) { atomicStore(&qkey, 0xffffffffu); }
  if (li < 16u) { atomicStore(&qsum[li], 0); }
}

// Thread li: element li of the block (on: always, a chunk being one block), its bits u.
fn block_quantize(li: u32, b: u32, on: bool, u: u32) {
  let amax = atomicLoad(&qmax[0]);
  if ((u & 0x7fffffffu) == amax) { atomicMin(&qkey, (li << 1u) | (u >> 31u)); }
  workgroupBarrier();
  let bad = atomicLoad(&qbad[0]) != 0u;
  let live = !bad && amax != 0u; // else a NaN block or all zeros
  if (live) {
    let mx = amax | (atomicLoad(&qkey) << 31u); // the sign: the key's low bit
    let iscale = div_rn(-127.0, bitcast<f32>(mx));
    let t = rnd(mul_x(u, iscale) + 12582912.0);
    // iscale x is NaN where iscale is infinite (max below 127 2^-128) and x = 0: ref's x86
    // NaN (0xffc00000) gives 0 there, and so does an infinite product; so 0 for both
    var ni = 0;
    if (finite_bits(bitcast<u32>(t))) { ni = bitcast<i32>(bitcast<u32>(t) & 0x007fffffu) - 0x00400000; }
    let q = bitcast<i32>(u32(min(127, ni)) << 24u) >> 24u; // the low 8 bits, signed
    atomicAdd(&qsum[li / 16u], q);
    put8(4u + li, u32(q));
    if (li == 0u) { put32(0u, bitcast<u32>(div_rn(1.0, iscale))); }
  }
  if (bad && li == 0u) { put32(0u, 0x7fc00000u); }
  workgroupBarrier();
  if (live && li < 16u) { put16(260u + 2u * li, u32(atomicLoad(&qsum[li]))); }
}
