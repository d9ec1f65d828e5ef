// Header names as a person reads them: skeletons, near misses and case-only differences (see
// header_names.h).
#include "inputs/header_names.h"

#include <optional>
#include <string>
#include <utility>

namespace replaygate::inputs {

namespace {

// Cyrillic and Greek letters that look like Latin ones, and the letter they look like.
constexpr struct {
  char32_t from;
  char to;
} kLookAlikes[] = {
    // Cyrillic lower case: а в е о р с у х і ј ѕ һ ӏ ԁ ԛ ԝ
    {0x0430, 'a'},
    {0x0432, 'b'},
    {0x0435, 'e'},
    {0x043E, 'o'},
    {0x0440, 'p'},
    {0x0441, 'c'},
    {0x0443, 'y'},
    {0x0445, 'x'},
    {0x0456, 'i'},
    {0x0458, 'j'},
    {0x0455, 's'},
    {0x04BB, 'h'},
    {0x04CF, 'l'},
    {0x0501, 'd'},
    {0x051B, 'q'},
    {0x051D, 'w'},
    // Cyrillic upper case: А В Е К М Н О Р С Т У Х І Ј Ѕ Ԛ Ԝ
    {0x0410, 'a'},
    {0x0412, 'b'},
    {0x0415, 'e'},
    {0x041A, 'k'},
    {0x041C, 'm'},
    {0x041D, 'h'},
    {0x041E, 'o'},
    {0x0420, 'p'},
    {0x0421, 'c'},
    {0x0422, 't'},
    {0x0423, 'y'},
    {0x0425, 'x'},
    {0x0406, 'i'},
    {0x0408, 'j'},
    {0x0405, 's'},
    {0x051A, 'q'},
    {0x051C, 'w'},
    // Greek lower case: α ι κ ν ο ρ τ υ χ
    {0x03B1, 'a'},
    {0x03B9, 'i'},
    {0x03BA, 'k'},
    {0x03BD, 'v'},
    {0x03BF, 'o'},
    {0x03C1, 'p'},
    {0x03C4, 't'},
    {0x03C5, 'u'},
    {0x03C7, 'x'},
    // Greek upper case: Α Β Ε Ζ Η Ι Κ Μ Ν Ο Ρ Τ Υ Χ
    {0x0391, 'a'},
    {0x0392, 'b'},
    {0x0395, 'e'},
    {0x0396, 'z'},
    {0x0397, 'h'},
    {0x0399, 'i'},
    {0x039A, 'k'},
    {0x039C, 'm'},
    {0x039D, 'n'},
    {0x039F, 'o'},
    {0x03A1, 'p'},
    {0x03A4, 't'},
    {0x03A5, 'y'},
    {0x03A7, 'x'},
};

// The next code point of `s` from `*i` (advanced past it), or nullopt for a byte that does not
// start a well-formed UTF-8 sequence (advanced past that byte only).
std::optional<char32_t> next_code_point(std::string_view s, size_t* i) {
  const auto byte = [&](size_t at) { return static_cast<unsigned char>(s[at]); };
  const unsigned char lead = byte(*i);
  size_t length = 0;
  char32_t cp = 0, min = 0;
  if (lead < 0x80) {
    ++*i;
    return lead;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    ++*i;
    return std::nullopt;
  }
  if (*i + length > s.size()) {
    ++*i;
    return std::nullopt;
  }
  for (size_t k = 1; k < length; ++k) {
    if ((byte(*i + k) & 0xC0) != 0x80) {
      ++*i;
      return std::nullopt;
    }
    cp = (cp << 6) | (byte(*i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*i;
    return std::nullopt;
  }
  *i += length;
  return cp;
}

// Whitespace, control and default-ignorable characters: dropped from a skeleton.
bool is_invisible(char32_t cp) {
  return cp <= 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD || (cp >= 0x300 && cp <= 0x36F) ||
         cp == 0x34F || cp == 0x61C || cp == 0x115F || cp == 0x1160 || cp == 0x1680 ||
         cp == 0x17B4 || cp == 0x17B5 || (cp >= 0x180B && cp <= 0x180F) ||
         (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
         (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0x3164 ||
         (cp >= 0xFE00 && cp <= 0xFE0F) || cp == 0xFEFF || cp == 0xFFA0 ||
         (cp >= 0xFFF0 && cp <= 0xFFFB) || (cp >= 0xE0000 && cp <= 0xE0FFF);
}

// Hyphens, dashes, minus signs and the separators read as one: dropped from a skeleton.
bool is_dash(char32_t cp) {
  return cp == '-' || cp == '_' || cp == '.' || (cp >= 0x2010 && cp <= 0x2015) || cp == 0x2043 ||
         cp == 0x2212 || cp == 0xFE58 || cp == 0xFE63;
}

void append_utf8(std::string* out, char32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

// Levenshtein distance of `a` and `b` is exactly 1 (one byte inserted, removed or replaced).
bool one_edit_apart(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  if (b.size() - a.size() > 1 || a == b) return false;
  size_t i = 0;
  while (i < a.size() && a[i] == b[i]) ++i;
  if (a.size() == b.size()) return a.substr(i + 1) == b.substr(i + 1);
  return a.substr(i) == b.substr(i + 1);
}

// Whether `a` and `b` differ, but only in ASCII case ("X-Replay" and "x-replay").
bool same_but_ascii_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a == b) return false;
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string header_name_skeleton(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    std::optional<char32_t> cp = next_code_point(name, &i);
    if (!cp) continue;                                  // undecodable: dropped
    if (*cp >= 0xFF01 && *cp <= 0xFF5E) *cp -= 0xFEE0;  // fullwidth ASCII
    if (is_invisible(*cp) || is_dash(*cp)) continue;
    for (const auto& look : kLookAlikes) {
      if (look.from == *cp) {
        *cp = static_cast<unsigned char>(look.to);
        break;
      }
    }
    if (*cp >= 'A' && *cp <= 'Z') *cp += 'a' - 'A';
    append_utf8(&out, *cp);
  }
  return out;
}

}  // namespace replaygate::inputs
