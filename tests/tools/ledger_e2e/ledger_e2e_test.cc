// `decide --ledger` end to end under failure (issue 19), the real CLI binary in child processes:
// kill -9 at random points never leaves a printed replay without a committed claim, a disk that
// fills up (RLIMIT_FSIZE) or a PostgreSQL server stopped mid-run turns every later would-be
// replay into ledger:unavailable with exit 2 and loses nothing committed, and N processes on one
// PostgreSQL server replay every key exactly once. The SQLite double retry, SmallRye loop,
// concurrency, unwritable file and dry run are in tests/tools/ledger_cli_test.cc; corrupt, foreign
// and wrong-version ledgers in tests/ledger/. Suites named *Postgres* start a private server
// (tests/ledger/pg_server.h) and are labelled `server` in CMake.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pg_server.h"
#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

using nlohmann::json;

const std::string kPolicy = kSourceDir + "/policies/replay_gate.yaml";

// A letter the shipped policy replays; its message id is "m-" + key, so a line names its key.
std::string letter(const std::string& key) {
  return json({{"message_id", "m-" + key},
               {"topic", "payment.capture"},
               {"error_class", "timeout"},
               {"attempts", 1},
               {"idempotency_key", key},
               {"already_committed", false}})
             .dump() +
         "\n";
}

std::string letters(const std::string& prefix, int from, int to) {
  std::string text;
  for (int i = from; i < to; ++i) text += letter(prefix + std::to_string(i));
  return text;
}

// The keys of the replay_once lines among the complete lines of `out` (a line cut by kill -9 is
// not a printed decision), and every complete line's rule.
struct Printed {
  std::set<std::string> replayed;
  std::map<std::string, int> rules;
  size_t lines = 0;
};
Printed printed(const std::string& out) {
  Printed p;
  const size_t end = out.rfind('\n');
  if (end == std::string::npos) return p;
  for (const std::string& line : lines_of(out.substr(0, end + 1))) {
    const json d = json::parse(line);
    ++p.lines;
    ++p.rules[d.value("rule", "")];
    if (d["verb"] == "replay_once") {
      EXPECT_EQ(d["claimed"], true) << line;
      p.replayed.insert(d["message_id"].get<std::string>().substr(2));
    }
  }
  return p;
}

// `replaygate ARGS` in a child: stdout into `out_path`, stderr into `err_path`; with
// `file_size_limit` > 0 under RLIMIT_FSIZE (SIGXFSZ ignored, so a write past it fails with EFBIG:
// the disk is full); stdin from `in_path` ("" : /dev/null). Returns the child's pid.
pid_t spawn(const std::vector<std::string>& args, const std::string& in_path,
            const std::string& out_path, const std::string& err_path, rlim_t file_size_limit = 0) {
  std::vector<std::string> argv = {kCliBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int in = open(in_path.empty() ? "/dev/null" : in_path.c_str(), O_RDONLY);
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0 || err < 0) _exit(120);
  dup2(in, 0);
  dup2(out, 1);
  dup2(err, 2);
  if (file_size_limit > 0) {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit rl{file_size_limit, file_size_limit};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(121);
  }
  execv(cargv[0], cargv.data());
  _exit(122);
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

class LedgerE2E : public CliFixture {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string dump(const std::string& name, const std::string& text) {
    write_file(dir_ / name, text);
    return path(name);
  }
  // `ledger export`: key -> state.
  std::map<std::string, std::string> exported(const std::string& ledger) {
    const CliResult r = run({"ledger", "export", "--ledger", ledger});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, std::string> states;
    for (const std::string& line : lines_of(r.out)) {
      const json row = json::parse(line);
      states[row["key"].get<std::string>()] = row["state"].get<std::string>();
    }
    return states;
  }
};

// kill -9 at random points, 12 times (half of them with --threads 3), on one ledger: every replay
// line ever printed has its claim in `ledger export`, every claim is there (listed as claimed:
// never silently lost), and a later run replays none of them again. The kill is sent by the thread
// that drains the child's stdout, as soon as a random number of lines has arrived, while the child
// goes on claiming and printing: it lands mid-run however fast or loaded the machine is (a kill
// after a random sleep missed the run on an idle machine and timed out on a loaded one).
TEST_F(LedgerE2E, Kill9AtRandomPointsNeverPrintsAnUncommittedReplay) {
  constexpr int kLetters = 3000;
  const std::string db = path("ledger.db");
  const std::string fifo = path("out.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::mt19937 random(20261202);
  std::set<std::string> all_printed;
  size_t killed_midway = 0;
  for (int run_index = 0; run_index < 12; ++run_index) {
    const std::string prefix = "r" + std::to_string(run_index) + "-";
    // With --ledger-block 16 each block of 16 letters is claimed, then printed.
    const std::string long_prefix = prefix + std::string(64, 'x') + "-";
    const std::string file = dump("d.jsonl", letters(long_prefix, 0, kLetters));
    const size_t kill_after = 1 + random() % (kLetters / 3);
    // Every other run with --threads 3: stage 2 (claim, then print) stays on one thread in
    // input order, so a kill leaves what it leaves without threads.
    const pid_t pid = spawn({"decide", "--policy", kPolicy, "--ledger", db, "--ledger-block", "16",
                             file, "--threads", run_index % 2 == 1 ? "3" : "1"},
                            "", fifo, path("err"));
    ASSERT_GT(pid, 0);
    std::string out;
    std::thread reader([&] {
      const int fd = open(fifo.c_str(), O_RDONLY);
      if (fd < 0) return;
      char buffer[1 << 16];
      size_t lines = 0;
      bool killed = false;
      for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) {
        out.append(buffer, static_cast<size_t>(n));
        if (killed) continue;
        lines += static_cast<size_t>(std::count(buffer, buffer + n, '\n'));
        if (lines >= kill_after) {
          kill(pid, SIGKILL);
          killed = true;
        }
      }
      close(fd);
    });
    const int code = wait_exit(pid);
    reader.join();
    ASSERT_TRUE(code == -SIGKILL || code == 0) << code << read_file(path("err"));
    if (code == -SIGKILL) ++killed_midway;
    const Printed p = printed(out);
    EXPECT_GE(p.lines, kill_after);
    EXPECT_LT(p.lines, static_cast<size_t>(kLetters));
    all_printed.insert(p.replayed.begin(), p.replayed.end());
    const std::map<std::string, std::string> states = exported(db);
    for (const std::string& key : all_printed) {
      ASSERT_TRUE(states.count(key)) << "printed replay_once for " << key << " without a claim";
    }
    for (const auto& [key, state] : states) {
      EXPECT_EQ(state, "claimed") << key;
    }
    // A later run on the same dump replays nothing already claimed.
    if (run_index % 6 == 5) {
      const CliResult again = run({"decide", "--policy", kPolicy, "--ledger", db,
                                   dump("again.jsonl", letters(long_prefix, 0, 100))});
      ASSERT_EQ(again.exit_code, 0) << again.err;
      const Printed q = printed(again.out);
      for (const std::string& key : q.replayed) {
        EXPECT_EQ(states.count(key), 0u) << key << " replayed twice";
      }
    }
  }
  EXPECT_EQ(killed_midway, 12u);
  EXPECT_GT(all_printed.size(), 0u);
}

// The disk fills up mid-run (RLIMIT_FSIZE on the deciding process): every would-be replay after
// the first failed claim is held as ledger:unavailable, exit 2, and every claim committed before
// (this run's printed replays and an earlier run's) is still there.
TEST_F(LedgerE2E, DiskFullMidRunFailsClosedAndKeepsCommits) {
  const std::string db = path("ledger.db");
  const CliResult before =
      run({"decide", "--policy", kPolicy, "--ledger", db, dump("a.jsonl", letters("a", 0, 50))});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  struct stat st {};
  ASSERT_EQ(stat(db.c_str(), &st), 0);
  // Room for a few dozen claims in the write-ahead log, far less than 3000.
  const rlim_t limit = static_cast<rlim_t>(st.st_size) + 128 * 1024;
  // stdout is a FIFO drained by a thread: the limit applies to regular files only.
  const std::string fifo = path("out.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string out;
  std::thread reader([&] { out = read_file(fifo); });
  const pid_t pid = spawn({"decide", "--policy", kPolicy, "--ledger", db, "--ledger-block", "8",
                           dump("b.jsonl", letters("b", 0, 3000))},
                          "", fifo, path("err"), limit);
  const int code = wait_exit(pid);
  reader.join();
  const std::string err = read_file(path("err"));
  ASSERT_EQ(code, 2) << err;
  Printed p = printed(out);
  EXPECT_EQ(p.lines, 3000u) << "every record has its line";
  EXPECT_GT(p.replayed.size(), 0u) << "some claims fit before the disk filled up";
  EXPECT_EQ(p.rules["ledger:unavailable"], static_cast<int>(3000 - p.replayed.size())) << err;
  // After the first unavailable line, no replay.
  bool failed = false;
  for (const std::string& line : lines_of(out)) {
    const json d = json::parse(line);
    if (d["rule"] == "ledger:unavailable") failed = true;
    if (failed) {
      EXPECT_NE(d["verb"], "replay_once") << line;
    }
  }
  const std::map<std::string, std::string> states = exported(db);
  EXPECT_EQ(states.size(), 50 + p.replayed.size());
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(states.count("a" + std::to_string(i))) << i;
  for (const std::string& key : p.replayed) EXPECT_TRUE(states.count(key)) << key;
}

// A private PostgreSQL server per test (skipped when postgresql-15 is not installed).
class LedgerE2EPostgres : public LedgerE2E {
 protected:
  void SetUp() override {
    const std::string why = server_.create();
    if (!why.empty()) GTEST_SKIP() << why;
  }
  ledger::testing::PgServer server_;
};

// 4 processes decide overlapping dumps at once against one server: every key is replayed exactly
// once in total, counted from their combined output.
TEST_F(LedgerE2EPostgres, ConcurrentProcessesReplayEachKeyOnce) {
  constexpr int kProcs = 4, kKeys = 400;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    // Each process gets 300 of the 400 keys, from its own starting point: every key is in at
    // least three dumps, and the processes race on them.
    std::string text;
    for (int i = 0; i < 300; ++i) text += letter("k" + std::to_string((i + p * 100) % kKeys));
    const std::string n = std::to_string(p);
    pids.push_back(spawn(
        {"decide", "--policy", kPolicy, "--ledger", server_.url(), dump("p" + n + ".jsonl", text)},
        "", path("out" + n), path("err" + n)));
  }
  std::map<std::string, int> replays;
  for (int p = 0; p < kProcs; ++p) {
    const std::string n = std::to_string(p);
    ASSERT_EQ(wait_exit(pids[p]), 0) << read_file(path("err" + n));
    Printed printed_lines = printed(read_file(path("out" + n)));
    EXPECT_EQ(printed_lines.lines, 300u);
    EXPECT_EQ(printed_lines.rules["ledger:already_replayed"] +
                  static_cast<int>(printed_lines.replayed.size()),
              300);
    for (const std::string& key : printed_lines.replayed) ++replays[key];
  }
  EXPECT_EQ(replays.size(), static_cast<size_t>(kKeys));
  for (const auto& [key, count] : replays) EXPECT_EQ(count, 1) << key;
  EXPECT_EQ(exported(server_.url()).size(), static_cast<size_t>(kKeys));
}

// The server stops while decide runs: the letters decided before keep their claims, every later
// would-be replay is ledger:unavailable, exit 2; after a restart everything committed is there.
TEST_F(LedgerE2EPostgres, ServerStoppedMidRunFailsClosedAndKeepsCommits) {
  const std::string first = dump("a.jsonl", letters("a", 0, 40));
  const std::string second = dump("b.jsonl", letters("b", 0, 40));
  const std::string go = path("go");
  // The second half arrives only once the test has stopped the server.
  const std::string feed = "cat " + shell_quote(first) + "; while [ ! -e " + shell_quote(go) +
                           " ]; do sleep 0.05; done; cat " + shell_quote(second);
  const std::string command = "(" + feed + ") | " + shell_quote(kCliBinary) + " decide --policy " +
                              shell_quote(kPolicy) + " --ledger " + shell_quote(server_.url()) +
                              " --ledger-block 8 - >" + shell_quote(path("out")) + " 2>" +
                              shell_quote(path("err"));
  int code = -1;
  std::thread decider([&] { code = run_shell(command); });
  // Wait until the first 40 claims are committed (claims precede their lines).
  bool committed = false;
  for (int i = 0; i < 200 && !committed; ++i) {
    const CliResult stats = run({"ledger", "stats", "--ledger", server_.url()});
    committed = stats.exit_code == 0 && json::parse(stats.out)["keys"] == 40;
    if (!committed) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  server_.stop();
  write_file(go, "");
  decider.join();
  ASSERT_TRUE(committed) << read_file(path("err"));
  const std::string out = read_file(path("out"));
  EXPECT_EQ(code, 2) << read_file(path("err"));
  Printed p = printed(out);
  EXPECT_EQ(p.lines, 80u);
  EXPECT_EQ(p.replayed.size(), 40u);
  EXPECT_EQ(p.rules["ledger:unavailable"], 40);
  for (const std::string& key : p.replayed) EXPECT_EQ(key[0], 'a') << key;
  ASSERT_EQ(server_.start(), "");
  const std::map<std::string, std::string> states = exported(server_.url());
  EXPECT_EQ(states.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_TRUE(states.count("a" + std::to_string(i))) << i;
}

}  // namespace
}  // namespace replaygate::testing
