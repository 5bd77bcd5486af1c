// Unicode case data for gguf-py's Metadata.id_to_title (str.islower, str.title, re's \d), generated
// from Python's own tables by gen_case_table.py into case_table.cpp.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace oiw::hf {

enum CaseFlag : uint8_t {
    kCaseLower = 1,   // str.islower() of the code point alone (Unicode Lowercase)
    kCaseUpper = 2,   // str.isupper() of it alone (Unicode Uppercase)
    kCaseTitle = 4,   // general category Lt
    kCaseCased = 8,   // Unicode Cased: str.title() lower-cases the letter after it
    kCaseDigit = 16,  // general category Nd: re's \d
};

struct CaseRow {
    uint32_t cp;
    uint8_t flags;
    const char* lower;  // str.lower() in UTF-8; nullptr: the code point itself
    const char* title;  // str.title() of it alone; nullptr: the code point itself
};
extern const CaseRow kCaseRows[];  // sorted by code point
extern const size_t kCaseRowCount;

// The row of `cp`, or nullptr (no flags, both mappings itself).
inline const CaseRow* case_row(char32_t cp) {
    const CaseRow* end = kCaseRows + kCaseRowCount;
    const CaseRow* r = std::lower_bound(kCaseRows, end, cp, [](const CaseRow& row, char32_t c) { return row.cp < c; });
    return r != end && r->cp == cp ? r : nullptr;
}

}  // namespace oiw::hf
