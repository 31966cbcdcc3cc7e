// matmul_q4_0.wgsl — Q4_0 weights x Q8_0 activations. Q4_0 block {f16 d; uint8 qs[16]}, 18 bytes:
// element j (0..15) in the low nibble of qs[j], element j + 16 in its high nibble, value d (q - 8).
// term = (dw dx) * float(sum (q - 8) qx), the sum exact. Two parts per block: qs bytes 8p..8p+7
// (two words), their low nibbles against x bytes 8p.., their high nibbles against x bytes 16 + 8p..
// A word's four nibbles become four int8 (q - 8) at once: (n | 0x80) - 8 per byte never borrows,
// and XOR 0x80 takes 120 + n to n - 8 (mod 256).
const QB: u32 = 32u;
const NP: u32 = 2u;
const CH: u32 = 64u;
fn q4s(n: u32) -> u32 { return ((n | 0x80808080u) - 0x08080808u) ^ 0x80808080u; }
fn part(r: u32, t: u32, b: u32, p: u32) -> vec2<i32> {
  let wo = P.w_off + r * P.w_row + b * 18u + 2u + 8u * p;
  let xo = P.x_off + t * P.x_row + b * 34u + 2u + 8u * p;
  var sum = 0i;
  for (var j = 0u; j < 8u; j += 4u) {
    let q = wu(wo + j);
    sum += dot4(q4s(q & 0x0f0f0f0fu), xu(xo + j));
    sum += dot4(q4s((q >> 4u) & 0x0f0f0f0fu), xu(xo + 16u + j));
  }
  return vec2<i32>(sum, 0);
}
// The block's integer sum whole, for the v2 driver (matmul_qv.wgsl): the 16 qs bytes from five
// aligned words and the 32 x quants from nine, each funnel-shifted to its block's byte offset
// (matmul_xq's fsh: no branch); qs word k's low nibbles against x word k, its high nibbles
// against x word k + 4; the same sum as part()'s two.
fn bsum(r: u32, t: u32, b: u32) -> vec2<i32> {
  let wo = P.w_off + r * P.w_row + b * 18u + 2u;
  let xo = P.x_off + t * P.x_row + b * 34u + 2u;
  let wi = wo >> 2u;
  let ws = (wo & 3u) * 8u;
  let xi = xo >> 2u;
  let xs = (xo & 3u) * 8u;
  var sum = 0i;
  for (var k = 0u; k < 4u; k++) {
    let q = fsh(wat(wi + k), wat(wi + k + 1u), ws);
    sum += dot4(q4s(q & 0x0f0f0f0fu), fsh(xat(xi + k), xat(xi + k + 1u), xs));
    sum += dot4(q4s((q >> 4u) & 0x0f0f0f0fu), fsh(xat(xi + k + 4u), xat(xi + k + 5u), xs));
  }
  return vec2<i32>(sum, 0);
}
// The v2 driver's grouped mode is the K-quants' (GP = 8); here a block is one lane's (GP = 1):
// its activations are the token's block (gx_load keeps t), its sums the whole block's.
struct GX { t: u32 }
fn gx_load(t: u32, b: u32, g: u32) -> GX { return GX(t); }
fn gpart_x(r: u32, b: u32, g: u32, x: GX) -> vec2<i32> { return bsum(r, x.t, b); }
fn term(r: u32, t: u32, b: u32, s: vec2<i32>) -> f32 {
  let wo = P.w_off + r * P.w_row + b * 18u;
  let xo = P.x_off + t * P.x_row + b * 34u;
  let d = rnd(f16_to_f32(w16(wo)) * f16_to_f32(x16(xo)));
  return d * f32(s.x);
}
