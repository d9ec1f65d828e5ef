// The live redrive loop over a port (run.h).
#include "redrive/run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

#include "common/plural.h"
#include "redrive/plan_guard.h"

namespace replaygate::redrive {
namespace {

using Clock = std::chrono::steady_clock;

// What the loop does after a part of its turn: take the next block (kNext), end the run (kEnd),
// or go on with this turn (kHandle).
enum class Then : uint8_t { kNext, kEnd, kHandle };

// One letter of the block in hand, as the loop carries it.
struct InBlock {
  const Letter* letter = nullptr;
  BlockLetter b;
  LetterReport r;
  bool wanted = false;  // --message-id: this is the message
  bool acts = false;    // recorded, moved (or acked only), recorded, settled
  bool settle = false;  // its records are written: settle it
  bool report = false;  // print its line at the end of the block
};

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
  void stop(std::string reason, int code) {
    if (stats_->stop_reason.empty() || code > exit_code_) stats_->stop_reason = std::move(reason);
    exit_code_ = std::max(exit_code_, code);
    end_ = true;
  }
  void progress(bool force);
  // After a block of `n` letters handled: when the next may start.
  void pace(size_t n);
  // How many letters the next block may have now (at least 1).
  size_t block_size() const;
  Then before_next();
  Then reconnect();
  Then handle_block(std::vector<Letter>& letters);
  bool accept(const Letter& letter, const Table& table, const Input* input) const;
  // What each letter of a decided, claimed block does before any record: kept, left, dry run,
  // or acts.
  void sort_out(const Table& table, std::vector<InBlock>& block);
  // The moves of every letter that acts, then the unroutable replays' moves to the hold place.
  void move_block(const Table& table, std::vector<InBlock>& block);
  void answered(const Table& table, InBlock& f, const MoveAnswer& answer,
                std::vector<InBlock*>* returned);
  void hold_returned(const Table& table, const std::vector<InBlock*>& returned);
  void settle_block(std::vector<InBlock>& block);
  // After a block: when the broker refused publishes, wait before the next (doubling), and stop
  // once the waits pass --reconnect-for.
  void back_off_after_nacks();
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
  bool end_ = false;            // a stop was asked for: end after this block
  uint64_t nacked_ = 0;         // publishes the broker refused in this block
  int nack_wait_ms_ = 0;        // the wait after the last block with a refusal (0: none)
  int64_t nack_waited_ms_ = 0;  // waited since the first block of this run of refusals
  int exit_code_ = 0;
};

void Loop::progress(bool force) {
  const auto now = Clock::now();
  if (!force && now - last_progress_ < std::chrono::seconds(1)) return;
  last_progress_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  stats_->rate = seconds > 0 ? static_cast<double>(stats_->handled) / seconds : 0;
  if (port_.up()) {
    stats_->queue_depth = port_.depth();
    if (o_.held_depth) {
      // A failed read leaves the series absent until the next one: never a stop.
      const Port::HeldDepth held = port_.held_depth();
      stats_->held_letters = held.held;
      stats_->parked_letters = held.parked;
      stats_->oldest_held_seconds = held.oldest_held_seconds;
    }
  }
  if (hooks_.progress) hooks_.progress(*stats_);
}

size_t Loop::block_size() const {
  size_t n = std::max<size_t>(1, o_.message_id ? 1 : o_.block_max);
  n = static_cast<size_t>(std::min<uint64_t>(n, o_.max - stats_->handled));
  if (o_.max_rate > 0) {
    // The letters the rate has allowed since the next one was due, and that one.
    const double due = std::chrono::duration<double>(Clock::now() - next_allowed_).count();
    const double allowed = 1 + std::floor(std::max(0.0, due) * o_.max_rate);
    n = static_cast<size_t>(std::min<double>(static_cast<double>(n), allowed));
  }
  return std::max<size_t>(n, 1);
}

void Loop::pace(size_t n) {
  if (o_.max_rate <= 0 || n == 0) return;
  // No credit piles up while the queue is idle beyond one full block.
  const auto per_letter = std::chrono::duration<double>(1.0 / o_.max_rate);
  const auto earliest =
      Clock::now() - std::chrono::duration_cast<Clock::duration>(
                         per_letter * static_cast<double>(std::max<size_t>(o_.block_max, 1)));
  next_allowed_ = std::max(next_allowed_, earliest) +
                  std::chrono::duration_cast<Clock::duration>(per_letter * static_cast<double>(n));
}

// Stops, reloads, reconnects and the rate wait, between blocks.
Then Loop::before_next() {
  if (end_) return Then::kEnd;
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
      port_.wait(static_cast<int>(std::clamp<int64_t>(left.count(), 1, 200)),
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

// A block: decide each letter, claim the replays, record the decisions, move, record the
// results, settle; then report each letter in order.
Then Loop::handle_block(std::vector<Letter>& letters) {
  SharedTable::Guard pinned = reader_.acquire();
  const Table& table = pinned.table();
  if (shared_.generation() != generation_) {
    generation_ = shared_.generation();
    parser_ = make_parser_(table);
  }
  std::vector<InBlock> block;
  block.reserve(letters.size());
  if (o_.plan != nullptr) o_.plan->begin_block();
  for (const Letter& letter : letters) {
    ++stats_->received;
    if (!letter.refuse_peek.empty()) {
      stop(letter.refuse_peek, 2);
      break;  // this letter returns unsettled, as every one a dry run saw
    }
    InBlock& f = block.emplace_back();
    f.letter = &letter;
    f.b.letter = &letter.dead;
    f.b.ordinal = stats_->received;
    f.b.step = redrive_.decide(table, *parser_, letter.dead,
                               [&](const Input* input) { return accept(letter, table, input); });
    // Before the next decide: the step's input is valid until then.
    if (o_.plan != nullptr) o_.plan->place(table, letter.dead, f.b.step);
  }
  if (block.empty()) return Then::kEnd;
  at("decided");
  std::vector<BlockLetter*> claims;
  for (InBlock& f : block) claims.push_back(&f.b);
  if (o_.plan != nullptr) {
    if (const std::string why = o_.plan->classify(table, claims); !why.empty()) {
      stop(why, 2);
      return Then::kEnd;  // nothing claimed: the letters are unsettled and return to the queue
    }
  }
  if (const std::string error = redrive_.claim(table, claims); !error.empty()) {
    stop(error, 2);
    return Then::kEnd;  // nothing claimed: the letters are unsettled and return to the queue
  }
  at("claimed");
  sort_out(table, block);
  if (o_.plan != nullptr) {
    for (size_t i = 0; i < block.size(); ++i) block[i].r.plan = o_.plan->state(i);
  }
  std::vector<BlockLetter*> acting;
  for (InBlock& f : block) {
    if (f.acts) acting.push_back(&f.b);
  }
  if (!acting.empty()) {
    if (const std::string why = redrive_.record_decisions(table, acting); !why.empty()) {
      stop("cannot write the audit log: " + why, 2);
      return Then::kEnd;  // unsettled: they return; a claim made stays `claimed`
    }
    at("decisions_recorded");
    move_block(table, block);
    std::vector<BlockLetter*> recording;
    for (InBlock& f : block) {
      if (f.acts && !f.b.outcome.empty()) recording.push_back(&f.b);
    }
    Redrive::BlockProgress progress;
    if (o_.plan != nullptr) {
      std::vector<bool> settling;
      for (const InBlock& f : block) settling.push_back(f.settle);
      progress = o_.plan->progress(claims, settling);
    }
    if (const std::string why = redrive_.record_outcomes(recording, std::move(progress));
        !why.empty()) {
      stop("cannot record the outcome: " + why, 2);
      return Then::kEnd;  // unsettled: on redelivery the ledger says what happened
    }
    at("recorded");
    settle_block(block);
  }
  const InBlock* last_replay = nullptr;
  for (InBlock& f : block) {
    if (f.report && hooks_.letter) hooks_.letter(f.r);
    if (f.settle && f.b.step.action == Action::kRepublish) last_replay = &f;
  }
  pace(block.size());
  if (o_.max_target_depth && last_replay != nullptr && !end_) {
    if (const std::optional<Port::TargetDepth> depth =
            port_.replay_target_depth(*last_replay->letter);
        depth && depth->depth > *o_.max_target_depth) {
      stop("queue '" + depth->name + "' holds " + std::to_string(depth->depth) +
               " messages, more than --max-target-depth " + std::to_string(*o_.max_target_depth),
           0);
    }
  }
  for (const InBlock& f : block) {
    if (f.wanted && f.settle) stop("handled message " + *o_.message_id, 0);
  }
  if (o_.plan != nullptr && o_.plan->capped()) {
    stop("the plan's cap is reached; the letters left are in " + port_.queue(), 0);
  }
  back_off_after_nacks();
  return end_ ? Then::kEnd : Then::kNext;
}

void Loop::back_off_after_nacks() {
  if (nacked_ == 0) {
    nack_wait_ms_ = 0;
    nack_waited_ms_ = 0;
    return;
  }
  const uint64_t refused = std::exchange(nacked_, 0);
  if (end_) return;
  nack_wait_ms_ = nack_wait_ms_ == 0 ? 500 : std::min(nack_wait_ms_ * 2, 8000);
  if (nack_waited_ms_ + nack_wait_ms_ > int64_t{o_.reconnect_for_s} * 1000) {
    stop("the broker kept refusing publishes (nacks) for " +
             std::to_string(nack_waited_ms_ / 1000) + " s (--reconnect-for " +
             std::to_string(o_.reconnect_for_s) + "); the refused letters are in " + port_.queue() +
             " as they were",
         2);
    return;
  }
  note("the broker refused " + plural(refused, "publish", "publishes") +
       " (nack): those letters return to " + port_.queue() + "; waiting " +
       std::to_string(nack_wait_ms_) + " ms");
  nack_waited_ms_ += nack_wait_ms_;
  if (nack_wait_ms_ >= 2000 && o_.apply) {
    // Found on a cluster (RabbitMQ 3.10): a connection made while a quorum queue's leader was
    // lost kept having its publishes to that queue refused long after the other gates' went
    // through. From the third refused block on, the connections are made anew (at the next
    // node), after the wait.
    note("reconnecting: the refusals may be this connection's, stuck on a lost queue leader");
    port_.close();
  }
  for (int left = nack_wait_ms_; left > 0 && !(hooks_.stop_requested && hooks_.stop_requested());
       left -= 200) {
    port_.wait(std::min(left, 200));
  }
}

void Loop::sort_out(const Table& table, std::vector<InBlock>& block) {
  for (InBlock& f : block) {
    const Letter& letter = *f.letter;
    LetterStep& step = f.b.step;
    LetterReport& r = f.r;
    r.ordinal = f.b.ordinal;
    r.message_id = letter.dead.message_id;
    r.key = step.key;
    r.dry_run = !o_.apply && !letter.must_move;
    if (step.kind == LetterStep::Kind::kSkip) {
      ++stats_->skipped;
      ++kept_unacked_;
      if (!step.rule.empty()) {
        // Passed over by a plan guard (a filter's skip has no rule): said, never touched.
        r.rule = step.rule;
        r.reason = step.reason;
        r.action = "leave";
        r.outcome = "not touched: " + step.reason;
        f.report = true;
      }
      if (const std::string cost = port_.pass_over_cost(); !cost.empty() && o_.message_id) {
        // Searching on would pass over (and so return) letter after letter, each paying the
        // cost: stop at the first one that is not the message asked for.
        stop("refusing to search " + port_.queue() + " for message " + *o_.message_id + ": " +
                 cost + ", and the letter at its head is " +
                 letter.dead.message_id.value_or("(no message id)"),
             1);
      }
      continue;  // stays unsettled: not seen again in this run
    }
    // A letter held for its last attempt during a --message-id search may be another one.
    f.wanted = o_.message_id && letter.dead.message_id == o_.message_id;
    if (f.wanted) found_message_ = true;
    if (step.kind == LetterStep::Kind::kStop) {
      stop(step.error, 2);
      continue;  // the letter stays unsettled and returns to the queue
    }
    r.verb = std::string(table.verb_name(step.verb));
    r.effect = effect_name(table.verb_effect(step.verb));
    r.rule = step.rule;
    r.reason = step.reason;
    if (!step.readable && letter.dead.hold_rule.empty()) ++stats_->unreadable;
    r.action =
        step.kind == LetterStep::Kind::kAckOnly ? "ack" : std::string(action_name(step.action));
    if (r.action != "ack") r.target = port_.target(letter, step.action);
    f.report = true;
    if (step.kind == LetterStep::Kind::kAct && step.action != Action::kRepublish) {
      if (std::optional<std::string> left = port_.refuse_move(letter, step.action)) {
        // A park or hold place that is where the letter died hands a `never` letter back to the
        // consumer that failed it: a replay the policy refused. That letter alone stays where
        // it is, unsettled like a skipped one (no claim was made for a park or hold).
        r.outcome = std::move(*left);
        r.action = "leave";
        ++stats_->left;
        ++kept_unacked_;
        if (o_.message_id) stop("left message " + *o_.message_id + " in " + port_.queue(), 1);
        continue;
      }
    }
    if (!o_.apply && !letter.must_move) {
      r.outcome = "dry run: nothing published, claimed or acked";
      ++kept_unacked_;
      ++stats_->handled;
      ++stats_->per_verb[step.verb];
      if (f.wanted) stop("found message " + *o_.message_id, 0);
      continue;
    }
    f.acts = true;
  }
}

void Loop::move_block(const Table& table, std::vector<InBlock>& block) {
  std::vector<Move> moves;
  std::vector<InBlock*> moving;
  for (InBlock& f : block) {
    if (!f.acts) continue;
    const LetterStep& step = f.b.step;
    if (step.kind == LetterStep::Kind::kAckOnly) {
      f.r.outcome = "acked without publishing: " + step.reason;
      f.b.outcome = f.r.outcome;
      f.b.confirmed = true;
      f.settle = true;
      continue;
    }
    moves.push_back({f.letter, step.action, step.copy_replay, f.r.verb, step.rule, step.reason});
    moving.push_back(&f);
  }
  if (moves.empty()) return;
  const std::vector<MoveAnswer> answers = port_.act(moves);
  bool any_done = false, last_attempt = false;
  for (const MoveAnswer& a : answers)
    any_done = any_done || a.outcome == MoveAnswer::Outcome::kDone;
  if (any_done) at("confirmed");
  std::vector<InBlock*> returned;
  for (size_t i = 0; i < moving.size(); ++i) {
    answered(table, *moving[i], answers[i], &returned);
    last_attempt = last_attempt || (moving[i]->letter->must_move && moving[i]->settle);
  }
  // The hold copy of a letter on its last attempt is confirmed; its original is not acked.
  if (last_attempt) at("held_last_attempt");
  hold_returned(table, returned);
}

// What one move's answer makes of its letter: settled (moved), a returned replay (moved to the
// hold place next), or not settled (it goes back to its queue).
void Loop::answered(const Table& /*table*/, InBlock& f, const MoveAnswer& answer,
                    std::vector<InBlock*>* returned) {
  LetterReport& r = f.r;
  const LetterStep& step = f.b.step;
  if (answer.outcome == MoveAnswer::Outcome::kDone) {
    f.b.confirmed = true;
    f.settle = true;
    r.outcome = "published to " + r.target + ", " + answer.detail;
  } else if (answer.unroutable && step.action == Action::kRepublish) {
    r.outcome =
        "the replay to " + r.target + " was returned (" + answer.detail + "): no queue took it";
    returned->push_back(&f);
    return;
  } else {
    // Refused, no answer in time, connection lost: the letter is not settled. It goes back to
    // the dead-letter queue as it was; on redelivery the ledger's claim (not `confirmed`) holds
    // it as outcome unknown, so a move that did reach the broker is never repeated.
    r.outcome = "not acked: the publish to " + r.target + " was " + answer.result +
                (answer.detail.empty() ? "" : " (" + answer.detail + ")");
    port_.give_back(*f.letter);
    if (answer.lost && !port_.up()) {
      r.outcome += "; the letter returns to its queue with the connection";
    } else if (answer.outcome == MoveAnswer::Outcome::kNotDone) {
      // The broker refused to store it (a nack: a full queue, a quorum queue without a leader):
      // that letter alone returns; the rest of the block goes on, and the next block waits.
      r.outcome += "; the letter returns to its queue";
      ++nacked_;
    } else {
      stop(r.outcome, 2);
    }
  }
  // The result entry says what was done, where to, and why (the decision entry has the rule).
  f.b.outcome = r.outcome + (r.reason.empty() ? "" : "; reason: " + r.reason);
}

// Nothing took these replays: each letter goes to the hold place instead, saying so. Its claim
// stays `claimed` (an operator releases it once the target exists); the decision entry's result
// says both what happened to the replay and where the letter went.
void Loop::hold_returned(const Table& table, const std::vector<InBlock*>& returned) {
  if (returned.empty()) return;
  const uint32_t held_verb = table.default_verb();
  std::vector<Move> holds;
  for (InBlock* f : returned) {
    LetterStep& step = f->b.step;
    step.action = Action::kHold;
    step.rule = "gate:unroutable";
    step.reason = f->r.outcome;
    holds.push_back({f->letter, Action::kHold, 0, std::string(table.verb_name(held_verb)),
                     step.rule, step.reason});
  }
  const std::vector<MoveAnswer> moved = port_.act(holds);
  for (size_t i = 0; i < returned.size(); ++i) {
    InBlock& f = *returned[i];
    LetterReport& r = f.r;
    const std::string returned_text = r.outcome;
    f.b.confirmed = false;  // not a confirmed replay: the ledger keeps the claim as it is
    if (moved[i].outcome != MoveAnswer::Outcome::kDone) {
      r.outcome = returned_text + "; the move to " + port_.hold_name() + " was " + moved[i].result +
                  " " + moved[i].detail;
      f.b.outcome = r.outcome;
      stop("cannot move an unroutable replay to " + port_.hold_name() + ": " + moved[i].result +
               " " + moved[i].detail,
           2);
      continue;  // unsettled: it returns to its queue
    }
    f.b.step.verb = held_verb;
    r.action = "hold";
    r.verb = std::string(table.verb_name(held_verb));
    r.effect = effect_name(table.verb_effect(held_verb));
    r.rule = f.b.step.rule;
    r.reason = f.b.step.reason;
    r.target = port_.target(*f.letter, Action::kHold);
    r.outcome = returned_text + "; moved to " + r.target + ", " + moved[i].detail;
    f.b.outcome = r.outcome + "; reason: " + r.reason;
    f.settle = true;
  }
}

void Loop::settle_block(std::vector<InBlock>& block) {
  std::vector<const Letter*> settling;
  std::vector<InBlock*> whose;
  for (InBlock& f : block) {
    if (!f.settle) continue;
    settling.push_back(f.letter);
    whose.push_back(&f);
  }
  if (settling.empty()) return;
  const std::vector<std::string> settled = port_.settle(settling);
  for (size_t i = 0; i < whose.size(); ++i) {
    InBlock& f = *whose[i];
    if (!settled[i].empty()) {
      f.settle = false;
      // The connection went down between the record and the settle: the letter is redelivered
      // after the reconnect, and the ledger (confirmed, this message) settles it without a move.
      if (!port_.up()) {
        f.r.outcome +=
            "; the ack was lost with the connection: the letter returns, and the "
            "ledger acks it on redelivery without publishing again";
        continue;
      }
      stop(settled[i], 2);
      continue;
    }
    count(f.b.step);
    if (f.letter->dead.replays.value_or(0) >= 1) ++stats_->died_again;
  }
  at("acked");
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
    const Port::Next next = port_.next(block_size(), 200, o_.block_linger_ms, &letters, &error);
    progress(false);
    if (next == Port::Next::kTimeout) {
      port_.wait(1);  // heartbeats while the queue is idle
      if (!o_.follow && Clock::now() - idle_since_ >= std::chrono::milliseconds(o_.idle_exit_ms)) {
        stop("no letter for " + std::to_string(o_.idle_exit_ms) + " ms: the queue is drained" +
                 std::string(kept_unacked_ > 0 ? " (of what this run may take)" : ""),
             0);
        stats_->drained = true;
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
    if (handle_block(letters) == Then::kEnd) break;
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
