// quantize_q8_0.wgsl — one Q8_0 block {f16 d; int8 qs[32]} (34 bytes) from 32 floats:
// d = amax / 127, id = 1 / d (0 when d is 0), qs = roundf(x id) clamped to [-128, 127] (a
// non-finite product gives 0); a block holding NaN or Inf is ref's NaN block (d = f16 NaN,
// qs 0).
const QB: u32 = 32u;
const BB: u32 = 34u;
const GB: u32 = 2u; // blocks a group: 68 bytes, 17 words
const GW: u32 = 17u;

// roundf: to nearest, halves away from zero (WGSL's round() takes halves to even).
fn roundf(v: f32) -> f32 {
  let t = trunc(v);
  if (abs(v - t) >= 0.5) { return t + sign(v); }
  return t;
}

fn quantize_block(xo: u32, yo: u32) {
  var amax = 0u;
  var finite = true;
  for (var j = 0u; j < 32u; j++) {
    let u = xbits(xo + j);
    finite = finite && finite_bits(u);
    amax = max(amax, u & 0x7fffffffu);
  }
  if (!finite) { put16(yo, 0x7e00u); return; }
  let d = div_rn(bitcast<f32>(amax), 127.0);
  var id = 0.0;
  if ((bitcast<u32>(d) & 0x7fffffffu) != 0u) { id = div_rn(1.0, d); } // d == 0, as bits
  put16(yo, f32_to_f16(d));
  for (var j = 0u; j < 32u; j++) {
    let v = mul_x(xbits(xo + j), id);
    var q = 0;
    if (finite_bits(bitcast<u32>(v))) { q = i32(clamp(roundf(v), -128.0, 127.0)); }
    put8(yo + 2u + j, u32(q));
  }
}
