// matmul_f16.wgsl — F16 weights x F32 activations: y[t ldy + r] = sum_k f32(W[r][k]) X[t][k].
// f16 -> f32 is exact; one workgroup per (row, token), 64 strided partial sums, then a tree sum:
// another order than ref's single chain, inside the same bound (c = 1.01 holds for any order).
// W is a byte stream (rows w_row bytes apart, any even count); X rows are x_row bytes apart (a
// multiple of 4).
struct MM {
  K: u32, R: u32, T: u32, w_off: u32,
  w_row: u32, x_off: u32, x_row: u32, y_off: u32,
  ldy: u32, rsplit: u32, zero: u32, pad: u32,
}
@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: MM;

fn w16(i: u32) -> u32 { return (W[i >> 2u] >> ((i & 2u) * 8u)) & 0xffffu; }

var<workgroup> part: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = wg.x + wg.y * P.rsplit;
  let t = wg.z;
  if (r >= P.R) { return; }
  let wo = P.w_off + r * P.w_row;
  let xo = (P.x_off + t * P.x_row) / 4u;
  var s = 0.0;
  for (var k = li; k < P.K; k += 64u) { s = s + f16_to_f32(w16(wo + 2u * k)) * X[xo + k]; }
  part[li] = s;
  workgroupBarrier();
  for (var h = 32u; h > 0u; h >>= 1u) {
    if (li < h) { part[li] = part[li] + part[li + h]; }
    workgroupBarrier();
  }
  if (li == 0u) { Y[P.y_off + t * P.ldy + r] = part[0]; }
}
