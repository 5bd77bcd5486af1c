#!/usr/bin/env python3
# Writes tests/data/vocab/llama-strip-ids.json: the ids llama.cpp's own llama-tokenize (1348f67) gives,
# special tokens parsed, where its per-token attributes strip whitespace next to special tokens:
#   "phi-3": ggml-vocab-llama-spm.gguf with general.name "Phi-3-mini" (every special token but <unk>,
#            <s>, <|endoftext|> takes the whitespace after it) and token 3 renamed <|endoftext|>
#            (llama.cpp refuses a Phi-3 name without one);
#   "jina-v2-code": ggml-vocab-gpt-2.gguf with that pre-tokenizer and token 50256 (a control token)
#            renamed <mask> (which takes the whitespace before it).
# Each: 200 random texts over special tokens, ASCII whitespace and a few words.
# VocabTokenizer.SpecialTokensStripWhitespaceLikeLlamaCpp reads it.
#   python3 tests/vocab/gen_llama_strip_ids.py LLAMA_BIN BIN_DIR > tests/data/vocab/llama-strip-ids.json
import json
import os
import random
import subprocess
import sys
import tempfile

from pre_alphabet import llama_ids

llama_bin, bin_dir = sys.argv[1:3]
here = os.path.dirname(os.path.abspath(__file__))
data = f"{here}/../data/vocab"
ALPHABET = ["</s>", "<s>", "<unk>", "<|endoftext|>", "<mask>", " ", "  ", "\n", "\n\n", "\t", "\r\n", "\x0b", "\x0c",
            "\u00a0", "a", "b", "hi", " x", "."]
CASES = (("phi-3", "ggml-vocab-llama-spm.gguf", 3, "<|endoftext|>", ["--set", "general.name=str:Phi-3-mini"]),
         ("jina-v2-code", "ggml-vocab-gpt-2.gguf", 50256, "<mask>", ["--set", "tokenizer.ggml.pre=str:jina-v2-code"]))
out = {}
with tempfile.TemporaryDirectory() as tmp:
    for seed, (name, vocab, renamed, text, edits) in enumerate(CASES, 61):
        report = subprocess.run([f"{bin_dir}/gguf-inspect", "--full", "--json", f"{data}/{vocab}"], check=True,
                                capture_output=True, text=True).stdout
        tokens = json.loads(report)["kv"]["tokenizer.ggml.tokens"]["value"]
        assert not any("\n" in t for t in tokens)
        tokens[renamed] = text
        with open(f"{tmp}/tokens.txt", "w", encoding="utf-8", newline="") as f:
            f.write("\n".join(tokens) + "\n")
        model = f"{tmp}/{name}.gguf"
        subprocess.run([f"{bin_dir}/gguf-edit", "-q", *edits, "--set-array", f"tokenizer.ggml.tokens=str:@{tmp}/tokens.txt",
                        f"{data}/{vocab}", model], check=True)
        rng = random.Random(seed)
        texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 16))) for _ in range(200)]
        out[name] = [[t, llama_ids(llama_bin, model, t, tmp)] for t in texts]
json.dump(out, sys.stdout, ensure_ascii=True, indent=0)
print()
