// The plan guard of the live loop (plan_guard.h).
#include "redrive/plan_guard.h"

#include <map>
#include <utility>

#include "pipeline/ledger_stage.h"
#include "redrive/plan/letters.h"
#include "runtime/codes.h"

namespace replaygate::redrive {

PlanGuard::PlanGuard(const PlanGuardOptions& options, Redrive& redrive)
    : o_(options), redrive_(redrive), ledger_(*redrive.ledger()) {}

std::unique_ptr<PlanGuard> PlanGuard::open(const PlanGuardOptions& options, const Table& table,
                                           Redrive& redrive, std::string* refusal) {
  if (redrive.ledger() == nullptr) {
    *refusal = "--plan needs --ledger LEDGER (progress is kept there)";
    return nullptr;
  }
  std::unique_ptr<PlanGuard> g(new PlanGuard(options, redrive));
  plan::RunCheck check;
  check.plan_path = options.plan_path;
  check.users_path = options.users_path;
  check.table_checksum = table.checksum_hex();
  check.source = options.source;
  check.source_what = options.source_what;
  if (std::string why = plan::open_for_run(check, g->ledger_, &g->plan_, &g->index_);
      !why.empty()) {
    *refusal = std::move(why);
    return nullptr;
  }
  ledger::Result<ledger::PlanCounts> before = g->ledger_.plan_counts(g->plan_.digest);
  if (!before) {
    *refusal = before.error().message;
    return nullptr;
  }
  g->done_before_ = before.value().done;
  g->fresh_ = before.value().identities == 0;
  return g;
}

void PlanGuard::begin_block() {
  letters_.clear();
  // Only the last block's identities: a loop over every identity seen cost 4% of a 10,000-letter
  // run's CPU.
  for (Seen* seen : in_block_) seen->in_block = 0;
  in_block_.clear();
}

void PlanGuard::place(const Table& table, const DeadLetter& letter, const LetterStep& step) {
  InBlock& g = letters_.emplace_back();
  std::optional<std::string_view> message_id;
  if (letter.message_id) message_id = *letter.message_id;
  if (!step.readable || step.input == nullptr) {
    // Unreadable now, under a planned message id: the body changed (it was readable when
    // planned), so it is held as changed, under an identity of its message id and body alone.
    if (letter.message_id && letter.hold_rule.empty() &&
        index_.by_message_id.count(*letter.message_id) > 0) {
      g.changed = true;
      g.now.message_id = letter.message_id;
      g.identity =
          plan::letter_identity(plan_.header.source, letter.message_id, letter.body_digest, {});
    }
    return;
  }
  g.readable = true;
  g.now = plan::letter_with_digest(table, *step.input, message_id, letter.body_digest,
                                   plan_.header.source, step.decision, 0);
  const auto it = index_.letters.find(g.now.identity);
  if (it != index_.letters.end()) {
    g.planned = &it->second;
    g.identity = g.now.identity;
  } else if (letter.message_id && index_.by_message_id.count(*letter.message_id) > 0) {
    g.changed = true;
    g.identity = g.now.identity;
  }
}

std::string PlanGuard::fetch_progress() {
  std::vector<std::string> ask;
  for (const InBlock& g : letters_) {
    if (g.identity.empty()) continue;
    Seen& seen = seen_[g.identity];
    if (seen.before < 0) {
      seen.before = 0;  // asked once per identity: later counts are this run's own
      ask.push_back(g.identity);
    }
  }
  // A plan without progress when the run started: every row is this run's own (one read per
  // block saved on a first run; two runs of one plan at once are not guarded against).
  if (ask.empty() || fresh_) return "";
  ledger::Result<std::vector<ledger::PlanLetterProgress>> rows =
      ledger_.plan_progress(plan_.digest, ask);
  if (!rows) return "the replay ledger failed: " + rows.error().message;
  for (size_t i = 0; i < ask.size() && i < rows.value().size(); ++i) {
    const ledger::PlanLetterProgress& p = rows.value()[i];
    seen_[ask[i]].before = p.done + p.held + p.changed;
  }
  return "";
}

void PlanGuard::hold(const Table& table, InBlock& g, LetterStep& step, const std::string& rule,
                     std::string reason, uint64_t* count) {
  step.kind = LetterStep::Kind::kAct;
  step.action = Action::kHold;
  step.verb = table.default_verb();
  step.rule = rule;
  step.reason = std::move(reason);
  step.generation = 0;
  step.copy_replay = 0;
  step.claim = false;
  g.state = "held";
  ++*count;
}

void PlanGuard::skip(InBlock& g, LetterStep& step, const std::string& rule, std::string reason,
                     uint64_t* count) {
  step.kind = LetterStep::Kind::kSkip;
  step.rule = rule;
  step.reason = std::move(reason);
  step.claim = false;
  g.state = "skipped";
  ++*count;
}

std::string PlanGuard::classify(const Table& table, const std::vector<BlockLetter*>& block) {
  if (std::string why = plan::stop_reason(ledger_, plan_.digest); !why.empty()) return why;
  if (std::string why = fetch_progress(); !why.empty()) return why;
  const int64_t cap = plan_.header.cap;
  std::vector<size_t> beyond;
  for (size_t i = 0; i < block.size() && i < letters_.size(); ++i) {
    InBlock& g = letters_[i];
    LetterStep& step = block[i]->step;
    if (!g.readable && !block[i]->letter->hold_rule.empty()) continue;  // the port's must-hold
    if (g.identity.empty()) {
      skip(g, step, "plan:not_in_plan",
           std::string(g.readable ? "neither its identity nor its message id is planned"
                                  : "unreadable, so not a planned letter") +
               ": not touched, it stays in " + o_.queue + " (it returns there when the gate stops)",
           &counts_.not_in_plan);
      continue;
    }
    Seen& seen = seen_[g.identity];
    if (seen.in_block == 0) in_block_.push_back(&seen);
    const int64_t copy = seen.before + seen.counted + ++seen.in_block;
    if (g.changed) {
      hold(table, g, step, "plan:changed", plan::changed_reason(*g.now.message_id),
           &counts_.changed);
      continue;
    }
    const plan::PlanLetter& p = *g.planned;
    if (copy > p.count) {
      g.copy = copy;
      beyond.push_back(i);
      continue;
    }
    if (cap > 0 && done_before_ + acted_ >= cap) {
      --seen.in_block;
      capped_ = true;
      skip(g, step, "plan:cap",
           "the plan's cap of " + std::to_string(cap) + " is reached: not touched, it stays in " +
               o_.queue,
           &counts_.capped);
      continue;
    }
    if (g.now.decision.verb != p.decision.verb || g.now.decision.rule != p.decision.rule) {
      hold(table, g, step, "plan:decision_mismatch",
           plan::mismatch_reason(g.now.decision, p.decision), &counts_.mismatch);
      continue;
    }
    // The plan's action is what the default map does; a gate's --action may map the verb
    // otherwise, and then the gate would not do what was approved.
    const std::optional<Action> action = redrive_.options().actions.of(step.decision.verb);
    if (p.decision.action != "none" && action &&
        std::string(action_name(*action)) != p.decision.action) {
      hold(table, g, step, "plan:decision_mismatch",
           "this gate's action for " + p.decision.verb + " is " +
               std::string(action_name(*action)) + " (--action); the plan says " +
               p.decision.action,
           &counts_.mismatch);
      continue;
    }
    g.state = "act";
    g.acted = true;
    ++acted_;
  }
  return judge_beyond(table, block, beyond);
}

std::string PlanGuard::judge_beyond(const Table& table, const std::vector<BlockLetter*>& block,
                                    const std::vector<size_t>& beyond) {
  if (beyond.empty()) return "";
  // Only a planned replay can be proven done: its claim is this message's, confirmed, and the
  // letter is that death delivered again (redrive.h).
  std::vector<std::string> keys;
  std::vector<size_t> asked;
  for (size_t i : beyond) {
    const InBlock& g = letters_[i];
    if (g.planned->decision.action == "republish" && g.now.idempotency_key &&
        block[i]->letter->redelivered && g.now.message_id) {
      keys.push_back(*g.now.idempotency_key);
      asked.push_back(i);
    }
  }
  std::map<size_t, ledger::Record> holders;
  if (!keys.empty()) {
    ledger::Result<std::vector<std::optional<ledger::Record>>> found = ledger_.lookup(keys);
    if (!found) return "the replay ledger failed: " + found.error().message;
    for (size_t j = 0; j < asked.size(); ++j) {
      if (found->at(j)) holders.emplace(asked[j], *found->at(j));
    }
  }
  for (size_t i : beyond) {
    InBlock& g = letters_[i];
    LetterStep& step = block[i]->step;
    const auto holder = holders.find(i);
    std::string why;
    if (holder != holders.end() && holder->second.message_id == *g.now.message_id &&
        holder->second.state == ledger::State::kConfirmed &&
        judge_redelivery(holder->second, *block[i]->letter, &why) == Redelivery::kSameDeath) {
      step.kind = LetterStep::Kind::kAckOnly;
      step.claim = false;
      step.generation = holder->second.generation;
      step.reason = "an earlier run of plan " + plan_.header.plan_id +
                    " counted this letter done, and its replay was confirmed at " +
                    pipeline::first_replay(holder->second) + " (" + why + ")";
      g.state = "done_earlier";
      g.no_count = true;
      ++counts_.done_earlier;
      continue;
    }
    hold(table, g, step, "plan:duplicate", plan::duplicate_reason(g.copy, g.planned->count),
         &counts_.duplicate);
  }
  return "";
}

Redrive::BlockProgress PlanGuard::progress(const std::vector<BlockLetter*>& block,
                                           const std::vector<bool>& settled) {
  std::map<std::string, ledger::PlanLetterProgress> rows;
  for (size_t i = 0; i < block.size() && i < letters_.size(); ++i) {
    const InBlock& g = letters_[i];
    if (g.identity.empty() || g.no_count || g.state.empty() || g.state == "skipped") continue;
    if (!settled[i]) {
      if (g.acted) --acted_;  // it returns to the queue: it is not done
      continue;
    }
    ++seen_[g.identity].counted;
    const LetterStep& step = block[i]->step;
    ledger::PlanLetterProgress& p = rows[g.identity];
    p.digest = plan_.digest;
    p.identity = g.identity;
    if (g.changed) {
      ++p.changed;
      ++counts_.held;
      p.last_outcome = "held " + step.rule;
    } else if (g.acted &&
               (step.kind == LetterStep::Kind::kAckOnly || step.rule == g.planned->decision.rule)) {
      ++p.done;
      ++counts_.done;
      p.last_outcome = step.kind == LetterStep::Kind::kAckOnly
                           ? "acked: replayed and confirmed before"
                           : std::string(action_name(step.action)) + " confirmed";
    } else {
      ++p.held;
      ++counts_.held;
      p.last_outcome = "held " + step.rule;
    }
  }
  Redrive::BlockProgress out;
  out.rows.reserve(rows.size());
  const std::string& operator_name = redrive_.options().operator_name;
  for (auto& [identity, p] : rows) {
    out.entries.push_back(plan::progress_entry(p, operator_name, ledger_.scope()));
    out.rows.push_back(std::move(p));
  }
  return out;
}

std::string PlanGuard::unseen_note() {
  if (capped_) return "";
  const ledger::Result<ledger::PlanCounts> counts = ledger_.plan_counts(plan_.digest);
  if (!counts) return "cannot read the plan's progress: " + counts.error().message;
  const int64_t pending = plan_.summary.copies - counts.value().done - counts.value().held;
  if (pending <= 0) return "";
  return std::to_string(pending) + " planned cop(ies) neither done nor held were not in " +
         o_.queue + " (moved away by hand, or returned by a cancel); `plan status` lists them " +
         "as pending";
}

std::string PlanGuard::summary() const {
  return "plan " + plan_.digest + ": done " + std::to_string(counts_.done) + ", held " +
         std::to_string(counts_.held) + " (decision mismatch " + std::to_string(counts_.mismatch) +
         ", changed " + std::to_string(counts_.changed) + ", duplicate " +
         std::to_string(counts_.duplicate) + "), acked as done by an earlier run " +
         std::to_string(counts_.done_earlier) + ", left in " + o_.queue + " " +
         std::to_string(counts_.not_in_plan + counts_.capped) + " (not in the plan " +
         std::to_string(counts_.not_in_plan) + ", over the cap " + std::to_string(counts_.capped) +
         ")";
}

}  // namespace replaygate::redrive
