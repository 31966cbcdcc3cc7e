// attention.wgsl — causal grouped-query attention of T query tokens over N cached entries
// (pl_attn_args of kernels/kernels.h): query head h uses KV head h / (H / Hkv); entry j is
// visible to query t iff
//     kv_pos[j] <= q_pos[t]  and  (window == 0 || j < n_sinks || q_pos[t] - kv_pos[j] < window)
//     and  (layer_window == 0 || q_pos[t] - kv_pos[j] < layer_window);
// a query that sees nothing gets zeros. K and V are F32 or F16 ([N][Hkv][D]; F16 as a byte
// stream, decoded exactly by common.wgsl); D at most 256. kernels/ref/attention.c's softmax,
// its sums in an order of the set's own, over chunks of 64 entries (chunk c: j = 64 c .. 64 c +
// 63), each chunk's weights relative to its own max:
//   1. the score of each visible entry, a float dot of D in four partial dots (dims d mod 4, each
//      in d order from +0: score_part), added (p0 + p1) + (p2 + p3), times scale;
//   2. per chunk with a visible entry, m_c, the max of its scores (exact in any order), and the
//      weights w_j = exp(s_j - m_c), 1 at the max (invisible entries: the sentinel -1);
//   3. per chunk, for each output dim d, 16 partial sums (entry j in partial j mod 16, each its 4
//      entries' w_j v_j[d], each product rounded, in j order from +0, invisible entries and those
//      past N skipped) added in one fixed tree, p with p + 8, then + 4, + 2, + 1: O_c[d]; the
//      weights likewise: L_c;
//   4. m, the max of the chunks' m_c; per chunk with a visible entry, in chunk order, r_c =
//      exp(m_c - m) (1 where m_c = m), A[d] += r_c O_c[d] and B += r_c L_c from +0, each product
//      rounded before its add (rnd: no compiler fuses them), then O[d] = A[d] / B (B >= 1: the
//      max chunk's r_c and its max entry's weight are exactly 1).
// Every float op of a query is a function of the entries it sees, their index j and d alone,
// never of T or N: a chunk without a visible entry is skipped, and one with them is the same
// chunk whatever lies past N. So the same bits whatever the batch, chunking or cache path, and
// whichever of the two ways below computes them. Inside test_attention.c's bound.
// P.mode picks the way (both record in the runtime's attention()):
//   0: one dispatch, one workgroup of 256 threads per (token, head) (prefill: T H workgroups):
//      the scores into S; each chunk's max and count (four threads a chunk) into MC; m; the
//      weights; then the chunks G at a time, each into the running sums;
//   1 and attn_combine.wgsl: two dispatches (decode: at T = 1 mode 0 runs only H workgroups, one
//      per head, each through all N entries): 1, a workgroup per (head, token, chunk): the
//      chunk's 64 scores (4 threads an entry, each one of the partial dots), its max and count
//      (a tree), its weights (in workgroup memory), O_c and L_c (4 threads a dim) into MC, LC
//      and OC;
//      attn_combine.wgsl, step 4 a float a thread (and the rows' quantize for the next matmul).
// A chunk's sums for one d: in mode 0 one thread's (chunk_sums: 16 independent chains of 4
// entries, then the tree); mode 0 runs G = the largest power of two <= min(16, 256 /
// D) chunks at a time, thread (d, e) = (li % D, li / D) on chunk c0 + e, and adds them in chunk
// order. In mode 1 four threads a d (chunk_sums4, r = li / 64: partials r, r + 4, r + 8, r + 12,
// the tree's levels + 8 and + 4 inside the thread), then the levels + 2 and + 1 across them
// through workgroup memory: the same partials, the same tree, the same bits.
// Position differences are taken in u32 (kv_pos <= q_pos first, so q_pos - kv_pos < 2^32 is
// exact), against window - 1 and layer_window - 1 given as u32 (the runtime clamps a window
// past 2^32 to 2^32, which then excludes nothing).
// The scratch S (floats from s_off): mode 0, [T][H][N] scores and weights, then MC [T][H][nc]
// (m_c, n_c) pairs (nc = ceil(N / 64)); the split, MC, then LC [T][H][nc] and OC [T][H][nc][D]
// (its scores and weights stay in workgroup memory).
// Loads a thread makes in a loop are issued in batches (score_part's eight dims, chunk_sums4's
// sixteen entries, attn_combine.wgsl's eight chunks), indices clamped in bounds and the values
// past the end not used: a batch's loads wait one memory round trip together instead of one each
// (a decode step's split attention on the H200, 256 back to back, warm: 38.9 -> 31.2 us at H 32,
// D 64, N 512, 48.6 -> 37.7 us at N 2048; D 128: 31.2 -> 24.5 and 61.8 -> 51.2 us).
struct PA {
  T: u32, H: u32, Hkv: u32, D: u32,
  N: u32, kv_f16: u32, window: u32, wm1: u32,
  n_sinks: u32, layer: u32, lwm1: u32, scale: f32,
  s_off: u32, mode: u32, zero: u32, pad2: u32,
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
var<workgroup> ex: array<f32, 1024>; // mode 1: the four threads' partials of each d, [r][d]
var<workgroup> exl: array<f32, 4>; // and of the weights
var<workgroup> sc: array<f32, 64>; // mode 1: the chunk's scores
var<workgroup> wt: array<f32, 64>; // mode 1: the chunk's weights (-1: invisible, or past N)

// A rounding point (P.zero is 0): the product is stored as an f32 before its add.
fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }

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
// Eight dims a batch, their loads first (indices clamped into the head; a dim past D is loaded
// and not added): the loads of a batch are in flight together where one at a time would each
// wait a memory round trip; the adds are the same chain. Each product rounded before its add
// (rnd), so no compiler fuses it into an FMA in one caller and not in another.
fn score_part(j: u32, qo: u32, g: u32, D: u32, q: u32) -> f32 {
  let ko = (j * P.Hkv + g) * D;
  var p = 0.0;
  for (var d0 = q; d0 < D; d0 += 32u) {
    var qa: array<f32, 8>;
    var ka: array<f32, 8>;
    for (var k = 0u; k < 8u; k++) {
      let d = min(d0 + 4u * k, D - 1u);
      qa[k] = Q[qo + d];
      ka[k] = kv_k(ko + d);
    }
    for (var k = 0u; k < 8u; k++) {
      if (d0 + 4u * k < D) { p = p + rnd(qa[k] * ka[k]); }
    }
  }
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

// Chunk c's sums for output dim d in one thread: (O_c[d], L_c) from the weights in S from so
// (-1: invisible): 16 partials, entry j in partial j mod 16 (its 4 entries in j order from +0,
// past N skipped, each product rounded before its add: chunk_sums4 forms the same partials in
// another function, and rnd keeps a compiler from fusing one and not the other), added in the
// fixed tree p with p + 8, + 4, + 2, + 1.
fn chunk_sums(c: u32, so: u32, g: u32, D: u32, d: u32) -> vec2f {
  var acc: array<f32, 16>;
  var accl: array<f32, 16>;
  for (var i = 0u; i < 4u; i++) {
    for (var p = 0u; p < 16u; p++) { // the 16 partials' loads independent
      let j = c * 64u + p + 16u * i;
      if (j < P.N) {
        let wj = S[so + j];
        if (wj != -1.0) {
          acc[p] = acc[p] + rnd(wj * kv_v((j * P.Hkv + g) * D + d));
          accl[p] = accl[p] + wj;
        }
      }
    }
  }
  for (var hk = 8u; hk > 0u; hk >>= 1u) {
    for (var k = 0u; k < 8u; k++) {
      if (k < hk) {
        acc[k] = acc[k] + acc[k + hk];
        accl[k] = accl[k] + accl[k + hk];
      }
    }
  }
  return vec2f(acc[0], accl[0]);
}

// Chunk_sums' partials r, r + 4, r + 8, r + 12 (r < 4) for dim d, and the tree's levels + 8 and
// + 4 over them (they pair partials of one r): partial r after those levels, and its weights'.
// Four threads, r = 0..3, then add (0 + 2) + (1 + 3): chunk_sums' bits. The chunk's weights come
// from workgroup memory (wt: -1 at an invisible entry or one past N); the 16 values are loaded
// whatever the weight (an index past N clamped to N - 1), so all 16 loads are in flight at once.
fn chunk_sums4(c: u32, g: u32, D: u32, d: u32, r: u32) -> vec2f {
  var va: array<f32, 16>;
  for (var k = 0u; k < 16u; k++) {
    let j = min(c * 64u + r + 4u * k, P.N - 1u);
    va[k] = kv_v((j * P.Hkv + g) * D + d);
  }
  var acc: array<f32, 4>; // acc[m]: partial r + 4 m
  var accl: array<f32, 4>;
  for (var i = 0u; i < 4u; i++) {
    for (var m = 0u; m < 4u; m++) {
      let w = wt[r + 4u * m + 16u * i];
      if (w != -1.0) {
        acc[m] = acc[m] + rnd(w * va[m + 4u * i]);
        accl[m] = accl[m] + w;
      }
    }
  }
  // level + 8 pairs m with m + 2, level + 4 m with m + 1
  acc[0] = acc[0] + acc[2];
  accl[0] = accl[0] + accl[2];
  acc[1] = acc[1] + acc[3];
  accl[1] = accl[1] + accl[3];
  return vec2f(acc[0] + acc[1], accl[0] + accl[1]);
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
  let mc = P.s_off + select(P.T * P.H * P.N, 0u, P.mode == 1u); // mode 0: MC after the scores
  let lc = mc + 2u * P.T * P.H * nc;
  let oc = lc + P.T * P.H * nc;
  if (P.mode == 1u) { // chunk c of a split: its scores, max, count, weights and sums
    let c = wg.z;
    let j = c * 64u + li / 4u; // entry li / 4, partial dot li % 4
    let vis = j < P.N && visible(j, qp);
    var pq = 0.0;
    if (vis) { pq = score_part(j, qo, g, D, li % 4u); }
    grp[li] = pq;
    workgroupBarrier();
    var s = 0.0;
    var seen = 0u;
    if (vis && li % 4u == 0u) { // score()'s adds and product
      s = P.scale * ((grp[li] + grp[li + 1u]) + (grp[li + 2u] + grp[li + 3u]));
      sc[li / 4u] = s;
      seen = 1u;
    }
    let m = reduce_max(s, seen, li);
    let n = workgroupUniformLoad(&cnt[0]);
    if (li < 64u) {
      let jj = c * 64u + li;
      var wj = -1.0;
      if (jj < P.N && n != 0u && visible(jj, qp)) { wj = weight(sc[li], m); }
      wt[li] = wj;
    }
    workgroupBarrier();
    // thread (d, r) = (li % 64 + 64 k, li / 64): partials r, r + 4, r + 8, r + 12 of dim d
    let r = li / 64u;
    for (var d = li % 64u; d < D; d += 64u) {
      let v = chunk_sums4(c, g, D, d, r);
      ex[r * 256u + d] = v.x;
      if (d == 0u) { exl[r] = v.y; }
    }
    workgroupBarrier();
    if (li < D) { // the tree's levels + 2 and + 1
      S[oc + (th * nc + c) * D + li] = (ex[li] + ex[512u + li]) + (ex[256u + li] + ex[768u + li]);
    }
    if (li == 0u) {
      S[lc + th * nc + c] = (exl[0] + exl[2]) + (exl[1] + exl[3]);
      S[mc + 2u * (th * nc + c)] = m;
      S[mc + 2u * (th * nc + c) + 1u] = f32(n);
    }
    return;
  }
  // mode 0. Pass 1: the scores
  for (var j = li; j < P.N; j += 256u) {
    if (visible(j, qp)) { S[so + j] = score(j, qo, g, D); }
  }
  storageBarrier();
  workgroupBarrier();
  // pass 2: each chunk's max and count, four threads a chunk (16 entries each, 64 chunks a
  // round), into MC; the chunks' max m and count, a tree
  var m = 0.0; // the max of this thread's chunks' maxes, once it has one (seen > 0)
  var seen = 0u;
  for (var c0 = 0u; c0 < nc; c0 += 64u) {
    let c = c0 + li / 4u;
    var pm = 0.0;
    var pn = 0u;
    if (c < nc) {
      let j0 = c * 64u + (li % 4u) * 16u;
      for (var j = j0; j < min(P.N, j0 + 16u); j++) {
        if (visible(j, qp)) {
          let s = S[so + j];
          pm = select(s, max(pm, s), pn > 0u);
          pn += 1u;
        }
      }
    }
    red[li] = pm;
    cnt[li] = pn;
    workgroupBarrier();
    if (li % 4u == 0u && c < nc) {
      var mcc = 0.0;
      var n = 0u;
      for (var q = 0u; q < 4u; q++) {
        if (cnt[li + q] != 0u && (n == 0u || red[li + q] > mcc)) { mcc = red[li + q]; }
        n += cnt[li + q];
      }
      S[mc + 2u * (th * nc + c)] = mcc;
      S[mc + 2u * (th * nc + c) + 1u] = f32(n);
      if (n > 0u) {
        m = select(mcc, max(m, mcc), seen > 0u);
        seen += n;
      }
    }
    workgroupBarrier();
  }
  m = reduce_max(m, seen, li);
  let total = workgroupUniformLoad(&cnt[0]);
  if (total == 0u) {
    if (li < D) { O[qo + li] = 0.0; }
    return;
  }
  storageBarrier();
  workgroupBarrier();
  // the weights in place, each relative to its chunk's max (the sentinel -1 at invisible entries)
  for (var j = li; j < P.N; j += 256u) {
    var wj = -1.0;
    if (visible(j, qp)) { wj = weight(S[so + j], S[mc + 2u * (th * nc + j / 64u)]); }
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
      let r = chunk_sums(c0 + e, so, g, D, dl);
      grp[li] = r.x;
      if (dl == 0u) { grpl[e] = r.y; }
    }
    workgroupBarrier();
    if (li < D) {
      for (var k = 0u; k < G; k++) {
        if (c0 + k < nc && S[mc + 2u * (th * nc + c0 + k) + 1u] != 0.0) {
          let rc = attn_rescale(S[mc + 2u * (th * nc + c0 + k)], m);
          acco = acco + rnd(rc * grp[k * D + li]);
          accl = accl + rnd(rc * grpl[k]);
        }
      }
    }
    workgroupBarrier(); // every read of grp and grpl done before the next batch's writes
  }
  if (li < D) { O[qo + li] = acco / accl; }
}
