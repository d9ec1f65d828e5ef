// Signed audit checkpoints (issue 22, audit/checkpoint.h): where appends put them, what verify
// says of a log rewritten whole (chain rebuilt, checkpoints kept, removed or re-signed by another
// key), a forged or edited checkpoint, entries appended unsigned, a torn checkpoint, rotation, and
// the CLI's --audit-sign-key / --checkpoint-every / audit verify --trusted-key.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/checkpoint.h"
#include "audit/entry.h"
#include "runtime/verify/keys.h"
#include "support/audit_entries.h"
#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

namespace verify = replaygate::verify;
using nlohmann::json;

const std::string kPolicy = kSourceDir + "/policies/replay_gate.yaml";
const std::string kExamples = kSourceDir + "/examples/";

std::vector<std::string> split_lines(const std::string& text) { return lines_of(text); }

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// What an attacker who can write the file does: each line's `prev` recomputed from the line
// before, so the XXH3 chain holds again (seqs renumbered from 1).
std::string rechain(std::vector<std::string> lines) {
  std::string prev(32, '0');
  for (size_t i = 0; i < lines.size(); ++i) {
    json j = json::parse(lines[i]);
    j["seq"] = i + 1;
    j["prev"] = prev;
    lines[i] = j.dump();
    prev = audit::line_hash(lines[i]);
  }
  return join_lines(lines);
}

class AuditCheckpoint : public CliFixture {
 protected:
  void SetUp() override {
    verify::PublicKey pub;
    std::string error;
    ASSERT_TRUE(verify::generate_key_files(p("a.key"), p("a.pub"), &pub, &error)) << error;
    ASSERT_TRUE(verify::generate_key_files(p("b.key"), p("b.pub"), &pub, &error)) << error;
    ASSERT_TRUE(verify::read_secret_key(p("a.key"), &key_a_, &error)) << error;
    ASSERT_TRUE(verify::read_secret_key(p("b.key"), &key_b_, &error)) << error;
    keys_a_.emplace_back();
    ASSERT_TRUE(verify::read_public_key(p("a.pub"), &keys_a_.back(), &error)) << error;
    id_a_ = verify::hex(key_a_.id);
    id_b_ = verify::hex(key_b_.id);
  }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  std::string log() const { return p("audit.log"); }
  // Appends decisions first..last (inclusive) in one batch, signed by `key` every `every`.
  audit::AppendResult append(int first, int last, const verify::SecretKey* key, uint64_t every) {
    std::vector<json> entries;
    for (int n = first; n <= last; ++n) entries.push_back(decision(n));
    const audit::CheckpointSigner signer{key, every};
    return audit::append_batch(log(), std::move(entries), 0, key ? &signer : nullptr);
  }
  audit::Coverage coverage(const std::string& bytes) {
    return audit::check_checkpoints(audit::verify_bytes(bytes), keys_a_);
  }
  std::vector<std::string> kinds() {
    std::vector<std::string> out;
    for (const std::string& l : split_lines(read_file(log()))) {
      out.push_back(json::parse(l)["kind"]);
    }
    return out;
  }

  verify::SecretKey key_a_, key_b_;
  std::vector<verify::PublicKey> keys_a_;
  std::string id_a_, id_b_;
};

TEST_F(AuditCheckpoint, AppendsCheckpointEveryNEntriesAndAtTheEndOfEachAppend) {
  const audit::AppendResult first = append(1, 5, &key_a_, 2);
  ASSERT_TRUE(first.ok) << first.error;
  // The last given entry stays the append's answer (audit result --decision names it); the last
  // checkpoint follows it.
  EXPECT_EQ(first.seq, 7u);
  EXPECT_EQ(first.checkpoint_seq, 8u);
  EXPECT_EQ(kinds(),
            (std::vector<std::string>{"decision", "decision", "checkpoint", "decision", "decision",
                                      "checkpoint", "decision", "checkpoint"}));
  // The interval counts on from the last checkpoint in the log.
  ASSERT_TRUE(append(6, 8, &key_a_, 2).ok);
  EXPECT_EQ(split_lines(read_file(log())).size(), 13u);
  const std::string bytes = read_file(log());
  const audit::VerifyReport report = audit::verify_bytes(bytes);
  EXPECT_TRUE(report.ok()) << report.problems.front();
  EXPECT_EQ(report.checkpoint_entries, 5u);
  EXPECT_EQ(report.decisions, 8u);
  const audit::Coverage c = coverage(bytes);
  EXPECT_TRUE(c.problems.empty()) << c.problems.front();
  EXPECT_EQ(c.valid, 5u);
  EXPECT_EQ(c.covered_line, 13u);
  EXPECT_EQ(c.covered_entries, 13u);
  EXPECT_EQ(c.uncovered_entries, 0u);
  EXPECT_EQ(c.covered_key, p("a.pub"));
  // Each checkpoint's digest is BLAKE2b-256 of the bytes before its line.
  const std::vector<std::string> lines = split_lines(bytes);
  audit::ChainDigest digest;
  digest.update(lines[0] + "\n" + lines[1] + "\n");
  EXPECT_EQ(json::parse(lines[2])["chain_digest"], digest.hex());
  EXPECT_EQ(json::parse(lines[2])["key_id"], id_a_);
}

TEST_F(AuditCheckpoint, ARewrittenLogWithItsChainRebuiltFailsAtEveryCheckpointAfterTheEdit) {
  ASSERT_TRUE(append(1, 4, &key_a_, 2).ok);
  std::vector<std::string> lines = split_lines(read_file(log()));
  ASSERT_EQ(lines.size(), 6u);
  json edited = json::parse(lines[3]);  // decision 3: after the first checkpoint
  edited["action"] = "replay_once";
  edited["effect"] = "create";
  lines[3] = edited.dump();
  const std::string forged = rechain(lines);
  const audit::VerifyReport report = audit::verify_bytes(forged);
  // The XXH3 chain holds: only the checkpoint after the edit sees it.
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0],
            "line 6: 'chain_digest' is not the BLAKE2b-256 of the lines before this checkpoint: a "
            "byte before it was changed, added or removed after it was signed, so it vouches for "
            "nothing");
  const audit::Coverage c = coverage(forged);
  EXPECT_EQ(c.covered_line, 3u);  // the first checkpoint still vouches for lines 1-3
  EXPECT_EQ(c.uncovered_entries, 3u);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0].substr(0, 62),
            "after line 3: 3 entries after the last valid checkpoint: nothi");
}

TEST_F(AuditCheckpoint, ALogRewrittenWithoutItsCheckpointsIsCaughtOnlyByThePinnedKey) {
  ASSERT_TRUE(append(1, 4, &key_a_, 2).ok);
  std::vector<std::string> kept;
  for (const std::string& l : split_lines(read_file(log()))) {
    if (json::parse(l)["kind"] != "checkpoint") kept.push_back(l);
  }
  const std::string forged = rechain(kept);
  EXPECT_TRUE(audit::verify_bytes(forged).ok());  // XXH3 alone cannot tell
  const audit::Coverage c = coverage(forged);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0],
            "no checkpoint signed by a pinned key: nothing signed vouches for the 4 entries "
            "(written without --audit-sign-key, or rewritten and its checkpoints removed)");
  EXPECT_EQ(c.valid, 0u);
  EXPECT_EQ(c.uncovered_entries, 4u);
}

TEST_F(AuditCheckpoint, ALogReSignedByAnotherKeyVouchesForNothing) {
  // The attacker's own signed log: every digest and signature is right, under key b.
  ASSERT_TRUE(append(1, 2, &key_b_, 5).ok);
  const std::string bytes = read_file(log());
  EXPECT_TRUE(audit::verify_bytes(bytes).ok());
  const audit::Coverage c = coverage(bytes);
  ASSERT_EQ(c.problems.size(), 2u);
  EXPECT_EQ(c.problems[0], "line 3: checkpoint signed by key " + id_b_ +
                               ", which is not pinned (--trusted-key): it vouches for nothing");
  EXPECT_EQ(c.problems[1].substr(0, 40), "no checkpoint signed by a pinned key: no");
  // With both keys pinned (rotation) it verifies.
  keys_a_.emplace_back();
  std::string error;
  ASSERT_TRUE(verify::read_public_key(p("b.pub"), &keys_a_.back(), &error));
  EXPECT_TRUE(coverage(bytes).problems.empty());
}

TEST_F(AuditCheckpoint, AForgedOrEditedCheckpointSignatureIsRefused) {
  ASSERT_TRUE(append(1, 2, &key_a_, 5).ok);
  ASSERT_TRUE(append(3, 4, &key_a_, 5).ok);
  const std::vector<std::string> lines = split_lines(read_file(log()));
  ASSERT_EQ(lines.size(), 6u);
  // A flipped signature digit on the last line (nothing after it to rechain).
  {
    std::vector<std::string> forged = lines;
    json j = json::parse(forged[5]);
    std::string sig = j["signature"];
    sig[10] = sig[10] == '0' ? '1' : '0';
    j["signature"] = sig;
    forged[5] = j.dump();
    const std::string bytes = join_lines(forged);
    EXPECT_TRUE(audit::verify_bytes(bytes).ok());
    const audit::Coverage c = coverage(bytes);
    ASSERT_EQ(c.problems.size(), 2u);
    EXPECT_EQ(c.problems[0], "line 6: checkpoint signature does not verify under key " + id_a_ +
                                 " (" + p("a.pub") +
                                 "): the checkpoint was forged or edited, so it vouches for "
                                 "nothing");
    EXPECT_EQ(c.covered_line, 3u);
    EXPECT_EQ(c.uncovered_entries, 3u);  // the two decisions and the bad checkpoint
  }
  // The signature covers the time: a checkpoint moved in time does not verify.
  {
    std::vector<std::string> forged = lines;
    json j = json::parse(forged[5]);
    j["time"] = "2099-01-01T00:00:00Z";
    forged[5] = j.dump();
    const audit::Coverage c = coverage(join_lines(forged));
    ASSERT_FALSE(c.problems.empty());
    EXPECT_EQ(c.problems[0].substr(0, 45), "line 6: checkpoint signature does not verify ");
  }
}

TEST_F(AuditCheckpoint, EntriesAppendedWithoutTheKeyAreNotCovered) {
  ASSERT_TRUE(append(1, 2, &key_a_, 5).ok);
  ASSERT_TRUE(append(3, 3, nullptr, 0).ok);
  const audit::Coverage c = coverage(read_file(log()));
  EXPECT_EQ(c.covered_line, 3u);
  EXPECT_EQ(c.uncovered_entries, 1u);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0],
            "after line 3: 1 entry after the last valid checkpoint: nothing signed vouches for "
            "them (a writer with --audit-sign-key ends every append with a checkpoint: they were "
            "appended without one, or the log was changed after line 3)");
}

TEST_F(AuditCheckpoint, ATornCheckpointIsATornTailTheNextAppendRemoves) {
  ASSERT_TRUE(append(1, 2, &key_a_, 5).ok);
  const std::string bytes = read_file(log());
  const std::vector<std::string> lines = split_lines(bytes);
  // A crash while writing the checkpoint: every cut of its line is a torn tail.
  const std::string before = lines[0] + "\n" + lines[1] + "\n";
  for (const size_t cut : {size_t{1}, size_t{5}, size_t{20}, size_t{150}, lines[2].size() - 3}) {
    const audit::VerifyReport report = audit::verify_bytes(before + lines[2].substr(0, cut));
    EXPECT_TRUE(report.ok()) << cut << ": " << report.problems.front();
    EXPECT_TRUE(report.torn_tail) << cut;
  }
  write_file(log(), before + lines[2].substr(0, 100));
  const audit::AppendResult again = append(3, 3, &key_a_, 5);
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_EQ(again.removed_torn_tail, lines[2].substr(0, 100));
  EXPECT_TRUE(coverage(read_file(log())).problems.empty());
}

TEST_F(AuditCheckpoint, ACallersCheckpointEntryAndABadSignerAreRefused) {
  ASSERT_TRUE(append(1, 1, &key_a_, 5).ok);
  json forged = json::parse(split_lines(read_file(log()))[1]);
  forged.erase("seq");
  forged.erase("prev");
  const audit::AppendResult r = audit::append(log(), forged);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("(a checkpoint entry, which only a signing append writes)"),
            std::string::npos)
      << r.error;
  const audit::CheckpointSigner zero{&key_a_, 0};
  EXPECT_FALSE(audit::append(log(), decision(2), 0, &zero).ok);
  EXPECT_EQ(split_lines(read_file(log())).size(), 2u);  // nothing written
}

TEST_F(AuditCheckpoint, BadCheckpointFieldsAreNamed) {
  ASSERT_TRUE(append(1, 1, &key_a_, 5).ok);
  const std::vector<std::string> lines = split_lines(read_file(log()));
  const auto problem_with = [&](const std::string& key, const json& value) {
    json j = json::parse(lines[1]);
    j[key] = value;
    std::vector<std::string> forged = lines;
    forged[1] = j.dump();
    const audit::VerifyReport r = audit::verify_bytes(join_lines(forged));
    return r.problems.empty() ? std::string() : r.problems[0];
  };
  EXPECT_EQ(problem_with("signature", "ab"),
            "line 2: 'signature' is \"ab\"; expected 128 lowercase hex digits (an Ed25519 "
            "signature)");
  EXPECT_EQ(problem_with("key_id", std::string(32, 'A')),
            "line 2: 'key_id' is \"" + std::string(32, 'A') +
                "\"; expected 32 lowercase hex digits (a key id)");
  EXPECT_EQ(problem_with("chain_digest", 7),
            "line 2: 'chain_digest' is 7; expected 64 lowercase hex digits (BLAKE2b-256 of the "
            "log before it)");
  EXPECT_EQ(problem_with("operator", "ana"),
            "line 2: unknown field 'operator' in a checkpoint entry");
}

TEST_F(AuditCheckpoint, TheCliSignsDecideReviewAndResultAndVerifiesWithThePinnedKey) {
  const CliResult d = run({"decide", "--policy", kPolicy, "--input-format", "kafka", "--mapping",
                           kExamples + "kafka-spring-dlt.mapping.yaml",
                           kExamples + "payments-dlt.kcat.jsonl", "--audit", log(), "--operator",
                           "ana", "--audit-sign-key", p("a.key"), "--checkpoint-every", "10"});
  ASSERT_EQ(d.exit_code, 1) << d.err;  // the shipped dump holds invalid records on purpose
  const CliResult r = run({"audit", "result", "--log", log(), "--decision", "1", "--revision", "2",
                           "--outcome", "parked", "--audit-sign-key", p("a.key")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 62 decisions: 6 checkpoints every 10 and one after the last 2; the result and its checkpoint.
  EXPECT_EQ(r.out, "recorded result entry 70 for decision 1 (hash " +
                       audit::line_hash(split_lines(read_file(log()))[69]) + ")\n");
  const CliResult v = run({"audit", "verify", log(), "--trusted-key", p("a.pub")});
  EXPECT_EQ(v.exit_code, 0) << v.out;
  EXPECT_EQ(v.out, log() +
                       ": lines 1-71 (71 entries) are covered by the signed checkpoint on "
                       "line 71 (" +
                       json::parse(split_lines(read_file(log()))[70])["time"].get<std::string>() +
                       ", key " + p("a.pub") + "): every entry\n" + log() +
                       ": ok, 71 entries (62 decisions, 1 result, 8 checkpoints), last hash " +
                       audit::line_hash(split_lines(read_file(log()))[70]) + "\n");
  // review --confirm: its decision, then a checkpoint; the seq it prints is the decision's.
  const CliResult rv = run({"review", "--policy", kSourceDir + "/policies/generation_recovery.yaml",
                            "--message", kExamples + "recovery/prepared.message.json", "--record",
                            kExamples + "recovery/prepared.record.json", "--confirm", "--operator",
                            "ana", "--audit", p("review.log"), "--audit-sign-key", p("a.key")});
  ASSERT_EQ(rv.exit_code, 0) << rv.err;
  EXPECT_NE(rv.out.find("audit entry 1 (hash "), std::string::npos) << rv.out;
  const CliResult rv_check = run({"audit", "verify", p("review.log"), "--trusted-key", p("a.pub")});
  EXPECT_EQ(rv_check.exit_code, 0) << rv_check.out;
  EXPECT_NE(rv_check.out.find("ok, 2 entries (1 decision, 0 results, 1 checkpoint)"),
            std::string::npos)
      << rv_check.out;
  const CliResult other = run({"audit", "verify", log(), "--trusted-key", p("b.pub")});
  EXPECT_EQ(other.exit_code, 1);
  const CliResult j =
      run({"audit", "verify", log(), "--trusted-key", p("a.pub"), "--format", "json"});
  ASSERT_EQ(j.exit_code, 0);
  const json report = json::parse(j.out);
  EXPECT_EQ(report["checkpoints"], 8);
  EXPECT_EQ(report["signed"]["valid_checkpoints"], 8);
  EXPECT_EQ(report["signed"]["covered_line"], 71);
  EXPECT_EQ(report["signed"]["uncovered_entries"], 0);
}

TEST_F(AuditCheckpoint, TheCliRefusesBadSigningOptionsBeforeWritingAnything) {
  const std::vector<std::string> decide = {"decide",
                                           "--policy",
                                           kPolicy,
                                           "--input-format",
                                           "kafka",
                                           "--mapping",
                                           kExamples + "kafka-spring-dlt.mapping.yaml",
                                           kExamples + "payments-dlt.kcat.jsonl"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = decide;
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  };
  CliResult r = with({"--audit", log(), "--operator", "ana", "--audit-sign-key", p("a.key"),
                      "--checkpoint-every", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--checkpoint-every takes a whole number from 1"), std::string::npos)
      << r.err;
  r = with({"--audit", log(), "--operator", "ana", "--checkpoint-every", "5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--checkpoint-every needs --audit-sign-key KEY"), std::string::npos);
  r = with({"--audit-sign-key", p("a.key")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--audit-sign-key and --checkpoint-every only apply with --audit FILE"),
            std::string::npos);
  ASSERT_EQ(::chmod(p("a.key").c_str(), 0644), 0);
  r = with({"--audit", log(), "--operator", "ana", "--audit-sign-key", p("a.key")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is accessible by group or others (mode 0644); chmod 600 it"),
            std::string::npos)
      << r.err;
  // A public key is not a signing key.
  r = with({"--audit", log(), "--operator", "ana", "--audit-sign-key", p("a.pub")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(log()));
  ASSERT_TRUE(audit::append(log(), decision(1)).ok);
  r = run({"audit", "verify", log(), "--trusted-key", p("missing.pub")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.err.find("replaygate: error: --trusted-key: cannot read public key " + p("missing.pub")),
      std::string::npos)
      << r.err;
  // review signs only what --confirm appends.
  r = run({"review", "--policy", kSourceDir + "/policies/generation_recovery.yaml", "--message",
           kExamples + "recovery/prepared.message.json", "--record",
           kExamples + "recovery/prepared.record.json", "--audit-sign-key", p("b.key")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: --audit-sign-key and --checkpoint-every only apply with --confirm "
            "(which appends to the audit log)\nRun 'replaygate review --help' for usage.\n");
  // audit result: a bad count is refused before the log is touched.
  const std::string before = read_file(log());
  r = run({"audit", "result", "--log", log(), "--decision", "1", "--revision", "2", "--outcome",
           "x", "--audit-sign-key", p("b.key"), "--checkpoint-every", "abc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--checkpoint-every takes a whole number from 1"), std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(log()), before);
}

}  // namespace
}  // namespace replaygate::testing
