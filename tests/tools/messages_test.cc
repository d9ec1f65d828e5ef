// End-to-end tests of messages a break-it tester found unclear: exact stderr/stdout and exit codes
// for letters with a number no double holds or a byte-order mark (decide, explain, review), case
// files with an unknown verb and an unknown rule or a leading-zero int (test), and a gap whose
// strings hold quotes and control bytes (lint, RG211).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/diagnostic.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const char kGate[] = "policies/replay_gate.yaml";

class MessagesTest : public CliFixture {
 protected:
  MessagesTest() : CliFixture(kSourceDir) {}

  // Runs `test` on the shipped gate with a case file holding `text`: exit 1 and, on stderr, each
  // of `diagnostics` after the file's path (a blank line between them), then the line saying
  // that the file's cases were not run.
  void expect_case_file_errors(const std::string& text,
                               const std::vector<std::string>& diagnostics) {
    const std::string cases = (dir_ / "cases.yaml").string();
    write_file(cases, text);
    const CliResult r = run({"test", kGate, cases});
    EXPECT_EQ(r.exit_code, 1);
    std::string expected;
    for (size_t i = 0; i < diagnostics.size(); ++i) {
      expected += (i ? "\n" : "") + cases + diagnostics[i];
    }
    EXPECT_EQ(r.err, expected + cases + ": errors found; its cases were not run\n");
  }
};

// The decide output line for an unreadable record `n` with `reason`, for replay_gate.yaml run
// with --policy (the table checksum is the compiled policy's, read from the first line), with the
// problem's `column` when it has one (0: none) and, for an invalid input, the runtime's `problem`.
std::string invalid_line(int n, const std::string& reason, const std::string& checksum,
                         int column = 0, const std::string& problem = "") {
  return "{\"n\":" + std::to_string(n) +
         ",\"verb\":\"hold\",\"effect\":\"none\",\"action\":\"nothing\",\"rule\":\"default\","
         "\"reason\":\"" +
         reason + "\",\"policy\":\"dlq-replay-gate\",\"revision\":1,\"table\":\"" + checksum +
         "\",\"invalid\":true" + (column > 0 ? ",\"column\":" + std::to_string(column) : "") +
         (problem.empty() ? "" : ",\"problem\":\"" + problem + "\"") + "}\n";
}

// A number no double can hold is well-formed JSON: the record is refused by the field's name and
// "number out of range", whatever the field's type (int, string, bool), never as "bad JSON". A
// line that starts with a UTF-8 byte-order mark is named as such. Both get the default.
TEST_F(MessagesTest, DecideNamesANumberOutOfRangeAndAByteOrderMark) {
  const std::string tail =
      "\"error_class\":\"timeout\",\"idempotency_key\":\"k\",\"already_committed\":false}\n";
  const std::string letters =
      "{\"topic\":\"payment.capture\",\"attempts\":1e400," + tail +
      "{\"topic\":1e400,\"attempts\":1," + tail +
      "{\"topic\":\"payment.capture\",\"attempts\":1,\"error_class\":\"timeout\","
      "\"idempotency_key\":\"k\",\"already_committed\":-1E+999}\n"
      "\xEF\xBB\xBF{\"topic\":\"payment.capture\",\"attempts\":1," +
      tail +
      // Not out of range: tiny numbers read as 0 and huge ints as doubles stay invalid inputs.
      "{\"topic\":\"payment.capture\",\"attempts\":1e-400," + tail +
      "{\"topic\":\"payment.capture\",\"attempts\":1e300," + tail;
  const CliResult r = run({"decide", "--policy", kGate}, letters);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string kUnreadable = "unreadable (wrong JSON type or out of int64 range)";
  const size_t at = r.out.find("\"table\":\"");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string checksum = r.out.substr(at + 9, 32);
  EXPECT_EQ(
      r.out,
      invalid_line(1, "invalid record: number out of range for 'attempts': 1e400", checksum, 39) +
          invalid_line(2, "invalid record: number out of range for 'topic': 1e400", checksum, 10) +
          invalid_line(3, "invalid record: number out of range for 'already_committed': -1E+999",
                       checksum, 107) +
          invalid_line(4, "invalid record: starts with a UTF-8 byte-order mark (remove it)",
                       checksum, 1) +
          invalid_line(5, "invalid input: attempts", checksum, 39, kUnreadable) +
          invalid_line(6, "invalid input: attempts", checksum, 39, kUnreadable));
}

// explain reads its letter with the same parser: the same names, as an unreadable letter (exit 1).
TEST_F(MessagesTest, ExplainNamesANumberOutOfRangeAndAByteOrderMark) {
  const std::pair<std::string, std::string> cases[] = {
      {"{\"topic\":\"payment.capture\",\"attempts\":12e99999}\n",
       ":1:39: unreadable letter: invalid record: number out of range for 'attempts': 12e99999"},
      {"\xEF\xBB\xBF{\"topic\":\"payment.capture\",\"attempts\":1}\n",
       ":1:1: unreadable letter: invalid record: starts with a UTF-8 byte-order mark (remove it)"},
  };
  for (const auto& [letter, problem] : cases) {
    const CliResult r = run({"explain", "--policy", kGate}, letter);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "replaygate explain: <stdin>" + problem + "\n");
  }
}

// A letter over 1 MiB cannot be read (exit 1, as `decide` makes such a line an invalid record),
// from standard input as from a file; a file that cannot be opened stays an I/O error (exit 2).
TEST_F(MessagesTest, ExplainCallsALetterOver1MiBUnreadable) {
  const std::string big(size_t{1} << 21, ' ');
  CliResult r = run({"explain", "--policy", kGate, "-"}, big);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "replaygate explain: <stdin>: unreadable letter: invalid record: record too large "
            "(over 1048576 bytes)\n");
  const std::string file = (dir_ / "big.json").string();
  write_file(file, big);
  r = run({"explain", "--policy", kGate, file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate explain: " + file +
                       ": unreadable letter: invalid record: record too large (over 1048576 "
                       "bytes)\n");
  r = run({"explain", "--policy", kGate, (dir_ / "missing.json").string()});
  EXPECT_EQ(r.exit_code, 2);
}

// review reads whole JSON documents with nlohmann (not the letters parser); a number no double
// holds is named there too, with the key that holds it.
TEST_F(MessagesTest, ReviewNamesANumberOutOfRange) {
  const std::string message = (dir_ / "message.json").string();
  const std::string record = (dir_ / "record.json").string();
  write_file(message, "{\"operation_id\": \"op-1\", \"revision\": 1e400}\n");
  write_file(record, "{\"operation_id\": \"op-1\", \"phase\": \"accepted\", \"revision\": 2}\n");
  const CliResult r = run({"review", "--policy", "policies/generation_recovery.yaml", "--message",
                           message, "--record", record});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate: invalid message: " + message +
                       ":1:38: number out of range for 'revision'\n");
}

// The kafka format reads the payload with simdjson, which refuses a whole document for one number
// it cannot hold: the mapped field holding it is named with what it is (never "the payload is not
// JSON" for valid JSON), the other fields are read. A kcat line or a payload that starts with a
// byte-order mark says so, as in the letters reader. All of these get the default verb.
TEST_F(MessagesTest, DecideKafkaNamesANumberOutOfRangeAndAByteOrderMark) {
  const auto record = [](int offset, const std::string& payload_json) {
    std::string escaped;
    for (const char c : payload_json) {
      if (c == '"' || c == '\\') escaped += '\\';
      escaped += c;
    }
    return "{\"topic\":\"payment.capture.DLT\",\"partition\":0,\"offset\":" +
           std::to_string(offset) +
           ",\"headers\":[\"kafka_dlt-original-topic\",\"payment.capture\","
           "\"kafka_dlt-exception-cause-fqcn\",\"java.net.SocketTimeoutException\"],"
           "\"key\":\"k\",\"payload\":\"" +
           escaped + "\"}\n";
  };
  const std::string tail = R"(,"idempotency_key":"k","committed":false})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {record(1, R"({"attempts":99999999999999999999)" + tail),
       "invalid input: attempts (payload /attempts is an integer beyond int64)"},
      {record(2, R"({"attempts":-99999999999999999999)" + tail),
       "invalid input: attempts (payload /attempts is an integer beyond int64)"},
      {record(3, R"({"attempts":18446744073709551615)" + tail),
       "invalid input: attempts (payload /attempts is an integer beyond int64)"},
      {record(4, R"({"attempts":1e400)" + tail),
       "invalid input: attempts (payload /attempts is a number out of range: 1e400)"},
      {record(5, R"({"attempts":-1E+999,"x":[1e400,"\"1e400\""])" + tail),
       "invalid input: attempts (payload /attempts is a number out of range: -1E+999)"},
      // Out of range in a field no input reads: the record is decided.
      {record(6, R"({"attempts":1,"amount":1e400,"n":{"m":[99999999999999999999]})" + tail), ""},
      // Not JSON stays not JSON; a string that looks like the reader's marker is refused too.
      {record(7, R"({"attempts":99999999999999999999-)" + tail),
       "invalid input: attempts (the payload is not JSON)"},
      {record(8, R"({"attempts":1e400,"s":"\u0000rg-number:0")" + tail),
       "invalid input: attempts (the payload is not JSON)"},
      {record(9, "\xEF\xBB\xBF{\"attempts\":1" + tail),
       "invalid input: attempts (the payload starts with a UTF-8 byte-order mark (remove it))"},
      {"\xEF\xBB\xBF" + record(10, R"({"attempts":1)" + tail),
       "invalid record: starts with a UTF-8 byte-order mark (remove it)"},
  };
  std::string input;
  for (const auto& c : cases) input += c.first;
  const CliResult r = run({"decide", "--policy", kGate, "--format", "kafka", "--mapping",
                           "examples/kafka-spring-dlt.mapping.yaml"},
                          input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), cases.size()) << r.out << r.err;
  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json line = nlohmann::json::parse(lines[i]);
    if (cases[i].second.empty()) {
      EXPECT_EQ(line.at("invalid"), false) << lines[i];
      EXPECT_EQ(line.at("verb"), "replay_once") << lines[i];
    } else {
      EXPECT_EQ(line.at("reason"), cases[i].second) << lines[i];
      EXPECT_EQ(line.at("verb"), "hold") << lines[i];
      EXPECT_EQ(line.at("invalid"), true) << lines[i];
    }
  }
}

// An unknown verb and an unknown rule in one case are two independent mistakes: both reported.
TEST_F(MessagesTest, TestReportsAnUnknownVerbAndAnUnknownRuleTogether) {
  expect_case_file_errors(
      "cases:\n"
      "  - name: both wrong\n"
      "    input: {topic: payment.capture, error_class: timeout, attempts: 1,\n"
      "            idempotency_key: k, already_committed: false}\n"
      "    expect: replay_onec\n"
      "    rule: already_comitted\n",
      {":5:13: error[RG404]: unknown verb 'replay_onec'\n"
       "    5 |     expect: replay_onec\n"
       "      |             ^~~~~~~~~~~\n"
       "      = hint: did you mean 'replay_once'?\n",
       ":6:11: error[RG406]: the policy has no rule 'already_comitted'\n"
       "    6 |     rule: already_comitted\n"
       "      |           ^~~~~~~~~~~~~~~~\n"
       "      = hint: did you mean 'already_committed'?\n"});
}

// `attempts: 01` is not silently 1: the policy's rule for int text (RG109) holds in case files.
TEST_F(MessagesTest, TestRefusesALeadingZeroInt) {
  expect_case_file_errors(
      "cases:\n"
      "  - name: leading zero\n"
      "    input: {topic: payment.capture, error_class: timeout, attempts: 01,\n"
      "            idempotency_key: k, already_committed: false}\n"
      "    expect: replay_once\n"
      "  - name: negative, and quoted is a string\n"
      "    input: {topic: payment.capture, error_class: '007', attempts: -007,\n"
      "            idempotency_key: k, already_committed: false}\n"
      "    expect: hold\n",
      {":3:69: error[RG109]: '01' has a leading zero\n"
       "    3 |     input: {topic: payment.capture, error_class: timeout, attempts: 01,\n"
       "      | " +
           std::string(68, ' ') +
           "^~\n"
           "      = hint: write 1, not 01 (or quote it for a string: '01')\n",
       ":7:67: error[RG109]: '-007' has a leading zero\n"
       "    7 |     input: {topic: payment.capture, error_class: '007', attempts: -007,\n"
       "      | " +
           std::string(66, ' ') +
           "^~~~\n"
           "      = hint: write -7, not -007 (or quote it for a string: '-007')\n"});
}

// --format json puts the case files' diagnostics in the document (the shape of lint --format json:
// severity, code, message, path, line, column, hint), not as text on stderr; stderr keeps only
// the line that says the file's cases were not run.
TEST_F(MessagesTest, TestJsonCarriesCaseFileDiagnostics) {
  const std::string cases = (dir_ / "cases.yaml").string();
  write_file(cases,
             "cases:\n"
             "  - name: both wrong\n"
             "    input: {topic: payment.capture, error_class: timeout, attempts: 01,\n"
             "            idempotency_key: k, already_committed: false}\n"
             "    expect: replay_onec\n"
             "    rule: already_comitted\n");
  const CliResult r = run({"test", kGate, cases, "--format", "json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, cases + ": errors found; its cases were not run\n");
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json expected = {
      {{"severity", "error"},
       {"code", "RG109"},
       {"message", "'01' has a leading zero"},
       {"path", cases},
       {"line", 3},
       {"column", 69},
       {"hint", "write 1, not 01 (or quote it for a string: '01')"}},
      {{"severity", "error"},
       {"code", "RG404"},
       {"message", "unknown verb 'replay_onec'"},
       {"path", cases},
       {"line", 5},
       {"column", 13},
       {"hint", "did you mean 'replay_once'?"}},
      {{"severity", "error"},
       {"code", "RG406"},
       {"message", "the policy has no rule 'already_comitted'"},
       {"path", cases},
       {"line", 6},
       {"column", 11},
       {"hint", "did you mean 'already_committed'?"}},
  };
  EXPECT_EQ(doc.at("diagnostics"), expected) << r.out;
  EXPECT_EQ(doc.at("cases"), nlohmann::json::array());
  EXPECT_EQ(doc.at("summary").at("case_file_errors"), true);
  // The same renderer as lint's JSON: the keys in its order.
  EXPECT_NE(r.out.find("\"severity\": \"error\",\n      \"code\": \"RG109\",\n      "
                       "\"message\": \"'01' has a leading zero\",\n      \"path\": "),
            std::string::npos)
      << r.out;
}

// RG211 shows the policy's strings as JSON string literals: a quote, a tab or an escape byte in a
// domain value cannot forge the message or drive the terminal.
TEST_F(MessagesTest, GapMessageEscapesQuotesAndControlBytes) {
  const std::string policy = (dir_ / "gap.yaml").string();
  write_file(policy,
             "policy: gap\n"
             "revision: 1\n"
             "inputs:\n"
             "  topic:\n"
             "    type: string\n"
             "    domain: [\"pay\\\"ments\", \"tab\\there\", \"esc\\e[31m\"]\n"
             "verbs:\n"
             "  hold: {effect: none, description: keep it}\n"
             "  replay: {effect: create, description: send again}\n"
             "default: hold\n"
             "default_reason: nothing matched\n"
             "rules:\n"
             "  - guard: g\n"
             "    when: {topic: other}\n"
             "    verb: replay\n"
             "    reason: r\n");
  const CliResult r = run({"lint", policy});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, policy +
                       ":10:10: info[RG211]: known inputs fall to the default 'hold': topic: "
                       "\"esc\\u001b[31m\" | \"pay\\\"ments\" | \"tab\\u0009here\"; e.g. "
                       "{\"topic\": \"esc\\u001b[31m\"}\n"
                       "   10 | default: hold\n"
                       "      |          ^~~~\n"
                       "      = hint: add a row or guard that decides them, or leave them to the "
                       "default on purpose\n" +
                       policy + ": ok\n");
  EXPECT_EQ(r.out, "");
}

// --docs-url goes into helpUri and informationUri percent-encoded where RFC 3986 requires it
// (a space, non-ASCII, '"', '<', '>', '\\', '^', '`', '{', '|', '}', a '#' before the fragment,
// a '%' that starts no %XX); a valid URL, reserved characters and %XX escapes included, is kept.
TEST(SarifHelpUri, DocsUrlIsPercentEncoded) {
  replaygate::Diagnostic d;
  d.code = "RG104";
  d.message = "unknown verb";
  const auto help = [&](const std::string& base) {
    const std::string log = replaygate::render_sarif({d}, "", "1.2.3", base);
    const std::string key = "\"helpUri\": \"";
    const size_t at = log.find(key);
    return at == std::string::npos
               ? std::string("<none>")
               : log.substr(at + key.size(), log.find('"', at + key.size()) - at - key.size());
  };
  EXPECT_EQ(help("https://example.com/my docs/\xC3\xA9t\xC3\xA9"),
            "https://example.com/my%20docs/%C3%A9t%C3%A9/docs/diagnostics.md#rg104");
  EXPECT_EQ(help("https://x.test/a\"b<c>d\\e^f`g{h|i}j#k 100%"),
            "https://x.test/a%22b%3Cc%3Ed%5Ce%5Ef%60g%7Bh%7Ci%7Dj%23k%20100%25/docs/"
            "diagnostics.md#rg104");
  const std::string valid = "https://user@[::1]:8080/p;v=1/a%20b/(x)!$&'*+,=~-._r=%7E";
  EXPECT_EQ(help(valid), valid + "/docs/diagnostics.md#rg104");
  // Trailing slashes are dropped before the path is joined: never "//docs".
  EXPECT_EQ(help("https://ex.com/"), "https://ex.com/docs/diagnostics.md#rg104");
  EXPECT_EQ(help("https://ex.com/a//"), "https://ex.com/a/docs/diagnostics.md#rg104");
  EXPECT_NE(replaygate::render_sarif({d}, "", "1.2.3", "https://x.test/my docs")
                .find("\"informationUri\": \"https://x.test/my%20docs/docs/diagnostics.md\""),
            std::string::npos);
}

// Through the CLI a --docs-url that is not a URL is refused (exit 2, nothing on stdout), with
// the byte that makes it none and its escape: it used to be percent-encoded silently, so
// `--docs-url "http://a b"` wrote links to http://a%20b/... that the user never gave.
TEST_F(MessagesTest, LintRefusesADocsUrlThatIsNotAUrl) {
  const struct {
    std::string url, why;
  } bad[] = {
      {"http://a b", "it has a space at byte 9 of 'http://a b'; write it percent-encoded (%20)"},
      {"https://docs.test/replay gate",
       "it has a space at byte 25 of 'https://docs.test/replay gate'; write it percent-encoded "
       "(%20)"},
      {"https://ex.com/\xC3\xA9t\xC3\xA9",
       "it has a non-ASCII byte at byte 16 of 'https://ex.com/\xC3\xA9t\xC3\xA9'; write it "
       "percent-encoded (%C3%A9)"},
      {"https://x.test/a\"b",
       "it has the character '\"' at byte 17 of 'https://x.test/a\"b'; write it "
       "percent-encoded (%22)"},
      {"https://x.test/{v}",
       "it has the character '{' at byte 16 of 'https://x.test/{v}'; write it percent-encoded "
       "(%7B)"},
      {"https://x.test/100%",
       "it has a '%' that starts no %XX escape at byte 19 of 'https://x.test/100%'; write it "
       "percent-encoded (%25)"},
      {"https://x.test/a\tb",
       "it has a control character at byte 17 of 'https://x.test/a\\u0009b'; write it "
       "percent-encoded (%09)"},
  };
  for (const auto& b : bad) {
    const CliResult r =
        run({"lint", "tests/data/lint/policy.yaml", "--format", "sarif", "--docs-url", b.url});
    EXPECT_EQ(r.exit_code, 2) << b.url;
    EXPECT_EQ(r.out, "") << b.url;
    EXPECT_EQ(r.err,
              "replaygate: error: --docs-url is not a URL: " + b.why + ", as RFC 3986 asks\n")
        << b.url;
  }
  const CliResult port = run({"lint", "tests/data/lint/policy.yaml", "--format", "sarif",
                              "--docs-url", "https://ex.com:8o/docs"});
  EXPECT_EQ(port.exit_code, 2);
  EXPECT_EQ(port.err,
            "replaygate: error: --docs-url is not a URL: the port '8o' of "
            "'https://ex.com:8o/docs' is not a number\n");
  // A URL, reserved characters, an IPv6 host, a port and %XX escapes included, is kept as given.
  const std::string valid = "https://user@[::1]:8080/p;v=1/a%20b/(x)!$&'*+,=~-._r=%7E";
  const CliResult r =
      run({"lint", "tests/data/lint/policy.yaml", "--format", "sarif", "--docs-url", valid});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("\"helpUri\": \"" + valid + "/docs/diagnostics.md#rg"), std::string::npos)
      << r.out;
}

// SARIF wants absolute URIs and the docs path is appended to --docs-url: an empty, relative or
// non-http(s) value, one without a host, or one with a query or fragment is a usage error.
TEST_F(MessagesTest, LintDocsUrlMustBeAnAbsoluteHttpUrl) {
  for (const std::string url :
       {"relative/path", "/abs/path", "file:///docs", "ftp://ex.com", "https://", "https:///x",
        "http://user@:80/x", "https://ex.com/?q=1", "https://ex.com/d#frag", "ex.com/docs"}) {
    const CliResult r =
        run({"lint", "tests/data/lint/policy.yaml", "--format", "sarif", "--docs-url", url});
    EXPECT_EQ(r.exit_code, 2) << url;
    EXPECT_EQ(r.out, "") << url;
    EXPECT_EQ(r.err,
              "replaygate: error: --docs-url must be an absolute http:// or https:// URL with a "
              "host and without a query (?) or fragment (#), e.g. https://example.com/replaygate, "
              "not '" +
                  url + "'\n");
  }
  // A refused URL is echoed escaped: it cannot drive the terminal.
  const CliResult esc =
      run({"lint", "tests/data/lint/policy.yaml", "--format", "sarif", "--docs-url", "x\x1b[31m"});
  EXPECT_EQ(esc.exit_code, 2);
  EXPECT_NE(esc.err.find("not 'x\\u001b[31m'\n"), std::string::npos) << esc.err;
  const CliResult r = run({"lint", "tests/data/lint/policy.yaml", "--format", "sarif", "--docs-url",
                           "HTTPS://ex.com/"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("\"informationUri\": \"HTTPS://ex.com/docs/diagnostics.md\""),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"helpUri\": \"HTTPS://ex.com/docs/diagnostics.md#rg"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("//docs"), std::string::npos) << r.out;
}

}  // namespace
