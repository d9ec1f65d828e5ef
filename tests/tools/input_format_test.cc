// --input-format (inputs/formats.h) on decide and explain, decide's --format alias, and
// what a record's inputs were: decide --show-inputs and explain --input-format kafka --mapping.
// Exact messages and lines; the kafka explanation is a golden (tests/data/explain/).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "inputs/formats.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary
using replaygate::inputs::choose_input_format;
using replaygate::inputs::InputFormat;
using replaygate::inputs::InputFormatOptions;

const std::string kGate = "policies/replay_gate.yaml";
const std::string kSpring = "tests/data/mapping/spring.mapping.yaml";
const std::string kRecord = "tests/data/explain/kafka_record.kcat.json";

// The policy's text; the tests run in the source tree.
class InputFormatCli : public CliFixture {
 protected:
  InputFormatCli() : CliFixture(kSourceDir) {}

  // replay_gate.yaml with idempotency_key marked sensitive, in the scratch directory.
  std::string sensitive_gate() {
    const std::string path = (dir_ / "sensitive_gate.yaml").string();
    write_file(path, read_file(kSourceDir + "/" + kGate) + "sensitive: [idempotency_key]\n");
    return path;
  }
};

// "c7d5...": the "table" value of a decide line.
std::string table_of(const std::string& line) {
  const std::string key = "\"table\":\"";
  const size_t at = line.find(key);
  return at == std::string::npos ? "" : line.substr(at + key.size(), 32);
}

// ---- the formats table ----

TEST(InputFormats, OneTableOwnsTheNames) {
  EXPECT_EQ(replaygate::inputs::input_format_names(),
            "letters, spring-kafka, kafka, kafka-connect, rabbitmq, sqs, pubsub, servicebus, "
            "sidekiq or bullmq");
  ASSERT_EQ(replaygate::inputs::input_formats().size(), 10u);
  EXPECT_EQ(replaygate::inputs::input_formats()[0].name, "letters");  // the default
  EXPECT_EQ(replaygate::inputs::input_formats()[0].mapping_format, "");
  EXPECT_EQ(replaygate::inputs::input_formats()[1].mapping_format, "kcat-json");
  EXPECT_EQ(replaygate::inputs::input_formats()[2].name, "kafka");  // another name for spring-kafka
  EXPECT_EQ(replaygate::inputs::input_formats()[2].mapping_format, "kcat-json");
}

TEST(InputFormats, ChooseSaysWhatIsWrong) {
  std::string error;
  InputFormatOptions o;
  const InputFormat* f = choose_input_format(o, &error);
  ASSERT_NE(f, nullptr) << error;
  EXPECT_EQ(f->name, "letters");

  o.input_format = "kafak";
  o.input_format_set = true;
  EXPECT_EQ(choose_input_format(o, &error), nullptr);
  EXPECT_EQ(
      error,
      "--input-format must be letters, spring-kafka, kafka, kafka-connect, rabbitmq, sqs, pubsub, "
      "servicebus, sidekiq or bullmq, not "
      "'kafak'; did you mean 'kafka'?");

  o.input_format = "avro\x1b";
  EXPECT_EQ(choose_input_format(o, &error), nullptr);
  EXPECT_EQ(
      error,
      "--input-format must be letters, spring-kafka, kafka, kafka-connect, rabbitmq, sqs, pubsub, "
      "servicebus, sidekiq or bullmq, not "
      "'avro\\u001b'");

  // The alias alone, named as given; the same name twice is fine, two names are not.
  o = InputFormatOptions{};
  o.alias = "kafka";
  o.alias_set = true;
  EXPECT_EQ(choose_input_format(o, &error), nullptr);
  EXPECT_EQ(error,
            "--format kafka needs --mapping MAPPING.yaml (which header or payload field feeds each "
            "policy input)");
  o.mapping = "m.yaml";
  f = choose_input_format(o, &error);
  ASSERT_NE(f, nullptr) << error;
  EXPECT_EQ(f->name, "kafka");
  o.input_format = "kafka";
  o.input_format_set = true;
  EXPECT_NE(choose_input_format(o, &error), nullptr) << error;
  o.input_format = "letters";
  EXPECT_EQ(choose_input_format(o, &error), nullptr);
  EXPECT_EQ(error,
            "--format kafka and --input-format letters disagree: --format is another name for "
            "--input-format; give one of them");

  o = InputFormatOptions{};
  o.mapping = "m.yaml";
  EXPECT_EQ(choose_input_format(o, &error), nullptr);
  EXPECT_EQ(error,
            "--mapping applies only to a format that reads broker records (--input-format "
            "spring-kafka, kafka, kafka-connect, rabbitmq, sqs, pubsub, servicebus, sidekiq, "
            "bullmq), not "
            "to letters");
}

TEST(InputFormats, TheMappingMustMapTheFormatsRecords) {
  const InputFormat& kafka = replaygate::inputs::input_formats()[1];
  replaygate::inputs::Mapping mapping;  // format: kcat-json unless the file says otherwise
  EXPECT_EQ(replaygate::inputs::mapping_format_mismatch(kafka, "m.yaml", mapping), "");
  mapping.format = "avro-json";
  EXPECT_EQ(
      replaygate::inputs::mapping_format_mismatch(kafka, "m.yaml", mapping),
      "m.yaml maps avro-json records, but --input-format spring-kafka reads kcat-json records; "
      "give a mapping with format: kcat-json");
}

// ---- decide: --input-format and its alias ----

TEST_F(InputFormatCli, DecideUnknownFormatListsTheKnownOnes) {
  const CliResult r = run({"decide", "--policy", kGate, "--input-format", "kafak", "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "replaygate decide: error: --input-format must be letters, spring-kafka, kafka, "
            "kafka-connect, rabbitmq, sqs, pubsub, servicebus, sidekiq or bullmq, not "
            "'kafak'; did "
            "you mean 'kafka'?\nRun 'replaygate decide --help' for usage.\n");
}

TEST_F(InputFormatCli, DecideFormatAndInputFormatMustAgree) {
  CliResult r = run({"decide", "--policy", kGate, "--input-format", "kafka", "--format", "letters",
                     "--mapping", kSpring, "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate decide: error: --format letters and --input-format kafka disagree: "
            "--format is another name for --input-format; give one of them\nRun 'replaygate "
            "decide --help' for usage.\n");
  r = run({"decide", "--policy", kGate, "--input-format", "kafka", "--"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--input-format kafka needs --mapping MAPPING.yaml"), std::string::npos)
      << r.err;
}

// --input-format kafka, --format kafka and both give the same bytes as before (the golden).
TEST_F(InputFormatCli, DecideAliasGivesTheSameOutput) {
  const std::string records = "tests/data/mapping/records.kcat.jsonl";
  const CliResult old_name =
      run({"decide", "--policy", kGate, "--format", "kafka", "--mapping", kSpring, records});
  const CliResult new_name =
      run({"decide", "--policy", kGate, "--input-format", "kafka", "--mapping", kSpring, records});
  const CliResult both = run({"decide", "--policy", kGate, "--input-format=kafka", "--format=kafka",
                              "--mapping", kSpring, records});
  EXPECT_EQ(old_name.exit_code, 1);
  EXPECT_EQ(new_name.exit_code, 1);
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_EQ(new_name.out, old_name.out);
  EXPECT_EQ(both.out, old_name.out);
  EXPECT_EQ(new_name.err, old_name.err);
  EXPECT_EQ(old_name.out.find("\"inputs\""), std::string::npos);
}

// ---- decide --show-inputs ----

TEST_F(InputFormatCli, ShowInputsOnLetters) {
  const std::string letters =
      // valid; a string with an escape, a quote and a control character
      "{\"message_id\":\"m1\",\"topic\":\"payment.capture\",\"error_class\":\"timeout\","
      "\"attempts\":1,\"idempotency_key\":\"k\\\"\\u001b1\",\"already_committed\":false}\n"
      // invalid input: a string for an int
      "{\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":\"3\","
      "\"idempotency_key\":\"k2\",\"already_committed\":false,\"replays\":null}\n"
      // unreadable
      "{\"topic\":\n";
  const CliResult plain = run({"decide", "--policy", kGate, "-"}, letters);
  const CliResult shown = run({"decide", "--policy", kGate, "--show-inputs", "-"}, letters);
  EXPECT_EQ(shown.exit_code, 1);
  EXPECT_EQ(shown.err, plain.err);
  const std::vector<std::string> p = lines_of(plain.out), s = lines_of(shown.out);
  ASSERT_EQ(p.size(), 3u);
  ASSERT_EQ(s.size(), 3u);
  const std::string table = table_of(p[0]);
  ASSERT_EQ(table.size(), 32u) << p[0];
  EXPECT_EQ(s[0],
            "{\"n\":1,\"message_id\":\"m1\",\"inputs\":{\"topic\":\"payment.capture\","
            "\"error_class\":\"timeout\",\"attempts\":1,\"idempotency_key\":\"k\\\"\\u001b1\","
            "\"already_committed\":false,\"replays\":null},\"verb\":\"replay_once\",\"effect\":"
            "\"create\",\"action\":\"create new work\",\"rule\":"
            "\"known_failures:payment.capture/timeout\",\"reason\":\"the capture timed out before "
            "an answer; the idempotency key makes one requeue safe\",\"policy\":"
            "\"dlq-replay-gate\",\"revision\":1,\"table\":\"" +
                table + "\",\"invalid\":false}");
  // Everything else is the line without the flag, "inputs" right after the metadata.
  const auto with_inputs = [](const std::string& line, const std::string& after,
                              const std::string& inputs) {
    std::string out = line;
    out.insert(out.find(after) + after.size(), ",\"inputs\":" + inputs);
    return out;
  };
  EXPECT_EQ(s[1], with_inputs(p[1], "{\"n\":2",
                              "{\"topic\":\"payment.capture\",\"error_class\":\"timeout\","
                              "\"attempts\":{\"invalid\":\"unreadable (wrong JSON type or out of "
                              "int64 range)\"},\"idempotency_key\":\"k2\",\"already_committed\":"
                              "false,\"replays\":null}"));
  EXPECT_EQ(s[2], with_inputs(p[2], "{\"n\":3", "null"));
}

// A derived input shows the value computed from its formula (never the letter's own), null when
// an input is invalid and nothing was computed; an operator-only input is never read: null.
TEST_F(InputFormatCli, ShowInputsDerivedAndOperatorOnly) {
  // The shipped policy never reads its record-only inputs (phase, record_revision) from a letter:
  // a copy without that marker (tests/tools/record_only_cli_test.cc covers the shipped one).
  const std::string policy = letter_state_recovery_policy(dir_);
  const CliResult r =
      run({"decide", "--policy", policy, "--show-inputs", "-"},
          "{\"phase\":\"accepted\",\"message_revision\":2,\"record_revision\":2,"
          "\"remote_job_id\":\"j1\",\"stale\":true,\"operator_confirmed\":true}\n"
          "{\"phase\":\"archived\",\"message_revision\":1,\"record_revision\":2}\n");
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_EQ(lines[0].substr(0, lines[0].find(",\"verb\"")),
            "{\"n\":1,\"inputs\":{\"phase\":\"accepted\",\"message_revision\":2,"
            "\"record_revision\":2,\"stale\":false,\"remote_job_id\":\"j1\",\"copy_complete\":"
            "null,\"refund_resolved\":null,\"dispatch_confirmed_absent\":null,\"model_current\":"
            "null,\"spec_current\":null,\"user_authorized\":null,\"remaining_budget\":null,"
            "\"operator_confirmed\":null,\"operation_id\":null}");
  EXPECT_NE(lines[1].find("\"record_revision\":2,\"stale\":null,"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("\"reason\":\"invalid input: phase\""), std::string::npos) << lines[1];
}

// Through a mapping, with idempotency_key marked sensitive: the value the mapping produced, and
// "<redacted>" for the secret (null would have said it was absent).
TEST_F(InputFormatCli, ShowInputsOnKafkaRedactsSensitiveFields) {
  const std::string policy = sensitive_gate();
  const CliResult r = run({"decide", "--policy", policy, "--input-format", "kafka", "--mapping",
                           kSpring, "--show-inputs", kRecord});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "{\"n\":1,\"message_id\":\"mid-42\",\"inputs\":{\"topic\":\"payment.capture\","
            "\"error_class\":\"timeout\",\"attempts\":2,\"idempotency_key\":\"<redacted>\","
            "\"already_committed\":false,\"replays\":null},\"verb\":\"replay_once\",\"effect\":"
            "\"create\",\"action\":\"create new work\",\"rule\":"
            "\"known_failures:payment.capture/timeout\",\"reason\":\"the capture timed out before "
            "an answer; the idempotency key makes one requeue safe\",\"policy\":"
            "\"dlq-replay-gate\",\"revision\":1,\"table\":\"" +
                table_of(lines[0]) + "\",\"invalid\":false}");
  EXPECT_EQ(r.out.find("cap_42"), std::string::npos);
}

// A table does not keep the policy's sensitive list, so decide could not redact: refused.
TEST_F(InputFormatCli, ShowInputsNeedsThePolicy) {
  const std::string table = (dir_ / "gate.rgt").string();
  ASSERT_EQ(run({"compile", kGate, "-o", table}).exit_code, 0);
  const CliResult r = run({"decide", "--table", table, "--show-inputs", "-"}, "{}\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "replaygate decide: error: --show-inputs needs --policy POLICY: a compiled table does "
            "not keep the policy's sensitive list, so decide could not tell which values to "
            "redact\nRun 'replaygate decide --help' for usage.\n");
}

// ---- explain --input-format kafka ----

TEST_F(InputFormatCli, ExplainKafkaRecordGolden) {
  const std::vector<std::string> args = {"explain", "--input-format", "kafka", "--mapping",
                                         kSpring};
  std::vector<std::string> by_policy = args;
  by_policy.insert(by_policy.end(), {"--policy", kGate, kRecord});
  const CliResult r = run(by_policy);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  expect_golden(r.out, "explain/kafka_record.expected.txt");
  // The bearer token in the authorization header (a built-in secret name) never shows.
  EXPECT_EQ(r.out.find("s3cr3t"), std::string::npos);

  by_policy.insert(by_policy.end(), {"--format", "json"});
  const CliResult json = run(by_policy);
  EXPECT_EQ(json.exit_code, 0) << json.err;
  expect_golden(json.out, "explain/kafka_record.expected.json");

  // From the table: the same text but for the source, and a note that only the built-in names
  // are redacted.
  const std::string table = (dir_ / "gate.rgt").string();
  ASSERT_EQ(run({"compile", kGate, "-o", table}).exit_code, 0);
  std::vector<std::string> by_table = args;
  by_table.insert(by_table.end(), {"--table", table, "-"});
  const CliResult t = run(by_table, read_file(kSourceDir + "/" + kRecord));
  EXPECT_EQ(t.exit_code, 0) << t.err;
  std::string expected = r.out;
  expected.replace(expected.find("(" + kGate + ")"), kGate.size() + 2, "(" + table + ")");
  EXPECT_EQ(t.out, expected);
  EXPECT_EQ(t.err,
            "replaygate explain: note: a table does not keep the policy's sensitive list: only the "
            "built-in secret names (token, authorization, ...) are redacted; explain with --policy "
            "to redact the policy's own\n");
}

// A sensitive input read from the record's key: the key, the input, its origin and the rule walk
// all show <redacted>.
TEST_F(InputFormatCli, ExplainKafkaRedactsWhatFeedsASensitiveInput) {
  const std::string mapping = (dir_ / "key.mapping.yaml").string();
  std::string text = read_file(kSourceDir + "/" + kSpring);
  const std::string from = "idempotency_key: {payload: /order/idempotency_key, optional: true}";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "idempotency_key: {record: key}");
  write_file(mapping, text);
  const CliResult r = run({"explain", "--policy", sensitive_gate(), "--input-format", "kafka",
                           "--mapping", mapping, kRecord});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  key = <redacted>\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  idempotency_key = <redacted> (from record key = <redacted>)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("idempotency_key is absent: fails (idempotency_key = <redacted>, value)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("cap_42"), std::string::npos) << r.out;
}

// A header the record lacks: the mapping's default, or absent for an optional input.
TEST_F(InputFormatCli, ExplainKafkaSaysWhenTheDefaultOrOptionalApplies) {
  const std::string first =
      lines_of(read_file(kSourceDir + "/tests/data/mapping/records.kcat.jsonl"))[0];
  const CliResult r = run(
      {"explain", "--policy", kGate, "--input-format", "kafka", "--mapping", kSpring, "-"}, first);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  attempts = 1 (header 'delivery-attempts' is missing: the mapping's "
                       "default)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  replays = null (header 'x-replay' is missing: optional, so absent)\n"),
            std::string::npos)
      << r.out;
}

TEST_F(InputFormatCli, ExplainKafkaMistakes) {
  // A mapped value that cannot be read: the record is unreadable, as in decide (exit 1).
  std::string record = read_file(kSourceDir + "/" + kRecord);
  record.replace(record.find("\"delivery-attempts\",\"2\""), 23, "\"delivery-attempts\",\"2x\"");
  CliResult r = run(
      {"explain", "--policy", kGate, "--input-format", "kafka", "--mapping", kSpring, "-"}, record);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "replaygate explain: <stdin>: unreadable record: invalid input: attempts (header "
            "'delivery-attempts' is not an integer: '2x')\n");
  r = run({"explain", "--policy", kGate, "--input-format", "kafka", kRecord});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate explain: error: --input-format kafka needs --mapping MAPPING.yaml (which "
            "header or payload field feeds each policy input)\nRun 'replaygate explain --help' for "
            "usage.\n");
  r = run({"explain", "--policy", kGate, "--input-format", "letter", kRecord});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate explain: error: --input-format must be letters, spring-kafka, kafka, "
            "kafka-connect, rabbitmq, sqs, pubsub, servicebus, sidekiq or bullmq, not "
            "'letter'; did "
            "you mean 'letters'?\nRun 'replaygate explain --help' for usage.\n");
  // --format is explain's output format, never the record format.
  r = run({"explain", "--policy", kGate, "--format", "kafka", kRecord});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate explain: error: --format must be text or json, not 'kafka'\n");
}

// review reads two JSON documents, not a dump: it has no --input-format, and says so.
// review reads its message file through a format too (tests/tools/review_format_test.cc); the
// help says how, and a mapped format still needs --mapping.
TEST_F(InputFormatCli, ReviewTakesAnInputFormatWithAMapping) {
  const CliResult help = run({"review", "--help"});
  EXPECT_NE(help.out.find("with --input-format FORMAT --mapping MAPPING, one dead-lettered broker"),
            std::string::npos)
      << help.out;
  EXPECT_NE(help.out.find("unless --message-id ID selects one"), std::string::npos) << help.out;
  const CliResult r = run({"review", "--policy", kGate, "--message", "m.json", "--record", "r.json",
                           "--input-format", "kafka"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--input-format kafka needs --mapping"), std::string::npos) << r.err;
}

}  // namespace
