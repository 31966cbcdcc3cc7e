// matmul_qt.wgsl — the tiled driver of the quantized matmuls for prefill (many tokens): the same
// y[t ldy + r] = W[r] . X[t] as matmul_q.wgsl, the same block terms added in the same block order
// (ref's bits), but a workgroup of 256 threads computes a tile of 64 rows x 64 tokens: per step
// it stages SB blocks of the tile's 64 weight rows and 64 activation rows in workgroup memory
// as packed int8 words (each weight byte read once per tile instead of once per token), then
// each thread forms the block terms of its 4 rows x 4 tokens (rows tr + 16 i, tokens tt + 16 j)
// with dot4 from workgroup memory and adds each to its (row, token) float in block order.
// The runtime appends one type's source (matmul_qt_q8_0.wgsl, matmul_qt_q4_0.wgsl), which
// defines QB, wword(r, b, k) (the k-th of the block's 8 words of int8 weights), wscale(r, b)
// (its f32 scale), xword(t, b, k) and xscale(t, b) (the same of the Q8_0 activations).

const TR: u32 = 64u;
const TT: u32 = 64u;
const SB: u32 = 2u;   // blocks staged per step
var<workgroup> ws: array<u32, 1024>; // [SB][TR][8]
var<workgroup> xs: array<u32, 1024>; // [SB][TT][8]
var<workgroup> wd: array<f32, 128>;  // [SB][TR]
var<workgroup> xd: array<f32, 128>;  // [SB][TT]

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r0 = (wg.x + wg.y * P.rsplit) * TR;
  let t0 = wg.z * TT;
  if (r0 >= P.R) { return; }
  let tr = li % 16u;
  let tt = li / 16u;
  let nb = P.K / QB;
  var s: array<f32, 16>;
  for (var i = 0u; i < 16u; i++) { s[i] = 0.0; }
  for (var b0 = 0u; b0 < nb; b0 += SB) {
    let n = min(SB, nb - b0);
    // stage: 1024 words of each side (a thread 4 of each), then the scales
    for (var i = li; i < SB * TR * 8u; i += 256u) {
      let k = i % 8u;
      let rr = (i / 8u) % TR;
      let bb = i / (8u * TR);
      let r = r0 + rr;
      let t = t0 + rr;
      var w = 0u;
      var x = 0u;
      if (bb < n && r < P.R) { w = wword(r, b0 + bb, k); }
      if (bb < n && t < P.T) { x = xword(t, b0 + bb, k); }
      ws[i] = w;
      xs[i] = x;
    }
    if (li < SB * TR) {
      let rr = li % TR;
      let bb = li / TR;
      var dw = 0.0;
      var dx = 0.0;
      if (bb < n && r0 + rr < P.R) { dw = wscale(r0 + rr, b0 + bb); }
      if (bb < n && t0 + rr < P.T) { dx = xscale(t0 + rr, b0 + bb); }
      wd[li] = dw;
      xd[li] = dx;
    }
    workgroupBarrier();
    for (var bb = 0u; bb < n; bb++) {
      var isum: array<i32, 16>;
      for (var i = 0u; i < 16u; i++) { isum[i] = 0; }
      for (var k = 0u; k < 8u; k++) {
        var wv: array<u32, 4>;
        var xv: array<u32, 4>;
        for (var i = 0u; i < 4u; i++) {
          wv[i] = ws[(bb * TR + tr + 16u * i) * 8u + k];
          xv[i] = xs[(bb * TT + tt + 16u * i) * 8u + k];
        }
        for (var i = 0u; i < 4u; i++) {
          for (var j = 0u; j < 4u; j++) { isum[i * 4u + j] += dot4(wv[i], xv[j]); }
        }
      }
      for (var i = 0u; i < 4u; i++) {
        let dw = wd[bb * TR + tr + 16u * i];
        for (var j = 0u; j < 4u; j++) {
          let d = rnd(dw * xd[bb * TT + tt + 16u * j]);
          s[i * 4u + j] = s[i * 4u + j] + rnd(d * f32(isum[i * 4u + j]));
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let r = r0 + tr + 16u * i;
    for (var j = 0u; j < 4u; j++) {
      let t = t0 + tt + 16u * j;
      if (r < P.R && t < P.T) { Y[P.y_off + t * P.ldy + r] = s[i * 4u + j]; }
    }
  }
}

// Q8_0 activations (both types below): block {f16 d; int8 qs[32]}, 34 bytes.
fn xword(t: u32, b: u32, k: u32) -> u32 { return xu(P.x_off + t * P.x_row + b * 34u + 2u + 4u * k); }
fn xscale(t: u32, b: u32) -> f32 { return f16_to_f32(xu(P.x_off + t * P.x_row + b * 34u) & 0xffffu); }
