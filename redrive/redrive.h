// A live redrive, a block of dead letters at a time, broker-independent: decide, claim, record,
// and say what a broker client must do (redrive/rabbitmq/ is the one that does it on RabbitMQ).
//
//   dead letters (records in a mapped format, e.g. rabbitmq) ─> decide() each ─> LetterStep
//       parser ─> Input ─> table.decide() ─> action by verb
//   ─> claim() (one ledger transaction: every replay's key) ─> record_decisions() (one audit
//   append, before the act) ─> the broker publishes, confirms ─> record_outcomes() (one ledger
//   transaction: the marks `confirmed` and a plan's progress; one audit append of the results) ─>
//   the broker acks the letters
//
// The rules (docs/gate.md, issue 21): a verb with effect `create` republishes; the policy's
// default verb holds; any other verb with effect `none` parks; a `read` or `copy` verb only acts
// through an explicit mapping (ActionMap::set, `--action VERB=republish|park|hold`). A republish
// is granted only by a ledger claim won before the publish (write-ahead, ledger/ledger.h). The
// claim records the copy: the replay marker it is published with (the letter's + 1) and the body's
// digest. When the claim is lost, the ledger and the letter itself say what happened:
//   - the holder is this very message (same message id), `confirmed`, and the letter is provably
//     the same death delivered again (a crash after the confirm, before the ack): the broker
//     marks it redelivered, its replay marker is lower than the copy's and its body digest is
//     the claim's. Then the replay already happened: ack without publishing (kAckOnly). This is
//     the only way a letter is acked without a publish; a ledger state alone never is one;
//   - the holder is this message and the letter's replay marker is the copy's or higher: the
//     copy died again, a new letter whose key is used up: held (`ledger:already_replayed`);
//   - the holder is this message, `confirmed`, and anything else (not redelivered, another body,
//     an unreadable marker, a claim that does not record its copy): held
//     (`gate:ambiguous_redelivery`);
//   - the holder is this message and not `confirmed`: the publish may or may not have reached the
//     broker, so the letter is held (`ledger:outcome_unknown`) until an operator's
//     `replaygate ledger release` allows another replay;
//   - another message holds the key: held (`ledger:already_replayed`).
// Before any claim, the broker client may refuse a republish's target for the decided input
// (DeadLetter::refuse_target: the queue the gate drains, a queue other than the decided topic's):
// held with its rule.
// A letter the parser cannot read, or one the broker client could not turn into a record (its
// `problem`: poison headers, a body over the limit), is held with the reason: never a replay.
// A ledger or audit failure stops the run (kStop): the letter stays unacked and returns to its
// queue; nothing is lost and nothing is replayed without its record.
//
// Threads: a Redrive belongs to one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/audit_log.h"
#include "audit/checkpoint.h"
#include "inputs/records.h"
#include "ledger/ledger.h"
#include "redrive/test_points.h"
#include "runtime/table.h"

namespace replaygate::redrive {

enum class Action : uint8_t { kRepublish, kPark, kHold };
// "republish", "park", "hold".
std::string_view action_name(Action action);
std::optional<Action> parse_action(std::string_view name);

// What each verb of a table does to a dead letter.
class ActionMap {
 public:
  // The default rules above: create -> republish, the default verb -> hold, other none -> park;
  // read and copy verbs get no action.
  static ActionMap defaults(const Table& table);
  // Applies one `VERB=ACTION` override. "" on success, else why not (an unknown verb, with the
  // closest name; an unknown action; "republish" for a verb whose effect is not create, which
  // would replay a message the policy never allowed to be replayed).
  std::string set(const Table& table, std::string_view spec);
  // "" when every verb has an action, else which does not and how to give it one.
  std::string missing(const Table& table) const;
  bool operator==(const ActionMap&) const = default;
  std::optional<Action> of(uint32_t verb) const {
    return verb < by_verb_.size() ? by_verb_[verb] : std::nullopt;
  }

 private:
  std::vector<std::optional<Action>> by_verb_;
};

// One dead letter as the broker client hands it over.
struct DeadLetter {
  // The record in the parser's format (for RabbitMQ, a management-API message object), followed
  // in memory by inputs::LineReader::kPadding readable bytes. Ignored when `problem` is set.
  std::string_view record;
  // Set when the client could not make a record of the message (poison headers, a body over the
  // limit): the letter is held with this reason.
  std::string problem;
  // With `problem`: the letter is held under this rule before any filter or decision (the
  // RabbitMQ gate's "gate:last_delivery_attempt": a letter the broker would drop if it went
  // back). Empty: rule `invalid`, and filters may skip the letter.
  std::string hold_rule;
  std::optional<std::string> message_id;  // the broker's message id property, when it has one
  // Whether the client knows where a replay would go (RabbitMQ: the x-death queue, or an
  // explicit --replay-routing-key). Without one a republish is held (`gate:no_target`) before
  // any claim.
  bool replay_target_known = true;
  // For the redelivery judgement (above), as the broker client read them from the message itself
  // (never through the mapping): the broker's redelivered flag; the replay marker (RabbitMQ:
  // x-replay), 0 when absent, nullopt when unreadable; the body's digest ("sha256:HEX", "" when
  // unknown). A republish's copy carries the marker + 1, and its claim records both.
  bool redelivered = false;
  std::optional<int64_t> replays = 0;
  std::string body_digest;
  // Asked for a republish with the decided input, before any claim: a rule and a reason when the
  // replay's target is refused (the letter is then held), nullopt when it may go there.
  struct Refusal {
    std::string rule, reason;
  };
  std::function<std::optional<Refusal>(const Table&, const Input&)> refuse_target;
  // Set by a port that can prove the letter has not moved since it was taken (Redis: it is still
  // in the gate's own in-flight set, which every move leaves in the same atomic script). A claim
  // of this very message that is not `confirmed`, for this copy (marker and body digest), is then
  // a crash between the claim and the move: the move happens now, under that claim, instead of a
  // hold as outcome unknown. Never set by a port that cannot look (AMQP).
  bool unmoved = false;
};

// What to do with one dead letter.
struct LetterStep {
  enum class Kind : uint8_t {
    kAct,      // publish to the action's target, then (after its confirm) ack
    kAckOnly,  // the replay already happened and was confirmed: ack, publish nothing
    kStop,     // the ledger failed: leave the letter unacked, stop (error says why)
    kSkip,     // a filter (step()'s `accept`) passed it over: leave it unacked, claim nothing
  };
  Kind kind = Kind::kStop;
  Action action = Action::kHold;
  bool readable = false;           // the record was read and decided
  Decision decision;               // readable only
  uint32_t verb = 0;               // after the ledger: a held create verb becomes the default verb
  std::string rule;                // the rule id, "default", "invalid", or "ledger:..."
  std::string reason;              // the rule's reason, or why the letter is held
  std::optional<std::string> key;  // the idempotency key, when the record has one
  int64_t generation = 0;          // the ledger claim this step won (republish only)
  int64_t copy_replay = 0;         // republish: the replay marker the copy carries (as claimed)
  std::string error;               // kStop: why
  Input* input = nullptr;          // readable only: the decided input (valid until next step())
  bool claim = false;              // a republish whose key the ledger must grant (claim())
  uint64_t decision_seq = 0;       // its audit decision entry, once written
};

// One letter of a block on its way through Redrive: the loop fills `step` (decide()), `letter`
// and `ordinal` (its 1-based number in the run), and, after the act, `confirmed` (the republish
// was confirmed) and `outcome` (the result entry's text).
struct BlockLetter {
  LetterStep step;
  const DeadLetter* letter = nullptr;
  uint64_t ordinal = 0;
  bool confirmed = false;
  std::string outcome;
};

// What a lost claim held by this very message (same message id) says about the letter (the rules
// above; `why` gets the evidence, for the reason): kSameDeath only when every condition of an
// ack without a publish holds, except the claim's state, which the caller checks.
enum class Redelivery : uint8_t { kSameDeath, kCopyDiedAgain, kAmbiguous };
Redelivery judge_redelivery(const ledger::Record& holder, const DeadLetter& letter,
                            std::string* why);

class Redrive {
 public:
  struct Options {
    ActionMap actions;
    bool dry_run = true;     // look the ledger up, claim nothing, write nothing
    std::string ledger_url;  // "" only in a dry run without a ledger
    std::string ledger_scope = "default";
    std::string worker;         // the claims' worker, e.g. "host:pid gate rabbitmq payments.dlq"
    std::string audit_path;     // "" only in a dry run
    std::string operator_name;  // the audit entries' operator
    std::string source;         // the audit entries' source, e.g. "amqp://host:5672/%2F/dlq"
    const audit::CheckpointSigner* signer = nullptr;  // not owned
    const TestPoints* test_points = nullptr;          // tests only (result_recorded); not owned
  };
  explicit Redrive(Options options);
  ~Redrive();

  // Opens the ledger (when a URL is set) and opens and locks the audit log (not in a dry run:
  // audit::Appender, held for the run). With a signer and a ledger, the log must hold the last
  // checkpoint the ledger recorded for it (its anchor), and every checkpoint written is recorded
  // as the new anchor. "" or why not.
  std::string open();

  // decide() then claim() for one letter (a block of one). A claim failure is kStop.
  // Decides `letter` on `table` (the parser must be for `table`'s layout), asks `accept` (when
  // set) whether the run handles it (filters: the decided input, null for a letter that could not
  // be read; false gives kSkip before any claim), and, for a republish, claims its key (a dry run
  // looks it up). Never throws for bad input: an unreadable letter is held. `table` must stay
  // pinned until record_outcome().
  LetterStep step(const Table& table, inputs::RecordParser& parser, const DeadLetter& letter,
                  const std::function<bool(const Input*)>& accept = {});
  // What step() does before the ledger: a republish that needs the ledger's grant comes back
  // kAct with `claim` set.
  LetterStep decide(const Table& table, inputs::RecordParser& parser, const DeadLetter& letter,
                    const std::function<bool(const Input*)>& accept = {});
  // Claims the key of every step of `block` with `claim` set, in one ledger transaction (a dry
  // run looks them up), and judges each claim lost (the rules above): "" or why the ledger
  // failed (then nothing is claimed, and no letter of the block may be acted on).
  std::string claim(const Table& table, const std::vector<BlockLetter*>& block);

  // The block's decision entries in one audit append (one fsync), before the broker acts: "" or
  // why it failed (then the run must stop with the letters unsettled). Sets step.decision_seq.
  std::string record_decisions(const Table& table, const std::vector<BlockLetter*>& block);
  // A plan's share of a block's settlement (redrive/plan_guard.h): its progress rows, committed in
  // the marks' transaction, and their audit entries, appended with the results.
  struct BlockProgress {
    std::vector<ledger::PlanLetterProgress> rows;
    std::vector<nlohmann::json> entries;
  };
  // After the broker acted: marks every confirmed republish `confirmed` and records `progress`'s
  // rows in one ledger transaction (test point `marked`), then appends every result entry and
  // `progress`'s entries in one audit append (the progress entries only when the transaction
  // committed). "" or why not.
  std::string record_outcomes(const std::vector<BlockLetter*>& block, BlockProgress progress = {});

  // record_decisions() and record_outcomes() for one letter.
  std::string record_decision(const Table& table, const LetterStep& step, const DeadLetter& letter,
                              uint64_t ordinal);
  std::string record_outcome(const LetterStep& step, bool confirmed, const std::string& outcome);

  // Ends the run's audit log: with a signer and a ledger, the last checkpoint (when entries came
  // after the last one) and its anchor. "" or why not. The destructor calls it too (a second call
  // has nothing to sign).
  std::string close();

  ledger::Ledger* ledger() { return ledger_.get(); }
  const Options& options() const { return options_; }

 private:
  void hold(const Table& table, LetterStep& step, std::string rule, std::string reason) const;
  // A claim lost to `holder`: what the letter becomes (the rules above).
  void judge_holder(const Table& table, LetterStep& step, const DeadLetter& letter,
                    const ledger::Record& holder) const;
  // The ledger's anchor of the audit log into signer_ (a copy of options_.signer): "" or why not.
  std::string read_anchor();
  // Records the last line `appended` wrote as the log's anchor (`always`; else only when it wrote
  // a checkpoint): "" or why not.
  std::string raise_anchor(const audit::AppendResult& appended, bool always);

  Options options_;
  std::unique_ptr<ledger::Ledger> ledger_;
  std::unique_ptr<audit::Appender> appender_;
  audit::CheckpointSigner signer_;  // options_.signer with the ledger's anchor of the log
  std::string anchor_log_;          // audit::anchor_name() of the log ("" : no anchor kept)
  std::unique_ptr<Input> input_;
  const Table* input_table_ = nullptr;
  std::string problem_;
  uint64_t decision_seq_ = 0;  // record_decision()'s entry, for record_outcome()
};

}  // namespace replaygate::redrive
