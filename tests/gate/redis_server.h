// A private redis-server (Debian 12, 7.0) for tests: a temporary directory, 127.0.0.1 and a free
// port only, an append-only file with appendfsync always, no RDB snapshots, stopped by process id.
// The recipe is /work/shared/SERVERS.md's. Never a system service. Also runs real Sidekiq (Debian's
// ruby-sidekiq) against it, to make dead jobs of Sidekiq's own shape.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace replaygate::gate::testing {

// One server per test suite (starting one takes about 50 ms; tests FLUSHALL between them).
class RedisServer {
 public:
  RedisServer() = default;
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer() { destroy(); }

  // Makes the directory, finds a free port, starts the server and waits (10 s at most) until it
  // answers PING. "" or why not (e.g. redis-server is not installed).
  std::string create();
  // Starts the server again on the same directory and port (after stop() or kill9()): its AOF
  // is replayed. "" or why not.
  std::string start();
  // SIGTERM by pid (the server flushes its AOF), then waits until it is gone.
  void stop();
  // SIGKILL by pid: what a crash or a power cut leaves (with appendfsync always, every
  // acknowledged write is on disk).
  void kill9();
  void destroy();

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_) + "/0"; }
  const std::string& dir() const { return dir_; }
  // redis-cli ARGS against the server; its stdout (trailing newline removed). For set-up only.
  std::string cli(const std::vector<std::string>& args) const;

 private:
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = 0;
};

// Runs real Sidekiq 6 against `url`: writes `ruby_worker` (worker classes) into `dir`/worker.rb,
// runs `ruby_push` (pushing jobs, with worker.rb required) and then `sidekiq -r ./worker.rb -q
// QUEUES` until the Dead set holds `dead_count` jobs (60 s at most), then stops it by pid (TERM).
// `runs_file` (when set) is RUNS_FILE in the workers' environment; with `runs` > 0 the wait is
// instead for `runs` lines in it (then 500 ms for the last deaths to be written). "" or why not.
std::string run_sidekiq(const std::string& dir, const std::string& url,
                        const std::string& ruby_worker, const std::string& ruby_push,
                        const std::vector<std::string>& queues, long dead_count,
                        const std::string& runs_file, long runs = 0);

}  // namespace replaygate::gate::testing
