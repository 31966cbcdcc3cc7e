// swiglu.wgsl — y = silu(gate) * up = gate / (1 + exp(-gate)) * up, n elements, one per thread.
// exp_f32 (common.wgsl) overflows to inf below gate = -88.7: y is then a zero where ref's is below
// 2^-121 |up| (the bound's 2^-120 |up| term); otherwise four roundings and exp's few ulp, inside
// 16 u |y|.
struct PW { n: u32, g_off: u32, u_off: u32, y_off: u32 }
@group(0) @binding(0) var<storage, read> G: array<f32>;
@group(0) @binding(1) var<storage, read> Up: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: PW;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = gid.x + gid.y * nw.x * 256u;
  if (i >= P.n) { return; }
  let g = G[P.g_off + i];
  Y[P.y_off + i] = g / (1.0 + exp_f32(-g)) * Up[P.u_off + i];
}
