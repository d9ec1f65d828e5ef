// A small Redis client over hiredis: URL, connection, commands, pipelines, scripts
// (redis_client.h).
#include "redrive/redis/redis_client.h"

#include <hiredis/hiredis.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace replaygate::redrive::redis {
namespace {

// %XX escapes of a URL's user, password or path.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int value = 0;
      const auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, value, 16);
      if (ec == std::errc() && p == s.data() + i + 3) {
        out += static_cast<char>(value);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// `user:password@` at the front of *rest (the last '@' ends it), escapes undone, into *url;
// *rest keeps what follows.
void take_userinfo(std::string_view* rest, RedisUrl* url) {
  const size_t at = rest->rfind('@');
  if (at == std::string_view::npos) return;
  const std::string_view cred = rest->substr(0, at);
  const size_t colon = cred.find(':');
  url->user = unescape(cred.substr(0, colon));
  if (colon != std::string_view::npos) url->password = unescape(cred.substr(colon + 1));
  *rest = rest->substr(at + 1);
}

bool parse_int(std::string_view s, int low, int high, int* out) {
  int value = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || p != s.data() + s.size() || value < low || value > high) return false;
  *out = value;
  return true;
}

Reply copy(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.kind = Reply::Kind::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.kind = Reply::Kind::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.kind = Reply::Kind::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = Reply::Kind::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = Reply::Kind::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(copy(r->element[i]));
      break;
    default:
      out.kind = Reply::Kind::kNil;
  }
  return out;
}

}  // namespace

std::string RedisUrl::describe() const {
  const std::string who = user.empty() ? "" : user + "@";
  if (!socket_path.empty()) return "unix://" + who + socket_path + "?db=" + std::to_string(db);
  return "redis://" + who + host + ":" + std::to_string(port) + "/" + std::to_string(db);
}

std::optional<RedisUrl> parse_redis_url(std::string_view url, std::string* problem) {
  const auto refuse = [&](std::string why) {
    *problem = std::move(why);
    return std::nullopt;
  };
  if (url.rfind("rediss://", 0) == 0) {
    return refuse(
        "rediss:// (TLS) is not supported: hiredis 0.14 (Debian 12) has no TLS; reach the server "
        "over a unix socket or a TLS tunnel ending on this host");
  }
  if (url.rfind("redis-sentinel://", 0) == 0 || url.rfind("sentinel://", 0) == 0) {
    return refuse(
        "Redis Sentinel URLs are not supported: give the current primary's redis:// URL (the gate "
        "talks to one primary and checks its durability itself)");
  }
  RedisUrl out;
  std::string_view rest;
  if (url.rfind("unix://", 0) == 0 || url.rfind("redis+unix://", 0) == 0) {
    rest = url.substr(url.find("://") + 3);
    std::string_view query;
    if (const size_t q = rest.find('?'); q != std::string_view::npos) {
      query = rest.substr(q + 1);
      rest = rest.substr(0, q);
    }
    take_userinfo(&rest, &out);
    if (rest.empty() || rest[0] != '/') return refuse("a unix socket URL needs an absolute path");
    out.socket_path = unescape(rest);
    if (!query.empty()) {
      if (query.rfind("db=", 0) != 0 || !parse_int(query.substr(3), 0, 1 << 20, &out.db)) {
        return refuse("a unix socket URL takes only ?db=N");
      }
    }
    return out;
  }
  if (url.rfind("redis://", 0) != 0) {
    return refuse("a Redis URL starts with redis:// or unix:// (got '" +
                  std::string(url.substr(0, url.find(':'))) + "')");
  }
  rest = url.substr(8);
  std::string_view path;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  take_userinfo(&rest, &out);
  if (rest.find(',') != std::string_view::npos) {
    return refuse(
        "several hosts (a Redis Cluster or Sentinel list) are not supported: the gate's moves are "
        "Lua scripts over keys in one database of one primary; give that primary's URL");
  }
  std::string_view host = rest;
  if (!host.empty() && host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return refuse("an IPv6 host needs its closing ']'");
    out.host = std::string(host.substr(1, close - 1));
    host = host.substr(close + 1);
    if (!host.empty() && (host[0] != ':' || !parse_int(host.substr(1), 1, 65535, &out.port))) {
      return refuse("the port must be a number from 1 to 65535");
    }
  } else {
    const size_t colon = host.rfind(':');
    out.host = std::string(host.substr(0, colon));
    if (colon != std::string_view::npos &&
        !parse_int(host.substr(colon + 1), 1, 65535, &out.port)) {
      return refuse("the port must be a number from 1 to 65535");
    }
  }
  if (out.host.empty()) return refuse("the URL names no host");
  if (!path.empty() && !parse_int(path, 0, 1 << 20, &out.db)) {
    return refuse("the path is the database number (redis://HOST:PORT/0)");
  }
  return out;
}

std::string Reply::error_code() const {
  if (kind != Kind::kError) return "";
  return str.substr(0, str.find(' '));
}

std::unique_ptr<Client> Client::open(const RedisUrl& url, int timeout_ms, std::string* error) {
  const timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  redisContext* c = url.socket_path.empty()
                        ? redisConnectWithTimeout(url.host.c_str(), url.port, tv)
                        : redisConnectUnixWithTimeout(url.socket_path.c_str(), tv);
  if (c == nullptr) {
    *error = "cannot connect to " + url.describe() + ": out of memory";
    return nullptr;
  }
  std::unique_ptr<Client> client(new Client(c));
  if (c->err != 0) {
    *error = "cannot connect to " + url.describe() + ": " + c->errstr;
    return nullptr;
  }
  redisSetTimeout(c, tv);  // every later read: a server that stops answering is a lost connection
  if (url.socket_path.empty()) redisEnableKeepAlive(c);
  const auto check = [&](const std::optional<Reply>& r, const std::string& what) {
    if (!r) {
      *error = what + " on " + url.describe() + ": " + client->error();
      return false;
    }
    if (r->is_error()) {
      *error = what + " on " + url.describe() + " was refused: " + r->str;
      return false;
    }
    return true;
  };
  if (!url.password.empty()) {
    std::optional<Reply> r = url.user.empty() ? client->call({"AUTH", url.password})
                                              : client->call({"AUTH", url.user, url.password});
    if (!check(r, "AUTH")) return nullptr;
  }
  if (url.db != 0) {
    const std::string db = std::to_string(url.db);
    if (!check(client->call({"SELECT", db}), "SELECT " + db)) return nullptr;
  }
  return client;
}

Client::~Client() {
  if (c_ != nullptr) redisFree(c_);
}

void Client::fail(const std::string& where) {
  lost_ = true;
  error_ = where + ": " + (c_->err != 0 ? std::string(c_->errstr) : "connection lost");
  if (c_->err == REDIS_ERR_IO && errno == EAGAIN) error_ = where + ": no reply in time";
}

std::optional<Reply> Client::read_one() {
  void* raw = nullptr;
  if (redisGetReply(c_, &raw) != REDIS_OK || raw == nullptr) {
    fail("reading a reply");
    return std::nullopt;
  }
  Reply r = copy(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return r;
}

std::optional<Reply> Client::call(const std::vector<std::string_view>& args) {
  std::optional<std::vector<Reply>> r = pipeline({args});
  if (!r) return std::nullopt;
  return std::move(r->front());
}

std::optional<std::vector<Reply>> Client::pipeline(
    const std::vector<std::vector<std::string_view>>& cmds) {
  if (lost_) return std::nullopt;
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& cmd : cmds) {
    argv.clear();
    lens.clear();
    for (const std::string_view a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), lens.data()) !=
        REDIS_OK) {
      fail("sending a command");
      return std::nullopt;
    }
  }
  std::vector<Reply> out;
  out.reserve(cmds.size());
  for (size_t i = 0; i < cmds.size(); ++i) {
    std::optional<Reply> r = read_one();
    if (!r) return std::nullopt;
    out.push_back(std::move(*r));
  }
  return out;
}

bool Client::load(Script& script) {
  std::optional<Reply> r = call({"SCRIPT", "LOAD", script.text});
  if (!r) return false;
  if (r->kind != Reply::Kind::kString) {
    error_ = "SCRIPT LOAD was refused: " + r->str;
    return false;
  }
  script.sha = r->str;
  return true;
}

std::optional<Reply> Client::eval(Script& script, const std::vector<std::string_view>& keys,
                                  const std::vector<std::string_view>& args) {
  std::vector<std::string_view> one(keys);
  one.insert(one.end(), args.begin(), args.end());
  std::optional<std::vector<Reply>> r = eval_many(script, {one}, keys.size());
  if (!r) return std::nullopt;
  return std::move(r->front());
}

std::optional<std::vector<Reply>> Client::eval_many(
    Script& script, const std::vector<std::vector<std::string_view>>& keys_and_args,
    size_t key_count) {
  if (script.sha.empty() && !load(script)) return std::nullopt;
  const std::string numkeys = std::to_string(key_count);
  const auto command = [&](const std::vector<std::string_view>& ka) {
    std::vector<std::string_view> cmd = {"EVALSHA", script.sha, numkeys};
    cmd.insert(cmd.end(), ka.begin(), ka.end());
    return cmd;
  };
  std::vector<std::vector<std::string_view>> cmds;
  cmds.reserve(keys_and_args.size());
  for (const auto& ka : keys_and_args) cmds.push_back(command(ka));
  std::optional<std::vector<Reply>> replies = pipeline(cmds);
  if (!replies) return std::nullopt;
  for (size_t i = 0; i < replies->size(); ++i) {
    if ((*replies)[i].error_code() != "NOSCRIPT") continue;
    // The server forgot the script (a restart, SCRIPT FLUSH): the call ran nothing; load it
    // again and run this call once more.
    if (!load(script)) return std::nullopt;
    std::optional<Reply> again = call(command(keys_and_args[i]));
    if (!again) return std::nullopt;
    (*replies)[i] = std::move(*again);
  }
  return replies;
}

std::string info_field(std::string_view info, std::string_view field) {
  size_t at = 0;
  while (at < info.size()) {
    size_t end = info.find('\n', at);
    if (end == std::string_view::npos) end = info.size();
    std::string_view line = info.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > field.size() && line.substr(0, field.size()) == field &&
        line[field.size()] == ':') {
      return std::string(line.substr(field.size() + 1));
    }
    at = end + 1;
  }
  return "";
}

}  // namespace replaygate::redrive::redis
