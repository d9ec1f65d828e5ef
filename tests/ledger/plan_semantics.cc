// The plan tables' semantics (schema version 4) every backend must have, as functions over an
// Opener: sqlite_test.cc and postgres_test.cc run them against their backend.
#include <rapidcheck.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "support.h"

namespace replaygate::ledger::testing {
namespace {

const std::string kDigest = "blake2b:" + std::string(64, 'a');
const std::string kOther = "blake2b:" + std::string(64, 'b');

std::string identity(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", i);
  return "blake2b:" + std::string(56, '0') + buf;
}

PlanRecord make_plan(const std::string& digest = kDigest) {
  PlanRecord p;
  p.digest = digest;
  p.author = "carol";
  p.source = "amqp://127.0.0.1/%2F/payments.dlq";
  p.table_checksum = "1242ace0f61e98a37d91a175388558cb";
  p.letters = 2;
  p.copies = 3;
  p.created_at = *parse_time("2026-12-01T09:00:00.5Z");
  p.expires_at = *parse_time("2026-12-08T09:00:00Z");
  return p;
}

PlanApproval make_approval(const std::string& approver, const std::string& digest = kDigest) {
  PlanApproval a;
  a.digest = digest;
  a.approver = approver;
  a.key_id = std::string(32, 'c');
  a.signature = std::string(128, 'd');
  a.reason = "reviewed the 2 letters of INC-4411";
  a.approved_at = *parse_time("2026-12-01T09:30:00Z");
  return a;
}

PlanLetterProgress step(int id, std::int64_t done, std::int64_t held, std::int64_t changed,
                        const std::string& outcome = "republished (confirmed)",
                        const std::string& digest = kDigest) {
  PlanLetterProgress p;
  p.digest = digest;
  p.identity = identity(id);
  p.done = done;
  p.held = held;
  p.changed = changed;
  p.last_outcome = outcome;
  return p;
}

std::unique_ptr<Ledger> must_open(const Opener& open, const Options& o) {
  auto r = open(o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return nullptr;
  return std::move(*r);
}

Options at(const TestClock& clock, const std::string& scope = "default") {
  Options o;
  o.scope = scope;
  o.clock = clock.fn();
  return o;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

void check_plan_records(const Opener& open) {
  TestClock clock;
  auto l = must_open(open, at(clock));
  ASSERT_TRUE(l);
  auto none = l->plan(kDigest);
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(l->record_plan(make_plan()).ok());
  auto got = l->plan(kDigest);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(got->has_value());
  const PlanRecord& p = **got;
  EXPECT_EQ(p.digest, kDigest);
  EXPECT_EQ(p.author, "carol");
  EXPECT_EQ(p.source, "amqp://127.0.0.1/%2F/payments.dlq");
  EXPECT_EQ(p.table_checksum, "1242ace0f61e98a37d91a175388558cb");
  EXPECT_EQ(p.letters, 2);
  EXPECT_EQ(p.copies, 3);
  EXPECT_EQ(format_time(p.created_at), "2026-12-01T09:00:00.500000Z");
  EXPECT_EQ(format_time(p.expires_at), "2026-12-08T09:00:00.000000Z");
  EXPECT_NE(p.recorded_at, Time{});
  EXPECT_FALSE(p.cancelled_at.has_value());
  EXPECT_EQ(p.cancelled_by, "");

  // Idempotent with equal fields; refused with other fields, naming them; nothing changed.
  clock.set("2026-12-01T10:05:00Z");
  Status again = l->record_plan(make_plan());
  EXPECT_TRUE(again.ok()) << again.error().message;
  PlanRecord other = make_plan();
  other.author = "mallory";
  other.letters = 3;
  Status conflict = l->record_plan(other);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(conflict.error().message,
                       "plan " + kDigest + " recorded with other fields (author, letters)"))
      << conflict.error().message;
  EXPECT_EQ((*l->plan(kDigest))->author, "carol");
  EXPECT_EQ((*l->plan(kDigest))->recorded_at, p.recorded_at) << "a second record changes nothing";

  // plans(): by recorded_at.
  clock.set("2026-12-01T10:06:00Z");
  ASSERT_TRUE(l->record_plan(make_plan(kOther)).ok());
  auto all = l->plans();
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].digest, kDigest);
  EXPECT_EQ((*all)[1].digest, kOther);

  // Bad records are refused and change nothing.
  PlanRecord bad = make_plan("blake2b:" + std::string(64, 'e'));
  bad.copies = 1;  // fewer copies than letters
  Status refused = l->record_plan(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(refused.error().message, "copies (1) >= letters"))
      << refused.error().message;
  PlanRecord empty = make_plan("");
  EXPECT_EQ(l->record_plan(empty).error().code, ErrorCode::kInvalidArgument);
  PlanRecord nul = make_plan(std::string("blake2b:\0x", 10));
  EXPECT_EQ(l->record_plan(nul).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(l->plans()->size(), 2u);

  // Scoped like claims.
  auto b = must_open(open, at(clock, "other-system"));
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->plan(kDigest)->has_value());
  EXPECT_TRUE(b->plans()->empty());
}

void check_plan_approvals(const Opener& open) {
  TestClock clock;
  auto l = must_open(open, at(clock));
  ASSERT_TRUE(l);
  auto missing = l->approve_plan(make_approval("alice"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(contains(missing.error().message, "plan " + kDigest + " is not recorded"))
      << missing.error().message;
  ASSERT_TRUE(l->record_plan(make_plan()).ok());

  clock.set("2026-12-01T10:01:00Z");
  auto a = l->approve_plan(make_approval("alice"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->approver, "alice");
  EXPECT_EQ(format_time(a->approved_at), "2026-12-01T09:30:00.000000Z");
  clock.set("2026-12-01T10:02:00Z");
  auto twice = l->approve_plan(make_approval("alice"));
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(twice.error().message, "already approved by alice"))
      << twice.error().message;
  clock.set("2026-12-01T10:03:00Z");
  PlanApproval by_bob = make_approval("bob");
  by_bob.reason = "second pair of eyes";
  ASSERT_TRUE(l->approve_plan(by_bob).ok());

  auto list = l->plan_approvals(kDigest);
  ASSERT_TRUE(list.ok()) << list.error().message;
  ASSERT_EQ(list->size(), 2u) << "one approval per approver";
  EXPECT_EQ((*list)[0].approver, "alice");
  EXPECT_EQ((*list)[0].key_id, std::string(32, 'c'));
  EXPECT_EQ((*list)[0].signature, std::string(128, 'd'));
  EXPECT_EQ((*list)[0].reason, "reviewed the 2 letters of INC-4411");
  EXPECT_EQ((*list)[1].approver, "bob");
  EXPECT_EQ((*list)[1].reason, "second pair of eyes");
  EXPECT_LE((*list)[0].recorded_at, (*list)[1].recorded_at);
  EXPECT_TRUE(l->plan_approvals(kOther)->empty());

  // Approvals need every field.
  PlanApproval unsigned_one = make_approval("dave");
  unsigned_one.signature = "";
  auto u = l->approve_plan(unsigned_one);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(u.error().message, "signature is empty")) << u.error().message;

  // Cancel: once; a cancelled plan refuses approval.
  auto not_there = l->cancel_plan(kOther, "carol", "wrong set");
  ASSERT_FALSE(not_there.ok());
  EXPECT_EQ(not_there.error().code, ErrorCode::kNotFound);
  clock.set("2026-12-01T11:00:00Z");
  auto cancelled = l->cancel_plan(kDigest, "carol", "the incident was resolved upstream");
  ASSERT_TRUE(cancelled.ok()) << cancelled.error().message;
  EXPECT_EQ(cancelled->cancelled_by, "carol");
  EXPECT_EQ(cancelled->cancel_reason, "the incident was resolved upstream");
  ASSERT_TRUE(cancelled->cancelled_at.has_value());
  EXPECT_EQ(format_time(*cancelled->cancelled_at), "2026-12-01T11:00:00.000000Z");
  EXPECT_EQ(cancelled->letters, 2);
  auto stored = l->plan(kDigest);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->cancel_reason, "the incident was resolved upstream");
  EXPECT_EQ(format_time(*(*stored)->cancelled_at), "2026-12-01T11:00:00.000000Z");
  auto again = l->cancel_plan(kDigest, "dave", "again");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kBadTransition);
  EXPECT_TRUE(
      contains(again.error().message, "already cancelled by carol at 2026-12-01T11:00:00.000000Z"))
      << again.error().message;
  auto late = l->approve_plan(make_approval("erin"));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, ErrorCode::kBadTransition);
  EXPECT_TRUE(contains(late.error().message, "plan " + kDigest + " is cancelled"))
      << late.error().message;
  EXPECT_EQ(l->plan_approvals(kDigest)->size(), 2u);
  // Re-recording a cancelled plan with its fields is Ok and does not un-cancel it.
  ASSERT_TRUE(l->record_plan(make_plan()).ok());
  EXPECT_TRUE((*l->plan(kDigest))->cancelled_at.has_value());
  EXPECT_EQ(l->cancel_plan(kDigest, "carol", "").error().code, ErrorCode::kInvalidArgument);
}

void check_plan_progress(const Opener& open) {
  TestClock clock;
  auto l = must_open(open, at(clock));
  ASSERT_TRUE(l);
  // A plan that is not recorded takes no progress, and a batch naming one changes nothing.
  Status unknown = l->record_plan_progress({step(1, 1, 0, 0)});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(l->record_plan(make_plan()).ok());
  Status mixed =
      l->record_plan_progress({step(1, 1, 0, 0), step(2, 1, 0, 0, "x", kOther), step(3, 1, 0, 0)});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(l->plan_counts(kDigest)->identities, 0) << "a failed batch leaves nothing";

  clock.set("2026-12-01T10:10:00Z");
  ASSERT_TRUE(l->record_plan_progress({step(1, 1, 0, 0), step(2, 0, 1, 0, "held plan:duplicate"),
                                       step(1, 1, 0, 0, "republished (confirmed) again")})
                  .ok());
  clock.set("2026-12-01T10:11:00Z");
  ASSERT_TRUE(
      l->record_plan_progress({step(2, 0, 0, 1, "held plan:changed"), step(3, 2, 1, 0)}).ok());
  auto rows = l->plan_progress(kDigest, {identity(2), identity(9), identity(1), identity(3)});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].identity, identity(2));
  EXPECT_EQ((*rows)[0].done, 0);
  EXPECT_EQ((*rows)[0].held, 1);
  EXPECT_EQ((*rows)[0].changed, 1);
  EXPECT_EQ((*rows)[0].last_outcome, "held plan:changed");
  EXPECT_EQ(format_time((*rows)[0].updated_at), "2026-12-01T10:11:00.000000Z");
  EXPECT_EQ((*rows)[1].identity, identity(9));
  EXPECT_EQ((*rows)[1].digest, kDigest);
  EXPECT_EQ((*rows)[1].done + (*rows)[1].held + (*rows)[1].changed, 0);
  EXPECT_EQ((*rows)[1].last_outcome, "");
  EXPECT_EQ((*rows)[1].updated_at, Time{});
  EXPECT_EQ((*rows)[2].done, 2) << "one identity twice in one call adds both";
  EXPECT_EQ((*rows)[2].last_outcome, "republished (confirmed) again");
  EXPECT_EQ(format_time((*rows)[2].updated_at), "2026-12-01T10:10:00.000000Z");
  EXPECT_EQ((*rows)[3].done, 2);
  EXPECT_EQ((*rows)[3].held, 1);
  auto counts = l->plan_counts(kDigest);
  ASSERT_TRUE(counts.ok()) << counts.error().message;
  EXPECT_EQ(counts->identities, 3);
  EXPECT_EQ(counts->done, 4);
  EXPECT_EQ(counts->held, 2);
  EXPECT_EQ(counts->changed, 1);
  auto empty = l->plan_counts(kOther);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->identities + empty->done + empty->held + empty->changed, 0);

  // Negative increments and bad identities are refused.
  Status negative = l->record_plan_progress({step(1, -1, 0, 0)});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().code, ErrorCode::kInvalidArgument);
  PlanLetterProgress no_id = step(1, 1, 0, 0);
  no_id.identity = "";
  EXPECT_EQ(l->record_plan_progress({no_id}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(l->plan_counts(kDigest)->done, 4);

  // A cancelled plan still takes the progress of the block that was running.
  ASSERT_TRUE(l->cancel_plan(kDigest, "carol", "stop").ok());
  ASSERT_TRUE(l->record_plan_progress({step(4, 1, 0, 0)}).ok());
  EXPECT_EQ(l->plan_counts(kDigest)->done, 5);

  // export_plan_progress: every row, by identity; a sink may stop early.
  std::vector<PlanLetterProgress> all;
  auto n = l->export_plan_progress(kDigest, [&](const PlanLetterProgress& p) {
    all.push_back(p);
    return true;
  });
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n, 4);
  ASSERT_EQ(all.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(all[static_cast<size_t>(i)].identity, identity(i + 1));
  EXPECT_EQ(all[0].done, 2);
  EXPECT_EQ(all[1].changed, 1);
  EXPECT_EQ(all[3].done, 1);
  auto first = l->export_plan_progress(kDigest, [](const PlanLetterProgress&) { return false; });
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 1);
  EXPECT_EQ(*l->export_plan_progress(kOther, [](const PlanLetterProgress&) { return true; }), 0);

  // Other scopes see none of it.
  auto b = must_open(open, at(clock, "other-system"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->plan_counts(kDigest)->identities, 0);
  EXPECT_EQ(b->record_plan_progress({step(1, 1, 0, 0)}).error().code, ErrorCode::kNotFound);
}

void check_marks_with_progress(const Opener& open) {
  auto l = must_open(open, Options{});
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->record_plan(make_plan()).ok());
  auto won = l->claim_batch({make_claim("a"), make_claim("b")});
  ASSERT_TRUE(won.ok()) << won.error().message;
  const std::int64_t ga = (*won)[0].holder.generation, gb = (*won)[1].holder.generation;
  auto state_of = [&](const std::string& key) {
    auto rows = l->lookup({key});
    return rows.ok() && (*rows)[0] ? std::string(state_name((*rows)[0]->state)) : "?";
  };
  // All or nothing: a mark that fails (no such generation) records no progress, and progress of
  // a plan not recorded marks nothing.
  Status bad_mark = l->mark_batch_with_progress({{"a", ga}, {"b", gb + 7}}, State::kConfirmed,
                                                {step(1, 1, 0, 0)});
  ASSERT_FALSE(bad_mark.ok());
  EXPECT_EQ(bad_mark.error().code, ErrorCode::kNotFound);
  Status bad_plan = l->mark_batch_with_progress({{"a", ga}}, State::kConfirmed,
                                                {step(1, 1, 0, 0), step(2, 1, 0, 0, "x", kOther)});
  ASSERT_FALSE(bad_plan.ok());
  EXPECT_EQ(bad_plan.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(state_of("a"), "claimed");
  EXPECT_EQ(l->plan_counts(kDigest)->identities, 0);
  // Both lists: both land.
  ASSERT_TRUE(l->mark_batch_with_progress({{"a", ga}}, State::kConfirmed,
                                          {step(1, 1, 0, 0), step(2, 0, 1, 0, "held x")})
                  .ok());
  EXPECT_EQ(state_of("a"), "confirmed");
  EXPECT_EQ(state_of("b"), "claimed");
  EXPECT_EQ(l->plan_counts(kDigest)->done, 1);
  EXPECT_EQ(l->plan_counts(kDigest)->held, 1);
  // Either list alone is the call it stands for; a bad element of either is refused first.
  ASSERT_TRUE(l->mark_batch_with_progress({{"b", gb}}, State::kConfirmed, {}).ok());
  EXPECT_EQ(state_of("b"), "confirmed");
  ASSERT_TRUE(l->mark_batch_with_progress({}, State::kConfirmed, {step(1, 1, 0, 0)}).ok());
  EXPECT_EQ(l->plan_counts(kDigest)->done, 2);
  EXPECT_EQ(
      l->mark_batch_with_progress({{"a", ga}}, State::kConfirmed, {step(1, -1, 0, 0)}).error().code,
      ErrorCode::kInvalidArgument);
  EXPECT_EQ(l->plan_counts(kDigest)->done, 2);
}

void check_plan_progress_property(const Opener& open) {
  auto l = must_open(open, Options{});
  ASSERT_TRUE(l);
  std::atomic<int> scope_no{0};
  const bool ok =
      rc::check("plan progress sums equal the recorded increments, in any order and batching", [&] {
        struct Inc {
          int id;
          std::int64_t done, held, changed;
        };
        const auto incs = *rc::gen::container<std::vector<Inc>>(rc::gen::exec([] {
          return Inc{*rc::gen::inRange(0, 5), *rc::gen::inRange<std::int64_t>(0, 4),
                     *rc::gen::inRange<std::int64_t>(0, 4), *rc::gen::inRange<std::int64_t>(0, 4)};
        }));
        const auto order = *rc::gen::unique<std::vector<size_t>>(
            incs.size(), rc::gen::inRange<size_t>(0, std::max<size_t>(incs.size(), 1)));
        const auto cuts =
            *rc::gen::container<std::vector<bool>>(incs.size(), rc::gen::arbitrary<bool>());
        Options o;
        o.scope = "prop-" + std::to_string(scope_no++);
        auto scoped = open(o);
        RC_ASSERT(scoped.ok());
        Ledger& led = **scoped;
        RC_ASSERT(led.record_plan(make_plan()).ok());
        std::map<int, std::array<std::int64_t, 3>> want;
        std::vector<PlanLetterProgress> batch;
        for (size_t i = 0; i < order.size(); ++i) {
          const Inc& x = incs[order[i]];
          want[x.id][0] += x.done;
          want[x.id][1] += x.held;
          want[x.id][2] += x.changed;
          batch.push_back(step(x.id, x.done, x.held, x.changed));
          if (cuts[i] || i + 1 == order.size()) {
            RC_ASSERT(led.record_plan_progress(batch).ok());
            batch.clear();
          }
        }
        std::vector<std::string> ids;
        for (int i = 0; i < 5; ++i) ids.push_back(identity(i));
        auto rows = led.plan_progress(kDigest, ids);
        RC_ASSERT(rows.ok());
        PlanCounts sum;
        for (int i = 0; i < 5; ++i) {
          const auto w = want.count(i) ? want[i] : std::array<std::int64_t, 3>{0, 0, 0};
          RC_ASSERT((*rows)[static_cast<size_t>(i)].done == w[0]);
          RC_ASSERT((*rows)[static_cast<size_t>(i)].held == w[1]);
          RC_ASSERT((*rows)[static_cast<size_t>(i)].changed == w[2]);
          sum.done += w[0];
          sum.held += w[1];
          sum.changed += w[2];
        }
        auto counts = led.plan_counts(kDigest);
        RC_ASSERT(counts.ok());
        RC_ASSERT(counts->identities == static_cast<std::int64_t>(want.size()));
        RC_ASSERT(counts->done == sum.done);
        RC_ASSERT(counts->held == sum.held);
        RC_ASSERT(counts->changed == sum.changed);
      });
  EXPECT_TRUE(ok);
}

void check_plan_progress_concurrent(const Opener& open, int processes, int rounds) {
  {
    auto init = must_open(open, Options{});
    ASSERT_TRUE(init);
    ASSERT_TRUE(init->record_plan(make_plan()).ok());
  }
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> pids;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(go[1]);
      char c;
      (void)!read(go[0], &c, 1);  // every child starts at once
      auto l = open(Options{});
      if (!l.ok()) _exit(3);
      for (int r = 0; r < rounds; ++r) {
        // Each round: identity 0 (shared by every process) and identity 1 + p (its own).
        const Status s = (*l)->record_plan_progress(
            {step(0, 1, 0, 0), step(1 + p, 1, r % 2, 0), step(0, 0, 1, 1)});
        if (!s.ok()) _exit(4);
      }
      _exit(0);
    }
    pids.push_back(pid);
  }
  close(go[0]);
  close(go[1]);
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child failed: " << status;
  }
  auto l = must_open(open, Options{});
  ASSERT_TRUE(l);
  auto shared = l->plan_progress(kDigest, {identity(0)});
  ASSERT_TRUE(shared.ok()) << shared.error().message;
  EXPECT_EQ((*shared)[0].done, processes * rounds);
  EXPECT_EQ((*shared)[0].held, processes * rounds);
  EXPECT_EQ((*shared)[0].changed, processes * rounds);
  auto counts = l->plan_counts(kDigest);
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->identities, processes + 1);
  EXPECT_EQ(counts->done, 2 * processes * rounds);
  EXPECT_EQ(counts->held, processes * rounds + processes * (rounds / 2));
  EXPECT_EQ(counts->changed, processes * rounds);
}

void check_plan_approval_race(const Opener& open, int rounds) {
  auto a = must_open(open, Options{});
  auto b = must_open(open, Options{});
  ASSERT_TRUE(a && b);
  for (int r = 0; r < rounds; ++r) {
    const std::string digest = "blake2b:" + std::string(60, 'f') + std::to_string(1000 + r);
    ASSERT_TRUE(a->record_plan(make_plan(digest)).ok());
    Result<PlanApproval> ra = Error{}, rb = Error{};
    std::thread ta([&] { ra = a->approve_plan(make_approval("alice", digest)); });
    std::thread tb([&] { rb = b->approve_plan(make_approval("alice", digest)); });
    ta.join();
    tb.join();
    EXPECT_NE(ra.ok(), rb.ok()) << "round " << r << ": exactly one approval by alice";
    const Error& lost = ra.ok() ? rb.error() : ra.error();
    EXPECT_EQ(lost.code, ErrorCode::kInvalidArgument) << lost.message;
    EXPECT_TRUE(contains(lost.message, "already approved by alice")) << lost.message;
    EXPECT_EQ(a->plan_approvals(digest)->size(), 1u);
  }
}

}  // namespace replaygate::ledger::testing
