# Runs llama.cpp's convert_hf_to_gguf.py from LLAMA_SRC under Debian's python3-torch 1.13, which
# predates the float8 and unsigned dtypes the converter names in a class body: they are aliased to
# types no test checkpoint uses. Usage: run_convert.py LLAMA_SRC ARGS...
#
# F8_E4M3 / F8_E5M2 tensors, which torch 1.13 cannot hold, are loaded as the float32 tensors newer
# torch's `.float()` makes of them (every FP8 value is exact in float32; decoded below from the
# formats' definitions, independently of gguf-convert's C++): everything after that, dequant_simple's
# block scales, cuts, broadcasts and multiply and the output types, is the converter's own code.
import os
import runpy
import sys

import numpy as np
import torch


def fp8_table(exp_bits, nan_all_ones):
    """The 256 values of an FP8 format with `exp_bits` exponent bits as float32: E4M3FN
    (exp_bits 4: no infinities, only S.1111.111 is NaN) or E5M2 (IEEE-like: exponent all ones is
    infinity or NaN)."""
    man_bits = 7 - exp_bits
    bias = (1 << (exp_bits - 1)) - 1
    out = np.zeros(256, dtype=np.float32)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        e = (b >> man_bits) & ((1 << exp_bits) - 1)
        m = b & ((1 << man_bits) - 1)
        if nan_all_ones and e == (1 << exp_bits) - 1 and m == (1 << man_bits) - 1:
            v = float("nan")
        elif not nan_all_ones and e == (1 << exp_bits) - 1:
            v = sign * float("inf") if m == 0 else float("nan")
        elif e == 0:
            v = sign * (m / (1 << man_bits)) * 2.0 ** (1 - bias)
        else:
            v = sign * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
        out[b] = v
    return out


FP8_TABLES = {"F8_E4M3": fp8_table(4, True), "F8_E5M2": fp8_table(5, False)}
NO_FP8 = not hasattr(torch, "float8_e4m3fn")

for name in ("float8_e4m3fn", "float8_e5m2"):
    if not hasattr(torch, name):
        setattr(torch, name, torch.uint8)
for name in ("uint16", "uint32", "uint64"):
    if not hasattr(torch, name):
        setattr(torch, name, torch.int64)
src = sys.argv[1]
sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), src, os.path.join(src, "gguf-py")]
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[2:]

if NO_FP8:
    from conversion import base  # noqa: E402  (after sys.path)

    # torch 1.13's meta kernel cannot size an int repeat_interleave (the lazy converter's shape pass
    # over dequant_simple's scales); newer torch sizes it as dim x repeats, given here.
    plain_repeat_interleave = torch.Tensor.repeat_interleave

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        if self.device.type == "meta" and isinstance(repeats, int) and dim is not None and output_size is None:
            output_size = self.shape[dim] * repeats
        return plain_repeat_interleave(self, repeats, dim, output_size=output_size)

    torch.Tensor.repeat_interleave = repeat_interleave

    plain_from_local_tensor = base.LazyTorchTensor.from_local_tensor.__func__

    def from_local_tensor(cls, t):
        if t.dtype not in FP8_TABLES:
            return plain_from_local_tensor(cls, t)
        table = FP8_TABLES[t.dtype]

        def load(r):
            raw = np.frombuffer(r.mmap_bytes(), dtype=np.uint8)
            return torch.from_numpy(table[raw].reshape(r.shape))

        meta = cls.meta_with_dtype_and_shape(torch.float32, tuple(t.shape))
        return cls(meta=meta, args=(t,), func=load)

    base.LazyTorchTensor.from_local_tensor = classmethod(from_local_tensor)
runpy.run_path(os.path.join(src, "convert_hf_to_gguf.py"), run_name="__main__")
