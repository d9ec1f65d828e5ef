// Diagnostics as data: ordering, text, JSON, SARIF and GitHub rendering, "did you mean" hints.
//
// Text rendering keeps the caret under the offending byte even when the line holds tabs
// (copied into the caret prefix) or multi-byte UTF-8 (one space per code point); bytes that are
// not printable (control characters, invalid UTF-8) are shown as '?' so output stays safe text
// and the caret stays aligned. The path, message and hint are escaped (escape_control): they
// quote what the author wrote (a key, an id, a value), which may hold any character. Backslashes
// stay single there: hints show escapes to type ("write \t for a tab").
#include "common/diagnostic.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>

#include "common/escape.h"
#include "common/json.h"
#include "common/utf8.h"

namespace replaygate {
namespace {

// Longest source line shown whole under a diagnostic; longer lines are cut around the column.
constexpr size_t kMaxExcerptBytes = 160;

// The 1-based `line` of `source` without its line break; false when the source has no such line.
bool source_line(std::string_view source, uint32_t line, std::string_view* out) {
  if (line == 0 || source.empty()) return false;
  size_t start = 0;
  for (uint32_t current = 1; current < line; ++current) {
    const size_t newline = source.find('\n', start);
    if (newline == std::string_view::npos) return false;
    start = newline + 1;
  }
  if (start > source.size()) return false;
  size_t end = source.find('\n', start);
  if (end == std::string_view::npos) end = source.size();
  std::string_view text = source.substr(start, end - start);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  *out = text;
  return true;
}

// Zero-width, bidirectional-control and BOM code points, C1 controls and the line and paragraph
// separators: shown as '?' so an excerpt cannot hide, reorder ("trojan source") or break text.
bool invisible(uint32_t code) {
  return (code >= 0x200B && code <= 0x200F) || (code >= 0x2028 && code <= 0x202E) ||
         (code >= 0x2066 && code <= 0x2069) || code == 0xFEFF || (code >= 0x80 && code < 0xA0);
}

// The line as displayed: printable ASCII, tabs and visible UTF-8 kept, everything else '?'.
std::string printable_line(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size();) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == '\t' || (c >= 0x20 && c < 0x7F)) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t length = c >= 0x80 ? utf8_sequence_length(line, i) : 0;
    if (length == 0) {
      out += '?';
      ++i;
    } else if (invisible(decode_utf8(line, i, length))) {
      out += '?';
      i += length;
    } else {
      out.append(line.substr(i, length));
      i += length;
    }
  }
  return out;
}

// Display cells of line[0, to): one per code point (tabs stay tabs), as the caret line needs.
std::string caret_prefix(std::string_view line, size_t to) {
  std::string out;
  size_t i = 0;
  while (i < to && i < line.size()) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    out += c == '\t' ? '\t' : ' ';
    const size_t length = c >= 0x80 ? utf8_sequence_length(line, i) : 1;
    i += length == 0 ? 1 : length;
  }
  if (to > line.size()) out.append(to - line.size(), ' ');
  return out;
}

size_t code_points(std::string_view line, size_t from, size_t to) {
  size_t count = 0;
  size_t i = from;
  to = std::min(to, line.size());
  while (i < to) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    const size_t length = c >= 0x80 ? utf8_sequence_length(line, i) : 1;
    i += length == 0 ? 1 : length;
    ++count;
  }
  return count;
}

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  const size_t m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "error";
}

bool has_errors(const std::vector<Diagnostic>& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

void sort_diagnostics(std::vector<Diagnostic>& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::tie(a.path, a.span.line, a.span.column, a.code, a.message) <
                            std::tie(b.path, b.span.line, b.span.column, b.code, b.message);
                   });
}

std::string render_text(const std::vector<Diagnostic>& diagnostics, std::string_view source) {
  std::string out;
  char number[32];
  for (size_t index = 0; index < diagnostics.size(); ++index) {
    const Diagnostic& d = diagnostics[index];
    if (index > 0) out += '\n';
    std::string location = escape_control(d.path, Backslash::kKeep);
    if (d.span.line > 0) {
      if (location.empty()) location = "<input>";
      location += ":" + std::to_string(d.span.line) + ":" + std::to_string(d.span.column);
    }
    if (!location.empty()) out += location + ": ";
    out += severity_name(d.severity);
    out +=
        "[" + escape_control(d.code) + "]: " + escape_control(d.message, Backslash::kKeep) + "\n";
    std::string_view line;
    if (d.span.line > 0 && source_line(source, d.span.line, &line)) {
      std::snprintf(number, sizeof number, "%5u | ", static_cast<unsigned>(d.span.line));
      size_t column = d.span.column > 0 ? d.span.column - 1 : 0;
      // A huge line (minified or generated input) is cut to a window around the column, so one
      // diagnostic stays one screen; "..." marks each cut.
      bool cut_left = false, cut_right = false;
      if (line.size() > kMaxExcerptBytes) {
        size_t lo = std::min(line.size(),
                             column > kMaxExcerptBytes / 2 ? column - kMaxExcerptBytes / 2 : 0);
        while (lo > 0 && lo < line.size() && (static_cast<unsigned char>(line[lo]) & 0xC0) == 0x80)
          --lo;
        size_t hi = std::min(line.size(), lo + kMaxExcerptBytes);
        while (hi < line.size() && (static_cast<unsigned char>(line[hi]) & 0xC0) == 0x80) ++hi;
        cut_left = lo > 0;
        cut_right = hi < line.size();
        line = line.substr(lo, hi - lo);
        column -= lo;
      }
      out += number;
      if (cut_left) out += "...";
      out += printable_line(line);
      if (cut_right) out += "...";
      out += '\n';
      out += "      | ";
      if (cut_left) out += "   ";
      out += caret_prefix(line, column);
      out += '^';
      if (d.span.length > 1) {
        const size_t cells = code_points(line, column, column + d.span.length);
        if (cells > 1) out.append(cells - 1, '~');
      }
      out += '\n';
    }
    if (!d.hint.empty()) out += "      = hint: " + escape_control(d.hint, Backslash::kKeep) + "\n";
  }
  return out;
}

std::string render_json(const std::vector<Diagnostic>& diagnostics) {
  std::string out = "[";
  for (size_t index = 0; index < diagnostics.size(); ++index) {
    const Diagnostic& d = diagnostics[index];
    out += index == 0 ? "\n  {" : ",\n  {";
    out += "\"severity\":";
    append_json_string(out, severity_name(d.severity), JsonText::kAscii);
    out += ",\"code\":";
    append_json_string(out, d.code, JsonText::kAscii);
    out += ",\"message\":";
    append_json_string(out, d.message, JsonText::kAscii);
    out += ",\"path\":";
    append_json_string(out, d.path, JsonText::kAscii);
    out += ",\"line\":" + std::to_string(d.span.line);
    out += ",\"column\":" + std::to_string(d.span.column);
    out += ",\"hint\":";
    append_json_string(out, d.hint, JsonText::kAscii);
    out += "}";
  }
  out += diagnostics.empty() ? "]\n" : "\n]\n";
  return out;
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  // Allow about one edit per three characters, at most three: close enough to be a typo.
  const size_t allowed = word.size() <= 3 ? 1 : word.size() <= 6 ? 2 : 3;
  std::string best;
  size_t best_distance = allowed + 1;
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

Span span_in_text(std::string_view text, size_t offset, size_t length) {
  const bool at_end = offset >= text.size();
  offset = std::min(offset, text.size());
  if (at_end && !text.empty() && text.back() == '\n') {
    --offset;  // the last line's break
    if (offset > 0 && text[offset - 1] == '\r') --offset;
  }
  const size_t line_start = offset == 0 ? 0 : text.rfind('\n', offset - 1) + 1;  // npos + 1 == 0
  const size_t line =
      1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  Span span;
  span.line = static_cast<uint32_t>(line);
  span.column = static_cast<uint32_t>(offset - line_start + 1);
  span.offset = static_cast<uint32_t>(offset);
  span.length = at_end ? 0 : static_cast<uint32_t>(std::min(length, text.size() - offset));
  return span;
}

}  // namespace replaygate

// ---- SARIF and GitHub renderers (CI formats) ----
namespace replaygate {
namespace {

struct CodeTitle {
  const char* code;
  const char* title;
};

// One line per code, kept in step with docs/diagnostics.md (a test checks every code there).
constexpr CodeTitle kCodeTitles[] = {
    {"RG001", "YAML syntax error"},
    {"RG002", "duplicate mapping key"},
    {"RG003", "anchor or alias"},
    {"RG004", "explicit tag"},
    {"RG005", "nesting too deep"},
    {"RG006", "more than one YAML document"},
    {"RG007", "file too large"},
    {"RG008", "mapping key that is not a scalar"},
    {"RG009", "file is not valid UTF-8"},
    {"RG010", "byte order mark"},
    {"RG011", "control byte in the file"},
    {"RG012", "DSL front-end not available (retired)"},
    {"RG013", "unsupported file extension"},
    {"RG014", "policy language syntax error"},
    {"RG015", "line too long"},
    {"RG099", "internal error while compiling"},
    {"RG100", "empty file or root not a mapping"},
    {"RG101", "unknown key"},
    {"RG102", "required key missing"},
    {"RG103", "value of the wrong shape"},
    {"RG104", "unknown verb"},
    {"RG105", "unknown field"},
    {"RG106", "unknown constant"},
    {"RG107", "unknown operator"},
    {"RG108", "type mismatch"},
    {"RG109", "not a valid decimal int"},
    {"RG110", "int outside the field's bounds"},
    {"RG111", "value not in the enum"},
    {"RG112", "unknown input type"},
    {"RG113", "unknown verb effect"},
    {"RG114", "min greater than max"},
    {"RG115", "property does not apply to the type"},
    {"RG116", "bad enum values"},
    {"RG117", "absent/present on a required field"},
    {"RG118", "ordering operator on a non-int field"},
    {"RG119", "guard without conditions"},
    {"RG120", "wrong operand shape"},
    {"RG121", "duplicate rule or row id"},
    {"RG122", "reserved id 'default'"},
    {"RG123", "row with the wrong number of values"},
    {"RG124", "default verb's effect is not none"},
    {"RG125", "field is a table key twice"},
    {"RG126", "table with no keys or more than 8"},
    {"RG127", "invalid name or id"},
    {"RG128", "absent/present as a row key"},
    {"RG129", "too many inputs"},
    {"RG130", "bad invariant requirement"},
    {"RG131", "bad string domain"},
    {"RG139", "bad idempotency key input"},
    {"RG140", "derived on an input that is not a required bool"},
    {"RG141", "bad derivation operator or operand count"},
    {"RG142", "derivation operand is not an earlier required int"},
    {"RG143", "bad sensitive field name"},
    {"RG144", "unknown input source"},
    {"RG145", "derived input set by an operator"},
    {"RG150", "classify on an input that is not a required enum"},
    {"RG151", "unknown or unusable raw input of a classifier"},
    {"RG152", "bad classifier row (matcher, class or type)"},
    {"RG153", "classifier class is not one of the enum's values"},
    {"RG154", "empty or malformed classifier range"},
    {"RG155", "classifier without a fallback class"},
    {"RG201", "guard can never match"},
    {"RG202", "rule never reached"},
    {"RG203", "duplicate table row"},
    {"RG204", "conflicting rows"},
    {"RG205", "table row can never match"},
    {"RG206", "wildcard lets absent inputs reach a doing verb"},
    {"RG207", "crossing wildcard rows overlap"},
    {"RG209", "analysis stopped early"},
    {"RG210", "invariant does not hold"},
    {"RG211", "known inputs fall to the default (gap)"},
    {"RG212", "decision regions incomplete"},
    {"RG213", "invariant not proven within the budget"},
    {"RG214", "vacuous invariant"},
    {"RG215", "classifier fallback class can reach a create verb"},
    {"RG216", "classifier row never reached"},
    {"RG217", "class never mentioned by a rule"},
    {"RG301", "mapping file structure"},
    {"RG302", "mapped key is not a policy input"},
    {"RG303", "policy input not mapped"},
    {"RG304", "bad mapping source"},
    {"RG305", "mapping type or value mismatch"},
    {"RG306", "derived input mapped"},
    {"RG307", "operator-only input mapped"},
    {"RG308", "mapping default on a compared input"},
    {"RG309", "mapping default opens a create verb"},
    {"RG310", "stale default acknowledgement"},
    {"RG311", "record-only input mapped"},
    {"RG312", "broker delivery counter as a budget"},
    {"RG401", "case file structure"},
    {"RG402", "case file names another policy"},
    {"RG403", "case input is not a policy input"},
    {"RG404", "expected verb unknown"},
    {"RG405", "duplicate case name"},
    {"RG406", "expected rule unknown"},
    {"RG407", "case input sets a derived input"},
    {"RG501", "proposal structure"},
    {"RG502", "proposal entry shape"},
    {"RG503", "unknown key in a proposal entry"},
    {"RG504", "proposal entry without a key value"},
    {"RG505", "proposal key value of the wrong type"},
    {"RG506", "proposal verb unknown"},
    {"RG507", "duplicate proposal entry"},
    {"RG508", "conflicting proposal entries"},
    {"RG509", "proposal entry already decided"},
};

const char* sarif_level(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "note";
  }
  return "error";
}

// Byte column (1-based) -> code point column (1-based) on the given line of `source`.
uint32_t code_point_column(std::string_view source, uint32_t line, uint32_t column) {
  std::string_view text;
  if (column <= 1 || !source_line(source, line, &text)) return column;
  return static_cast<uint32_t>(code_points(text, 0, column - 1) +
                               (column - 1 > text.size() ? column - 1 - text.size() : 0) + 1);
}

std::string lower_code(std::string_view code) {
  std::string out(code);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// `text` with every byte percent-encoded except RFC 3986's unreserved characters (ALPHA DIGIT
// - . _ ~), the bytes in `keep`, and, when `keep_escapes`, a '%' that already starts a
// percent-encoding (%XX), so an encoded URL passes unchanged.
std::string percent_encode(std::string_view text, std::string_view keep, bool keep_escapes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const unsigned char b = static_cast<unsigned char>(c);
    const bool escape = c == '%' && keep_escapes && i + 2 < text.size() &&
                        is_hex_digit(text[i + 1]) && is_hex_digit(text[i + 2]);
    const bool unreserved = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
                            (b >= '0' && b <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (escape || unreserved || keep.find(c) != std::string_view::npos) {
      out += c;
    } else {
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

// A file path as a SARIF artifactLocation.uri, which is a URI reference (SARIF 2.1.0 section
// 3.4.3, RFC 3986): every byte outside RFC 3986's unreserved and sub-delims characters and '@' is
// percent-encoded, '/' stays the segment separator, and ':' is encoded too so that a relative
// path such as "c:x.yaml" is not read as a scheme (RFC 3986 section 4.2).
std::string path_uri_reference(std::string_view path) {
  return percent_encode(path, "!$&'()*+,;=@/", /*keep_escapes=*/false);
}

// The --docs-url base as the start of a URI (RFC 3986): its reserved characters (scheme ':',
// '/', '?', '@', '[' ']' of an IPv6 host, sub-delims) and existing %XX escapes are kept, so a
// valid URL is unchanged; a space, a non-ASCII byte, '"', '<', '>', '\\', '^', '`', '{', '|', '}',
// a control byte or a lone '%' is encoded. So is '#': the helpUri adds its own fragment, and a
// URI has at most one.
std::string help_base_uri(std::string_view base) {
  return percent_encode(base, ":/?[]@!$&'()*+,;=", /*keep_escapes=*/true);
}

// SARIF 2.1.0 section 3.10.2 asks for an absolute URI where the path is absolute: "/tmp/x.yaml"
// is "file:///tmp/x.yaml" (RFC 8089). A relative path stays a relative reference.
std::string artifact_uri(std::string_view path) {
  const std::string reference = path_uri_reference(path);
  return path.starts_with('/') ? "file://" + reference : reference;
}

// GitHub workflow-command escaping; `property` adds ':' and ','.
std::string github_escape(std::string_view text, bool property) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '%':
        out += "%25";
        break;
      case '\r':
        out += "%0D";
        break;
      case '\n':
        out += "%0A";
        break;
      case ':':
        out += property ? "%3A" : ":";
        break;
      case ',':
        out += property ? "%2C" : ",";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string message_with_hint(const Diagnostic& d) {
  return d.hint.empty() ? d.message : d.message + "\nhint: " + d.hint;
}

}  // namespace

std::string_view diagnostic_code_title(std::string_view code) {
  for (const CodeTitle& entry : kCodeTitles) {
    if (code == entry.code) return entry.title;
  }
  return "";
}

std::string render_sarif(const std::vector<Diagnostic>& diagnostics, std::string_view source,
                         std::string_view tool_version, std::string_view help_base) {
  std::vector<std::string> codes;
  for (const Diagnostic& d : diagnostics) codes.push_back(d.code);
  std::sort(codes.begin(), codes.end());
  codes.erase(std::unique(codes.begin(), codes.end()), codes.end());

  std::string out =
      "{\n"
      "  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n"
      "  \"version\": \"2.1.0\",\n"
      "  \"runs\": [\n"
      "    {\n"
      "      \"tool\": {\n"
      "        \"driver\": {\n"
      "          \"name\": \"replaygate\",\n"
      "          \"version\": ";
  append_json_string(out, tool_version, JsonText::kAscii);
  out += ",\n          \"informationUri\": ";
  // "https://x.test/" and "https://x.test" both give "https://x.test/docs/...", never "//docs".
  std::string base = help_base_uri(help_base);
  const size_t path_start = base.find("://") == std::string::npos ? 0 : base.find("://") + 3;
  while (base.size() > path_start && base.ends_with('/')) base.pop_back();
  append_json_string(out, base + "/docs/diagnostics.md", JsonText::kAscii);
  out += ",\n          \"rules\": [";
  for (size_t i = 0; i < codes.size(); ++i) {
    const std::string_view title = diagnostic_code_title(codes[i]);
    out += i == 0 ? "\n" : ",\n";
    out += "            {\"id\": ";
    append_json_string(out, codes[i], JsonText::kAscii);
    out += ", \"shortDescription\": {\"text\": ";
    append_json_string(out, title.empty() ? "replaygate diagnostic " + codes[i] : title,
                       JsonText::kAscii);
    out += "}, \"helpUri\": ";
    append_json_string(out, base + "/docs/diagnostics.md#" + lower_code(codes[i]),
                       JsonText::kAscii);
    out += "}";
  }
  out += codes.empty() ? "]\n" : "\n          ]\n";
  out +=
      "        }\n"
      "      },\n"
      "      \"columnKind\": \"unicodeCodePoints\",\n"
      "      \"results\": [";
  for (size_t i = 0; i < diagnostics.size(); ++i) {
    const Diagnostic& d = diagnostics[i];
    const size_t rule_index =
        static_cast<size_t>(std::lower_bound(codes.begin(), codes.end(), d.code) - codes.begin());
    out += i == 0 ? "\n" : ",\n";
    out += "        {\"ruleId\": ";
    append_json_string(out, d.code, JsonText::kAscii);
    out += ", \"ruleIndex\": " + std::to_string(rule_index);
    out += ", \"level\": \"";
    out += sarif_level(d.severity);
    out += "\", \"message\": {\"text\": ";
    append_json_string(out, message_with_hint(d), JsonText::kAscii);
    out += "}";
    if (!d.path.empty()) {
      out += ", \"locations\": [{\"physicalLocation\": {\"artifactLocation\": {\"uri\": ";
      append_json_string(out, artifact_uri(d.path), JsonText::kAscii);
      out += "}";
      if (d.span.line > 0) {
        out += ", \"region\": {\"startLine\": " + std::to_string(d.span.line);
        if (d.span.column > 0) {
          out += ", \"startColumn\": " +
                 std::to_string(code_point_column(source, d.span.line, d.span.column));
        }
        out += "}";
      }
      out += "}}]";
    }
    out += "}";
  }
  out += diagnostics.empty() ? "]\n" : "\n      ]\n";
  out +=
      "    }\n"
      "  ]\n"
      "}\n";
  return out;
}

std::string render_github(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    out += "::";
    out += d.severity == Severity::kError     ? "error"
           : d.severity == Severity::kWarning ? "warning"
                                              : "notice";
    std::string properties;
    if (!d.path.empty()) properties += "file=" + github_escape(d.path, true);
    if (!d.path.empty() && d.span.line > 0) {
      properties += ",line=" + std::to_string(d.span.line);
      if (d.span.column > 0) properties += ",col=" + std::to_string(d.span.column);
    }
    if (!properties.empty()) properties += ",";
    properties += "title=" + github_escape(d.code, true);
    out += " " + properties + "::" + github_escape(message_with_hint(d), false) + "\n";
  }
  return out;
}

}  // namespace replaygate
