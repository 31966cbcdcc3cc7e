// add.wgsl — the residual add: x[i] += y[i], n elements, one per thread (one rounding: exact
// as the CPU sets' float add); with ym > 0, y repeats every ym elements (a bias added to every
// token's row: x[t ym + i] += y[i], one dispatch for all the rows).
struct PD { n: u32, x_off: u32, y_off: u32, ym: u32 }
@group(0) @binding(0) var<storage, read_write> X: array<f32>;
@group(0) @binding(1) var<storage, read> Yv: array<f32>;
@group(0) @binding(2) var<uniform> P: PD;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = gid.x + gid.y * nw.x * 256u;
  if (i >= P.n) { return; }
  let j = select(i, i % P.ym, P.ym != 0u);
  X[P.x_off + i] = X[P.x_off + i] + Yv[P.y_off + j];
}
