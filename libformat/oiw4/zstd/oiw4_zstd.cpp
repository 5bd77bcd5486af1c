#include "libformat/oiw4/zstd/oiw4_zstd.h"

#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <zstd.h>

namespace oiw {

namespace {

std::string plane_subject(const Oiw4Tensor& t, const Oiw4Plane& p) { return "tensor '" + t.info.name + "' plane '" + std::string(p.name) + "'"; }

struct CCtxFree { void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); } };
struct DCtxFree { void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); } };

// Opens `out` with `in`'s metadata and tensors; `plane(i, p, w)` writes plane p of tensor i.
template <typename F>
CodecReport transcode(const Oiw4File& in, const std::string& out, F&& plane) {
    Oiw4Writer w(out, {in.path()});
    w.set_metadata(in.gguf_version(), in.metadata(), in.provenance());
    for (const auto& t : in.tensors()) w.add_tensor(t.info, t.encoding);
    CodecReport report;
    for (size_t i = 0; i < in.tensors().size(); ++i) {
        const auto& t = in.tensors()[i];
        for (size_t p = 0; p < t.planes.size(); ++p) {
            const uint64_t stored = plane(i, p, w);
            auto& r = report[std::string(encoding_name(t.encoding))];
            r.decoded += t.planes[p].decoded_size;
            r.stored += stored;
        }
        in.release_tensor_pages(i);
    }
    w.finish();
    return report;
}

}  // namespace

CodecReport compress_oiw4(const Oiw4File& in, const std::string& out_path, int level, unsigned threads) {
    if (level < 1 || level > ZSTD_maxCLevel())
        throw FormatError(ErrorKind::Usage, "", "--compress", fmt::format("level {} is outside 1..{}", level, ZSTD_maxCLevel()));
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx(ZSTD_createCCtx());
    std::vector<uint8_t> buf(ZSTD_CStreamOutSize());
    return transcode(in, out_path, [&](size_t i, size_t p, Oiw4Writer& w) -> uint64_t {
        const auto& pl = in.tensors()[i].planes[p];
        const auto src = in.plane_data(i, p);
        if (pl.codec != Oiw4Codec::None) {  // already a frame: keep it
            w.write_plane(src, pl.codec);
            return src.size();
        }
        ZSTD_CCtx_reset(cctx.get(), ZSTD_reset_session_and_parameters);
        ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
        ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
        ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1);
        ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_nbWorkers, static_cast<int>(threads));  // ignored by a single-threaded libzstd
        ZSTD_CCtx_setPledgedSrcSize(cctx.get(), src.size());
        ZSTD_inBuffer zin{src.data(), src.size(), 0};
        uint64_t stored = 0;
        w.begin_plane(Oiw4Codec::Zstd);
        for (size_t left = 1; left != 0;) {
            ZSTD_outBuffer zout{buf.data(), buf.size(), 0};
            left = ZSTD_compressStream2(cctx.get(), &zout, &zin, ZSTD_e_end);
            if (ZSTD_isError(left))
                throw FormatError(ErrorKind::Io, out_path, plane_subject(in.tensors()[i], pl), std::string("zstd: ") + ZSTD_getErrorName(left));
            w.append({buf.data(), zout.pos});
            stored += zout.pos;
        }
        w.end_plane();
        return stored;
    });
}

CodecReport decompress_oiw4(const Oiw4File& in, const std::string& out_path) {
    std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx(ZSTD_createDCtx());
    std::vector<uint8_t> buf(ZSTD_DStreamOutSize());
    return transcode(in, out_path, [&](size_t i, size_t p, Oiw4Writer& w) -> uint64_t {
        const auto& t = in.tensors()[i];
        const auto& pl = t.planes[p];
        const auto src = in.plane_data(i, p);
        w.begin_plane();
        if (pl.codec == Oiw4Codec::None) {
            w.append(src);
            w.end_plane();
            return src.size();
        }
        const auto bad = [&](const std::string& why) { throw FormatError(ErrorKind::BadChecksum, in.path(), plane_subject(t, pl), "zstd frame: " + why); };
        ZSTD_DCtx_reset(dctx.get(), ZSTD_reset_session_and_parameters);
        ZSTD_inBuffer zin{src.data(), src.size(), 0};
        uint64_t decoded = 0;
        for (;;) {
            ZSTD_outBuffer zout{buf.data(), buf.size(), 0};
            const size_t ret = ZSTD_decompressStream(dctx.get(), &zout, &zin);
            if (ZSTD_isError(ret)) bad(ZSTD_getErrorName(ret));
            decoded += zout.pos;
            if (decoded > pl.decoded_size) bad(fmt::format("decodes to more than the plane's {} bytes", pl.decoded_size));
            w.append({buf.data(), zout.pos});
            if (ret == 0) break;  // frame complete, content checksum verified
            if (zin.pos == zin.size && zout.pos < zout.size) bad("truncated");
        }
        if (zin.pos != zin.size) bad("trailing bytes after the frame");
        if (decoded != pl.decoded_size) bad(fmt::format("decodes to {} bytes, the plane has {}", decoded, pl.decoded_size));
        w.end_plane();
        return src.size();
    });
}

}  // namespace oiw
