// matmul_xq.wgsl — the quantized drivers' activations (Q8_0 or Q8_K rows, bytes read as words
// like W's: xu(i) is the 4 bytes at byte i).
@group(0) @binding(1) var<storage, read> X: array<u32>;

fn xu(i: u32) -> u32 {
  let a = X[i >> 2u];
  let s = (i & 3u) * 8u;
  if (s == 0u) { return a; }
  return (a >> s) | (X[(i >> 2u) + 1u] << (32u - s));
}
