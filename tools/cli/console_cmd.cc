// `replaygate console`: the web console's users (user add|disable|passwd) and its server (serve),
// docs/console.md. Options, messages and exit codes only: the model is console/.
#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "console/server.h"
#include "console/users.h"
#include "redrive/test_points.h"
#include "tools/cli/commands.h"

namespace replaygate::cli {
namespace {

struct ConsoleOptions {
  std::string name, role, users, public_key, config, listen = "127.0.0.1:8080";
  bool password_stdin = false;
};

int say(int code, const std::string& message) {
  std::fprintf(stderr, "replaygate console: %s\n", message.c_str());
  return code;
}
int usage(const std::string& message) { return say(kExitUsage, "error: " + message); }

// The new password: one line of standard input (--password-stdin), or a generated one printed
// once on standard output. "" with *error set when standard input gives none usable.
std::string new_password(bool from_stdin, bool* generated, std::string* error) {
  *generated = !from_stdin;
  if (!from_stdin) return console::generate_password();
  std::string line;
  if (!std::getline(std::cin, line)) {
    *error = "--password-stdin: standard input holds no line";
    return "";
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  *error = console::password_problem(line);
  return error->empty() ? line : "";
}

int set_password_and_save(console::UsersFile* file, const ConsoleOptions& o, bool add,
                          const std::optional<std::string>& key) {
  bool generated = false;
  std::string error;
  const std::string password = new_password(o.password_stdin, &generated, &error);
  if (!error.empty()) return usage(error);
  std::string hash;
  if (const std::string why = console::hash_password(password, &hash); !why.empty()) {
    return usage(why);
  }
  const std::string why = add ? console::add_user(file, {o.name, o.role, key, hash})
                              : console::set_password_hash(file, o.name, hash);
  if (!why.empty()) return say(kExitFindings, "refused: " + why + "; nothing written");
  if (const std::string w = console::save_users(*file); !w.empty()) return usage(w);
  if (generated) std::printf("%s\n", password.c_str());
  return say(kExitOk,
             std::string(add ? "added " : "set the password of ") + o.name + " in " + o.users +
                 (generated ? " (the password above is shown once: hand it over now)" : ""));
}

int run_user_add(const ConsoleOptions& o, bool key_given) {
  console::UsersFile file;
  if (const std::string why = console::load_users(o.users, true, &file); !why.empty()) {
    return usage(why);
  }
  return set_password_and_save(&file, o, true,
                               key_given ? std::optional<std::string>(o.public_key) : std::nullopt);
}

int run_user_passwd(const ConsoleOptions& o) {
  console::UsersFile file;
  if (const std::string why = console::load_users(o.users, false, &file); !why.empty()) {
    return usage(why);
  }
  return set_password_and_save(&file, o, false, std::nullopt);
}

int run_user_disable(const ConsoleOptions& o) {
  console::UsersFile file;
  if (const std::string why = console::load_users(o.users, false, &file); !why.empty()) {
    return usage(why);
  }
  if (const std::string why = console::disable_user(&file, o.name); !why.empty()) {
    return say(kExitFindings, "refused: " + why + "; nothing written");
  }
  if (const std::string why = console::save_users(file); !why.empty()) return usage(why);
  return say(kExitOk, "disabled " + o.name + " in " + o.users +
                          ": no console login, no new approval, their approvals stop counting, "
                          "and a running console ends their sessions at their next request");
}

int run_serve(const ConsoleOptions& o) {
  console::Config config;
  if (const std::string why = console::read_config(o.config, &config); !why.empty()) {
    return usage(why);
  }
  // Tests' crash points ($REPLAYGATE_TEST_CRASH_AT, redrive/test_points.h).
  auto points = std::make_shared<redrive::TestPoints>();
  if (const std::string why = points->from_environment(); !why.empty()) return usage(why);
  console::Server server(std::move(config), {},
                         [points](std::string_view step) { points->at(step); });
  std::string error;
  // SIGINT and SIGTERM stop the server from a thread of its own (sigwait): a handler could not
  // call stop() safely. Blocked before bind, so the server's threads inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const int port = server.bind(o.listen, &error);
  if (port < 0) return usage(error);
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    server.stop();
  });
  std::string host;
  int unused = 0;
  console::split_listen(o.listen, &host, &unused);  // bind() accepted it
  say(kExitOk, "serving on " + console::listen_url(host, port) +
                   " (no TLS: loopback only; Ctrl-C stops it)");
  const std::string why = server.run();
  pthread_kill(waiter.native_handle(), SIGTERM);  // ends the wait when run() ended on its own
  waiter.join();
  if (!why.empty()) return usage(why);
  return say(kExitOk, "stopped");
}

}  // namespace

Runner setup_console(CLI::App& sub) {
  auto o = std::make_shared<ConsoleOptions>();
  sub.require_subcommand(1);
  sub.footer(
      "The web console (docs/console.md): its users and its server. Exit: 0 success, 1 refused\n"
      "(a name listed already or not listed), 2 usage or I/O errors.");
  CLI::App* user = sub.add_subcommand("user", "Manage the console's users (the users file)");
  user->require_subcommand(1);
  CLI::App* add = user->add_subcommand("add", "Add a user with a password (printed once)");
  add->add_option("NAME", o->name, "The user's name")->required();
  add->add_option("--role", o->role, "viewer, operator or approver")->required();
  add->add_option("--users", o->users, "The users file (created when missing)")->required();
  CLI::Option* key = add->add_option("--public-key", o->public_key,
                                     "The user's Ed25519 public key (64 hex digits or a key file)");
  add->add_flag("--password-stdin", o->password_stdin, "Read the password from standard input");
  CLI::App* disable = user->add_subcommand("disable", "Disable a user (sessions end)");
  disable->add_option("NAME", o->name, "The user's name")->required();
  disable->add_option("--users", o->users, "The users file")->required();
  CLI::App* passwd = user->add_subcommand("passwd", "Set a new password (printed once)");
  passwd->add_option("NAME", o->name, "The user's name")->required();
  passwd->add_option("--users", o->users, "The users file")->required();
  passwd->add_flag("--password-stdin", o->password_stdin, "Read the password from standard input");

  CLI::App* serve = sub.add_subcommand("serve", "Serve the web console");
  serve->add_option("--config", o->config, "The console's configuration (console.yaml)")
      ->required();
  serve->add_option("--listen", o->listen, "HOST:PORT on loopback (default 127.0.0.1:8080)");

  return [=] {
    if (add->parsed()) return run_user_add(*o, key->count() > 0);
    if (disable->parsed()) return run_user_disable(*o);
    if (passwd->parsed()) return run_user_passwd(*o);
    return run_serve(*o);
  };
}

}  // namespace replaygate::cli
