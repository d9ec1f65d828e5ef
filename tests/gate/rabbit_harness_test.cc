// The RabbitMQ test harness against a real private node: broker-made dead letters with x-death,
// message counts, channel errors as strings, a node restart that keeps persistent messages, and a
// header of nested arrays 26,000 deep. One node per test process (ctest runs each test in its own
// process); when rabbitmq-server is not installed every test FAILS with that message.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "amqp_test_client.h"
#include "rabbit_server.h"

namespace replaygate::gate::testing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

class RabbitHarness : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new RabbitServer();
    const auto t0 = Clock::now();
    start_error_ = new std::string(server_->create());
    std::cerr << "[rabbit] node on port " << server_->port() << " up in " << seconds_since(t0)
              << " s\n";
  }
  static void TearDownTestSuite() {
    const auto t0 = Clock::now();
    delete server_;  // stops the node and epmd by pid, removes the directory
    server_ = nullptr;
    std::cerr << "[rabbit] node stopped in " << seconds_since(t0) << " s\n";
    delete start_error_;
    start_error_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(start_error_->empty()) << "no RabbitMQ node for the test: " << *start_error_;
    ASSERT_EQ(client_.connect(server_->url()), "");
  }

  static RabbitServer* server_;
  static std::string* start_error_;
  AmqpTestClient client_;
};

RabbitServer* RabbitHarness::server_ = nullptr;
std::string* RabbitHarness::start_error_ = nullptr;

TEST_F(RabbitHarness, UrlNamesLoopbackAndThePort) {
  EXPECT_GT(server_->port(), 0);
  EXPECT_EQ(server_->url(),
            "amqp://guest:guest@127.0.0.1:" + std::to_string(server_->port()) + "/");
  EXPECT_TRUE(server_->running());
}

TEST_F(RabbitHarness, BrokerDeadLettersWithXDeathAndKeepsHeaders) {
  AmqpTestClient& c = client_;
  ASSERT_EQ(c.declare_queue("work.dlq", /*durable=*/true), "");
  ASSERT_EQ(c.declare_queue("work", /*durable=*/true,
                            {{"x-dead-letter-exchange", std::string()},
                             {"x-dead-letter-routing-key", std::string("work.dlq")}}),
            "");
  for (int64_t i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i);
    ASSERT_EQ(c.publish("", "work", "body-" + n,
                        {{"x-custom", std::string("value-" + n)}, {"x-attempt", i}}, "id-" + n),
              "");
  }
  EXPECT_EQ(c.message_count("work"), 3);
  EXPECT_EQ(c.message_count("work.dlq"), 0);

  ASSERT_EQ(c.dead_letter("work", 3), "");
  ASSERT_EQ(c.wait_for_count("work.dlq", 3), "");
  EXPECT_EQ(c.message_count("work"), 0);

  std::string error;
  const std::vector<Message> dead = c.get_all("work.dlq", &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(dead.size(), 3u);
  for (std::size_t i = 0; i < dead.size(); ++i) {
    const Message& m = dead[i];
    const std::string n = std::to_string(i);
    SCOPED_TRACE("message " + n);
    EXPECT_EQ(m.body, "body-" + n);
    EXPECT_EQ(m.message_id, "id-" + n);
    EXPECT_FALSE(m.redelivered);
    EXPECT_EQ(m.x_death_queues, std::vector<std::string>{"work"});
    EXPECT_EQ(m.x_death_counts, std::vector<int64_t>{1});
    EXPECT_EQ(m.headers.at("x-custom"), "value-" + n);
    EXPECT_EQ(m.headers.at("x-attempt"), n);
    EXPECT_EQ(m.headers.at("x-death"), "array(1)");
    // 3.10.8 writes x-first-death-* (and no x-last-death-*).
    EXPECT_EQ(m.headers.at("x-first-death-queue"), "work");
    EXPECT_EQ(m.headers.at("x-first-death-reason"), "rejected");
    EXPECT_EQ(m.headers.count("x-last-death-queue"), 0u);
  }
  // get_all acked everything: the dead-letter queue is drained.
  EXPECT_EQ(c.message_count("work.dlq"), 0);
  const std::string empty = c.dead_letter("work", 1);
  EXPECT_NE(empty.find("held 0 messages"), std::string::npos) << empty;
}

TEST_F(RabbitHarness, ErrorsComeBackAsStringsAndTheClientStaysUsable) {
  AmqpTestClient& c = client_;
  std::string error;
  EXPECT_EQ(c.message_count("missing", &error), -1);
  EXPECT_NE(error.find("404"), std::string::npos) << error;

  ASSERT_EQ(c.declare_queue("errors", /*durable=*/false), "");
  const std::string inequivalent = c.declare_queue("errors", /*durable=*/true);
  EXPECT_NE(inequivalent.find("406"), std::string::npos) << inequivalent;

  const std::string no_exchange = c.publish("no-such-exchange", "x", "lost");
  EXPECT_NE(no_exchange.find("404"), std::string::npos) << no_exchange;
  const std::string unroutable = c.publish("", "no-such-queue", "lost");
  EXPECT_NE(unroutable.find("unroutable: 312"), std::string::npos) << unroutable;

  // The channels were reopened (and confirm mode selected again): publishing still works.
  ASSERT_EQ(c.publish("", "errors", "a"), "");
  ASSERT_EQ(c.publish("", "errors", "b", {}, "", /*persistent=*/false), "");
  long purged = 0;
  ASSERT_EQ(c.purge_queue("errors", &purged), "");
  EXPECT_EQ(purged, 2);
  ASSERT_EQ(c.delete_queue("errors"), "");
  EXPECT_EQ(c.message_count("errors"), -1);

  // An exchange and a binding; a quorum queue with an integer argument.
  ASSERT_EQ(c.declare_exchange("events", "direct"), "");
  ASSERT_EQ(c.declare_queue("events.q", true), "");
  ASSERT_EQ(c.bind("events.q", "events", "k"), "");
  ASSERT_EQ(c.publish("events", "k", "routed"), "");
  ASSERT_EQ(
      c.declare_queue("quorum.q", true,
                      {{"x-queue-type", std::string("quorum")}, {"x-delivery-limit", int64_t{2}}}),
      "");
  ASSERT_EQ(c.publish("", "quorum.q", "q"), "");
  EXPECT_EQ(c.wait_for_count("quorum.q", 1), "");
  const std::vector<Message> routed = c.get_all("events.q", &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(routed.size(), 1u);
  EXPECT_EQ(routed[0].body, "routed");

  // Another host than 127.0.0.1 is never a target; a wrong password is an error, not a crash.
  AmqpTestClient other;
  const std::string port = std::to_string(server_->port());
  EXPECT_NE(other.connect("amqp://guest:guest@localhost:" + port + "/").find("127.0.0.1 only"),
            std::string::npos);
  EXPECT_NE(other.connect("amqp://guest:wrong@127.0.0.1:" + port + "/"), "");
  EXPECT_FALSE(other.connected());
  EXPECT_NE(other.publish("", "x", "y"), "");
}

TEST_F(RabbitHarness, NodeRestartKeepsPersistentMessagesOfADurableQueue) {
  AmqpTestClient& c = client_;
  ASSERT_EQ(c.declare_queue("keep", /*durable=*/true), "");
  ASSERT_EQ(c.publish("", "keep", "p1", {{"x-n", int64_t{1}}}, "m1", /*persistent=*/true), "");
  ASSERT_EQ(c.publish("", "keep", "t1", {}, "m2", /*persistent=*/false), "");
  ASSERT_EQ(c.publish("", "keep", "p2", {}, "m3", /*persistent=*/true), "");
  EXPECT_EQ(c.message_count("keep"), 3);
  c.close();

  const int port = server_->port();
  auto t0 = Clock::now();
  server_->stop_node();
  std::cerr << "[rabbit] stop_node in " << seconds_since(t0) << " s\n";
  EXPECT_FALSE(server_->running());
  EXPECT_NE(c.connect(server_->url()), "");  // nothing listens while the node is down
  t0 = Clock::now();
  ASSERT_EQ(server_->start_node(), "");
  std::cerr << "[rabbit] start_node in " << seconds_since(t0) << " s\n";
  EXPECT_EQ(server_->port(), port);

  ASSERT_EQ(c.connect(server_->url()), "");
  EXPECT_EQ(c.message_count("keep"), 2);  // the transient message did not survive
  std::string error;
  const std::vector<Message> kept = c.get_all("keep", &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].body, "p1");
  EXPECT_EQ(kept[0].message_id, "m1");
  EXPECT_EQ(kept[0].headers.at("x-n"), "1");
  EXPECT_EQ(kept[1].body, "p2");
  EXPECT_EQ(kept[1].message_id, "m3");
}

TEST_F(RabbitHarness, HeaderOfNestedArrays26000DeepRoundTrips) {
  AmqpTestClient& c = client_;
  ASSERT_EQ(c.declare_queue("poison", /*durable=*/true), "");
  {
    const NestedArrayHeader deep("poison", 26000);
    ASSERT_EQ(c.publish_raw_headers("", "poison", "deep", deep.table(), "deep-1"), "");
  }
  EXPECT_EQ(c.message_count("poison"), 1);
  std::string error;
  const std::vector<Message> got = c.get_all("poison", &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, "deep");
  EXPECT_EQ(got[0].message_id, "deep-1");
  EXPECT_EQ(got[0].headers.at("poison"), "array(1)");
  EXPECT_EQ(c.message_count("poison"), 0);
}

}  // namespace
}  // namespace replaygate::gate::testing
