# gguf-inspect --html OUT: special files are never written, an input is never replaced (under any
# name), a failed write leaves no partial page, and "-" goes to stdout.
M="$DATA/models/mini-llama-f16.gguf"
M2="$DATA/models/mini-moe-f16.gguf"

mkfifo "$TMP/fifo.html"
hostile_case "html: fifo as OUT" 2 "$BIN/gguf-inspect" "$M" --html "$TMP/fifo.html"
expect_err_contains "not a regular file"
expect_err_one_line
expect_true "still a fifo" test -p "$TMP/fifo.html"
if [ "$(id -u)" = 0 ]; then mknod "$TMP/null" c 1 3; NULLDEV="$TMP/null"; else NULLDEV=/dev/null; fi
hostile_case "html: character device as OUT" 2 "$BIN/gguf-inspect" "$M" --html "$NULLDEV"
expect_err_contains "not a regular file"
expect_true "still a device" test -c "$NULLDEV"
hostile_case "diff html: directory as OUT" 2 "$BIN/gguf-inspect" diff "$M" "$M2" --html "$TMP"
expect_err_one_line

cp "$M" "$TMP/model.gguf"
hostile_case "html: the model as OUT" 2 "$BIN/gguf-inspect" "$TMP/model.gguf" --html "$TMP/model.gguf"
expect_err_contains "refusing to overwrite the input file"
expect_true "model intact" cmp -s "$M" "$TMP/model.gguf"
ln "$TMP/model.gguf" "$TMP/hard.gguf"; ln -s model.gguf "$TMP/soft.html"
hostile_case "html: hard link of the model as OUT" 2 "$BIN/gguf-inspect" "$TMP/model.gguf" --html "$TMP/hard.gguf"
expect_err_contains "refusing to overwrite the input file"
hostile_case "html: symlink to the model as OUT" 2 "$BIN/gguf-inspect" "$TMP/model.gguf" --html "$TMP/soft.html"
expect_err_contains "refusing to overwrite the input file"
expect_true "model intact" cmp -s "$M" "$TMP/model.gguf"
cp "$M2" "$TMP/b.gguf"
hostile_case "diff html: B as OUT" 2 "$BIN/gguf-inspect" diff "$TMP/model.gguf" "$TMP/b.gguf" --html "$TMP/b.gguf"
expect_err_contains "refusing to overwrite the input file"
expect_true "B intact" cmp -s "$M2" "$TMP/b.gguf"

mkdir "$TMP/out"
hostile_case "html: stdout is /dev/full" 2 sh -c '"$1" "$2" --html - >/dev/full' - "$BIN/gguf-inspect" "$M"
expect_err_one_line
hostile_case "html: report written" 0 "$BIN/gguf-inspect" "$M" --html "$TMP/out/r.html"
expect_true "only the page" test "$(ls -A "$TMP/out")" = r.html
expect_true "complete page" sh -c 'tail -c 8 "$1" | grep -q "</html>"' - "$TMP/out/r.html"
hostile_case "html: OUT in a missing directory" 2 "$BIN/gguf-inspect" "$M" --html "$TMP/missing/r.html"
expect_err_one_line
hostile_case "html: truncated model, no page" 2 sh -c 'head -c 5000 "$1" > "$2/t.gguf"; "$3" "$2/t.gguf" --html "$2/t.html"' - "$M" "$TMP" "$BIN/gguf-inspect"
expect_no_file "$TMP/t.html"

# Reports stay proportional to the model: 3,000 tensors named blk.I.cI.weight (3,000 layers x
# 3,000 columns; 550 MB of HTML before the map folded) and a 64 MiB metadata string (336 MB).
python3 "$(dirname "${BASH_SOURCE[0]}")/mkgguf.py" many "$TMP/diag.gguf" 3000 10 diagonal
hostile_case "html: 3,000 layers x 3,000 columns" 0 "$BIN/gguf-inspect" "$TMP/diag.gguf" --html "$TMP/diag.html"
expect_true "page under 10 MB" [ "$(stat -c %s "$TMP/diag.html")" -lt 10000000 ]
expect_true "fold noted" grep -qF 'columns with the fewest tensors are drawn as one column' "$TMP/diag.html"
python3 - "$TMP/long.gguf" <<'PY'
import struct, sys
def s(b): return struct.pack("<Q", len(b)) + b
v = b"x" * (64 << 20)
kv = s(b"general.architecture") + struct.pack("<I", 8) + s(b"llama") + s(b"evil.long") + struct.pack("<I", 8) + s(v)
h = b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + kv
open(sys.argv[1], "wb").write(h + b"\0" * ((-len(h)) % 32))
PY
hostile_case "html: a 64 MiB metadata string" 0 "$BIN/gguf-inspect" "$TMP/long.gguf" --html "$TMP/long.html"
expect_true "page under 1 MB" [ "$(stat -c %s "$TMP/long.html")" -lt 1000000 ]
expect_true "length shown" grep -qF '... (67108864 bytes)' "$TMP/long.html"
hostile_case "text: a 64 MiB metadata string" 0 "$BIN/gguf-inspect" "$TMP/long.gguf"
expect_true "report under 1 MB" [ "${#OUT}" -lt 1000000 ]
hostile_case "text --full: a 64 MiB metadata string" 0 "$BIN/gguf-inspect" "$TMP/long.gguf" --full
expect_true "report under 1 MB" [ "${#OUT}" -lt 1000000 ]
expect_true "length shown" grep -qF '... (67108864 bytes)' <<<"$OUT"
