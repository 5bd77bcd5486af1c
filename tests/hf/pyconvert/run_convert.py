# Runs llama.cpp's convert_hf_to_gguf.py from LLAMA_SRC under Debian's python3-torch 1.13, which
# predates the float8 and unsigned dtypes the converter names in a class body: they are aliased to
# types no test checkpoint uses. Usage: run_convert.py LLAMA_SRC ARGS...
import os
import runpy
import sys

import torch

for name in ("float8_e4m3fn", "float8_e5m2"):
    if not hasattr(torch, name):
        setattr(torch, name, torch.uint8)
for name in ("uint16", "uint32", "uint64"):
    if not hasattr(torch, name):
        setattr(torch, name, torch.int64)
src = sys.argv[1]
sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), src, os.path.join(src, "gguf-py")]
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[2:]
runpy.run_path(os.path.join(src, "convert_hf_to_gguf.py"), run_name="__main__")
