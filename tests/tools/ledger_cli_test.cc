// `decide --ledger` end to end (issue 19, docs/ledger.md): replay_once means once across runs and
// processes, the SmallRye loop and a double retry are held by the ledger, an unusable ledger fails
// closed (exit 2), and --dry-run claims nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/ledger_letters.h"

namespace replaygate::testing {
namespace {

using nlohmann::json;

const std::string kPolicy = kReplayGatePolicy;

class LedgerCli : public CliFixture {
 protected:
  std::string ledger() const { return (dir_ / "ledger.db").string(); }
  std::string dump(const std::string& name, const std::string& text) {
    write_file(dir_ / name, text);
    return (dir_ / name).string();
  }
  CliResult decide(const std::string& file, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"decide", "--policy", kPolicy, "--ledger", ledger(), file};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
};

TEST_F(LedgerCli, SecondRunReplaysNothingTheFirstReplayedAndSaysWhy) {
  const std::string file = dump("d.jsonl", letter("m-1", "k1") + letter("m-2", "k2"));
  const CliResult first = decide(file);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  for (const json& d : decisions(first.out)) {
    EXPECT_EQ(d["verb"], "replay_once") << d;
    EXPECT_EQ(d["claimed"], true) << d;
  }
  const CliResult second = decide(dump("e.jsonl", letter("m-3", "k1") + letter("m-4", "k3")));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const std::vector<json> d = decisions(second.out);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0]["verb"], "hold");
  EXPECT_EQ(d[0]["rule"], "ledger:already_replayed");
  const std::string reason = d[0]["reason"];
  EXPECT_NE(reason.find("message m-1"), std::string::npos) << reason;
  EXPECT_NE(reason.find(":"), std::string::npos) << reason;  // the worker, host:pid
  EXPECT_EQ(d[1]["verb"], "replay_once");
  EXPECT_NE(second.err.find("already replayed 1"), std::string::npos) << second.err;
}

// SmallRye: the requeued letter comes back without its x-replay header (replays absent), so the
// policy alone would replay it again; the ledger holds it on cycle 2.
TEST_F(LedgerCli, SmallRyeLoopIsHeldOnTheSecondCycle) {
  const CliResult cycle1 = decide(dump("c1.jsonl", letter("m-1", "cap_1")));
  ASSERT_EQ(cycle1.exit_code, 0) << cycle1.err;
  EXPECT_EQ(decisions(cycle1.out).at(0)["verb"], "replay_once");
  const CliResult cycle2 = decide(dump("c2.jsonl", letter("m-1", "cap_1")));
  ASSERT_EQ(cycle2.exit_code, 0) << cycle2.err;
  const json d = decisions(cycle2.out).at(0);
  EXPECT_EQ(d["verb"], "hold");
  EXPECT_EQ(d["rule"], "ledger:already_replayed");
  // Without the ledger the policy would have replayed it again.
  const CliResult without = run({"decide", "--policy", kPolicy, (dir_ / "c2.jsonl").string()});
  EXPECT_EQ(decisions(without.out).at(0)["verb"], "replay_once");
}

// The double "retry": the same letter decided twice, in two runs, on the shipped examples.
TEST_F(LedgerCli, DoubleRetryOfTheShippedExamples) {
  const std::string examples = kSourceDir + "/examples/letters.jsonl";
  const CliResult first = decide(examples);
  ASSERT_NE(first.exit_code, 2) << first.err;
  const CliResult second = decide(examples);
  ASSERT_NE(second.exit_code, 2) << second.err;
  const std::vector<json> a = decisions(first.out), b = decisions(second.out);
  ASSERT_EQ(a.size(), b.size());
  size_t replays = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]["verb"] == "replay_once") {
      ++replays;
      EXPECT_EQ(b[i]["rule"], "ledger:already_replayed") << b[i];
    }
    EXPECT_NE(b[i]["verb"], "replay_once") << b[i];
  }
  EXPECT_GT(replays, 0u);
}

// A policy that would replay a letter without a key (the shipped one's key guard and invariant
// taken out): with a ledger such a letter is never replayed.
TEST_F(LedgerCli, LetterWithoutKeyIsNeverReplayedWithALedger) {
  std::string text = read_file(kPolicy);
  for (const std::string& cut :
       {std::string("  - guard: no_idempotency_key\n    when:\n      idempotency_key: absent\n"
                    "    verb: hold\n    reason: cannot replay safely without an idempotency "
                    "key\n\n"),
        std::string("  - invariant: no_key_no_replay\n    when: {idempotency_key: absent}\n"
                    "    require: {verb_not_in: [replay_once]}\n    reason: without an "
                    "idempotency key a requeue may repeat the side effect\n\n")}) {
    const size_t at = text.find(cut);
    ASSERT_NE(at, std::string::npos) << cut;
    text.erase(at, cut.size());
  }
  write_file(dir_ / "keyless.yaml", text);
  json no_key = json::parse(letter("m-1", "k"));
  no_key.erase("idempotency_key");
  const std::string file = dump("d.jsonl", no_key.dump() + "\n" + letter("m-2", "k2"));
  const CliResult without = run({"decide", "--policy", (dir_ / "keyless.yaml").string(), file});
  ASSERT_EQ(decisions(without.out).at(0)["verb"], "replay_once") << without.err;
  const CliResult r =
      run({"decide", "--policy", (dir_ / "keyless.yaml").string(), "--ledger", ledger(), file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<json> d = decisions(r.out);
  EXPECT_EQ(d.at(0)["verb"], "hold");
  EXPECT_EQ(d.at(0)["rule"], "ledger:no_key");
  EXPECT_EQ(d.at(1)["verb"], "replay_once");
}

// >= 4 processes decide overlapping dumps against one SQLite file at once: every key is replayed
// exactly once in total, counted from their combined output.
TEST_F(LedgerCli, ConcurrentProcessesReplayEachKeyOnce) {
  constexpr int kProcs = 4, kKeys = 300;
  std::vector<std::string> files;
  for (int p = 0; p < kProcs; ++p) {
    std::string text;
    // Each process gets every key once, each from another starting point, so they race on every
    // one.
    for (int i = 0; i < kKeys; ++i) {
      const int k = (i + p * 37) % kKeys;
      text += letter("m-" + std::to_string(p) + "-" + std::to_string(i), "key" + std::to_string(k));
    }
    files.push_back(dump("p" + std::to_string(p) + ".jsonl", text));
  }
  std::string command;
  for (int p = 0; p < kProcs; ++p) {
    command += shell_quote(kCliBinary) + " decide --policy " + shell_quote(kPolicy) + " --ledger " +
               shell_quote(ledger()) + " " + shell_quote(files[p]) + " >" +
               shell_quote((dir_ / ("out" + std::to_string(p))).string()) + " 2>" +
               shell_quote((dir_ / ("err" + std::to_string(p))).string()) + " & ";
  }
  command += "wait";
  ASSERT_EQ(run_shell(command), 0);
  std::map<std::string, int> replayed;
  size_t lines = 0;
  for (int p = 0; p < kProcs; ++p) {
    const std::string err = read_file(dir_ / ("err" + std::to_string(p)));
    EXPECT_EQ(err.find("unavailable"), std::string::npos) << err;
    std::map<std::string, std::string> key_of;
    for (const json& d : decisions(read_file(dir_ / ("out" + std::to_string(p))))) {
      ++lines;
      if (d["verb"] == "replay_once") ++replayed[d["message_id"].get<std::string>()];
      if (d["verb"] != "replay_once") {
        EXPECT_EQ(d["rule"], "ledger:already_replayed") << d;
      }
    }
  }
  EXPECT_EQ(lines, static_cast<size_t>(kProcs * kKeys));
  // Map message ids back to keys.
  std::map<std::string, int> per_key;
  for (int p = 0; p < kProcs; ++p) {
    for (int i = 0; i < kKeys; ++i) {
      const std::string id = "m-" + std::to_string(p) + "-" + std::to_string(i);
      const int k = (i + p * 37) % kKeys;
      if (replayed.count(id)) per_key["key" + std::to_string(k)] += replayed[id];
    }
  }
  // Keys that appear in the dumps (the permutation may not hit every k for every p).
  std::map<std::string, bool> present;
  for (int p = 0; p < kProcs; ++p) {
    for (int i = 0; i < kKeys; ++i) {
      present["key" + std::to_string((i + p * 37) % kKeys)] = true;
    }
  }
  for (const auto& [key, _] : present) EXPECT_EQ(per_key[key], 1) << key;
  EXPECT_EQ(per_key.size(), present.size());
}

// A key the ledger cannot hold ("\u0000" is valid JSON; more than 4096 bytes) is held alone as
// ledger:invalid_key (exit 1, as an invalid record): it used to fail its block's claim_batch, so
// every later letter of the run was held as ledger:unavailable (exit 2), and every rerun too.
TEST_F(LedgerCli, AnInvalidKeyIsHeldAloneAndTheLettersAfterItGoOn) {
  const std::string nul("a\0b", 3);
  const std::string file =
      dump("d.jsonl", letter("m-1", "k1") + letter("m-2", nul) +
                          letter("m-3", std::string(4097, 'x')) + letter("m-4", "k2"));
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--dry-run"}, std::vector<std::string>{},
        std::vector<std::string>{"--ledger-block", "1"}}) {
    const CliResult r = decide(file, extra);
    const bool dry = !extra.empty() && extra[0] == "--dry-run";
    const bool first_claim = extra.empty();
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const std::vector<json> d = decisions(r.out);
    ASSERT_EQ(d.size(), 4u) << r.out;
    for (const size_t bad : {size_t{1}, size_t{2}}) {
      EXPECT_EQ(d[bad]["verb"], "hold") << d[bad];
      EXPECT_EQ(d[bad]["rule"], "ledger:invalid_key") << d[bad];
    }
    EXPECT_NE(d[1]["reason"].get<std::string>().find("is not valid UTF-8 or contains a NUL byte"),
              std::string::npos)
        << d[1];
    EXPECT_NE(d[2]["reason"].get<std::string>().find("is longer than 4096 bytes (4097)"),
              std::string::npos)
        << d[2];
    for (const size_t good : {size_t{0}, size_t{3}}) {
      // The dry run and the first real run replay; the run after that finds the claims.
      if (dry || first_claim) {
        EXPECT_EQ(d[good]["verb"], "replay_once") << d[good];
        EXPECT_EQ(d[good]["claimed"], !dry) << d[good];
      } else {
        EXPECT_EQ(d[good]["rule"], "ledger:already_replayed") << d[good];
      }
    }
    EXPECT_NE(r.err.find("(invalid keys 2)"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("ledger:unavailable"), std::string::npos) << r.err;
  }
}

TEST_F(LedgerCli, UnusableLedgerFailsClosed) {
  std::filesystem::create_directory(dir_ / "ledger.db");  // a directory: cannot be opened
  const std::string file = dump("d.jsonl", letter("m-1", "k1") + letter("m-2", "k2") +
                                               R"({"message_id":"m-3","topic":"x"})"
                                               "\n");
  const CliResult r = decide(file);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const std::vector<json> d = decisions(r.out);
  ASSERT_EQ(d.size(), 3u);  // nothing lost: every record has its line
  EXPECT_EQ(d[0]["rule"], "ledger:unavailable");
  EXPECT_EQ(d[0]["verb"], "hold");
  EXPECT_EQ(d[1]["rule"], "ledger:unavailable");
  EXPECT_NE(d[2]["rule"], "ledger:unavailable");
  EXPECT_NE(r.err.find("cannot open the replay ledger"), std::string::npos) << r.err;
}

// An existing ledger made read-only for a non-root child (root ignores modes): earlier claims
// stay, the new would-be replays are held, exit 2.
TEST_F(LedgerCli, ReadOnlyLedgerFailsClosedAndKeepsEarlierClaims) {
  const std::string file = dump("d.jsonl", letter("m-1", "k1"));
  ASSERT_EQ(decide(file).exit_code, 0);
  ::chmod(dir_.c_str(), 0777);
  const std::string second = dump("e.jsonl", letter("m-2", "k2") + letter("m-3", "k1"));
  // The non-root child runs copies in the scratch directory (under /tmp): the checkout the test
  // runs from may sit below a directory only root can enter (mktemp -d makes 0700 ones).
  const std::filesystem::path cli = dir_ / "replaygate";
  const std::filesystem::path policy = dir_ / "replay_gate.yaml";
  std::filesystem::copy_file(kCliBinary, cli);
  std::filesystem::copy_file(kPolicy, policy);
  ::chmod(cli.c_str(), 0755);
  ::chmod(policy.c_str(), 0644);
  ::chmod(second.c_str(), 0644);
  ASSERT_EQ(::chmod(ledger().c_str(), 0444), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0555), 0);
  std::string command;
  if (geteuid() == 0) command = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  command += shell_quote(cli.string()) + " decide --policy " + shell_quote(policy.string()) +
             " --ledger " + shell_quote(ledger()) + " " + shell_quote(second) +
             " >/tmp/rg_ledger_ro_out." + std::to_string(getpid()) + " 2>/dev/null";
  const int code = run_shell(command);
  ::chmod(dir_.c_str(), 0755);
  ::chmod(ledger().c_str(), 0644);
  const std::string out_path = "/tmp/rg_ledger_ro_out." + std::to_string(getpid());
  const std::string out = read_file(out_path);
  std::filesystem::remove(out_path);
  if (code == 127) GTEST_SKIP() << "setpriv is not available";
  EXPECT_EQ(code, 2);
  const std::vector<json> d = decisions(out);
  ASSERT_EQ(d.size(), 2u);
  for (const json& line : d) EXPECT_NE(line["verb"], "replay_once") << line;
  // The first run's claim is still there: k1 is held as already replayed once writable again.
  const CliResult again = decide(dump("f.jsonl", letter("m-4", "k1")));
  EXPECT_EQ(decisions(again.out).at(0)["rule"], "ledger:already_replayed");
}

TEST_F(LedgerCli, DryRunClaimsNothing) {
  ASSERT_EQ(decide(dump("a.jsonl", letter("m-1", "k1"))).exit_code, 0);
  const std::string file = dump("d.jsonl", letter("m-2", "k1") + letter("m-3", "k2"));
  const CliResult dry = decide(file, {"--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  std::vector<json> d = decisions(dry.out);
  EXPECT_EQ(d.at(0)["rule"], "ledger:already_replayed");
  EXPECT_EQ(d.at(1)["verb"], "replay_once");
  EXPECT_EQ(d.at(1)["claimed"], false);
  // k2 was not claimed: a real run still replays it.
  const CliResult real = decide(file);
  d = decisions(real.out);
  EXPECT_EQ(d.at(1)["verb"], "replay_once");
  EXPECT_EQ(d.at(1)["claimed"], true);
}

TEST_F(LedgerCli, DryRunNeedsALedger) {
  const CliResult r = run({"decide", "--policy", kPolicy, "--dry-run", "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dry-run only applies with --ledger"), std::string::npos) << r.err;
}

TEST_F(LedgerCli, AuditedClaimsAreMarkedRecorded) {
  const std::string log = (dir_ / "audit.log").string();
  const CliResult r =
      decide(dump("d.jsonl", letter("m-1", "k1")), {"--audit", log, "--operator", "ops"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string entries = read_file(log);
  EXPECT_NE(entries.find("replay_once"), std::string::npos);
  const std::string db = ledger();
  const CliResult q = run({"decide", "--policy", kPolicy, "--ledger", db, "--dry-run",
                           dump("e.jsonl", letter("m-2", "k1"))});
  EXPECT_EQ(decisions(q.out).at(0)["rule"], "ledger:already_replayed");
  EXPECT_EQ(r.err.find("cannot mark"), std::string::npos) << r.err;
  const json stats = json::parse(run({"ledger", "stats", "--ledger", db}).out);
  EXPECT_EQ(stats["recorded"], 1) << stats;
  EXPECT_EQ(stats["claimed"], 0) << stats;
  EXPECT_EQ(run({"audit", "verify", log}).exit_code, 0);
}

}  // namespace
}  // namespace replaygate::testing

namespace replaygate::testing {
namespace {

TEST_F(LedgerCli, LedgerSubcommandsReadWhatDecideClaimed) {
  ASSERT_EQ(decide(dump("d.jsonl", letter("m-1", "k1") + letter("m-2", "k2"))).exit_code, 0);
  const CliResult show = run({"ledger", "show", "k1", "--ledger", ledger()});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const json row = json::parse(lines_of(show.out).at(0));
  EXPECT_EQ(row["key"], "k1");
  EXPECT_EQ(row["message_id"], "m-1");
  EXPECT_EQ(row["state"], "claimed");
  const CliResult stats = run({"ledger", "stats", "--ledger", ledger()});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(json::parse(stats.out)["keys"], 2);
  EXPECT_EQ(lines_of(run({"ledger", "list", "--ledger", ledger()}).out).size(), 2u);
  EXPECT_EQ(lines_of(run({"ledger", "export", "--ledger", ledger()}).out).size(), 2u);
  EXPECT_EQ(run({"ledger", "list", "--ledger", ledger(), "--since", "yesterday"}).exit_code, 2);
}

}  // namespace
}  // namespace replaygate::testing
