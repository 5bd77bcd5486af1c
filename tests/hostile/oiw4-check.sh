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
hostile_case "empty activations" 2 "$BIN/oiw4-check" "$M" "$M" --activations "$TMP/empty.f32"
expect_err_contains "empty: no activation vector"
# A NaN and an Inf among the activations (little-endian f32 0x7fc00000 and 0xff800000): refused,
# not reported as bit-identical outputs.
head -c 1276 /dev/zero > "$TMP/nan.f32"
printf '\x00\x00\xc0\x7f' >> "$TMP/nan.f32"
hostile_case "NaN activations" 2 "$BIN/oiw4-check" "$M" "$M" --activations "$TMP/nan.f32"
expect_err_contains "float 319: is nan (activations must be finite)"
head -c 1276 /dev/zero > "$TMP/inf.f32"
printf '\x00\x00\x80\xff' >> "$TMP/inf.f32"
hostile_case "Inf activations" 2 "$BIN/oiw4-check" "$M" "$M" --activations "$TMP/inf.f32"
expect_err_contains "float 319: is -inf"
head -c 1024 /dev/zero > "$TMP/short.f32"
hostile_case "activations not whole rows of every matrix" 2 "$BIN/oiw4-check" "$M" "$M" --activations "$TMP/short.f32"
expect_err_contains "256 floats are not a multiple of the row length 320"
hostile_case "unknown --max-rel-rms kind" 2 "$BIN/oiw4-check" "$M" "$M" --max-rel-rms Q9_X=0.1
expect_err_contains "unknown kind"
# A split model with a shard gone, on either side.
mkdir -p "$TMP/split"
"$BIN/gguf-edit" -q "$M" "$TMP/split/m.gguf" --split-max-tensors 8 >/dev/null
rm "$TMP/split/m-00002-of-00003.gguf"
hostile_case "split SOURCE missing a shard" 2 "$BIN/oiw4-check" "$TMP/split/m-00001-of-00003.gguf" "$M"
expect_err_one_line
hostile_case "split CONVERTED missing a shard" 2 "$BIN/oiw4-check" "$M" "$TMP/split/m-00003-of-00003.gguf"
expect_err_one_line
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
