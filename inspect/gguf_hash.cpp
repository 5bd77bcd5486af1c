#include "inspect/gguf_hash.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace oiw::inspect {

namespace {

// White space as std::istream's operator>> sees it in the classic locale.
bool is_c_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// Up to `max` white-space separated fields of `line`.
std::vector<std::string_view> fields(std::string_view line, size_t max) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (out.size() < max) {
        while (i < line.size() && is_c_space(line[i])) ++i;
        if (i == line.size()) break;
        const size_t start = i;
        while (i < line.size() && !is_c_space(line[i])) ++i;
        out.push_back(line.substr(start, i - start));
    }
    return out;
}

enum Result { kNotFound, kMismatch, kOk };
constexpr const char* kResultText[] = {"Not Found", "Mismatch", "Ok"};

const char* exit_text(int code) {
    switch (code) {
        case kHashExitSuccess: return "Success";
        case kHashExitFailure: return "Failure";
        case kHashExitMismatch: return "Mismatch";
        case kHashExitMissingEntry: return "Manifest Missing Entry";
        case kHashExitUnknownHash: return "Manifest Unknown Hash";
        case kHashExitManifestFileError: return "Manifest File Error";
    }
    return "?";
}

// Collects the output lines and the check's findings, per tensor and for the whole model.
class Printer {
public:
    Printer(const HashManifest* m) : m_(m) {}
    void line(const char* type, const std::string& hash, const std::string& name, bool model,
              const char* lookup_type = nullptr) {
        out_ += fmt::format("{:<8}  {}  {}", type, hash, name);
        if (m_) {
            const auto it = m_->entries.find({lookup_type ? lookup_type : type, name});
            const Result r = it == m_->entries.end() ? kNotFound : it->second == hash ? kOk : kMismatch;
            if (r != kNotFound) (model ? model_in_ : layer_in_) = true;
            if (r == kMismatch) (model ? model_bad_ : layer_bad_) = true;
            out_ += fmt::format("  -  {}", kResultText[r]);
        }
        out_ += '\n';
    }
    // llama-gguf-hash's verdict in check mode.
    int exit_code() const {
        if (!m_) return kHashExitSuccess;
        if (!model_in_) {
            if (!layer_in_) return kHashExitMissingEntry;
            return layer_bad_ ? kHashExitFailure : kHashExitSuccess;
        }
        return layer_bad_ || model_bad_ ? kHashExitFailure : kHashExitSuccess;
    }
    std::string& text() { return out_; }

private:
    const HashManifest* m_;
    std::string out_;
    bool layer_in_ = false, model_in_ = false, layer_bad_ = false, model_bad_ = false;
};

}  // namespace

HashManifest parse_hash_manifest(std::string_view text) {
    HashManifest m;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t nl = text.find('\n', pos);
        const std::string_view line =
            text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        const auto f = fields(line, 3);
        if (f.empty()) continue;
        if (f[0] == "sha256")
            m.sha256 = true;
        else if (f[0] == "sha1")
            m.sha1 = true;
        else if (f[0] == "xxh64")
            m.xxh64 = true;
        else if (f[0] == "uuid")
            m.uuid = true;
        if (f.size() == 3) m.entries.emplace(std::pair{std::string(f[0]), std::string(f[2])}, std::string(f[1]));
    }
    return m;
}

GgufHashSelection effective_selection(GgufHashSelection sel, const HashManifest* m) {
    const auto none = [&] { return !sel.xxh64 && !sel.sha1 && !sel.sha256 && !sel.uuid; };
    if (m && none()) {
        if (m->sha256)
            sel.sha256 = true;
        else if (m->sha1)
            sel.sha1 = true;
        else if (m->xxh64)
            sel.xxh64 = true;
        else if (m->uuid)
            sel.uuid = true;
    }
    if (none()) sel.xxh64 = true;
    return sel;
}

std::string manifest_header(const std::string& manifest_path, const HashManifest& m) {
    std::string s = "manifest  " + manifest_path;
    if (m.sha256) s += "  sha256";
    if (m.sha1) s += "  sha1";
    if (m.xxh64) s += "  xxh64";
    if (m.uuid) s += "  uuid";
    return s + "\n";
}

GgufHashReport render_gguf_hash(const std::string& fname, const TensorBytes& src, const GgufHashes& h,
                                const GgufHashSelection& sel, const HashManifest* manifest,
                                const std::string& manifest_path) {
    Printer p(manifest);
    if (sel.per_tensor) {
        for (size_t i = 0; i < src.names.size(); ++i) {
            // llama-gguf-hash prints the name as a C string: it ends at a NUL byte.
            const std::string name = fname + ":" + src.names[i].c_str();
            if (sel.xxh64) p.line("xxh64", h.tensors[i][0], name, false);
            if (sel.sha1) p.line("sha1", h.tensors[i][1], name, false);
            if (sel.sha256) p.line("sha256", h.tensors[i][2], name, false);
        }
    }
    if (sel.xxh64) p.line("xxh64", h.xxh64, fname, true);
    if (sel.sha1) p.line("sha1", h.sha1, fname, true);
    if (sel.sha256) p.line("sha256", h.sha256, fname, true);
    if (sel.uuid) p.line("uuid", h.uuid, fname, true, "sha256");
    GgufHashReport r{std::move(p.text()), p.exit_code()};
    if (manifest) r.text += fmt::format("\nVerification results for {} - {}\n", manifest_path, exit_text(r.exit_code));
    return r;
}

}  // namespace oiw::inspect
