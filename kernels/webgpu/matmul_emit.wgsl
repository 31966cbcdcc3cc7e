// matmul_emit.wgsl — the v2 decode driver's output (matmul_qv.wgsl's emit): row r's float of
// token t into Y[y_off + t ldy + r], by the thread that holds it.
fn emit(lrow: u32, r: u32, t: u32, s: f32, own: bool) {
  if (own) { Y[P.y_off + t * P.ldy + r] = s; }
}
