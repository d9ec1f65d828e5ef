// The cluster, gate processes and letters of cluster.h.
#include "cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "support/cli_runner.h"

extern char** environ;

namespace replaygate::gate::testing {

using replaygate::testing::kCliBinary;
using replaygate::testing::kSourceDir;
using replaygate::testing::shell_quote;

std::string shell(const std::string& command, int* code) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    if (code != nullptr) *code = -1;
    return out;
  }
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (code != nullptr) *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string Cluster::script(const std::string& args, int* code) const {
  return shell(shell_quote(kSourceDir + "/tools/rabbitmq-cluster.sh") + " " + args, code);
}

std::string Cluster::start(const std::string& dir, int nodes, int base_port) {
  dir_ = dir;
  int code = 0;
  const std::string err = dir + ".err";
  const std::string out = script("start " + shell_quote(dir) + " " + std::to_string(nodes) + " " +
                                     std::to_string(base_port) + " 2>" + shell_quote(err),
                                 &code);
  if (code != 0) return "tools/rabbitmq-cluster.sh start: " + replaygate::testing::read_file(err);
  urls_.clear();
  for (size_t at = 0; at < out.size();) {
    const size_t nl = out.find('\n', at);
    urls_.push_back(out.substr(at, nl - at));
    at = nl == std::string::npos ? out.size() : nl + 1;
  }
  if (static_cast<int>(urls_.size()) != nodes) return "the script printed " + out;
  return "";
}

void Cluster::stop() {
  if (dir_.empty()) return;
  script("stop " + shell_quote(dir_));
  dir_.clear();
}

void Cluster::kill(int i) { script("kill " + shell_quote(dir_) + " " + std::to_string(i)); }

std::string Cluster::restart(int i) {
  int code = 0;
  script("restart " + shell_quote(dir_) + " " + std::to_string(i) + " 2>&1", &code);
  return code == 0 ? "" : "node " + std::to_string(i) + " did not come back";
}

int Cluster::leader(const std::string& queue) {
  int code = 0;
  const std::string out = script("leader " + shell_quote(dir_) + " " + shell_quote(queue), &code);
  return code == 0 && !out.empty() ? std::stoi(out) : -1;
}

std::string GateProcess::start(const std::vector<std::string>& args, const std::string& out,
                               const std::string& err) {
  std::vector<char*> argv = {const_cast<char*>(kCliBinary.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? "" : "cannot start " + kCliBinary;
}

void GateProcess::kill9() {
  ::kill(pid, SIGKILL);
  wait();
}

namespace {

// Waits for `pid` (or only looks, with WNOHANG): true when it has exited, with its code and CPU.
bool reap(pid_t pid, int options, int* exit_code, double* cpu_s) {
  int status = 0;
  rusage ru{};
  if (::wait4(pid, &status, options, &ru) != pid) return false;
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  *cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return true;
}

}  // namespace

void GateProcess::wait() {
  if (pid > 0) reap(pid, 0, &exit_code, &cpu_s);
  pid = 0;
}

bool GateProcess::exited() {
  if (pid <= 0) return true;
  if (!reap(pid, WNOHANG, &exit_code, &cpu_s)) return false;
  pid = 0;
  return true;
}

std::vector<ClusterLetter> cluster_letters(int n, int shared, const std::string& prefix) {
  std::vector<ClusterLetter> letters;
  for (int i = 0; i < n; ++i) {
    const int kind = i % 10;
    letters.push_back({prefix + "-" + std::to_string(i),
                       prefix + "k" + std::to_string(i % (n - shared)),
                       kind < 6   ? "replay"
                       : kind < 9 ? "park"
                                  : "hold"});
  }
  return letters;
}

std::string dead_letter_all(AmqpTestClient& client, const std::string& work,
                            const std::vector<ClusterLetter>& letters) {
  for (const ClusterLetter& l : letters) {
    const std::string cls =
        l.what == "replay" ? "java.net.SocketTimeoutException"
        : l.what == "park" ? "com.acme.payments.gateway.InsufficientFundsException"
                           : "org.springframework.web.client.HttpClientErrorException$BadRequest";
    const std::string body =
        "{\"idempotency_key\":\"" + l.key + "\",\"committed\":false,\"amount_cents\":901}";
    if (std::string e = client.publish("", work, body, {{"x-exception-class", cls}}, l.id);
        !e.empty()) {
      return e;
    }
  }
  return client.dead_letter(work, letters.size());
}

}  // namespace replaygate::gate::testing
