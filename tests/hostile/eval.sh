# gguf-eval on hostile inputs: broken models, lying hyper-parameters, NaN weights, bad text and
# options. Every refusal is one line with exit 2 (BadData: NaN in the weights) and no crash.
EV="$BIN/gguf-eval"
MINI="$DATA/models/mini-llama-f16.gguf"
MOE="$DATA/models/mini-moe-f16.gguf"
TXT="$DATA/eval/words.txt"
EDIT="$BIN/gguf-edit"

hostile_case "eval: plain run" 0 "$EV" "$MINI" -f "$TXT" -c 64 --chunks 1
head -c 100000 "$MINI" >"$TMP/trunc.gguf"
hostile_case "eval: truncated model" 2 "$EV" "$TMP/trunc.gguf" -f "$TXT"
expect_err_one_line
hostile_case "eval: vocabulary-only GGUF (no tensors)" 2 "$EV" "$DATA/vocab/ggml-vocab-gpt-2.gguf" -f "$TXT"
expect_err_contains "general.architecture"; expect_err_one_line
hostile_case "eval: text is a directory" 2 "$EV" "$MINI" -f "$TMP"
expect_err_one_line
printf 'a few words\n' >"$TMP/short.txt"
hostile_case "eval: text shorter than a chunk" 2 "$EV" "$MINI" -f "$TMP/short.txt"
expect_err_contains "fewer than one chunk of --ctx 256"; expect_err_one_line
hostile_case "eval: --ctx 0" 2 "$EV" "$MINI" -f "$TXT" -c 0
expect_err_one_line
hostile_case "eval: --ctx beyond any text" 2 "$EV" "$MINI" -f "$TXT" -c 9223372036854775807
expect_err_contains "fewer than one chunk"; expect_err_one_line
hostile_case "eval: --chunks 0" 2 "$EV" "$MINI" -f "$TXT" -c 64 --chunks 0
expect_err_contains "not a positive count"; expect_err_one_line
hostile_case "eval: base of another model" 2 "$EV" "$MINI" --base "$MOE" -f "$TXT" -c 64
expect_err_contains "not the model's source"; expect_err_one_line
hostile_case "eval: unknown --semantics" 2 "$EV" "$MINI" -f "$TXT" --semantics fast
expect_err_one_line

# Saved base distributions (llama-perplexity's --kl-divergence-base file): broken or foreign files
# are refused in one line; nothing is written over a model or a saved file.
KLD="$DATA/eval/mini-llama-f16.kld"
hostile_case "eval: log-prob base, plain run" 0 "$EV" "$MINI" --kl-divergence-base "$KLD" --kl-divergence
head -c 100000 "$KLD" >"$TMP/trunc.kld"
hostile_case "eval: truncated log-prob base" 2 "$EV" "$MINI" --base "$TMP/trunc.kld"
expect_err_contains "the file has 100000"; expect_err_one_line
python3 - "$KLD" "$TMP" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
def put(name, at, fmt, v):
    c = bytearray(b); struct.pack_into(fmt, c, at, v); open(f"{sys.argv[2]}/{name}.kld", "wb").write(bytes(c))
put("ctx", 8, "<i", -64)              # n_ctx negative
put("chunks", 16, "<i", 2**31 - 1)    # n_chunk lying about the length
put("token", 20, "<i", 1 << 30)       # a token id beyond the vocabulary
put("nanrow", 20 + 1024, "<f", float("nan"))  # the first row's scale
put("negscale", 20 + 1024 + 2056 * 40, "<f", -1.0)  # chunk 2's 10th row
put("bigscale", 20 + 1024, "<f", 1e30)  # a scale whose entries would overflow to inf
PY
for c in ctx:"n_ctx: -64 is below 4" chunks:"need" token:"outside the vocabulary" \
         nanrow:"chunk 1 row 0: scale nan" negscale:"chunk 2 row 9: scale -1" bigscale:"scale 1e+30"; do
  hostile_case "eval: log-prob base, bad ${c%%:*}" 2 "$EV" "$MINI" --kl-divergence-base "$TMP/${c%%:*}.kld" --kl-divergence
  expect_err_contains "${c#*:}"; expect_err_one_line
done
hostile_case "eval: log-prob base for another ctx" 2 "$EV" "$MINI" --base "$KLD" -c 32
expect_err_contains "n_ctx 64, not the --ctx 32 asked"; expect_err_one_line
hostile_case "eval: log-prob base of another text" 2 "$EV" "$MINI" --base "$KLD" -f "$TMP/short.txt"
expect_err_one_line
hostile_case "eval: --kl-divergence without a base" 2 "$EV" "$MINI" -f "$TXT" --kl-divergence
expect_err_one_line
cp "$MINI" "$TMP/keep.gguf"
hostile_case "eval: --save-all-logits onto a model" 2 "$EV" "$MINI" -f "$TXT" -c 64 --save-all-logits "$TMP/keep.gguf"
expect_err_contains "not replaced"; expect_err_one_line
expect_true "the model given to --save-all-logits unchanged" cmp -s "$MINI" "$TMP/keep.gguf"
hostile_case "eval: --save-all-logits onto the text" 2 "$EV" "$MINI" -f "$TXT" -c 64 --save-all-logits "$TXT"
expect_err_one_line
mkfifo "$TMP/fifo"
hostile_case "eval: --base is a FIFO (no hang)" 2 "$EV" "$MINI" -f "$TXT" -c 64 --base "$TMP/fifo"
expect_err_one_line
hostile_case "eval: --kl-divergence-base is a FIFO (no hang)" 2 "$EV" "$MINI" -f "$TXT" -c 64 \
  --kl-divergence-base "$TMP/fifo"
expect_err_one_line
hostile_case "eval: --save-all-logits onto a FIFO (no hang)" 2 "$EV" "$MINI" -f "$TXT" -c 64 \
  --save-all-logits "$TMP/fifo"
expect_err_contains "not replaced"; expect_err_one_line
hostile_case "eval: --save-all-logits onto /dev/null" 2 "$EV" "$MINI" -f "$TXT" -c 64 --chunks 1 --save-all-logits /dev/null
expect_err_one_line
hostile_case "eval: --save-all-logits into a missing directory" 2 "$EV" "$MINI" -f "$TXT" -c 64 --chunks 1 \
  --save-all-logits "$TMP/none/base.kld"
expect_err_one_line

# Lying hyper-parameters: each refused before any work, naming the key or tensor.
"$EDIT" -q "$MINI" "$TMP/arch.gguf" --set general.architecture=str:gpt2
hostile_case "eval: unknown architecture" 2 "$EV" "$TMP/arch.gguf" -f "$TXT"
expect_err_contains "(llama, qwen2, qwen3, qwen3moe)"; expect_err_one_line
"$EDIT" -q "$MINI" "$TMP/heads.gguf" --set llama.attention.head_count=u32:0
hostile_case "eval: zero heads" 2 "$EV" "$TMP/heads.gguf" -f "$TXT"
expect_err_contains "llama.attention.head_count"; expect_err_one_line
"$EDIT" -q "$MINI" "$TMP/kv.gguf" --set llama.attention.head_count_kv=u32:3
hostile_case "eval: kv heads not dividing heads" 2 "$EV" "$TMP/kv.gguf" -f "$TXT"
expect_err_contains "does not divide"; expect_err_one_line
"$EDIT" -q "$MINI" "$TMP/huge.gguf" --set llama.attention.head_count=u32:4294967295
hostile_case "eval: 2^32-1 heads" 2 "$EV" "$TMP/huge.gguf" -f "$TXT"
expect_err_one_line
"$EDIT" -q "$MINI" "$TMP/embd.gguf" --set llama.embedding_length=u32:512
hostile_case "eval: width not the tensors'" 2 "$EV" "$TMP/embd.gguf" -f "$TXT"
expect_err_contains "token_embd.weight"; expect_err_one_line
"$EDIT" -q "$MINI" "$TMP/rot.gguf" --set llama.rope.dimension_count=u32:65
hostile_case "eval: odd rotary dimensions" 2 "$EV" "$TMP/rot.gguf" -f "$TXT"
expect_err_contains "must be even"; expect_err_one_line
"$EDIT" -q "$MINI" "$TMP/eps.gguf" --set llama.attention.layer_norm_rms_epsilon=f32:-1
hostile_case "eval: negative epsilon" 2 "$EV" "$TMP/eps.gguf" -f "$TXT"
expect_err_contains "positive finite"; expect_err_one_line
"$EDIT" -q "$MOE" "$TMP/used.gguf" --set qwen3moe.expert_used_count=u32:9
hostile_case "eval: more experts used than exist" 2 "$EV" "$TMP/used.gguf" -f "$TXT"
expect_err_contains "exceeds expert_count"; expect_err_one_line
"$EDIT" -q "$MINI" "$TMP/layers.gguf" --set llama.block_count=u32:3
hostile_case "eval: a layer missing" 2 "$EV" "$TMP/layers.gguf" -f "$TXT"
expect_err_contains "blk.2."; expect_err_one_line

# NaN in the weights: an error naming the position, not a NaN perplexity.
python3 - "$MINI" "$TMP/nan.gguf" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
# 1024 halves of the last tensor (blk.1.ffn_down.weight, F16, ends the file) set to 0x7e00 (NaN).
for i in range(len(data) - 4096, len(data) - 2048, 2):
    data[i:i + 2] = b"\x00\x7e"
open(sys.argv[2], "wb").write(bytes(data))
PY
hostile_case "eval: NaN weights" 2 "$EV" "$TMP/nan.gguf" -f "$TXT" -c 64 --chunks 1
expect_err_contains "non-finite logit"; expect_err_one_line

# gguf-plan --calibrate runs the same pass: the same refusals, one line, exit 2, no plan written.
PL="$BIN/gguf-plan"
hostile_case "plan --calibrate: plain run" 0 "$PL" "$MINI" --no-cache --target-bpw 4.5 --calibrate "$TXT" \
  --calibrate-ctx 64 --calibrate-chunks 1 -o "$TMP/ok.plan"
hostile_case "plan --calibrate: text shorter than a chunk" 2 "$PL" "$MINI" --no-cache --target-bpw 4.5 \
  --calibrate "$TMP/short.txt" -o "$TMP/c1.plan"
expect_err_contains "fewer than one chunk of 128"; expect_err_one_line; expect_no_file "$TMP/c1.plan"
hostile_case "plan --calibrate: text is a directory" 2 "$PL" "$MINI" --no-cache --target-bpw 4.5 --calibrate "$TMP" \
  -o "$TMP/c2.plan"
expect_err_one_line; expect_no_file "$TMP/c2.plan"
hostile_case "plan --calibrate: unknown architecture" 2 "$PL" "$TMP/arch.gguf" --no-cache --target-bpw 4.5 \
  --calibrate "$TXT" -o "$TMP/c3.plan"
expect_err_contains "(llama, qwen2, qwen3, qwen3moe)"; expect_err_one_line; expect_no_file "$TMP/c3.plan"
hostile_case "plan --calibrate: a layer missing" 2 "$PL" "$TMP/layers.gguf" --no-cache --target-bpw 4.5 \
  --calibrate "$TXT" -o "$TMP/c4.plan"
expect_err_one_line; expect_no_file "$TMP/c4.plan"
hostile_case "plan --calibrate: --calibrate-chunks 0" 2 "$PL" "$MINI" --no-cache --target-bpw 4.5 --calibrate "$TXT" \
  --calibrate-chunks 0 -o "$TMP/c5.plan"
expect_err_contains "not a positive count"; expect_err_one_line; expect_no_file "$TMP/c5.plan"
hostile_case "plan --calibrate: NaN weights" 2 "$PL" "$TMP/nan.gguf" --no-cache --target-bpw 4.5 --calibrate "$TXT" \
  --calibrate-ctx 64 --calibrate-chunks 1 -o "$TMP/c6.plan"
expect_err_one_line; expect_no_file "$TMP/c6.plan"
