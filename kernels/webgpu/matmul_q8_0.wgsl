// matmul_q8_0.wgsl — Q8_0 weights x Q8_0 activations (block {f16 d; int8 qs[32]}, 34 bytes):
// term = (dw dx) * float(sum qw qx), the sum exact in i32 (|sum| <= 32 127 128 < 2^24).
const QB: u32 = 32u;
fn block_term(r: u32, t: u32, b: u32) -> f32 {
  let wo = P.w_off + r * P.w_row + b * 34u;
  let xo = P.x_off + t * P.x_row + b * 34u;
  var sum = 0i;
  for (var j = 0u; j < 32u; j++) { sum += i8_of(wb(wo + 2u + j)) * i8_of(xb(xo + 2u + j)); }
  let d = rnd(f16_to_f32(w16(wo)) * f16_to_f32(x16(xo)));
  return d * f32(sum);
}
