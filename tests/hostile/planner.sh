# gguf-plan on hostile budgets, and gguf-requant --plan on plans that do not fit the model.
PLAN="$BIN/gguf-plan"  # every case with --no-cache: no sidecar next to the vendored model
nc=--no-cache
RQ="$BIN/gguf-requant"
MINI="$DATA/models/mini-llama-f16.gguf"

for bad in abc -5 0 1e999 '' 12XB nan; do
    hostile_case "plan: --target '$bad'" 2 "$PLAN" "$MINI" $nc --target "$bad" -o "$TMP/p.plan"
    expect_err_one_line; expect_no_file "$TMP/p.plan"
done
hostile_case "plan: --target-bpw -1" 2 "$PLAN" "$MINI" $nc --target-bpw -1 -o "$TMP/p.plan"
expect_err_contains "not a positive number"; expect_no_file "$TMP/p.plan"
hostile_case "plan: two budgets" 2 "$PLAN" "$MINI" $nc --target 1MB --target-bpw 4
expect_err_contains "exactly one"
hostile_case "plan: no budget" 2 "$PLAN" "$MINI" $nc
expect_err_one_line
hostile_case "plan: tokens/s without bandwidth" 2 "$PLAN" "$MINI" $nc --target-tokens-per-s 30
expect_err_contains "needs --bandwidth"
hostile_case "plan: budget below the minimum" 2 "$PLAN" "$MINI" $nc --target 100000 -o "$TMP/p.plan"
expect_err_contains "impossible"; expect_err_one_line; expect_no_file "$TMP/p.plan"
hostile_case "plan: bpw below the minimum" 2 "$PLAN" "$MINI" $nc --target-bpw 0.5
expect_err_contains "impossible"; expect_err_one_line
hostile_case "plan: unknown candidate type" 2 "$PLAN" "$MINI" $nc --target-bpw 5 --types Q4_K,Q9_K
expect_err_one_line
hostile_case "plan: bad pin regex" 2 "$PLAN" "$MINI" $nc --target-bpw 5 --pin '(=Q4_K'
expect_err_contains "invalid regular expression"; expect_err_one_line
hostile_case "plan: pin to a type the rows refuse" 2 "$PLAN" "$MINI" $nc --target-bpw 8 --pin 'ffn_down=Q4_K'
expect_err_contains "not a candidate"; expect_err_one_line

hostile_case "plan: no candidate fits a row length" 2 "$PLAN" "$MINI" $nc --target-bpw 5 --types Q4_K
expect_err_contains "no candidate type fits"; expect_err_one_line
printf 'attn_q=lots\n' >"$TMP/gains.txt"
hostile_case "plan: bad gains file" 2 "$PLAN" "$MINI" $nc --target-bpw 5 --gains "$TMP/gains.txt"
expect_err_contains "line 1"; expect_err_one_line
hostile_case "plan: missing imatrix" 2 "$PLAN" "$MINI" $nc --target-bpw 5 --imatrix "$TMP/none.gguf"
expect_err_one_line

hostile_case "plan: a good plan" 0 "$PLAN" "$MINI" $nc --target-bpw 5 -o "$TMP/good.plan"
sed 's/^\^blk\\\.0\\\.ffn_up/^blk\\.9\\.ffn_up/' "$TMP/good.plan" >"$TMP/missing.plan"
hostile_case "requant --plan: tensor missing from the model" 2 "$RQ" "$MINI" "$TMP/o.gguf" --plan "$TMP/missing.plan"
expect_err_contains "does not have"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
sed 's/=Q5_K$/=Q9_K/' "$TMP/good.plan" >"$TMP/type.plan"
hostile_case "requant --plan: unknown type" 2 "$RQ" "$MINI" "$TMP/o.gguf" --plan "$TMP/type.plan"
expect_err_one_line; expect_no_file "$TMP/o.gguf"
sed 's/^# predicted-size: /# predicted-size: 9/' "$TMP/good.plan" >"$TMP/size.plan"
hostile_case "requant --plan: wrong predicted size" 2 "$RQ" "$MINI" "$TMP/o.gguf" --plan "$TMP/size.plan"
expect_err_contains "predicted"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
printf 'blk.0.ffn_up=Q4_K\n' >"$TMP/loose.plan"
hostile_case "requant --plan: unanchored entry" 2 "$RQ" "$MINI" "$TMP/o.gguf" --plan "$TMP/loose.plan"
expect_err_contains "anchored"; expect_no_file "$TMP/o.gguf"
hostile_case "requant --plan: the good plan" 0 "$RQ" "$MINI" "$TMP/o.gguf" --plan "$TMP/good.plan"
# gguf-inspect diff --plan: bad plans are one-line errors and leave no temporary file behind.
hostile_case "inspect diff --plan: missing plan" 2 "$BIN/gguf-inspect" diff "$MINI" --plan "$TMP/none.plan"
expect_err_one_line
hostile_case "inspect diff --plan: unanchored plan" 2 "$BIN/gguf-inspect" diff "$MINI" --plan "$TMP/loose.plan"
expect_err_contains "anchored"
hostile_case "inspect diff: B and --plan together" 2 "$BIN/gguf-inspect" diff "$MINI" "$MINI" --plan "$TMP/good.plan"
expect_err_one_line
hostile_case "inspect diff: neither B nor --plan" 2 "$BIN/gguf-inspect" diff "$MINI"
expect_err_one_line
hostile_case "inspect diff --plan: the good plan" 1 "$BIN/gguf-inspect" diff "$MINI" --plan "$TMP/good.plan" --html "$TMP/p.html"
expect_true "no preview file left" sh -c '! ls "${TMPDIR:-/tmp}"/oiw-plan-preview-* >/dev/null 2>&1'
