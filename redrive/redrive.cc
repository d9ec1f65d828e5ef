// One dead letter's decision, ledger claim and audit entries for a live redrive (redrive.h).
#include "redrive/redrive.h"

#include <cstdio>
#include <limits>
#include <utility>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "common/diagnostic.h"
#include "pipeline/audit_stage.h"
#include "pipeline/ledger_stage.h"

namespace replaygate::redrive {

std::string_view action_name(Action action) {
  switch (action) {
    case Action::kRepublish:
      return "republish";
    case Action::kPark:
      return "park";
    case Action::kHold:
      return "hold";
  }
  return "hold";
}

std::optional<Action> parse_action(std::string_view name) {
  for (Action a : {Action::kRepublish, Action::kPark, Action::kHold}) {
    if (action_name(a) == name) return a;
  }
  return std::nullopt;
}

ActionMap ActionMap::defaults(const Table& table) {
  ActionMap map;
  map.by_verb_.resize(table.verb_count());
  for (uint32_t v = 0; v < table.verb_count(); ++v) {
    const Effect effect = table.verb_effect(v);
    if (v == table.default_verb()) {
      map.by_verb_[v] = Action::kHold;
    } else if (effect == Effect::kCreate) {
      map.by_verb_[v] = Action::kRepublish;
    } else if (effect == Effect::kNone) {
      map.by_verb_[v] = Action::kPark;
    }
  }
  return map;
}

std::string ActionMap::set(const Table& table, std::string_view spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string_view::npos) {
    return "--action '" + std::string(spec) + "' is not VERB=ACTION (e.g. inspect=hold)";
  }
  const std::string_view verb_name = spec.substr(0, eq), name = spec.substr(eq + 1);
  const uint32_t verb = table.verb_index(verb_name);
  if (verb >= table.verb_count()) {
    std::vector<std::string> verbs;
    for (uint32_t v = 0; v < table.verb_count(); ++v) verbs.emplace_back(table.verb_name(v));
    std::string why = "--action: the policy has no verb '" + std::string(verb_name) + "'";
    const std::string suggestion = closest_match(verb_name, verbs);
    if (!suggestion.empty()) why += "; did you mean '" + suggestion + "'?";
    return why;
  }
  const std::optional<Action> action = parse_action(name);
  if (!action) {
    return "--action " + std::string(verb_name) + ": unknown action '" + std::string(name) +
           "'; give republish, park or hold";
  }
  if (*action == Action::kRepublish && table.verb_effect(verb) != Effect::kCreate) {
    return "--action " + std::string(spec) + ": verb '" + std::string(verb_name) + "' has effect " +
           effect_name(table.verb_effect(verb)) +
           ", and only a create verb may republish (the policy did not allow a replay)";
  }
  if (by_verb_.size() < table.verb_count()) by_verb_.resize(table.verb_count());
  by_verb_[verb] = action;
  return "";
}

std::string ActionMap::missing(const Table& table) const {
  for (uint32_t v = 0; v < table.verb_count(); ++v) {
    if (!of(v)) {
      const std::string name(table.verb_name(v));
      return "verb '" + name + "' (effect " + effect_name(table.verb_effect(v)) +
             ") has no action: a read or copy verb acts only through --action " + name +
             "=park or --action " + name + "=hold";
    }
  }
  return "";
}

Redrive::Redrive(Options options) : options_(std::move(options)) {
  if (options_.worker.empty()) options_.worker = pipeline::default_worker();
}

Redrive::~Redrive() {
  if (const std::string error = close(); !error.empty()) {
    std::fprintf(stderr, "replaygate: %s\n", error.c_str());
  }
}

std::string Redrive::close() {
  // The last checkpoint of a run that checkpoints per block, and its anchor.
  if (!appender_ || anchor_log_.empty()) return "";
  const audit::AppendResult closed = appender_->close();
  const std::string error = closed.ok ? raise_anchor(closed, true) : closed.error;
  return error.empty() ? "" : "the audit log's last checkpoint: " + error;
}

std::string Redrive::open() {
  if (!options_.ledger_url.empty()) {
    ledger::Options lo;
    lo.scope = options_.ledger_scope;
    ledger::Result<std::unique_ptr<ledger::Ledger>> opened =
        ledger::open_ledger(options_.ledger_url, lo);
    if (!opened) return "cannot open the replay ledger: " + opened.error().message;
    ledger_ = std::move(opened.value());
  }
  if (options_.dry_run || options_.audit_path.empty()) return "";
  const audit::CheckpointSigner* signer = options_.signer;
  if (signer != nullptr && ledger_ != nullptr) {
    // The log must still hold the line the ledger anchored it at (docs/signing.md). Checkpoints
    // per block and at close; the anchor, raised after each letter, covers the entries between.
    if (std::string error = read_anchor(); !error.empty()) return error;
    signer_.end_each_append = false;
    signer = &signer_;
  }
  std::string error;
  appender_ = audit::Appender::open(options_.audit_path, signer, &error);
  if (!appender_) return error;
  return "";
}

std::string Redrive::read_anchor() {
  signer_ = *options_.signer;
  anchor_log_ = audit::anchor_name(options_.audit_path);
  ledger::Result<std::vector<ledger::AuditAnchor>> anchors = ledger_->anchors();
  if (!anchors)
    return "cannot read the audit anchors of the replay ledger: " + anchors.error().message;
  for (const ledger::AuditAnchor& a : *anchors) {
    if (a.log != anchor_log_) continue;
    signer_.anchor = audit::Anchor{static_cast<uint64_t>(a.seq), a.head, a.chain_digest};
  }
  return "";
}

std::string Redrive::raise_anchor(const audit::AppendResult& appended, bool always) {
  if (!always && appended.checkpoint_seq == 0) return "";
  if (appended.last.seq == 0 || ledger_ == nullptr || anchor_log_.empty()) return "";
  ledger::AuditAnchor a;
  a.log = anchor_log_;
  a.seq = static_cast<int64_t>(appended.last.seq);
  a.head = appended.last.head;
  a.chain_digest = appended.last.chain_digest;
  a.key_id = verify::hex(options_.signer->key->id);
  ledger::Result<ledger::AuditAnchor> raised = ledger_->raise_anchor(a);
  if (!raised)
    return "cannot record the audit log's anchor in the ledger: " + raised.error().message;
  return "";
}

void Redrive::hold(const Table& table, LetterStep& step, std::string rule,
                   std::string reason) const {
  step.kind = LetterStep::Kind::kAct;
  step.action = Action::kHold;
  step.verb = table.default_verb();
  step.rule = std::move(rule);
  step.reason = std::move(reason);
  step.generation = 0;
  step.copy_replay = 0;
}

Redelivery judge_redelivery(const ledger::Record& holder, const DeadLetter& letter,
                            std::string* why) {
  if (!holder.copy_replay || holder.body_digest.empty()) {
    *why =
        "its claim does not record which copy was published (a claim written before ledger "
        "schema version 2, by another command, or rebuilt from the audit log)";
    return Redelivery::kAmbiguous;
  }
  const std::string copy =
      "the copy was published with x-replay " + std::to_string(*holder.copy_replay);
  if (!letter.replays) {
    *why = "its x-replay header cannot be read (" + copy + ")";
    return Redelivery::kAmbiguous;
  }
  const std::string marker = "x-replay " + std::to_string(*letter.replays);
  if (*letter.replays >= *holder.copy_replay) {
    *why = "it carries " + marker + "; " + copy;
    return Redelivery::kCopyDiedAgain;
  }
  if (!letter.redelivered) {
    *why =
        "the broker did not mark it redelivered (a new delivery, not the one a crash "
        "returned)";
    return Redelivery::kAmbiguous;
  }
  if (letter.body_digest.empty() || letter.body_digest != holder.body_digest) {
    *why = "its body differs from the body replayed (" +
           (letter.body_digest.empty() ? std::string("unknown") : letter.body_digest) +
           ", the claim has " + holder.body_digest + ")";
    return Redelivery::kAmbiguous;
  }
  *why = "redelivered, " + marker + " below the copy's " + std::to_string(*holder.copy_replay) +
         ", the same body";
  return Redelivery::kSameDeath;
}

LetterStep Redrive::decide(const Table& table, inputs::RecordParser& parser,
                           const DeadLetter& letter,
                           const std::function<bool(const Input*)>& accept) {
  LetterStep step;
  if (input_table_ != &table || !input_) {
    input_ = std::make_unique<Input>(table);
    input_table_ = &table;
  }
  const auto skipped = [&](const Input* input) {
    if (!accept || accept(input)) return false;
    step.kind = LetterStep::Kind::kSkip;
    return true;
  };
  if (!letter.problem.empty()) {
    if (!letter.hold_rule.empty()) {  // never skipped: a skipped letter goes back
      hold(table, step, letter.hold_rule, letter.problem);
      return step;
    }
    if (skipped(nullptr)) return step;
    hold(table, step, "invalid", letter.problem);
    return step;
  }
  input_->clear();
  problem_.clear();
  inputs::RecordMeta meta;
  if (!parser.parse(letter.record, *input_, &meta, &problem_)) {
    if (skipped(nullptr)) return step;
    hold(table, step, "invalid", problem_);  // "invalid record: ..." or "invalid input: ..."
    return step;
  }
  if (skipped(input_.get())) return step;
  step.readable = true;
  step.input = input_.get();
  step.decision = table.decide(*input_);
  step.verb = step.decision.verb;
  step.rule = std::string(table.rule_name(step.decision));
  step.reason = std::string(table.reason(step.decision));
  const uint32_t key_field = table.idempotency_key_field();
  if (key_field != Table::kNoField && key_field < input_->size()) {
    const Input::Slot slot = input_->slot(key_field);
    if (slot.state == Input::Slot::State::kString) step.key = std::string(slot.s);
  }
  const std::optional<Action> action = options_.actions.of(step.verb);
  if (!action) {
    // ActionMap::missing() refused such a table at start, and the CLI refuses a reload that
    // changes what a verb does (gate_cmd.cc); fail closed all the same.
    hold(table, step, "gate:no_action",
         "verb '" + std::string(table.verb_name(step.verb)) + "' has no action");
    return step;
  }
  step.kind = LetterStep::Kind::kAct;
  step.action = *action;
  if (*action == Action::kRepublish && table.verb_effect(step.verb) != Effect::kCreate) {
    // The map was made for another table (a reload that changed a verb's effect is refused by the
    // CLI, gate_cmd.cc); fail closed all the same.
    hold(table, step, "gate:no_action",
         "verb '" + std::string(table.verb_name(step.verb)) +
             "' is mapped to republish but its effect is not create in this table");
    return step;
  }
  if (*action != Action::kRepublish) return step;
  if (!letter.replay_target_known) {
    hold(table, step, "gate:no_target",
         "the letter has no x-death entry naming the queue it died in, so the gate does not know "
         "where to replay it (give --replay-routing-key to choose)");
    return step;
  }
  if (letter.refuse_target) {
    if (std::optional<DeadLetter::Refusal> refused = letter.refuse_target(table, *input_)) {
      hold(table, step, std::move(refused->rule), std::move(refused->reason));
      return step;
    }
  }
  if (letter.replays == std::numeric_limits<int64_t>::max()) {
    hold(table, step, "invalid",
         "x-replay is " + std::to_string(*letter.replays) +
             ", the largest value: a copy could not count one more replay");
    return step;
  }
  step.copy_replay = letter.replays.value_or(0) + 1;

  // A replay: the ledger's grant first (write-ahead).
  if (!step.key || step.key->empty()) {
    hold(table, step, "ledger:no_key",
         "the letter has no idempotency key, so the ledger cannot make its replay happen once");
    return step;
  }
  if (const std::string why = ledger::key_problem(*step.key); !why.empty()) {
    // Held alone: a claim of it would fail, stop the run, and stop every rerun at this letter.
    hold(table, step, "ledger:invalid_key",
         "the idempotency key " + why + ", so the replay ledger cannot record its replay");
    return step;
  }
  if (ledger_ == nullptr) {
    if (!options_.dry_run) {
      step.kind = LetterStep::Kind::kStop;
      step.error = "no replay ledger: a replay needs --ledger";
    }
    return step;  // a dry run without a ledger: what the policy says
  }
  step.claim = true;
  return step;
}
LetterStep Redrive::step(const Table& table, inputs::RecordParser& parser, const DeadLetter& letter,
                         const std::function<bool(const Input*)>& accept) {
  BlockLetter one;
  one.step = decide(table, parser, letter, accept);
  one.letter = &letter;
  if (std::string error = claim(table, {&one}); !error.empty()) {
    one.step.kind = LetterStep::Kind::kStop;
    one.step.error = std::move(error);
  }
  return std::move(one.step);
}

void Redrive::judge_holder(const Table& table, LetterStep& step, const DeadLetter& letter,
                           const ledger::Record& holder) const {
  const std::string message_id = letter.message_id.value_or("");
  const bool same_message = !message_id.empty() && holder.message_id == message_id;
  std::string why;
  const Redelivery redelivery =
      same_message ? judge_redelivery(holder, letter, &why) : Redelivery::kAmbiguous;
  if (same_message && redelivery == Redelivery::kCopyDiedAgain) {
    hold(table, step, "ledger:already_replayed",
         "the replayed copy died again (" + why +
             "): already replayed: " + pipeline::first_replay(holder));
  } else if (same_message && holder.state == ledger::State::kConfirmed &&
             redelivery == Redelivery::kSameDeath) {
    step.kind = LetterStep::Kind::kAckOnly;
    step.generation = holder.generation;
    step.reason =
        "already replayed and confirmed at " + pipeline::first_replay(holder) +
        "; the copy is in the work queue (this is the same death delivered again: " + why + ")";
  } else if (same_message && holder.state == ledger::State::kConfirmed) {
    hold(table, step, "gate:ambiguous_redelivery",
         "this message's replay was confirmed at " + pipeline::first_replay(holder) + ", but " +
             why +
             ": it is not provably that death delivered again, so it is not acked away; "
             "compare it with the copy, then move or delete it by hand");
  } else if (same_message && letter.unmoved && holder.state != ledger::State::kConfirmed &&
             holder.copy_replay && letter.replays && *holder.copy_replay == *letter.replays + 1 &&
             !letter.body_digest.empty() && letter.body_digest == holder.body_digest) {
    // The port saw the letter where the claim found it, unmoved (DeadLetter::unmoved): the claim
    // is this letter's, its move never happened, so it happens now under that claim.
    step.generation = holder.generation;
    step.copy_replay = *holder.copy_replay;
    step.reason += " (resuming the claim of " + pipeline::first_replay(holder) +
                   ": the letter was never moved)";
  } else if (same_message) {
    hold(table, step, "ledger:outcome_unknown",
         "this message's replay was claimed at " + pipeline::first_replay(holder) +
             " but its publisher confirm was never recorded: the copy may or may not be in "
             "the work queue; check it, then 'replaygate ledger release' allows another "
             "replay");
  } else {
    hold(table, step, "ledger:already_replayed",
         "already replayed: " + pipeline::first_replay(holder));
  }
}

std::string Redrive::claim(const Table& table, const std::vector<BlockLetter*>& block) {
  std::vector<BlockLetter*> asking;
  for (BlockLetter* b : block) {
    if (b->step.claim) asking.push_back(b);
  }
  if (asking.empty()) return "";
  if (options_.dry_run) {
    std::vector<std::string> keys;
    for (const BlockLetter* b : asking) keys.push_back(*b->step.key);
    ledger::Result<std::vector<std::optional<ledger::Record>>> found = ledger_->lookup(keys);
    if (!found) return "the replay ledger failed: " + found.error().message;
    // A dry run claims nothing: a second letter of one key in the block is judged as the first.
    for (size_t i = 0; i < asking.size(); ++i) {
      asking[i]->step.claim = false;
      if (found->at(i)) judge_holder(table, asking[i]->step, *asking[i]->letter, *found->at(i));
    }
    return "";
  }
  std::vector<ledger::Claim> claims;
  claims.reserve(asking.size());
  for (const BlockLetter* b : asking) {
    ledger::Claim& claim = claims.emplace_back();
    claim.key = *b->step.key;
    claim.policy = std::string(table.policy_id());
    claim.revision = table.revision();
    claim.table_checksum = table.checksum_hex();
    claim.rule = b->step.rule;
    claim.message_id = b->letter->message_id.value_or("");
    claim.worker = options_.worker;
    claim.copy_replay = b->step.copy_replay;
    claim.body_digest = b->letter->body_digest;
  }
  ledger::Result<std::vector<ledger::ClaimOutcome>> claimed = ledger_->claim_batch(claims);
  if (!claimed) return "the replay ledger failed: " + claimed.error().message;
  for (size_t i = 0; i < asking.size(); ++i) {
    LetterStep& step = asking[i]->step;
    step.claim = false;
    const ledger::ClaimOutcome& outcome = claimed->at(i);
    if (outcome.won) {
      step.generation = outcome.holder.generation;
    } else {
      judge_holder(table, step, *asking[i]->letter, outcome.holder);
    }
  }
  return "";
}

std::string Redrive::record_decisions(const Table& table, const std::vector<BlockLetter*>& block) {
  if (options_.dry_run || block.empty()) return "";
  std::vector<nlohmann::json> entries;
  entries.reserve(block.size());
  const std::string checksum = table.checksum_hex();
  for (const BlockLetter* b : block) {
    const LetterStep& step = b->step;
    audit::DecisionEntry entry = pipeline::decision_entry(table, step.verb, step.rule, checksum);
    entry.operator_name = options_.operator_name;
    entry.source = options_.source;
    entry.record = b->ordinal;
    if (b->letter->message_id) entry.message_id = *b->letter->message_id;
    if (step.key && !step.key->empty()) entry.idempotency_key = *step.key;  // as AuditStage
    // Only the decision that won the claim names it: an ack of a replay already confirmed names
    // none (ledger check would see two entries for one claim).
    entry.claim_generation = step.kind == LetterStep::Kind::kAct ? step.generation : 0;
    entries.push_back(audit::to_json(entry));
  }
  if (!appender_) return "no audit log is open";
  const audit::AppendResult appended = appender_->append_batch(std::move(entries));
  std::fputs(audit::removed_tail_note(options_.audit_path, appended).c_str(), stderr);
  if (!appended.ok) return appended.error;
  for (size_t i = 0; i < block.size(); ++i) block[i]->step.decision_seq = appended.seqs.at(i);
  return raise_anchor(appended, false);
}

std::string Redrive::record_outcomes(const std::vector<BlockLetter*>& block,
                                     BlockProgress progress) {
  if (options_.dry_run || block.empty()) return "";
  std::vector<std::pair<std::string, int64_t>> confirmed;
  for (const BlockLetter* b : block) {
    const LetterStep& step = b->step;
    if (b->confirmed && step.action == Action::kRepublish && step.kind == LetterStep::Kind::kAct &&
        step.generation > 0 && ledger_ != nullptr) {
      confirmed.emplace_back(*step.key, step.generation);
    }
  }
  std::string failure;
  if (!progress.rows.empty() && ledger_ == nullptr) {
    failure = "a plan's progress needs a ledger";
  } else if (!confirmed.empty() || !progress.rows.empty()) {
    if (const ledger::Status marked =
            ledger_->mark_batch_with_progress(confirmed, ledger::State::kConfirmed, progress.rows);
        !marked) {
      failure = (progress.rows.empty()
                     ? "cannot mark the replays confirmed in the ledger: "
                     : "cannot mark the replays confirmed and record the plan's progress in the "
                       "ledger: ") +
                marked.error().message;
    }
  }
  if (options_.test_points != nullptr && failure.empty()) options_.test_points->at("marked");
  std::vector<nlohmann::json> entries;
  for (const BlockLetter* b : block) {
    if (b->step.decision_seq == 0) {
      return failure.empty() ? "no decision entry to record a result for" : failure;
    }
    audit::ResultEntry result;
    result.decision = b->step.decision_seq;
    result.outcome = b->outcome;
    result.operator_name = options_.operator_name;
    entries.push_back(audit::to_json(result));
  }
  if (!appender_) return "no audit log is open";
  uint64_t only = block.size() == 1 ? block.front()->step.decision_seq : 0;
  if (failure.empty() && !progress.entries.empty()) {
    // The batch is not one decision's result alone.
    only = 0;
    for (nlohmann::json& e : progress.entries) entries.push_back(std::move(e));
  }
  const audit::AppendResult appended = appender_->append_batch(std::move(entries), only);
  std::fputs(audit::removed_tail_note(options_.audit_path, appended).c_str(), stderr);
  if (!appended.ok) return failure.empty() ? appended.error : failure + "; " + appended.error;
  // A crash here leaves the ledger's anchor behind the log, never ahead: the next run raises it.
  if (options_.test_points != nullptr) options_.test_points->at("result_recorded");
  if (std::string error = raise_anchor(appended, true); !error.empty()) {
    return failure.empty() ? error : failure + "; " + error;
  }
  return failure;
}

std::string Redrive::record_decision(const Table& table, const LetterStep& step,
                                     const DeadLetter& letter, uint64_t ordinal) {
  decision_seq_ = 0;
  BlockLetter one;
  one.step = step;
  one.letter = &letter;
  one.ordinal = ordinal;
  std::string error = record_decisions(table, {&one});
  decision_seq_ = one.step.decision_seq;
  return error;
}

std::string Redrive::record_outcome(const LetterStep& step, bool confirmed,
                                    const std::string& outcome) {
  if (options_.dry_run) return "";
  BlockLetter one;
  one.step = step;
  one.step.decision_seq = decision_seq_;
  one.confirmed = confirmed;
  one.outcome = outcome;
  decision_seq_ = 0;
  return record_outcomes({&one});
}

}  // namespace replaygate::redrive
