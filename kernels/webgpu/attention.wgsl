// attention.wgsl — causal grouped-query attention of T query tokens over N cached entries
// (pl_attn_args of kernels/kernels.h): query head h uses KV head h / (H / Hkv); entry j is
// visible to query t iff
//     kv_pos[j] <= q_pos[t]  and  (window == 0 || j < n_sinks || q_pos[t] - kv_pos[j] < window)
//     and  (layer_window == 0 || q_pos[t] - kv_pos[j] < layer_window);
// a query that sees nothing gets zeros. K and V are F32 or F16 ([N][Hkv][D]; F16 as a byte
// stream, decoded exactly by common.wgsl). One workgroup per (token, head), three passes as
// kernels/ref/attention.c: scores (a float dot of D, times scale) into S and their max; weights
// exp(s - m) (1 at the max) in place and their sum; each thread a few output dims, the weighted
// V rows summed in four partial sums (entry j in sum j mod 4, each in j order, then (s0 + s1) +
// (s2 + s3)) and divided by the sum; the scores' dots likewise in four partial dots (dim d mod 4).
// A query's every float op depends only on the entries it sees, never on T or N: the same bits
// whatever the batch, chunking or cache path. Inside test_attention.c's bound.
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

var<workgroup> red: array<f32, 64>;
var<workgroup> cnt: array<u32, 64>;

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

@compute @workgroup_size(64)
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
  for (var j = li; j < P.N; j += 64u) {
    if (!visible(j, qp)) { continue; }
    let ko = (j * P.Hkv + g) * D;
    // four partial dots (dims d mod 4), added in a fixed order: independent chains, and the same
    // sum for a query whatever T, N or the cache path
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
  for (var w = 32u; w > 0u; w >>= 1u) {
    if (li < w) {
      if (cnt[li + w] != 0u && (cnt[li] == 0u || red[li + w] > red[li])) { red[li] = red[li + w]; }
      cnt[li] = cnt[li] + cnt[li + w];
    }
    workgroupBarrier();
  }
  m = red[0];
  let total = workgroupUniformLoad(&cnt[0]);
  if (total == 0u) {
    for (var d = li; d < D; d += 64u) { O[qo + d] = 0.0; }
    return;
  }
  // pass 2: weights in place, and their sum
  var sum = 0.0;
  for (var j = li; j < P.N; j += 64u) {
    if (!visible(j, qp)) { continue; }
    let s = S[so + j];
    var e = 1.0;
    if (s != m) { e = exp_f32(s - m); }
    S[so + j] = e;
    sum = sum + e;
  }
  red[li] = sum;
  storageBarrier();
  workgroupBarrier();
  for (var w = 32u; w > 0u; w >>= 1u) {
    if (li < w) { red[li] = red[li] + red[li + w]; }
    workgroupBarrier();
  }
  let denom = red[0];
  // pass 3: the weighted V rows per output dim, in four partial sums (entries j mod 4, each j
  // ascending) added in a fixed order: four independent chains of loads and adds, and entry j
  // always in sum j mod 4, so a query's result does not depend on N (T, chunking, cache path)
  let st = P.Hkv * D;
  for (var d = li; d < D; d += 64u) {
    var a0 = 0.0;
    var a1 = 0.0;
    var a2 = 0.0;
    var a3 = 0.0;
    for (var j = 0u; j < P.N; j += 4u) {
      let b = (j * P.Hkv + g) * D + d;
      if (visible(j, qp)) { a0 = a0 + S[so + j] * kv_v(b); }
      if (j + 1u < P.N && visible(j + 1u, qp)) { a1 = a1 + S[so + j + 1u] * kv_v(b + st); }
      if (j + 2u < P.N && visible(j + 2u, qp)) { a2 = a2 + S[so + j + 2u] * kv_v(b + 2u * st); }
      if (j + 3u < P.N && visible(j + 3u, qp)) { a3 = a3 + S[so + j + 3u] * kv_v(b + 3u * st); }
    }
    O[qo + d] = ((a0 + a1) + (a2 + a3)) / denom;
  }
}
