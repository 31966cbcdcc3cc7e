// attention.wgsl — causal grouped-query attention of T query tokens over N cached entries
// (pl_attn_args of kernels/kernels.h): query head h uses KV head h / (H / Hkv); entry j is
// visible to query t iff
//     kv_pos[j] <= q_pos[t]  and  (window == 0 || j < n_sinks || q_pos[t] - kv_pos[j] < window)
//     and  (layer_window == 0 || q_pos[t] - kv_pos[j] < layer_window);
// a query that sees nothing gets zeros. K and V are F32 or F16 ([N][Hkv][D]; F16 as a byte
// stream, decoded exactly by common.wgsl); D at most 256. Three steps as kernels/ref/attention.c:
//   1. the score of each visible entry, a float dot of D in four partial dots (dim d mod 4, added
//      (p0 + p1) + (p2 + p3)) times scale; m, their max (exact in any order);
//   2. the weights w_j = exp(s_j - m), 1 at the max;
//   3. the entries in chunks of 64 (chunk c: j = 64 c .. 64 c + 63); per chunk, for each output
//      dim d, 16 partial sums (entry j in partial j mod 16, each its 4 entries' w_j v_j[d] in j
//      order from +0, invisible entries and those past N skipped) added in one fixed tree, p
//      with p + 8, then + 4, + 2, + 1: O_c[d]; the weights likewise: L_c; then O[d] = (((+0 +
//      O_0[d]) + O_1[d]) + ...) / (((+0 + L_0) + L_1) + ...) over the chunks in order.
// Every float op of a query is a function of the entries it sees, their index j and d alone,
// never of T or N: a chunk past the query's entries adds +0 to a sum that started at +0 (never
// -0), which changes no bit. So the same bits whatever the batch, chunking or cache path, and
// whichever of the two ways below computes them. Inside test_attention.c's bound.
// P.mode picks the way (both record in the runtime's attention()):
//   0: one dispatch, one workgroup of 256 threads per (token, head) (prefill: T H workgroups):
//      scores and weights into S, then the chunks in order, each into the running sums;
//   1, 2 and attn_combine.wgsl: three dispatches (decode: at T = 1 mode 0 runs only H
//      workgroups, one per head, each through all N entries), a workgroup per (head, token,
//      chunk) in 1 and 2: 1, the chunk's 64 scores (4 threads an entry, each one of the four
//      partial dots: score_part) into S, the chunk's max and count into MX; 2, m and the count
//      from every chunk's MX (a tree: exact in any order), the chunk's weights, O_c and L_c into
//      OC and LC; attn_combine.wgsl, the running sums over the chunks in order and the division
//      (and the rows' quantize for the next matmul).
// A chunk's sums for one d: in mode 0 one thread's (chunk_sums with r 0 of R 1: 16 independent
// chains of 4 entries, then the tree); mode 0 runs G = the largest power of two <= min(16, 256 /
// D) chunks at a time, thread (d, e) = (li % D, li / D) on chunk c0 + e, and adds them in chunk
// order. In mode 2 four threads a d (chunk_sums with r = li / 64 of R 4: partials r, r + 4, r +
// 8, r + 12, the tree's levels + 8 and + 4 inside the thread), then the levels + 2 and + 1
// across them through workgroup memory: the same partials, the same tree, the same bits.
// Position differences are taken in u32 (kv_pos <= q_pos first, so q_pos - kv_pos < 2^32 is
// exact), against window - 1 and layer_window - 1 given as u32 (the runtime clamps a window
// past 2^32 to 2^32, which then excludes nothing).
// The scratch S (floats from s_off): [T][H][N] scores and weights; modes 1-2 (and the combine)
// also MX [T][H][nc] (max, count) pairs, LC [T][H][nc] and OC [T][H][nc][D] (nc = ceil(N / 64)),
// in that order after the scores.
struct PA {
  T: u32, H: u32, Hkv: u32, D: u32,
  N: u32, kv_f16: u32, window: u32, wm1: u32,
  n_sinks: u32, layer: u32, lwm1: u32, scale: f32,
  s_off: u32, mode: u32, pad1: u32, pad2: u32,
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
var<workgroup> grp: array<f32, 256>; // mode 0: a batch's O_c, [e][d]
var<workgroup> grpl: array<f32, 16>; // and its L_c, [e]
var<workgroup> ex: array<f32, 1024>; // mode 2: the four threads' partials of each d, [r][d]
var<workgroup> exl: array<f32, 4>; // and of the weights

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

// Partial dot q (0..3) of entry j's score: the products of dims d = q, q + 4, ... < D of the
// query at Q[qo..] and entry j's key (KV head g), added in d order from +0.
fn score_part(j: u32, qo: u32, g: u32, D: u32, q: u32) -> f32 {
  let ko = (j * P.Hkv + g) * D;
  var p = 0.0;
  for (var d = q; d < D; d += 4u) { p = p + Q[qo + d] * kv_k(ko + d); }
  return p;
}

// The score of entry j (visible): its four partial dots added in a fixed order, times scale.
fn score(j: u32, qo: u32, g: u32, D: u32) -> f32 {
  let dot = (score_part(j, qo, g, D, 0u) + score_part(j, qo, g, D, 1u))
          + (score_part(j, qo, g, D, 2u) + score_part(j, qo, g, D, 3u));
  return P.scale * dot;
}

// The weight of a visible entry's score s under the max m.
fn weight(s: f32, m: f32) -> f32 {
  var wj = 1.0;
  if (s != m) { wj = exp_f32(s - m); }
  return wj;
}

// The max of the threads' m (each counting where its seen > 0) by a tree over the 256: the
// workgroup's max, for every thread; cnt[0] then holds the count (read it by
// workgroupUniformLoad: a uniform value, and a barrier).
fn reduce_max(m: f32, seen: u32, li: u32) -> f32 {
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
  return red[0];
}

// Chunk c's sums for output dim d, the partials p = r, r + R, ... of the 16 (R 1: all of them;
// R 4: four), from the weights in S from so (-1: invisible): entry j in partial j mod 16 (its 4
// entries in j order from +0, past N skipped), then the tree's levels p with p + 8, + 4, + 2, + 1
// down to + R, those inside the thread's partials: returns (partial r after them, its weights').
// With R 1 that is (O_c[d], L_c); with R 4 the levels + 2 and + 1 are the caller's.
// R is 1 or 4.
fn chunk_sums(c: u32, so: u32, g: u32, D: u32, d: u32, r: u32, R: u32) -> vec2f {
  var acc: array<f32, 16>; // acc[m]: partial r + R m
  var accl: array<f32, 16>;
  for (var i = 0u; i < 4u; i++) {
    for (var m = 0u; m < 16u; m++) { // the partials' loads independent
      let j = c * 64u + r + R * m + 16u * i;
      if (R * m < 16u && j < P.N) {
        let wj = S[so + j];
        if (wj != -1.0) {
          acc[m] = acc[m] + wj * kv_v((j * P.Hkv + g) * D + d);
          accl[m] = accl[m] + wj;
        }
      }
    }
  }
  if (R == 1u) { // the whole tree
    for (var hk = 8u; hk > 0u; hk >>= 1u) {
      for (var k = 0u; k < 8u; k++) {
        if (k < hk) {
          acc[k] = acc[k] + acc[k + hk];
          accl[k] = accl[k] + accl[k + hk];
        }
      }
    }
  } else { // R 4: acc[m] is partial r + 4 m; level + 8 pairs m with m + 2, level + 4 m with m + 1
    acc[0] = acc[0] + acc[2];
    accl[0] = accl[0] + accl[2];
    acc[1] = acc[1] + acc[3];
    accl[1] = accl[1] + accl[3];
    acc[0] = acc[0] + acc[1];
    accl[0] = accl[0] + accl[1];
  }
  return vec2f(acc[0], accl[0]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let t = wg.y;
  let h = wg.x;
  let D = P.D;
  let g = h / (P.H / P.Hkv);
  let qo = (t * P.H + h) * D;
  let qp = QP[t];
  let th = t * P.H + h;
  let so = P.s_off + th * P.N;
  let nc = (P.N + 63u) / 64u;
  let mx = P.s_off + P.T * P.H * P.N; // MX, LC, OC after the scores
  let lc = mx + 2u * P.T * P.H * nc;
  let oc = lc + P.T * P.H * nc;
  let c = wg.z; // modes 1 and 2: the chunk
  if (P.mode == 1u) { // the chunk's scores (entry li / 4, partial li % 4), its max and count
    let j = c * 64u + li / 4u;
    let vis = j < P.N && visible(j, qp);
    var pq = 0.0;
    if (vis) { pq = score_part(j, qo, g, D, li % 4u); }
    grp[li] = pq;
    workgroupBarrier();
    var m = 0.0;
    var seen = 0u;
    if (vis && li % 4u == 0u) { // score()'s adds and product
      m = P.scale * ((grp[li] + grp[li + 1u]) + (grp[li + 2u] + grp[li + 3u]));
      S[so + j] = m;
      seen = 1u;
    }
    let mz = reduce_max(m, seen, li);
    let cz = workgroupUniformLoad(&cnt[0]);
    if (li == 0u) {
      S[mx + 2u * (th * nc + c)] = mz;
      S[mx + 2u * (th * nc + c) + 1u] = f32(cz);
    }
    return;
  }
  if (P.mode == 2u) {
    // m and the count over the chunks' (max: exact in any order; the count an integer)
    var m = 0.0;
    var seen = 0u;
    for (var z = li; z < nc; z += 256u) {
      let mz = S[mx + 2u * (th * nc + z)];
      let cz = u32(S[mx + 2u * (th * nc + z) + 1u]);
      if (cz != 0u && (seen == 0u || mz > m)) { m = mz; }
      seen += cz;
    }
    m = reduce_max(m, seen, li);
    let total = workgroupUniformLoad(&cnt[0]);
    if (li < 64u) {
      let j = c * 64u + li;
      if (j < P.N) {
        var wj = -1.0;
        if (total != 0u && visible(j, qp)) { wj = weight(S[so + j], m); }
        S[so + j] = wj;
      }
    }
    storageBarrier();
    workgroupBarrier();
    // thread (d, r) = (li % 64 + 64 k, li / 64): partials r, r + 4, r + 8, r + 12 of dim d
    let r = li / 64u;
    for (var d = li % 64u; d < D; d += 64u) {
      let v = chunk_sums(c, so, g, D, d, r, 4u);
      ex[r * 256u + d] = v.x;
      if (d == 0u) { exl[r] = v.y; }
    }
    workgroupBarrier();
    if (li < D) { // the tree's levels + 2 and + 1
      S[oc + (th * nc + c) * D + li] = (ex[li] + ex[512u + li]) + (ex[256u + li] + ex[768u + li]);
      if (li == 0u) { S[lc + th * nc + c] = (exl[0] + exl[2]) + (exl[1] + exl[3]); }
    }
    return;
  }
  // mode 0. Pass 1: scores and their max
  var m = 0.0; // the max of this thread's scores, once it has one (seen > 0)
  var seen = 0u;
  for (var j = li; j < P.N; j += 256u) {
    if (!visible(j, qp)) { continue; }
    let s = score(j, qo, g, D);
    S[so + j] = s;
    m = select(s, max(m, s), seen > 0u);
    seen += 1u;
  }
  m = reduce_max(m, seen, li);
  let total = workgroupUniformLoad(&cnt[0]);
  if (total == 0u) {
    if (li < D) { O[qo + li] = 0.0; }
    return;
  }
  // pass 2: weights in place (the sentinel -1 at invisible entries)
  for (var j = li; j < P.N; j += 256u) {
    var wj = -1.0;
    if (visible(j, qp)) { wj = weight(S[so + j], m); }
    S[so + j] = wj;
  }
  storageBarrier();
  workgroupBarrier();
  // pass 3: the chunks' sums, G chunks at a time (thread (d, e) chunk c0 + e of the batch: G =
  // the largest power of two <= min(16, 256 / D)), into the running sums in chunk order
  let G = 1u << firstLeadingBit(min(16u, 256u / D));
  let e = li / D;
  let dl = li % D;
  var acco = 0.0;
  var accl = 0.0;
  for (var c0 = 0u; c0 < nc; c0 += G) {
    if (e < G && c0 + e < nc) {
      let r = chunk_sums(c0 + e, so, g, D, dl, 0u, 1u);
      grp[li] = r.x;
      if (dl == 0u) { grpl[e] = r.y; }
    }
    workgroupBarrier();
    if (li < D) {
      for (var k = 0u; k < G; k++) {
        if (c0 + k < nc) {
          acco = acco + grp[k * D + li];
          accl = accl + grpl[k];
        }
      }
    }
    workgroupBarrier(); // every read of grp and grpl done before the next batch's writes
  }
  if (li < D) { O[qo + li] = acco / accl; }
}
