#include "libformat/oiw4/zstd/oiw4_zstd.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <span>

#include <fmt/format.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "libformat/parallel.h"

namespace oiw {

namespace {

constexpr uint32_t kZstdMagic = 0xFD2FB528;  // first 4 bytes of a zstd frame, little-endian
constexpr uint8_t kChecksumFlag = 0x04;      // Frame_Header_Descriptor bit 2 (RFC 8878)

using Emit = std::function<void(std::span<const uint8_t>)>;

std::string plane_subject(const Oiw4Tensor& t, const Oiw4Plane& p) {
    return "tensor '" + t.info.name + "' plane '" + std::string(p.name) + "'";
}

struct CCtxFree {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
    void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

// Compresses planes: one frame per plane with content size and checksum, at one level.
struct Compressor {
    static constexpr bool kCompress = true;
    static constexpr Oiw4Codec kCodec = Oiw4Codec::Zstd;
    using Ctx = std::unique_ptr<ZSTD_CCtx, CCtxFree>;
    int level;
    std::string out_path;

    static Ctx make() {
        Ctx c(ZSTD_createCCtx());
        if (!c) throw std::bad_alloc();
        return c;
    }
    static bool transcodes(const Oiw4Plane& p) { return p.codec == Oiw4Codec::None; }
    static uint64_t bound(const Oiw4Plane& p) { return ZSTD_compressBound(p.size); }
    // Always the same calls whoever runs them (worker or writer): the frame's bytes are fixed.
    void run(Ctx& ctx, std::span<const uint8_t> src, const Oiw4Plane&, const std::string& subject,
             const Emit& emit) const {
        ZSTD_CCtx* c = ctx.get();
        ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
        ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
        ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
        ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
        ZSTD_CCtx_setPledgedSrcSize(c, src.size());
        std::vector<uint8_t> buf(ZSTD_CStreamOutSize());
        ZSTD_inBuffer zin{src.data(), src.size(), 0};
        for (size_t left = 1; left != 0;) {
            ZSTD_outBuffer zout{buf.data(), buf.size(), 0};
            left = ZSTD_compressStream2(c, &zout, &zin, ZSTD_e_end);
            if (ZSTD_isError(left))
                throw FormatError(ErrorKind::Io, out_path, subject, std::string("zstd: ") + ZSTD_getErrorName(left));
            emit({buf.data(), zout.pos});
        }
    }
};

// Decodes planes, checking each frame against the directory before decoding it.
struct Decompressor {
    static constexpr bool kCompress = false;
    static constexpr Oiw4Codec kCodec = Oiw4Codec::None;
    using Ctx = std::unique_ptr<ZSTD_DCtx, DCtxFree>;
    std::string in_path;

    static Ctx make() {
        Ctx c(ZSTD_createDCtx());
        if (!c) throw std::bad_alloc();
        return c;
    }
    static bool transcodes(const Oiw4Plane& p) { return p.codec != Oiw4Codec::None; }
    static uint64_t bound(const Oiw4Plane& p) { return p.decoded_size; }
    void run(Ctx& ctx, std::span<const uint8_t> src, const Oiw4Plane& pl, const std::string& subject,
             const Emit& emit) const {
        const auto bad = [&](ErrorKind k, const std::string& why) {
            throw FormatError(k, in_path, subject, "zstd frame: " + why);
        };
        if (src.size() < 5 || (src[0] | src[1] << 8 | src[2] << 16 | uint32_t{src[3]} << 24) != kZstdMagic)
            bad(ErrorKind::BadData, "no zstd frame magic");
        if ((src[4] & kChecksumFlag) == 0) bad(ErrorKind::BadData, "no content checksum");
        const unsigned long long declared = ZSTD_getFrameContentSize(src.data(), src.size());
        if (declared == ZSTD_CONTENTSIZE_ERROR) bad(ErrorKind::BadData, "damaged frame header");
        if (declared == ZSTD_CONTENTSIZE_UNKNOWN) bad(ErrorKind::BadData, "no content size");
        if (declared != pl.decoded_size)
            bad(ErrorKind::BadData, fmt::format("declares {} bytes, the plane has {}", declared, pl.decoded_size));
        const size_t frame = ZSTD_findFrameCompressedSize(src.data(), src.size());
        if (ZSTD_isError(frame))
            bad(ErrorKind::Truncated, fmt::format("truncated or damaged ({})", ZSTD_getErrorName(frame)));
        if (frame != src.size())
            bad(ErrorKind::BadData, fmt::format("{} trailing bytes after the frame", src.size() - frame));
        ZSTD_DCtx* d = ctx.get();
        ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
        std::vector<uint8_t> buf(ZSTD_DStreamOutSize());
        ZSTD_inBuffer zin{src.data(), src.size(), 0};
        uint64_t decoded = 0;
        for (;;) {
            ZSTD_outBuffer zout{buf.data(), buf.size(), 0};
            const size_t ret = ZSTD_decompressStream(d, &zout, &zin);
            if (ZSTD_isError(ret))
                bad(ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong ? ErrorKind::BadChecksum : ErrorKind::BadData,
                    ZSTD_getErrorName(ret));
            decoded += zout.pos;
            if (decoded > pl.decoded_size)
                bad(ErrorKind::BadData, fmt::format("decodes to more than the plane's {} bytes", pl.decoded_size));
            emit({buf.data(), zout.pos});
            if (ret == 0) break;  // frame complete, content checksum verified
            if (zin.pos == zin.size && zout.pos < zout.size) bad(ErrorKind::Truncated, "truncated");
        }
        if (decoded != pl.decoded_size)
            bad(ErrorKind::BadData, fmt::format("decodes to {} bytes, the plane has {}", decoded, pl.decoded_size));
    }
};

// Admits buffered planes in task order while the bytes they hold stay within a budget (each
// plane's charge is at most the budget, so the oldest waiting one always fits once the writer
// has drained the others). abort() releases every waiter for good.
class Window {
public:
    explicit Window(uint64_t budget) : budget_(budget) {}
    // Waits for task t's turn and room for `bytes`; false once aborted.
    bool acquire(int64_t t, uint64_t bytes) {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return aborted_ || (turn_ == t && held_ + bytes <= budget_); });
        if (aborted_) return false;
        held_ += bytes;
        ++turn_;
        cv_.notify_all();
        return true;
    }
    void release(uint64_t bytes) {
        {
            std::lock_guard lk(mu_);
            held_ -= bytes;
        }
        cv_.notify_all();
    }
    void abort() {
        {
            std::lock_guard lk(mu_);
            aborted_ = true;
        }
        cv_.notify_all();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    const uint64_t budget_;
    uint64_t held_ = 0;
    int64_t turn_ = 0;
    bool aborted_ = false;
};

// One plane of the output, in directory order.
struct Job {
    size_t tensor = 0, plane = 0;
    bool transcode = false;  // else copied as stored
    bool streamed = false;   // transcoded by the writer while writing (larger than the window)
    uint64_t bound = 0;      // output bytes at most (the window charge of a buffered plane)
};

// Writes `in` to `out_path` with the planes `codec` transcodes transcoded: workers fill buffers
// (at most o.window_bytes held), the calling thread writes them in order.
template <typename Codec>
CodecReport transcode(const Oiw4File& in, const std::string& out_path, const CodecOptions& o, const Codec& codec) {
    std::vector<Job> jobs;
    for (size_t i = 0; i < in.tensors().size(); ++i)
        for (size_t p = 0; p < in.tensors()[i].planes.size(); ++p) {
            const auto& pl = in.tensors()[i].planes[p];
            Job j{i, p, Codec::transcodes(pl), false, 0};
            if (j.transcode) j.bound = Codec::bound(pl);
            j.streamed = j.transcode && j.bound > o.window_bytes;
            jobs.push_back(j);
        }
    ThreadPool pool(o.threads ? o.threads : thread_count(0, jobs.size()));
    std::vector<typename Codec::Ctx> ctx;  // one per worker, the last one the writer's
    for (unsigned k = 0; k <= pool.size(); ++k) ctx.push_back(Codec::make());
    std::vector<std::vector<uint8_t>> bufs(jobs.size());
    Window window(o.window_bytes);
    const auto guarded = [&](const auto& f) {
        try {
            f();
        } catch (...) {
            window.abort();
            throw;
        }
    };

    Oiw4Writer w(out_path, {in.path()});
    w.set_metadata(in.gguf_version(), in.metadata(), in.provenance());
    for (const auto& t : in.tensors()) w.add_tensor(t.info, t.encoding);
    CodecReport report;
    uint64_t bytes_in = 0;
    const auto compute = [&](int64_t task, unsigned worker, uint8_t*) -> size_t {
        guarded([&] {
            const Job& j = jobs[static_cast<size_t>(task)];
            const bool buffered = j.transcode && !j.streamed;
            if (!window.acquire(task, buffered ? j.bound : 0) || !buffered) return;
            const auto& t = in.tensors()[j.tensor];
            auto& b = bufs[static_cast<size_t>(task)];
            b.reserve(j.bound);
            codec.run(ctx[worker], in.plane_data(j.tensor, j.plane), t.planes[j.plane],
                      plane_subject(t, t.planes[j.plane]),
                      [&](std::span<const uint8_t> s) { b.insert(b.end(), s.begin(), s.end()); });
        });
        return 0;
    };
    const auto sink = [&](int64_t task, std::span<const uint8_t>) {
        guarded([&] {
            const Job& j = jobs[static_cast<size_t>(task)];
            const auto& t = in.tensors()[j.tensor];
            const auto& pl = t.planes[j.plane];
            const auto src = in.plane_data(j.tensor, j.plane);
            uint64_t written = 0;
            const Emit put = [&](std::span<const uint8_t> s) {
                w.append(s);
                written += s.size();
            };
            w.begin_plane(j.transcode ? Codec::kCodec : pl.codec);
            if (!j.transcode)
                put(src);
            else if (j.streamed)
                codec.run(ctx.back(), src, pl, plane_subject(t, pl), put);
            else {
                auto& b = bufs[static_cast<size_t>(task)];
                put(b);
                std::vector<uint8_t>().swap(b);
                window.release(j.bound);
            }
            w.end_plane();
            auto& r = report[std::string(encoding_name(t.encoding))];
            ++r.planes;
            r.decoded += pl.decoded_size;
            r.stored += Codec::kCompress ? written : src.size();
            bytes_in += src.size();
            if (j.plane + 1 == t.planes.size()) in.release_tensor_pages(j.tensor);
            if (o.progress) o.progress(j.tensor, bytes_in, t.info.name);
        });
    };
    pool.run_ordered(static_cast<int64_t>(jobs.size()), 0, compute, sink);
    w.finish();
    return report;
}

}  // namespace

CodecReport compress_oiw4(const Oiw4File& in, const std::string& out_path, const CodecOptions& o) {
    if (o.level < 1 || o.level > ZSTD_maxCLevel())
        throw FormatError(ErrorKind::Usage, "", "compression",
                          fmt::format("level {} is outside 1..{}", o.level, ZSTD_maxCLevel()));
    return transcode(in, out_path, o, Compressor{o.level, out_path});
}

CodecReport decompress_oiw4(const Oiw4File& in, const std::string& out_path, const CodecOptions& o) {
    return transcode(in, out_path, o, Decompressor{in.path()});
}

std::vector<uint8_t> decode_plane(const Oiw4File& in, size_t i, size_t p) {
    const auto& t = in.tensors().at(i);
    const auto& pl = t.planes.at(p);
    const auto src = in.plane_data(i, p);
    if (!Decompressor::transcodes(pl)) return {src.begin(), src.end()};
    std::vector<uint8_t> out;  // grows as frames decode: a declared size is not trusted for an allocation
    auto ctx = Decompressor::make();
    Decompressor{in.path()}.run(ctx, src, pl, plane_subject(t, pl),
                                [&](std::span<const uint8_t> s) { out.insert(out.end(), s.begin(), s.end()); });
    return out;
}

}  // namespace oiw
