// The audit trail: locked, fsynced, single-write appends and a verifier (see audit.h).
#include "tools/cli/audit.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <set>
#include <system_error>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate::cli::audit {
namespace {

const std::string kZeroHash(32, '0');

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

// The problem with one complete line, or "" when it is a valid entry. Fills *seq and *kind.
std::string check_entry(std::string_view line, nlohmann::json* out) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return "not valid JSON";
  if (!j.is_object()) return "not a JSON object";
  if (!j.contains("seq") || !j["seq"].is_number_unsigned()) return "no numeric 'seq'";
  if (!j.contains("prev") || !j["prev"].is_string()) return "no 'prev' hash";
  if (!j.contains("kind") || !j["kind"].is_string()) return "no 'kind'";
  const std::string kind = j["kind"];
  static const char* const kDecision[] = {
      "time", "operator", "message_id",      "operation_id",   "action",
      "rule", "policy",   "policy_revision", "table_checksum", "record_revision"};
  static const char* const kResult[] = {"time", "decision", "revision", "outcome"};
  if (kind == "decision") {
    for (const char* key : kDecision) {
      if (!j.contains(key)) return std::string("decision entry without '") + key + "'";
    }
  } else if (kind == "result") {
    for (const char* key : kResult) {
      if (!j.contains(key)) return std::string("result entry without '") + key + "'";
    }
    if (!j["decision"].is_number_unsigned()) return "result entry's 'decision' is not a seq";
  } else {
    return "unknown kind '" + kind + "'";
  }
  *out = std::move(j);
  return "";
}

}  // namespace

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

// Whether the unterminated last fragment of a log is a complete entry that continues the chain
// (seq `expected_seq`, prev `prev_hash`): an entry that lost only its '\n' (an editor, a copy, a
// write cut exactly before the newline). Such an entry may have been acknowledged, so it is kept.
bool continues_chain(std::string_view fragment, uint64_t expected_seq,
                     const std::string& prev_hash) {
  nlohmann::json entry;
  if (!check_entry(fragment, &entry).empty()) return false;
  return entry["seq"] == expected_seq && entry["prev"] == prev_hash;
}

VerifyReport verify_bytes(std::string_view bytes) {
  VerifyReport report;
  report.last_hash = kZeroHash;
  const size_t last_newline = bytes.rfind('\n');
  const size_t complete = last_newline == std::string_view::npos ? 0 : last_newline + 1;
  std::set<uint64_t> decisions;
  uint64_t line_number = 0;
  // Checks one line (complete, or the kept unterminated last one) and advances the chain.
  const auto check_line = [&](std::string_view line) {
    ++line_number;
    const std::string where = "line " + std::to_string(line_number) + ": ";
    nlohmann::json entry;
    const std::string problem = check_entry(line, &entry);
    if (!problem.empty()) {
      report.problems.push_back(where + problem);
    } else {
      const uint64_t seq = entry["seq"];
      if (seq != line_number) {
        report.problems.push_back(where + "seq " + std::to_string(seq) + ", expected " +
                                  std::to_string(line_number) + " (a line was removed or moved)");
      }
      if (entry["prev"] != report.last_hash) {
        report.problems.push_back(where +
                                  "prev hash does not match the previous line (a line "
                                  "before it was edited, removed or reordered)");
      }
      if (entry["kind"] == "decision") {
        decisions.insert(seq);
        ++report.decisions;
      } else {
        const uint64_t decision = entry["decision"];
        if (!decisions.count(decision)) {
          report.problems.push_back(where + "result refers to decision " +
                                    std::to_string(decision) + ", which is not an earlier entry");
        }
        ++report.results;
      }
      ++report.entries;
    }
    report.last_hash = line_hash(line);
  };
  size_t at = 0;
  while (at < complete) {
    const size_t end = bytes.find('\n', at);
    check_line(bytes.substr(at, end - at));
    at = end + 1;
  }
  if (complete < bytes.size()) {
    const std::string_view fragment = bytes.substr(complete);
    if (continues_chain(fragment, line_number + 1, report.last_hash)) {
      report.unterminated = true;
      check_line(fragment);
    } else {
      report.torn_tail = true;
      report.torn_bytes = fragment.size();
    }
  }
  return report;
}

std::string removed_tail_note(const std::string& path, const AppendResult& appended) {
  if (appended.removed_torn_tail.empty()) return "";
  return "replaygate: warning: removed a torn last line from " + path + " (" +
         std::to_string(appended.removed_torn_tail.size()) +
         " bytes without a newline that are not a whole entry continuing the chain: an append "
         "that crashed before completing, never acknowledged): " +
         nlohmann::json(appended.removed_torn_tail)
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
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
  Fd f;
  f.fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
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
  // Continue the chain from the last complete line; refuse to extend a broken one (and touch
  // nothing, not even a torn tail, when refusing).
  const size_t last_newline = bytes.rfind('\n');
  const size_t complete = last_newline == std::string::npos ? 0 : last_newline + 1;
  uint64_t seq = 1;
  std::string prev = kZeroHash;
  if (complete > 0) {
    const size_t start = complete >= 2 ? bytes.rfind('\n', complete - 2) : std::string::npos;
    const size_t from = start == std::string::npos ? 0 : start + 1;
    const std::string_view last = std::string_view(bytes).substr(from, complete - 1 - from);
    nlohmann::json last_entry;
    const std::string problem = check_entry(last, &last_entry);
    if (!problem.empty()) {
      return fail("the last line of " + path + " is not a valid audit entry (" + problem +
                  "); run 'replaygate audit verify " + path + "'");
    }
    seq = last_entry["seq"].get<uint64_t>() + 1;
    prev = line_hash(last);
  }
  // The size to restore when a write is cut short: the file as found (after any torn-tail repair).
  size_t restore_size = bytes.size();
  std::string terminator;  // "\n" when the last entry lost only its newline
  if (complete < bytes.size()) {
    const std::string_view fragment = std::string_view(bytes).substr(complete);
    if (continues_chain(fragment, seq, prev)) {
      // A whole entry without its '\n': it may have been acknowledged, so it is kept and
      // terminated (by the same write as the new entries), never truncated.
      ++seq;
      prev = line_hash(fragment);
      terminator = "\n";
      bytes += '\n';  // in memory only, so the decision lookup below sees whole lines
    } else {
      // A torn tail: an append that crashed before completing its line, never acknowledged
      // (acknowledgement follows the fsync of a complete line). It is removed, not continued,
      // and its bytes are handed back so the command can show what it removed.
      if (::ftruncate(f.fd, static_cast<off_t>(complete)) != 0 || ::fsync(f.fd) != 0) {
        return fail("cannot repair the torn last line of " + path + ": " + errno_text(errno));
      }
      result.removed_torn_tail = std::string(fragment);
      bytes.resize(complete);
      restore_size = complete;
    }
  }
  if (decision_seq != 0) {
    bool found = false;
    size_t at = 0;
    while (at < bytes.size() && !found) {
      const size_t end = bytes.find('\n', at);
      nlohmann::json e;
      if (check_entry(std::string_view(bytes).substr(at, end - at), &e).empty()) {
        found = e["kind"] == "decision" && e["seq"] == decision_seq;
      }
      at = end + 1;
    }
    if (!found) {
      return fail("the audit log " + path + " has no decision entry " +
                  std::to_string(decision_seq));
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
    line = entry.dump();  // ASCII-safe: nlohmann escapes control characters
    prev = line_hash(line);
    record += line;
    record += '\n';
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
