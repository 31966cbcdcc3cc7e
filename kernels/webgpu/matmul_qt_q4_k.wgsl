// matmul_qt_q4_k.wgsl — the tiled prefill driver for Q4_K weights x Q8_K activations: the same
// y[t ldy + r] = W[r] . X[t] as matmul_q.wgsl + matmul_q4_k.wgsl, the same integer sums and the
// same float term per super-block, added in block order into one float per (row, token): ref's
// bits. Self-contained (matmul_qt.wgsl's tile, its own staging). Layouts: matmul_q4_k.wgsl.
// A workgroup of 256 threads owns 64 rows x 64 tokens (a thread rows tr + 16 i, tokens tt + 16 j).
// Per super-block it stages each row's sub-block scales and mins (sc | m << 16), d and dmin, and
// each token's bsums pairs and dx; then two sub-blocks at a time the rows' nibbles (as bytes
// 0..15, four a word) and the tokens' quants; each thread adds sc_j (q . x)_j into its 16 exact
// i32 isums; after the eighth sub-block, summs = sum_j m_j pair_j (exact) and ref's term,
// added to the output's float.

fn byte_of(w: u32, k: u32) -> u32 { return (w >> (8u * k)) & 0xffu; }
fn scale_min(wo: u32, j: u32) -> vec2u {
  let s0 = wu(wo + 4u);
  let s1 = wu(wo + 8u);
  let s2 = wu(wo + 12u);
  if (j < 4u) { return vec2u(byte_of(s0, j) & 63u, byte_of(s1, j) & 63u); }
  let k = j - 4u;
  return vec2u((byte_of(s2, k) & 0xfu) | ((byte_of(s0, k) >> 6u) << 4u),
               (byte_of(s2, k) >> 4u) | ((byte_of(s1, k) >> 6u) << 4u));
}

const QB: u32 = 256u;
const TR: u32 = 64u;
const TT: u32 = 64u;
var<workgroup> ws: array<u32, 1024>;   // [2][TR][8] nibbles as bytes
var<workgroup> xs: array<u32, 1024>;   // [2][TT][8] quants
var<workgroup> wsm: array<u32, 512>;   // [TR][8] sc | m << 16
var<workgroup> xp: array<i32, 512>;    // [TT][8] bsums pairs
var<workgroup> wdd: array<vec2f, 64>;  // d, dmin
var<workgroup> xdd: array<vec2f, 64>;  // dx (times 2^64 where subnormal), post

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
    for (var i = li; i < 512u; i += 256u) {
      let rr = i / 8u;
      let j = i % 8u;
      var v = 0u;
      var pr = 0i;
      if (r0 + rr < P.R) {
        let sm = scale_min(P.w_off + (r0 + rr) * P.w_row + b * 144u, j);
        v = sm.x | (sm.y << 16u);
      }
      if (t0 + rr < P.T) {
        let bs = xu(P.x_off + (t0 + rr) * P.x_row + b * 292u + 260u + 4u * j);
        pr = (bitcast<i32>(bs << 16u) >> 16u) + (bitcast<i32>(bs) >> 16u);
      }
      wsm[i] = v;
      xp[i] = pr;
    }
    if (li < 64u) {
      var dd = vec2f(0.0, 0.0);
      if (r0 + li < P.R) {
        let h = wu(P.w_off + (r0 + li) * P.w_row + b * 144u);
        dd = vec2f(f16_to_f32(h & 0xffffu), f16_to_f32(h >> 16u));
      }
      wdd[li] = dd;
    } else if (li < 128u) {
      var dp = vec2f(0.0, 1.0);
      if (t0 + li - 64u < P.T) {
        dp = q8k_scale(xu(P.x_off + (t0 + li - 64u) * P.x_row + b * 292u));
      }
      xdd[li - 64u] = dp;
    }
    var isum: array<i32, 16>;
    for (var i = 0u; i < 16u; i++) { isum[i] = 0; }
    for (var j0 = 0u; j0 < 8u; j0 += 2u) {
      for (var i = li; i < 1024u; i += 256u) {
        let k = i % 8u;
        let rr = (i / 8u) % TR;
        let j = j0 + i / 512u;
        var w = 0u;
        var x = 0u;
        if (r0 + rr < P.R) {
          let qo = P.w_off + (r0 + rr) * P.w_row + b * 144u + 16u + 32u * (j / 2u);
          w = (wu(qo + 4u * k) >> ((j % 2u) * 4u)) & 0x0f0f0f0fu;
        }
        if (t0 + rr < P.T) { x = xu(P.x_off + (t0 + rr) * P.x_row + b * 292u + 4u + 32u * j + 4u * k); }
        ws[i] = w;
        xs[i] = x;
      }
      workgroupBarrier();
      for (var jj = 0u; jj < 2u; jj++) {
        var sub: array<i32, 16>;
        for (var i = 0u; i < 16u; i++) { sub[i] = 0; }
        for (var k = 0u; k < 8u; k++) {
          var wv: array<u32, 4>;
          var xv: array<u32, 4>;
          for (var i = 0u; i < 4u; i++) {
            wv[i] = ws[(jj * TR + tr + 16u * i) * 8u + k];
            xv[i] = xs[(jj * TT + tt + 16u * i) * 8u + k];
          }
          for (var i = 0u; i < 4u; i++) {
            for (var j = 0u; j < 4u; j++) { sub[i * 4u + j] += dot4(wv[i], xv[j]); }
          }
        }
        for (var i = 0u; i < 4u; i++) {
          let sc = i32(wsm[(tr + 16u * i) * 8u + j0 + jj] & 0xffffu);
          for (var j = 0u; j < 4u; j++) { isum[i * 4u + j] += sc * sub[i * 4u + j]; }
        }
      }
      workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
      let dd = wdd[tr + 16u * i];
      for (var j = 0u; j < 4u; j++) {
        let dp = xdd[tt + 16u * j];
        var summs = 0i;
        for (var q = 0u; q < 8u; q++) {
          summs += i32(wsm[(tr + 16u * i) * 8u + q] >> 16u) * xp[(tt + 16u * j) * 8u + q];
        }
        let d = rnd(dd.x * dp.x);
        let dmin = rnd(dd.y * dp.x);
        let e = rnd((rnd(d * f32(isum[i * 4u + j])) - rnd(dmin * f32(summs))) * dp.y);
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
