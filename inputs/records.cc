// Bounded line reader and JSON pre-checks shared by the record formats (see records.h).
#include "inputs/records.h"

#include <simdjson.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace replaygate::inputs {

static_assert(LineReader::kPadding >= simdjson::SIMDJSON_PADDING);

namespace {
constexpr size_t kReadBlock = size_t{64} << 10;
}  // namespace

LineReader::LineReader(int fd, size_t max_line)
    : fd_(fd),
      max_line_(max_line),
      capacity_(max_line + 2 + kReadBlock),
      buffer_(new char[capacity_]),
      line_(new char[max_line + 2 + kPadding]) {}

bool LineReader::refill() {
  if (eof_) return false;
  if (begin_ > 0) {  // keep the unfinished line, make room behind it
    std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    scanned_ -= begin_;
    begin_ = 0;
  }
  while (true) {
    const ssize_t got = ::read(fd_, buffer_.get() + end_, capacity_ - end_);
    if (got < 0) {
      if (errno == EINTR) continue;
      error_number_ = errno;
      eof_ = true;
      return false;
    }
    if (got == 0) {
      eof_ = true;
      return false;
    }
    end_ += static_cast<size_t>(got);
    return true;
  }
}

LineReader::Status LineReader::emit(size_t begin, size_t end, std::string_view* line) {
  ++line_number_;
  size_t length = end - begin;
  if (length > 0 && buffer_[begin + length - 1] == '\r') --length;
  if (length > max_line_) return Status::kTooLarge;
  std::memcpy(line_.get(), buffer_.get() + begin, length);
  std::memset(line_.get() + length, ' ', kPadding);
  *line = std::string_view(line_.get(), length);
  return Status::kLine;
}

LineReader::Status LineReader::next(std::string_view* line) {
  while (true) {
    if (error_number_ != 0) return Status::kError;
    const void* found =
        scanned_ < end_ ? std::memchr(buffer_.get() + scanned_, '\n', end_ - scanned_) : nullptr;
    if (found != nullptr) {
      const size_t newline = static_cast<size_t>(static_cast<const char*>(found) - buffer_.get());
      const size_t begin = begin_;
      begin_ = scanned_ = newline + 1;
      if (discarding_) {
        discarding_ = false;
        ++line_number_;
        return Status::kTooLarge;
      }
      return emit(begin, newline, line);
    }
    scanned_ = end_;
    if (!discarding_ && end_ - begin_ > max_line_ + 1) {  // +1: a '\r' may still be dropped
      discarding_ = true;
    }
    if (discarding_) begin_ = scanned_ = end_ = 0;  // drop what we have of the long line
    if (!refill()) {
      if (error_number_ != 0) return Status::kError;
      if (discarding_) {
        discarding_ = false;
        ++line_number_;
        return Status::kTooLarge;
      }
      if (begin_ < end_) {  // last line without a newline
        const size_t begin = begin_;
        begin_ = scanned_ = end_;
        return emit(begin, end_, line);
      }
      return Status::kEnd;
    }
  }
}

std::string describe_json_error(int simdjson_error_code) {
  const auto code = static_cast<simdjson::error_code>(simdjson_error_code);
  switch (code) {
    case simdjson::UTF8_ERROR:
      return "not valid UTF-8";
    case simdjson::EMPTY:
      return "blank line";
    case simdjson::UNESCAPED_CHARS:
      return "bad JSON (unescaped control character in a string)";
    case simdjson::UNCLOSED_STRING:
      return "bad JSON (unclosed string)";
    default:
      return std::string("bad JSON (") + simdjson::error_message(code) + ")";
  }
}

bool is_json_number(std::string_view token) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t from = i;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i;
    return i > from;
  };
  if (i < token.size() && token[i] == '-') ++i;
  if (i < token.size() && token[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < token.size() && token[i] == '.' && (++i, !digits())) return false;
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < token.size() && (token[i] == '+' || token[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == token.size();
}

JsonArrayReader::JsonArrayReader(int fd, size_t max_record, std::string member)
    : member_(std::move(member)), fd_(fd), max_record_(max_record), buffer_(new char[kReadBlock]) {}

bool JsonArrayReader::skip_value(char c, char* terminator) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  while (true) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) break;
      --depth;
    } else if (c == ',' && depth == 0) {
      break;
    }
    if (!get(&c)) return false;
  }
  *terminator = c;
  return true;
}

// After a member's opening '"' in the top-level object: reads its key, the ':' and the first byte
// of its value (*first). *is_member: the key, unescaped, is member_ (so "Messag\u0065s" is
// "Messages", and a second one is seen as such). False with *why at bad JSON or the end.
bool JsonArrayReader::read_member_key(bool* is_member, char* first, std::string* why) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  const std::string ended = "the dump ends inside its top-level object";
  // An escape spells a byte in at most 6 bytes (\uXXXX) and a 4-byte character in 12: a longer
  // raw key cannot be member_, and is not kept.
  const size_t cap = member_.size() * 6 + 16;
  std::string raw;
  bool escaped = false, fits = true;
  char c = 0;
  while (true) {
    if (!get(&c)) return (*why = ended, false);
    if (!escaped && c == '"') break;
    escaped = !escaped && c == '\\';
    if (raw.size() < cap) {
      raw.push_back(c);
    } else {
      fits = false;
    }
  }
  std::string key = raw;
  if (fits && raw.find('\\') != std::string::npos) {
    const nlohmann::json unescaped =
        nlohmann::json::parse("\"" + raw + "\"", nullptr, /*allow_exceptions=*/false);
    if (!unescaped.is_string()) return (*why = "bad JSON in the top-level object", false);
    key = unescaped.get<std::string>();
  }
  *is_member = fits && key == member_;
  do {
    if (!get(&c)) return (*why = ended, false);
  } while (is_space(c));
  if (c != ':') return (*why = "bad JSON in the top-level object", false);
  do {
    if (!get(&c)) return (*why = ended, false);
  } while (is_space(c));
  *first = c;
  return true;
}

LineReader::Status JsonArrayReader::start_in_object() {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  char c = 0;
  do {
    if (!get(&c)) {  // aws prints nothing when no message was received
      state_ = State::kDone;
      return error_number_ != 0 ? fail("") : LineReader::Status::kEnd;
    }
  } while (is_space(c));
  if (c != '{') return fail("not a JSON object with \"" + member_ + "\": [...]");
  while (true) {
    do {
      if (!get(&c)) return fail("the dump ends inside its top-level object");
    } while (is_space(c));
    if (c == '}') {  // no member_: no record
      closed_object_ = true;
      return end_of_array();
    }
    if (c != '"') return fail("not a JSON object with \"" + member_ + "\": [...]");
    bool is_member = false;
    std::string why;
    if (!read_member_key(&is_member, &c, &why)) return fail(std::move(why));
    if (is_member) {
      if (c != '[') return fail("\"" + member_ + "\" is not a JSON array");
      state_ = State::kFirst;
      return LineReader::Status::kLine;  // not a record: the caller goes on
    }
    char terminator = 0;
    if (!skip_value(c, &terminator)) return fail("the dump ends inside its top-level object");
    if (terminator == '}') {
      closed_object_ = true;
      return end_of_array();
    }
    if (terminator != ',') return fail("bad JSON in the top-level object");
  }
}

LineReader::Status JsonArrayReader::end_of_array() {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  char c = 0;
  state_ = State::kDone;
  if (!member_.empty() && !closed_object_) {
    // The rest of the top-level object after the array: other members, then '}'. A second
    // member_ array would be records read by no one (a JSON parser keeps one of the two): the
    // dump is refused, after the first array's records, rather than end as if complete.
    closed_object_ = true;
    while (true) {
      do {
        if (!get(&c)) return fail("the dump ends inside its top-level object");
      } while (is_space(c));
      if (c == '}') break;
      if (c != ',') return fail("bad JSON in the top-level object");
      do {
        if (!get(&c)) return fail("the dump ends inside its top-level object");
      } while (is_space(c));
      if (c != '"') return fail("bad JSON in the top-level object");
      bool is_member = false;
      std::string why;
      if (!read_member_key(&is_member, &c, &why)) return fail(std::move(why));
      if (is_member) {
        return fail("the top-level object gives \"" + member_ +
                    "\" twice: the records of the second are not read (merge them into one array)");
      }
      char terminator = 0;
      if (!skip_value(c, &terminator)) return fail("the dump ends inside its top-level object");
      if (terminator == '}') break;
      --begin_;  // the ',' is read again
    }
  }
  while (get(&c)) {
    if (!is_space(c)) return fail("content after the dump's closing bracket");
  }
  return error_number_ != 0 ? fail("") : LineReader::Status::kEnd;
}

bool JsonArrayReader::get(char* c) {
  if (begin_ == end_) {
    if (eof_ || error_number_ != 0) return false;
    ssize_t got = 0;
    do {
      got = ::read(fd_, buffer_.get(), kReadBlock);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      error_number_ = errno;
      error_text_ = std::strerror(errno);
      return false;
    }
    if (got == 0) {
      eof_ = true;
      return false;
    }
    begin_ = 0;
    end_ = static_cast<size_t>(got);
  }
  *c = buffer_[begin_++];
  return true;
}

LineReader::Status JsonArrayReader::fail(std::string text) {
  state_ = State::kDone;
  if (error_number_ == 0) error_text_ = std::move(text);
  return LineReader::Status::kError;
}

LineReader::Status JsonArrayReader::next(std::string_view* record) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  char c = 0;
  if (state_ == State::kDone)
    return error_text_.empty() ? LineReader::Status::kEnd : LineReader::Status::kError;
  if (state_ == State::kStart && !member_.empty()) {
    const LineReader::Status status = start_in_object();
    if (status != LineReader::Status::kLine) return status;
  }
  if (state_ == State::kStart) {
    do {
      if (!get(&c)) return fail("not a JSON array: the dump is empty");
    } while (is_space(c));
    if (c != '[') {
      return fail(c == '\xEF' ? "not a JSON array: " + std::string(kByteOrderMarkProblem)
                              : "not a JSON array (a management-API /get response is one)");
    }
    state_ = State::kFirst;
  }
  if (state_ == State::kAfterElement) {
    do {
      if (!get(&c)) return fail("the dump ends inside the array (no closing ']')");
    } while (is_space(c));
    if (c == ']') return end_of_array();
    if (c != ',') {
      return fail("expected ',' or ']' after element /" + std::to_string(position_ - 1));
    }
    state_ = State::kAfterComma;
  }
  // The first byte of the next element (or the closing ']' of an empty array).
  do {
    if (!get(&c)) return fail("the dump ends inside the array (no closing ']')");
  } while (is_space(c));
  if (c == ']') {
    if (state_ == State::kAfterComma) return fail("a ',' before the array's closing ']'");
    return end_of_array();
  }
  ++position_;
  element_.clear();
  bool too_large = false;
  size_t depth = 0;
  bool in_string = false, escaped = false;
  // Reads to the element's end: a ',' or ']' outside strings at depth 0, left for the next call
  // (kept in the buffer by stepping back one byte).
  while (true) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) break;
      --depth;
    } else if (c == ',' && depth == 0) {
      break;
    }
    if (!too_large) {
      if (element_.size() >= max_record_) {
        too_large = true;
        element_.clear();
      } else {
        element_.push_back(c);
      }
    }
    if (!get(&c)) {
      // A whole object or array before the end: it is decided; the missing ']' is reported next.
      const size_t last = element_.find_last_not_of(" \t\n\r");
      const bool whole = !too_large && depth == 0 && !in_string && last != std::string::npos &&
                         (element_[last] == '}' || element_[last] == ']');
      if (!whole) return fail("the dump ends inside element /" + std::to_string(position_ - 1));
      ++begin_;  // nothing to read again
      break;
    }
  }
  --begin_;  // the ',' or ']' is read again after the element
  state_ = State::kAfterElement;
  if (too_large) return LineReader::Status::kTooLarge;
  while (!element_.empty() && is_space(element_.back())) element_.pop_back();
  const size_t size = element_.size();
  element_.append(LineReader::kPadding, ' ');
  *record = std::string_view(element_.data(), size);
  return LineReader::Status::kLine;
}

}  // namespace replaygate::inputs
