// rmsnorm_q.wgsl — a forward pass's norm in one dispatch (after quantize.wgsl and the dot type's
// block file): per row, when bit 0 of flags, the residual add x + r (add.wgsl's one float add)
// stored to Xo (x itself is not written); then y = x / sqrt(mean(x^2) + eps) * w over that sum,
// rmsnorm.wgsl's operations in its order (the same strided partial sums, the same tree), stored
// to Yn; then, when bit 1 of flags, y's row quantized into Y (quantize.wgsl's chunks).
// A workgroup of 256 per chunk of 256 floats of a row (the quantizer's chunk; a decode step's
// row of 2048 is 8 workgroups, not one walking 8 chunks in series). Each workgroup computes the
// whole row's sum of squares itself (thread li: elements li, li + 256, ... in order, then the
// tree: the same bits in every workgroup of the row, and rmsnorm.wgsl's), then its own chunk:
// thread li the chunk's element li, stored to Xo, Yn, and handed to the quantize from the
// register (Yn is not read back). Every workgroup reads the row's x (and r) whole, so the sum
// goes to Xo, never back into X: a workgroup writing X would change what another still reads.
// So Xo, Yn and Y hold the bits that add, rmsnorm and quantize would write one after another.
struct PRQ { n: u32, rows: u32, eps: f32, x_off: u32, r_off: u32, y_off: u32, q_off: u32, q_row: u32,
  flags: u32, zero: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> Rs: array<f32>;
@group(0) @binding(2) var<storage, read> Wt: array<f32>;
@group(0) @binding(3) var<storage, read_write> Yn: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<u32>;
@group(0) @binding(5) var<storage, read_write> Xo: array<f32>;
@group(0) @binding(6) var<uniform> P: PRQ;
var<workgroup> part: array<f32, 256>;

fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let nc = (P.n + 255u) / 256u; // chunks a row
  let idx = wg.x + wg.y * nw.x;
  if (idx >= nc * P.rows) { return; }
  let row = idx / nc;
  let c = idx % nc;
  let xo = P.x_off + row * P.n;
  let ro = P.r_off + row * P.n;
  let add = (P.flags & 1u) != 0u;
  let i0 = c * 256u + li; // the thread's element of the chunk
  var s = 0.0;
  var mine = 0.0; // x (+ r) at i0
  // elements li, li + 256, ... eight at a time, their loads first (indices clamped to the row's
  // last; one past n is loaded and not added): a batch's loads in flight together; the same adds
  // as rmsnorm.wgsl's, each square rounded (rnd)
  for (var b0 = li; b0 < P.n; b0 += 2048u) {
    var va: array<f32, 8>;
    for (var k = 0u; k < 8u; k++) {
      let i = min(b0 + 256u * k, P.n - 1u);
      va[k] = X[xo + i];
      if (add) { va[k] = va[k] + Rs[ro + i]; }
    }
    for (var k = 0u; k < 8u; k++) {
      let i = b0 + 256u * k;
      if (i < P.n) {
        let v = va[k];
        if (i == i0) { mine = v; }
        s = s + rnd(v * v);
      }
    }
  }
  part[li] = s;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (li < h) { part[li] = part[li] + part[li + h]; }
    workgroupBarrier();
  }
  let scale = 1.0 / sqrt(part[0] / f32(P.n) + P.eps);
  var u = 0u;
  if (i0 < P.n) {
    if (add) { Xo[xo + i0] = mine; }
    let y = rms_apply(bitcast<u32>(mine), scale, Wt[i0]);
    Yn[P.y_off + row * P.n + i0] = y;
    u = bitcast<u32>(y);
  }
  if ((P.flags & 2u) == 0u) { return; }
  quantize_chunk(u, c, P.n / QB, (P.q_off + row * P.q_row) / 4u, li);
}
