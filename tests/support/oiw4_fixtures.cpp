#include "tests/support/oiw4_fixtures.h"

#include <filesystem>
#include <map>
#include <mutex>

#include "converters/requant/requant.h"
#include "tests/support/helpers.h"

namespace oiw::test {

std::string mini_requant(const std::string& model, const std::string& preset) {
    static std::mutex mu;
    static std::map<std::string, std::string> made;
    static const std::filesystem::path dir = temp_dir();
    std::lock_guard lock(mu);
    const std::string key = model + "-" + preset;
    if (auto it = made.find(key); it != made.end()) return it->second;
    RequantOptions o;
    o.plan.preset = &find_preset(preset);
    const std::string out = (dir / (key + ".gguf")).string();
    requantize(data_path("models/" + model + "-f16.gguf"), out, o, 2);
    return made[key] = out;
}

std::vector<std::string> vendored_roundtrip_models() {
    std::vector<std::string> v;
    for (const std::string m : {"mini-llama", "mini-moe"}) {
        v.push_back(data_path("models/" + m + "-f16.gguf"));
        v.push_back(mini_requant(m, "Q4_0"));
        v.push_back(mini_requant(m, "Q4_K_M"));
    }
    return v;
}

}  // namespace oiw::test
