# Outputs: special files are never replaced, symlinks are written through, modes are kept, every
# input of the run is protected, long names work, stdout errors count, signals leave no temp file.
M="$DATA/models/mini-llama-f16.gguf"
IM="$DATA/models/mini-llama.imatrix.gguf"
only_entries() {  # the directory $1 holds exactly the names $2.. (hidden files included)
    local d=$1; shift
    [ "$(ls -A "$d" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$@" | sort | tr '\n' ' ')" ]
}

mkfifo "$TMP/fifo"
hostile_case "fifo as OUT" 2 "$BIN/gguf-edit" "$M" "$TMP/fifo"
expect_err_contains "not a regular file"
expect_true "still a fifo" test -p "$TMP/fifo"
if [ "$(id -u)" = 0 ]; then mknod "$TMP/null" c 1 3; NULLDEV="$TMP/null"; else NULLDEV=/dev/null; fi
hostile_case "character device as OUT" 2 "$BIN/gguf-edit" "$M" "$NULLDEV"
expect_err_contains "not a regular file"
expect_true "still a device" test -c "$NULLDEV"
if python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$TMP/sock" 2>/dev/null; then
    hostile_case "socket as OUT" 2 "$BIN/gguf-requant" "$M" "$TMP/sock" --preset Q8_0
    expect_err_contains "not a regular file"
    expect_true "still a socket" test -S "$TMP/sock"
fi
hostile_case "directory as OUT" 2 "$BIN/gguf-edit" "$M" "$TMP"
expect_err_one_line

mkdir "$TMP/real"
cp "$IM" "$TMP/real/target.gguf"
ln -s real/target.gguf "$TMP/link.gguf"
hostile_case "symlink OUT is written through" 0 "$BIN/gguf-edit" -q "$M" "$TMP/link.gguf"
expect_true "link kept" test -L "$TMP/link.gguf"
expect_true "target written" cmp -s "$M" "$TMP/real/target.gguf"

cp "$IM" "$TMP/mode.gguf"; chmod 640 "$TMP/mode.gguf"
hostile_case "mode of a replaced OUT kept" 0 "$BIN/gguf-edit" -q "$M" "$TMP/mode.gguf"
expect_true "mode 640" test "$(stat -c %a "$TMP/mode.gguf")" = 640

cp "$M" "$TMP/model.gguf"; ln "$TMP/model.gguf" "$TMP/hard.gguf"
hostile_case "hard link of the model as OUT" 2 "$BIN/gguf-edit" "$TMP/model.gguf" "$TMP/hard.gguf"
expect_err_contains "refusing to overwrite the input file"
printf 'a\nb\n' > "$TMP/arr.txt"
hostile_case "@FILE as OUT" 2 "$BIN/gguf-edit" "$M" "$TMP/arr.txt" --set-array "k=str:@$TMP/arr.txt"
expect_err_contains "refusing to overwrite the input file"
expect_true "@FILE intact" test "$(cat "$TMP/arr.txt")" = "$(printf 'a\nb')"
echo 'output=q8_0' > "$TMP/rules.txt"; ln -s rules.txt "$TMP/rules-link"
hostile_case "tensor-type file as OUT (via a symlink)" 2 "$BIN/gguf-requant" "$M" "$TMP/rules-link" --preset Q8_0 --tensor-type-file "$TMP/rules.txt"
expect_err_contains "refusing to overwrite the input file"
cp "$IM" "$TMP/im.gguf"
hostile_case "imatrix as OUT" 2 "$BIN/gguf-requant" "$M" "$TMP/im.gguf" --preset Q4_K_M --imatrix "$TMP/im.gguf"
expect_err_contains "refusing to overwrite the input file"
expect_true "imatrix intact" cmp -s "$IM" "$TMP/im.gguf"

mkdir "$TMP/long"
LONG=$(printf 'n%.0s' $(seq 255))
hostile_case "255-byte OUT name" 0 "$BIN/gguf-edit" -q "$M" "$TMP/long/$LONG"
expect_true "only OUT" only_entries "$TMP/long" "$LONG"
hostile_case "255-byte OUT name, named temp" 0 env OIW_ATOMIC_NO_TMPFILE=1 "$BIN/gguf-edit" -q "$M" "$TMP/long/$LONG"
expect_true "only OUT" only_entries "$TMP/long" "$LONG"

hostile_case "stdout is /dev/full" 2 sh -c '"$1" "$2" "$3" >/dev/full' - "$BIN/gguf-edit" "$M" "$TMP/full.gguf"
expect_err_contains "cannot write to standard output: No space left on device"
expect_err_one_line
hostile_case "inspect stdout is /dev/full" 2 sh -c '"$1" "$2" >/dev/full' - "$BIN/gguf-inspect" "$M"
expect_err_one_line

# Signals in the middle of a write: the process dies of the signal and no temp file is left,
# with O_TMPFILE and with the named temp file (then the kill waits until the temp file exists).
mkdir "$TMP/sig"
"$BIN/gguf-synth" "$TMP/sig/big.gguf" --n-embd 512 --n-layer 2 --n-ff 1408 --n-vocab 4096 --type F32 >/dev/null 2>&1
for named in 0 1; do
    for sig in INT TERM HUP; do
        HOSTILE_LAST="SIG$sig during a write (named temp: $named)"
        rm -f "$TMP/sig/out.gguf"
        # env: a background job of a script starts with SIGINT ignored, and a run under nohup
        # inherits SIGHUP ignored; give the three signals their default back.
        OIW_ATOMIC_NO_TMPFILE=$named env --default-signal=INT,TERM,HUP "$BIN/gguf-requant" "$TMP/sig/big.gguf" "$TMP/sig/out.gguf" --preset Q4_K_M \
            --reference-kernels --threads 1 >/dev/null 2>&1 &
        pid=$!
        for _ in $(seq 100); do
            if [ "$named" = 0 ] || ls -A "$TMP/sig" | grep -q '^\.out\.gguf\.tmp\.'; then break; fi
            sleep 0.02
        done
        sleep 0.1
        kill -s "$sig" "$pid"
        wait "$pid" 2>/dev/null
        rc=$?
        expect_true "killed by the signal" test "$rc" = $((128 + $(kill -l "$sig")))
        expect_true "no temp file" only_entries "$TMP/sig" big.gguf
    done
done
