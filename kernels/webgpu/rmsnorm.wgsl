// rmsnorm.wgsl — y = x / sqrt(mean(x^2) + eps) * w over rows of n, one workgroup per row.
// The squares summed in f32: 256 strided partial sums, then a tree (log2 256 + n/256 additions
// per path: inside the (n + 8) u |y| bound of kernels/ref/ops.c for any order). Rows whose
// squares overflow f32 (|x| > 1.8e19) are outside what this set computes.
struct PR { n: u32, rows: u32, eps: f32, x_off: u32, y_off: u32, w_off: u32, zero: u32, pad2: u32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> Wt: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: PR;
var<workgroup> part: array<f32, 256>;

fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let row = wg.x + wg.y * nw.x;
  if (row >= P.rows) { return; }
  let xo = P.x_off + row * P.n;
  var s = 0.0;
  // elements li, li + 256, ... eight at a time, their loads first (indices clamped to the row's
  // last; one past n is loaded and not added); each square rounded before its add (rnd: no
  // compiler fuses it into an FMA here and not in rmsnorm_q.wgsl, whose sums must be these bits)
  for (var b0 = li; b0 < P.n; b0 += 2048u) {
    var va: array<f32, 8>;
    for (var k = 0u; k < 8u; k++) { va[k] = X[xo + min(b0 + 256u * k, P.n - 1u)]; }
    for (var k = 0u; k < 8u; k++) {
      if (b0 + 256u * k < P.n) { s = s + rnd(va[k] * va[k]); }
    }
  }
  part[li] = s;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (li < h) { part[li] = part[li] + part[li + h]; }
    workgroupBarrier();
  }
  let scale = 1.0 / sqrt(part[0] / f32(P.n) + P.eps);
  let yo = P.y_off + row * P.n;
  for (var i = li; i < P.n; i += 256u) { Y[yo + i] = rms_apply(bitcast<u32>(X[xo + i]), scale, Wt[P.w_off + i]); }
}
