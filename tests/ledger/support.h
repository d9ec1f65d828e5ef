// Helpers shared by the ledger tests: temporary directories, claims with real values, a test
// clock, pipes to forked children, and the semantic checks every backend must pass.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ledger/ledger.h"

namespace replaygate::ledger::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/rg-ledger-test-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline Claim make_claim(const std::string& key, const std::string& worker = "host-a/pid-1",
                        const std::string& message_id = "") {
  Claim c;
  c.key = key;
  c.policy = "dlq-replay-gate";
  c.revision = 7;
  c.table_checksum = "1242ace0f61e98a37d91a175388558cb";
  c.rule = "known_failures:payment.capture/timeout";
  c.message_id = message_id.empty() ? "m-" + key : message_id;
  c.worker = worker;
  return c;
}

// A clock the test moves by hand.
struct TestClock {
  std::shared_ptr<Time> now = std::make_shared<Time>(*parse_time("2026-12-01T10:00:00Z"));
  std::function<Time()> fn() const {
    auto p = now;
    return [p] { return *p; };
  }
  void set(const char* rfc3339) { *now = *parse_time(rfc3339); }
};

// Opens a ledger with the given options; the test fails (fatally) when it cannot.
using Opener = std::function<Result<std::unique_ptr<Ledger>>(const Options&)>;

// Reads everything a child wrote to `fd` until EOF.
inline std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  return out;
}

inline bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Complete lines only (a child killed mid-write may leave a partial last line).
inline std::vector<std::string> complete_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t nl; (nl = s.find('\n', start)) != std::string::npos; start = nl + 1) {
    out.push_back(s.substr(start, nl - start));
  }
  return out;
}

// What one child of children_at_once() did: its wait status and what it wrote to its pipe.
struct Child {
  int status = 0;
  std::string said;
};
// Forks `n` children that wait until all exist, then run body(i, fd) at once (fd: a pipe back to
// the parent); a child exits with body's return. Returns each child's status and output, in order.
inline std::vector<Child> children_at_once(int n, const std::function<int(int, int)>& body) {
  int go[2];
  if (pipe(go) != 0) return {};
  std::vector<pid_t> pids;
  std::vector<int> outs;
  for (int i = 0; i < n; ++i) {
    int fds[2];
    if (pipe(fds) != 0) break;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      close(go[1]);
      char c;
      (void)!read(go[0], &c, 1);  // EOF once the parent closes its end: every child starts
      _exit(body(i, fds[1]));
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      break;
    }
    pids.push_back(pid);
    outs.push_back(fds[0]);
  }
  close(go[0]);
  close(go[1]);
  std::vector<Child> children(pids.size());
  for (size_t i = 0; i < pids.size(); ++i) {
    children[i].said = read_all(outs[i]);
    close(outs[i]);
    waitpid(pids[i], &children[i].status, 0);
  }
  return children;
}

// The semantic checks, run by each backend's suite (sqlite_test.cc, postgres_test.cc).
void check_claim_and_lookup(const Opener& open);
void check_mark_transitions(const Opener& open);
void check_release_history(const Opener& open);
void check_list_stats_export(const Opener& open);
// Whose clock ages rows for prune: this host's (SQLite) or the database server's (PostgreSQL).
enum class LedgerClock { kThisHost, kServer };
void check_prune_by_the_ledgers_clock(const Opener& open, LedgerClock ledger_clock);
void check_scopes(const Opener& open);
void check_invalid_arguments(const Opener& open);
void check_persistence(const Opener& open);
// restore() re-creates rows field for field in an empty scope and refuses a scope with rows.
void check_restore(const Opener& open);
// A claim's copy_replay and body_digest (the live gate's record of its copy) come back from
// claim_batch (won and lost), lookup, show, list, release and restore; a claim without them
// reads back unset and "".
void check_copy_fields(const Opener& open);
// The audit anchors (issue 42): raised only forward, per scope and log, kept across opens.
void check_audit_anchors(const Opener& open);
// Plans (schema version 4, plan_semantics.cc): record_plan idempotent and conflicting, plan(),
// plans(); approvals one per approver, refused for a plan not recorded or cancelled; cancel once;
// progress adds up across calls and within one call, scoped.
void check_plan_records(const Opener& open);
void check_plan_approvals(const Opener& open);
void check_plan_progress(const Opener& open);
// mark_batch_with_progress: one transaction, all or nothing.
void check_marks_with_progress(const Opener& open);
// RapidCheck: the sums equal the recorded increments, in any order and batching.
void check_plan_progress_property(const Opener& open);
// Two connections approve one plan as one approver at once, `rounds` times: exactly one wins.
void check_plan_approval_race(const Opener& open, int rounds);
// N forked processes record progress of one shared identity at once: the sums are exact.
void check_plan_progress_concurrent(const Opener& open, int processes, int rounds);
// N forked processes claim overlapping key sets at once; every key is won exactly once.
void check_concurrent_processes(const Opener& open, int processes, int keys, int per_process,
                                int batch);
// A child claiming batches is killed -9 at random moments, `rounds` times: every claim it reported
// as won (written to a pipe after claim_batch returned) is in the ledger.
void check_kill9(const Opener& open, int rounds);

}  // namespace replaygate::ledger::testing
