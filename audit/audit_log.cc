// The audit trail: locked, fsynced, single-write appends and a verifier (see audit.h).
#include "audit/audit_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <system_error>
#include <utility>

#include "audit/operator_name.h"
#include "common/escape.h"
#include "common/json_scan.h"
#include "common/names.h"
#include "common/plural.h"
#include "common/utf8.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate::audit {

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
  if (start == kNoOffset) return {};
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

// A string of exactly `digits` lowercase hex digits.
bool is_hex(const json& v, size_t digits) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s.size() == digits && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

bool is_hex32(const json& v) { return is_hex(v, 32); }

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
    "operator", "message_id", "operation_id",    "action",          "effect",
    "rule",     "policy",     "policy_revision", "table_checksum",  "record_revision",
    "source",   "record",     "idempotency_key", "claim_generation"};
// Optional in a decision: the record's idempotency key, and the ledger claim's generation when a
// claim was won (docs/ledger.md); older logs lack both.
const char* const kDecisionOptional[] = {"source", "record", "idempotency_key", "claim_generation"};
const char* const kResult[] = {"decision", "revision", "outcome", "operator"};
const char* const kRepair[] = {"operator", "reason", "covers", "problem_count", "problems"};
// An operator act on the replay ledger (`replaygate ledger release|prune`, docs/ledger.md).
const char* const kLedger[] = {"operator",         "act",    "scope",  "idempotency_key",
                               "claim_generation", "reason", "cutoff", "state"};
// A plan's record (`replaygate plan`, docs/plans.md): audit/entry.h PlanEntry.
const char* const kPlan[] = {
    "operator",       "act",       "scope",  "digest",      "author",       "source",
    "table_checksum", "letters",   "copies", "created_at",  "expires_at",   "approver",
    "key_id",         "signature", "reason", "approved_at", "cancelled_by", "cancel_reason",
    "cancelled_at",   "identity",  "done",   "held",        "changed",      "last_outcome",
    "plan_id",        "from",      "to",     "count",       "identities"};
// A web console act (`replaygate console serve`, docs/console.md): audit/entry.h ConsoleEntry.
const char* const kConsole[] = {"operator", "act",    "scope",  "outcome",
                                "address",  "target", "reason", "detail"};
const char* const kPlanCounts[] = {"letters", "copies", "done", "held", "changed", "count"};
// A signed checkpoint (audit/checkpoint.h): written by appenders given a signing key only.
const char* const kCheckpoint[] = {"chain_digest", "key_id", "signature"};
// How many of the problems it acknowledges a repair entry lists (problem_count counts them all).
constexpr size_t kRepairListed = 10;

// The optional `idempotency_key` (a non-empty string) and
// `claim_generation` (a ledger generation, from 1) of a decision or ledger entry.
template <class Bad>
std::string check_key_fields(const json& j, const Bad& bad) {
  if (j.contains("idempotency_key")) {
    const json& key = j.at("idempotency_key");
    if (!key.is_string() || key.get_ref<const std::string&>().empty()) {
      return bad("idempotency_key", "a non-empty string (the record's idempotency key)");
    }
  }
  if (j.contains("claim_generation") && !is_count(j.at("claim_generation"), 1, kMaxRevision)) {
    return bad("claim_generation", "a ledger claim's generation (a whole number from 1)");
  }
  return "";
}

// A ledger entry's fields (audit_log.h): which an act needs, and their values.
template <class Bad, class Missing>
std::string check_ledger_fields(const json& j, const Bad& bad, const Missing& missing) {
  for (const char* key : {"act", "scope"}) {
    if (!j.contains(key)) return missing(key);
  }
  const json& act = j.at("act");
  // What each act needs beyond act, scope and operator.
  std::vector<const char*> needs;
  if (act == "release_requested") {
    needs = {"idempotency_key", "reason"};
  } else if (act == "released") {
    needs = {"idempotency_key", "claim_generation", "reason"};
  } else if (act == "prune_requested") {
    needs = {"cutoff"};
  } else if (act == "pruned") {
    needs = {"idempotency_key", "claim_generation", "cutoff", "state"};
  } else if (act == "ledger_migrate_requested") {
    // `replaygate ledger migrate` (docs/ledger.md): before the migration, why.
    needs = {"reason"};
  } else if (act == "ledger_migrated") {
    // After it: state "schema version F -> T" (F == T: nothing to do).
    needs = {"reason", "state"};
  } else if (act == "trust_reset") {
    // `replaygate trust reset` (docs/signing.md): scope "trust:POLICY_ID", state what it removed.
    needs = {"reason", "state"};
  } else {
    return bad("act",
               "release_requested, released, prune_requested, pruned, ledger_migrate_requested, "
               "ledger_migrated or trust_reset");
  }
  for (const char* key : needs) {
    if (!j.contains(key)) return missing(key);
  }
  if (!j.at("scope").is_string() || j.at("scope").get_ref<const std::string&>().empty()) {
    return bad("scope", "a ledger scope (a non-empty string)");
  }
  if (std::string why = check_key_fields(j, bad); !why.empty()) return why;
  if (j.contains("reason")) {
    if (!j.at("reason").is_string()) return bad("reason", "a string");
    if (const std::string why = operator_name_problem(j.at("reason").get_ref<const std::string&>());
        !why.empty()) {
      return "'reason' " + why;
    }
  }
  for (const char* key : {"cutoff", "state"}) {
    if (j.contains(key) &&
        (!j.at(key).is_string() || j.at(key).get_ref<const std::string&>().empty())) {
      return bad(key, key == std::string_view("cutoff") ? "an RFC 3339 time" : "a claim state");
    }
  }
  return "";
}

// A plan entry's act and fields (after the common ones): "" or the problem.
template <typename Bad, typename Missing>
std::string check_plan_fields(const json& j, const Bad& bad, const Missing& missing) {
  for (const char* key : {"act", "scope"}) {
    if (!j.contains(key)) return missing(key);
  }
  const json& act = j.at("act");
  // A RabbitMQ build's moves (plan_frozen) come before the plan's digest exists: they name the
  // plan by its id; a return (plan_returned) names it by id and, from a cancel, by digest too.
  const bool moves = act == "plan_frozen" || act == "plan_returned";
  if (!moves && !j.contains("digest")) return missing("digest");
  std::vector<const char*> needs;
  if (moves) {
    needs = {"plan_id", "from", "to", "count"};
    if (act == "plan_frozen") needs.push_back("identities");
  } else if (act == "plan_recorded") {
    needs = {"author", "source", "table_checksum", "letters", "copies", "created_at", "expires_at"};
  } else if (act == "plan_approved") {
    needs = {"approver", "key_id", "signature", "reason", "approved_at"};
  } else if (act == "plan_cancelled") {
    needs = {"cancelled_by", "cancel_reason", "cancelled_at"};
  } else if (act == "plan_progress") {
    needs = {"identity", "done", "held", "changed", "last_outcome"};
  } else {
    return bad("act",
               "plan_recorded, plan_approved, plan_cancelled, plan_progress, plan_frozen or "
               "plan_returned");
  }
  for (const char* key : needs) {
    if (!j.contains(key)) return missing(key);
  }
  for (const auto& item : j.items()) {
    // Named, not a structured binding: clang 14 cannot capture a binding in the lambda below.
    const std::string& key = item.key();
    const auto& value = item.value();
    const bool count = std::any_of(std::begin(kPlanCounts), std::end(kPlanCounts),
                                   [&key](const char* c) { return key == c; });
    if (key == "seq" || key == "prev") continue;
    if (key == "identities") {
      // The identities a block of moves moved, one per letter moved (a copy repeats its own).
      const bool listed =
          value.is_array() && std::all_of(value.begin(), value.end(), [](const json& v) {
            return v.is_string() && !v.template get_ref<const std::string&>().empty();
          });
      if (!listed) return bad("identities", "an array of letter identities (strings)");
      continue;
    }
    if (count && !is_count(value, 0, INT64_MAX)) return bad(key.c_str(), "a whole number");
    if (!count && (!value.is_string() || value.template get<std::string>().empty())) {
      return bad(key.c_str(), "a non-empty string");
    }
  }
  return "";
}

// A console entry (docs/console.md): act a lowercase word (login, logout, plan_cancel, ...),
// outcome allowed, refused or failed, the client's address; target, reason and detail as the act
// has them, each a string (reason and detail one printable line, as an operator name).
template <typename Bad, typename Missing>
std::string check_console_fields(const json& j, const Bad& bad, const Missing& missing) {
  for (const char* key : {"act", "scope", "outcome", "address"}) {
    if (!j.contains(key)) return missing(key);
  }
  const json& act = j.at("act");
  if (!act.is_string() || act.get_ref<const std::string&>().empty() ||
      act.get_ref<const std::string&>().find_first_not_of("abcdefghijklmnopqrstuvwxyz_") !=
          std::string::npos) {
    return bad("act", "a lowercase word (login, logout, plan_cancel, ...)");
  }
  const json& outcome = j.at("outcome");
  if (outcome != "allowed" && outcome != "refused" && outcome != "failed") {
    return bad("outcome", "allowed, refused or failed");
  }
  for (const char* key : {"scope", "address", "target"}) {
    if (j.contains(key) && !j.at(key).is_string()) return bad(key, "a string");
  }
  for (const char* key : {"reason", "detail"}) {
    if (!j.contains(key)) continue;
    if (!j.at(key).is_string()) return bad(key, "a string");
    if (const std::string why = operator_name_problem(j.at(key).get_ref<const std::string&>());
        !why.empty()) {
      return "'" + std::string(key) + "' " + why;
    }
  }
  return "";
}

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
  if (j.at("kind") != "decision" && j.at("kind") != "result" && j.at("kind") != "repair" &&
      j.at("kind") != "ledger" && j.at("kind") != "checkpoint" && j.at("kind") != "plan" &&
      j.at("kind") != "console") {
    return "unknown kind " + value_of("kind") +
           "; expected \"decision\", \"result\", \"repair\", \"ledger\", \"checkpoint\", "
           "\"plan\" or \"console\"";
  }
  const bool decision = j.at("kind") == "decision";
  const bool repair = j.at("kind") == "repair";
  const bool ledger = j.at("kind") == "ledger";
  const bool checkpoint = j.at("kind") == "checkpoint";
  const bool plan = j.at("kind") == "plan";
  const bool console = j.at("kind") == "console";
  const std::string kind = j.at("kind");
  const std::span<const char* const> fields = decision ? std::span<const char* const>(kDecision)
                                              : repair ? std::span<const char* const>(kRepair)
                                              : ledger ? std::span<const char* const>(kLedger)
                                              : checkpoint
                                                  ? std::span<const char* const>(kCheckpoint)
                                              : plan    ? std::span<const char* const>(kPlan)
                                              : console ? std::span<const char* const>(kConsole)
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
  if (j.contains("operator") || decision || repair || ledger || plan || console) {
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
      const bool optional =
          std::any_of(std::begin(kDecisionOptional), std::end(kDecisionOptional),
                      [key](const char* o) { return std::string_view(o) == key; });
      if (!j.contains(key) && !optional) return missing(key);
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
    if (std::string why = check_key_fields(j, bad); !why.empty()) return why;
    if (j.contains("claim_generation")) {
      if (!j.contains("idempotency_key")) return missing("idempotency_key");
      if (effect != "create") {
        return "'claim_generation' in a decision whose 'effect' is " + value_of("effect") +
               "; only a create verb claims the replay ledger";
      }
    }
  } else if (ledger) {
    if (std::string why = check_ledger_fields(j, bad, missing); !why.empty()) return why;
  } else if (plan) {
    if (std::string why = check_plan_fields(j, bad, missing); !why.empty()) return why;
  } else if (console) {
    if (std::string why = check_console_fields(j, bad, missing); !why.empty()) return why;
  } else if (checkpoint) {
    for (const char* key : kCheckpoint) {
      if (!j.contains(key)) return missing(key);
    }
    if (!is_hex(j.at("chain_digest"), 64)) {
      return bad("chain_digest", "64 lowercase hex digits (BLAKE2b-256 of the log before it)");
    }
    if (!is_hex(j.at("key_id"), 32)) return bad("key_id", "32 lowercase hex digits (a key id)");
    if (!is_hex(j.at("signature"), 128)) {
      return bad("signature", "128 lowercase hex digits (an Ed25519 signature)");
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
  // A writer's line is its object and nothing else: whitespace a JSON parser would skip around it
  // (`}   `, a CRLF line end's '\r') is bytes no writer writes, named as they are.
  const size_t open = line.find_first_not_of(" \t\r");
  const size_t close = line.find_last_not_of(" \t\r");
  const auto stray = [](std::string_view bytes, const char* where) {
    return plural(bytes.size(), "byte") + " " + where + " (" + quote_for_reason(bytes) + ")" +
           (bytes.find('\r') != std::string_view::npos
                ? ", a carriage return (a CRLF line end: an entry ends with '\\n' only)"
                : "") +
           ", which no writer writes";
  };
  if (open > 0 && line[open] == '{') return stray(line.substr(0, open), "before the opening brace");
  if (close + 1 < line.size() && line[close] == '}') {
    return stray(line.substr(close + 1), "after the closing brace");
  }
  json j;
  if (std::string problem = parse_object(line, &j); !problem.empty()) return problem;
  if (std::string problem = check_fields(j, line); !problem.empty()) return problem;
  *out = std::move(j);
  return "";
}

// Whether unterminated last bytes are a whole JSON object (or nested too deeply to parse, which
// no writer writes either): never a torn tail, and checked like any line, to name its problems.
bool is_whole_object(std::string_view fragment) {
  if (scan_json_shape(fragment, kMaxJsonDepth) == JsonShape::kTooDeep) return true;
  return json::parse(fragment, nullptr, /*allow_exceptions=*/false).is_object();
}

// Whether unterminated bytes at least start like a line a writer writes (`{"action":"`,
// `{"decision":`, `{"covers":"`, `{"act":"` or `{"chain_digest":"`, or a cut of that start): when
// they do not, they are named as not an audit entry at all (a note, a dead letter: the wrong path).
// Whether they are a torn tail is why_not_torn()'s question.
bool looks_like_torn_entry(std::string_view fragment) {
  for (const std::string_view start :
       {std::string_view(R"({"action":")"), std::string_view(R"({"decision":)"),
        std::string_view(R"({"covers":")"), std::string_view(R"({"act":")"),
        std::string_view(R"({"chain_digest":")")}) {
    const size_t n = std::min(fragment.size(), start.size());
    if (fragment.substr(0, n) == start.substr(0, n)) return true;
  }
  return false;
}

// ---- What a torn tail is ----
//
// An append writes its lines and their '\n's with one write(2) under an exclusive flock(2), then
// fsync(2)s, and only then reports success. The one thing a crash (power loss, a kill during the
// write) can leave at the end of the file is therefore a cut of the last line it was writing: a
// strict prefix of that line, as nlohmann dumps it (keys sorted, no spaces, control characters
// escaped, no nested object), never anything after its closing brace. So the bytes after the last
// '\n' are a torn tail only when they are a strict prefix of the line a writer would write next
// (its seq and prev continue the log, its values have their kind's shape), and they stop before
// the end of the last field every kind writes (`time`, fixed-length: a cut after its Z holds its
// whole value): a prefix that holds every field is a
// whole entry but for its brace, which a person may have read, so it is not removed either. Any
// other unterminated bytes (a whole object, bytes after a closing brace, two objects, a line with
// a character deleted) are a problem: nothing removes them.

// A value's shape in a writer's line.
enum class Shape {
  kString,
  kStringOrNull,
  kCount,
  kIntStringOrNull,
  kHex32,
  kHex64,
  kHex128,
  kTime,
  kKind,
  kEffect,
  kStrings,
  kPrev,
  kSeq
};

struct LineKey {
  std::string_view name;
  Shape shape;
  bool optional;
};

// Each kind's keys in the order a writer's line has them (sorted: nlohmann's objects are maps).
constexpr LineKey kDecisionLine[] = {{"action", Shape::kString, false},
                                     {"claim_generation", Shape::kCount, true},
                                     {"effect", Shape::kEffect, false},
                                     {"idempotency_key", Shape::kString, true},
                                     {"kind", Shape::kKind, false},
                                     {"message_id", Shape::kStringOrNull, false},
                                     {"operation_id", Shape::kStringOrNull, false},
                                     {"operator", Shape::kString, false},
                                     {"policy", Shape::kString, false},
                                     {"policy_revision", Shape::kCount, false},
                                     {"prev", Shape::kPrev, false},
                                     {"record", Shape::kCount, true},
                                     {"record_revision", Shape::kIntStringOrNull, false},
                                     {"rule", Shape::kString, false},
                                     {"seq", Shape::kSeq, false},
                                     {"source", Shape::kString, true},
                                     {"table_checksum", Shape::kHex32, false},
                                     {"time", Shape::kTime, false}};
constexpr LineKey kResultLine[] = {
    {"decision", Shape::kCount, false}, {"kind", Shape::kKind, false},
    {"operator", Shape::kString, true}, {"outcome", Shape::kString, false},
    {"prev", Shape::kPrev, false},      {"revision", Shape::kCount, false},
    {"seq", Shape::kSeq, false},        {"time", Shape::kTime, false}};
constexpr LineKey kRepairLine[] = {{"covers", Shape::kHex32, false},
                                   {"kind", Shape::kKind, false},
                                   {"operator", Shape::kString, false},
                                   {"prev", Shape::kPrev, false},
                                   {"problem_count", Shape::kCount, false},
                                   {"problems", Shape::kStrings, false},
                                   {"reason", Shape::kString, false},
                                   {"seq", Shape::kSeq, false},
                                   {"time", Shape::kTime, false}};

// A ledger entry's keys, a plan entry's and a console entry's (all begin with "act"): a cut line
// of any of them.
constexpr LineKey kLedgerLine[] = {
    {"act", Shape::kString, false},         {"address", Shape::kString, true},
    {"approved_at", Shape::kString, true},  {"approver", Shape::kString, true},
    {"author", Shape::kString, true},       {"cancel_reason", Shape::kString, true},
    {"cancelled_at", Shape::kString, true}, {"cancelled_by", Shape::kString, true},
    {"changed", Shape::kCount, true},       {"claim_generation", Shape::kCount, true},
    {"copies", Shape::kCount, true},        {"created_at", Shape::kString, true},
    {"cutoff", Shape::kString, true},       {"detail", Shape::kString, true},
    {"digest", Shape::kString, true},       {"done", Shape::kCount, true},
    {"expires_at", Shape::kString, true},   {"held", Shape::kCount, true},
    {"identity", Shape::kString, true},     {"idempotency_key", Shape::kString, true},
    {"key_id", Shape::kString, true},       {"kind", Shape::kKind, false},
    {"last_outcome", Shape::kString, true}, {"letters", Shape::kCount, true},
    {"operator", Shape::kString, false},    {"outcome", Shape::kString, true},
    {"prev", Shape::kPrev, false},          {"reason", Shape::kString, true},
    {"scope", Shape::kString, false},       {"seq", Shape::kSeq, false},
    {"signature", Shape::kString, true},    {"source", Shape::kString, true},
    {"state", Shape::kString, true},        {"table_checksum", Shape::kString, true},
    {"target", Shape::kString, true},       {"time", Shape::kTime, false}};
constexpr LineKey kCheckpointLine[] = {{"chain_digest", Shape::kHex64, false},
                                       {"key_id", Shape::kHex32, false},
                                       {"kind", Shape::kKind, false},
                                       {"prev", Shape::kPrev, false},
                                       {"seq", Shape::kSeq, false},
                                       {"signature", Shape::kHex128, false},
                                       {"time", Shape::kTime, false}};

// What the next line of a log must continue with: the previous line's hash and the seq an append
// (or, for a repair entry, a repair) gives it.
struct NextLine {
  std::string prev;
  uint64_t seq = 0, repair_seq = 0;
};

// Reads a fragment as a strict prefix of a writer's line. Each step returns true when it read a
// whole token and the fragment goes on; false when the fragment ended (ended_) or does not fit
// (why_ says how, with the byte offset).
class PrefixReader {
 public:
  PrefixReader(std::string_view f, const NextLine& next) : f_(f), next_(next) {}

  // "" when the fragment is a torn tail, else why not.
  std::string why_not_torn() {
    if (!literal("{")) return result();
    std::span<const LineKey> keys;
    std::string_view kind;
    size_t k = 0;  // the next key that may come
    for (bool first = true;; first = false) {
      if (!first) {
        if (at_end()) return result();
        if (f_[i_] == '}') {
          return i_ + 1 == f_.size()
                     ? "it is a whole JSON object"
                     : "it holds a whole JSON object and " +
                           plural(f_.size() - i_ - 1, "more byte") +
                           " after its closing brace at byte " + std::to_string(i_ + 1);
        }
        if (!literal(",")) return result();
      }
      std::string key;
      if (!read_key(&key)) {
        if (!ended_) return why_;
        // Cut inside a key: it must be the start of a key that may come next.
        const auto starts = [&key](std::string_view name) {
          return name.substr(0, key.size()) == key;
        };
        if (first) {
          // ("act", a ledger entry's first key, is a start of "action" too.)
          if (starts("action") || starts("decision") || starts("covers") ||
              starts("chain_digest")) {
            return "";
          }
        } else {
          for (size_t n = k; n < keys.size(); ++n) {
            if (starts(keys[n].name)) return "";
            if (!keys[n].optional) break;
          }
        }
        ended_ = false;
        return fail("'" + key + "' does not begin a key that comes next in an entry");
      }
      if (first) {
        if (key == "action")
          keys = kDecisionLine, kind = "decision";
        else if (key == "decision")
          keys = kResultLine, kind = "result";
        else if (key == "covers")
          keys = kRepairLine, kind = "repair";
        else if (key == "act")
          keys = kLedgerLine, kind = "ledger";
        else if (key == "chain_digest")
          keys = kCheckpointLine, kind = "checkpoint";
        else
          return fail("the first key '" + key + "' does not begin any entry");
      }
      while (k < keys.size() && keys[k].name != key && keys[k].optional) ++k;
      if (k == keys.size() || keys[k].name != key) {
        return fail("'" + key + "' is not the next key of a " + std::string(kind) +
                    " entry as a writer writes it");
      }
      const LineKey& lk = keys[k++];
      if (!literal(":") || !value(lk.shape, kind)) {
        // The time is fixed-length: a cut after its 'Z' holds the last field's whole value.
        if (lk.name == "time" && ended_ && shape_complete_) {
          return "it holds every field of a " + std::string(kind) +
                 " entry, the last one's value complete, and lacks only its closing quote and "
                 "brace: a whole entry, not a cut one";
        }
        return result();
      }
      if (lk.name == "time" && i_ == f_.size()) {
        return "it holds every field of a " + std::string(kind) +
               " entry and lacks only its closing brace: a whole entry, not a cut one";
      }
    }
  }

 private:
  bool at_end() {
    if (i_ < f_.size()) return false;
    ended_ = true;
    return true;
  }
  std::string result() const { return ended_ ? "" : why_; }
  std::string fail(std::string why) {
    why_ = "at byte " + std::to_string(i_ + 1) + ": " + std::move(why);
    return why_;
  }
  bool bad(std::string why) {
    fail(std::move(why));
    return false;
  }
  // `text`, or the start of it up to the end of the fragment.
  bool literal(std::string_view text) {
    for (const char c : text) {
      if (at_end()) return false;
      if (f_[i_] != c) return bad("expected '" + std::string(text) + "'");
      ++i_;
    }
    return true;
  }
  bool read_key(std::string* key) {
    if (!literal("\"")) return false;
    while (true) {
      if (at_end()) return false;
      const char c = f_[i_];
      if (c == '"') break;
      if (!(c >= 'a' && c <= 'z') && c != '_') return bad("not a key a writer writes");
      *key += c;
      ++i_;
    }
    ++i_;
    return true;
  }
  // A JSON string as nlohmann dumps it (raw UTF-8, control characters escaped). *out gets its
  // bytes as written (escapes not decoded), to compare with a known value.
  bool string(std::string* out = nullptr) {
    if (!literal("\"")) return false;
    while (true) {
      if (at_end()) return false;
      const unsigned char c = static_cast<unsigned char>(f_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return bad("a control character that a writer escapes");
      if (c == '\\') {
        const size_t escape = i_;
        ++i_;
        if (at_end()) return false;
        const char e = f_[i_];
        if (e == 'u') {
          ++i_;
          for (int d = 0; d < 4; ++d, ++i_) {
            if (at_end()) return false;
            if (!std::isxdigit(static_cast<unsigned char>(f_[i_]))) return bad("a bad \\u escape");
          }
          if (out) out->append(f_.substr(escape, i_ - escape));
          continue;
        }
        if (std::string_view("\"\\bfnrt").find(e) == std::string_view::npos) {
          return bad("an escape a writer does not write");
        }
        ++i_;
        if (out) out->append(f_.substr(escape, i_ - escape));
        continue;
      }
      if (c >= 0x80) {
        const size_t length = utf8_sequence_length(f_, i_);
        if (length == 0) {
          // Cut inside a sequence at the very end is a cut; anything else is not UTF-8.
          const std::string_view rest = f_.substr(i_);
          const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
          if (need > rest.size() && c <= 0xF4 &&
              std::all_of(rest.begin() + 1, rest.end(),
                          [](char b) { return (static_cast<unsigned char>(b) & 0xC0) == 0x80; })) {
            i_ = f_.size();
            ended_ = true;
            return false;
          }
          return bad("a byte that is not UTF-8 (a writer writes U+FFFD for it)");
        }
        if (out) out->append(f_.substr(i_, length));
        i_ += length;
        continue;
      }
      if (out) *out += static_cast<char>(c);
      ++i_;
    }
  }
  // A string whose content is one of `options` (or the start of one, when the fragment ends).
  bool one_of(std::initializer_list<std::string_view> options, const std::string& what) {
    const size_t start = i_;
    std::string text;
    if (string(&text)) {
      for (const std::string_view o : options) {
        if (text == o) return true;
      }
      i_ = start;
      return bad("not " + what);
    }
    if (!ended_) return false;
    for (const std::string_view o : options) {
      if (o.substr(0, std::min(o.size(), text.size())) == text && text.size() <= o.size()) {
        return false;
      }
    }
    ended_ = false;
    i_ = start;
    return bad("not " + what);
  }
  // A string of `shape` digits: 'h' a lowercase hex digit, 'd' a decimal digit, else itself.
  bool shaped(std::string_view shape, const std::string& what) {
    shape_complete_ = false;
    if (!literal("\"")) return false;
    for (const char s : shape) {
      if (at_end()) return false;
      const char c = f_[i_];
      const bool ok = s == 'h'
                          ? (std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f'))
                      : s == 'd' ? std::isdigit(static_cast<unsigned char>(c)) != 0
                                 : c == s;
      if (!ok) return bad("not " + what);
      ++i_;
    }
    shape_complete_ = true;  // every character of the value; only its closing quote may be cut
    return literal("\"");
  }
  // Digits (no leading zero), an optional '-' first when `negative`.
  bool integer(bool negative) {
    if (negative && !at_end() && f_[i_] == '-') ++i_;
    const size_t start = i_;
    while (!at_end() && std::isdigit(static_cast<unsigned char>(f_[i_]))) ++i_;
    if (ended_) {
      if (i_ - start > 1 && f_[start] == '0') return bad("a number with a leading zero");
      return false;
    }
    if (i_ == start) return bad("expected a whole number");
    if (i_ - start > 1 && f_[start] == '0') return bad("a number with a leading zero");
    if (i_ - start > 20) return bad("a number too large for an entry");
    return true;
  }
  bool null_or(bool (PrefixReader::*other)()) {
    if (!at_end() && f_[i_] == 'n') return literal("null");
    return (this->*other)();
  }
  bool plain_string() { return string(); }
  bool any_integer() { return integer(true); }
  // `expected` exactly (what the writer knows it writes), or a start of it.
  bool exactly(const std::string& expected, const std::string& what) {
    for (const char c : expected) {
      if (at_end()) return false;
      if (f_[i_] != c) return bad(what);
      ++i_;
    }
    return true;
  }
  bool value(Shape shape, std::string_view kind) {
    if (at_end()) return false;
    switch (shape) {
      case Shape::kString:
        return string();
      case Shape::kStringOrNull:
        return null_or(&PrefixReader::plain_string);
      case Shape::kCount:
        return integer(false);
      case Shape::kIntStringOrNull:
        if (f_[i_] == '"') return string();
        return null_or(&PrefixReader::any_integer);
      case Shape::kHex32:
        return shaped(std::string(32, 'h'), "32 lowercase hex digits");
      case Shape::kHex64:
        return shaped(std::string(64, 'h'), "64 lowercase hex digits");
      case Shape::kHex128:
        return shaped(std::string(128, 'h'), "128 lowercase hex digits");
      case Shape::kTime:
        return shaped("dddd-dd-ddTdd:dd:ddZ", "a UTC time YYYY-MM-DDTHH:MM:SSZ");
      case Shape::kKind:
        // "act" begins a ledger entry and a plan entry alike.
        if (kind == std::string_view("ledger")) {
          return one_of({"ledger", "plan", "console"},
                        "\"ledger\", \"plan\" or \"console\", the kinds \"act\" begins");
        }
        return one_of({kind}, "\"" + std::string(kind) + "\", the kind its first key begins");
      case Shape::kEffect:
        return one_of({"none", "read", "copy", "create"}, "an effect");
      case Shape::kStrings: {
        if (!literal("[")) return false;
        for (bool first = true;; first = false) {
          if (at_end()) return false;
          if (f_[i_] == ']') {
            ++i_;
            return true;
          }
          if (!first && !literal(",")) return false;
          if (!string()) return false;
        }
      }
      case Shape::kPrev:
        return exactly("\"" + next_.prev + "\"",
                       "'prev' is not the hash of the line before (" + next_.prev + ")");
      case Shape::kSeq: {
        const uint64_t seq = kind == "repair" ? next_.repair_seq : next_.seq;
        if (!exactly(std::to_string(seq), "'seq' is not " + std::to_string(seq) +
                                              ", the seq that follows the line before")) {
          return false;
        }
        if (!at_end() && std::isdigit(static_cast<unsigned char>(f_[i_]))) {
          return bad("'seq' is not " + std::to_string(seq) +
                     ", the seq that follows the line before");
        }
        return !ended_;
      }
    }
    return false;
  }

  std::string_view f_;
  const NextLine& next_;
  size_t i_ = 0;
  bool ended_ = false;
  bool shape_complete_ = false;  // shaped() read every character of its value
  std::string why_;
};

// "" when `fragment` (the unterminated bytes at the end of a log) is a torn tail, a cut of the
// line a writer writes next (see above), else why it is not.
std::string why_not_torn(std::string_view fragment, const NextLine& next) {
  return PrefixReader(fragment, next).why_not_torn();
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

// What to do about a last line (line `line` of `path`) without a newline that is not a torn
// line: nothing removes it, and neither an append nor a repair continues after it.
std::string unterminated_fix(const std::string& path, uint64_t line) {
  return "last line (line " + std::to_string(line) +
         ") has no newline and is not a torn line, so no append and no 'audit repair' continues "
         "after it: check that line, then restore the log from a copy, or, if the line belongs "
         "there, end it with a newline (printf '\\n' >> " +
         path + ") and run 'replaygate audit verify " + path +
         "' again ('audit repair' can then record any problem left)";
}

// A log read whole: what verify reports, and what an append or a repair continues from.
struct Scan {
  VerifyReport report;
  std::map<uint64_t, uint64_t> decisions;  // decision seq -> seq of its result (0: none yet)
  size_t complete = 0;                     // the end of the last '\n' (0 when there is none)
  size_t body_end = 0;  // the end of the last complete line that is not blank, its '\n' included
  // The bytes after the last '\n' are not a torn tail: a problem, which nothing removes (appends
  // and repairs refuse the log).
  bool kept_fragment = false;
  bool foreign_fragment = false;  // of which: neither an entry nor the start of one
  uint64_t fragment_line = 0;     // the line number of a kept fragment
  uint64_t last_seq = 0;          // the seq of the last valid entry
  std::string last_time;          // its time ("" before the first)
  uint64_t seq_expected = 0;      // the seq the last line that is not blank should have
  uint64_t max_seq = 0;           // the largest seq of a valid entry
  uint64_t since_checkpoint = 0;  // valid entries after the last valid checkpoint
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
  // BLAKE2b of the bytes before the line being checked (lines are checked in file order), fed
  // only as far as a checkpoint needs it.
  ChainDigest digest;
  size_t digested = 0;
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
    } else if (entry["kind"] == "ledger") {
      ++report.ledger;
    } else if (entry["kind"] == "checkpoint") {
      ++report.checkpoint_entries;
      digest.update(bytes.substr(digested, offset - digested));
      digested = offset;
      if (entry["chain_digest"] == digest.hex()) {
        report.checkpoints.push_back({line_number, seq, report.entries, entry["key_id"], time,
                                      entry["prev"], entry["chain_digest"], entry["signature"],
                                      line_hash(line)});
        s.since_checkpoint = 0;
      } else {
        report.problems.push_back(where +
                                  "'chain_digest' is not the BLAKE2b-256 of the lines before "
                                  "this checkpoint: a byte before it was changed, added or "
                                  "removed after it was signed, so it vouches for nothing");
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
    if (entry["kind"] != "checkpoint") ++s.since_checkpoint;
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
  // The line a writer writes next: a cut of it is the only torn tail (see PrefixReader).
  const NextLine next{report.last_hash, s.last_seq + 1, std::max(s.max_seq, s.seq_expected) + 1};
  const std::string not_torn = fragment.empty() ? "" : why_not_torn(fragment, next);
  if (fragment.empty() || not_torn.empty()) {
    report.trailing_empty_lines = lines_in(bytes, s.body_end, s.complete);
    if (!fragment.empty()) {
      report.torn_tail = true;
      report.torn_bytes = fragment.size();
    }
  } else {
    // Not a cut of the line an append writes: nothing removes it (appends and repairs refuse the
    // log), and the empty lines before it are between lines.
    check_lines(s.body_end, s.complete);
    s.kept_fragment = true;
    s.fragment_line = line_number + 1;
    report.unterminated = true;
    const bool whole = is_whole_object(fragment);
    if (whole) {
      check_line(fragment, s.complete);  // its own problems too, named as any line's
    } else {
      ++line_number;
      s.foreign_fragment = !looks_like_torn_entry(fragment);
    }
    report.problems.push_back(
        "line " + std::to_string(s.fragment_line) + ": " +
        (s.foreign_fragment
             ? "without a newline, and neither an entry nor the start of one (it begins '" +
                   escape_control(utf8_prefix(fragment, 40)) + "'" +
                   (fragment.size() > 40 ? "..." : "") + "): not a torn line an append left"
             : "without a newline, and not a torn line (" +
                   (whole ? std::string("it is a whole JSON object") : not_torn) +
                   "): an append writes a whole line and its newline in one write, so a crash "
                   "leaves only a cut of the next entry, never these bytes"));
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
  } else if (s.kept_fragment) {
    report.append_refusal = "it does not verify (" + plural(report.problems.size(), "problem") +
                            ", the first on line " +
                            std::to_string(problem_line(report.problems.front())) +
                            ", above) and its " + unterminated_fix("LOG", s.fragment_line);
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
  if (scan.kept_fragment) {
    return "refusing to append to " + path + ", which does not verify: " + problems.front() + more +
           "; nothing was changed. Its " + unterminated_fix(path, scan.fragment_line);
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

// The one way an append or a repair writes: under the lock, after every check that can refuse,
// removes what holds no acknowledged entry (a torn tail, empty lines after the last entry: only
// when `scan` found them; a log with a kept last fragment never gets here, it does not verify and
// both refuse it), handing the removed bytes back in *result to be shown, then writes `record`
// with one write(2) and fsyncs. "" or the error (a short write is truncated back).
std::string cut_then_write(const LockedLog& log, const Scan& scan, const std::string& path,
                           const std::string& record, AppendResult* result) {
  size_t restore_size = log.bytes.size();  // the file as found, when nothing is cut
  if (!scan.kept_fragment && scan.body_end < log.bytes.size()) {
    if (const std::string error = cut_to(log, path, scan.body_end); !error.empty()) return error;
    result->removed_torn_tail = std::string(std::string_view(log.bytes).substr(scan.complete));
    result->removed_empty_lines = scan.report.trailing_empty_lines;
    restore_size = scan.body_end;
  }
  return write_record(log, path, record, restore_size);
}

// "-" is not standard input or output for a writer (other commands read "-" so): it locks the
// log, reads it whole and writes at its end, which needs the file itself.
const char* const kDashRefused =
    "the audit log cannot be '-' (standard input or output): an append locks the log file, "
    "reads it and appends to it; name the file (./- for a file called '-')";

}  // namespace

// Whether `bytes` (a log) hold `anchor`'s line: the line whose seq it names, with
// its hash, after bytes whose BLAKE2b-256 is its chain_digest (an anchor need not be a
// checkpoint: a writer that checkpoints per block anchors its last entry).
bool holds_anchor(std::string_view bytes, const Anchor& anchor) {
  const std::string seq = std::to_string(anchor.seq);
  for (size_t from = 0, end = bytes.find('\n'); end != std::string_view::npos;
       from = end + 1, end = bytes.find('\n', from)) {
    const std::string_view line = bytes.substr(from, end - from);
    if (member_text(line, "seq") != seq) continue;
    if (line_hash(line) != anchor.head) continue;
    ChainDigest digest;
    digest.update(bytes.substr(0, from));
    if (digest.hex() == anchor.chain_digest) return true;
  }
  return false;
}

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

AppendResult append(const std::string& path, nlohmann::json entry, uint64_t decision_seq,
                    const CheckpointSigner* signer) {
  std::vector<nlohmann::json> entries;
  entries.push_back(std::move(entry));
  return append_batch(path, std::move(entries), decision_seq, signer);
}

namespace {

// Where the chain stands for the next append: what scan_log() found, then what each append wrote.
struct ChainState {
  uint64_t seq = 1;  // the next entry's
  std::string prev;
  std::string last_time;  // no new entry is recorded as earlier
  uint64_t since_checkpoint = 0;
  std::map<uint64_t, uint64_t> decisions;  // decision seq -> seq of its result (0: none yet)
  std::unique_ptr<ChainDigest> digest;     // with a signer: of every byte the log keeps
};

ChainState chain_after(const Scan& scan, std::string_view bytes, const CheckpointSigner* signer) {
  ChainState st;
  st.seq = scan.last_seq + 1;
  st.prev = scan.report.last_hash;
  st.last_time = scan.last_time;
  st.since_checkpoint = scan.since_checkpoint;
  st.decisions = scan.decisions;
  // What the checkpoints sign: every byte the log keeps (a torn tail and empty lines after the
  // last entry are cut before the write) and every line written before them.
  if (signer != nullptr) {
    st.digest = std::make_unique<ChainDigest>();
    st.digest->update(bytes.substr(0, scan.body_end));
  }
  return st;
}

// The lines that append `entries` (and, with `signer`, their checkpoints) to a log whose chain is
// `st`, into *record; advances `st` only when it succeeds. Errors: `decision_seq` names no
// decision entry or one with a result, a bad signer, an invalid entry.
std::string compose(ChainState& st, std::vector<nlohmann::json>& entries, uint64_t decision_seq,
                    const CheckpointSigner* signer, const std::string& path, std::string* record,
                    AppendResult* result, bool close = false) {
  if (decision_seq != 0) {
    const auto it = st.decisions.find(decision_seq);
    if (it == st.decisions.end()) {
      return "the audit log " + path + " has no decision entry " + std::to_string(decision_seq);
    }
    if (it->second != 0) {
      return "decision entry " + std::to_string(decision_seq) + " in " + path +
             " already has its result (entry " + std::to_string(it->second) +
             "); a decision has one result";
    }
  }
  if (entries.empty() && !(close && signer != nullptr && st.since_checkpoint > 0)) {
    result->seq = st.seq - 1;
    result->hash = st.prev;
    return "";
  }
  if (signer != nullptr && (signer->key == nullptr || signer->every == 0)) {
    return "refusing to append to " + path +
           ": a checkpoint signer needs a key and an interval of at least 1 entry";
  }
  ChainState next;
  next.seq = st.seq;
  next.prev = st.prev;
  next.last_time = st.last_time;
  next.since_checkpoint = st.since_checkpoint;
  std::vector<std::pair<uint64_t, uint64_t>> decided;  // (decision seq, result seq or 0)
  std::unique_ptr<ChainDigest> digest;
  if (signer != nullptr) digest = std::make_unique<ChainDigest>(*st.digest);
  std::string line;
  const auto add_checkpoint = [&] {
    const std::string key_id = verify::hex(signer->key->id);
    const std::string chain_digest = digest->hex();
    const std::string time = std::max(next.last_time, utc_now());
    json checkpoint;
    checkpoint["kind"] = "checkpoint";
    checkpoint["seq"] = next.seq;
    checkpoint["prev"] = next.prev;
    checkpoint["time"] = time;
    checkpoint["key_id"] = key_id;
    checkpoint["chain_digest"] = chain_digest;
    checkpoint["signature"] = checkpoint_signature(
        *signer->key, checkpoint_message(next.seq, next.prev, time, key_id, chain_digest));
    ++next.seq;
    next.last_time = time;
    line = checkpoint.dump();
    result->checkpoint_seq = checkpoint["seq"];
    next.prev = line_hash(line);
    result->checkpoint_head = next.prev;
    result->checkpoint_digest = chain_digest;
    result->last = Anchor{result->checkpoint_seq, next.prev, chain_digest};
    *record += line;
    *record += '\n';
    digest->update(line);
    digest->update("\n");
    next.since_checkpoint = 0;
  };
  for (nlohmann::json& entry : entries) {
    entry["seq"] = next.seq++;
    entry["prev"] = next.prev;
    // Time runs forward in the log even when the clock was set back (NTP, another host): such an
    // entry gets the time of the entry before it, so verify's order check holds for what is
    // written. (The fixed-width UTC form orders as text.)
    if (entry.contains("time") && entry["time"].is_string() &&
        entry["time"].get_ref<const std::string&>() < next.last_time) {
      entry["time"] = next.last_time;
    }
    if (entry.contains("time") && entry["time"].is_string()) next.last_time = entry["time"];
    // What is written must verify: a caller's bad value (or a repair entry, which only repair()
    // writes) is refused here, not found later.
    std::string problem = check_fields(entry);
    if (problem.empty() && entry["kind"] == "repair") problem = "a repair entry";
    if (problem.empty() && entry["kind"] == "checkpoint") {
      problem = "a checkpoint entry, which only a signing append writes";
    }
    if (!problem.empty()) {
      return "refusing to append an invalid entry to " + path + " (" + problem + ")";
    }
    if (entry["kind"] == "decision") decided.emplace_back(entry["seq"].get<uint64_t>(), 0);
    if (entry["kind"] == "result") {
      decided.emplace_back(entry["decision"].get<uint64_t>(), entry["seq"].get<uint64_t>());
    }
    // Control characters are escaped. A string that is not UTF-8 (only a file name can be: decide's
    // `source`; letters and operators are checked) gets U+FFFD for its bad bytes: the default
    // would throw, after decide has rendered the decisions this append must record first.
    line = entry.dump(-1, ' ', false, json::error_handler_t::replace);
    next.prev = line_hash(line);
    *record += line;
    *record += '\n';
    result->seq = entry["seq"];
    result->seqs.push_back(result->seq);
    result->hash = next.prev;
    if (digest) {
      result->last = Anchor{result->seq, next.prev, digest->hex()};
      digest->update(line);
      digest->update("\n");
      if (++next.since_checkpoint >= signer->every) add_checkpoint();
    }
  }
  if (digest && next.since_checkpoint > 0 && (signer->end_each_append || close)) {
    add_checkpoint();
  }
  st.seq = next.seq;
  st.prev = std::move(next.prev);
  st.last_time = std::move(next.last_time);
  st.since_checkpoint = next.since_checkpoint;
  for (const auto& [d, r] : decided) st.decisions[d] = r;
  if (digest) st.digest = std::move(digest);
  return "";
}

// Why a signing writer (`signer` with its key) must not continue the log at `path` that `scan`
// read, against `anchor` (signing_refusal()); "" when it may, or when nothing is signed.
std::string signed_refusal(const Scan& scan, std::string_view bytes, const std::string& path,
                           const CheckpointSigner* signer, const Anchor& anchor) {
  if (signer == nullptr || signer->key == nullptr) return "";
  // An anchor the log holds needs no more checking; signing_refusal() refuses one it does not.
  const Anchor unmet = anchor.seq > 0 && holds_anchor(bytes, anchor) ? Anchor{} : anchor;
  const std::string why = signing_refusal(scan.report, *signer->key, unmet, signer->accept_repairs);
  if (why.empty()) return "";
  return "refusing to sign on after " + path + ": " + why +
         "; nothing was written. Check it with 'replaygate audit verify " + path +
         " --trusted-key P.pub' and restore it from a copy";
}

// The last checkpoint of `scan` when it comes after `known` (a writer's baseline: what the log
// must keep holding while it runs), else `known`.
Anchor later_anchor(const Scan& scan, const Anchor& known) {
  if (scan.report.checkpoints.empty()) return known;
  const CheckpointSeen& last = scan.report.checkpoints.back();
  if (last.seq <= known.seq) return known;
  return Anchor{last.seq, last.head, last.chain_digest};
}

}  // namespace

AppendResult append_batch(const std::string& path, std::vector<nlohmann::json> entries,
                          uint64_t decision_seq, const CheckpointSigner* signer) {
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
  if (signer != nullptr) {
    if (std::string why = signed_refusal(scan, log.bytes, path, signer, signer->anchor);
        !why.empty()) {
      return fail(std::move(why));
    }
  }
  // A torn tail and empty lines after the last entry are removed, not continued, by
  // cut_then_write(), right before the write, after every check that can refuse: a refused
  // append changes nothing. (A last line without its newline that is not torn is a problem: the
  // log does not verify and was refused above.)
  ChainState chain = chain_after(scan, log.bytes, signer);
  std::string record;
  if (const std::string error =
          compose(chain, entries, decision_seq, signer, path, &record, &result);
      !error.empty()) {
    return fail(error);
  }
  if (entries.empty()) {
    result.ok = true;
    return result;
  }
  if (const std::string error = cut_then_write(log, scan, path, record, &result); !error.empty()) {
    return fail(error);
  }
  result.ok = true;
  return result;
}

struct Appender::State {
  std::string path;
  const CheckpointSigner* signer = nullptr;
  LockedLog log;
  Scan scan;
  ChainState chain;
  bool written = false;  // the first write cuts what scan found after the last entry
  struct stat opened {};
  uint64_t size = 0;  // the file's size after this appender's last write
  // Its ctime then: any write by another (an in-place rewrite of the same size too) changes it.
  struct timespec changed {};
  // With a signer: the last checkpoint the log must still hold (the ledger anchor, then the last
  // one seen or written here): a file rewritten below it under a running writer is refused.
  Anchor known;
};

std::unique_ptr<Appender> Appender::open(const std::string& path, const CheckpointSigner* signer,
                                         std::string* error) {
  if (path == "-") {
    *error = kDashRefused;
    return nullptr;
  }
  auto state = std::make_unique<State>();
  state->path = path;
  state->signer = signer;
  if (std::string why = open_locked(path, true, "", &state->log); !why.empty()) {
    *error = std::move(why);
    return nullptr;
  }
  state->scan = scan_log(state->log.bytes);
  if (!state->scan.report.ok()) {
    *error = refusal(state->scan, path, state->log.bytes);
    return nullptr;
  }
  if (signer != nullptr) {
    *error = signed_refusal(state->scan, state->log.bytes, path, signer, signer->anchor);
    if (!error->empty()) return nullptr;
    state->known = later_anchor(state->scan, signer->anchor);
  }
  state->chain = chain_after(state->scan, state->log.bytes, signer);
  ::fstat(state->log.f.fd, &state->opened);
  state->changed = state->opened.st_ctim;
  state->size = state->log.bytes.size();  // the bytes are kept until the first write
  ::flock(state->log.f.fd, LOCK_UN);      // taken again for each append
  return std::unique_ptr<Appender>(new Appender(std::move(state)));
}

Appender::Appender(std::unique_ptr<State> state) : state_(std::move(state)) {}
Appender::~Appender() = default;

AppendResult Appender::append_batch(std::vector<nlohmann::json> entries, uint64_t decision_seq) {
  return write(std::move(entries), decision_seq, false);
}

AppendResult Appender::close() { return write({}, 0, true); }

AppendResult Appender::write(std::vector<nlohmann::json> entries, uint64_t decision_seq,
                             bool close) {
  State& st = *state_;
  AppendResult result;
  auto fail = [&](std::string message) {
    result.ok = false;
    result.error = std::move(message);
    return result;
  };
  // The lock is held for this append only, so other appenders (`ledger release --audit`, another
  // gate) can write between two of ours. A file replaced behind it (an editor's rename) is
  // refused; a file that grew since our last write is read and verified again, whole (the slow
  // path append() always takes), and continued only when it verifies.
  while (::flock(st.log.f.fd, LOCK_EX) != 0) {
    if (errno != EINTR) return fail("cannot lock " + st.path + ": " + errno_text(errno));
  }
  struct Unlock {
    int fd;
    ~Unlock() { ::flock(fd, LOCK_UN); }
  } unlock{st.log.f.fd};
  struct stat now {};
  struct stat file {};
  if (::fstat(st.log.f.fd, &now) != 0 || ::stat(st.path.c_str(), &file) != 0 ||
      file.st_ino != st.opened.st_ino || file.st_dev != st.opened.st_dev) {
    return fail("refusing to append to " + st.path +
                ": the file was replaced (renamed over or removed) since this command opened it; "
                "nothing was written. Check it with 'replaygate audit verify " +
                st.path + "'");
  }
  if (static_cast<uint64_t>(now.st_size) != st.size || now.st_ctim.tv_sec != st.changed.tv_sec ||
      now.st_ctim.tv_nsec != st.changed.tv_nsec) {
    int read_error = 0;
    if (!read_all(st.log.f.fd, static_cast<uint64_t>(now.st_size), &st.log.bytes, &read_error)) {
      return fail("cannot read " + st.path + ": " + errno_text(read_error));
    }
    Scan scan = scan_log(st.log.bytes);
    if (!scan.report.ok()) return fail(refusal(scan, st.path, st.log.bytes));
    if (st.signer != nullptr) {
      if (std::string why = signed_refusal(scan, st.log.bytes, st.path, st.signer, st.known);
          !why.empty()) {
        return fail(std::move(why));
      }
      st.known = later_anchor(scan, st.known);
    }
    st.chain = chain_after(scan, st.log.bytes, st.signer);
    st.scan = std::move(scan);
    st.size = st.log.bytes.size();
    st.written = false;  // the next write removes a torn tail found now, as append() does
  }
  std::string record;
  if (const std::string error =
          compose(st.chain, entries, decision_seq, st.signer, st.path, &record, &result, close);
      !error.empty()) {
    return fail(error);
  }
  if (record.empty()) {
    result.ok = true;
    return result;
  }
  std::string error;
  if (!st.written) {
    // The first write removes what scan found after the last entry (a torn tail, empty lines).
    error = cut_then_write(st.log, st.scan, st.path, record, &result);
    if (error.empty()) {
      st.log.bytes.clear();
      st.log.bytes.shrink_to_fit();
    }
  } else {
    error = write_record(st.log, st.path, record, st.size);
  }
  struct stat after {};
  if (::fstat(st.log.f.fd, &after) == 0) {
    st.size = static_cast<uint64_t>(after.st_size);
    st.changed = after.st_ctim;
  }
  if (!error.empty()) return fail(error);
  st.written = true;
  if (result.last.seq > st.known.seq) st.known = result.last;
  result.ok = true;
  return result;
}

AppendResult Appender::append(nlohmann::json entry, uint64_t decision_seq) {
  std::vector<nlohmann::json> entries;
  entries.push_back(std::move(entry));
  return append_batch(std::move(entries), decision_seq);
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
  // A last line without its newline that is not torn: a repair does not guess what it is (a
  // whole entry a person may have read, an edit, junk) and writes nothing.
  if (scan.kept_fragment) {
    return fail("refusing to repair " + path + ": its " +
                unterminated_fix(path, scan.fragment_line) + "; nothing was written");
  }
  // What the repair entry covers: every byte of the log but a torn tail or empty lines after the
  // last line (what an append removes: nothing acknowledged is there).
  const std::string covered_bytes = log.bytes.substr(0, scan.body_end);
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
  if (const std::string error = cut_then_write(log, scan, path, line + "\n", &result);
      !error.empty()) {
    return fail(error);
  }
  result.ok = true;
  result.seq = entry["seq"];
  result.hash = line_hash(line);
  result.acknowledged = problems;
  return result;
}

}  // namespace replaygate::audit
