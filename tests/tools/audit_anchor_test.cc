// A signing writer checks a log's signed state before it signs on (issue 42): the rewrite attack
// (decisions edited, the XXH3 chain rebuilt, the checkpoints dropped) against the ledger anchor
// (redrive::Redrive, audit::append_batch), an in-place rewrite under a running audit::Appender, a
// forged checkpoint under the writer's own key, repairs a signing writer does not sign over
// unless accepted, and what `audit verify` says of a repaired log.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/checkpoint.h"
#include "audit/entry.h"
#include "ledger/ledger.h"
#include "redrive/redrive.h"
#include "runtime/table.h"
#include "runtime/verify/keys.h"
#include "support/audit_entries.h"
#include "support/cli_runner.h"
#include "support/ledger_letters.h"

namespace replaygate::testing {
namespace {

namespace verify = replaygate::verify;
using nlohmann::json;

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// The attack: every decision's operator and action rewritten, the checkpoints dropped, and each
// line's `prev` recomputed (seqs renumbered from 1), so the XXH3 chain holds again.
std::string rewrite(const std::string& bytes) {
  std::vector<std::string> lines;
  for (const std::string& l : lines_of(bytes)) {
    json j = json::parse(l);
    if (j["kind"] == "checkpoint") continue;
    if (j["kind"] == "decision") {
      j["operator"] = "mallory";
      j["action"] = j["action"] == "never" ? "park" : "never";
    }
    lines.push_back(j.dump());
  }
  std::string prev(32, '0');
  std::map<uint64_t, uint64_t> renumbered;  // old seq -> new (results name their decision)
  for (size_t i = 0; i < lines.size(); ++i) {
    json j = json::parse(lines[i]);
    renumbered[j["seq"].get<uint64_t>()] = i + 1;
    if (j["kind"] == "result") j["decision"] = renumbered[j["decision"].get<uint64_t>()];
    j["seq"] = i + 1;
    j["prev"] = prev;
    lines[i] = j.dump();
    prev = audit::line_hash(lines[i]);
  }
  return join_lines(lines);
}

class AuditAnchor : public CliFixture {
 protected:
  void SetUp() override {
    verify::PublicKey pub;
    std::string error;
    ASSERT_TRUE(verify::generate_key_files(p("a.key"), p("a.pub"), &pub, &error)) << error;
    ASSERT_TRUE(verify::read_secret_key(p("a.key"), &key_, &error)) << error;
    signer_.key = &key_;
    signer_.every = 1000;
  }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  std::string log() const { return p("audit.log"); }
  audit::AppendResult append(int n, const audit::CheckpointSigner* signer) {
    return audit::append(log(), decision(n), 0, signer);
  }
  CliResult verify_log(const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"audit", "verify", log(), "--trusted-key", p("a.pub")};
    args.insert(args.end(), more.begin(), more.end());
    return run(args);
  }

  verify::SecretKey key_;
  audit::CheckpointSigner signer_;
};

TEST_F(AuditAnchor, ASigningAppendRefusesALogRewrittenBelowItsAnchor) {
  audit::AppendResult last;
  for (int n = 1; n <= 3; ++n) {
    last = append(n, &signer_);
    ASSERT_TRUE(last.ok) << last.error;
  }
  EXPECT_EQ(last.checkpoint_seq, 6u);
  const audit::Anchor anchor{last.checkpoint_seq, last.checkpoint_head, last.checkpoint_digest};
  EXPECT_EQ(anchor.head, audit::line_hash(lines_of(read_file(log())).back()));
  const std::string forged = rewrite(read_file(log()));
  write_file(log(), forged);
  ASSERT_TRUE(audit::verify_bytes(forged).ok());  // the XXH3 chain alone cannot tell
  audit::CheckpointSigner anchored = signer_;
  anchored.anchor = anchor;
  const audit::AppendResult refused = append(4, &anchored);
  ASSERT_FALSE(refused.ok);
  EXPECT_EQ(refused.error,
            "refusing to sign on after " + log() +
                ": the log no longer holds its entry 6 (chain head " + anchor.head +
                ") that was recorded for it (the ledger anchor, or the last line this writer saw "
                "or wrote): it was cut back or rewritten below that entry, and a signing writer "
                "does not sign a rewritten log; nothing was written. Check it with "
                "'replaygate audit verify " +
                log() + " --trusted-key P.pub' and restore it from a copy");
  EXPECT_EQ(read_file(log()), forged);
  // Nothing signed vouches for the rewritten entries.
  const CliResult v = verify_log();
  EXPECT_EQ(v.exit_code, 1) << v.out;
  EXPECT_EQ(v.out.find(": ok,"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("no checkpoint signed by a pinned key"), std::string::npos) << v.out;
}

TEST_F(AuditAnchor, ATailCutRightAfterACheckpointIsRefusedByTheAnchor) {
  audit::AppendResult last;
  for (int n = 1; n <= 4; ++n) {
    last = append(n, &signer_);
    ASSERT_TRUE(last.ok) << last.error;
  }
  // head -n 6 of the 8 lines: it ends on a checkpoint and verifies by itself.
  const std::vector<std::string> lines = lines_of(read_file(log()));
  ASSERT_EQ(lines.size(), 8u);
  write_file(log(), join_lines({lines.begin(), lines.begin() + 6}));
  EXPECT_EQ(verify_log().exit_code, 0);
  audit::CheckpointSigner anchored = signer_;
  anchored.anchor = {last.checkpoint_seq, last.checkpoint_head, last.checkpoint_digest};
  const audit::AppendResult refused = append(5, &anchored);
  ASSERT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find("no longer holds its entry 8"), std::string::npos) << refused.error;
}

TEST_F(AuditAnchor, ALogRewrittenInPlaceUnderARunningAppenderIsRefused) {
  std::string error;
  std::unique_ptr<audit::Appender> appender = audit::Appender::open(log(), &signer_, &error);
  ASSERT_TRUE(appender) << error;
  for (int n = 1; n <= 3; ++n) ASSERT_TRUE(appender->append(decision(n)).ok);
  // Rewritten in place (same inode) with a rebuilt chain, while the appender holds the log.
  const std::string forged = rewrite(read_file(log()));
  write_file(log(), forged);
  const audit::AppendResult refused = appender->append(decision(4));
  ASSERT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find("no longer holds its entry 6"), std::string::npos) << refused.error;
  EXPECT_EQ(read_file(log()), forged);
}

TEST_F(AuditAnchor, ASigningWriterRefusesAForgedCheckpointUnderItsOwnKey) {
  ASSERT_TRUE(append(1, &signer_).ok);
  std::vector<std::string> lines = lines_of(read_file(log()));
  json j = json::parse(lines.back());
  std::string sig = j["signature"];
  sig[10] = sig[10] == '0' ? '1' : '0';
  j["signature"] = sig;
  lines.back() = j.dump();
  write_file(log(), join_lines(lines));
  const audit::AppendResult refused = append(2, &signer_);
  ASSERT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find("line 2: the checkpoint names this writer's key " +
                               verify::hex(key_.id) + " but its signature does not verify"),
            std::string::npos)
      << refused.error;
  // An unsigned writer has no key to check it with: it appends (verify reports the checkpoint).
  EXPECT_TRUE(append(2, nullptr).ok);
}

TEST_F(AuditAnchor, ASigningWriterDoesNotSignOverARepairNobodyAccepted) {
  for (int n = 1; n <= 2; ++n) ASSERT_TRUE(append(n, &signer_).ok);
  // A byte edit of the second decision (after the first checkpoint), then a repair (no key).
  std::string bytes = read_file(log());
  const size_t at = bytes.find("\"operator\":\"ana\"", bytes.find("\"operator\":\"ana\"") + 1);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 16, "\"operator\":\"eve\"");
  write_file(log(), bytes);
  const audit::AppendResult repaired = audit::repair(log(), "ops", "edited by hand");
  ASSERT_TRUE(repaired.ok) << repaired.error;
  EXPECT_EQ(repaired.seq, 5u);
  const std::string before = read_file(log());
  const audit::AppendResult refused = append(3, &signer_);
  ASSERT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find("line 5: a repair entry (by ops, "), std::string::npos)
      << refused.error;
  EXPECT_NE(refused.error.find("after the last checkpoint this key signed (line 2): a signing "
                               "writer does not sign over a repair nobody accepted"),
            std::string::npos)
      << refused.error;
  EXPECT_EQ(read_file(log()), before);
  // audit verify: never "ok" while the log holds a repair, and it says which checkpoint came
  // before it.
  CliResult v = verify_log();
  EXPECT_EQ(v.exit_code, 1) << v.out;
  EXPECT_NE(v.out.find("line 5: repair entry by ops"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("the last checkpoint before it is line 2 (seq 2), signed by a pinned "
                       "key; the chain_digest of every checkpoint before the repair"),
            std::string::npos)
      << v.out;
  EXPECT_NE(v.out.find(log() + ": BROKEN,"), std::string::npos) << v.out;
  v = run({"audit", "verify", log()});
  EXPECT_EQ(v.exit_code, 1) << v.out;
  // Accepted: the writer signs over it once, and later appends need no acceptance.
  audit::CheckpointSigner accepting = signer_;
  accepting.accept_repairs = true;
  const audit::AppendResult accepted = append(3, &accepting);
  ASSERT_TRUE(accepted.ok) << accepted.error;
  EXPECT_TRUE(append(4, &signer_).ok);
  v = verify_log({"--accept-repairs"});
  EXPECT_EQ(v.exit_code, 0) << v.out;
  EXPECT_NE(v.out.find("ok (repairs accepted)"), std::string::npos) << v.out;
  EXPECT_EQ(verify_log().exit_code, 1);
}

// The gate (redrive::Redrive) with a signing key and a ledger: each checkpoint it writes is
// recorded as the log's anchor, and a later run refuses the log rewritten below it.
TEST_F(AuditAnchor, TheGateRecordsTheAnchorAndRefusesALogRewrittenBelowIt) {
  std::unique_ptr<Table> table = shipped_table();
  ASSERT_TRUE(table);
  redrive::Redrive::Options options;
  options.actions = redrive::ActionMap::defaults(*table);
  options.dry_run = false;
  options.ledger_url = p("ledger.db");
  options.audit_path = log();
  options.operator_name = "ops";
  options.source = "test";
  options.signer = &signer_;
  redrive::LetterStep plan;
  plan.kind = redrive::LetterStep::Kind::kAct;
  plan.action = redrive::Action::kHold;
  plan.verb = table->default_verb();
  plan.rule = "default";
  redrive::DeadLetter letter;
  letter.message_id = "m-1";
  {
    redrive::Redrive redrive(options);
    ASSERT_EQ(redrive.open(), "");
    for (uint64_t n = 1; n <= 3; ++n) {
      ASSERT_EQ(redrive.record_decision(*table, plan, letter, n), "");
      ASSERT_EQ(redrive.record_outcome(plan, false, "held"), "");
    }
    // Checkpoints per block (every 1000 here) and at close: none yet; the anchor, raised after
    // each letter's result, is the last entry.
    EXPECT_EQ(lines_of(read_file(log())).size(), 6u);
    auto anchors = redrive.ledger()->anchors();
    ASSERT_TRUE(anchors.ok()) << anchors.error().message;
    ASSERT_EQ(anchors->size(), 1u);
    EXPECT_EQ((*anchors)[0].log, audit::anchor_name(log()));
    EXPECT_EQ((*anchors)[0].seq, 6);
    EXPECT_EQ((*anchors)[0].head, audit::line_hash(lines_of(read_file(log())).back()));
    EXPECT_EQ((*anchors)[0].key_id, verify::hex(key_.id));
  }
  // At close: one checkpoint covers the run, and the anchor moves to it.
  std::vector<std::string> lines = lines_of(read_file(log()));
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(json::parse(lines.back())["kind"], "checkpoint");
  EXPECT_EQ(verify_log().exit_code, 0);
  {
    auto l = ledger::open_ledger(p("ledger.db"));
    ASSERT_TRUE(l.ok());
    auto anchors = (*l)->anchors();
    ASSERT_TRUE(anchors.ok());
    ASSERT_EQ(anchors->size(), 1u);
    EXPECT_EQ((*anchors)[0].seq, 7);
  }
  // A second run continues it (its anchor holds).
  {
    redrive::Redrive redrive(options);
    ASSERT_EQ(redrive.open(), "");
    ASSERT_EQ(redrive.record_decision(*table, plan, letter, 1), "");
    ASSERT_EQ(redrive.record_outcome(plan, false, "held"), "");
  }
  lines = lines_of(read_file(log()));
  ASSERT_EQ(lines.size(), 10u);
  // A tail cut right after the first run's checkpoint verifies by itself; the anchor catches it.
  write_file(log(), join_lines({lines.begin(), lines.begin() + 7}));
  EXPECT_EQ(verify_log().exit_code, 0);
  {
    redrive::Redrive redrive(options);
    const std::string error = redrive.open();
    EXPECT_NE(error.find("no longer holds its entry 10"), std::string::npos) << error;
  }
  write_file(log(), join_lines(lines));
  const std::string forged = rewrite(read_file(log()));
  write_file(log(), forged);
  {
    redrive::Redrive redrive(options);
    const std::string error = redrive.open();
    EXPECT_NE(error.find("no longer holds its entry 10"), std::string::npos) << error;
  }
  EXPECT_EQ(read_file(log()), forged);
  // ledger check reports the log cut below its anchor.
  const CliResult check = run({"ledger", "check", "--ledger", p("ledger.db"), "--audit", log()});
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_NE(check.out.find("anchor_missing"), std::string::npos) << check.out;
  EXPECT_EQ(verify_log().exit_code, 1);
}

// Two gates (here: two decide runs, each with its own log) share one ledger: `ledger check` given
// one log reports the other's claim as missing its entry; given both, every claim is accounted
// for, and a release recorded in the second log for a claim the first granted is matched.
TEST_F(AuditAnchor, LedgerCheckTakesEveryGatesLog) {
  const auto decide = [&](const std::string& log_name, const std::string& text) {
    write_file(dir_ / (log_name + ".jsonl"), text);
    return run({"decide", "--policy", kReplayGatePolicy, "--ledger", p("ledger.db"), "--audit",
                p(log_name), "--operator", "ops", p(log_name + ".jsonl")});
  };
  ASSERT_EQ(decide("a.log", letter("m-1", "k1")).exit_code, 0);
  ASSERT_EQ(decide("b.log", letter("m-2", "k2")).exit_code, 0);
  const CliResult released =
      run({"ledger", "release", "k1", "--ledger", p("ledger.db"), "--operator", "ana", "--reason",
           "OPS-7: rolled back", "--audit", p("b.log")});
  ASSERT_EQ(released.exit_code, 0) << released.err;
  CliResult one = run({"ledger", "check", "--ledger", p("ledger.db"), "--audit", p("a.log")});
  EXPECT_EQ(one.exit_code, 1) << one.out;
  EXPECT_NE(one.out.find("claim_without_entry: key 'k2' generation 1"), std::string::npos)
      << one.out;
  const CliResult both = run({"ledger", "check", "--ledger", p("ledger.db"), "--audit", p("a.log"),
                              "--audit", p("b.log")});
  EXPECT_EQ(both.exit_code, 0) << both.out << both.err;
  EXPECT_NE(both.out.find("': ok, 2 claims, 2 grants in " + p("a.log") + ", " + p("b.log") +
                          ", 0 findings"),
            std::string::npos)
      << both.out;
  const CliResult json_out = run({"ledger", "check", "--ledger", p("ledger.db"), "--audit",
                                  p("a.log"), "--audit", p("b.log"), "--output", "json"});
  EXPECT_EQ(json_out.exit_code, 0);
  EXPECT_EQ(json::parse(json_out.out)["audits"], json::array({p("a.log"), p("b.log")}));
}

}  // namespace
}  // namespace replaygate::testing
