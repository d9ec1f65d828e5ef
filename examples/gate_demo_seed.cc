// examples/gate-demo.sh's helper: seeds three dead letters on a private node and shows the queues.
//
//   gate_demo_seed URL seed         declares payment.capture (dead-lettering into
//                                   payment.capture.dlq through the default exchange) and the
//                                   dead-letter queue, publishes m-1..m-3 and has the broker
//                                   dead-letter them (it writes x-death, as a reject does)
//   gate_demo_seed URL counts       prints the ready messages of each queue of the demo
//   gate_demo_seed URL drain QUEUE  takes every message of QUEUE (acks: it empties the queue) and
//                                   prints its id, body and the headers the gate reads or writes
//
// Built on the test helper tests/gate/amqp_test_client.cc (it refuses any host but 127.0.0.1):
//   g++ -std=c++20 -O1 -Itests/gate examples/gate_demo_seed.cc tests/gate/amqp_test_client.cc
//       -lrabbitmq -o gate_demo_seed
#include <cstdio>
#include <string>
#include <vector>

#include "amqp_test_client.h"

namespace {

using replaygate::gate::testing::AmqpTestClient;
using replaygate::gate::testing::Fields;
using replaygate::gate::testing::Message;

const char* const kWork = "payment.capture";
const char* const kDlq = "payment.capture.dlq";

struct Letter {
  const char* message_id;
  const char* exception_class;
  const char* key;
};

// One letter per way the reference policy (policies/replay_gate.yaml) goes for payment.capture:
// a timeout (replay_once), a declined card (never) and a class it has no row for (the default).
const Letter kLetters[] = {
    {"m-1", "java.net.SocketTimeoutException", "cap_a101"},
    {"m-2", "com.acme.payments.gateway.InsufficientFundsException", "cap_a102"},
    {"m-3", "org.springframework.web.client.HttpClientErrorException$BadRequest", "cap_a103"},
};

int fail(const std::string& what, const std::string& why) {
  std::fprintf(stderr, "gate_demo_seed: %s: %s\n", what.c_str(), why.c_str());
  return 2;
}

int seed(AmqpTestClient& client) {
  const std::string dlq = kDlq;
  for (const std::string& q : {dlq + ".parked", dlq + ".hold", dlq, std::string(kWork)}) {
    client.delete_queue(q);  // a fresh topology when seeding a node twice
  }
  if (std::string e = client.declare_queue(kDlq, true); !e.empty()) return fail(kDlq, e);
  const Fields dead_lettering = {{"x-dead-letter-exchange", std::string("")},
                                 {"x-dead-letter-routing-key", std::string(kDlq)}};
  if (std::string e = client.declare_queue(kWork, true, dead_lettering); !e.empty()) {
    return fail(kWork, e);
  }
  for (const Letter& l : kLetters) {
    const std::string body =
        std::string("{\"idempotency_key\":\"") + l.key + "\",\"committed\":false}";
    const Fields headers = {{"x-exception-class", std::string(l.exception_class)}};
    if (std::string e = client.publish("", kWork, body, headers, l.message_id); !e.empty()) {
      return fail(std::string("publishing ") + l.message_id, e);
    }
  }
  // The consumer of payment.capture rejects all three (requeue=false): the broker dead-letters
  // them into payment.capture.dlq and adds x-death and x-first-death-queue.
  if (std::string e = client.dead_letter(kWork, 3); !e.empty()) return fail("dead-lettering", e);
  if (std::string e = client.wait_for_count(kDlq, 3); !e.empty()) return fail(kDlq, e);
  std::printf("seeded 3 dead letters (m-1, m-2, m-3) into %s\n", kDlq);
  return 0;
}

int counts(AmqpTestClient& client) {
  const std::string dlq = kDlq;
  for (const std::string& q : {std::string(kWork), dlq, dlq + ".parked", dlq + ".hold"}) {
    std::string error;
    const long n = client.message_count(q, &error);
    if (n < 0) {
      std::printf("  %-28s (no such queue)\n", q.c_str());
    } else {
      std::printf("  %-28s %ld message%s\n", q.c_str(), n, n == 1 ? "" : "s");
    }
  }
  return 0;
}

int drain(AmqpTestClient& client, const std::string& queue) {
  std::string error;
  const std::vector<Message> messages = client.get_all(queue, &error);
  if (!error.empty()) return fail(queue, error);
  for (const Message& m : messages) {
    std::printf("  %s: %s", m.message_id.c_str(), m.body.c_str());
    for (const auto& [name, value] : m.headers) {
      if (name == "x-replay" || name.rfind("x-replaygate-", 0) == 0) {
        std::printf("  %s=%s", name.c_str(), value.c_str());
      }
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 2 || (args[1] == "drain") != (args.size() == 3) || args.size() > 3) {
    std::fprintf(stderr, "usage: gate_demo_seed URL seed | counts | drain QUEUE\n");
    return 2;
  }
  AmqpTestClient client;
  if (std::string e = client.connect(args[0]); !e.empty()) return fail(args[0], e);
  if (args[1] == "seed") return seed(client);
  if (args[1] == "counts") return counts(client);
  if (args[1] == "drain") return drain(client, args[2]);
  std::fprintf(stderr, "gate_demo_seed: unknown action '%s'\n", args[1].c_str());
  return 2;
}
