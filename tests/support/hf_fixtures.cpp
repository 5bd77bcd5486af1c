#include "tests/support/hf_fixtures.h"

#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

std::filesystem::path make_hf_case(const std::string& name, const std::filesystem::path& root) {
    namespace fs = std::filesystem;
    const fs::path src = data_path("hf/cases/" + name);
    fs::path dir = root / name;
    std::string out, args = read_text((src / "synth.args").string());
    args.erase(args.find_last_not_of(" \n") + 1);
    EXPECT_EQ(run(tool_path("gguf-synth") + " --hf -q " + args + " " + dir.string(), &out, true), 0) << out;
    fs::copy_file(data_path("hf/tokenizer.model"), dir / "tokenizer.model");
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
