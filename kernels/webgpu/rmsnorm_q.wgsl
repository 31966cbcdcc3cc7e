// rmsnorm_q.wgsl — a forward pass's norm in one dispatch (after quantize.wgsl and the dot type's
// block file): per row, when bit 0 of flags, the residual add x += r (add.wgsl's one float add,
// the sum stored back to X); then y = x / sqrt(mean(x^2) + eps) * w, rmsnorm.wgsl's operations in
// its order (the same strided partial sums, the same tree), stored to Yn; then, when bit 1 of
// flags, y's row quantized into Y (quantize.wgsl's chunks one after another, the workgroup's 256
// threads a chunk). Thread li computes y's elements li, li + 256, ...: element li of each chunk,
// so it keeps the bits of each (the values it stored to Yn) in a private array and hands chunk
// c's quantize its c-th: Yn is not read back. The array holds KEEP values: rows up to KEEP 256
// floats are quantized (plumb-webgpu.mjs's rmsnormQ refuses a longer row when quantizing; without
// the quantize any n). So X, Yn and Y hold the bits that add, rmsnorm and quantize would write one
// after another. One workgroup of 256 per row.
struct PRQ { n: u32, rows: u32, eps: f32, x_off: u32, r_off: u32, y_off: u32, q_off: u32, q_row: u32,
  flags: u32, zero: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read_write> X: array<f32>;
@group(0) @binding(1) var<storage, read> Rs: array<f32>;
@group(0) @binding(2) var<storage, read> Wt: array<f32>;
@group(0) @binding(3) var<storage, read_write> Yn: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<u32>;
@group(0) @binding(5) var<uniform> P: PRQ;
var<workgroup> part: array<f32, 256>;
const KEEP: u32 = 64u; // y's floats a thread keeps for the quantize: rows up to 16384 floats

fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let row = wg.x + wg.y * nw.x;
  if (row >= P.rows) { return; }
  let xo = P.x_off + row * P.n;
  let ro = P.r_off + row * P.n;
  var s = 0.0;
  for (var i = li; i < P.n; i += 256u) {
    var v = X[xo + i];
    if ((P.flags & 1u) != 0u) {
      v = v + Rs[ro + i];
      X[xo + i] = v;
    }
    s = s + v * v;
  }
  part[li] = s;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (li < h) { part[li] = part[li] + part[li + h]; }
    workgroupBarrier();
  }
  let scale = 1.0 / sqrt(part[0] / f32(P.n) + P.eps);
  let yo = P.y_off + row * P.n;
  var kept: array<u32, KEEP>; // kept[c]: the bits of y[c 256 + li]
  for (var c = 0u; c * 256u + li < P.n; c++) {
    let y = rms_apply(bitcast<u32>(X[xo + c * 256u + li]), scale, Wt[c * 256u + li]);
    Yn[yo + c * 256u + li] = y;
    if (c < KEEP) { kept[c] = bitcast<u32>(y); }
  }
  if ((P.flags & 2u) == 0u) { return; }
  let nb = P.n / QB;
  for (var c = 0u; c * CB < nb; c++) { quantize_chunk(kept[c], c, nb, (P.q_off + row * P.q_row) / 4u, li); }
}
