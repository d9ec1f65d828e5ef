// The durable replay ledger (ledger/ledger.h, docs/ledger.md) in the gate: "replay_once" means once
// across runs, processes and hosts.
//
// As the gate's Claimer it is asked, for each create verb the replay guard let through, whether the
// record may be replayed: it claims the record's idempotency key in the ledger, committed durably
// before the record's line is rendered (write-ahead: with a ledger, a printed create verb is the
// grant). A record whose key another claim holds gets the default with rule
// `ledger:already_replayed` and a reason naming when and where the key was first replayed; one
// without a key gets `ledger:no_key`; when the ledger cannot be opened or written, every would-be
// replay gets `ledger:unavailable` (fail closed: the caller exits 2). A dry run looks keys up and
// claims nothing.
//
// As a Stage, added after the audit stage, its commit() marks the block's claims `recorded` once
// their audit entries are written (mark_recorded).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gate/gate.h"
#include "ledger/ledger.h"

namespace replaygate::gate {

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

  // Opens the ledger. False: it could not be (error()); every would-be replay is then held as
  // ledger:unavailable.
  bool open();

  Answer claim(const Table& table, const Pending& record, const std::string_view* key,
               const inputs::RecordMeta& meta) override;
  void add(const Table&, const Verdict&) override {}
  bool commit() override;
  const std::string& error() const override { return error_; }

  // A claim or lookup failed (or the ledger could not be opened): the run must exit 2.
  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  uint64_t claims() const { return claims_; }  // claims won
  uint64_t held() const { return held_; }      // already replayed
  std::string describe() const;

 private:
  Answer unavailable();

  Options options_;
  std::unique_ptr<ledger::Ledger> ledger_;
  std::vector<std::pair<std::string, std::int64_t>> won_;  // since the last commit
  bool failed_ = false;
  std::string failure_, error_;
  uint64_t claims_ = 0, held_ = 0;
};

}  // namespace replaygate::gate
