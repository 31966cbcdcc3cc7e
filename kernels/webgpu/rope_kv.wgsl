// rope_kv.wgsl — the attention's inputs of a step in one dispatch: from the rows [T][q | k | v]
// (x_off, ld floats apart; q: H heads of D, k and v: Hkv heads), per head: the bias added (bit 0
// of flags for q, 1 for k, 2 for v: add.wgsl's one float add), the per-head RMSNorm (bits 3 and 4,
// qwen3's q_norm and k_norm: rmsnorm.wgsl's operations in its order, with the same 256 strided
// partial sums and tree), then RoPE (rope.wgsl's rotation of each pair by its token's (cos, sin)
// from CS; dims past 2 half copied); q's heads to Qo [T][H][D], k's to the cache KC at the token's
// slot, and v's (biased) to VC at that slot. The slot of position p = p0 + t is
// engine/runtime/kvcache.c's pl_kvcache_slot: p below the sinks or no ring (ring 0): p; else
// sinks + (p - sinks) mod ring. So Qo, KC and VC hold the bits that the bias adds, the norms,
// the two RoPEs and the cache copies would write one after another.
// One workgroup of 256 per (head of q or k, token): grid (H + Hkv, T).
struct PK { T: u32, H: u32, Hkv: u32, D: u32, half: u32, neox: u32, ld: u32, x_off: u32,
  flags: u32, bq: u32, bk: u32, bv: u32, nq: u32, nk: u32, eps: f32, p0: u32,
  sinks: u32, ring: u32, zero: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read> NW: array<f32>;
@group(0) @binding(3) var<storage, read> CS: array<vec2f>;
@group(0) @binding(4) var<storage, read_write> Qo: array<f32>;
@group(0) @binding(5) var<storage, read_write> KC: array<f32>;
@group(0) @binding(6) var<storage, read_write> VC: array<f32>;
@group(0) @binding(7) var<uniform> P: PK;
const MAXD: u32 = 1024u;
var<workgroup> part: array<f32, 256>;
var<workgroup> hv: array<f32, MAXD>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let t = wg.y;
  let isq = wg.x < P.H;
  let hd = select(wg.x - P.H, wg.x, isq);
  let row = P.x_off + t * P.ld;
  let src = row + select((P.H + hd) * P.D, hd * P.D, isq);
  let bias = (P.flags & select(2u, 1u, isq)) != 0u;
  let boff = select(P.bk, P.bq, isq) + hd * P.D;
  var s = 0.0;
  for (var i = li; i < P.D; i += 256u) {
    var v = X[src + i];
    if (bias) { v = v + B[boff + i]; }
    hv[i] = v;
    s = s + v * v;
  }
  if ((P.flags & select(16u, 8u, isq)) != 0u) {
    part[li] = s;
    workgroupBarrier();
    for (var h = 128u; h > 0u; h >>= 1u) {
      if (li < h) { part[li] = part[li] + part[li + h]; }
      workgroupBarrier();
    }
    let scale = 1.0 / sqrt(part[0] / f32(P.D) + P.eps);
    let noff = select(P.nk, P.nq, isq);
    for (var i = li; i < P.D; i += 256u) { hv[i] = rms_apply(bitcast<u32>(hv[i]), scale, NW[noff + i]); }
  }
  workgroupBarrier();
  let p = P.p0 + t;
  var slot = p;
  if (P.ring != 0u && p >= P.sinks) { slot = P.sinks + (p - P.sinks) % P.ring; }
  let dst = select((slot * P.Hkv + hd) * P.D, (t * P.H + hd) * P.D, isq);
  for (var i = li; i < P.half; i += 256u) {
    var a = 2u * i;
    var b = 2u * i + 1u;
    if (P.neox != 0u) { a = i; b = i + P.half; }
    let cs = CS[t * P.half + i];
    let xa = hv[a];
    let xb = hv[b];
    let y = rope_rot(xa, xb, cs, P.zero);
    if (isq) { Qo[dst + a] = y.x; Qo[dst + b] = y.y; } else { KC[dst + a] = y.x; KC[dst + b] = y.y; }
  }
  for (var d = 2u * P.half + li; d < P.D; d += 256u) {
    if (isq) { Qo[dst + d] = hv[d]; } else { KC[dst + d] = hv[d]; }
  }
  if (!isq) {
    let vsrc = row + (P.H + P.Hkv + hd) * P.D;
    for (var i = li; i < P.D; i += 256u) {
      var v = X[vsrc + i];
      if ((P.flags & 4u) != 0u) { v = v + B[P.bv + hd * P.D + i]; }
      VC[dst + i] = v;
    }
  }
}
