// GGUF -> OIW4 conversion (encoding policy, plan, streaming writer) and OIW4 -> GGUF.
//
// Policy, per tensor: the first --requant rule whose regex matches (any type -> oiw4 by
// dequantize + Q4_0 rounding, fp32 scale kept), else the first --encode rule that matches, else
// the default: Q4_0 -> oiw4; Q4_K with a row count divisible by 8 that is not an embedding lookup
// (token_embd, position_embd, token_types) -> q4kx8; everything else raw. A rule naming an encoding
// the tensor cannot take is an error naming the tensor.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "libformat/gguf/gguf.h"
#include "libformat/gguf/split.h"
#include "libformat/model.h"
#include "libformat/oiw4/oiw4.h"
#include "libformat/pattern.h"

namespace oiw {

struct EncodeRule {
    std::string spec;  // as given: "REGEX=ENC"
    Pattern pattern;   // searched in tensor names
    Oiw4Encoding encoding = Oiw4Encoding::Raw;
    bool requant = false;
};
// Parses "REGEX=ENC" (--encode) or "REGEX=oiw4" (--requant). Throws FormatError(Usage).
EncodeRule parse_encode_rule(std::string_view spec, bool requant);

struct Oiw4TensorPlan {
    size_t index = 0;  // in the source's tensor list (output keeps that order)
    Oiw4Encoding encoding = Oiw4Encoding::Raw;
    bool requant = false;           // dequantize + quantize to oiw4
    std::vector<PlaneSpec> planes;  // decoded plane sizes
};

struct Oiw4Plan {
    std::vector<Oiw4TensorPlan> tensors;
    Metadata provenance;    // oiw4.* keys
    uint64_t out_size = 0;  // exact output size (uncompressed)
};

// The encoding the default policy gives a tensor.
Oiw4Encoding default_encoding(const GgufTensorInfo& t);
// Plans every tensor of `in` (rules: --requant first, then --encode, in order); a single-file
// source's size, XXH3 and per-tensor XXH3 go into the provenance (one read of the file). Throws
// FormatError naming the tensor for an impossible encoding or an unsupported requantization.
Oiw4Plan plan_oiw4(const Model& in, const std::vector<EncodeRule>& rules);
// Writes the planned file atomically (the input is never overwritten). `progress(i, name)` is
// called after each tensor.
void write_oiw4(const Model& in, const Oiw4Plan& plan, const std::string& out_path,
                const std::function<void(size_t, std::string_view)>& progress = {});

// Streams the GGUF bytes tensor `i` of `in` stands for (what --to-gguf writes for it: oiw4 -> Q4_0,
// q4kx8 -> Q4_K, raw as stored) to `sink`, in order, in pieces of at most a few MiB. Returns the
// largest error of an oiw4 scale not exact in fp16 (0: lossless). Throws FormatError(Unsupported)
// when a plane of the tensor is compressed.
float oiw4_tensor_gguf_bytes(const Oiw4File& in, size_t i, const std::function<void(std::span<const uint8_t>)>& sink);

struct ToGgufResult {
    std::vector<std::string> warnings;  // oiw4 scales not exact in fp16 (max error), ...
    bool lossless = true;               // every tensor restored in its source type
    bool tensors_checked = false;       // every same-type tensor written equals oiw4.source.tensor_xxh3
    bool identical_to_source = false;   // output XXH3 and size equal the recorded source's
    std::string mismatch;               // non-empty: differs from the recorded source (tools exit 1)
    std::vector<std::string> written;   // files written (one, or the shards of this run)
};
// Writes `in` back as GGUF (version, KVs, tensor order and shapes of the source; oiw4 -> Q4_0,
// q4kx8 -> Q4_K, raw as stored). Compressed files are refused (decompress first). Every plane is
// checked against its XXH3 before use (FormatError(BadChecksum) naming it, nothing written). A
// tensor kept in its source type whose bytes differ from the recorded oiw4.source.tensor_xxh3 sets
// `mismatch` naming it and writes nothing; without per-tensor checksums, a lossless file that
// differs from the recorded source size/XXH3 is written and `mismatch` says so.
ToGgufResult write_gguf_from_oiw4(const Oiw4File& in, const std::string& out_path, const SplitOptions& split = {});

}  // namespace oiw
