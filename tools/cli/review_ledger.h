// `replaygate review --ledger`: a create decision is claimed in the durable replay ledger by the
// policy's idempotency key (for the generation-recovery policy, its operation id) before it is
// recorded or printed, through the gate's LedgerStage, exactly as `decide --ledger` claims (one
// claim logic, pipeline/ledger_stage.h). The one entry point is claim_review().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/ledger_stage.h"
#include "review/inputs.h"
#include "runtime/table.h"

namespace replaygate::cli {

struct ReviewLedgerOptions {
  std::string url;                // --ledger: a SQLite PATH or a postgresql:// URL
  std::string scope = "default";  // --ledger-scope
  bool dry_run = false;           // a review without --confirm consults the ledger, claims nothing
};

struct ReviewClaim {
  bool granted = false;   // the decision stands (claimed, or with dry_run: not claimed by anyone)
  bool claimed = false;   // a claim was committed (write-ahead): the grant
  std::string key_input;  // the idempotency key's input name, "" when the policy declares none
  std::string rule,
      reason;           // not granted: ledger:already_replayed, ledger:no_key, ledger:unavailable
  bool failed = false;  // the ledger could not be opened, read or written: exit 2
  std::string ledger;   // the ledger as described in messages (path or host)
  // The stage that holds the claim; call mark_recorded() once the audit entry is written.
  std::unique_ptr<pipeline::LedgerStage> stage;
  // Marks the claim `recorded` (best effort: a failure leaves it `claimed`, still held, and warns).
  void mark_recorded() {
    if (stage != nullptr) stage->commit();
  }
};

// Claims the key of a create decision `d` of `table`: the value the review used (`uses`, from
// map_review_inputs()) for the table's idempotency_key_field(). A missing or non-string key is
// ledger:no_key (never replayed without a durable claim); a key another claim holds is
// ledger:already_replayed with a reason naming when and where it was first replayed; an error of
// the ledger is ledger:unavailable with `failed` set. `message_id` is recorded with the claim.
// Never throws for ledger errors (they are data here); not thread-safe.
ReviewClaim claim_review(const Table& table, const Decision& d,
                         const std::vector<review::InputUse>& uses, const std::string& message_id,
                         const ReviewLedgerOptions& options);

}  // namespace replaygate::cli
