// matmul_wu.wgsl — W's global reader for the tiled and F16 matmul drivers (after matmul_io.wgsl):
// wu(i) is the 4 bytes at byte i (one word when aligned, else two funnel-shifted).
fn wu(i: u32) -> u32 {
  let a = W[i >> 2u];
  let s = (i & 3u) * 8u;
  if (s == 0u) { return a; }
  return (a >> s) | (W[(i >> 2u) + 1u] << (32u - s));
}
