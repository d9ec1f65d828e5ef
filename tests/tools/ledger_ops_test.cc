// The replay ledger's operator commands end to end (docs/ledger.md, "Operator commands"): audit
// entries carry the key and the claim's generation; `ledger release` allows exactly one more
// replay and is audited; `ledger check` finds a claim without an entry and an entry without a
// claim; `ledger prune` re-opens replay and is audited; `ledger rebuild` reproduces a ledger from
// a real `decide --audit` log and refuses a non-empty ledger and a tampered log; bad arguments
// exit 2.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ledger/ledger.h"
#include "support/cli_runner.h"
#include "support/ledger_letters.h"

namespace replaygate::testing {
namespace {

using nlohmann::json;

class LedgerOps : public CliFixture {
 protected:
  std::string db(const std::string& name = "ledger.db") const { return (dir_ / name).string(); }
  std::string log() const { return (dir_ / "audit.log").string(); }
  std::string dump(const std::string& name, const std::string& text) {
    write_file(dir_ / name, text);
    return (dir_ / name).string();
  }
  // decide with the ledger and the audit log, as an operator runs it.
  CliResult decide(const std::string& text, const std::string& name = "d.jsonl") {
    return run({"decide", "--policy", kReplayGatePolicy, "--ledger", db(), "--audit", log(),
                "--operator", "ops", dump(name, text)});
  }
  CliResult release(const std::string& key) {
    return run({"ledger", "release", key, "--ledger", db(), "--operator", "ana", "--reason",
                "OPS-7: the charge was rolled back", "--audit", log()});
  }
  CliResult check(const std::string& ledger, const std::string& output = "text") {
    return run({"ledger", "check", "--ledger", ledger, "--audit", log(), "--output", output});
  }
  std::vector<json> entries() {
    std::vector<json> out;
    for (const std::string& line : lines_of(read_file(log()))) out.push_back(json::parse(line));
    return out;
  }
  std::string export_of(const std::string& ledger) {
    const CliResult r = run({"ledger", "export", "--ledger", ledger});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  std::vector<json> rows(const std::string& ledger) { return decisions(export_of(ledger)); }
  // Runs SQL on the SQLite ledger file directly (a row deleted or aged behind the CLI's back).
  void sql(const std::string& statement) {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &h), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(h, statement.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(h);
  }
};

TEST_F(LedgerOps, AuditEntriesCarryTheKeyAndTheClaimGeneration) {
  ASSERT_EQ(decide(letter("m-1", "k1") + letter("m-2", "k1")).exit_code, 0);
  const std::vector<json> e = entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0]["idempotency_key"], "k1");
  EXPECT_EQ(e[0]["claim_generation"], 1);
  EXPECT_EQ(e[0]["effect"], "create");
  // Held by the run's replay guard: the key, and no claim.
  EXPECT_EQ(e[1]["idempotency_key"], "k1");
  EXPECT_FALSE(e[1].contains("claim_generation")) << e[1];
  // The next run is held by the ledger: the key again, no claim.
  ASSERT_EQ(decide(letter("m-3", "k1"), "e.jsonl").exit_code, 0);
  const json held = entries().at(2);
  EXPECT_EQ(held["rule"], "ledger:already_replayed");
  EXPECT_EQ(held["idempotency_key"], "k1");
  EXPECT_FALSE(held.contains("claim_generation")) << held;
  EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
  // Without a ledger the key is recorded, with no claim.
  const CliResult plain = run({"decide", "--policy", kReplayGatePolicy, "--audit", log(),
                               "--operator", "ops", dump("f.jsonl", letter("m-4", "k9"))});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(entries().at(3)["idempotency_key"], "k9");
  EXPECT_FALSE(entries().at(3).contains("claim_generation"));
  EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
}

TEST_F(LedgerOps, VerifyChecksTheNewFieldsAndReadsLedgerEntries) {
  ASSERT_EQ(decide(letter("m-1", "k1")).exit_code, 0);
  ASSERT_EQ(release("k1").exit_code, 0);
  const CliResult ok = run({"audit", "verify", log()});
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("2 ledger entries"), std::string::npos) << ok.out;
  // A cut of a ledger entry is a torn tail (a crashed append), not a problem.
  std::string text = read_file(log());
  write_file(log(), text + R"({"act":"releas)");
  const CliResult torn = run({"audit", "verify", log()});
  EXPECT_EQ(torn.exit_code, 0) << torn.out;
  EXPECT_NE(torn.out.find("torn"), std::string::npos) << torn.out;
  // A claim_generation on an entry whose effect is not create is refused.
  json first = json::parse(lines_of(text).at(0));
  ASSERT_EQ(first["effect"], "create");
  std::string edited = text;
  const std::string from = R"("claim_generation":1)";
  const size_t at = edited.find(from);
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, from.size(), R"("claim_generation":0)");
  write_file(log(), edited);
  const CliResult bad = run({"audit", "verify", log()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("'claim_generation' is 0"), std::string::npos) << bad.out;
}

TEST_F(LedgerOps, ReleaseThenDecideReplaysOnceMoreExactlyOnce) {
  ASSERT_EQ(decide(letter("m-1", "k1")).exit_code, 0);
  EXPECT_EQ(decisions(decide(letter("m-2", "k1"), "e.jsonl").out).at(0)["verb"], "hold");
  const CliResult r = release("k1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json row = json::parse(r.out);
  EXPECT_EQ(row["state"], "released");
  EXPECT_EQ(row["generation"], 1);
  EXPECT_EQ(row["released_by"], "ana");
  // Write-ahead: the request, then the release.
  const std::vector<json> e = entries();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[2]["kind"], "ledger");
  EXPECT_EQ(e[2]["act"], "release_requested");
  EXPECT_EQ(e[2]["idempotency_key"], "k1");
  EXPECT_EQ(e[2]["claim_generation"], 1);
  EXPECT_EQ(e[3]["act"], "released");
  EXPECT_EQ(e[3]["reason"], "OPS-7: the charge was rolled back");
  EXPECT_EQ(e[3]["operator"], "ana");
  EXPECT_EQ(e[3]["scope"], "default");
  // Exactly one more replay: the next decide replays (generation 2), the one after holds.
  const std::vector<json> again = decisions(decide(letter("m-3", "k1"), "f.jsonl").out);
  EXPECT_EQ(again.at(0)["verb"], "replay_once");
  EXPECT_EQ(entries().back()["claim_generation"], 2);
  const std::vector<json> after = decisions(decide(letter("m-4", "k1"), "g.jsonl").out);
  EXPECT_EQ(after.at(0)["rule"], "ledger:already_replayed");
  EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
  const CliResult c = check(db());
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("ok, 2 claims, 2 grants"), std::string::npos) << c.out;
}

TEST_F(LedgerOps, ReleaseRefusesBadArgumentsAndKeysWithoutAClaim) {
  ASSERT_EQ(decide(letter("m-1", "k1")).exit_code, 0);
  const std::string before = read_file(log());
  const CliResult none = release("never-claimed");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("has no live claim"), std::string::npos) << none.err;
  const std::vector<std::vector<std::string>> bad = {
      {"ledger", "release", "k1", "--ledger", db(), "--reason", "r", "--audit", log()},
      {"ledger", "release", "k1", "--ledger", db(), "--operator", "ana", "--audit", log()},
      {"ledger", "release", "k1", "--ledger", db(), "--operator", "ana", "--reason", "r"},
      {"ledger", "release", "k1", "--ledger", db(), "--operator", "ana", "--reason", "a\nb",
       "--audit", log()},
      {"ledger", "release", "k1", "--ledger", db(), "--operator", "", "--reason", "r", "--audit",
       log()},
      {"ledger", "release", "--ledger", db(), "--operator", "ana", "--reason", "r", "--audit",
       log()},
  };
  for (const std::vector<std::string>& args : bad) {
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  EXPECT_EQ(read_file(log()), before) << "a refused release writes nothing";
  EXPECT_EQ(
      json::parse(lines_of(run({"ledger", "show", "k1", "--ledger", db()}).out).at(0))["state"],
      "recorded");
  // A log that does not verify: the release is refused before the ledger changes.
  write_file(log(), before + "not an entry\n");
  EXPECT_EQ(release("k1").exit_code, 2);
  EXPECT_EQ(
      json::parse(lines_of(run({"ledger", "show", "k1", "--ledger", db()}).out).at(0))["state"],
      "recorded");
}

TEST_F(LedgerOps, CheckFindsAClaimWithoutEntryAndAnEntryWithoutClaim) {
  ASSERT_EQ(decide(letter("m-1", "k1") + letter("m-2", "k2")).exit_code, 0);
  const CliResult clean = check(db());
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  // A process killed between its claim and its audit entry: claimed through the library.
  {
    auto l = ledger::open_ledger(db());
    ASSERT_TRUE(l.ok()) << l.error().message;
    ledger::Claim c;
    c.key = "k3";
    c.policy = "dlq-replay-gate";
    c.rule = "r";
    c.worker = "host:999";
    auto won = (*l)->claim_batch({c});
    ASSERT_TRUE(won.ok());
    ASSERT_TRUE(won->at(0).won);
  }
  // A row deleted behind the ledger's back.
  sql("DELETE FROM claims WHERE key = 'k2'");
  const CliResult text = check(db());
  EXPECT_EQ(text.exit_code, 1) << text.out << text.err;
  EXPECT_NE(text.out.find("claim_without_entry: key 'k3' generation 1 (claimed"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("audit.log:2: entry_without_claim: the decision entry grants key 'k2' "
                          "generation 1"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("FINDINGS, 2 claims, 2 grants"), std::string::npos) << text.out;
  const CliResult j = check(db(), "json");
  EXPECT_EQ(j.exit_code, 1);
  const json report = json::parse(j.out);
  EXPECT_EQ(report["ok"], false);
  ASSERT_EQ(report["findings"].size(), 2u) << report;
  EXPECT_EQ(report["findings"][0]["kind"], "claim_without_entry");
  EXPECT_EQ(report["findings"][0]["key"], "k3");
  EXPECT_EQ(report["findings"][0]["state"], "claimed");
  EXPECT_TRUE(report["findings"][0]["line"].is_null());
  EXPECT_EQ(report["findings"][1]["kind"], "entry_without_claim");
  EXPECT_EQ(report["findings"][1]["key"], "k2");
  EXPECT_EQ(report["findings"][1]["line"], 2);
  // A log that does not verify, and one that cannot be read: exit 2.
  write_file(log(), read_file(log()) + "{\"x\":1}\n");
  const CliResult broken = check(db());
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find("does not verify"), std::string::npos) << broken.err;
  const CliResult missing =
      run({"ledger", "check", "--ledger", db(), "--audit", (dir_ / "nope.log").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read"), std::string::npos) << missing.err;
}

TEST_F(LedgerOps, CheckReportsAReleaseMadeWithoutTheAuditLog) {
  ASSERT_EQ(decide(letter("m-1", "k1")).exit_code, 0);
  {
    auto l = ledger::open_ledger(db());
    ASSERT_TRUE(l.ok());
    ASSERT_TRUE((*l)->release("k1", "mallory", "no audit").ok());
  }
  const CliResult r = check(db());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("release_without_entry: key 'k1' generation 1"), std::string::npos) << r.out;
}

TEST_F(LedgerOps, ReadingAMissingLedgerIsAnErrorAndCreatesNoFile) {
  ASSERT_EQ(decide(letter("m-1", "k1")).exit_code, 0);  // an audit log to check against
  const std::string typo = db("ledgr.db");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"ledger", "check", "--ledger", typo, "--audit", log()},
        {"ledger", "stats", "--ledger", typo},
        {"ledger", "show", "k1", "--ledger", typo},
        {"ledger", "release", "k1", "--ledger", typo, "--operator", "ana", "--reason", "x",
         "--audit", log()}}) {
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args[1];
    EXPECT_NE(r.err.find("no ledger at sqlite:" + typo), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(typo)) << args[1] << " created " << typo;
  }
  // rebuild is the one operator command that creates its ledger.
  EXPECT_EQ(run({"ledger", "rebuild", "--from-audit", log(), "--ledger", typo}).exit_code, 0);
  EXPECT_EQ(rows(typo).size(), 1u);
}

TEST_F(LedgerOps, PruneReopensReplayAndIsAudited) {
  ASSERT_EQ(decide(letter("m-1", "old") + letter("m-2", "new")).exit_code, 0);
  // "old" was claimed, and recorded by the ledger, long ago.
  sql("UPDATE claims SET claimed_at = '2000-01-01T00:00:00.000000Z', recorded_at = "
      "'2000-01-01T00:00:00.000000Z' WHERE key = 'old'");
  const std::string before = read_file(log());
  const CliResult dry =
      run({"ledger", "prune", "--older-than", "30d", "--ledger", db(), "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  ASSERT_EQ(lines_of(dry.out).size(), 1u) << dry.out;
  EXPECT_EQ(json::parse(dry.out)["key"], "old");
  EXPECT_EQ(read_file(log()), before);
  EXPECT_EQ(rows(db()).size(), 2u) << "a dry run deletes nothing";

  const CliResult p = run({"ledger", "prune", "--older-than", "30d", "--ledger", db(), "--operator",
                           "ana", "--audit", log()});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(json::parse(p.out)["key"], "old");
  EXPECT_NE(p.err.find("can be replayed again"), std::string::npos) << p.err;
  const std::vector<json> e = entries();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[2]["act"], "prune_requested");
  EXPECT_EQ(e[2]["operator"], "ana");
  EXPECT_EQ(e[3]["act"], "pruned");
  EXPECT_EQ(e[3]["idempotency_key"], "old");
  EXPECT_EQ(e[3]["claim_generation"], 1);
  EXPECT_EQ(e[3]["state"], "recorded");
  // The request's cutoff is by the operator's clock, the pruned rows' by the ledger's (here the
  // same host's, a moment later).
  EXPECT_GE(e[3]["cutoff"].get<std::string>(), e[2]["cutoff"].get<std::string>());
  EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
  const CliResult c = check(db());
  EXPECT_EQ(c.exit_code, 0) << c.out;
  // Re-opened: "old" replays again, "new" is still held.
  const std::vector<json> d =
      decisions(decide(letter("m-3", "old") + letter("m-4", "new"), "e.jsonl").out);
  EXPECT_EQ(d.at(0)["verb"], "replay_once");
  EXPECT_EQ(d.at(1)["rule"], "ledger:already_replayed");
  EXPECT_EQ(check(db()).exit_code, 0);
}

// A claimant whose clock is 60 days slow (its claimed_at) cannot make its claim look old: prune
// ages rows by the time the ledger recorded them, and `ledger check` reports the claim time.
TEST_F(LedgerOps, ASlowClaimantsClaimIsNotPrunedAndCheckReportsIt) {
  ASSERT_EQ(decide(letter("m-1", "slow") + letter("m-2", "fine")).exit_code, 0);
  sql("UPDATE claims SET claimed_at = '2026-01-01T00:00:00.000000Z' WHERE key = 'slow'");
  const CliResult dry =
      run({"ledger", "prune", "--older-than", "30d", "--ledger", db(), "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(dry.out, "");
  EXPECT_NE(dry.err.find("would prune 0 row(s) the ledger recorded before"), std::string::npos)
      << dry.err;
  const CliResult p = run({"ledger", "prune", "--older-than", "30d", "--ledger", db(), "--operator",
                           "ana", "--audit", log()});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, "");
  EXPECT_EQ(rows(db()).size(), 2u) << "nothing pruned: the ledger recorded both rows just now";
  const CliResult c = check(db());
  EXPECT_EQ(c.exit_code, 1) << c.out;
  EXPECT_NE(c.out.find("claim_time_in_past: key 'slow' generation 1 (claimed at "
                       "2026-01-01T00:00:00.000000Z"),
            std::string::npos)
      << c.out;
  EXPECT_EQ(c.out.find("key 'fine'"), std::string::npos) << c.out;
  // A claim time in the ledger's future is reported too.
  sql("UPDATE claims SET claimed_at = '2999-01-01T00:00:00.000000Z' WHERE key = 'fine'");
  const CliResult f = check(db());
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_NE(f.out.find("claim_time_in_future: key 'fine'"), std::string::npos) << f.out;
}

TEST_F(LedgerOps, PruneRefusesBadDurationsAndMissingArguments) {
  // "" is refused while parsing, as for every option (tests/tools/empty_option_test.cc).
  for (const char* bad : {"30", "1.5d", "30 d", "-1d", "1d12h", "30D"}) {
    const CliResult r = run({"ledger", "prune", "--older-than", bad, "--ledger", db(), "--operator",
                             "ana", "--audit", log()});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--older-than '" + std::string(bad) + "' is not a duration"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("e.g. --older-than 30d"), std::string::npos) << r.err;
  }
  EXPECT_EQ(
      run({"ledger", "prune", "--older-than", "30d", "--ledger", db(), "--audit", log()}).exit_code,
      2);
  EXPECT_EQ(run({"ledger", "prune", "--older-than", "30d", "--ledger", db(), "--operator", "a"})
                .exit_code,
            2);
  EXPECT_EQ(
      run({"ledger", "prune", "--ledger", db(), "--operator", "a", "--audit", log()}).exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(log())) << "nothing refused writes a log";
}

TEST_F(LedgerOps, RebuildFromARealDecideLogReproducesTheClaims) {
  ASSERT_EQ(decide(letter("m-1", "k1") + letter("m-2", "k2") + letter("m-3", "k1")).exit_code, 0);
  ASSERT_EQ(release("k2").exit_code, 0);
  ASSERT_EQ(decide(letter("m-4", "k2") + letter("m-5", "k3"), "e.jsonl").exit_code, 0);
  ASSERT_EQ(release("k3").exit_code, 0);
  const std::vector<json> original = rows(db());
  ASSERT_EQ(original.size(), 4u);
  const std::string rebuilt = db("rebuilt.db");
  const CliResult r = run({"ledger", "rebuild", "--from-audit", log(), "--ledger", rebuilt});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("rebuilt 4 claims"), std::string::npos) << r.err;
  // The same claims, modulo times and workers (neither is in the log to the microsecond).
  EXPECT_EQ(rows_modulo_times(export_of(rebuilt)), rows_modulo_times(export_of(db())));
  const std::vector<json> again = rows_modulo_times(export_of(rebuilt));
  EXPECT_EQ(again[1]["key"], "k2");
  EXPECT_EQ(again[1]["state"], "released");
  EXPECT_EQ(again[1]["released_by"], "ana");
  EXPECT_EQ(again[2]["generation"], 2);
  // The rebuilt ledger holds what the old one held, and checks clean against the log.
  EXPECT_EQ(check(rebuilt).exit_code, 0);
  const CliResult d = run({"decide", "--policy", kReplayGatePolicy, "--ledger", rebuilt,
                           dump("f.jsonl", letter("m-6", "k1") + letter("m-7", "k3"))});
  const std::vector<json> lines = decisions(d.out);
  EXPECT_EQ(lines.at(0)["rule"], "ledger:already_replayed");
  EXPECT_EQ(lines.at(1)["verb"], "replay_once") << "k3 was released";
}

TEST_F(LedgerOps, RebuildRefusesANonEmptyLedgerAndATamperedLog) {
  ASSERT_EQ(decide(letter("m-1", "k1") + letter("m-2", "k2")).exit_code, 0);
  const CliResult full = run({"ledger", "rebuild", "--from-audit", log(), "--ledger", db()});
  EXPECT_EQ(full.exit_code, 2);
  EXPECT_NE(full.err.find("already holds 2 rows"), std::string::npos) << full.err;
  // A tampered log: line 1's key edited, so line 2's prev no longer matches.
  std::string text = read_file(log());
  const size_t at = text.find("\"k1\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 4, "\"kX\"");
  write_file(log(), text);
  const std::string fresh = db("fresh.db");
  const CliResult tampered = run({"ledger", "rebuild", "--from-audit", log(), "--ledger", fresh});
  EXPECT_EQ(tampered.exit_code, 2);
  EXPECT_NE(tampered.err.find("does not verify: line 2: prev hash does not match"),
            std::string::npos)
      << tampered.err;
  EXPECT_FALSE(std::filesystem::exists(fresh)) << "a refused rebuild does not create the ledger";
}

TEST_F(LedgerOps, EveryOperatorCommandHasHelp) {
  for (const char* sub : {"release", "prune", "check", "rebuild"}) {
    const CliResult r = run({"ledger", sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub << r.err;
    EXPECT_NE(r.out.find("--ledger"), std::string::npos) << r.out;
  }
  EXPECT_NE(run({"ledger", "prune", "--help"}).out.find("re-opens replay"), std::string::npos);
  EXPECT_EQ(run({"ledger", "check", "--ledger", db()}).exit_code, 2) << "--audit is required";
  EXPECT_EQ(run({"ledger", "rebuild", "--ledger", db()}).exit_code, 2);
}

}  // namespace
}  // namespace replaygate::testing
