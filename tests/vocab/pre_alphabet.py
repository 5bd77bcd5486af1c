# What the generators of tests/data/vocab/ share: llama-tokenize's ids for a text; the alphabet for
# the pre-tokenizers with a digit rule and a CJK/kana range (DeepSeek-V3's, SmolLM's): where their
# rules turn are ASCII punctuation and symbols ('~' among them), digits of several scripts, the CJK
# ranges and kana (with their marks, symbols and punctuation), marks, Unicode spaces, controls, an
# unassigned and a private-use code point; and the Python converter's chktxt, read from a llama.cpp
# checkout.

import json
import subprocess

SEQUENCE_ALPHABET = ["a", "q", "Z", "B", " ", " ", "\n", "\r", "\t", "/", "!", "'", ".", "3", "7", "~", "$", "+",
                     "|", "^", "`", "-", "_", "(", "}", "12", "345", "\u0663", "\u00bd", "\uff11", "\u00f1",
                     "\u00d1", "\u01c5", "\u02b0", "\u4e2d", "\u9fa5", "\u9fa6", "\u3042", "\u30a2", "\u30fb",
                     "\u30a0", "\u309b", "\u3099", "\u3001", "\u3002", "\u1780", "\u17b6", "\u0301", "\u00a0",
                     "\u3000", "\u2028", "\U0001f600", "\u200d", "\u0915", "\u093f", "\uff5e", "\u00a7",
                     "\u2014", "\u0378", "\ue000", "\x01", "\x7f", "\u00ad"]


def llama_ids(llama_bin, model, text, tmp):
    """The ids llama.cpp's llama-tokenize prints for `text` (written to a file in the directory `tmp`)."""
    with open(f"{tmp}/t.txt", "w", encoding="utf-8", newline="") as f:
        f.write(text)
    r = subprocess.run([f"{llama_bin}/llama-tokenize", "-m", model, "-f", f"{tmp}/t.txt", "--ids", "--log-disable",
                        "--no-escape"], check=True, capture_output=True, text=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def chktxt(llama_src):
    """The check text of llama.cpp's conversion/base.py (get_vocab_base_pre), a string literal there."""
    src = open(f"{llama_src}/conversion/base.py", encoding="utf-8").read()
    line = next(l for l in src.splitlines() if "chktxt = " in l)
    return eval(line.split("chktxt = ", 1)[1])
