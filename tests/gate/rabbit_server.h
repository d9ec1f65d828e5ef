// A private RabbitMQ 3.10 node for tests: a temporary directory, 127.0.0.1 and free ports only, its
// own epmd, no plugins, stopped by process id. The recipe is /work/shared/SERVERS.md's; every
// RABBITMQ_*/ERL_* override goes into the children's environment only. Never a system service.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace replaygate::gate::testing {

// One node per test suite (starting one takes about 6 s): create() in SetUpTestSuite, the
// destructor (or destroy()) in TearDownTestSuite. Not thread-safe. The children get
// PR_SET_PDEATHSIG, so they stop when the thread that started them exits: create and
// start_node from a thread that outlives the node (the main thread in GoogleTest).
class RabbitServer {
 public:
  RabbitServer() = default;
  RabbitServer(const RabbitServer&) = delete;
  RabbitServer& operator=(const RabbitServer&) = delete;
  ~RabbitServer() { destroy(); }

  // Makes the directory, finds a free port P (P+1..P+20 free too), starts epmd on P+2 and the
  // node on P, and waits (60 s at most) until the AMQP port accepts. Returns "" on success, else
  // why not (e.g. rabbitmq-server is not installed). Retries on fresh ports when a start fails.
  std::string create();
  // Starts the node again on the same directory, node name and ports (after stop_node()), so
  // durable queues and persistent messages are recovered. "" or why not.
  std::string start_node();
  // Stops the node only (SIGTERM to the pid in the pid file; SIGKILL after 30 s); epmd keeps
  // running for start_node().
  void stop_node();
  // stop_node(), then stops epmd by its pid.
  void stop();
  // stop() and removes the directory.
  void destroy();

  bool running() const { return node_pid_ > 0; }
  // The AMQP port P on 127.0.0.1 (0 before create()).
  int port() const { return port_; }
  // amqp://guest:guest@127.0.0.1:P/ (guest may log in over loopback).
  std::string url() const;
  // Before create(): enable the management plugin (HTTP API on 127.0.0.1:P+3; about 3 s more to
  // start, 5 s more to stop).
  void enable_management() { management_ = true; }
  // Runs /usr/lib/rabbitmq/bin/rabbitmqctl ARGS against the node (about 1 s; output in
  // DIR/ctl.log). "" or why not.
  std::string ctl(const std::vector<std::string>& args) const;
  // http://127.0.0.1:P+3 (with enable_management()).
  std::string management_url() const;
  // The node's temporary directory (logs in log/ and stdout.log).
  const std::string& dir() const { return dir_; }

 private:
  std::string write_files();
  std::string start_epmd();
  void stop_epmd();
  void kill_node_group();

  std::string dir_;
  int port_ = 0;
  bool management_ = false;
  pid_t shell_pid_ = 0;  // our child: the rabbitmq-server script (session and group leader)
  pid_t node_pid_ = 0;   // beam.smp, from the pid file
  pid_t epmd_pid_ = 0;
};

}  // namespace replaygate::gate::testing
