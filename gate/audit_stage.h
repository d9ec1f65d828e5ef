// The audit log as a gate stage (gate.h): every verdict becomes a decision entry (audit/entry.h)
// and commit() appends the block under one lock with one write and one fsync
// (audit::append_batch), before the caller prints the lines.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gate/gate.h"

namespace replaygate::gate {

class AuditStage : public Stage {
 public:
  // Appends to the log at `path`, entries by `operator_name`, naming `source` (the input's name).
  AuditStage(std::string path, std::string operator_name, std::string source);

  void add(const Table& table, const Verdict& verdict) override;
  // Appends what was added. Prints what the append removed from the log (a torn tail, empty lines:
  // audit::removed_tail_note) on stderr. False: nothing of this block is recorded (error()).
  bool commit() override;
  const std::string& error() const override { return error_; }

  uint64_t recorded() const { return recorded_; }  // verdicts in the log (the first ones)
  uint64_t last_seq() const { return last_seq_; }  // the seq of the last of them

 private:
  std::string path_, operator_name_, source_;
  std::string checksum_hex_;  // of the table the entries name
  const Table* checksum_of_ = nullptr;
  std::vector<nlohmann::json> pending_;
  std::string error_;
  uint64_t recorded_ = 0, last_seq_ = 0;
};

}  // namespace replaygate::gate
