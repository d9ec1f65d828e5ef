// Issue 17, item 4 and its follow-up: only a cut of the next line a writer writes is a torn tail;
// any other unterminated last line (a whole entry, junk after one, two joined, a character
// deleted) is a problem that nothing removes; appends continue only a log that verifies (a broken
// log is refused, byte for byte unchanged), verify catches an edit of the line before an
// unterminated last entry, and `audit repair` records a break with an audited repair entry that
// keeps every line.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;
namespace audit = replaygate::audit;

const std::string kRecovery = kSourceDir + "/policies/generation_recovery.yaml";
const std::string kExamples = kSourceDir + "/examples/recovery/";
const std::string kReason = "line 2 edited by hand; no copy of the log";
const std::string kProblem3 =
    "line 3: prev hash does not match the previous line (a line before it was edited, removed or "
    "reordered)";

// What verify and the writers say about a last line (line `line`) without a newline that is not a
// torn line, for the log named `log` ("LOG" in verify's note).
std::string unterminated_fix(const std::string& log, int line = 3) {
  return "last line (line " + std::to_string(line) +
         ") has no newline and is not a torn line, so no append and no 'audit repair' continues "
         "after it: check that line, then restore the log from a copy, or, if the line belongs "
         "there, end it with a newline (printf '\\n' >> " +
         log + ") and run 'replaygate audit verify " + log +
         "' again ('audit repair' can then record any problem left)";
}
const std::string kNoNewline3 =
    "line 3: without a newline, and not a torn line (it is a whole JSON object): an append writes "
    "a whole line and its newline in one write, so a crash leaves only a cut of the next entry, "
    "never these bytes";

// The append's error for such a log whose first problem is `problem`, with `more` others.
std::string refused_unterminated(const std::string& log, const std::string& problem, int more) {
  return "refusing to append to " + log + ", which does not verify: " + problem +
         (more == 0 ? ""
                    : " (and " + std::to_string(more) + " more problem" + (more == 1 ? "" : "s") +
                          ": run 'replaygate audit verify " + log + "' to see them all)") +
         "; nothing was changed. Its " + unterminated_fix(log);
}

// The append's error for a log whose only problem is `problem` (audit.h).
std::string refused(const std::string& log, const std::string& problem) {
  return "refusing to append to " + log + ", which does not verify: " + problem +
         "; nothing was changed. Restore the log from a copy, or keep it as it is and record the "
         "break with 'replaygate audit repair " +
         log +
         " --operator NAME --reason TEXT' (every line is kept; a repair entry lists the problems "
         "and re-anchors the chain)";
}

class AuditRepairTest : public CliFixture {
 protected:
  std::string log() const { return (dir_ / "audit.log").string(); }
  CliResult review() {
    return run({"review", "--policy", kRecovery, "--message", kExamples + "prepared.message.json",
                "--record", kExamples + "prepared.record.json", "--confirm", "--operator", "ana",
                "--audit", log()});
  }
  CliResult result_for(const std::string& decision, const std::string& log_path = "") {
    return run({"audit", "result", "--log", log_path.empty() ? log() : log_path, "--decision",
                decision, "--revision", "2", "--outcome", "done"});
  }
  CliResult repair(const std::string& reason = kReason) {
    return run({"audit", "repair", log(), "--operator", "ana", "--reason", reason});
  }
  // Two `review --confirm` decisions and a result for decision 1 (docs/recovery.md).
  std::string three_entries() {
    EXPECT_EQ(review().exit_code, 0);
    EXPECT_EQ(review().exit_code, 0);
    EXPECT_EQ(result_for("1").exit_code, 0);
    return read_file(log());
  }
  // The issue's edit: `sed '2s/"operator":"ana"/"operator":"eve"/'`, then `head -c -1`.
  static std::string edited(std::string log) {
    const size_t line2 = log.find('\n') + 1;
    const size_t at = log.find("\"operator\":\"ana\"", line2);
    EXPECT_LT(at, log.find('\n', line2));
    log.replace(at, 16, "\"operator\":\"eve\"");
    log.pop_back();
    return log;
  }
};

// The exact scenario of the issue: verify used to say ok (the result entry, whose prev no longer
// matched line 2, was taken for a torn tail, so line 2 was the last line and nothing checked it),
// and the next `audit result` removed the complete result entry and accepted a second result for
// decision 1.
TEST_F(AuditRepairTest, TheEditedLogOfTheIssueIsBrokenAndNoEntryIsLost) {
  const std::string before = edited(three_entries());
  write_file(log(), before);
  const std::string line3 = before.substr(before.rfind('\n') + 1);
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, log() + ": " + kProblem3 + "\n" + log() + ": " + kNoNewline3 + "\n" + log() +
                       ": the last line has no newline and is not a torn line (above): nothing "
                       "removes it, and neither an append nor 'audit repair' continues the log "
                       "after it\n" +
                       log() +
                       ": the next append (audit result, review --confirm, decide --audit) will "
                       "refuse this log and write nothing: it does not verify (2 problems, the "
                       "first on line 3, above) and its " +
                       unterminated_fix("LOG") + "\n" + log() +
                       ": BROKEN, 3 entries (2 decisions, 1 result), last hash " +
                       audit::line_hash(line3) + "\n");

  // Every writer refuses it, exit 2, and the file stays byte for byte as it was.
  const std::string refusal = "replaygate: " + refused_unterminated(log(), kProblem3, 1) +
                              "\nreplaygate: the result was NOT recorded\n";
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, refusal);
  EXPECT_EQ(read_file(log()), before);
  r = result_for("2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, refusal);
  r = review();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("replaygate: " + refused_unterminated(log(), kProblem3, 1) + "\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(log()), before);
  // So does the repair: it does not guess what an unterminated whole object is.
  r = repair();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate: refusing to repair " + log() + ": its " + unterminated_fix(log()) +
                       "; nothing was written\nreplaygate: the repair was NOT recorded\n");
  EXPECT_EQ(read_file(log()), before);

  // The operator checks line 3, a whole result entry, and ends it with its newline (printf '\n'
  // >> LOG): line 3 is then an ordinary line whose only problem is the edit before it.
  write_file(log(), before + "\n");
  r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.substr(0, r.out.find('\n') + 1), log() + ": " + kProblem3 + "\n");
  // The audited repair: every byte kept, one repair entry appended.
  r = repair();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string after = read_file(log());
  ASSERT_EQ(after.substr(0, before.size() + 1), before + "\n");
  const std::string repair_line = after.substr(before.size() + 1, after.size() - before.size() - 2);
  ASSERT_EQ(after.back(), '\n');
  const nlohmann::json entry = nlohmann::json::parse(repair_line);
  EXPECT_EQ(entry["kind"], "repair");
  EXPECT_EQ(entry["seq"], 4);
  EXPECT_EQ(entry["prev"], audit::line_hash(line3));
  EXPECT_EQ(entry["operator"], "ana");
  EXPECT_EQ(entry["reason"], kReason);
  EXPECT_EQ(entry["covers"], audit::line_hash(before + "\n"));
  EXPECT_EQ(entry["problem_count"], 1);
  EXPECT_EQ(entry["problems"], nlohmann::json::array({kProblem3}));
  const std::string hash = audit::line_hash(repair_line);
  EXPECT_EQ(r.out, log() + ": " + kProblem3 + "\nrecorded repair entry 4 in " + log() + " (hash " +
                       hash +
                       "): it acknowledges 1 problem (above) on the lines before it, which are "
                       "kept as they are; appends continue after it\n");

  const std::string time = entry["time"];
  const std::string repaired_note =
      log() + ": line 4: repair entry by ana at " + time + " ('" + kReason +
      "'): it acknowledges 1 problem on the lines before it, which are kept as they are:\n" +
      log() + ":   " + kProblem3 + " (repaired)\n" + log() +
      ":   no checkpoint comes before it: nothing signed vouches for the lines it repairs\n";
  // A repaired region is never "ok" by itself (issue 42): exit 1 until the caller accepts it.
  const std::string pending_note =
      log() +
      ": the log holds 1 repair: a repaired region is not ok until you have checked it and "
      "accept it (--accept-repairs)\n";
  r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, repaired_note + pending_note + log() +
                       ": BROKEN, 4 entries (2 decisions, 1 result, 1 repair), last hash " + hash +
                       "\n");
  r = run({"audit", "verify", log(), "--accept-repairs"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, repaired_note + log() +
                       ": ok (repairs accepted), 4 entries (2 decisions, 1 result, 1 repair), " +
                       "last hash " + hash + "\n");
  r = run({"audit", "verify", "--format", "json", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(r.out)["repairs"],
            nlohmann::json::parse(
                R"([{"line":4,"operator":"ana","time":")" + time + R"(","reason":")" + kReason +
                R"(","problems":[")" + kProblem3 +
                R"("],"checkpoint_before":null,"checkpoint_before_text":"no checkpoint )"
                R"(comes before it: nothing signed vouches for the lines it repairs"}])"));

  // Decision 1 keeps its result (entry 3, kept); decision 2 gets one, after the repair.
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: decision entry 1 in " + log() +
                       " already has its result (entry 3); a decision has one result\n"
                       "replaygate: the result was NOT recorded\n");
  EXPECT_EQ(read_file(log()), after);
  r = result_for("2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("recorded result entry 5 for decision 2 (hash ", 0), 0u) << r.out;
  r = run({"audit", "verify", log(), "--accept-repairs"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.substr(0, r.out.rfind(", last hash")),
            repaired_note + log() +
                ": ok (repairs accepted), 5 entries (2 decisions, 2 results, 1 repair)");
}

// Verify catches an edit of any line before an unterminated last entry (the chain covers every
// field of every line; only which lines it was checked on was wrong).
TEST_F(AuditRepairTest, VerifyCatchesAnEditBeforeAnUnterminatedLastEntry) {
  const std::string good = three_entries();
  for (const std::string field : {"\"operator\":\"ana\"", "\"rule\":", "\"time\":"}) {
    for (int line = 0; line < 2; ++line) {
      std::string bytes = good;
      size_t start = 0;
      for (int i = 0; i < line; ++i) start = bytes.find('\n', start) + 1;
      const size_t at = bytes.find(field, start);
      ASSERT_LT(at, bytes.find('\n', start)) << field;
      bytes.insert(at + field.size() - 1, "x");  // "ana" -> "anxa", "time": -> "timex":
      bytes.pop_back();
      const audit::VerifyReport report = audit::verify_bytes(bytes);
      EXPECT_FALSE(report.ok()) << field << " on line " << line + 1;
      EXPECT_FALSE(report.torn_tail);
      EXPECT_TRUE(report.unterminated);
    }
  }
}

// A torn tail is only a strict prefix of the next line a writer writes that stops before the end
// of its last field: a cut inside `time` is torn; a cut after the time's 'Z' or just before the
// closing brace holds every field (a whole entry) and a whole line without its newline is a whole
// object: all problems.
TEST_F(AuditRepairTest, OnlyACutOfTheNextLineIsATornTail) {
  const std::string good = three_entries();
  const size_t last = good.rfind('\n', good.size() - 2) + 1;
  const std::string whole = good.substr(last, good.size() - last - 1);
  const std::string base = good.substr(0, last);
  for (size_t cut = 1; cut + 2 < whole.size(); ++cut) {  // every cut before the end of `time`
    const audit::VerifyReport report = audit::verify_bytes(base + whole.substr(0, cut));
    EXPECT_TRUE(report.torn_tail) << cut;
    EXPECT_TRUE(report.ok()) << cut << ": " << report.problems.front();
  }
  // Cut just after the 'Z' of `time` (`head -c -3` drops '"}\n'): the last field's value is
  // whole (the time is fixed-length), so this is a whole entry too, not a torn tail (L1).
  ASSERT_EQ(whole.substr(whole.size() - 3), "Z\"}");
  audit::VerifyReport report = audit::verify_bytes(base + whole.substr(0, whole.size() - 2));
  EXPECT_FALSE(report.torn_tail);
  EXPECT_TRUE(report.unterminated);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.problems,
            std::vector<std::string>{
                "line 3: without a newline, and not a torn line (it holds every field of a result "
                "entry, the last one's value complete, and lacks only its closing quote and "
                "brace: a whole entry, not a cut one): an append writes a whole line and its "
                "newline in one write, so a crash leaves only a cut of the next entry, never "
                "these bytes"});
  report = audit::verify_bytes(base + whole.substr(0, whole.size() - 1));
  EXPECT_FALSE(report.torn_tail);
  EXPECT_TRUE(report.unterminated);
  EXPECT_EQ(report.problems,
            std::vector<std::string>{
                "line 3: without a newline, and not a torn line (it holds every field of a result "
                "entry and lacks only its closing brace: a whole entry, not a cut one): an append "
                "writes a whole line and its newline in one write, so a crash leaves only a cut "
                "of the next entry, never these bytes"});
  report = audit::verify_bytes(base + whole);
  EXPECT_FALSE(report.torn_tail);
  EXPECT_TRUE(report.unterminated);
  EXPECT_EQ(report.problems, std::vector<std::string>{kNoNewline3});
  // A cut repair entry is torn too (its keys sort 'covers' first).
  report = audit::verify_bytes(good + "{\"covers\":\"00");
  EXPECT_TRUE(report.torn_tail);
  EXPECT_TRUE(report.ok());
  // A cut whose seq or prev does not continue the log is not what a writer wrote.
  const std::string prev = audit::line_hash(whole);
  report = audit::verify_bytes(good +
                               "{\"decision\":2,\"kind\":\"result\",\"outcome\":\"x\","
                               "\"prev\":\"" +
                               prev.substr(0, 10));
  EXPECT_TRUE(report.torn_tail) << report.problems.front();
  report = audit::verify_bytes(good +
                               "{\"decision\":2,\"kind\":\"result\",\"outcome\":\"x\","
                               "\"prev\":\"" +
                               // The time makes prev differ per run: differ at its first digit.
                               std::string(10, prev[0] == '0' ? 'f' : '0'));
  EXPECT_FALSE(report.torn_tail);
  EXPECT_EQ(report.problems.at(0).rfind("line 4: without a newline, and not a torn line (at byte "
                                        "53: 'prev' is not the hash of the line before (" +
                                            prev + ")): ",
                                        0),
            0u)
      << report.problems.at(0);
  report = audit::verify_bytes(good +
                               "{\"decision\":2,\"kind\":\"result\",\"outcome\":\"x\","
                               "\"prev\":\"" +
                               prev + "\",\"revision\":2,\"seq\":9");
  EXPECT_FALSE(report.torn_tail);
  EXPECT_NE(report.problems.at(0).find("'seq' is not 4, the seq that follows the line before"),
            std::string::npos)
      << report.problems.at(0);
  // A control character a writer would have escaped, or a key no entry has there.
  EXPECT_FALSE(audit::verify_bytes(good + "{\"action\":\"a\x1b").torn_tail);
  EXPECT_FALSE(audit::verify_bytes(good + "{\"action\":\"a\",\"zz").torn_tail);
  EXPECT_TRUE(audit::verify_bytes(good + "{\"action\":\"a\",\"eff").torn_tail);
}

// The break-it tester's three unterminated tails, each of which used to be a "torn tail" that
// verify passed and the next append or repair deleted, with the complete entries in it: a whole
// entry plus junk (`...}x`), two whole entries joined without a newline, and a complete last
// line with one character deleted (one that still parses, one that does not). Each is BROKEN
// with the reason and the line; every append (audit result, review --confirm, decide --audit)
// and the repair refuse it, exit 2, the file byte for byte unchanged. A genuine torn tail is
// still removed by the next append, with the message.
TEST_F(AuditRepairTest, TheTestersUnterminatedTailsAreProblemsAndNothingIsLost) {
  const std::string good = three_entries();
  const size_t line3 = good.rfind('\n', good.size() - 2) + 1;
  const size_t line2 = good.rfind('\n', line3 - 2) + 1;
  const std::string whole3 = good.substr(line3, good.size() - line3 - 1);
  const std::string whole2 = good.substr(line2, line3 - line2 - 1);
  const std::string outcome = "\"outcome\":\"done\"";
  const size_t at = whole3.find(outcome);
  ASSERT_NE(at, std::string::npos);
  struct Case {
    std::string name, bytes, problem;
  };
  const std::string why_not =
      "): an append writes a whole line and its newline in one write, so a crash leaves only a "
      "cut of the next entry, never these bytes";
  const std::vector<Case> cases = {
      {"a whole entry plus junk", good.substr(0, good.size() - 1) + "x",
       "line 3: without a newline, and not a torn line (it holds a whole JSON object and 1 more "
       "byte after its closing brace at byte " +
           std::to_string(whole3.size()) + why_not},
      {"two whole entries joined", good.substr(0, line3 - 1) + whole3,
       "line 2: without a newline, and not a torn line (it holds a whole JSON object and " +
           std::to_string(whole3.size()) + " more bytes after its closing brace at byte " +
           std::to_string(whole2.size()) + why_not},
      {"a character deleted, still parses",
       good.substr(0, line3) + whole3.substr(0, at + outcome.size() - 2) +
           whole3.substr(at + outcome.size() - 1),
       kNoNewline3},
      {"a character deleted, no longer parses",
       good.substr(0, line3) + whole3.substr(0, at) + whole3.substr(at + 1),
       "line 3: without a newline, and not a torn line (at byte " + std::to_string(at + 1) +
           ": expected '\"'" + why_not},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    write_file(log(), c.bytes);
    CliResult r = run({"audit", "verify", log()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out.substr(0, r.out.find('\n') + 1), log() + ": " + c.problem + "\n");
    EXPECT_NE(r.out.find(": BROKEN, "), std::string::npos) << r.out;
    const audit::VerifyReport report = audit::verify_bytes(c.bytes);
    EXPECT_FALSE(report.torn_tail);
    EXPECT_TRUE(report.unterminated);
    const int line = c.name == "two whole entries joined" ? 2 : 3;
    r = result_for("2");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(
        r.err.substr(0, r.err.find("; nothing was changed.")),
        "replaygate: refusing to append to " + log() + ", which does not verify: " + c.problem);
    EXPECT_NE(r.err.find("; nothing was changed. Its " + unterminated_fix(log(), line) +
                         "\nreplaygate: the result was NOT recorded\n"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(read_file(log()), c.bytes);
    r = review();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(read_file(log()), c.bytes);
    r = run({"decide", "--policy", kSourceDir + "/policies/replay_gate.yaml", "--audit", log(),
             "--operator", "ana"},
            "{\"message_id\":\"m-001\",\"topic\":\"payment.capture\",\"error_class\":\"timeout\","
            "\"attempts\":1,\"idempotency_key\":\"cap_9f3a\",\"already_committed\":false}\n");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(read_file(log()), c.bytes);
    r = repair();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "replaygate: refusing to repair " + log() + ": its " +
                         unterminated_fix(log(), line) +
                         "; nothing was written\nreplaygate: the repair was NOT recorded\n");
    EXPECT_EQ(read_file(log()), c.bytes);
  }

  // A genuine torn tail: a cut of the next result entry inside its outcome. verify passes, and
  // the next append removes it, shows it, and records the result.
  const std::string torn = "{\"decision\":2,\"kind\":\"result\",\"outcome\":\"do";
  write_file(log(), good + torn);
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.substr(0, r.out.find('\n') + 1),
            log() + ": torn last line (" + std::to_string(torn.size()) +
                " bytes without a newline): an append that crashed before completing; it was "
                "never acknowledged, and the next append removes it (and shows its bytes)\n");
  r = result_for("2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "replaygate: warning: removed a torn last line from " + log() + " (" +
                       std::to_string(torn.size()) +
                       " bytes without a newline that are not a whole entry: an append that "
                       "crashed before completing, never acknowledged): '" +
                       torn + "'\n");
  const std::string after = read_file(log());
  EXPECT_EQ(after.substr(0, good.size()), good);
  EXPECT_TRUE(audit::verify_bytes(after).ok());
  EXPECT_EQ(audit::verify_bytes(after).entries, 4u);
}

// A broken line anywhere stops every writer, and nothing is written, not even the removal of a
// torn tail or empty lines after the last entry.
TEST_F(AuditRepairTest, AnAppendOntoABrokenLogChangesNoByte) {
  std::string good = three_entries();
  // Line 1 edited: line 2's prev no longer matches; a torn tail and an empty line after the end.
  good.replace(good.find("\"operator\":\"ana\""), 16, "\"operator\":\"eve\"");
  const std::string torn = "{\"action\":\"disp";
  const std::string broken = good + "\n" + torn;
  write_file(log(), broken);
  const std::string problem =
      "line 2: prev hash does not match the previous line (a line before it was edited, removed "
      "or reordered)";
  CliResult r = result_for("2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: " + refused(log(), problem) +
                       "\nreplaygate: the result was NOT recorded\n");
  EXPECT_EQ(read_file(log()), broken);
  r = review();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(read_file(log()), broken);
  r = run({"decide", "--policy", kSourceDir + "/policies/replay_gate.yaml", "--audit", log(),
           "--operator", "ana"},
          "{\"message_id\":\"m-001\",\"topic\":\"payment.capture\",\"error_class\":\"timeout\","
          "\"attempts\":1,\"idempotency_key\":\"cap_9f3a\",\"already_committed\":false}\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(refused(log(), problem)), std::string::npos) << r.err;
  EXPECT_EQ(read_file(log()), broken);
  const audit::AppendResult appended = audit::append_batch(log(), {});
  EXPECT_FALSE(appended.ok);
  EXPECT_EQ(appended.removed_torn_tail, "");
  EXPECT_EQ(read_file(log()), broken);

  // The repair removes what an append removes (the torn tail, the empty line: nothing
  // acknowledged is there), says so, and covers the rest.
  r = repair();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "replaygate: note: removed 1 empty line from the end of " + log() +
                       " (after the last entry; no entry was changed)\n"
                       "replaygate: warning: removed a torn last line from " +
                       log() +
                       " (15 bytes without a newline that are not a whole entry: an append that "
                       "crashed before completing, never acknowledged): '" +
                       torn + "'\n");
  const std::string after = read_file(log());
  EXPECT_EQ(after.substr(0, good.size()), good);
  const nlohmann::json entry = nlohmann::json::parse(after.substr(good.size()));
  EXPECT_EQ(entry["covers"], audit::line_hash(good));
  EXPECT_EQ(entry["problems"], nlohmann::json::array({problem}));
  EXPECT_TRUE(audit::verify_bytes(after).ok());
}

// What repair refuses (exit 2, the file unchanged or not created), and what verify checks of a
// repair entry: its `covers` anchors every byte before it, so an edit there after the repair
// brings the problems back, and a second repair is needed.
TEST_F(AuditRepairTest, ARepairIsRefusedWhenItWouldNotBeHonest) {
  const std::string good = three_entries();
  CliResult r = repair();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate: " + log() +
                       " verifies: there is nothing to repair; nothing was written\n"
                       "replaygate: the repair was NOT recorded\n");
  EXPECT_EQ(read_file(log()), good);
  write_file(log(), good + "{\"decision\":");
  r = repair();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: " + log() +
                       " verifies: there is nothing to repair; nothing was written (its torn last "
                       "line, an append that crashed, is removed by the next append)\n"
                       "replaygate: the repair was NOT recorded\n");
  EXPECT_EQ(read_file(log()), good + "{\"decision\":");

  const std::string missing = (dir_ / "missing.log").string();
  r = run({"audit", "repair", missing, "--operator", "ana", "--reason", kReason});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: the audit log " + missing +
                       " does not exist (a repair appends to the log it repairs)\n"
                       "replaygate: the repair was NOT recorded\n");
  EXPECT_FALSE(fs::exists(missing));
  const std::string notes = (dir_ / "notes.txt").string();
  write_file(notes, "my notes\n");
  r = run({"audit", "repair", notes, "--operator", "ana", "--reason", kReason});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: " + notes +
                       " is not an audit log, or not one this version wrote: no line of it is a "
                       "valid entry; nothing was written. Check the path\n"
                       "replaygate: the repair was NOT recorded\n");
  EXPECT_EQ(read_file(notes), "my notes\n");

  // Who repaired and why are recorded: both must be one printable line. (The edited log, its
  // last line ended with a newline again: a repair refuses an unterminated one.)
  const std::string broken = edited(good) + "\n";
  write_file(log(), broken);
  r = run({"audit", "repair", log(), "--operator", "a\nb", "--reason", kReason});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: --operator contains the control character U+000A (byte 2): who "
            "acted is recorded in the audit log and must be printable text on one line (e.g. "
            "--operator ana)\nRun 'replaygate audit repair --help' for usage.\n");
  r = repair(" ");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: --reason is empty: why the log was repaired is recorded in the "
            "audit log and must be printable text on one line (e.g. --reason 'line 2 edited by "
            "hand; no copy')\nRun 'replaygate audit repair --help' for usage.\n");
  r = run({"audit", "repair", log(), "--operator", "ana"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(read_file(log()), broken);
  // Only repair() writes a repair entry.
  const audit::AppendResult forged =
      audit::append((dir_ / "other.log").string(), {{"kind", "repair"},
                                                    {"time", "2026-11-29T00:00:00Z"},
                                                    {"operator", "ana"},
                                                    {"reason", "x"},
                                                    {"covers", std::string(32, '0')},
                                                    {"problem_count", 1},
                                                    {"problems", {"line 1: x"}}});
  EXPECT_FALSE(forged.ok);
  EXPECT_EQ(forged.error, "refusing to append an invalid entry to " +
                              (dir_ / "other.log").string() + " (a repair entry)");

  ASSERT_EQ(repair().exit_code, 0);
  const std::string repaired = read_file(log());
  // Line 1 edited after the repair: its covers no longer matches, so it acknowledges nothing.
  std::string later = repaired;
  later.replace(later.find("\"operator\":\"ana\""), 16, "\"operator\":\"bob\"");
  write_file(log(), later);
  const audit::VerifyReport report = audit::verify_bytes(later);
  EXPECT_TRUE(report.repairs.empty());
  EXPECT_EQ(report.problems,
            (std::vector<std::string>{
                "line 2: prev hash does not match the previous line (a line before it was edited, "
                "removed or reordered)",
                kProblem3,
                "line 4: 'covers' is not the hash of the lines before this repair entry: a byte "
                "before it was changed, added or removed after the repair, so it acknowledges "
                "nothing"}));
  EXPECT_EQ(result_for("2").exit_code, 2);
  EXPECT_EQ(read_file(log()), later);
  // A second repair acknowledges all three; the first stays in the file as it is.
  r = repair("line 1 edited too");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(log()).substr(0, later.size()), later);
  const audit::VerifyReport second = audit::verify_bytes(read_file(log()));
  EXPECT_TRUE(second.ok());
  ASSERT_EQ(second.repairs.size(), 1u);
  EXPECT_EQ(second.repairs[0].line, 5u);
  EXPECT_EQ(second.repairs[0].problems, report.problems);
  EXPECT_EQ(result_for("2").exit_code, 0);
}

// A removed line: the entries after it have the wrong seq. The repair entry's seq follows every
// seq before it (so no seq names two entries), the entries after it count on from it, and its
// time is the repair's own even when an entry before it claims a later one.
TEST_F(AuditRepairTest, ARepairReanchorsSeqAndTime) {
  const std::string good = three_entries();
  const size_t line2 = good.find('\n') + 1;
  std::string removed = good.substr(0, line2) + good.substr(good.find('\n', line2) + 1);
  removed.replace(removed.rfind("\"time\":\"") + 8, 4, "2999");
  write_file(log(), removed);
  EXPECT_EQ(audit::verify_bytes(removed).problems,
            (std::vector<std::string>{"line 2: seq 3, expected 2 (a line was removed or moved)",
                                      "line 2: prev hash does not match the previous line (a line "
                                      "before it was edited, removed or reordered)"}));
  CliResult r = repair("line 2 removed by mistake");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("recorded repair entry 4 in "), std::string::npos) << r.out;
  const std::string text = read_file(log());
  const nlohmann::json entry = nlohmann::json::parse(text.substr(removed.size()));
  EXPECT_EQ(entry["seq"], 4);
  EXPECT_LT(entry["time"].get<std::string>(), "2999");
  EXPECT_EQ(entry["problem_count"], 2);
  // Decision 1 (before the break) is still found, and has its result (entry 3).
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("already has its result (entry 3)"), std::string::npos) << r.err;
  ASSERT_EQ(review().exit_code, 0);
  const std::string last = read_file(log()).substr(text.size());
  EXPECT_EQ(nlohmann::json::parse(last)["seq"], 5);
  EXPECT_LT(nlohmann::json::parse(last)["time"].get<std::string>(), "2999");
  EXPECT_TRUE(audit::verify_bytes(read_file(log())).ok());
}

// A line that is neither an entry nor the start of one after valid entries (a note pasted in) is
// kept by the repair, with its newline written, and acknowledged like any broken line.
TEST_F(AuditRepairTest, ARepairRefusesAForeignLastLineUntilItEndsWithANewline) {
  const std::string good = three_entries();
  write_file(log(), good + "a note");
  CliResult r = repair("a note was pasted into the log");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: refusing to repair " + log() + ": its " +
                       unterminated_fix(log(), 4) +
                       "; nothing was written\nreplaygate: the repair was NOT recorded\n");
  EXPECT_EQ(read_file(log()), good + "a note");
  // Ended with a newline by the operator, the note is an ordinary broken line: repaired, kept.
  write_file(log(), good + "a note\n");
  r = repair("a note was pasted into the log");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string text = read_file(log());
  EXPECT_EQ(text.substr(0, good.size() + 7), good + "a note\n");
  const audit::VerifyReport report = audit::verify_bytes(text);
  EXPECT_TRUE(report.ok());
  ASSERT_EQ(report.repairs.size(), 1u);
  EXPECT_EQ(report.repairs[0].problems, std::vector<std::string>{"line 4: not valid JSON"});
}

}  // namespace
