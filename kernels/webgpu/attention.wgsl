// attention.wgsl — causal grouped-query attention of T query tokens over N cached entries
// (pl_attn_args of kernels/kernels.h): query head h uses KV head h / (H / Hkv); entry j is
// visible to query t iff
//     kv_pos[j] <= q_pos[t]  and  (window == 0 || j < n_sinks || q_pos[t] - kv_pos[j] < window)
//     and  (layer_window == 0 || q_pos[t] - kv_pos[j] < layer_window);
// a query that sees nothing gets zeros. K and V are F32 or F16 ([N][Hkv][D]; F16 as a byte
// stream, decoded exactly by common.wgsl). One workgroup of 256 threads per (token, head), three
// passes as kernels/ref/attention.c, each over short dependent chains:
//   1. thread li the entries j = li, li + 256, ...: the score, a float dot of D in four partial
//      dots (dim d mod 4, added (p0 + p1) + (p2 + p3)) times scale, into S[j]; the max and the
//      count of visible entries by a tree over the 256 threads;
//   2. the same entries: the weight exp(s - m) (1 at the max) in place, summed per thread in j
//      order, then by a fixed tree over the 256 threads; an invisible j gets the sentinel -1
//      (weights are >= 0 or NaN), so pass 3 reads no positions;
//   3. the weighted V rows per output dim d in 16 partial sums (entry j in partial j mod 16, each
//      in j order, sentinels skipped): thread li is (d, e) = (li % D, li / D) for e < E, E the
//      largest power of two <= min(16, 256 / D), and holds the partials p = e, e + E, ...; the
//      16 are added in one fixed tree, p with p + 8, then + 4, + 2, + 1 (the first levels in the
//      thread, the last E - 1 adds through workgroup memory), and divided by the sum. A D past
//      256 takes E = 1 and dims d, d + 256, ... a thread.
// Every float op of a query is a function of the entries it sees, their index j and d alone,
// never of T or N (nor of E: the tree is the same for every E): the same bits whatever the batch,
// chunking or cache path. Inside test_attention.c's bound.
// Position differences are taken in u32 (kv_pos <= q_pos first, so q_pos - kv_pos < 2^32 is
// exact), against window - 1 and layer_window - 1 given as u32 (the runtime clamps a window
// past 2^32 to 2^32, which then excludes nothing).
struct PA {
  T: u32, H: u32, Hkv: u32, D: u32,
  N: u32, kv_f16: u32, window: u32, wm1: u32,
  n_sinks: u32, layer: u32, lwm1: u32, scale: f32,
  s_off: u32, pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<storage, read> Q: array<f32>;
@group(0) @binding(1) var<storage, read> Kc: array<u32>;
@group(0) @binding(2) var<storage, read> Vc: array<u32>;
@group(0) @binding(3) var<storage, read> QP: array<i32>;
@group(0) @binding(4) var<storage, read> KP: array<i32>;
@group(0) @binding(5) var<storage, read_write> S: array<f32>;
@group(0) @binding(6) var<storage, read_write> O: array<f32>;
@group(0) @binding(7) var<uniform> P: PA;

var<workgroup> red: array<f32, 256>;
var<workgroup> cnt: array<u32, 256>;
var<workgroup> grp: array<f32, 256>; // pass 3's group sums, [e][d]

fn visible(j: u32, qp: i32) -> bool {
  let kp = KP[j];
  if (kp > qp) { return false; }
  let diff = bitcast<u32>(qp) - bitcast<u32>(kp);
  if (P.layer != 0u && diff > P.lwm1) { return false; }
  if (P.window == 0u || j < P.n_sinks) { return true; }
  return diff <= P.wm1;
}

// Element e of entry j's KV head g, from a cache buffer (F32 words or F16 halves).
fn kv_k(i: u32) -> f32 {
  if (P.kv_f16 != 0u) { return f16_to_f32((Kc[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu); }
  return bitcast<f32>(Kc[i]);
}
fn kv_v(i: u32) -> f32 {
  if (P.kv_f16 != 0u) { return f16_to_f32((Vc[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu); }
  return bitcast<f32>(Vc[i]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let t = wg.y;
  let h = wg.x;
  let D = P.D;
  let g = h / (P.H / P.Hkv);
  let qo = (t * P.H + h) * D;
  let qp = QP[t];
  let so = P.s_off + (t * P.H + h) * P.N;
  // pass 1: scores and their max
  var m = 0.0; // the max of this thread's scores, once it has one (seen > 0)
  var seen = 0u;
  for (var j = li; j < P.N; j += 256u) {
    if (!visible(j, qp)) { continue; }
    let ko = (j * P.Hkv + g) * D;
    // four partial dots (dims d mod 4), added in a fixed order
    var p0 = 0.0;
    var p1 = 0.0;
    var p2 = 0.0;
    var p3 = 0.0;
    for (var d = 0u; d < D; d += 4u) {
      p0 = p0 + Q[qo + d] * kv_k(ko + d);
      if (d + 1u < D) { p1 = p1 + Q[qo + d + 1u] * kv_k(ko + d + 1u); }
      if (d + 2u < D) { p2 = p2 + Q[qo + d + 2u] * kv_k(ko + d + 2u); }
      if (d + 3u < D) { p3 = p3 + Q[qo + d + 3u] * kv_k(ko + d + 3u); }
    }
    let dot = (p0 + p1) + (p2 + p3);
    let s = P.scale * dot;
    S[so + j] = s;
    m = select(s, max(m, s), seen > 0u);
    seen += 1u;
  }
  red[li] = m;
  cnt[li] = seen;
  workgroupBarrier();
  for (var w = 128u; w > 0u; w >>= 1u) {
    if (li < w) {
      if (cnt[li + w] != 0u && (cnt[li] == 0u || red[li + w] > red[li])) { red[li] = red[li + w]; }
      cnt[li] = cnt[li] + cnt[li + w];
    }
    workgroupBarrier();
  }
  m = red[0];
  let total = workgroupUniformLoad(&cnt[0]); // its barrier: every m read before red is reused
  if (total == 0u) {
    for (var d = li; d < D; d += 256u) { O[qo + d] = 0.0; }
    return;
  }
  // pass 2: weights in place (the sentinel -1 at invisible entries), and their sum
  var sum = 0.0;
  for (var j = li; j < P.N; j += 256u) {
    if (!visible(j, qp)) {
      S[so + j] = -1.0;
      continue;
    }
    let s = S[so + j];
    var wj = 1.0;
    if (s != m) { wj = exp_f32(s - m); }
    S[so + j] = wj;
    sum = sum + wj;
  }
  red[li] = sum;
  storageBarrier();
  workgroupBarrier();
  for (var w = 128u; w > 0u; w >>= 1u) {
    if (li < w) { red[li] = red[li] + red[li + w]; }
    workgroupBarrier();
  }
  let denom = red[0];
  // pass 3: the weighted V rows, 16 partial sums by entry j mod 16 (each j ascending); thread
  // (dl, e) holds partials p = e + k E, k < 16 / E: per step of 16 entries, 16 / E independent
  // loads and adds
  let DD = min(D, 256u);
  let E = 1u << firstLeadingBit(min(16u, 256u / DD));
  let nk = 16u / E;
  let e = li / DD;
  let dl = li % DD;
  if (e < E) {
    for (var d = dl; d < D; d += 256u) {
      var acc: array<f32, 16>;
      for (var j0 = 0u; j0 < P.N; j0 += 16u) {
        for (var k = 0u; k < 16u; k++) { // a constant bound (unrollable), left at nk
          if (k == nk) { break; }
          let j = j0 + e + k * E;
          if (j < P.N) {
            let wj = S[so + j];
            if (wj != -1.0) { acc[k] = acc[k] + wj * kv_v((j * P.Hkv + g) * D + d); }
          }
        }
      }
      // the tree's levels inside the thread: partial p with p + 8, + 4, ... down to + E
      for (var hk = nk / 2u; hk > 0u; hk >>= 1u) {
        for (var k = 0u; k < hk; k++) { acc[k] = acc[k] + acc[k + hk]; }
      }
      if (E == 1u) { O[qo + d] = acc[0] / denom; } else { grp[li] = acc[0]; }
    }
  }
  if (E > 1u) {
    // its last levels: group e with e + E / 2, ... down to + 1
    workgroupBarrier();
    for (var he = E / 2u; he > 0u; he >>= 1u) {
      if (e < he) { grp[li] = grp[li] + grp[li + he * DD]; }
      workgroupBarrier();
    }
    if (e == 0u) { O[qo + dl] = grp[li] / denom; }
  }
}
