// MatVec implementations over ggml rows, oiw4 planes and Q4_Kx8 blocks, and the GGUF and OIW4 sources.
#include "converters/matmul/matvec.h"

#include <algorithm>
#include <cstring>

#include "converters/matmul/kernels.h"
#include "converters/matmul/parallel.h"
#include "converters/quant/quants.h"
#include "converters/repack/repack.h"
#include "libformat/model.h"
#include "libformat/oiw4/oiw4.h"

namespace oiw::matmul {
namespace {

// Threads for one product with rows x cols weights: one below kMinParallelWeights, where starting
// threads costs more than the product (oiw4-check on 100k small tensors spent 90% in thread
// start-up). Rows are independent, so the results do not depend on it.
constexpr int64_t kMinParallelWeights = int64_t{1} << 16;
int threads_for(int64_t rows, int64_t cols, int threads) { return rows * cols < kMinParallelWeights ? 1 : threads; }

class GgmlMatVec final : public MatVec {
public:
    GgmlMatVec(GgmlType t, const uint8_t* b, int64_t rows, int64_t cols) : t_(t), b_(b), rows_(rows), cols_(cols) {}
    std::string kind() const override { return std::string(type_name(t_)); }
    int64_t rows() const override { return rows_; }
    int64_t cols() const override { return cols_; }
    bool has_integer() const override { return dot_partner(t_).has_value(); }
    void exact(const float* x, double* y, int threads) const override {
        threads = threads_for(rows(), cols(), threads);
        const uint64_t rs = row_size(t_, cols_);
        parallel_rows(rows_, threads, 1, [&](int64_t r0, int64_t r1) {
            std::vector<float> scratch;
            for (int64_t r = r0; r < r1; ++r) y[r] = dot_exact(t_, b_ + r * rs, x, cols_, scratch);
        });
    }
    void integer(const float* x, float* y, int threads) const override {
        threads = threads_for(rows(), cols(), threads);
        const QuantizedVector q = quantize_activation(*dot_partner(t_), x, cols_);
        const uint64_t rs = row_size(t_, cols_);
        if (t_ == GgmlType::Q4_0) {  // same results, one activation unpack for all rows
            q4_0_gemv(Isa::Scalar, reinterpret_cast<const block_q4_0*>(b_), rows_, cols_, unpack_q8_0(q), y, threads);
            return;
        }
        parallel_rows(rows_, threads, 1, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) y[r] = dot_integer(t_, b_ + r * rs, q);
        });
    }

    void exact_batch(const float* x, int64_t n, double* y, int threads) const override {
        threads = threads_for(rows() * n, cols(), threads);
        const uint64_t rs = row_size(t_, cols_);
        parallel_rows(rows_, threads, 1, [&](int64_t r0, int64_t r1) {
            std::vector<float> w(static_cast<size_t>(cols_));
            for (int64_t r = r0; r < r1; ++r) {
                dequantize_row(t_, b_ + r * rs, w.data(), cols_);  // = dot_exact's scratch
                batch_sums(
                    w.data(), x, n, [&](int64_t t, double v) { y[t * rows_ + r] = v; },
                    [](float a, float b) { return static_cast<double>(a) * static_cast<double>(b); });
            }
        });
    }
    void integer_batch(const float* x, int64_t n, float* y, int threads) const override {
        const bool plain = t_ == GgmlType::F32 || t_ == GgmlType::F16 || t_ == GgmlType::BF16;
        if (!plain) return MatVec::integer_batch(x, n, y, threads);
        const GgmlType partner = *dot_partner(t_);
        // F32 / F16 / BF16: dot_f32 / half_dot sum (float) w[i] * a[i] in f64 from index 0, w and a
        // the values of the row and of the activation rounded to the partner (its own type).
        std::vector<float> a(static_cast<size_t>(n * cols_));
        for (int64_t t = 0; t < n; ++t) {
            const QuantizedVector q = quantize_activation(partner, x + t * cols_, cols_);
            dequantize_row(partner, q.bytes.data(), a.data() + t * cols_, cols_);
        }
        threads = threads_for(rows() * n, cols(), threads);
        const uint64_t rs = row_size(t_, cols_);
        parallel_rows(rows_, threads, 1, [&](int64_t r0, int64_t r1) {
            std::vector<float> w(static_cast<size_t>(cols_));
            for (int64_t r = r0; r < r1; ++r) {
                dequantize_row(t_, b_ + r * rs, w.data(), cols_);
                batch_sums(
                    w.data(), a.data(), n, [&](int64_t t, double v) { y[t * rows_ + r] = static_cast<float>(v); },
                    [](float p, float q) { return static_cast<double>(p * q); });
            }
        });
    }

private:
    GgmlType t_;
    const uint8_t* b_;
    int64_t rows_, cols_;

    // For every vector t < n of x (rows of cols_): the sum over i of term(w[i], x_t[i]) in f64 from
    // index 0, handed to put(t, sum); eight vectors' sums run side by side, each in its own order.
    template <typename Put, typename Term>
    void batch_sums(const float* w, const float* x, int64_t n, Put put, Term term) const {
        constexpr int64_t kLanes = 8;
        for (int64_t t0 = 0; t0 < n; t0 += kLanes) {
            const int64_t m = std::min(kLanes, n - t0);
            double s[kLanes] = {};
            const float* xs[kLanes];
            for (int64_t k = 0; k < kLanes; ++k) xs[k] = x + (t0 + std::min(k, m - 1)) * cols_;
            for (int64_t i = 0; i < cols_; ++i)
                for (int64_t k = 0; k < kLanes; ++k) s[k] += term(w[i], xs[k][i]);
            for (int64_t k = 0; k < m; ++k) put(t0 + k, s[k]);
        }
    }
};

class Oiw4MatVec final : public MatVec {
public:
    explicit Oiw4MatVec(const Oiw4Planes& p) : p_(p) {}
    std::string kind() const override { return "oiw4"; }
    int64_t rows() const override { return p_.rows; }
    int64_t cols() const override { return p_.cols; }
    bool has_integer() const override { return true; }
    void exact(const float* x, double* y, int threads) const override {
        threads = threads_for(rows(), cols(), threads);
        const int64_t nb = p_.blocks_per_row();
        parallel_rows(p_.rows, threads, 1, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) y[r] = oiw4_dot_exact(p_.qs + r * nb * 16, p_.d + r * nb, x, p_.cols);
        });
    }
    void integer(const float* x, float* y, int threads) const override {
        threads = threads_for(rows(), cols(), threads);
        const Q8Act a = make_q8_act(x, p_.cols);
        const Q8Act* acts[1] = {&a};
        oiw4_gemv(Isa::Scalar, p_, acts, 1, y, threads, false);
    }

private:
    Oiw4Planes p_;
};

class Q4Kx8MatVec final : public MatVec {
public:
    explicit Q4Kx8MatVec(const Q4Kx8View& v) : v_(v) {}
    std::string kind() const override { return "q4kx8"; }
    int64_t rows() const override { return v_.rows; }
    int64_t cols() const override { return v_.cols; }
    bool has_integer() const override { return true; }
    void exact(const float* x, double* y, int threads) const override {
        threads = threads_for(rows(), cols(), threads);
        const int64_t nb = v_.cols / QK_K;
        parallel_rows(v_.rows, threads, 8, [&](int64_t r0, int64_t r1) {
            std::vector<block_q4_K> row(static_cast<size_t>(nb));
            std::vector<float> scratch;
            for (int64_t r = r0; r < r1; ++r) {
                for (int64_t b = 0; b < nb; ++b)
                    row[b] = q4kx8_extract(v_.blocks[(r / 8) * nb + b], static_cast<int>(r % 8));
                y[r] = dot_exact(GgmlType::Q4_K, row.data(), x, v_.cols, scratch);
            }
        });
    }
    void integer(const float* x, float* y, int threads) const override {
        threads = threads_for(rows(), cols(), threads);
        q4kx8_gemv(Isa::Scalar, v_, unpack_q8_K(quantize_activation(GgmlType::Q8_K, x, v_.cols)), y, threads);
    }

private:
    Q4Kx8View v_;
};

class GgufSource final : public TensorSource {
public:
    explicit GgufSource(const std::string& path) : path_(path), m_(open_model(path)) {
        for (const auto& t : m_.tensors()) entries_.push_back({t, std::string(type_name(t.type)), t.type});
    }
    const std::string& path() const override { return path_; }
    const std::vector<TensorEntry>& entries() const override { return entries_; }
    std::unique_ptr<MatVec> tensor(const std::string& name) const override {
        const int64_t i = m_.find_tensor(name);
        if (i < 0) return nullptr;
        const GgufTensorInfo& t = m_.tensors()[static_cast<size_t>(i)];
        if (t.n_dims < 2 || !can_dequantize(t.type)) return nullptr;
        return ggml_matvec(t.type, m_.tensor_data(static_cast<size_t>(i)).data(), t.n_rows(), t.ne[0]);
    }
    std::span<const uint8_t> ggml_bytes(const std::string& name) const override {
        const int64_t i = m_.find_tensor(name);
        return i < 0 ? std::span<const uint8_t>{} : m_.tensor_data(static_cast<size_t>(i));
    }

private:
    std::string path_;
    Model m_;
    std::vector<TensorEntry> entries_;
};

// A MatVec over bytes it owns (a layout without a kernel of its own, unpacked to its ggml type).
class OwningMatVec final : public MatVec {
public:
    OwningMatVec(std::string kind, std::vector<uint8_t> bytes, GgmlType t, int64_t rows, int64_t cols)
        : kind_(std::move(kind)), bytes_(std::move(bytes)), inner_(ggml_matvec(t, bytes_.data(), rows, cols)) {}
    std::string kind() const override { return kind_; }
    int64_t rows() const override { return inner_->rows(); }
    int64_t cols() const override { return inner_->cols(); }
    bool has_integer() const override { return inner_->has_integer(); }
    void exact(const float* x, double* y, int threads) const override { inner_->exact(x, y, threads); }
    void integer(const float* x, float* y, int threads) const override { inner_->integer(x, y, threads); }

private:
    std::string kind_;
    std::vector<uint8_t> bytes_;
    std::unique_ptr<MatVec> inner_;
};

class Oiw4Source final : public TensorSource {
public:
    explicit Oiw4Source(const std::string& path) : f_(Oiw4File::open(path)) {
        for (const auto& t : f_.tensors()) {
            const GgmlType holds = t.encoding == Oiw4Encoding::Raw    ? t.info.type
                                   : t.encoding == Oiw4Encoding::Oiw4 ? GgmlType::Q4_0
                                                                      : GgmlType::Q4_K;
            const bool raw = t.encoding == Oiw4Encoding::Raw;
            entries_.push_back({t.info, std::string(raw ? type_name(t.info.type) : encoding_name(t.encoding)), holds});
        }
    }
    const std::string& path() const override { return f_.path(); }
    const std::vector<TensorEntry>& entries() const override { return entries_; }
    std::span<const uint8_t> ggml_bytes(const std::string& name) const override {
        const int64_t found = f_.find_tensor(name);
        if (found < 0 || f_.tensors()[static_cast<size_t>(found)].encoding != Oiw4Encoding::Raw) return {};
        f_.require_decoded(static_cast<size_t>(found));
        return f_.plane_data(static_cast<size_t>(found), 0);
    }
    std::unique_ptr<MatVec> tensor(const std::string& name) const override {
        const int64_t found = f_.find_tensor(name);
        if (found < 0) return nullptr;
        const auto i = static_cast<size_t>(found);
        const Oiw4Tensor& t = f_.tensors()[i];
        if (t.info.n_dims < 2) return nullptr;
        f_.require_decoded(i);
        const int64_t rows = t.info.n_rows(), cols = t.info.ne[0];
        const uint8_t* data = f_.plane_data(i, 0).data();
        switch (t.encoding) {
            case Oiw4Encoding::Raw:
                return can_dequantize(t.info.type) ? ggml_matvec(t.info.type, data, rows, cols) : nullptr;
            case Oiw4Encoding::Oiw4: {
                const Oiw4View v = f_.oiw4_view(i);
                return oiw4_matvec(Oiw4Planes{v.qs, v.d, v.rows, v.cols});
            }
            case Oiw4Encoding::Q4Kx8:
                return q4kx8_matvec(Q4Kx8View{reinterpret_cast<const block_q4_Kx8*>(data), rows, cols});
            case Oiw4Encoding::Q4Kx8Il4: {  // no kernel of its own: the reference runs the Q4_K rows
                std::vector<uint8_t> q4k(t.info.n_bytes);
                unpack_q4_kx8_to_q4_k(reinterpret_cast<const block_q4_Kx8*>(data),
                                      reinterpret_cast<block_q4_K*>(q4k.data()), rows, cols / QK_K, 4);
                return std::make_unique<OwningMatVec>("q4kx8-il4", std::move(q4k), GgmlType::Q4_K, rows, cols);
            }
        }
        return nullptr;
    }

private:
    Oiw4File f_;
    std::vector<TensorEntry> entries_;
};

}  // namespace

std::unique_ptr<MatVec> ggml_matvec(GgmlType type, const uint8_t* bytes, int64_t rows, int64_t cols) {
    return std::make_unique<GgmlMatVec>(type, bytes, rows, cols);
}
std::unique_ptr<MatVec> oiw4_matvec(const Oiw4Planes& planes) { return std::make_unique<Oiw4MatVec>(planes); }
std::unique_ptr<MatVec> q4kx8_matvec(const Q4Kx8View& view) { return std::make_unique<Q4Kx8MatVec>(view); }

// The vectors split over the threads, each product on one (rows are independent: same results).
void MatVec::exact_batch(const float* x, int64_t n, double* y, int threads) const {
    parallel_rows(n, threads, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) exact(x + t * cols(), y + t * rows(), 1);
    });
}

void MatVec::integer_batch(const float* x, int64_t n, float* y, int threads) const {
    parallel_rows(n, threads, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) integer(x + t * cols(), y + t * rows(), 1);
    });
}

std::unique_ptr<TensorSource> open_tensor_source(const std::string& path) {
    if (is_oiw4_file(path)) return std::make_unique<Oiw4Source>(path);
    return std::make_unique<GgufSource>(path);
}

}  // namespace oiw::matmul
