# Output hygiene: names with control bytes never reach the terminal raw; errors stay one line;
# --json keeps keys differing only in invalid bytes distinct; KEY=TYPE:VALUE ranges are checked.
MK="python3 $(dirname "${BASH_SOURCE[0]}")/mkgguf.py"
$MK names "$TMP/names.gguf"
$MK dupkey "$TMP/dupkey.gguf"

# True when $1 (text) holds no control byte but line feeds.
no_control_bytes() { ! printf '%s' "$1" | LC_ALL=C grep -q '[[:cntrl:]]' <(printf '%s' "$1" | tr -d '\n'); }
no_control_out() { [ -z "$(printf '%s' "$OUT$ERR" | tr -d '\n' | LC_ALL=C tr -d '[:print:]\200-\377')" ]; }

for mode in "" --markdown --full; do
    hostile_case "control names: inspect $mode" 0 "$BIN/gguf-inspect" "$TMP/names.gguf" $mode
    expect_true "no control bytes" no_control_out
    expect_true "key escaped" grep -qF 'evil.\x1b[2J\x0dkey\n' <<<"$OUT"
    expect_true "tensor escaped" grep -qF 'blk.0.\x1b]0;pwn\x07\x00zz' <<<"$OUT"
done
hostile_case "control names: markdown escapes |" 0 "$BIN/gguf-inspect" "$TMP/names.gguf" --markdown
expect_true "pipe escaped" grep -qF '\x00zz\|.weight' <<<"$OUT"
hostile_case "control names: diff" 1 "$BIN/gguf-inspect" diff "$TMP/names.gguf" "$DATA/models/mini-llama-f16.gguf"
expect_true "no control bytes" no_control_out
hostile_case "control names: requant dry run" 0 "$BIN/gguf-requant" "$TMP/names.gguf" --preset Q8_0 --dry-run
expect_true "no control bytes" no_control_out
expect_true "tensor escaped" grep -qF 'blk.0.\x1b]0;pwn\x07\x00zz|.weight' <<<"$OUT"
hostile_case "control names: duplicate key error" 2 "$BIN/gguf-inspect" "$TMP/dupkey.gguf"
expect_err_one_line
expect_err_contains 'evil.\x1b[2J\x0dkey\n|x'
hostile_case "control names: json keys distinct" 0 "$BIN/gguf-inspect" "$TMP/names.gguf" --json
expect_true "0xff key" grep -qF '"dup.\udbff\udfff"' <<<"$OUT"
expect_true "0xfe key" grep -qF '"dup.\udbff\udffe"' <<<"$OUT"
expect_true "valid JSON, distinct keys" python3 -c '
import json, sys
def hook(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), keys
    return dict(pairs)
json.loads(sys.stdin.read(), object_pairs_hook=hook)' <<<"$OUT"

# KEY=TYPE:VALUE: out of range, overflowing, underflowing, trailing garbage; base 10.
M="$DATA/models/mini-llama-f16.gguf"
for spec in "a.b=u64:-1" "a.b=u64: -1" "a.b=f32:1e39" "a.b=f32:1e-50" "a.b=f64:1e400" "a.b=i8:300" "a.b=u8:256" \
            "a.b=i32:12abc" "a.b=u32:0x10" "a.b=f32:nan" "a.b=f32:inf" "a.b=bool:1" "a.b=u16:"; do
    hostile_case "--set $spec" 2 "$BIN/gguf-edit" "$M" "$TMP/edit.gguf" --set "$spec"
    expect_err_one_line
    expect_err_contains "key 'a.b': "
    expect_no_file "$TMP/edit.gguf"
    hostile_case "--override-kv $spec" 2 "$BIN/gguf-requant" "$M" "$TMP/edit.gguf" --preset Q8_0 --override-kv "$spec"
    expect_err_contains "key 'a.b': "
    expect_no_file "$TMP/edit.gguf"
done
hostile_case "--set int:010 is ten" 0 "$BIN/gguf-edit" "$M" "$TMP/edit.gguf" --set "a.b=int:010" --set "a.c=f32:1e-40"
hostile_case "--set int:010 reads back" 0 "$BIN/gguf-inspect" "$TMP/edit.gguf" --no-audit
expect_true "value 10" grep -qE '^a\.b +i32 +10$' <<<"$OUT"
rm -f "$TMP/edit.gguf"
hostile_case "--set with a control-laden key" 2 "$BIN/gguf-edit" "$M" "$TMP/edit.gguf" --set $'a\nb\e[2J=u8:999'
expect_err_one_line
expect_err_contains 'a\nb\x1b[2J'

# OIW4 files and oiw4-check carry the same names: escaped in every text output.
$MK nlnames "$TMP/nl.gguf"
hostile_case "control names: oiw4-convert" 0 "$BIN/oiw4-convert" "$TMP/nl.gguf" "$TMP/nl.oiw4"
expect_true "no control bytes" no_control_out
hostile_case "control names: inspect OIW4" 0 "$BIN/gguf-inspect" "$TMP/nl.oiw4"
expect_true "no control bytes" no_control_out
expect_true "tensor escaped" grep -qF 'blk.0.ffn_down\x1b[2J.weight' <<<"$OUT"
hostile_case "control names: oiw4-check compare" 0 "$BIN/oiw4-check" "$TMP/nl.gguf" "$TMP/nl.oiw4"
expect_true "no control bytes" no_control_out
expect_true "tensor escaped" grep -qF 'blk.0.ffn_up\n^x$=F32\x0d.weight' <<<"$OUT"
hostile_case "control names: oiw4-check --self" 0 "$BIN/oiw4-check" --self "$TMP/nl.oiw4"
expect_true "no control bytes" no_control_out
