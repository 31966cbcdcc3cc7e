// quantize_main.wgsl — the quantize kernel's own driver (after quantize.wgsl and the type's file):
// a workgroup of 256 per chunk of CB blocks of a row (quantize.wgsl), rows of n floats from float
// x_off to rows y_row bytes apart from byte y_off (both multiples of 4).
struct PQ { n: u32, rows: u32, x_off: u32, y_off: u32, y_row: u32, zero: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read> X: array<u32>;
@group(0) @binding(1) var<storage, read_write> Y: array<u32>;
@group(0) @binding(2) var<uniform> P: PQ;

fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let nb = P.n / QB;
  let nc = (nb + CB - 1u) / CB; // chunks a row
  let idx = wg.x + wg.y * nw.x;
  if (idx >= nc * P.rows) { return; }
  let row = idx / nc;
  let c = idx % nc;
  let i = c * 256u + li; // the thread's float of the row (CB QB = 256)
  var u = 0u;
  if (i < P.n) { u = X[P.x_off + row * P.n + i]; }
  quantize_chunk(u, c, nb, (P.y_off + row * P.y_row) / 4u, li);
}
