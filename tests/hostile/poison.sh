# Poisoned tensors and imatrices: NaN/inf weights, scales that overflow, bad importance
# statistics. Each is one error line naming the tensor (or entry), exit 2, no output file.
MK="python3 $(dirname "${BASH_SOURCE[0]}")/mkgguf.py"

# Weights: every poison in every source type, through a quantizing and a copying preset.
for dtype in f32 f16 bf16; do
    for poison in nan inf -inf; do
        $MK model "$TMP/$dtype-$poison.gguf" $dtype $poison
        for preset in Q8_0 Q4_K_M F16; do
            hostile_case "$dtype $poison weights -> $preset" 2 "$BIN/gguf-requant" "$TMP/$dtype-$poison.gguf" "$TMP/out.gguf" --preset $preset
            expect_err_one_line
            expect_err_contains "tensor 'blk.0.ffn_up.weight': row 3: input "
            expect_no_file "$TMP/out.gguf"
        done
    done
done

# Finite weights whose block scale overflows fp16 (1e38 into Q4_0: d = 1e38 / -8).
$MK model "$TMP/huge.gguf" f32 huge
for preset in Q4_0 Q8_0 Q4_1 Q5_1 Q4_K_M Q2_K IQ4_NL Q1_0 TQ1_0 TQ2_0 F16; do
    hostile_case "huge weights -> $preset" 2 "$BIN/gguf-requant" "$TMP/huge.gguf" "$TMP/out.gguf" --preset $preset
    expect_err_one_line
    expect_err_contains "tensor 'blk.0.ffn_up.weight': row 3: quantized output"
    expect_no_file "$TMP/out.gguf"
done

# The i-quant grid searches give up on such rows: the tensor and the row are named all the same.
for preset in IQ3_S IQ3_M; do
    hostile_case "huge weights -> $preset (grid search)" 2 "$BIN/gguf-requant" "$TMP/huge.gguf" "$TMP/out.gguf" --preset $preset
    expect_err_one_line
    expect_err_contains "tensor 'blk.0.ffn_up.weight': row 3: IQ3_S: no grid point fits the block"
    expect_no_file "$TMP/out.gguf"
done

# A tensor that is only copied (a 1-D norm) is validated too.
$MK model "$TMP/norm.gguf" f32 norm-nan
hostile_case "NaN in a copied norm" 2 "$BIN/gguf-requant" "$TMP/norm.gguf" "$TMP/out.gguf" --preset Q8_0
expect_err_one_line
expect_err_contains "tensor 'blk.0.attn_norm.weight': row 0: input F32 data: NaN at element 200"
expect_no_file "$TMP/out.gguf"

# A quantized input with a NaN block scale, requantized and copied.
$MK model "$TMP/q8.gguf" q8_0 nan-scale
hostile_case "NaN scale, requantized" 2 "$BIN/gguf-requant" "$TMP/q8.gguf" "$TMP/out.gguf" --preset Q4_0 --allow-requantize
expect_err_contains "row 3: input Q8_0 data: NaN scale d in block 1"
expect_no_file "$TMP/out.gguf"
hostile_case "NaN scale, copied" 2 "$BIN/gguf-requant" "$TMP/q8.gguf" "$TMP/out.gguf" --preset Q8_0
expect_err_contains "row 3: input Q8_0 data: NaN scale d in block 1"

# The clean twin converts (the battery is not refusing everything).
$MK model "$TMP/clean.gguf" f32 none
hostile_case "clean weights convert" 0 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/out.gguf" --preset Q4_0
rm -f "$TMP/out.gguf"

# gguf-synth output is always valid data.
hostile_case "synth model" 0 "$BIN/gguf-synth" "$TMP/synth.gguf" --n-embd 64 --n-layer 1 --n-ff 128 --n-vocab 256 --n-head 2 --n-head-kv 2
hostile_case "synth model requantizes" 0 "$BIN/gguf-requant" "$TMP/synth.gguf" "$TMP/out.gguf" --preset Q4_K_M
rm -f "$TMP/out.gguf"

# Imatrices: GGUF and legacy .dat, each poison an error naming the entry.
for poison in zero-count neg-count neg nan inf all-zero; do
    $MK imatrix "$TMP/imat-$poison.gguf" $poison
    hostile_case "imatrix $poison" 2 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/out.gguf" --preset Q4_K_M --imatrix "$TMP/imat-$poison.gguf"
    expect_err_one_line
    expect_err_contains "entry 'blk.0.ffn_up.weight': "
    expect_no_file "$TMP/out.gguf"
done
for poison in zero-ncall neg nan all-zero; do
    $MK dat "$TMP/imat-$poison.dat" $poison
    hostile_case "legacy imatrix $poison" 2 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/out.gguf" --preset Q4_K_M --imatrix "$TMP/imat-$poison.dat"
    expect_err_one_line
    expect_err_contains "entry 'blk.0.ffn_up.weight': "
    expect_no_file "$TMP/out.gguf"
done
$MK imatrix "$TMP/imat-ok.gguf" none
hostile_case "clean imatrix" 0 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/out.gguf" --preset Q4_K_M --imatrix "$TMP/imat-ok.gguf"
rm -f "$TMP/out.gguf"

# The lowest-bit i-quants need an imatrix (as in llama-quantize): one line naming the tensor.
for preset in IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS; do
    hostile_case "$preset without an imatrix" 2 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/out.gguf" --preset $preset
    expect_err_one_line
    expect_err_contains "tensor 'blk.0.ffn_up.weight': "
    expect_err_contains " needs an importance matrix (pass --imatrix)"
    expect_no_file "$TMP/out.gguf"
    hostile_case "$preset with an imatrix" 0 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/out.gguf" --preset $preset --imatrix "$TMP/imat-ok.gguf"
    rm -f "$TMP/out.gguf"
done

# Alignment 1: the imatrix data sits at an odd offset; read without misaligned float loads
# (the sanitizer build's UBSan aborts on one).
$MK align1 "$TMP/imat-align1.gguf"
hostile_case "alignment-1 imatrix" 0 "$BIN/gguf-requant" "$TMP/clean.gguf" "$TMP/out.gguf" --preset Q4_K_M --imatrix "$TMP/imat-align1.gguf"
rm -f "$TMP/out.gguf"
