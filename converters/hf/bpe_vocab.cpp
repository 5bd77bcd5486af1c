#include "converters/hf/bpe_vocab.h"

#include <cstring>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "converters/vocab/vocab.h"
#include "libformat/error.h"
#include "libformat/io/hash.h"

namespace oiw::hf {
namespace {

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;  // llama_token_type
constexpr uint64_t kMaxVocab = 1u << 24;

// TextModel.does_token_look_special.
bool looks_special(std::string_view t) {
    auto wraps = [&](std::string_view a, std::string_view b) {
        return t.size() >= a.size() + b.size() && t.starts_with(a) && t.ends_with(b);
    };
    return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wraps("<|", "|>") ||
           wraps("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wraps("<unused", ">");
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
    return s;
}

// SpecialVocab's merges: strings as they are; [left, right] pairs joined by a space, spaces inside
// the parts written as U+0120 (chr(ord(' ') + 256)).
std::vector<std::string> read_merges(const Json& model, const std::string& file) {
    std::vector<std::string> out;
    const Json* m = member(model, "merges");
    if (!m || !m->is_array() || m->empty()) return out;
    const bool pairs = (*m)[0].is_array();
    for (const Json& e : *m) {
        if (!pairs && e.is_string()) {
            out.push_back(e.get<std::string>());
        } else if (pairs && e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
            out.push_back(replace_all(e[0].get<std::string>(), " ", "\xc4\xa0") + " " +
                          replace_all(e[1].get<std::string>(), " ", "\xc4\xa0"));
        } else {
            throw FormatError(ErrorKind::BadJson, file, "model.merges",
                              fmt::format("entry {} is not like the first", out.size()));
        }
    }
    return out;
}

}  // namespace

BpeVocab read_bpe_vocab(const Json& tok, std::optional<uint64_t> vocab_size, const std::string& file) {
    const Json* model = member(tok, "model");
    const Json* type = model ? member(*model, "type") : nullptr;
    if (!type || *type != "BPE")
        throw FormatError(ErrorKind::Unsupported, file, "model.type",
                          fmt::format("{} is not a BPE tokenizer", type ? type->dump() : "missing"));
    const Json* vocab = member(*model, "vocab");
    if (!vocab || !vocab->is_object())
        throw FormatError(ErrorKind::BadJson, file, "model.vocab", "missing or not an object");
    std::map<uint64_t, std::string> by_id;  // tokenizer.vocab reversed: the model's, then the added tokens'
    std::map<std::string, bool> added;      // content -> special
    for (const auto& [text, id] : vocab->items()) {
        if (!id.is_number_unsigned())
            throw FormatError(ErrorKind::BadJson, file, "model.vocab '" + text + "'", "id is not an unsigned integer");
        by_id[id.get<uint64_t>()] = text;
    }
    if (const Json* at = member(tok, "added_tokens"); at && at->is_array()) {
        for (const Json& a : *at) {
            const Json *id = member(a, "id"), *content = member(a, "content"), *special = member(a, "special");
            if (!id || !id->is_number_unsigned() || !content || !content->is_string())
                throw FormatError(ErrorKind::BadJson, file, "added_tokens",
                                  "an entry without an unsigned id and a content string");
            by_id[id->get<uint64_t>()] = content->get<std::string>();
            added[content->get<std::string>()] = special && special->is_boolean() && special->get<bool>();
        }
    }
    const uint64_t n = vocab_size.value_or(by_id.size());
    if (n > kMaxVocab) throw FormatError(ErrorKind::TooLarge, file, "", fmt::format("vocabulary of {} tokens", n));
    if (!by_id.empty() && by_id.rbegin()->first >= n)
        throw FormatError(ErrorKind::BadData, file, "",
                          fmt::format("token id {} is not below the vocabulary size {}", by_id.rbegin()->first, n));
    BpeVocab v;
    v.tokens.reserve(n);
    v.types.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
        const auto it = by_id.find(i);
        if (it == by_id.end()) {
            v.tokens.push_back(fmt::format("[PAD{}]", i));
            v.types.push_back(kUnused);
            continue;
        }
        std::string t = it->second;
        int32_t ty = kNormal;
        if (const auto a = added.find(t); a != added.end()) {
            ty = a->second || looks_special(t) ? kControl : kUserDefined;
            if (ty == kUserDefined) t = replace_all(t, "\xe2\x96\x81", " ");
        }
        v.tokens.push_back(std::move(t));
        v.types.push_back(ty);
    }
    v.merges = read_merges(*model, file);
    return v;
}

std::string detect_bpe_pre(const BpeVocab& v, const std::string& file) {
    // get_vocab_base_pre's table, for the pre-tokenizers implemented here.
    static const std::pair<const char*, const char*> kKnown[] = {
        {"3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454", "gpt-2"},  // openai-community/gpt2
        {"0fe1cf6eda062318a1af7270f3331a85c539a01778ff948e24388e949c5282f4", "gpt-2"},  // evilfreelancer/ruGPT3XL
    };
    std::vector<uint8_t> types(v.types.size() * 4);
    std::memcpy(types.data(), v.types.data(), types.size());
    Metadata md({{"tokenizer.ggml.model", GgufValue::make_string("gpt2")},
                 {"tokenizer.ggml.pre", GgufValue::make_string("gpt-2")},
                 {"tokenizer.ggml.tokens", GgufValue::make_string_array(v.tokens)},
                 {"tokenizer.ggml.token_type", GgufValue::make_array(GgufType::I32, std::move(types), v.types.size())},
                 {"tokenizer.ggml.merges", GgufValue::make_string_array(v.merges)}},
                file);
    const std::vector<int32_t> ids = vocab::Vocab::load(md).tokenize(bpe_check_text(), true, true);
    std::string list = "[";
    for (size_t i = 0; i < ids.size(); ++i) list += fmt::format("{}{}", i ? ", " : "", ids[i]);
    list += "]";
    const std::string hash = sha256_hex({reinterpret_cast<const uint8_t*>(list.data()), list.size()});
    for (const auto& [h, name] : kKnown)
        if (hash == h) return name;
    throw FormatError(
        ErrorKind::Unsupported, file, "pre-tokenizer",
        fmt::format("not recognised (chkhsh {}): only the GPT-2 pre-tokenizer is implemented so far", hash));
}

}  // namespace oiw::hf
