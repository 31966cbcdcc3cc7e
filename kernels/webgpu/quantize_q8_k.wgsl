// quantize_q8_k.wgsl — one Q8_K block {f32 d; int8 qs[256]; int16 bsums[16]} (292 bytes) from
// 256 floats: max = the element of largest |x| (the first on ties), iscale = -127 / max,
// qs = min(127, nearest_int(iscale x)) kept to its low 8 bits, bsums the sums of 16 quants,
// d = 1 / iscale; an all-zero block is zeros, a block holding NaN or Inf is ref's NaN block
// (d NaN, the rest 0). nearest_int is ggml's: v + 1.5 2^23, the low mantissa bits.
const QB: u32 = 256u;
const BB: u32 = 292u;
const GB: u32 = 1u; // blocks a group: 292 bytes, 73 words
const GW: u32 = 73u;

fn quantize_block(xo: u32, yo: u32) {
  var amax = 0u;
  var mx = 0u;
  var finite = true;
  for (var j = 0u; j < 256u; j++) {
    let u = xbits(xo + j);
    finite = finite && finite_bits(u);
    if (amax < (u & 0x7fffffffu)) { amax = u & 0x7fffffffu; mx = u; }
  }
  if (!finite) { put32(yo, 0x7fc00000u); return; }
  if (amax == 0u) { return; }
  let iscale = div_rn(-127.0, bitcast<f32>(mx));
  for (var s = 0u; s < 16u; s++) {
    var sum = 0i;
    for (var l = 0u; l < 16u; l++) {
      let j = 16u * s + l;
      let t = rnd(mul_x(xbits(xo + j), iscale) + 12582912.0);
      // iscale x is NaN where iscale is infinite (max below 127 2^-128) and x = 0: ref's x86
      // NaN (0xffc00000) gives 0 there, and so does an infinite product; so 0 for both
      var ni = 0;
      if (finite_bits(bitcast<u32>(t))) { ni = bitcast<i32>(bitcast<u32>(t) & 0x007fffffu) - 0x00400000; }
      let q = bitcast<i32>(u32(min(127, ni)) << 24u) >> 24u; // the low 8 bits, signed
      sum += q;
      put8(yo + 4u + j, u32(q));
    }
    put16(yo + 260u + 2u * s, u32(sum));
  }
  put32(yo, bitcast<u32>(div_rn(1.0, iscale)));
}
