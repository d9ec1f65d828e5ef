// The redrive port on Sidekiq's Dead set in Redis (redrive/port.h): take dead jobs by score into
// the gate's own in-flight set, move each with one atomic Lua script, give back what was not
// moved. The loop (redrive/run.h) never sees Redis.
//
// Keys (SCOPE: the ledger scope, GATE: --gate-id):
//   dead                               Sidekiq's Dead set (score: time of death, member: job JSON)
//   replaygate:SCOPE:inflight:GATE     the jobs this gate took and has not moved (same scores)
//   replaygate:SCOPE:parked / :held    where park and hold put jobs (sorted sets of our own, which
//                                      Sidekiq's trimming of `dead` never touches)
//   replaygate:SCOPE:lease:GATE        "HOST:PID" of the running gate of that id, with a TTL
//   replaygate:SCOPE:gates             every gate id that ran: open() takes over the in-flight
//                                      jobs of those whose lease ended (never moved, so resumed)
//   queue:NAME + set `queues`          where a replay goes, as Sidekiq's own client pushes a job
// Taking (--apply): the lowest scores first (never by rank: Sidekiq trims the set while the gate
// reads), moved into the in-flight set in one script, so two gates never see one job and a
// restarted gate resumes its own in-flight jobs (DeadLetter::unmoved: a crash between a claim and
// the move is then finished, not held). A dry run reads by a score cursor and moves nothing.
// Moves, each one EVALSHA: replay = remove from in-flight, LPUSH queue:NAME, SADD queues NAME,
// with `replaygate_replays` (the claimed marker) and `enqueued_at` set in the job, nothing else
// changed (retry_count is not decremented, the error fields stay); park and hold = remove from
// in-flight, ZADD into parked/held with `replaygate_verb`, `_rule`, `_reason`, `_from`, `_at`
// added, at the job's death score. A move whose job is no longer in this gate's in-flight set
// does nothing and says so (never a second copy). A job over `max_body` bytes, or one that is not
// a readable job, is held as it is (the script moves it server-side: a big job is never copied
// into the gate, only its first bytes). Settling is the move itself (the script removes the job
// from in-flight); give_back and close() put in-flight jobs back into `dead` at their scores.
//
// With apply, open() refuses a server without AOF (unless allow_volatile), a replica, a
// maxmemory-policy other than noeviction, and a gate id whose lease another live gate holds; it
// warns when `dead` holds more than 90% of dead_max_jobs. With replicas, each block waits for them
// (WAIT). Threads: the port and the loop over it use one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redrive/port.h"
#include "redrive/redis/redis_client.h"
#include "redrive/test_points.h"

namespace replaygate::redrive::redis {

struct SidekiqOptions {
  RedisUrl url;
  std::string scope = "default";  // the ledger scope: the key prefix replaygate:SCOPE:
  std::string gate_id;            // this gate's in-flight set and lease
  std::string dead_key = "dead";
  bool apply = false;
  bool allow_volatile = false;  // run --apply on a server without AOF
  size_t max_body = size_t{1} << 20;
  int max_depth = 64;  // JSON nesting of a job, at most (deeper: held unread)
  int timeout_ms = 5000;
  int lease_ms = 60000;
  uint64_t dead_max_jobs = 10000;  // Sidekiq's dead_max_jobs: a warning at 90%
  // The mapping's `map:` of the policy input `topic` (raw queue name -> topic).
  std::map<std::string, std::string, std::less<>> topic_map;
};

class SidekiqPort final : public Port {
 public:
  // `note` hears warnings and resumed jobs; `test_points` may be null. Neither owned.
  SidekiqPort(SidekiqOptions options, std::function<void(const std::string&)> note,
              const TestPoints* test_points);
  ~SidekiqPort() override;

  std::string open() override;
  bool up() const override;
  std::string lost_reason(bool where) const override;
  void close() override;
  std::string describe() const override { return o_.url.describe(); }
  const std::string& queue() const override { return o_.dead_key; }
  Next next(size_t n, int timeout_ms, int linger_ms, std::vector<Letter>* out,
            std::string* error) override;
  void wait(int ms, const std::function<void()>& tick) override;
  std::string target(const Letter& letter, Action action) const override;
  const std::string& hold_name() const override { return held_key_; }
  std::optional<std::string> refuse_move(const Letter&, Action) const override {
    return std::nullopt;  // parked and held are never where a job runs
  }
  std::vector<MoveAnswer> act(const std::vector<Move>& block) override;
  std::vector<std::string> settle(const std::vector<const Letter*>& block) override;
  void give_back(const Letter& letter) override;
  std::optional<uint32_t> depth() override;
  std::optional<TargetDepth> replay_target_depth(const Letter& letter) override;
  // ZCARD of held and parked, and now minus the lowest held score (Sidekiq's time of death, kept
  // by every move): one script, counts and one score only, never a job's body.
  HeldDepth held_depth() override;
  std::string pass_over_cost() const override { return ""; }
  Where locate(const Letter& letter) override;

  // One entry as a script returns it: the member (or its first bytes when `size` is set), its
  // score as Redis wrote it, and its full size when it is over max_body.
  struct Entry {
    std::string member;
    std::string score;
    std::string size;  // "" : member is whole
  };
  // A job in hand: its entry, what was read of it, and whether its move happened.
  struct InHand;

 private:
  std::string check_server();
  std::string take_lease();
  std::string recover_others();
  bool renew_lease();
  std::optional<std::vector<Entry>> run_read(const std::vector<std::string>& keys,
                                             const std::vector<std::string>& args, int which);
  void fill(InHand& hand, Entry entry, bool resumed, Letter& letter);
  std::vector<std::string> move_args(const Move& move, const InHand& hand) const;

  SidekiqOptions o_;
  std::function<void(const std::string&)> note_;
  const TestPoints* test_points_;
  std::unique_ptr<Client> client_;
  std::string inflight_key_, parked_key_, held_key_, lease_key_, lease_value_;
  std::vector<Entry> resume_;  // in-flight jobs found at open(), handed out first
  std::vector<std::unique_ptr<InHand>> hands_;
  // Dry run: the score cursor (the last score handed out and how many members of that score).
  std::string cursor_score_ = "-inf";
  uint64_t cursor_ties_ = 0;
  int replicas_ = 0;
  std::string lost_;
};

}  // namespace replaygate::redrive::redis
