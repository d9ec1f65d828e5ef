// The policy's declared idempotency key end to end (issue 19): `decide` keys its replay guard and
// its ledger claims on the declared input by default (`--dedupe-field` still overrides, an old
// table falls back to an input named idempotency_key), and `review --confirm --ledger` claims a
// create decision by the recovery policy's operation id before recording or printing it: a second
// confirm of the same operation is ledger:already_replayed, no operation id is ledger:no_key, an
// unusable ledger is ledger:unavailable with exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

using nlohmann::json;

// A policy whose key is not named idempotency_key: only the declaration can point decide at it.
const char* const kKeyed = R"(policy: keyed
revision: 1
inputs:
  topic: {type: string}
  request_id: {type: string, optional: true, idempotency_key: true}
  idempotency_key: {type: string, optional: true}
verbs:
  hold: {effect: none}
  replay_once: {effect: create}
default: hold
rules:
  - guard: go
    when: {topic: orders}
    verb: replay_once
    reason: transient
)";

std::string letter(const std::string& id, const std::string& request_id,
                   const std::string& other_key) {
  return json({{"message_id", id},
               {"topic", "orders"},
               {"request_id", request_id},
               {"idempotency_key", other_key}})
             .dump() +
         "\n";
}

std::vector<json> decisions(const std::string& out) {
  std::vector<json> lines;
  for (const std::string& line : lines_of(out)) lines.push_back(json::parse(line));
  return lines;
}

class LedgerKeyCli : public CliFixture {
 protected:
  std::string policy() {
    write_file(dir_ / "keyed.yaml", kKeyed);
    return (dir_ / "keyed.yaml").string();
  }
  std::string ledger() const { return (dir_ / "ledger.db").string(); }
  std::string file(const std::string& name, const std::string& text) {
    write_file(dir_ / name, text);
    return (dir_ / name).string();
  }
};

TEST_F(LedgerKeyCli, DecideKeysOnTheDeclaredInput) {
  // Same request_id, different idempotency_key: the declared key says they are one letter.
  const std::string dump = file("d.jsonl", letter("m-1", "r-1", "a") + letter("m-2", "r-1", "b"));
  CliResult r = run({"decide", "--policy", policy(), dump});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> d = decisions(r.out);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0]["verb"], "replay_once");
  EXPECT_EQ(d[1]["verb"], "hold");
  EXPECT_EQ(d[1]["rule"], "dump:maybe_duplicate") << d[1];
  // --dedupe-field still overrides: on idempotency_key they differ.
  r = run({"decide", "--policy", policy(), "--dedupe-field", "idempotency_key", dump});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  d = decisions(r.out);
  EXPECT_EQ(d[0]["verb"], "replay_once");
  EXPECT_EQ(d[1]["verb"], "replay_once");
}

TEST_F(LedgerKeyCli, LedgerClaimsTheDeclaredKeyAcrossRuns) {
  const std::string db = ledger();
  CliResult r = run(
      {"decide", "--policy", policy(), "--ledger", db, file("a.jsonl", letter("m-1", "r-1", "a"))});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(decisions(r.out).at(0)["claimed"], true);
  const CliResult show = run({"ledger", "show", "r-1", "--ledger", db});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(json::parse(lines_of(show.out).at(0))["message_id"], "m-1");
  // Another letter with the same request_id (and another idempotency_key) in a later run.
  r = run(
      {"decide", "--policy", policy(), "--ledger", db, file("b.jsonl", letter("m-2", "r-1", "b"))});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json d = decisions(r.out).at(0);
  EXPECT_EQ(d["verb"], "hold");
  EXPECT_EQ(d["rule"], "ledger:already_replayed");
  EXPECT_NE(d["reason"].get<std::string>().find("message m-1"), std::string::npos) << d;
}

TEST_F(LedgerKeyCli, AnOldTableFallsBackToIdempotencyKey) {
  // The declaration removed (what a table compiled before it existed holds): the input named
  // idempotency_key is the key, as before.
  std::string text = kKeyed;
  text.erase(text.find(", idempotency_key: true"), 23);
  const std::string old = file("old.yaml", text);
  const std::string dump = file("d.jsonl", letter("m-1", "r-1", "a") + letter("m-2", "r-2", "a"));
  const CliResult r = run({"decide", "--policy", old, dump});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<json> d = decisions(r.out);
  EXPECT_EQ(d.at(0)["verb"], "replay_once");
  EXPECT_EQ(d.at(1)["rule"], "dump:maybe_duplicate");
}

// review --confirm with the shipped recovery policy: the prepared operation is dispatched once.
class ReviewLedger : public CliFixture {
 protected:
  const std::string examples_ = kSourceDir + "/examples/recovery/";
  std::string log() const { return (dir_ / "audit.log").string(); }
  std::string ledger() const { return (dir_ / "ledger.db").string(); }
  CliResult review(const std::string& message, const std::string& record,
                   std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "review",    "--policy", kSourceDir + "/policies/generation_recovery.yaml",
        "--message", message,    "--record",
        record,      "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  std::vector<std::string> confirm() const {
    return {"--confirm", "--operator", "ana", "--audit", log(), "--ledger", ledger()};
  }
};

TEST_F(ReviewLedger, SecondConfirmOfTheSameOperationIsAlreadyReplayed) {
  const std::string m = examples_ + "prepared.message.json",
                    rec = examples_ + "prepared.record.json";
  const CliResult first = review(m, rec, confirm());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const json a = json::parse(first.out);
  EXPECT_EQ(a["action"], "dispatch");
  EXPECT_EQ(a["claimed"], true);
  // Claimed by the operation id, then marked recorded once the audit entry was written.
  const CliResult show = run({"ledger", "show", "op-7760", "--ledger", ledger()});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const json row = json::parse(lines_of(show.out).at(0));
  EXPECT_EQ(row["state"], "recorded");
  EXPECT_EQ(row["message_id"], "msg-0210");
  EXPECT_EQ(row["rule"], "prepared_dispatch_reviewed");

  // A review without --confirm is not a create decision here (the policy needs the operator's
  // confirmation), so it never touches the ledger.
  const CliResult look = review(m, rec, {"--ledger", ledger()});
  ASSERT_EQ(look.exit_code, 0) << look.err;
  EXPECT_EQ(json::parse(look.out)["rule"], "prepared_needs_review");

  const CliResult second = review(m, rec, confirm());
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const json b = json::parse(second.out);
  EXPECT_EQ(b["action"], "manual_reconciliation");
  EXPECT_EQ(b["effect"], "none");
  EXPECT_EQ(b["rule"], "ledger:already_replayed");
  EXPECT_NE(b["reason"].get<std::string>().find("message msg-0210"), std::string::npos) << b;
  EXPECT_EQ(b.count("claimed"), 0u);
  // The audit log holds one dispatch and one hold, and still verifies.
  const std::vector<std::string> entries = lines_of(read_file(log()));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(json::parse(entries[0])["action"], "dispatch");
  EXPECT_EQ(json::parse(entries[1])["action"], "manual_reconciliation");
  EXPECT_EQ(json::parse(entries[1])["rule"], "ledger:already_replayed");
  EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
  EXPECT_EQ(json::parse(run({"ledger", "stats", "--ledger", ledger()}).out)["keys"], 1);
}

TEST_F(ReviewLedger, NoOperationIdIsNoKey) {
  json message = json::parse(read_file(examples_ + "prepared.message.json"));
  json record = json::parse(read_file(examples_ + "prepared.record.json"));
  message.erase("operation_id");
  record.erase("operation_id");
  write_file(dir_ / "m.json", message.dump());
  write_file(dir_ / "r.json", record.dump());
  const CliResult r = review((dir_ / "m.json").string(), (dir_ / "r.json").string(), confirm());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json d = json::parse(r.out);
  EXPECT_EQ(d["rule"], "ledger:no_key");
  EXPECT_EQ(d["effect"], "none");
  EXPECT_EQ(json::parse(run({"ledger", "stats", "--ledger", ledger()}).out)["keys"], 0);
}

TEST_F(ReviewLedger, UnusableLedgerHoldsAndExits2) {
  std::filesystem::create_directory(ledger());  // a directory: cannot be opened
  const CliResult r =
      review(examples_ + "prepared.message.json", examples_ + "prepared.record.json", confirm());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const json d = json::parse(r.out);
  EXPECT_EQ(d["rule"], "ledger:unavailable");
  EXPECT_EQ(d["effect"], "none");
  EXPECT_NE(r.err.find("the replay ledger is unavailable"), std::string::npos) << r.err;
  // What was recorded is the hold, never the dispatch.
  const std::vector<std::string> entries = lines_of(read_file(log()));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(json::parse(entries[0])["rule"], "ledger:unavailable");
}

TEST_F(ReviewLedger, ANonCreateDecisionClaimsNothing) {
  const CliResult r =
      review(examples_ + "accepted.message.json", examples_ + "accepted.record.json", confirm());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["action"], "observe");
  EXPECT_FALSE(std::filesystem::exists(ledger()));  // not even opened
}

TEST_F(ReviewLedger, ScopeNeedsALedger) {
  const CliResult r = review(examples_ + "prepared.message.json",
                             examples_ + "prepared.record.json", {"--ledger-scope", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ledger-scope only applies with --ledger"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace replaygate::testing
