# gguf-prune-vocab on hostile inputs: bad id lists, odd text, broken vocabularies, FIFOs.
PV="$BIN/gguf-prune-vocab"
MINI="$DATA/models/mini-llama-f16.gguf"
GPT2="$DATA/vocab/ggml-vocab-gpt-2.gguf"
EDIT="$BIN/gguf-edit"

printf '99999999999999999999999\n' >"$TMP/huge.txt"
hostile_case "vocab: id overflowing int64" 2 "$PV" "$MINI" "$TMP/o.gguf" --keep-ids "$TMP/huge.txt"
expect_err_contains "not an integer"; expect_err_one_line; expect_no_file "$TMP/o.gguf"

printf -- '-1\n' >"$TMP/neg.txt"
hostile_case "vocab: negative id" 2 "$PV" "$MINI" "$TMP/o.gguf" --keep-ids "$TMP/neg.txt"
expect_err_contains "id -1: out of range"; expect_no_file "$TMP/o.gguf"

hostile_case "vocab: reversed range" 2 "$PV" "$MINI" "$TMP/o.gguf" --keep-range 9-3
expect_err_one_line
hostile_case "vocab: enormous range" 2 "$PV" "$MINI" "$TMP/o.gguf" --keep-range 0-9000000000000
expect_err_contains "out of range"; expect_no_file "$TMP/o.gguf"
hostile_case "vocab: --top 0" 2 "$PV" "$MINI" "$TMP/o.gguf" --counts "$TMP/neg.txt" --top 0
expect_err_one_line

mkfifo "$TMP/fifo"
(printf '1 2 3\n' >"$TMP/fifo" &)
hostile_case "vocab: FIFO as id list (read as a pipe)" 0 "$PV" "$MINI" "$TMP/o.gguf" -q --keep-ids "$TMP/fifo"
rm -f "$TMP/o.gguf"
hostile_case "vocab: no keep set" 2 "$PV" "$MINI" "$TMP/o.gguf"
expect_err_contains "keep set: none given"; expect_no_file "$TMP/o.gguf"

head -c 8192 "$MINI" | tail -c 4096 >"$TMP/noise.bin"  # binary bytes, deterministic
printf '\xff\xfe\xc3\x28 \xf0\x28\x8c\xbc \xe2\x82 \xf8\x88\x80\x80\x80 \xf7\xbf\xbf\xbf ok\n' >>"$TMP/noise.bin"
hostile_case "vocab: invalid UTF-8 through BPE" 0 "$PV" tokenize "$GPT2" "$TMP/noise.bin"
hostile_case "vocab: invalid UTF-8 through SPM" 0 "$PV" tokenize "$MINI" "$TMP/noise.bin"
hostile_case "vocab: invalid UTF-8 as corpus" 0 "$PV" "$MINI" "$TMP/o.gguf" -q --keep-text "$TMP/noise.bin"
expect_true "output reads" "$BIN/gguf-inspect" "$TMP/o.gguf"
rm -f "$TMP/o.gguf"

head -c 100000 "$MINI" >"$TMP/trunc.gguf"
hostile_case "vocab: truncated model" 2 "$PV" "$TMP/trunc.gguf" "$TMP/o.gguf" --keep-range 0-3
expect_err_one_line; expect_no_file "$TMP/o.gguf"

"$EDIT" -q "$MINI" "$TMP/strtok.gguf" --set tokenizer.ggml.tokens=str:oops
hostile_case "vocab: token list not an array" 2 "$PV" "$TMP/strtok.gguf" "$TMP/o.gguf" --keep-range 0-3
expect_err_contains "tokenizer.ggml.tokens"; expect_no_file "$TMP/o.gguf"

"$EDIT" -q "$MINI" "$TMP/bos.gguf" --set tokenizer.ggml.bos_token_id=u32:4000000000
hostile_case "vocab: special id out of range" 2 "$PV" "$TMP/bos.gguf" "$TMP/o.gguf" --keep-range 0-3
expect_err_contains "tokenizer.ggml.bos_token_id"; expect_no_file "$TMP/o.gguf"

"$EDIT" -q "$MINI" "$TMP/bert.gguf" --set tokenizer.ggml.model=str:bert
printf 'hello\n' >"$TMP/hello.txt"
hostile_case "vocab: unsupported model cannot tokenize" 2 "$PV" tokenize "$TMP/bert.gguf" "$TMP/hello.txt"
expect_err_contains "unsupported tokenizer model bert"
hostile_case "vocab: unsupported model still prunes by id" 0 "$PV" "$TMP/bert.gguf" "$TMP/o.gguf" --keep-range 0-3
expect_true "closure reported as skipped" grep -q "closure skipped" <<<"$OUT"

hostile_case "vocab: output directory missing" 2 "$PV" "$MINI" "$TMP/no/such/dir/o.gguf" --keep-range 0-3
expect_err_one_line

# --map-out must never replace an input, the output model, or a special file.
cp "$MINI" "$TMP/model-copy.gguf"
model_sha=$(sha256sum "$TMP/model-copy.gguf" | cut -c1-64)
rm -f "$TMP/o.gguf"
hostile_case "vocab: --map-out onto the input model" 2 "$PV" "$TMP/model-copy.gguf" "$TMP/o.gguf" --keep-range 0-300 --map-out "$TMP/model-copy.gguf"
expect_err_one_line; expect_no_file "$TMP/o.gguf"
expect_true "input model unchanged" test "$(sha256sum "$TMP/model-copy.gguf" | cut -c1-64)" = "$model_sha"
rm -f "$TMP/o.gguf"
hostile_case "vocab: --map-out onto the output" 2 "$PV" "$MINI" "$TMP/o.gguf" --keep-range 0-300 --map-out "$TMP/o.gguf"
expect_err_contains "is the output model"; expect_no_file "$TMP/o.gguf"
rm -f "$TMP/o.gguf"
hostile_case "vocab: --map-out to /dev/null" 2 "$PV" "$MINI" "$TMP/o.gguf" --keep-range 0-300 --map-out /dev/null
expect_err_one_line; expect_no_file "$TMP/o.gguf"

# --keep-text is tokenized in pieces: a stretch with no place to cut it longer than 1 MiB is one
# error line (not memory growing with it), for both tokenizer kinds; ordinary long text passes.
{ printf 'a '; head -c 2200000 /dev/zero | tr '\0' 'x'; printf ' b\n'; } >"$TMP/longword.txt"
hostile_case "vocab: 2 MiB word, BPE" 2 "$PV" "$GPT2" "$TMP/o.gguf" --keep-text "$TMP/longword.txt"
expect_err_contains "longword.txt: more than 1048576 bytes without a place the tokenizer can be cut"
expect_err_one_line; expect_no_file "$TMP/o.gguf"
{ head -c 2200000 /dev/zero | tr '\0' '\n'; } >"$TMP/newlines.txt"
hostile_case "vocab: 2 MiB of newlines, BPE" 2 "$PV" "$GPT2" "$TMP/o.gguf" --keep-text "$TMP/newlines.txt"
expect_err_contains "one pre-tokenizer word"; expect_no_file "$TMP/o.gguf"
head -c 2200000 /dev/zero | tr '\0' ' ' >"$TMP/spaces.txt"
hostile_case "vocab: 2 MiB of spaces, SPM (tokens of spaces span every cut)" 2 "$PV" "$DATA/vocab/ggml-vocab-llama-spm.gguf" "$TMP/o.gguf" --keep-text "$TMP/spaces.txt"
expect_err_contains "no symbol boundary that no token spans"; expect_no_file "$TMP/o.gguf"
for i in $(seq 1 40000); do printf 'line %d of a long corpus, with words and 12.5 numbers.\n' "$i"; done >"$TMP/corpus.txt"
hostile_case "vocab: 2 MB corpus, SPM" 0 "$PV" "$MINI" "$TMP/o.gguf" -q --keep-text "$TMP/corpus.txt"
expect_true "output reads" "$BIN/gguf-inspect" "$TMP/o.gguf"
rm -f "$TMP/o.gguf"
