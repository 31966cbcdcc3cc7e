// quantize_main.wgsl — the quantize kernel's own driver (after quantize.wgsl and the type's file):
// one invocation per group of GB blocks of a row (quantize.wgsl), rows of n floats from float
// x_off to rows y_row bytes apart from byte y_off (both multiples of 4).
struct PQ { n: u32, rows: u32, x_off: u32, y_off: u32, y_row: u32, zero: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read> X: array<u32>;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;
@group(0) @binding(2) var<uniform> P: PQ;

fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }
fn xbits(i: u32) -> u32 { return X[i]; }

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let nb = P.n / QB;
  let ng = (nb + GB - 1u) / GB;
  let idx = gid.x + gid.y * nw.x * 64u;
  if (idx >= ng * P.rows) { return; }
  let row = idx / ng;
  let g = idx % ng;
  quantize_group(P.x_off + row * P.n, g, nb, (P.y_off + row * P.y_row) / 4u + g * (GB * BB / 4u));
}
