// kill -9 inside the console's cancel (REPLAYGATE_TEST_CRASH_AT=console_plan_cancelled): the
// ledger has the cancel, the audit log verifies and lacks its entry, and `ledger check` names
// what is missing (the recovery path of `plan cancel`, docs/plans.md).
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "audit/audit_log.h"
#include "console/users.h"
#include "ledger/ledger.h"
#include "support/cli_runner.h"

extern char** environ;

namespace replaygate::console {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::write_file;

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(ConsoleCrash, AKillBetweenTheLedgerCancelAndItsEntryIsFoundByLedgerCheck) {
  char tmpl[] = "/tmp/rg_console_crash_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const std::string digest = "blake2b:" + std::string(64, 'a');
  UsersFile users;
  ASSERT_EQ(load_users((dir / "users.json").string(), true, &users), "");
  std::string hash;
  ASSERT_EQ(hash_password("olga's long password", &hash), "");
  ASSERT_EQ(add_user(&users, {"olga", "operator", std::nullopt, hash}), "");
  ASSERT_EQ(save_users(users), "");
  {
    auto l = ledger::open_ledger((dir / "ledger.db").string());
    ASSERT_TRUE(l.ok());
    ledger::PlanRecord r;
    r.digest = digest;
    r.author = "alice";
    r.source = "dump";
    r.table_checksum = std::string(32, 'c');
    r.letters = r.copies = 1;
    r.created_at = *ledger::parse_time("2026-12-07T10:00:00Z");
    r.expires_at = *ledger::parse_time("2099-12-07T10:00:00Z");
    ASSERT_TRUE((*l)->record_plan(r).ok());
  }
  write_file(dir / "p.yaml", "# the console refuses to start without it\n");
  write_file(dir / "console.yaml",
             "ledger: ledger.db\nusers: users.json\npolicy: p.yaml\naudit: console.log\n");
  const int port = free_port();
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  std::vector<std::string> args{
      testing::kCliBinary, "console", "serve", "--config", (dir / "console.yaml").string(),
      "--listen",          listen};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env{"REPLAYGATE_TEST_CRASH_AT=console_plan_cancelled"};
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()), 0);

  httplib::Client client("127.0.0.1", port);
  for (int i = 0; i < 300 && !client.Get("/static/console.css"); ++i) usleep(20000);
  auto form = client.Get("/login");
  ASSERT_TRUE(form);
  const auto token = [](const std::string& body) {
    std::smatch m;
    std::regex_search(body, m, std::regex("name=\"csrf\" value=\"([0-9a-f]+)\""));
    return m[1].str();
  };
  const auto session = [](const httplib::Result& r) {
    const std::string c = r->get_header_value("Set-Cookie");
    return c.substr(c.find('=') + 1, 64);
  };
  auto signed_in = client.Post(
      "/login", {{"Cookie", "rg_session=" + session(form)}},
      httplib::Params{
          {"name", "olga"}, {"password", "olga's long password"}, {"csrf", token(form->body)}});
  ASSERT_TRUE(signed_in);
  ASSERT_EQ(signed_in->status, 303);
  const httplib::Headers cookie{{"Cookie", "rg_session=" + session(signed_in)}};
  auto plans = client.Get("/plans", cookie);
  auto cancelled =
      client.Post("/plans/" + digest + "/cancel", cookie,
                  httplib::Params{{"reason", "stop it"}, {"csrf", token(plans->body)}});
  EXPECT_FALSE(cancelled);  // the server died inside the act
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

  auto l = ledger::open_ledger((dir / "ledger.db").string());
  auto p = (*l)->plan(digest);
  ASSERT_TRUE(p.ok() && p->has_value());
  EXPECT_EQ((*p)->cancelled_by, "olga");
  const std::string log = read_file(dir / "console.log");
  EXPECT_TRUE(audit::verify_bytes(log).ok());
  EXPECT_EQ(log.find("plan_cancel"), std::string::npos);
  const testing::CliResult check =
      testing::run_cli_args(dir, {"ledger", "check", "--ledger", (dir / "ledger.db").string(),
                                  "--audit", (dir / "console.log").string()});
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_NE(check.out.find("cancel"), std::string::npos) << check.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace replaygate::console
