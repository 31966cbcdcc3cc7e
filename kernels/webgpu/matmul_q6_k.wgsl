// matmul_q6_k.wgsl — Q6_K weights x Q8_K activations.
// Q6_K super-block (210 bytes): uint8 ql[128], uint8 qh[64], int8 scales[16], f16 d; sixteen
// sub-blocks of 16 with the signed scale scales[j]; element 128h + 32s + l (h < 2, s < 4, l < 32)
// is q - 32 with q's low 4 bits the nibble s / 2 of ql[64h + 32(s % 2) + l] and its high 2 bits
// bits 2s, 2s + 1 of qh[32h + l] (kernels/ref/matmul.c's dot_q6_k_q8_k).
// Q8_K block (292 bytes): f32 d, int8 qs[256], int16 bsums[16].
// isum = sum_j scales[j] (q . x)_j, exact in i32 (|isum| < 2^28);
// term = (dw dx) * float(isum), the product dw dx rounded first, as ref.
// Eight parts per block, one per 32 elements (h = p / 4, s = p % 4): sub-blocks 2p and 2p + 1,
// each four words of 6-bit quants (nibbles and 2-bit pairs masked four at a time, q - 32 formed
// bytewise without borrows) against four words of x through dot4, times its scale. The weight
// words by wb4 (no branch: every other 210-byte block is off the word grid, so the lanes of a
// warp read both alignments).
const QB: u32 = 256u;
const NP: u32 = 8u;
const CH: u32 = 16u;
fn part(r: u32, t: u32, b: u32, p: u32) -> vec2<i32> {
  let wo = P.w_off + r * P.w_row + b * 210u;
  let xo = P.x_off + t * P.x_row + b * 292u;
  let h = p / 4u;
  let s = p % 4u;
  let qlo = wo + 64u * h + 32u * (s % 2u);
  let lsh = 4u * (s / 2u);
  let qho = wo + 128u + 32u * h;
  let hsh = 2u * s;
  let xq = xo + 4u + 32u * p;
  var sub = vec2<i32>(0, 0);
  for (var l = 0u; l < 32u; l += 4u) {
    let q = ((wb4(qlo + l) >> lsh) & 0x0f0f0f0fu) | (((wb4(qho + l) >> hsh) & 0x03030303u) << 4u);
    // q - 32 in each byte: (q | 0x80) - 32 stays in 96..159 (no borrow), XOR 0x80 gives q - 32
    let qs = ((q | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
    let d = dot4(qs, xu(xq + l));
    if (l < 16u) { sub.x += d; } else { sub.y += d; }
  }
  let sc = wb4(wo + 192u + 2u * p);
  let s0 = bitcast<i32>(sc << 24u) >> 24u;
  let s1 = bitcast<i32>(sc << 16u) >> 24u;
  return vec2<i32>(s0 * sub.x + s1 * sub.y, 0);
}
// The block's integer sums whole (the v2 driver, matmul_qv.wgsl): its parts added (exact).
fn bsum(r: u32, t: u32, b: u32) -> vec2<i32> {
  var v = vec2<i32>(0, 0);
  for (var p = 0u; p < NP; p++) { v += part(r, t, b, p); }
  return v;
}
// Lane g (< 8) of a block's eight in the v2 driver's grouped mode (matmul_qv.wgsl, GP = 8): word
// g of every part p (its sub-block 2p + g / 4), scales[2p + g / 4] (q - 32 . x) over those
// words; the eight lanes' sums add (exactly) to the parts', and lanes g = 0..7 read 32
// contiguous bytes of ql, qh and x an instruction. In two steps (matmul_q4_k.wgsl's): gx_load,
// lane g's activation words of token t's block b, then gpart_x, row r's sum against them.
struct GX { q: array<u32, 8>, bs: u32 }
fn gx_load(t: u32, b: u32, g: u32) -> GX {
  let xo = P.x_off + t * P.x_row + b * 292u;
  var x: GX;
  for (var p = 0u; p < 8u; p++) { x.q[p] = xb4(xo + 4u + 32u * p + 4u * g); }
  x.bs = 0u;
  return x;
}
fn gpart_x(r: u32, b: u32, g: u32, x: GX) -> vec2<i32> {
  let wo = P.w_off + r * P.w_row + b * 210u;
  var isum = 0i;
  for (var p = 0u; p < 8u; p++) {
    let h = p / 4u;
    let s = p % 4u;
    let ql = wb4(wo + 64u * h + 32u * (s % 2u) + 4u * g) >> (4u * (s / 2u));
    let qh = wb4(wo + 128u + 32u * h + 4u * g) >> (2u * s);
    let q = (ql & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u);
    let qs = ((q | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
    let sc = i8_of(wb4(wo + 192u + 2u * p + g / 4u));
    isum += sc * dot4(qs, x.q[p]);
  }
  return vec2<i32>(isum, 0);
}
fn term(r: u32, t: u32, b: u32, s: vec2<i32>) -> f32 {
  let wo = P.w_off + r * P.w_row + b * 210u;
  let xo = P.x_off + t * P.x_row + b * 292u;
  let isum = s.x;
  let dp = q8k_scale(x32(xo));
  let dx = dp.x;
  let post = dp.y;
  let d = rnd(f16_to_f32(w16(wo + 208u)) * dx);
  return rnd(d * f32(isum)) * post;
}
