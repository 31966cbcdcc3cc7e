// embed.wgsl — the token's embedding row on the GPU (greedy decoding: the next step's input comes
// from the GPU's own argmax, argmax.wgsl, with no trip to the CPU): X[t][i] = row I[i_off + t]
// of the embedding matrix W (rows of E elements of `type`, row_bytes apart from byte w_off),
// dequantized as ref's dequantize_row and llama.mjs's embedRow form it, bit for bit:
//   F32: the float; F16: the half, exactly (common.wgsl's f16_to_f32);
//   Q8_0 {f16 d; int8 q[32]}: d q; Q4_0 {f16 d; u8 q[16]}: d (nibble - 8), low nibbles first;
//   Q4_K: d1 q - m1 with d1 = d sc and m1 = dmin m, each product rounded (rnd) before the
//         subtraction (no fma), ggml's 6-bit scale/min packing;
//   Q6_K: (d sc) (q - 32), two products.
// Each is one or two correctly rounded f32 products of exact values, as JS's Math.fround of
// them. An id past V is clamped to V - 1 (never read past the matrix). A thread an element.
struct PE { E: u32, rows: u32, w_off: u32, row_bytes: u32, V: u32, i_off: u32, type_: u32, zero: u32 }
@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> I: array<u32>;
@group(0) @binding(2) var<storage, read_write> X: array<f32>;
@group(0) @binding(3) var<uniform> P: PE;

fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }
fn byte_at(i: u32) -> u32 { return (W[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu; }
fn half_at(i: u32) -> f32 { return f16_to_f32(byte_at(i) | (byte_at(i + 1u) << 8u)); }

// Q4_K's scale (x) and min (y) of sub-block j (0..7) from the 12 packed bytes at s
fn q4k_scale_min(s: u32, j: u32) -> vec2u {
  if (j < 4u) { return vec2u(byte_at(s + j) & 63u, byte_at(s + j + 4u) & 63u); }
  return vec2u((byte_at(s + j + 4u) & 15u) | ((byte_at(s + j - 4u) >> 6u) << 4u),
               (byte_at(s + j + 4u) >> 4u) | ((byte_at(s + j) >> 6u) << 4u));
}

fn element(rb: u32, i: u32) -> f32 {
  switch P.type_ {
    case 0u: { return bitcast<f32>(W[(rb >> 2u) + i]); }
    case 1u: { return half_at(rb + 2u * i); }
    case 2u: { // Q8_0
      let o = rb + 34u * (i / 32u);
      return f32(i8_of(byte_at(o + 2u + i % 32u))) * half_at(o);
    }
    case 3u: { // Q4_0
      let o = rb + 18u * (i / 32u);
      let j = i % 32u;
      let q = (byte_at(o + 2u + j % 16u) >> (4u * (j / 16u))) & 15u;
      return f32(i32(q) - 8) * half_at(o);
    }
    case 4u: { // Q4_K: 256 a block, 144 bytes: d, dmin, 12 scale bytes, 128 quant bytes
      let o = rb + 144u * (i / 256u);
      let e = i % 256u;
      let p = e / 64u; // the pair of sub-blocks 2p, 2p + 1 shares quant bytes 32p ..
      let hi = (e % 64u) / 32u;
      let sm = q4k_scale_min(o + 4u, 2u * p + hi);
      let d1 = half_at(o) * f32(sm.x);
      let m1 = half_at(o + 2u) * f32(sm.y);
      let q = (byte_at(o + 16u + 32u * p + e % 32u) >> (4u * hi)) & 15u;
      return rnd(d1 * f32(q)) - m1;
    }
    default: { // Q6_K: 256 a block, 210 bytes: ql[128], qh[64], int8 scales[16], d
      let o = rb + 210u * (i / 256u);
      let e = i % 256u;
      let h = e / 128u;
      let w = e % 128u;
      let k = w / 32u; // which quarter of the half
      let l = w % 32u;
      let a = byte_at(o + 64u * h + l + 32u * (k & 1u)); // ql: quarters 0, 2 from l, 1, 3 from 32 + l
      let c = byte_at(o + 128u + 32u * h + l);
      let q = ((a >> (4u * (k / 2u))) & 15u) | (((c >> (2u * k)) & 3u) << 4u);
      let sc = f32(i8_of(byte_at(o + 192u + 8u * h + l / 16u + 2u * k)));
      return (half_at(o + 208u) * sc) * f32(i32(q) - 32);
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let nc = (P.E + 255u) / 256u;
  let idx = wg.x + wg.y * nw.x;
  if (idx >= nc * P.rows) { return; }
  let t = idx / nc;
  let i = (idx % nc) * 256u + li;
  if (i >= P.E) { return; }
  let id = min(I[P.i_off + t], P.V - 1u);
  X[t * P.E + i] = element(P.w_off + id * P.row_bytes, i);
}
