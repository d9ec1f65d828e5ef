// The typed reader of an audit log: its lines parsed back into the entries the writers wrote
// (entry.h: decision, result and ledger entries; checkpoint.h: checkpoints; repair entries), one
// place for every caller that reads what a log says (review's repeated-create warning, the
// ledger's trail and check, later the console) rather than whether it verifies (audit_log.h).
//
// In: the log's bytes. Out: one ReadEntry per line that is a JSON object, in log order, with its
// line number, kind and the typed view of its kind. Reading is lenient on purpose: it is not
// verification (verify_bytes() is), so a field of the wrong type reads as absent (an empty string,
// 0, null or nullopt), a line that is not a JSON object is skipped, and so is one nested deeper
// than kMaxJsonDepth (a repaired log keeps its broken lines; none is ever handed to the parser
// unbounded). Callers that must trust what they read verify the bytes first.
//
// Thread safety: an EntryReader is used by one thread; the functions keep no state.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "audit/checkpoint.h"
#include "audit/entry.h"

namespace replaygate::audit {

struct ReadEntry {
  enum class Kind { kDecision, kResult, kLedger, kCheckpoint, kRepair, kOther };
  Kind kind = Kind::kOther;  // kOther: no `kind`, or one no writer writes
  uint64_t line = 0;         // 1-based line of the log
  std::optional<uint64_t> seq;
  // The typed view of the entry's kind (the others stay default). A decision's message_id,
  // operation_id and record_revision are kept as written (null when absent); `result.decision`
  // is 0 when the result names no decision.
  DecisionEntry decision;
  ResultEntry result;
  LedgerEntry ledger;
  CheckpointSeen checkpoint;  // line, seq, key_id, time, prev, chain_digest, signature
  nlohmann::json object;      // the whole line as read, for fields no view carries
};

// Reads `bytes` (not owned: they must outlive the reader) line by line.
class EntryReader {
 public:
  enum class Lines {
    kComplete,  // only lines ended by '\n': bytes after the last one are a torn tail
    kAll,       // the last, unterminated line too (a reader that does not verify first)
  };
  explicit EntryReader(std::string_view bytes, Lines lines = Lines::kComplete)
      : bytes_(bytes), lines_(lines) {}

  // The next line that is an entry (a JSON object), false at the end.
  bool next(ReadEntry* out);

 private:
  std::string_view bytes_;
  Lines lines_;
  size_t from_ = 0;
  uint64_t line_ = 0;
};

// One line as an entry; false when it is not a JSON object (or nests too deep). `line` is set as
// given.
bool read_entry(std::string_view text, uint64_t line, ReadEntry* out);

// The typed views on their own, from an entry object (lenient, as above).
DecisionEntry decision_from_json(const nlohmann::json& object);
ResultEntry result_from_json(const nlohmann::json& object);
LedgerEntry ledger_from_json(const nlohmann::json& object);

}  // namespace replaygate::audit
