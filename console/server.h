// The console's HTTP server (docs/console.md) on cpp-httplib: routes, login, sessions, roles,
// CSRF, limits, security headers, and an audit entry for every act.
//
// In: a Config (console/config.h) and a loopback HOST:PORT. Out: pages (server-rendered HTML, no
// script) and the acts they offer: login, logout, cancel a plan (operator or approver, with a
// reason: the ledger's cancel_plan and its audit entry). Every POST and every refusal appends a
// `console` entry to the configured audit log. No TLS: bind() refuses an address that is not
// loopback.
//
// Threads: run() serves on cpp-httplib's pool; stop() may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "console/config.h"

namespace replaygate::console {

// Whether HOST is a loopback address (127.0.0.0/8, ::1, localhost).
bool is_loopback(const std::string& host);
// "http://HOST:PORT/" for a host split_listen returned ("http://[::1]:8186/" for IPv6).
std::string listen_url(const std::string& host, int port);
// Splits "HOST:PORT" ("[::1]:8080" for IPv6): "" or why not.
std::string split_listen(const std::string& listen, std::string* host, int* port);

class Server {
 public:
  // `clock`: seconds (session and rate-limit times; tests move it). Default: the system clock.
  // `test_point`: called at the acts' crash points (tests; console/plan_acts.h names them).
  explicit Server(Config config, std::function<int64_t()> clock = {},
                  std::function<void(std::string_view)> test_point = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Checks the policy file can be read, opens the ledger, checks the users file and binds
  // HOST:PORT (port 0: any free port; SO_REUSEADDR, never SO_REUSEPORT). Returns the port bound,
  // or -1 with *error set (not loopback, a policy, ledger or users file refused, the port taken).
  int bind(const std::string& listen, std::string* error);
  // Serves until stop(): "" or why serving failed.
  std::string run();
  void stop();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace replaygate::console
