// A private PostgreSQL 15 server for tests and the benchmark: initdb in a temporary directory,
// listening on 127.0.0.1 on a free port only (and a Unix socket in that directory), run as the
// `postgres` user (through runuser) when the caller is root, stopped by process id. The recipe is
// /work/shared/SERVERS.md's. Never touches a system service.
#pragma once

#include <string>

namespace replaygate::ledger::testing {

class PgServer {
 public:
  PgServer() = default;
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;
  ~PgServer() { destroy(); }

  // initdb + start. Returns "" on success, else why not (e.g. postgresql-15 is not installed).
  std::string create();
  // Starts the server again on the same directory and port (after stop()). "" or why not.
  std::string start();
  // Stops the server by its process id (SIGINT: fast shutdown) and waits until it is gone.
  void stop();
  // stop() and remove the directory.
  void destroy();

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  // postgresql://rg@127.0.0.1:PORT/DATABASE
  std::string url(const std::string& database = "postgres") const;
  // Runs SQL through psql as the superuser rg on `database`; returns psql's exit status.
  int psql(const std::string& sql, const std::string& database = "postgres") const;

 private:
  int run(const std::string& command) const;

  std::string dir_;
  int port_ = 0;
  long pid_ = 0;
};

}  // namespace replaygate::ledger::testing
