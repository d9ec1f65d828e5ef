// The plan guard of the live loop (docs/plans.md, "Running a plan on RabbitMQ"): a gate that runs
// a plan acts on the plan's letters only, each decided again, each at most as often as planned,
// and records its progress per block under the plan's digest, so that a rerun resumes.
//
// In: the plan file, the users file, the table, the Redrive (its ledger, audit log and action
// map), the source the gate drains. Out: per block, each letter's step changed as the plan says
// (before the ledger's claims), and after the block's moves its progress rows (committed with the
// block's marks) and their `plan_progress` audit entries.
//
// Per letter, after Redrive::decide (the plan letter: plan::letter_with_digest over the letter's
// body digest, message id and decided inputs, under the plan's source):
//   act      the identity is planned and the decision (verb, rule, the gate's action for the
//            verb) is the plan's: the step stands (a replay is claimed in the ledger as usual)
//   held     plan:decision_mismatch (same identity, another decision), plan:changed (not a
//            planned identity but a planned message id), plan:duplicate (a copy beyond the
//            planned count, less what earlier runs handled)
//   skipped  plan:not_in_plan (no planned identity or message id, or unreadable): never touched,
//            left unsettled (it returns to the plan queue when the gate stops); plan:cap
// A copy beyond the count that is a planned replay the ledger proves already done (its own
// confirmed claim, redelivered, the same body: redrive.h's rule) is acked without a publish and
// not counted again: a crash between a block's progress and its acks.
//
// Per block, in the loop's order: classify() after the decisions (one ledger read: cancelled?,
// one for the progress of identities first seen) -> the loop's claims, decision entries, moves,
// -> progress() (the rows of the letters about to be settled) -> Redrive::record_outcomes (one
// ledger transaction: the marks and those rows, then the test point `marked`; one audit append of
// the block's result entries and their plan_progress entries) -> the acks.
//
// Threads: a guard belongs to the loop's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "redrive/plan/plan.h"
#include "redrive/plan/run_rules.h"
#include "redrive/redrive.h"
#include "redrive/test_points.h"
#include "runtime/table.h"

namespace replaygate::redrive {

struct PlanGuardOptions {
  std::string plan_path, users_path;
  std::string source;       // the source the gate drains: plan::rabbitmq_source(vhost, DLQ)
  std::string source_what;  // for the refusal: "--queue dlq on vhost /"
  std::string queue;        // the queue the guard's letters come from (the plan queue), for notes
  const TestPoints* test_points = nullptr;  // not owned
};

class PlanGuard {
 public:
  // Reads and checks the plan (plan::open_for_run) against the Redrive's ledger (open) and the
  // table: null with *refusal set when the plan may not run (nothing was consumed).
  static std::unique_ptr<PlanGuard> open(const PlanGuardOptions& options, const Table& table,
                                         Redrive& redrive, std::string* refusal);

  const plan::PlanRead& plan() const { return plan_; }
  // The queue the plan's letters come from (the plan queue), for its notes.
  void set_queue(std::string queue) { o_.queue = std::move(queue); }
  const std::string& queue() const { return o_.queue; }

  // A block starts: forget the last one's letters.
  void begin_block();
  // After Redrive::decide of the block's next letter (before the next decide: the step's input
  // is valid until then).
  void place(const Table& table, const DeadLetter& letter, const LetterStep& step);
  // After the block's decisions, before the claims: "" or why the run stops (cancelled, a ledger
  // failure: then nothing of the block was claimed). Changes the steps of `block` (in place()'s
  // order) as the header comment says.
  std::string classify(const Table& table, const std::vector<BlockLetter*>& block);
  // The plan's word on the i-th letter of the block: "act", "held", "skipped" ("" : none).
  const std::string& state(size_t i) const { return letters_.at(i).state; }
  // After the block's moves, before Redrive::record_outcomes: the progress of the letters that
  // will be settled (`settled[i]` for the i-th), which record_outcomes commits with the block's
  // marks in one ledger transaction, and their plan_progress entries for the results' append.
  Redrive::BlockProgress progress(const std::vector<BlockLetter*>& block,
                                  const std::vector<bool>& settled);
  // The plan's cap is reached: the run stops after this block.
  bool capped() const { return capped_; }
  // Letters the guard held (plan:decision_mismatch, plan:changed, plan:duplicate) in this run.
  uint64_t findings() const { return counts_.mismatch + counts_.changed + counts_.duplicate; }
  // Letters of the plan queue that are not the plan's, left there (plan:not_in_plan).
  uint64_t not_in_plan() const { return counts_.not_in_plan; }
  // After a run that drained the plan queue: "" or why the plan is not done (planned copies
  // neither done nor held were not in the queue: moved away by hand, or returned by a cancel).
  std::string unseen_note();
  // One line for the end of the run ("plan DIGEST: acted on N, ...").
  std::string summary() const;

 private:
  struct Seen {
    int64_t before = -1;  // copies handled by earlier runs (the ledger's progress); -1: not asked
    int64_t counted = 0;  // copies this run counted in progress
    int64_t in_block = 0;
  };
  struct InBlock {
    std::string identity;  // its progress row ("": none)
    const plan::PlanLetter* planned = nullptr;
    bool changed = false;
    bool readable = false;
    bool acted = false;     // classified act
    bool no_count = false;  // a copy an earlier run counted (acked without a publish)
    int64_t copy = 0;       // beyond the count: which copy it is
    std::string state;
    plan::PlanLetter now;  // readable: the letter as it is now
  };
  struct Counts {
    uint64_t done = 0, held = 0, mismatch = 0, changed = 0, duplicate = 0, not_in_plan = 0,
             capped = 0, done_earlier = 0;
  };

  PlanGuard(const PlanGuardOptions& options, Redrive& redrive);
  std::string fetch_progress();
  // A copy beyond the count: the ack of a replay an earlier run did (ledger-proven) or a hold.
  std::string judge_beyond(const Table& table, const std::vector<BlockLetter*>& block,
                           const std::vector<size_t>& beyond);
  void hold(const Table& table, InBlock& g, LetterStep& step, const std::string& rule,
            std::string reason, uint64_t* count);
  void skip(InBlock& g, LetterStep& step, const std::string& rule, std::string reason,
            uint64_t* count);

  PlanGuardOptions o_;
  Redrive& redrive_;
  ledger::Ledger& ledger_;
  plan::PlanRead plan_;
  plan::PlanIndex index_;
  std::unordered_map<std::string, Seen> seen_;  // node-based: the pointers below stay valid
  std::vector<Seen*> in_block_;                 // the identities of the block in hand
  std::vector<InBlock> letters_;
  int64_t done_before_ = 0;  // the plan's done copies when the run started (for the cap)
  int64_t acted_ = 0;        // acts this run counted toward the cap
  bool capped_ = false;
  bool fresh_ = false;  // the plan had no progress when the run started
  Counts counts_;
};

}  // namespace replaygate::redrive
