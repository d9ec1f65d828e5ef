// `replaygate audit` against a break-it run: empty lines in a log (tolerated at the end and removed
// by the next append, a named problem elsewhere), a huge torn tail shown capped and escaped,
// entries the writers never write (duplicate or unknown keys, contradicting effects, odd revisions
// and times, a second result for one decision), --operator values that would forge log or terminal
// lines, an unknown audit action, an unreadable log, and -o through a symbolic link.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "audit/audit_log.h"
#include "tests/support/cli_runner.h"
#include "tools/cli/files.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;
namespace audit = replaygate::audit;

const std::string kGate = kSourceDir + "/policies/replay_gate.yaml";
const std::string kRecovery = kSourceDir + "/policies/generation_recovery.yaml";
const std::string kExamples = kSourceDir + "/examples/recovery/";
const std::string kChecksum(32, 'a');

// A decision entry as review --confirm writes it (seq and prev are set by the log builder).
const std::string kDecisionBody =
    R"("action":"observe","effect":"read","kind":"decision","message_id":"m","operation_id":"op",)"
    R"("operator":"ana","policy":"p","policy_revision":1,"record_revision":1,"rule":"r",)"
    R"("table_checksum":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","time":"2026-11-29T00:00:00Z")";

std::string result_body(int decision) {
  return R"("decision":)" + std::to_string(decision) +
         R"(,"kind":"result","outcome":"done","revision":2,"time":"2026-11-29T00:00:01Z")";
}

// A log whose lines are `{"seq":N,"prev":H,BODY}` for each body: a correct chain, so the only
// problems are those of the bodies.
std::string chained(const std::vector<std::string>& bodies) {
  std::string log, prev(32, '0');
  for (size_t i = 0; i < bodies.size(); ++i) {
    const std::string line =
        "{\"seq\":" + std::to_string(i + 1) + ",\"prev\":\"" + prev + "\"," + bodies[i] + "}";
    prev = audit::line_hash(line);
    log += line + "\n";
  }
  return log;
}

// What verify says the next append does with a log that does not verify (`append_refusal`), when
// it has `problems` problems, the first on line `first_line`.
std::string refusal_note(int problems, int first_line) {
  return "it does not verify (" + std::to_string(problems) + " problem" +
         (problems == 1 ? "" : "s") + ", the first on line " + std::to_string(first_line) +
         ", above) and an append continues only a log that verifies: restore the log from a copy, "
         "or keep it as it is and record the break with 'replaygate audit repair LOG --operator "
         "NAME --reason TEXT' (every line is kept; a repair entry lists the problems and "
         "re-anchors the chain)";
}

// The line verify prints for that.
std::string refusal_line(const std::string& log, int problems, int first_line) {
  return log +
         ": the next append (audit result, review --confirm, decide --audit) will refuse this log "
         "and write nothing: " +
         refusal_note(problems, first_line) + "\n";
}

// What verify and the writers say about a last line (line `line`) without a newline that is not a
// torn line, for the log named `log` ("LOG" in verify's note).
std::string unterminated_fix(const std::string& log, int line) {
  return "last line (line " + std::to_string(line) +
         ") has no newline and is not a torn line, so no append and no 'audit repair' continues "
         "after it: check that line, then restore the log from a copy, or, if the line belongs "
         "there, end it with a newline (printf '\\n' >> " +
         log + ") and run 'replaygate audit verify " + log +
         "' again ('audit repair' can then record any problem left)";
}
std::string no_newline(int line) {
  return "line " + std::to_string(line) +
         ": without a newline, and not a torn line (it is a whole JSON object): an append writes "
         "a whole line and its newline in one write, so a crash leaves only a cut of the next "
         "entry, never these bytes";
}

// The error of an append to the log at `log` that does not verify, whose first problem is
// `first` ("line N: ...") and which has `more` others.
std::string refused_error(const std::string& log, const std::string& first, int more = 0) {
  return "refusing to append to " + log + ", which does not verify: " + first +
         (more == 0 ? ""
                    : " (and " + std::to_string(more) + " more problem" + (more == 1 ? "" : "s") +
                          ": run 'replaygate audit verify " + log + "' to see them all)") +
         "; nothing was changed. Restore the log from a copy, or keep it as it is and record the "
         "break with 'replaygate audit repair " +
         log +
         " --operator NAME --reason TEXT' (every line is kept; a repair entry lists the problems "
         "and re-anchors the chain)";
}

nlohmann::json decision_entry(const std::string& message_id) {
  nlohmann::json entry = nlohmann::json::parse("{" + kDecisionBody + "}");
  entry["message_id"] = message_id;
  return entry;
}

class AuditVerifyTest : public CliFixture {
 protected:
  std::string log() const { return (dir_ / "audit.log").string(); }
  // Two decisions appended by the library (as review --confirm does), the log's bytes.
  std::string two_decisions() {
    EXPECT_TRUE(audit::append(log(), decision_entry("m1")).ok);
    EXPECT_TRUE(audit::append(log(), decision_entry("m2")).ok);
    return read_file(log());
  }
  std::string last_hash_of(const std::string& bytes) {
    return audit::verify_bytes(bytes).last_hash;
  }
  CliResult result_for(const std::string& decision) {
    return run({"audit", "result", "--log", log(), "--decision", decision, "--revision", "2",
                "--outcome", "done"});
  }
};

// ---- 1. empty lines ----

TEST_F(AuditVerifyTest, AnEmptyLastLineIsToleratedAndRemovedByTheNextAppend) {
  const std::string good = two_decisions();
  write_file(log(), good + "\n");
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, log() +
                       ": 1 empty line after the last entry: tolerated (no entry is missing or "
                       "changed); the next append removes it\n" +
                       log() + ": ok, 2 entries (2 decisions, 0 results), last hash " +
                       last_hash_of(good) + "\n");
  r = run({"audit", "verify", "--format", "json", log()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["trailing_empty_lines"], 1);
  EXPECT_EQ(nlohmann::json::parse(r.out)["ok"], true);

  r = result_for("1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "replaygate: note: removed 1 empty line from the end of " + log() +
                       " (after the last entry; no entry was changed)\n");
  const std::string text = read_file(log());
  EXPECT_EQ(text.substr(0, good.size()), good);  // every entry kept, byte for byte
  const audit::VerifyReport report = audit::verify_bytes(text);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.entries, 3u);
  EXPECT_EQ(report.trailing_empty_lines, 0u);
  EXPECT_EQ(nlohmann::json::parse(text.substr(good.size()))["prev"], last_hash_of(good));
}

// A Windows line ending or an editor's spaces on the trailing empty lines: still no entry there,
// so tolerated and removed like "\n" (they used to block every append).
TEST_F(AuditVerifyTest, BlankLastLinesWithSpacesOrCrAreToleratedAndRemoved) {
  const std::string good = two_decisions();
  write_file(log(), good + "\r\n \t\n");
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, log() +
                       ": 2 empty lines after the last entry: tolerated (no entry is missing or "
                       "changed); the next append removes them\n" +
                       log() + ": ok, 2 entries (2 decisions, 0 results), last hash " +
                       last_hash_of(good) + "\n");
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "replaygate: note: removed 2 empty lines from the end of " + log() +
                       " (after the last entry; no entry was changed)\n");
  const std::string text = read_file(log());
  EXPECT_EQ(text.substr(0, good.size()), good);
  EXPECT_TRUE(audit::verify_bytes(text).ok());
  EXPECT_EQ(audit::verify_bytes(text).entries, 3u);
}

// Bytes after a line's closing brace (or before its opening one) that a JSON parser skips but no
// writer writes: the line is a problem naming them, even when the chain is hashed over them (so
// nothing else is wrong), and appends refuse the log (L3). A CRLF log names the stray CR.
TEST_F(AuditVerifyTest, StrayBytesAroundAnEntryAreAProblemNamingThem) {
  const auto chained_with = [](const std::vector<std::string>& bodies,
                               const std::vector<std::string>& before,
                               const std::vector<std::string>& after) {
    std::string log, prev(32, '0');
    for (size_t i = 0; i < bodies.size(); ++i) {
      const std::string line = before[i] + "{\"seq\":" + std::to_string(i + 1) + ",\"prev\":\"" +
                               prev + "\"," + bodies[i] + "}" + after[i];
      prev = audit::line_hash(line);
      log += line + "\n";
    }
    return log;
  };
  const std::string crlf = chained_with({kDecisionBody, kDecisionBody}, {"", ""}, {"\r", "\r"});
  const std::string cr_problem =
      ": 1 byte after the closing brace ('\\u000d'), a carriage return (a CRLF line end: an entry "
      "ends with '\\n' only), which no writer writes";
  audit::VerifyReport report = audit::verify_bytes(crlf);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.problems,
            (std::vector<std::string>{"line 1" + cr_problem, "line 2" + cr_problem}));
  const std::string spaces = chained_with({kDecisionBody, kDecisionBody}, {"", " \t"}, {"   ", ""});
  report = audit::verify_bytes(spaces);
  EXPECT_EQ(report.problems,
            (std::vector<std::string>{
                "line 1: 3 bytes after the closing brace ('   '), which no writer writes",
                "line 2: 2 bytes before the opening brace (' \\u0009'), which no writer writes"}));
  for (const std::string& bytes : {crlf, spaces}) {
    write_file(log(), bytes);
    CliResult r = run({"audit", "verify", log()});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find(": BROKEN, "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(log() + ": line 1: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("which no writer writes"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("prev hash does not match"), std::string::npos) << r.out;
    r = result_for("1");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("which no writer writes"), std::string::npos) << r.err;
    EXPECT_EQ(read_file(log()), bytes);
  }
}

TEST_F(AuditVerifyTest, SeveralEmptyLastLinesAndATornTailAreRemovedTogether) {
  const std::string good = two_decisions();
  write_file(log(), good + "\n\n{\"action");
  const audit::VerifyReport report = audit::verify_bytes(read_file(log()));
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.trailing_empty_lines, 2u);
  EXPECT_TRUE(report.torn_tail);
  const CliResult r = result_for("2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "replaygate: note: removed 2 empty lines from the end of " + log() +
                       " (after the last entry; no entry was changed)\n"
                       "replaygate: warning: removed a torn last line from " +
                       log() +
                       " (8 bytes without a newline that are not a whole entry: an append that "
                       "crashed before completing, never acknowledged): '{\"action'\n");
  const std::string text = read_file(log());
  EXPECT_EQ(text.substr(0, good.size()), good);
  EXPECT_EQ(audit::verify_bytes(text).entries, 3u);
  EXPECT_TRUE(audit::verify_bytes(text).ok());
}

TEST_F(AuditVerifyTest, AnEmptyLineBetweenEntriesNamesTheLineAndTheFix) {
  const std::string good = two_decisions();
  const size_t second = good.find('\n') + 1;
  write_file(log(), good.substr(0, second) + "\n" + good.substr(second));
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, log() +
                       ": line 2: empty line; delete it (the entries around it are checked as if "
                       "it were not there)\n" +
                       log() +
                       ": apart from the empty lines, every entry and the hash chain check out: "
                       "deleting them repairs the log\n" +
                       refusal_line(log(), 1, 2) + log() +
                       ": BROKEN, 2 entries (2 decisions, 0 results), last hash " +
                       last_hash_of(good) + "\n");
  // A whitespace-only line is named as such; a real problem as well: no claim the rest is intact.
  write_file(log(), good.substr(0, second) + " \t\n" + good.substr(second) + "garbage\n");
  r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, log() +
                       ": line 2: blank line (only whitespace); delete it (the entries around it "
                       "are checked as if it were not there)\n" +
                       log() + ": line 4: not valid JSON\n" + refusal_line(log(), 2, 2) + log() +
                       ": BROKEN, 2 entries (2 decisions, 0 results), last hash " +
                       audit::line_hash("garbage") + "\n");
}

// An empty line before an unterminated last entry is between entries: the append is refused and
// nothing changes (the entry after it may have been acknowledged).
TEST_F(AuditVerifyTest, AnEmptyLineBeforeAnUnterminatedEntryRefusesTheAppend) {
  const std::string good = two_decisions();
  const size_t second = good.find('\n') + 1;
  const std::string broken =
      good.substr(0, second) + "\n" + good.substr(second, good.size() - second - 1);
  write_file(log(), broken);
  const audit::VerifyReport report = audit::verify_bytes(broken);
  EXPECT_TRUE(report.unterminated);
  EXPECT_EQ(report.entries, 2u);
  const std::string blank =
      "line 2: empty line; delete it (the entries around it are checked as if it were not "
      "there)";
  EXPECT_EQ(report.problems, (std::vector<std::string>{blank, no_newline(3)}));
  const CliResult r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: refusing to append to " + log() + ", which does not verify: " +
                       blank + " (and 1 more problem: run 'replaygate audit verify " + log() +
                       "' to see them all); nothing was changed. Its " +
                       unterminated_fix(log(), 3) + "\nreplaygate: the result was NOT recorded\n");
  EXPECT_EQ(read_file(log()), broken);
}

// ---- 2. a torn tail is shown capped ----

TEST_F(AuditVerifyTest, AHugeTornTailIsShownCapped) {
  const std::string good = two_decisions();
  // A cut of a decision line whose action is a megabyte long.
  const std::string torn = "{\"action\":\"" + std::string(1 << 20, 'a');
  write_file(log(), good + torn);
  const CliResult r = result_for("1");
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 400);
  const std::string shown = "{\"action\":\"" + std::string(200 - 11, 'a');
  EXPECT_EQ(r.err, "replaygate: warning: removed a torn last line from " + log() + " (" +
                       std::to_string(torn.size()) +
                       " bytes without a newline that are not a whole entry: an append that "
                       "crashed before completing, never acknowledged): '" +
                       shown + "'... (" + std::to_string(torn.size()) + " bytes in all)\n");
  EXPECT_EQ(read_file(log()).substr(0, good.size()), good);
}

// Bytes a writer never writes (a raw control character: it writes \u001b; a byte that is not
// UTF-8: it writes U+FFFD) are no cut of a writer's line: a problem, shown escaped, and kept.
TEST_F(AuditVerifyTest, ATailWithBytesNoWriterWritesIsAProblemShownEscaped) {
  const std::string good = two_decisions();
  const std::string tail = "{\"action\":\"\x1b[31m\xff" + std::string(100, 'a');
  write_file(log(), good + tail);
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.out).at(0),
            log() +
                ": line 3: without a newline, and not a torn line (at byte 12: a control "
                "character that a writer escapes): an append writes a whole line and its newline "
                "in one write, so a crash leaves only a cut of the next entry, never these bytes");
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(read_file(log()), good + tail);
  write_file(log(), good + "{\"action\":\"a\xff");
  EXPECT_EQ(lines_of(run({"audit", "verify", log()}).out).at(0),
            log() +
                ": line 3: without a newline, and not a torn line (at byte 13: a byte that is not "
                "UTF-8 (a writer writes U+FFFD for it)): an append writes a whole line and its "
                "newline in one write, so a crash leaves only a cut of the next entry, never these "
                "bytes");
}

// ---- 3. entries the writers never write ----

struct BadEntry {
  std::vector<std::string> bodies;
  std::string problem;
};

TEST_F(AuditVerifyTest, EntriesTheWritersNeverWriteAreFindings) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string body = kDecisionBody;
    const size_t at = body.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return body.replace(at, from.size(), to);
  };
  const std::vector<BadEntry> cases = {
      {{with(R"("effect":"read")", R"("effect":"read","effect":"create")")},
       "line 1: the field 'effect' is given twice"},
      {{with(R"("rule":"r")", R"("rule":"r","note":"x")")},
       "line 1: unknown field 'note' in a decision entry"},
      {{kDecisionBody, result_body(1) + R"(,"retries":1)"},
       "line 2: unknown field 'retries' in a result entry"},
      {{with(R"("effect":"read")", R"("effect":"none")"),
        with(R"("effect":"read")", R"("effect":"create")")},
       "line 2: 'effect' is \"create\" for action \"observe\" but \"none\" on line 1 under the "
       "same 'table_checksum' (a table gives each verb one effect)"},
      {{with(R"("rule":"r")", R"("rule":"default")")},
       "line 1: 'effect' is \"read\" but 'rule' is \"default\": the default verb's effect is "
       "always none"},
      {{with(R"("effect":"read")", R"("effect":"explode")")},
       "line 1: 'effect' is \"explode\"; expected none, read, copy or create"},
      {{with(R"("effect":"read",)", "")}, "line 1: decision entry without 'effect'"},
      {{kDecisionBody, with(R"("policy_revision":1)", R"("policy_revision":2)")},
       "line 2: 'table_checksum' aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa is policy \"p\" revision 2 "
       "here but policy \"p\" revision 1 on line 1 (one table is one policy revision)"},
      {{with(R"("policy_revision":1)", R"("policy_revision":-1)")},
       "line 1: 'policy_revision' is -1; expected a whole number from 0 to 9223372036854775807"},
      {{with(R"("policy_revision":1)", R"("policy_revision":1.5)")},
       "line 1: 'policy_revision' is 1.5; expected a whole number from 0 to 9223372036854775807"},
      {{with(R"("policy_revision":1)", R"("policy_revision":"1")")},
       "line 1: 'policy_revision' is \"1\"; expected a whole number from 0 to "
       "9223372036854775807"},
      {{with(R"("policy_revision":1)", R"("policy_revision":9223372036854775808)")},
       "line 1: 'policy_revision' is 9223372036854775808; expected a whole number from 0 to "
       "9223372036854775807"},
      {{with(R"("record_revision":1)", R"("record_revision":[1])")},
       "line 1: 'record_revision' is [1]; expected an integer, a string or null"},
      {{with(R"("2026-11-29T00:00:00Z")", R"("t")")},
       "line 1: 'time' is \"t\"; expected a UTC time YYYY-MM-DDTHH:MM:SSZ"},
      {{with(R"("2026-11-29T00:00:00Z")", R"("2026-02-29T00:00:00Z")")},
       "line 1: 'time' is \"2026-02-29T00:00:00Z\" (2026-02 has 28 days); expected a UTC time "
       "YYYY-MM-DDTHH:MM:SSZ"},
      {{with(R"("2026-11-29T00:00:00Z")", R"("2026-11-29T24:00:00Z")")},
       "line 1: 'time' is \"2026-11-29T24:00:00Z\" (hours run from 00 to 23); expected a UTC time "
       "YYYY-MM-DDTHH:MM:SSZ"},
      {{with(R"("2026-11-29T00:00:00Z")", R"("2026-11-29 00:00:00Z")")},
       "line 1: 'time' is \"2026-11-29 00:00:00Z\"; expected a UTC time YYYY-MM-DDTHH:MM:SSZ"},
      {{with(R"("2026-11-29T00:00:00Z")", "1764374400")},
       "line 1: 'time' is 1764374400; expected a UTC time YYYY-MM-DDTHH:MM:SSZ"},
      {{kDecisionBody, result_body(1), result_body(1)},
       "line 3: a second result for decision 1 (its result is entry 2); a decision has one "
       "result"},
      {{with(R"("operator":"ana")", R"("operator":"a\u0007na")")},
       "line 1: 'operator' contains the control character U+0007 (byte 2)"},
      {{with(R"("operator":"ana")", R"("operator":"a\u2028")")},
       "line 1: 'operator' contains the control character U+2028 (byte 2)"},
      {{with(R"("operator":"ana")", R"("operator":"")")}, "line 1: 'operator' is empty"},
      {{with(R"("operator":"ana")", R"("operator":"\u200b")")},
       "line 1: 'operator' has only white space or invisible characters, such as U+200B (byte 1)"},
      {{with(R"("operator":"ana")", R"("operator":"\u00a0\u3000")")},
       "line 1: 'operator' has only white space or invisible characters, such as U+00A0 (byte 1)"},
      {{with(R"("operator":"ana")", R"("operator":"\ufeff")")},
       "line 1: 'operator' has only white space or invisible characters, such as U+FEFF (byte 1)"},
      {{with(R"("operator":"ana")", R"("operator":"ana\u202e")")},
       "line 1: 'operator' contains the bidirectional control character U+202E (byte 4)"},
      {{with(R"("operator":"ana")", R"("operator":"a\u2067b")")},
       "line 1: 'operator' contains the bidirectional control character U+2067 (byte 2)"},
      {{with(R"("table_checksum":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")",
             R"("table_checksum":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")")},
       "line 1: 'table_checksum' is \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"; expected 32 hex "
       "digits"},
      {{with(R"("rule":"r")", R"("rule":"r","source":"-")")},
       "line 1: decision entry without 'record'"},
      {{kDecisionBody, R"("decision":1,"kind":"result","outcome":" ","revision":2,)"
                       R"("time":"2026-11-29T00:00:01Z")"},
       "line 2: 'outcome' is \" \"; expected a string that says what happened"},
  };
  for (const BadEntry& c : cases) {
    const audit::VerifyReport report = audit::verify_bytes(chained(c.bodies));
    EXPECT_EQ(report.problems, std::vector<std::string>{c.problem}) << c.bodies.back();
  }
  // A result's revision is a count too.
  const audit::VerifyReport report = audit::verify_bytes(
      chained({kDecisionBody, R"("decision":1,"kind":"result","outcome":"done","revision":-2,)"
                              R"("time":"2026-11-29T00:00:01Z")"}));
  EXPECT_EQ(report.problems,
            std::vector<std::string>{"line 2: 'revision' is -2; expected a whole number from 0 "
                                     "to 9223372036854775807"});

  // The CLI: each finding on its own line, exit 1.
  write_file(log(), chained({kDecisionBody, result_body(1), result_body(1),
                             with(R"("effect":"read")", R"("effect":"read","effect":"create")")}));
  const CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.substr(0, r.out.rfind(", last hash")),
            log() +
                ": line 3: a second result for decision 1 (its result is entry 2); a decision "
                "has one result\n" +
                log() + ": line 4: the field 'effect' is given twice\n" +
                refusal_line(log(), 2, 3) + log() + ": BROKEN, 3 entries (1 decision, 2 results)");
}

// A leap day, a valid seq/prev chain of what the library writes, and entries the writers write
// all verify.
TEST_F(AuditVerifyTest, WhatTheWritersWriteVerifies) {
  std::string leap = kDecisionBody;
  leap.replace(leap.find("2026-11-29"), 10, "2024-02-29");
  EXPECT_TRUE(audit::verify_bytes(chained({leap, result_body(1)})).ok());
  // decide --audit's entries (source, record, null ids and revision) and review --confirm's.
  const std::string letter =
      "{\"message_id\":\"m-001\",\"topic\":\"payment.capture\",\"error_class\":\"timeout\","
      "\"attempts\":1,\"idempotency_key\":\"cap_9f3a\",\"already_committed\":false}\n"
      "not json\n";
  CliResult r = run({"decide", "--policy", kGate, "--audit", log(), "--operator", "ana"}, letter);
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the second record is invalid, and recorded as such
  r = run({"review", "--policy", kRecovery, "--message", kExamples + "prepared.message.json",
           "--record", kExamples + "prepared.record.json", "--confirm", "--operator", "José",
           "--audit", log()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(result_for("3").exit_code, 0);
  r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(": ok, 4 entries (3 decisions, 1 result)"), std::string::npos) << r.out;
}

// A file name that is not UTF-8 is recorded with U+FFFD for its bad bytes, and the decisions are
// recorded before they are printed (the JSON writer used to throw after rendering them).
TEST_F(AuditVerifyTest, DecideAuditRecordsAFileNameThatIsNotUtf8) {
  const std::string letter =
      "{\"message_id\":\"m-001\",\"topic\":\"payment.capture\",\"error_class\":\"timeout\","
      "\"attempts\":1,\"idempotency_key\":\"cap_9f3a\",\"already_committed\":false}\n";
  const std::string name = (dir_ / "\xff.jsonl").string();
  write_file(name, letter);
  const CliResult r =
      run({"decide", "--policy", kGate, "--audit", log(), "--operator", "ana", name});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 1u);
  const audit::VerifyReport report = audit::verify_bytes(read_file(log()));
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.decisions, 1u);
  EXPECT_EQ(nlohmann::json::parse(read_file(log()))["source"],
            (dir_ / "\xef\xbf\xbd.jsonl").string());
}

// The writer refuses what verify would reject: a second result for one decision, and (a caller's
// bug) an invalid entry. Nothing is written then.
TEST_F(AuditVerifyTest, AppendsRefuseASecondResultAndInvalidEntries) {
  const std::string good = two_decisions();
  CliResult r = result_for("1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string one_result = read_file(log());
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: decision entry 1 in " + log() +
                       " already has its result (entry 3); a decision has one result\n"
                       "replaygate: the result was NOT recorded\n");
  EXPECT_EQ(read_file(log()), one_result);
  EXPECT_EQ(result_for("2").exit_code, 0);

  nlohmann::json bad = decision_entry("m");
  bad["effect"] = "explode";
  const audit::AppendResult refused = audit::append(log(), bad);
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.error, "refusing to append an invalid entry to " + log() +
                               " ('effect' is \"explode\"; expected none, read, copy or create)");
  // A last line the writers never write stops appends, naming the line and the field.
  write_file(log(), chained({kDecisionBody, kDecisionBody + ",\"x\":1"}));
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: " + refused_error(log(), "line 2: unknown field 'x' in a decision entry") +
                "\nreplaygate: the result was NOT recorded\n");
}

// ---- 4. --operator ----

// Who acted lands in the log and in plain-text output: control characters (C0, DEL, C1,
// U+2028/2029), invalid UTF-8 and an empty name are usage errors, and nothing is recorded.
TEST_F(AuditVerifyTest, OperatorMustBeOnePrintableLine) {
  const std::string rule =
      ": who acted is recorded in the audit log and must be printable text on one line (e.g. "
      "--operator ana)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "is empty"},
      {"  ", "is empty"},
      {"ana\nseq 9", "contains the control character U+000A (byte 4)"},
      {"a\x1b[31m", "contains the control character U+001B (byte 2)"},
      {"a\x7f", "contains the control character U+007F (byte 2)"},
      {"ab\xc2\x85", "contains the control character U+0085 (byte 3)"},
      {"a\xe2\x80\xa9", "contains the control character U+2029 (byte 2)"},
      {"a\xff", "is not valid UTF-8 (byte 2)"},
      {"\xc3", "is not valid UTF-8 (byte 1)"},
      // Names that look empty, or reorder the text shown after them.
      {"\xe2\x80\x8b", "has only white space or invisible characters, such as U+200B (byte 1)"},
      {" \xc2\xa0", "has only white space or invisible characters, such as U+00A0 (byte 2)"},
      {"\xef\xbb\xbf", "has only white space or invisible characters, such as U+FEFF (byte 1)"},
      {"\xe3\x80\x80", "has only white space or invisible characters, such as U+3000 (byte 1)"},
      {"\xe2\x81\xa0\xe2\x80\x8d",
       "has only white space or invisible characters, such as U+2060 (byte 1)"},
      {"\xf3\xa0\x80\x81",
       "has only white space or invisible characters, such as U+E0001 (byte 1)"},
      {"ana\xe2\x80\xaenimda", "contains the bidirectional control character U+202E (byte 4)"},
      {"\xe2\x80\x8e", "contains the bidirectional control character U+200E (byte 1)"},
      {"a\xe2\x80\x8f", "contains the bidirectional control character U+200F (byte 2)"},
      {"a\xe2\x80\xaa", "contains the bidirectional control character U+202A (byte 2)"},
      {"a\xe2\x81\xa6|", "contains the bidirectional control character U+2066 (byte 2)"},
      {"a\xe2\x81\xa9", "contains the bidirectional control character U+2069 (byte 2)"},
      {"a\xd8\x9c", "contains the bidirectional control character U+061C (byte 2)"},
  };
  for (const auto& [name, problem] : cases) {
    const CliResult r = run({"audit", "result", "--log", log(), "--decision", "1", "--revision",
                             "1", "--outcome", "done", "--operator", name});
    EXPECT_EQ(r.exit_code, 2) << problem;
    EXPECT_EQ(r.err, "replaygate: error: --operator " + problem + rule +
                         "\nRun 'replaygate audit result --help' for usage.\n");
  }
  for (const auto& [name, problem] : std::vector<std::pair<std::string, std::string>>{
           {"ana\nseq 9", "contains the control character U+000A (byte 4)"},
           {"a\xff", "is not valid UTF-8 (byte 2)"},
           {"", "is empty"},
           {"\xe2\x80\x8b",
            "has only white space or invisible characters, such as U+200B (byte 1)"},
           {"ana\xe2\x80\xae", "contains the bidirectional control character U+202E (byte 4)"}}) {
    CliResult r = run({"decide", "--policy", kGate, "--audit", log(), "--operator", name}, "");
    EXPECT_EQ(r.exit_code, 2);
    // "" is refused while parsing, with the same words (tools/cli/app.cc).
    EXPECT_EQ(r.err,
              std::string(name.empty() ? "replaygate: error: " : "replaygate decide: error: ") +
                  "--operator " + problem + rule + "\nRun 'replaygate decide --help' for usage.\n");
    r = run({"review", "--policy", kRecovery, "--message", kExamples + "prepared.message.json",
             "--record", kExamples + "prepared.record.json", "--confirm", "--operator", name,
             "--audit", log()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "replaygate: error: --operator " + problem + rule +
                         "\nRun 'replaygate review --help' for usage.\n");
  }
  EXPECT_FALSE(fs::exists(log()));
  // A name in any script is fine, and so are spaces and joiners between visible characters.
  two_decisions();
  CliResult r = run({"audit", "result", "--log", log(), "--decision", "1", "--revision", "1",
                     "--outcome", "done", "--operator", "Zoë 李"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run({"audit", "result", "--log", log(), "--decision", "2", "--revision", "1", "--outcome",
           "done", "--operator", "Ana\xc2\xa0Silva \xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(audit::verify_bytes(read_file(log())).ok());
}

// An empty --operator says so the same way in every command that takes one (it used to be "--audit
// needs --operator NAME" for decide and "give --audit FILE and --operator NAME" for review).
TEST_F(AuditVerifyTest, EmptyOperatorSaysEmptyEverywhere) {
  const std::string message =
      "--operator is empty: who acted is recorded in the audit log and must be printable text on "
      "one line (e.g. --operator ana)";
  CliResult r = run({"decide", "--policy", kGate, "--audit", log(), "--operator", ""}, "");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: " + message + "\nRun 'replaygate decide --help' for usage.\n");
  r = run({"review", "--policy", kRecovery, "--message", kExamples + "prepared.message.json",
           "--record", kExamples + "prepared.record.json", "--confirm", "--operator", "", "--audit",
           log()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "replaygate: error: " + message + "\nRun 'replaygate review --help' for usage.\n");
  r = run({"audit", "result", "--log", log(), "--decision", "1", "--revision", "1", "--outcome",
           "done", "--operator", ""});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: error: " + message +
                       "\nRun 'replaygate audit result --help' for usage.\n");
  // Not given at all is still the missing-option message.
  r = run({"decide", "--policy", kGate, "--audit", log()}, "");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate decide: error: --audit needs --operator NAME (who takes these decisions)"
            "\nRun 'replaygate decide --help' for usage.\n");
  EXPECT_FALSE(fs::exists(log()));
}

// ---- 5. unknown actions, unreadable logs ----

TEST_F(AuditVerifyTest, UnknownActionsAndUnreadableLogsSayWhy) {
  CliResult r = run({"audit", "bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(
      r.err,
      "replaygate: error: unknown audit action 'bogus'; the actions are: verify, result, repair\n"
      "Run 'replaygate audit --help' for usage.\n");
  r = run({"audit", "verfy", log()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err,
      "replaygate: error: unknown audit action 'verfy'; the actions are: verify, result, repair; "
      "did you mean 'verify'?\nRun 'replaygate audit --help' for usage.\n");
  r = run({"audit", "a\x1b]0;x\x07"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: unknown audit action 'a\\u001b]0;x\\u0007'; the actions are: "
            "verify, result, repair\nRun 'replaygate audit --help' for usage.\n");
  r = run({"audit"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: audit needs an action, one of: verify, result, repair\n"
            "Run 'replaygate audit --help' for usage.\n");
  EXPECT_EQ(run({"audit", "--help"}).exit_code, 0);

  r = run({"audit", "verify", dir_.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate: cannot read audit log " + dir_.string() + ": it is a directory\n");
  r = run({"audit", "verify", (dir_ / "missing.log").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: cannot read audit log " + (dir_ / "missing.log").string() +
                       ": No such file or directory\n");
}

// ---- 6. -o through a symbolic link ----

// Why check_output_file() refuses a link: write_file_atomically() follows a link to an existing
// file and replaces its target (a file the user did not name), and a dangling link would itself be
// replaced by a regular file. The CLI refuses both and changes nothing.
TEST_F(AuditVerifyTest, OutputThroughASymbolicLinkIsRefused) {
  write_file(dir_ / "target", "KEEP");
  fs::create_symlink(dir_ / "target", dir_ / "link.rgt");
  std::string error;
  ASSERT_TRUE(replaygate::cli::write_file_atomically((dir_ / "link.rgt").string(), "NEW", &error))
      << error;
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.rgt"));
  EXPECT_EQ(read_file(dir_ / "target"), "NEW");  // what the refusal protects

  fs::create_symlink(dir_ / "nowhere", dir_ / "dangling.rgt");
  const CliResult r = run({"compile", kGate, "-o", (dir_ / "dangling.rgt").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: error: refusing to write " + (dir_ / "dangling.rgt").string() +
                       ": it exists and is not a regular file (a directory, device or symbolic "
                       "link)\n");
  EXPECT_TRUE(fs::is_symlink(dir_ / "dangling.rgt"));
  EXPECT_FALSE(fs::exists(dir_ / "nowhere"));
}

// A value nested 100,000 levels deep in an entry (the hash chain intact) crashed every reader of
// the log (nlohmann's dump() recurses when the value is shown): it is now refused before parsing,
// like a letter nested deeper than 32 levels, and appends refuse the log with nothing written.
TEST_F(AuditVerifyTest, AnEntryNestedTooDeeplyIsAFindingNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string bytes = chained({kDecisionBody + ",\"deep\":" + deep});
  write_file(log(), bytes);
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find(": line 1: nested deeper than 32 levels (no entry is)\n"), std::string::npos)
      << r.out;
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = run({"decide", "--policy", kGate, "--audit", log(), "--operator", "ana"},
          "{\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":1,"
          "\"idempotency_key\":\"k\",\"already_committed\":false}\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");  // nothing printed that was not recorded
  EXPECT_EQ(read_file(log()), bytes);
}

// A result for a log that does not exist is refused without creating the log.
TEST_F(AuditVerifyTest, AResultForAMissingLogCreatesNothing) {
  const CliResult r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: the audit log " + log() +
                       " does not exist (a result goes into the log that holds its decision)\n"
                       "replaygate: the result was NOT recorded\n");
  EXPECT_FALSE(fs::exists(log()));
}

// A bad value is shown as JSON with everything past ASCII escaped once: an ESC or a right-to-left
// override in the log cannot drive the terminal, and a backslash is not doubled.
TEST_F(AuditVerifyTest, ABadValueIsShownEscapedOnce) {
  std::string body = kDecisionBody;
  body.replace(body.find("\"kind\":\"decision\""), 17, "\"kind\":\"x\\u001b\u202e\"");
  write_file(log(), chained({body}));
  const CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(": line 1: unknown kind \"x\\u001b\\u202e\"; expected \"decision\", "
                       "\"result\", \"repair\", \"ledger\", \"checkpoint\", \"plan\" or "
                       "\"console\"\n"),
            std::string::npos)
      << r.out;
}

// ---- 7. names, times and numbers as the writers write them ----

// The decision body with `from` replaced by `to` (which must occur once).
std::string decision_with(const std::string& from, const std::string& to) {
  std::string body = kDecisionBody;
  const size_t at = body.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? body : body.replace(at, from.size(), to);
}

// `action` is a verb name and `rule` a rule id in the policy's grammar (common/names.h): white
// space around them, or only white space, names nothing a policy has.
TEST_F(AuditVerifyTest, ActionAndRuleFollowThePolicyGrammar) {
  const std::string verb =
      "; expected a verb name (a letter or '_', then letters, digits, '_', '.' or '-', as in the "
      "policy)";
  const std::string rule =
      "; expected a rule id (one word: no spaces or control characters, as in the policy) or "
      "\"default\"";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("action":" ")", "line 1: 'action' is \" \"" + verb},
      {R"("action":"")", "line 1: 'action' is \"\"" + verb},
      {R"("action":" observe")", "line 1: 'action' is \" observe\"" + verb},
      {R"("action":"observe ")", "line 1: 'action' is \"observe \"" + verb},
      {R"("action":"\tobserve")", "line 1: 'action' is \"\\tobserve\"" + verb},
      {R"("action":"9lives")", "line 1: 'action' is \"9lives\"" + verb},
      {R"("action":"ob:serve")", "line 1: 'action' is \"ob:serve\"" + verb},
      {R"("action":1)", "line 1: 'action' is 1" + verb},
      {R"("rule":"default ")", "line 1: 'rule' is \"default \"" + rule},
      {R"("rule":" ")", "line 1: 'rule' is \" \"" + rule},
      {R"("rule":"")", "line 1: 'rule' is \"\"" + rule},
      {R"("rule":" r")", "line 1: 'rule' is \" r\"" + rule},
      {R"("rule":"a b")", "line 1: 'rule' is \"a b\"" + rule},
      {R"("rule":"r\u007f")", "line 1: 'rule' is \"r\\u007f\"" + rule},
      {R"("rule":null)", "line 1: 'rule' is null" + rule},
      {R"("policy":"")", "line 1: 'policy' is \"\"; expected a non-empty string"},
  };
  for (const auto& [field, problem] : cases) {
    const std::string key = field.substr(0, field.find(':') + 1);
    const size_t at = kDecisionBody.find(key);
    const size_t end = kDecisionBody.find(",\"", at + 1);
    const std::string body = decision_with(kDecisionBody.substr(at, end - at), field);
    EXPECT_EQ(audit::verify_bytes(chained({body})).problems, std::vector<std::string>{problem})
        << field;
  }
  // What the writers write: the policy's own names, a table row's derived id, decide's holds, the
  // default decision.
  for (const std::string& body :
       {decision_with(R"("rule":"r")", R"("rule":"pairs:pay/timeout")"),
        decision_with(R"("rule":"r")", R"("rule":"dump:maybe_duplicate")"),
        decision_with(R"("action":"observe","effect":"read")",
                      R"("action":"_x.y-z","effect":"none")"),
        decision_with(R"("effect":"read")", R"("effect":"none")")
            .replace(kDecisionBody.find(R"("rule":"r")"), 10, R"("rule":"default")")}) {
    const audit::VerifyReport report = audit::verify_bytes(chained({body}));
    EXPECT_TRUE(report.ok()) << body << "\n" << ::testing::PrintToString(report.problems);
  }
  // The CLI: the finding names the line and the field, exit 1.
  write_file(log(),
             chained({kDecisionBody, decision_with(R"("rule":"r")", R"("rule":"default ")")}));
  const CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.substr(0, r.out.find(", last hash")),
            log() + ": line 2: 'rule' is \"default \"" + rule + "\n" + refusal_line(log(), 1, 2) +
                log() + ": BROKEN, 1 entry (1 decision, 0 results)");
}

// `time` is exactly what utc_now() writes: a real UTC second from 1970 on, marked Z.
TEST_F(AuditVerifyTest, ImpossibleTimesAreFindings) {
  const std::string expected = "; expected a UTC time YYYY-MM-DDTHH:MM:SSZ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"0000-01-01T00:00:00Z", " (before 1970, which no writer's clock gives)"},
      {"1969-12-31T23:59:59Z", " (before 1970, which no writer's clock gives)"},
      {"2026-13-01T00:00:00Z", " (there is no month 13)"},
      {"2026-00-10T00:00:00Z", " (there is no month 00)"},
      {"2026-11-00T00:00:00Z", " (there is no day 00)"},
      {"2026-02-30T00:00:00Z", " (2026-02 has 28 days)"},
      {"2028-02-30T00:00:00Z", " (2028-02 has 29 days)"},
      {"2100-02-29T00:00:00Z", " (2100-02 has 28 days)"},
      {"2026-04-31T00:00:00Z", " (2026-04 has 30 days)"},
      {"2026-11-29T24:00:00Z", " (hours run from 00 to 23)"},
      {"2026-11-29T23:60:00Z", " (minutes run from 00 to 59)"},
      {"2026-12-31T23:59:60Z", " (seconds run from 00 to 59: no writer writes a leap second)"},
      {"2026-11-29T00:00:00+01:00", " (an offset from UTC, not Z)"},
      {"2026-11-29T00:00:00-0500", " (an offset from UTC, not Z)"},
      {"2026-11-29T00:00:00+00:00", " (an offset from UTC, not Z)"},
      {"2026-11-29T00:00:00z", ""},
      {"2026-11-29T00:00:00.5Z", ""},
      {"2026-11-29T00:00:00", ""},
      {"2026-11-29T00:00:00ZZ", ""},
      {"+2026-11-29T00:00:00Z", ""},
      {"２026-11-29T00:00:00Z", ""},
  };
  for (const auto& [time, why] : cases) {
    const std::string body =
        decision_with(R"("time":"2026-11-29T00:00:00Z")", "\"time\":\"" + time + "\"");
    const std::string shown = time.find('\xef') == std::string::npos
                                  ? "\"" + time + "\""
                                  : "\"\\uff12026-11-29T00:00:00Z\"";
    EXPECT_EQ(audit::verify_bytes(chained({body})).problems,
              std::vector<std::string>{"line 1: 'time' is " + shown + why + expected})
        << time;
  }
  for (const char* time :
       {"1970-01-01T00:00:00Z", "2000-02-29T23:59:59Z", "9999-12-31T23:59:59Z"}) {
    const std::string body =
        decision_with(R"("time":"2026-11-29T00:00:00Z")", std::string("\"time\":\"") + time + "\"");
    EXPECT_TRUE(audit::verify_bytes(chained({body})).ok()) << time;
  }
  write_file(log(), chained({decision_with("2026-11-29T00:00:00Z", "0000-01-01T00:00:00Z")}));
  const CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.out).at(0),
            log() +
                ": line 1: 'time' is \"0000-01-01T00:00:00Z\" (before 1970, which no "
                "writer's clock gives)" +
                expected);
}

// Entries are appended in time order: a later line with an earlier time was moved or edited. The
// writers keep that true when the clock is set back (the entry gets the time before it).
TEST_F(AuditVerifyTest, TimeThatRunsBackwardsIsAFinding) {
  const std::string later = decision_with("2026-11-29T00:00:00Z", "2026-11-29T00:00:05Z");
  // Equal times (one second, several entries) are fine.
  EXPECT_TRUE(audit::verify_bytes(chained({kDecisionBody, kDecisionBody})).ok());
  const std::string broken = chained({later, kDecisionBody, result_body(1)});
  EXPECT_EQ(audit::verify_bytes(broken).problems,
            std::vector<std::string>{
                "line 2: 'time' is \"2026-11-29T00:00:00Z\", earlier than "
                "\"2026-11-29T00:00:05Z\" on line 1; expected no earlier than the entry before "
                "(entries are appended in time order: a line was moved or edited)"});
  // An empty line between them does not hide it (it is a problem of its own).
  std::string with_gap = chained({later, kDecisionBody});
  with_gap.insert(with_gap.find('\n') + 1, "\n");
  EXPECT_EQ(audit::verify_bytes(with_gap).problems.size(), 2u);
  EXPECT_NE(audit::verify_bytes(with_gap).problems.at(1).find("line 3: 'time' is "),
            std::string::npos);
  write_file(log(), broken);
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.out).at(0),
            log() +
                ": line 2: 'time' is \"2026-11-29T00:00:00Z\", earlier than "
                "\"2026-11-29T00:00:05Z\" on line 1; expected no earlier than the entry "
                "before (entries are appended in time order: a line was moved or edited)");

  // A writer whose clock reads earlier than the last entry records the last entry's time.
  write_file(log(), chained({decision_with("2026-11-29T00:00:00Z", "2999-01-01T00:00:00Z")}));
  r = result_for("1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json early = decision_entry("m2");
  early["time"] = "1999-01-01T00:00:00Z";
  ASSERT_TRUE(audit::append(log(), early).ok);
  const std::vector<std::string> lines = lines_of(read_file(log()));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(lines[1])["time"], "2999-01-01T00:00:00Z");
  EXPECT_EQ(nlohmann::json::parse(lines[2])["time"], "2999-01-01T00:00:00Z");
  r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// A number is shown as written: nlohmann reads a whole number past 64 bits as a double, which it
// prints as 1e+20.
TEST_F(AuditVerifyTest, ABigNumberIsShownAsWritten) {
  const std::string range = "; expected a whole number from 0 to 9223372036854775807";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("policy_revision":100000000000000000000)",
       "line 1: 'policy_revision' is 100000000000000000000" + range},
      {R"("policy_revision":-100000000000000000000)",
       "line 1: 'policy_revision' is -100000000000000000000" + range},
      {R"("policy_revision":123456789012345678901234567890)",
       "line 1: 'policy_revision' is 123456789012345678901234567890" + range},
      {R"("policy_revision":1E+20)", "line 1: 'policy_revision' is 1E+20" + range},
      {R"("policy_revision" :  100000000000000000000 )",
       "line 1: 'policy_revision' is 100000000000000000000" + range},
      {R"("policy_revision":[100000000000000000000, 1])",
       "line 1: 'policy_revision' is [100000000000000000000, 1]" + range},
      {R"("record_revision":{"a":100000000000000000000})",
       "line 1: 'record_revision' is {\"a\":100000000000000000000}; expected an integer, a "
       "string or null"},
      {R"("record_revision":100000000000000000000.5)",
       "line 1: 'record_revision' is 100000000000000000000.5; expected an integer, a string or "
       "null"},
  };
  for (const auto& [field, problem] : cases) {
    const std::string key = field.substr(0, field.find('"', 1) + 1);
    const size_t at = kDecisionBody.find(key + ":");
    const size_t end = kDecisionBody.find(",\"", at + 1);
    const std::string body = decision_with(kDecisionBody.substr(at, end - at), field);
    EXPECT_EQ(audit::verify_bytes(chained({body})).problems, std::vector<std::string>{problem})
        << field;
  }
  // A key spelled with an escape is found by what it spells; the seq and a result's numbers too.
  EXPECT_EQ(audit::verify_bytes(chained({decision_with(R"("policy_revision":1)",
                                                       R"("policy_revisio\u006e":1e20)")}))
                .problems,
            std::vector<std::string>{"line 1: 'policy_revision' is 1e20" + range});
  EXPECT_EQ(audit::verify_bytes("{\"seq\":100000000000000000000}\n").problems,
            std::vector<std::string>{
                "line 1: 'seq' is 100000000000000000000; expected a whole number from 1"});
  EXPECT_EQ(
      audit::verify_bytes(chained({kDecisionBody, R"("decision":100000000000000000000,)"
                                                  R"("kind":"result","outcome":"done",)"
                                                  R"("revision":2,"time":"2026-11-29T00:00:01Z")"}))
          .problems,
      std::vector<std::string>{"line 2: result entry's 'decision' is 100000000000000000000; "
                               "expected the seq of a decision entry"});
  // A value that is not printable ASCII as written is shown escaped, as before.
  EXPECT_EQ(audit::verify_bytes(chained({decision_with(R"("policy_revision":1)",
                                                       "\"policy_revision\":\"\xe2\x80\xae\"")}))
                .problems,
            std::vector<std::string>{"line 1: 'policy_revision' is \"\\u202e\"" + range});

  write_file(log(), chained({decision_with(R"("policy_revision":1)",
                                           R"("policy_revision":100000000000000000000)")}));
  const CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.out).at(0),
            log() + ": line 1: 'policy_revision' is 100000000000000000000" + range);
}

// ---- 8. what verify says an append will do ----

// An unterminated last line that continues the chain but is not a valid entry: verify used to say
// it "is kept" while every append refuses the log. It now says what the append does, and the
// append says the same.
TEST_F(AuditVerifyTest, VerifySaysWhatAnAppendDoesWithABrokenUnterminatedLine) {
  const std::string good = two_decisions();
  // A third entry chained onto the library's two, with a field no writer writes, and no newline.
  const std::string line3 =
      "{\"seq\":3,\"prev\":\"" + last_hash_of(good) + "\"," + kDecisionBody + ",\"x\":1}";
  const std::string broken = good + line3;
  write_file(log(), broken);
  const audit::VerifyReport report = audit::verify_bytes(broken);
  EXPECT_TRUE(report.unterminated);
  EXPECT_FALSE(report.torn_tail);
  const std::string refusal =
      "it does not verify (2 problems, the first on line 3, above) and its " +
      unterminated_fix("LOG", 3);
  EXPECT_EQ(report.append_refusal, refusal);
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, log() + ": line 3: unknown field 'x' in a decision entry\n" + log() + ": " +
                       no_newline(3) + "\n" + log() +
                       ": the last line has no newline and is not a torn line (above): nothing "
                       "removes it, and neither an append nor 'audit repair' continues the log "
                       "after it\n" +
                       log() +
                       ": the next append (audit result, review --confirm, decide --audit) will "
                       "refuse this log and write nothing: " +
                       refusal + "\n" + log() +
                       ": BROKEN, 2 entries (2 decisions, 0 results), last hash " +
                       audit::line_hash(line3) + "\n");
  r = run({"audit", "verify", "--format", "json", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(r.out)["appendable"], false);
  EXPECT_EQ(nlohmann::json::parse(r.out)["append_refusal"], refusal);
  EXPECT_EQ(nlohmann::json::parse(r.out)["unterminated"], true);
  // The append does what verify said: refuses, exit 2, nothing written.
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: refusing to append to " + log() +
                       ", which does not verify: line 3: unknown field 'x' in a decision entry "
                       "(and 1 more problem: run 'replaygate audit verify " +
                       log() + "' to see them all); nothing was changed. Its " +
                       unterminated_fix(log(), 3) + "\nreplaygate: the result was NOT recorded\n");
  EXPECT_EQ(read_file(log()), broken);
  // Deleting the line (the repair verify names) lets appends continue.
  write_file(log(), good);
  EXPECT_EQ(result_for("1").exit_code, 0);

  // A valid entry without its newline is a whole object, not a torn line: BROKEN, kept, and
  // appends refuse the log until it ends with a newline.
  const std::string three = read_file(log());
  write_file(log(), three.substr(0, three.size() - 1));
  r = run({"audit", "verify", "--format", "json", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(r.out)["appendable"], false);
  EXPECT_EQ(nlohmann::json::parse(r.out)["problems"], nlohmann::json::array({no_newline(3)}));
  EXPECT_EQ(result_for("2").exit_code, 2);
  EXPECT_EQ(read_file(log()), three.substr(0, three.size() - 1));
  write_file(log(), three);
  EXPECT_EQ(result_for("2").exit_code, 0);
}

// The other refusals verify foresees: an empty line before an unterminated entry, a last line
// that is not a valid entry, and (since appends continue only a log that verifies) a broken line
// anywhere.
TEST_F(AuditVerifyTest, VerifySaysWhenAnAppendRefusesTheLog) {
  const std::string good = two_decisions();
  const size_t second = good.find('\n') + 1;
  write_file(log(),
             good.substr(0, second) + "\n \n" + good.substr(second, good.size() - second - 1));
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(log() +
                       ": the next append (audit result, review --confirm, decide --audit) will "
                       "refuse this log and write nothing: it does not verify (3 problems, the "
                       "first on line 2, above) and its " +
                       unterminated_fix("LOG", 4) + "\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(result_for("1").exit_code, 2);

  write_file(log(), good + "garbage\n");
  r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, log() + ": line 3: not valid JSON\n" + refusal_line(log(), 1, 3) + log() +
                       ": BROKEN, 2 entries (2 decisions, 0 results), last hash " +
                       audit::line_hash("garbage") + "\n");
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: " + refused_error(log(), "line 3: not valid JSON") +
                       "\nreplaygate: the result was NOT recorded\n");
  // A torn tail after it stays until the log is repaired: the refused append touches nothing.
  write_file(log(), good + "garbage\n{\"action");
  r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.out).at(1),
            log() +
                ": torn last line (8 bytes without a newline): an append that crashed before "
                "completing; it was never acknowledged, and the first append after the repair "
                "below removes it (and shows its bytes)");
  EXPECT_EQ(result_for("1").exit_code, 2);
  EXPECT_EQ(read_file(log()), good + "garbage\n{\"action");
  // A broken line before a valid last one stops appends too (they used to continue the chain
  // from the last line, onto a log verify calls BROKEN), and verify says so.
  write_file(log(), "garbage\n" + good);
  EXPECT_EQ(audit::verify_bytes(read_file(log())).append_refusal, refusal_note(4, 1));
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: " + refused_error(log(), "line 1: not valid JSON", 3) +
                       "\nreplaygate: the result was NOT recorded\n");
  EXPECT_EQ(read_file(log()), "garbage\n" + good);
}

// ---- 9. verify reads standard input ----

TEST_F(AuditVerifyTest, VerifyReadsStandardInput) {
  const std::string good = two_decisions();
  CliResult r = run({"audit", "verify", "-"}, good);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "standard input: ok, 2 entries (2 decisions, 0 results), last hash " +
                       last_hash_of(good) + "\n");
  r = run({"audit", "verify", "--format", "json", "-"}, good + "{\"action");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["torn_bytes"], 8);
  r = run({"audit", "verify", "-"}, "garbage\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.out).at(0), "standard input: line 1: not valid JSON");
  r = run({"audit", "verify", "-"}, "");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "standard input: ok, 0 entries (0 decisions, 0 results), last hash " +
                       std::string(32, '0') + "\n");
  // Through a pipe, as `ssh host cat audit.log | replaygate audit verify -` would.
  CliRun piped;
  piped.args = {"audit", "verify", "-"};
  piped.stdin_command = "cat " + shell_quote(log());
  r = run_cli(dir_, piped);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("standard input: ok, 2 entries", 0), 0u) << r.out;
  // A directory on standard input cannot be read.
  const int code = run_shell(
      shell_quote(kCliBinary) + " audit verify - <" + shell_quote(dir_.string()) + " >" +
      shell_quote((dir_ / "out").string()) + " 2>" + shell_quote((dir_ / "err").string()));
  EXPECT_EQ(code, 2);
  EXPECT_EQ(read_file(dir_ / "err"),
            "replaygate: cannot read the audit log from standard input: it is a directory\n");
  // The help says so.
  r = run({"audit", "verify", "--help"});
  EXPECT_NE(r.out.find("Audit log, or - for standard input"), std::string::npos) << r.out;
}

// Appends need the log file itself (a lock, a whole read, an append at its end): "-" is refused
// by every writer, exit 2, and no file called "-" is created.
TEST_F(AuditVerifyTest, AppendsRefuseStandardInputAndOutput) {
  const std::string why =
      "the audit log cannot be '-' (standard input or output): an append locks the log file, "
      "reads it and appends to it; name the file (./- for a file called '-')";
  const auto in_dir = [this](std::vector<std::string> args, const std::string& input) {
    CliRun how;
    how.args = std::move(args);
    how.cwd = dir_.string();
    how.stdin_text = input;
    return run_cli(dir_, how);
  };
  CliResult r = in_dir(
      {"audit", "result", "--log", "-", "--decision", "1", "--revision", "2", "--outcome", "done"},
      "");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate: " + why + "\nreplaygate: the result was NOT recorded\n");
  r = in_dir({"decide", "--policy", kGate, "--audit", "-", "--operator", "ana"},
             "{\"message_id\":\"m-001\",\"topic\":\"payment.capture\",\"error_class\":"
             "\"timeout\",\"attempts\":1,\"idempotency_key\":\"cap_9f3a\","
             "\"already_committed\":false}\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  r = in_dir({"review", "--policy", kRecovery, "--message", kExamples + "prepared.message.json",
              "--record", kExamples + "prepared.record.json", "--confirm", "--operator", "ana",
              "--audit", "-"},
             "");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "-"));
  // A file called "-" is named ./-.
  r = in_dir({"review", "--policy", kRecovery, "--message", kExamples + "prepared.message.json",
              "--record", kExamples + "prepared.record.json", "--confirm", "--operator", "ana",
              "--audit", "./-"},
             "");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(audit::verify_bytes(read_file(dir_ / "-")).ok());
}

// ---- 10. counts ----

TEST_F(AuditVerifyTest, OneByteIsOneByte) {
  const std::string good = two_decisions();
  write_file(log(), good + "{");
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(lines_of(r.out).at(0),
            log() +
                ": torn last line (1 byte without a newline): an append that crashed before "
                "completing; it was never acknowledged, and the next append removes it (and "
                "shows its bytes)");
  r = result_for("1");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "replaygate: warning: removed a torn last line from " + log() +
                       " (1 byte without a newline that is not a whole entry: an append that "
                       "crashed before completing, never acknowledged): '{'\n");
}

}  // namespace
