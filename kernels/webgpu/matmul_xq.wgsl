// matmul_xq.wgsl — the quantized drivers' activations (Q8_0 or Q8_K rows, bytes read as words
// like W's: xu(i) is the 4 bytes at byte i).
@group(0) @binding(1) var<storage, read> X: array<u32>;

fn xu(i: u32) -> u32 {
  let a = X[i >> 2u];
  let s = (i & 3u) * 8u;
  if (s == 0u) { return a; }
  return (a >> s) | (X[(i >> 2u) + 1u] << (32u - s));
}
// Branch-free word reads for the decode drivers' type files: word i of W or X, clamped to the
// buffer (a window's last word may lie past its end: its bytes are then shifted out), and the
// four bytes at bit offset s (0, 8, 16, 24) of the word pair (a, b) — (b << 1) << 31 is 0 where
// b << 32 would be b. A block at any byte offset: its words are fsh(A[k], A[k + 1], s) of the
// aligned words A from its first byte's word, each word read once.
fn wat(i: u32) -> u32 { return W[min(i, arrayLength(&W) - 1u)]; }
fn xat(i: u32) -> u32 { return X[min(i, arrayLength(&X) - 1u)]; }
fn fsh(a: u32, b: u32, s: u32) -> u32 { return (a >> s) | ((b << 1u) << (31u - s)); }
// the 4 bytes at byte i without a branch (wu and xu branch on the alignment: where lanes of one
// warp read blocks of different alignments, as Q6_K's 210-byte blocks, both sides run); the 2 or
// 4 bytes at byte i (f16 scales, a Q8_K block's f32 scale)
fn wb4(i: u32) -> u32 { return fsh(wat(i >> 2u), wat((i >> 2u) + 1u), (i & 3u) * 8u); }
fn xb4(i: u32) -> u32 { return fsh(xat(i >> 2u), xat((i >> 2u) + 1u), (i & 3u) * 8u); }
fn w16(i: u32) -> u32 { return wb4(i) & 0xffffu; }
fn x16(i: u32) -> u32 { return xb4(i) & 0xffffu; }
fn x32(i: u32) -> u32 { return xb4(i); }

// A Q8_K block's f32 scale d from its bits, as (s, post) with d = s post: post 1, or, for a
// subnormal d (a block of activations all below ~1.5e-36, which a GPU may flush to zero, as
// SwiftShader does), s from the bits times 2^64 (exact) and post 2^-64: a term formed with s is
// scaled back by post. Not ref's bits there (ref rounds d to the subnormal grid first), but
// closer to exact; conformance holds such outputs to the bound only.
fn q8k_scale(db: u32) -> vec2f {
  if ((db & 0x7f800000u) == 0u && (db & 0x7fffffu) != 0u) {
    let v = f32(db & 0x7fffffu) * 2.5849394142282115e-26; // m 2^-149 2^64
    return vec2f(select(v, -v, (db >> 31u) != 0u), 5.421010862427522e-20); // 2^-64
  }
  return vec2f(bitcast<f32>(db), 1.0);
}
