// The semantics every backend must have, as functions over an Opener; sqlite_test.cc and
// postgres_test.cc run them against their backend.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <thread>

#include "support.h"

namespace replaygate::ledger::testing {
namespace {

std::unique_ptr<Ledger> must_open(const Opener& open, const Options& o) {
  auto r = open(o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return nullptr;
  return std::move(*r);
}

Options with_clock(const TestClock& clock, const std::string& scope = "default") {
  Options o;
  o.scope = scope;
  o.clock = clock.fn();
  return o;
}

}  // namespace

void check_claim_and_lookup(const Opener& open) {
  TestClock clock;
  auto l = must_open(open, with_clock(clock));
  ASSERT_TRUE(l);
  clock.set("2026-12-01T10:00:00.250000Z");
  auto first = l->claim_batch({make_claim("order-1", "host-a/pid-10", "m-001"),
                               make_claim("order-2", "host-a/pid-10", "m-002"),
                               make_claim("order-1", "host-a/pid-10", "m-003")});
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(first->size(), 3u);
  EXPECT_TRUE((*first)[0].won);
  EXPECT_TRUE((*first)[1].won);
  EXPECT_FALSE((*first)[2].won) << "a key twice in one batch is won once";
  EXPECT_EQ((*first)[2].holder.message_id, "m-001");
  const Record& won = (*first)[0].holder;
  EXPECT_EQ(won.key, "order-1");
  EXPECT_EQ(won.scope, "default");
  EXPECT_EQ(won.generation, 1);
  EXPECT_EQ(won.state, State::kClaimed);
  EXPECT_EQ(won.policy, "dlq-replay-gate");
  EXPECT_EQ(won.revision, 7);
  EXPECT_EQ(won.rule, "known_failures:payment.capture/timeout");
  EXPECT_EQ(format_time(won.claimed_at), "2026-12-01T10:00:00.250000Z");

  // Another worker, later: already claimed, with the earlier claim's when and where.
  clock.set("2026-12-01T11:30:00Z");
  auto second = l->claim_batch({make_claim("order-1", "host-b/pid-99", "m-004"),
                                make_claim("order-3", "host-b/pid-99", "m-005")});
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_FALSE((*second)[0].won);
  EXPECT_EQ((*second)[0].holder.worker, "host-a/pid-10");
  EXPECT_EQ((*second)[0].holder.message_id, "m-001");
  EXPECT_EQ(format_time((*second)[0].holder.claimed_at), "2026-12-01T10:00:00.250000Z");
  EXPECT_EQ((*second)[0].holder.state, State::kClaimed);
  EXPECT_TRUE((*second)[1].won);

  // lookup claims nothing.
  auto seen = l->lookup({"order-1", "order-4", "order-3"});
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  ASSERT_TRUE((*seen)[0].has_value());
  EXPECT_EQ((*seen)[0]->worker, "host-a/pid-10");
  EXPECT_FALSE((*seen)[1].has_value());
  ASSERT_TRUE((*seen)[2].has_value());
  EXPECT_EQ((*seen)[2]->message_id, "m-005");
  auto again = l->lookup({"order-4"});
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE((*again)[0].has_value()) << "lookup must not claim";
  auto later = l->claim_batch({make_claim("order-4")});
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE((*later)[0].won) << "a key only looked up is still free";

  // Empty batches are fine and touch nothing.
  auto none = l->claim_batch({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  // Keys are exact bytes: case, spaces and non-ASCII keys are distinct keys.
  auto exact = l->claim_batch({make_claim("ORDER-1"), make_claim("order-1 "),
                               make_claim("z\xC3\xBCrich \"quoted\" \\ {brace},comma")});
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  for (const auto& o : *exact) EXPECT_TRUE(o.won) << o.holder.key;
  auto exact2 = l->claim_batch({make_claim("z\xC3\xBCrich \"quoted\" \\ {brace},comma")});
  ASSERT_TRUE(exact2.ok());
  EXPECT_FALSE((*exact2)[0].won);
  EXPECT_EQ((*exact2)[0].holder.key, "z\xC3\xBCrich \"quoted\" \\ {brace},comma");
}

void check_mark_transitions(const Opener& open) {
  TestClock clock;
  auto l = must_open(open, with_clock(clock));
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->claim_batch({make_claim("k-1"), make_claim("k-2")}).ok());
  clock.set("2026-12-01T10:00:05Z");
  auto rec = l->mark("k-1", 1, State::kRecorded);
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_EQ(rec->state, State::kRecorded);
  EXPECT_EQ(format_time(rec->updated_at), "2026-12-01T10:00:05.000000Z");
  EXPECT_EQ(format_time(rec->claimed_at), "2026-12-01T10:00:00.000000Z");
  clock.set("2026-12-01T10:00:09Z");
  auto conf = l->mark("k-1", 1, State::kConfirmed);
  ASSERT_TRUE(conf.ok()) << conf.error().message;
  EXPECT_EQ(conf->state, State::kConfirmed);
  EXPECT_EQ(format_time(conf->updated_at), "2026-12-01T10:00:09.000000Z");
  // Marking the same state again is a no-op; going back is refused.
  auto same = l->mark("k-1", 1, State::kConfirmed);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(format_time(same->updated_at), "2026-12-01T10:00:09.000000Z");
  auto back = l->mark("k-1", 1, State::kRecorded);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().code, ErrorCode::kBadTransition);
  EXPECT_NE(back.error().message.find("confirmed"), std::string::npos) << back.error().message;
  // claimed -> confirmed directly is a forward move (a gate without an audit step).
  auto skip = l->mark("k-2", 1, State::kConfirmed);
  ASSERT_TRUE(skip.ok()) << skip.error().message;
  // Wrong generation, unknown key, a state that mark does not set.
  auto gen = l->mark("k-1", 2, State::kConfirmed);
  ASSERT_FALSE(gen.ok());
  EXPECT_EQ(gen.error().code, ErrorCode::kNotFound);
  auto unknown = l->mark("nope", 1, State::kRecorded);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  auto rel = l->mark("k-1", 1, State::kReleased);
  ASSERT_FALSE(rel.ok());
  EXPECT_EQ(rel.error().code, ErrorCode::kInvalidArgument);
  // A batch is all or nothing: k-3 stays claimed because k-1 cannot go back.
  ASSERT_TRUE(l->claim_batch({make_claim("k-3")}).ok());
  Status batch = l->mark_batch({{"k-3", 1}, {"k-1", 1}}, State::kRecorded);
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.error().code, ErrorCode::kBadTransition);
  auto k3 = l->lookup({"k-3"});
  ASSERT_TRUE(k3.ok());
  ASSERT_TRUE((*k3)[0]);
  EXPECT_EQ((*k3)[0]->state, State::kClaimed);
  ASSERT_TRUE(l->mark_batch({{"k-3", 1}, {"k-2", 1}}, State::kConfirmed).ok());
}

void check_release_history(const Opener& open) {
  TestClock clock;
  auto l = must_open(open, with_clock(clock));
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->claim_batch({make_claim("pay-9", "gate-1", "m-1")}).ok());
  ASSERT_TRUE(l->mark("pay-9", 1, State::kConfirmed).ok());
  clock.set("2026-12-01T12:00:00Z");
  auto rel = l->release("pay-9", "alice", "ticket OPS-42: the downstream rolled back");
  ASSERT_TRUE(rel.ok()) << rel.error().message;
  EXPECT_EQ(rel->state, State::kReleased);
  EXPECT_EQ(rel->generation, 1);
  EXPECT_EQ(rel->released_by, "alice");
  EXPECT_EQ(rel->release_reason, "ticket OPS-42: the downstream rolled back");
  ASSERT_TRUE(rel->released_at.has_value());
  EXPECT_EQ(format_time(*rel->released_at), "2026-12-01T12:00:00.000000Z");
  // Released: free for exactly one more claim.
  auto free = l->lookup({"pay-9"});
  ASSERT_TRUE(free.ok());
  EXPECT_FALSE((*free)[0].has_value());
  auto twice = l->release("pay-9", "alice", "again");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, ErrorCode::kNotFound);
  clock.set("2026-12-01T12:05:00Z");
  auto c2 = l->claim_batch({make_claim("pay-9", "gate-2", "m-2"), make_claim("pay-9", "gate-3")});
  ASSERT_TRUE(c2.ok());
  EXPECT_TRUE((*c2)[0].won);
  EXPECT_EQ((*c2)[0].holder.generation, 2);
  EXPECT_FALSE((*c2)[1].won);
  auto c3 = l->claim_batch({make_claim("pay-9", "gate-4")});
  ASSERT_TRUE(c3.ok());
  EXPECT_FALSE((*c3)[0].won);
  EXPECT_EQ((*c3)[0].holder.worker, "gate-2");
  EXPECT_EQ((*c3)[0].holder.generation, 2);
  // The history: both generations, oldest first.
  auto hist = l->show("pay-9");
  ASSERT_TRUE(hist.ok()) << hist.error().message;
  ASSERT_EQ(hist->size(), 2u);
  EXPECT_EQ((*hist)[0].generation, 1);
  EXPECT_EQ((*hist)[0].state, State::kReleased);
  EXPECT_EQ((*hist)[0].worker, "gate-1");
  EXPECT_EQ((*hist)[0].released_by, "alice");
  EXPECT_EQ((*hist)[1].generation, 2);
  EXPECT_EQ((*hist)[1].state, State::kClaimed);
  EXPECT_EQ((*hist)[1].worker, "gate-2");
  EXPECT_FALSE((*hist)[1].released_at.has_value());
  // The released generation cannot be marked any more.
  auto m = l->mark("pay-9", 1, State::kConfirmed);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kNotFound);
  // Refusals.
  auto nobody = l->release("pay-9", "", "why");
  ASSERT_FALSE(nobody.ok());
  EXPECT_EQ(nobody.error().code, ErrorCode::kInvalidArgument);
  auto noreason = l->release("pay-9", "bob", "");
  ASSERT_FALSE(noreason.ok());
  EXPECT_EQ(noreason.error().code, ErrorCode::kInvalidArgument);
  auto unknown = l->release("never-claimed", "bob", "why");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  auto empty = l->show("never-claimed");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

// Five rows of three ages and every state: old-1, old-2 claimed 11-01; mid-1 claimed 11-20 and
// recorded; new-1 claimed 12-01 and confirmed, new-2 claimed 12-01 and released.
static void claim_three_ages(Ledger& l, TestClock& clock) {
  clock.set("2026-11-01T00:00:00Z");
  ASSERT_TRUE(l.claim_batch({make_claim("old-1"), make_claim("old-2")}).ok());
  clock.set("2026-11-20T00:00:00Z");
  ASSERT_TRUE(l.claim_batch({make_claim("mid-1")}).ok());
  ASSERT_TRUE(l.mark("mid-1", 1, State::kRecorded).ok());
  clock.set("2026-12-01T09:00:00Z");
  ASSERT_TRUE(l.claim_batch({make_claim("new-1"), make_claim("new-2")}).ok());
  ASSERT_TRUE(l.mark("new-1", 1, State::kConfirmed).ok());
  ASSERT_TRUE(l.release("new-2", "carol", "retry approved").ok());
}

void check_list_stats_export(const Opener& open) {
  TestClock clock;
  auto l = must_open(open, with_clock(clock));
  ASSERT_TRUE(l);
  claim_three_ages(*l, clock);

  auto all = l->list(Time{});
  ASSERT_TRUE(all.ok()) << all.error().message;
  std::vector<std::string> keys;
  for (const auto& r : *all) keys.push_back(r.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"old-1", "old-2", "mid-1", "new-1", "new-2"}));
  auto recent = l->list(*parse_time("2026-11-20T00:00:00Z"));
  ASSERT_TRUE(recent.ok());
  ASSERT_EQ(recent->size(), 3u) << "since is inclusive";
  EXPECT_EQ((*recent)[0].key, "mid-1");
  EXPECT_EQ((*recent)[0].state, State::kRecorded);

  auto st = l->stats();
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(st->claimed, 2);
  EXPECT_EQ(st->recorded, 1);
  EXPECT_EQ(st->confirmed, 1);
  EXPECT_EQ(st->released, 1);
  EXPECT_EQ(st->keys, 5);
  ASSERT_TRUE(st->oldest && st->newest);
  EXPECT_EQ(format_time(*st->oldest), "2026-11-01T00:00:00.000000Z");
  EXPECT_EQ(format_time(*st->newest), "2026-12-01T09:00:00.000000Z");

  std::vector<std::string> exported;
  auto n = l->export_rows([&](const Record& r) {
    exported.push_back(r.key + "/" + std::string(state_name(r.state)));
    return true;
  });
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n, 5);
  EXPECT_EQ(exported, (std::vector<std::string>{"old-1/claimed", "old-2/claimed", "mid-1/recorded",
                                                "new-1/confirmed", "new-2/released"}));
  int seen = 0;
  auto stopped = l->export_rows([&](const Record&) { return ++seen < 2; });
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(*stopped, 2);
  // The ledger is usable after an early stop.
  ASSERT_TRUE(l->stats().ok());
}

void check_prune_by_the_ledgers_clock(const Opener& open, LedgerClock ledger_clock) {
  TestClock clock;
  auto l = must_open(open, with_clock(clock, "prune"));
  ASSERT_TRUE(l);
  if (ledger_clock == LedgerClock::kThisHost) {
    // SQLite: the ledger's clock is this host's (the test clock), never earlier than a row
    // inserted before. Rows claimed 11-01, 11-20 and 12-01; then a claimant 60 days slow.
    claim_three_ages(*l, clock);
    clock.set("2026-10-02T09:00:00Z");
    auto slow = l->claim_batch({make_claim("slow-1")});
    ASSERT_TRUE(slow.ok()) << slow.error().message;
    EXPECT_EQ(format_time((*slow)[0].holder.claimed_at), "2026-10-02T09:00:00.000000Z");
    EXPECT_EQ(format_time((*slow)[0].holder.recorded_at), "2026-12-01T09:00:00.000000Z")
        << "the ledger's time never goes back";

    clock.set("2026-12-10T00:00:00Z");
    auto dry = l->prune(std::chrono::hours(24 * 20), true);
    ASSERT_TRUE(dry.ok()) << dry.error().message;
    EXPECT_EQ(format_time(dry->cutoff), "2026-11-20T00:00:00.000000Z");
    EXPECT_EQ(dry->rows.size(), 2u);
    auto pruned = l->prune(std::chrono::hours(24 * 20));
    ASSERT_TRUE(pruned.ok()) << pruned.error().message;
    ASSERT_EQ(pruned->rows.size(), 2u) << "the dry run deleted nothing";
    EXPECT_EQ(pruned->rows[0].key, "old-1");
    EXPECT_EQ(pruned->rows[1].key, "old-2");
    auto reclaim = l->claim_batch({make_claim("old-1"), make_claim("mid-1"), make_claim("slow-1")});
    ASSERT_TRUE(reclaim.ok());
    EXPECT_TRUE((*reclaim)[0].won) << "pruning re-opens replay";
    EXPECT_FALSE((*reclaim)[1].won);
    EXPECT_FALSE((*reclaim)[2].won) << "the slow claimant's claim is not aged by its clock";
    auto none = l->prune(std::chrono::hours(24 * 365));
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->rows.empty());
    return;
  }
  // PostgreSQL: the ledger's clock is the server's now(). A claimant 60 days slow claims a key;
  // a prune of everything older than 30 days by the ledger's clock leaves it.
  const auto host_now = [] {
    return std::chrono::time_point_cast<std::chrono::microseconds>(
        std::chrono::system_clock::now());
  };
  *clock.now = host_now() - std::chrono::hours(24 * 60);
  auto slow = l->claim_batch({make_claim("slow-1")});
  ASSERT_TRUE(slow.ok()) << slow.error().message;
  EXPECT_LT((*slow)[0].holder.claimed_at, host_now() - std::chrono::hours(24 * 59));
  EXPECT_GT((*slow)[0].holder.recorded_at, host_now() - std::chrono::minutes(10))
      << "recorded by the server's clock";
  auto kept = l->prune(std::chrono::hours(24 * 30));
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_TRUE(kept->rows.empty());
  EXPECT_LT(kept->cutoff, host_now() - std::chrono::hours(24 * 30) + std::chrono::minutes(10));
  EXPECT_GT(kept->cutoff, host_now() - std::chrono::hours(24 * 30) - std::chrono::minutes(10));
  auto again = l->claim_batch({make_claim("slow-1")});
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE((*again)[0].won) << "a slow claimant cannot make its claim look old";
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto dry = l->prune(std::chrono::microseconds(0), true);
  ASSERT_TRUE(dry.ok()) << dry.error().message;
  ASSERT_EQ(dry->rows.size(), 1u);
  auto all = l->prune(std::chrono::microseconds(0));
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->rows.size(), 1u) << "the dry run deleted nothing";
  EXPECT_EQ(all->rows[0].key, "slow-1");
  auto reclaim = l->claim_batch({make_claim("slow-1")});
  ASSERT_TRUE(reclaim.ok());
  EXPECT_TRUE((*reclaim)[0].won) << "pruning re-opens replay";
  EXPECT_FALSE(l->prune(std::chrono::microseconds(-1)).ok());
}

void check_scopes(const Opener& open) {
  TestClock clock;
  auto a = must_open(open, with_clock(clock, "payments"));
  auto b = must_open(open, with_clock(clock, "mailer"));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->scope(), "payments");
  auto ca = a->claim_batch({make_claim("shared-key", "pay-gate")});
  auto cb = b->claim_batch({make_claim("shared-key", "mail-gate")});
  ASSERT_TRUE(ca.ok() && cb.ok());
  EXPECT_TRUE((*ca)[0].won);
  EXPECT_TRUE((*cb)[0].won) << "scopes separate unrelated systems";
  auto la = a->list(Time{});
  ASSERT_TRUE(la.ok());
  ASSERT_EQ(la->size(), 1u);
  EXPECT_EQ((*la)[0].worker, "pay-gate");
  EXPECT_EQ((*la)[0].scope, "payments");
  ASSERT_TRUE(b->release("shared-key", "dave", "mail resend approved").ok());
  auto still = a->lookup({"shared-key"});
  ASSERT_TRUE(still.ok());
  EXPECT_TRUE((*still)[0].has_value()) << "a release in one scope leaves the other alone";
  Options bad;
  bad.scope = "no spaces";
  auto r = open(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
}

void check_invalid_arguments(const Opener& open) {
  auto l = must_open(open, Options{});
  ASSERT_TRUE(l);
  for (const std::string& bad : {std::string(), std::string("a\0b", 3), std::string("\xC3\x28"),
                                 std::string("\xED\xA0\x80"), std::string(4097, 'k')}) {
    auto r = l->claim_batch({make_claim("fine-1"), make_claim(bad)});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find("claim 1"), std::string::npos) << r.error().message;
    auto lk = l->lookup({bad});
    ASSERT_FALSE(lk.ok());
    EXPECT_EQ(lk.error().code, ErrorCode::kInvalidArgument);
  }
  Claim c = make_claim("fine-2");
  c.worker = "bad\xFF";
  auto r = l->claim_batch({c});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  // Nothing of a refused batch was claimed.
  auto seen = l->lookup({"fine-1", "fine-2"});
  ASSERT_TRUE(seen.ok());
  EXPECT_FALSE((*seen)[0].has_value());
  EXPECT_FALSE((*seen)[1].has_value());
  auto ok = l->claim_batch({make_claim(std::string(4096, 'k'), "w", "m-long-key")});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
}

void check_persistence(const Opener& open) {
  {
    auto l = must_open(open, Options{});
    ASSERT_TRUE(l);
    auto r = l->claim_batch({make_claim("durable-1", "first-run")});
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE((*r)[0].won);
  }
  auto l = must_open(open, Options{});
  ASSERT_TRUE(l);
  auto r = l->claim_batch({make_claim("durable-1", "second-run")});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].won) << "a second run must not replay what the first claimed";
  EXPECT_EQ((*r)[0].holder.worker, "first-run");
}

void check_concurrent_processes(const Opener& open, int processes, int keys, int per_process,
                                int batch) {
  {
    auto init = must_open(open, Options{});  // create the schema before the race
    ASSERT_TRUE(init);
  }
  const std::vector<Child> children = children_at_once(processes, [&](int p, int out) {
    auto l = open(Options{});
    if (!l.ok()) return write_all(out, "ERROR " + l.error().message + "\n"), 3;
    // Keys [start, start + per_process) mod keys, in a shuffled order.
    std::vector<int> mine;
    const int start = p * (keys / processes);
    for (int i = 0; i < per_process; ++i) mine.push_back((start + i) % keys);
    std::mt19937 rng(1000 + p);
    std::shuffle(mine.begin(), mine.end(), rng);
    for (size_t i = 0; i < mine.size(); i += static_cast<size_t>(batch)) {
      std::vector<Claim> claims;
      for (size_t j = i; j < mine.size() && j < i + static_cast<size_t>(batch); ++j) {
        claims.push_back(make_claim("key-" + std::to_string(mine[j]), "proc-" + std::to_string(p)));
      }
      auto r = (*l)->claim_batch(claims);
      if (!r.ok()) return write_all(out, "ERROR " + r.error().message + "\n"), 4;
      std::string won;
      for (size_t j = 0; j < claims.size(); ++j) {
        if ((*r)[j].won) won += claims[j].key + "\n";
      }
      write_all(out, won);
    }
    return 0;
  });
  ASSERT_EQ(children.size(), static_cast<size_t>(processes));
  std::map<std::string, std::vector<int>> winners;
  for (int p = 0; p < processes; ++p) {
    for (const auto& line : complete_lines(children[static_cast<size_t>(p)].said)) {
      ASSERT_FALSE(line.starts_with("ERROR")) << "process " << p << ": " << line;
      winners[line].push_back(p);
    }
    const int status = children[static_cast<size_t>(p)].status;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "process " << p;
  }
  // The union of the key sets: with per_process * processes >= keys every key was tried.
  std::set<int> tried;
  for (int p = 0; p < processes; ++p) {
    for (int i = 0; i < per_process; ++i) tried.insert((p * (keys / processes) + i) % keys);
  }
  EXPECT_EQ(winners.size(), tried.size()) << "every key won by someone";
  int doubles = 0;
  for (const auto& [key, who] : winners) doubles += who.size() != 1;
  EXPECT_EQ(doubles, 0) << "keys won by more than one process";
  // The ledger agrees with what the processes said.
  auto l = must_open(open, Options{});
  ASSERT_TRUE(l);
  std::vector<std::string> ks;
  for (const auto& [key, who] : winners) ks.push_back(key);
  auto seen = l->lookup(ks);
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  for (size_t i = 0; i < ks.size(); ++i) {
    ASSERT_TRUE((*seen)[i].has_value()) << ks[i];
    EXPECT_EQ((*seen)[i]->worker, "proc-" + std::to_string(winners[ks[i]][0])) << ks[i];
  }
  auto st = l->stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->claimed, static_cast<std::int64_t>(tried.size()));
}

void check_kill9(const Opener& open, int rounds) {
  {
    auto init = must_open(open, Options{});
    ASSERT_TRUE(init);
  }
  std::mt19937 rng(20261202);
  std::set<std::string> reported;
  int killed_mid_run = 0;
  for (int round = 0; round < rounds; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const unsigned seed = rng();
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      auto l = open(Options{});
      if (!l.ok()) _exit(3);
      std::mt19937 r(seed);
      // Random keys from a space shared with the other rounds: some are claimed already.
      std::uniform_int_distribution<int> key(0, 200000);
      for (int b = 0; b < 1000000; ++b) {
        std::vector<Claim> claims;
        for (int i = 0; i < 300; ++i) {
          claims.push_back(make_claim("k9-" + std::to_string(key(r)), "round"));
        }
        auto res = (*l)->claim_batch(claims);
        if (!res.ok()) _exit(4);
        std::string won;
        for (size_t i = 0; i < claims.size(); ++i) {
          if ((*res)[i].won) won += claims[i].key + "\n";
        }
        write_all(fds[1], won);
      }
      _exit(0);
    }
    close(fds[1]);
    // Wait for its first reported batch (so that every round claims something, however slow the
    // machine), let it run 0-40 ms more, then kill it wherever it is.
    std::string got;
    char buf[4096];
    while (got.find('\n') == std::string::npos) {
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
      ++killed_mid_run;
    } else {
      ADD_FAILURE() << "round " << round << ": the child ended by itself, status " << status
                    << " (3: open failed, 4: a claim failed)";
    }
    got += read_all(fds[0]);
    for (auto& k : complete_lines(got)) {
      // A key reported won in two rounds would be a replay twice.
      EXPECT_TRUE(reported.insert(k).second) << "round " << round << ": " << k << " won twice";
    }
    close(fds[0]);
    // After every kill the ledger opens (no corruption) and holds every reported claim.
    auto l = must_open(open, Options{});
    ASSERT_TRUE(l) << "round " << round;
    std::vector<std::string> keys(reported.begin(), reported.end());
    auto seen = l->lookup(keys);
    ASSERT_TRUE(seen.ok()) << seen.error().message;
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE((*seen)[i].has_value()) << "round " << round << ": claim " << keys[i]
                                          << " was reported won but is not in the ledger";
    }
  }
  EXPECT_EQ(killed_mid_run, rounds) << "every child should still have been running";
  EXPECT_GT(reported.size(), 0u) << "the children never got a batch through";
}

}  // namespace replaygate::ledger::testing

namespace replaygate::ledger::testing {

void check_restore(const Opener& open) {
  TestClock clock;
  // A history made through the interface: k1 released then claimed again, k2 recorded.
  auto source = must_open(open, with_clock(clock, "source"));
  ASSERT_TRUE(source);
  ASSERT_TRUE(source->claim_batch({make_claim("k1", "gate-1", "m-1")}).ok());
  clock.set("2026-12-01T10:30:00Z");
  ASSERT_TRUE(source->release("k1", "alice", "OPS-7: charge rolled back").ok());
  clock.set("2026-12-01T11:00:00.125000Z");
  ASSERT_TRUE(source->claim_batch({make_claim("k1", "gate-2", "m-2"), make_claim("k2")}).ok());
  ASSERT_TRUE(source->mark("k2", 1, State::kRecorded).ok());
  auto rows = source->list(Time{});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 3u);

  // Restored into an empty scope: the same rows, field for field, in the target scope.
  auto target = must_open(open, with_clock(clock, "target"));
  ASSERT_TRUE(target);
  auto restored = target->restore(*rows);
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(*restored, 3);
  auto again = target->list(Time{});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 3u);
  for (size_t i = 0; i < rows->size(); ++i) {
    const Record& a = (*rows)[i];
    const Record& b = (*again)[i];
    EXPECT_EQ(b.scope, "target");
    EXPECT_EQ(b.key, a.key);
    EXPECT_EQ(b.generation, a.generation);
    EXPECT_EQ(b.state, a.state);
    EXPECT_EQ(b.worker, a.worker);
    EXPECT_EQ(b.message_id, a.message_id);
    EXPECT_EQ(b.claimed_at, a.claimed_at);
    EXPECT_EQ(b.updated_at, a.updated_at);
    EXPECT_EQ(b.released_by, a.released_by);
    EXPECT_EQ(b.release_reason, a.release_reason);
    EXPECT_EQ(b.released_at, a.released_at);
  }
  // The restored claims hold: k1 (generation 2) and k2 are taken, and a release of k1 frees it
  // for generation 3.
  auto lost = target->claim_batch({make_claim("k1"), make_claim("k2")});
  ASSERT_TRUE(lost.ok());
  EXPECT_FALSE((*lost)[0].won);
  EXPECT_EQ((*lost)[0].holder.generation, 2);
  EXPECT_FALSE((*lost)[1].won);
  ASSERT_TRUE(target->release("k1", "bob", "one more").ok());
  auto third = target->claim_batch({make_claim("k1")});
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE((*third)[0].won);
  EXPECT_EQ((*third)[0].holder.generation, 3);

  // A scope that holds rows is refused, and nothing is added.
  auto refused = target->restore(*rows);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("not empty"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(target->list(Time{})->size(), 4u);

  // Rows that break the rules: nothing is inserted.
  auto empty = must_open(open, with_clock(clock, "empty"));
  ASSERT_TRUE(empty);
  std::vector<Record> two_live = {(*rows)[1], (*rows)[1]};
  two_live[1].generation = 9;
  auto bad = empty->restore(two_live);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("second live"), std::string::npos) << bad.error().message;
  std::vector<Record> unreleased = {(*rows)[0]};
  unreleased[0].released_at.reset();
  EXPECT_FALSE(empty->restore(unreleased).ok());
  EXPECT_TRUE(empty->list(Time{})->empty());
}

void check_copy_fields(const Opener& open) {
  TestClock clock;
  auto l = must_open(open, with_clock(clock));
  ASSERT_TRUE(l);
  Claim gate = make_claim("copy-1", "gate-1", "m-1");
  gate.copy_replay = 3;
  gate.body_digest = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  auto won = l->claim_batch({gate, make_claim("plain-1")});
  ASSERT_TRUE(won.ok()) << won.error().message;
  EXPECT_EQ((*won)[0].holder.copy_replay, 3);
  EXPECT_EQ((*won)[0].holder.body_digest, gate.body_digest);
  EXPECT_FALSE((*won)[1].holder.copy_replay.has_value());
  EXPECT_EQ((*won)[1].holder.body_digest, "");
  // The holder a lost claim reads back from the database.
  auto lost = l->claim_batch({make_claim("copy-1", "gate-2", "m-2"), make_claim("plain-1")});
  ASSERT_TRUE(lost.ok());
  EXPECT_FALSE((*lost)[0].won);
  EXPECT_EQ((*lost)[0].holder.copy_replay, 3);
  EXPECT_EQ((*lost)[0].holder.body_digest, gate.body_digest);
  EXPECT_FALSE((*lost)[1].holder.copy_replay.has_value()) << "stored as NULL, read as unset";
  EXPECT_EQ((*lost)[1].holder.body_digest, "");
  ASSERT_TRUE(l->mark("copy-1", 1, State::kConfirmed).ok());
  auto seen = l->lookup({"copy-1"});
  ASSERT_TRUE(seen.ok());
  ASSERT_TRUE((*seen)[0]);
  EXPECT_EQ((*seen)[0]->copy_replay, 3);
  EXPECT_EQ((*seen)[0]->state, State::kConfirmed);
  auto released = l->release("copy-1", "alice", "OPS-9: the copy was lost");
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(released->copy_replay, 3);
  EXPECT_EQ(released->body_digest, gate.body_digest);
  auto history = l->show("copy-1");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].copy_replay, 3);
  // restore keeps them, field for field.
  auto rows = l->list(Time{});
  ASSERT_TRUE(rows.ok());
  auto target = must_open(open, with_clock(clock, "copy-target"));
  ASSERT_TRUE(target);
  ASSERT_TRUE(target->restore(*rows).ok());
  auto again = target->list(Time{});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), rows->size());
  for (size_t i = 0; i < rows->size(); ++i) {
    EXPECT_EQ((*again)[i].copy_replay, (*rows)[i].copy_replay) << (*rows)[i].key;
    EXPECT_EQ((*again)[i].body_digest, (*rows)[i].body_digest) << (*rows)[i].key;
  }
  // A digest is a recorded text like the others: NUL or over 4096 bytes is refused.
  Claim bad = make_claim("copy-bad");
  bad.body_digest = std::string("sha256:\0", 8);
  auto refused = l->claim_batch({bad});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("body_digest"), std::string::npos)
      << refused.error().message;
}

void check_audit_anchors(const Opener& open) {
  TestClock clock;
  auto l = must_open(open, with_clock(clock));
  ASSERT_TRUE(l);
  auto none = l->anchors();
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->empty());
  AuditAnchor a;
  a.log = "host-a:/var/log/rg/audit.log";
  a.seq = 8;
  a.head = std::string(32, '1');
  a.chain_digest = std::string(64, '2');
  a.key_id = std::string(32, '3');
  clock.set("2026-12-01T10:00:05Z");
  auto raised = l->raise_anchor(a);
  ASSERT_TRUE(raised.ok()) << raised.error().message;
  EXPECT_EQ(raised->seq, 8);
  EXPECT_EQ(format_time(raised->recorded_at), "2026-12-01T10:00:05.000000Z");
  // An anchor never moves back: a lower seq (a second writer behind the first) changes nothing.
  AuditAnchor lower = a;
  lower.seq = 5;
  lower.head = std::string(32, '4');
  auto kept = l->raise_anchor(lower);
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_EQ(kept->seq, 8);
  EXPECT_EQ(kept->head, std::string(32, '1'));
  AuditAnchor higher = a;
  higher.seq = 12;
  higher.head = std::string(32, '5');
  clock.set("2026-12-01T10:00:09Z");
  ASSERT_TRUE(l->raise_anchor(higher).ok());
  AuditAnchor other = a;
  other.log = "host-b:/var/log/rg/audit.log";
  other.seq = 3;
  ASSERT_TRUE(l->raise_anchor(other).ok());
  AuditAnchor bad = a;
  bad.seq = 0;
  auto refused = l->raise_anchor(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  l.reset();
  // Kept across opens, per scope.
  auto again = must_open(open, with_clock(clock));
  ASSERT_TRUE(again);
  auto all = again->anchors();
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].log, "host-a:/var/log/rg/audit.log");
  EXPECT_EQ((*all)[0].seq, 12);
  EXPECT_EQ((*all)[0].head, std::string(32, '5'));
  EXPECT_EQ((*all)[0].chain_digest, std::string(64, '2'));
  EXPECT_EQ(format_time((*all)[0].recorded_at), "2026-12-01T10:00:09.000000Z");
  EXPECT_EQ((*all)[1].log, "host-b:/var/log/rg/audit.log");
  EXPECT_EQ((*all)[1].seq, 3);
  auto other_scope = must_open(open, with_clock(clock, "other"));
  ASSERT_TRUE(other_scope);
  auto none_there = other_scope->anchors();
  ASSERT_TRUE(none_there.ok());
  EXPECT_TRUE(none_there->empty());
}

}  // namespace replaygate::ledger::testing
