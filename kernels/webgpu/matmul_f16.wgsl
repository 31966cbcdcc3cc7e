// matmul_f16.wgsl — F16 weights x F32 activations: y[t ldy + r] = sum_k f32(W[r][k]) X[t][k].
// f16 -> f32 is exact; one workgroup of 256 per 4 rows and one token (grid z): 64 threads a row,
// each reading the row's words (two f16) at a stride of 64 words, so consecutive threads read
// consecutive words; 64 strided partial sums, then a tree: another order than ref's single
// chain, inside the same bound (c = 1.01 holds for any order).
// W is a byte stream (rows w_row bytes apart, any even count: wu reads 4 bytes from any byte);
// X rows are x_row bytes apart (a multiple of 4).
@group(0) @binding(1) var<storage, read> X: array<f32>;

const NR: u32 = 4u;
var<workgroup> part: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r0 = (wg.x + wg.y * P.rsplit) * NR;
  let t = wg.z;
  if (r0 >= P.R) { return; }
  let rr = li / 64u;
  let l = li % 64u;
  let r = r0 + rr;
  var s = 0.0;
  if (r < P.R) {
    let wo = P.w_off + r * P.w_row;
    let xo = (P.x_off + t * P.x_row) / 4u;
    let k2 = P.K / 2u;
    for (var i = l; i < k2; i += 64u) {
      let w = wu(wo + 4u * i);
      s = s + f16_to_f32(w & 0xffffu) * X[xo + 2u * i];
      s = s + f16_to_f32(w >> 16u) * X[xo + 2u * i + 1u];
    }
    if (l == 0u && P.K % 2u == 1u) {
      let i = wo + 2u * (P.K - 1u); // its two bytes share a word
      s = s + f16_to_f32((W[i >> 2u] >> ((i & 2u) * 8u)) & 0xffffu) * X[xo + P.K - 1u];
    }
  }
  part[li] = s;
  workgroupBarrier();
  for (var h = 32u; h > 0u; h >>= 1u) {
    if (l < h) { part[li] = part[li] + part[li + h]; }
    workgroupBarrier();
  }
  if (l == 0u && r < P.R) { Y[P.y_off + t * P.ldy + r] = part[li]; }
}
