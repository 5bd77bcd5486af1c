# gguf-convert on hostile checkpoints: lying or truncated safetensors, broken shard sets and
# configs, special files. Every refusal: exit 2, one line, no output file.
CV="$BIN/gguf-convert"
SY="$BIN/gguf-synth"
TOK="$DATA/hf/tokenizer.model"

# A fresh small checkpoint in $TMP/$1 (sharded with $2 = --split-max-size value when given).
mkck() {
    rm -rf "${TMP:?}/$1"
    "$SY" --hf -q --type BF16 --n-embd 64 --n-ff 96 --n-vocab 416 ${2:+--split-max-size "$2"} "$TMP/$1"
    cp "$TOK" "$TMP/$1/"
}
refused() {  # NAME DIR TEXT: gguf-convert DIR refuses, naming TEXT
    hostile_case "convert: $1" 2 "$CV" "$TMP/$2" "$TMP/o.gguf"
    expect_err_contains "$3"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
}

mkck ok
hostile_case "convert: sane checkpoint" 0 "$CV" -q "$TMP/ok" "$TMP/o.gguf"
rm -f "$TMP/o.gguf"

mkck trunc
st="$TMP/trunc/model.safetensors"; head -c $(($(stat -c %s "$st") - 100)) "$st" >"$st.t" && mv "$st.t" "$st"
refused "truncated shard" trunc "end past the"

mkck lie
python3 - "$TMP/lie/model.safetensors" <<'PY'
import struct, sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); n = struct.unpack("<Q", b[:8])[0]
h = b[8:8 + n].replace(b'"shape":[64]', b'"shape":[65]', 1)
open(p, "wb").write(b[:8] + h + b[8 + n:])
PY
refused "header shape lies about the span" lie "needs 130 bytes but data_offsets span 128"

mkck len
printf '\xff\xff\xff\xff\xff\xff\xff\x7f' | dd of="$TMP/len/model.safetensors" bs=1 count=8 conv=notrunc status=none
refused "header length past the file" len "exceeds the limit"

mkck nojson
printf '\x0e\x00\x00\x00\x00\x00\x00\x00{"a":{"dtype":' >"$TMP/nojson/model.safetensors"
refused "header not JSON" nojson "not valid JSON"

mkck shards 60K
rm "$TMP/shards/model-00002-of-00005.safetensors"
refused "missing shard" shards "model-00002-of-00005.safetensors"

mkck ghost 60K
sed -i 's/"weight_map": {/"weight_map": {\n    "model.ghost.weight": "model-00001-of-00005.safetensors",/' "$TMP/ghost/model.safetensors.index.json"
refused "index names an absent tensor" ghost "tensor 'model.ghost.weight': not in its shard"

mkck escape 60K
sed -i 's/"model-00001-of-00005.safetensors"/"..\/..\/etc\/passwd"/' "$TMP/escape/model.safetensors.index.json"
refused "shard path outside the directory" escape "not a plain file name"

mkck nolayers
sed -i '/num_hidden_layers/d' "$TMP/nolayers/config.json"
refused "config without the block count" nolayers "'n_layers' is missing"

mkck novocab
sed -i '/"vocab_size"/d' "$TMP/novocab/config.json"
refused "config without vocab_size" novocab "'vocab_size' is missing"

mkck arch
sed -i 's/LlamaForCausalLM/Gemma7ForCausalLM/' "$TMP/arch/config.json"
refused "unknown architecture" arch "'Gemma7ForCausalLM' is not supported (supported: LlamaForCausalLM"

mkck badtok
printf '\x0a\x7fxyz' >"$TMP/badtok/tokenizer.model"
refused "malformed tokenizer.model" badtok "tokenizer.model"

mkck badtc
printf '{"chat_template": "x", "chat_template": "y"}' >"$TMP/badtc/tokenizer_config.json"
refused "tokenizer_config.json with a repeated key" badtc "repeated in one JSON object"

mkck badtj
printf '{"added_tokens": [{"id": 1, "content": "<s>"' >"$TMP/badtj/tokenizer.json"
refused "truncated tokenizer.json" badtj "tokenizer.json"

mkck dupatok
printf '{"added_tokens": [], "added_tokens": []}' >"$TMP/dupatok/tokenizer.json"
refused "tokenizer.json with a repeated key" dupatok "repeated in one JSON object"

# tokenizer.json BPE vocabularies (no tokenizer.model): every field the reader takes, lying.
mkbpe() {  # DIR JSON: a checkpoint whose only vocabulary is tokenizer.json = JSON
  mkck "$1"
  rm "$TMP/$1/tokenizer.model"
  printf '%s' "$2" >"$TMP/$1/tokenizer.json"
}
mkbpe bpemerge '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b", ["a", "b"]]}}'
refused "BPE merges in two forms" bpemerge "model.merges: entry 1 is not like the first"
mkbpe bpeid '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 416}, "merges": []}}'
refused "BPE token id past vocab_size" bpeid "token id 416 is not below the vocabulary size 416"
mkbpe bpeneg '{"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}}'
refused "BPE negative token id" bpeneg "id is not an unsigned integer"
mkbpe bpeadded '{"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"content": "<s>"}]}'
refused "BPE added token without an id" bpeadded "an entry without an unsigned id and a content string"
mkbpe bpevocab '{"model": {"type": "BPE", "vocab": ["a"]}}'
refused "BPE vocab not an object" bpevocab "model.vocab: missing or not an object"
mkbpe bpepre '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}'
refused "BPE with an unknown pre-tokenizer" bpepre "pre-tokenizer: not recognised"
mkbpe bpehuge '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}'
sed -i 's/"vocab_size": 416/"vocab_size": 1099511627776/' "$TMP/bpehuge/config.json"
refused "BPE vocab_size of 2^40" bpehuge "1099511627776 is not a u32"
mkbpe bpebig '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}'
sed -i 's/"vocab_size": 416/"vocab_size": 20000000/' "$TMP/bpebig/config.json"
refused "BPE vocab_size of 20 million" bpebig "vocabulary of 20000000 tokens"

mkck l3theta
sed -i 's/^{/{"rope_scaling": {"rope_type": "llama3", "factor": 8.0},/; s/"rope_theta": 10000.0/"rope_theta": 1e39/' "$TMP/l3theta/config.json"
refused "llama3 RoPE with a rope_theta past float32" l3theta "0 < rope_theta < 3.4e38"
mkck l3dim
sed -i 's/^{/{"rope_scaling": {"rope_type": "llama3"}, "head_dim": 1000000000000,/' "$TMP/l3dim/config.json"
refused "llama3 RoPE with a head size of 10^12" l3dim "a head size of 1 to 65536"
mkck l3nan
sed -i 's/^{/{"rope_scaling": {"rope_type": "llama3", "factor": 1e300},/' "$TMP/l3nan/config.json"
refused "llama3 RoPE factors that overflow float32" l3nan "(not finite)"

# Model cards (README.md front matter): nesting, billion laughs, a 10^6-deep flow, a FIFO.
mkck carddeep
python3 -c 'print("---\na: " + "[" * 100000 + "\n---")' >"$TMP/carddeep/README.md"
refused "model card nested 100000 deep" carddeep "nested deeper than 256"
mkck cardlaughs
python3 - "$TMP/cardlaughs/README.md" <<'PY'
import sys
lines = ["---", "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
lines += [f"a{i}: &a{i} [{', '.join([f'*a{i-1}'] * 10)}]" for i in range(1, 30)]
lines += ["version: 2.5", "---"]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
refused "model card billion laughs (aliases 10^30 items wide)" cardlaughs "'version' is 2.5 (float)"
mkck cardbad
printf -- '---\nlicense: "unterminated\n---\n' >"$TMP/cardbad/README.md"
refused "model card with a YAML error" cardbad "README.md: model card: YAML front matter line"
mkck cardfifo
mkfifo "$TMP/cardfifo/README.md"
hostile_case "convert: FIFO as README.md (not a file: no card, as in Python; no hang)" 0 "$CV" -q "$TMP/cardfifo" "$TMP/o.gguf"
rm -f "$TMP/o.gguf"

# --metadata override files: a FIFO, nesting, a list where an object belongs.
mkfifo "$TMP/meta.fifo"
hostile_case "convert: --metadata FIFO" 2 "$CV" "$TMP/ok" "$TMP/o.gguf" --metadata "$TMP/meta.fifo"
expect_err_contains "not a file"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
python3 -c 'print("{\"general.tags\":" + "[" * 100000 + "]" * 100000 + "}")' >"$TMP/meta-deep.json"
hostile_case "convert: --metadata nested 100000 deep" 2 "$CV" "$TMP/ok" "$TMP/o.gguf" --metadata "$TMP/meta-deep.json"
expect_err_contains "nested deeper than"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
printf '[{"general.name": "x"}]' >"$TMP/meta-list.json"
hostile_case "convert: --metadata a list" 2 "$CV" "$TMP/ok" "$TMP/o.gguf" --metadata "$TMP/meta-list.json"
expect_err_contains "not a JSON object"; expect_err_one_line; expect_no_file "$TMP/o.gguf"

# OUT as the Python converter takes it: a bad {field} template refused; no OUT writes into HF_DIR.
hostile_case "convert: OUT template with an unknown field" 2 "$CV" "$TMP/ok" "$TMP/o-{x}.gguf"
expect_err_contains "str.format fails"; expect_err_one_line; expect_no_file "$TMP/o-{x}.gguf"
mkck noout
hostile_case "convert: no OUT (the checkpoint's directory, default name)" 0 "$CV" -q "$TMP/noout"
expect_true "default name in HF_DIR" test -f "$TMP/noout/Noout-115K-BF16.gguf"

mkck deep
python3 -c 'print("{\"a\":" * 100000 + "1" + "}" * 100000)' >"$TMP/deep/config.json"
refused "config nested 100000 deep" deep "nested deeper than"

mkck fifo
rm "$TMP/fifo/model.safetensors" && mkfifo "$TMP/fifo/model.safetensors"
refused "FIFO as a shard" fifo "not a regular file"

hostile_case "convert: output onto a shard" 2 "$CV" "$TMP/ok" "$TMP/ok/model.safetensors"
expect_err_one_line
expect_true "shard unchanged" "$BIN/gguf-convert" -q --dry-run "$TMP/ok"
hostile_case "convert: output to /dev/null (a device)" 2 "$CV" "$TMP/ok" /dev/null
expect_err_one_line
hostile_case "convert: checkpoint is a file" 2 "$CV" "$TOK" "$TMP/o.gguf"
expect_err_one_line; expect_no_file "$TMP/o.gguf"

# Straight to a preset (--preset): the same refusals, and the checkpoint is an input never overwritten.
hostile_case "convert --preset: output onto a shard" 2 "$CV" --preset Q8_0 "$TMP/ok" "$TMP/ok/model.safetensors"
expect_err_one_line
expect_true "shard unchanged (--preset)" "$BIN/gguf-convert" -q --dry-run "$TMP/ok"
hostile_case "convert --preset: output to /dev/null (a device)" 2 "$CV" --preset Q8_0 "$TMP/ok" /dev/null
expect_err_one_line
hostile_case "convert --preset: truncated shard" 2 "$CV" --preset Q4_K_M "$TMP/trunc" "$TMP/o.gguf"
expect_err_contains "end past the"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
printf 'GGUF\x03\x00\x00\x00\xff' >"$TMP/bad-imatrix.gguf"
hostile_case "convert --preset: truncated imatrix" 2 "$CV" --preset Q4_K_M --imatrix "$TMP/bad-imatrix.gguf" \
  "$TMP/ok" "$TMP/o.gguf"
expect_err_contains "bad-imatrix.gguf"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
mkck nan
python3 - "$TMP/nan/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); n = struct.unpack("<Q", b[:8])[0]
at = 8 + n + json.loads(b[8:8 + n])["model.layers.0.mlp.up_proj.weight"]["data_offsets"][0] + 6
b[at:at + 2] = struct.pack("<H", 0x7f80)  # +inf in BF16
open(p, "wb").write(b)
PY
hostile_case "convert --preset: infinite weight" 2 "$CV" --preset Q8_0 "$TMP/nan" "$TMP/o.gguf"
expect_err_contains "tensor 'model.layers.0.mlp.up_proj.weight': non-finite value inf at element 3"
expect_err_one_line; expect_no_file "$TMP/o.gguf"

# FP8 releases (quantization_config.quant_method fp8): NaN codes, scales that do not fit, methods not done.
mkfp8() {
    rm -rf "${TMP:?}/$1"
    "$SY" --hf -q --type BF16 --n-embd 64 --n-ff 96 --n-vocab 416 --hf-fp8 32x48 "$TMP/$1"
    cp "$TOK" "$TMP/$1/"
}
mkfp8 fp8ok
hostile_case "convert: sane FP8 checkpoint" 0 "$CV" -q "$TMP/fp8ok" "$TMP/o.gguf"
rm -f "$TMP/o.gguf"
mkfp8 fp8nan
python3 - "$TMP/fp8nan/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); n = struct.unpack("<Q", b[:8])[0]
b[8 + n + json.loads(b[8:8 + n])["model.layers.1.mlp.down_proj.weight"]["data_offsets"][0] + 40] = 0x7F  # E4M3 NaN
open(p, "wb").write(b)
PY
refused "FP8 NaN code" fp8nan "tensor 'model.layers.1.mlp.down_proj.weight': non-finite value nan at element 40"
hostile_case "convert --preset: FP8 NaN code" 2 "$CV" --preset Q8_0 "$TMP/fp8nan" "$TMP/o.gguf"
expect_err_contains "non-finite value nan at element 40"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
mkfp8 fp8block
sed -i 's/^      48$/      16/' "$TMP/fp8block/config.json"
refused "FP8 block size the scales do not fit" fp8block "does not cover the matrix"
mkfp8 fp8gptq
sed -i 's/"quant_method": "fp8"/"quant_method": "gptq"/' "$TMP/fp8gptq/config.json"
refused "quantization method not converted" fp8gptq "\"gptq\" is not converted"
mkfp8 fp8orphan
python3 - "$TMP/fp8orphan/model.safetensors" <<'PY'
import sys
p = sys.argv[1]; b = open(p, "rb").read()
open(p, "wb").write(b.replace(b'"model.layers.0.mlp.up_proj.weight"', b'"model.layers.0.mlp.up_proj.weighz"', 1))
PY
refused "FP8 scale without its weight" fp8orphan "scales 'model.layers.0.mlp.up_proj.weight', which the checkpoint does not hold"

# A tokenizer.json BPE vocabulary (GPT-2's) whose tokenizer_config.json names LlamaTokenizerFast: its
# BOS is part of the recognised ids, so one transformers cannot build is refused naming the key.
mkbpe() {
    rm -rf "${TMP:?}/$1"
    "$SY" --hf -q --type BF16 --n-embd 32 --n-ff 64 --n-layer 1 --n-vocab 50257 "$TMP/$1"
    zstd -q -d "$DATA/hf/gpt2/tokenizer.json.zst" -o "$TMP/$1/tokenizer.json"
    printf '{"tokenizer_class": "LlamaTokenizerFast", %s}' "$2" >"$TMP/$1/tokenizer_config.json"
}
mkbpe bpebos '"bos_token": null'
refused "LlamaTokenizerFast with a null bos_token" bpebos "bos_token: null while add_bos_token is true"
mkbpe bpebos2 '"bos_token": "<s>"'
refused "LlamaTokenizerFast's bos_token not in the vocabulary" bpebos2 "bos_token: '<s>' is not in the vocabulary"
mkbpe bpebos3 '"add_bos_token": "yes"'
refused "add_bos_token not a boolean" bpebos3 "add_bos_token: not a boolean"
mkbpe bpeeos '"add_bos_token": false, "eos_token": {"content": 7}, "add_eos_token": true'
refused "eos_token neither a string nor an AddedToken" bpeeos "eos_token: not a string or an AddedToken"
