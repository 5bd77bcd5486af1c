// Repack kernels: Q4_K -> block_q4_Kx8 equals ggml's bytes (golden SHA-256, both interleaves) and
// inverts exactly; Q4_0 <-> oiw4 planes; the oiw4 quantizer against quantize_chunk(Q4_0).
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "converters/quant/quants.h"
#include "converters/repack/repack.h"
#include "libformat/fp16.h"
#include "libformat/model.h"
#include "tests/support/helpers.h"
#include "tests/support/oiw4_fixtures.h"

namespace oiw {
namespace {

using test::data_path;

nlohmann::json load_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

std::vector<uint8_t> repack_tensor(const Model& f, size_t i, int il) {
    const auto& t = f.tensors()[i];
    const int64_t nb = t.ne[0] / 256;
    std::vector<uint8_t> out(t.n_bytes);
    repack_q4_k_to_q4_kx8(reinterpret_cast<const block_q4_K*>(f.tensor_data(i).data()),
                          reinterpret_cast<block_q4_Kx8*>(out.data()), t.n_rows(), nb, il);
    return out;
}

// Checks every entry "<model file>/il<N>" of `golden` whose model `path_of` resolves, and that the
// golden names exactly the Q4_K tensors with a row count divisible by 8. Returns tensors checked.
size_t check_golden(const nlohmann::json& golden, const std::function<std::string(const std::string&)>& path_of) {
    size_t checked = 0;
    for (const auto& [key, tensors] : golden.items()) {
        const auto slash = key.rfind('/');
        const std::string model = key.substr(0, slash);
        const int il = std::stoi(key.substr(slash + 3));
        const Model f = open_model(path_of(model));
        std::set<std::string> expected_names, got_names;
        for (const auto& [name, sha] : tensors.items()) expected_names.insert(name);
        for (size_t i = 0; i < f.tensors().size(); ++i) {
            const auto& t = f.tensors()[i];
            if (t.type != GgmlType::Q4_K || t.n_rows() % 8 != 0) continue;
            got_names.insert(t.name);
            if (!tensors.contains(t.name)) {
                ADD_FAILURE() << key << ": no golden for " << t.name;
                continue;
            }
            const auto packed = repack_tensor(f, i, il);
            EXPECT_EQ(test::sha256_hex(packed), tensors.at(t.name).get<std::string>()) << key << " " << t.name;
            // Exact inverse.
            std::vector<uint8_t> back(t.n_bytes);
            unpack_q4_kx8_to_q4_k(reinterpret_cast<const block_q4_Kx8*>(packed.data()),
                                  reinterpret_cast<block_q4_K*>(back.data()), t.n_rows(), t.ne[0] / 256, il);
            EXPECT_TRUE(std::equal(back.begin(), back.end(), f.tensor_data(i).begin())) << key << " " << t.name;
            ++checked;
        }
        EXPECT_EQ(got_names, expected_names) << key;
    }
    return checked;
}

TEST(Repack, Q4Kx8MatchesGgmlOnVendoredMiniModels) {
    const auto golden = load_json(data_path("golden/q4kx8-mini.json"));
    ASSERT_EQ(golden.size(), 6u);
    const size_t n = check_golden(golden, [](const std::string& model) {
        // "mini-llama-Q4_K_M.gguf" -> requant of mini-llama-f16.gguf with preset Q4_K_M.
        const std::string stem = model.substr(0, model.size() - 5);
        const auto dash = stem.find("-Q");
        return test::mini_requant(stem.substr(0, dash), stem.substr(dash + 1));
    });
    EXPECT_EQ(n, 2u * (12 + 11 + 13));
}

TEST(Repack, Q4Kx8MatchesGgmlOnTinyLlama) {
    OIW_NEED_SHARED("golden/q4kx8.json");
    OIW_NEED_SHARED("fixtures/tiny-llama-Q4_K_M.gguf");
    const auto golden = load_json(test::shared_path("golden/q4kx8.json"));
    const size_t n =
        check_golden(golden, [](const std::string& model) { return test::shared_path("fixtures/" + model); });
    EXPECT_EQ(n, 2u * 25);
}

// Eight Q4_K blocks with distinct bytes everywhere, for hand-checked layouts.
std::vector<block_q4_K> patterned_blocks() {
    std::vector<block_q4_K> b(8);
    for (int r = 0; r < 8; ++r) {
        auto* p = reinterpret_cast<uint8_t*>(&b[r]);
        for (size_t k = 0; k < sizeof(block_q4_K); ++k) p[k] = static_cast<uint8_t>(r * 37 + k * 11 + 5);
    }
    return b;
}

TEST(Repack, Q4Kx8LayoutByHand) {
    const auto in = patterned_blocks();
    for (int il : {8, 4}) {
        block_q4_Kx8 out;
        repack_q4_k_to_q4_kx8(in.data(), &out, 8, 1, il);
        for (int r = 0; r < 8; ++r) {
            EXPECT_EQ(out.d[r], in[r].d);
            EXPECT_EQ(out.dmin[r], in[r].dmin);
        }
        // Chunk i of il bytes comes from row i % 8 at byte (i / 8) * il.
        EXPECT_EQ(0, std::memcmp(out.qs + il, in[1].qs, il)) << il;
        EXPECT_EQ(0, std::memcmp(out.qs + 8 * il, in[0].qs + il, il)) << il;
        EXPECT_EQ(0, std::memcmp(out.qs + 1024 - il, in[7].qs + 128 - il, il)) << il;
        // scales[12k..]: sub-block k's (scale, min) of row r sit where Q4_K keeps sub-block r's.
        for (int k : {0, 5})
            for (int r : {2, 6}) {
                const uint8_t* q = in[r].scales;
                const uint8_t* o = out.scales + 12 * k;
                const int sc = k < 4 ? q[k] & 63 : (q[k + 4] & 0xF) | ((q[k - 4] >> 6) << 4);
                const int m = k < 4 ? q[k + 4] & 63 : (q[k + 4] >> 4) | ((q[k] >> 6) << 4);
                const int osc = r < 4 ? o[r] & 63 : (o[r + 4] & 0xF) | ((o[r - 4] >> 6) << 4);
                const int om = r < 4 ? o[r + 4] & 63 : (o[r + 4] >> 4) | ((o[r] >> 6) << 4);
                EXPECT_EQ(sc, osc) << k << " " << r;
                EXPECT_EQ(m, om) << k << " " << r;
            }
    }
}

// ggml's quantizer golden (vendored): the input rows and Q4_0 of them.
struct QuantGolden {
    GgufFile input = GgufFile::open(data_path("golden/quant-input.gguf"));
    GgufFile expected = GgufFile::open(data_path("golden/quant-expected.gguf"));
    std::vector<float> x = test::read_f32(input, "input");
    std::span<const uint8_t> q4_0 = expected.tensor_data(static_cast<size_t>(expected.find_tensor("q4_0.plain")));
};
const QuantGolden& quant_golden() {
    static const QuantGolden g;
    return g;
}

TEST(Repack, Q4_0ToOiw4AndBack) {
    const auto q = quant_golden().q4_0;
    const int64_t n = static_cast<int64_t>(q.size() / sizeof(block_q4_0));
    const auto* blocks = reinterpret_cast<const block_q4_0*>(q.data());
    std::vector<uint8_t> qs(static_cast<size_t>(n * 16));
    std::vector<float> d(static_cast<size_t>(n));
    q4_0_to_oiw4(blocks, qs.data(), d.data(), n);
    EXPECT_EQ(0, std::memcmp(qs.data() + 16 * 3, blocks[3].qs, 16));
    EXPECT_EQ(d[3], fp16_to_fp32(blocks[3].d));
    std::vector<block_q4_0> back(static_cast<size_t>(n));
    EXPECT_EQ(oiw4_to_q4_0(qs.data(), d.data(), back.data(), n), 0.0f);
    EXPECT_EQ(0, std::memcmp(back.data(), q.data(), q.size()));
    // A scale fp16 cannot hold is reported with its error.
    d[5] = 0.1f;
    EXPECT_FLOAT_EQ(oiw4_to_q4_0(qs.data(), d.data(), back.data(), n),
                    std::fabs(0.1f - fp16_to_fp32(fp32_to_fp16(0.1f))));
    EXPECT_GT(oiw4_to_q4_0(qs.data(), d.data(), back.data(), n), 0.0f);
}

TEST(Repack, QuantizeOiw4IsQ4_0RoundingWithFp32Scale) {
    const auto& g = quant_golden();
    const int64_t nblocks = static_cast<int64_t>(g.x.size() / 32);
    std::vector<uint8_t> qs(static_cast<size_t>(nblocks * 16));
    std::vector<float> d(static_cast<size_t>(nblocks));
    quantize_oiw4(g.x.data(), qs.data(), d.data(), nblocks);
    const auto* ref = reinterpret_cast<const block_q4_0*>(g.q4_0.data());
    int inexact = 0;
    for (int64_t i = 0; i < nblocks; ++i) {
        ASSERT_EQ(0, std::memcmp(qs.data() + 16 * i, ref[i].qs, 16)) << "block " << i;
        ASSERT_EQ(fp32_to_fp16(d[i]), ref[i].d) << "block " << i;
        inexact += fp16_to_fp32(ref[i].d) != d[i];
    }
    EXPECT_GT(inexact, nblocks / 2);  // the fp32 scale really is kept
}

}  // namespace
}  // namespace oiw
