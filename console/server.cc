// The console's HTTP server: routes, login, sessions, roles, CSRF and audit (console/server.h).
#include "console/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "audit/operator_name.h"
#include "audit/reader.h"
#include "console/html.h"
#include "console/log_status.h"
#include "console/plan_acts.h"
#include "console/sessions.h"
#include "console/users.h"
#include "ledger/ledger.h"
#include "redrive/plan/approval.h"
#include "redrive/plan/plan.h"
#include "redrive/plan/plan_ledger.h"

namespace replaygate::console {
namespace {

constexpr const char* kCookie = "rg_session";
// A form is small: a name, a password, a reason of at most 4096 bytes, a token.
constexpr size_t kMaxBody = 16 * 1024;
constexpr size_t kMaxNameBytes = 128;

// Security headers on every response (docs/console.md): no script at all, styles from this
// server only, never framed, no referrer, nothing cached.
void secure(httplib::Response& res) {
  const std::pair<const char*, const char*> headers[] = {
      {"Content-Security-Policy",
       "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cache-Control", "no-store"},
  };
  for (const auto& [name, value] : headers) {
    if (!res.has_header(name)) res.set_header(name, value);
  }
}

std::string cookie_value(const httplib::Request& req, std::string_view name) {
  const std::string header = req.get_header_value("Cookie");
  size_t at = 0;
  while (at < header.size()) {
    size_t end = header.find(';', at);
    if (end == std::string::npos) end = header.size();
    std::string_view part(header.data() + at, end - at);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.size() > name.size() && part.substr(0, name.size()) == name &&
        part[name.size()] == '=') {
      return std::string(part.substr(name.size() + 1));
    }
    at = end + 1;
  }
  return "";
}

void set_session_cookie(httplib::Response& res, const std::string& id) {
  res.set_header("Set-Cookie",
                 std::string(kCookie) + "=" + id + "; Path=/; HttpOnly; SameSite=Strict");
}

// The name an audit entry may carry for what a client typed.
std::string audit_name(const std::string& name) {
  if (name.size() > kMaxNameBytes || !audit::operator_name_problem(name).empty()) {
    return "(invalid name)";
  }
  return name;
}

std::string plan_state(const ledger::PlanRecord& r, const ledger::PlanCounts& c, ledger::Time now) {
  if (r.cancelled_at) return "cancelled";
  if (c.done + c.held + c.changed >= r.copies && r.copies > 0) return "done";
  if (r.expires_at <= now) return "expired";
  return "open";
}

// The queue a RabbitMQ plan's source names ("rabbitmq:/VHOST/QUEUE", plan::rabbitmq_source),
// or nullopt for another source. Checked by writing it back with rabbitmq_source.
std::optional<std::pair<std::string, std::string>> rabbitmq_vhost_queue(const std::string& source) {
  constexpr std::string_view kPrefix = "rabbitmq:/";
  if (source.rfind(kPrefix, 0) != 0) return std::nullopt;
  const size_t slash = source.find('/', kPrefix.size());
  if (slash == std::string::npos || slash + 1 >= source.size()) return std::nullopt;
  std::string vhost;
  for (size_t i = kPrefix.size(); i < slash; ++i) {
    if (source.compare(i, 3, "%2F") == 0) {
      vhost += '/';
      i += 2;
    } else if (source.compare(i, 3, "%25") == 0) {
      vhost += '%';
      i += 2;
    } else {
      vhost += source[i];
    }
  }
  std::string queue = source.substr(slash + 1);
  if (plan::rabbitmq_source(vhost, queue) != source) return std::nullopt;
  return std::pair{std::move(vhost), std::move(queue)};
}

// What a cancelled or expired RabbitMQ plan leaves behind: its letters wait in the plan queue
// until `plan cancel --amqp` moves them back (docs/plans.md, "Cancelling"). The ledger does not
// keep the plan id; the plan file's header does.
std::string plan_queue_note(const ledger::PlanRecord& r) {
  const auto vq = rabbitmq_vhost_queue(r.source);
  if (!vq) return "";
  return "<h2>Letters left in the plan queue</h2><p class=\"note\">This plan's letters stay in "
         "its plan queue <code>" +
         escape(plan::plan_queue_name(vq->second, "<plan id>")) + "</code> (vhost <code>" +
         escape(vq->first) +
         "</code>; the plan id is the <code>plan_id</code> in the plan file's header) until they "
         "are moved back to <code>" +
         escape(vq->second) +
         "</code>. Nothing here moves them: run<br><code>replaygate plan cancel PLAN --operator "
         "NAME --reason TEXT --ledger L --audit LOG --amqp URL</code><br>with PLAN the plan file "
         "and URL the broker. On a plan cancelled already it moves the letters and deletes the "
         "empty plan queue.</p>";
}

// The Allow header of a path (405 for any other method).
std::string allowed_methods(const std::string& path) {
  if (path == "/login") return "GET, POST";
  if (path == "/logout") return "POST";
  if (path.size() > 7 && path.compare(path.size() - 7, 7, "/cancel") == 0) return "POST";
  return "GET";
}

}  // namespace

std::string listen_url(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "/";
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

std::string split_listen(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return "--listen " + listen + " is not HOST:PORT";
  *host = listen.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  const std::string digits = listen.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string::npos || std::stoi(digits) > 65535) {
    return "--listen " + listen + ": the port is not a number from 0 to 65535";
  }
  *port = std::stoi(digits);
  return "";
}

struct Server::State {
  Config config;
  std::function<int64_t()> clock;
  std::function<void(std::string_view)> test_point;
  httplib::Server http;
  std::unique_ptr<ledger::Ledger> ledger;
  SessionStore sessions;
  LoginLimiter limiter;
  std::mutex users_mu;
  plan::Users users;
  std::string users_problem;  // why the users file is refused now ("" when it was read)
  struct stat users_stat {};
  std::mutex audit_mu;
  std::mutex verify_mu;  // one Argon2id verification at a time: 64 MiB each
  LogStatusCache log_status;
  std::string dummy_hash;

  State(Config c, std::function<int64_t()> k)
      : config(std::move(c)),
        clock(std::move(k)),
        sessions(config.session_idle_minutes * 60, config.session_max_hours * 3600),
        limiter(config.login_failures_per_user, config.login_failures_per_address,
                config.login_window_minutes * 60) {}

  // The users file as it is now (read again when it changed on disk): a disabled user's sessions
  // end at their next request. "" or why the file cannot be read (then nobody is signed in).
  std::string reload_users() {
    struct stat st {};
    if (::stat(config.users.c_str(), &st) != 0) {
      users.users.clear();
      users_problem = "cannot read users file " + config.users;
      return users_problem;
    }
    if (st.st_ino == users_stat.st_ino && st.st_size == users_stat.st_size &&
        st.st_mtim.tv_sec == users_stat.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == users_stat.st_mtim.tv_nsec && !users.users.empty()) {
      return "";
    }
    plan::Users fresh;
    const std::string why = plan::read_users_file(config.users, &fresh);
    users = why.empty() ? std::move(fresh) : plan::Users{};
    users_stat = st;
    users_problem = why;
    return why;
  }

  // The user of that name now; *problem (when given) says why the users file is refused.
  std::optional<plan::User> user(const std::string& name, std::string* problem = nullptr) {
    std::lock_guard lock(users_mu);
    if (const std::string why = reload_users(); !why.empty()) {
      std::fprintf(stderr, "replaygate console: %s: nobody can sign in\n", why.c_str());
      if (problem != nullptr) *problem = why;
    }
    const plan::User* u = users.find(name);
    if (u == nullptr) return std::nullopt;
    return *u;
  }

  // Appends a console entry: "" or why not.
  std::string audit(const std::string& user, const std::string& act, const std::string& outcome,
                    const httplib::Request& req, std::optional<std::string> target = std::nullopt,
                    std::optional<std::string> reason = std::nullopt,
                    std::optional<std::string> detail = std::nullopt) {
    audit::ConsoleEntry e;
    e.operator_name = user.empty() ? "(anonymous)" : audit_name(user);
    e.act = act;
    e.scope = config.ledger_scope;
    e.outcome = outcome;
    e.address = req.remote_addr;
    e.target = std::move(target);
    if (reason && !audit::operator_name_problem(*reason).empty()) reason = "(invalid text)";
    e.reason = std::move(reason);
    if (detail && !audit::operator_name_problem(*detail).empty()) detail = "(invalid text)";
    e.detail = std::move(detail);
    std::lock_guard lock(audit_mu);
    const audit::AppendResult r = audit::append(config.audit, audit::to_json(e));
    if (!r.ok) {
      std::fprintf(stderr, "replaygate console: audit: %s\n", r.error.c_str());
      return r.error;
    }
    return "";
  }

  // The signed-in session of the request (its role read from the users file now), or nullopt.
  std::optional<Session> signed_in(const httplib::Request& req) {
    const std::string id = cookie_value(req, kCookie);
    if (id.empty()) return std::nullopt;
    std::optional<Session> s = sessions.touch(id, clock());
    if (!s || s->user.empty()) return std::nullopt;
    const std::optional<plan::User> u = user(s->user);
    if (!u || u->disabled || u->password_hash.empty()) {
      sessions.revoke_user(s->user);
      return std::nullopt;
    }
    s->role = u->role;
    return s;
  }

  void html(httplib::Response& res, int status, const PageFrame& frame, const std::string& body) {
    res.status = status;
    res.set_content(page(frame, body), "text/html; charset=utf-8");
  }

  void refuse(httplib::Response& res, int status, const Session* s, const std::string& message) {
    PageFrame f{status == 403 ? "Refused" : "Error", s ? s->user : "", s ? s->role : "",
                s ? s->csrf : ""};
    html(res, status, f, "<p class=\"error\">" + escape(message) + "</p>");
  }

  // A POST's session and CSRF token, checked (and refusals audited): the session, or nullopt
  // with the response set.
  std::optional<Session> post_session(const httplib::Request& req, httplib::Response& res,
                                      const std::string& act) {
    std::optional<Session> s = signed_in(req);
    if (!s) {
      audit("", act, "refused", req, req.path, std::nullopt, "not signed in");
      refuse(res, 403, nullptr, "Not signed in (or the session ended): sign in again.");
      return std::nullopt;
    }
    if (!req.has_param("csrf") || !tokens_equal(req.get_param_value("csrf"), s->csrf)) {
      audit(s->user, act, "refused", req, req.path, std::nullopt, "missing or wrong CSRF token");
      refuse(res, 403, &*s, "The form's token is missing or wrong: reload the page and retry.");
      return std::nullopt;
    }
    return s;
  }

  // A request cpp-httplib would wait on for a body it will not get, answered before it reads:
  // true when answered (see routes()).
  bool answered_early(const httplib::Request& req, httplib::Response& res);
  void routes();
  void login_form(const httplib::Request& req, httplib::Response& res, const std::string& error,
                  int status);
  void login(const httplib::Request& req, httplib::Response& res);
  void plans_page(const httplib::Request& req, httplib::Response& res);
  void plan_page(const httplib::Request& req, httplib::Response& res);
  void cancel(const httplib::Request& req, httplib::Response& res);
  void audit_page(const httplib::Request& req, httplib::Response& res);
  std::string recent_entries();
};

void Server::State::login_form(const httplib::Request& req, httplib::Response& res,
                               const std::string& error, int status) {
  // A new anonymous session per form: its token is the form's CSRF token, and login replaces it
  // with a new id.
  (void)req;
  const Session anon = sessions.create("", "", clock());
  set_session_cookie(res, anon.id);
  std::string body;
  if (!error.empty()) body += "<p class=\"error\">" + escape(error) + "</p>";
  body +=
      "<form class=\"box\" method=\"post\" action=\"/login\">"
      "<label>Name <input type=\"text\" name=\"name\" autocomplete=\"username\" required></label>"
      "<label>Password <input type=\"password\" name=\"password\" "
      "autocomplete=\"current-password\" required></label>"
      "<input type=\"hidden\" name=\"csrf\" value=\"" +
      escape(anon.csrf) +
      "\"><button type=\"submit\">Sign in</button></form>"
      "<p class=\"note\">No TLS: this console listens on loopback only.</p>";
  html(res, status, {"Sign in", "", "", ""}, body);
}

void Server::State::login(const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.get_param_value("name");
  const std::string password = req.get_param_value("password");
  const std::string id = cookie_value(req, kCookie);
  const std::optional<Session> anon = id.empty() ? std::nullopt : sessions.touch(id, clock());
  if (!anon || !req.has_param("csrf") || !tokens_equal(req.get_param_value("csrf"), anon->csrf)) {
    audit(name, "login", "refused", req, std::nullopt, std::nullopt, "missing or wrong CSRF token");
    return login_form(req, res, "The form expired: sign in again.", 403);
  }
  sessions.remove(anon->id);
  const int64_t now = clock();
  if (const std::string why = limiter.allowed(name, req.remote_addr, now); !why.empty()) {
    audit(name, "login", "refused", req, std::nullopt, std::nullopt, why);
    return login_form(req, res, "Too many failed sign-ins: try again later.", 429);
  }
  std::string users_refused;
  const std::optional<plan::User> u =
      name.size() <= kMaxNameBytes ? user(name, &users_refused) : std::optional<plan::User>();
  if (users_refused.empty() && name.size() > kMaxNameBytes) {
    std::lock_guard lock(users_mu);
    users_refused = users_problem;
  }
  if (!users_refused.empty()) {
    // Nobody's fault who signs in: not counted towards a lockout, and the page says only that
    // (which user or line is wrong is for the operator's stderr).
    audit(name, "login", "refused", req, std::nullopt, std::nullopt,
          "the users file is invalid: nobody can sign in");
    return login_form(req, res, "The users file is invalid: nobody can sign in until it is fixed.",
                      503);
  }
  bool good = false;
  {
    std::lock_guard lock(verify_mu);
    // An unknown name costs the same Argon2id verification as a known one.
    const std::string& hash = u && !u->password_hash.empty() ? u->password_hash : dummy_hash;
    good = password.size() <= kMaxPasswordBytes && verify_password(hash, password) && u &&
           !u->password_hash.empty() && !u->disabled;
  }
  if (!good) {
    limiter.failed(name, req.remote_addr, now);
    audit(name, "login", "refused", req, std::nullopt, std::nullopt,
          u && u->disabled ? "the user is disabled" : "wrong name or password");
    return login_form(req, res, "Wrong name or password.", 401);
  }
  const Session s = sessions.create(u->name, u->role, now);
  if (const std::string why = audit(u->name, "login", "allowed", req); !why.empty()) {
    sessions.remove(s.id);
    return refuse(res, 500, nullptr, "The audit log refused the sign-in: " + why);
  }
  set_session_cookie(res, s.id);
  res.status = 303;
  res.set_header("Location", "/plans");
}

void Server::State::plans_page(const httplib::Request& req, httplib::Response& res) {
  const std::optional<Session> s = signed_in(req);
  if (!s) {
    res.status = 303;
    res.set_header("Location", "/login");
    return;
  }
  const PageFrame frame{"Plans", s->user, s->role, s->csrf};
  ledger::Result<std::vector<ledger::PlanRecord>> plans = ledger->plans();
  if (!plans) return refuse(res, 500, &*s, "The ledger: " + plans.error().message);
  const ledger::Time now =
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
  std::string body =
      "<p class=\"note\">Every plan the ledger " + escape(config.ledger) + " (scope " +
      escape(config.ledger_scope) +
      ") knows, as recorded. A plan is built with <code>replaygate plan build</code> and "
      "approved with <code>replaygate plan approve</code> (docs/plans.md).</p>";
  if (plans.value().empty()) {
    body += "<p>No plans recorded.</p>";
    return html(res, 200, frame, body);
  }
  body +=
      "<table><thead><tr><th>Plan</th><th>Author</th><th>Source</th><th>Letters</th>"
      "<th>State</th><th>Approvals</th><th>Done / held / changed</th><th>Expires</th></tr>"
      "</thead><tbody>\n";
  for (const ledger::PlanRecord& r : plans.value()) {
    ledger::Result<ledger::PlanCounts> counts = ledger->plan_counts(r.digest);
    ledger::Result<std::vector<ledger::PlanApproval>> approvals = ledger->plan_approvals(r.digest);
    const ledger::PlanCounts c = counts ? counts.value() : ledger::PlanCounts{};
    std::string who;
    if (approvals) {
      for (const ledger::PlanApproval& a : approvals.value()) {
        who += (who.empty() ? "" : "<br>") + escape(a.approver) + " at " +
               escape(ledger::format_time(a.approved_at));
      }
    }
    body += "<tr><td><a href=\"/plans/" + escape(r.digest) + "\"><code>" +
            escape(r.digest.substr(0, 20)) + "…</code></a></td><td>" + escape(r.author) +
            "</td><td>" + escape(r.source) + "</td><td>" + std::to_string(r.letters) + " (" +
            std::to_string(r.copies) + " copies)</td><td>" + plan_state(r, c, now) + "</td><td>" +
            (who.empty() ? "none" : who) + "</td><td>" + std::to_string(c.done) + " / " +
            std::to_string(c.held) + " / " + std::to_string(c.changed) + "</td><td>" +
            escape(ledger::format_time(r.expires_at)) + "</td></tr>\n";
  }
  body += "</tbody></table>";
  html(res, 200, frame, body);
}

void Server::State::plan_page(const httplib::Request& req, httplib::Response& res) {
  const std::optional<Session> s = signed_in(req);
  if (!s) {
    res.status = 303;
    res.set_header("Location", "/login");
    return;
  }
  const std::string digest = req.matches[1];
  ledger::Result<std::optional<ledger::PlanRecord>> found = ledger->plan(digest);
  if (!found) return refuse(res, 500, &*s, "The ledger: " + found.error().message);
  if (!found.value()) return refuse(res, 404, &*s, "The ledger knows no plan " + digest + ".");
  const ledger::PlanRecord& r = *found.value();
  ledger::Result<ledger::PlanCounts> counts = ledger->plan_counts(r.digest);
  ledger::Result<std::vector<ledger::PlanApproval>> approvals = ledger->plan_approvals(r.digest);
  const ledger::PlanCounts c = counts ? counts.value() : ledger::PlanCounts{};
  const ledger::Time now =
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
  const auto row = [](const char* name, const std::string& value_html) {
    return std::string("<tr><th>") + name + "</th><td>" + value_html + "</td></tr>\n";
  };
  std::string body = "<table>", queue_note;
  body += row("Digest", "<code>" + escape(r.digest) + "</code>");
  body += row("State", plan_state(r, c, now));
  body += row("Author", escape(r.author));
  body += row("Source", escape(r.source));
  body += row("Table checksum", "<code>" + escape(r.table_checksum) + "</code>");
  body += row("Letters", std::to_string(r.letters) + " (" + std::to_string(r.copies) + " copies)");
  body += row("Created", escape(ledger::format_time(r.created_at)));
  body += row("Expires", escape(ledger::format_time(r.expires_at)));
  body += row("Recorded", escape(ledger::format_time(r.recorded_at)));
  body += row("Progress", std::to_string(c.done) + " done, " + std::to_string(c.held) + " held, " +
                              std::to_string(c.changed) + " changed");
  if (r.cancelled_at || plan_state(r, c, now) == "expired") queue_note = plan_queue_note(r);
  if (r.cancelled_at) {
    body += row("Cancelled", "by " + escape(r.cancelled_by) + " at " +
                                 escape(ledger::format_time(*r.cancelled_at)) + ": " +
                                 escape(r.cancel_reason));
  }
  body += "</table>\n" + queue_note + "<h2>Approvals</h2>\n";
  if (!approvals || approvals.value().empty()) {
    body += "<p>None recorded.</p>";
  } else {
    body +=
        "<table><thead><tr><th>Approver</th><th>Approved at</th><th>Key</th><th>Reason</th>"
        "<th>Counts</th></tr></thead><tbody>";
    // Whether each counts, as `plan verify` decides it (the signature against the approver's key
    // in the users file now, the role, disabled); the author's approval never counts.
    const std::vector<plan::Approval> as = plan::approvals_of(approvals.value());
    std::lock_guard lock(users_mu);
    for (const plan::Approval& a : as) {
      std::string problem = plan::approval_problem(a, users);
      if (problem.empty() && a.approver == r.author) problem = "the author's own approval";
      body += "<tr><td>" + escape(a.approver) + "</td><td>" + escape(a.approved_at) +
              "</td><td><code>" + escape(a.key_id) + "</code></td><td>" + escape(a.reason) +
              "</td><td>" +
              (problem.empty() ? std::string("<span class=\"ok\">counts</span>")
                               : "<span class=\"bad\">does not count</span>: " + escape(problem)) +
              "</td></tr>";
    }
    body += "</tbody></table>";
  }
  body += "<p class=\"note\">A plan needs at least " + std::to_string(plan::kPolicyApprovals) +
          " approval(s) besides its author (its file may ask more: <code>replaygate plan "
          "verify</code> checks the whole plan). Approving in the browser is not built yet (it "
          "needs the approver's signing key): use <code>replaygate plan approve</code>.</p>";
  if (!r.cancelled_at && s->role != "viewer") {
    body += "<h2>Cancel this plan</h2><form class=\"box\" method=\"post\" action=\"/plans/" +
            escape(r.digest) +
            "/cancel\"><p>A cancel is recorded in the ledger and the audit log; a run stops "
            "before its next block, and later runs are refused. It creates no work.</p>"
            "<label>Reason <textarea name=\"reason\" required maxlength=\"4096\"></textarea>"
            "</label><input type=\"hidden\" name=\"csrf\" value=\"" +
            escape(s->csrf) + "\"><button type=\"submit\">Cancel the plan</button></form>";
  }
  html(res, 200, {"Plan " + r.digest.substr(0, 20) + "…", s->user, s->role, s->csrf}, body);
}

void Server::State::cancel(const httplib::Request& req, httplib::Response& res) {
  const std::optional<Session> s = post_session(req, res, "plan_cancel");
  if (!s) return;
  const std::string digest = req.matches[1];
  if (s->role == "viewer") {
    audit(s->user, "plan_cancel", "refused", req, digest, std::nullopt,
          "a viewer may not cancel a plan");
    return refuse(res, 403, &*s, "A viewer may read, not act: cancelling needs an operator.");
  }
  const std::string reason = req.get_param_value("reason");
  const CancelOutcome out = cancel_plan(*ledger, config.audit, digest, s->user, reason, test_point);
  if (!out.ok) {
    audit(s->user, "plan_cancel", out.refused ? "refused" : "failed", req, digest,
          audit::operator_name_problem(reason).empty() ? std::optional(reason) : std::nullopt,
          out.message.substr(0, 1000));
    return refuse(res, out.refused ? 400 : 500, &*s, "Not cancelled: " + out.message);
  }
  audit(s->user, "plan_cancel", "allowed", req, digest, reason);
  res.status = 303;
  res.set_header("Location", "/plans/" + digest);
}

void Server::State::audit_page(const httplib::Request& req, httplib::Response& res) {
  const std::optional<Session> s = signed_in(req);
  if (!s) {
    res.status = 303;
    res.set_header("Location", "/login");
    return;
  }
  std::vector<std::string> logs{config.audit};
  logs.insert(logs.end(), config.audit_logs.begin(), config.audit_logs.end());
  std::string body =
      "<p class=\"note\">Each log checked as <code>replaygate audit verify</code> checks it (the "
      "hash chain and every entry), again whenever the file "
      "changed.</p><table><thead><tr><th>Log</th><th>Status</th>"
      "<th>Entries</th><th>Checkpoints</th><th>Last line's hash</th></tr></thead><tbody>";
  for (const std::string& log : logs) {
    const LogStatus status_now = log_status.get(log);
    if (!status_now.readable) {
      body += "<tr><td>" + escape(log) + "</td><td class=\"bad\">cannot read</td><td></td><td>" +
              "</td><td></td></tr>";
      continue;
    }
    const audit::VerifyReport& v = status_now.report;
    std::string status =
        v.ok() ? "<span class=\"ok\">verifies</span>"
               : "<span class=\"bad\">" + std::to_string(v.problems.size()) + " problem(s)</span>";
    for (size_t i = 0; i < v.problems.size() && i < 5; ++i) {
      status += "<br><code>" + escape(v.problems[i]) + "</code>";
    }
    body += "<tr><td>" + escape(log) + "</td><td>" + status + "</td><td>" +
            std::to_string(v.entries) + "</td><td>" + std::to_string(v.checkpoints.size()) +
            "</td><td><code>" + escape(v.last_hash) + "</code></td></tr>";
  }
  body += "</tbody></table>";
  body += recent_entries();
  html(res, 200, {"Audit trail", s->user, s->role, s->csrf}, body);
}

// The console log's last entries (audit/reader.h: read, not verified; the table above says
// whether the log verifies), newest first: who did what, allowed or refused.
std::string Server::State::recent_entries() {
  constexpr size_t kShown = 50;
  // The log's tail only (50 entries of at most a few KiB each): a view does not read a log that
  // grew for years. The first, partial line of the tail is dropped.
  constexpr std::streamoff kTail = 512 * 1024;
  std::ifstream in(config.audit, std::ios::binary | std::ios::ate);
  const std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : 0;
  std::string text;
  if (size > 0) {
    const std::streamoff from = size > kTail ? size - kTail : 0;
    text.resize(static_cast<size_t>(size - from));
    in.seekg(from);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (from > 0) text.erase(0, std::min(text.size(), text.find('\n') + 1));
  }
  std::deque<audit::ReadEntry> last;
  audit::EntryReader reader(text);
  for (audit::ReadEntry e; reader.next(&e);) {
    last.push_back(std::move(e));
    if (last.size() > kShown) last.pop_front();
  }
  std::string out = "<h2>The console's last " + std::to_string(kShown) +
                    " entries</h2><table><thead><tr><th>Seq</th><th>Time</th><th>Kind</th>"
                    "<th>Operator</th><th>Act</th><th>Outcome</th><th>Target</th><th>Reason or "
                    "detail</th></tr></thead><tbody>";
  const auto text_of = [](const nlohmann::json& o, const char* key) {
    const auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  for (auto it = last.rbegin(); it != last.rend(); ++it) {
    const nlohmann::json& o = it->object;
    std::string why = text_of(o, "reason");
    if (why.empty()) why = text_of(o, "cancel_reason");
    if (const std::string detail = text_of(o, "detail"); !detail.empty()) {
      why += (why.empty() ? "" : "; ") + detail;
    }
    std::string target = text_of(o, "target");
    if (target.empty()) target = text_of(o, "digest");
    out += "<tr><td>" + (it->seq ? std::to_string(*it->seq) : std::string()) + "</td><td>" +
           escape(text_of(o, "time")) + "</td><td>" + escape(text_of(o, "kind")) + "</td><td>" +
           escape(text_of(o, "operator")) + "</td><td>" + escape(text_of(o, "act")) + "</td><td>" +
           escape(text_of(o, "outcome")) + "</td><td><code>" + escape(target) + "</code></td><td>" +
           escape(why) + "</td></tr>";
  }
  return out + "</tbody></table>";
}

bool Server::State::answered_early(const httplib::Request& req, httplib::Response& res) {
  if (req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE") {
    res.status = 405;
    res.set_header("Allow", allowed_methods(req.path));
    res.set_content(page({"Error 405", "", "", ""},
                         "<p class=\"error\">" + escape(req.method) + " is not allowed here.</p>"),
                    "text/html; charset=utf-8");
    return true;
  }
  // A POST without Content-Length or chunks has no body (RFC 9112), but cpp-httplib reads until
  // its timeout and answers 400: without a body there is no form token, so it is the usual 403.
  if (req.method != "POST" || req.has_header("Content-Length") ||
      req.has_header("Transfer-Encoding")) {
    return false;
  }
  if (req.path == "/login") {
    audit(req.get_param_value("name"), "login", "refused", req, std::nullopt, std::nullopt,
          "missing or wrong CSRF token");
    login_form(req, res, "The form expired: sign in again.", 403);
    return true;
  }
  const std::string act = req.path == "/logout" ? "logout" : "plan_cancel";
  if (act == "plan_cancel" && allowed_methods(req.path) != "POST") return false;
  const std::optional<Session> s = signed_in(req);
  audit(s ? s->user : "", act, "refused", req, req.path, std::nullopt,
        s ? "missing or wrong CSRF token" : "not signed in");
  refuse(res, 403, s ? &*s : nullptr,
         s ? "The form's token is missing or wrong: reload the page and retry."
           : "Not signed in (or the session ended): sign in again.");
  return true;
}

void Server::State::routes() {
  http.set_payload_max_length(kMaxBody);
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  http.set_keep_alive_timeout(5);
  http.set_keep_alive_max_count(100);
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return answered_early(req, res) ? httplib::Server::HandlerResponse::Handled
                                    : httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_post_routing_handler(
      [](const httplib::Request&, httplib::Response& res) { secure(res); });
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      const std::string what = res.status == 413   ? "The request is too large."
                               : res.status == 404 ? "No such page."
                                                   : "The request was refused.";
      res.set_content(page({"Error " + std::to_string(res.status), "", "", ""},
                           "<p class=\"error\">" + escape(what) + "</p>"),
                      "text/html; charset=utf-8");
    }
    secure(res);
  });
  http.Get("/static/console.css", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(stylesheet()), "text/css; charset=utf-8");
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.status = 303;
    res.set_header("Location", "/plans");
  });
  http.Get("/login", [this](const httplib::Request& req, httplib::Response& res) {
    login_form(req, res, "", 200);
  });
  http.Post("/login",
            [this](const httplib::Request& req, httplib::Response& res) { login(req, res); });
  http.Post("/logout", [this](const httplib::Request& req, httplib::Response& res) {
    const std::optional<Session> s = post_session(req, res, "logout");
    if (!s) return;
    sessions.remove(s->id);
    audit(s->user, "logout", "allowed", req);
    res.status = 303;
    res.set_header("Location", "/login");
    res.set_header("Set-Cookie",
                   std::string(kCookie) + "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
  });
  http.Get("/plans",
           [this](const httplib::Request& req, httplib::Response& res) { plans_page(req, res); });
  http.Get(R"(/plans/([A-Za-z0-9:]{1,200}))",
           [this](const httplib::Request& req, httplib::Response& res) { plan_page(req, res); });
  http.Post(R"(/plans/([A-Za-z0-9:]{1,200})/cancel)",
            [this](const httplib::Request& req, httplib::Response& res) { cancel(req, res); });
  http.Get("/audit",
           [this](const httplib::Request& req, httplib::Response& res) { audit_page(req, res); });
}

Server::Server(Config config, std::function<int64_t()> clock,
               std::function<void(std::string_view)> test_point) {
  if (!clock) clock = [] { return static_cast<int64_t>(std::time(nullptr)); };
  s_ = std::make_unique<State>(std::move(config), std::move(clock));
  s_->test_point = std::move(test_point);
}

Server::~Server() { stop(); }

int Server::bind(const std::string& listen, std::string* error) {
  std::string host;
  int port = 0;
  if (std::string why = split_listen(listen, &host, &port); !why.empty()) {
    *error = why;
    return -1;
  }
  if (!is_loopback(host)) {
    *error = "--listen " + listen +
             ": not a loopback address; the console has no TLS yet, so it listens on "
             "127.0.0.1 or ::1 only (reach it through an SSH tunnel)";
    return -1;
  }
  if (::access(s_->config.policy.c_str(), R_OK) != 0) {
    *error = "cannot read policy file " + s_->config.policy + " (console.yaml's 'policy')";
    return -1;
  }
  ledger::Options lo;
  lo.scope = s_->config.ledger_scope;
  lo.create = false;
  ledger::Result<std::unique_ptr<ledger::Ledger>> l = ledger::open_ledger(s_->config.ledger, lo);
  if (!l) {
    *error = l.error().message;
    return -1;
  }
  s_->ledger = std::move(l.value());
  {
    std::lock_guard lock(s_->users_mu);
    if (std::string why = s_->reload_users(); !why.empty()) {
      *error = why;
      return -1;
    }
  }
  if (std::string why = hash_password(random_token(), &s_->dummy_hash); !why.empty()) {
    *error = why;
    return -1;
  }
  s_->routes();
  // cpp-httplib's default sets SO_REUSEPORT: a second console on the same port would share it.
  // SO_REUSEADDR only: a restart may bind while old connections sit in TIME_WAIT, and a port
  // another socket listens on is refused.
  s_->http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  if (port == 0) {
    port = s_->http.bind_to_any_port(host);
  } else if (!s_->http.bind_to_port(host, port)) {
    port = -1;
  }
  if (port < 0) *error = "cannot listen on " + listen + " (in use?)";
  return port;
}

std::string Server::run() {
  if (!s_->http.listen_after_bind()) return "the server stopped listening";
  return "";
}

void Server::stop() {
  if (s_) s_->http.stop();
}

}  // namespace replaygate::console
