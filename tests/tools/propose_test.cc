// `replaygate propose` and `replaygate proposal check|compare` (issue 23): golden proposals for
// the shipped example dumps, byte-identical proposals across runs and input orders, a valid
// proposal against its JSON Schema, each check diagnostic at its JSON position, and compare's
// disagreement exit.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "runtime/table.h"
#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

using nlohmann::json;

class Propose : public CliFixture {
 protected:
  Propose() : CliFixture(kSourceDir) {}  // relative dump paths, so the goldens hold anywhere
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  // The decision digest of `policy` compiled to `table`.
  std::string decision_digest(const std::string& policy, const std::string& table) {
    const CliResult compiled = run({"compile", policy, "-o", table});
    EXPECT_EQ(compiled.exit_code, 0) << compiled.err;
    LoadStatus status;
    const std::unique_ptr<Table> loaded = Table::load_file(table, &status);
    EXPECT_TRUE(loaded) << status.message;
    return loaded ? loaded->decision_digest_hex() : "";
  }
};

TEST_F(Propose, GoldenProposalsForTheShippedDumps) {
  CliResult r =
      run({"propose", "--policy", "policies/replay_gate.yaml", "--input-format", "rabbitmq",
           "--mapping", "examples/rabbitmq.mapping.yaml", "examples/rabbitmq-dlq.json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the dump holds one unreadable record
  expect_golden(r.out, "propose/rabbitmq.json");
  // A raw value the mapping cannot classify is named, for a map: entry (not proposed as a row).
  EXPECT_NE(r.err.find("error_class: 1 record has no entry in the mapping's map: for "
                       "\"java.lang.NullPointerException\""),
            std::string::npos)
      << r.err;
  r = run({"propose", "--policy", "policies/replay_gate.yaml", "examples/letters.jsonl"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(r.out, "propose/letters.json");
  const json proposal = json::parse(r.out);
  ASSERT_EQ(proposal.size(), 1u);
  EXPECT_EQ(proposal[0]["verb"], "hold") << "the proposer never guesses a replay";
  EXPECT_EQ(proposal[0]["rationale"], "");
  EXPECT_NE(r.err.find("16 decided by a rule"), std::string::npos) << r.err;
}

TEST_F(Propose, SameDumpsSameBytesInAnyOrder) {
  // Many groups, records shuffled into two files in two orders.
  std::vector<std::string> records;
  for (int i = 0; i < 60; ++i) {
    const std::string topic = i % 3 == 0 ? "payment.capture" : i % 3 == 1 ? "mail.receipt" : "x.y";
    records.push_back("{\"topic\":\"" + topic + "\",\"error_class\":\"e" + std::to_string(i % 7) +
                      "\",\"attempts\":1,\"idempotency_key\":\"k" + std::to_string(i) +
                      "\",\"already_committed\":false,\"message_id\":\"m-" +
                      std::to_string(100 + i) + "\"}");
  }
  std::mt19937 rng(7);
  std::vector<std::string> outputs;
  std::vector<std::string> in_a, in_b;  // each file keeps its records; only their order changes
  for (size_t i = 0; i < records.size(); ++i) (i % 2 ? in_a : in_b).push_back(records[i]);
  for (int round = 0; round < 3; ++round) {
    std::shuffle(in_a.begin(), in_a.end(), rng);
    std::shuffle(in_b.begin(), in_b.end(), rng);
    std::string a, b;
    for (const std::string& r : in_a) a += r + "\n";
    for (const std::string& r : in_b) b += r + "\n";
    write_file(p("a.jsonl"), a);
    write_file(p("b.jsonl"), b);
    const std::vector<std::string> dumps =
        round % 2 ? std::vector<std::string>{p("a.jsonl"), p("b.jsonl")}
                  : std::vector<std::string>{p("b.jsonl"), p("a.jsonl")};
    std::vector<std::string> args = {"propose", "--policy", "policies/replay_gate.yaml"};
    args.insert(args.end(), dumps.begin(), dumps.end());
    const CliResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    outputs.push_back(r.out);
  }
  EXPECT_TRUE(outputs[0] == outputs[1]) << "the proposal depends on the records' order";
  EXPECT_TRUE(outputs[1] == outputs[2]) << "the proposal depends on the dumps' order";
  const json proposal = json::parse(outputs[0]);
  ASSERT_GT(proposal.size(), 5u);
  for (size_t i = 1; i < proposal.size(); ++i) {
    EXPECT_GE(proposal[i - 1]["evidence"]["count"], proposal[i]["evidence"]["count"]);
  }
  // Written with -o, it is a valid proposal: against the schema and against the policy.
  ASSERT_EQ(run({"propose", "--policy", "policies/replay_gate.yaml", p("a.jsonl"), "-o",
                 p("proposal.json")})
                .exit_code,
            0);
  EXPECT_EQ(
      run_shell("cd " + shell_quote(kSourceDir) +
                " && python3 -c \"import json, jsonschema; jsonschema.validate(json.load("
                "open('" +
                p("proposal.json") + "')), json.load(open('schemas/proposal.schema.json')))\""),
      0);
  // Unreviewed, every entry lacks the rationale that apply needs: check says so, and only that.
  const CliResult unreviewed =
      run({"proposal", "check", p("proposal.json"), "--policy", "policies/replay_gate.yaml"});
  EXPECT_EQ(unreviewed.exit_code, 1) << unreviewed.out << unreviewed.err;
  for (const std::string& line : lines_of(unreviewed.out)) {
    if (line.find("error[") == std::string::npos) continue;
    EXPECT_NE(line.find("error[RG502]: entry "), std::string::npos) << line;
    EXPECT_NE(line.find(" has no rationale: a row needs the reviewer's reason"), std::string::npos)
        << line;
  }
  json reviewed = proposal;
  for (json& entry : reviewed) entry["rationale"] = "seen in the dump";
  write_file(p("proposal.json"), reviewed.dump(2) + "\n");
  const CliResult checked =
      run({"proposal", "check", p("proposal.json"), "--policy", "policies/replay_gate.yaml"});
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
}

// A rationale that is empty or blank is refused by check, as apply refuses it (issue 35).
TEST_F(Propose, CheckRefusesAnEmptyRationaleAsApplyDoes) {
  for (const std::string& rationale : {std::string(", \"rationale\": \"\""),
                                       std::string(", \"rationale\": \" \\t \""), std::string()}) {
    write_file(p("e.json"),
               "[{\"topic\": \"mail.receipt\", \"error_class\": \"timeout\", "
               "\"verb\": \"hold\"" +
                   rationale + "}]");
    CliResult r = run({"proposal", "check", p("e.json"), "--policy", "policies/replay_gate.yaml"});
    EXPECT_EQ(r.exit_code, 1) << rationale;
    EXPECT_NE(r.out.find("error[RG502]: entry 1 has no rationale"), std::string::npos) << r.out;
    write_file(p("gate.yaml"), read_file(kSourceDir + "/policies/replay_gate.yaml"));
    r = run({"proposal", "apply", p("e.json"), "--policy", p("gate.yaml"), "--write"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
  }
}

// "*" is the wildcard in a policy row: a proposal value "*" would become a row matching every
// topic. check refuses it (RG505), and apply with it (nothing written), in both languages.
TEST_F(Propose, CheckAndApplyRefuseAValueThePolicyReadsAsTheWildcard) {
  write_file(p("star.json"),
             "[{\"topic\": \"*\", \"error_class\": \"timeout\", \"verb\": "
             "\"replay_once\", \"rationale\": \"r\"}]");
  CliResult r = run({"proposal", "check", p("star.json"), "--policy", "policies/replay_gate.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(":1:12: error[RG505]: 'topic' of entry 1 is \"*\", which a policy row reads "
                       "as the wildcard (any value), not as a value"),
            std::string::npos)
      << r.out;
  for (const std::string ext : {".yaml", ".policy"}) {
    const std::string original = read_file(kSourceDir + "/policies/replay_gate" + ext);
    write_file(p("gate" + ext), original);
    r = run({"proposal", "apply", p("star.json"), "--policy", p("gate" + ext), "--write"});
    EXPECT_EQ(r.exit_code, 4) << ext << r.err;
    EXPECT_EQ(read_file(p("gate" + ext)), original) << ext;
  }
}

// The DSL reads bare absent/present as matchers (RG128): apply quotes such a value.
TEST_F(Propose, ApplyQuotesMatcherWordsInTheDsl) {
  write_file(p("absent.json"),
             "[{\"topic\": \"absent\", \"error_class\": \"timeout\", "
             "\"verb\": \"hold\", \"rationale\": \"r\"}]");
  write_file(p("gate.policy"), read_file(kSourceDir + "/policies/replay_gate.policy"));
  const CliResult r =
      run({"proposal", "apply", p("absent.json"), "--policy", p("gate.policy"), "--write"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(p("gate.policy")).find("\"absent\", timeout -> hold"), std::string::npos);
}

TEST_F(Propose, CheckPutsEachProblemAtItsJsonPosition) {
  write_file(p("bad.json"),
             "[\n"
             "  {\"topic\": \"mail.receipt\", \"error_class\": \"timeout\", \"verb\": "
             "\"replay_onec\", \"rationale\": \"r\"},\n"
             "  {\"topic\": \"payment.capture\", \"error_class\": \"timeout\", \"verb\": "
             "\"hold\", \"rationale\": \"r\"},\n"
             "  {\"topic\": \"mail.receipt\", \"error_clas\": \"timeout\", \"verb\": \"hold\""
             ", \"rationale\": \"r\"},\n"
             "  {\"topic\": 42, \"error_class\": \"timeout\", \"verb\": \"hold\""
             ", \"rationale\": \"r\"},\n"
             "  {\"topic\": \"a.b\", \"error_class\": \"c\", \"verb\": \"never\""
             ", \"rationale\": \"r\"},\n"
             "  {\"topic\": \"a.b\", \"error_class\": \"c\", \"verb\": \"hold\""
             ", \"rationale\": \"r\"},\n"
             "  {\"topic\": \"a.b\", \"error_class\": \"c\", \"verb\": \"never\""
             ", \"rationale\": \"r\"},\n"
             "  \"loose\"\n"
             "]\n");
  const CliResult r = run({"proposal", "check", p("bad.json"), "--policy",
                           "policies/replay_gate.yaml", "--format", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<std::string> found;
  for (const json& d : json::parse(r.out)) {
    found.push_back(d["code"].get<std::string>() + "@" + std::to_string(d["line"].get<int>()) +
                    ":" + std::to_string(d["column"].get<int>()));
  }
  const std::vector<std::string> expected = {"RG506@2:63", "RG509@3:3", "RG503@4:29", "RG504@4:3",
                                             "RG505@5:13", "RG508@7:3", "RG507@8:3",  "RG502@9:3"};
  for (const std::string& e : expected) {
    EXPECT_NE(std::find(found.begin(), found.end(), e), found.end()) << e << " in " << r.out;
  }
  EXPECT_EQ(found.size(), expected.size()) << r.out;
  EXPECT_EQ(run({"proposal", "check", p("missing.json"), "--policy", "policies/replay_gate.yaml"})
                .exit_code,
            2);
  write_file(p("object.json"), "{\"topic\": \"a\"}\n");
  const CliResult object =
      run({"proposal", "check", p("object.json"), "--policy", "policies/replay_gate.yaml"});
  EXPECT_EQ(object.exit_code, 1);
  EXPECT_NE(object.out.find("RG501"), std::string::npos) << object.out;
}

TEST_F(Propose, CheckRefusesDuplicateKeysAndBadRowIdsAndApplyKeepsRowIds) {
  write_file(p("dup.json"),
             "[{\"topic\": \"t.x\", \"error_class\": \"e\", \"verb\": \"hold\", \"verb\": "
             "\"replay_once\", \"rationale\": \"r\"},\n"
             " {\"topic\": \"t.y\", \"error_class\": \"e\", \"verb\": \"hold\", \"row_id\": "
             "\"has space\", \"rationale\": \"r\"},\n"
             " {\"topic\": \"t.z\", \"error_class\": \"e\", \"verb\": 1, \"rationale\": \"r\"}]");
  CliResult r = run({"proposal", "check", p("dup.json"), "--policy", "policies/replay_gate.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("key 'verb' is in entry 1 twice"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the row_id of entry 2 is \"has space\", not a name"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the verb of entry 3 is 1"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("3 problems found"), std::string::npos) << r.err;
  // A row_id becomes the row's id in both forms.
  write_file(p("id.json"),
             "[{\"topic\": \"mail.receipt\", \"error_class\": \"timeout\", \"verb\": "
             "\"hold\", \"rationale\": \"wait\", \"row_id\": \"mail_timeout\"}]");
  for (const std::string ext : {".yaml", ".policy"}) {
    write_file(p("gate" + ext), read_file(kSourceDir + "/policies/replay_gate" + ext));
    r = run({"proposal", "apply", p("id.json"), "--policy", p("gate" + ext), "--write"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const CliResult t = run({"compile", p("gate" + ext), "-o", p("gate" + ext + ".rgt")});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_NE(run({"dump", p("gate" + ext + ".rgt")}).out.find("mail_timeout"), std::string::npos)
        << ext;
  }
}

TEST_F(Propose, CompareListsTheGroupsTwoProposalsDisagreeOn) {
  write_file(p("a.json"),
             "[{\"topic\":\"t\",\"error_class\":\"e1\",\"verb\":\"hold\",\"rationale\":\"\"},"
             "{\"topic\":\"t\",\"error_class\":\"e2\",\"verb\":\"never\"}]");
  write_file(p("b.json"),
             "[{\"topic\":\"t\",\"error_class\":\"e2\",\"verb\":\"replay_once\",\"evidence\":{}},"
             "{\"topic\":\"t\",\"error_class\":\"e1\",\"verb\":\"hold\"},"
             "{\"topic\":\"t\",\"error_class\":\"e3\",\"verb\":\"hold\"}]");
  CliResult r = run({"proposal", "compare", p("a.json"), p("b.json")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("\"error_class\":\"e2\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("says never"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("says replay_once"), std::string::npos) << r.out;
  EXPECT_EQ(lines_of(r.out).size(), 1u) << r.out;
  EXPECT_NE(r.err.find("2 groups in both, 1 with different verbs; 1 in only one"),
            std::string::npos)
      << r.err;
  r = run({"proposal", "compare", p("a.json"), p("a.json")});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  write_file(p("junk.json"), "[1]");
  EXPECT_EQ(run({"proposal", "compare", p("a.json"), p("junk.json")}).exit_code, 2);
  // A member that is no key value (an object) is not silently a group of its own.
  write_file(p("extra.json"),
             "[{\"topic\":\"t\",\"error_class\":\"e2\",\"verb\":\"never\",\"x\":{\"a\":1}}]");
  EXPECT_EQ(run({"proposal", "compare", p("a.json"), p("extra.json")}).exit_code, 2);
  // One proposal giving one group two verbs is the inconsistency compare exists to find.
  write_file(p("self.json"),
             "[{\"topic\":\"t\",\"error_class\":\"e1\",\"verb\":\"hold\"},"
             "{\"topic\":\"t\",\"error_class\":\"e1\",\"verb\":\"never\"}]");
  r = run({"proposal", "compare", p("self.json"), p("a.json")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("says both hold and never"), std::string::npos) << r.out;
}

// A reviewed proposal: two new pairs, one of them a replay.
const char* const kReviewed =
    "[\n"
    "  {\"topic\": \"mail.receipt\", \"error_class\": \"timeout\", \"verb\": \"replay_once\",\n"
    "   \"rationale\": \"the mail server timed out; the receipt is keyed\"},\n"
    "  {\"topic\": \"payment.capture\", \"error_class\": \"weird_partner_code\", \"verb\": "
    "\"never\",\n"
    "   \"rationale\": \"an unknown partner code: a ticket\"}\n"
    "]\n";

TEST_F(Propose, ApplyRoundTripsInBothFormsAndKeepsEveryOtherByte) {
  write_file(p("reviewed.json"), kReviewed);
  std::string digests[2];
  int n = 0;
  for (const std::string ext : {".yaml", ".policy"}) {
    SCOPED_TRACE(ext);
    const std::string original = read_file(kSourceDir + "/policies/replay_gate" + ext);
    write_file(p("gate" + ext), original);
    const CliResult r = run({"proposal", "apply", p("reviewed.json"), "--policy", p("gate" + ext),
                             "-o", p("patched" + ext)});
    EXPECT_EQ(r.exit_code, 3) << r.err;  // a replay was added: more dangerous
    EXPECT_NE(r.out.find("hold -> replay_once (effect none -> create, MORE DANGEROUS)"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(read_file(p("gate" + ext)), original) << "-o never touches the policy";
    const std::string patched = read_file(p("patched" + ext));
    // Every byte of the original is there, in order, with only the new lines between.
    size_t same_prefix = 0;
    while (same_prefix < original.size() && original[same_prefix] == patched[same_prefix]) {
      ++same_prefix;
    }
    const size_t added = patched.size() - original.size();
    EXPECT_EQ(patched.substr(same_prefix + added), original.substr(same_prefix));
    const std::string inserted = patched.substr(same_prefix, added);
    EXPECT_NE(inserted.find("# proposed: reviewed.json entry 1, digest "), std::string::npos)
        << inserted;
    EXPECT_NE(inserted.find("the mail server timed out; the receipt is keyed"), std::string::npos);
    digests[n++] = decision_digest(p("patched" + ext), p("patched" + ext + ".rgt"));
  }
  EXPECT_EQ(digests[0], digests[1]) << "the two forms decide alike";
  // And exactly as the same rows written by hand.
  std::string by_hand = read_file(kSourceDir + "/policies/replay_gate.yaml");
  const size_t at = by_hand.find("unknown_recipient], verb: never");
  ASSERT_NE(at, std::string::npos);
  const size_t end = by_hand.find("}\n", at) + 2;
  by_hand.insert(end,
                 "      - {keys: [mail.receipt, timeout], verb: replay_once,\n"
                 "         reason: \"the mail server timed out; the receipt is keyed\"}\n"
                 "      - {keys: [payment.capture, weird_partner_code], verb: never,\n"
                 "         reason: \"an unknown partner code: a ticket\"}\n");
  write_file(p("by_hand.yaml"), by_hand);
  EXPECT_EQ(decision_digest(p("by_hand.yaml"), p("by_hand.rgt")), digests[0]);
}

TEST_F(Propose, ApplyRefusesAndWritesNothing) {
  const std::string original = read_file(kSourceDir + "/policies/replay_gate.yaml");
  write_file(p("gate.yaml"), original);
  // An empty rationale.
  write_file(p("empty.json"),
             "[{\"topic\": \"a.b\", \"error_class\": \"c\", \"verb\": \"hold\", "
             "\"rationale\": \"\"}]");
  CliResult r = run({"proposal", "apply", p("empty.json"), "--policy", p("gate.yaml"), "--write"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("has no rationale"), std::string::npos) << r.err;
  // Entries that do not check.
  write_file(p("bad.json"), "[{\"topic\": 1, \"error_class\": \"c\", \"verb\": \"x\"}]");
  r = run({"proposal", "apply", p("bad.json"), "--policy", p("gate.yaml"), "--write"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("RG505"), std::string::npos) << r.err;
  // A row that breaks an invariant: refused with the counterexample.
  std::string guarded = original;
  guarded.replace(guarded.find("invariants:\n"), 12,
                  "invariants:\n  - invariant: new_topic_never_replays\n    when: {topic: x.new}\n"
                  "    require: {verb_not_in: [replay_once]}\n    reason: not yet reviewed\n\n");
  write_file(p("guarded.yaml"), guarded);
  write_file(p("replay.json"),
             "[{\"topic\": \"x.new\", \"error_class\": \"e\", \"verb\": \"replay_once\", "
             "\"rationale\": \"looks transient\"}]");
  r = run({"proposal", "apply", p("replay.json"), "--policy", p("guarded.yaml"), "--write"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("RG210"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("new_topic_never_replays"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(p("guarded.yaml")), guarded);
  EXPECT_EQ(read_file(p("gate.yaml")), original);
}

TEST_F(Propose, ApplyWithTheDefaultVerbChangesNoVerbAndWriteReplaces) {
  write_file(p("gate.policy"), read_file(kSourceDir + "/policies/replay_gate.policy"));
  write_file(p("holds.json"),
             "[{\"topic\": \"mail.receipt\", \"error_class\": \"timeout\", \"verb\": "
             "\"hold\", \"rationale\": \"wait for the operator\"}]");
  CliResult r = run({"proposal", "apply", p("holds.json"), "--policy", p("gate.policy")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("nothing written"), std::string::npos);
  EXPECT_EQ(read_file(p("gate.policy")), read_file(kSourceDir + "/policies/replay_gate.policy"));
  r = run({"proposal", "apply", p("holds.json"), "--policy", p("gate.policy"), "--write",
           "--format", "markdown"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      read_file(p("gate.policy")).find("mail.receipt, timeout -> hold \"wait for the operator\""),
      std::string::npos);
  // The row now decides the pair: the same proposal is refused as already decided.
  r = run({"proposal", "apply", p("holds.json"), "--policy", p("gate.policy"), "--write"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.err.find("RG509"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace replaygate::testing
