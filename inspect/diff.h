// Structural (and optionally byte-level) comparison of two GGUF files.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "libformat/model.h"
#include "libformat/traffic.h"

namespace oiw::inspect {

struct TensorDelta {
    size_t a = 0, b = 0;  // tensor indices in A and B
    bool type = false, shape = false, bytes = false, bytes_per_token = false;
    bool any() const { return type || shape || bytes || bytes_per_token; }
};

struct Diff {
    std::vector<std::string> header;                    // "version 2 -> 3", "alignment 32 -> 64"
    std::vector<size_t> kv_added;                       // key indices in B
    std::vector<size_t> kv_removed;                     // key indices in A
    std::vector<std::pair<size_t, size_t>> kv_changed;  // (A index, B index), value or type differs
    std::vector<size_t> tensors_added;                  // tensor indices in B
    std::vector<size_t> tensors_removed;                // tensor indices in A
    std::vector<TensorDelta> tensors_changed;           // common tensors whose info or traffic differs
    size_t tensors_common = 0;
    bool data_compared = false;
    std::vector<std::pair<size_t, size_t>> data_identical;  // common tensors with equal bytes (A, B)
    std::vector<std::pair<size_t, size_t>> data_different;  // common tensors whose bytes differ

    // Same header fields, metadata and tensor infos (and, when compared, the same tensor bytes).
    bool identical() const {
        return header.empty() && kv_added.empty() && kv_removed.empty() && kv_changed.empty() &&
               tensors_added.empty() && tensors_removed.empty() && tensors_changed.empty() && data_different.empty();
    }
};

// Compares A and B (analyses from analyze()). With `compare_data`, the bytes of every tensor
// present in both are compared (multi-threaded; tensors of different size differ unread).
Diff diff(const Model& a, const traffic::Analysis& aa, const Model& b, const traffic::Analysis& ab, bool compare_data);

}  // namespace oiw::inspect
