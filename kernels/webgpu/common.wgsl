// common.wgsl — helpers every plumb WGSL kernel shares; the runtime (plumb-webgpu.mjs) puts this
// text in front of each kernel's source. No bindings here: a kernel's byte readers are its own.

// An f16 (its 16 bits, in the low half of h) as f32: exact for every value, subnormals included
// (m 2^-24 is a normal f32), Inf and NaN kept. Not unpack2x16float: WGSL lets that one flush
// subnormals.
fn f16_to_f32(h: u32) -> f32 {
  let s = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0u) {
    let v = f32(m) * 5.9604644775390625e-8; // m 2^-24, exact
    return select(v, -v, s != 0u);
  }
  if (e == 31u) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
  return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

// A signed byte (the low 8 bits of b) as i32.
fn i8_of(b: u32) -> i32 {
  return bitcast<i32>(b << 24u) >> 24u;
}

// exp(x) in f32 without the GPU's exp: WGSL allows exp an error of 3 + 2|x| ulp, which grows past
// the softmax and attention bounds for large |x|. Cody-Waite reduction x = k ln2 + r (ln2 split
// so k ln2_hi is exact for |k| < 2^12), a degree-7 Taylor polynomial on |r| <= ln2/2 (truncation
// < 2^-27 relative), then 2^k by exponent bits in two steps (no overflow of the scale itself).
// Within 4 ulp over the whole range; exp(-inf) = 0, exp(+inf) = inf, NaN stays NaN.
fn exp_f32(x: f32) -> f32 {
  if (x != x) { return x; }
  if (x > 88.72283935546875) { return x * 3.4028234663852886e38; } // inf (WGSL: no inf literal)
  if (x < -103.97208404541016) { return 0.0; }
  let k = round(x * 1.4426950408889634);
  let r = (x - k * 0.693145751953125) - k * 1.428606765330187e-06;
  var p = 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  let ki = i32(k);
  let k1 = ki / 2;
  let k2 = ki - k1;
  return p * bitcast<f32>(u32(k1 + 127) << 23u) * bitcast<f32>(u32(k2 + 127) << 23u);
}

// RMSNorm's output element from x's bits b: (x scale) w. A subnormal (or zero) x: GPUs may flush
// it in a product (SwiftShader does), so it is taken from its bits times 2^64 (exact) and the
// result scaled back by 2^-64. rmsnorm.wgsl and rmsnorm_q.wgsl both call this: one expression, so
// the fused kernel's bits are the separate one's.
fn rms_apply(b: u32, scale: f32, w: f32) -> f32 {
  if ((b & 0x7f800000u) == 0u) {
    let v = f32(b & 0x7fffffu) * 2.5849394142282115e-26;
    return ((select(v, -v, (b >> 31u) != 0u) * scale) * w) * 5.421010862427522e-20;
  }
  return (bitcast<f32>(b) * scale) * w;
}

// RoPE's rotation of the pair (xa, xb) by cs = (c, s): (xa c - xb s, xa s + xb c), each product
// rounded before its add (z is 0 at run time: no compiler fuses them, so the kernels that rotate,
// rope.wgsl, rope_kv.wgsl and the q | k | v matmul's epilogue matmul_rope.wgsl, agree bit for bit).
fn rope_rot(xa: f32, xb: f32, cs: vec2f, z: u32) -> vec2f {
  let ac = bitcast<f32>(bitcast<u32>(xa * cs.x) ^ z);
  let bs = bitcast<f32>(bitcast<u32>(xb * cs.y) ^ z);
  let as_ = bitcast<f32>(bitcast<u32>(xa * cs.y) ^ z);
  let bc = bitcast<f32>(bitcast<u32>(xb * cs.x) ^ z);
  return vec2f(ac - bs, as_ + bc);
}

// attention's factor of a chunk whose max score is mc under the max m of all its query's chunks
// (attention.wgsl's step 4; attention.wgsl and attn_combine.wgsl both call this: one expression)
fn attn_rescale(mc: f32, m: f32) -> f32 { return select(exp_f32(mc - m), 1.0, mc == m); }
