// The live redrive loop over a port (run.h).
#include "redrive/run.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "common/plural.h"

namespace replaygate::redrive {
namespace {

using Clock = std::chrono::steady_clock;

// What the loop does after a part of its turn: take the next letter (kNext), end the run (kEnd),
// or go on with this turn (kHandle).
enum class Then : uint8_t { kNext, kEnd, kHandle };

class Loop {
 public:
  Loop(SharedTable& shared, const ParserFactory& make_parser, Redrive& redrive, Port& port,
       const RunOptions& o, const RunHooks& hooks, RunStats* stats)
      : shared_(shared),
        reader_(shared),
        make_parser_(make_parser),
        redrive_(redrive),
        port_(port),
        o_(o),
        hooks_(hooks),
        stats_(stats) {}

  int run();

 private:
  void at(std::string_view step) const {
    if (o_.test_points != nullptr) o_.test_points->at(step);
  }
  void note(const std::string& text) const {
    if (hooks_.note) hooks_.note(text);
  }
  void report(const LetterReport& r) const {
    if (hooks_.letter) hooks_.letter(r);
  }
  void stop(std::string reason, int code) {
    stats_->stop_reason = std::move(reason);
    exit_code_ = std::max(exit_code_, code);
  }
  void progress(bool force);
  void pace() {
    next_allowed_ =
        Clock::now() +
        std::chrono::microseconds(o_.max_rate > 0 ? static_cast<int64_t>(1e6 / o_.max_rate) : 0);
  }
  Then before_next();
  Then reconnect();
  Then handle(const Letter& letter);
  bool accept(const Letter& letter, const Table& table, const Input* input) const;
  Then move(const Table& table, const Letter& letter, LetterStep& step, LetterReport& r,
            bool* settle);
  void count(const LetterStep& step);

  SharedTable& shared_;
  SharedTable::Reader reader_;
  const ParserFactory& make_parser_;
  Redrive& redrive_;
  Port& port_;
  const RunOptions& o_;
  const RunHooks& hooks_;
  RunStats* stats_;
  uint64_t generation_ = 0;
  std::unique_ptr<inputs::RecordParser> parser_;
  Clock::time_point start_, last_progress_, next_allowed_, idle_since_;
  uint64_t kept_unacked_ = 0;
  bool found_message_ = false;  // --message-id: the letter was seen
  int exit_code_ = 0;
};

void Loop::progress(bool force) {
  const auto now = Clock::now();
  if (!force && now - last_progress_ < std::chrono::seconds(1)) return;
  last_progress_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  stats_->rate = seconds > 0 ? static_cast<double>(stats_->handled) / seconds : 0;
  if (port_.up()) stats_->queue_depth = port_.depth();
  if (hooks_.progress) hooks_.progress(*stats_);
}

// Stops, reloads, reconnects and the rate wait, between letters.
Then Loop::before_next() {
  if (hooks_.stop_requested && hooks_.stop_requested()) {
    stop("stopped by a signal", 0);
    return Then::kEnd;
  }
  if (stats_->handled >= o_.max) {
    stop("handled " + plural(o_.max, "letter") + " (--max)", 0);
    return Then::kEnd;
  }
  if (kept_unacked_ >= o_.max_unacked) {
    stop(std::to_string(kept_unacked_) + " letters kept unacked (skipped" +
             std::string(o_.apply ? "" : " or seen in this dry run") + "; --max-unacked)",
         0);
    return Then::kEnd;
  }
  if (hooks_.maybe_reload) hooks_.maybe_reload();
  if (!port_.up() && reconnect() == Then::kEnd) return Then::kEnd;
  // Rate: wait on the port until the next letter is allowed.
  if (o_.max_rate > 0) {
    const auto now = Clock::now();
    if (now < next_allowed_) {
      // In slices, so that a stop (SIGTERM) or a reload is seen within 200 ms at any rate.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_allowed_ - now);
      port_.wait(static_cast<int>(std::min<int64_t>(left.count(), 200)),
                 [this] { at("rate_wait"); });
      return Then::kNext;
    }
  }
  return Then::kHandle;
}

// Reconnects with backoff (--apply only): the letters not settled went back with the connection.
Then Loop::reconnect() {
  if (!o_.apply) {
    stop("the broker connection was lost: " + port_.lost_reason(false), 2);
    return Then::kEnd;
  }
  const auto give_up = Clock::now() + std::chrono::seconds(o_.reconnect_for_s);
  int backoff_ms = 250;
  // Which connection went, and why: the first reconnect note says the real cause.
  std::string error = port_.lost_reason(true);
  bool reconnected = false;
  while (Clock::now() < give_up && !(hooks_.stop_requested && hooks_.stop_requested())) {
    note("reconnecting to " + port_.describe() + " in " + std::to_string(backoff_ms) + " ms (" +
         error + ")");
    port_.close();
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    error = port_.open();
    if (error.empty()) {
      reconnected = true;
      break;
    }
    backoff_ms = std::min(backoff_ms * 2, 10000);
  }
  if (!reconnected) {
    stop("cannot reconnect to the broker within " + std::to_string(o_.reconnect_for_s) +
             " s: " + error,
         2);
    return Then::kEnd;
  }
  ++stats_->reconnects;
  kept_unacked_ = 0;  // the broker took them back
  note("reconnected");
  idle_since_ = Clock::now();
  return Then::kHandle;
}

// The filters: --message-id, --since, --topic, --error-class (`input` null: unreadable).
bool Loop::accept(const Letter& letter, const Table& table, const Input* input) const {
  if (o_.message_id && (!letter.dead.message_id || *letter.dead.message_id != *o_.message_id)) {
    return false;
  }
  if (o_.since && (!letter.timestamp || *letter.timestamp < *o_.since)) return false;
  for (const auto& [name, wanted] :
       {std::pair{"topic", &o_.topic}, std::pair{"error_class", &o_.error_class}}) {
    if (!*wanted) continue;
    if (input == nullptr) return false;
    const uint32_t f = table.field_index(name);
    if (f == Table::kNoField) return false;
    const Input::Slot slot = input->slot(f);
    if (slot.state != Input::Slot::State::kString || slot.s != **wanted) return false;
  }
  at("decided");
  return true;
}

void Loop::count(const LetterStep& step) {
  ++stats_->handled;
  ++stats_->per_verb[step.verb];
  if (step.kind == LetterStep::Kind::kAckOnly) {
    ++stats_->acked_only;
  } else if (step.action == Action::kRepublish) {
    ++stats_->republished;
  } else if (step.action == Action::kPark) {
    ++stats_->parked;
  } else {
    ++stats_->held;
  }
}

// One letter: decide, filter, claim; then, unless skipped, left, a dry run or stopped, move it.
Then Loop::handle(const Letter& letter) {
  ++stats_->received;
  SharedTable::Guard pinned = reader_.acquire();
  const Table& table = pinned.table();
  if (shared_.generation() != generation_) {
    generation_ = shared_.generation();
    parser_ = make_parser_(table);
  }
  if (!letter.refuse_peek.empty()) {
    stop(letter.refuse_peek, 2);
    return Then::kEnd;  // this letter returns unsettled, as every one a dry run saw
  }
  LetterStep step = redrive_.step(table, *parser_, letter.dead,
                                  [&](const Input* input) { return accept(letter, table, input); });
  LetterReport r;
  r.ordinal = stats_->received;
  r.message_id = letter.dead.message_id;
  r.key = step.key;
  r.dry_run = !o_.apply && !letter.must_move;
  if (step.kind == LetterStep::Kind::kSkip) {
    ++stats_->skipped;
    ++kept_unacked_;
    if (const std::string cost = port_.pass_over_cost(); !cost.empty() && o_.message_id) {
      // Searching on would pass over (and so return) letter after letter, each paying the cost:
      // stop at the first one that is not the message asked for.
      stop("refusing to search " + port_.queue() + " for message " + *o_.message_id + ": " + cost +
               ", and the letter at its head is " +
               letter.dead.message_id.value_or("(no message id)"),
           1);
      return Then::kEnd;
    }
    return Then::kNext;  // stays unsettled: not seen again in this run
  }
  // A letter held for its last attempt during a --message-id search may be another one.
  const bool wanted = o_.message_id && letter.dead.message_id == o_.message_id;
  if (wanted) found_message_ = true;
  if (step.kind == LetterStep::Kind::kStop) {
    stop(step.error, 2);
    return Then::kEnd;  // the letter stays unsettled and returns to the queue
  }
  at("claimed");
  r.verb = std::string(table.verb_name(step.verb));
  r.effect = effect_name(table.verb_effect(step.verb));
  r.rule = step.rule;
  r.reason = step.reason;
  if (!step.readable && letter.dead.hold_rule.empty()) ++stats_->unreadable;
  r.action =
      step.kind == LetterStep::Kind::kAckOnly ? "ack" : std::string(action_name(step.action));
  if (r.action != "ack") r.target = port_.target(letter, step.action);
  if (step.kind == LetterStep::Kind::kAct && step.action != Action::kRepublish) {
    if (std::optional<std::string> left = port_.refuse_move(letter, step.action)) {
      // A park or hold place that is where the letter died hands a `never` letter back to the
      // consumer that failed it: a replay the policy refused. That letter alone stays where it
      // is, unsettled like a skipped one (no claim was made for a park or hold); the run goes on.
      r.outcome = std::move(*left);
      r.action = "leave";
      ++stats_->left;
      ++kept_unacked_;
      report(r);
      if (o_.message_id) {
        stop("left message " + *o_.message_id + " in " + port_.queue(), 1);
        return Then::kEnd;
      }
      return Then::kNext;
    }
  }
  if (!o_.apply && !letter.must_move) {
    r.outcome = "dry run: nothing published, claimed or acked";
    ++kept_unacked_;
    ++stats_->handled;
    ++stats_->per_verb[step.verb];
    report(r);
    pace();
    if (wanted) {
      stop("found message " + *o_.message_id, 0);
      return Then::kEnd;
    }
    return Then::kNext;
  }
  if (const std::string why = redrive_.record_decision(table, step, letter.dead, stats_->received);
      !why.empty()) {
    stop("cannot write the audit log: " + why, 2);
    return Then::kEnd;  // unsettled: it returns; a claim made stays `claimed` (outcome unknown)
  }
  bool settle = true;
  if (const Then then = move(table, letter, step, r, &settle); then != Then::kHandle) return then;
  if (!settle) return Then::kNext;
  const std::vector<std::string> settled = port_.settle({&letter});
  if (!settled.front().empty()) {
    // The connection went down between the record and the settle: the letter is redelivered
    // after the reconnect, and the ledger (confirmed, this message) settles it without a move.
    if (!port_.up()) {
      r.outcome +=
          "; the ack was lost with the connection: the letter returns, and the "
          "ledger acks it on redelivery without publishing again";
      report(r);
      return Then::kNext;
    }
    stop(settled.front(), 2);
    return Then::kEnd;
  }
  at("acked");
  count(step);
  report(r);
  pace();
  if (o_.max_target_depth && step.action == Action::kRepublish) {
    if (const std::optional<Port::TargetDepth> depth = port_.replay_target_depth(letter);
        depth && depth->depth > *o_.max_target_depth) {
      stop("queue '" + depth->name + "' holds " + std::to_string(depth->depth) +
               " messages, more than --max-target-depth " + std::to_string(*o_.max_target_depth),
           0);
      return Then::kEnd;
    }
  }
  if (wanted) {
    stop("handled message " + *o_.message_id, 0);
    return Then::kEnd;
  }
  return Then::kNext;
}

// Moves a letter (act), or moves nothing for an ack-only step, then records the outcome.
// kHandle: recorded, settle it next (unless *settle is false: it returns by itself).
Then Loop::move(const Table& table, const Letter& letter, LetterStep& step, LetterReport& r,
                bool* settle) {
  bool confirmed = false;
  if (step.kind == LetterStep::Kind::kAckOnly) {
    r.outcome = "acked without publishing: " + step.reason;
    confirmed = true;
  } else {
    const Move m{&letter, step.action, step.copy_replay, r.verb, step.rule, step.reason};
    const MoveAnswer answer = port_.act({m}).front();
    if (answer.outcome == MoveAnswer::Outcome::kDone) {
      confirmed = true;
      at("confirmed");
      // The hold copy of a letter on its last attempt is confirmed; its original is not acked.
      if (letter.must_move) at("held_last_attempt");
      r.outcome = "published to " + r.target + ", " + answer.detail;
    } else if (answer.unroutable && step.action == Action::kRepublish) {
      // Nothing took the replay: move the letter to the hold place, saying so. The claim stays
      // `claimed` (an operator releases it once the target exists); the decision entry's result
      // says both what happened to the replay and where the letter went.
      const std::string returned =
          "the replay to " + r.target + " was returned (" + answer.detail + "): no queue took it";
      const uint32_t held_verb = table.default_verb();
      step.action = Action::kHold;
      step.rule = "gate:unroutable";
      step.reason = returned;
      const Move hold{&letter,   Action::kHold, 0, std::string(table.verb_name(held_verb)),
                      step.rule, step.reason};
      const MoveAnswer moved = port_.act({hold}).front();
      if (moved.outcome != MoveAnswer::Outcome::kDone) {
        r.outcome = returned + "; the move to " + port_.hold_name() + " was " + moved.result + " " +
                    moved.detail;
        report(r);
        stop("cannot move an unroutable replay to " + port_.hold_name() + ": " + moved.result +
                 " " + moved.detail,
             2);
        return Then::kEnd;
      }
      step.verb = held_verb;
      r.action = "hold";
      r.verb = std::string(table.verb_name(held_verb));
      r.effect = effect_name(table.verb_effect(held_verb));
      r.rule = step.rule;
      r.reason = step.reason;
      r.target = port_.target(letter, Action::kHold);
      r.outcome = returned + "; moved to " + r.target + ", " + moved.detail;
      confirmed = false;  // not a confirmed replay: the ledger keeps the claim as it is
    } else {
      // Refused, no answer in time, connection lost: the letter is not settled. It goes back to
      // the dead-letter queue as it was.
      r.outcome = "not acked: the publish to " + r.target + " was " + answer.result +
                  (answer.detail.empty() ? "" : " (" + answer.detail + ")");
      port_.give_back(letter);
      if (answer.lost && !port_.up()) {
        // The letter went back to the queue with the connection. Reconnect and go on: on
        // redelivery the ledger's claim (not `confirmed`) holds it as outcome unknown, so a move
        // that did reach the broker is never repeated.
        r.outcome += "; the letter returns to its queue with the connection";
        report(r);
        if (const std::string why = redrive_.record_outcome(step, false, r.outcome); !why.empty()) {
          stop("cannot record the outcome: " + why, 2);
          return Then::kEnd;
        }
        *settle = false;
        return Then::kHandle;
      }
      report(r);
      stop(r.outcome, 2);
      return Then::kEnd;
    }
  }
  // The result entry says what was done, where to, and why (the decision entry has the rule).
  if (const std::string why =
          redrive_.record_outcome(step, confirmed && step.action == Action::kRepublish,
                                  r.outcome + (r.reason.empty() ? "" : "; reason: " + r.reason));
      !why.empty()) {
    stop("cannot record the outcome: " + why, 2);
    return Then::kEnd;  // unsettled: on redelivery the ledger says what happened
  }
  at("recorded");
  return Then::kHandle;
}

int Loop::run() {
  if (!reader_.ok()) {
    stats_->stop_reason = "no free reader slot on the table";
    return 2;
  }
  if (const std::string error = port_.open(); !error.empty()) {
    stats_->stop_reason = error;
    return 2;
  }
  generation_ = shared_.generation();
  {
    SharedTable::Guard pinned = reader_.acquire();
    parser_ = make_parser_(pinned.table());
    stats_->per_verb.assign(pinned.table().verb_count(), 0);
  }
  start_ = last_progress_ = next_allowed_ = idle_since_ = Clock::now();
  std::vector<Letter> letters;
  for (;;) {
    const Then then = before_next();
    if (then == Then::kEnd) break;
    if (then == Then::kNext) continue;
    std::string error;
    const Port::Next next = port_.next(1, 200, &letters, &error);
    progress(false);
    if (next == Port::Next::kTimeout) {
      port_.wait(1);  // heartbeats while the queue is idle
      if (!o_.follow && Clock::now() - idle_since_ >= std::chrono::milliseconds(o_.idle_exit_ms)) {
        stop("no letter for " + std::to_string(o_.idle_exit_ms) + " ms: the queue is drained" +
                 std::string(kept_unacked_ > 0 ? " (of what this run may take)" : ""),
             0);
        break;
      }
      continue;
    }
    if (next == Port::Next::kCancelled) {
      stop(error, 2);
      break;
    }
    if (next == Port::Next::kLost) continue;  // reconnect above
    idle_since_ = Clock::now();
    if (handle(letters.front()) == Then::kEnd) break;
  }
  if (o_.message_id && !found_message_ && exit_code_ == 0) {
    stats_->stop_reason += "; message " + *o_.message_id + " was not among the " +
                           plural(stats_->received, "letter") +
                           " seen (not in the queue, or further back than --max-unacked)";
    exit_code_ = 1;
  }
  progress(true);
  stats_->finished = true;
  if (exit_code_ == 0 && (stats_->unreadable > 0 || stats_->left > 0)) exit_code_ = 1;
  return exit_code_;
}

}  // namespace

int run(SharedTable& shared, const ParserFactory& make_parser, Redrive& redrive, Port& port,
        const RunOptions& options, const RunHooks& hooks, RunStats* stats) {
  Loop loop(shared, make_parser, redrive, port, options, hooks, stats);
  return loop.run();
}

}  // namespace replaygate::redrive
