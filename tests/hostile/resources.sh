# Resources: models and imatrices must be regular files (a FIFO or device never blocks nor reads
# without bound); text inputs may be pipes and FIFOs (read to their end, as cat reads them) but are
# capped, --threads is bounded and thread-creation failure is clean.
M="$DATA/models/mini-llama-f16.gguf"
mkfifo "$TMP/fifo"
mkdir "$TMP/dir"
for src in "$TMP/fifo" /dev/zero /dev/stdin; do
    hostile_case "model $src" 2 "$BIN/gguf-inspect" "$src"
    expect_err_contains "not a regular file"
    expect_err_one_line
    hostile_case "imatrix $src" 2 "$BIN/gguf-requant" "$M" "$TMP/o.gguf" --preset Q4_K_M --imatrix "$src"
    expect_err_contains "not a regular file"
done
hostile_case "--set-array @/dev/zero" 2 "$BIN/gguf-edit" "$M" "$TMP/o.gguf" --set-array "k=str:@/dev/zero"
expect_err_contains "/dev/zero: text file is larger than 67108864 bytes"; expect_err_one_line
hostile_case "--profile /dev/zero" 2 "$BIN/gguf-inspect" "$M" --profile /dev/zero
expect_err_contains "text file is larger than"
hostile_case "--tensor-type-file /dev/zero" 2 "$BIN/gguf-requant" "$M" "$TMP/o.gguf" --preset Q8_0 --tensor-type-file /dev/zero
expect_err_contains "text file is larger than"; expect_no_file "$TMP/o.gguf"
(printf 'attn_v=q8_0\n' >"$TMP/fifo" &)
hostile_case "--tensor-type-file FIFO with a writer" 0 "$BIN/gguf-requant" "$M" "$TMP/o.gguf" --preset Q8_0 --tensor-type-file "$TMP/fifo"
rm -f "$TMP/o.gguf"
hostile_case "--set-array @directory" 2 "$BIN/gguf-edit" "$M" "$TMP/o.gguf" --set-array "k=str:@$TMP/dir"
expect_err_contains "is a directory"
hostile_case "--tensor-type-file directory" 2 "$BIN/gguf-requant" "$M" "$TMP/o.gguf" --preset Q8_0 --tensor-type-file "$TMP/dir"
expect_err_contains "is a directory"
truncate -s 65M "$TMP/huge.txt"
hostile_case "--set-array of 65 MiB" 2 "$BIN/gguf-edit" "$M" "$TMP/o.gguf" --set-array "k=str:@$TMP/huge.txt"
expect_err_contains "text file is larger than 67108864 bytes"
expect_no_file "$TMP/o.gguf"

hostile_case "--threads -1" 2 "$BIN/gguf-requant" "$M" "$TMP/o.gguf" --preset Q8_0 --threads -1
expect_err_contains "--threads: must be 0 (all cores) or more"
expect_err_one_line
# An address-space limit proves no thread stack is mapped per requested thread (ASan cannot run under one).
case "$(ldd "$BIN/gguf-requant")" in *libasan*) LIMIT=() ;; *) LIMIT=(prlimit --as=4000000000) ;; esac
hostile_case "--threads 10000" 0 "${LIMIT[@]}" "$BIN/gguf-requant" "$M" "$TMP/t.gguf" --preset Q8_0 --threads 10000
chmod 777 "$TMP"
# As root the tool runs as nobody, who may not reach the build tree (a clone in a 0700 directory):
# the tool and the model are copied into $TMP first.
if [ "$(id -u)" = 0 ]; then DROP=(setpriv --reuid=65534 --regid=65534 --clear-groups); else DROP=(); fi
cp "$BIN/gguf-requant" "$M" "$TMP/" && chmod a+r "$TMP/$(basename "$M")"
hostile_case "no thread can be created" 2 env ASAN_OPTIONS=detect_leaks=0 prlimit --nproc=1 "${DROP[@]}" \
    "$TMP/gguf-requant" "$TMP/$(basename "$M")" "$TMP/n.gguf" --preset Q8_0 --threads 4
expect_err_contains "cannot create worker thread 1 of"
expect_err_one_line
expect_no_file "$TMP/n.gguf"
