// Uses each installed library: a digest and a JSON line (oiw::format), a quantized row
// (oiw::converters) and a digest algorithm's name (oiw::inspect). run.sh checks the printed lines
// (the Q8_0 digest was cross-checked with a Python transcription of ggml's quantize_row_q8_0_ref).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "converters/quant/quants.h"
#include "inspect/digest.h"
#include "libformat/io/hash.h"
#include "libformat/json.h"
#include "libformat/types.h"
#include "oiw_version.h"

int main() {
    const std::string abc = "abc";
    std::printf("oiw %s\n", OIW_VERSION);
    std::printf("sha256(abc) %s\n",
                oiw::sha256_hex({reinterpret_cast<const uint8_t*>(abc.data()), abc.size()}).c_str());
    std::vector<float> x(32);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) / 8 - 2;
    std::vector<uint8_t> q(oiw::row_size(oiw::GgmlType::Q8_0, 32));
    oiw::quantize_chunk(oiw::GgmlType::Q8_0, x.data(), q.data(), 1, 32, nullptr);
    std::printf("Q8_0 %zu bytes sha256 %s\n", q.size(), oiw::sha256_hex(q).c_str());
    oiw::json::Writer w(0);
    w.begin_object();
    w.key("type");
    w.value(std::string(oiw::type_name(oiw::GgmlType::Q8_0)));
    w.field("digest", oiw::inspect::hash_name(oiw::inspect::HashAlgo::Sha256));
    w.end_object();
    std::printf("%s\n", w.str().c_str());
    return 0;
}
