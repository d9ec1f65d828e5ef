// The audit log as a gate stage (gate.h): every verdict becomes a decision entry (audit/entry.h)
// and commit() appends the block under one lock with one write and one fsync
// (audit::append_batch), before the caller prints the lines. A command that decides one message on
// its own (review) builds its entry with decision_entry() and appends it through the same stage
// (add_entry()), so every decision entry is written one way.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "audit/checkpoint.h"
#include "audit/entry.h"
#include "pipeline/gate.h"

namespace replaygate::pipeline {

// The part of a decision entry every appender fills alike: the verb (`action`, `effect`), the
// rule the decision names, the policy and its revision, and the table (`table_checksum_hex`:
// table.checksum_hex(), which a caller may cache). The caller adds who acted and what was decided.
audit::DecisionEntry decision_entry(const Table& table, uint32_t verb, std::string_view rule,
                                    std::string table_checksum_hex);

class AuditStage : public Stage {
 public:
  // Appends to the log at `path`, entries by `operator_name`, naming `source` (the input's name).
  AuditStage(std::string path, std::string operator_name, std::string source);

  void add(const Table& table, const Verdict& verdict) override;
  // Adds an entry a caller built for one message outside a stream (review: decision_entry() plus
  // its own message fields), written at the next commit(); its operator is this stage's.
  void add_entry(audit::DecisionEntry entry);
  // Signs what commit() appends with checkpoint entries (audit/checkpoint.h); `signer` (not
  // owned) must outlive the stage. nullptr (the default): no checkpoints.
  void set_signer(const audit::CheckpointSigner* signer) { signer_ = signer; }
  // Appends what was added. Prints what the append removed from the log (a torn tail, empty lines:
  // audit::removed_tail_note) on stderr. False: nothing of this block is recorded (error()).
  bool commit() override;
  const std::string& error() const override { return error_; }

  uint64_t recorded() const { return recorded_; }  // verdicts in the log (the first ones)
  uint64_t last_seq() const { return last_seq_; }  // the seq of the last of them
  const std::string& last_hash() const { return last_hash_; }  // and its hash

 private:
  std::string path_, operator_name_, source_;
  std::string checksum_hex_;  // of the table the entries name
  const Table* checksum_of_ = nullptr;
  const audit::CheckpointSigner* signer_ = nullptr;
  std::vector<nlohmann::json> pending_;
  std::string error_;
  std::string last_hash_;
  uint64_t recorded_ = 0, last_seq_ = 0;
};

}  // namespace replaygate::pipeline
