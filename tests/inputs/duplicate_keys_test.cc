// Duplicate JSON keys in dumped records (issue 35, item 5): every reader, at every depth, refuses a
// key given twice in one object (also when one of the two is spelt with escapes) as an invalid
// record, held alone: the records after it are still decided. The DOM readers share one check
// (inputs/json_keys.h); letters and kcat check their flat objects as they read them.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "inputs/json_keys.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary
using replaygate::inputs::duplicate_key_problem;

std::string problem_of(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  EXPECT_FALSE(parser.parse(json).get(root)) << json;
  return duplicate_key_problem(root);
}

TEST(DuplicateKeyProblem, AnyDepthEscapedOrNot) {
  EXPECT_EQ(problem_of(R"({"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]})"), "");
  EXPECT_EQ(problem_of(R"([1,"x",{"k":{}}])"), "");
  EXPECT_EQ(problem_of("3"), "");
  EXPECT_EQ(problem_of(R"({"retry_count":0,"retry_count":9})"), "duplicate key 'retry_count'");
  EXPECT_EQ(problem_of(R"({"retry_count":0,"retry_coun\u0074":9})"), "duplicate key 'retry_count'");
  EXPECT_EQ(problem_of(R"({"p":{"h":{"x-death":[{"count":1,"queue":"q","count":9}]}}})"),
            "duplicate key 'count' in /p/h/x-death/0");
  // The first in document order (the one locate_duplicate_key() points at), and the pointer's
  // tokens escaped (RFC 6901) and control bytes shown escaped.
  EXPECT_EQ(problem_of(R"({"a":{"b/c~":{"x":1,"x":2}},"a":3})"), "duplicate key 'x' in /a/b~1c~0");
  EXPECT_EQ(problem_of(R"({"a\n":[[{"y":1,"y":1}]]})"), "duplicate key 'y' in /a\\u000a/0/0");
}

// One reader's case: its format and shipped mapping, a dump whose first record gives a key twice
// and whose second is good, and the first record's reason.
struct Case {
  std::string name, format, mapping, dump, reason;
};

class DuplicateKeys : public CliFixture {
 protected:
  DuplicateKeys() : CliFixture(kSourceDir) {}
  void expect_held_alone(const Case& c) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> args = {"decide", "--policy", "policies/replay_gate.yaml"};
    if (!c.format.empty()) {
      args.insert(args.end(), {"--input-format", c.format, "--mapping", c.mapping});
    }
    args.push_back("-");
    const CliResult r = run(args, c.dump);
    EXPECT_EQ(r.exit_code, 1) << r.err;  // an invalid record: exit 1, never 0 and never 2
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 2u) << r.out << r.err;
    EXPECT_NE(lines[0].find("\"verb\":\"hold\""), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("\"reason\":\"invalid record: " + c.reason + "\""), std::string::npos)
        << lines[0];
    EXPECT_NE(lines[0].find("\"invalid\":true"), std::string::npos) << lines[0];
    EXPECT_EQ(lines[1].find("\"invalid\":true"), std::string::npos) << lines[1];
    EXPECT_NE(lines[1].find("\"n\":2,"), std::string::npos) << lines[1];
  }
};

// Sidekiq: the job hash, at the top and in its arguments.
std::string sidekiq_job(const std::string& extra, const std::string& jid = "j1",
                        const std::string& arg = R"({"idempotency_key":"k1","committed":false})") {
  return R"({"retry":3,"queue":"payment.capture","class":"CaptureJob","args":[)" + arg +
         R"(],"jid":")" + jid +
         R"(","error_class":"Net::ReadTimeout","failed_at":1764403061.75,"retry_count":3)" + extra +
         "}\n";
}

TEST_F(DuplicateKeys, Sidekiq) {
  const std::string good = sidekiq_job("", "j2");
  for (const auto& [extra, arg, reason] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {R"(,"retry_count":0)", "", "duplicate key 'retry_count'"},
           {R"(,"retry_coun\u0074":0)", "", "duplicate key 'retry_count'"},
           {R"(,"queue":"mail.receipt")", "", "duplicate key 'queue'"},
           {R"(,"jid":"j9")", "", "duplicate key 'jid'"},
           {R"(,"error_class":"Payments::DuplicateCapture")", "", "duplicate key 'error_class'"},
           {"", R"({"idempotency_key":"k1","committed":true,"committed":false})",
            "duplicate key 'committed' in /args/0"},
       }) {
    const std::string bad = arg.empty() ? sidekiq_job(extra) : sidekiq_job(extra, "j1", arg);
    expect_held_alone(
        {"sidekiq " + extra + arg, "sidekiq", "examples/sidekiq.mapping.yaml", bad + good, reason});
  }
}

// RabbitMQ: a management-API message, at the top, in properties, its headers and x-death entries.
std::string rabbit_message(const std::string& id, const std::string& death_extra = "",
                           const std::string& headers_extra = "",
                           const std::string& properties_extra = "",
                           const std::string& top_extra = "") {
  return R"({"payload_bytes":10,"redelivered":false,"exchange":"","routing_key":"payment.capture.dlq",)"
         R"("message_count":0,"properties":{"delivery_mode":2,"headers":{"x-death":[{"count":1,)"
         R"("exchange":"","queue":"payment.capture","reason":"rejected")" +
         death_extra +
         R"(}],"x-exception-class":"java.net.SocketTimeoutException","x-first-death-exchange":"",)"
         R"("x-first-death-queue":"payment.capture","x-first-death-reason":"rejected")" +
         headers_extra + R"(},"message_id":")" + id + "\"" + properties_extra +
         R"(},"payload":"{\"idempotency_key\":\"k-)" + id +
         R"(\",\"committed\":false}","payload_encoding":"string")" + top_extra + "}";
}

TEST_F(DuplicateKeys, RabbitMq) {
  const std::string good = rabbit_message("m-2");
  for (const auto& [bad, reason] : std::vector<std::pair<std::string, std::string>>{
           {rabbit_message("m-1", R"(,"count":9)"),
            "duplicate key 'count' in /properties/headers/x-death/0"},
           {rabbit_message("m-1", R"(,"queu\u0065":"other")"),
            "duplicate key 'queue' in /properties/headers/x-death/0"},
           {rabbit_message("m-1", "", R"(,"x-replay":0,"x-replay":3)"),
            "duplicate key 'x-replay' in /properties/headers"},
           {rabbit_message("m-1", "", R"(,"x-exception-class":"java.lang.Error")"),
            "duplicate key 'x-exception-class' in /properties/headers"},
           {rabbit_message("m-1", "", "", R"(,"message_id":"m-3")"),
            "duplicate key 'message_id' in /properties"},
           {rabbit_message("m-1", "", "", "", R"(,"payload":"{}")"), "duplicate key 'payload'"},
       }) {
    expect_held_alone(
        {bad, "rabbitmq", "examples/rabbitmq.mapping.yaml", "[" + bad + "," + good + "]", reason});
  }
}

// SQS: a receive-message message, its Attributes and MessageAttributes.
std::string sqs_message(const std::string& id, const std::string& attributes_extra = "",
                        const std::string& replay_extra = "", const std::string& top_extra = "") {
  return R"({"MessageId":")" + id + R"(","Body":"{\"idempotency_key\":\"k-)" + id +
         R"(\",\"committed\":false,\"error\":\"timeout\"}","Attributes":{)"
         R"("ApproximateReceiveCount":"4","DeadLetterQueueSourceArn":)"
         R"("arn:aws:sqs:eu-west-1:123456789012:payment-capture")" +
         attributes_extra + R"(},"MessageAttributes":{"x-replay":{"StringValue":"0")" +
         replay_extra + R"(,"DataType":"Number"}})" + top_extra + "}";
}

TEST_F(DuplicateKeys, Sqs) {
  const std::string good = sqs_message("m-2");
  for (const auto& [bad, reason] : std::vector<std::pair<std::string, std::string>>{
           {sqs_message("m-1", R"(,"ApproximateReceiveCount":"1")"),
            "duplicate key 'ApproximateReceiveCount' in /Attributes"},
           {sqs_message("m-1", "", R"(,"StringValu\u0065":"5")"),
            "duplicate key 'StringValue' in /MessageAttributes/x-replay"},
           {sqs_message("m-1", "", "", R"(,"Body":"{}")"), "duplicate key 'Body'"},
       }) {
    expect_held_alone({bad, "sqs", "examples/sqs.mapping.yaml",
                       R"({"Messages":[)" + bad + "," + good + "]}", reason});
  }
}

// Pub/Sub: a received message, its message and attributes; messageId and message_id together.
std::string pubsub_message(const std::string& id, const std::string& attributes_extra = "",
                           const std::string& message_extra = "") {
  // data: {"idempotency_key":"k1","committed":false}
  return R"({"ackId":"a","message":{"data":"eyJpZGVtcG90ZW5jeV9rZXkiOiJrMSIsImNvbW1pdHRlZCI6ZmFsc2V9",)"
         R"("messageId":")" +
         id +
         R"(","attributes":{"CloudPubSubDeadLetterSourceSubscription":"payment-capture-worker",)"
         R"("CloudPubSubDeadLetterSourceDeliveryCount":"5","error-class":"timeout")" +
         attributes_extra + "}" + message_extra + R"(},"deliveryAttempt":1})";
}

TEST_F(DuplicateKeys, PubSub) {
  const std::string good = pubsub_message("2");
  for (const auto& [bad, reason] : std::vector<std::pair<std::string, std::string>>{
           {pubsub_message("1", R"(,"error-class":"http_400")"),
            "duplicate key 'error-class' in /message/attributes"},
           {pubsub_message("1", "", R"(,"dat\u0061":"e30=")"), "duplicate key 'data' in /message"},
           {pubsub_message("1", "", R"(,"message_id":"9")"),
            "message has both messageId and message_id"},
       }) {
    expect_held_alone({bad, "pubsub", "examples/pubsub.mapping.yaml",
                       R"({"receivedMessages":[)" + bad + "," + good + "]}", reason});
  }
}

// Service Bus: a dead-lettered message and its application properties.
std::string servicebus_message(const std::string& id, const std::string& properties_extra = "",
                               const std::string& top_extra = "") {
  return R"({"messageId":")" + id +
         R"(","sequenceNumber":7,"deliveryCount":10,"deadLetterSource":"payment-capture",)"
         R"("applicationProperties":{"error-class":"timeout")" +
         properties_extra + R"(},"body":"{\"idempotency_key\":\"k-)" + id +
         R"(\",\"committed\":false}")" + top_extra + "}\n";
}

TEST_F(DuplicateKeys, ServiceBus) {
  const std::string good = servicebus_message("m2");
  for (const auto& [bad, reason] : std::vector<std::pair<std::string, std::string>>{
           {servicebus_message("m1", R"(,"x-replay":0,"x-replay":1)"),
            "duplicate key 'x-replay' in /applicationProperties"},
           {servicebus_message("m1", "", R"(,"deliveryC\u006funt":1)"),
            "duplicate key 'deliveryCount'"},
       }) {
    expect_held_alone({bad, "servicebus", "examples/servicebus.mapping.yaml", bad + good, reason});
  }
}

// kcat -J (spring-kafka, kafka-connect): flat objects, checked as they are read.
TEST_F(DuplicateKeys, Kcat) {
  for (const auto& [format, name] : std::vector<std::pair<std::string, std::string>>{
           {"spring-kafka", "spring-kafka"}, {"kafka-connect", "kafka-connect"}}) {
    // The example dump's first record (a replay) after one that gives `headers` twice.
    const std::string good =
        lines_of(read_file(kSourceDir + "/examples/" + name + "-dlq.kcat.jsonl"))[0] + "\n";
    expect_held_alone(
        {format, format, "examples/" + name + ".mapping.yaml",
         R"({"topic":"t.DLT","partition":0,"offset":1,"key":null,"headers":[],"header\u0073":[],)"
         R"("payload":"{}"})"
         "\n" +
             good,
         "duplicate key 'headers'"});
  }
}

// A payload document (a message body, itself JSON) that gives a key twice anywhere, not only on the
// path to a mapped value: no input is read from it.
TEST_F(DuplicateKeys, PayloadAnywhere) {
  const std::string headers =
      R"("kafka_original-topic","payment.capture","kafka_exception-cause-fqcn",)"
      R"("java.net.SocketTimeoutException")";
  const auto kcat = [&](const std::string& payload) {
    return R"({"topic":"payment.capture-dlt","partition":0,"offset":7,"headers":[)" + headers +
           R"(],"key":"k1","payload":")" + payload + "\"}\n";
  };
  const CliResult r = run({"decide", "--policy", "policies/replay_gate.yaml", "--input-format",
                           "spring-kafka", "--mapping", "examples/spring-kafka.mapping.yaml", "-"},
                          kcat(R"({\"idempotency_key\":\"k1\",\"committed\":false,)"
                               R"(\"lines\":[{\"sku\":1,\"sk\\u0075\":2}]})") +
                              kcat(R"({\"idempotency_key\":\"k2\",\"committed\":false})"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_NE(lines[0].find("\"reason\":\"invalid input: idempotency_key (the payload repeats key "
                          "'sku' in /lines/0)\""),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("\"verb\":\"replay_once\""), std::string::npos) << lines[1];
}

// Letters: flat objects, checked as they are read.
TEST_F(DuplicateKeys, Letters) {
  expect_held_alone(
      {"letters", "", "",
       R"({"topic":"payment.capture","error_class":"timeout","attempts":5,"attempt\u0073":0,)"
       R"("idempotency_key":"k1","already_committed":false})"
       "\n"
       R"({"topic":"payment.capture","error_class":"timeout","attempts":1,)"
       R"("idempotency_key":"k2","already_committed":false})"
       "\n",
       "duplicate key 'attempts'"});
}

// A repeated top-level array (item 6): `{"Messages":[A],"Messages":[B,C]}` is a JSON object that
// gives a key twice; a parser keeps one of the two arrays. The stream reader decides the first
// array's records, then refuses the dump (exit 2) rather than end as if it had read them all.
TEST_F(DuplicateKeys, RepeatedTopLevelArrayIsRefused) {
  for (const auto& [format, member, a, b] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"sqs", "Messages", sqs_message("m-1"), sqs_message("m-2")},
           {"pubsub", "receivedMessages", pubsub_message("1"), pubsub_message("2")}}) {
    SCOPED_TRACE(format);
    const std::vector<std::string> args = {"decide",
                                           "--policy",
                                           "policies/replay_gate.yaml",
                                           "--input-format",
                                           format,
                                           "--mapping",
                                           "examples/" + format + ".mapping.yaml",
                                           "-"};
    for (const std::string& dump : {
             "{\"" + member + "\":[" + a + "],\"" + member + "\":[" + b + "," + b + "]}",
             // The second spelt with an escape, and with another member between.
             "{\"" + member + "\":[" + a + "],\"x\":{\"" + member + "\":[]},\"" +
                 member.substr(0, member.size() - 1) + "\\u0073\":[" + b + "]}",
         }) {
      const CliResult r = run(args, dump);
      EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
      EXPECT_EQ(lines_of(r.out).size(), 1u) << r.out;  // the first array's record, decided
      EXPECT_NE(r.err.find("cannot read standard input: the top-level object gives \"" + member +
                           "\" twice: the records of the second are not read (merge them into "
                           "one array)"),
                std::string::npos)
          << r.err;
    }
    // An escaped spelling of the member is the member (it was skipped as another key before).
    const CliResult escaped =
        run(args, "{\"" + member.substr(0, member.size() - 1) + "\\u0073\":[" + a + "]}");
    EXPECT_EQ(lines_of(escaped.out).size(), 1u) << escaped.out << escaped.err;
  }
}

}  // namespace
