// The shipped example mappings' attempt budget counts redrive cycles, never a broker's delivery
// counter (issue 35, item 9): each broker dead-letters a message only once its counter is at its
// limit, so a letter as the broker writes it on arrival in its DLQ must not be held as "attempt
// budget exhausted" (before: every real SQS, Pub/Sub, Service Bus, Sidekiq and Spring retry-topic
// letter was), while three redrives by the replay worker (x-replay 3; Sidekiq /args/0/replays 3)
// exhaust the budget whatever the broker counter says. docs/input-mapping.md "Broker delivery
// counters".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

struct Broker {
  std::string format, mapping;
  // The letter as the broker writes it on arrival in its DLQ, without (false) or with the replay
  // worker's marker at 3 (true).
  std::string (*letter)(bool redriven_three_times);
};

const std::string kBody =
    R"({\"idempotency_key\":\"k1\",\"committed\":false,\"error\":\"timeout\"})";

// SQS: ApproximateReceiveCount above maxReceiveCount (3): 4 on the first receive from the DLQ.
std::string sqs(bool redriven) {
  return R"({"Messages":[{"MessageId":"m-1","Body":")" + kBody +
         R"(","Attributes":{"ApproximateReceiveCount":"4","DeadLetterQueueSourceArn":)"
         R"("arn:aws:sqs:eu-west-1:123456789012:payment-capture"},"MessageAttributes":{)" +
         (redriven ? R"("x-replay":{"StringValue":"3","DataType":"Number"})" : "") + "}}]}";
}

// Pub/Sub: the source subscription's delivery count at maxDeliveryAttempts (5).
std::string pubsub(bool redriven) {
  // data: {"idempotency_key":"k1","committed":false}
  return R"({"receivedMessages":[{"ackId":"a","message":{"data":)"
         R"("eyJpZGVtcG90ZW5jeV9rZXkiOiJrMSIsImNvbW1pdHRlZCI6ZmFsc2V9","messageId":"1",)"
         R"("attributes":{"CloudPubSubDeadLetterSourceSubscription":"payment-capture-worker",)"
         R"("CloudPubSubDeadLetterSourceDeliveryCount":"5","error-class":"timeout")" +
         std::string(redriven ? R"(,"x-replay":"3")" : "") + R"(}},"deliveryAttempt":1}]})";
}

// Service Bus: deliveryCount at MaxDeliveryCount (10), MaxDeliveryCountExceeded.
std::string servicebus(bool redriven) {
  return R"({"messageId":"m1","sequenceNumber":7,"deliveryCount":10,)"
         R"("deadLetterSource":"payment-capture","applicationProperties":{)"
         R"("DeadLetterReason":"MaxDeliveryCountExceeded","error-class":"timeout")" +
         std::string(redriven ? R"(,"x-replay":3)" : "") + R"(},"body":")" + kBody + "\"}\n";
}

// Sidekiq: a job in the Dead set has retry_count equal to its retry (25 by default).
std::string sidekiq(bool redriven) {
  return R"({"retry":25,"queue":"payment.capture","class":"CaptureJob","args":[{)"
         R"("idempotency_key":"k1","committed":false)" +
         std::string(redriven ? R"(,"replays":3)" : "") +
         R"(}],"jid":"j1","error_class":"Net::ReadTimeout","failed_at":1764403061.75,)"
         R"("retry_count":25})"
         "\n";
}

// Spring retry topics: a -dlt record carries retry_topic-attempts maxAttempts + 1 (4, 4 bytes).
std::string spring(bool redriven) {
  return R"({"topic":"payment.capture-dlt","partition":0,"offset":7,"headers":[)"
         R"("kafka_original-topic","payment.capture","kafka_exception-cause-fqcn",)"
         R"("java.net.SocketTimeoutException","retry_topic-attempts","\u0000\u0000\u0000\u0004")" +
         std::string(redriven ? R"(,"x-replay","3")" : "") +
         R"(],"key":"k1","payload":"{\"idempotency_key\":\"k1\",\"committed\":false}"})"
         "\n";
}

// RabbitMQ 3.13+: the x-death count stays 1 across republish cycles; only x-replay counts them.
std::string rabbitmq(bool redriven) {
  return R"([{"payload_bytes":10,"redelivered":false,"exchange":"","routing_key":"payment.capture.dlq",)"
         R"("message_count":0,"properties":{"headers":{"x-death":[{"count":1,"exchange":"",)"
         R"("queue":"payment.capture","reason":"rejected"}],)"
         R"("x-exception-class":"java.net.SocketTimeoutException",)"
         R"("x-first-death-queue":"payment.capture","x-first-death-reason":"rejected")" +
         std::string(redriven ? R"(,"x-replay":3)" : "") +
         R"(},"message_id":"m-1"},"payload":"{\"idempotency_key\":\"k1\",\"committed\":false}",)"
         R"("payload_encoding":"string"}])";
}

class BrokerCounters : public CliFixture {
 protected:
  BrokerCounters() : CliFixture(kSourceDir) {}
};

TEST_F(BrokerCounters, ArrivalCountsDoNotSpendTheBudgetRedrivesDo) {
  for (const Broker& b : std::vector<Broker>{
           {"sqs", "examples/sqs.mapping.yaml", sqs},
           {"pubsub", "examples/pubsub.mapping.yaml", pubsub},
           {"servicebus", "examples/servicebus.mapping.yaml", servicebus},
           {"sidekiq", "examples/sidekiq.mapping.yaml", sidekiq},
           {"spring-kafka", "examples/spring-kafka.mapping.yaml", spring},
           {"rabbitmq", "examples/rabbitmq.mapping.yaml", rabbitmq},
       }) {
    SCOPED_TRACE(b.format);
    const std::vector<std::string> args = {
        "decide",         "--policy",      "policies/replay_gate.yaml",
        "--input-format", b.format,        "--mapping",
        b.mapping,        "--show-inputs", "-"};
    CliResult r = run(args, b.letter(false));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("\"verb\":\"replay_once\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"attempts\":0"), std::string::npos) << r.out;
    r = run(args, b.letter(true));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("\"rule\":\"attempts_exhausted\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"attempts\":3"), std::string::npos) << r.out;
  }
}

}  // namespace
