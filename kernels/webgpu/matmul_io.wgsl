// matmul_io.wgsl — what every matmul driver shares, put in front of it by the runtime
// (plumb-webgpu.mjs): the parameters, the weight and output buffers, and the readers. Buffers are
// byte streams read as u32 words (ggml's blocks need not start on a word): wu(i) is the 4 bytes
// at byte i (one word when aligned, else two funnel-shifted). A quantized driver also gets
// matmul_xq.wgsl (its Q8_0 / Q8_K activations as bytes); the F16 driver declares X as f32.

struct MM {
  K: u32, R: u32, T: u32, w_off: u32,
  w_row: u32, x_off: u32, x_row: u32, y_off: u32,
  ldy: u32, rsplit: u32, zero: u32, pad: u32,
  // a decode step's q | k | v with RoPE folded in (matmul_rope.wgsl): H, Hkv, D, half, the
  // token's cache slot; 0 for every other matmul
  rh: u32, rhkv: u32, rd: u32, rhalf: u32, rslot: u32, rp0: u32, rp1: u32, rp2: u32,
}
@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: MM;

fn wu(i: u32) -> u32 {
  let a = W[i >> 2u];
  let s = (i & 3u) * 8u;
  if (s == 0u) { return a; }
  return (a >> s) | (W[(i >> 2u) + 1u] << (32u - s));
}
// A rounding point: the product is stored as an f32 before it meets an add, so no compiler can
// fuse the two into an fma (ref is built with -ffp-contract=off). P.zero is 0 at run time.
fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }
