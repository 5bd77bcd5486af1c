# Split models: broken shard sets through every tool that reads a model, and split outputs that
# would overwrite an input shard.
MINI="$DATA/models/mini-llama-f16.gguf"
MOE="$DATA/models/mini-moe-f16.gguf"
S="$TMP/s/m"  # shards: $S-0000K-of-00003.gguf
mkdir -p "$TMP/s" "$TMP/other" "$TMP/o"
hostile_case "split: make a 3-shard set" 0 "$BIN/gguf-edit" -q "$MINI" "$S.gguf" --split-max-tensors 7
hostile_case "split: make another model's set" 0 "$BIN/gguf-edit" -q "$MOE" "$TMP/other/m.gguf" --split-max-size 2M
sum_before=$(cat "$S"-*.gguf | sha256sum)

# Every reader, given shard K, refuses the broken set in one line naming the shard.
readers() {  # $1: case label, $2: shard given, $3: text expected on stderr
    local label=$1 shard=$2 says=$3
    hostile_case "split: $label: gguf-inspect" 2 "$BIN/gguf-inspect" "$shard"
    expect_err_contains "$says"; expect_err_one_line
    hostile_case "split: $label: gguf-inspect diff" 2 "$BIN/gguf-inspect" diff "$shard" "$MINI"
    expect_err_contains "$says"; expect_err_one_line
    hostile_case "split: $label: gguf-requant" 2 "$BIN/gguf-requant" "$shard" "$TMP/o/q.gguf" --preset Q8_0
    expect_err_contains "$says"; expect_err_one_line; expect_no_file "$TMP/o/q.gguf"
    hostile_case "split: $label: gguf-edit" 2 "$BIN/gguf-edit" "$shard" "$TMP/o/e.gguf"
    expect_err_contains "$says"; expect_err_one_line; expect_no_file "$TMP/o/e.gguf"
    hostile_case "split: $label: gguf-plan" 2 "$BIN/gguf-plan" "$shard" --no-cache --target-bpw 5 -o "$TMP/o/p.plan"
    expect_err_contains "$says"; expect_err_one_line; expect_no_file "$TMP/o/p.plan"
    hostile_case "split: $label: gguf-prune-vocab" 2 "$BIN/gguf-prune-vocab" "$shard" "$TMP/o/v.gguf" --keep-range 0-99
    expect_err_contains "$says"; expect_err_one_line; expect_no_file "$TMP/o/v.gguf"
    hostile_case "split: $label: oiw4-convert" 2 "$BIN/oiw4-convert" "$shard" "$TMP/o/x.oiw4"
    expect_err_contains "$says"; expect_err_one_line; expect_no_file "$TMP/o/x.oiw4"
}

mv "$S-00002-of-00003.gguf" "$TMP/keep2.gguf"
readers "missing shard" "$S-00003-of-00003.gguf" "missing: shard 2 of 3"
ln -s "$(basename "$S")-00002-of-00003.gguf" "$S-00002-of-00003.gguf"  # a link to itself: a loop
readers "symlink loop" "$S-00003-of-00003.gguf" "a symlink loop: shard 2 of 3"
rm "$S-00002-of-00003.gguf"; ln -s nowhere.gguf "$S-00002-of-00003.gguf"
readers "dangling symlink" "$S-00003-of-00003.gguf" "a dangling symlink: shard 2 of 3"
rm "$S-00002-of-00003.gguf"
mv "$TMP/keep2.gguf" "$S-00002-of-00003.gguf"

cp "$S-00003-of-00003.gguf" "$TMP/keep3.gguf"
truncate -s -100 "$S-00003-of-00003.gguf"
readers "truncated shard" "$S-00001-of-00003.gguf" "m-00003-of-00003.gguf:"
cp "$TMP/keep3.gguf" "$S-00003-of-00003.gguf"

cp "$S-00002-of-00003.gguf" "$TMP/keep2.gguf"
cp "$TMP/other/m-00002-of-00003.gguf" "$S-00002-of-00003.gguf"
readers "shard of another model" "$S-00001-of-00003.gguf" "a shard of another split model?"
cp "$TMP/keep2.gguf" "$S-00002-of-00003.gguf"

cp "$S-00003-of-00003.gguf" "$TMP/lonely.gguf"
readers "renamed shard" "$TMP/lonely.gguf" "the other shards cannot be found"

# Outputs named like the input shards are refused; the inputs stay intact.
hostile_case "split: split output over the input shards" 2 "$BIN/gguf-edit" "$S-00001-of-00003.gguf" "$S.gguf" --split-max-tensors 7
expect_err_one_line
hostile_case "split: requant shards over the input shards" 2 "$BIN/gguf-requant" "$S-00001-of-00003.gguf" "$S" --preset F16 --split-max-tensors 7
expect_err_one_line
hostile_case "split: merge over an input shard" 2 "$BIN/gguf-edit" "$S-00001-of-00003.gguf" "$S-00002-of-00003.gguf"
expect_err_one_line
expect_true "inputs intact" test "$(cat "$S"-*.gguf | sha256sum)" = "$sum_before"

# Split options out of range.
for bad in 0 -1 1.5G 4GB 99999999999999T ""; do
    hostile_case "split: --split-max-size '$bad'" 2 "$BIN/gguf-edit" "$MINI" "$TMP/o/e.gguf" --split-max-size "$bad"
    expect_err_one_line; expect_no_file "$TMP/o/e-00001-of-00001.gguf"
done
for bad in 0 -3 x 99999999999999999999; do
    hostile_case "split: --split-max-tensors '$bad'" 2 "$BIN/gguf-edit" "$MINI" "$TMP/o/e.gguf" --split-max-tensors "$bad"
    expect_err_one_line
done
for bad in 0/3 4/3 3 1/0 1/70000 a/b; do
    hostile_case "split: --shard '$bad'" 2 "$BIN/gguf-requant" "$MINI" "$TMP/o/q.gguf" --preset Q8_0 --split-max-tensors 7 --shard "$bad"
    expect_err_one_line
done
hostile_case "split: --keep-split with --split-max-size" 2 "$BIN/gguf-requant" "$S-00001-of-00003.gguf" "$TMP/o/q.gguf" --preset Q8_0 --keep-split --split-max-size 1M
expect_err_contains "--keep-split: cannot be used with --split-max-size"; expect_err_one_line
hostile_case "split: --keep-split --shard of another count" 2 "$BIN/gguf-requant" "$S-00001-of-00003.gguf" "$TMP/o/q.gguf" --preset Q8_0 --keep-split --shard 1/4
expect_err_contains "makes 3 shards, not 4"; expect_err_one_line
hostile_case "split: oiw4-convert split option without --to-gguf" 2 "$BIN/oiw4-convert" "$S-00001-of-00003.gguf" "$TMP/o/x.oiw4" --split-max-tensors 3
expect_err_contains "only with --to-gguf"; expect_err_one_line
[ -z "$(ls -A "$TMP/o")" ] && expect_true "no output after refusals" true || expect_true "no output after refusals" false

# A split run is one transaction: failing once shard 1 is complete (a NaN weight in shard 2, a
# rename refused) leaves the existing set as it was: same names, inodes and bytes, no temp file.
MK="python3 $(dirname "${BASH_SOURCE[0]}")/mkgguf.py"
$MK model "$TMP/clean.gguf" f32 none
$MK model "$TMP/nan.gguf" f32 nan
mkdir -p "$TMP/t"
hostile_case "split: a 2-shard set" 0 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/t/q.gguf" --preset F16 --split-max-tensors 1
set_state() { (cd "$TMP/t" && ls -A && stat -c '%n %i' ./* && cat ./* | sha256sum); }
state_before=$(set_state)
hostile_case "split: NaN in shard 2 over a set" 2 "$BIN/gguf-requant" "$TMP/nan.gguf" "$TMP/t/q.gguf" --preset F16 --split-max-tensors 1
expect_err_contains "NaN"; expect_err_one_line
expect_true "old set as it was after a NaN" test "$(set_state)" = "$state_before"
hostile_case "split: first rename fails" 2 env OIW_ATOMIC_FAIL_RENAME=1 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/t/q.gguf" --preset F16 --split-max-tensors 1
expect_err_contains "rename failed: Input/output error"; expect_err_one_line
expect_true "old set as it was after a failed rename" test "$(set_state)" = "$state_before"
hostile_case "split: second rename fails" 2 env OIW_ATOMIC_FAIL_RENAME=2 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/t/q.gguf" --preset F16 --split-max-tensors 1
expect_err_contains "; shard 1 of 2 replaced by this run, shard 2 not: the set is mixed, rerun the conversion"; expect_err_one_line
expect_true "no temp file after a failed rename" test "$(ls -A "$TMP/t" | wc -l)" = 2
