// matmul_q4_0.wgsl — Q4_0 weights x Q8_0 activations. Q4_0 block {f16 d; uint8 qs[16]}, 18 bytes:
// element j (0..15) in the low nibble of qs[j], element j + 16 in its high nibble, value d (q - 8).
// term = (dw dx) * float(sum (q - 8) qx), the sum exact.
const QB: u32 = 32u;
fn block_term(r: u32, t: u32, b: u32) -> f32 {
  let wo = P.w_off + r * P.w_row + b * 18u;
  let xo = P.x_off + t * P.x_row + b * 34u;
  var sum = 0i;
  for (var j = 0u; j < 16u; j++) {
    let q = wb(wo + 2u + j);
    sum += (i32(q & 0xfu) - 8) * i8_of(xb(xo + 2u + j));
    sum += (i32(q >> 4u) - 8) * i8_of(xb(xo + 18u + j));
  }
  let d = rnd(f16_to_f32(w16(wo)) * f16_to_f32(x16(xo)));
  return d * f32(sum);
}
