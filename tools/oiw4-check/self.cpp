// oiw4-check --self FILE: every optimized GEMV kernel against the scalar integer reference on the
// file's own tensors. A GGUF file (or an OIW4 raw plane) offers Q4_0 rows (run as Q4_0 and as the
// oiw4 planes they convert to losslessly), F32/F16/BF16 rows (quantized to oiw4 with Q4_0's
// rounding) and Q4_K rows (packed to Q4_Kx8); an OIW4 file's oiw4 and q4kx8 planes run as stored.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "converters/matmul/kernels.h"
#include "converters/quant/quants.h"
#include "converters/repack/repack.h"
#include "libformat/escape.h"
#include "libformat/gguf/gguf.h"
#include "libformat/json.h"
#include "libformat/oiw4/oiw4.h"
#include "tools/common/tool_support.h"
#include "tools/oiw4-check/commands.h"

namespace oiw::check {
namespace {

using namespace matmul;

// The operands one tensor offers the kernels (views, or buffers owned here).
struct Operands {
    Operands(std::string n, std::string k, int64_t r, int64_t c)
        : name(std::move(n)), kind(std::move(k)), rows(r), cols(c) {}
    std::string name, kind;
    int64_t rows = 0, cols = 0;
    const block_q4_0* q40 = nullptr;  // Q4_0 rows, when the tensor is Q4_0
    Oiw4Planes w4{};                  // oiw4 planes (w4.qs == nullptr: none)
    Q4Kx8View x8{};                   // Q4_Kx8 blocks (x8.blocks == nullptr: none)
    std::vector<block_q4_0> own40;
    std::vector<uint8_t> own_qs;
    std::vector<float> own_d;
    std::vector<block_q4_Kx8> own_x8;
};

// Operands of a tensor held as ggml bytes; false when no kernel takes its type.
bool from_ggml(GgmlType type, const uint8_t* bytes, Operands& op) {
    const int64_t rows = op.rows, cols = op.cols;
    if (type == GgmlType::Q4_K && rows % 8 == 0) {
        op.own_x8.resize(static_cast<size_t>(rows / 8 * (cols / QK_K)));
        repack_q4_k_to_q4_kx8(reinterpret_cast<const block_q4_K*>(bytes), op.own_x8.data(), rows, cols / QK_K, 8);
        op.x8 = Q4Kx8View{op.own_x8.data(), rows, cols};
        return true;
    }
    if (cols % 32 != 0) return false;
    if (type == GgmlType::Q4_0) {
        op.q40 = reinterpret_cast<const block_q4_0*>(bytes);
    } else if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
        std::vector<float> fl(static_cast<size_t>(rows * cols));
        dequantize_row(type, bytes, fl.data(), rows * cols);
        op.own40.resize(static_cast<size_t>(rows * cols / 32));
        quantize_chunk(GgmlType::Q4_0, fl.data(), op.own40.data(), rows, cols, nullptr);
        op.q40 = op.own40.data();
    } else {
        return false;
    }
    const int64_t n = rows * cols / 32;
    op.own_qs.resize(static_cast<size_t>(n * 16));
    op.own_d.resize(static_cast<size_t>(n));
    q4_0_to_oiw4(op.q40, op.own_qs.data(), op.own_d.data(), n);
    op.w4 = Oiw4Planes{op.own_qs.data(), op.own_d.data(), rows, cols};
    return true;
}

// Bit-identity of got[0..n) and ref[0..n); names the first differing row.
void expect_same(const std::string& what, const float* got, const float* ref, int64_t n,
                 std::vector<std::string>& bad) {
    for (int64_t i = 0; i < n; ++i) {
        if (std::memcmp(&got[i], &ref[i], 4) != 0) {
            bad.push_back(fmt::format("{} row {}: {} vs reference {}", what, i, got[i], ref[i]));
            return;
        }
    }
}

std::vector<float> heavy_tailed(std::mt19937_64& rng, int64_t n) {
    std::normal_distribution<float> z;
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& e : x) e = z(rng) * std::exp(z(rng));
    return x;
}

// Runs every kernel the operands admit on every available ISA; returns the failures.
std::vector<std::string> check_operands(const Operands& op, std::mt19937_64& rng, int threads) {
    std::vector<std::string> bad;
    const int64_t rows = op.rows, cols = op.cols;
    if (op.w4.qs) {
        std::vector<Q8Act> acts;
        acts.reserve(kMaxBatch);
        for (int v = 0; v < kMaxBatch; ++v) acts.push_back(make_q8_act(heavy_tailed(rng, cols).data(), cols));
        const Q8Act* ap[kMaxBatch];
        for (int v = 0; v < kMaxBatch; ++v) ap[v] = &acts[static_cast<size_t>(v)];
        std::vector<float> ref(static_cast<size_t>(rows * kMaxBatch)), got(ref.size());
        oiw4_gemv(Isa::Scalar, op.w4, ap, kMaxBatch, ref.data(), 1, false);
        for (const Isa isa : kGemvIsas) {
            if (!cpu_runs(isa)) continue;
            for (const int b : {1, 2, 8}) {
                for (const bool two : {false, true}) {
                    if (two && b != 1) continue;
                    oiw4_gemv(isa, op.w4, ap, b, got.data(), threads, two);
                    expect_same(fmt::format("oiw4-{}-b{}{}", isa_name(isa), b, two ? "-2row" : ""), got.data(),
                                ref.data(), rows * b, bad);
                }
            }
        }
        if (op.q40) {
            std::vector<float> r40(static_cast<size_t>(rows)), g40(r40.size());
            q4_0_gemv(Isa::Scalar, op.q40, rows, cols, acts[0], r40.data(), 1);
            q4_0_gemv(active_isa(), op.q40, rows, cols, acts[0], g40.data(), threads);
            expect_same("q4_0", g40.data(), r40.data(), rows, bad);
            expect_same("q4_0-vs-oiw4", r40.data(), ref.data(), rows, bad);
        }
    }
    if (op.x8.blocks) {
        const QuantizedVector q = quantize_activation(GgmlType::Q8_K, heavy_tailed(rng, cols).data(), cols);
        std::vector<float> ref(static_cast<size_t>(rows)), got(ref.size());
        for (int64_t r = 0; r < rows; ++r) ref[r] = q4kx8_dot_ref(op.x8, r, q);
        q4kx8_gemv(active_isa(), op.x8, unpack_q8_K(q), got.data(), threads);
        expect_same("q4kx8", got.data(), ref.data(), rows, bad);
    }
    return bad;
}

// Calls fn(Operands&) for every tensor of `path` (GGUF or OIW4) a kernel can take.
template <typename Fn>
void for_each_operands(const std::string& path, Fn&& fn) {
    if (is_oiw4_file(path)) {
        const Oiw4File f = Oiw4File::open(path);
        for (size_t i = 0; i < f.tensors().size(); ++i) {
            const Oiw4Tensor& t = f.tensors()[i];
            Operands op{t.info.name, std::string(encoding_name(t.encoding)), t.info.n_rows(), t.info.ne[0]};
            if (t.info.n_dims < 2) continue;
            f.require_decoded(i);
            const uint8_t* data = f.plane_data(i, 0).data();
            bool ok = true;
            switch (t.encoding) {
                case Oiw4Encoding::Raw:
                    op.kind = type_name(t.info.type);
                    ok = from_ggml(t.info.type, data, op);
                    break;
                case Oiw4Encoding::Oiw4: {
                    const Oiw4View v = f.oiw4_view(i);
                    op.w4 = Oiw4Planes{v.qs, v.d, v.rows, v.cols};
                    break;
                }
                case Oiw4Encoding::Q4Kx8:
                    op.x8 = Q4Kx8View{reinterpret_cast<const block_q4_Kx8*>(data), op.rows, op.cols};
                    break;
                case Oiw4Encoding::Q4Kx8Il4: ok = false; break;  // no optimized kernel reads interleave 4
            }
            if (ok) fn(op);
        }
        return;
    }
    const GgufFile f = GgufFile::open(path);
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const GgufTensorInfo& t = f.tensors()[i];
        Operands op{t.name, std::string(type_name(t.type)), t.n_rows(), t.ne[0]};
        if (t.n_dims >= 2 && from_ggml(t.type, f.tensor_data(i).data(), op)) fn(op);
    }
}

}  // namespace

int run_self(const SelfOptions& o) {
    const int threads = resolve_threads(o.threads);
    std::mt19937_64 rng(o.seed);
    size_t checked = 0, failed = 0;
    std::vector<std::string> lines;
    for_each_operands(o.file, [&](const Operands& op) {
        const auto bad = check_operands(op, rng, threads);
        ++checked;
        failed += !bad.empty();
        for (const auto& b : bad) lines.push_back(op.name + ": " + b);
        if (!o.json)
            fmt::print("{:<40} {:<6} {}\n", escape_text(op.name), op.kind, bad.empty() ? "bit-identical" : "DIFFERS");
    });
    if (o.json) {
        json::Writer w(0);
        w.begin_object();
        w.field("file", o.file);
        w.field("isa", isa_name(active_isa()));
        w.field("tensors_checked", uint64_t{checked});
        w.field("failed", uint64_t{failed});
        w.key("failures");
        w.begin_array();
        for (const auto& l : lines) w.value(l);
        w.end_array();
        w.end_object();
        fmt::print("{}\n", w.str());
    } else {
        fmt::print("{} tensors checked on {}: {} failed\n", checked, isa_name(active_isa()), failed);
    }
    for (const auto& l : lines) fmt::print(stderr, "oiw4-check: {}\n", escape_text(l));
    return failed ? kExitDiffers : kExitOk;
}

}  // namespace oiw::check
