// --split-max-size / --split-max-tensors / --no-tensor-first-split / --shard for every tool that
// writes GGUF (llama-gguf-split's options; libformat/gguf/split.h does the work).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "libformat/gguf/split.h"

namespace oiw {

struct SplitCli {
    std::optional<std::string> max_size, shard;
    uint64_t max_tensors = 0;
    bool no_tensor_first_split = false;
};

// Parses a --split-max-size value: a positive integer with an optional decimal unit K, M, G or T
// ("4G" = 4e9 bytes, as llama-gguf-split reads M and G). Throws FormatError(Usage) naming `option`.
uint64_t parse_split_size(std::string_view s, const std::string& option = "--split-max-size");
// Parses "K/N" (1 <= K <= N <= kMaxShards). Throws FormatError(Usage).
void parse_shard(std::string_view s, SplitOptions& opt);

// Adds the split options to `app`.
inline void add_split_options(CLI::App& app, SplitCli& c) {
    auto* size = app.add_option("--split-max-size", c.max_size,
                                "write gguf-split shards of at most SIZE tensor bytes each (e.g. 4G, 500M)");
    auto* count =
        app.add_option("--split-max-tensors", c.max_tensors, "write gguf-split shards of at most N tensors each")
            ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
    size->excludes(count);
    app.add_flag("--no-tensor-first-split", c.no_tensor_first_split,
                 "shard 1 holds only the metadata (llama-gguf-split's option)");
    app.add_option("--shard", c.shard,
                   "K/N: write only shard K of the N shards the split makes (one machine per shard)");
}

// The parsed options. Throws FormatError(Usage) for a bad SIZE or K/N, or --shard /
// --no-tensor-first-split without a split (`other_split`: the tool splits by another option).
inline SplitOptions split_options(const SplitCli& c, bool other_split = false) {
    SplitOptions o;
    if (c.max_size) o.max_bytes = parse_split_size(*c.max_size);
    o.max_tensors = c.max_tensors;
    o.no_tensor_first_split = c.no_tensor_first_split;
    if (c.shard) parse_shard(*c.shard, o);
    const char* needs_split = o.no_tensor_first_split   ? "--no-tensor-first-split"
                              : o.shard && !other_split ? "--shard"
                                                        : nullptr;
    if (!o.active() && needs_split)
        throw FormatError(ErrorKind::Usage, "", needs_split, "needs --split-max-size or --split-max-tensors");
    return o;
}

}  // namespace oiw
