// A test suite sharing one private RabbitMQ node (rabbit_server.h): started before its first
// test, stopped by process id after its last; every test is skipped when no node starts. Also the
// CLI runner's names every RabbitMQ suite uses.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "rabbit_server.h"
#include "support/cli_runner.h"

namespace replaygate::gate::testing {

using nlohmann::json;
using replaygate::testing::CliResult;
using replaygate::testing::CliRun;
using replaygate::testing::kCliBinary;
using replaygate::testing::kSourceDir;
using replaygate::testing::lines_of;
using replaygate::testing::read_file;
using replaygate::testing::run_cli;
using replaygate::testing::run_cli_args;
using replaygate::testing::ScratchDir;
using replaygate::testing::write_file;

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
