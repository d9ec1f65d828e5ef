#include "pg_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace replaygate::ledger::testing {
namespace {

// RG_PG_BIN overrides where the server programs are (a test of the "not installed" message sets
// it to a missing directory).
std::string bin_dir() {
  const char* env = std::getenv("RG_PG_BIN");
  return env && *env ? env : "/usr/lib/postgresql/15/bin";
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string as_postgres(const std::string& command) {
  // PostgreSQL refuses to run as root.
  if (geteuid() == 0) return "runuser -u postgres -- " + command;
  return command;
}

}  // namespace

int PgServer::run(const std::string& command) const {
  const std::string full = "(" + command + ") >>" + dir_ + "/commands.log 2>&1 </dev/null";
  const int rc = std::system(full.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

std::string PgServer::create() {
  const std::string initdb = bin_dir() + "/initdb";
  if (access(initdb.c_str(), X_OK) != 0) {
    return "postgresql-15 is not installed (" + initdb +
           " is missing): run tools/setup.sh as root, which installs it";
  }
  if (geteuid() == 0 && std::system("id -u postgres >/dev/null 2>&1") != 0) {
    return "running as root but there is no 'postgres' user to run the server as";
  }
  char tmpl[] = "/tmp/rg-ledger-pg-XXXXXX";
  if (!mkdtemp(tmpl)) return "mkdtemp failed";
  dir_ = tmpl;
  if (geteuid() == 0 && std::system(("chown postgres " + dir_).c_str()) != 0) {
    return "cannot chown " + dir_ + " to postgres";
  }
  if (run(as_postgres(initdb + " -D " + dir_ + "/data -U rg --auth=trust -E UTF8 --no-sync")) !=
      0) {
    return "initdb failed; see " + dir_ + "/commands.log";
  }
  std::string why;
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = free_port();
    why = start();
    if (why.empty()) return "";
  }
  return why;
}

std::string PgServer::start() {
  const std::string cmd = bin_dir() + "/pg_ctl -D " + dir_ + "/data -l " + dir_ +
                          "/server.log -w -t 30 start -o \"-c listen_addresses=127.0.0.1 -p " +
                          std::to_string(port_) + " -k " + dir_ + "\"";
  if (run(as_postgres(cmd)) != 0) {
    return "pg_ctl start failed on port " + std::to_string(port_) + "; see " + dir_ + "/server.log";
  }
  std::ifstream pidfile(dir_ + "/data/postmaster.pid");
  pidfile >> pid_;
  if (pid_ <= 0) return "no postmaster.pid after start";
  return "";
}

void PgServer::stop() {
  if (pid_ <= 0) return;
  kill(static_cast<pid_t>(pid_), SIGINT);  // fast shutdown
  for (int i = 0; i < 300 && kill(static_cast<pid_t>(pid_), 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (kill(static_cast<pid_t>(pid_), 0) == 0) kill(static_cast<pid_t>(pid_), SIGKILL);
  pid_ = 0;
}

void PgServer::destroy() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

std::string PgServer::url(const std::string& database) const {
  return "postgresql://rg@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

int PgServer::psql(const std::string& sql, const std::string& database) const {
  const std::string file = dir_ + "/psql-input.sql";
  {
    std::ofstream out(file);
    out << sql << "\n";
  }
  return run("psql -X -q -v ON_ERROR_STOP=1 -d '" + url(database) + "' -f " + file);
}

}  // namespace replaygate::ledger::testing
