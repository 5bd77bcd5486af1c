// "A tensor y = W x can be run on, in both semantics": the abstraction oiw4-check compares
// through. A source of tensors (a GGUF model, split or not, or an OIW4 file) hands out one MatVec
// per tensor; adding an encoding or a file kind is one factory here or one TensorSource.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "converters/matmul/w4a8.h"
#include "libformat/gguf/gguf.h"

namespace oiw::matmul {

class MatVec {
public:
    virtual ~MatVec() = default;
    // "Q4_K" for a ggml type, "oiw4" / "q4kx8" / "q4kx8-il4" for packed encodings.
    virtual std::string kind() const = 0;
    virtual int64_t rows() const = 0;
    virtual int64_t cols() const = 0;
    // True when the integer path exists for this kind.
    virtual bool has_integer() const = 0;
    // y[r] = row r . x (exact semantics, f64), rows split over `threads`.
    virtual void exact(const float* x, double* y, int threads) const = 0;
    // y[r] = row r . x (integer path, x quantized to the partner), rows split over `threads`.
    virtual void integer(const float* x, float* y, int threads) const = 0;
    // exact / integer for n vectors at once: x holds n rows of cols(), y receives n rows of rows();
    // every result is bit-identical to the one-vector call's. The default splits the vectors over
    // the threads; a ggml matrix splits its rows, decodes each once for the whole batch and runs the
    // batch's sums side by side (integer path: F32, F16 and BF16 weights; other types as the default).
    virtual void exact_batch(const float* x, int64_t n, double* y, int threads) const;
    virtual void integer_batch(const float* x, int64_t n, float* y, int threads) const;
};

// A ggml-typed matrix: `bytes` hold rows x row_size(type, cols) (a view: must outlive the MatVec).
std::unique_ptr<MatVec> ggml_matvec(GgmlType type, const uint8_t* bytes, int64_t rows, int64_t cols);
// oiw4 planes (views).
std::unique_ptr<MatVec> oiw4_matvec(const Oiw4Planes& planes);
// Q4_Kx8 blocks (a view).
std::unique_ptr<MatVec> q4kx8_matvec(const Q4Kx8View& view);

// One tensor of a model as stored.
struct TensorEntry {
    GgufTensorInfo info;  // name, shape, ggml type (an OIW4 tensor's: its source's)
    std::string kind;     // MatVec::kind(): the type name, or the packed encoding's name
    GgmlType holds;       // the ggml type whose values it holds (Q4_0 for oiw4, Q4_K for q4kx8*)
};

// Named tensors of one model, each runnable as a MatVec (2-D or more: rows = ne1*ne2*ne3).
class TensorSource {
public:
    virtual ~TensorSource() = default;
    // The path the model was opened from.
    virtual const std::string& path() const = 0;
    // Every tensor of the model, in model order (all shards of a split model).
    virtual const std::vector<TensorEntry>& entries() const = 0;
    // nullptr when the tensor is absent or has no row structure (1-D).
    virtual std::unique_ptr<MatVec> tensor(const std::string& name) const = 0;
    // The bytes of a tensor stored as its ggml type (GGUF data or a raw OIW4 plane); empty when
    // the tensor is absent or packed.
    virtual std::span<const uint8_t> ggml_bytes(const std::string& name) const = 0;
};

// Opens a model as a TensorSource: a GGUF file, a split model from any of its shards
// (open_model), or an (uncompressed) OIW4 file. Raw planes run as their ggml type, oiw4 and q4kx8
// planes through their kernels' scalar references, q4kx8-il4 unpacked to Q4_K rows. tensor() and
// ggml_bytes() throw FormatError(Unsupported) naming the tensor when a plane is zstd-compressed.
std::unique_ptr<TensorSource> open_tensor_source(const std::string& path);

}  // namespace oiw::matmul
