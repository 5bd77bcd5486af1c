#!/usr/bin/env python3
"""Writes small GGUF files and legacy imatrices for the hostile battery (poison.sh, hygiene.sh).

  mkgguf.py model OUT DTYPE POISON   one-layer llama file: blk.0.ffn_up.weight (256 x 8, DTYPE
                                     f32|f16|bf16|q8_0) and blk.0.attn_norm.weight (f32, 256);
                                     POISON: none | nan | inf | -inf | huge | norm-nan | nan-scale
                                     (the bad values are in row 3 of ffn_up, norm-nan in the norm)
  mkgguf.py names OUT                control bytes (ESC, CR, LF, NUL, BEL, '|') in a key and a
                                     tensor name, and two keys differing only in an invalid byte
  mkgguf.py dupkey OUT               the same control-laden key twice (a reader error)
  mkgguf.py imatrix OUT POISON       GGUF imatrix for blk.0.ffn_up.weight; POISON: none | zero-count
                                     | neg-count | neg | nan | inf | all-zero
  mkgguf.py dat OUT POISON           legacy .dat imatrix; POISON: none | zero-ncall | neg | nan | all-zero
  mkgguf.py align1 OUT               GGUF imatrix written with general.alignment = 1, data at an odd offset
  mkgguf.py nlnames OUT              two F32 tensors whose names hold LF, CR, '^x$=F32' and ESC
  mkgguf.py many OUT N K [NAMING]    N F32 [32, 2] tensors blk.I.ffn_up.weight (NAMING diagonal:
                                     blk.I.cI.weight) and K U32 keys (scripts/bench-tensor-scale)
"""
import math
import struct
import sys

U32, I32, F32, STRING, ARRAY = 4, 5, 6, 8, 9
T_F32, T_F16, T_Q8_0, T_BF16 = 0, 1, 8, 30


def gstr(b):
    b = b if isinstance(b, bytes) else b.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    out = gstr(key) + struct.pack("<I", vtype)
    if vtype == U32:
        return out + struct.pack("<I", value)
    if vtype == STRING:
        return out + gstr(value)
    if vtype == ARRAY:  # array of strings
        return out + struct.pack("<IQ", STRING, len(value)) + b"".join(gstr(v) for v in value)
    raise ValueError(vtype)


def gguf(kvs, tensors, alignment=32, pad_header=0):
    """tensors: list of (name, dims, type, data bytes)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    infos, offset, datas = b"", 0, []
    for name, dims, ttype, data in tensors:
        infos += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", ttype, offset)
        pad = (-len(data)) % alignment
        datas.append(data + b"\0" * pad)
        offset += len(data) + pad
    h = head + infos
    return h + b"\0" * ((-len(h)) % alignment) + b"".join(datas)


def f16(x):
    return struct.pack("<e", x) if math.isfinite(x) and abs(x) < 65504 else {
        "nan": b"\x00\x7e", "inf": b"\x00\x7c", "-inf": b"\x00\xfc"}[str(x)]


def encode(dtype, values):
    if dtype == "f32":
        return struct.pack("<%df" % len(values), *values)
    if dtype == "f16":
        return b"".join(f16(v) for v in values)
    if dtype == "bf16":
        return b"".join(struct.pack("<f", v)[2:] for v in values)
    raise ValueError(dtype)


def model(out, dtype, poison):
    rows = [math.sin(i * 0.1) for i in range(256 * 8)]
    norm = [1.0] * 256
    bad = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "huge": 1e38}.get(poison)
    if bad is not None:
        for i in range(256 * 3 + 5, 256 * 4):
            rows[i] = bad
    if poison == "norm-nan":
        norm[200] = float("nan")
    if dtype == "q8_0":  # blocks of fp16 d + 32 int8; nan-scale poisons block 1 of row 3
        blocks = []
        for b in range(256 * 8 // 32):
            d = b"\x00\x7e" if (poison == "nan-scale" and b == 3 * 8 + 1) else struct.pack("<e", 0.01)
            blocks.append(d + bytes((i * 7) % 256 for i in range(32)))
        data, ttype = b"".join(blocks), T_Q8_0
    else:
        data, ttype = encode(dtype, rows), {"f32": T_F32, "f16": T_F16, "bf16": T_BF16}[dtype]
    kvs = [kv("general.architecture", STRING, "llama"), kv("llama.block_count", U32, 1)]
    tensors = [("blk.0.attn_norm.weight", [256], T_F32, encode("f32", norm)),
               ("blk.0.ffn_up.weight", [256, 8], ttype, data)]
    open(out, "wb").write(gguf(kvs, tensors))


def names(out, dup=False):
    evil_key = b"evil.\x1b[2J\rkey\n|x"
    kvs = [kv("general.architecture", STRING, "llama"), kv("llama.block_count", U32, 1), kv(evil_key, STRING, "v")]
    if dup:
        kvs.append(kv(evil_key, STRING, "w"))
    else:
        kvs += [kv(b"dup.\xff", U32, 1), kv(b"dup.\xfe", U32, 2)]
    tensors = [(b"blk.0.\x1b]0;pwn\x07\x00zz|.weight", [32, 2], T_F32, encode("f32", [0.5] * 64))]
    open(out, "wb").write(gguf(kvs, tensors))


def nlnames(out):
    """Tensor names with a line feed, CR and ESC, shaped so that gguf-plan and gguf-requant take them."""
    kvs = [kv("general.architecture", STRING, "llama"), kv("llama.block_count", U32, 1)]
    tensors = [(b"blk.0.ffn_up\n^x$=F32\r.weight", [256, 8], T_F32, encode("f32", [0.25] * 2048)),
               (b"blk.0.ffn_down\x1b[2J.weight", [256, 8], T_F32, encode("f32", [0.5] * 2048))]
    open(out, "wb").write(gguf(kvs, tensors))


def many(out, n, k, naming="layers"):
    """gguf() for large counts: every part joined once (bytes += would be quadratic). naming:
    layers (blk.I.ffn_up.weight) or diagonal (blk.I.cI.weight: as many columns as layers)."""
    kvs = [kv("general.architecture", STRING, "llama"), kv("llama.block_count", U32, n)]
    kvs += [kv("scale.key.%d" % i, U32, i) for i in range(k)]
    data = encode("f32", [math.sin(i * 0.37) for i in range(64)])  # 256 bytes, a multiple of 32
    fmt = "blk.%d.ffn_up.weight" if naming == "layers" else "blk.%d.c%d.weight"
    infos = [gstr(fmt % ((i,) if naming == "layers" else (i, i))) + struct.pack("<IQQIQ", 2, 32, 2, T_F32, i * len(data)) for i in range(n)]
    h = b"GGUF" + struct.pack("<IQQ", 3, n, len(kvs)) + b"".join(kvs) + b"".join(infos)
    with open(out, "wb") as f:
        f.write(h + b"\0" * ((-len(h)) % 32))
        f.write(data * n)


def imatrix(out, poison, alignment=32, dataset="calib.txt"):
    sums = [float(i % 7 + 1) for i in range(256)]
    count = {"zero-count": 0.0, "neg-count": -1.0}.get(poison, 2.0)
    if poison == "neg":
        sums[10] = -1.0
    if poison in ("nan", "inf"):
        sums[10] = float(poison)
    if poison == "all-zero":
        sums = [0.0] * 256
    kvs = [kv("imatrix.datasets", ARRAY, [dataset]), kv("imatrix.chunk_count", U32, 4),
           kv("imatrix.chunk_size", U32, 512)]
    if alignment != 32:
        kvs.insert(0, kv("general.alignment", U32, alignment))
    tensors = [("blk.0.ffn_up.weight.counts", [1], T_F32, encode("f32", [count])),
               ("blk.0.ffn_up.weight.in_sum2", [256], T_F32, encode("f32", sums))]
    data = gguf(kvs, tensors, alignment)
    open(out, "wb").write(data)
    return len(data) - sum(len(t[3]) for t in tensors)  # data offset (alignment 1: no padding)


def dat(out, poison):
    vals = [float(i % 7 + 1) for i in range(256)]
    ncall = 0 if poison == "zero-ncall" else 2
    if poison == "neg":
        vals[3] = -2.0
    if poison == "nan":
        vals[3] = float("nan")
    if poison == "all-zero":
        vals = [0.0] * 256
    name = b"blk.0.ffn_up.weight"
    b = struct.pack("<ii", 1, len(name)) + name + struct.pack("<ii", ncall, len(vals)) + struct.pack("<%df" % len(vals), *vals)
    open(out, "wb").write(b)


def main(argv):
    cmd, out = argv[1], argv[2]
    if cmd == "model":
        model(out, argv[3], argv[4])
    elif cmd == "names":
        names(out)
    elif cmd == "dupkey":
        names(out, dup=True)
    elif cmd == "imatrix":
        imatrix(out, argv[3])
    elif cmd == "dat":
        dat(out, argv[3])
    elif cmd == "nlnames":
        nlnames(out)
    elif cmd == "many":
        many(out, int(argv[3]), int(argv[4]), *argv[5:6])
    elif cmd == "align1":
        for n in range(1, 5):  # a data set name length that puts the F32 data at an odd offset
            if imatrix(out, "none", alignment=1, dataset="c" * n) % 2:
                break
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
