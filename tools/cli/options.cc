// Strict parsing of count options and operator names (see options.h).
#include "tools/cli/options.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "inputs/records.h"

namespace replaygate::cli {

bool parse_count(const CountOption& option, std::string_view text, uint64_t* value) {
  if (text.empty()) return false;
  uint64_t number = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<uint64_t>(c - '0');
    // number * 10 + digit > max, asked without overflowing
    if (digit > option.max || number > (option.max - digit) / 10) return false;
    number = number * 10 + digit;
  }
  if (number < option.min) return false;
  *value = number;
  return true;
}

std::string count_error(const CountOption& option, std::string_view text) {
  std::string message(option.name);
  message += " takes a whole number";
  if (!option.unit.empty()) message += " of " + std::string(option.unit);
  // The range in full, the largest value too: "9223372036854775808" is then plainly too large.
  message += " from " + std::to_string(option.min) + " to " + std::to_string(option.max);
  message += " (decimal), not '" + std::string(text) + "'";
  return message;
}

std::string operator_error(std::string_view name, std::string_view option) {
  const std::string problem = operator_name_problem(name);
  if (problem.empty()) return "";
  return std::string(option) + " " + problem +
         ": who acted is recorded in the audit log and must be printable text on one line (e.g. " +
         std::string(option) + " ana)";
}

std::string docs_url_error(std::string_view url) {
  const auto starts_with_nocase = [&](std::string_view prefix) {
    if (url.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(url[i])) != prefix[i]) return false;
    }
    return true;
  };
  const size_t scheme = starts_with_nocase("https://") ? 8 : starts_with_nocase("http://") ? 7 : 0;
  // The host: the authority (up to the path) without user info and port, e.g. "[::1]".
  std::string_view authority = url.substr(scheme, url.find('/', scheme) - scheme);
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  const std::string_view host = authority.starts_with('[')
                                    ? authority.substr(0, authority.find(']') + 1)
                                    : authority.substr(0, authority.find(':'));
  if (scheme == 0 || host.empty() || url.find_first_of("?#") != std::string_view::npos) {
    return "--docs-url must be an absolute http:// or https:// URL with a host and without a "
           "query (?) or fragment (#), e.g. https://example.com/replaygate, not '" +
           escape_control(url) + "'";
  }
  // Every byte must be one RFC 3986 allows in a URI (SARIF's helpUri is one): unreserved,
  // reserved or a %XX escape. A space, a quote or a non-ASCII byte makes it no URL; it used to
  // be percent-encoded silently, so the links pointed somewhere the user never wrote.
  static constexpr std::string_view kAllowed =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=";
  const auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  for (size_t i = 0; i < url.size(); ++i) {
    const char c = url[i];
    if (c == '%' && i + 2 < url.size() && hex(url[i + 1]) && hex(url[i + 2])) {
      i += 2;
      continue;
    }
    if (c != '%' && kAllowed.find(c) != std::string_view::npos) continue;
    const unsigned char b = static_cast<unsigned char>(c);
    // The escape to write: for a non-ASCII character, all its bytes (é is %C3%A9).
    size_t end = i + 1;
    while (b >= 0x80 && end < url.size() && static_cast<unsigned char>(url[end]) >= 0x80) ++end;
    std::string escape;
    for (size_t j = i; j < end; ++j) {
      char hex_byte[4];
      std::snprintf(hex_byte, sizeof hex_byte, "%%%02X", static_cast<unsigned char>(url[j]));
      escape += hex_byte;
    }
    std::string what = c == ' '                ? "a space"
                       : c == '%'              ? "a '%' that starts no %XX escape"
                       : b >= 0x80             ? "a non-ASCII byte"
                       : b < 0x20 || b == 0x7F ? "a control character"
                                               : std::string("the character '") + c + "'";
    return "--docs-url is not a URL: it has " + what + " at byte " + std::to_string(i + 1) +
           " of '" + escape_control(url) + "'; write it percent-encoded (" + escape +
           "), as RFC 3986 asks";
  }
  // After the host, ':' starts a port: digits only (https://ex.com:80/docs).
  const std::string_view after_host = authority.substr(std::min(
      authority.size(), static_cast<size_t>(host.data() - authority.data()) + host.size()));
  if (!after_host.empty()) {
    const std::string_view port = after_host.substr(1);
    if (after_host[0] != ':' || port.find_first_not_of("0123456789") != std::string_view::npos) {
      return "--docs-url is not a URL: the port '" + escape_control(port) + "' of '" +
             escape_control(url) + "' is not a number";
    }
  }
  return "";
}

}  // namespace replaygate::cli
