# Smoke cases: the battery itself works (a missing input is one clean error line, exit 2).
hostile_case "missing input" 2 "$BIN/gguf-inspect" "$TMP/no-such-file.gguf"
expect_err_one_line
hostile_case "vendored model reads" 0 "$BIN/gguf-inspect" "$DATA/models/mini-llama-f16.gguf"
