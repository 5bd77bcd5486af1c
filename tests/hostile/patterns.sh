# Every tensor-name pattern a user or a file gives goes through RE2 (libformat/pattern.h): patterns
# that overflowed std::regex's stack (a 200,000-byte literal, 20,000 and 40,000 nested groups) and
# one that backtracked forever ((.*)*x) end in one line and exit 2, or match in linear time.
RQ="$BIN/gguf-requant"; PLAN="$BIN/gguf-plan"; INS="$BIN/gguf-inspect"
CONV="$BIN/oiw4-convert"; CHECK="$BIN/oiw4-check"
MINI="$DATA/models/mini-llama-f16.gguf"
long="^$(head -c 200000 /dev/zero | tr '\0' a)\$"
nest() { printf "%${1}s" | tr ' ' '('; printf a; printf "%${1}s" | tr ' ' ')'; }
deep=$(nest 20000); deeper=$(nest 40000)
star='^(.*)*x$'

# A plan file line, a --tensor-type-file entry, a gains line: each carries the pattern.
printf '%s=Q4_K\n' "$long" >"$TMP/long.plan"
printf '%s=Q4_K\n' "$star" >"$TMP/star.plan"
printf '%s=q8_0\n' "$deep" >"$TMP/deep.types"
printf '%s=2\n' "$deep" >"$TMP/deep.gains"

hostile_case "requant --plan: 200,000-byte pattern" 2 "$RQ" "$MINI" "$TMP/o.gguf" --plan "$TMP/long.plan"
expect_err_contains "at most 65536 are accepted"; expect_err_contains "long.plan: line 1"
expect_err_one_line; expect_no_file "$TMP/o.gguf"
hostile_case "inspect diff --plan: 200,000-byte pattern" 2 "$INS" diff "$MINI" --plan "$TMP/long.plan"
expect_err_contains "at most 65536 are accepted"; expect_err_one_line
hostile_case "requant --plan: (.*)*x ends" 2 "$RQ" "$MINI" "$TMP/o.gguf" --plan "$TMP/star.plan"
expect_err_one_line; expect_no_file "$TMP/o.gguf"
hostile_case "requant --tensor-type '(.*)*x': linear" 0 "$RQ" "$MINI" "$TMP/o.gguf" --preset Q8_0 --tensor-type '(.*)*x=q8_0'
rm -f "$TMP/o.gguf"
hostile_case "requant --tensor-type: 20,000 nested groups" 2 "$RQ" "$MINI" "$TMP/o.gguf" --preset Q8_0 --tensor-type "$deep=q8_0"
expect_err_contains "groups nested deeper than 1000"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
hostile_case "requant --tensor-type-file: 20,000 nested groups" 2 "$RQ" "$MINI" "$TMP/o.gguf" --preset Q8_0 --tensor-type-file "$TMP/deep.types"
expect_err_contains "deep.types: line 1: rule"; expect_err_contains "groups nested deeper than 1000"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
hostile_case "requant --keep: 20,000 nested groups" 2 "$RQ" "$MINI" "$TMP/o.gguf" --preset Q8_0 --keep "$deep"
expect_err_contains "groups nested deeper than 1000"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
hostile_case "requant --tensor-type: backreference" 2 "$RQ" "$MINI" "$TMP/o.gguf" --preset Q8_0 --tensor-type '(attn)\1=q8_0'
expect_err_contains "backreferences"; expect_err_one_line; expect_no_file "$TMP/o.gguf"
hostile_case "requant --keep: lookahead" 2 "$RQ" "$MINI" "$TMP/o.gguf" --preset Q8_0 --keep 'attn(?=_v)'
expect_err_contains "lookahead"; expect_err_one_line; expect_no_file "$TMP/o.gguf"

for opt in --pin --tie; do
    val="$deep"; [ "$opt" = --pin ] && val="$deep=Q8_0"
    hostile_case "plan $opt: 20,000 nested groups" 2 "$PLAN" "$MINI" --no-cache --target-bpw 6 "$opt" "$val" -o "$TMP/p.plan"
    expect_err_contains "groups nested deeper than 1000"; expect_err_one_line; expect_no_file "$TMP/p.plan"
done
hostile_case "plan --gains: 20,000 nested groups" 2 "$PLAN" "$MINI" --no-cache --target-bpw 6 --gains "$TMP/deep.gains" -o "$TMP/p.plan"
expect_err_contains "deep.gains: line 1: gain pattern"; expect_err_contains "groups nested deeper than 1000"; expect_err_one_line; expect_no_file "$TMP/p.plan"
hostile_case "plan --pin '(.*)*x': linear" 0 "$PLAN" "$MINI" --no-cache --target-bpw 6 --pin '(.*)*x=Q8_0' -o "$TMP/p.plan"

# 40,000 nested groups are 80,001 bytes: over the length cap before any nesting is looked at.
for opt in --encode --requant; do
    hostile_case "oiw4-convert $opt: 40,000 nested groups" 2 "$CONV" "$MINI" "$TMP/o.oiw4" "$opt" "$deeper=oiw4"
    expect_err_contains "(80001 bytes): pattern of 80001 bytes; at most 65536 are accepted"; expect_err_one_line
    expect_no_file "$TMP/o.oiw4"
    hostile_case "oiw4-convert $opt: 20,000 nested groups" 2 "$CONV" "$MINI" "$TMP/o.oiw4" "$opt" "$deep=oiw4"
    expect_err_contains "groups nested deeper than 1000"; expect_err_one_line; expect_no_file "$TMP/o.oiw4"
done
hostile_case "oiw4-check --tensor: 40,000 nested groups" 2 "$CHECK" "$MINI" "$MINI" --tensor "$deeper"
expect_err_contains "at most 65536 are accepted"; expect_err_one_line
hostile_case "oiw4-check --tensor: 20,000 nested groups" 2 "$CHECK" "$MINI" "$MINI" --tensor "$deep"
expect_err_contains "groups nested deeper than 1000"; expect_err_one_line
hostile_case "oiw4-check --tensor '(.*)*x': linear" 0 "$CHECK" "$MINI" "$MINI" --tensor '(.*)*x'
