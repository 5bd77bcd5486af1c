# OIW4 files and oiw4-convert under hostile input: damaged headers, directories and planes,
# truncation, wrong file kinds, outputs over inputs, bytes outside the planes. Errors are one
# line, exit 2 (a damaged plane too, on every path that reads it); --verify exits 1.
C="$BIN/oiw4-convert"
ZF="python3 $(dirname "${BASH_SOURCE[0]}")/zframe.py"
flip() { printf '\377' | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }

hostile_case "oiw4: requant source" 0 "$BIN/gguf-requant" "$DATA/models/mini-llama-f16.gguf" "$TMP/q.gguf" --preset Q4_0
hostile_case "oiw4: convert" 0 "$C" "$TMP/q.gguf" "$TMP/q.oiw4"
hostile_case "oiw4: verify clean" 0 "$C" --verify "$TMP/q.oiw4"
size=$(stat -c %s "$TMP/q.oiw4")

for cut in 0 3 63 64 200 4096 $((size - 1)); do
    head -c "$cut" "$TMP/q.oiw4" >"$TMP/cut.oiw4"
    hostile_case "oiw4: truncated to $cut bytes (verify)" 2 "$C" --verify "$TMP/cut.oiw4"
    expect_err_one_line
    hostile_case "oiw4: truncated to $cut bytes (inspect)" 2 "$BIN/gguf-inspect" "$TMP/cut.oiw4"
    expect_err_one_line
done

cp "$TMP/q.oiw4" "$TMP/hdr.oiw4"; flip "$TMP/hdr.oiw4" 150
hostile_case "oiw4: directory byte flipped" 2 "$C" --verify "$TMP/hdr.oiw4"
expect_err_contains "checksum"
expect_err_one_line
hostile_case "oiw4: directory byte flipped (to-gguf)" 2 "$C" --to-gguf "$TMP/hdr.oiw4" "$TMP/hdr.gguf"
expect_no_file "$TMP/hdr.gguf"

cp "$TMP/q.oiw4" "$TMP/plane.oiw4"; flip "$TMP/plane.oiw4" $((size - 100))
hostile_case "oiw4: plane byte flipped" 1 "$C" --verify "$TMP/plane.oiw4"
expect_err_contains "checksum mismatch"
expect_err_contains "plane '"
# Every path that reads plane bytes checks the plane's XXH3 first: exit 2, nothing written.
for mode in --to-gguf --compress --decompress; do
    hostile_case "oiw4: plane byte flipped ($mode)" 2 "$C" $mode "$TMP/plane.oiw4" "$TMP/plane.out"
    expect_err_one_line
    expect_err_contains "plane '"
    expect_err_contains "checksum mismatch"
    expect_no_file "$TMP/plane.out"
done
hostile_case "oiw4: plane byte flipped (inspect --hash)" 2 "$BIN/gguf-inspect" "$TMP/plane.oiw4" --hash
expect_err_one_line
expect_err_contains "checksum mismatch"
hostile_case "oiw4: plane byte flipped (oiw4-check)" 2 "$BIN/oiw4-check" "$TMP/q.gguf" "$TMP/plane.oiw4"
expect_err_one_line
expect_err_contains "checksum mismatch"

# Strict layout: no byte after the directory outside a plane or its zero padding.
cp "$TMP/q.oiw4" "$TMP/tail.oiw4"; printf '\0' >>"$TMP/tail.oiw4"
hostile_case "oiw4: byte appended after the last plane" 2 "$C" --verify "$TMP/tail.oiw4"
expect_err_one_line
data_off=$(od -An -t u8 -j 32 -N 8 "$TMP/q.oiw4" | tr -d ' ')
cp "$TMP/q.oiw4" "$TMP/pad.oiw4"; flip "$TMP/pad.oiw4" $((data_off - 1))
hostile_case "oiw4: non-zero padding before the first plane" 2 "$C" --verify "$TMP/pad.oiw4"
expect_err_contains "non-zero byte at offset $((data_off - 1))"
expect_err_one_line

head -c 8192 /dev/urandom >"$TMP/garbage.oiw4"; printf 'OIW4' | dd of="$TMP/garbage.oiw4" conv=notrunc status=none
hostile_case "oiw4: random bytes with the magic" 2 "$C" --verify "$TMP/garbage.oiw4"
expect_err_one_line
hostile_case "oiw4: a GGUF given to --verify" 2 "$C" --verify "$TMP/q.gguf"
expect_err_contains "not an OIW4 file"
hostile_case "oiw4: an OIW4 given as GGUF source" 2 "$C" "$TMP/q.oiw4" "$TMP/again.oiw4"
expect_err_one_line
: >"$TMP/empty.oiw4"
hostile_case "oiw4: empty file" 2 "$C" --verify "$TMP/empty.oiw4"
expect_err_one_line

cp "$TMP/q.oiw4" "$TMP/keep.oiw4"
hostile_case "oiw4: to-gguf over its input" 2 "$C" --to-gguf "$TMP/q.oiw4" "$TMP/q.oiw4"
expect_true "input unchanged" cmp -s "$TMP/q.oiw4" "$TMP/keep.oiw4"
hostile_case "oiw4: convert over its input" 2 "$C" "$TMP/q.gguf" "$TMP/q.gguf"
mkdir "$TMP/dir.oiw4"
hostile_case "oiw4: output is a directory" 2 "$C" "$TMP/q.gguf" "$TMP/dir.oiw4"
expect_err_one_line
hostile_case "oiw4: impossible encoding" 2 "$C" "$DATA/models/mini-llama-f16.gguf" "$TMP/bad.oiw4" --encode '^output\.weight$=q4kx8'
expect_err_contains "tensor 'output.weight'"
expect_no_file "$TMP/bad.oiw4"
hostile_case "oiw4: bad regex" 2 "$C" "$TMP/q.gguf" "$TMP/bad.oiw4" --encode '(=raw'
expect_err_one_line

hostile_case "oiw4: compress" 0 "$C" --compress=3 "$TMP/q.oiw4" "$TMP/z.oiw4"
zsize=$(stat -c %s "$TMP/z.oiw4")
cp "$TMP/z.oiw4" "$TMP/zbad.oiw4"; flip "$TMP/zbad.oiw4" $((zsize - 3))
hostile_case "oiw4: damaged zstd frame (decompress)" 2 "$C" --decompress "$TMP/zbad.oiw4" "$TMP/zout.oiw4"
expect_err_one_line
expect_err_contains "checksum mismatch"
expect_no_file "$TMP/zout.oiw4"
hostile_case "oiw4: damaged zstd frame (recompress)" 2 "$C" --compress=9 "$TMP/zbad.oiw4" "$TMP/zout.oiw4"
expect_err_contains "checksum mismatch"
expect_no_file "$TMP/zout.oiw4"
hostile_case "oiw4: compressed file to GGUF" 2 "$C" --to-gguf "$TMP/z.oiw4" "$TMP/z.gguf"
expect_err_contains "--decompress"
hostile_case "oiw4: decompress over --max-output-size" 2 "$C" --decompress "$TMP/z.oiw4" "$TMP/zout.oiw4" --max-output-size 1K
expect_err_contains "more than --max-output-size 1K"; expect_err_one_line; expect_no_file "$TMP/zout.oiw4"
hostile_case "oiw4: bad --max-output-size" 2 "$C" --decompress "$TMP/z.oiw4" "$TMP/zout.oiw4" --max-output-size lots
expect_err_one_line; expect_no_file "$TMP/zout.oiw4"
hostile_case "oiw4: decompress within --max-output-size" 0 "$C" --decompress "$TMP/z.oiw4" "$TMP/zout.oiw4" --max-output-size 1G
expect_true "byte-identical to the file compressed" cmp -s "$TMP/zout.oiw4" "$TMP/q.oiw4"
rm -f "$TMP/zout.oiw4"
for mode in size truncate; do
    cp "$TMP/z.oiw4" "$TMP/z-$mode.oiw4"; $ZF "$TMP/z-$mode.oiw4" $mode
    for t in 1 2; do
        hostile_case "oiw4: zstd frame damaged ($mode, $t threads)" 2 "$C" --decompress "$TMP/z-$mode.oiw4" "$TMP/zout.oiw4" --threads $t
        expect_err_one_line
        expect_err_contains "plane '"
        expect_err_contains "$([ $mode = size ] && echo "declares" || echo "truncated")"
        expect_no_file "$TMP/zout.oiw4"
    done
    # zframe.py rewrote the plane's XXH3: the stored bytes match it, only decoding can tell.
    hostile_case "oiw4: zstd frame damaged ($mode, verify: stored bytes match)" 0 "$C" --verify "$TMP/z-$mode.oiw4"
done
