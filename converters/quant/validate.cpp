#include "converters/quant/validate.h"

#include <fmt/format.h>

#include "converters/quant/kernels.h"
#include "libformat/error.h"

namespace oiw {

std::string find_invalid_data(GgmlType t, std::span<const uint8_t> bytes) {
    const auto id = static_cast<uint32_t>(t);
    if (!type_id_valid(id))
        throw FormatError(ErrorKind::Unsupported, "", fmt::format("type {}", id), "not a live ggml type");
    return reference_kernels()[id].find_invalid(bytes);
}

void validate_rows(GgmlType t, std::span<const uint8_t> rows, uint64_t row_bytes, int64_t first_row,
                   const std::string& file, const std::string& tensor, const char* what) {
    for (uint64_t off = 0; off < rows.size(); off += row_bytes) {
        const std::string bad = find_invalid_data(t, rows.subspan(off, row_bytes));
        if (!bad.empty())
            throw FormatError(ErrorKind::BadData, file, "tensor '" + tensor + "'",
                              fmt::format("row {}: {} {} data: {}", first_row + static_cast<int64_t>(off / row_bytes),
                                          what, type_name(t), bad));
    }
}

}  // namespace oiw
