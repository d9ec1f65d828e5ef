// Bounded reading and byte screening of policy source text (see source.h).
#include "common/source.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "common/utf8.h"

namespace replaygate {

bool read_source_file(const std::string& path, std::string* text, std::string* error) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    *error = "cannot read '" + path + "': it is a directory";
    return false;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  text->clear();
  char buffer[1 << 16];
  while (text->size() <= kMaxSourceBytes && file.read(buffer, sizeof buffer).gcount() > 0) {
    text->append(buffer, static_cast<size_t>(file.gcount()));
  }
  if (file.bad()) {
    *error = "cannot read '" + path + "': read error";
    return false;
  }
  if (text->size() > kMaxSourceBytes + 1) text->resize(kMaxSourceBytes + 1);
  return true;
}

std::optional<SourceProblem> screen_source(std::string_view text, const SourceRules& rules) {
  uint32_t line = 1;
  size_t line_start = 0;
  const auto fail = [&](std::string code, std::string message, size_t offset, std::string hint) {
    return SourceProblem{std::move(code),
                         std::move(message),
                         std::move(hint),
                         offset,
                         line,
                         static_cast<uint32_t>(offset - line_start + 1)};
  };
  const auto hex = [](unsigned char c) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "0x%02X", c);
    return std::string(buffer);
  };
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    return fail("RG010", "the file starts with a byte order mark", 0,
                "save the file as UTF-8 without a BOM");
  }
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      ++i;
      continue;
    }
    if (rules.max_line_bytes != 0 && i - line_start >= rules.max_line_bytes) {
      return fail("RG015",
                  "line " + std::to_string(line) + " is longer than " +
                      std::to_string(rules.max_line_bytes) + " bytes",
                  i, "break the item over several lines; a single text must stay below the limit");
    }
    if (c == 0) {
      return fail("RG011", "the file contains a NUL byte", i,
                  "a policy is UTF-8 text; check the file's encoding (UTF-16?)");
    }
    if (!rules.lone_carriage_return_ok && c == '\r' &&
        (i + 1 >= text.size() || text[i + 1] != '\n')) {
      return fail("RG011", "the file contains a carriage return that does not end a line", i,
                  "use LF or CRLF line endings");
    }
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      return fail("RG011", "the file contains the control byte " + hex(c), i,
                  "remove it; a policy is plain UTF-8 text");
    }
    const size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      return fail("RG009", "the file is not valid UTF-8 (byte " + hex(c) + ")", i,
                  "save the file as UTF-8");
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace replaygate
