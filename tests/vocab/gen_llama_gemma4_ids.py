#!/usr/bin/env python3
# Writes tests/data/vocab/llama-gemma4-ids.json: the ids llama.cpp's own llama-tokenize (1348f67) gives
# with its SentencePiece-style BPE (Gemma 4's and Sarvam-MoE's: spaces as U+2581, pieces
# [^\n]+|[\n]+ over UTF-8, <0xNN> byte fallback; Gemma 4 also takes a run of newlines that is a
# token whole and always adds BOS). No Gemma 4 vocabulary is on this machine, so one is made from
# ggml-vocab-llama-spm.gguf (a SentencePiece vocabulary, spelled as Gemma 4's is):
#   - tokens 31990..31993 become "\n", "\n\n", "\n\n\n" and eight newlines (the last no merge makes);
#   - merges: for each NORMAL token of two or more code points, in id order, the first split (from
#     the left, at a code point) whose two sides are both tokens, as "LEFT RIGHT";
#   - tokenizer.ggml.add_bos_token false;
# three ways: tokenizer.ggml.model "gemma4" ("gemma4-model"), model "gpt2" with tokenizer.ggml.pre
# "gemma4" ("gemma4") and with "sarvam-moe" ("sarvam-moe"). Each: chktxt and 200 random texts over
# spaces, newline runs, words, U+2581, special tokens and other scripts, special tokens parsed.
# VocabTokenizer.SentencePieceStyleBpeTokenizesLikeLlamaCpp builds the same vocabulary
# (gemma4_style_vocab in tests/vocab/test_tokenizer.cpp) and checks our ids against these.
#   python3 tests/vocab/gen_llama_gemma4_ids.py LLAMA_SRC LLAMA_BIN > tests/data/vocab/llama-gemma4-ids.json
import json
import os
import random
import struct
import sys
import tempfile

from pre_alphabet import chktxt, llama_ids

llama_src, llama_bin = sys.argv[1:3]
here = os.path.dirname(os.path.abspath(__file__))
NEWLINE_TOKENS = {31990: "\n", 31991: "\n\n", 31992: "\n\n\n", 31993: "\n" * 8}
ALPHABET = [" ", "  ", "   ", "\n", "\n\n", "\n\n\n\n", "\n" * 8, "\n" * 9, "\r\n", "\t", "Hello", " world", "the",
            "ing", "a", "b", " x", ".", ",", "!", "'s", "12", "345", "\u2581", "\u2581\u2581", "\u00e9",
            "\u00f1o", "\u4e2d\u6587", "\u3042", "\U0001f600", "\u0915\u093f", "\u00a0", "\u3000", "</s>", "<s>",
            "<unk>", "\x01", "\x7f"]

# GGUF value types (ggml's gguf_type) this script reads and writes.
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


def read_gguf_kv(path):
    """The key-value pairs of a GGUF v3 file without tensors, as {key: (type, value)} in order."""
    data = open(path, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF" and version == 3 and n_tensors == 0
    off = 24

    def string():
        nonlocal off
        (n,) = struct.unpack_from("<Q", data, off)
        s = data[off + 8:off + 8 + n].decode("utf-8")
        off += 8 + n
        return s

    def value(t):
        nonlocal off
        if t == STRING:
            return string()
        if t == ARRAY:
            et, n = struct.unpack_from("<IQ", data, off)
            off += 12
            return (et, [value(et) for _ in range(n)])
        (x,) = struct.unpack_from(SCALARS[t], data, off)
        off += struct.calcsize(SCALARS[t])
        return x

    kv = {}
    for _ in range(n_kv):
        key = string()
        (t,) = struct.unpack_from("<I", data, off)
        off += 4
        kv[key] = (t, value(t))
    return kv


def write_gguf_kv(path, kv):
    """A GGUF v3 file holding the key-value pairs `kv` (as read_gguf_kv returns them) and no tensors
    (read_gguf_kv's input again, byte for byte, when `kv` is what it read)."""
    out = bytearray(struct.pack("<4sIQQ", b"GGUF", 3, 0, len(kv)))

    def string(s):
        b = s.encode("utf-8")
        out.extend(struct.pack("<Q", len(b)) + b)

    def value(t, x):
        if t == STRING:
            string(x)
        elif t == ARRAY:
            out.extend(struct.pack("<IQ", x[0], len(x[1])))
            for e in x[1]:
                value(x[0], e)
        else:
            out.extend(struct.pack(SCALARS[t], x))

    for key, (t, x) in kv.items():
        string(key)
        out.extend(struct.pack("<I", t))
        value(t, x)
    open(path, "wb").write(out)


def gemma4_style(kv):
    """ggml-vocab-llama-spm.gguf's pairs made into the vocabulary described at the top."""
    kv = dict(kv)
    tokens = list(kv["tokenizer.ggml.tokens"][1][1])
    types = kv["tokenizer.ggml.token_type"][1][1]
    for i, t in NEWLINE_TOKENS.items():
        assert types[i] == 1
        tokens[i] = t
    ids = set(tokens)
    merges = []
    for i, t in enumerate(tokens):
        if types[i] != 1 or len(t) < 2:
            continue
        assert " " not in t
        k = next((k for k in range(1, len(t)) if t[:k] in ids and t[k:] in ids), None)
        if k is not None:
            merges.append(t[:k] + " " + t[k:])
    kv["tokenizer.ggml.tokens"] = (ARRAY, (STRING, tokens))
    kv["tokenizer.ggml.merges"] = (ARRAY, (STRING, merges))
    kv["tokenizer.ggml.add_bos_token"] = (7, False)
    return kv


base = gemma4_style(read_gguf_kv(f"{here}/../data/vocab/ggml-vocab-llama-spm.gguf"))
CASES = (("gemma4-model", "gemma4", "default"), ("gemma4", "gpt2", "gemma4"), ("sarvam-moe", "gpt2", "sarvam-moe"))
check_text = chktxt(llama_src)
out = {}
with tempfile.TemporaryDirectory() as tmp:
    for seed, (name, model, pre) in enumerate(CASES, 71):
        kv = dict(base)
        kv["tokenizer.ggml.model"] = (STRING, model)
        kv["tokenizer.ggml.pre"] = (STRING, pre)
        path = f"{tmp}/{name}.gguf"
        write_gguf_kv(path, kv)
        rng = random.Random(seed)
        texts = [check_text] + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 20))) for _ in range(200)]
        out[name] = [[t, llama_ids(llama_bin, path, t, tmp)] for t in texts]
json.dump(out, sys.stdout, ensure_ascii=True, indent=0)
print()
