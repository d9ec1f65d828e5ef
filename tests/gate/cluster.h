// A private RabbitMQ cluster (tools/rabbitmq-cluster.sh), gate processes in the background and the
// cluster's letters, for the cluster test and the cluster benchmark (issue 41).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "amqp_test_client.h"

namespace replaygate::gate::testing {

// Runs `command` with sh: its stdout, and its exit code in *code.
std::string shell(const std::string& command, int* code = nullptr);

// N nodes on 127.0.0.1 under `dir` (node I's AMQP port base + 30*I), stopped with the object.
class Cluster {
 public:
  Cluster() = default;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  ~Cluster() { stop(); }
  // "" or why not (the script's stderr).
  std::string start(const std::string& dir, int nodes, int base_port);
  void stop();
  const std::vector<std::string>& urls() const { return urls_; }
  // kill -9 of node i; starting it again on its data ("" or why not).
  void kill(int i);
  std::string restart(int i);
  // The index of the node leading quorum queue `queue`, -1 when none answers.
  int leader(const std::string& queue);

 private:
  std::string script(const std::string& args, int* code = nullptr) const;
  std::string dir_;
  std::vector<std::string> urls_;
};

// A `replaygate` process in the background, its stdout and stderr appended to files.
struct GateProcess {
  pid_t pid = 0;
  int exit_code = -1;
  double cpu_s = 0;  // user + system, once waited for
  // "" or why it could not start.
  std::string start(const std::vector<std::string>& args, const std::string& out,
                    const std::string& err);
  void kill9();
  void wait();
  // Without waiting: true once it has exited (then exit_code and cpu_s are set).
  bool exited();
};

// One letter of the cluster mix: its message id, key and what the shipped policy does with it.
struct ClusterLetter {
  std::string id, key, what;  // what: "replay", "park" or "hold"
};
// `n` letters (ids PREFIX-I): 60% replays, 30% parks, 10% holds; `shared` keys used twice.
std::vector<ClusterLetter> cluster_letters(int n, int shared, const std::string& prefix);
// Publishes each to `work` and has the broker dead-letter it (into the queue `work` names):
// "" or why not.
std::string dead_letter_all(AmqpTestClient& client, const std::string& work,
                            const std::vector<ClusterLetter>& letters);

}  // namespace replaygate::gate::testing
