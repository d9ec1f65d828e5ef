// `ledger check` and `ledger rebuild --from-audit` for the plan tables, as data (review/
// ledger_trail.h, ledger_check.h): plan entries (kind "plan", docs/ledger.md "Plans in the audit
// log") read from their lines, replayed into the plan tables they imply (with the conflicts no
// ledger could have accepted), restored into a real SQLite ledger with the log's times, and
// compared with it: what the ledger holds that no entry accounts for is reported.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/reader.h"
#include "ledger/ledger.h"
#include "review/ledger_check.h"
#include "review/ledger_trail.h"
#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

using nlohmann::json;

const std::string kD1 = "blake2b:" + std::string(64, '1');
const std::string kD2 = "blake2b:" + std::string(64, '2');
const std::string kD3 = "blake2b:" + std::string(64, '3');
const std::string kId1 = "blake2b:" + std::string(64, 'a');
const std::string kId2 = "blake2b:" + std::string(64, 'b');

json entry(const std::string& act, const std::string& time, const std::string& op, json fields,
           const std::string& scope = "default") {
  fields["kind"] = "plan";
  fields["act"] = act;
  fields["time"] = time;
  fields["operator"] = op;
  fields["scope"] = scope;
  return fields;
}

json recorded(const std::string& digest, const std::string& time) {
  return entry("plan_recorded", time, "carol",
               {{"digest", digest},
                {"author", "carol"},
                {"source", "amqp://127.0.0.1/%2F/payments.dlq"},
                {"table_checksum", "1242ace0f61e98a37d91a175388558cb"},
                {"letters", 2},
                {"copies", 3},
                {"created_at", "2026-12-01T09:00:00.000000Z"},
                {"expires_at", "2026-12-08T09:00:00.000000Z"}});
}
json approved(const std::string& digest, const std::string& who, const std::string& time) {
  return entry("plan_approved", time, who,
               {{"digest", digest},
                {"approver", who},
                {"key_id", std::string(32, 'c')},
                {"signature", std::string(128, 'd')},
                {"reason", "reviewed INC-4411"},
                {"approved_at", time}});
}
json progress(const std::string& digest, const std::string& id, int done, int held, int changed,
              const std::string& time, const std::string& outcome) {
  return entry("plan_progress", time, "gate-1",
               {{"digest", digest},
                {"identity", id},
                {"done", done},
                {"held", held},
                {"changed", changed},
                {"last_outcome", outcome}});
}
json cancelled(const std::string& digest, const std::string& time) {
  return entry("plan_cancelled", time, "carol",
               {{"digest", digest},
                {"cancelled_by", "carol"},
                {"cancel_reason", "resolved upstream"},
                {"cancelled_at", "2026-12-01T11:00:00.000000Z"}});
}

review::Trail trail_of(const std::vector<json>& lines) {
  review::Trail trail;
  for (size_t i = 0; i < lines.size(); ++i) {
    audit::ReadEntry e;
    EXPECT_TRUE(audit::read_entry(lines[i].dump(), i + 1, &e));
    review::PlanEvent p;
    if (review::plan_event_of(e, "default", &p, &trail)) trail.plan_events.push_back(p);
  }
  return trail;
}

std::vector<review::LedgerPlan> held(ledger::Ledger& l) {
  std::vector<review::LedgerPlan> out;
  ledger::Result<std::vector<ledger::PlanRecord>> plans = l.plans();
  EXPECT_TRUE(plans.ok());
  if (!plans.ok()) return out;
  for (const ledger::PlanRecord& p : plans.value()) {
    ledger::Result<std::vector<ledger::PlanApproval>> approvals = l.plan_approvals(p.digest);
    EXPECT_TRUE(approvals.ok());
    if (!approvals.ok()) return out;
    review::LedgerPlan lp{p, approvals.value(), {}};
    EXPECT_TRUE(l.export_plan_progress(p.digest, [&](const ledger::PlanLetterProgress& r) {
                   lp.progress.push_back(r);
                   return true;
                 }).ok());
    out.push_back(std::move(lp));
  }
  return out;
}

class LedgerPlanTrail : public ::testing::Test {
 protected:
  ScratchDir dir_{"rg_plan_trail"};
  std::vector<json> log_ = {
      recorded(kD1, "2026-12-01T10:00:00Z"),
      approved(kD1, "alice", "2026-12-01T10:01:00Z"),
      approved(kD1, "bob", "2026-12-01T10:02:00Z"),
      progress(kD1, kId1, 1, 0, 0, "2026-12-01T10:03:00Z", "republished (confirmed)"),
      progress(kD1, kId2, 0, 1, 0, "2026-12-01T10:03:00Z", "held plan:duplicate"),
      progress(kD1, kId1, 1, 0, 1, "2026-12-01T10:04:00Z", "held plan:changed"),
      cancelled(kD1, "2026-12-01T11:00:00Z"),
      recorded(kD2, "2026-12-01T11:30:00Z"),
      recorded(kD2, "2026-12-01T11:31:00Z"),           // the same fields again: no conflict
      approved(kD3, "alice", "2026-12-01T11:32:00Z"),  // 10: a plan never recorded
      approved(kD1, "erin", "2026-12-01T11:33:00Z"),   // 11: after the cancel
      approved(kD2, "bob", "2026-12-01T11:34:00Z"),
      approved(kD2, "bob", "2026-12-01T11:35:00Z"),  // 13: bob twice
      recorded(kD1, "2026-12-01T11:36:00Z"),         // 14: set to other fields by the test
      progress(kD2, kId1, 1, 0, 0, "2026-12-01T11:37:00Z", "x"),  // 15: set to another scope
  };
};

TEST_F(LedgerPlanTrail, ReplaySumsProgressAndListsTheConflicts) {
  log_[13]["letters"] = 9;
  log_[14]["scope"] = "other-system";
  const review::Trail trail = trail_of(log_);
  EXPECT_EQ(trail.plan_events.size(), 14u);
  EXPECT_EQ(trail.other_scopes, 1u);
  const review::ReplayedPlans r = review::replay_plans(trail);
  ASSERT_EQ(r.plans.size(), 2u);
  const review::ExpectedPlan& d1 = r.plans.at(kD1);
  EXPECT_EQ(d1.plan.author, "carol");
  EXPECT_EQ(d1.plan.letters, 2);
  EXPECT_EQ(ledger::format_time(d1.plan.recorded_at), "2026-12-01T10:00:00.000000Z");
  EXPECT_EQ(d1.approvals.size(), 2u);
  EXPECT_EQ(d1.cancelled.line, 7u);
  EXPECT_EQ(d1.plan.cancelled_by, "carol");
  EXPECT_EQ(d1.progress.at(kId1).first.done, 2);
  EXPECT_EQ(d1.progress.at(kId1).first.changed, 1);
  EXPECT_EQ(d1.progress.at(kId1).first.last_outcome, "held plan:changed");
  EXPECT_EQ(d1.progress.at(kId2).first.held, 1);
  EXPECT_EQ(r.plans.at(kD2).approvals.size(), 1u);
  ASSERT_EQ(r.conflicts.size(), 4u);
  EXPECT_EQ(r.conflicts[0].line, 10u);
  EXPECT_EQ(r.conflicts[0].message,
            "plan " + kD3 + ": an entry for a plan the log does not show recorded");
  EXPECT_EQ(r.conflicts[1].line, 11u);
  EXPECT_EQ(r.conflicts[1].message, "plan " + kD1 + ": approved by erin after its cancel (line 7)");
  EXPECT_EQ(r.conflicts[2].line, 13u);
  EXPECT_EQ(r.conflicts[2].message, "plan " + kD2 + ": approved by bob twice (line 12)");
  EXPECT_EQ(r.conflicts[3].line, 14u);
  EXPECT_EQ(r.conflicts[3].message,
            "plan " + kD1 + ": recorded again with other fields than on line 1");
}

TEST_F(LedgerPlanTrail, RestoreThenCompareFindsOnlyWhatNoEntryAccountsFor) {
  log_.resize(13);  // lines 10, 11 and 13 are conflicts; 14 and 15 are the other test's
  const review::ReplayedPlans r = review::replay_plans(trail_of(log_));
  auto pinned = std::make_shared<ledger::Time>();
  ledger::Options o;
  o.clock = [pinned] { return *pinned; };
  auto opened = ledger::open_ledger((dir_.path() / "l.db").string(), o);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  ledger::Ledger& l = **opened;
  const ledger::Status restored = review::restore_plans(l, r, [&](ledger::Time t) { *pinned = t; });
  ASSERT_TRUE(restored.ok()) << restored.error().message;

  auto d1 = l.plan(kD1);
  ASSERT_TRUE(d1.ok() && d1->has_value());
  EXPECT_EQ((*d1)->copies, 3);
  EXPECT_EQ(ledger::format_time((*d1)->recorded_at), "2026-12-01T10:00:00.000000Z");
  ASSERT_TRUE((*d1)->cancelled_at.has_value());
  EXPECT_EQ(ledger::format_time(*(*d1)->cancelled_at), "2026-12-01T11:00:00.000000Z");
  EXPECT_EQ((*d1)->cancel_reason, "resolved upstream");
  auto approvals = l.plan_approvals(kD1);
  ASSERT_TRUE(approvals.ok());
  ASSERT_EQ(approvals->size(), 2u);
  EXPECT_EQ((*approvals)[0].approver, "alice");
  EXPECT_EQ((*approvals)[1].approver, "bob");
  auto rows = l.plan_progress(kD1, {kId1, kId2});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].done, 2);
  EXPECT_EQ((*rows)[0].changed, 1);
  EXPECT_EQ((*rows)[0].last_outcome, "held plan:changed");
  EXPECT_EQ(ledger::format_time((*rows)[0].updated_at), "2026-12-01T10:04:00.000000Z");
  EXPECT_EQ((*rows)[1].held, 1);
  auto counts = l.plan_counts(kD1);
  EXPECT_EQ(counts->identities, 2);
  EXPECT_EQ(counts->done, 2);

  // The restored ledger agrees with its log except for the log's own conflicts.
  std::vector<review::Finding> f = review::compare_plans(held(l), r);
  ASSERT_EQ(f.size(), 3u);
  for (const review::Finding& x : f) EXPECT_EQ(x.kind, "log_conflict") << x.message;

  // A run that stopped between its ledger calls and its audit entries: progress, an approval and
  // a cancel with no entry, and a plan with none at all.
  *pinned = *ledger::parse_time("2026-12-01T12:00:00Z");
  ASSERT_TRUE(l.record_plan_progress(
                   {{kD1, kId1, 1, 0, 0, "republished (confirmed)", {}},
                    {kD1, "blake2b:" + std::string(64, 'e'), 0, 0, 1, "held plan:changed", {}}})
                  .ok());
  ledger::PlanApproval carol{kD2, "carol", std::string(32, 'c'), std::string(128, 'd'), "ok",
                             {},  {}};
  ASSERT_TRUE(l.approve_plan(carol).ok());
  ASSERT_TRUE(l.cancel_plan(kD2, "dave", "stop").ok());
  ledger::PlanRecord d3;
  d3.digest = kD3;
  d3.author = "mallory";
  ASSERT_TRUE(l.record_plan(d3).ok());
  f = review::compare_plans(held(l), r);
  std::vector<std::string> kinds;
  for (const review::Finding& x : f) kinds.push_back(x.kind + " " + x.key.substr(8, 1));
  EXPECT_EQ(kinds, (std::vector<std::string>{"progress_without_entry 1", "progress_without_entry 1",
                                             "approval_without_entry 2", "cancel_without_entry 2",
                                             "plan_without_entry 3", "log_conflict 3",
                                             "log_conflict 1", "log_conflict 2"}));
  EXPECT_EQ(f[0].message, "plan " + kD1 + " identity " + kId1 +
                              ": the ledger counts done 3, held 0, changed 1, its entries done 2, "
                              "held 0, changed 1 (a run stopped between its ledger call and its "
                              "audit entry, or an entry is in another log: --audit is repeatable)");
  EXPECT_EQ(f[0].line, 6u) << "the identity's last entry";
  EXPECT_EQ(f[4].message, "plan " + kD3 +
                              " (by mallory, recorded at 2026-12-01T12:00:00.000000Z) has no "
                              "plan_recorded entry in the log");

  // And the other way: entries the ledger lacks (a ledger restored from an older copy).
  auto fresh = ledger::open_ledger((dir_.path() / "empty.db").string());
  ASSERT_TRUE(fresh.ok());
  f = review::compare_plans(held(**fresh), r);
  kinds.clear();
  for (const review::Finding& x : f) kinds.push_back(x.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"plan_not_in_ledger", "plan_not_in_ledger",
                                             "log_conflict", "log_conflict", "log_conflict"}));
}

// A RabbitMQ build's moves (plan_frozen, before the plan's digest exists) and a cancel's moves
// back (plan_returned): valid plan entries the log takes, which no ledger table replays.
TEST_F(LedgerPlanTrail, TheFreezesMovesAreValidEntriesButNotLedgerEvents) {
  const std::string log = (dir_.path() / "moves.log").string();
  const json frozen = entry("plan_frozen", "2026-12-01T09:00:00Z", "alice",
                            {{"plan_id", "296fbc151854"},
                             {"from", "payments.dlq"},
                             {"to", "payments.dlq.plan.296fbc151854"},
                             {"count", 2},
                             {"identities", json::array({kId1, kId1})}});
  const json returned = entry("plan_returned", "2026-12-01T10:00:00Z", "bob",
                              {{"plan_id", "296fbc151854"},
                               {"digest", kD1},
                               {"from", "payments.dlq.plan.296fbc151854"},
                               {"to", "payments.dlq"},
                               {"count", 2}});
  const audit::AppendResult ok = audit::append_batch(log, {frozen, returned});
  ASSERT_TRUE(ok.ok) << ok.error;
  EXPECT_TRUE(trail_of({frozen, returned}).plan_events.empty());
  const auto refused = [&](json bad) {
    const audit::AppendResult r = audit::append_batch(log, {std::move(bad)});
    EXPECT_FALSE(r.ok);
    return r.error;
  };
  json no_identities = frozen;
  no_identities.erase("identities");
  EXPECT_NE(refused(no_identities).find("plan entry without 'identities'"), std::string::npos);
  json not_listed = frozen;
  not_listed["identities"] = json::array({1});
  EXPECT_NE(refused(not_listed).find("an array of letter identities"), std::string::npos);
  json no_count = returned;
  no_count.erase("count");
  EXPECT_NE(refused(no_count).find("plan entry without 'count'"), std::string::npos);
  // Every other plan act still names its plan by digest.
  json no_digest = recorded(kD1, "2026-12-01T09:00:00Z");
  no_digest.erase("digest");
  EXPECT_NE(refused(no_digest).find("plan entry without 'digest'"), std::string::npos);
}

}  // namespace
}  // namespace replaygate::testing
