// The replay ledger as the gate's Claimer and a Stage (see ledger_stage.h).
#include "gate/ledger_stage.h"

#include <unistd.h>

#include <cstdio>

namespace replaygate::gate {
namespace {

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

}  // namespace

LedgerStage::LedgerStage(Options options) : options_(std::move(options)) {
  if (options_.worker.empty()) options_.worker = default_worker();
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

Claimer::Answer LedgerStage::unavailable() {
  Answer a;
  a.rule = "ledger:unavailable";
  a.reason = "the replay ledger is unavailable (" + failure_ +
             "); held so that no letter is replayed without a durable claim";
  return a;
}

Claimer::Answer LedgerStage::claim(const Table& table, const Pending& record,
                                   const std::string_view* key, const inputs::RecordMeta& meta) {
  if (key == nullptr || key->empty()) {
    Answer a;
    a.rule = "ledger:no_key";
    a.reason =
        "the letter has no idempotency key, so the replay ledger cannot make its replay "
        "once-only";
    return a;
  }
  if (failed_ || ledger_ == nullptr) return unavailable();
  if (options_.dry_run) {
    ledger::Result<std::vector<std::optional<ledger::Record>>> found =
        ledger_->lookup({std::string(*key)});
    if (!found) {
      failed_ = true;
      failure_ = found.error().message;
      return unavailable();
    }
    Answer a;
    if (found->at(0)) {
      ++held_;
      a.rule = "ledger:already_replayed";
      a.reason = "idempotency key already replayed at " + first_replay(*found->at(0));
      return a;
    }
    a.granted = true;
    a.claimed = false;
    return a;
  }
  ledger::Claim c;
  c.key = std::string(*key);
  c.policy = std::string(table.policy_id());
  c.revision = table.revision();
  c.table_checksum = table.checksum_hex();
  c.rule = std::string(table.rule_name(record.decision));
  if (meta.has_message_id) c.message_id = std::string(meta.message_id);
  c.worker = options_.worker;
  ledger::Result<std::vector<ledger::ClaimOutcome>> outcome = ledger_->claim_batch({c});
  if (!outcome) {
    failed_ = true;
    failure_ = outcome.error().message;
    return unavailable();
  }
  const ledger::ClaimOutcome& o = outcome->at(0);
  Answer a;
  if (!o.won) {
    ++held_;
    a.rule = "ledger:already_replayed";
    a.reason = "idempotency key already replayed at " + first_replay(o.holder);
    return a;
  }
  ++claims_;
  if (options_.mark_recorded) won_.emplace_back(o.holder.key, o.holder.generation);
  a.granted = true;
  a.claimed = true;
  a.generation = o.holder.generation;
  return a;
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

}  // namespace replaygate::gate
