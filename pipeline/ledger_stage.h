// The durable replay ledger (ledger/ledger.h, docs/ledger.md) in the gate: "replay_once" means once
// across runs, processes and hosts.
//
// As the gate's Claimer it is asked, per block of records (Gate::judge_block), about every create
// verb the replay guard let through: it claims all their idempotency keys in ONE claim_batch
// transaction, committed durably before any line of the block is rendered (write-ahead: with a
// ledger, a printed create verb is the grant). A record whose key another claim holds gets the
// default with rule `ledger:already_replayed` and a reason naming when and where the key was first
// replayed; one without a key gets `ledger:no_key`; one whose key the ledger cannot hold (not 1 to
// 4096 bytes of UTF-8 without NUL, ledger::key_problem) gets `ledger:invalid_key`, alone; when the
// ledger cannot be opened or written, every would-be replay of that block and of every later one
// gets `ledger:unavailable` (fail closed: the caller exits 2; a failed claim_batch claims nothing
// of its block). A dry run looks the block's keys up in one `lookup` and claims nothing.
//
// As a Stage, added after the audit stage, its commit() marks the claims won since the last commit
// `recorded` in one mark_batch, once their audit entries are written (mark_recorded).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ledger/ledger.h"
#include "pipeline/gate.h"

namespace replaygate::pipeline {

// A claim's worker when none is given: "HOST:PID".
std::string default_worker();
// When and where a key was first replayed, for a hold's reason: "2026-12-02T06:52:16.123456Z by
// host:1234 (message m-1, rule r, policy p revision 3)".
std::string first_replay(const ledger::Record& holder);

class LedgerStage : public Stage, public Claimer {
 public:
  struct Options {
    std::string url;  // open_ledger()'s URL
    std::string scope = "default";
    bool dry_run = false;        // look up, claim nothing
    bool mark_recorded = false;  // commit() marks the claims `recorded` (after the audit stage)
    std::string worker;          // the claims' worker ("" : host:pid)
  };
  explicit LedgerStage(Options options);
  // On a ledger opened by the caller (tests: a ledger that fails on cue); options_.url is unused.
  LedgerStage(Options options, std::unique_ptr<ledger::Ledger> ledger);

  // Opens the ledger. False: it could not be (error()); every would-be replay is then held as
  // ledger:unavailable.
  bool open();

  // One claim_batch (a dry run: one lookup) for every keyed request of the block; see above.
  void claim_block(const Table& table, const std::vector<Request>& requests,
                   std::vector<Answer>& answers) override;
  void add(const Table&, const Verdict&) override {}
  bool commit() override;
  const std::string& error() const override { return error_; }

  // A claim or lookup failed (or the ledger could not be opened): the run must exit 2.
  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  uint64_t claims() const { return claims_; }  // claims won
  uint64_t held() const { return held_; }      // already replayed
  uint64_t blocks() const { return blocks_; }  // claim_batch (dry run: lookup) calls made
  uint64_t invalid_keys() const { return invalid_keys_; }  // held as ledger:invalid_key
  std::string describe() const;

 private:
  void unavailable(Answer& a) const;
  static void hold(Answer& a, std::string rule, std::string reason);

  Options options_;
  std::unique_ptr<ledger::Ledger> ledger_;
  std::vector<std::pair<std::string, std::int64_t>> won_;  // since the last commit
  bool failed_ = false;
  std::string failure_, error_;
  uint64_t claims_ = 0, held_ = 0, blocks_ = 0, invalid_keys_ = 0;
  // Reused per block: the claims (or the dry run's keys) and which request each belongs to.
  std::vector<ledger::Claim> claims_batch_;
  std::vector<std::string> keys_;
  std::vector<size_t> asked_;
  const Table* checksum_of_ = nullptr;  // the table checksum_hex_ is of
  std::string checksum_hex_;
};

}  // namespace replaygate::pipeline
