// matmul_qt_q6_k.wgsl — the tiled prefill driver for Q6_K weights x Q8_K activations: the same
// y[t ldy + r] = W[r] . X[t] as matmul_q.wgsl + matmul_q6_k.wgsl, the same integer sum and the
// same float term per super-block, added in block order into one float per (row, token): ref's
// bits. Self-contained (matmul_qt.wgsl's tile, its own staging, as matmul_qt_q4_k.wgsl: the
// sixteen sub-block scales are inside the integer sum, so matmul_qt.wgsl's one float scale per
// 32-element block does not fit). Layouts: matmul_q6_k.wgsl.
// A workgroup of 256 threads owns 64 rows x 64 tokens (a thread rows tr + 16 i, tokens tt + 16 j).
// Per super-block it stages each row's sixteen signed scales and d, and each token's dx; then
// two 32-element parts at a time the rows' quants as q - 32 bytes (four a word) and the tokens'
// quants; each thread adds scales_j (q . x)_j of each 16-element sub-block into its 16 exact i32
// isums; after the eighth part, ref's term (d dx) * float(isum), added to the output's float.

const QB: u32 = 256u;
const TR: u32 = 64u;
const TT: u32 = 64u;
var<workgroup> ws: array<u32, 1024>;   // [2][TR][8] q - 32 as bytes
var<workgroup> xs: array<u32, 1024>;   // [2][TT][8] quants
var<workgroup> wsc: array<i32, 1024>;  // [TR][16] sub-block scales
var<workgroup> wd: array<f32, 64>;     // d
var<workgroup> xdd: array<vec2f, 64>;  // dx (times 2^64 where subnormal), post

// Word k (4 elements from 4k) of part p (elements 32p ..) of the super-block at byte wo, as
// q - 32 bytes: q's low 4 bits from ql, its high 2 from qh; (q | 0x80) - 32 never borrows and
// XOR 0x80 gives q - 32.
fn q6word(wo: u32, p: u32, k: u32) -> u32 {
  let h = p / 4u;
  let s = p % 4u;
  let lo = (wu(wo + 64u * h + 32u * (s % 2u) + 4u * k) >> (4u * (s / 2u))) & 0x0f0f0f0fu;
  let hi = (wu(wo + 128u + 32u * h + 4u * k) >> (2u * s)) & 0x03030303u;
  return (((lo | (hi << 4u)) | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
}

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
  for (var b = 0u; b < nb; b++) {
    for (var i = li; i < 1024u; i += 256u) {
      let rr = i / 16u;
      let j = i % 16u;
      var v = 0i;
      if (r0 + rr < P.R) {
        let sc = wu(P.w_off + (r0 + rr) * P.w_row + b * 210u + 192u + j);
        v = bitcast<i32>(sc << 24u) >> 24u;
      }
      wsc[i] = v;
    }
    if (li < 64u) {
      var d = 0.0;
      if (r0 + li < P.R) { d = f16_to_f32(wu(P.w_off + (r0 + li) * P.w_row + b * 210u + 208u) & 0xffffu); }
      wd[li] = d;
    } else if (li < 128u) {
      var dp = vec2f(0.0, 1.0);
      if (t0 + li - 64u < P.T) {
        dp = q8k_scale(xu(P.x_off + (t0 + li - 64u) * P.x_row + b * 292u));
      }
      xdd[li - 64u] = dp;
    }
    var isum: array<i32, 16>;
    for (var i = 0u; i < 16u; i++) { isum[i] = 0; }
    for (var p0 = 0u; p0 < 8u; p0 += 2u) {
      for (var i = li; i < 1024u; i += 256u) {
        let k = i % 8u;
        let rr = (i / 8u) % TR;
        let p = p0 + i / 512u;
        var w = 0u;
        var x = 0u;
        if (r0 + rr < P.R) { w = q6word(P.w_off + (r0 + rr) * P.w_row + b * 210u, p, k); }
        if (t0 + rr < P.T) { x = xu(P.x_off + (t0 + rr) * P.x_row + b * 292u + 4u + 32u * p + 4u * k); }
        ws[i] = w;
        xs[i] = x;
      }
      workgroupBarrier();
      for (var pp = 0u; pp < 2u; pp++) {
        for (var hh = 0u; hh < 2u; hh++) { // the part's two sub-blocks of 16: words 4 hh ..
          var sub: array<i32, 16>;
          for (var i = 0u; i < 16u; i++) { sub[i] = 0; }
          for (var k = 4u * hh; k < 4u * hh + 4u; k++) {
            var wv: array<u32, 4>;
            var xv: array<u32, 4>;
            for (var i = 0u; i < 4u; i++) {
              wv[i] = ws[(pp * TR + tr + 16u * i) * 8u + k];
              xv[i] = xs[(pp * TT + tt + 16u * i) * 8u + k];
            }
            for (var i = 0u; i < 4u; i++) {
              for (var j = 0u; j < 4u; j++) { sub[i * 4u + j] += dot4(wv[i], xv[j]); }
            }
          }
          for (var i = 0u; i < 4u; i++) {
            let sc = wsc[(tr + 16u * i) * 16u + 2u * (p0 + pp) + hh];
            for (var j = 0u; j < 4u; j++) { isum[i * 4u + j] += sc * sub[i * 4u + j]; }
          }
        }
      }
      workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
      let dw = wd[tr + 16u * i];
      for (var j = 0u; j < 4u; j++) {
        let dp = xdd[tt + 16u * j];
        let d = rnd(dw * dp.x);
        let e = rnd(rnd(d * f32(isum[i * 4u + j])) * dp.y);
        s[i * 4u + j] = s[i * 4u + j] + e;
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
