#include "tests/support/hf_fixtures.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>
#include <zstd.h>
#include <nlohmann/json.hpp>

#include "converters/hf/checkpoint.h"
#include "tests/support/helpers.h"

namespace oiw::test {

std::vector<uint8_t> safetensors_image(const std::vector<StEntry>& entries,
                                       const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    if (!metadata.empty()) h["__metadata__"] = metadata;
    std::vector<uint8_t> data;
    for (const StEntry& e : entries) {
        h[e.name] = {
            {"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
        data.insert(data.end(), e.bytes.begin(), e.bytes.end());
    }
    std::string text = h.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    return safetensors_raw(text, data);
}

std::vector<ConvertGolden> convert_goldens() {
    std::vector<ConvertGolden> out;
    std::ifstream g(data_path("hf/goldens.txt"));
    std::string line;
    while (std::getline(g, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream f(line);
        ConvertGolden c;
        f >> c.name >> c.outtype >> c.sha >> c.file_name;
        out.push_back(std::move(c));
    }
    return out;
}

hf::ConvertPlan plan_case(const hf::Checkpoint& ck, const std::string& outtype) {
    hf::PlanOptions po;
    po.vocab_only = outtype == "vocab";
    const auto ot = hf::out_type_from_name(po.vocab_only ? "auto" : outtype);
    if (!ot) throw std::invalid_argument("no outtype " + outtype);
    return hf::plan_convert(ck, *ot, po);
}

std::string write_sha(const hf::ConvertPlan& plan, const std::filesystem::path& out, const hf::WriteOptions& opt) {
    hf::write_convert(plan, out.string(), opt);
    return sha256_hex(read_file(out.string()));
}

std::string convert_sha(const std::filesystem::path& dir, const std::string& outtype, const std::filesystem::path& out,
                        const hf::WriteOptions& opt) {
    return write_sha(plan_case(hf::Checkpoint(dir.string()), outtype), out, opt);
}

std::filesystem::path make_hf_case(const std::string& name, const std::filesystem::path& root) {
    namespace fs = std::filesystem;
    const fs::path src = data_path("hf/cases/" + name);
    fs::path dir = root / name;
    std::string out, args = read_text((src / "synth.args").string());
    args.erase(args.find_last_not_of(" \n") + 1);
    EXPECT_EQ(run(tool_path("gguf-synth") + " --hf -q " + args + " " + dir.string(), &out, true), 0) << out;
    if (fs::exists(src / "tokenizer.from")) {  // a vendored tokenizer.json (zstd) and its tokenizer_config.json
        std::string from = read_text((src / "tokenizer.from").string());
        from.erase(from.find_last_not_of(" \n") + 1);
        const auto z = read_file(data_path(from + "/tokenizer.json.zst"));
        std::vector<uint8_t> text(ZSTD_getFrameContentSize(z.data(), z.size()));
        const size_t n = ZSTD_decompress(text.data(), text.size(), z.data(), z.size());
        EXPECT_FALSE(ZSTD_isError(n)) << from;
        text.resize(ZSTD_isError(n) ? 0 : n);
        write_file((dir / "tokenizer.json").string(), text);
        fs::copy_file(data_path(from + "/tokenizer_config.json"), dir / "tokenizer_config.json");
    } else {
        fs::copy_file(data_path("hf/tokenizer.model"), dir / "tokenizer.model");
    }
    for (const auto& e : fs::directory_iterator(src))
        if (e.path().extension() == ".json")
            fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
    return dir;
}

std::filesystem::path make_synth(const std::string& args, const std::filesystem::path& dir) {
    std::string out;
    EXPECT_EQ(run(tool_path("gguf-synth") + " --hf -q " + args + " " + dir.string(), &out, true), 0) << out;
    std::filesystem::copy_file(data_path("hf/tokenizer.model"), dir / "tokenizer.model");
    return dir;
}

std::vector<uint8_t> safetensors_raw(std::string_view header, std::span<const uint8_t> data) {
    std::vector<uint8_t> out(8 + header.size());
    const uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);
    std::memcpy(out.data() + 8, header.data(), header.size());
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

}  // namespace oiw::test
