// softmax.wgsl — y = exp(x - max) / sum(exp(x - max)) over rows of n, one workgroup per row.
// Entries equal to the max weigh exactly 1 (an all -inf row comes out uniform, as ref's); exp is
// common.wgsl's exp_f32 (within 4 ulp at any argument); the sum in f32 by 256 strided partial
// sums and a tree; one division per element. Inside the (n + 8 + |x - max|) u |y| bound.
// x holds no NaN.
struct PS { n: u32, rows: u32, x_off: u32, y_off: u32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
@group(0) @binding(2) var<uniform> P: PS;
var<workgroup> part: array<f32, 256>;

fn weight(v: f32, m: f32) -> f32 {
  if (v == m) { return 1.0; }
  return exp_f32(v - m);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let row = wg.x + wg.y * nw.x;
  if (row >= P.rows) { return; }
  let xo = P.x_off + row * P.n;
  var m = X[xo]; // the row's first entry (WGSL has no -inf literal)
  for (var i = li; i < P.n; i += 256u) { m = max(m, X[xo + i]); }
  part[li] = m;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (li < h) { part[li] = max(part[li], part[li + h]); }
    workgroupBarrier();
  }
  m = part[0];
  workgroupBarrier();
  var s = 0.0;
  for (var i = li; i < P.n; i += 256u) { s = s + weight(X[xo + i], m); }
  part[li] = s;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (li < h) { part[li] = part[li] + part[li + h]; }
    workgroupBarrier();
  }
  let sum = part[0];
  let yo = P.y_off + row * P.n;
  for (var i = li; i < P.n; i += 256u) { Y[yo + i] = weight(X[xo + i], m) / sum; }
}
