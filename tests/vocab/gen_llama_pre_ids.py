#!/usr/bin/env python3
# Writes tests/data/vocab/llama-pre-ids.json: the ids llama.cpp's own llama-tokenize (1348f67) gives
# for the Python converter's chktxt and 300 random texts per pre-tokenizer, over GPT-2's vocabulary
# (tests/data/vocab/ggml-vocab-gpt-2.gguf) with tokenizer.ggml.pre set to deepseek-v3 or smollm. The
# alphabet holds where those pre-tokenizers' rules turn: ASCII punctuation and symbols ('~' among
# them), digits of several scripts, the CJK ranges and kana (with their marks, symbols and
# punctuation), marks, Unicode spaces, controls, an unassigned and a private-use code point.
# VocabTokenizer.DeepseekV3AndSmollmTokenizeLikeLlamaCpp checks our tokenizer against it.
#   python3 tests/vocab/gen_llama_pre_ids.py LLAMA_SRC LLAMA_BIN BIN_DIR > tests/data/vocab/llama-pre-ids.json
import json
import os
import random
import subprocess
import sys
import tempfile

ALPHABET = ["a", "q", "Z", "B", " ", " ", "\n", "\r", "\t", "/", "!", "'", ".", "3", "7", "~", "$", "+", "|",
            "^", "`", "-", "_", "(", "}", "12", "345", "\u0663", "\u00bd", "\uff11", "\u00f1", "\u00d1", "\u01c5",
            "\u02b0", "\u4e2d", "\u9fa5", "\u9fa6", "\u3042", "\u30a2", "\u30fb", "\u30a0", "\u309b", "\u3099",
            "\u3001", "\u3002", "\u1780", "\u17b6", "\u0301", "\u00a0", "\u3000", "\u2028", "\U0001f600",
            "\u200d", "\u0915", "\u093f", "\uff5e", "\u00a7", "\u2014", "\u0378", "\ue000", "\x01", "\x7f",
            "\u00ad"]

llama_src, llama_bin, bin_dir = sys.argv[1:4]
src = open(f"{llama_src}/conversion/base.py", encoding="utf-8").read()
line = next(l for l in src.splitlines() if "chktxt = " in l)
chktxt = eval(line.split("chktxt = ", 1)[1])  # a string literal
here = os.path.dirname(os.path.abspath(__file__))
out = {}
with tempfile.TemporaryDirectory() as tmp:
    for seed, pre in ((31, "deepseek-v3"), (32, "smollm")):
        model = f"{tmp}/{pre}.gguf"
        subprocess.run([f"{bin_dir}/gguf-edit", "-q", "--set", f"tokenizer.ggml.pre=str:{pre}",
                        f"{here}/../data/vocab/ggml-vocab-gpt-2.gguf", model], check=True)
        rng = random.Random(seed)
        texts = [chktxt] + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 24))) for _ in range(300)]
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
