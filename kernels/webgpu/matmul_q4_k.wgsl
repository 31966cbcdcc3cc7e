// matmul_q4_k.wgsl — Q4_K weights x Q8_K activations.
// Q4_K super-block (144 bytes): f16 d, f16 dmin, uint8 scales[12], uint8 qs[128]; eight sub-blocks
// of 32 with 6-bit scale sc_j and min m_j (packed as kernels/ref/matmul.c's scale_min_k4 reads
// them); elements 64p + l and 64p + 32 + l (l < 32) in the low and high nibble of qs[32p + l].
// Q8_K block (292 bytes): f32 d, int8 qs[256], int16 bsums[16] (sums of 16 quants).
// isum = sum_j sc_j (q . x)_j, summs = sum_j m_j (bsums_2j + bsums_2j+1), both exact in i32;
// term = (dw dx) * float(isum) - (dminw dx) * float(summs), each product rounded on its own.
// Eight parts per block, one per sub-block j: (sc_j (q . x)_j, m_j (bsums pair)), eight words of
// nibbles (four per word, masked) against eight words of x through dot4.
const QB: u32 = 256u;
const NP: u32 = 8u;
const CH: u32 = 16u;
fn byte_of(w: u32, k: u32) -> u32 { return (w >> (8u * k)) & 0xffu; }
// (sc_j, m_j) from the 12 scale bytes as three words
fn sm_of(s0: u32, s1: u32, s2: u32, j: u32) -> vec2u {
  if (j < 4u) { return vec2u(byte_of(s0, j) & 63u, byte_of(s1, j) & 63u); }
  let k = j - 4u;
  return vec2u((byte_of(s2, k) & 0xfu) | ((byte_of(s0, k) >> 6u) << 4u),
               (byte_of(s2, k) >> 4u) | ((byte_of(s1, k) >> 6u) << 4u));
}
fn scale_min(wo: u32, j: u32) -> vec2u { return sm_of(wu(wo + 4u), wu(wo + 8u), wu(wo + 12u), j); }
fn part(r: u32, t: u32, b: u32, j: u32) -> vec2<i32> {
  let wo = P.w_off + r * P.w_row + b * 144u;
  let xo = P.x_off + t * P.x_row + b * 292u;
  let sm = scale_min(wo, j);
  let shift = (j % 2u) * 4u;
  let qo = wo + 16u + 32u * (j / 2u);
  let xq = xo + 4u + 32u * j;
  var sub = 0i;
  for (var l = 0u; l < 32u; l += 4u) { sub += dot4((wu(qo + l) >> shift) & 0x0f0f0f0fu, xu(xq + l)); }
  let bs = xu(xo + 260u + 4u * j);
  let pair = (bitcast<i32>(bs << 16u) >> 16u) + (bitcast<i32>(bs) >> 16u);
  return vec2<i32>(i32(sm.x) * sub, i32(sm.y) * pair);
}
// The block's integer sums whole (the v2 driver, matmul_qv.wgsl): its parts added (exact).
fn bsum(r: u32, t: u32, b: u32) -> vec2<i32> {
  var v = vec2<i32>(0, 0);
  for (var p = 0u; p < NP; p++) { v += part(r, t, b, p); }
  return v;
}
// Lane g (< 8) of a block's eight in the v2 driver's grouped mode (matmul_qv.wgsl, GP = 8): word
// g of every sub-block's nibbles and quants, sum_j sc_j (q . x) over those words, and the min
// of sub-block g times its bsums pair; the eight lanes' sums add (exactly) to part()'s, and
// lanes g = 0..7 read 32 contiguous bytes an instruction. In two steps, so that a thread working
// for several rows (the driver's RPT) reads the activations' words once: gx_load, lane g's words
// of token t's block b (word g of each 32-byte run of quants, and of the bsums), then gpart_x,
// row r's sums against them.
struct GX { q: array<u32, 8>, bs: u32 }
fn gx_load(t: u32, b: u32, g: u32) -> GX {
  // xu reads a second word only off the word grid: Q8_K's 292-byte blocks keep a row's
  // alignment, so a warp's lanes agree (one word a read on the buffers the runtime makes)
  let xo = P.x_off + t * P.x_row + b * 292u;
  var x: GX;
  for (var j = 0u; j < 8u; j++) { x.q[j] = xu(xo + 4u + 32u * j + 4u * g); }
  x.bs = xu(xo + 260u + 4u * g);
  return x;
}
fn gpart_x(r: u32, b: u32, g: u32, x: GX) -> vec2<i32> {
  let wo = P.w_off + r * P.w_row + b * 144u;
  // the scale words once (each lane of the block reads the same three); wu, as xu above (Q4_K's
  // 144-byte blocks keep the row's alignment)
  let s0 = wu(wo + 4u);
  let s1 = wu(wo + 8u);
  let s2 = wu(wo + 12u);
  var isum = 0i;
  for (var j = 0u; j < 8u; j++) {
    let q = (wu(wo + 16u + 32u * (j / 2u) + 4u * g) >> ((j % 2u) * 4u)) & 0x0f0f0f0fu;
    isum += i32(sm_of(s0, s1, s2, j).x) * dot4(q, x.q[j]);
  }
  let pair = (bitcast<i32>(x.bs << 16u) >> 16u) + (bitcast<i32>(x.bs) >> 16u);
  return vec2<i32>(isum, i32(sm_of(s0, s1, s2, g).y) * pair);
}
fn term(r: u32, t: u32, b: u32, s: vec2<i32>) -> f32 {
  let wo = P.w_off + r * P.w_row + b * 144u;
  let xo = P.x_off + t * P.x_row + b * 292u;
  let isum = s.x;
  let summs = s.y;
  let dp = q8k_scale(x32(xo));
  let dx = dp.x;
  let post = dp.y;
  let d = rnd(f16_to_f32(w16(wo)) * dx);
  let dmin = rnd(f16_to_f32(w16(wo + 2u)) * dx);
  return (rnd(d * f32(isum)) - rnd(dmin * f32(summs))) * post;
}
