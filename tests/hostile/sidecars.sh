# gguf-plan's error-table sidecar and plan files against hostile names and planted files: names with
# LF, CR and ESC stay one escaped line in both formats (and the plan still runs in gguf-requant);
# a symlink, FIFO or foreign file at the sidecar path is refused, never followed or replaced.
MK="python3 $(dirname "${BASH_SOURCE[0]}")/mkgguf.py"
PLAN="$BIN/gguf-plan"; RQ="$BIN/gguf-requant"
M="$TMP/nl.gguf"
$MK nlnames "$M"
no_control() { [ -z "$(tr -d '\n' <"$1" | LC_ALL=C tr -d '[:print:]\200-\377')" ]; }
no_control_out() { [ -z "$(printf '%s' "$OUT$ERR" | tr -d '\n' | LC_ALL=C tr -d '[:print:]\200-\377')" ]; }

hostile_case "plan: names with LF, CR, ESC" 0 "$PLAN" "$M" --target-bpw 6 --types Q4_K,Q8_0 -o "$TMP/nl.plan"
expect_true "two tensor lines" [ "$(grep -c '^\^' "$TMP/nl.plan")" = 2 ]
expect_true "plan has no control bytes" no_control "$TMP/nl.plan"
expect_true "LF, CR and upper case as \\xNN" grep -qF '^blk\.0\.ffn_up\x0a\^x\$=\x4632\x0d\.weight$=' "$TMP/nl.plan"
expect_true "sidecar written" [ -f "$M.errtable" ]
expect_true "sidecar has no control bytes" no_control "$M.errtable"
expect_true "sidecar: one line per name" grep -qF 'blk.0.ffn_down\x1b[2J.weight' "$M.errtable"
hostile_case "plan: printed plan escaped" 0 "$PLAN" "$M" --target-bpw 6 --types Q4_K,Q8_0
expect_err_contains "error table from"; expect_true "no control bytes" no_control_out
hostile_case "requant --plan: the escaped plan runs" 0 "$RQ" "$M" "$TMP/nl.q.gguf" --plan "$TMP/nl.plan"
expect_true "no control bytes" no_control_out
hostile_case "inspect diff --plan: the escaped plan" 1 "$BIN/gguf-inspect" diff "$M" --plan "$TMP/nl.plan"
expect_true "no control bytes" no_control_out

# Planted things at the default sidecar path.
cp "$DATA/models/mini-llama-f16.gguf" "$TMP/m.gguf"
ln -s ../../planted-by-sidecar "$TMP/m.gguf.errtable"
hostile_case "plan: dangling symlink sidecar" 2 "$PLAN" "$TMP/m.gguf" --target-bpw 6 -o "$TMP/sc.plan"
expect_err_contains "m.gguf.errtable: is a symbolic link, not followed"; expect_err_one_line
expect_no_file "$TMP/../../planted-by-sidecar"; expect_no_file "$TMP/sc.plan"
rm "$TMP/m.gguf.errtable"; printf 'x\n' >"$TMP/elsewhere"; ln -s "$TMP/elsewhere" "$TMP/m.gguf.errtable"
hostile_case "plan: symlink sidecar to a file" 2 "$PLAN" "$TMP/m.gguf" --target-bpw 6
expect_err_contains "is a symbolic link"; expect_true "target unchanged" [ "$(cat "$TMP/elsewhere")" = x ]
rm "$TMP/m.gguf.errtable"; mkfifo "$TMP/m.gguf.errtable"
hostile_case "plan: FIFO sidecar" 2 "$PLAN" "$TMP/m.gguf" --target-bpw 6
expect_err_contains "is not a regular file"; expect_err_one_line
rm "$TMP/m.gguf.errtable"; printf 'my notes\n' >"$TMP/m.gguf.errtable"
hostile_case "plan: a user's own file at the sidecar path" 2 "$PLAN" "$TMP/m.gguf" --target-bpw 6
expect_err_contains "is not an error table gguf-plan wrote, not replaced"; expect_err_one_line
expect_true "file unchanged" [ "$(cat "$TMP/m.gguf.errtable")" = "my notes" ]
hostile_case "plan: --no-cache goes around it" 0 "$PLAN" "$TMP/m.gguf" --target-bpw 6 --no-cache
