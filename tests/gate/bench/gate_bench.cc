// Letters per second through a RabbitMQ dead-letter queue: `replaygate gate rabbitmq` against
// raw librabbitmq baselines, in one run on one private node. Not a test; the numbers go to
// docs/benchmarks.md ("The live RabbitMQ gate").
//
//   rg_gate_bench [--letters N] [--reps R] [--small N] [--large N] [--skip-growth] [--seed S]
//
// Every arm starts from a freshly filled dead-letter queue `dlq` of N distinct letters (distinct
// message ids and idempotency keys; a shuffled mix of 60% SocketTimeoutException, replayed to
// payment.capture; 25% InsufficientFundsException, parked; 15% HttpClientErrorException$BadRequest,
// an unknown pair, held). Each letter is published to the work queue payment.capture (declared
// with x-dead-letter-exchange "" and x-dead-letter-routing-key "dlq", as in rabbit_gate_test.cc)
// and rejected there, so the broker dead-letters it and writes x-death. The arms:
//   (a) consume and ack (raw librabbitmq, prefetch 16, manual ack): no decision, no publish;
//   (b) consume, publish to the letter's target on a second connection, wait for that publisher
//       confirm, ack: one confirm at a time;
//   (c) as (b), pipelined: publish 64, wait for all their confirms, ack the 64 (prefetch 128);
//   (d) replaygate gate rabbitmq --apply --all --max-rate 0 --quiet (SQLite ledger, audit log);
//   (d1) (d) with --block-max 1: one letter at a time through the same code (the gate before
//       blocks);
//   (d2) (d) with --metrics: the file each second, and the park and hold queues' depths read for
//       it (two passive queue.declares a second);
//   (f), (f1) (d) and (d1) with a PostgreSQL ledger (a private server on 127.0.0.1);
//   (e) the same as a dry run (no --apply; --max-unacked N).
// Then one more run of each gate arm under `strace -f -c` (unless --skip-strace): the gate
// process's fsync and fdatasync calls per letter; with --perf FILE, one run of (d) under
// `perf record -g`.
// Each arm runs --reps times (default 3), interleaved, and the median is reported. The counts of
// every queue are checked after every run; a wrong count stops the benchmark (exit 1).
// Then (d) at --small and --large letters (default 500 and 4000), and --small letters again on
// the large run's ledger and audit log: does a letter cost more as the audit log grows? Besides
// whole-run times, the ms per letter inside each run, from when the gate printed each letter's
// line (the first and last letters of the large run, the letters on the large run's log).
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "amqp_test_client.h"
#include "pg_server.h"
#include "rabbit_server.h"
#include "tests/support/paths.h"

extern char** environ;

namespace {

using replaygate::gate::testing::AmqpTestClient;
using replaygate::gate::testing::RabbitServer;
using Clock = std::chrono::steady_clock;

const std::string kSourceDir = RG_SOURCE_DIR;
// The CLI the benchmark runs: a copy of RG_BINARY taken at start, so that a rebuild of the build
// tree during the run changes nothing.
std::string g_binary = RG_BINARY;

const char* const kDlq = "dlq";
const char* const kWork = "payment.capture";
const char* const kParked = "dlq.parked";
const char* const kHold = "dlq.hold";

// A check that failed: the benchmark stops (after stopping the node).
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void require(bool ok, const std::string& what) {
  if (!ok) throw Failure(what);
}
void require_ok(const std::string& error, const std::string& what) {
  if (!error.empty()) throw Failure(what + ": " + error);
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

long line_count(const std::string& path) {
  const std::string t = file_text(path);
  return static_cast<long>(std::count(t.begin(), t.end(), '\n'));
}

// ---- The letters ----

enum class Kind { kReplay, kPark, kHold };

struct Letter {
  std::string message_id, key, error_class;
  Kind kind;
};

struct Mix {
  std::vector<Letter> letters;
  long replay = 0, park = 0, hold = 0;
};

const char* const kReplayClass = "java.net.SocketTimeoutException";
const char* const kParkClass = "com.acme.payments.gateway.InsufficientFundsException";
const char* const kHoldClass = "org.springframework.web.client.HttpClientErrorException$BadRequest";

// N letters, each with a message id and an idempotency key no other letter of this benchmark
// process has (a per-fill tag and a random 128-bit key), in a shuffled order.
Mix make_mix(long n, std::mt19937_64& rng) {
  static long fill_number = 0;
  ++fill_number;
  Mix mix;
  mix.replay = (n * 60 + 50) / 100;
  mix.park = (n * 25 + 50) / 100;
  mix.hold = n - mix.replay - mix.park;
  char key[40];
  for (long i = 0; i < n; ++i) {
    Letter l;
    l.kind = i < mix.replay ? Kind::kReplay : i < mix.replay + mix.park ? Kind::kPark : Kind::kHold;
    l.error_class = l.kind == Kind::kReplay ? kReplayClass
                    : l.kind == Kind::kPark ? kParkClass
                                            : kHoldClass;
    std::snprintf(key, sizeof key, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng()));
    l.key = std::string("cap_") + key;
    l.message_id = "bench-" + std::to_string(fill_number) + "-" + std::to_string(i);
    mix.letters.push_back(std::move(l));
  }
  std::shuffle(mix.letters.begin(), mix.letters.end(), rng);
  return mix;
}

// Empties the four queues, then publishes every letter to the work queue (each with a confirm)
// and has the broker dead-letter them all into dlq.
void fill(AmqpTestClient& client, const Mix& mix) {
  for (const char* q : {kDlq, kWork, kParked, kHold}) require_ok(client.purge_queue(q), "purge");
  for (const Letter& l : mix.letters) {
    const std::string body =
        "{\"idempotency_key\":\"" + l.key + "\",\"committed\":false,\"amount_cents\":901}";
    require_ok(
        client.publish("", kWork, body, {{"x-exception-class", l.error_class}}, l.message_id),
        "publish a letter to " + std::string(kWork));
  }
  const long n = static_cast<long>(mix.letters.size());
  require_ok(client.dead_letter(kWork, mix.letters.size()), "dead-letter the letters");
  require_ok(client.wait_for_count(kDlq, n, 60000), "fill dlq");
  require_ok(client.wait_for_count(kWork, 0, 60000), "fill: work queue");
}

// Every queue's count as expected (they settle asynchronously: a dry run's letters return when
// its connection closes).
void expect_counts(AmqpTestClient& client, const std::string& arm, long dlq, long work, long parked,
                   long hold) {
  for (const auto& [q, n] : {std::pair{kDlq, dlq}, std::pair{kWork, work},
                             std::pair{kParked, parked}, std::pair{kHold, hold}}) {
    require_ok(client.wait_for_count(q, n, 30000), arm + ": wrong count in " + q);
  }
}

// ---- Raw librabbitmq (0.11) for the baselines ----

amqp_bytes_t bytes(const char* s) { return amqp_cstring_bytes(s); }

std::string reply_text(const amqp_rpc_reply_t& r) {
  switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      return "ok";
    case AMQP_RESPONSE_NONE:
      return "no reply";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      return amqp_error_string2(r.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      return std::string("server method ") + amqp_method_name(r.reply.id);
  }
  return "?";
}

void check(const amqp_rpc_reply_t& r, const std::string& what) {
  if (r.reply_type != AMQP_RESPONSE_NORMAL) throw Failure(what + ": " + reply_text(r));
}

// One connection to the node with channel 1 open; closed with a handshake.
class Connection {
 public:
  explicit Connection(int port) {
    conn_ = amqp_new_connection();
    require(conn_ != nullptr, "amqp_new_connection");
    amqp_socket_t* socket = amqp_tcp_socket_new(conn_);
    require(socket != nullptr, "amqp_tcp_socket_new");
    const timeval open_timeout{5, 0};
    const int rc = amqp_socket_open_noblock(socket, "127.0.0.1", port, &open_timeout);
    require(rc == AMQP_STATUS_OK, std::string("connect: ") + amqp_error_string2(rc));
    const timeval rpc_timeout{30, 0};
    amqp_set_rpc_timeout(conn_, &rpc_timeout);
    check(amqp_login(conn_, "/", 0, AMQP_DEFAULT_FRAME_SIZE, 0, AMQP_SASL_METHOD_PLAIN, "guest",
                     "guest"),
          "login");
    amqp_channel_open(conn_, 1);
    check(amqp_get_rpc_reply(conn_), "channel.open");
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    amqp_channel_close(conn_, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn_);
  }
  amqp_connection_state_t get() const { return conn_; }

 private:
  amqp_connection_state_t conn_ = nullptr;
};

// basic.consume on `queue` with manual acks and `prefetch` unacked deliveries at most.
class Consumer {
 public:
  Consumer(int port, const char* queue, uint16_t prefetch) : c_(port) {
    amqp_basic_qos(c_.get(), 1, 0, prefetch, 0);
    check(amqp_get_rpc_reply(c_.get()), "basic.qos");
    amqp_basic_consume(c_.get(), 1, bytes(queue), amqp_empty_bytes, /*no_local=*/0, /*no_ack=*/0,
                       /*exclusive=*/0, amqp_empty_table);
    check(amqp_get_rpc_reply(c_.get()), "basic.consume");
  }
  // The next delivery into *env (destroy it with amqp_destroy_envelope).
  void next(amqp_envelope_t* env) {
    amqp_maybe_release_buffers(c_.get());
    const timeval timeout{30, 0};
    check(amqp_consume_message(c_.get(), env, &timeout, 0), "no delivery within 30 s");
  }
  void ack(uint64_t tag, bool multiple) {
    const int rc = amqp_basic_ack(c_.get(), 1, tag, multiple ? 1 : 0);
    require(rc == AMQP_STATUS_OK, std::string("basic.ack: ") + amqp_error_string2(rc));
  }

 private:
  Connection c_;
};

// Publishes (mandatory, persistent) on a confirm-mode channel of its own connection.
class Publisher {
 public:
  explicit Publisher(int port) : c_(port) {
    amqp_confirm_select(c_.get(), 1);
    check(amqp_get_rpc_reply(c_.get()), "confirm.select");
  }
  // Publishes a copy of `env`'s message to `queue` through the default exchange; returns its
  // confirm sequence number.
  uint64_t publish(const amqp_envelope_t& env, const char* queue) {
    amqp_basic_properties_t p = env.message.properties;
    p._flags |= AMQP_BASIC_DELIVERY_MODE_FLAG;
    p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
    const int rc = amqp_basic_publish(c_.get(), 1, amqp_empty_bytes, bytes(queue),
                                      /*mandatory=*/1, /*immediate=*/0, &p, env.message.body);
    require(rc == AMQP_STATUS_OK, std::string("basic.publish: ") + amqp_error_string2(rc));
    outstanding_.insert(next_seq_);
    return next_seq_++;
  }
  // Waits until every publish so far is confirmed (basic.ack, honouring `multiple`). A nack, a
  // basic.return (unroutable: its ack would follow and prove nothing), a closed channel or
  // connection, or 30 s without a frame is a failure.
  void wait_all() {
    while (!outstanding_.empty()) {
      amqp_maybe_release_buffers(c_.get());
      amqp_frame_t frame;
      timeval tv{30, 0};
      const int rc = amqp_simple_wait_frame_noblock(c_.get(), &frame, &tv);
      require(rc == AMQP_STATUS_OK, std::string("waiting for confirms: ") + amqp_error_string2(rc));
      if (frame.frame_type != AMQP_FRAME_METHOD) continue;
      const amqp_method_t& m = frame.payload.method;
      require(m.id != AMQP_BASIC_RETURN_METHOD, "a publish was returned (unroutable)");
      require(m.id != AMQP_BASIC_NACK_METHOD, "the broker nacked a publish");
      require(m.id != AMQP_CHANNEL_CLOSE_METHOD && m.id != AMQP_CONNECTION_CLOSE_METHOD,
              "the broker closed the publishing channel");
      if (m.id != AMQP_BASIC_ACK_METHOD) continue;
      const auto* ack = static_cast<const amqp_basic_ack_t*>(m.decoded);
      if (ack->multiple) {
        outstanding_.erase(outstanding_.begin(), outstanding_.upper_bound(ack->delivery_tag));
      } else {
        outstanding_.erase(ack->delivery_tag);
      }
    }
  }

 private:
  Connection c_;
  uint64_t next_seq_ = 1;  // restarts at 1 on every channel after confirm.select
  std::set<uint64_t> outstanding_;
};

// Where a letter goes, from its x-exception-class header (the baselines' stand-in for a
// decision: two string comparisons).
const char* target_of(const amqp_envelope_t& env) {
  const amqp_basic_properties_t& p = env.message.properties;
  if (p._flags & AMQP_BASIC_HEADERS_FLAG) {
    for (int i = 0; i < p.headers.num_entries; ++i) {
      const amqp_table_entry_t& e = p.headers.entries[i];
      if (e.key.len != std::strlen("x-exception-class") ||
          std::memcmp(e.key.bytes, "x-exception-class", e.key.len) != 0 ||
          e.value.kind != AMQP_FIELD_KIND_UTF8) {
        continue;
      }
      const std::string cls(static_cast<const char*>(e.value.value.bytes.bytes),
                            e.value.value.bytes.len);
      if (cls == kReplayClass) return kWork;
      if (cls == kParkClass) return kParked;
      return kHold;
    }
  }
  throw Failure("a letter without x-exception-class");
}

// (a) Consume and ack, one at a time.
void consume_and_ack(int port, long n) {
  Consumer consumer(port, kDlq, 16);
  for (long i = 0; i < n; ++i) {
    amqp_envelope_t env;
    consumer.next(&env);
    consumer.ack(env.delivery_tag, false);
    amqp_destroy_envelope(&env);
  }
}

// (b) Consume, publish, wait for that one confirm, ack.
void confirmed_one_at_a_time(int port, long n) {
  Consumer consumer(port, kDlq, 16);
  Publisher publisher(port);
  for (long i = 0; i < n; ++i) {
    amqp_envelope_t env;
    consumer.next(&env);
    publisher.publish(env, target_of(env));
    publisher.wait_all();
    consumer.ack(env.delivery_tag, false);
    amqp_destroy_envelope(&env);
  }
}

// (c) Consume and publish 64, wait for their confirms, ack the 64 with one multiple ack.
constexpr long kBatch = 64;
void confirmed_in_batches(int port, long n) {
  Consumer consumer(port, kDlq, 2 * kBatch);
  Publisher publisher(port);
  for (long done = 0; done < n;) {
    const long batch = std::min(kBatch, n - done);
    uint64_t last_tag = 0;
    for (long i = 0; i < batch; ++i) {
      amqp_envelope_t env;
      consumer.next(&env);
      publisher.publish(env, target_of(env));
      last_tag = env.delivery_tag;
      amqp_destroy_envelope(&env);
    }
    publisher.wait_all();
    consumer.ack(last_tag, true);
    done += batch;
  }
}

// ---- The CLI ----

struct Proc {
  int exit_code = -1;  // -1: killed by a signal
  double wall = 0, cpu = 0;
  // When each line of its stdout arrived, in seconds since the spawn (the gate prints and flushes
  // one line per letter once it is done with it).
  std::vector<double> line_times;
};

// Runs the replaygate binary with `args` (stdin /dev/null; stdout through a pipe, timestamped per
// line and copied to the file `out`; stderr to `err`): its wall time from spawn to exit and its
// CPU time (user + system). Killed after `timeout_s`.
// A command the gate runs under (strace for the sync counts, perf), or none: run_gate() only.
std::vector<std::string> g_wrapper;

Proc run_cli(const std::vector<std::string>& args, const std::string& out, const std::string& err,
             int timeout_s = 900, const std::vector<std::string>& wrapper = {}) {
  std::vector<char*> argv;
  for (const std::string& w : wrapper) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(const_cast<char*>(g_binary.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  int pipe_fds[2];
  require(::pipe2(pipe_fds, O_CLOEXEC) == 0, "pipe");
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);  // dup2 clears O_CLOEXEC
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const auto t0 = Clock::now();
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) ::close(pipe_fds[0]);
  require(rc == 0, "cannot run " + g_binary + ": " + std::strerror(rc));
  Proc p;
  int status = 0;
  rusage ru{};
  {
    std::ofstream copy(out, std::ios::binary | std::ios::trunc);
    char buf[65536];
    for (bool open = true; open;) {
      pollfd pfd{pipe_fds[0], POLLIN, 0};
      const int ready = ::poll(&pfd, 1, 200);
      if (ready > 0) {
        const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
        const double at = seconds_since(t0);
        if (n <= 0) {
          open = n < 0 && errno == EINTR;
          continue;
        }
        copy.write(buf, n);
        for (ssize_t i = 0; i < n; ++i) {
          if (buf[i] == '\n') p.line_times.push_back(at);
        }
      }
      if (seconds_since(t0) > timeout_s) break;  // killed below
    }
    ::close(pipe_fds[0]);
  }
  for (;;) {
    const pid_t r = wait4(pid, &status, WNOHANG, &ru);
    if (r == pid) break;
    if (seconds_since(t0) > timeout_s) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &ru);
      throw Failure("replaygate " + args.at(0) + " ran over " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  p.wall = seconds_since(t0);
  p.cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
          static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return p;
}

struct Context {
  int port = 0;
  std::string url, root, table, mapping;
  std::string pg_url;  // a private PostgreSQL's, "" when there is none
};

// `replaygate gate rabbitmq` on dlq, as a user runs it, plus --max N so that the run ends at the
// Nth letter rather than --idle-exit (2 s) after it. `dir` holds the ledger and the audit log.
Proc run_gate(const Context& ctx, const std::string& dir, long n, bool apply,
              const std::vector<std::string>& more = {}, bool postgres = false) {
  std::vector<std::string> args = {"gate",      "rabbitmq",  "--table", ctx.table,
                                   "--mapping", ctx.mapping, "--amqp",  ctx.url,
                                   "--queue",   kDlq,        "--all",   "--max-rate",
                                   "0",         "--quiet",   "--max",   std::to_string(n)};
  if (apply) {  // a dry run does not create a ledger: it runs without one
    for (const std::string& a :
         {std::string("--ledger"), postgres ? ctx.pg_url : dir + "/ledger.db",
          std::string("--audit"), dir + "/audit.log", std::string("--operator"),
          std::string("bench")}) {
      args.push_back(a);
    }
  }
  // Each run its own ledger scope: a PostgreSQL ledger is shared by the runs.
  args.push_back("--ledger-scope");
  args.push_back(std::filesystem::path(dir).filename().string());
  for (const std::string& m : more) args.push_back(m);
  if (apply) {
    args.push_back("--apply");
  } else {
    args.push_back("--max-unacked");
    args.push_back(std::to_string(n));
  }
  const Proc p = run_cli(args, dir + "/stdout", dir + "/stderr", 900, g_wrapper);
  require(p.exit_code == 0, std::string("the gate") + (apply ? "" : " (dry run)") + " exited " +
                                std::to_string(p.exit_code) + ": " + file_text(dir + "/stderr"));
  return p;
}

// The letter lines the gate printed, and that its audit log verifies with `entries` lines.
// Returns the wall seconds of `replaygate audit verify` on the whole log (0 for a dry run).
double check_gate_output(const std::string& dir, long letters, long audit_entries) {
  const long printed = line_count(dir + "/stdout");
  require(printed == letters, "the gate printed " + std::to_string(printed) +
                                  " letter lines, not " + std::to_string(letters));
  if (audit_entries < 0) {
    require(!std::filesystem::exists(dir + "/audit.log"), "a dry run wrote the audit log");
    return 0;
  }
  const long entries = line_count(dir + "/audit.log");
  require(entries == audit_entries, "the audit log has " + std::to_string(entries) +
                                        " entries, not " + std::to_string(audit_entries));
  const Proc v =
      run_cli({"audit", "verify", dir + "/audit.log"}, dir + "/verify.out", dir + "/verify.err");
  require(v.exit_code == 0,
          "audit verify: " + file_text(dir + "/verify.out") + file_text(dir + "/verify.err"));
  return v.wall;
}

// The fsync and fdatasync calls in an `strace -c` summary file.
long sync_calls(const std::string& path) {
  std::ifstream in(path);
  long calls = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.size() >= 5 && (f.back() == "fsync" || f.back() == "fdatasync")) {
      calls += std::atol(f[3].c_str());
    }
  }
  return calls;
}

std::string fresh_dir(const Context& ctx) {
  static int count = 0;
  const std::string dir = ctx.root + "/run" + std::to_string(++count);
  std::filesystem::create_directories(dir);
  return dir;
}

// ---- Arms ----

struct Arm {
  using Run = std::function<Proc(const Context&, AmqpTestClient&, const Mix&)>;
  Arm(const char* n, const char* w, Run r) : name(n), what(w), run(std::move(r)) {}
  const char* name;
  const char* what;
  Run run;
  std::vector<double> walls, cpus;
};

Proc timed(const std::function<void()>& f) {
  Proc p;
  rusage r0{}, r1{};
  getrusage(RUSAGE_SELF, &r0);
  const auto t0 = Clock::now();
  f();
  p.wall = seconds_since(t0);
  getrusage(RUSAGE_SELF, &r1);
  const auto us = [](const rusage& r) {
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 +
           static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
  };
  p.cpu = (us(r1) - us(r0)) / 1e6;
  p.exit_code = 0;
  return p;
}

// Median fsync of a small append in the benchmark's directory (what each audit append and each
// SQLite commit waits for at least once).
double fsync_ms(const std::string& root) {
  const std::string path = root + "/fsync.probe";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  require(fd >= 0, "open " + path);
  const std::string line(300, 'x');
  std::vector<double> ms;
  for (int i = 0; i < 200; ++i) {
    const auto t0 = Clock::now();
    require(::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()), "write");
    require(::fsync(fd) == 0, "fsync");
    ms.push_back(seconds_since(t0) * 1000);
  }
  ::close(fd);
  std::filesystem::remove(path);
  return median(ms);
}

// An --apply arm of the gate with `more` options, on a SQLite or the PostgreSQL ledger.
Arm gate_arm(const char* name, const char* what, std::vector<std::string> more, bool postgres) {
  return {name, what, [name, more, postgres](const Context& c, AmqpTestClient& cl, const Mix& m) {
            const long n = static_cast<long>(m.letters.size());
            const std::string dir = fresh_dir(c);
            std::vector<std::string> args = more;  // "@DIR@/x": x in the run's directory
            for (std::string& a : args) {
              if (a.rfind("@DIR@", 0) == 0) a = dir + a.substr(5);
            }
            const Proc p = run_gate(c, dir, n, true, args, postgres);
            expect_counts(cl, name, 0, m.replay, m.park, m.hold);
            check_gate_output(dir, n, 2 * n);
            return p;
          }};
}

int usage() {
  std::fprintf(stderr,
               "usage: rg_gate_bench [--letters N] [--reps R] [--small N] [--large N] "
               "[--skip-growth] [--skip-strace] [--perf FILE] [--seed S]\n");
  return 2;
}

int bench(int argc, char** argv) {
  long letters = 2000, small = 500, large = 4000;
  int reps = 3;
  bool growth = true, with_strace = true;
  std::string perf_file;  // --perf FILE: one more run of (d) under perf record
  uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--skip-growth") {
      growth = false;
      continue;
    }
    if (a == "--skip-strace") {
      with_strace = false;
      continue;
    }
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (a == "--letters") {
      letters = std::atol(v);
    } else if (a == "--reps") {
      reps = std::atoi(v);
    } else if (a == "--small") {
      small = std::atol(v);
    } else if (a == "--large") {
      large = std::atol(v);
    } else if (a == "--perf") {
      perf_file = v;
    } else if (a == "--seed") {
      seed = std::strtoull(v, nullptr, 10);
    } else {
      return usage();
    }
  }
  // The dry run keeps every letter unacked: --max-unacked N, which is at most 60000.
  if (letters < 1 || letters > 60000 || reps < 1 || small < 1 || large < 1) {
    std::fprintf(stderr,
                 "rg_gate_bench: --letters must be 1..60000 (the dry run's --max-unacked "
                 "bound), --reps, --small and --large at least 1\n");
    return 2;
  }
  std::mt19937_64 rng(seed);

  RabbitServer server;  // on the main thread: the node's parent-death signal follows this thread
  const auto s0 = Clock::now();
  if (const std::string why = server.create(); !why.empty()) {
    std::fprintf(stderr, "rabbitmq: %s\n", why.c_str());
    return 2;
  }
  const double node_start = seconds_since(s0);
  struct RootDir {
    std::string path;
    ~RootDir() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  } root;
  char tmpl[] = "/tmp/rg-gate-bench-XXXXXX";
  require(mkdtemp(tmpl) != nullptr, "mkdtemp");
  root.path = tmpl;
  {
    const std::string copy = root.path + "/replaygate";
    std::error_code ec;
    std::filesystem::copy_file(g_binary, copy, ec);
    require(!ec, "copy " + g_binary + ": " + ec.message());
    std::fprintf(stderr, "running a copy of %s (%s)\n", g_binary.c_str(), copy.c_str());
    g_binary = copy;
  }

  Context ctx;
  ctx.port = server.port();
  ctx.url = server.url();
  ctx.root = root.path;
  ctx.table = root.path + "/gate.rgt";
  ctx.mapping = kSourceDir + "/examples/rabbitmq.mapping.yaml";
  const Proc compiled =
      run_cli({"compile", kSourceDir + "/policies/replay_gate.yaml", "-o", ctx.table},
              root.path + "/compile.out", root.path + "/compile.err");
  require(compiled.exit_code == 0, "compile: " + file_text(root.path + "/compile.err"));

  AmqpTestClient client;
  require_ok(client.connect(ctx.url), "connect");
  require_ok(client.declare_queue(kDlq, true), "declare dlq");
  require_ok(client.declare_queue(kWork, true,
                                  {{"x-dead-letter-exchange", std::string("")},
                                   {"x-dead-letter-routing-key", std::string("dlq")}}),
             "declare the work queue");
  // As the gate declares them (durable, no arguments), so that the baselines can publish there.
  require_ok(client.declare_queue(kParked, true), "declare dlq.parked");
  require_ok(client.declare_queue(kHold, true), "declare dlq.hold");

  // A private PostgreSQL for arms (f) and (f1); without one they are left out.
  replaygate::ledger::testing::PgServer pg;
  if (const std::string why = pg.create(); why.empty()) {
    ctx.pg_url = pg.url();
  } else {
    std::fprintf(stderr, "no PostgreSQL (%s): arms (f) and (f1) left out\n", why.c_str());
  }
  const double fsync = fsync_ms(root.path);
  std::printf("# replaygate gate rabbitmq: letters per second\n\n");
  std::printf(
      "private RabbitMQ node on 127.0.0.1:%d (started in %.1f s); %ld letters per run (%ld "
      "replayable, %ld parked, %ld held), %d runs per arm, seed %llu\n",
      ctx.port, node_start, letters, (letters * 60 + 50) / 100, (letters * 25 + 50) / 100,
      letters - (letters * 60 + 50) / 100 - (letters * 25 + 50) / 100, reps,
      static_cast<unsigned long long>(seed));
  std::printf(
      "load average at start: %s; fsync of a 300-byte append in %s: %.2f ms (median of "
      "200)\n\n",
      load_average().c_str(), root.path.c_str(), fsync);
  std::fflush(stdout);

  std::vector<Arm> arms = {
      {"(a)", "raw consume + ack (prefetch 16)",
       [](const Context& c, AmqpTestClient& cl, const Mix& m) {
         const long n = static_cast<long>(m.letters.size());
         const Proc p = timed([&] { consume_and_ack(c.port, n); });
         expect_counts(cl, "(a)", 0, 0, 0, 0);
         return p;
       }},
      {"(b)", "raw consume, publish, wait for its confirm, ack",
       [](const Context& c, AmqpTestClient& cl, const Mix& m) {
         const long n = static_cast<long>(m.letters.size());
         const Proc p = timed([&] { confirmed_one_at_a_time(c.port, n); });
         expect_counts(cl, "(b)", 0, m.replay, m.park, m.hold);
         return p;
       }},
      {"(c)", "raw, 64 publishes, wait for their confirms, ack 64 (prefetch 128)",
       [](const Context& c, AmqpTestClient& cl, const Mix& m) {
         const long n = static_cast<long>(m.letters.size());
         const Proc p = timed([&] { confirmed_in_batches(c.port, n); });
         expect_counts(cl, "(c)", 0, m.replay, m.park, m.hold);
         return p;
       }},
      gate_arm("(d)", "replaygate gate rabbitmq --apply (SQLite ledger, audit log)", {}, false),
      gate_arm("(d1)", "the same, --block-max 1 (one letter at a time, as before blocks)",
               {"--block-max", "1"}, false),
      gate_arm("(d2)", "(d) with --metrics (the held and parked queues' depths each second)",
               {"--metrics", "@DIR@/gate.prom"}, false),
      gate_arm("(f)", "replaygate gate rabbitmq --apply (PostgreSQL ledger, audit log)", {}, true),
      gate_arm("(f1)", "the same, --block-max 1", {"--block-max", "1"}, true),
      {"(e)", "replaygate gate rabbitmq, dry run",
       [](const Context& c, AmqpTestClient& cl, const Mix& m) {
         const long n = static_cast<long>(m.letters.size());
         const std::string dir = fresh_dir(c);
         const Proc p = run_gate(c, dir, n, false);
         expect_counts(cl, "(e)", n, 0, 0, 0);  // every letter back in dlq, nothing published
         check_gate_output(dir, n, -1);
         return p;
       }},
  };

  if (ctx.pg_url.empty()) {
    std::erase_if(arms, [](const Arm& a) { return a.name[1] == 'f'; });
  }
  for (int rep = 0; rep < reps; ++rep) {
    for (Arm& arm : arms) {
      const Mix mix = make_mix(letters, rng);
      fill(client, mix);
      const Proc p = arm.run(ctx, client, mix);
      arm.walls.push_back(p.wall);
      arm.cpus.push_back(p.cpu);
      std::fprintf(stderr, "run %d %s: %.3f s wall, %.3f s CPU, %.0f letters/s\n", rep + 1,
                   arm.name, p.wall, p.cpu, static_cast<double>(letters) / p.wall);
    }
  }

  const double b_rate = static_cast<double>(letters) / median(arms[1].walls);
  const double c_rate = static_cast<double>(letters) / median(arms[2].walls);
  std::printf(
      "| arm | what | wall s (median of %d) | letters/s | ratio to (b) | ratio to (c) | CPU s | "
      "CPU us per letter | runs, wall s |\n",
      reps);
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Arm& arm : arms) {
    const double wall = median(arm.walls);
    const double rate = static_cast<double>(letters) / wall;
    std::string runs;
    for (double w : arm.walls) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.2f", runs.empty() ? "" : " / ", w);
      runs += buf;
    }
    std::printf("| %s | %s | %.2f | %.0f | %.2f | %.2f | %.2f | %.0f | %s |\n", arm.name, arm.what,
                wall, rate, rate / b_rate, rate / c_rate, median(arm.cpus),
                median(arm.cpus) * 1e6 / static_cast<double>(letters), runs.c_str());
  }
  std::printf(
      "\nCPU s: the benchmark process's own CPU for (a)-(c) (client side only), the gate "
      "process's for (d)-(f1) and (e); the broker's and PostgreSQL's are not counted.\n");
  std::fflush(stdout);

  if (!perf_file.empty()) {
    const Mix mix = make_mix(letters, rng);
    fill(client, mix);
    g_wrapper = {"perf", "record", "-g", "-o", perf_file, "--"};
    arms[3].run(ctx, client, mix);
    g_wrapper.clear();
    std::printf("\n(d) once more under perf record: %s\n", perf_file.c_str());
  }
  if (with_strace) {
    // One more run of each gate arm under strace -f -c: fsync and fdatasync calls per letter
    // made by the gate process (PostgreSQL's own WAL flushes are the server's, not counted).
    std::printf("\n| arm | fsync + fdatasync calls per letter (gate process, strace -f -c) |\n");
    std::printf("|---|---|\n");
    for (Arm& arm : arms) {
      const std::string name = arm.name;
      if (name[1] != 'd' && name[1] != 'f') continue;
      const Mix mix = make_mix(letters, rng);
      fill(client, mix);
      const std::string counts = root.path + "/strace" + name + ".txt";
      g_wrapper = {"strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", counts};
      arm.run(ctx, client, mix);
      g_wrapper.clear();
      const long calls = sync_calls(counts);
      if (calls == 0) std::fprintf(stderr, "%s:\n%s\n", counts.c_str(), file_text(counts).c_str());
      std::printf("| %s | %.2f |\n", arm.name,
                  static_cast<double>(calls) / static_cast<double>(letters));
    }
    std::fflush(stdout);
  }

  if (growth) {
    // (d) at two sizes, each on a fresh ledger and audit log, then `small` more letters on the
    // large run's ledger and audit log (opening it scans and verifies the whole log once).
    std::vector<double> small_w, large_w, more_w, verify_large, verify_more;
    // Inside a run, from the times of the gate's letter lines: ms per letter over `w` letters
    // from letter `from` (0-based) on, so that process start and the log's open are left out.
    const long w = std::max(1L, std::min(small - 1, large / 2));
    const auto per_letter = [](const Proc& p, long from, long count) {
      require(static_cast<long>(p.line_times.size()) > from + count, "too few letter lines");
      return (p.line_times[from + count] - p.line_times[from]) * 1000 / static_cast<double>(count);
    };
    std::vector<double> in_small, first_large, last_large, in_more;
    for (int rep = 0; rep < reps; ++rep) {
      Mix mix = make_mix(small, rng);
      fill(client, mix);
      std::string dir = fresh_dir(ctx);
      Proc p = run_gate(ctx, dir, small, true);
      expect_counts(client, "(d) small", 0, mix.replay, mix.park, mix.hold);
      check_gate_output(dir, small, 2 * small);
      small_w.push_back(p.wall);
      in_small.push_back(per_letter(p, 0, small - 1));

      mix = make_mix(large, rng);
      fill(client, mix);
      dir = fresh_dir(ctx);
      p = run_gate(ctx, dir, large, true);
      expect_counts(client, "(d) large", 0, mix.replay, mix.park, mix.hold);
      verify_large.push_back(check_gate_output(dir, large, 2 * large));
      large_w.push_back(p.wall);
      first_large.push_back(per_letter(p, 0, w));
      last_large.push_back(per_letter(p, large - 1 - w, w));

      mix = make_mix(small, rng);
      fill(client, mix);
      p = run_gate(ctx, dir, small, true);  // the same directory: its ledger and audit log
      expect_counts(client, "(d) appended", 0, mix.replay, mix.park, mix.hold);
      verify_more.push_back(check_gate_output(dir, small, 2 * (large + small)));
      more_w.push_back(p.wall);
      in_more.push_back(per_letter(p, 0, small - 1));
      std::fprintf(stderr, "growth run %d: %ld in %.3f s, %ld in %.3f s, %ld more in %.3f s\n",
                   rep + 1, small, small_w.back(), large, large_w.back(), small, more_w.back());
    }
    std::printf(
        "\n| (d) run | letters | audit entries before | wall s (median of %d) | letters/s | "
        "ms per letter | runs, wall s |\n",
        reps);
    std::printf("|---|---|---|---|---|---|---|\n");
    const auto row = [&](const char* what, long n, long before, const std::vector<double>& w) {
      std::string runs;
      for (double x : w) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.2f", runs.empty() ? "" : " / ", x);
        runs += buf;
      }
      const double m = median(w);
      std::printf("| %s | %ld | %ld | %.2f | %.0f | %.2f | %s |\n", what, n, before, m,
                  static_cast<double>(n) / m, m * 1000 / static_cast<double>(n), runs.c_str());
    };
    row("fresh ledger and audit log", small, 0, small_w);
    row("fresh ledger and audit log", large, 0, large_w);
    row("on the previous run's ledger and audit log", small, 2 * large, more_w);
    std::printf(
        "\nInside the runs (from when each letter line arrived; the first letter, process start "
        "and the log's open left out):\n\n| (d) letters | audit entries before them | ms per "
        "letter (median of %d) | letters/s | runs, ms per letter |\n|---|---|---|---|---|\n",
        reps);
    const auto inside = [&](const std::string& what, long before, const std::vector<double>& v) {
      std::string runs;
      for (double x : v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.2f", runs.empty() ? "" : " / ", x);
        runs += buf;
      }
      const double m = median(v);
      std::printf("| %s | %ld | %.2f | %.0f | %s |\n", what.c_str(), before, m, 1000 / m,
                  runs.c_str());
    };
    const auto span = [](long a, long b) { return std::to_string(a) + "-" + std::to_string(b); };
    inside(span(2, small) + " of a fresh " + std::to_string(small) + "-letter run", 2, in_small);
    inside(span(2, w + 1) + " of a fresh " + std::to_string(large) + "-letter run", 2, first_large);
    inside(span(large - w + 1, large) + " of the same run", 2 * (large - w), last_large);
    inside(span(2, small) + " on the " + std::to_string(large) + "-letter run's log", 2 * large + 2,
           in_more);
    const double marginal =
        (median(large_w) - median(small_w)) * 1000 / static_cast<double>(large - small);
    std::printf(
        "\nmarginal cost per letter between %ld and %ld letters: %.2f ms (%.0f letters/s)\n", small,
        large, marginal, 1000 / marginal);
    // What one append cost when every append re-read and re-verified the whole log.
    std::printf(
        "replaygate audit verify of the whole log (median): %ld entries %.1f ms, %ld "
        "entries %.1f ms\n",
        2 * large, median(verify_large) * 1000, 2 * (large + small), median(verify_more) * 1000);
  }
  std::printf("\nload average at the end: %s\n", load_average().c_str());
  client.close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench(argc, argv);
  } catch (const std::exception& e) {
    // The node and the temporary directory are gone by now (destructors of bench()'s locals).
    std::fprintf(stderr, "rg_gate_bench: FAILED: %s\n", e.what());
    return 1;
  }
}
