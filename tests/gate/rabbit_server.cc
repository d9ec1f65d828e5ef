// RabbitServer: a private RabbitMQ node on 127.0.0.1 for tests (see rabbit_server.h).
#include "rabbit_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace replaygate::gate::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Env = std::vector<std::pair<std::string, std::string>>;

constexpr const char* kServer = "/usr/lib/rabbitmq/bin/rabbitmq-server";
constexpr const char* kEpmd = "/usr/bin/epmd";
constexpr int kPortsAbove = 20;  // P+1 dist, P+2 epmd, P+3 management, P+10..P+20 CLI

// Binds 127.0.0.1:port (without SO_REUSEADDR, so a port in TIME_WAIT counts as taken);
// port 0 asks for a free one. Returns the bound port or 0.
int bind_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof a;
  int bound = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    bound = ntohs(a.sin_port);
  }
  close(fd);
  return bound;
}

// A port P from the kernel with P+1..P+20 free as well; 0 if none was found.
int free_port_block() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int p = bind_loopback(0);
    if (p == 0 || p + kPortsAbove > 65535) continue;
    bool all_free = true;
    for (int i = 1; i <= kPortsAbove && all_free; ++i) all_free = bind_loopback(p + i) == p + i;
    if (all_free) return p;
  }
  return 0;
}

// Whether 127.0.0.1:port accepts a TCP connection.
bool accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

// Alive and not a zombie (an exited child of ours, or of a parent that has not reaped it yet).
bool alive(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close_paren = line.rfind(')');
  return close_paren == std::string::npos || close_paren + 2 >= line.size() ||
         line[close_paren + 2] != 'Z';
}

// Reaps `pid` (our child) if it has exited; true if it is gone.
bool reap(pid_t pid) {
  if (pid <= 0) return true;
  int status = 0;
  const pid_t r = waitpid(pid, &status, WNOHANG);
  return r == pid || (r < 0 && errno == ECHILD);
}

// Waits until `done()` or the timeout; polls every 50 ms.
template <typename F>
bool wait_until(F done, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// The test process's environment without RABBITMQ_* and ERL_* and the overridden names, plus
// the overrides: what a child gets. The test process's own environment is never changed.
std::vector<std::string> child_environment(const Env& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const std::string_view name = kv.substr(0, kv.find('='));
    if (name.starts_with("RABBITMQ_") || name.starts_with("ERL_")) continue;
    bool overridden = false;
    for (const auto& [k, v] : overrides) overridden = overridden || name == k;
    if (!overridden) out.emplace_back(kv);
  }
  for (const auto& [k, v] : overrides) out.push_back(k + "=" + v);
  return out;
}

// fork + execve of `exe` with `args` (argv[1..]) and `env`, in `cwd`, stdin from /dev/null,
// stdout and stderr appended to `log`; in a new session when `new_session`. The child gets
// SIGTERM when the calling thread exits (PR_SET_PDEATHSIG), so a crashed test leaves no node.
// Returns the child's pid, or 0 with *why set.
pid_t spawn(const std::string& exe, const std::vector<std::string>& args,
            const std::vector<std::string>& env, const std::string& cwd, const std::string& log,
            bool new_session, std::string* why) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (null_fd < 0 || log_fd < 0) {
    *why = "cannot open /dev/null or " + log + ": " + std::strerror(errno);
    if (null_fd >= 0) close(null_fd);
    if (log_fd >= 0) close(log_fd);
    return 0;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here on.
    if (new_session) setsid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (chdir(cwd.c_str()) != 0) _exit(127);
    if (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) _exit(127);
    // Sockets of the test process (e.g. AMQP connections) must not leak into the node.
    if (close_range(3, ~0U, 0) != 0) {
      for (int fd = 3; fd < 4096; ++fd) close(fd);
    }
    execve(exe.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  const int fork_errno = errno;
  close(null_fd);
  close(log_fd);
  if (pid < 0) {
    *why = std::string("fork failed: ") + std::strerror(fork_errno);
    return 0;
  }
  return pid;
}

// The last `n` bytes of a file, for error messages.
std::string tail(const std::string& path, std::size_t n = 1500) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > n) s = "..." + s.substr(s.size() - n);
  return s;
}

pid_t read_pid_file(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  in >> pid;
  return pid > 0 ? static_cast<pid_t>(pid) : 0;
}

std::string cookie() {
  std::ifstream random("/dev/urandom", std::ios::binary);
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  for (int i = 0; i < 32; ++i) {
    const unsigned char c = static_cast<unsigned char>(random.get());
    out += kAlnum[c % (sizeof kAlnum - 1)];
  }
  return out;
}

}  // namespace

std::string RabbitServer::url() const {
  return "amqp://guest:guest@127.0.0.1:" + std::to_string(port_) + "/";
}

std::string RabbitServer::management_url() const {
  return "http://127.0.0.1:" + std::to_string(port_ + 3);
}

std::string RabbitServer::create() {
  if (access(kServer, X_OK) != 0 || access(kEpmd, X_OK) != 0) {
    return std::string("rabbitmq-server is not installed (") + kServer + " or " + kEpmd +
           " is missing): run tools/setup.sh as root, which installs it";
  }
  destroy();
  char tmpl[] = "/tmp/rg-gate-rabbit-XXXXXX";
  if (!mkdtemp(tmpl)) return std::string("mkdtemp failed: ") + std::strerror(errno);
  dir_ = tmpl;
  std::string why;
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = free_port_block();
    if (port_ == 0) return "no free block of 21 ports on 127.0.0.1";
    why = write_files();
    if (!why.empty()) return why;
    why = start_epmd();
    if (why.empty()) why = start_node();
    if (why.empty()) return "";
    stop();
  }
  return why;
}

std::string RabbitServer::write_files() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* sub : {"mnesia", "log", "conf.d", "home"}) {
    fs::create_directories(dir_ + "/" + sub, ec);
    if (ec) return "cannot create " + dir_ + "/" + sub + ": " + ec.message();
  }
  const std::string cookie_path = dir_ + "/home/.erlang.cookie";
  fs::remove(cookie_path, ec);  // mode 0400: rewriting it needs it gone first
  {
    std::ofstream(dir_ + "/rabbitmq-env.conf", std::ios::trunc);
    std::ofstream(cookie_path, std::ios::trunc) << cookie();
    std::ofstream(dir_ + "/rabbitmq.conf", std::ios::trunc)
        << "management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = " << port_ + 3 << "\n";
    std::ofstream(dir_ + "/enabled_plugins", std::ios::trunc)
        << (management_ ? "[rabbitmq_management].\n" : "[].\n");
  }
  if (chmod(cookie_path.c_str(), 0400) != 0) return "cannot chmod " + cookie_path;
  // A new port means a new node name, so a retried create() starts from an empty database.
  fs::remove_all(dir_ + "/mnesia", ec);
  fs::create_directories(dir_ + "/mnesia", ec);
  return "";
}

namespace {

Env node_environment(const std::string& b, int p) {
  const char* path = std::getenv("PATH");
  return {
      {"RABBITMQ_NODENAME", "rg" + std::to_string(p) + "@localhost"},
      {"RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1"},
      {"RABBITMQ_NODE_PORT", std::to_string(p)},
      {"RABBITMQ_DIST_PORT", std::to_string(p + 1)},
      {"ERL_EPMD_PORT", std::to_string(p + 2)},
      {"ERL_EPMD_ADDRESS", "127.0.0.1"},
      {"RABBITMQ_CTL_DIST_PORT_MIN", std::to_string(p + 10)},
      {"RABBITMQ_CTL_DIST_PORT_MAX", std::to_string(p + 20)},
      {"RABBITMQ_MNESIA_BASE", b + "/mnesia"},
      {"RABBITMQ_LOG_BASE", b + "/log"},
      {"RABBITMQ_PID_FILE", b + "/node.pid"},
      {"RABBITMQ_CONF_ENV_FILE", b + "/rabbitmq-env.conf"},
      {"RABBITMQ_CONFIG_FILE", b + "/rabbitmq.conf"},
      {"RABBITMQ_CONFIG_FILES", b + "/conf.d"},
      {"RABBITMQ_ADVANCED_CONFIG_FILE", b + "/advanced.config"},
      {"RABBITMQ_ENABLED_PLUGINS_FILE", b + "/enabled_plugins"},
      {"HOME", b + "/home"},
      {"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "-kernel inet_dist_use_interface {127,0,0,1}"},
      {"PATH", std::string("/usr/lib/rabbitmq/bin:") +
                   (path && *path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")},
  };
}

}  // namespace

std::string RabbitServer::start_epmd() {
  if (epmd_pid_ > 0) return "";
  const int epmd_port = port_ + 2;
  std::string why;
  epmd_pid_ = spawn(kEpmd, {"-port", std::to_string(epmd_port), "-address", "127.0.0.1"},
                    child_environment(node_environment(dir_, port_)), dir_, dir_ + "/epmd.log",
                    false, &why);
  if (epmd_pid_ == 0) return "cannot start epmd: " + why;
  // The node must find this epmd listening, or its first Erlang process starts `epmd -daemon`,
  // which outlives the node.
  if (!wait_until([&] { return accepts(epmd_port) || reap(epmd_pid_); },
                  std::chrono::seconds(10)) ||
      !accepts(epmd_port)) {
    const std::string log = tail(dir_ + "/epmd.log");
    stop_epmd();
    return "epmd did not listen on 127.0.0.1:" + std::to_string(epmd_port) + ": " + log;
  }
  return "";
}

std::string RabbitServer::start_node() {
  if (node_pid_ > 0) return "";
  if (dir_.empty() || port_ == 0) return "start_node() before create()";
  std::string why = start_epmd();
  if (!why.empty()) return why;
  const std::string pid_file = dir_ + "/node.pid";
  std::error_code ec;
  std::filesystem::remove(pid_file, ec);  // never read a previous run's pid
  shell_pid_ = spawn(kServer, {}, child_environment(node_environment(dir_, port_)), dir_,
                     dir_ + "/stdout.log", true, &why);
  if (shell_pid_ == 0) return "cannot start rabbitmq-server: " + why;
  bool exited = false;
  const bool up = wait_until(
      [&] {
        exited = reap(shell_pid_);
        return exited || accepts(port_);
      },
      std::chrono::seconds(60));
  if (!up || exited) {
    if (exited) shell_pid_ = 0;
    kill_node_group();
    return std::string(exited ? "rabbitmq-server exited" : "the AMQP port did not accept in 60 s") +
           " (port " + std::to_string(port_) + "); see " + dir_ +
           "/stdout.log: " + tail(dir_ + "/stdout.log");
  }
  wait_until([&] { return read_pid_file(pid_file) > 0; }, std::chrono::seconds(5));
  node_pid_ = read_pid_file(pid_file);
  if (node_pid_ <= 0) {
    kill_node_group();
    return "the node accepted on port " + std::to_string(port_) + " but wrote no " + pid_file;
  }
  return "";
}

void RabbitServer::kill_node_group() {
  if (shell_pid_ > 0) {
    kill(-shell_pid_, SIGKILL);  // the script's session: setsid made it the group leader
    wait_until([&] { return reap(shell_pid_); }, std::chrono::seconds(5));
    // beam.smp and erl_child_setup are reaped by the script or by init.
    wait_until([&] { return kill(-shell_pid_, 0) != 0; }, std::chrono::seconds(5));
    shell_pid_ = 0;
  }
  node_pid_ = 0;
}

void RabbitServer::stop_node() {
  if (node_pid_ > 0) {
    // SIGTERM: the VM stops RabbitMQ gracefully (about 1 s without plugins).
    kill(node_pid_, SIGTERM);
    if (!wait_until(
            [&] {
              reap(shell_pid_);
              return !alive(node_pid_);
            },
            std::chrono::seconds(30))) {
      kill(node_pid_, SIGKILL);
      wait_until([&] { return !alive(node_pid_); }, std::chrono::seconds(5));
    }
    node_pid_ = 0;
  }
  if (shell_pid_ > 0) {
    // The script exits once the VM is gone; anything left in its group is killed.
    if (wait_until([&] { return reap(shell_pid_); }, std::chrono::seconds(5)) &&
        kill(-shell_pid_, 0) != 0) {
      shell_pid_ = 0;
    } else {
      kill_node_group();
    }
  }
}

void RabbitServer::stop_epmd() {
  if (epmd_pid_ <= 0) return;
  kill(epmd_pid_, SIGTERM);
  if (!wait_until([&] { return reap(epmd_pid_); }, std::chrono::seconds(5))) {
    kill(epmd_pid_, SIGKILL);
    wait_until([&] { return reap(epmd_pid_); }, std::chrono::seconds(5));
  }
  epmd_pid_ = 0;
}

void RabbitServer::stop() {
  stop_node();
  stop_epmd();
}

void RabbitServer::destroy() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
  port_ = 0;
}

std::string RabbitServer::ctl(const std::vector<std::string>& args) const {
  if (node_pid_ <= 0) return "ctl() without a running node";
  std::string why;
  const pid_t pid =
      spawn("/usr/lib/rabbitmq/bin/rabbitmqctl", args,
            child_environment(node_environment(dir_, port_)), dir_, dir_ + "/ctl.log", false, &why);
  if (pid == 0) return "cannot run rabbitmqctl: " + why;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return "rabbitmqctl failed; see " + dir_ + "/ctl.log";
  }
  return "";
}

}  // namespace replaygate::gate::testing
