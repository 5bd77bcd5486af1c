# oiw4-check on hostile inputs: one clean error line and exit 2, never a crash.
M="$DATA/models/mini-llama-f16.gguf"
head -c 100000 "$M" > "$TMP/truncated.gguf"
hostile_case "truncated converted file" 2 "$BIN/oiw4-check" "$M" "$TMP/truncated.gguf"
expect_err_one_line
hostile_case "truncated --self file" 2 "$BIN/oiw4-check" --self "$TMP/truncated.gguf"
expect_err_one_line
printf 'abc' > "$TMP/odd.f32"
hostile_case "activations not a multiple of 4 bytes" 2 "$BIN/oiw4-check" "$M" "$M" --activations "$TMP/odd.f32"
expect_err_contains "multiple of 4"
hostile_case "bad --max-rel-rms" 2 "$BIN/oiw4-check" "$M" "$M" --max-rel-rms Q4_K=abc
expect_err_one_line
hostile_case "bad regex" 2 "$BIN/oiw4-check" "$M" "$M" --tensor '('
expect_err_one_line
hostile_case "bench cols not a multiple of 256" 2 "$BIN/oiw4-check" bench --rows 64 --cols 288 --bandwidth-mib 1 --min-time 0
expect_err_one_line
: > "$TMP/empty.f32"
hostile_case "empty activations: nothing to compare" 0 "$BIN/oiw4-check" "$M" "$M" --activations "$TMP/empty.f32"
# OIW4 on either side: a damaged header, a truncated file, a compressed file.
"$BIN/gguf-requant" "$M" "$TMP/q40.gguf" --preset Q4_0 >/dev/null 2>&1
"$BIN/oiw4-convert" "$TMP/q40.gguf" "$TMP/q40.oiw4" >/dev/null
cp "$TMP/q40.oiw4" "$TMP/badhdr.oiw4"
printf '\x07' | dd of="$TMP/badhdr.oiw4" bs=1 seek=20 conv=notrunc 2>/dev/null
hostile_case "OIW4 with a damaged header" 2 "$BIN/oiw4-check" "$TMP/q40.gguf" "$TMP/badhdr.oiw4"
expect_err_one_line
head -c 9000 "$TMP/q40.oiw4" > "$TMP/short.oiw4"
hostile_case "truncated OIW4" 2 "$BIN/oiw4-check" "$TMP/short.oiw4" "$TMP/q40.gguf"
expect_err_one_line
hostile_case "truncated OIW4 --self" 2 "$BIN/oiw4-check" --self "$TMP/short.oiw4"
expect_err_one_line
"$BIN/oiw4-convert" --compress "$TMP/q40.oiw4" "$TMP/q40z.oiw4" >/dev/null
hostile_case "compressed OIW4" 2 "$BIN/oiw4-check" "$TMP/q40.gguf" "$TMP/q40z.oiw4"
expect_err_contains "--decompress first"
hostile_case "compressed OIW4 --self" 2 "$BIN/oiw4-check" --self "$TMP/q40z.oiw4"
expect_err_contains "--decompress first"
