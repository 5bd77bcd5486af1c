#!/usr/bin/env bash
# ctest ShardJobCli: scripts/shard-job under both schedulers, simulated on one machine. N
# processes of deploy/slurm/requant-array.sbatch with SLURM_ARRAY_TASK_ID=1..N, N of shard-job
# with SLURM_ARRAY_TASK_ID=0..N-1 and SHARD_INDEX_BASE=0, and N of shard-job
# with JOB_COMPLETION_INDEX=0..N-1 (each set in parallel)
# must write exactly the shards of one gguf-requant --split-max-size run, each with a sidecar
# sha256sum -c accepts; wrong indices fail with status 2 and one line; a rerun re-verifies, a
# damaged shard or a lost sidecar is recomputed, a shard written wrong is refused, and SIGTERM
# reaches the running tool.
#   shard-job.sh BIN_DIR
set -euo pipefail
bin=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
job=$src/scripts/shard-job
tmp=$(mktemp -d /tmp/oiw-shard-job-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset SHARD SHARDS SLURM_ARRAY_TASK_ID SHARD_INDEX_BASE JOB_COMPLETION_INDEX SHARD_JOB_FORCE  # e.g. ctest inside a Slurm job
export OIW_BIN=$bin IN=$src/tests/data/models/mini-llama-f16.gguf SPLIT_MAX_SIZE=150K
args=(--preset Q4_K_M --threads 1)
fail() {
    echo "ShardJobCli: $*" >&2
    exit 1
}

# The reference: one run writing every shard (mini-llama Q4_K_M, 150 KB: 7 shards).
mkdir "$tmp/ref"
"$bin/gguf-requant" "$IN" "$tmp/ref/m.gguf" "${args[@]}" --split-max-size "$SPLIT_MAX_SIZE" 2>/dev/null
n=$(OUT=$tmp/x.gguf "$job" --count "${args[@]}")
[ "$n" = 7 ] || fail "--count printed '$n', expected 7"
mapfile -t shards < <(cd "$tmp/ref" && ls)
[ "${#shards[@]}" = "$n" ] || fail "the reference run wrote ${#shards[@]} files, --count says $n"

# Runs one process per index in parallel: run_all DIR VAR FIRST COMMAND... (indices FIRST..FIRST+N-1).
run_all() {
    local dir=$1 var=$2 first=$3 pids=() i failed=""
    shift 3
    for ((i = first; i < first + n; i++)); do
        env "$var=$i" OUT="$tmp/$dir/m.gguf" "$@" >"$tmp/$dir-$i.log" 2>&1 &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || failed+=" $var=$((first + i)): $(tail -n 1 "$tmp/$dir-$((first + i)).log")"
    done
    [ -z "$failed" ] || fail "failed:$failed"
}
# The shards in DIR are the reference's, byte for byte, and every sidecar verifies.
same_as_ref() {
    local dir=$tmp/$1 s all=("$tmp/$1"/*) gguf=("$tmp/$1"/*.gguf)
    [ "${#gguf[@]}" = "$n" ] && [ "${#all[@]}" = $((2 * n)) ] || fail "$1: expected $n shards and $n sidecars: $(ls "$dir")"
    for s in "${shards[@]}"; do
        cmp "$tmp/ref/$s" "$dir/$s" || fail "$1/$s differs from the single run's shard"
        [ -f "$dir/$s.sha256" ] || fail "$1/$s has no sidecar"
    done
    (cd "$dir" && sha256sum --quiet --strict -c ./*.sha256) || fail "$1: a sidecar does not verify"
    if compgen -G "$dir/.[!.]*" >/dev/null; then fail "$1: temp files left: $(ls -A "$dir")"; fi
}

# Slurm: the batch script itself, run as Slurm runs it (from elsewhere, with Slurm's variables; it
# adds --threads from SLURM_CPUS_PER_TASK).
(cd "$tmp" && SLURM_SUBMIT_DIR=$src SLURM_ARRAY_JOB_ID=1 SLURM_CPUS_PER_TASK=1 \
    run_all slurm SLURM_ARRAY_TASK_ID 1 bash "$src/deploy/slurm/requant-array.sbatch" --preset Q4_K_M)
grep -q "task 3 of array 1" "$tmp/slurm-3.log" || fail "the batch script's log line is missing"
same_as_ref slurm
# An array numbered from 0 (--array=0-(N-1)) with SHARD_INDEX_BASE=0: task K writes shard K+1.
SHARD_INDEX_BASE=0 run_all slurm0 SLURM_ARRAY_TASK_ID 0 "$job" "${args[@]}"
same_as_ref slurm0
# Indexed Job, writing as on NFS (no O_TMPFILE: named temp files beside the shards).
SHARDS=$n OIW_ATOMIC_NO_TMPFILE=1 run_all k8s JOB_COMPLETION_INDEX 0 "$job" "${args[@]}"
same_as_ref k8s
OUT=$tmp/slurm/m.gguf "$job" --check "${args[@]}" | grep -q "all $n shards verified" || fail "--check did not pass"

# Wrong indices and counts: status 2, one line on stderr, nothing written.
expect_config_error() {  # expect_config_error VAR=VALUE...
    local rc=0
    env "$@" OUT="$tmp/bad/m.gguf" "$job" "${args[@]}" >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" = 2 ] || fail "$* exited with $rc, expected 2"
    [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$*: expected one line on stderr, got: $(cat "$tmp/err")"
    [ ! -e "$tmp/bad" ] || fail "$*: wrote $(ls "$tmp/bad")"
}
expect_config_error SLURM_ARRAY_TASK_ID=0
expect_config_error SLURM_ARRAY_TASK_ID=$((n + 1))
expect_config_error SLURM_ARRAY_TASK_ID="$n" SHARD_INDEX_BASE=0
expect_config_error SLURM_ARRAY_TASK_ID=1 SHARD_INDEX_BASE=2
expect_config_error JOB_COMPLETION_INDEX="$n"
expect_config_error JOB_COMPLETION_INDEX=-1
expect_config_error SHARD=1 SHARDS=$((n + 1))
expect_config_error SHARD=
grep -q 'SLURM_ARRAY_TASK_ID\|JOB_COMPLETION_INDEX' "$tmp/err" || fail "no index: the message does not name the variables"
# A conversion the dry run refuses (IQ2_XXS needs an imatrix) is a configuration error too; a
# tool error is status 1.
for want in 2:IQ2_XXS 1:NOPE; do
    rc=0
    SHARD=1 OUT=$tmp/bad/m.gguf "$job" --preset "${want#*:}" 2>"$tmp/err" || rc=$?
    [ "$rc" = "${want%%:*}" ] && [ "$(wc -l <"$tmp/err")" = 1 ] && [ ! -e "$tmp/bad" ] ||
        fail "--preset ${want#*:}: exit $rc, stderr: $(cat "$tmp/err")"
done

# Idempotence: a rerun of a complete index only verifies (the shard keeps its inode); a damaged
# shard, a truncated one and a lost sidecar are recomputed.
s2=$tmp/slurm/${shards[1]}
ino=$(stat -c %i "$s2")
SLURM_ARRAY_TASK_ID=2 OUT=$tmp/slurm/m.gguf "$job" "${args[@]}" | grep -q 'already complete' || fail "rerun did not verify"
[ "$(stat -c %i "$s2")" = "$ino" ] || fail "a verified shard was rewritten"
SHARD_JOB_FORCE=1 SHARD=2 OUT=$tmp/slurm/m.gguf "$job" "${args[@]}" >/dev/null 2>&1 || fail "SHARD_JOB_FORCE=1 failed"
[ "$(stat -c %i "$s2")" != "$ino" ] || fail "SHARD_JOB_FORCE=1 did not rewrite the shard"
printf 'XXXX' | dd of="$s2" bs=1 seek=1000 conv=notrunc status=none
SLURM_ARRAY_TASK_ID=2 OUT=$tmp/slurm/m.gguf "$job" "${args[@]}" 2>/dev/null | grep -q 'sha256' || fail "damaged shard not recomputed"
truncate -s 100 "$tmp/slurm/${shards[4]}"
rm "$tmp/slurm/${shards[6]}.sha256"
OUT=$tmp/slurm/m.gguf "$job" --check "${args[@]}" 2>/dev/null && fail "--check passed a truncated shard"
SHARD=5 OUT=$tmp/slurm/m.gguf "$job" "${args[@]}" >/dev/null 2>&1 || fail "truncated shard: rerun failed"
SHARD=7 OUT=$tmp/slurm/m.gguf "$job" "${args[@]}" >/dev/null 2>&1 || fail "lost sidecar: rerun failed"
same_as_ref slurm

# A shard gguf-requant writes but that is short or lacks the magic (a stand-in tool damages what
# the real one wrote), or a tool killed after a warning (the OOM killer), fails with status 1, a
# line naming what went wrong, and no sidecar.
mkdir "$tmp/stub"
cat >"$tmp/stub/gguf-requant" <<EOF
#!/usr/bin/env bash
"$bin/gguf-requant" "\$@" || exit
[[ " \$* " == *" --dry-run "* ]] && exit
if [ "\$DAMAGE" = killed ]; then
    echo "gguf-requant: warning: a warning before the end" >&2
    kill -KILL \$\$
fi
if [ "\$DAMAGE" = hang ]; then
    sleep 30 >/dev/null 2>&1 &
    trap 'kill \$!; touch "$tmp/got-term"; exit 143' TERM
    touch "$tmp/started"
    wait
    exit 1
fi
for f in "$tmp"/damaged/*.gguf; do
    if [ "\$DAMAGE" = bytes ]; then truncate -s -1 "\$f"; else printf 'XXXX' | dd of="\$f" conv=notrunc status=none; fi
done
EOF
chmod +x "$tmp/stub/gguf-requant"
for damage in bytes magic killed; do
    rc=0
    DAMAGE=$damage OIW_BIN=$tmp/stub SHARD=3 OUT=$tmp/damaged/m.gguf "$job" "${args[@]}" >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" = 1 ] && tail -n 1 "$tmp/err" | grep -q "$damage" || fail "damaged shard ($damage): exit $rc: $(cat "$tmp/err")"
    [ ! -e "$tmp/damaged/${shards[2]}.sha256" ] || fail "damaged shard ($damage) got a sidecar"
done

# SIGTERM to shard-job (Kubernetes stops a pod so, with shard-job as PID 1) reaches the running
# tool, which removes its temp file; shard-job exits 143 with one line.
DAMAGE=hang OIW_BIN=$tmp/stub SHARD=3 OUT=$tmp/damaged/m.gguf "$job" "${args[@]}" >/dev/null 2>"$tmp/err" &
pid=$!
for _ in $(seq 200); do
    [ -e "$tmp/started" ] && break
    sleep 0.05
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] && [ -e "$tmp/got-term" ] && [ "$(cat "$tmp/err")" = "shard-job: error: stopped by SIGTERM" ] ||
    fail "SIGTERM: exit $rc, tool signalled: $([ -e "$tmp/got-term" ] && echo yes || echo no), stderr: $(cat "$tmp/err")"
echo "ShardJobCli: ok ($n shards, Slurm and Indexed Job)"
