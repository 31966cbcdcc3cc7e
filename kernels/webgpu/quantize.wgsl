// quantize.wgsl — activation rows to Q8_0 or Q8_K blocks, ref's bytes (kernels/ref/quant.c's
// quantize_row_q8_0_ref and quantize_row_q8_k_ref), a workgroup of 256 threads a chunk of 256
// floats, one float a thread. The runtime appends quantize_q8_0.wgsl or quantize_q8_k.wgsl (QB,
// BB, CB, CW, block_clear, block_quantize), then a driver: quantize_main.wgsl (the quantize
// kernel), rmsnorm_q.wgsl or swiglu_q.wgsl (the fused kernels), each with the bindings Y / P, rnd
// and a workgroup size of 256.
//
// Everything that decides a byte is integer or correctly rounded float arithmetic with no
// subnormal operand, so the bytes are ref's on any GPU: magnitudes compared as bits (a GPU may
// treat subnormals as zero in comparisons), the divisions by div_rn below (WGSL allows `/` an
// error of 2.5 ulp), f32 -> f16 by integer rounding, a subnormal x scaled by 2^64 from its bits
// before its product, and the products rounded before their adds (rnd).
//
// A chunk is CB blocks (Q8_0: 8 blocks, 272 bytes = 68 words; Q8_K: 1 block, 292 bytes = 73
// words), so chunks start on words (y_off and y_row multiples of 4: the runtime's rule). Each
// thread is handed its float's bits; per block the largest |x| (as bits: atomicMax, exact in any
// order) and whether any is non-finite (atomicOr); then each thread forms its own quant byte
// with the serial kernel's expressions (the type's block_quantize) and ORs it into the chunk's
// zeroed words in workgroup memory; then consecutive threads store the words. No clear of Y:
// each workgroup owns whole words. A row's last chunk may hold fewer blocks; an odd number of
// Q8_0 blocks ends mid-word, the last two bytes (row padding) written 0. Bytes of a row's
// padding past its last word are not written.
// quantize_chunk(u, c, nb, yw, li) is called by all 256 threads of a workgroup (it has barriers:
// uniform control flow) and quantizes chunk c of a row of nb blocks into the row's words from yw,
// thread li handing in u, the bits of the chunk's float li (float c 256 + li of the row; any
// value where that is past the row): the driver's own, loaded (quantize_main.wgsl) or the value
// it computed and stored (rmsnorm_q.wgsl, swiglu_q.wgsl: no read back of its output).
var<workgroup> qw: array<atomic<u32>, CW>; // the chunk's words
var<workgroup> qmax: array<atomic<u32>, CB>; // per block: the largest |x|, as bits
var<workgroup> qbad: array<atomic<u32>, CB>; // per block: nonzero when it holds a NaN or an Inf

fn put8(i: u32, b: u32) {
  atomicOr(&qw[i >> 2u], (b & 0xffu) << ((i & 3u) * 8u));
}
fn put16(i: u32, h: u32) { put8(i, h); put8(i + 1u, h >> 8u); }
fn put32(i: u32, w: u32) { put16(i, w); put16(i + 2u, w >> 16u); }

fn finite_bits(u: u32) -> bool { return (u & 0x7f800000u) != 0x7f800000u; }

// |u| of a float's bits as (mantissa with its leading bit, exponent): value = m 2^e, m in
// [2^23, 2^24). u's magnitude is nonzero and finite.
fn unpack_mag(u: u32) -> vec2i {
  let e = (u >> 23u) & 0xffu;
  let m = u & 0x7fffffu;
  if (e == 0u) {
    let sh = countLeadingZeros(m) - 8u;
    return vec2i(i32(m << sh), -149 - i32(sh));
  }
  return vec2i(i32(m | 0x800000u), i32(e) - 150);
}

// a / b correctly rounded (to nearest, ties to even), subnormal operands and results included,
// from the bits by a 26-bit long division. a finite; b finite or infinite (a signed zero);
// b == 0 gives a signed inf (a != 0) or NaN.
fn div_rn(a: f32, b: f32) -> f32 {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b);
  let sign = (ua ^ ub) & 0x80000000u;
  if ((ub & 0x7fffffffu) == 0u) {
    if ((ua & 0x7fffffffu) == 0u) { return bitcast<f32>(P.zero | 0x7fc00000u); }
    return bitcast<f32>(sign | 0x7f800000u);
  }
  if ((ua & 0x7fffffffu) == 0u || (ub & 0x7fffffffu) == 0x7f800000u) { return bitcast<f32>(sign); }
  let pa = unpack_mag(ua);
  let pb = unpack_mag(ub);
  var ma = u32(pa.x);
  let mb = u32(pb.x);
  var e = pa.y - pb.y; // a / b = (ma / mb) 2^e
  if (ma < mb) { ma = ma << 1u; e -= 1; }
  // now ma / mb in [1, 2): q = floor(ma / mb 2^25), 26 bits, and whether a remainder is left.
  // The first bit is 1; the other 25 come as digits of 8, 8, 8 and 1 bits by u32 division (each
  // r the exact remainder, r < mb < 2^24, so r 2^8 fits): the bits a restoring loop of 26 steps
  // gives, in 4 dependent divisions (the loop was ~1 us of each quantizing dispatch on the H200)
  var q = 1u;
  var r = ma - mb;
  for (var i = 0u; i < 3u; i++) {
    let t = r << 8u;
    let dq = t / mb;
    q = (q << 8u) | dq;
    r = t - dq * mb;
  }
  let t1 = r << 1u;
  let dq1 = t1 / mb;
  q = (q << 1u) | dq1;
  r = t1 - dq1 * mb;
  let sticky = r != 0u;
  // the value is q 2^(e - 25) (plus what sticky says); its leading bit is 2^e
  if (e > 127) { return bitcast<f32>(sign | 0x7f800000u); }
  if (e >= -126) {
    var m = q >> 2u;
    let guard = (q >> 1u) & 1u;
    let rest = (q & 1u) != 0u || sticky;
    if (guard == 1u && (rest || (m & 1u) == 1u)) { m += 1u; }
    var eb = u32(e + 127);
    if (m == 0x1000000u) { m = m >> 1u; eb += 1u; }
    if (eb >= 255u) { return bitcast<f32>(sign | 0x7f800000u); }
    return bitcast<f32>(sign | (eb << 23u) | (m & 0x7fffffu));
  }
  // subnormal: units of 2^-149, q 2^(e + 124)
  let s = u32(-e - 124);
  if (s >= 27u) { return bitcast<f32>(sign); } // below half the smallest subnormal
  var m = q >> s;
  let rem = q & ((1u << s) - 1u);
  let half = 1u << (s - 1u);
  if (rem > half || (rem == half && (sticky || (m & 1u) == 1u))) { m += 1u; }
  return bitcast<f32>(sign | m); // m = 2^23 is the smallest normal, bits and all
}

// f32 -> f16 bits, round to nearest even (kernels/types.c pl_f32_to_f16, integer throughout).
fn f32_to_f16(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  let sign = (u >> 16u) & 0x8000u;
  let a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) {
    return sign | 0x7c00u | select(0u, 0x200u | ((a >> 13u) & 0x3ffu), a > 0x7f800000u);
  }
  if (a >= 0x477ff000u) { return sign | 0x7c00u; }
  if (a < 0x38800000u) {
    if (a < 0x33000000u) { return sign; }
    let man = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - (a >> 23u);
    var q = man >> shift;
    let rem = man & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u) == 1u)) { q += 1u; }
    return sign | q;
  }
  let r = a - 0x38000000u;
  var q = r >> 13u;
  let rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u) == 1u)) { q += 1u; }
  return sign | q;
}

// x v with x given by its bits: a subnormal x (which a GPU may flush in the product) is taken
// times 2^64 from its bits and the product scaled back, the same rounding wherever x v is normal
// (and below 2^-126 the callers round to 0 either way).
fn mul_x(xb: u32, v: f32) -> f32 {
  if ((xb & 0x7f800000u) == 0u && (xb & 0x7fffffu) != 0u) {
    let s = f32(xb & 0x7fffffu) * 2.5849394142282115e-26; // m 2^-149 2^64
    return rnd(select(s, -s, (xb >> 31u) != 0u) * v) * 5.421010862427522e-20;
  }
  return rnd(bitcast<f32>(xb) * v);
}

// Chunk c (CB blocks, 256 floats) of a row of nb blocks, thread li's float's bits u, words from
// yw (the row's first word; the chunk's is c CW after it). Thread li owns float li of the chunk
// and word li: it clears that word and later stores it, so a workgroup can call this chunk after
// chunk (rmsnorm_q) with no barrier between one chunk's store and the next one's clear.
fn quantize_chunk(u: u32, c: u32, nb: u32, yw: u32, li: u32) {
  let nbc = min(CB, nb - c * CB); // the chunk's blocks
  if (li < CW) { atomicStore(&qw[li], 0u); }
  if (li < CB) {
    atomicStore(&qmax[li], 0u);
    atomicStore(&qbad[li], 0u);
  }
  block_clear(li);
  workgroupBarrier();
  let b = li / QB;
  let on = b < nbc;
  if (on) {
    atomicMax(&qmax[b], u & 0x7fffffffu);
    if (!finite_bits(u)) { atomicOr(&qbad[b], 1u); }
  }
  workgroupBarrier();
  block_quantize(li, b, on, u);
  workgroupBarrier();
  let words = (nbc * BB + 3u) / 4u;
  if (li < words) { Y[yw + c * CW + li] = atomicLoad(&qw[li]); }
}
