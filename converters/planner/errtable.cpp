#include "converters/planner/errtable.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "libformat/escape.h"
#include "libformat/io/hash.h"
#include "libformat/io/text_file.h"

namespace oiw {

std::string errtable_key(const Model& in, const std::vector<GgmlType>& types, const std::string& imatrix_path,
                         const std::vector<GgmlType>& excluded) {
    std::string s = fmt::format("size {} sample {}\n", std::filesystem::file_size(in.path()), kPlanSampleRows);
    for (const auto& t : in.tensors())
        s += fmt::format("{} {} {} {}\n", t.name, static_cast<int>(t.type), t.offset, t.n_bytes);
    std::ifstream f(in.path(), std::ios::binary);
    std::string header(in.data_offset(), '\0');
    f.read(header.data(), static_cast<std::streamsize>(header.size()));
    s += header;
    for (GgmlType t : types) s += fmt::format("type {}\n", static_cast<int>(t));
    for (GgmlType t : excluded) s += fmt::format("excluded {}\n", static_cast<int>(t));
    if (!imatrix_path.empty()) {  // unreadable: a key no written cache has; measure_plan then reports the error
        s += "imatrix " + imatrix_path + "\n";
        std::ifstream m(imatrix_path, std::ios::binary);
        s.append(std::istreambuf_iterator<char>(m), std::istreambuf_iterator<char>());
    }
    return xxh3_hex({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

std::string format_errtable(const PlanTable& t, const std::string& key) {
    std::string s =
        fmt::format("oiw-errtable 2 {}\n{} {} {} {} {} {} {}\n", key, t.alignment, t.fixed_file_bytes,
                    t.fixed_tensor_bytes, t.fixed_traffic, t.n_elements, t.has_imatrix ? 1 : 0, t.tensors.size());
    for (const auto& c : t.tensors) {
        s += fmt::format("{} {} {} {}\n", c.input_index, c.layer, c.types.size(), escape_text(c.name));
        for (size_t k = 0; k < c.types.size(); ++k) {
            char err[64];
            std::snprintf(err, sizeof err, "%a", c.err[k]);
            s += fmt::format("{} {} {} {}\n", static_cast<int>(c.types[k]), c.bytes[k], c.traffic[k], err);
        }
    }
    return s;
}

std::optional<PlanTable> parse_errtable(const std::string& text, const std::string& key) {
    std::istringstream f(text);
    std::string magic, version, k;
    if (!(f >> magic >> version >> k) || magic != "oiw-errtable" || version != "2" || k != key) return std::nullopt;
    PlanTable t;
    int imat = 0;
    size_t n = 0;
    if (!(f >> t.alignment >> t.fixed_file_bytes >> t.fixed_tensor_bytes >> t.fixed_traffic >> t.n_elements >> imat >>
          n))
        return std::nullopt;
    t.has_imatrix = imat != 0;
    for (size_t i = 0; i < n; ++i) {
        PlanCandidate c;
        size_t m = 0;
        if (!(f >> c.input_index >> c.layer >> m) || m == 0 || m > kGgmlTypeCount) return std::nullopt;
        f.get();
        std::string escaped;
        if (!std::getline(f, escaped)) return std::nullopt;
        auto name = unescape_text(escaped);
        if (!name) return std::nullopt;
        c.name = std::move(*name);
        for (size_t j = 0; j < m; ++j) {
            int type = 0;
            uint64_t bytes = 0, traffic = 0;
            std::string err;
            if (!(f >> type >> bytes >> traffic >> err) || !type_traits(static_cast<uint32_t>(type)))
                return std::nullopt;
            c.types.push_back(static_cast<GgmlType>(type));
            c.bytes.push_back(bytes);
            c.traffic.push_back(traffic);
            c.err.push_back(std::strtod(err.c_str(), nullptr));
        }
        t.tensors.push_back(std::move(c));
    }
    std::string rest;
    if (f >> rest) return std::nullopt;
    return t;
}

std::optional<std::string> read_errtable_sidecar(const std::string& path) {
    const auto refuse = [&](const std::string& what) -> std::optional<std::string> {
        throw FormatError(ErrorKind::Usage, path, "",
                          what +
                              "; the error-table sidecar must be a regular file gguf-plan wrote (remove it, or pass "
                              "--no-cache or --cache FILE)");
    };
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return std::nullopt;
        if (errno == ELOOP) return refuse("is a symbolic link, not followed");
        throw FormatError(ErrorKind::Io, path, "", std::string("cannot open: ") + std::strerror(errno));
    }
    std::string text;
    struct stat st {};
    bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    char buf[1 << 16];
    for (ssize_t n; regular && (n = ::read(fd, buf, sizeof buf)) != 0;) {
        if (n < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            throw FormatError(ErrorKind::Io, path, "", std::string("cannot read: ") + std::strerror(e));
        }
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > kMaxTextFileBytes) break;
    }
    ::close(fd);
    if (!regular) return refuse("is not a regular file");
    if (text.rfind("oiw-errtable ", 0) != 0) return refuse("is not an error table gguf-plan wrote, not replaced");
    return text;
}

}  // namespace oiw
