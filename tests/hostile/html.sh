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
