// matmul_qt_q4_0.wgsl — Q4_0 weights for the tiled driver (matmul_qt.wgsl): block {f16 d;
// uint8 qs[16]}, 18 bytes; element j (0..15) in the low nibble of qs[j], j + 16 in its high
// nibble. Word k (elements 4k..4k+3) as int8 (q - 8): the low nibbles of qs word k (k < 4) or the
// high nibbles of qs word k - 4; (n | 0x80) - 8 per byte never borrows, XOR 0x80 gives n - 8.
const QB: u32 = 32u;
fn wword(r: u32, b: u32, k: u32) -> u32 {
  let q = wu(P.w_off + r * P.w_row + b * 18u + 2u + 4u * (k % 4u));
  let n = (q >> (4u * (k / 4u))) & 0x0f0f0f0fu;
  return ((n | 0x80808080u) - 0x08080808u) ^ 0x80808080u;
}
fn wscale(r: u32, b: u32) -> f32 { return f16_to_f32(wu(P.w_off + r * P.w_row + b * 18u) & 0xffffu); }
