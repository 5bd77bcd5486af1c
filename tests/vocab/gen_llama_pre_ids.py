#!/usr/bin/env python3
# Writes tests/data/vocab/llama-pre-ids.json: the ids llama.cpp's own llama-tokenize (1348f67) gives
# for the Python converter's chktxt and 300 random texts per pre-tokenizer, over GPT-2's vocabulary
# (tests/data/vocab/ggml-vocab-gpt-2.gguf) with tokenizer.ggml.pre set to deepseek-v3 or smollm (and
# 100 each for dbrx, stablelm2 and trillion), over the alphabet of pre_alphabet.py (where those
# pre-tokenizers' rules turn).
# VocabTokenizer.DeepseekV3AndSmollmTokenizeLikeLlamaCpp checks our tokenizer against it.
#   python3 tests/vocab/gen_llama_pre_ids.py LLAMA_SRC LLAMA_BIN BIN_DIR > tests/data/vocab/llama-pre-ids.json
import json
import os
import random
import subprocess
import sys
import tempfile

from pre_alphabet import SEQUENCE_ALPHABET, chktxt

llama_src, llama_bin, bin_dir = sys.argv[1:4]
check_text = chktxt(llama_src)
here = os.path.dirname(os.path.abspath(__file__))
out = {}
with tempfile.TemporaryDirectory() as tmp:
    # After the two sequences, one name of each family that names an expression implemented for
    # others (GPT-2's; Llama 3's without ignore_merges; Qwen2's), fewer texts each.
    for seed, pre, count in ((31, "deepseek-v3", 300), (32, "smollm", 300), (33, "dbrx", 100), (34, "stablelm2", 100),
                             (35, "trillion", 100)):
        model = f"{tmp}/{pre}.gguf"
        subprocess.run([f"{bin_dir}/gguf-edit", "-q", "--set", f"tokenizer.ggml.pre=str:{pre}",
                        f"{here}/../data/vocab/ggml-vocab-gpt-2.gguf", model], check=True)
        rng = random.Random(seed)
        texts = [check_text] + ["".join(rng.choice(SEQUENCE_ALPHABET) for _ in range(rng.randint(1, 24))) for _ in range(count)]
        cases = []
        for t in texts:
            with open(f"{tmp}/t.txt", "w", encoding="utf-8", newline="") as f:
                f.write(t)
            r = subprocess.run([f"{llama_bin}/llama-tokenize", "-m", model, "-f", f"{tmp}/t.txt", "--ids",
                                "--log-disable", "--no-escape"], check=True, capture_output=True, text=True)
            cases.append([t, json.loads(r.stdout.strip().splitlines()[-1])])
        out[pre] = cases
json.dump(out, sys.stdout, ensure_ascii=True, indent=0)
print()
