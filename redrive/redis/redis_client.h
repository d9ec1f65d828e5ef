// A small Redis client over hiredis (the only hiredis user): the URL, one blocking connection,
// commands as argument vectors, pipelines, and Lua scripts loaded once (SCRIPT LOAD) and run by
// their SHA (EVALSHA, reloaded on NOSCRIPT). The redrive port (sidekiq_port.h) is its one caller.
//
// In: redis://[[USER]:PASS@]HOST[:PORT][/DB] or unix:///PATH[?db=N] (also redis+unix://...).
// Refused, with a message that says why: rediss:// (hiredis 0.14 in Debian 12 has no TLS),
// redis-sentinel:// and a URL naming several hosts (Sentinel, Cluster: the gate talks to one
// primary), anything else. Out: replies as Reply values (a copy of hiredis's reply tree).
//
// Errors: no exception. A failed call says why in error(); `lost()` tells a dead connection (an
// I/O error, a timeout, the server gone) from an error reply (which leaves it usable).
// Threads: a Client belongs to one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace replaygate::redrive::redis {

struct RedisUrl {
  std::string host;  // "" for a unix socket
  int port = 6379;
  std::string socket_path;  // set for a unix socket
  std::string user, password;
  int db = 0;
  // The server without the password: "redis://user@127.0.0.1:6379/0", "unix:///tmp/r.sock?db=0".
  std::string describe() const;
};

// nullopt and *problem set when `url` is not a URL this client can use (see above).
std::optional<RedisUrl> parse_redis_url(std::string_view url, std::string* problem);

// One reply (hiredis's, copied): an error reply has kind kError and its text in `str`.
struct Reply {
  enum class Kind : uint8_t { kNil, kString, kStatus, kInteger, kArray, kError };
  Kind kind = Kind::kNil;
  std::string str;
  long long integer = 0;
  std::vector<Reply> elements;
  bool is_error() const { return kind == Kind::kError; }
  // The first word of an error reply ("NOSCRIPT", "BUSY", "LOADING", "READONLY", "OOM", ...).
  std::string error_code() const;
};

// A Lua script: its text and, once loaded, its SHA1.
struct Script {
  std::string_view text;
  std::string sha;
};

class Client {
 public:
  // Connects, authenticates (AUTH [user] password), selects the database. nullptr and *error.
  static std::unique_ptr<Client> open(const RedisUrl& url, int timeout_ms, std::string* error);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // One command: nullopt when the connection failed (lost() is then true and error() says why);
  // an error reply is a Reply of kind kError.
  std::optional<Reply> call(const std::vector<std::string_view>& args);
  // Sends every command, then reads every reply (one round trip): nullopt when the connection
  // failed before every reply was read.
  std::optional<std::vector<Reply>> pipeline(
      const std::vector<std::vector<std::string_view>>& cmds);
  // EVALSHA of `script` (SCRIPT LOAD first, and again after NOSCRIPT: a restarted server or a
  // SCRIPT FLUSH forgets scripts). `keys` then `args`.
  std::optional<Reply> eval(Script& script, const std::vector<std::string_view>& keys,
                            const std::vector<std::string_view>& args);
  // The same script for many key/argument sets, pipelined; a NOSCRIPT reply reloads the script
  // and runs that one call again (a NOSCRIPT call ran nothing).
  std::optional<std::vector<Reply>> eval_many(
      Script& script, const std::vector<std::vector<std::string_view>>& keys_and_args,
      size_t key_count);

  bool lost() const { return lost_; }
  const std::string& error() const { return error_; }

 private:
  explicit Client(redisContext* context) : c_(context) {}
  bool load(Script& script);
  std::optional<Reply> read_one();
  void fail(const std::string& where);

  redisContext* c_ = nullptr;
  bool lost_ = false;
  std::string error_;
};

// The value of `field` in an INFO reply's text ("aof_enabled" -> "1"), "" when absent.
std::string info_field(std::string_view info, std::string_view field);

}  // namespace replaygate::redrive::redis
