#include "converters/planner/preview.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace oiw {
namespace {

// Removes the file on scope exit (the Model keeps its mapping).
struct Unlink {
    std::string path;
    ~Unlink() { ::unlink(path.c_str()); }
};

}  // namespace

Model plan_preview(const Model& in, const PlanFile& plan, const std::string& imatrix_path) {
    RequantOptions ro = requant_options_for(plan, imatrix_path);
    ro.dry_run = true;
    const RequantJob job = prepare_requant(in, ro);
    std::vector<GgufTensorInfo> infos;
    uint64_t offset = 0;
    for (const TensorPlan& t : job.plan.tensors) {
        GgufTensorInfo ti;
        ti.name = t.name;
        ti.n_dims = static_cast<uint32_t>(t.shape.size());
        for (size_t d = 0; d < t.shape.size(); ++d) ti.ne[d] = t.shape[d];
        ti.type = t.dst_type;
        ti.offset = offset;
        ti.n_bytes = t.dst_bytes;
        offset += align_up(t.dst_bytes, in.alignment());
        infos.push_back(std::move(ti));
    }
    const std::vector<uint8_t> header = serialize_gguf_header(in.version(), job.kvs, infos);
    const uint64_t data_offset = align_up(header.size(), in.alignment());
    if (data_offset + offset != job.file_size)
        throw FormatError(
            ErrorKind::Usage, in.path(), "plan preview",
            fmt::format("planned header gives {} bytes, the requantizer {}", data_offset + offset, job.file_size));
    std::string tmpl = (std::filesystem::temp_directory_path() / "oiw-plan-preview-XXXXXX").string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) throw FormatError(ErrorKind::Io, tmpl, "", std::strerror(errno));
    const Unlink remove{tmpl};
    const bool ok = ::write(fd, header.data(), header.size()) == static_cast<ssize_t>(header.size()) &&
                    ::ftruncate(fd, static_cast<off_t>(job.file_size)) == 0;
    const int err = errno;
    ::close(fd);
    if (!ok) throw FormatError(ErrorKind::Io, tmpl, "", std::strerror(err));
    return open_model(tmpl);
}

}  // namespace oiw
