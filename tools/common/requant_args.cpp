#include "tools/common/requant_args.h"

#include <sstream>

#include <fmt/format.h>

#include "libformat/escape.h"
#include "libformat/io/text_file.h"

namespace oiw {

const RequantPreset& preset_arg(std::string_view text, std::string_view option) {
    if (const RequantPreset* p = lookup_preset(text)) return *p;
    throw FormatError(ErrorKind::Usage, "", std::string(option), unknown_preset_text(text));
}

TensorTypeRule tensor_type_arg(std::string_view spec) { return parse_type_rule(spec, "--tensor-type"); }

std::vector<TensorTypeRule> read_tensor_type_file(const std::string& path) {
    std::vector<TensorTypeRule> rules;
    const std::vector<std::string> lines = split_lines(read_text_file(path));
    for (size_t n = 0; n < lines.size(); ++n) {
        std::istringstream line(lines[n]);
        std::string entry;
        while (line >> entry) {
            if (entry[0] == '#') break;  // a comment runs to the end of the line
            try {
                rules.push_back(parse_type_rule(entry, "rule"));
            } catch (const FormatError& e) {
                throw FormatError(e.kind(), path, fmt::format("line {}", n + 1), e.what());
            }
        }
    }
    return rules;
}

PlanFile plan_arg(const std::string& path, const std::string& imatrix_path, PlanOptions& p, std::string& preset) {
    PlanFile plan = read_plan_file(path);
    if (const std::string why = plan_imatrix_mismatch(plan, imatrix_path); !why.empty())
        throw FormatError(ErrorKind::Usage, "", "--plan", why);
    if (const size_t sp = plan.imatrix.find(' ');
        sp != std::string::npos && plan.imatrix.substr(sp + 1) != escape_text(imatrix_path))
        plan.predicted_size = 0;
    if (preset.empty()) preset = plan.preset;
    p.tensor_types = plan.rules;
    return plan;
}

FormatError with_option_hint(const FormatError& e) {
    const std::string& subject = e.subject();
    if (std::string_view(e.what()).find("has no fallback type") == std::string_view::npos ||
        !subject.starts_with("tensor '"))
        return e;
    const std::string name = subject.substr(8, subject.size() - 9);
    const std::string option = name == "output.weight"       ? "--output-tensor-type F16 (or --leave-output-tensor)"
                               : name == "token_embd.weight" ? "--token-embedding-type F16"
                                                             : "--tensor-type '" + name + "=F16'";
    return FormatError(e.kind(), "", "",
                       std::string(e.what()) + "; choose a type its row length allows, e.g. " + option);
}

}  // namespace oiw
