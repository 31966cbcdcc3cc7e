// matmul_qt_q8_0.wgsl — Q8_0 weights for the tiled driver (matmul_qt.wgsl): block {f16 d;
// int8 qs[32]}, 34 bytes; the block's words are its quants as they lie.
const QB: u32 = 32u;
fn wword(r: u32, b: u32, k: u32) -> u32 { return wu(P.w_off + r * P.w_row + b * 34u + 2u + 4u * k); }
fn wscale(r: u32, b: u32) -> f32 { return f16_to_f32(wu(P.w_off + r * P.w_row + b * 34u) & 0xffffu); }
