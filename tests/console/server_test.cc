// The console's HTTP server against a cpp-httplib client on 127.0.0.1: login, sessions, roles,
// CSRF, limits, escaping and the audit entry of every act (docs/console.md).
#include "console/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <regex>
#include <thread>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "console/users.h"
#include "ledger/ledger.h"
#include "support/cli_runner.h"

namespace replaygate::console {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::write_file;

const std::string kPlanA = "blake2b:" + std::string(64, 'a');
const std::string kPlanB = "blake2b:" + std::string(64, 'b');
const std::string kPassword = "a long enough password";
const std::string kScript = "<script>alert(1)</script>";
const std::string kImg = "\"><img src=x onerror=alert(1)>";

class ConsoleServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(hash_password(kPassword, &hash_), ""); }

  void SetUp() override {
    char tmpl[] = "/tmp/rg_console_http_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    UsersFile users;
    ASSERT_EQ(load_users(path("users.json"), true, &users), "");
    for (const auto& [name, role] : {std::pair<const char*, const char*>{"vera", "viewer"},
                                     {"olga", "operator"},
                                     {"alice", "approver"},
                                     {"dan", "operator"}}) {
      std::optional<std::string> key;
      if (std::string(role) == "approver") key = std::string(64, '1');
      ASSERT_EQ(add_user(&users, {name, role, key, hash_}), "");
    }
    ASSERT_EQ(save_users(users), "");
    ledger::Options lo;
    auto l = ledger::open_ledger(path("ledger.db"), lo);
    ASSERT_TRUE(l.ok()) << l.error().message;
    for (const std::string& digest : {kPlanA, kPlanB}) {
      ledger::PlanRecord r;
      r.digest = digest;
      r.author = kScript;
      r.source = kImg;
      r.table_checksum = std::string(32, 'c');
      r.letters = 2;
      r.copies = 2;
      r.created_at = *ledger::parse_time("2026-12-07T10:00:00Z");
      r.expires_at = *ledger::parse_time("2099-12-07T10:00:00Z");
      ASSERT_TRUE((*l)->record_plan(r).ok());
    }
    ledger::PlanApproval a{kPlanA,
                           "alice",
                           std::string(32, 'd'),
                           std::string(128, 'e'),
                           kImg,
                           *ledger::parse_time("2026-12-07T11:00:00Z"),
                           {}};
    ASSERT_TRUE((*l)->approve_plan(a).ok());
    write_file(path("policy.yaml"), "# read by nothing yet: the console needs it to exist\n");
    write_file(path("console.yaml"),
               "ledger: ledger.db\nusers: users.json\npolicy: policy.yaml\naudit: console.log\n"
               "session_idle_minutes: 10\nsession_max_hours: 1\nlogin_failures_per_user: 3\n"
               "login_failures_per_address: 5\nlogin_window_minutes: 1\n");
    start();
  }

  void start() {
    Config config;
    ASSERT_EQ(read_config(path("console.yaml"), &config), "");
    server_ = std::make_unique<Server>(config, [this] { return now_.load(); });
    std::string error;
    port_ = server_->bind("127.0.0.1:0", &error);
    ASSERT_GT(port_, 0) << error;
    thread_ = std::thread([this] { server_->run(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(10, 0);
    for (int i = 0; i < 200 && !client_->Get("/static/console.css"); ++i) usleep(10000);
  }

  void TearDown() override {
    server_->stop();
    if (thread_.joinable()) thread_.join();
    fs::remove_all(dir_);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string session_of(const httplib::Result& r) {
    const std::string c = r->get_header_value("Set-Cookie");
    const size_t eq = c.find('='), semi = c.find(';');
    return c.substr(eq + 1, semi - eq - 1);
  }
  static std::string csrf_of(const std::string& body) {
    std::smatch m;
    if (!std::regex_search(body, m, std::regex("name=\"csrf\" value=\"([0-9a-f]+)\""))) return "";
    return m[1];
  }
  static httplib::Headers cookie(const std::string& id) { return {{"Cookie", "rg_session=" + id}}; }

  struct Login {
    int status = 0;
    std::string before, session, csrf;  // the form's session, the signed-in one, its token
  };
  Login login(const std::string& name, const std::string& password) {
    Login out;
    auto form = client_->Get("/login");
    out.before = session_of(form);
    auto r = client_->Post(
        "/login", cookie(out.before),
        httplib::Params{{"name", name}, {"password", password}, {"csrf", csrf_of(form->body)}});
    if (!r) return out;
    out.status = r->status;
    if (r->status == 303) {
      out.session = session_of(r);
      auto page = client_->Get("/plans", cookie(out.session));
      out.csrf = csrf_of(page->body);
    }
    return out;
  }

  httplib::Result cancel(const Login& who, const std::string& digest, const std::string& reason,
                         std::optional<std::string> csrf = std::nullopt) {
    return client_->Post("/plans/" + digest + "/cancel", cookie(who.session),
                         httplib::Params{{"reason", reason}, {"csrf", csrf.value_or(who.csrf)}});
  }

  std::optional<ledger::PlanRecord> plan(const std::string& digest) {
    ledger::Options lo;
    lo.create = false;
    auto l = ledger::open_ledger(path("ledger.db"), lo);
    auto p = (*l)->plan(digest);
    return p.ok() ? p.value() : std::nullopt;
  }

  // The console log's lines holding `text`, after checking the whole log verifies.
  int audit_lines(const std::string& text) {
    const std::string bytes = read_file(path("console.log"));
    EXPECT_TRUE(audit::verify_bytes(bytes).ok());
    int n = 0;
    for (const std::string& line : testing::lines_of(bytes)) {
      n += line.find(text) != std::string::npos;
    }
    return n;
  }

  // The status line of a request sent as these bytes.
  std::string raw_status(const std::string& request) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string reply;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) reply.append(buf, n);
    }
    ::close(fd);
    return reply.substr(0, reply.find("\r\n"));
  }

  static inline std::string hash_;
  fs::path dir_;
  std::atomic<int64_t> now_{1000000};
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ConsoleServerTest, AGoodLoginGetsANewSessionAndTheBadOneIsAudited) {
  const Login good = login("olga", kPassword);
  ASSERT_EQ(good.status, 303);
  EXPECT_EQ(good.session.size(), 64u);
  EXPECT_NE(good.session, good.before);  // no fixation: the id changes at login
  EXPECT_EQ(good.csrf.size(), 64u);
  auto page = client_->Get("/plans", cookie(good.session));
  ASSERT_EQ(page->status, 200);
  EXPECT_NE(page->body.find(kPlanA.substr(0, 20)), std::string::npos);
  EXPECT_NE(page->body.find("<td>alice at 2026-12-07T11:00:00.000000Z</td>"), std::string::npos)
      << page->body;
  // The form's session is gone: it signs nobody in.
  EXPECT_EQ(client_->Get("/plans", cookie(good.before))->status, 303);

  EXPECT_EQ(login("olga", "not the password").status, 401);
  EXPECT_EQ(login("nobody", kPassword).status, 401);
  EXPECT_EQ(audit_lines(R"("act":"login","address":"127.0.0.1")"), 3);
  EXPECT_EQ(audit_lines(R"("operator":"olga","outcome":"allowed")"), 1);
  EXPECT_EQ(audit_lines(R"("detail":"wrong name or password")"), 2);
}

TEST_F(ConsoleServerTest, TheSessionCookieIsHttpOnlyAndStrict) {
  auto form = client_->Get("/login");
  const std::string c = form->get_header_value("Set-Cookie");
  EXPECT_NE(c.find("; HttpOnly"), std::string::npos) << c;
  EXPECT_NE(c.find("; SameSite=Strict"), std::string::npos) << c;
  EXPECT_EQ(form->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(form->get_header_value("Referrer-Policy"), "no-referrer");
  const std::string csp = form->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos);
  EXPECT_EQ(form->body.find("<script"), std::string::npos);
  auto missing = client_->Get("/nothing-here");
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("X-Content-Type-Options"), "nosniff");
}

TEST_F(ConsoleServerTest, AChosenSessionIdIsNotAdopted) {
  auto r = client_->Post(
      "/login", cookie(std::string(64, 'f')),
      httplib::Params{{"name", "olga"}, {"password", kPassword}, {"csrf", std::string(64, 'f')}});
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(session_of(r), std::string(64, 'f'));
  EXPECT_EQ(client_->Get("/plans", cookie(std::string(64, 'f')))->status, 303);
  EXPECT_EQ(audit_lines(R"("detail":"missing or wrong CSRF token")"), 1);
}

TEST_F(ConsoleServerTest, FailedLoginsAreLimitedPerUserAndPerAddress) {
  for (int i = 0; i < 3; ++i) EXPECT_EQ(login("olga", "wrong password!").status, 401);
  // The right password no longer helps until the window passes.
  EXPECT_EQ(login("olga", kPassword).status, 429);
  EXPECT_EQ(audit_lines("too many failed logins for this name"), 1);
  // Two more names fail from the same address: 5 in the window, the address is limited.
  EXPECT_EQ(login("dan", "wrong password!").status, 401);
  EXPECT_EQ(login("vera", "wrong password!").status, 401);
  EXPECT_EQ(login("alice", kPassword).status, 429);
  EXPECT_EQ(audit_lines("too many failed logins from this address"), 1);
  now_ += 61;
  EXPECT_EQ(login("olga", kPassword).status, 303);
}

TEST_F(ConsoleServerTest, EveryRoleAndTheCancel) {
  const Login vera = login("vera", kPassword), olga = login("olga", kPassword),
              alice = login("alice", kPassword);
  // A viewer reads, and is refused the act: 403, nothing changes, the refusal is audited.
  EXPECT_EQ(client_->Get("/plans/" + kPlanA, cookie(vera.session))->status, 200);
  EXPECT_EQ(client_->Get("/audit", cookie(vera.session))->status, 200);
  EXPECT_EQ(client_->Get("/plans/" + kPlanA, cookie(vera.session))->body.find("Cancel the plan"),
            std::string::npos);
  EXPECT_EQ(cancel(vera, kPlanA, "not mine to stop")->status, 403);
  EXPECT_FALSE(plan(kPlanA)->cancelled_at.has_value());
  EXPECT_EQ(audit_lines(R"("detail":"a viewer may not cancel a plan")"), 1);
  EXPECT_EQ(audit_lines(R"("kind":"plan")"), 0);

  // An operator and an approver cancel: the ledger and the audit log say so.
  auto r = cancel(olga, kPlanA, "the upstream fix landed");
  ASSERT_EQ(r->status, 303);
  EXPECT_EQ(r->get_header_value("Location"), "/plans/" + kPlanA);
  auto a = plan(kPlanA);
  ASSERT_TRUE(a->cancelled_at.has_value());
  EXPECT_EQ(a->cancelled_by, "olga");
  EXPECT_EQ(a->cancel_reason, "the upstream fix landed");
  EXPECT_EQ(audit_lines(R"("act":"plan_cancelled","cancel_reason":"the upstream fix landed")"), 1);
  EXPECT_EQ(audit_lines(R"("act":"plan_cancel","address":"127.0.0.1")"), 2);  // vera, olga
  EXPECT_EQ(audit_lines(R"("reason":"the upstream fix landed","scope")"), 1);
  EXPECT_EQ(cancel(alice, kPlanB, "duplicate of plan A")->status, 303);
  EXPECT_EQ(plan(kPlanB)->cancelled_by, "alice");
  // A second cancel is the ledger's refusal: 400, audited.
  EXPECT_EQ(cancel(alice, kPlanA, "again")->status, 400);
  EXPECT_EQ(audit_lines(R"("operator":"alice","outcome":"refused")"), 1);
  EXPECT_EQ(plan(kPlanA)->cancelled_by, "olga");
  // An unknown plan.
  EXPECT_EQ(cancel(olga, "blake2b:" + std::string(64, '9'), "what")->status, 400);
}

TEST_F(ConsoleServerTest, APostWithoutTheRightCsrfTokenDoesNothing) {
  const Login olga = login("olga", kPassword);
  EXPECT_EQ(cancel(olga, kPlanA, "a forged form", "")->status, 403);
  EXPECT_EQ(cancel(olga, kPlanA, "a forged form", std::string(64, '0'))->status, 403);
  auto none = client_->Post("/plans/" + kPlanA + "/cancel", cookie(olga.session),
                            httplib::Params{{"reason", "no token at all"}});
  EXPECT_EQ(none->status, 403);
  EXPECT_FALSE(plan(kPlanA)->cancelled_at.has_value());
  EXPECT_EQ(audit_lines(R"("detail":"missing or wrong CSRF token")"), 3);
  // Without a session at all.
  auto anon = client_->Post("/plans/" + kPlanA + "/cancel",
                            httplib::Params{{"reason", "x"}, {"csrf", olga.csrf}});
  EXPECT_EQ(anon->status, 403);
  EXPECT_EQ(audit_lines(R"x("operator":"(anonymous)")x"), 1);
  EXPECT_FALSE(plan(kPlanA)->cancelled_at.has_value());
}

TEST_F(ConsoleServerTest, SessionsEndIdleAtTheirAgeAtLogoutAndWhenTheUserIsDisabled) {
  Login olga = login("olga", kPassword);
  now_ += 599;
  EXPECT_EQ(client_->Get("/plans", cookie(olga.session))->status, 200);
  now_ += 600;  // idle 10 minutes
  EXPECT_EQ(client_->Get("/plans", cookie(olga.session))->status, 303);

  olga = login("olga", kPassword);
  for (int i = 0; i < 6; ++i) {  // used every 9 minutes, it still ends an hour after login
    now_ += 540;
    EXPECT_EQ(client_->Get("/plans", cookie(olga.session))->status, 200) << i;
  }
  now_ += 540;
  EXPECT_EQ(client_->Get("/plans", cookie(olga.session))->status, 303);

  olga = login("olga", kPassword);
  auto out = client_->Post("/logout", cookie(olga.session), httplib::Params{{"csrf", olga.csrf}});
  EXPECT_EQ(out->status, 303);
  EXPECT_EQ(client_->Get("/plans", cookie(olga.session))->status, 303);
  EXPECT_EQ(audit_lines(R"("act":"logout")"), 1);

  olga = login("olga", kPassword);
  const Login dan = login("dan", kPassword);
  now_ += 1;  // a new mtime is not needed: the size changes
  UsersFile users;
  ASSERT_EQ(load_users(path("users.json"), false, &users), "");
  ASSERT_EQ(disable_user(&users, "olga"), "");
  ASSERT_EQ(save_users(users), "");
  EXPECT_EQ(client_->Get("/plans", cookie(olga.session))->status, 303);
  EXPECT_EQ(cancel(olga, kPlanA, "after being disabled")->status, 403);
  EXPECT_FALSE(plan(kPlanA)->cancelled_at.has_value());
  EXPECT_EQ(login("olga", kPassword).status, 401);
  EXPECT_EQ(client_->Get("/plans", cookie(dan.session))->status, 200);
}

TEST_F(ConsoleServerTest, PlanFieldsAreShownEscaped) {
  const Login vera = login("vera", kPassword);
  for (const std::string& url : {std::string("/plans"), "/plans/" + kPlanA}) {
    auto page = client_->Get(url, cookie(vera.session));
    ASSERT_EQ(page->status, 200) << url;
    EXPECT_EQ(page->body.find("<script"), std::string::npos) << url;
    EXPECT_EQ(page->body.find("<img"), std::string::npos) << url;
    EXPECT_NE(page->body.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << url;
    EXPECT_NE(page->body.find("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"), std::string::npos)
        << url;
  }
}

TEST_F(ConsoleServerTest, AnApprovalThatDoesNotVerifyIsShownNotCounting) {
  const Login vera = login("vera", kPassword);
  auto page = client_->Get("/plans/" + kPlanA, cookie(vera.session));
  ASSERT_EQ(page->status, 200);
  // The fixture's approval is signed by no key of alice's.
  EXPECT_NE(page->body.find("<span class=\"bad\">does not count</span>: the approval by "
                            "&#39;alice&#39; is signed by key dddddddddddddddddddddddddddddddd, "
                            "which is not their key"),
            std::string::npos)
      << page->body;
}

TEST_F(ConsoleServerTest, AnOversizedBodyIsRefused) {
  const Login olga = login("olga", kPassword);
  const std::string big = "reason=" + std::string(5 * 1024 * 1024, 'a') + "&csrf=" + olga.csrf;
  auto r = client_->Post("/plans/" + kPlanA + "/cancel", cookie(olga.session), big,
                         "application/x-www-form-urlencoded");
  if (r) {
    EXPECT_EQ(r->status, 413);
  }
  EXPECT_FALSE(plan(kPlanA)->cancelled_at.has_value());
  EXPECT_EQ(client_->Get("/login")->status, 200);  // still serving
}

TEST_F(ConsoleServerTest, InvalidUtf8IsRefusedAndTheLogStillVerifies) {
  const Login olga = login("olga", kPassword);
  auto r = cancel(olga, kPlanA, "bad \xff\xfe bytes");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("not valid UTF-8"), std::string::npos);
  EXPECT_FALSE(plan(kPlanA)->cancelled_at.has_value());
  EXPECT_EQ(login("ol\xffga", kPassword).status, 401);
  EXPECT_EQ(audit_lines(R"x("operator":"(invalid name)")x"), 1);
  EXPECT_EQ(audit_lines(R"("operator":"olga","outcome":"refused")"), 1);
}

TEST_F(ConsoleServerTest, TheAuditPageShowsEachLogVerifying) {
  const Login vera = login("vera", kPassword);
  auto page = client_->Get("/audit", cookie(vera.session));
  ASSERT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("console.log</td><td><span class=\"ok\">verifies</span>"),
            std::string::npos)
      << page->body;
  // The recent entries, newest first: vera's sign-in, escaped as everything else.
  EXPECT_NE(page->body.find("<td>console</td><td>vera</td><td>login</td><td>allowed</td>"),
            std::string::npos)
      << page->body;
  write_file(path("console.log"), read_file(path("console.log")) + "not an entry\n");
  page = client_->Get("/audit", cookie(vera.session));
  EXPECT_NE(page->body.find("1 problem(s)"), std::string::npos) << page->body;
}

// A console log of thousands of entries: the page shows the newest 50 from the log's tail.
TEST_F(ConsoleServerTest, TheAuditPageReadsTheConsoleLogsTailOnly) {
  std::vector<nlohmann::json> many;
  for (int i = 0; i < 3000; ++i) {
    audit::ConsoleEntry e;
    e.operator_name = "olga";
    e.act = "login";
    e.scope = "default";
    e.outcome = "refused";
    e.address = "127.0.0.1";
    e.reason = "attempt " + std::to_string(i) + " " + std::string(200, 'x');
    many.push_back(audit::to_json(e));
  }
  ASSERT_TRUE(audit::append_batch(path("console.log"), many).ok);
  ASSERT_GT(std::filesystem::file_size(path("console.log")), 512u * 1024);
  const Login vera = login("vera", kPassword);
  auto page = client_->Get("/audit", cookie(vera.session));
  ASSERT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("attempt 2999 x"), std::string::npos);
  EXPECT_NE(page->body.find("attempt 2951 x"), std::string::npos);
  EXPECT_EQ(page->body.find("attempt 2950 x"), std::string::npos) << "only the newest 50";
  EXPECT_NE(page->body.find("<td>console</td><td>vera</td><td>login</td><td>allowed</td>"),
            std::string::npos);
}

// cpp-httplib's default SO_REUSEPORT let a second console share the port (and split the
// requests between two sets of sessions).
TEST_F(ConsoleServerTest, ASecondConsoleCannotListenOnTheSamePort) {
  Config config;
  ASSERT_EQ(read_config(path("console.yaml"), &config), "");
  Server second(config);
  std::string error;
  const std::string listen = "127.0.0.1:" + std::to_string(port_);
  EXPECT_EQ(second.bind(listen, &error), -1);
  EXPECT_EQ(error, "cannot listen on " + listen + " (in use?)");
  testing::CliRun run;
  run.args = {"console", "serve", "--config", path("console.yaml"), "--listen", listen};
  run.timeout_seconds = 10;
  const testing::CliResult r = testing::run_cli(dir_, run);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "replaygate console: error: cannot listen on " + listen + " (in use?)\n");
}

TEST_F(ConsoleServerTest, TheBoundPortIsPrintedAndIpv6InBrackets) {
  EXPECT_EQ(listen_url("127.0.0.1", 8186), "http://127.0.0.1:8186/");
  EXPECT_EQ(listen_url("::1", 8186), "http://[::1]:8186/");
  testing::CliRun run;
  run.args = {"console", "serve", "--config", path("console.yaml"), "--listen", "127.0.0.1:0"};
  run.timeout_seconds = 3;
  const testing::CliResult r = testing::run_cli(dir_, run);
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.err, m, std::regex("serving on http://127\\.0\\.0\\.1:([0-9]+)/ ")))
      << r.err;
  EXPECT_GT(std::stoi(m[1]), 0) << r.err;
}

// A users file broken while the console runs: nobody can sign in, the page and the audit say why
// (not which user), and nobody is locked out for it.
TEST_F(ConsoleServerTest, ABrokenUsersFileIsSaidAndNotCountedAsFailures) {
  const std::string good = read_file(path("users.json"));
  const size_t role = good.find("\"operator\"");
  ASSERT_NE(role, std::string::npos);
  std::string broken = good;
  broken.replace(role, 10, "\"admin\"");
  write_file(path("users.json"), broken);
  for (int i = 0; i < 6; ++i) {
    auto form = client_->Get("/login");
    auto r = client_->Post(
        "/login", cookie(session_of(form)),
        httplib::Params{{"name", "olga"}, {"password", kPassword}, {"csrf", csrf_of(form->body)}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503) << i;
    EXPECT_NE(r->body.find("The users file is invalid: nobody can sign in"), std::string::npos)
        << r->body;
    EXPECT_EQ(r->body.find("admin"), std::string::npos);
    EXPECT_EQ(r->body.find("Wrong name or password"), std::string::npos);
  }
  EXPECT_EQ(audit_lines(R"("detail":"the users file is invalid: nobody can sign in")"), 6);
  EXPECT_EQ(audit_lines("wrong name or password"), 0);
  // Fixed: olga signs in at once (3 failures would have locked her name, 5 the address).
  write_file(path("users.json"), good);
  now_ += 1;
  EXPECT_EQ(login("olga", kPassword).status, 303);
}

TEST_F(ConsoleServerTest, ACancelledRabbitmqPlanNamesItsPlanQueueAndTheCommand) {
  const std::string digest = "blake2b:" + std::string(64, 'f');
  {
    auto l = ledger::open_ledger(path("ledger.db"));
    ASSERT_TRUE(l.ok());
    ledger::PlanRecord r;
    r.digest = digest;
    r.author = "alice";
    r.source = "rabbitmq:/%2F/payments.dlq";
    r.table_checksum = std::string(32, 'c');
    r.letters = r.copies = 3;
    r.created_at = *ledger::parse_time("2026-12-07T10:00:00Z");
    r.expires_at = *ledger::parse_time("2099-12-07T10:00:00Z");
    ASSERT_TRUE((*l)->record_plan(r).ok());
  }
  const Login olga = login("olga", kPassword);
  const std::string command =
      "replaygate plan cancel PLAN --operator NAME --reason TEXT --ledger L --audit LOG --amqp URL";
  EXPECT_EQ(client_->Get("/plans/" + digest, cookie(olga.session))->body.find(command),
            std::string::npos)
      << "an open plan's letters are meant to be there";
  ASSERT_EQ(cancel(olga, digest, "wrong day")->status, 303);
  ASSERT_EQ(cancel(olga, kPlanA, "wrong day")->status, 303);
  auto page = client_->Get("/plans/" + digest, cookie(olga.session));
  ASSERT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("its plan queue <code>payments.dlq.plan.&lt;plan id&gt;</code> (vhost "
                            "<code>/</code>"),
            std::string::npos)
      << page->body;
  EXPECT_NE(page->body.find(command), std::string::npos) << page->body;
  // A dump's plan has no plan queue.
  EXPECT_EQ(client_->Get("/plans/" + kPlanA, cookie(olga.session))->body.find(command),
            std::string::npos);
}

TEST_F(ConsoleServerTest, OtherMethodsGet405AndLogoutWithoutATokenGets403) {
  for (const char* method : {"PUT", "PATCH", "DELETE"}) {
    for (const auto& [url, allow] : {std::pair<std::string, std::string>{"/plans", "GET"},
                                     {"/login", "GET, POST"},
                                     {"/logout", "POST"},
                                     {"/plans/" + kPlanA + "/cancel", "POST"}}) {
      httplib::Request req;
      req.method = method;
      req.path = url;
      auto r = client_->send(req);
      ASSERT_TRUE(r) << method << " " << url;
      EXPECT_EQ(r->status, 405) << method << " " << url;
      EXPECT_EQ(r->get_header_value("Allow"), allow) << method << " " << url;
      EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
    }
  }
  const Login olga = login("olga", kPassword);
  EXPECT_EQ(client_->Post("/logout", cookie(olga.session))->status, 403);
  EXPECT_EQ(client_->Post("/logout", cookie(olga.session), "", "text/plain")->status, 403);
  EXPECT_EQ(client_->Post("/logout")->status, 403);
  EXPECT_EQ(raw_status("DELETE /plans HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
            "HTTP/1.1 405 Method Not Allowed");
  // As `curl -X POST` sends it: no body, no Content-Length.
  EXPECT_EQ(raw_status("POST /logout HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: rg_session=" +
                       olga.session + "\r\nConnection: close\r\n\r\n"),
            "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(client_->Get("/plans", cookie(olga.session))->status, 200);  // still signed in
}

TEST_F(ConsoleServerTest, AMissingPolicyFileIsRefusedAtStartup) {
  fs::remove(path("policy.yaml"));
  Config config;
  ASSERT_EQ(read_config(path("console.yaml"), &config), "");
  Server second(config);
  std::string error;
  EXPECT_EQ(second.bind("127.0.0.1:0", &error), -1);
  EXPECT_EQ(error, "cannot read policy file " + path("policy.yaml") + " (console.yaml's 'policy')");
  testing::CliRun run;
  run.args = {"console", "serve", "--config", path("console.yaml"), "--listen", "127.0.0.1:0"};
  run.timeout_seconds = 10;
  const testing::CliResult r = testing::run_cli(dir_, run);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot read policy file " + path("policy.yaml")), std::string::npos)
      << r.err;
}

TEST(ConsoleListen, OnlyLoopback) {
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("127.1.2.3"));
  EXPECT_TRUE(is_loopback("::1"));
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_FALSE(is_loopback("0.0.0.0"));
  EXPECT_FALSE(is_loopback("::"));
  EXPECT_FALSE(is_loopback("10.0.0.1"));
  EXPECT_FALSE(is_loopback("example.com"));
  Server server(Config{});
  std::string error;
  EXPECT_EQ(server.bind("0.0.0.0:0", &error), -1);
  EXPECT_EQ(error,
            "--listen 0.0.0.0:0: not a loopback address; the console has no TLS yet, so it "
            "listens on 127.0.0.1 or ::1 only (reach it through an SSH tunnel)");
  EXPECT_EQ(server.bind("127.0.0.1", &error), -1);
  EXPECT_EQ(error, "--listen 127.0.0.1 is not HOST:PORT");
}

}  // namespace
}  // namespace replaygate::console
