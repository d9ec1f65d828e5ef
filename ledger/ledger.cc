// The backend-independent half of the ledger: open_ledger (URL → backend), the argument checks
// every backend relies on, the mutex and the exception barrier around each call, and the time and
// state texts. The backends live in sqlite_ledger.cc and postgres_ledger.cc.
#include "ledger/ledger.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <new>
#include <set>

#include "ledger/backends.h"

namespace replaygate::ledger {

namespace internal {

Error error(ErrorCode code, std::string message) { return Error{code, std::move(message)}; }

Error schema_version_error(const std::string& describe, long long version) {
  const std::string v = std::to_string(version), mine = std::to_string(kSchemaVersion);
  if (version > kSchemaVersion) {
    return error(ErrorCode::kSchemaVersion,
                 "ledger " + describe + ": refused: ledger schema version " + v +
                     " is newer than this replaygate (" + mine + "): upgrade replaygate");
  }
  return error(ErrorCode::kSchemaVersion,
               "ledger " + describe + ": refused: ledger schema version " + v +
                   "; this replaygate uses " + mine + ": run `replaygate ledger migrate --ledger " +
                   describe + " --operator NAME --reason TEXT --audit LOG`");
}

std::optional<Error> mark_refusal(const std::string& describe, std::string_view key,
                                  std::int64_t generation, std::optional<State> current,
                                  State state) {
  const std::string what = "ledger " + describe + ": mark: key '" + std::string(key) + "' ";
  if (!current || *current == State::kReleased) {
    return error(ErrorCode::kNotFound, what + "has no live claim of generation " +
                                           std::to_string(generation) +
                                           (current ? " (it was released)" : ""));
  }
  // The states in their order: claimed, recorded, confirmed.
  if (static_cast<int>(*current) > static_cast<int>(state)) {
    return error(ErrorCode::kBadTransition, what + "generation " + std::to_string(generation) +
                                                " is " + std::string(state_name(*current)) +
                                                ", it cannot go back to " +
                                                std::string(state_name(state)));
  }
  return std::nullopt;
}

bool clean_text(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr std::array<std::uint32_t, 5> kMin = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

namespace {

bool digits(std::string_view s, size_t pos, size_t count, int& out) {
  if (pos + count > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

// Parses "YYYY-MM-DD?HH:MM:SS" at the start of s; returns the time (UTC, no offset applied).
std::optional<Time> parse_date_time(std::string_view s, bool& fraction_follows, size_t& end) {
  int y, mo, d, h, mi, se;
  if (!digits(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || !(s[10] == 'T' || s[10] == 't' || s[10] == ' ') ||
      !digits(s, 11, 2, h) || s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' ||
      !digits(s, 17, 2, se)) {
    return std::nullopt;
  }
  const std::chrono::year_month_day ymd{std::chrono::year{y},
                                        std::chrono::month{static_cast<unsigned>(mo)},
                                        std::chrono::day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || se > 60) return std::nullopt;
  if (se == 60) se = 59;  // a leap second is recorded as :59.999999
  Time t = std::chrono::time_point_cast<std::chrono::microseconds>(
      std::chrono::sys_days{ymd} + std::chrono::hours{h} + std::chrono::minutes{mi} +
      std::chrono::seconds{se});
  end = 19;
  fraction_follows = s.size() > 19 && s[19] == '.';
  return t;
}

}  // namespace

std::optional<Time> parse_stored_time(std::string_view text) {
  if (text.size() != 27 || text[10] != 'T' || text[19] != '.' || text[26] != 'Z') {
    return std::nullopt;
  }
  auto t = parse_time(text);
  return t;
}

std::string differing_fields(const PlanRecord& a, const PlanRecord& b) {
  std::string out;
  const auto add = [&](bool differ, const char* name) {
    if (differ) out += (out.empty() ? "" : ", ") + std::string(name);
  };
  add(a.author != b.author, "author");
  add(a.source != b.source, "source");
  add(a.table_checksum != b.table_checksum, "table_checksum");
  add(a.letters != b.letters, "letters");
  add(a.copies != b.copies, "copies");
  add(a.created_at != b.created_at, "created_at");
  add(a.expires_at != b.expires_at, "expires_at");
  return out;
}

}  // namespace internal

using internal::error;

std::string format_time(Time t) {
  using namespace std::chrono;
  static const Time kMin = sys_days{year{0} / January / 1};
  static const Time kMax = sys_days{year{9999} / December / 31} + hours{23} + minutes{59} +
                           seconds{59} + microseconds{999999};
  t = std::clamp(t, kMin, kMax);
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const auto in_day = t - day;
  const auto h = duration_cast<hours>(in_day);
  const auto mi = duration_cast<minutes>(in_day - h);
  const auto se = duration_cast<seconds>(in_day - h - mi);
  const auto us = in_day - h - mi - se;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%06lldZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(h.count()),
                static_cast<int>(mi.count()), static_cast<int>(se.count()),
                static_cast<long long>(us.count()));
  return buf;
}

std::optional<Time> parse_time(std::string_view s) {
  bool fraction = false;
  size_t pos = 0;
  auto t = internal::parse_date_time(s, fraction, pos);
  if (!t) return std::nullopt;
  if (fraction) {
    ++pos;
    size_t start = pos;
    std::int64_t us = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (pos - start < 6) us = us * 10 + (s[pos] - '0');
      ++pos;
    }
    if (pos == start) return std::nullopt;
    for (size_t k = pos - start; k < 6; ++k) us *= 10;
    *t += std::chrono::microseconds{us};
  }
  if (pos >= s.size()) return std::nullopt;
  if ((s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) return t;
  int oh, om;
  if ((s[pos] == '+' || s[pos] == '-') && pos + 6 == s.size() &&
      internal::digits(s, pos + 1, 2, oh) && s[pos + 3] == ':' &&
      internal::digits(s, pos + 4, 2, om) && oh <= 23 && om <= 59) {
    const auto offset = std::chrono::hours{oh} + std::chrono::minutes{om};
    // local = UTC + offset, so UTC = local - offset.
    return s[pos] == '+' ? *t - offset : *t + offset;
  }
  return std::nullopt;
}

std::optional<std::chrono::microseconds> parse_duration(std::string_view text) {
  if (text.size() < 2 || text.size() > 7) return std::nullopt;  // at most 999999d
  std::int64_t n = 0;
  for (const char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  using namespace std::chrono;
  switch (text.back()) {
    case 'd':
      return duration_cast<microseconds>(hours{24} * n);
    case 'h':
      return duration_cast<microseconds>(hours{n});
    case 'm':
      return duration_cast<microseconds>(minutes{n});
    case 's':
      return duration_cast<microseconds>(seconds{n});
    default:
      return std::nullopt;
  }
}

std::string_view state_name(State state) {
  switch (state) {
    case State::kClaimed:
      return "claimed";
    case State::kRecorded:
      return "recorded";
    case State::kConfirmed:
      return "confirmed";
    case State::kReleased:
      return "released";
  }
  return "?";
}

std::optional<State> parse_state(std::string_view name) {
  for (State s : {State::kClaimed, State::kRecorded, State::kConfirmed, State::kReleased}) {
    if (state_name(s) == name) return s;
  }
  return std::nullopt;
}

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kForeign:
      return "foreign";
    case ErrorCode::kSchemaVersion:
      return "schema_version";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kBadTransition:
      return "bad_transition";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "?";
}

namespace {

constexpr size_t kMaxText = 4096;

std::optional<Error> check_text(std::string_view what, std::string_view s, bool required) {
  if (required && s.empty())
    return error(ErrorCode::kInvalidArgument, std::string(what) + " is empty");
  if (s.size() > kMaxText) {
    return error(ErrorCode::kInvalidArgument, std::string(what) + " is longer than 4096 bytes (" +
                                                  std::to_string(s.size()) + ")");
  }
  if (!internal::clean_text(s)) {
    return error(ErrorCode::kInvalidArgument,
                 std::string(what) + " is not valid UTF-8 or contains a NUL byte");
  }
  return std::nullopt;
}

std::optional<Error> check_key(std::string_view key) { return check_text("key", key, true); }

std::optional<Error> check_claim(const Claim& c, size_t index) {
  const std::string at = "claim " + std::to_string(index) + ": ";
  for (auto [what, value, required] :
       {std::tuple<const char*, const std::string*, bool>{"key", &c.key, true},
        {"policy", &c.policy, false},
        {"table_checksum", &c.table_checksum, false},
        {"rule", &c.rule, false},
        {"message_id", &c.message_id, false},
        {"worker", &c.worker, false},
        {"body_digest", &c.body_digest, false}}) {
    if (auto e = check_text(what, *value, required)) {
      e->message = at + e->message;
      return e;
    }
  }
  return std::nullopt;
}

template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return error(ErrorCode::kInternal, "ledger: out of memory");
  } catch (const std::exception& e) {
    return error(ErrorCode::kInternal, std::string("ledger: internal error: ") + e.what());
  } catch (...) {
    return error(ErrorCode::kInternal, "ledger: internal error (unknown exception)");
  }
}

bool valid_scope(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

}  // namespace

std::string key_problem(std::string_view key) {
  const std::optional<Error> e = check_key(key);
  // check_text's message starts with "key ": the problem is what follows.
  return e ? e->message.substr(4) : std::string();
}

Ledger::Ledger(std::string scope, std::string describe, std::function<Time()> clock)
    : scope_(std::move(scope)), describe_(std::move(describe)), clock_(std::move(clock)) {}

Time Ledger::now() const {
  if (clock_) return clock_();
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

Result<std::vector<ClaimOutcome>> Ledger::claim_batch(const std::vector<Claim>& claims) {
  return guarded([&]() -> Result<std::vector<ClaimOutcome>> {
    for (size_t i = 0; i < claims.size(); ++i) {
      if (auto e = check_claim(claims[i], i)) return *e;
    }
    if (claims.empty()) return std::vector<ClaimOutcome>{};
    std::lock_guard lock(mu_);
    return do_claim_batch(claims);
  });
}

Result<std::vector<std::optional<Record>>> Ledger::lookup(const std::vector<std::string>& keys) {
  return guarded([&]() -> Result<std::vector<std::optional<Record>>> {
    for (const auto& k : keys) {
      if (auto e = check_key(k)) return *e;
    }
    if (keys.empty()) return std::vector<std::optional<Record>>{};
    std::lock_guard lock(mu_);
    return do_lookup(keys);
  });
}

Status Ledger::mark_batch(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                          State state) {
  return mark_batch_with_progress(claims, state, {});
}

Result<Record> Ledger::mark(std::string_view key, std::int64_t generation, State state) {
  return guarded([&]() -> Result<Record> {
    Status s = mark_batch({{std::string(key), generation}}, state);
    if (!s) return s.error();
    auto rows = show(key);
    if (!rows) return rows.error();
    for (auto& r : *rows) {
      if (r.generation == generation) return r;
    }
    return error(ErrorCode::kNotFound, "mark: the claim vanished after it was marked");
  });
}

Result<Record> Ledger::release(std::string_view key, std::string_view operator_name,
                               std::string_view reason) {
  return guarded([&]() -> Result<Record> {
    if (auto e = check_key(key)) return *e;
    if (auto e = check_text("operator", operator_name, true)) return *e;
    if (auto e = check_text("reason", reason, true)) return *e;
    std::lock_guard lock(mu_);
    return do_release(key, operator_name, reason);
  });
}

Result<std::vector<Record>> Ledger::show(std::string_view key) {
  return guarded([&]() -> Result<std::vector<Record>> {
    if (auto e = check_key(key)) return *e;
    std::lock_guard lock(mu_);
    return do_show(key);
  });
}

Result<std::vector<Record>> Ledger::list(Time since) {
  return guarded([&]() -> Result<std::vector<Record>> {
    std::lock_guard lock(mu_);
    return do_list(since);
  });
}

Result<Stats> Ledger::stats() {
  return guarded([&]() -> Result<Stats> {
    std::lock_guard lock(mu_);
    return do_stats();
  });
}

Result<std::int64_t> Ledger::export_rows(const std::function<bool(const Record&)>& sink) {
  return guarded([&]() -> Result<std::int64_t> {
    std::lock_guard lock(mu_);
    return do_export_rows(sink);
  });
}

Result<Pruned> Ledger::prune(std::chrono::microseconds older_than, bool dry_run) {
  return guarded([&]() -> Result<Pruned> {
    if (older_than.count() < 0) {
      return internal::error(ErrorCode::kInvalidArgument,
                             "ledger " + describe() + ": prune: a negative age");
    }
    std::lock_guard lock(mu_);
    return do_prune(older_than, dry_run);
  });
}

Result<AuditAnchor> Ledger::raise_anchor(const AuditAnchor& anchor) {
  return guarded([&]() -> Result<AuditAnchor> {
    const bool bad_text = anchor.log.empty() || anchor.log.size() > 4096 ||
                          !internal::clean_text(anchor.log) || !internal::clean_text(anchor.head) ||
                          !internal::clean_text(anchor.chain_digest) ||
                          !internal::clean_text(anchor.key_id) || anchor.head.size() > 4096 ||
                          anchor.chain_digest.size() > 4096 || anchor.key_id.size() > 4096;
    if (anchor.seq < 1 || bad_text) {
      return internal::error(ErrorCode::kInvalidArgument,
                             "ledger " + describe() +
                                 ": an audit anchor needs a log name (1..4096 "
                                 "bytes of text), a seq from 1 and hex texts");
    }
    AuditAnchor a = anchor;
    a.recorded_at = now();
    std::lock_guard lock(mu_);
    return do_raise_anchor(a);
  });
}

Result<AuditAnchor> Ledger::do_raise_anchor(const AuditAnchor&) {
  return internal::error(ErrorCode::kInternal,
                         "ledger " + describe() + ": this ledger keeps no audit anchors");
}

Result<std::vector<AuditAnchor>> Ledger::do_anchors() {
  return internal::error(ErrorCode::kInternal,
                         "ledger " + describe() + ": this ledger keeps no audit anchors");
}

Result<std::vector<AuditAnchor>> Ledger::anchors() {
  return guarded([&]() -> Result<std::vector<AuditAnchor>> {
    std::lock_guard lock(mu_);
    return do_anchors();
  });
}

Result<std::int64_t> Ledger::restore(const std::vector<Record>& rows) {
  return guarded([&]() -> Result<std::int64_t> {
    std::set<std::pair<std::string_view, std::int64_t>> generations;
    std::set<std::string_view> live;
    for (size_t i = 0; i < rows.size(); ++i) {
      const Record& r = rows[i];
      Claim c{r.key,        r.policy, r.revision,    r.table_checksum, r.rule,
              r.message_id, r.worker, r.copy_replay, r.body_digest};
      if (auto e = check_claim(c, i)) return *e;
      const std::string at = "row " + std::to_string(i) + " (key '" + r.key + "'): ";
      if (r.generation < 1) {
        return error(ErrorCode::kInvalidArgument, at + "generation is not a whole number from 1");
      }
      if (!generations.emplace(r.key, r.generation).second) {
        return error(ErrorCode::kInvalidArgument,
                     at + "generation " + std::to_string(r.generation) + " is given twice");
      }
      if (r.state == State::kReleased) {
        if (!r.released_at) {
          return error(ErrorCode::kInvalidArgument, at + "released without a release time");
        }
        if (auto e = check_text("released_by", r.released_by, true)) return *e;
        if (auto e = check_text("release_reason", r.release_reason, true)) return *e;
      } else if (!live.insert(r.key).second) {
        return error(ErrorCode::kInvalidArgument, at + "a second live (not released) claim");
      }
    }
    std::lock_guard lock(mu_);
    return do_restore(rows);
  });
}

namespace {

std::optional<Error> check_plan(const PlanRecord& p) {
  for (auto [what, value, required] :
       {std::tuple<const char*, const std::string*, bool>{"plan digest", &p.digest, true},
        {"plan author", &p.author, false},
        {"plan source", &p.source, false},
        {"plan table_checksum", &p.table_checksum, false}}) {
    if (auto e = check_text(what, *value, required)) return e;
  }
  if (p.letters < 0 || p.copies < p.letters) {
    return error(ErrorCode::kInvalidArgument,
                 "plan " + p.digest + ": letters (" + std::to_string(p.letters) +
                     ") must be >= 0 and copies (" + std::to_string(p.copies) + ") >= letters");
  }
  return std::nullopt;
}

std::optional<Error> check_approval(const PlanApproval& a) {
  for (auto [what, value] : {std::pair<const char*, const std::string*>{"plan digest", &a.digest},
                             {"approver", &a.approver},
                             {"key_id", &a.key_id},
                             {"signature", &a.signature},
                             {"reason", &a.reason}}) {
    if (auto e = check_text(what, *value, true)) return e;
  }
  return std::nullopt;
}

std::optional<Error> check_progress(const PlanLetterProgress& p, size_t index) {
  const std::string at = "progress " + std::to_string(index) + ": ";
  for (auto [what, value, required] :
       {std::tuple<const char*, const std::string*, bool>{"plan digest", &p.digest, true},
        {"identity", &p.identity, true},
        {"last_outcome", &p.last_outcome, false}}) {
    if (auto e = check_text(what, *value, required)) {
      e->message = at + e->message;
      return e;
    }
  }
  if (p.done < 0 || p.held < 0 || p.changed < 0) {
    return error(ErrorCode::kInvalidArgument,
                 at + "identity " + p.identity + ": done, held and changed are increments >= 0");
  }
  return std::nullopt;
}

Error no_plans(const std::string& describe) {
  return error(ErrorCode::kInternal, "ledger " + describe + ": this ledger keeps no plans");
}

}  // namespace

Status Ledger::record_plan(const PlanRecord& plan) {
  return guarded([&]() -> Status {
    if (auto e = check_plan(plan)) return *e;
    std::lock_guard lock(mu_);
    return do_record_plan(plan);
  });
}

Result<std::optional<PlanRecord>> Ledger::plan(std::string_view digest) {
  return guarded([&]() -> Result<std::optional<PlanRecord>> {
    if (auto e = check_text("plan digest", digest, true)) return *e;
    std::lock_guard lock(mu_);
    return do_plan(digest);
  });
}

Result<PlanApproval> Ledger::approve_plan(const PlanApproval& approval) {
  return guarded([&]() -> Result<PlanApproval> {
    if (auto e = check_approval(approval)) return *e;
    std::lock_guard lock(mu_);
    return do_approve_plan(approval);
  });
}

Result<std::vector<PlanApproval>> Ledger::plan_approvals(std::string_view digest) {
  return guarded([&]() -> Result<std::vector<PlanApproval>> {
    if (auto e = check_text("plan digest", digest, true)) return *e;
    std::lock_guard lock(mu_);
    return do_plan_approvals(digest);
  });
}

Result<PlanRecord> Ledger::cancel_plan(std::string_view digest, std::string_view operator_name,
                                       std::string_view reason) {
  return guarded([&]() -> Result<PlanRecord> {
    if (auto e = check_text("plan digest", digest, true)) return *e;
    if (auto e = check_text("operator", operator_name, true)) return *e;
    if (auto e = check_text("reason", reason, true)) return *e;
    std::lock_guard lock(mu_);
    return do_cancel_plan(digest, operator_name, reason);
  });
}

Status Ledger::mark_batch_with_progress(
    const std::vector<std::pair<std::string, std::int64_t>>& claims, State state,
    const std::vector<PlanLetterProgress>& progress) {
  return guarded([&]() -> Status {
    if (state != State::kRecorded && state != State::kConfirmed) {
      return error(ErrorCode::kInvalidArgument,
                   "mark: a claim can be marked recorded or confirmed, not " +
                       std::string(state_name(state)));
    }
    for (const auto& [k, g] : claims) {
      if (auto e = check_key(k)) return *e;
    }
    for (size_t i = 0; i < progress.size(); ++i) {
      if (auto e = check_progress(progress[i], i)) return *e;
    }
    if (claims.empty() && progress.empty()) return Ok{};
    std::lock_guard lock(mu_);
    if (progress.empty()) return do_mark_batch(claims, state);
    if (claims.empty()) return do_record_plan_progress(progress);
    return do_mark_with_progress(claims, state, progress);
  });
}

Status Ledger::record_plan_progress(const std::vector<PlanLetterProgress>& progress) {
  return mark_batch_with_progress({}, State::kConfirmed, progress);
}

Result<std::vector<PlanLetterProgress>> Ledger::plan_progress(
    std::string_view digest, const std::vector<std::string>& identities) {
  return guarded([&]() -> Result<std::vector<PlanLetterProgress>> {
    if (auto e = check_text("plan digest", digest, true)) return *e;
    for (const std::string& id : identities) {
      if (auto e = check_text("identity", id, true)) return *e;
    }
    if (identities.empty()) return std::vector<PlanLetterProgress>{};
    std::lock_guard lock(mu_);
    return do_plan_progress(digest, identities);
  });
}

Result<PlanCounts> Ledger::plan_counts(std::string_view digest) {
  return guarded([&]() -> Result<PlanCounts> {
    if (auto e = check_text("plan digest", digest, true)) return *e;
    std::lock_guard lock(mu_);
    return do_plan_counts(digest);
  });
}

Result<std::vector<PlanRecord>> Ledger::plans() {
  return guarded([&]() -> Result<std::vector<PlanRecord>> {
    std::lock_guard lock(mu_);
    return do_plans();
  });
}

Result<std::int64_t> Ledger::export_plan_progress(
    std::string_view digest, const std::function<bool(const PlanLetterProgress&)>& sink) {
  return guarded([&]() -> Result<std::int64_t> {
    if (auto e = check_text("plan digest", digest, true)) return *e;
    std::lock_guard lock(mu_);
    return do_export_plan_progress(digest, sink);
  });
}

Result<std::int64_t> Ledger::do_export_plan_progress(
    std::string_view, const std::function<bool(const PlanLetterProgress&)>&) {
  return no_plans(describe());
}

Status Ledger::do_record_plan(const PlanRecord&) { return no_plans(describe()); }
Result<std::optional<PlanRecord>> Ledger::do_plan(std::string_view) { return no_plans(describe()); }
Result<PlanApproval> Ledger::do_approve_plan(const PlanApproval&) { return no_plans(describe()); }
Result<std::vector<PlanApproval>> Ledger::do_plan_approvals(std::string_view) {
  return no_plans(describe());
}
Result<PlanRecord> Ledger::do_cancel_plan(std::string_view, std::string_view, std::string_view) {
  return no_plans(describe());
}
Status Ledger::do_record_plan_progress(const std::vector<PlanLetterProgress>&) {
  return no_plans(describe());
}
Status Ledger::do_mark_with_progress(const std::vector<std::pair<std::string, std::int64_t>>&,
                                     State, const std::vector<PlanLetterProgress>&) {
  return no_plans(describe());
}
Result<std::vector<PlanLetterProgress>> Ledger::do_plan_progress(std::string_view,
                                                                 const std::vector<std::string>&) {
  return no_plans(describe());
}
Result<PlanCounts> Ledger::do_plan_counts(std::string_view) { return no_plans(describe()); }
Result<std::vector<PlanRecord>> Ledger::do_plans() { return no_plans(describe()); }

namespace {

// The URL's backend: which one, and the path or conninfo it gets.
struct Target {
  bool postgres = false;
  std::string where;
};

Result<Target> target_of(std::string_view url, const Options& options) {
  if (!valid_scope(options.scope)) {
    return error(ErrorCode::kInvalidArgument,
                 "ledger scope '" + options.scope +
                     "' is not 1..64 characters of letters, digits, '.', '_', '-'");
  }
  if (url.empty()) return error(ErrorCode::kInvalidArgument, "ledger URL is empty");
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    return Target{true, std::string(url)};
  }
  if (url.starts_with("sqlite:")) {
    std::string_view path = url.substr(7);
    if (path.starts_with("//")) path.remove_prefix(2);
    if (path.empty()) return error(ErrorCode::kInvalidArgument, "ledger URL 'sqlite:' has no path");
    return Target{false, std::string(path)};
  }
  if (auto p = url.find("://"); p != std::string_view::npos) {
    return error(ErrorCode::kInvalidArgument,
                 "ledger URL scheme '" + std::string(url.substr(0, p)) +
                     "' is not supported (use a path, sqlite:PATH or postgresql://...)");
  }
  return Target{false, std::string(url)};
}

}  // namespace

Result<Migrated> migrate_ledger(std::string_view url, const Options& options) {
  return guarded([&]() -> Result<Migrated> {
    Result<Target> t = target_of(url, options);
    if (!t) return t.error();
    return t->postgres ? internal::migrate_postgres(t->where, options)
                       : internal::migrate_sqlite(t->where, options);
  });
}

Result<std::unique_ptr<Ledger>> open_ledger(std::string_view url, const Options& options) {
  return guarded([&]() -> Result<std::unique_ptr<Ledger>> {
    Result<Target> t = target_of(url, options);
    if (!t) return t.error();
    return t->postgres ? internal::open_postgres(t->where, options)
                       : internal::open_sqlite(t->where, options);
  });
}

}  // namespace replaygate::ledger
