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

#include "compiler/names.h"
#include "compiler/utf8.h"
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
  if (j.at("kind") != "decision" && j.at("kind") != "result") {
    return "unknown kind " + value_of("kind") + "; expected \"decision\" or \"result\"";
  }
  const bool decision = j.at("kind") == "decision";
  const std::string kind = decision ? "decision" : "result";
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* name : kCommon) known = known || key == name;
    for (const char* name : decision ? std::span<const char* const>(kDecision)
                                     : std::span<const char* const>(kResult)) {
      known = known || key == name;
    }
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
  if (j.contains("operator") || decision) {
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
    // The verb and the rule as the policy names them (compiler/names.h): a value with spaces
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

// Whether the unterminated last fragment of a log is a whole entry that continues the chain: a
// JSON object (so not a prefix of a line cut by a crash: a line ends with its closing brace) with
// seq `expected_seq` and prev `prev_hash`. It may have been acknowledged and lost only its '\n'
// (an editor, a copy), so it is kept, never truncated, whatever else is wrong with it (that is
// then a problem of its line).
bool continues_chain(std::string_view fragment, uint64_t expected_seq,
                     const std::string& prev_hash) {
  if (scan_json_shape(fragment, kMaxJsonDepth) == JsonShape::kTooDeep) return false;
  const json entry = json::parse(fragment, nullptr, /*allow_exceptions=*/false);
  if (!entry.is_object()) return false;
  const auto seq = entry.find("seq");
  const auto prev = entry.find("prev");
  return seq != entry.end() && *seq == expected_seq && prev != entry.end() && *prev == prev_hash;
}

// Whether an unterminated fragment that does not continue the chain can be what a crashed append
// left: the start of a line a writer writes. A writer's line is nlohmann's dump of the entry,
// whose keys come sorted, so it starts `{"action":"` (a decision) or `{"decision":` (a result);
// a crash can cut it anywhere, even inside that prefix. Anything else (a note, a dead letter: a
// file that is not an audit log) is not removed: refusing keeps the bytes.
bool looks_like_torn_entry(std::string_view fragment) {
  for (const std::string_view start :
       {std::string_view(R"({"action":")"), std::string_view(R"({"decision":)")}) {
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

VerifyReport verify_bytes(std::string_view bytes) {
  VerifyReport report;
  report.last_hash = kZeroHash;
  const size_t last_newline = bytes.rfind('\n');
  const size_t complete = last_newline == std::string_view::npos ? 0 : last_newline + 1;
  // Empty lines at the very end, after the last entry (the file ends "\n\n"): no entry is missing
  // there, so they are tolerated (and removed by the next append), unless an entry follows them.
  const size_t body_end = end_of_last_nonblank_line(bytes, complete);
  std::map<uint64_t, uint64_t> decisions;  // decision seq -> seq of its result (0: none yet)
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
  uint64_t seq_expected = 0;  // counts the lines that are not blank
  std::string last_time;      // of the last valid entry ("" before the first)
  uint64_t last_time_line = 0;
  // The last line that is not blank: its number, whether it is a valid entry, and its seq.
  uint64_t last_line = 0, last_line_seq = 0;
  bool last_line_valid = true;
  // Checks one line (complete, or the kept unterminated last one) and advances the chain.
  const auto check_line = [&](std::string_view line) {
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
    ++seq_expected;
    json entry;
    const std::string problem = check_entry(line, &entry);
    last_line = line_number;
    last_line_valid = problem.empty();
    if (!problem.empty()) {
      report.problems.push_back(where + problem);
    } else {
      const uint64_t seq = entry["seq"];
      last_line_seq = seq;
      if (seq != seq_expected) {
        report.problems.push_back(where + "seq " + std::to_string(seq) + ", expected " +
                                  std::to_string(seq_expected) + " (a line was removed or moved)");
      }
      if (entry["prev"] != report.last_hash) {
        report.problems.push_back(where +
                                  "prev hash does not match the previous line (a line "
                                  "before it was edited, removed or reordered)");
      }
      // The writers never record a time earlier than the entry before (append_batch()).
      const std::string& time = entry["time"].get_ref<const std::string&>();
      if (time < last_time) {
        report.problems.push_back(where + "'time' is " + shown(entry["time"]) + ", earlier than " +
                                  shown(last_time) + " on line " + std::to_string(last_time_line) +
                                  "; expected no earlier than the entry before (entries are "
                                  "appended in time order: a line was moved or edited)");
      }
      last_time = time;
      last_time_line = line_number;
      if (entry["kind"] == "decision") {
        decisions.emplace(seq, 0);
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
      } else {
        const uint64_t decision = entry["decision"];
        const auto it = decisions.find(decision);
        if (it == decisions.end()) {
          report.problems.push_back(where + "result refers to decision " +
                                    std::to_string(decision) + ", which is not an earlier entry");
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
    }
    report.last_hash = line_hash(line);
  };
  const auto check_lines = [&](size_t from, size_t to) {
    while (from < to) {
      const size_t end = bytes.find('\n', from);
      check_line(bytes.substr(from, end - from));
      from = end + 1;
    }
  };
  check_lines(0, body_end);
  // What the next append will do (append_batch(), in its words): continue the chain from the last
  // line that is not blank, which must be a valid entry, ...
  const auto refuse_for_last_line = [&](const char* which) {
    report.append_refusal = "line " + std::to_string(last_line) + " (" + which +
                            ") is not a valid entry (see above), so the chain cannot continue "
                            "from it; restore the line from a copy of the log, or delete it if "
                            "what it records was never acted on";
  };
  if (!last_line_valid) refuse_for_last_line("the last line");
  const std::string_view fragment = bytes.substr(complete);
  // ... with the seq after that entry's (an append reads no other line to continue the chain).
  const uint64_t next_seq = (last_line_valid && last_line > 0 ? last_line_seq : seq_expected) + 1;
  if (!fragment.empty() && continues_chain(fragment, next_seq, report.last_hash)) {
    // The last entry lost only its '\n': the empty lines before it are between entries.
    const uint64_t empty_before = lines_in(bytes, body_end, complete);
    check_lines(body_end, complete);
    report.unterminated = true;
    check_line(fragment);
    // ... which an append keeps and terminates, but only when nothing stands between it and the
    // entry before, and it is valid itself.
    if (report.append_refusal.empty() && empty_before > 0) {
      const uint64_t first = lines_in(bytes, 0, body_end) + 1;
      report.append_refusal =
          empty_before == 1
              ? "line " + std::to_string(first) +
                    " is an empty line before the unterminated last entry; delete it"
              : "lines " + std::to_string(first) + " to " +
                    std::to_string(first + empty_before - 1) +
                    " are empty lines before the unterminated last entry; delete them";
    } else if (report.append_refusal.empty() && !last_line_valid) {
      refuse_for_last_line("the last line, without its newline");
    }
  } else {
    report.trailing_empty_lines = lines_in(bytes, body_end, complete);
    if (!fragment.empty() && looks_like_torn_entry(fragment)) {
      report.torn_tail = true;
      report.torn_bytes = fragment.size();
    } else if (!fragment.empty()) {
      // Not what a crashed append leaves: no append removes it (it refuses the log instead).
      const std::string line = std::to_string(lines_in(bytes, 0, complete) + 1);
      report.problems.push_back(
          "line " + line + ": without a newline, and neither an entry nor the start of one (it " +
          "begins '" + escape_control(utf8_prefix(fragment, 40)) + "'" +
          (fragment.size() > 40 ? "..." : "") + "): not a torn line an append left");
      if (report.append_refusal.empty()) {
        report.append_refusal =
            "line " + line +
            " (the last line, without its newline) is neither an audit entry nor the start of "
            "one: this is not an audit log, or not one this version wrote; check the path, or "
            "restore the log from a copy";
      }
    }
  }
  return report;
}

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
            " not a whole entry continuing the chain: an append that crashed before completing, "
            "never acknowledged): '" +
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
  // "-" is not standard input or output here (other commands read "-" so): an append locks the
  // log, reads it whole and writes at its end, which needs the file itself.
  if (path == "-") {
    return fail(
        "the audit log cannot be '-' (standard input or output): an append locks the log file, "
        "reads it and appends to it; name the file (./- for a file called '-')");
  }
  Fd f;
  // A result needs the log its decision is in: never create one for it (a refused result would
  // leave an empty log behind).
  const int create = decision_seq != 0 ? 0 : O_CREAT;
  f.fd = ::open(path.c_str(), O_RDWR | O_APPEND | create | O_CLOEXEC, 0644);
  if (f.fd < 0 && errno == ENOENT && decision_seq != 0) {
    return fail("the audit log " + path + " does not exist (a result goes into the log that " +
                "holds its decision)");
  }
  if (f.fd < 0) return fail("cannot open audit log " + path + ": " + errno_text(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return fail("cannot stat " + path + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) return fail("audit log " + path + " is not a regular file");
  while (::flock(f.fd, LOCK_EX) != 0) {
    if (errno != EINTR) return fail("cannot lock " + path + ": " + errno_text(errno));
  }
  // Under the lock the size is stable: every appender takes the same lock.
  if (::fstat(f.fd, &st) != 0) return fail("cannot stat " + path + ": " + errno_text(errno));
  std::string bytes;
  int error = 0;
  if (!read_all(f.fd, static_cast<uint64_t>(st.st_size), &bytes, &error)) {
    return fail("cannot read " + path + ": " + errno_text(error));
  }
  // Continue the chain from the last complete line that is not empty; refuse to extend a broken
  // one (and touch nothing, not even a torn tail, when refusing).
  const size_t last_newline = bytes.rfind('\n');
  const size_t complete = last_newline == std::string::npos ? 0 : last_newline + 1;
  const size_t body_end = end_of_last_nonblank_line(bytes, complete);
  const auto line_number_at = [&bytes](size_t offset) {
    return std::to_string(std::count(bytes.begin(), bytes.begin() + offset, '\n') + 1);
  };
  uint64_t seq = 1;
  std::string prev = kZeroHash;
  std::string last_time;  // of the last entry: no new entry is recorded as earlier
  if (body_end > 0) {
    const size_t start = body_end >= 2 ? bytes.rfind('\n', body_end - 2) : std::string::npos;
    const size_t from = start == std::string::npos ? 0 : start + 1;
    const std::string_view last = std::string_view(bytes).substr(from, body_end - 1 - from);
    nlohmann::json last_entry;
    const std::string problem = check_entry(last, &last_entry);
    if (!problem.empty()) {
      return fail("the last line of " + path + " (line " + line_number_at(from) +
                  ") is not a valid audit entry (" + problem + "); run 'replaygate audit verify " +
                  path + "'");
    }
    seq = last_entry["seq"].get<uint64_t>() + 1;
    prev = line_hash(last);
    last_time = last_entry["time"];
  }
  // The size to restore when a write is cut short: the file as found (after any repair).
  size_t restore_size = bytes.size();
  std::string terminator;  // "\n" when the last entry lost only its newline
  const std::string_view fragment = std::string_view(bytes).substr(complete);
  if (!fragment.empty() && continues_chain(fragment, seq, prev)) {
    // A whole entry without its '\n': it may have been acknowledged, so it is kept and
    // terminated (by the same write as the new entries), never truncated; but it must be valid,
    // and no empty line may stand between it and the entry before.
    if (body_end < complete) {
      return fail("line " + line_number_at(body_end) + " of " + path +
                  " is an empty line between entries; delete it (run 'replaygate audit verify " +
                  path + "')");
    }
    nlohmann::json fragment_entry;
    const std::string problem = check_entry(fragment, &fragment_entry);
    if (!problem.empty()) {
      return fail("the last line of " + path + " (line " + line_number_at(complete) +
                  ", without its newline) is not a valid audit entry (" + problem +
                  "); run 'replaygate audit verify " + path + "'");
    }
    ++seq;
    prev = line_hash(fragment);
    last_time = fragment_entry["time"];
    terminator = "\n";
    bytes += '\n';  // in memory only, so the decision lookup below sees whole lines
  } else if (!fragment.empty() && !looks_like_torn_entry(fragment)) {
    return fail(not_a_torn_entry(path, line_number_at(complete), fragment));
  }
  // A torn tail (an append that crashed before completing its line, never acknowledged:
  // acknowledgement follows the fsync of a complete line) and/or empty lines after the last
  // entry (no entry is there) are removed, not continued, but only right before the write below,
  // after every check that can refuse: a refused append changes nothing.
  const bool repair = terminator.empty() && body_end < bytes.size();
  const std::string torn_tail = repair ? std::string(fragment) : std::string();
  const uint64_t empty_lines = repair ? lines_in(bytes, body_end, complete) : 0;
  if (repair) bytes.resize(body_end);
  if (decision_seq != 0) {
    bool found = false;
    uint64_t result_seq = 0;
    size_t at = 0;
    while (at < bytes.size()) {
      const size_t end = bytes.find('\n', at);
      nlohmann::json e;
      if (check_entry(std::string_view(bytes).substr(at, end - at), &e).empty()) {
        if (e["kind"] == "decision" && e["seq"] == decision_seq) found = true;
        if (e["kind"] == "result" && e["decision"] == decision_seq && result_seq == 0) {
          result_seq = e["seq"];
        }
      }
      at = end + 1;
    }
    if (!found) {
      return fail("the audit log " + path + " has no decision entry " +
                  std::to_string(decision_seq));
    }
    if (result_seq != 0) {
      return fail("decision entry " + std::to_string(decision_seq) + " in " + path +
                  " already has its result (entry " + std::to_string(result_seq) +
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
    // What is written must verify: a caller's bad value is refused here, not found later.
    if (const std::string problem = check_fields(entry); !problem.empty()) {
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
  if (repair) {
    // The torn bytes are handed back so the command can show what it removed.
    if (::ftruncate(f.fd, static_cast<off_t>(body_end)) != 0 || ::fsync(f.fd) != 0) {
      return fail("cannot repair the end of " + path + ": " + errno_text(errno));
    }
    result.removed_torn_tail = torn_tail;
    result.removed_empty_lines = empty_lines;
    restore_size = body_end;
  }
  // One write(2): under O_APPEND the lines land whole at the end or (short write) are removed.
  ssize_t n = 0;
  do {
    n = ::write(f.fd, record.data(), record.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(record.size())) {
    const std::string why = n < 0 ? errno_text(errno)
                                  : "short write (" + std::to_string(n) + " of " +
                                        std::to_string(record.size()) +
                                        " bytes: disk full or file size limit)";
    if (n > 0 && ::ftruncate(f.fd, static_cast<off_t>(restore_size)) != 0) {
      return fail("cannot write " + path + ": " + why +
                  "; the partial line could not be removed (the next append drops it)");
    }
    return fail("cannot write " + path + ": " + why);
  }
  if (::fsync(f.fd) != 0) return fail("cannot fsync " + path + ": " + errno_text(errno));
  result.ok = true;
  result.seq = seq - 1;
  result.hash = prev;
  return result;
}

}  // namespace replaygate::cli::audit
