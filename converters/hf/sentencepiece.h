// The pieces of a SentencePiece model (tokenizer.model), read as convert_hf_to_gguf.py reads them
// through SentencePieceProcessor: text, score and type per id. A small reader of the protobuf:
//
//   ModelProto    := { 1: SentencePiece (repeated, length-delimited), other fields skipped }
//   SentencePiece := { 1: piece (bytes, UTF-8), 2: score (fixed32 float), 3: type (varint) }
//   wire tag      := varint (field << 3 | wire type: 0 varint, 1 fixed64, 2 bytes, 5 fixed32)
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace oiw::hf {

// sentencepiece::ModelProto::SentencePiece::Type.
enum class SpmType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct SpmPiece {
    std::string piece;
    float score = 0.0f;
    SpmType type = SpmType::Normal;
};

// The pieces of the model image `bytes`, by id. Throws FormatError naming `file` (and the piece's
// id) when a field runs past its message, a wire type is unknown or a group, a piece is empty or
// not UTF-8, a type is out of range, or there are no pieces.
std::vector<SpmPiece> read_spm_pieces(std::span<const uint8_t> bytes, const std::string& file);

}  // namespace oiw::hf
