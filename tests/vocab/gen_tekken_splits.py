#!/usr/bin/env python3
# Writes tests/data/vocab/tekken-splits.json: how Mistral's tekken regex and GPT-4o's
# (tokenizer.json's Split patterns, real Unicode categories), and DeepSeek-V3's and SmolLM's
# sequences of regexes, split the Python converter's chktxt and 400 random texts each over an
# alphabet of the code points where the categories matter (cased and caseless letters, marks, digits
# of other scripts, Unicode spaces, '/'; for GPT-4o also contractions and U+017F, which (?i:) folds
# to s; for the sequences also ASCII punctuation and symbols, the CJK and kana ranges, controls), as
# Python's `regex` module (the engine the converter stub in tests/hf/pyconvert uses) splits them.
# VocabTokenizer.TekkenAsWrittenSplitsLikeTheRegex checks PreTokenizer::TekkenUnicode, Gpt4oUnicode,
# DeepseekV3Unicode and Smollm against it.
#   python3 tests/vocab/gen_tekken_splits.py LLAMA_SRC > tests/data/vocab/tekken-splits.json
import json
import random
import sys

import regex
from pre_alphabet import SEQUENCE_ALPHABET, chktxt

TEKKEN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
          r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT4O = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
ALPHABET = ["a", "q", "Z", "B", " ", " ", "\n", "\r", "\t", "/", "!", "'", ".", "3", "\u0663", "\u00bd",
            "\u00f1", "\u00d1", "\u01c5", "\u02b0", "\u4e2d", "\u1780", "\u17b6", "\u17cb", "\u0301",
            "\u00a0", "\u3000", "\u2028", "\U0001f600", "\u200d", "\u0915", "\u093f"]
CONTRACTIONS = ["'", "'", "s", "S", "ll", "LL", "re", "Ve", "d", "M", "t", "\u017f", "12", "4"]
# DeepSeek-V3's sequence (tokenizer.json: three isolated Splits) and SmolLM's (Digits with
# individual_digits, then ByteLevel's GPT-2 regex), each regex splitting the pieces the one before left.
DEEPSEEK_V3 = [r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
               r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|"
               r" ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]
SMOLLM = [r"\p{N}", r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"]
check_text = chktxt(sys.argv[1])


def cases(pattern, alphabet, seed):
    rng = random.Random(seed)
    texts = [check_text] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(400)]
    return {"pattern": pattern, "cases": [[t, [m.group(0) for m in regex.finditer(pattern, t)]] for t in texts]}


def split(patterns, text):
    """Hugging Face's Split(pattern, "Isolated") applied in turn: matches and the text between them."""
    pieces = [text]
    for pattern in patterns:
        out = []
        for p in pieces:
            at = 0
            for m in regex.finditer(pattern, p):
                if m.start() > at:
                    out.append(p[at:m.start()])
                out.append(m.group(0))
                at = m.end()
            if at < len(p):
                out.append(p[at:])
        pieces = out
    return pieces


def sequence_cases(patterns, seed):
    rng = random.Random(seed)
    texts = [check_text] + ["".join(rng.choice(SEQUENCE_ALPHABET + ["'s", "'LL"]) for _ in range(rng.randint(1, 24))) for _ in range(400)]
    return {"patterns": patterns, "cases": [[t, split(patterns, t)] for t in texts]}


json.dump({"tekken": cases(TEKKEN, ALPHABET, 23), "gpt-4o": cases(GPT4O, ALPHABET + CONTRACTIONS, 24),
           "deepseek-v3": sequence_cases(DEEPSEEK_V3, 25), "smollm": sequence_cases(SMOLLM, 26)},
          sys.stdout, ensure_ascii=True, indent=0)
print()
