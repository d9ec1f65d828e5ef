// --input-format spring-kafka (kafka is another name): Spring Kafka DLT and retry-topic records
// read through a mapping with decode: and occurrence: (docs/input-mapping.md). The decodings on
// their own, the shipped example end to end (golden), and each trap of issue 20 as its own record.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "inputs/decoding.h"
#include "inputs/formats.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary
using replaygate::inputs::decode_base64;
using replaygate::inputs::decode_be_int;
using replaygate::inputs::decode_decimal;

const std::string kGate = "policies/replay_gate.yaml";
const std::string kMapping = "examples/spring-kafka.mapping.yaml";
// The example mapping as it was before issue 35 (attempts from retry_topic-attempts), to pin the
// counter's decoding: the examples no longer read it (docs/input-mapping.md "Broker delivery
// counters").
const std::string kCounterMapping = "tests/data/inputs/counters/spring-kafka.mapping.yaml";
const std::string kDump = "examples/spring-kafka-dlq.kcat.jsonl";

// ---- the decodings ----

TEST(Decodings, BeIntTakesOneTwoFourOrEightBytesSigned) {
  int64_t v = 0;
  std::string why;
  ASSERT_TRUE(decode_be_int(std::string("\x01", 1), &v, &why));
  EXPECT_EQ(v, 1);
  ASSERT_TRUE(decode_be_int("1", &v, &why));  // a lone byte 0x31 is 49, never the digit 1
  EXPECT_EQ(v, 49);
  ASSERT_TRUE(decode_be_int(std::string("\x00\x00\x00\x03", 4), &v, &why));
  EXPECT_EQ(v, 3);
  ASSERT_TRUE(decode_be_int(std::string("\x00\x00\x00\x00\x00\x00\x01\x00", 8), &v, &why));
  EXPECT_EQ(v, 256);
  ASSERT_TRUE(decode_be_int(std::string("\x01\x00", 2), &v, &why));
  EXPECT_EQ(v, 256);
  ASSERT_TRUE(decode_be_int(std::string("\xff", 1), &v, &why));  // Java byte -1
  EXPECT_EQ(v, -1);
  ASSERT_TRUE(decode_be_int(std::string("\xff\xff\xff\xfe", 4), &v, &why));
  EXPECT_EQ(v, -2);
  ASSERT_TRUE(decode_be_int(std::string("\x80\x00\x00\x00\x00\x00\x00\x00", 8), &v, &why));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_FALSE(decode_be_int(std::string("\x00\x00\x01", 3), &v, &why));
  EXPECT_EQ(why, "be-int takes 1, 2, 4 or 8 bytes, not 3");
  EXPECT_FALSE(decode_be_int(std::string(9, '\x01'), &v, &why));  // beyond int64
  EXPECT_EQ(why, "be-int takes 1, 2, 4 or 8 bytes, not 9");
  EXPECT_FALSE(decode_be_int("", &v, &why));
  EXPECT_EQ(why, "be-int takes 1, 2, 4 or 8 bytes, not 0");
}

TEST(Decodings, DecimalIsStrictAscii) {
  int64_t v = 0;
  std::string why;
  ASSERT_TRUE(decode_decimal("12", &v, &why));
  EXPECT_EQ(v, 12);
  ASSERT_TRUE(decode_decimal("-3", &v, &why));
  EXPECT_EQ(v, -3);
  EXPECT_FALSE(decode_decimal(std::string("\x03", 1), &v, &why));
  EXPECT_EQ(why, "not a decimal integer (1 byte)");
  EXPECT_FALSE(decode_decimal("one", &v, &why));
  EXPECT_EQ(why, "not a decimal integer (3 bytes)");
  EXPECT_FALSE(decode_decimal("+1", &v, &why));
  EXPECT_FALSE(decode_decimal(" 1", &v, &why));
  EXPECT_FALSE(decode_decimal("99999999999999999999", &v, &why));
  EXPECT_EQ(why, "a decimal integer beyond int64");
}

TEST(Decodings, Base64IsStrict) {
  std::string bytes, why;
  ASSERT_TRUE(decode_base64("eyJhIjoxfQ==", &bytes, &why));
  EXPECT_EQ(bytes, "{\"a\":1}");
  ASSERT_TRUE(decode_base64("", &bytes, &why));
  EXPECT_EQ(bytes, "");
  ASSERT_TRUE(decode_base64("YWJj", &bytes, &why));
  EXPECT_EQ(bytes, "abc");
  EXPECT_FALSE(decode_base64("eyJhIjoxfQ", &bytes, &why));
  EXPECT_EQ(why, "not base64: a length of 10, not a multiple of 4");
  EXPECT_FALSE(decode_base64("ey!h", &bytes, &why));
  EXPECT_EQ(why, "not base64: byte 2 is not in the base64 alphabet");
  EXPECT_FALSE(decode_base64("ab-_", &bytes, &why));  // base64url
  EXPECT_FALSE(decode_base64("QR==", &bytes, &why));  // non-canonical padding bits
  EXPECT_EQ(why, "not base64: non-zero padding bits");
  EXPECT_FALSE(decode_base64("QQ==QQ==", &bytes, &why));  // padding inside
}

// ---- the formats table ----

TEST(SpringKafkaFormat, KafkaIsAnotherNameForSpringKafka) {
  std::string error;
  replaygate::inputs::InputFormatOptions o;
  o.input_format_set = true;
  o.mapping = "m.yaml";
  o.input_format = "spring-kafka";
  const replaygate::inputs::InputFormat* spring =
      replaygate::inputs::choose_input_format(o, &error);
  ASSERT_NE(spring, nullptr) << error;
  o.input_format = "kafka";
  const replaygate::inputs::InputFormat* kafka = replaygate::inputs::choose_input_format(o, &error);
  ASSERT_NE(kafka, nullptr) << error;
  EXPECT_EQ(spring->mapping_format, "kcat-json");
  EXPECT_EQ(kafka->mapping_format, "kcat-json");
  EXPECT_EQ(spring->make_parser, kafka->make_parser);
}

// ---- end to end ----

class SpringKafkaCli : public CliFixture {
 protected:
  SpringKafkaCli() : CliFixture(kSourceDir) {}

  // Decides `records` (kcat -J lines) with the counter mapping (attempts from retry_topic-attempts,
  // to pin its decoding), or `mapping_text` when given.
  CliResult decide(const std::string& records, const std::string& mapping_text = "") {
    std::string mapping = kCounterMapping;
    if (!mapping_text.empty()) {
      mapping = (dir_ / "m.yaml").string();
      write_file(mapping, mapping_text);
    }
    return run(
        {"decide", "--policy", kGate, "--input-format", "spring-kafka", "--mapping", mapping, "-"},
        records);
  }
};

// "table":"<32 hex>" -> "table":"@TABLE@", so a policy edit elsewhere changes one golden less.
std::string without_table(const std::string& out) {
  return std::regex_replace(out, std::regex("\"table\":\"[0-9a-f]{32}\""), "\"table\":\"@TABLE@\"");
}

// One kcat -J record of a retry topic with `headers` (already JSON: "name","value",...).
std::string record(
    const std::string& headers,
    const std::string& payload = R"({\"idempotency_key\":\"k1\",\"committed\":false})") {
  return R"({"topic":"payment.capture-dlt","partition":0,"offset":7,"headers":[)" + headers +
         R"(],"key":"k1","payload":")" + payload + "\"}\n";
}
const std::string kTimeout =
    R"("kafka_original-topic","payment.capture","kafka_exception-cause-fqcn","java.net.SocketTimeoutException")";

TEST_F(SpringKafkaCli, ExampleDumpGolden) {
  const CliResult r = run({"decide", "--policy", kGate, "--input-format", "spring-kafka",
                           "--mapping", kMapping, kDump});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // bad records on purpose
  expect_golden(without_table(r.out), "inputs/spring-kafka-dlq.expected.jsonl");
  EXPECT_EQ(r.err,
            "summary: 24 records, never 6, replay_once 10, hold 8; invalid 3, maybe-duplicate "
            "holds 1, budget holds 0; replayed keys 10 in an exact set (8 KiB of the 16 MiB "
            "--replayed-keys-memory), false-positive rate 5.4e-19\n");
  // The alias reads the same records the same way.
  const CliResult alias =
      run({"decide", "--policy", kGate, "--input-format", "kafka", "--mapping", kMapping, kDump});
  EXPECT_EQ(alias.out, r.out);
  EXPECT_EQ(alias.exit_code, 1);
}

TEST_F(SpringKafkaCli, ExplainShowsTheDecodedCounter) {
  const std::vector<std::string> lines = lines_of(read_file(kSourceDir + "/" + kDump));
  ASSERT_GE(lines.size(), 6u);
  const CliResult r = run({"explain", "--policy", kGate, "--input-format", "spring-kafka",
                           "--mapping", kCounterMapping, "-"},
                          lines[5] + "\n");  // webhook.partner, a 1-byte counter 0x01
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("attempts = 1 (from header 'retry_topic-attempts'"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("replay_once"), std::string::npos) << r.out;
}

TEST_F(SpringKafkaCli, CountersOfOneFourAndEightBytes) {
  for (const auto& [bytes, verb] : std::vector<std::pair<std::string, std::string>>{
           {R"(\u0001)", "replay_once"},
           {R"(\u0000\u0000\u0000\u0002)", "replay_once"},
           {R"(\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0003)", "hold"},
           {"1", "hold"}}) {  // 0x31 = 49 attempts: exhausted, not "1"
    const CliResult r = decide(record(kTimeout + R"(,"retry_topic-attempts",")" + bytes + "\""));
    EXPECT_EQ(r.exit_code, 0) << bytes << " " << r.err;
    EXPECT_NE(r.out.find("\"verb\":\"" + verb + "\""), std::string::npos) << bytes << r.out;
  }
}

TEST_F(SpringKafkaCli, CountersThatDoNotDecodeAreInvalid) {
  for (const auto& [attempts, reason] : std::vector<std::pair<std::string, std::string>>{
           {R"("retry_topic-attempts","\u0000\u0000\u0001")",
            "invalid input: attempts (header 'retry_topic-attempts' does not decode as be-int: "
            "be-int takes 1, 2, 4 or 8 bytes, not 3)"},
           {R"("retry_topic-attempts","\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001\u0001")",
            "invalid input: attempts (header 'retry_topic-attempts' does not decode as be-int: "
            "be-int takes 1, 2, 4 or 8 bytes, not 9)"},
           {R"("retry_topic-attempts",null)",
            "invalid input: attempts (header 'retry_topic-attempts' is present but null)"},
           {"", "invalid input: attempts (header 'retry_topic-attempts' is missing)"},
           {"\"retry_topic-attempts\",\"\xff\xff\xff\xff\"",
            "invalid input: attempts (header 'retry_topic-attempts' is not valid UTF-8)"},
           {R"("retry_topic-attempts","\u0001","retry_topic-attempts","\u0002")",
            "invalid input: attempts (header 'retry_topic-attempts' appears 2 times (the mapping "
            "can say occurrence: first or last))"}}) {
    const CliResult r = decide(record(kTimeout + (attempts.empty() ? "" : "," + attempts)));
    EXPECT_EQ(r.exit_code, 1) << attempts;
    EXPECT_NE(r.out.find("\"reason\":\"" + reason + "\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"verb\":\"hold\""), std::string::npos) << r.out;
  }
}

TEST_F(SpringKafkaCli, NegativeCounterIsRefusedByThePolicy) {
  // 0xFF bytes are not UTF-8, so kcat output cannot carry them; a 2-byte 0x80 0x00 can't either.
  // A negative 1-byte counter that is ASCII-safe does not exist, so check the runtime's min: a
  // 4-byte counter 0x7f.. is huge and exhausts the budget.
  const CliResult r =
      decide(record(kTimeout + R"(,"retry_topic-attempts","\u007f\u0000\u0000\u0000")"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"rule\":\"attempts_exhausted\""), std::string::npos) << r.out;
}

TEST_F(SpringKafkaCli, RepeatedHeadersFirstAndLast) {
  const std::string hops =
      R"("kafka_original-topic","payment.capture","kafka_exception-cause-fqcn","java.net.SocketTimeoutException",)"
      R"("kafka_original-topic","payment.capture-retry-0","kafka_exception-cause-fqcn","com.acme.payments.gateway.DuplicateCaptureException",)"
      R"("retry_topic-attempts","\u0000\u0000\u0000\u0002")";
  // The example mapping: topic from the first hop, error from the last -> duplicate -> never.
  CliResult r = decide(record(hops));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"verb\":\"never\""), std::string::npos) << r.out;
  // Without occurrence:, a repeated mapped header makes the record invalid.
  std::string mapping = read_file(kSourceDir + "/" + kCounterMapping);
  for (const std::string line : {"    occurrence: first\n", "    occurrence: last\n"}) {
    mapping.erase(mapping.find(line), line.size());
  }
  r = decide(record(hops), mapping);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("invalid input: topic (header 'kafka_original-topic' appears 2 times"),
            std::string::npos)
      << r.out;
  // occurrence: last on the cause, first flipped to last on the topic: the retry topic is no
  // policy topic -> the default.
  std::string last = read_file(kSourceDir + "/" + kCounterMapping);
  last.replace(last.find("occurrence: first"), 17, "occurrence: last");
  r = decide(record(hops), last);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"rule\":\"default\""), std::string::npos) << r.out;
}

TEST_F(SpringKafkaCli, StringCountAndBodyThatIsNotJson) {
  CliResult r = decide(record(kTimeout + R"(,"retry_topic-attempts","\u0001","x-replay","one")"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("invalid input: replays (header 'x-replay' does not decode as decimal: not "
                       "a decimal integer (3 bytes))"),
            std::string::npos)
      << r.out;
  r = decide(record(kTimeout + R"(,"retry_topic-attempts","\u0001")", "not json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("\"invalid\":true"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the payload is not JSON"), std::string::npos) << r.out;
}

TEST_F(SpringKafkaCli, Base64AndJsonHeaders) {
  std::string mapping = read_file(kSourceDir + "/" + kCounterMapping);
  mapping.replace(mapping.find("decode: decimal"), 15, "decode: json");
  CliResult r =
      decide(record(kTimeout + R"(,"retry_topic-attempts","\u0001","x-replay","0")"), mapping);
  EXPECT_NE(r.out.find("\"verb\":\"replay_once\""), std::string::npos) << r.out;
  r = decide(record(kTimeout + R"(,"retry_topic-attempts","\u0001","x-replay","null")"), mapping);
  EXPECT_NE(r.out.find("invalid input: replays (header 'x-replay' is present but null)"),
            std::string::npos)
      << r.out;
  r = decide(record(kTimeout + R"(,"retry_topic-attempts","\u0001","x-replay","[1]")"), mapping);
  EXPECT_NE(r.out.find("does not decode as json: not a JSON string, integer, boolean or null"),
            std::string::npos)
      << r.out;
  mapping.replace(mapping.find("decode: json"), 12, "decode: base64");
  mapping.replace(mapping.find("type: int\n    optional: true"), 9, "type: int");
  r = decide(record(kTimeout + R"(,"retry_topic-attempts","\u0001","x-replay","MQ=")"), mapping);
  EXPECT_NE(r.out.find("invalid input: replays (header 'x-replay' does not decode as base64: not "
                       "base64: a length of 3, not a multiple of 4)"),
            std::string::npos)
      << r.out;
  r = decide(record(kTimeout + R"(,"retry_topic-attempts","\u0001","x-replay","MQ==")"), mapping);
  EXPECT_NE(r.out.find("\"rule\":\"already_replayed\""), std::string::npos) << r.out;
}

TEST_F(SpringKafkaCli, SpringBinaryHeaderNeedsBeInt) {
  std::string mapping = read_file(kSourceDir + "/" + kCounterMapping);
  mapping.erase(mapping.find("    decode: be-int\n"), 19);
  const CliResult r = decide(record(kTimeout), mapping);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("error[RG305]: header 'retry_topic-attempts' is a big-endian binary "
                       "integer in Spring Kafka, so input 'attempts' must say decode: be-int"),
            std::string::npos)
      << r.err;
  mapping = read_file(kSourceDir + "/" + kCounterMapping);
  mapping.replace(mapping.find("decode: be-int"), 14, "decode: be-long");
  EXPECT_NE(decide(record(kTimeout), mapping)
                .err.find("error[RG304]: unknown decode for input "
                          "'attempts'"),
            std::string::npos);
  mapping = read_file(kSourceDir + "/" + kCounterMapping);
  mapping.replace(mapping.find("occurrence: first"), 17, "occurrence: newest");
  EXPECT_NE(decide(record(kTimeout), mapping)
                .err.find("error[RG304]: occurrence of input 'topic' "
                          "must be first, last or count"),
            std::string::npos);
}

}  // namespace
