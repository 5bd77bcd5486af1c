// llama.cpp's llama-gguf-hash (examples/gguf-hash at 1348f67), reproduced: its output lines, its
// manifest check (-c/--check) and its exit codes. The digests come from inspect/digest.h.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "inspect/digest.h"

namespace oiw::inspect {

// llama-gguf-hash's exit codes (hash_exit_code_t). It never returns kHashExitMismatch: a
// mismatch is kHashExitFailure.
inline constexpr int kHashExitSuccess = 0, kHashExitFailure = 1, kHashExitMismatch = 2, kHashExitMissingEntry = 3,
                     kHashExitUnknownHash = 4, kHashExitManifestFileError = 5;

// A manifest as llama-gguf-hash reads it: lines split on '\n', fields on C-locale white space.
struct HashManifest {
    // The hash types named by the first field of some line.
    bool sha256 = false, sha1 = false, xxh64 = false, uuid = false;
    // (type, name) -> hash, from the first line of at least three fields with that type and name.
    std::map<std::pair<std::string, std::string>, std::string> entries;
    bool any_known() const { return sha256 || sha1 || xxh64 || uuid; }
};
// Parses manifest text (any bytes; never fails).
HashManifest parse_hash_manifest(std::string_view text);

// The selection llama-gguf-hash runs for the flags in `sel`: with a manifest and no hash flag, the
// strongest type the manifest has (sha256, sha1, xxh64, uuid); then xxh64 when nothing is selected.
GgufHashSelection effective_selection(GgufHashSelection sel, const HashManifest* manifest);

// The line "manifest  PATH  sha256  sha1  xxh64  uuid" (the types it has) and its newline.
std::string manifest_header(const std::string& manifest_path, const HashManifest& m);

struct GgufHashReport {
    std::string text;  // stdout after the manifest header
    int exit_code = kHashExitSuccess;
};
// llama-gguf-hash's output for the model named `fname` (as given on the command line): per tensor
// (unless --no-layer) "TYPE  HASH  FNAME:TENSOR" for xxh64, sha1, sha256, then the whole-model lines
// "TYPE  HASH  FNAME" for xxh64, sha1, sha256, uuid. With a manifest each line ends "  -  Ok" /
// "Mismatch" / "Not Found" (uuid is looked up as a sha256 entry, as llama-gguf-hash does), a
// "Verification results" line follows and exit_code follows its rules.
GgufHashReport render_gguf_hash(const std::string& fname, const TensorBytes& src, const GgufHashes& h,
                                const GgufHashSelection& sel, const HashManifest* manifest,
                                const std::string& manifest_path);

}  // namespace oiw::inspect
