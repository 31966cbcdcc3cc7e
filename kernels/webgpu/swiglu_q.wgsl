// swiglu_q.wgsl — SwiGLU and the quantize of its rows in one dispatch (after quantize.wgsl and the
// dot type's block file): a workgroup of 256 per chunk of 256 floats of a row (quantize.wgsl's
// chunk when quant), a thread a float: y = gate / (1 + exp(-gate)) * up, swiglu.wgsl's
// expression, into Yf; then the chunk quantized from the products' bits (each thread hands
// quantize_chunk the value it stored; Yf is not read back) into Y. So Yf and Y hold the bits
// that swiglu and quantize would write one after the other. Rows: gate from g_off, g_ld floats
// apart; up from u_off, u_ld apart; Yf rows of n from y_off; Y rows q_row bytes apart from byte
// q_off. quant 0: the products only (a strided SwiGLU, for an F16 down whose matmul takes f32; n
// any).
struct PSQ { n: u32, rows: u32, g_off: u32, g_ld: u32, u_off: u32, u_ld: u32, y_off: u32, q_off: u32,
  q_row: u32, zero: u32, quant: u32, pad1: u32 }
@group(0) @binding(0) var<storage, read> G: array<f32>;
@group(0) @binding(1) var<storage, read> Up: array<f32>;
@group(0) @binding(2) var<storage, read_write> Yf: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<u32>;
@group(0) @binding(4) var<uniform> P: PSQ;

fn rnd(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ P.zero); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nw: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let nc = (P.n + 255u) / 256u; // chunks a row (CB QB = 256)
  let idx = wg.x + wg.y * nw.x;
  if (idx >= nc * P.rows) { return; }
  let row = idx / nc;
  let c = idx % nc;
  let i = c * 256u + li;
  let yo = P.y_off + row * P.n;
  var u = 0u;
  if (i < P.n) {
    let gv = G[P.g_off + row * P.g_ld + i];
    let y = gv / (1.0 + exp_f32(-gv)) * Up[P.u_off + row * P.u_ld + i];
    Yf[yo + i] = y;
    u = bitcast<u32>(y);
  }
  if (P.quant != 0u) { quantize_chunk(u, c, P.n / QB, (P.q_off + row * P.q_row) / 4u, li); }
}
