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
