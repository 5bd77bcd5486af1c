// Test fixtures shared by tests/repack and tests/oiw4: the llama-quantize outputs of the vendored
// mini models (our gguf-requant reproduces them byte for byte), built once per process.
#pragma once
#include <string>
#include <vector>

namespace oiw::test {

// Path of `model`-`preset`.gguf (e.g. "mini-llama", "Q4_K_M") requantized from
// tests/data/models/<model>-f16.gguf, created on first use in a process-wide temp dir.
std::string mini_requant(const std::string& model, const std::string& preset);

// Every vendored GGUF the OIW4 round trip must reproduce: the two f16 mini models and their Q4_0
// and Q4_K_M requants.
std::vector<std::string> vendored_roundtrip_models();

}  // namespace oiw::test
