// A test suite sharing one private RabbitMQ node (rabbit_server.h): started before its first
// test, stopped by process id after its last; every test is skipped when no node starts.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "rabbit_server.h"

namespace replaygate::gate::testing {

class RabbitSuite : public ::testing::Test {
 protected:
  // Starts the node (with the management plugin when asked): a suite's SetUpTestSuite.
  static void start_node(bool management = false) {
    server_ = new RabbitServer();
    if (management) server_->enable_management();
    const std::string error = server_->create();
    if (!error.empty()) {
      delete server_;
      server_ = nullptr;
      GTEST_SKIP() << "no RabbitMQ node: " << error;
    }
  }
  static void SetUpTestSuite() { start_node(); }
  static void TearDownTestSuite() {
    delete server_;  // stops the node and epmd by pid, removes its directory
    server_ = nullptr;
  }

  inline static RabbitServer* server_ = nullptr;
};

}  // namespace replaygate::gate::testing
