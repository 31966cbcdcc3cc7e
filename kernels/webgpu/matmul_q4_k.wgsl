// matmul_q4_k.wgsl — Q4_K weights x Q8_K activations.
// Q4_K super-block (144 bytes): f16 d, f16 dmin, uint8 scales[12], uint8 qs[128]; eight sub-blocks
// of 32 with 6-bit scale sc_j and min m_j (packed as kernels/ref/matmul.c's scale_min_k4 reads
// them); elements 64p + l and 64p + 32 + l (l < 32) in the low and high nibble of qs[32p + l].
// Q8_K block (292 bytes): f32 d, int8 qs[256], int16 bsums[16] (sums of 16 quants).
// isum = sum_j sc_j (q . x)_j, summs = sum_j m_j (bsums_2j + bsums_2j+1), both exact in i32;
// term = (dw dx) * float(isum) - (dminw dx) * float(summs), each product rounded on its own.
const QB: u32 = 256u;
fn scale_min(wo: u32, j: u32) -> vec2u {
  let s = wo + 4u;
  if (j < 4u) { return vec2u(wb(s + j) & 63u, wb(s + j + 4u) & 63u); }
  return vec2u((wb(s + j + 4u) & 0xfu) | ((wb(s + j - 4u) >> 6u) << 4u),
               (wb(s + j + 4u) >> 4u) | ((wb(s + j) >> 6u) << 4u));
}
fn block_term(r: u32, t: u32, b: u32) -> f32 {
  let wo = P.w_off + r * P.w_row + b * 144u;
  let xo = P.x_off + t * P.x_row + b * 292u;
  var isum = 0i;
  var summs = 0i;
  for (var j = 0u; j < 8u; j++) {
    let sm = scale_min(wo, j);
    let p = j / 2u;
    let shift = (j % 2u) * 4u;
    var sub = 0i;
    for (var l = 0u; l < 32u; l++) {
      let q = (wb(wo + 16u + 32u * p + l) >> shift) & 0xfu;
      sub += i32(q) * i8_of(xb(xo + 4u + 32u * j + l));
    }
    isum += i32(sm.x) * sub;
    let bs = bitcast<i32>(x16(xo + 260u + 4u * j) << 16u) >> 16u;
    let bs2 = bitcast<i32>(x16(xo + 262u + 4u * j) << 16u) >> 16u;
    summs += i32(sm.y) * (bs + bs2);
  }
  let dxb = x32(xo);
  var dx = bitcast<f32>(dxb);
  var post = 1.0;
  if ((dxb & 0x7f800000u) == 0u && (dxb & 0x7fffffu) != 0u) {
    // A subnormal Q8_K scale (a block of activations all below ~1.5e-36): GPUs may flush it to
    // zero (SwiftShader does), so it is taken from its bits times 2^64 (exact) and the term
    // scaled back by 2^-64. Not ref's bits there (ref rounds d to the subnormal grid first), but
    // closer to exact; conformance holds such outputs to the bound only.
    let v = f32(dxb & 0x7fffffu) * 2.5849394142282115e-26; // m 2^-149 2^64
    dx = select(v, -v, (dxb >> 31u) != 0u);
    post = 5.421010862427522e-20; // 2^-64
  }
  let d = rnd(f16_to_f32(w16(wo)) * dx);
  let dmin = rnd(f16_to_f32(w16(wo + 2u)) * dx);
  return (rnd(d * f32(isum)) - rnd(dmin * f32(summs))) * post;
}
