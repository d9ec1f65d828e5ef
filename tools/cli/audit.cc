// The audit trail: locked, fsynced, single-write appends and a verifier (see audit.h).
#include "tools/cli/audit.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <span>
#include <system_error>
#include <utility>

#include "common/names.h"
#include "common/utf8.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/records.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate::cli::audit {
namespace {

using nlohmann::json;

const std::string kZeroHash(32, '0');
constexpr uint64_t kMaxRevision = 9223372036854775807u;  // INT64_MAX, as the writers' counts
constexpr const char* kRevisionRange = "a whole number from 0 to 9223372036854775807";

std::string errno_text(int error) { return std::generic_category().message(error); }

// Closes the descriptor (which also drops the flock) on every path out of append().
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool read_all(int fd, uint64_t size, std::string* out, int* error) {
  out->resize(size);
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out->data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = errno;
      return false;
    }
    if (n == 0) break;  // shrank meanwhile (cannot happen under the lock; be safe)
    done += static_cast<uint64_t>(n);
  }
  out->resize(done);
  return true;
}

// `bytes` cut to at most `max` bytes at a UTF-8 sequence boundary.
std::string_view utf8_prefix(std::string_view bytes, size_t max) {
  if (bytes.size() <= max) return bytes;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(bytes[cut]) & 0xC0) == 0x80) --cut;
  return bytes.substr(0, cut);
}

// A field's value for a message: its JSON text with everything past ASCII as \uXXXX (so no
// control or bidi character reaches the terminal, and nothing is escaped twice), cut to 64 bytes
// ("...").
std::string shown(const json& value) {
  const std::string text = value.dump(-1, ' ', true, json::error_handler_t::replace);
  const std::string_view cut = std::string_view(text).substr(0, 64);
  return std::string(cut) + (cut.size() < text.size() ? "..." : "");
}

// The source text of the top-level member `key` of the JSON object `line` (which nlohmann
// accepted), without the white space around it; "" when it has no such member. A value is shown
// as written: nlohmann reads 100000000000000000000 as a double, which it would dump as 1e+20.
std::string_view member_text(std::string_view line, const char* key) {
  const size_t start = locate_member_value(line, {key});
  if (start == RecordParser::kNoOffset) return {};
  // The value ends at the ',' or '}' that closes it, outside strings and nested brackets.
  size_t end = start;
  for (int depth = 0; end < line.size(); ++end) {
    const char c = line[end];
    if (c == '"') {
      for (++end; end < line.size() && line[end] != '"';) end += line[end] == '\\' ? 2 : 1;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}' || c == ',') {
      if (depth == 0) break;
      if (c != ',') --depth;
    }
  }
  while (end > start && (line[end - 1] == ' ' || line[end - 1] == '\t' || line[end - 1] == '\r' ||
                         line[end - 1] == '\n')) {
    --end;
  }
  return line.substr(start, end - start);
}

// The value of the member `key` of entry `j` for a message: as written in `line` when that is
// printable ASCII (nothing there can drive a terminal), else shown(); shown() for an entry that was
// not read from a line (line empty: a writer's entry).
std::string shown_member(const json& j, std::string_view line, const char* key) {
  const std::string_view text = line.empty() ? std::string_view() : member_text(line, key);
  if (text.empty() || std::any_of(text.begin(), text.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7E;
      })) {
    return shown(j.at(key));
  }
  const std::string_view cut = text.substr(0, 64);
  return std::string(cut) + (cut.size() < text.size() ? "..." : "");
}

// A field name for a message (an unknown key may hold anything).
std::string name_of(std::string_view key) {
  return "'" + escape_control(utf8_prefix(key, 64)) + "'";
}

bool is_hex32(const json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A whole number from `min` to `max` (JSON integers only: 1.0 and 1e0 are not counts).
// (A parsed non-negative number is unsigned; one the writer set from an int64_t is signed.)
bool is_count(const json& v, uint64_t min, uint64_t max) {
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) return false;
  const auto value = v.get<uint64_t>();
  return value >= min && value <= max;
}

// Whether `v` is "YYYY-MM-DDTHH:MM:SSZ" naming a real UTC second that utc_now() can write: from
// 1970 (time(2) counts from then), no leap second (gmtime_r never gives one). When it is not, *why
// says what is impossible about a value of that shape ("there is no month 13"), or "" for another
// shape.
bool is_utc_time(const json& v, std::string* why) {
  why->clear();
  if (!v.is_string()) return false;
  const std::string& t = v.get_ref<const std::string&>();
  static constexpr char kShape[] = "dddd-dd-ddTdd:dd:ddZ";
  constexpr size_t kSize = sizeof(kShape) - 1;
  const auto digits_match = [&t](size_t count) {
    for (size_t i = 0; i < count; ++i) {
      if (kShape[i] == 'd' ? (t[i] < '0' || t[i] > '9') : t[i] != kShape[i]) return false;
    }
    return true;
  };
  if (t.size() < kSize - 1 || !digits_match(kSize - 1)) return false;
  if (t.size() != kSize || t.back() != 'Z') {
    // An ISO 8601 offset (+01:00, -0500): the writers write UTC, marked Z.
    if (t[kSize - 1] == '+' || t[kSize - 1] == '-') *why = "an offset from UTC, not Z";
    return false;
  }
  const auto number = [&t](size_t at, size_t digits) {
    int n = 0;
    for (size_t i = at; i < at + digits; ++i) n = n * 10 + (t[i] - '0');
    return n;
  };
  const int year = number(0, 4), month = number(5, 2), day = number(8, 2);
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (year < 1970) {
    *why = "before 1970, which no writer's clock gives";
  } else if (month < 1 || month > 12) {
    *why = "there is no month " + t.substr(5, 2);
  } else if (day < 1) {
    *why = "there is no day 00";
  } else if (const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
             day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) {
    *why = t.substr(0, 7) + " has " + std::to_string(kDays[month - 1] + (month == 2 && leap)) +
           " days";
  } else if (number(11, 2) > 23) {
    *why = "hours run from 00 to 23";
  } else if (number(14, 2) > 59) {
    *why = "minutes run from 00 to 59";
  } else if (number(17, 2) > 59) {
    *why = "seconds run from 00 to 59: no writer writes a leap second";
  }
  return why->empty();
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// Parses one line as a JSON object with no key given twice (nlohmann would keep the last one, so
// `"effect":"none","effect":"create"` would read as create). "" or what is wrong.
std::string parse_object(std::string_view line, json* out) {
  DuplicateKeyWatch watch;
  // The same structural bound as letters: no deep nesting reaches the parser (or dump(), which
  // recurses, when a value is shown in a message).
  if (scan_json_shape(line, kMaxJsonDepth) == JsonShape::kTooDeep) {
    return "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (no entry is)";
  }
  *out = json::parse(line, watch.callback(), /*allow_exceptions=*/false);
  if (out->is_discarded()) return "not valid JSON";
  if (!out->is_object()) return "not a JSON object";
  if (!watch.duplicate().empty()) {
    return "the field " + name_of(watch.duplicate()) + " is given twice";
  }
  return "";
}

// What every entry has, then each kind's fields (docs/recovery.md, "Audit trail"), in the order
// they are checked. `source` and `record` are written by `decide --audit` only (both or neither);
// a result's `operator` is optional.
const char* const kCommon[] = {"seq", "prev", "kind", "time"};
const char* const kDecision[] = {
    "operator", "message_id",      "operation_id",   "action",          "effect", "rule",
    "policy",   "policy_revision", "table_checksum", "record_revision", "source", "record"};
const char* const kResult[] = {"decision", "revision", "outcome", "operator"};
const char* const kRepair[] = {"operator", "reason", "covers", "problem_count", "problems"};
// How many of the problems it acknowledges a repair entry lists (problem_count counts them all).
constexpr size_t kRepairListed = 10;

// The problem with one entry (a JSON object, so no key twice), or "" when it is valid. Only the
// entry itself is checked here; its place in the chain and the log is verify_bytes()'. `line` is
// the entry's source text, from which bad values are shown as written ("" for a writer's entry).
std::string check_fields(const json& j, std::string_view line = {}) {
  const auto value_of = [&](const char* key) { return shown_member(j, line, key); };
  if (!j.contains("seq")) return "no 'seq'";
  if (!is_count(j.at("seq"), 1, UINT64_MAX)) {
    return "'seq' is " + value_of("seq") + "; expected a whole number from 1";
  }
  if (!j.contains("prev")) return "no 'prev' hash";
  if (!is_hex32(j.at("prev"))) return "'prev' is " + value_of("prev") + "; expected 32 hex digits";
  if (!j.contains("kind")) return "no 'kind'";
  if (j.at("kind") != "decision" && j.at("kind") != "result" && j.at("kind") != "repair") {
    return "unknown kind " + value_of("kind") + "; expected \"decision\", \"result\" or \"repair\"";
  }
  const bool decision = j.at("kind") == "decision";
  const bool repair = j.at("kind") == "repair";
  const std::string kind = j.at("kind");
  const std::span<const char* const> fields = decision ? std::span<const char* const>(kDecision)
                                              : repair ? std::span<const char* const>(kRepair)
                                                       : std::span<const char* const>(kResult);
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* name : kCommon) known = known || key == name;
    for (const char* name : fields) known = known || key == name;
    if (!known) return "unknown field " + name_of(key) + " in a " + kind + " entry";
  }
  const auto missing = [&](const char* key) { return kind + " entry without '" + key + "'"; };
  const auto bad = [&](const char* key, const std::string& expected) {
    return "'" + std::string(key) + "' is " + value_of(key) + "; expected " + expected;
  };
  if (!j.contains("time")) return missing("time");
  if (std::string why; !is_utc_time(j.at("time"), &why)) {
    return "'time' is " + value_of("time") + (why.empty() ? "" : " (" + why + ")") +
           "; expected a UTC time YYYY-MM-DDTHH:MM:SSZ";
  }
  if (j.contains("operator") || decision || repair) {
    if (!j.contains("operator")) return missing("operator");
    if (!j.at("operator").is_string()) return bad("operator", "a string");
    if (const std::string why =
            operator_name_problem(j.at("operator").get_ref<const std::string&>());
        !why.empty()) {
      return "'operator' " + why;
    }
  }
  if (decision) {
    for (const char* key : kDecision) {
      if (!j.contains(key) && std::string_view(key) != "source" &&
          std::string_view(key) != "record") {
        return missing(key);
      }
    }
    for (const char* key : {"message_id", "operation_id"}) {
      if (!j.at(key).is_string() && !j.at(key).is_null()) return bad(key, "a string or null");
    }
    // The verb and the rule as the policy names them (common/names.h): a value with spaces
    // around it (" ", "default ") names nothing the policy has.
    const json& action = j.at("action");
    if (!action.is_string() || !names::is_name(action.get_ref<const std::string&>())) {
      return bad("action",
                 "a verb name (a letter or '_', then letters, digits, '_', '.' or '-', as in the "
                 "policy)");
    }
    const json& rule = j.at("rule");
    if (!rule.is_string() || !names::is_rule_id(rule.get_ref<const std::string&>())) {
      return bad("rule",
                 "a rule id (one word: no spaces or control characters, as in the policy) or "
                 "\"default\"");
    }
    if (!j.at("policy").is_string() || j.at("policy").get_ref<const std::string&>().empty()) {
      return bad("policy", "a non-empty string");
    }
    const json& effect = j.at("effect");
    if (effect != "none" && effect != "read" && effect != "copy" && effect != "create") {
      return bad("effect", "none, read, copy or create");
    }
    // 'default' is a reserved rule id: it names the default decision, whose verb has effect none
    // (the compiler and the table loader both enforce it).
    if (j.at("rule") == "default" && effect != "none") {
      return "'effect' is " + value_of("effect") +
             " but 'rule' is \"default\": the default verb's effect is always none";
    }
    if (!is_count(j.at("policy_revision"), 0, kMaxRevision)) {
      return bad("policy_revision", kRevisionRange);
    }
    if (!is_hex32(j.at("table_checksum"))) return bad("table_checksum", "32 hex digits");
    // The operation record's revision as read (review copies it; a record may hold any integer,
    // or a string; null when absent or when decide recorded it).
    const json& record_revision = j.at("record_revision");
    if (!record_revision.is_number_integer() && !record_revision.is_string() &&
        !record_revision.is_null()) {
      return bad("record_revision", "an integer, a string or null");
    }
    if (j.contains("source") != j.contains("record")) {
      return j.contains("source") ? missing("record") : missing("source");
    }
    if (j.contains("source") && !j.at("source").is_string()) return bad("source", "a string");
    if (j.contains("record") && !is_count(j.at("record"), 1, UINT64_MAX)) {
      return bad("record", "a line number (a whole number from 1)");
    }
  } else if (repair) {
    for (const char* key : kRepair) {
      if (!j.contains(key)) return missing(key);
    }
    // Why the log was repaired, as `audit repair --reason` takes it: one printable line.
    if (!j.at("reason").is_string()) return bad("reason", "a string");
    if (const std::string why = operator_name_problem(j.at("reason").get_ref<const std::string&>());
        !why.empty()) {
      return "'reason' " + why;
    }
    if (!is_hex32(j.at("covers"))) return bad("covers", "32 hex digits");
    if (!is_count(j.at("problem_count"), 1, UINT64_MAX)) {
      return bad("problem_count", "a whole number from 1 (a repair acknowledges a problem)");
    }
    // The first kRepairListed problems, as `audit verify` words them.
    const json& problems = j.at("problems");
    const size_t listed = std::min<uint64_t>(j.at("problem_count").get<uint64_t>(), kRepairListed);
    if (!problems.is_array() || problems.size() != listed ||
        !std::all_of(problems.begin(), problems.end(),
                     [](const json& p) { return p.is_string(); })) {
      return bad("problems", "a list of " + std::to_string(listed) + " problem text" +
                                 (listed == 1 ? "" : "s") + " (the first of 'problem_count')");
    }
  } else {
    for (const char* key : {"decision", "revision", "outcome"}) {
      if (!j.contains(key)) return missing(key);
    }
    if (!is_count(j.at("decision"), 1, UINT64_MAX)) {
      return "result entry's 'decision' is " + value_of("decision") +
             "; expected the seq of a decision entry";
    }
    if (!is_count(j.at("revision"), 0, kMaxRevision)) return bad("revision", kRevisionRange);
    // Not only spaces and tabs: what `audit result --outcome` accepts.
    if (!j.at("outcome").is_string() ||
        j.at("outcome").get_ref<const std::string&>().find_first_not_of(" \t") ==
            std::string::npos) {
      return bad("outcome", "a string that says what happened");
    }
  }
  return "";
}

// The problem with one complete line, or "" when it is a valid entry (then *out holds it).
std::string check_entry(std::string_view line, json* out) {
  if (line.empty()) return "empty line";
  if (is_blank(line)) return "blank line (only whitespace)";
  json j;
  if (std::string problem = parse_object(line, &j); !problem.empty()) return problem;
  if (std::string problem = check_fields(j, line); !problem.empty()) return problem;
  *out = std::move(j);
  return "";
}

// Whether the unterminated last bytes of a log are a whole line rather than a cut one: a JSON
// object. A crash cuts a writer's line before its closing brace, and that brace is the line's
// only '}' outside a string (no entry holds an object), so a cut line never parses as an object:
// a whole one lost only its '\n' (an editor, a copy) and may have been acknowledged. It is kept,
// never truncated, whatever else is wrong with it (seq, prev, a field: problems of its line), and
// so is anything nested too deeply to parse, which no writer writes either.
bool is_whole_object(std::string_view fragment) {
  if (scan_json_shape(fragment, kMaxJsonDepth) == JsonShape::kTooDeep) return true;
  return json::parse(fragment, nullptr, /*allow_exceptions=*/false).is_object();
}

// Whether an unterminated fragment that is not a whole object can be what a crashed append
// left: the start of a line a writer writes. A writer's line is nlohmann's dump of the entry,
// whose keys come sorted, so it starts `{"action":"` (a decision), `{"decision":` (a result) or
// `{"covers":"` (a repair); a crash can cut it anywhere, even inside that prefix. Anything else (a
// note, a dead letter: a file that is not an audit log) is not removed: refusing keeps the bytes.
bool looks_like_torn_entry(std::string_view fragment) {
  for (const std::string_view start :
       {std::string_view(R"({"action":")"), std::string_view(R"({"decision":)"),
        std::string_view(R"({"covers":")")}) {
    const size_t n = std::min(fragment.size(), start.size());
    if (fragment.substr(0, n) == start.substr(0, n)) return true;
  }
  return false;
}

// Why an unterminated fragment at `line` of `path` is not removed (not the start of an entry).
std::string not_a_torn_entry(const std::string& path, const std::string& line,
                             std::string_view fragment) {
  return "the last line of " + path + " (line " + line +
         ", without a newline) is neither an audit entry nor the start of one (it begins '" +
         escape_control(utf8_prefix(fragment, 40)) + "'" + (fragment.size() > 40 ? "..." : "") +
         "): " + path +
         " is not an audit log, or not one this version wrote; nothing was changed. Check the "
         "path; if it is the log, run 'replaygate audit verify " +
         path + "'";
}

// The end of the last line of bytes[0, complete) that is not blank (empty, or only spaces, tabs
// and CRs: an editor's empty last line, a Windows line ending), its '\n' included (0 when every
// line there is blank): the lines between it and `complete` hold no entry.
size_t end_of_last_nonblank_line(std::string_view bytes, size_t complete) {
  size_t end = complete;
  while (end > 0) {
    const size_t previous = end >= 2 ? bytes.rfind('\n', end - 2) : std::string_view::npos;
    const size_t start = previous == std::string_view::npos ? 0 : previous + 1;
    if (!is_blank(bytes.substr(start, end - 1 - start))) break;
    end = start;
  }
  return end;
}

// How many lines bytes[from, to) holds (whole lines: each ends with '\n').
size_t lines_in(std::string_view bytes, size_t from, size_t to) {
  return static_cast<size_t>(std::count(bytes.begin() + from, bytes.begin() + to, '\n'));
}

}  // namespace

json::parser_callback_t DuplicateKeyWatch::callback() {
  return [this](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys_seen_.emplace_back();
    if (event == json::parse_event_t::object_end && !keys_seen_.empty()) keys_seen_.pop_back();
    if (event == json::parse_event_t::key) {
      last_key_ = parsed.get<std::string>();
      if (!keys_seen_.empty() && duplicate_.empty() &&
          !keys_seen_.back().insert(last_key_).second) {
        duplicate_ = last_key_;
      }
    }
    return true;
  };
}

void DuplicateKeyWatch::reset() {
  keys_seen_.clear();
  duplicate_.clear();
  last_key_.clear();
}

std::string line_hash(std::string_view line) {
  const XXH128_hash_t h = XXH3_128bits(line.data(), line.size());
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

// A log read whole: what verify reports, and what an append or a repair continues from.
struct Scan {
  VerifyReport report;
  std::map<uint64_t, uint64_t> decisions;  // decision seq -> seq of its result (0: none yet)
  size_t complete = 0;                     // the end of the last '\n' (0 when there is none)
  size_t body_end = 0;  // the end of the last complete line that is not blank, its '\n' included
  // The bytes after the last '\n' are a line of the log (a whole object, or bytes that are not the
  // start of an entry): no append or repair removes them; a repair writes their '\n' first, and so
  // does an append, which continues only a log that verifies.
  bool kept_fragment = false;
  bool foreign_fragment = false;  // of which: neither an entry nor the start of one
  uint64_t last_seq = 0;          // the seq of the last valid entry
  std::string last_time;          // its time ("" before the first)
  uint64_t seq_expected = 0;      // the seq the last line that is not blank should have
  uint64_t max_seq = 0;           // the largest seq of a valid entry
};

// The line number a problem ("line N: ...") names.
uint64_t problem_line(const std::string& problem) {
  return std::strtoull(problem.c_str() + std::strlen("line "), nullptr, 10);
}

Scan scan_log(std::string_view bytes) {
  Scan s;
  VerifyReport& report = s.report;
  report.last_hash = kZeroHash;
  const size_t last_newline = bytes.rfind('\n');
  s.complete = last_newline == std::string_view::npos ? 0 : last_newline + 1;
  // Empty lines at the very end, after the last entry (the file ends "\n\n"): no entry is missing
  // there, so they are tolerated (and removed by the next append), unless an entry follows them.
  s.body_end = end_of_last_nonblank_line(bytes, s.complete);
  // What each table (by checksum) was recorded as: one table is one policy revision, and gives
  // each verb one effect.
  struct TableSeen {
    std::string policy;
    json revision;
    uint64_t line = 0;
    std::map<std::string, std::pair<std::string, uint64_t>> effects;  // action -> effect, line
  };
  std::map<std::string, TableSeen> tables;
  uint64_t line_number = 0;
  uint64_t last_time_line = 0;
  // Checks one line (complete, or the kept unterminated last one, which starts at `offset`) and
  // advances the chain.
  const auto check_line = [&](std::string_view line, size_t offset) {
    ++line_number;
    const std::string where = "line " + std::to_string(line_number) + ": ";
    if (is_blank(line)) {
      // Never written by an appender, so not part of the chain: the entries around it are checked
      // as if it were not there.
      report.problems.push_back(where +
                                (line.empty() ? "empty line" : "blank line (only whitespace)") +
                                "; delete it (the entries around it are checked as if it were "
                                "not there)");
      ++report.blank_lines;
      return;
    }
    ++s.seq_expected;
    json entry;
    if (const std::string problem = check_entry(line, &entry); !problem.empty()) {
      report.problems.push_back(where + problem);
      report.last_hash = line_hash(line);
      return;
    }
    const uint64_t seq = entry["seq"];
    const std::string& time = entry["time"].get_ref<const std::string&>();
    const auto check_prev = [&] {
      if (entry["prev"] != report.last_hash) {
        report.problems.push_back(where +
                                  "prev hash does not match the previous line (a line "
                                  "before it was edited, removed or reordered)");
      }
    };
    if (entry["kind"] == "repair") {
      // `audit repair` re-anchors a broken chain: `covers` is the hash of every byte before its
      // line as the repair found them, so the problems up to here are acknowledged (kept in the
      // file, reported as repaired) for as long as none of those bytes changes. Its seq follows
      // every seq before it (a line may have been removed), and the entries after it count on
      // from it; its time is the repair's (the times before it may be wrong), and those after it
      // are checked against it.
      if (entry["covers"] == line_hash(bytes.substr(0, offset))) {
        report.repairs.push_back({line_number, entry["operator"].get<std::string>(), time,
                                  entry["reason"].get<std::string>(), std::move(report.problems)});
        report.problems.clear();
        report.blank_lines = 0;
      } else {
        report.problems.push_back(where +
                                  "'covers' is not the hash of the lines before this repair "
                                  "entry: a byte before it was changed, added or removed after "
                                  "the repair, so it acknowledges nothing");
      }
      const uint64_t expected = std::max(s.max_seq + 1, s.seq_expected);
      if (seq != expected) {
        report.problems.push_back(where + "seq " + std::to_string(seq) + ", expected " +
                                  std::to_string(expected) +
                                  " (a repair entry's seq follows every seq before it)");
      }
      check_prev();
      s.seq_expected = seq;
    } else {
      if (seq != s.seq_expected) {
        report.problems.push_back(where + "seq " + std::to_string(seq) + ", expected " +
                                  std::to_string(s.seq_expected) +
                                  " (a line was removed or moved)");
      }
      check_prev();
      // The writers never record a time earlier than the entry before (append_batch()).
      if (time < s.last_time) {
        report.problems.push_back(where + "'time' is " + shown(entry["time"]) + ", earlier than " +
                                  shown(s.last_time) + " on line " +
                                  std::to_string(last_time_line) +
                                  "; expected no earlier than the entry before (entries are "
                                  "appended in time order: a line was moved or edited)");
      }
    }
    if (entry["kind"] == "decision") {
      s.decisions.emplace(seq, 0);
      ++report.decisions;
      const std::string& checksum = entry["table_checksum"].get_ref<const std::string&>();
      const std::string& action = entry["action"].get_ref<const std::string&>();
      const std::string& effect = entry["effect"].get_ref<const std::string&>();
      const auto [table, first] = tables.try_emplace(checksum);
      if (first) {
        table->second = {entry["policy"], entry["policy_revision"], line_number, {}};
      } else if (table->second.policy != entry["policy"] ||
                 table->second.revision != entry["policy_revision"]) {
        report.problems.push_back(
            where + "'table_checksum' " + checksum + " is policy " + shown(entry["policy"]) +
            " revision " + shown(entry["policy_revision"]) + " here but policy " +
            shown(table->second.policy) + " revision " + shown(table->second.revision) +
            " on line " + std::to_string(table->second.line) +
            " (one table is one policy revision)");
      }
      const auto [seen, new_action] =
          table->second.effects.try_emplace(action, effect, line_number);
      if (!new_action && seen->second.first != effect) {
        report.problems.push_back(
            where + "'effect' is " + shown(entry["effect"]) + " for action " +
            shown(entry["action"]) + " but " + shown(seen->second.first) + " on line " +
            std::to_string(seen->second.second) +
            " under the same 'table_checksum' (a table gives each verb one effect)");
      }
    } else if (entry["kind"] == "result") {
      const uint64_t decision = entry["decision"];
      const auto it = s.decisions.find(decision);
      if (it == s.decisions.end()) {
        report.problems.push_back(where + "result refers to decision " + std::to_string(decision) +
                                  ", which is not an earlier entry");
      } else if (it->second != 0) {
        report.problems.push_back(where + "a second result for decision " +
                                  std::to_string(decision) + " (its result is entry " +
                                  std::to_string(it->second) + "); a decision has one result");
      } else {
        it->second = seq;
      }
      ++report.results;
    }
    ++report.entries;
    s.max_seq = std::max(s.max_seq, seq);
    s.last_seq = seq;
    s.last_time = time;
    last_time_line = line_number;
    report.last_hash = line_hash(line);
  };
  const auto check_lines = [&](size_t from, size_t to) {
    while (from < to) {
      const size_t end = bytes.find('\n', from);
      check_line(bytes.substr(from, end - from), from);
      from = end + 1;
    }
  };
  check_lines(0, s.body_end);
  const std::string_view fragment = bytes.substr(s.complete);
  if (!fragment.empty() && is_whole_object(fragment)) {
    // A whole line that lost only its '\n': the empty lines before it are between entries.
    check_lines(s.body_end, s.complete);
    report.unterminated = true;
    s.kept_fragment = true;
    check_line(fragment, s.complete);
  } else {
    report.trailing_empty_lines = lines_in(bytes, s.body_end, s.complete);
    if (!fragment.empty() && looks_like_torn_entry(fragment)) {
      report.torn_tail = true;
      report.torn_bytes = fragment.size();
    } else if (!fragment.empty()) {
      // Not what a crashed append leaves: nothing removes it (appends refuse the log instead).
      s.kept_fragment = s.foreign_fragment = true;
      report.problems.push_back(
          "line " + std::to_string(lines_in(bytes, 0, s.complete) + 1) +
          ": without a newline, and neither an entry nor the start of one (it begins '" +
          escape_control(utf8_prefix(fragment, 40)) + "'" + (fragment.size() > 40 ? "..." : "") +
          "): not a torn line an append left");
    }
  }
  // An append continues only a log that verifies (append_batch()).
  if (report.problems.empty()) {
    // appendable
  } else if (report.entries == 0 && s.foreign_fragment) {
    report.append_refusal =
        "line " + std::to_string(problem_line(report.problems.back())) +
        " (the last line, without its newline) is neither an audit entry nor the start of one: "
        "this is not an audit log, or not one this version wrote; check the path, or restore the "
        "log from a copy";
  } else if (report.entries == 0) {
    report.append_refusal =
        "no line is a valid audit entry (see above): this is not an audit log, or not one this "
        "version wrote; check the path, or restore the log from a copy";
  } else {
    report.append_refusal =
        "it does not verify (" + plural(report.problems.size(), "problem") +
        ", the first on line " + std::to_string(problem_line(report.problems.front())) +
        ", above) and an append continues only a log that verifies: restore the log from a copy, "
        "or keep it as it is and record the break with 'replaygate audit repair LOG --operator "
        "NAME --reason TEXT' (every line is kept; a repair entry lists the problems and "
        "re-anchors the chain)";
  }
  return s;
}

// The error of an append refused because `scan` (of `bytes`, the log at `path`) does not verify:
// the first problem, its line, and the repairs.
std::string refusal(const Scan& scan, const std::string& path, std::string_view bytes) {
  const std::vector<std::string>& problems = scan.report.problems;
  if (scan.report.entries == 0 && scan.foreign_fragment) {
    return not_a_torn_entry(path, std::to_string(problem_line(problems.back())),
                            bytes.substr(scan.complete));
  }
  const std::string more =
      problems.size() == 1 ? std::string()
                           : " (and " + plural(problems.size() - 1, "more problem") +
                                 ": run 'replaygate audit verify " + path + "' to see them all)";
  if (scan.report.entries == 0) {
    return path + " is not an audit log, or not one this version wrote: no line of it is a " +
           "valid entry (" + problems.front() + more + "); nothing was changed. Check the path";
  }
  return "refusing to append to " + path + ", which does not verify: " + problems.front() + more +
         "; nothing was changed. Restore the log from a copy, or keep it as it is and record the "
         "break with 'replaygate audit repair " +
         path +
         " --operator NAME --reason TEXT' (every line is kept; a repair entry lists the problems "
         "and re-anchors the chain)";
}

// The log file of an append or a repair, open read-write under O_APPEND, locked (an exclusive
// flock(2): every writer takes it, so the size is stable) and read whole.
struct LockedLog {
  Fd f;
  std::string bytes;
};

// Opens, locks and reads the log at `path` into *log: "" or the error. `create`: make the file
// (mode 0644) when it does not exist; else `missing` says why it must exist.
std::string open_locked(const std::string& path, bool create, const std::string& missing,
                        LockedLog* log) {
  log->f.fd = ::open(path.c_str(), O_RDWR | O_APPEND | (create ? O_CREAT : 0) | O_CLOEXEC, 0644);
  if (log->f.fd < 0 && errno == ENOENT && !create) {
    return "the audit log " + path + " does not exist (" + missing + ")";
  }
  if (log->f.fd < 0) return "cannot open audit log " + path + ": " + errno_text(errno);
  struct stat st {};
  if (::fstat(log->f.fd, &st) != 0) return "cannot stat " + path + ": " + errno_text(errno);
  if (!S_ISREG(st.st_mode)) return "audit log " + path + " is not a regular file";
  while (::flock(log->f.fd, LOCK_EX) != 0) {
    if (errno != EINTR) return "cannot lock " + path + ": " + errno_text(errno);
  }
  if (::fstat(log->f.fd, &st) != 0) return "cannot stat " + path + ": " + errno_text(errno);
  int error = 0;
  if (!read_all(log->f.fd, static_cast<uint64_t>(st.st_size), &log->bytes, &error)) {
    return "cannot read " + path + ": " + errno_text(error);
  }
  return "";
}

// Truncates the log to `size` bytes (a torn tail, empty lines after the last entry) and fsyncs.
std::string cut_to(const LockedLog& log, const std::string& path, size_t size) {
  if (::ftruncate(log.f.fd, static_cast<off_t>(size)) != 0 || ::fsync(log.f.fd) != 0) {
    return "cannot repair the end of " + path + ": " + errno_text(errno);
  }
  return "";
}

// Writes `record` with one write(2) (under O_APPEND the lines land whole at the end, or, cut
// short, are truncated back to `restore_size`) and fsyncs: "" or the error.
std::string write_record(const LockedLog& log, const std::string& path, const std::string& record,
                         size_t restore_size) {
  ssize_t n = 0;
  do {
    n = ::write(log.f.fd, record.data(), record.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(record.size())) {
    const std::string why = n < 0 ? errno_text(errno)
                                  : "short write (" + std::to_string(n) + " of " +
                                        std::to_string(record.size()) +
                                        " bytes: disk full or file size limit)";
    if (n > 0 && ::ftruncate(log.f.fd, static_cast<off_t>(restore_size)) != 0) {
      return "cannot write " + path + ": " + why +
             "; the partial line could not be removed (the next append drops it)";
    }
    return "cannot write " + path + ": " + why;
  }
  if (::fsync(log.f.fd) != 0) return "cannot fsync " + path + ": " + errno_text(errno);
  return "";
}

// "-" is not standard input or output for a writer (other commands read "-" so): it locks the
// log, reads it whole and writes at its end, which needs the file itself.
const char* const kDashRefused =
    "the audit log cannot be '-' (standard input or output): an append locks the log file, "
    "reads it and appends to it; name the file (./- for a file called '-')";

}  // namespace

VerifyReport verify_bytes(std::string_view bytes) { return scan_log(bytes).report; }

std::string removed_tail_note(const std::string& path, const AppendResult& appended) {
  std::string note;
  if (appended.removed_empty_lines > 0) {
    note += "replaygate: note: removed " + plural(appended.removed_empty_lines, "empty line") +
            " from the end of " + path + " (after the last entry; no entry was changed)\n";
  }
  if (!appended.removed_torn_tail.empty()) {
    // The first kShown bytes only: a torn tail can be megabytes.
    constexpr size_t kShown = 200;
    const std::string& tail = appended.removed_torn_tail;
    const std::string_view head = utf8_prefix(tail, kShown);
    note += "replaygate: warning: removed a torn last line from " + path + " (" +
            plural(tail.size(), "byte") + " without a newline that " +
            (tail.size() == 1 ? "is" : "are") +
            " not a whole entry: an append that crashed before completing, never "
            "acknowledged): '" +
            escape_control(head) + "'" +
            (head.size() < tail.size() ? "... (" + std::to_string(tail.size()) + " bytes in all)"
                                       : "") +
            "\n";
  }
  return note;
}

AppendResult append(const std::string& path, nlohmann::json entry, uint64_t decision_seq) {
  std::vector<nlohmann::json> entries;
  entries.push_back(std::move(entry));
  return append_batch(path, std::move(entries), decision_seq);
}

AppendResult append_batch(const std::string& path, std::vector<nlohmann::json> entries,
                          uint64_t decision_seq) {
  AppendResult result;
  auto fail = [&](std::string message) {
    result.ok = false;
    result.error = std::move(message);
    return result;
  };
  if (path == "-") return fail(kDashRefused);
  LockedLog log;
  // A result needs the log its decision is in: never create one for it (a refused result would
  // leave an empty log behind).
  if (const std::string error = open_locked(
          path, decision_seq == 0, "a result goes into the log that holds its decision", &log);
      !error.empty()) {
    return fail(error);
  }
  // Continue only a chain that verifies, whole (a broken line anywhere, not only the last, stops
  // appends until it is restored or `audit repair` records it), and touch nothing, not even a torn
  // tail, when refusing. This reads and checks every line: O(size of the log) per append.
  const Scan scan = scan_log(log.bytes);
  if (!scan.report.ok()) return fail(refusal(scan, path, log.bytes));
  uint64_t seq = scan.last_seq + 1;
  std::string prev = scan.report.last_hash;
  std::string last_time = scan.last_time;  // no new entry is recorded as earlier
  // A whole last entry without its '\n' (it verified, so it continues the chain): it may have
  // been acknowledged, so it is kept and terminated by the same write as the new entries.
  const std::string terminator = scan.kept_fragment ? "\n" : "";
  // A torn tail (an append that crashed before completing its line, never acknowledged:
  // acknowledgement follows the fsync of a complete line) and/or empty lines after the last
  // entry (no entry is there) are removed, not continued, but only right before the write below,
  // after every check that can refuse: a refused append changes nothing.
  const bool cut = !scan.kept_fragment && scan.body_end < log.bytes.size();
  if (decision_seq != 0) {
    const auto it = scan.decisions.find(decision_seq);
    if (it == scan.decisions.end()) {
      return fail("the audit log " + path + " has no decision entry " +
                  std::to_string(decision_seq));
    }
    if (it->second != 0) {
      return fail("decision entry " + std::to_string(decision_seq) + " in " + path +
                  " already has its result (entry " + std::to_string(it->second) +
                  "); a decision has one result");
    }
  }
  if (entries.empty()) {
    result.ok = true;
    result.seq = seq - 1;
    result.hash = prev;
    return result;
  }
  std::string record = terminator;
  std::string line;
  for (nlohmann::json& entry : entries) {
    entry["seq"] = seq++;
    entry["prev"] = prev;
    // Time runs forward in the log even when the clock was set back (NTP, another host): such an
    // entry gets the time of the entry before it, so verify's order check holds for what is
    // written. (The fixed-width UTC form orders as text.)
    if (entry.contains("time") && entry["time"].is_string() &&
        entry["time"].get_ref<const std::string&>() < last_time) {
      entry["time"] = last_time;
    }
    if (entry.contains("time") && entry["time"].is_string()) last_time = entry["time"];
    // What is written must verify: a caller's bad value (or a repair entry, which only repair()
    // writes) is refused here, not found later.
    std::string problem = check_fields(entry);
    if (problem.empty() && entry["kind"] == "repair") problem = "a repair entry";
    if (!problem.empty()) {
      return fail("refusing to append an invalid entry to " + path + " (" + problem + ")");
    }
    // Control characters are escaped. A string that is not UTF-8 (only a file name can be: decide's
    // `source`; letters and operators are checked) gets U+FFFD for its bad bytes: the default
    // would throw, after decide has rendered the decisions this append must record first.
    line = entry.dump(-1, ' ', false, json::error_handler_t::replace);
    prev = line_hash(line);
    record += line;
    record += '\n';
  }
  // The size to restore when a write is cut short: the file as found (after any repair).
  size_t restore_size = log.bytes.size();
  if (cut) {
    if (const std::string error = cut_to(log, path, scan.body_end); !error.empty()) {
      return fail(error);
    }
    // The torn bytes are handed back so the command can show what it removed.
    result.removed_torn_tail = std::string(std::string_view(log.bytes).substr(scan.complete));
    result.removed_empty_lines = scan.report.trailing_empty_lines;
    restore_size = scan.body_end;
  }
  if (const std::string error = write_record(log, path, record, restore_size); !error.empty()) {
    return fail(error);
  }
  result.ok = true;
  result.seq = seq - 1;
  result.hash = prev;
  return result;
}

AppendResult repair(const std::string& path, const std::string& operator_name,
                    const std::string& reason) {
  AppendResult result;
  auto fail = [&](std::string message) {
    result.ok = false;
    result.error = std::move(message);
    return result;
  };
  if (path == "-") return fail(kDashRefused);
  LockedLog log;
  if (const std::string error =
          open_locked(path, false, "a repair appends to the log it repairs", &log);
      !error.empty()) {
    return fail(error);
  }
  const Scan scan = scan_log(log.bytes);
  if (scan.report.ok()) {
    return fail(path + " verifies: there is nothing to repair; nothing was written" +
                (scan.report.torn_tail
                     ? " (its torn last line, an append that crashed, is removed by the next "
                       "append)"
                     : ""));
  }
  if (scan.report.entries == 0) {
    return fail(path + " is not an audit log, or not one this version wrote: no line of it is a " +
                "valid entry; nothing was written. Check the path");
  }
  // What the repair entry covers: every byte of the log, with a '\n' after a last line that lacks
  // one, but without a torn tail or empty lines after the last line (what an append removes:
  // nothing acknowledged is there).
  const bool cut = !scan.kept_fragment && scan.body_end < log.bytes.size();
  const std::string terminator = scan.kept_fragment ? "\n" : "";
  const std::string covered_bytes =
      cut ? log.bytes.substr(0, scan.body_end) : log.bytes + terminator;
  const Scan covered = scan_log(covered_bytes);
  const std::vector<std::string>& problems = covered.report.problems;
  nlohmann::json entry;
  entry["kind"] = "repair";
  // The repair's own time, not clamped to the entries before it: their times may be what broke.
  entry["time"] = utc_now();
  entry["operator"] = operator_name;
  entry["reason"] = reason;
  entry["covers"] = line_hash(covered_bytes);
  entry["problem_count"] = problems.size();
  entry["problems"] = std::vector<std::string>(
      problems.begin(), problems.begin() + std::min(problems.size(), kRepairListed));
  entry["seq"] = std::max(covered.max_seq, covered.seq_expected) + 1;
  entry["prev"] = covered.report.last_hash;
  if (const std::string problem = check_fields(entry); !problem.empty()) {
    return fail("refusing to append an invalid repair entry to " + path + " (" + problem + ")");
  }
  const std::string line = entry.dump(-1, ' ', false, json::error_handler_t::replace);
  // What is written must verify (every problem before the entry acknowledged by it).
  if (const Scan after = scan_log(covered_bytes + line + "\n"); !after.report.ok()) {
    return fail("the repair would not make " + path + " verify (" + after.report.problems.front() +
                "); nothing was written");
  }
  size_t restore_size = log.bytes.size();
  if (cut) {
    if (const std::string error = cut_to(log, path, scan.body_end); !error.empty()) {
      return fail(error);
    }
    result.removed_torn_tail = std::string(std::string_view(log.bytes).substr(scan.complete));
    result.removed_empty_lines = scan.report.trailing_empty_lines;
    restore_size = scan.body_end;
  }
  if (const std::string error = write_record(log, path, terminator + line + "\n", restore_size);
      !error.empty()) {
    return fail(error);
  }
  result.ok = true;
  result.seq = entry["seq"];
  result.hash = line_hash(line);
  result.acknowledged = problems;
  return result;
}

}  // namespace replaygate::cli::audit
