// Header names as a person reads them, for the mapping engine's header sources (mapped_parser.cc):
// a header that only looks like a mapped one must not be read as missing. In: two names; out: their
// skeletons or whether they are a near miss. The standard library only.
#pragma once

#include <string>
#include <string_view>

namespace replaygate::inputs {

// The skeleton of a header name (docs/input-mapping.md, "Header names match exactly"): the name
// decoded as UTF-8 (a byte that does not decode is dropped) with whitespace, control characters
// and default-ignorable characters (zero-width spaces and joiners U+200B-U+200F, U+2060-U+206F,
// the BOM U+FEFF, the soft hyphen U+00AD, combining marks U+0300-U+036F, variation selectors)
// dropped; fullwidth ASCII (U+FF01-U+FF5E) read as ASCII; every hyphen, dash and minus
// (U+2010-U+2015, U+2043, U+2212, U+FE58, U+FE63, U+FF0D), `-`, `_` and `.` dropped; the Cyrillic
// and Greek look-alikes of Latin letters in kLookAlikes (header_names.cc) read as those letters;
// ASCII case folded. A trailing `s` is kept: `x-replays` is another word. Two names with the same
// skeleton look the same to a person: a header whose name is not a mapped one but has its
// skeleton makes the record invalid.
std::string header_name_skeleton(std::string_view name);

// The Levenshtein distance of `a` and `b` is exactly 1 (one byte inserted, removed or replaced).
bool one_edit_apart(std::string_view a, std::string_view b);

// Whether `a` and `b` differ, but only in ASCII case ("X-Replay" and "x-replay").
bool same_but_ascii_case(std::string_view a, std::string_view b);

}  // namespace replaygate::inputs
