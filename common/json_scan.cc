// Structural JSON checks shared by every strict JSON reader (the record formats, the audit log,
// review's documents): see json_scan.h.
#include "common/json_scan.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/escape.h"

namespace replaygate {

JsonShape scan_json_shape(std::string_view json, size_t max_depth, size_t* at) {
  const size_t start = json.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || (json[start] != '{' && json[start] != '[')) {
    return JsonShape::kOk;  // not a container: the parser names the problem
  }
  size_t depth = 0;
  bool in_string = false;
  bool closed = false;  // the first top-level container has ended
  for (size_t i = start; i < json.size(); ++i) {
    const char c = json[i];
    if (closed) {
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
        if (at != nullptr) *at = i;
        return JsonShape::kTrailing;
      }
      continue;
    }
    if (in_string) {
      if (c == '\\') {
        ++i;  // skip the escaped character
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        if (at != nullptr) *at = i;
        return JsonShape::kTooDeep;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      if (--depth == 0) closed = true;
    }
  }
  return JsonShape::kOk;
}

namespace {

// nlohmann's message with every byte of the input taken out: a lexer error ("invalid string:
// control character U+0001 (SOH) must be escaped to \\u0001; last read: '\"SECRET...'") quotes
// what it read, and "number overflow parsing '1e400'" the number, so either is replaced by a
// fixed reason. A parser message without a lexer error ("syntax error while parsing object key -
// unexpected '}'; expected string literal") names only token kinds and is kept; anything else
// that still quotes something becomes "syntax error".
std::string fixed_json_reason(std::string_view what) {
  if (what.find("number overflow") != std::string_view::npos)
    return std::string(kJsonNumberOutOfRange);
  if (what.find("last read") != std::string_view::npos) {
    const struct {
      std::string_view needle, reason;
    } kLexer[] = {
        {"control character", "unescaped control character in a string"},
        {"'\\u' must be followed", "bad \\u escape in a string"},
        {"surrogate", "bad \\u surrogate pair in a string"},
        {"forbidden character after backslash", "bad escape in a string"},
        {"missing closing quote", "unclosed string"},
        {"ill-formed UTF-8", "not valid UTF-8"},
        {"invalid number", "malformed number"},
        {"invalid literal", "malformed literal"},
        {"invalid comment", "comments are not JSON"},
    };
    for (const auto& entry : kLexer) {
      if (what.find(entry.needle) != std::string_view::npos) return std::string(entry.reason);
    }
    return "syntax error";
  }
  // Token kinds, the only quoted text a parser message may keep.
  std::string rest(what);
  for (const std::string_view token :
       {"'[', '{', or a literal", "'['", "'{'", "']'", "'}'", "':'", "','"}) {
    for (size_t at = rest.find(token); at != std::string::npos; at = rest.find(token)) {
      rest.erase(at, token.size());
    }
  }
  if (rest.find_first_of("'\"\\") != std::string::npos) return "syntax error";
  return std::string(what);
}

// A SAX handler that builds nothing and keeps the first error (locate_json_error()).
class ErrorLocator : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& error) override {
    // `position` counts the bytes read, the offending one included.
    found.offset = position > 0 ? position - 1 : 0;
    // "[json.exception.parse_error.101] parse error at line 1, column 6: syntax error ...": the
    // position is given separately, so only the part after it is kept.
    std::string_view what = error.what();
    const size_t bracket = what.find("] ");
    if (bracket != std::string_view::npos) what.remove_prefix(bracket + 2);
    if (what.starts_with("parse error at ")) {
      const size_t colon = what.find(": ");
      if (colon != std::string_view::npos) what.remove_prefix(colon + 2);
    }
    found.what = fixed_json_reason(what);
    return false;
  }
  JsonError found;
};

}  // namespace

JsonError locate_json_error(std::string_view json) {
  ErrorLocator locator;
  (void)nlohmann::json::sax_parse(json, &locator, nlohmann::json::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  if (locator.found.offset != kNoOffset && locator.found.offset > json.size()) {
    locator.found.offset = json.size();
  }
  return locator.found;
}

namespace {

// Calls visit(path, key_offset, value_offset, duplicate) for each key of the well-formed JSON
// document `json`, in order: `path` is the keys from the top-level object down to this one,
// `duplicate` says that its object gave the same key (unescaped) before. Stops when visit returns
// true, or at anything a well-formed document does not have. A stack of open containers, not
// recursion; an array's elements have no path (their keys are visited with `path` empty).
template <typename Visit>
void walk_keys(std::string_view json, Visit visit) {
  struct Frame {
    bool object = false;
    bool keyed = false;  // reached as the value of a key of a keyed object (or the top level)
    std::string via;     // that key
    std::set<std::string> seen;
  };
  std::vector<Frame> stack;
  std::string pending;  // the key whose value comes next
  bool pending_keyed = false, expect_key = false;
  const auto skip_space = [&](size_t i) {
    while (i < json.size() &&
           (json[i] == ' ' || json[i] == '\t' || json[i] == '\r' || json[i] == '\n')) {
      ++i;
    }
    return i;
  };
  size_t i = 0;
  while (i < json.size()) {
    const char c = json[i];
    if (c == '"') {
      const size_t start = i++;
      while (i < json.size() && json[i] != '"') i += json[i] == '\\' ? 2 : 1;
      if (i >= json.size()) return;
      const std::string_view raw = json.substr(start + 1, i - start - 1);
      ++i;
      if (stack.empty() || !stack.back().object || !expect_key) continue;  // a string value
      std::string name(raw);
      if (raw.find('\\') != std::string_view::npos) {
        const nlohmann::json unescaped =
            nlohmann::json::parse("\"" + name + "\"", nullptr, /*allow_exceptions=*/false);
        if (!unescaped.is_string()) return;
        name = unescaped.get<std::string>();
      }
      const size_t colon = skip_space(i);
      if (colon >= json.size() || json[colon] != ':') return;
      const size_t value = skip_space(colon + 1);
      std::vector<std::string> path;
      if (stack.back().keyed) {
        for (size_t f = 1; f < stack.size(); ++f) path.push_back(stack[f].via);
        path.push_back(name);
      }
      const bool duplicate = !stack.back().seen.insert(name).second;
      if (visit(path, start, value, duplicate)) return;
      pending = std::move(name);
      pending_keyed = stack.back().keyed;
      expect_key = false;
      i = value;
      continue;
    }
    if (c == '{' || c == '[') {
      Frame frame;
      frame.object = c == '{';
      frame.keyed = stack.empty() || (stack.back().object && pending_keyed);
      frame.via = stack.empty() ? "" : pending;
      stack.push_back(std::move(frame));
      expect_key = c == '{';
      pending.clear();
      pending_keyed = false;
    } else if (c == '}' || c == ']') {
      if (stack.empty()) return;
      stack.pop_back();
    } else if (c == ',') {
      expect_key = !stack.empty() && stack.back().object;
      pending.clear();
      pending_keyed = false;
    }
    ++i;
  }
}

}  // namespace

size_t locate_duplicate_key(std::string_view json) {
  size_t found = kNoOffset;
  walk_keys(json, [&](const std::vector<std::string>&, size_t key, size_t, bool duplicate) {
    if (duplicate) found = key;
    return duplicate;
  });
  return found;
}

size_t locate_member_value(std::string_view json, const std::vector<std::string>& path) {
  size_t found = kNoOffset;
  walk_keys(json, [&](const std::vector<std::string>& at, size_t, size_t value, bool) {
    if (at == path) found = value;
    return at == path;
  });
  return found;
}

TextPosition position_of(std::string_view text, size_t offset) {
  TextPosition position;
  const size_t end = offset < text.size() ? offset : text.size();
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++position.line;
      position.column = 1;
    } else {
      ++position.column;
    }
  }
  return position;
}

std::string quote_for_reason(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string_view shown = text;
  if (text.size() > kMax) {
    size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
    shown = text.substr(0, cut);
  }
  return "'" + escape_control(shown) + (shown.size() < text.size() ? "...'" : "'");
}

}  // namespace replaygate
