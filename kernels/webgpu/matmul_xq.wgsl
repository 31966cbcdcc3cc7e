// matmul_xq.wgsl — the quantized drivers' activations (Q8_0 or Q8_K rows, bytes read as words
// like W's: xu(i) is the 4 bytes at byte i).
@group(0) @binding(1) var<storage, read> X: array<u32>;

fn xu(i: u32) -> u32 {
  let a = X[i >> 2u];
  let s = (i & 3u) * 8u;
  if (s == 0u) { return a; }
  return (a >> s) | (X[(i >> 2u) + 1u] << (32u - s));
}
// the 2 or 4 bytes at byte i (f16 scales, a Q8_K block's f32 scale)
fn w16(i: u32) -> u32 { return wu(i) & 0xffffu; }
fn x16(i: u32) -> u32 { return xu(i) & 0xffffu; }
fn x32(i: u32) -> u32 { return xu(i); }

// A Q8_K block's f32 scale d from its bits, as (s, post) with d = s post: post 1, or, for a
// subnormal d (a block of activations all below ~1.5e-36, which a GPU may flush to zero, as
// SwiftShader does), s from the bits times 2^64 (exact) and post 2^-64: a term formed with s is
// scaled back by post. Not ref's bits there (ref rounds d to the subnormal grid first), but
// closer to exact; conformance holds such outputs to the bound only.
fn q8k_scale(db: u32) -> vec2f {
  if ((db & 0x7f800000u) == 0u && (db & 0x7fffffu) != 0u) {
    let v = f32(db & 0x7fffffu) * 2.5849394142282115e-26; // m 2^-149 2^64
    return vec2f(select(v, -v, (db >> 31u) != 0u), 5.421010862427522e-20); // 2^-64
  }
  return vec2f(bitcast<f32>(db), 1.0);
}
