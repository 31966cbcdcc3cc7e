// matmul_q.wgsl — the driver of the quantized matmuls for decode (few tokens): y[t ldy + r] =
// W[r] . X[t] for r < R, t < T, as kernels/ref/matmul.c forms it: per block an exact integer sum
// and one float term, the terms added in block order into one float (ref's bits). The runtime
// puts matmul_io.wgsl in front and appends one type's source (matmul_q8_0.wgsl, matmul_q4_0.wgsl,
// matmul_q4_k.wgsl), which defines QB (elements per block), NP (integer parts per block),
// part(r, t, b, p) (the p-th part of block b's integer sums: exact, so the parts may be added in
// any order) and term(r, t, b, sums) (ref's float term from the block's integer sums). The
// runtime also puts in front BB and XB (the bytes of a weight block and of an activation block)
// and CV (blocks per chunk: as many as the workgroup's memory holds).
//
// One workgroup of 256 threads per NR rows and one token (grid z). Per chunk of CV blocks:
//   1. the chunk's bytes of the NR weight rows and of the token's activation row are copied into
//      workgroup memory, consecutive threads reading consecutive aligned words (each weight byte
//      read from memory once, in full 128-byte lines);
//   2. the NR x CV x NP integer parts, one per thread at a time, from workgroup memory: wu and xu
//      below read a byte offset of W or X from the staged copy of the row part() or term() is
//      working on (its place set in wrow, xrow before the call);
//   3. the parts of each block added (i32: exact, order free) and its float term formed, as ref;
//   4. one thread per row adds the chunk's terms to the row's float, in block order.
// The sum order is ref's whatever the shape, so the result is batch- and slice-invariant.
//
// W and X are byte streams (ggml's blocks are 18, 34, 144 or 292 bytes: rows need not be
// 4-aligned) starting at byte offsets w_off, x_off; rows w_row, x_row bytes apart.
@group(0) @binding(1) var<storage, read> X: array<u32>;

const WG: u32 = 256u;
const NR: u32 = 8u;
const WSW: u32 = (CV * BB + 3u) / 4u + 1u; // words of one row's chunk (one more: a byte offset)
const XSW: u32 = (CV * XB + 3u) / 4u + 1u;
var<workgroup> ws: array<u32, NR * WSW>;
var<workgroup> xs: array<u32, XSW>;
var<workgroup> parts: array<vec2<i32>, NR * CV * NP>;
var<workgroup> terms: array<f32, NR * CV>;
// The staged row part() and term() read: the byte of W (X) that ws[wrow.y] (xs[xrow.y]) holds,
// the first of that row's chunk rounded down to a word.
var<private> wrow: vec2u;
var<private> xrow: vec2u;

fn staged(a: u32, b: u32, s: u32) -> u32 {
  if (s == 0u) { return a; }
  return (a >> s) | (b << (32u - s));
}
fn wu(i: u32) -> u32 {
  let j = i - wrow.x;
  let k = wrow.y + (j >> 2u);
  return staged(ws[k], ws[k + 1u], (j & 3u) * 8u);
}
fn xu(i: u32) -> u32 {
  let j = i - xrow.x;
  let k = xrow.y + (j >> 2u);
  return staged(xs[k], xs[k + 1u], (j & 3u) * 8u);
}
fn w16(i: u32) -> u32 { return wu(i) & 0xffffu; }
fn x16(i: u32) -> u32 { return xu(i) & 0xffffu; }
fn x32(i: u32) -> u32 { return xu(i); }

// Where row rr's chunk from block c0 lies: [its first byte's word in W, its word count].
fn wspan(r: u32, c0: u32, n: u32) -> vec2u {
  let a = P.w_off + r * P.w_row + c0 * BB;
  let w0 = a >> 2u;
  return vec2u(w0, ((a + n * BB + 3u) >> 2u) - w0);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let r0 = (wg.x + wg.y * P.rsplit) * NR;
  let t = wg.z;
  if (r0 >= P.R) { return; }
  let nb = P.K / QB;
  var s = 0.0;
  for (var c0 = 0u; c0 < nb; c0 += CV) {
    let n = min(CV, nb - c0);
    // 1. stage the rows' chunks and the token's
    for (var i = li; i < NR * WSW; i += WG) {
      let rr = i / WSW;
      let k = i % WSW;
      var v = 0u;
      if (r0 + rr < P.R) {
        let sp = wspan(r0 + rr, c0, n);
        if (k < sp.y) { v = W[sp.x + k]; }
      }
      ws[i] = v;
    }
    let xa = P.x_off + t * P.x_row + c0 * XB;
    let xw = xa >> 2u;
    let xn = ((xa + n * XB + 3u) >> 2u) - xw;
    for (var k = li; k < XSW; k += WG) {
      var v = 0u;
      if (k < xn) { v = X[xw + k]; }
      xs[k] = v;
    }
    xrow = vec2u(xw * 4u, 0u);
    workgroupBarrier();
    // 2. the integer parts
    for (var i = li; i < NR * n * NP; i += WG) {
      let q = i / NP;
      let rr = q / n;
      let r = r0 + rr;
      var v = vec2<i32>(0, 0);
      if (r < P.R) {
        wrow = vec2u(wspan(r, c0, n).x * 4u, rr * WSW);
        v = part(r, t, c0 + q % n, i % NP);
      }
      parts[i] = v;
    }
    workgroupBarrier();
    // 3. each block's term
    for (var q = li; q < NR * n; q += WG) {
      let rr = q / n;
      let r = r0 + rr;
      var v = vec2<i32>(0, 0);
      for (var p = 0u; p < NP; p++) { v += parts[q * NP + p]; }
      var e = 0.0;
      if (r < P.R) {
        wrow = vec2u(wspan(r, c0, n).x * 4u, rr * WSW);
        e = term(r, t, c0 + q % n, v);
      }
      terms[q] = e;
    }
    workgroupBarrier();
    // 4. the terms into each row's float, in block order
    if (li < NR) {
      for (var b = 0u; b < n; b++) { s = s + terms[li * n + b]; }
    }
    workgroupBarrier();
  }
  if (li < NR && r0 + li < P.R) { Y[P.y_off + t * P.ldy + r0 + li] = s; }
}
