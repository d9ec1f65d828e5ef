// The redrive port on Sidekiq's Dead set: take, move, give back, each an atomic Lua script
// (sidekiq_port.h).
#include "redrive/redis/sidekiq_port.h"

#include <signal.h>
#include <sodium.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "common/utf8.h"
#include "inputs/records.h"

namespace replaygate::redrive::redis {

namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

// Every script returns entries as triples {member or its first bytes, score, size or ""}, so a
// job over max_body is never copied into the gate. `entry` is the Lua function that makes one.
constexpr std::string_view kEntryLua = R"lua(
local function entry(out, m, s, maxbody)
  out[#out + 1] = (#m > maxbody) and string.sub(m, 1, 256) or m
  out[#out + 1] = s
  out[#out + 1] = (#m > maxbody) and tostring(#m) or ''
end
-- The member a triple names: itself, or (a big one) the member of that score, size and prefix.
local function find(key, m, s, size)
  if size == '' then
    if redis.call('ZSCORE', key, m) then return m end
    return nil
  end
  for _, c in ipairs(redis.call('ZRANGEBYSCORE', key, s, s)) do
    if #c == tonumber(size) and string.sub(c, 1, #m) == m then return c end
  end
  return nil
end
)lua";

// KEYS: dead, inflight. ARGV: n, max_body. The n lowest scores of dead into inflight.
constexpr std::string_view kTakeLua = R"lua(
local got = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0,
                       tonumber(ARGV[1]))
local out = {}
for i = 1, #got, 2 do
  redis.call('ZADD', KEYS[2], got[i + 1], got[i])
  redis.call('ZREM', KEYS[1], got[i])
  entry(out, got[i], got[i + 1], tonumber(ARGV[2]))
end
return out
)lua";

// KEYS: a sorted set. ARGV: min score, offset, n, max_body. Reads, moves nothing.
constexpr std::string_view kReadLua = R"lua(
local got = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'WITHSCORES', 'LIMIT',
                       tonumber(ARGV[2]), tonumber(ARGV[3]))
local out = {}
for i = 1, #got, 2 do entry(out, got[i], got[i + 1], tonumber(ARGV[4])) end
return out
)lua";

// KEYS: inflight, destination, queues. ARGV: member, score, size, kind (replay | zadd), content
// ('' : the member as it is), queue name. 1 moved, 0 not in this gate's in-flight set.
constexpr std::string_view kMoveLua = R"lua(
local m = find(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
if not m then return 0 end
redis.call('ZREM', KEYS[1], m)
local body = ARGV[5]
if body == '' then body = m end
if ARGV[4] == 'replay' then
  redis.call('LPUSH', KEYS[2], body)
  redis.call('SADD', KEYS[3], ARGV[6])
else
  redis.call('ZADD', KEYS[2], ARGV[2], body)
end
return 1
)lua";

// KEYS: inflight, dead. ARGV: member, score, size ('' for all: every in-flight job). Back to
// dead at its score. Returns how many.
constexpr std::string_view kGiveBackLua = R"lua(
if ARGV[1] == '' then
  local got = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf', 'WITHSCORES')
  for i = 1, #got, 2 do redis.call('ZADD', KEYS[2], got[i + 1], got[i]) end
  redis.call('DEL', KEYS[1])
  return #got / 2
end
local m = find(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
if not m then return 0 end
redis.call('ZREM', KEYS[1], m)
redis.call('ZADD', KEYS[2], ARGV[2], m)
return 1
)lua";

// KEYS: lease. ARGV: value, ms. Renews a lease this gate holds: 1, else 0.
constexpr std::string_view kRenewLua = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
)lua";

// KEYS: lease. ARGV: value. Ends a lease this gate holds.
constexpr std::string_view kReleaseLua = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
)lua";

// KEYS: another gate's lease, its in-flight set, ours. When that gate's lease has ended, every
// job it took and never moved becomes ours (at its score). Returns how many.
constexpr std::string_view kRecoverLua = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local got = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '+inf', 'WITHSCORES')
for i = 1, #got, 2 do redis.call('ZADD', KEYS[3], got[i + 1], got[i]) end
redis.call('DEL', KEYS[2])
return #got / 2
)lua";

// KEYS: inflight, dead, parked, held, queue. ARGV: member, score, size. Where the job is now.
constexpr std::string_view kLocateLua = R"lua(
if find(KEYS[1], ARGV[1], ARGV[2], ARGV[3]) then return 'inflight' end
if find(KEYS[2], ARGV[1], ARGV[2], ARGV[3]) then return 'dead' end
return 'elsewhere'
)lua";

// KEYS: held, parked. {ZCARD held, ZCARD parked, the lowest held score or ''}: counts and a score
// only, so no job is copied into the gate (commands of the minimal ACL, docs/gate.md).
constexpr std::string_view kHeldDepthLua = R"lua(
local lowest = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
return {redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), lowest[2] or ''}
)lua";

// The scripts with the helpers in front (one text each, loaded once per server).
struct Scripts {
  std::string take, read, move, give_back, renew, release, locate, recover;
  Scripts() {
    const std::string h(kEntryLua);
    take = h + std::string(kTakeLua);
    read = h + std::string(kReadLua);
    move = h + std::string(kMoveLua);
    give_back = h + std::string(kGiveBackLua);
    renew = std::string(kRenewLua);
    release = std::string(kReleaseLua);
    locate = h + std::string(kLocateLua);
    recover = std::string(kRecoverLua);
  }
};

const Scripts& scripts() {
  static const Scripts s;
  return s;
}

std::string sha256_text(std::string_view bytes) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (const unsigned char c : digest) {
    out += kHex[c >> 4];
    out += kHex[c & 0x0F];
  }
  return out;
}

// The deepest nesting of arrays and objects in `text`, counted without recursion (strings
// skipped), stopping past `limit`.
int nesting(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace

struct SidekiqPort::InHand {
  Entry entry;
  bool moved = false;
  std::string record;  // the job JSON, then kPadding spare bytes
  std::string queue;   // the job's queue ("" : unknown)
  bool readable = false;
  Json job;  // when readable
};

SidekiqPort::SidekiqPort(SidekiqOptions options, std::function<void(const std::string&)> note,
                         const TestPoints* test_points)
    : o_(std::move(options)), note_(std::move(note)), test_points_(test_points) {
  const std::string prefix = "replaygate:" + o_.scope + ":";
  inflight_key_ = prefix + "inflight:" + o_.gate_id;
  parked_key_ = prefix + "parked";
  held_key_ = prefix + "held";
  lease_key_ = prefix + "lease:" + o_.gate_id;
  lease_value_ = host_name() + ":" + std::to_string(getpid());
}

SidekiqPort::~SidekiqPort() { close(); }

// The durability and safety checks of --apply (sidekiq_port.h). "" or why the gate refuses.
std::string SidekiqPort::check_server() {
  std::optional<Reply> type = client_->call({"TYPE", o_.dead_key});
  if (!type) return client_->error();
  if (type->str != "zset" && type->str != "none") {
    return "'" + o_.dead_key + "' is a " + type->str + ", not Sidekiq's Dead set (a sorted set)";
  }
  std::optional<Reply> info = client_->call({"INFO", "all"});
  if (!info) return client_->error();
  if (info->is_error()) {
    return "INFO was refused (" + info->str + "): the gate needs it to check durability";
  }
  const std::string& text = info->str;
  if (info_field(text, "loading") == "1") return "the server is still loading its data set";
  if (!o_.apply) return "";
  if (info_field(text, "role") != "master") {
    return "the server is a replica (role " + info_field(text, "role") +
           "): the gate moves jobs on the primary only";
  }
  if (info_field(text, "aof_enabled") != "1" && !o_.allow_volatile) {
    return "the server does not write an append-only file (INFO persistence: aof_enabled:" +
           info_field(text, "aof_enabled") +
           "): a move the server acknowledged could be lost in a restart, after the ledger "
           "recorded it; turn AOF on (appendonly yes, appendfsync always or everysec), or give "
           "--allow-volatile to accept that";
  }
  const std::string policy = info_field(text, "maxmemory_policy");
  if (policy != "noeviction") {
    return "the server's maxmemory-policy is '" + policy +
           "': it may evict the dead set, the gate's in-flight set or a replayed job under "
           "memory pressure; set maxmemory-policy noeviction";
  }
  replicas_ = std::atoi(info_field(text, "connected_slaves").c_str());
  return "";
}

std::string SidekiqPort::take_lease() {
  const std::string ms = std::to_string(o_.lease_ms);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<Reply> set = client_->call({"SET", lease_key_, lease_value_, "NX", "PX", ms});
    if (!set) return client_->error();
    if (set->kind == Reply::Kind::kStatus) return "";
    if (set->is_error()) return "cannot take the gate's lease: " + set->str;
    std::optional<Reply> holder = client_->call({"GET", lease_key_});
    if (!holder) return client_->error();
    // A gate of this id that died on this host (kill -9, a crash) left its lease: take it over.
    const std::string& h = holder->str;
    // Our own (a reconnect after a lost connection or a server restart): renew it.
    if (h == lease_value_ && renew_lease()) return "";
    const std::string host = host_name() + ":";
    if (h.rfind(host, 0) == 0) {
      const pid_t pid = std::atoi(h.c_str() + host.size());
      if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
        Script release{scripts().release, ""};
        if (!client_->eval(release, {lease_key_}, {h})) return client_->error();
        continue;
      }
    }
    if (h.empty()) continue;  // it expired between the two calls
    return "gate id '" + o_.gate_id + "' is held by a running gate (" + h +
           "): give each gate on one dead set its own --gate-id (a lease of a gate that died "
           "elsewhere ends after --lease ms)";
  }
  return "cannot take the gate's lease";
}

// Jobs that other gates of this scope took and never moved, whose leases ended (a gate that died
// and was not run again): into this gate's in-flight set, resumed like its own. "" or an error.
std::string SidekiqPort::recover_others() {
  const std::string gates_key = "replaygate:" + o_.scope + ":gates";
  std::optional<Reply> added = client_->call({"SADD", gates_key, o_.gate_id});
  if (!added) return client_->error();
  std::optional<Reply> gates = client_->call({"SMEMBERS", gates_key});
  if (!gates) return client_->error();
  Script recover{scripts().recover, ""};
  const std::string prefix = "replaygate:" + o_.scope + ":";
  for (const Reply& g : gates->elements) {
    if (g.str == o_.gate_id) continue;
    std::optional<Reply> moved = client_->eval(
        recover, {prefix + "lease:" + g.str, prefix + "inflight:" + g.str, inflight_key_}, {});
    if (!moved) return client_->error();
    if (moved->kind == Reply::Kind::kInteger && moved->integer > 0 && note_) {
      note_("recovered " + std::to_string(moved->integer) + " job(s) of gate '" + g.str +
            "', whose lease ended: they were taken and never moved, and are handled now");
    }
  }
  return "";
}

bool SidekiqPort::renew_lease() {
  if (!o_.apply || !client_ || client_->lost()) return true;
  Script renew{scripts().renew, ""};
  std::optional<Reply> r =
      client_->eval(renew, {lease_key_}, {lease_value_, std::to_string(o_.lease_ms)});
  return r && r->kind == Reply::Kind::kInteger && r->integer == 1;
}

std::optional<std::vector<SidekiqPort::Entry>> SidekiqPort::run_read(
    const std::vector<std::string>& keys, const std::vector<std::string>& args, int which) {
  static Script take{scripts().take, ""}, read{scripts().read, ""};
  Script& script = which == 0 ? take : read;
  std::vector<std::string_view> k(keys.begin(), keys.end()), a(args.begin(), args.end());
  std::optional<Reply> r = client_->eval(script, k, a);
  if (!r) return std::nullopt;
  if (r->is_error()) {
    lost_ = "the server refused to hand out jobs: " + r->str;
    return std::nullopt;
  }
  std::vector<Entry> out;
  for (size_t i = 0; i + 2 < r->elements.size(); i += 3) {
    out.push_back({std::move(r->elements[i].str), r->elements[i + 1].str, r->elements[i + 2].str});
  }
  return out;
}

std::string SidekiqPort::open() {
  close();
  lost_.clear();
  std::string error;
  client_ = Client::open(o_.url, o_.timeout_ms, &error);
  if (!client_) return error;
  if (std::string why = check_server(); !why.empty()) {
    client_.reset();
    return why;
  }
  if (o_.apply) {
    if (std::string why = take_lease(); !why.empty()) {
      client_.reset();
      return why;
    }
    if (std::string why = recover_others(); !why.empty()) return why;
    const std::optional<std::vector<Entry>> resumed =
        run_read({inflight_key_}, {"-inf", "0", "100000", std::to_string(o_.max_body)}, 1);
    if (!resumed) return client_->lost() ? client_->error() : lost_;
    resume_ = *resumed;
    if (!resume_.empty() && note_) {
      note_("resuming " + std::to_string(resume_.size()) + " job(s) in " + inflight_key_ +
            " (taken and never moved: by an earlier run of this gate id, or by a gate whose lease "
            "ended)");
    }
  }
  if (std::optional<uint32_t> d = depth(); d && note_ && *d * 10 >= o_.dead_max_jobs * 9) {
    note_("'" + o_.dead_key + "' holds " + std::to_string(*d) + " jobs, 90% or more of Sidekiq's " +
          "dead_max_jobs (" + std::to_string(o_.dead_max_jobs) +
          "): Sidekiq drops the oldest dead jobs past it");
  }
  cursor_score_ = "-inf";
  cursor_ties_ = 0;
  return "";
}

bool SidekiqPort::up() const { return client_ && !client_->lost() && lost_.empty(); }

std::string SidekiqPort::lost_reason(bool where) const {
  const std::string why = !lost_.empty() ? lost_ : client_ ? client_->error() : "not connected";
  return where ? "Redis connection: " + why : why;
}

void SidekiqPort::close() {
  if (client_ && !client_->lost() && o_.apply) {
    // Every job taken and not moved goes back to dead at its score (a crash leaves them in the
    // in-flight set instead, and the next run of this gate id resumes them).
    static Script give_back{scripts().give_back, ""};
    client_->eval(give_back, {inflight_key_, o_.dead_key}, {"", "", ""});
    Script release{scripts().release, ""};
    client_->eval(release, {lease_key_}, {lease_value_});
  }
  client_.reset();
  resume_.clear();
}

void SidekiqPort::fill(InHand& hand, Entry entry, bool resumed, Letter& letter) {
  hand.entry = std::move(entry);
  hand.moved = false;
  hand.readable = false;
  hand.queue.clear();
  hand.job = Json();
  DeadLetter& dead = letter.dead;
  dead = DeadLetter();
  dead.unmoved = resumed;
  const std::string& m = hand.entry.member;
  if (!hand.entry.size.empty()) {
    dead.problem = "the job is " + hand.entry.size + " bytes, more than --max-body " +
                   std::to_string(o_.max_body) + ": held unread (it was not copied into the gate)";
    dead.replays = std::nullopt;
    return;
  }
  dead.body_digest = sha256_text(m);
  hand.record.assign(m);
  hand.record.append(inputs::LineReader::kPadding, ' ');
  dead.record = std::string_view(hand.record).substr(0, m.size());
  if (!valid_utf8(m)) {
    dead.problem = "invalid record: the job is not valid UTF-8";
    dead.replays = std::nullopt;
    return;
  }
  if (nesting(m, o_.max_depth) > o_.max_depth) {
    dead.problem =
        "invalid record: the job nests deeper than " + std::to_string(o_.max_depth) + " levels";
    dead.replays = std::nullopt;
    return;
  }
  try {
    hand.job = Json::parse(m);
  } catch (const Json::exception& e) {
    dead.problem = std::string("invalid record: the job is not JSON: ") + e.what();
    dead.replays = std::nullopt;
    return;
  }
  if (!hand.job.is_object()) {
    dead.problem = "invalid record: the job is not a JSON object";
    dead.replays = std::nullopt;
    return;
  }
  hand.readable = true;
  if (const auto jid = hand.job.find("jid"); jid != hand.job.end() && jid->is_string()) {
    dead.message_id = jid->get<std::string>();
  }
  if (const auto q = hand.job.find("queue"); q != hand.job.end() && q->is_string()) {
    hand.queue = q->get<std::string>();
  }
  dead.replay_target_known = !hand.queue.empty();
  if (const auto r = hand.job.find("replaygate_replays"); r != hand.job.end()) {
    if (r->is_number_unsigned() && r->get<uint64_t>() <= INT64_MAX) {
      dead.replays = static_cast<int64_t>(r->get<uint64_t>());
    } else if (r->is_number_integer() && r->get<int64_t>() >= 0) {
      dead.replays = r->get<int64_t>();
    } else {
      dead.replays = std::nullopt;  // unreadable: a replay of it is held
    }
  }
  const double score = std::atof(hand.entry.score.c_str());
  letter.timestamp = static_cast<int64_t>(score);
  dead.refuse_target = [this, &hand](const Table& table,
                                     const Input& input) -> std::optional<DeadLetter::Refusal> {
    const uint32_t field = table.field_index("topic");
    if (field == Table::kNoField) return std::nullopt;
    const Input::Slot slot = input.slot(field);
    const std::string where = "the job's queue is '" + hand.queue + "'";
    if (slot.state != Input::Slot::State::kString) {
      return DeadLetter::Refusal{"gate:target_mismatch",
                                 where + ", but its decision was made without a topic"};
    }
    if (slot.s == hand.queue) return std::nullopt;
    if (const auto it = o_.topic_map.find(hand.queue);
        it != o_.topic_map.end() && it->second == slot.s) {
      return std::nullopt;
    }
    return DeadLetter::Refusal{"gate:target_mismatch",
                               where + ", but its decision was made for topic '" +
                                   std::string(slot.s) +
                                   "': a replay goes only to the queue its decision was made for"};
  };
}

Port::Next SidekiqPort::next(size_t n, int timeout_ms, int /*linger_ms*/, std::vector<Letter>* out,
                             std::string* error) {
  out->clear();
  n = std::max<size_t>(n, 1);
  if (!up()) {
    *error = lost_reason(false);
    return Next::kLost;
  }
  std::vector<Entry> entries;
  bool resumed = false;
  if (!resume_.empty()) {
    const size_t k = std::min(n, resume_.size());
    entries.assign(std::make_move_iterator(resume_.begin()),
                   std::make_move_iterator(resume_.begin() + static_cast<std::ptrdiff_t>(k)));
    resume_.erase(resume_.begin(), resume_.begin() + static_cast<std::ptrdiff_t>(k));
    resumed = true;
  } else {
    const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
    const std::string max_body = std::to_string(o_.max_body);
    for (;;) {
      if (!renew_lease()) {
        if (lost_.empty() && (!client_ || !client_->lost())) {
          lost_ = "this gate's lease " + lease_key_ +
                  " ended (the server was unreachable longer than --lease, or another gate "
                  "took it over): reconnecting";
        }
        *error = lost_reason(false);
        return Next::kLost;
      }
      std::optional<std::vector<Entry>> got;
      if (o_.apply) {
        got = run_read({o_.dead_key, inflight_key_}, {std::to_string(n), max_body}, 0);
      } else {
        got =
            run_read({o_.dead_key},
                     {cursor_score_, std::to_string(cursor_ties_), std::to_string(n), max_body}, 1);
      }
      if (!got) {
        *error = lost_reason(false);
        return Next::kLost;
      }
      if (!got->empty()) {
        entries = std::move(*got);
        break;
      }
      if (Clock::now() >= end) return Next::kTimeout;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!o_.apply) {  // the cursor: the last score and how many of its members were seen
      for (const Entry& e : entries) {
        if (e.score == cursor_score_) {
          ++cursor_ties_;
        } else {
          cursor_score_ = e.score;
          cursor_ties_ = 1;
        }
      }
    }
  }
  while (hands_.size() < entries.size()) hands_.push_back(std::make_unique<InHand>());
  for (size_t i = 0; i < entries.size(); ++i) {
    Letter& letter = out->emplace_back();
    letter.slot = static_cast<uint32_t>(i);
    letter.handle = i;
    fill(*hands_[i], std::move(entries[i]), resumed, letter);
  }
  return Next::kLetters;
}

void SidekiqPort::wait(int ms, const std::function<void()>& tick) {
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < end) {
    if (tick) tick();
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::milliseconds(50), end - Clock::now()));
  }
  renew_lease();
}

std::string SidekiqPort::target(const Letter& letter, Action action) const {
  if (action == Action::kRepublish) {
    return "list 'queue:" + hands_[letter.slot]->queue + "' (Sidekiq queue '" +
           hands_[letter.slot]->queue + "')";
  }
  return "sorted set '" + (action == Action::kPark ? parked_key_ : held_key_) + "'";
}

// The script arguments of one move: member, score, size, kind, content, queue name.
std::vector<std::string> SidekiqPort::move_args(const Move& m, const InHand& hand) const {
  std::vector<std::string> a = {hand.entry.member, hand.entry.score, hand.entry.size};
  if (m.action == Action::kRepublish) {
    Json job = hand.job;
    job["replaygate_replays"] = m.copy_replay;
    job["enqueued_at"] = now_seconds();  // as Sidekiq's client sets it on a push
    a.insert(a.end(), {"replay", job.dump(), hand.queue});
    return a;
  }
  std::string content;  // an unreadable or big job moves as it is
  if (hand.readable) {
    Json job = hand.job;
    job["replaygate_verb"] = m.verb;
    job["replaygate_rule"] = m.rule;
    job["replaygate_reason"] = m.reason.substr(0, 4096);
    job["replaygate_from"] = o_.dead_key;
    job["replaygate_at"] = now_seconds();
    content = job.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  a.insert(a.end(), {"zadd", content, ""});
  return a;
}

std::vector<MoveAnswer> SidekiqPort::act(const std::vector<Move>& block) {
  static Script move{scripts().move, ""};
  std::vector<MoveAnswer> answers(block.size());
  std::vector<std::vector<std::string>> owned;
  std::vector<std::vector<std::string_view>> calls;
  owned.reserve(block.size());
  for (const Move& m : block) {
    const InHand& hand = *hands_[m.letter->slot];
    std::vector<std::string>& a = owned.emplace_back();
    if (m.action == Action::kRepublish) {
      a = {inflight_key_, "queue:" + hand.queue, "queues"};
    } else {
      a = {inflight_key_, m.action == Action::kPark ? parked_key_ : held_key_, "queues"};
    }
    std::vector<std::string> args = move_args(m, hand);
    a.insert(a.end(), args.begin(), args.end());
    calls.emplace_back(a.begin(), a.end());
  }
  std::optional<std::vector<Reply>> replies;
  if (up()) replies = client_->eval_many(move, calls, 3);
  for (size_t i = 0; i < block.size(); ++i) {
    MoveAnswer& answer = answers[i];
    if (!replies) {
      answer.outcome = MoveAnswer::Outcome::kUnknown;
      answer.lost = true;
      answer.result = "lost";
      answer.detail = lost_reason(false);
      continue;
    }
    const Reply& r = (*replies)[i];
    if (r.is_error()) {
      // BUSY, READONLY, OOM, ...: a script refused before it ran changed nothing, but a script
      // failing halfway is not ruled out: outcome unknown (the job stays in-flight if unmoved).
      answer.outcome = MoveAnswer::Outcome::kUnknown;
      answer.result = "refused";
      answer.detail = r.str;
    } else if (r.kind == Reply::Kind::kInteger && r.integer == 1) {
      answer.outcome = MoveAnswer::Outcome::kDone;
      answer.result = "moved";
      answer.detail = "one atomic script";
      hands_[block[i].letter->slot]->moved = true;
    } else {
      answer.outcome = MoveAnswer::Outcome::kNotDone;
      answer.result = "not in flight";
      answer.detail = "the job is no longer in " + inflight_key_ + " (another gate recovered it)";
    }
    if (test_points_ != nullptr) test_points_->at("published");
  }
  if (replies && replicas_ > 0) {
    const std::string n = std::to_string(replicas_);
    std::optional<Reply> w = client_->call({"WAIT", n, std::to_string(o_.timeout_ms)});
    if (w && w->kind == Reply::Kind::kInteger && w->integer < replicas_ && note_) {
      note_("WAIT: " + std::to_string(w->integer) + " of " + n +
            " replicas acknowledged the block's moves in time");
    }
  }
  return answers;
}

std::vector<std::string> SidekiqPort::settle(const std::vector<const Letter*>& block) {
  // The move script already removed each moved job from the in-flight set. A letter settled
  // without a move (an ack-only step, which needs a redelivery Redis never reports) stays there
  // and goes back to dead: never deleted.
  std::vector<std::string> errors(block.size());
  for (size_t i = 0; i < block.size(); ++i) {
    if (!hands_[block[i]->slot]->moved) {
      errors[i] =
          "the job was not moved: it stays in " + inflight_key_ + " and returns to " + o_.dead_key;
    }
  }
  return errors;
}

void SidekiqPort::give_back(const Letter& letter) {
  if (!o_.apply || !up()) return;
  static Script give_back{scripts().give_back, ""};
  const Entry& e = hands_[letter.slot]->entry;
  client_->eval(give_back, {inflight_key_, o_.dead_key}, {e.member, e.score, e.size});
}

std::optional<uint32_t> SidekiqPort::depth() {
  if (!up()) return std::nullopt;
  std::optional<Reply> r = client_->call({"ZCARD", o_.dead_key});
  if (!r || r->kind != Reply::Kind::kInteger) return std::nullopt;
  return static_cast<uint32_t>(r->integer);
}

Port::HeldDepth SidekiqPort::held_depth() {
  HeldDepth out;
  if (!up()) return out;
  static Script held_depth{kHeldDepthLua, ""};
  std::optional<Reply> r = client_->eval(held_depth, {held_key_, parked_key_}, {});
  if (!r || r->kind != Reply::Kind::kArray || r->elements.size() != 3) return out;
  const std::vector<Reply>& e = r->elements;
  if (e[0].kind != Reply::Kind::kInteger || e[1].kind != Reply::Kind::kInteger) return out;
  out.held = static_cast<uint64_t>(e[0].integer);
  out.parked = static_cast<uint64_t>(e[1].integer);
  // The score a held job keeps is the one Sidekiq gave it in `dead`: Time.now.to_f when it died.
  char* end = nullptr;
  const double died = std::strtod(e[2].str.c_str(), &end);
  if (e[2].kind == Reply::Kind::kString && !e[2].str.empty() && end != nullptr && *end == '\0' &&
      std::isfinite(died)) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    out.oldest_held_seconds = std::max(0.0, now - died);  // a clock behind Sidekiq's: 0, not < 0
  }
  return out;
}

std::optional<Port::TargetDepth> SidekiqPort::replay_target_depth(const Letter& letter) {
  if (!up()) return std::nullopt;
  const std::string& q = hands_[letter.slot]->queue;
  std::optional<Reply> r = client_->call({"LLEN", "queue:" + q});
  if (!r || r->kind != Reply::Kind::kInteger) return std::nullopt;
  return TargetDepth{"queue:" + q, static_cast<uint32_t>(r->integer)};
}

Port::Where SidekiqPort::locate(const Letter& letter) {
  const InHand& hand = *hands_[letter.slot];
  if (hand.moved) return Where::kGone;
  if (!up()) return Where::kUnknown;
  static Script locate{scripts().locate, ""};
  const Entry& e = hand.entry;
  std::optional<Reply> r =
      client_->eval(locate, {inflight_key_, o_.dead_key}, {e.member, e.score, e.size});
  if (!r || r->is_error()) return Where::kUnknown;
  // In-flight or dead: never moved (every move leaves in-flight in the same script).
  if (r->str == "inflight" || r->str == "dead") return Where::kDeadLetterQueue;
  return Where::kGone;
}

}  // namespace replaygate::redrive::redis
