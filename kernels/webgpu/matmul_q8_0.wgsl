// matmul_q8_0.wgsl — Q8_0 weights x Q8_0 activations (block {f16 d; int8 qs[32]}, 34 bytes):
// term = (dw dx) * float(sum qw qx), the sum exact in i32 (|sum| <= 32 127 128 < 2^24). Two parts
// per block: the 16 quants of each half, four words of each side through dot4 (4 int8 products).
const QB: u32 = 32u;
const NP: u32 = 2u;
const CH: u32 = 64u;
fn part(r: u32, t: u32, b: u32, p: u32) -> vec2<i32> {
  let wo = P.w_off + r * P.w_row + b * 34u + 2u + 16u * p;
  let xo = P.x_off + t * P.x_row + b * 34u + 2u + 16u * p;
  var sum = 0i;
  for (var j = 0u; j < 16u; j += 4u) { sum += dot4(wu(wo + j), xu(xo + j)); }
  return vec2<i32>(sum, 0);
}
// The block's integer sum whole, for the v2 driver (matmul_qv.wgsl): the 32 quants of each side
// from nine aligned words, each read once, funnel-shifted to the block's byte offset (matmul_xq's
// fsh: no branch, whatever the alignment); the same sum as part()'s two.
fn bsum(r: u32, t: u32, b: u32) -> vec2<i32> {
  let wo = P.w_off + r * P.w_row + b * 34u + 2u;
  let xo = P.x_off + t * P.x_row + b * 34u + 2u;
  let wi = wo >> 2u;
  let ws = (wo & 3u) * 8u;
  let xi = xo >> 2u;
  let xs = (xo & 3u) * 8u;
  var wa = wat(wi);
  var xa = xat(xi);
  var sum = 0i;
  for (var k = 1u; k < 9u; k++) {
    let wb = wat(wi + k);
    let xb = xat(xi + k);
    sum += dot4(fsh(wa, wb, ws), fsh(xa, xb, xs));
    wa = wb;
    xa = xb;
  }
  return vec2<i32>(sum, 0);
}
// The v2 driver's grouped mode is the K-quants' (GP = 8); here a block is one lane's (GP = 1):
// its activations are the token's block (gx_load keeps t), its sums the whole block's.
struct GX { t: u32 }
fn gx_load(t: u32, b: u32, g: u32) -> GX { return GX(t); }
fn gpart_x(r: u32, b: u32, g: u32, x: GX) -> vec2<i32> { return bsum(r, x.t, b); }
fn term(r: u32, t: u32, b: u32, s: vec2<i32>) -> f32 {
  let wo = P.w_off + r * P.w_row + b * 34u;
  let xo = P.x_off + t * P.x_row + b * 34u;
  let d = rnd(f16_to_f32(w16(wo)) * f16_to_f32(x16(xo)));
  return d * f32(s.x);
}
