#include "converters/hf/bpe_vocab.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

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
    // tokenizer.vocab reversed: (id, text), the model's in key order then the added tokens'; where an
    // id is given twice the later text wins (as the std::map this replaced kept it).
    std::vector<std::pair<uint64_t, std::string>> by_id;
    std::unordered_map<std::string, bool> added;  // content -> special
    by_id.reserve(vocab->size());
    for (const auto& [text, id] : vocab->items()) {
        if (!id.is_number_unsigned())
            throw FormatError(ErrorKind::BadJson, file, "model.vocab '" + text + "'", "id is not an unsigned integer");
        by_id.emplace_back(id.get<uint64_t>(), text);
    }
    if (const Json* at = member(tok, "added_tokens"); at && at->is_array()) {
        for (const Json& a : *at) {
            const Json *id = member(a, "id"), *content = member(a, "content"), *special = member(a, "special");
            if (!id || !id->is_number_unsigned() || !content || !content->is_string())
                throw FormatError(ErrorKind::BadJson, file, "added_tokens",
                                  "an entry without an unsigned id and a content string");
            by_id.emplace_back(id->get<uint64_t>(), content->get<std::string>());
            added[content->get<std::string>()] = special && special->is_boolean() && special->get<bool>();
        }
    }
    std::stable_sort(by_id.begin(), by_id.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t kept = 0;  // the last of each id's run
    for (size_t i = 0; i < by_id.size(); ++i)
        if (i + 1 == by_id.size() || by_id[i + 1].first != by_id[i].first) {
            if (kept != i) by_id[kept] = std::move(by_id[i]);
            ++kept;
        }
    by_id.resize(kept);
    const uint64_t n = vocab_size.value_or(by_id.size());
    if (n > kMaxVocab) throw FormatError(ErrorKind::TooLarge, file, "", fmt::format("vocabulary of {} tokens", n));
    if (!by_id.empty() && by_id.back().first >= n)
        throw FormatError(ErrorKind::BadData, file, "",
                          fmt::format("token id {} is not below the vocabulary size {}", by_id.back().first, n));
    BpeVocab v;
    v.tokens.reserve(n);
    v.types.reserve(n);
    auto next = by_id.begin();
    for (uint64_t i = 0; i < n; ++i) {
        if (next == by_id.end() || next->first != i) {
            v.tokens.push_back(fmt::format("[PAD{}]", i));
            v.types.push_back(kUnused);
            continue;
        }
        std::string t = std::move(next++->second);
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

BpeTemplate read_bpe_template(const Json& tok) {
    BpeTemplate t;
    const Json* pp = member(tok, "post_processor");
    if (!pp || !pp->is_object()) return t;
    const Json* list = member(*pp, "processors");
    const Json procs = list && list->is_array() ? *list : Json::array({*pp});
    for (const Json& proc : procs) {
        const Json* type = member(proc, "type");
        const Json* single = member(proc, "single");
        const Json* specials = member(proc, "special_tokens");
        if (!type || *type != "TemplateProcessing" || !single || !single->is_array()) continue;
        bool after = false;
        for (const Json& item : *single) {
            if (member(item, "Sequence")) {
                after = true;
                continue;
            }
            const Json* st = member(item, "SpecialToken");
            const Json* name = st ? member(*st, "id") : nullptr;
            const Json* entry =
                name && name->is_string() && specials ? member(*specials, name->get<std::string>()) : nullptr;
            const Json* ids = entry ? member(*entry, "ids") : nullptr;
            if (!ids || !ids->is_array()) continue;
            for (const Json& id : *ids)
                if (id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX)
                    (after ? t.suffix : t.prefix).push_back(static_cast<int32_t>(id.get<int64_t>()));
        }
    }
    return t;
}

BpeTemplate encode_template(const Json& tok, const std::optional<Json>& config, const BpeVocab& v,
                            const std::string& config_file) {
    const Json* cls = config ? member(*config, "tokenizer_class") : nullptr;
    const std::string name = cls && cls->is_string() ? cls->get<std::string>() : "";
    const bool gemma = name == "GemmaTokenizer" || name == "GemmaTokenizerFast";
    if (!gemma && name != "LlamaTokenizer" && name != "LlamaTokenizerFast") return read_bpe_template(tok);
    // add_<which>_token (default `on`) and <which>_token (default `fallback`; a string or an AddedToken's
    // content) as the tokenizer's __init__ takes them: the token's id, or nothing when not added.
    const auto special = [&](const char* which, bool on, const char* fallback) -> std::vector<int32_t> {
        const std::string flag = fmt::format("add_{}_token", which), key = fmt::format("{}_token", which);
        if (const Json* f = member(*config, flag)) {
            if (!f->is_boolean()) throw FormatError(ErrorKind::BadJson, config_file, flag, "not a boolean");
            on = f->get<bool>();
        }
        if (!on) return {};
        const Json* t = member(*config, key);
        const Json* content = t && t->is_object() ? member(*t, "content") : t;
        if (content && content->is_null())
            throw FormatError(ErrorKind::BadJson, config_file, key, fmt::format("null while {} is true", flag));
        if (content && !content->is_string())
            throw FormatError(ErrorKind::BadJson, config_file, key, "not a string or an AddedToken");
        const std::string text = content ? content->get<std::string>() : fallback;
        for (size_t id = 0; id < v.tokens.size(); ++id)
            if (v.tokens[id] == text) return {static_cast<int32_t>(id)};
        throw FormatError(ErrorKind::BadData, config_file, key, fmt::format("'{}' is not in the vocabulary", text));
    };
    return {special("bos", true, gemma ? "<bos>" : "<s>"), special("eos", false, gemma ? "<eos>" : "</s>")};
}

namespace {

// get_vocab_base_pre's table (llama.cpp 1348f67), for the names whose pre-tokenizer is implemented
// here: the chkhsh of tokenizer.encode(chktxt) and the name the Python converter writes for it.
constexpr std::pair<const char*, const char*> kKnownPre[] = {
    {"3ce83efda5659b07b1ad37ca97ca5797ea4285d9b9ab0dc679e4a720c9da7454", "gpt-2"},  // openai-community/gpt2
    {"0fe1cf6eda062318a1af7270f3331a85c539a01778ff948e24388e949c5282f4", "gpt-2"},  // evilfreelancer/ruGPT3XL
    {"fcace8b9cac38ce847670c970cd5892031a753a1ef381abd1d9af00f713da085", "phi-2"},  // microsoft/phi-2
    {"b6dc8df998e1cfbdc4eac8243701a65afe638679230920b50d6f17d81c098166", "mpt"},    // mosaicml/mpt-7b (and OLMo)
    {"b53802fb28e26d645c3a310b34bfe07da813026ec7c7716883404d5e0f8b1901", "jais"},
    {"ad851be1dba641f2e3711822f816db2c265f788b37c63b4e1aeacb9ee92de8eb", "gigachat"},
    {"b0a6b1c0bd5998ebd9df08611efde34a4ff03faed45ae09c43e6b31ebd4b94cf", "a.x-4.0"},
    {"2085e1638f6c377a0aa4ead21b27bb4cb941bf800df86ed391011769c1758dfb", "exaone4"},
    {"a1e163ecab2e718a4c829d1148b6e86824ec36163bb71941c3dca9cd5ac25756", "mellum"},
    {"0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5", "llama-bpe"},  // Meta-Llama-3-8B
    {"9d032fcbd5501f4a38150912590928bfb36091efb5df11b8e2124b0390e3fb1e", "falcon3"},
    {"a6b57017d60e6edb4d88ecc2845188e0eb333a70357e45dcc9b53964a73bbae6", "falcon-h1"},
    {"60476e1243776c4fb1b993dbd7a5f15ac22f83c80afdf425fa5ae01c8d44ef86", "falcon-h1"},
    {"3eda48b4c4dc7de733d1a8b3e3b4a85243dbbf704da2ee9d42c6beced8897896", "falcon-h1"},
    {"48f8e02c0359c0bbdd82f26909171fac1c18a457bb47573ed1fe3bbb2c1cfd4b", "falcon-h1"},
    {"0e9433cbbb161f89e264eb32e8e64bfe69e834973ffca5d41d3948a604a3e2a3", "pixtral"},  // (the tekken regex)
    {"f6791d196f87ce6b56a7d234be618e0d58f8cda3549416635b2bebcd22cd95c4", "midm-2.0"},
    {"169bf0296a13c4d9b7672313f749eb36501d931022de052aad6e36f2bf34dd51", "lfm2"},
    {"a023e9fdc5a11f034d3ef515b92350e56fb2af1f66c6b6811a4444ea9bf8763d", "jina-v5-nano"},
    {"e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea", "qwen2"},  // Qwen1.5-7B (and 2, 2.5, 3)
    {"d4540891389ea895b53b399da6ac824becc30f2fba0e9ddbb98f92e55ca0e97c", "qwen2"},  // Qwen3-Embedding-0.6B
    {"b3f499bb4255f8ca19fccd664443283318f2fd2414d5e0b040fbdd0cc195d6c5", "deepseek-r1-qwen"},
    {"d4c8f286ea6b520b3d495c4455483cfa2302c0cfcd4be05d781b6a8a0a7cdaf1", "megrez"},
    {"4a2e2abae11ca2b86d570fc5b44be4d5eb5e72cc8f22dd136a94b37da83ab665", "kormo"},
    {"862f827721df956049dff5ca81a57f29e575280bc622e290d3bf4e35eca29015", "f2llmv2"},
    {"63b97e4253352e6f357cc59ea5b583e3a680eaeaf2632188c2b952de2588485e", "tekken"},  // Mistral-Nemo-Base-2407
    {"ccc2ef013c104be7bae2965776d611e1d7a8a2a9c547dd93a682c9a9fc80352e", "gpt-4o"},  // Xenova/gpt-4o
    {"d353350c764d8c3b39c763113960e4fb4919bea5fbf208a0e3b22e8469dc7406", "llama4"},  // Llama-4-Scout
    {"f4f37b6c8eb9ea29b3eac6bb8c8487c5ab7885f8d8022e67edc1c68ce8403e95", "minimax-m2"},
    {"e4d54df1ebc1f2b91acd986c5b51aa50837d5faf7c7398e73c1f9e9ee5d19869", "kanana2"},
    {"877081d19cf6996e2c4ff0e1236341e9b7bde288f5311a56a937f0afbbb3aeb5", "deepseek-v3"},  // DeepSeek-V3
    {"bba3b3366b646dbdded5dbc42d59598b849371afc42f7beafa914afaa5b70aa6", "hunyuan-dense"},
    {"b4b8ca1f9769494fbd956ebc4c249de6131fb277a4a3345a7a92c7dd7a55808d", "joyai-llm"},
    {"855059429035d75a914d1eda9f10a876752e281a054a7a3d421ef0533e5b6249", "smollm"},  // SmolLM-135M
    {"35d91631860c815f952d711435f48d356ebac988362536bed955d43bfa436e34", "starcoder"},
    {"6221ad2852e85ce96f791f476e0b390cf9b474c9e3d1362f53a24a06dc8220ff", "refact"},
    {"9c2227e4dd922002fb81bde4fc02b0483ca4f12911410dee2255e4987644e3f8", "command-r"},
    {"7b3e7548e4308f52a76e8229e4e6cc831195d0d1df43aed21ac6c93da05fec5f", "codeshell"},
    {"4e2b24cc4770243d65a2c9ec19770a72f08cffc161adbb73fcbb6b7dd45a0aae", "exaone"},
    {"1431a23e583c97432bc230bff598d103ddb5a1f89960c8f1d1051aaa944d0b35", "minerva-7b"},
    {"a8594e3edff7c29c003940395316294b2c623e09894deebbc65f33f1515df79e", "dbrx"},       // databricks/dbrx-base
    {"c136ed14d01c2745d4f60a9596ae66800e2b61fa45643e72436041855ad4089d", "smaug-bpe"},  // abacusai/Smaug-Llama-3-70B
    {"32d85c31273f8019248f2559fed492d929ea28b17e51d81d3bb36fff23ca72b3", "stablelm2"},
    {"7e57df22b1fe23a7b1e1c7f3dc4e3f96d43a4eb0836d0c6bdc3436d7b2f1c664", "hunyuan"},
    {"16389f0a1f51ee53e562ffd51c371dc508639ab0e4261502071836e50e223e91", "solar-open"},
    {"66b8d4e19ab16c3bfd89bce5d785fb7e0155e8648708a1f42077cb9fe002c273", "grok-2"},
    {"171aeeedd6fb548d418a7461d053f11b6f1f1fc9b387bd66640d28a4b9f5c643", "jina-v2-es"},
    {"27949a2493fc4a9f53f5b9b029c82689cfbe5d3a1929bb25e043089e28466de6", "jina-v2-de"},
    {"b3d1dd861f1d4c5c0d2569ce36baf3f90fe8a102db3de50dd71ff860d91be3df", "jina-v2-de"},
    {"7967bfa498ade6b757b064f31e964dddbb80f8f9a4d68d4ba7998fcf281c531a", "jina-v2-code"},
    {"c7699093ba4255a91e702aa38a596aa81669f3525dae06c2953267dde580f448", "jina-v1-en"},
    {"8b5a93ed704057481f240da0be7e7dca721d7f8f4755263b6807227a2cbeae65", "roberta-bpe"},  // stsb-roberta-base
    {"a0b64b4385f123663873756336c085744376d015ff328bb1d901598f63c44152", "modern-bert"},
    {"1994ffd01900cfb37395608534236ecd63f2bd5995d6cb1004dda1af50240f15", "trillion"},
    {"53e325976a6e142379c19b09afcae354f2f496f147afa8f9e189a33fe4e3024e", "granite-docling"},
    {"96a5f08be6259352137b512d4157e333e21df7edd3fcd152990608735a65b224", "bailingmoe"},   // inclusionAI/Ling-lite
    {"9b1be57e70d20d9501b2b3186e792d81181ae36ada3903c26f9fea418cf87206", "bailingmoe2"},  // Ling-mini-base-2.0
    {"b6e8e1518dc4305be2fe39c313ed643381c4da5db34a98f6a04c093f8afbe99b", "chatglm-bpe"},  // THUDM/glm-4-9b-chat
    {"81d72c7348a9f0ebe86f23298d37debe0a5e71149e29bd283904c02262b27516", "chatglm-bpe"},
    {"a1336059768a55c99a734006ffb02203cd450fed003e9a71886c88acf24fdbc2", "glm4"},    // THUDM/glm-4-9b-hf
    {"9ca2dd618e8afaf09731a7cf6e2105b373ba6a1821559f258b272fe83e6eb902", "glm4"},    // zai-org/GLM-4.5-Air
    {"cdf5f35325780597efd76153d4d1c16778f766173908894c04afc20108536267", "glm4"},    // zai-org/GLM-4.7-Flash
    {"1444df51289cfa8063b96f0e62b1125440111bc79a52003ea14b6eac7016fd5f", "qwen35"},  // openbmb/MiniCPM-V-4_6
    {"d30d75d9059f1aa2c19359de71047b3ae408c70875e8a3ccf8c5fba56c9d8af4", "qwen35"},  // Qwen/Qwen3.5-9B-Instruct
    {"d5f1dd6f980fec569fb218a81a7658ac45fc56b38c5a0adeb1c232fbe04ef5ec", "seed-coder"},
    {"bc5108ee1eb6a3d600cadd065f63190fbd0554dbc9e4bbd6a0d977970afc8d2a", "jais-2"},
    {"6c81ce329e0802883b22eabab0d3fa48357337ef1ecb45443828bf1f6254833f", "exaone-moe"},
    {"3c30d3ad1d6b64202cd222813e7736c2db6e1bd6d67197090fc1211fbc612ae7", "bloom"},         // bigscience/bloom
    {"c7ea5862a53e4272c035c8238367063e2b270d51faa48c0f09e9d5b54746c360", "poro-chat"},     // LumiOpen/Poro-34B-chat
    {"bc01ce58980e1db43859146dc51b1758b3b88729b217a74792e9f8d43e479d21", "gpt3-finnish"},  // gpt3-finnish-small
    {"7fc505bd3104ca1083b150b17d088b59534ede9bde81f0dd2090967d7fe52cee", "viking"},        // LumiOpen/Viking-7B
    {"8aeee3860c56296a157a1fe2fad249ec40aa59b1bb5709f4ade11c4e6fe652ed", "falcon"},        // tiiuae/falcon-7b
    {"347715f544604f9118bb75ed199f68779f423cabb20db6de6f31b908d04d7821", "deepseek-coder"},
    {"049ecf7629871e3041641907f3de7c733e4dbfdc736f57d882ba0b0845599754", "deepseek-llm"},
    {"49fc0303c9e0d2c2c565c510f64b2d9b271276acdcdadff733249eda9f7d59df", "afmoe"},      // arcee-ai/Trinity-Tokenizer
    {"d772b220ace2baec124bed8cfafce0ead7d6c38a4b65ef11261cf9d5d62246d1", "tiny_aya"},   // CohereLabs/tiny-aya-base
    {"9d70134b369a70e5735009b6de918f7581b5211f7c074d1f89f753aea8248af1", "youtu"},      // tencent/Youtu-LLM-2B
    {"7dec86086fcc38b66b7bc1575a160ae21cf705be7718b9d5598190d7c12db76f", "superbpe"},   // UW/OLMo2-8B-SuperBPE-t180k
    {"60824e3c0d9401f89943cbb2fff727f0e2d4c545ba4df2d6e4f09a6db0f5b450", "chameleon"},  // facebook/chameleon-7b
};

}  // namespace

std::string detect_bpe_pre(const BpeVocab& v, const BpeTemplate& tmpl, const std::string& file) {
    std::vector<uint8_t> types(v.types.size() * 4);
    std::memcpy(types.data(), v.types.data(), types.size());
    const GgufValue tokens = GgufValue::make_string_array(v.tokens), merges = GgufValue::make_string_array(v.merges);
    const GgufValue type_values = GgufValue::make_array(GgufType::I32, std::move(types), v.types.size());
    vocab::Vocab vocab = vocab::Vocab::load(Metadata({{"tokenizer.ggml.model", GgufValue::make_string("gpt2")},
                                                      {"tokenizer.ggml.pre", GgufValue::make_string("gpt-2")},
                                                      {"tokenizer.ggml.tokens", tokens},
                                                      {"tokenizer.ggml.token_type", type_values},
                                                      {"tokenizer.ggml.merges", merges}},
                                                     file));
    // One name per pre-tokenizer implemented, each regex as written (the hash is of Hugging Face's ids).
    static const std::pair<const char*, const char*> kExpressions[] = {
        {"gpt-2", "the GPT-2 regex"},
        {"llama-bpe", "Llama 3's"},
        {"qwen2", "Qwen2's"},
        {"tekken", "tekken's"},
        {"gpt-4o", "GPT-4o's"},
        {"deepseek-v3", "DeepSeek-V3's"},
        {"smollm", "SmolLM's"},
        {"qwen35", "Qwen 3.5's"},
        {"seed-coder", "Seed-Coder's"},
        {"jais-2", "Jais-2's"},
        {"exaone-moe", "EXAONE-MoE's"},
        {"bloom", "BLOOM's"},
        {"viking", "Viking's"},
        {"falcon", "Falcon's"},
        {"deepseek-coder", "DeepSeek Coder's"},
        {"deepseek-llm", "DeepSeek LLM's"},
        {"afmoe", "AFMoE's"},
        {"tiny_aya", "Tiny Aya's"},
        {"youtu", "Youtu's"},
        {"superbpe", "SuperBPE's"},
        {"chameleon", "Chameleon's"},
    };
    std::string tried;
    for (const auto& [pre, label] : kExpressions) {
        vocab.set_pre(pre, true);
        // tokenizer.encode(chktxt): the post-processor's template around the text's tokens.
        std::vector<int32_t> ids = tmpl.prefix;
        for (int32_t id : vocab.tokenize(bpe_check_text(), false, true)) ids.push_back(id);
        ids.insert(ids.end(), tmpl.suffix.begin(), tmpl.suffix.end());
        std::string list = "[";
        for (size_t i = 0; i < ids.size(); ++i) list += fmt::format("{}{}", i ? ", " : "", ids[i]);
        list += "]";
        const std::string hash = sha256_hex({reinterpret_cast<const uint8_t*>(list.data()), list.size()});
        for (const auto& [h, name] : kKnownPre)  // the name the Python converter writes for that hash
            if (hash == h) return name;
        tried += fmt::format("{}{} with {}", tried.empty() ? "" : ", ", hash, label);
    }
    throw FormatError(
        ErrorKind::Unsupported, file, "pre-tokenizer",
        fmt::format("not recognised (chkhsh {}): only these pre-tokenizers are implemented so far", tried));
}

}  // namespace oiw::hf
