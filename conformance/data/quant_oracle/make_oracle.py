#!/usr/bin/env python3
"""make_oracle.py -- llama-quantize's bytes for Q2_K, Q3_K, IQ4_NL and IQ4_XS on crafted rows.

Run by hand (never by the build or the tests; see README.md here):
    make_oracle.py PLUMB LLAMA_QUANTIZE_RUNNER OUTDIR
PLUMB is a built `plumb` (for `plumb mkmodel`); LLAMA_QUANTIZE_RUNNER a command prefix that
runs llama.cpp's llama-quantize, e.g. "../shared/peers/run llama.cpp llama-quantize".
Writes OUTDIR/input.f32 (ROWS x 256 little-endian floats) and OUTDIR/<type>.bin (the same
rows as llama-quantize stored them in blk.0.ffn_gate.weight of a --pure file)."""
import math
import os
import random
import shlex
import struct
import subprocess
import sys
import tempfile

N = 256  # row length: a multiple of every block size involved
TYPES = [("q2_k", "Q2_K"), ("q3_k", "Q3_K_S"), ("iq4_nl", "IQ4_NL"), ("iq4_xs", "IQ4_XS")]
BLOCK = {"q2_k": (256, 84), "q3_k": (256, 110), "iq4_nl": (32, 18), "iq4_xs": (256, 136)}
TENSOR = "blk.0.ffn_gate.weight"


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def crafted_rows():
    rng = random.Random(32)
    rows = []
    # Gaussian rows at scales 2^-12 .. 2^12: the common case, every exponent range.
    for e in range(-12, 13, 2):
        rows.append([rng.gauss(0, 1) * 2.0**e for _ in range(N)])
    # Uniform, one-signed (min > 0 and max < 0: the min clamps), heavy-tailed, outliers.
    rows.append([rng.uniform(-1, 1) for _ in range(N)])
    rows.append([rng.uniform(0.5, 2.0) for _ in range(N)])
    rows.append([-rng.uniform(0.5, 2.0) for _ in range(N)])
    rows.append([rng.gauss(0, 1) / max(1e-3, abs(rng.gauss(0, 1))) for _ in range(N)])
    r = [rng.gauss(0, 0.01) for _ in range(N)]
    for j in range(0, N, 37):
        r[j] = rng.choice([-1, 1]) * 3.0
    rows.append(r)
    # Sub-blocks of very different scales inside one super-block.
    rows.append([rng.gauss(0, 1) * 2.0 ** (((j // 16) % 8) * 3 - 12) for j in range(N)])
    rows.append([rng.gauss(0, 1) * 2.0 ** (-((j // 32) * 4)) for j in range(N)])
    # Edges: zeros (+0 and -0), constants, tiny (below and above ggml's 1e-15 group floor,
    # where squares and fourth powers underflow), large, denormals, a lone spike per
    # sub-block, all-but-one zero sub-blocks, exact half-way integers, alternating signs.
    rows.append([0.0] * N)
    rows.append([-0.0 if j % 3 else 0.0 for j in range(N)])
    rows.append([1.5] * N)
    rows.append([-0.75] * N)
    rows.append([rng.gauss(0, 1) * 1e-20 for _ in range(N)])
    rows.append([rng.gauss(0, 1) * 1e-12 for _ in range(N)])
    rows.append([rng.gauss(0, 1) * 1e-7 for _ in range(N)])
    rows.append([rng.gauss(0, 1) * 3e3 for _ in range(N)])
    rows.append([rng.gauss(0, 1) * 1e-40 if j % 2 else rng.gauss(0, 1) for j in range(N)])
    rows.append([(j % 16 + 1) * 0.25 if j % 16 == 5 else 0.0 for j in range(N)])
    rows.append([rng.gauss(0, 1) if 96 <= j < 112 else 0.0 for j in range(N)])
    rows.append([float(j % 7 - 3) for j in range(N)])
    rows.append([float(j % 9 - 4) * 0.5 for j in range(N)])
    rows.append([1.0 if j % 2 else -1.0 for j in range(N)])
    rows.append([(1.0 if j % 2 else -1.0) * (1 + j % 5) for j in range(N)])
    rows.append([float(j - 128) for j in range(N)])
    rows.append([rng.choice([-2.0, -1.0, 0.0, 1.0, 2.0]) for _ in range(N)])
    rows.append([math.sin(j * 0.1) for j in range(N)])
    rows.append([rng.gauss(0, 1) if (j // 32) % 2 else 1e-20 for j in range(N)])
    # More Gaussian rows with random scales, to 64 in all.
    while len(rows) < 64:
        s = 2.0 ** rng.uniform(-8, 8)
        rows.append([rng.gauss(rng.uniform(-0.5, 0.5), 1) * s for _ in range(N)])
    return [[f32(v) for v in r] for r in rows]


def read_str(b, o):
    (n,) = struct.unpack_from("<Q", b, o)
    return b[o + 8 : o + 8 + n].decode(), o + 8 + n


SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip_value(b, o, t):
    if t in SCALAR:
        return o + SCALAR[t]
    if t == 8:
        return read_str(b, o)[1]
    if t == 9:
        et, n = struct.unpack_from("<IQ", b, o)
        o += 12
        for _ in range(n):
            o = skip_value(b, o, et)
        return o
    raise ValueError("GGUF value type %d" % t)


def tensors(b):
    """{name: (type, dims, absolute offset)} of a GGUF file's bytes."""
    assert b[:4] == b"GGUF"
    _, n_t, n_kv = struct.unpack_from("<IQQ", b, 4)
    o = 24
    align = 32
    for _ in range(n_kv):
        key, o = read_str(b, o)
        (t,) = struct.unpack_from("<I", b, o)
        o += 4
        if key == "general.alignment":
            (align,) = struct.unpack_from("<I", b, o)
        o = skip_value(b, o, t)
    info = {}
    for _ in range(n_t):
        name, o = read_str(b, o)
        (nd,) = struct.unpack_from("<I", b, o)
        dims = struct.unpack_from("<%dQ" % nd, b, o + 4)
        o += 4 + 8 * nd
        t, off = struct.unpack_from("<IQ", b, o)
        o += 12
        info[name] = (t, dims, off)
    base = (o + align - 1) // align * align
    return {k: (t, d, base + off) for k, (t, d, off) in info.items()}


def main():
    plumb, runner, out = sys.argv[1], shlex.split(sys.argv[2]), sys.argv[3]
    rows = crafted_rows()
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.gguf")
        subprocess.run([plumb, "mkmodel", "--preset", "tiny", "--n-embd", "256", "--n-ff", "512",
                        "--n-layer", "1", "--n-head", "4", "--n-head-kv", "2", "--head-dim", "64",
                        src], check=True)
        b = bytearray(open(src, "rb").read())
        t, dims, off = tensors(b)[TENSOR]
        assert t == 0 and dims[0] == N and dims[1] >= len(rows), (t, dims)
        data = b"".join(struct.pack("<%df" % N, *r) for r in rows)
        b[off : off + len(data)] = data
        open(src, "wb").write(b)
        open(os.path.join(out, "input.f32"), "wb").write(data)
        for name, ftype in TYPES:
            dst = os.path.join(tmp, name + ".gguf")
            subprocess.run(runner + ["--pure", src, dst, ftype], check=True,
                           stdout=subprocess.DEVNULL)
            q = open(dst, "rb").read()
            _, _, qoff = tensors(q)[TENSOR]
            bs, bb = BLOCK[name]
            nbytes = len(rows) * (N // bs) * bb
            open(os.path.join(out, name + ".bin"), "wb").write(q[qoff : qoff + nbytes])


if __name__ == "__main__":
    main()
