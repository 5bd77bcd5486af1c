# gguf-inspect hash -c MANIFEST: manifests that cannot be read (a directory, an endless device or
# one beyond the 64 MiB text cap; a FIFO is read as a pipe, as cat reads it) are "cannot open" (exit 5,
# llama-gguf-hash's ERROR text on stdout, one reason line on stderr); hostile lines (binary
# bytes, a huge line, fields missing) only fail to match. A broken model is exit 2, one line.
MINI="$DATA/models/mini-llama-f16.gguf"
mkdir -p "$TMP/dir"
mkfifo "$TMP/fifo"
hostile_case "hash: manifest is a directory" 5 "$BIN/gguf-inspect" hash -c "$TMP/dir" "$MINI"
expect_err_one_line
expect_true "stdout is llama-gguf-hash's" test "$OUT" = "ERROR cannot open manifest $TMP/dir"
(printf 'not a manifest line\n' >"$TMP/fifo" &)
hostile_case "hash: manifest is a FIFO with junk" 4 "$BIN/gguf-inspect" hash -c "$TMP/fifo" "$MINI"
hostile_case "hash: manifest is a device" 5 "$BIN/gguf-inspect" hash -c /dev/zero "$MINI"
expect_err_one_line
truncate -s 65M "$TMP/huge.txt"
hostile_case "hash: manifest beyond the text cap" 5 "$BIN/gguf-inspect" hash -c "$TMP/huge.txt" "$MINI"
expect_err_one_line
# One 8 MiB line without a newline, binary bytes, lines of one or two fields: nothing matches.
{ printf 'sha256 '; head -c 8388608 /dev/zero | tr '\0' 'a'; printf ' %s\n' "$MINI"
  printf 'xxh64\0\377\n sha1  \nsha256 onlytwo\n'; } >"$TMP/odd.txt"
hostile_case "hash: huge and binary manifest lines" 1 "$BIN/gguf-inspect" hash -c "$TMP/odd.txt" "$MINI"
expect_true "the huge sha256 entry is a model mismatch" sh -c "printf '%s' \"\$1\" | grep -q '^sha256 .*  $MINI  -  Mismatch\$'" _ "$OUT"
printf 'md5 00 x\n\n' >"$TMP/unknown.txt"
hostile_case "hash: manifest without a known type" 4 "$BIN/gguf-inspect" hash -c "$TMP/unknown.txt" "$MINI"
head -c 1000 "$MINI" >"$TMP/trunc.gguf"
hostile_case "hash: truncated model" 2 "$BIN/gguf-inspect" hash --all "$TMP/trunc.gguf"
expect_err_one_line; expect_err_contains "trunc.gguf"
hostile_case "hash: truncated model in check mode" 2 "$BIN/gguf-inspect" hash -c "$DATA/hash/llama-all.out" "$TMP/trunc.gguf"
expect_err_one_line
expect_true "nothing on stdout" test -z "$OUT"
hostile_case "hash: --threads 10000" 0 "$BIN/gguf-inspect" hash --threads 10000 --no-layer "$MINI"
"$BIN/oiw4-convert" "$MINI" "$TMP/m.oiw4" >/dev/null 2>&1 && "$BIN/oiw4-convert" --compress "$TMP/m.oiw4" "$TMP/z.oiw4" >/dev/null 2>&1
hostile_case "hash: zstd-compressed OIW4" 2 "$BIN/gguf-inspect" hash "$TMP/z.oiw4"
expect_err_one_line; expect_err_contains "decompress first"
