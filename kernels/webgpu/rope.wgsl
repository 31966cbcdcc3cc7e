// rope.wgsl — RoPE in place over tokens of H heads of D: pair i of each head (normal: dims 2i,
// 2i + 1; neox: i, i + n_rot/2) rotated by the angle of its token's position. The runtime makes
// the table CS[token][i] = (cos theta_i mscale, sin theta_i mscale) in double on the CPU, as
// kernels/rope_angle.h does (WGSL has no f64, and its cos and sin are only accurate to 2^-11 in
// absolute terms), rounded to f32; here the rotation in f32: x_a' = x_a c - x_b s,
// x_b' = x_a s + x_b c (common.wgsl's rope_rot: each product rounded). Dims past n_rot are not touched. One thread per (token, head, pair).
struct PRo { tokens: u32, H: u32, D: u32, half: u32, neox: u32, x_off: u32, zero: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read_write> X: array<f32>;
@group(0) @binding(1) var<storage, read> CS: array<vec2f>;
@group(0) @binding(2) var<uniform> P: PRo;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let idx = gid.x + gid.y * nw.x * 64u;
  if (idx >= P.tokens * P.H * P.half) { return; }
  let i = idx % P.half;
  let th = idx / P.half; // token * H + head
  let t = th / P.H;
  let base = P.x_off + th * P.D;
  var a = 2u * i;
  var b = 2u * i + 1u;
  if (P.neox != 0u) { a = i; b = i + P.half; }
  let cs = CS[t * P.half + i];
  let xa = X[base + a];
  let xb = X[base + b];
  let y = rope_rot(xa, xb, cs, P.zero);
  X[base + a] = y.x;
  X[base + b] = y.y;
}
