// The replay ledger as the gate's Claimer and a Stage (see ledger_stage.h).
#include "pipeline/ledger_stage.h"

#include <unistd.h>

#include <cstdio>

namespace replaygate::pipeline {
std::string default_worker() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] != '\0' ? host : "localhost") + ":" + std::to_string(::getpid());
}

// "2026-12-02T06:52:16.123456Z by host:1234 (message m-1, rule r, policy p revision 3)".
std::string first_replay(const ledger::Record& holder) {
  std::string text = ledger::format_time(holder.claimed_at) + " by " + holder.worker;
  text += " (";
  if (!holder.message_id.empty()) text += "message " + holder.message_id + ", ";
  text += "rule " + holder.rule + ", policy " + holder.policy + " revision " +
          std::to_string(holder.revision) + ")";
  return text;
}

LedgerStage::LedgerStage(Options options) : options_(std::move(options)) {
  if (options_.worker.empty()) options_.worker = default_worker();
}

LedgerStage::LedgerStage(Options options, std::unique_ptr<ledger::Ledger> ledger)
    : LedgerStage(std::move(options)) {
  ledger_ = std::move(ledger);
}

std::string LedgerStage::describe() const {
  return ledger_ != nullptr ? ledger_->describe() : options_.url;
}

bool LedgerStage::open() {
  ledger::Options lo;
  lo.scope = options_.scope;
  ledger::Result<std::unique_ptr<ledger::Ledger>> opened = ledger::open_ledger(options_.url, lo);
  if (!opened) {
    failed_ = true;
    failure_ = "cannot open the replay ledger " + options_.url + ": " + opened.error().message;
    return false;
  }
  ledger_ = std::move(opened.value());
  return true;
}

void LedgerStage::hold(Answer& a, std::string rule, std::string reason) {
  a.granted = false;
  a.claimed = false;
  a.rule = std::move(rule);
  a.reason = std::move(reason);
}

void LedgerStage::unavailable(Answer& a) const {
  hold(a, "ledger:unavailable",
       "the replay ledger is unavailable (" + failure_ +
           "); held so that no letter is replayed without a durable claim");
}

void LedgerStage::claim_block(const Table& table, const std::vector<Request>& requests,
                              std::vector<Answer>& answers) {
  answers.resize(requests.size());
  asked_.clear();
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    if (!r.keyed || r.key.empty()) {
      hold(answers[i], "ledger:no_key",
           "the letter has no idempotency key, so the replay ledger cannot make its replay "
           "once-only");
    } else if (const std::string why = ledger::key_problem(r.key); !why.empty()) {
      // Alone: in the block's claim_batch it would fail every claim of this and later blocks.
      ++invalid_keys_;
      hold(answers[i], "ledger:invalid_key",
           "the idempotency key " + why + ", so the replay ledger cannot record its replay");
    } else if (failed_ || ledger_ == nullptr) {
      unavailable(answers[i]);
    } else {
      asked_.push_back(i);
    }
  }
  if (asked_.empty()) return;
  ++blocks_;
  if (options_.dry_run) {
    keys_.resize(asked_.size());
    for (size_t n = 0; n < asked_.size(); ++n) keys_[n].assign(requests[asked_[n]].key);
    ledger::Result<std::vector<std::optional<ledger::Record>>> found = ledger_->lookup(keys_);
    if (!found) {
      failed_ = true;
      failure_ = found.error().message;
      for (size_t i : asked_) unavailable(answers[i]);
      return;
    }
    for (size_t n = 0; n < asked_.size(); ++n) {
      Answer& a = answers[asked_[n]];
      if (const std::optional<ledger::Record>& holder = found->at(n)) {
        ++held_;
        hold(a, "ledger:already_replayed",
             "idempotency key already replayed at " + first_replay(*holder));
      } else {
        a.granted = true;
        a.claimed = false;
      }
    }
    return;
  }
  if (checksum_of_ != &table) {
    checksum_hex_ = table.checksum_hex();
    checksum_of_ = &table;
  }
  claims_batch_.resize(asked_.size());
  for (size_t n = 0; n < asked_.size(); ++n) {
    const Request& r = requests[asked_[n]];
    ledger::Claim& c = claims_batch_[n];
    c.key.assign(r.key);
    c.policy.assign(table.policy_id());
    c.revision = table.revision();
    c.table_checksum = checksum_hex_;
    c.rule.assign(table.rule_name(r.record->decision));
    c.message_id.assign(r.meta.has_message_id ? r.meta.message_id : std::string_view());
    c.worker = options_.worker;
  }
  ledger::Result<std::vector<ledger::ClaimOutcome>> outcome = ledger_->claim_batch(claims_batch_);
  if (!outcome) {
    // Nothing of the block is claimed: none of it may be replayed.
    failed_ = true;
    failure_ = outcome.error().message;
    for (size_t i : asked_) unavailable(answers[i]);
    return;
  }
  for (size_t n = 0; n < asked_.size(); ++n) {
    const ledger::ClaimOutcome& o = outcome->at(n);
    Answer& a = answers[asked_[n]];
    if (!o.won) {
      ++held_;
      hold(a, "ledger:already_replayed",
           "idempotency key already replayed at " + first_replay(o.holder));
      continue;
    }
    ++claims_;
    if (options_.mark_recorded) won_.emplace_back(o.holder.key, o.holder.generation);
    a.granted = true;
    a.claimed = true;
    a.generation = o.holder.generation;
  }
}

bool LedgerStage::commit() {
  if (won_.empty() || ledger_ == nullptr) return true;
  // Called after the audit stage committed: the claims' entries are on record. A failed mark
  // leaves them `claimed` (still held: nothing fails open), so the block is still printed.
  const ledger::Status marked = ledger_->mark_batch(won_, ledger::State::kRecorded);
  if (!marked) {
    std::fprintf(stderr,
                 "replaygate: warning: cannot mark %zu claim(s) recorded in the replay ledger: %s; "
                 "they stay 'claimed' (still held)\n",
                 won_.size(), marked.error().message.c_str());
  }
  won_.clear();
  return true;
}

}  // namespace replaygate::pipeline
