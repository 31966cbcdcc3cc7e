// matmul_rope.wgsl — the v2 decode driver's output (matmul_qv.wgsl's emit) for a decode step's
// q | k | v matmul with rope_kv.wgsl folded in, where that kernel would only rotate and copy (no
// bias, no head norm, RoPE on adjacent pairs 2i, 2i + 1: llama): one token (t = 0), its rows'
// columns c = y_off + r of [q | k | v] (H heads of D, then Hkv and Hkv). Each row's float also
// into Y as matmul_emit.wgsl writes it; then, for a q or k column with d = c mod D below 2 half,
// rope_rot of the pair (d even: this row first; odd: its partner first) by CS[d / 2] (the
// token's angles, rope_kv's table), else the float itself: q's into Qo[c], k's into the cache KC
// at the token's slot, v's into VC at the slot — rope_kv's expressions on the same floats, so its
// bits. A row's partner (c xor 1) is in the same workgroup (NR even, the workgroup's first row
// even, y_off even: the runtime folds only then) and comes through workgroup memory. The
// RoPE's H, Hkv, D, half and slot are MM's fields past pad (matmul_io.wgsl); the four buffers
// this adds are bound after P.
@group(0) @binding(4) var<storage, read> CS: array<vec2f>;
@group(0) @binding(5) var<storage, read_write> Qo: array<f32>;
@group(0) @binding(6) var<storage, read_write> KC: array<f32>;
@group(0) @binding(7) var<storage, read_write> VC: array<f32>;
var<workgroup> ep: array<f32, NR>;

fn emit(lrow: u32, r: u32, t: u32, s: f32, own: bool) {
  if (own) {
    Y[P.y_off + t * P.ldy + r] = s;
    ep[lrow] = s;
  }
  workgroupBarrier();
  if (!own) { return; }
  let c = P.y_off + r;
  let nq = P.rh * P.rd;
  let nk = P.rhkv * P.rd;
  let d = c % P.rd;
  var v = s;
  if (c < nq + nk && d < 2u * P.rhalf) {
    let cs = CS[d / 2u];
    let o = ep[lrow ^ 1u];
    if ((d & 1u) == 0u) { v = rope_rot(s, o, cs, P.zero).x; } else { v = rope_rot(o, s, cs, P.zero).y; }
  }
  if (c < nq) {
    Qo[c] = v;
  } else if (c < nq + nk) {
    KC[P.rslot * nk + c - nq] = v;
  } else {
    VC[P.rslot * nk + c - nq - nk] = v;
  }
}
