#include "converters/vocab/vocab.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <initializer_list>
#include <queue>

#include <fmt/format.h>

#include "converters/vocab/unicode.h"
#include "libformat/error.h"

namespace oiw::vocab {

namespace {

const std::string kTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kBosKey = "tokenizer.ggml.bos_token_id";
constexpr std::string_view kSpmSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's space

// Pre-tokenizer names (tokenizer.ggml.pre) llama.cpp maps to the regexes implemented here
// (llama-vocab.cpp's pre_type choice), with its other per-name settings: ignore_merges (a word that
// is a token is that token: Llama 3's names, tekken, Youtu), BOS added by default (Llama 3's names,
// tekken, Chameleon), no default BOS id (GLM-4's: only tokenizer.ggml.bos_token_id gives one),
// spaces escaped as U+2581 before the split (Gemma 4's, Sarvam-MoE's escape_whitespaces), BOS added
// whatever tokenizer.ggml.add_bos_token says and a word of newlines that is a token taken whole
// (Gemma 4's).
enum PreFlags : uint8_t {
    kIgnoreMerges = 1,
    kAddBos = 2,
    kNoDefaultBos = 4,
    kSpmSpaces = 8,
    kForceBos = 16,
    kNewlineTokens = 32,
    kLlama3Flags = kIgnoreMerges | kAddBos
};
struct PreName {
    std::string_view name;
    PreTokenizer pre;
    uint8_t flags = 0;
};
constexpr PreName kPreNames[] = {
    {"gpt-2", PreTokenizer::Gpt2},
    {"phi-2", PreTokenizer::Gpt2},
    {"mpt", PreTokenizer::Gpt2},
    {"olmo", PreTokenizer::Gpt2},
    {"jais", PreTokenizer::Gpt2},
    {"gigachat", PreTokenizer::Gpt2},
    {"a.x-4.0", PreTokenizer::Gpt2},
    {"mellum", PreTokenizer::Gpt2},
    {"exaone4", PreTokenizer::Gpt2},
    {"jina-es", PreTokenizer::Gpt2},
    {"jina-de", PreTokenizer::Gpt2},
    {"jina-v2-es", PreTokenizer::Gpt2},
    {"jina-v2-de", PreTokenizer::Gpt2},
    {"jina-v2-code", PreTokenizer::Gpt2},
    {"jina-v1-en", PreTokenizer::Gpt2},   // and add_sep, which llama.cpp's BPE tokenization does not read
    {"roberta-bpe", PreTokenizer::Gpt2},  // likewise
    {"modern-bert", PreTokenizer::Gpt2},
    {"trillion", PreTokenizer::Gpt2},
    {"granite-docling", PreTokenizer::Gpt2},
    {"llama3", PreTokenizer::Llama3, kLlama3Flags},
    {"llama-v3", PreTokenizer::Llama3, kLlama3Flags},
    {"llama-bpe", PreTokenizer::Llama3, kLlama3Flags},
    {"falcon3", PreTokenizer::Llama3, kLlama3Flags},
    {"falcon-h1", PreTokenizer::Llama3, kLlama3Flags},
    {"pixtral", PreTokenizer::Llama3, kLlama3Flags},
    {"midm-2.0", PreTokenizer::Llama3, kLlama3Flags},
    {"lfm2", PreTokenizer::Llama3, kLlama3Flags},
    {"jina-v5-nano", PreTokenizer::Llama3, kLlama3Flags},
    {"dbrx", PreTokenizer::Llama3},  // Llama 3's expression, merges applied to every word, no BOS by default
    {"smaug-bpe", PreTokenizer::Llama3},
    {"glm4", PreTokenizer::Llama3, kNoDefaultBos},
    {"chatglm-bpe", PreTokenizer::Llama3, kNoDefaultBos},
    {"jais-2", PreTokenizer::Jais2},
    {"qwen2", PreTokenizer::Qwen2},
    {"deepseek-r1-qwen", PreTokenizer::Qwen2},
    {"kormo", PreTokenizer::Qwen2},
    {"f2llmv2", PreTokenizer::Qwen2},
    {"megrez", PreTokenizer::Qwen2},
    {"stablelm2", PreTokenizer::Qwen2},
    {"hunyuan", PreTokenizer::Qwen2},
    {"solar-open", PreTokenizer::Qwen2},
    {"grok-2", PreTokenizer::Qwen2},
    // Ling's regex, as llama.cpp runs it: Qwen2's but for \s*[\r\n] (which ends where \s*[\r\n]+ does)
    {"bailingmoe", PreTokenizer::Qwen2},
    {"bailingmoe2", PreTokenizer::Qwen2},
    {"llada-moe", PreTokenizer::Qwen2},
    {"qwen35", PreTokenizer::Qwen35},
    {"seed-coder", PreTokenizer::SeedCoder},
    {"exaone-moe", PreTokenizer::ExaoneMoe},
    {"bloom", PreTokenizer::Bloom},
    {"poro-chat", PreTokenizer::Bloom},
    {"gpt3-finnish", PreTokenizer::Bloom},
    {"viking", PreTokenizer::Viking},
    {"falcon", PreTokenizer::Falcon},
    {"deepseek-coder", PreTokenizer::DeepseekCoder},
    {"deepseek-llm", PreTokenizer::DeepseekLlm},
    {"afmoe", PreTokenizer::Afmoe},
    {"tiny_aya", PreTokenizer::TinyAya},
    {"youtu", PreTokenizer::Youtu, kIgnoreMerges},
    {"kimi-k2", PreTokenizer::KimiK2},
    {"superbpe", PreTokenizer::Superbpe},
    {"chameleon", PreTokenizer::Chameleon, kAddBos},
    {"tekken", PreTokenizer::Tekken, kLlama3Flags},
    {"gpt-4o", PreTokenizer::Gpt4o},
    {"llama4", PreTokenizer::Gpt4o},
    {"kanana2", PreTokenizer::Gpt4o},
    {"minimax-m2", PreTokenizer::Gpt4o},
    {"deepseek-v3", PreTokenizer::DeepseekV3},
    {"hunyuan-dense", PreTokenizer::DeepseekV3},
    {"joyai-llm", PreTokenizer::DeepseekV3},
    {"smollm", PreTokenizer::Smollm},
    {"starcoder", PreTokenizer::Smollm},
    {"refact", PreTokenizer::Smollm},
    {"command-r", PreTokenizer::Smollm},
    {"codeshell", PreTokenizer::Smollm},
    {"exaone", PreTokenizer::Smollm},
    {"minerva-7b", PreTokenizer::Smollm},
    {"gemma4", PreTokenizer::Lines, kSpmSpaces | kForceBos | kNewlineTokens},
    {"sarvam-moe", PreTokenizer::Lines, kSpmSpaces},
    {"default", PreTokenizer::Default},
    {"", PreTokenizer::Default},  // no tokenizer.ggml.pre: llama.cpp warns and uses its default
};

// Texts llama.cpp marks as control tokens whatever their type (end-of-turn/-generation tokens).
constexpr std::string_view kControlTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
                                              "<|flush|>", "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>",
                                              "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
                                              "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                                              // One literal, split so that \x9c ends before "end":
                                              // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
                                              "<\xef\xbd\x9c"
                                              "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                              "[e~["};

// The entry of kPreNames for `name`, or null.
const PreName* pre_name(std::string_view name) {
    for (const PreName& p : kPreNames)
        if (p.name == name) return &p;
    return nullptr;
}

// A string key's value, or "" when it is absent or not a string (no error: the vocabulary still
// loads for pruning by id).
std::string string_or_empty(const Metadata& md, std::string_view key) {
    const GgufValue* x = md.find(key);
    return x && x->as_string() ? *x->as_string() : std::string();
}

// C's isspace in the "C" locale, which llama.cpp's strip attributes test bytes with.
bool ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string merge_key(std::string_view left, std::string_view right) {
    const auto n = static_cast<uint32_t>(left.size());
    std::string k(reinterpret_cast<const char*>(&n), sizeof n);
    k.append(left);
    k.append(right);
    return k;
}

const GgufValue& array_of(const GgufValue* v, GgufType elem, bool or_i32, const std::string& key,
                          const std::string& file) {
    if (!v->is_array() || !(v->elem_type() == elem || (or_i32 && v->elem_type() == GgufType::I32)))
        throw FormatError(ErrorKind::BadValueType, file, key,
                          "expected an array of " + std::string(gguf_type_name(elem)) + ", found " +
                              (v->is_array() ? "an array of " + std::string(gguf_type_name(v->elem_type()))
                                             : std::string(gguf_type_name(v->type()))));
    return *v;
}

// A BOOL value of `key`; nullopt when absent or of another type (llama.cpp's defaults apply).
std::optional<bool> get_bool(const Metadata& md, std::string_view key) {
    const GgufValue* v = md.find(key);
    if (!v || v->type() != GgufType::BOOL) return std::nullopt;
    return v->raw()[0] != 0;
}

struct Symbol {
    int prev, next;
    size_t off, n;
};

// Splits text into UTF-8 symbols as the llama.cpp sessions do (lead-byte length, clipped).
std::vector<Symbol> split_symbols(std::string_view text) {
    std::vector<Symbol> syms;
    size_t off = 0;
    int index = 0;
    while (off < text.size()) {
        const size_t n = std::min(utf8_len(text[off]), text.size() - off);
        syms.push_back({index - 1, off + n == text.size() ? -1 : index + 1, off, n});
        off += n;
        ++index;
    }
    return syms;
}

// An SPM join: the byte before a symbol boundary and the symbol after it (at most 4 bytes).
uint64_t join_key(std::string_view s, size_t k) {
    const size_t n = std::min(utf8_len(s[k]), s.size() - k);
    uint64_t key = static_cast<uint8_t>(s[k - 1]) | (uint64_t{n} << 8);
    for (size_t i = 0; i < n; ++i) key |= uint64_t{static_cast<uint8_t>(s[k + i])} << (16 + 8 * i);
    return key;
}

// llama.cpp's special ids for tokenizer model `model` where the file has no key for them
// (llama_vocab::impl::load's defaults; none for gemma4, rwkv and models it does not know).
std::vector<std::pair<std::string, int32_t>> llama_default_ids(std::string_view model) {
    const std::string bos(kBosKey), eos = "tokenizer.ggml.eos_token_id", unk = "tokenizer.ggml.unknown_token_id",
                                    pad = "tokenizer.ggml.padding_token_id";
    if (model == "llama") return {{unk, 0}, {bos, 1}, {eos, 2}};
    if (model == "gpt2") return {{bos, 11}, {eos, 11}};
    if (model == "bert")
        return {{bos, 101},
                {unk, 100},
                {"tokenizer.ggml.seperator_token_id", 102},
                {pad, 0},
                {"tokenizer.ggml.mask_token_id", 103}};
    if (model == "t5") return {{eos, 1}, {unk, 2}, {pad, 0}};
    if (model == "plamo2") return {{bos, 1}, {eos, 2}, {unk, 0}, {pad, 3}};
    return {};
}

}  // namespace

std::string byte_text(uint8_t b) {
    static constexpr char hex[] = "0123456789ABCDEF";
    return {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
}

std::pair<std::string, std::string> split_merge(const std::string& entry) {
    const size_t pos = entry.find(' ', 1);
    if (pos == std::string::npos) return {};
    return {entry.substr(0, pos), entry.substr(pos + 1)};
}

void Vocab::set_pre(std::string_view name, bool as_written) {
    pre_ = std::string(name);
    const PreName* p = pre_name(name);
    pre_supported_ = p != nullptr;
    pre_kind_ = !p                                   ? PreTokenizer::Gpt2
                : !as_written                        ? p->pre
                : p->pre == PreTokenizer::Tekken     ? PreTokenizer::TekkenUnicode
                : p->pre == PreTokenizer::Gpt4o      ? PreTokenizer::Gpt4oUnicode
                : p->pre == PreTokenizer::DeepseekV3 ? PreTokenizer::DeepseekV3Unicode
                                                     : p->pre;
    ignore_merges_ = p && (p->flags & kIgnoreMerges);
    spm_spaces_ = p && (p->flags & kSpmSpaces);
    newline_tokens_ = p && (p->flags & kNewlineTokens);
}

Vocab Vocab::load(const Metadata& md) {
    const std::string& file = md.source();
    Vocab v;
    v.file_ = file;
    const GgufValue* toks = md.find(kTokens);
    if (!toks) throw FormatError(ErrorKind::BadKey, file, kTokens, "no tokenizer: the key is missing");
    v.texts_ = array_of(toks, GgufType::STRING, false, kTokens, file).strings();
    const size_t n = v.texts_.size();
    const auto per_token = [&](const std::string& key, GgufType elem, bool or_i32) -> const GgufValue* {
        const GgufValue* a = md.find(key);
        if (!a) return nullptr;
        array_of(a, elem, or_i32, key, file);
        if (a->count() != n)
            throw FormatError(
                ErrorKind::BadKey, file, key,
                "has " + std::to_string(a->count()) + " entries but " + kTokens + " has " + std::to_string(n));
        return a;
    };
    const GgufValue* scores = per_token("tokenizer.ggml.scores", GgufType::F32, true);
    const GgufValue* types = per_token("tokenizer.ggml.token_type", GgufType::I32, false);
    v.scores_.resize(n, 0.0f);
    v.types_.resize(n, TokenType::Normal);
    v.special_.resize(n, 0);
    for (size_t i = 0; i < n; ++i) {
        if (scores) v.scores_[i] = static_cast<float>(scores->array_number(i));
        if (types) {
            const auto t = static_cast<int32_t>(types->array_number(i));
            v.types_[i] = t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::Undefined;
        }
        std::string word = v.texts_[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : v.texts_[i];
        if (!v.ids_.emplace(word, static_cast<int32_t>(i)).second && v.duplicate_.empty()) v.duplicate_ = word;
        const TokenType t = v.types_[i];
        const bool forced =
            std::find(std::begin(kControlTexts), std::end(kControlTexts), word) != std::end(kControlTexts);
        v.special_[i] = t == TokenType::Control || t == TokenType::Unknown || forced ? 2
                        : t == TokenType::UserDefined                                ? 1
                                                                                     : 0;
    }

    bool force_bos = false;  // Gemma 4: BOS whatever tokenizer.ggml.add_bos_token says
    v.model_name_ = string_or_empty(md, "tokenizer.ggml.model");
    v.defaults_ = llama_default_ids(v.model_name_);
    v.pre_ = string_or_empty(md, "tokenizer.ggml.pre");  // BPE: set_pre (gemma4: its own name)
    if (v.model_name_ == "llama") {
        v.model_ = Model::Spm;
        // Every symbol boundary inside a token: only there can a merged symbol span a cut.
        for (const auto& entry : v.ids_)
            for (const Symbol& sym : split_symbols(entry.first))
                if (sym.off > 0) v.spm_joins_.insert(join_key(entry.first, sym.off));
        v.add_bos_ = true, v.add_space_prefix_ = true;
    } else if (v.model_name_ == "gpt2" || v.model_name_ == "gemma4") {
        v.model_ = Model::Bpe;
        // llama.cpp's "gemma4" model: BPE under Gemma 4's pre-tokenizer whatever tokenizer.ggml.pre says.
        if (v.model_name_ == "gemma4") v.pre_ = "gemma4";
        v.set_pre(v.pre_);
        if (const PreName* p = pre_name(v.pre_)) {
            v.add_bos_ = (p->flags & kAddBos) != 0;
            if (p->flags & kNoDefaultBos) std::erase_if(v.defaults_, [](const auto& d) { return d.first == kBosKey; });
            force_bos = (p->flags & kForceBos) != 0;
        }
        const std::string mkey = "tokenizer.ggml.merges";
        if (const GgufValue* m = md.find(mkey)) {
            for (const std::string& word : array_of(m, GgufType::STRING, false, mkey, file).strings()) {
                auto parts = split_merge(word);
                v.ranks_.emplace(merge_key(parts.first, parts.second), static_cast<int32_t>(v.merges_.size()));
                v.merges_.push_back(std::move(parts));
            }
        }
    }
    if (auto b = get_bool(md, "tokenizer.ggml.add_space_prefix")) v.add_space_prefix_ = *b;
    const auto special_id = [&](std::string_view key, int32_t& id) {
        for (const auto& [k, d] : v.defaults_)
            if (k == key && static_cast<size_t>(d) < n) id = d;
        const GgufValue* s = md.find(key);
        const std::optional<int64_t> x = s ? s->as_int() : std::nullopt;
        if (x && *x >= 0 && static_cast<uint64_t>(*x) < n) id = static_cast<int32_t>(*x);
    };
    special_id(kBosKey, v.bos_);
    special_id("tokenizer.ggml.eos_token_id", v.eos_);
    if (auto b = get_bool(md, "tokenizer.ggml.add_bos_token")) v.add_bos_ = *b;
    if (auto b = get_bool(md, "tokenizer.ggml.add_eos_token")) v.add_eos_ = *b;
    if (force_bos) v.add_bos_ = true;

    for (size_t i = 0; i < n; ++i)
        if (v.special_[i]) v.special_order_.push_back(static_cast<int32_t>(i));
    v.strip_attributes(md);
    std::stable_sort(v.special_order_.begin(), v.special_order_.end(),
                     [&](int32_t a, int32_t b) { return v.text(a).size() > v.text(b).size(); });
    return v;
}

// llama-vocab.cpp's "per token attributes", chosen by name: <mask> takes the spaces before it for
// the jina-v2-de/-es/-code pre-tokenizers (and nomic-bert-moe, jina-bert-v3 architectures); every
// special token but <unk>, <s> and <|endoftext|> (and </s> whatever its type) the spaces after it
// when general.name holds phi-3 or phi3 (any case); [MASK] the spaces before it for modern-bert.
// (llama.cpp aborts when one of the tokens it names there is missing; here that token is skipped.)
void Vocab::strip_attributes(const Metadata& md) {
    strip_.assign(texts_.size(), 0);
    std::string name = string_or_empty(md, "general.name");
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::string arch = string_or_empty(md, "general.architecture");
    const auto has_any = [](const std::string& s, std::initializer_list<std::string_view> parts) {
        return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return s.find(p) != s.npos; });
    };
    const auto set = [&](std::string_view token, uint8_t attr, bool on) {
        if (const auto id = find(token)) {
            uint8_t& s = strip_[static_cast<size_t>(*id)];
            s = on ? s | attr : s & ~attr;
        }
    };
    if (has_any(pre_, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
        has_any(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
        set("<mask>", kLstrip, true);
    } else if (has_any(name, {"phi-3", "phi3"})) {
        for (int32_t id : special_order_) strip_[static_cast<size_t>(id)] |= kRstrip;
        set("</s>", kRstrip, true);
        for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set(t, kRstrip, false);
    } else if (has_any(name, {"modern-bert"})) {
        set("[MASK]", kLstrip, true);
    }
    strips_ = 0;
    for (int32_t id : special_order_) strips_ |= strip_[static_cast<size_t>(id)];
}

std::optional<int32_t> Vocab::find(std::string_view text) const {
    auto it = ids_.find(std::string(text));
    if (it == ids_.end()) return std::nullopt;
    return it->second;
}

bool Vocab::is_byte_token(int32_t id) const {
    if (type(id) == TokenType::Byte) return true;
    const std::string& t = text(id);
    const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
    return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

std::optional<int32_t> Vocab::rank(const std::string& left, const std::string& right) const {
    auto it = ranks_.find(merge_key(left, right));
    if (it == ranks_.end()) return std::nullopt;
    return it->second;
}

int32_t Vocab::byte_token(uint8_t b) const {
    const std::string hex = byte_text(b);
    if (auto id = find(hex)) return *id;
    if (auto id = find(std::string(1, static_cast<char>(b)))) return *id;
    throw FormatError(ErrorKind::Unsupported, file_, kTokens, "no token for byte " + hex);
}

void Vocab::check_tokenizable() const {
    if (model_ == Model::Other || (model_ == Model::Bpe && !pre_supported_))
        throw FormatError(ErrorKind::Unsupported, file_, "tokenizer.ggml.model",
                          "unsupported tokenizer model " + (model_name_.empty() ? std::string("(none)") : model_name_) +
                              (model_ == Model::Bpe ? " (pre-tokenizer '" + pre_ + "')" : std::string()));
    if (!duplicate_.empty())
        throw FormatError(ErrorKind::BadKey, file_, kTokens, "duplicate token '" + duplicate_ + "'");
}

// llm_tokenizer_spm_session::tokenize: merge the adjacent pair whose concatenation is the
// highest-scoring token (leftmost on ties) until none is left, then resegment.
void Vocab::spm_fragment(std::string_view text, std::vector<int32_t>* out,
                         std::vector<std::pair<std::string, std::string>>* trace) const {
    struct Bigram {
        int left, right;
        float score;
        size_t size;
    };
    const auto cmp = [](const Bigram& l, const Bigram& r) {
        return l.score < r.score || (l.score == r.score && l.left > r.left);
    };
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(cmp)> queue(cmp);
    std::vector<Symbol> syms = split_symbols(text);
    const auto try_add = [&](int left, int right) {
        if (left == -1 || right == -1) return;
        const std::string_view s = text.substr(syms[left].off, syms[left].n + syms[right].n);
        if (const auto id = find(s)) queue.push({left, right, scores_[static_cast<size_t>(*id)], s.size()});
    };
    for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& l = syms[b.left];
        Symbol& r = syms[b.right];
        if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
        if (trace) trace->emplace_back(std::string(text.substr(l.off, l.n)), std::string(text.substr(r.off, r.n)));
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) syms[r.next].prev = b.left;
        try_add(l.prev, b.left);
        try_add(b.left, l.next);
    }
    if (!out) return;
    // llama.cpp's resegment: a symbol that is a token, else its bytes. (Its rev_merge step, which
    // splits a symbol back into the pair that made it, never runs: every merged symbol is a token.)
    for (int i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
        const std::string_view piece = text.substr(syms[i].off, syms[i].n);
        if (auto id = find(piece)) {
            out->push_back(*id);
        } else {
            for (char c : piece) out->push_back(byte_token(static_cast<uint8_t>(c)));
        }
    }
}

// llm_tokenizer_bpe_session::tokenize for one pre-tokenized word: apply the lowest-ranked merge
// of adjacent symbols (leftmost on ties) until none applies, then look the symbols up. With
// ignore_merges (and no trace asked for) a word that is a token is emitted as it is.
void Vocab::bpe_word(const std::string& word, std::vector<int32_t>* out,
                     std::vector<std::pair<std::string, std::string>>* trace) const {
    struct Bigram {
        int left, right;
        std::string text;
        int32_t rank;
    };
    const auto cmp = [](const Bigram& l, const Bigram& r) {
        return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);
    };
    const bool newlines = newline_tokens_ && word.find_first_not_of('\n') == std::string::npos;
    if ((ignore_merges_ || newlines) && !trace) {
        if (const auto id = find(word)) {
            out->push_back(*id);
            return;
        }
    }
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(cmp)> queue(cmp);
    std::vector<Symbol> syms = split_symbols(word);
    const auto piece = [&](const Symbol& s) { return word.substr(s.off, s.n); };
    const auto add = [&](int left, int right) {
        if (left == -1 || right == -1) return;
        const std::string l = piece(syms[left]), r = piece(syms[right]);
        if (auto rk = rank(l, r)) queue.push({left, right, l + r, *rk});
    };
    for (int i = 1; i < static_cast<int>(syms.size()); ++i) add(i - 1, i);
    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& l = syms[b.left];
        Symbol& r = syms[b.right];
        if (l.n == 0 || r.n == 0) continue;
        if (piece(l) + piece(r) != b.text) continue;
        if (trace) trace->emplace_back(piece(l), piece(r));
        l.n += r.n;
        r.n = 0;
        l.next = r.next;
        if (r.next >= 0) syms[r.next].prev = b.left;
        add(l.prev, b.left);
        add(b.left, l.next);
    }
    if (!out) return;
    const bool bytes = byte_level();  // a byte's token: its byte-level symbol, else <0xNN>
    for (const Symbol& s : syms) {
        if (s.n == 0) continue;
        const std::string str = piece(s);
        if (auto id = find(str)) {
            out->push_back(*id);
            continue;
        }
        for (char c : str)  // its bytes' tokens, where the vocabulary has them
            if (auto id = find(bytes ? std::string(1, c) : byte_text(static_cast<uint8_t>(c)))) out->push_back(*id);
    }
}

std::vector<std::pair<std::string, std::string>> Vocab::merge_trace(std::string_view symbol_text) const {
    std::vector<std::pair<std::string, std::string>> trace;
    if (model_ == Model::Spm) spm_fragment(symbol_text, nullptr, &trace);
    if (model_ == Model::Bpe) bpe_word(std::string(symbol_text), nullptr, &trace);
    return trace;
}

std::vector<Vocab::Fragment> Vocab::partition(std::string_view text, bool parse_special) const {
    std::vector<Fragment> frags;
    if (!text.empty()) frags.push_back({-1, 0, text.size()});
    for (int32_t id : special_order_) {
        if (!parse_special && special_[static_cast<size_t>(id)] == 2) continue;  // control or unknown
        const std::string& s = this->text(id);
        if (s.empty()) continue;
        std::vector<Fragment> next;
        for (const Fragment& f : frags) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            size_t pos = f.off;
            const size_t end = f.off + f.len;
            const uint8_t strip = strip_[static_cast<size_t>(id)];
            for (;;) {
                const size_t m = text.substr(0, end).find(s, pos);
                if (m == std::string_view::npos) break;
                size_t left = m;  // LSTRIP: the whitespace before it goes, within this fragment
                while ((strip & kLstrip) && left > pos && ascii_space(text[left - 1])) --left;
                if (left > pos) next.push_back({-1, pos, left - pos});
                next.push_back({id, 0, 0});
                pos = m + s.size();
                while ((strip & kRstrip) && pos < end && ascii_space(text[pos])) ++pos;
            }
            if (pos < end) next.push_back({-1, pos, end - pos});
        }
        frags = std::move(next);
    }
    return frags;
}

void Vocab::spm_escape(std::string_view raw, std::string* out) {
    for (char c : raw) {
        if (c == ' ') {
            out->append(kSpmSpace);
        } else {
            out->push_back(c);
        }
    }
}

void Vocab::begin_tokens(std::vector<int32_t>* out, bool add_special) const {
    if (!add_special || !add_bos_) return;
    if (bos_ < 0)
        throw FormatError(ErrorKind::BadKey, file_, "tokenizer.ggml.bos_token_id",
                          "add_bos_token is true but no BOS id");
    out->push_back(bos_);
}

void Vocab::end_tokens(std::vector<int32_t>* out, bool add_special) const {
    if (!add_special || !add_eos_) return;
    if (eos_ < 0)
        throw FormatError(ErrorKind::BadKey, file_, "tokenizer.ggml.eos_token_id",
                          "add_eos_token is true but no EOS id");
    out->push_back(eos_);
}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    check_tokenizable();
    std::vector<int32_t> out;
    begin_tokens(&out, add_special);
    bool prev_special = true;
    for (const Fragment& f : partition(text, parse_special)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            prev_special = true;
            continue;
        }
        const std::string_view raw = text.substr(f.off, f.len);
        if (model_ == Model::Spm) {
            std::string s(add_space_prefix_ && prev_special ? kSpmSpace : std::string_view{});  // the dummy prefix
            spm_escape(raw, &s);
            spm_fragment(s, &out, nullptr);
            prev_special = false;
        } else {
            std::string escaped;
            if (spm_spaces_) spm_escape(raw, &escaped);
            for (const std::string& word : pretokenize(pre_kind_, spm_spaces_ ? escaped : raw))
                bpe_word(word, &out, nullptr);
        }
    }
    end_tokens(&out, add_special);
    return out;
}

// ---- TokenStream ----

TokenStream::TokenStream(const Vocab& v, bool add_special, bool parse_special, std::string source, size_t max_run)
    : v_(v), add_special_(add_special), parse_special_(parse_special), source_(std::move(source)), max_run_(max_run) {
    v.check_tokenizable();
    for (int32_t id : v.special_order_)
        if (parse_special || v.special_[static_cast<size_t>(id)] != 2)
            max_special_ = std::max(max_special_, v.text(id).size());
}

void TokenStream::too_long(std::string_view what) const {
    throw FormatError(ErrorKind::TooLarge, source_, "",
                      fmt::format("more than {} bytes without a place the tokenizer can be cut ({}); "
                                  "the text is tokenized in pieces and one piece may not exceed that",
                                  max_run_, what));
}

// The largest cut c <= |text_| - (longest special - 1) that no special token's occurrence
// crosses (every occurrence that could cross it lies inside text_) and, where tokens strip
// whitespace, that leaves after it the whitespace before c a later LSTRIP token could take and an
// RSTRIP token whose whitespace after it may go on past c.
size_t TokenStream::special_cut() const {
    if (max_special_ <= 1 && !v_.strips_) return text_.size();
    const size_t tail = max_special_ > 0 ? max_special_ - 1 : 0;  // where an occurrence may still begin
    size_t c = text_.size() > tail ? text_.size() - tail : 0;
    const std::string_view text = text_;
    const auto active = [&](int32_t id) { return parse_special_ || v_.special_[static_cast<size_t>(id)] != 2; };
    for (bool moved = true; moved && c > 0;) {
        moved = false;
        for (int32_t id : v_.special_order_) {
            if (!active(id)) continue;
            const std::string& s = v_.text(id);
            if (s.size() < 2) continue;
            const size_t from = c > s.size() - 1 ? c - (s.size() - 1) : 0;
            const size_t p = text.substr(from, c - from + s.size() - 1).find(s);  // starts in [from, c): crosses c
            if (p != std::string_view::npos) {
                c = from + p;
                moved = true;
            }
        }
        if (!v_.strips_) continue;
        size_t w = c;  // c less the whitespace before it
        while (w > 0 && ascii_space(text[w - 1])) --w;
        if ((v_.strips_ & Vocab::kLstrip) && w < c) c = w, moved = true;
        if (moved || !(v_.strips_ & Vocab::kRstrip)) continue;
        for (int32_t id : v_.special_order_) {  // an RSTRIP token just before that whitespace waits too
            const std::string& s = v_.text(id);
            if (active(id) && (v_.strip_[static_cast<size_t>(id)] & Vocab::kRstrip) && w >= s.size() &&
                text.substr(w - s.size(), s.size()) == s) {
                c = w - s.size(), moved = true;
                break;
            }
        }
    }
    return c;
}

// Partitions `text` (a prefix of what is left, cut where no special token crosses) and passes
// its raw runs to the open raw fragment.
void TokenStream::emit(std::string_view text, std::vector<int32_t>* out) {
    for (const Vocab::Fragment& f : v_.partition(text, parse_special_)) {
        if (f.token >= 0) {
            raw_close(out);
            out->push_back(f.token);
            prev_special_ = true;
        } else {
            raw_feed(text.substr(f.off, f.len), out);
        }
    }
}

// The largest SPM cut in raw_ (0: none): a symbol boundary c (no lead byte in the 3 bytes before
// c reaches past it) whose symbol after it is whole and whose join never occurs inside a token.
size_t TokenStream::spm_cut() const {
    const std::string_view r = raw_;
    for (size_t c = r.size(); c-- > std::max<size_t>(raw_scanned_, 1);) {
        if (c + utf8_len(r[c]) > r.size()) continue;
        bool boundary = true;
        for (size_t j = 1; j <= 3 && j <= c; ++j) boundary = boundary && utf8_len(r[c - j]) <= j;
        if (boundary && !v_.spm_joins_.count(join_key(r, c))) return c;
    }
    return 0;
}

void TokenStream::raw_feed(std::string_view raw, std::vector<int32_t>* out) {
    if (!raw_open_) {
        raw_open_ = true;
        raw_.clear();
        raw_scanned_ = 0;
        if (v_.model_ == Model::Spm && v_.add_space_prefix_ && prev_special_) raw_ = kSpmSpace;
        prev_special_ = false;
    }
    if (v_.model_ == Model::Spm) {
        Vocab::spm_escape(raw, &raw_);
        const size_t c = spm_cut();
        if (c > 0) v_.spm_fragment(std::string_view(raw_).substr(0, c), out, nullptr);
        // Positions up to |raw_| - 4 were looked at with their whole symbol after them: no cut.
        raw_scanned_ = raw_.size() > c + 4 ? raw_.size() - 4 - c : 0;
        raw_.erase(0, c);
    } else {
        if (v_.spm_spaces_) {
            Vocab::spm_escape(raw, &raw_);
        } else {
            raw_.append(raw);
        }
        size_t consumed = 0;
        for (const std::string& word : pretokenize(v_.pre_kind_, raw_, &consumed)) v_.bpe_word(word, out, nullptr);
        raw_.erase(0, consumed);
    }
    if (raw_.size() > max_run_)
        too_long(v_.model_ == Model::Spm ? "no symbol boundary that no token spans" : "one pre-tokenizer word");
}

void TokenStream::raw_close(std::vector<int32_t>* out) {
    if (!raw_open_) return;
    if (v_.model_ == Model::Spm) {
        v_.spm_fragment(raw_, out, nullptr);
    } else {
        for (const std::string& word : pretokenize(v_.pre_kind_, raw_)) v_.bpe_word(word, out, nullptr);
    }
    raw_open_ = false;
    raw_.clear();
}

void TokenStream::feed(std::string_view bytes, std::vector<int32_t>* out) {
    if (!started_) v_.begin_tokens(out, add_special_);
    started_ = true;
    text_.append(bytes);
    const size_t c = special_cut();
    emit(std::string_view(text_).substr(0, c), out);
    text_.erase(0, c);
    if (text_.size() > max_run_ + max_special_) too_long("special tokens overlap throughout");
}

void TokenStream::finish(std::vector<int32_t>* out) {
    if (!started_) v_.begin_tokens(out, add_special_);
    started_ = true;
    emit(text_, out);
    text_.clear();
    raw_close(out);
    v_.end_tokens(out, add_special_);
}

}  // namespace oiw::vocab
