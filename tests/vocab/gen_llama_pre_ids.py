#!/usr/bin/env python3
# Writes tests/data/vocab/llama-pre-ids.json: the ids llama.cpp's own llama-tokenize (1348f67) gives
# for the Python converter's chktxt and 300 random texts per pre-tokenizer, over GPT-2's vocabulary
# (tests/data/vocab/ggml-vocab-gpt-2.gguf) with tokenizer.ggml.pre set to deepseek-v3 or smollm (and
# 100 each for dbrx, stablelm2, trillion, qwen35, seed-coder, jais-2, exaone-moe, bailingmoe, glm4, bloom,
# viking, falcon, deepseek-coder, deepseek-llm, afmoe, tiny_aya, kimi-k2, youtu, superbpe, chameleon and
# llama.cpp's default; jais-2 also
# runs of 1 to 40 and 600 spaces, superbpe 38 texts of digit runs), over the alphabet of pre_alphabet.py
# (where those pre-tokenizers' rules turn; bloom and viking add their stop characters, deepseek-llm letters
# and punctuation of its own, afmoe and tiny_aya scripts and digit runs, kimi-k2 Han blocks and
# contractions, youtu its classes' edges, superbpe longer digit runs, chameleon pieces of its
# sentinel and image tokens and runs of spaces, default digit and punctuation runs).
# VocabTokenizer.DeepseekV3AndSmollmTokenizeLikeLlamaCpp and the tests after it check our tokenizer
# against it.
#   python3 tests/vocab/gen_llama_pre_ids.py LLAMA_SRC LLAMA_BIN BIN_DIR > tests/data/vocab/llama-pre-ids.json
import json
import os
import random
import subprocess
import sys
import tempfile

from pre_alphabet import SEQUENCE_ALPHABET, chktxt, llama_ids

llama_src, llama_bin, bin_dir = sys.argv[1:4]
check_text = chktxt(llama_src)
here = os.path.dirname(os.path.abspath(__file__))
out = {}
# DeepSeek LLM's letters (é, Ω, ж, Ａ) and two letters out of its ranges (ƻ, ʔ), its punctuation beyond
# ASCII (！, ‘, 。) and a Hangul syllable.
DEEPSEEK_LLM_EXTRA = ["\u00e9", "\u03a9", "\u0436", "\uff21", "\u01bb", "\u0294", "\uff01", "\u2018", "\u3002",
                      "\uac00", "   "]
# AFMoE's scripts (Thai from U+0E40 on, Myanmar, Hangul, a compatibility ideograph, Kangxi, halfwidth
# katakana), a Thai letter before its range, and longer digit runs.
AFMOE_EXTRA = ["\u0e40", "\u0e01", "\u1000", "\uac00", "\uf900", "\u2f00", "\uff66", "9999", "\u0663\u0663"]
# Kimi K2's Han blocks (extension A, U+9FFF past DeepSeek's range, compatibility, extensions B, C, F and
# the supplement) and contractions after words.
KIMI_EXTRA = ["\u3400", "\u9fff", "\uf900", "\U00020000", "\U0002a700", "\U0002ebef", "\U0002f800", "'s", "'LL",
              "'Ve", "'d"]
# Youtu's classes at their edges: Hangul syllables and jamo, CJK punctuation (with the nine single ones it
# names, U+2014 in the alphabet already), presentation forms, Bopomofo, kana, and a contraction.
YOUTU_EXTRA = ["\uac00", "\ud7a3", "\u3131", "\u318e", "\u3130", "\u3105", "\u312f", "\uff01", "\u2026", "\u201c",
               "\u201d", "\u2018", "\u2019", "\uff1a", "\uff1b", "\uff0c", "\u303f", "\ufe30", "\ufe4f", "\u3040",
               "\u309f", "'re", "'T"]
# SuperBPE's: runs of ASCII digits of every length mod 3, next to other numbers (in the alphabet: U+0663,
# U+00BD, U+FF11).
SUPERBPE_EXTRA = ["0", "9999", "123456", "12345678", "\u0663", "\uff11"]
# Chameleon's: pieces of its sentinel and image tokens (letters A-I and J), tabs and runs of spaces.
CHAMELEON_EXTRA = ["<sentinel:", "<sentinel:4>", "12>", ">", "IMGIMG", "IMGIMGAZ", "A", "I", "J", "Z", "BCD", "  ",
                   "   ", "    ", "\t"]
# llama.cpp's default: runs of its punctuation and symbols, longer digit runs.
DEFAULT_EXTRA = ["9999", "123456", "$+", "~|", "``", "\u00bd\u00bd"]
BLOOM_STOPS = [",", "?", ")", "(", "|", "\u2026", "\u3002", "\uff0c", "\u0964", "\u06d4", "\u060c", "\u000b", "\u000c"]
with tempfile.TemporaryDirectory() as tmp:
    # After the two sequences, one name of each family that names an expression implemented for
    # others (GPT-2's; Llama 3's without ignore_merges; Qwen2's), fewer texts each.
    # Then the expressions of their own (Qwen 3.5's, Seed-Coder's, Jais-2's, EXAONE-MoE's) and two more
    # names (Ling's regex, which llama.cpp runs as Qwen2's; GLM-4's, Llama 3's without a default BOS id).
    for seed, pre, count in ((31, "deepseek-v3", 300), (32, "smollm", 300), (33, "dbrx", 100), (34, "stablelm2", 100),
                             (35, "trillion", 100), (36, "qwen35", 100), (37, "seed-coder", 100), (38, "jais-2", 100),
                             (39, "exaone-moe", 100), (40, "bailingmoe", 100), (41, "glm4", 100), (42, "bloom", 100),
                             (43, "viking", 100), (44, "falcon", 100), (45, "deepseek-coder", 100),
                             (46, "deepseek-llm", 100), (47, "afmoe", 100), (48, "tiny_aya", 100),
                             (49, "kimi-k2", 100), (50, "youtu", 100), (51, "superbpe", 100),
                             (52, "chameleon", 100), (53, "default", 100)):
        model = f"{tmp}/{pre}.gguf"
        subprocess.run([f"{bin_dir}/gguf-edit", "-q", "--set", f"tokenizer.ggml.pre=str:{pre}",
                        f"{here}/../data/vocab/ggml-vocab-gpt-2.gguf", model], check=True)
        rng = random.Random(seed)
        # BLOOM's and Viking's stop characters are added to the alphabet.
        alphabet = SEQUENCE_ALPHABET + (BLOOM_STOPS if pre in ("bloom", "viking") else
                                        DEEPSEEK_LLM_EXTRA if pre == "deepseek-llm" else
                                        AFMOE_EXTRA if pre in ("afmoe", "tiny_aya") else
                                        KIMI_EXTRA if pre == "kimi-k2" else
                                        YOUTU_EXTRA if pre == "youtu" else
                                        SUPERBPE_EXTRA if pre == "superbpe" else
                                        CHAMELEON_EXTRA if pre == "chameleon" else
                                        DEFAULT_EXTRA if pre == "default" else [])
        texts = [check_text] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(count)]
        if pre == "superbpe":  # digit runs alone and between other numbers, every length to 10
            texts += ["1234567890"[:n] for n in range(1, 11)] + [f"a{'7' * n}\u0663{'5' * m}b" for n in range(4) for m in range(1, 8)]
        if pre == "jais-2":  # its runs of spaces cut in powers of two: every length to 40, and one past 512
            texts += [f"a{' ' * n}b" for n in range(1, 41)] + [" " * n for n in (7, 8, 9, 33)] + ["x" + " " * 600 + "y", "x" + " " * 600 + "\ny"]
        out[pre] = [[t, llama_ids(llama_bin, model, t, tmp)] for t in texts]
json.dump(out, sys.stdout, ensure_ascii=True, indent=0)
print()
