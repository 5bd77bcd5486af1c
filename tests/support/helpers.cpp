#include "tests/support/helpers.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "libformat/io/hash.h"
#include "libformat/oiw4/oiw4.h"

namespace oiw::test {
namespace fs = std::filesystem;

std::string shared_path(const std::string& rel) { return (fs::path(OIW_SHARED_DIR) / rel).lexically_normal().string(); }

bool shared_available(const std::string& rel) { return fs::exists(shared_path(rel)); }

std::string data_path(const std::string& rel) {
    return (fs::path(OIW_SOURCE_DIR) / "tests/data" / rel).lexically_normal().string();
}

std::string tool_path(const std::string& name) {
    const std::string path = (fs::path(OIW_BIN_DIR) / name).string();
    const char* wrapper = std::getenv("OIW_TOOL_WRAPPER");
    return wrapper && *wrapper ? std::string(wrapper) + " " + path : path;
}

namespace {
struct TempRoot {
    fs::path root;
    TempRoot() {
        std::string tmpl = (fs::temp_directory_path() / "oiw-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        root = tmpl;
    }
    ~TempRoot() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
};
}  // namespace

fs::path temp_dir() {
    static TempRoot r;
    static int counter = 0;
    fs::path p = r.root / std::to_string(counter++);
    fs::create_directories(p);
    return p;
}

std::vector<std::string> listing(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::map<std::string, FileState> dir_snapshot(const fs::path& dir) {
    std::map<std::string, FileState> s;
    for (const auto& name : listing(dir)) {
        struct stat st {};
        if (::stat((dir / name).c_str(), &st) != 0) throw std::runtime_error("cannot stat " + (dir / name).string());
        s[name] = {static_cast<uint64_t>(st.st_ino), read_file((dir / name).string())};
    }
    return s;
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void write_file(const std::string& path, std::span<const uint8_t> bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("cannot write " + path);
}

std::string sha256_hex(std::span<const uint8_t> bytes) { return oiw::sha256_hex(bytes); }

std::string read_text(const std::string& path) {
    const std::vector<uint8_t> b = read_file(path);
    return {b.begin(), b.end()};
}

pid_t spawn(std::vector<std::string> args, const std::vector<std::string>& env) {
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (char** e = environ; *e; ++e) envp.push_back(*e);
    std::vector<std::string> extra = env;
    for (auto& e : extra) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()), 0);
    return pid;
}

size_t open_into(pid_t pid, const std::filesystem::path& dir) {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
        const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
        if (!ec && target.rfind(dir.string() + "/", 0) == 0) ++n;
    }
    return n;
}

int run(const std::string& cmd, std::string* out, bool merge_stderr) {
    std::string full = cmd + (merge_stderr ? " 2>&1" : "");
    FILE* p = ::popen(full.c_str(), "r");
    if (!p) return -1;
    std::array<char, 4096> buf;
    size_t n;
    std::string o;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) o.append(buf.data(), n);
    int st = ::pclose(p);
    if (out) *out = std::move(o);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::vector<std::string> fixture_files() {
    std::vector<std::string> v;
    for (const std::string& dir : {data_path(""), shared_path("fixtures")}) {
        if (!fs::exists(dir)) continue;
        for (const auto& e : fs::recursive_directory_iterator(dir))
            if (e.is_regular_file() && e.path().extension() == ".gguf") v.push_back(e.path().string());
    }
    std::sort(v.begin(), v.end());
    return v;
}

std::vector<float> read_f32(const GgufFile& f, const std::string& name) {
    const int64_t i = f.find_tensor(name);
    if (i < 0) throw std::runtime_error("missing tensor " + name);
    const auto& info = f.tensors()[static_cast<size_t>(i)];
    if (info.type != GgmlType::F32) throw std::runtime_error(name + " is not F32");
    const auto bytes = f.tensor_data(static_cast<size_t>(i));
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return out;
}

namespace {
Golden load_golden() {
    Golden g{GgufFile::open(data_path("golden/quant-input.gguf")),
             GgufFile::open(data_path("golden/quant-expected.gguf")),
             {},
             {},
             0,
             0};
    g.x = read_f32(g.input, "input");
    g.importance = read_f32(g.input, "importance");
    g.n_per_row = g.input.tensors()[static_cast<size_t>(g.input.find_tensor("input"))].ne[0];
    g.nrows = static_cast<int64_t>(g.x.size()) / g.n_per_row;
    return g;
}
}  // namespace

const Golden& golden() {
    static const Golden g = load_golden();
    return g;
}

void reseal_oiw4(std::vector<uint8_t>& b) {
    uint64_t dir_size;
    std::memcpy(&dir_size, b.data() + 24, 8);
    const uint64_t h = oiw4_header_checksum({b.data(), 56}, {b.data() + 64, static_cast<size_t>(dir_size)});
    std::memcpy(b.data() + 56, &h, 8);
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace oiw::test
