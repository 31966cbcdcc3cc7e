// add.wgsl — the residual add: x[i] += y[i], n elements, one per thread (one rounding: exact
// as the CPU sets' float add).
struct PD { n: u32, x_off: u32, y_off: u32, pad: u32 }
@group(0) @binding(0) var<storage, read_write> X: array<f32>;
@group(0) @binding(1) var<storage, read> Yv: array<f32>;
@group(0) @binding(2) var<uniform> P: PD;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = gid.x + gid.y * nw.x * 256u;
  if (i >= P.n) { return; }
  X[P.x_off + i] = X[P.x_off + i] + Yv[P.y_off + i];
}
