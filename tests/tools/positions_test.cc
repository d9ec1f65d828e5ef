// End-to-end tests of where a problem in a letter, a message or a case file is: decide's
// "column" for an unreadable record (letters and kafka), explain's and review's FILE:LINE:COLUMN,
// review naming a byte-order mark as decide does, and case-file diagnostics for ints YAML reads
// as other numbers (RG109) and for a value given to a derived input (RG407). Exact texts and exit
// codes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const char kGate[] = "policies/replay_gate.yaml";
const char kRecovery[] = "policies/generation_recovery.yaml";

class PositionsTest : public CliFixture {
 protected:
  PositionsTest() : CliFixture(kSourceDir) {}
};

// What one unreadable record's output line must say: its reason and its column (nullopt: none).
struct Expected {
  std::string line;  // the input line, without its '\n'
  std::string reason;
  std::optional<int> column;
};

// The input lines of `cases`, each followed by '\n'.
std::string input_of(const std::vector<Expected>& cases) {
  std::string input;
  for (const Expected& c : cases) input += c.line + "\n";
  return input;
}

// Checks decide's output `r` for `cases`: per line its reason, the default verb, "invalid": true
// and the column (present and equal, or absent). Exit 1.
void expect_columns(const CliResult& r, const std::vector<Expected>& cases) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), cases.size()) << r.out << r.err;
  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json out = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(out.at("n"), i + 1) << lines[i];
    EXPECT_EQ(out.at("reason"), cases[i].reason) << lines[i];
    EXPECT_EQ(out.at("verb"), "hold") << lines[i];
    EXPECT_EQ(out.at("invalid"), true) << lines[i];
    if (cases[i].column.has_value()) {
      EXPECT_EQ(out.value("column", -1), *cases[i].column) << cases[i].line << "\n" << lines[i];
    } else {
      EXPECT_FALSE(out.contains("column")) << lines[i];
    }
  }
}

}  // namespace

// Each problem with one place gives its 1-based byte column in the line ("n" is the line): the
// key (unknown, duplicate), the value (out of range, metadata of the wrong type, malformed), the
// first non-blank byte of a non-object, the bracket one level too deep, the first trailing byte,
// the first byte that is not UTF-8, the byte-order mark, the point where a strict parser stops
// (the line's length + 1 when it is cut off). No column without one place: a blank line. An
// invalid input's column is its value's (invalid_input_test.cc has the rest).
TEST_F(PositionsTest, DecideLettersGiveTheColumn) {
  const std::string deep = "{\"topic\":" + std::string(32, '[') + std::string(32, ']') + "}";
  const std::vector<Expected> cases = {
      {R"({"topic":"payment.capture","attemps":1})",
       "invalid record: unknown key 'attemps' (did you mean 'attempts'?)", 28},
      {R"({"attempts":1,"attempts":2})", "invalid record: duplicate key 'attempts'", 15},
      {R"({"topic":"payment.capture", "attempts" : 1e400})",
       "invalid record: number out of range for 'attempts': 1e400", 42},
      {R"({"message_id":7,"topic":"x"})", "invalid record: message_id must be a string", 15},
      {R"({"topic":"payment.capture",})",
       "invalid record: bad JSON (The JSON document has an improper structure: missing or "
       "superfluous commas, braces, missing keys, etc.)",
       28},
      {R"([1,2])", "invalid record: not a JSON object", 1},
      {R"(  "text")", "invalid record: not a JSON object", 3},
      {R"({"topic":"a"} x)", "invalid record: trailing content after the JSON object", 15},
      {deep, "invalid record: nesting deeper than 32 levels", 41},
      {"{\"topic\":\"caf\xE9\"}", "invalid record: not valid UTF-8", 14},
      {"\xEF\xBB\xBF{\"topic\":\"x\"}",
       "invalid record: starts with a UTF-8 byte-order mark (remove it)", 1},
      {R"({"topic":"payment.capture")",
       "invalid record: bad JSON (JSON document ended early in the middle of an object or array.)",
       27},
      {"   ", "invalid record: blank line", std::nullopt},
      {R"({"topic":"payment.capture","attempts":"1","error_class":"timeout",)"
       R"("idempotency_key":"k","already_committed":false})",
       "invalid input: attempts", 39},
  };
  expect_columns(run({"decide", "--policy", kGate}, input_of(cases)), cases);
}

// The whole line for one case, so the field's place is fixed: after "invalid": true, last.
TEST_F(PositionsTest, DecideColumnIsTheLastField) {
  const CliResult r = run({"decide", "--policy", kGate}, R"({"attempts":1,"attempts":2})"
                                                         "\n");
  EXPECT_EQ(r.exit_code, 1);
  const size_t at = r.out.find("\"table\":\"");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_EQ(r.out,
            "{\"n\":1,\"verb\":\"hold\",\"effect\":\"none\",\"action\":\"nothing\",\"rule\":"
            "\"default\",\"reason\":\"invalid record: duplicate key 'attempts'\",\"policy\":"
            "\"dlq-replay-gate\",\"revision\":1,\"table\":\"" +
                r.out.substr(at + 9, 32) + "\",\"invalid\":true,\"column\":15}\n");
}

// kcat -J lines: the same places for what the line reader refuses (a key kcat does not print, a
// key twice, a value of the wrong type, a byte-order mark, bad JSON); a key after a byte that is
// not UTF-8 (read from a repaired copy, 2 bytes longer per bad byte) is placed in the line as
// given. A mapped value's problem has no column: the reason names the field and the source.
TEST_F(PositionsTest, DecideKafkaGivesTheColumn) {
  const std::vector<Expected> cases = {
      {R"({"topic":"t","partitoin":0})",
       "invalid record: unknown key 'partitoin' in a kcat -J record (did you mean 'partition'?)",
       14},
      {R"({"topic":"t","topic":"u"})", "invalid record: duplicate key 'topic'", 14},
      {R"({"topic":"t","partition": "0"})", "invalid record: partition must be an integer", 27},
      {"{\"topic\":\"t\xFF\xFE\",\"topic\":\"u\"}", "invalid record: duplicate key 'topic'", 16},
      {"\xEF\xBB\xBF{\"topic\":\"t\"}",
       "invalid record: starts with a UTF-8 byte-order mark (remove it)", 1},
      {R"({"topic":"t",)",
       "invalid record: bad JSON (JSON document ended early in the middle of an object or array.)",
       14},
      {R"({"topic":"payment.capture.DLT","partition":0,"offset":1,"headers":[)"
       R"("kafka_dlt-original-topic","payment.capture","kafka_dlt-exception-cause-fqcn",)"
       R"("java.net.SocketTimeoutException"],"key":"k","payload":"{"})",
       "invalid input: attempts (the payload is not JSON)", std::nullopt},
  };
  expect_columns(run({"decide", "--policy", kGate, "--format", "kafka", "--mapping",
                      "examples/kafka-spring-dlt.mapping.yaml"},
                     input_of(cases)),
                 cases);
}

// explain reads one letter, which may span lines: FILE:LINE:COLUMN, as the compiler's diagnostics.
TEST_F(PositionsTest, ExplainGivesLineAndColumn) {
  const std::string letter = (dir_ / "letter.json").string();
  write_file(letter,
             "{\n"
             "  \"topic\": \"payment.capture\",\n"
             "  \"attempts\": 1,\n"
             "  \"atempts\": 2\n"
             "}\n");
  CliResult r = run({"explain", "--policy", kGate, letter});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate explain: " + letter +
                       ":4:3: unreadable letter: invalid record: unknown key 'atempts' (did you "
                       "mean 'attempts'?)\n");
  // Cut off at the end: the position is just after the last byte.
  r = run({"explain", "--policy", kGate}, "{\"topic\":\n\"payment.capture\"\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "replaygate explain: <stdin>:2:18: unreadable letter: invalid record: bad JSON (JSON "
            "document ended early in the middle of an object or array.)\n");
  // A blank letter has no one place.
  r = run({"explain", "--policy", kGate}, " \n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate explain: <stdin>: unreadable letter: invalid record: blank line\n");
}

// review: a byte-order mark is named as decide names it (nlohmann would skip it silently), and
// every problem with one place is FILE:LINE:COLUMN. Nothing decided: exit 1, nothing on stdout.
TEST_F(PositionsTest, ReviewNamesAByteOrderMarkAndGivesPositions) {
  const std::string message = (dir_ / "message.json").string();
  const std::string record = (dir_ / "record.json").string();
  write_file(record, "{\"operation_id\": \"op-1\", \"phase\": \"accepted\", \"revision\": 2}\n");
  const std::string valid = "{\"operation_id\": \"op-1\", \"revision\": 1}\n";
  const struct {
    std::string text, problem;
  } cases[] = {
      {"\xEF\xBB\xBF" + valid, ":1:1: starts with a UTF-8 byte-order mark (remove it)"},
      {"{\n  \"operation_id\": \"op-1\",\n  \"revision\": 1,\n}\n",
       ":4:1: bad JSON (syntax error while parsing object key - unexpected '}'; expected string "
       "literal)"},
      {"{\"operation_id\": \"op-1\",\n \"revision\": 1e400}\n",
       ":2:14: number out of range for 'revision'"},
      {"{\"operation_id\": \"op-1\",\n \"note\": \"caf\xE9\"}\n", ":2:14: not valid UTF-8"},
      {"{\"operation_id\": \"op-1\"} []\n", ":1:26: trailing content after the JSON object"},
      {std::string(40, '[') + std::string(40, ']'), ":1:33: nesting deeper than 32 levels"},
      {"\n  [1, 2]\n", ":2:3: not a JSON object"},
      {" \n", ": empty, not a JSON object"},
  };
  for (const auto& c : cases) {
    write_file(message, c.text);
    const CliResult r =
        run({"review", "--policy", kRecovery, "--message", message, "--record", record});
    EXPECT_EQ(r.exit_code, 1) << c.text;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "replaygate: invalid message: " + message + c.problem + "\n");
  }
  // The operation record is read the same way.
  write_file(message, valid);
  write_file(record, "\xEF\xBB\xBF{\"operation_id\": \"op-1\", \"revision\": 2}\n");
  const CliResult r =
      run({"review", "--policy", kRecovery, "--message", message, "--record", record});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate: invalid operation record: " + record +
                       ":1:1: starts with a UTF-8 byte-order mark (remove it)\n");
}

// A field-level problem found after parsing points at the value (an identifying field of the
// wrong type; a key in an array's object is not the member of that name) or at the key given
// the second time (compared unescaped), found again in the file's text.
TEST_F(PositionsTest, ReviewPointsAtTheValueOrTheRepeatedKey) {
  const std::string message = (dir_ / "message.json").string();
  const std::string record = (dir_ / "record.json").string();
  write_file(record, "{\"operation_id\": \"op-1\", \"phase\": \"accepted\", \"revision\": 2}\n");
  write_file(message,
             "{\n"
             "  \"message_id\": \"m1\",\n"
             "  \"items\": [{\"error\": 1}],\n"
             "  \"error\": {\n"
             "    \"code\": 1,\n"
             "    \"job_id\": [\"j\"]\n"
             "  }\n"
             "}\n");
  CliResult r = run({"review", "--policy", kRecovery, "--message", message, "--record", record});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate: invalid message: " + message +
                       ":6:15: 'error.job_id' is an array; an identifying field must be a string "
                       "or an integer (nothing decided, nothing recorded)\n");
  write_file(message, "{\"operation_id\": \"op-1\", \"revision\": 1}\n");
  write_file(record, "{\"phase\": \"accepted\",\n \"ph\\u0061se\": \"delivered\"}\n");
  r = run({"review", "--policy", kRecovery, "--message", message, "--record", record});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate: invalid operation record: " + record +
                       ":2:2: has the key 'phase' twice\n");
}

// A plain case-input value YAML reads as a number other than a decimal int is RG109, as a leading
// zero already was: the message names the form, the hint gives the decimal int (when there is
// one) or says to quote it for a string. Each case puts its value at line 3 + 3i, column 23.
TEST_F(PositionsTest, TestRefusesIntsWrittenInOtherForms) {
  const struct {
    std::string value, message, hint;
  } forms[] = {
      {"+1", "'+1' has a plus sign", "write 1, not +1 (or quote it for a string: '+1')"},
      {"+007", "'+007' has a leading zero", "write 7, not +007 (or quote it for a string: '+007')"},
      {"0x1F", "'0x1F' is hexadecimal", "write 31, not 0x1F (or quote it for a string: '0x1F')"},
      {"-0x10", "'-0x10' is hexadecimal",
       "write -16, not -0x10 (or quote it for a string: '-0x10')"},
      {"0x8000000000000000", "'0x8000000000000000' is hexadecimal",
       "write the value as a decimal int (or quote it for a string: '0x8000000000000000')"},
      {"0o17", "'0o17' is octal", "write 15, not 0o17 (or quote it for a string: '0o17')"},
      {"0b101", "'0b101' is binary", "write 5, not 0b101 (or quote it for a string: '0b101')"},
      {"1_000", "'1_000' has digit separators ('_')",
       "write 1000, not 1_000 (or quote it for a string: '1_000')"},
      {"1e3", "'1e3' is a float", "write 1000, not 1e3 (or quote it for a string: '1e3')"},
      {"1.0", "'1.0' is a float", "write 1, not 1.0 (or quote it for a string: '1.0')"},
      {"-2.", "'-2.' is a float", "write -2, not -2. (or quote it for a string: '-2.')"},
      {".5", "'.5' is a float",
       "inputs have no floats: write a whole number (or quote it for a string: '.5')"},
      {"-1.5e-3", "'-1.5e-3' is a float",
       "inputs have no floats: write a whole number (or quote it for a string: '-1.5e-3')"},
      {".inf", "'.inf' is a float", "inputs have no floats: quote it for a string: '.inf'"},
      {"-.INF", "'-.INF' is a float", "inputs have no floats: quote it for a string: '-.INF'"},
      {".NaN", "'.NaN' is a float", "inputs have no floats: quote it for a string: '.NaN'"},
  };
  std::string text = "cases:\n";
  nlohmann::json expected = nlohmann::json::array();
  const std::string cases = (dir_ / "cases.yaml").string();
  int line = 3;
  for (const auto& f : forms) {
    text += "  - name: " + f.value + "\n    input: {attempts: " + f.value + "}\n    expect: hold\n";
    expected.push_back({{"severity", "error"},
                        {"code", "RG109"},
                        {"message", f.message},
                        {"path", cases},
                        {"line", line},
                        {"column", 23},
                        {"hint", f.hint}});
    line += 3;
  }
  write_file(cases, text);
  const CliResult r = run({"test", kGate, cases, "--format", "json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, cases + ": errors found; its cases were not run\n");
  EXPECT_EQ(nlohmann::json::parse(r.out).at("diagnostics"), expected) << r.out;
}

// For a string or enum input a plain scalar is its text, as in a policy row: `topic: 007` is
// "007" and `error_class: 1e3` is "1e3", not numbers (no RG109); an int input keeps RG109. A
// plain true or false there is RG108, which says how to write either meaning; {json: VALUE}
// (a value typed as a JSON letter) keeps the policy's rule for int text.
TEST_F(PositionsTest, TestReadsPlainScalarsForStringInputsAsText) {
  const std::string cases = (dir_ / "cases.yaml").string();
  write_file(cases,
             "cases:\n  - name: a\n    input: {topic: 007, error_class: 1e3, attempts: 01}\n"
             "    expect: hold\n"
             "  - name: b\n    input: {topic: true, error_class: {json: 007}}\n"
             "    expect: hold\n"
             "  - name: c\n    input: {topic: {json: 1, raw: 2}}\n    expect: hold\n");
  const CliResult r = run({"test", kGate, cases, "--format", "json"});
  EXPECT_EQ(r.exit_code, 1);
  const nlohmann::json expected = {
      {{"severity", "error"},
       {"code", "RG109"},
       {"message", "'01' has a leading zero"},
       {"path", cases},
       {"line", 3},
       {"column", 53},
       {"hint", "write 1, not 01 (or quote it for a string: '01')"}},
      {{"severity", "error"},
       {"code", "RG108"},
       {"message", "true is a boolean, but 'topic' is a string input"},
       {"path", cases},
       {"line", 6},
       {"column", 20},
       {"hint",
        "quote it for the text, 'true', or write {json: true} to test a boolean where a string "
        "belongs"}},
      {{"severity", "error"},
       {"code", "RG109"},
       {"message", "'007' has a leading zero"},
       {"path", cases},
       {"line", 6},
       {"column", 46},
       {"hint", "write 7, not 007 (or quote it for a string: '007')"}},
      {{"severity", "error"},
       {"code", "RG401"},
       {"message", "unknown key 'raw' in {json: VALUE}"},
       {"path", cases},
       {"line", 9},
       {"column", 30},
       {"hint", "{json: VALUE} takes the one key json"}},
  };
  EXPECT_EQ(nlohmann::json::parse(r.out).at("diagnostics"), expected) << r.out;
}

// A case input is read by the input's declared type, as a row is: a plain 429 for the string
// input error_class is the text "429" (it was the int 429, an invalid input), and {json: 429} is
// the int, to test a wrongly typed value. The same for a plain word for an enum-like string.
TEST_F(PositionsTest, TestTypesCaseValuesByTheInputAsRowsDo) {
  const std::string policy = (dir_ / "gate.yaml").string();
  write_file(policy,
             "policy: codes\nrevision: 1\ninputs:\n  error_class: {type: string}\n"
             "  attempts: {type: int}\n"
             "verbs:\n  hold: {effect: none}\n  replay_once: {effect: create}\ndefault: hold\n"
             "default_reason: no rule matches\nrules:\n  - table: codes\n"
             "    keys: [error_class]\n    rows:\n"
             "      - {keys: [429], verb: replay_once, reason: rate limited}\n");
  const std::string cases = (dir_ / "gate.test.yaml").string();
  write_file(cases,
             "cases:\n"
             "  - name: plain 429 is the text\n    input: {error_class: 429, attempts: 1}\n"
             "    expect: replay_once\n    rule: codes:429\n"
             "  - name: quoted 429 is the text too\n    input: {error_class: '429', attempts: 1}\n"
             "    expect: replay_once\n"
             "  - name: the int 429 is invalid\n"
             "    input: {error_class: {json: 429}, attempts: 1}\n"
             "    expect: hold\n    reason: 'invalid input: error_class'\n"
             "  - name: the string '1' for an int input is invalid\n"
             "    input: {error_class: 429, attempts: '1'}\n"
             "    expect: hold\n    reason: 'invalid input: attempts'\n"
             "  - name: json null is absent\n    input: {error_class: {json: null}, attempts: 1}\n"
             "    expect: hold\n    reason: 'invalid input: error_class'\n");
  const CliResult r = run({"test", policy});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out,
            "PASS plain 429 is the text\nPASS quoted 429 is the text too\n"
            "PASS the int 429 is invalid\nPASS the string '1' for an int input is invalid\n"
            "PASS json null is absent\n5 passed, 0 failed\n"
            "coverage: rules 1/1 (100.0%), invariants 0/0\n");
  EXPECT_EQ(r.err, "");
}

// What is not a number to YAML stays a string (an invalid value for an int input, so the
// default), a quoted number is a string, and a decimal int beyond int64 is an invalid int: these
// cases run, with no diagnostic.
TEST_F(PositionsTest, TestKeepsStringsAndDecimalInts) {
  std::string text = "cases:\n";
  int count = 0;
  for (const std::string value :
       {"'+1'", "\"0x1F\"", "0x", "0xG", "1e", "e3", "1.2.3", "inf", "nan", "1:30", "_1", "0b2",
        "99999999999999999999", "-5", "0", "+.nan"}) {
    text += "  - name: c" + std::to_string(++count) + "\n    input: {attempts: " + value +
            "}\n    expect: hold\n";
  }
  const std::string cases = (dir_ / "cases.yaml").string();
  write_file(cases, text);
  const CliResult r = run({"test", kGate, cases});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("16 passed, 0 failed\n"), std::string::npos) << r.out;
}

// A case cannot set a derived input (it is computed, never read: the value would be ignored, so
// the case would not test what it says): RG407 at the key, the hint naming the two inputs to set.
TEST_F(PositionsTest, TestRefusesAValueForADerivedInput) {
  const std::string cases = (dir_ / "cases.yaml").string();
  write_file(cases,
             "cases:\n"
             "  - name: stale given\n"
             "    input: {phase: accepted, message_revision: 7, record_revision: 7, stale: true}\n"
             "    expect: observe\n");
  CliResult r = run({"test", kRecovery, cases});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("0 passed, 0 failed\n", 0), 0u) << r.out;
  EXPECT_EQ(r.err, cases +
                       ":3:71: error[RG407]: input 'stale' is derived; it is computed, never read\n"
                       "    3 |     input: {phase: accepted, message_revision: 7, record_revision: "
                       "7, stale: true}\n"
                       "      | " +
                       std::string(70, ' ') +
                       "^~~~~\n"
                       "      = hint: remove it, and set message_revision and record_revision "
                       "instead (stale = message_revision < record_revision)\n" +
                       cases + ": errors found; its cases were not run\n");
  // The shipped cases set no derived input.
  r = run({"test", kRecovery});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}
