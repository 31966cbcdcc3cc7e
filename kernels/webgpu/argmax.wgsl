// argmax.wgsl — greedy decoding's token on the GPU: the engine's greedy rule (generate.c: the
// first maximum, `if (logits[i] > logits[best]) best = i` from best = 0) over a row of n logits
// X[x_off ..]: the lowest index of the largest non-NaN value, or 0 when X[x_off] is NaN or every
// value is (a NaN at 0 is never beaten; one elsewhere never wins). -0 and +0 tie (the lower
// index), +Inf wins, all -Inf give 0. That index is order-free (a max with ties to the lower
// index), so a reduction in any shape gives it. Two dispatches (P.stage):
//   0: workgroup w over entries [4096 w, 4096 w + 4096), 16 a thread (loaded in one batch,
//      indices clamped: a value past n is loaded and not used), then a tree; its (value bits,
//      index) pair into Part[2 w ..] (index 0xffffffff: none that is not NaN);
//   1: one workgroup over the nparts pairs, then the rule for X[x_off]; the index into I[i_off].
struct PM { n: u32, x_off: u32, i_off: u32, stage: u32, nparts: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Part: array<u32>;
@group(0) @binding(2) var<storage, read_write> I: array<u32>;
@group(0) @binding(3) var<uniform> P: PM;

const NONE: u32 = 0xffffffffu;
// NaN by its bits (WGSL lets a compiler assume x == x)
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
var<workgroup> bv: array<f32, 256>;
var<workgroup> bi: array<u32, 256>;

// (v, i) with b's pair taken over a's where b is a value and beats a (larger, or equal at a lower
// index); a NONE index holds no value
fn pick(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  return ib != NONE && (ia == NONE || vb > va || (vb == va && ib < ia));
}

fn reduce(v0: f32, i0: u32, li: u32) -> vec2u {
  bv[li] = v0;
  bi[li] = i0;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (li < h && pick(bv[li], bi[li], bv[li + h], bi[li + h])) {
      bv[li] = bv[li + h];
      bi[li] = bi[li + h];
    }
    workgroupBarrier();
  }
  return vec2u(bitcast<u32>(bv[0]), bi[0]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  var v = 0.0;
  var i = NONE;
  if (P.stage == 0u) {
    let w = wg.x + wg.y * nw.x;
    if (w * 4096u >= P.n) { return; }
    let base = w * 4096u + li;
    var xs: array<f32, 16>;
    for (var k = 0u; k < 16u; k++) { xs[k] = X[P.x_off + min(base + 256u * k, P.n - 1u)]; }
    for (var k = 0u; k < 16u; k++) {
      let j = base + 256u * k;
      if (j < P.n && !is_nan(xs[k]) && pick(v, i, xs[k], j)) {
        v = xs[k];
        i = j;
      }
    }
    let r = reduce(v, i, li);
    if (li == 0u) {
      Part[2u * w] = r.x;
      Part[2u * w + 1u] = r.y;
    }
    return;
  }
  for (var p = li; p < P.nparts; p += 256u) {
    let pv = bitcast<f32>(Part[2u * p]);
    let pi = Part[2u * p + 1u];
    if (pick(v, i, pv, pi)) {
      v = pv;
      i = pi;
    }
  }
  let r = reduce(v, i, li);
  if (li == 0u) {
    I[P.i_off] = select(r.y, 0u, r.y == NONE || is_nan(X[P.x_off]));
  }
}
