#include "inspect/profile.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "libformat/error.h"
#include "libformat/io/text_file.h"

namespace oiw::inspect {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

// Next whitespace-separated field of `s` (advanced past it).
std::string_view field(std::string_view& s) {
    s = trim(s);
    size_t n = 0;
    while (n < s.size() && s[n] != ' ' && s[n] != '\t') ++n;
    std::string_view f = s.substr(0, n);
    s.remove_prefix(n);
    return f;
}

}  // namespace

Profile parse_profile(std::string_view text, const std::string& origin) {
    Profile p;
    bool in_types = false;
    size_t line_no = 0;
    auto bad = [&](const std::string& why) -> void {
        throw FormatError(ErrorKind::Usage, origin, fmt::format("line {}", line_no), why);
    };
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        ++line_no;
        line = trim(line);
        if (line.empty() || line.front() == '#') continue;
        if (line == "[types]") {
            if (in_types) bad("second [types] section");
            in_types = true;
            continue;
        }
        if (!in_types) {
            const size_t eq = line.find('=');
            if (eq == std::string_view::npos) bad("expected 'key = value' before [types]");
            const std::string_view key = trim(line.substr(0, eq)), val = trim(line.substr(eq + 1));
            if (key == "profile")
                p.name = val;
            else if (key == "runtime")
                p.runtime = val;
            else if (key == "version")
                p.version = val;
            else if (key == "source")
                p.source = val;
            else if (key == "repack_rows") {
                const std::string v(val);
                char* end = nullptr;
                const unsigned long r = std::strtoul(v.c_str(), &end, 10);
                if (v.empty() || *end || r == 0 || r > 4096) bad("repack_rows must be a positive integer");
                p.repack_rows = static_cast<uint32_t>(r);
            } else {
                bad("unknown key '" + std::string(key) + "' (expected profile, runtime, version, source, repack_rows)");
            }
            continue;
        }
        std::string_view rest = line;
        const std::string_view tname = field(rest), dot = field(rest), repack = field(rest);
        const std::string_view cite = trim(rest);
        auto type = type_from_name(tname);
        if (!type) bad("unknown ggml type '" + std::string(tname) + "'");
        ProfileEntry e;
        e.type = *type;
        if (dot == "yes")
            e.dot = Dot::Simd;
        else if (dot == "no")
            e.dot = Dot::Scalar;
        else if (dot == "unsupported")
            e.dot = Dot::Unsupported;
        else
            bad("simd_dot must be yes, no or unsupported, not '" + std::string(dot) + "'");
        if (repack.empty()) bad("missing repack column ('-' for none)");
        if (repack != "-") e.repack = repack;
        if (cite.empty()) bad("missing citation for " + std::string(tname));
        e.cite = cite;
        auto& slot = p.entries[static_cast<size_t>(*type)];
        if (slot) bad("type " + std::string(tname) + " listed twice");
        slot = std::move(e);
    }
    line_no = 0;
    if (p.name.empty()) bad("missing 'profile = NAME'");
    if (p.version.empty()) bad("missing 'version = ...' (the runtime version the entries describe)");
    if (!in_types) bad("missing [types] section");
    return p;
}

std::string profile_dir() {
    if (const char* d = std::getenv("OIW_PROFILE_DIR"); d && *d) return d;
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return "share/oiw/profiles";  // no /proc: relative to the working directory
    return (exe.parent_path().parent_path() / "share/oiw/profiles").string();
}

Profile load_profile(const std::string& name_or_path) {
    namespace fs = std::filesystem;
    const bool is_path =
        name_or_path.find('/') != std::string::npos || (name_or_path.size() > 8 && name_or_path.ends_with(".profile"));
    const std::string path = is_path ? name_or_path : (fs::path(profile_dir()) / (name_or_path + ".profile")).string();
    if (!is_path && !fs::exists(path)) {
        std::string known;
        for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
        throw FormatError(ErrorKind::Usage, "", "profile '" + name_or_path + "'",
                          "no such profile (known: " + known + ")");
    }
    Profile p = parse_profile(read_text_file(path), path);
    p.path = path;
    return p;
}

std::vector<std::string> profile_names() {
    namespace fs = std::filesystem;
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(profile_dir(), ec))
        if (e.path().extension() == ".profile") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace oiw::inspect
