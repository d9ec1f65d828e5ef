// A private redis-server and real Sidekiq runs for tests (redis_server.h).
#include "redis_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace replaygate::gate::testing {
namespace {

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string capture(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Starts `argv` in its own session with stdout and stderr into `log`; its pid, or 0.
pid_t spawn(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log,
            const std::vector<std::string>& env) {
  const pid_t pid = fork();
  if (pid != 0) return pid < 0 ? 0 : pid;
  setsid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
  if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
  for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
  std::FILE* out = std::fopen(log.c_str(), "a");
  if (out != nullptr) {
    dup2(fileno(out), 1);
    dup2(fileno(out), 2);
  }
  std::FILE* in = std::fopen("/dev/null", "r");
  if (in != nullptr) dup2(fileno(in), 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

void stop_pid(pid_t pid, int sig) {
  if (pid <= 0) return;
  kill(pid, sig);
  for (int i = 0; i < 1000; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

std::string RedisServer::create() {
  if (access("/usr/bin/redis-server", X_OK) != 0) {
    return "redis-server is not installed: run tools/setup.sh as root, which installs it";
  }
  char tmpl[] = "/tmp/rg-redis-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return "mkdtemp failed";
  dir_ = tmpl;
  std::string why;
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = free_port();
    why = start();
    if (why.empty()) return "";
  }
  return why;
}

std::string RedisServer::start() {
  pid_ = spawn({"/usr/bin/redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                "--dir", dir_, "--save", "", "--appendonly", "yes", "--appendfsync", "always",
                "--daemonize", "no", "--protected-mode", "yes"},
               dir_, dir_ + "/redis.log", {});
  if (pid_ == 0) return "cannot start redis-server";
  for (int i = 0; i < 1000; ++i) {
    if (cli({"PING"}) == "PONG") return "";
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = 0;
      return "redis-server exited; see " + dir_ + "/redis.log";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "redis-server did not answer PING in 10 s; see " + dir_ + "/redis.log";
}

void RedisServer::stop() {
  stop_pid(pid_, SIGTERM);
  pid_ = 0;
}

void RedisServer::kill9() {
  stop_pid(pid_, SIGKILL);
  pid_ = 0;
}

void RedisServer::destroy() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

std::string RedisServer::cli(const std::vector<std::string>& args) const {
  std::string command = "redis-cli -h 127.0.0.1 -p " + std::to_string(port_);
  for (const std::string& a : args) command += " " + quote(a);
  return capture(command + " 2>&1");
}

std::string run_sidekiq(const std::string& dir, const std::string& url,
                        const std::string& ruby_worker, const std::string& ruby_push,
                        const std::vector<std::string>& queues, long dead_count,
                        const std::string& runs_file, long runs) {
  std::ofstream(dir + "/worker.rb") << ruby_worker;
  std::ofstream(dir + "/push.rb") << "require_relative \"worker\"\n" << ruby_push;
  const std::string env = "REDIS_URL=" + quote(url) + " RUNS_FILE=" + quote(runs_file);
  if (!ruby_push.empty() &&
      std::system(("cd " + quote(dir) + " && " + env + " ruby push.rb >>push.log 2>&1").c_str()) !=
          0) {
    return "ruby push.rb failed; see " + dir + "/push.log";
  }
  std::vector<std::string> argv = {"sidekiq", "-r", "./worker.rb", "-c", "2", "-t", "1"};
  for (const std::string& q : queues) argv.insert(argv.end(), {"-q", q});
  const pid_t pid =
      spawn(argv, dir, dir + "/sidekiq.log", {"REDIS_URL=" + url, "RUNS_FILE=" + runs_file});
  if (pid == 0) return "cannot start sidekiq";
  const std::string port = url.substr(url.rfind(':') + 1, url.rfind('/') - url.rfind(':') - 1);
  std::string why = "the Dead set did not reach " + std::to_string(dead_count) +
                    " jobs in 60 s; see " + dir + "/sidekiq.log";
  for (int i = 0; i < 600; ++i) {
    if (runs > 0) {
      const std::string n = capture("cat " + quote(runs_file) + " 2>/dev/null | wc -l");
      if (std::atol(n.c_str()) >= runs) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        why.clear();
        break;
      }
    } else {
      const std::string n = capture("redis-cli -h 127.0.0.1 -p " + port + " ZCARD dead");
      if (std::atol(n.c_str()) >= dead_count) {
        why.clear();
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop_pid(pid, SIGTERM);
  return why;
}

}  // namespace replaygate::gate::testing
