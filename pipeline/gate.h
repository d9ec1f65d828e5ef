// The gate: the broker-independent decide pipeline, from one record to its decision line. The CLI's
// `decide` and the JSON Lines binding feed it records through one stream driver (stream.h); the
// live gate (redrive/redrive.h) takes its decision entry and stages one letter at a time. It owns
// no file, no stream and no broker.
//
//   record ─> parser (inputs/) ─> Input ─> table.decide() ─> replay guard ─> stages ─> decision
//   line
//              RecordParser                 SharedTable        ReplayGuard    Stage* DecisionText
//
// A record goes through in two steps, so that a caller can batch records and prefetch the guard's
// memory between them (as decide does, docs/benchmarks.md):
//   read()   (stage 1) parses one line, decides it on the pinned table and renders into the
//            batch what does not depend on the run: the line's prefix, or the whole line of an
//            unreadable record or an invalid input; hashes the idempotency key of a create verb;
//   judge()  (stage 2) puts the record before the replay guard (one replay per key, --max-replays,
//            --max-replayed-keys), appends its decision line to the output buffer and hands the
//            verdict to every stage.
// A Stage sits between decide and print: it sees every verdict whose line is buffered but not
// yet written, and commit() must make them durable before the caller writes the buffer. The audit
// log is one (AuditStage, audit_stage.h). With stages and no Claimer the gate works one record at
// a time (batch_size() is 1), so a verdict's metadata is the gate's copy of the record's own.
//
// A Claimer (the durable replay ledger, pipeline/ledger_stage.h) makes stage 2 work per block:
// batch_size() is Options::block_records, read() keeps each record's key and metadata in the
// batch, and judge_block() puts the whole batch before the replay guard, hands every create verb
// the guard let through to the Claimer as ONE request (one durable transaction), and only then
// renders the block's lines, in input order, and hands the verdicts to the stages. So no create
// line is in the output buffer (nor with any stage) before its claim is committed, and a block
// costs one commit however many claims it holds. The lines are the same bytes for any block size.
//
// The table comes from a SharedTable (runtime/reload.h): the gate pins the current table when it
// is made and on repin(); a consumer that runs for good calls repin() between records to pick up
// a reload (same fields and verbs: SharedTable refuses any other). decide pins once.
//
// Stage 1 on other threads (pipeline/read_pool.h, decide --threads): reading gates, one per worker
// thread, each with its own parser, read() blocks of records into batches that the judging gate
// then judges, in input order, on its one thread. A judging gate with stages is opened with
// Options::keep_records, so that stage 2 takes each record's metadata and key from its batch
// (its own parser never saw the record).
//
// Threads: a Gate, its parser and stages belong to one thread. read() touches the guard only
// through hash_of(), which reads nothing the guard ever changes, so reading gates on other threads
// may share the judging gate's guard while it judges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_buffer.h"
#include "inputs/records.h"
#include "pipeline/decision_line.h"
#include "pipeline/replay_guard.h"
#include "runtime/reload.h"
#include "runtime/table.h"

namespace replaygate::pipeline {

// One input decided on `table`: the decision of the gate's stage 1 (Gate::read) and of a command
// that decides one message on its own (review), which has no stream, no line and no replay guard
// (the guard holds a run's later records with the same key; one message has none).
inline Decision decide_one(const Table& table, const Input& input) { return table.decide(input); }

// One record's stage 1 without the text: `parser` reads `line` (padded as Gate::read's) into
// `input`, and a readable record is decided (decide_one). False: the record is unreadable
// (`problem` says why). Gate::read and the JSON Lines binding (rgj_decide_lines, which needs only
// the verb) both decide a record through it.
inline bool parse_and_decide(inputs::RecordParser& parser, const Table& table,
                             std::string_view line, Input& input, inputs::RecordMeta* meta,
                             std::string* problem, Decision* decision) {
  if (!parser.parse(line, input, meta, problem)) return false;
  *decision = decide_one(table, input);
  return true;
}

// Bytes a gate with a Claimer keeps in its batch's `kept` for stage 2 (the line and the parser's
// Input are gone by then).
struct KeptText {
  size_t at = 0, size = 0;
};

// One record between stage 1 and stage 2.
struct Pending {
  uint64_t line_number = 0;
  size_t begin = 0, end = 0;  // the record's text so far in its batch's `scratch`
  bool readable = false;
  bool create = false;  // a valid decision with a create-effect verb: the replay guard applies
  bool has_key = false;
  uint64_t key_hash = 0;
  Decision decision;
  // With a Claimer or keep_records only (else unset): the key and the metadata, in the batch's
  // `kept`. The key is kept for has_key (a create verb's), and with keep_records for every
  // readable record whose key is a string (kept_key), as the audit entry names it.
  KeptText key, message_id, body_hash;
  bool has_message_id = false, has_body_hash = false, kept_key = false;
};

// Records read and decided, waiting for stage 2, with their rendered text.
struct Batch {
  explicit Batch(size_t size) : records(size), scratch(size * 256) {}
  std::vector<Pending> records;
  size_t count = 0;
  ByteBuffer scratch;
  std::string kept;  // a Claimer's gate: the records' keys and metadata (Pending's KeptText)
  std::string_view text(KeptText t) const { return std::string_view(kept).substr(t.at, t.size); }
  // Empties the batch for the next records (its memory is kept).
  void clear() {
    count = 0;
    scratch.clear();
    kept.clear();
  }
};

// What happened to one record, as its decision line says it.
struct Verdict {
  const Pending* record = nullptr;
  uint32_t verb = 0;  // after the guard
  bool invalid = true;
  ReplayGuard::Outcome outcome = ReplayGuard::Outcome::kReplay;  // kReplay: the guard held nothing
  const inputs::RecordMeta* meta = nullptr;  // the record's metadata (message_id, body_hash)
  std::string_view held_by;                  // a Claimer's hold ("ledger:..."), or empty
  std::string_view key;                      // the record's idempotency key ("" when it has none)
  int64_t claim_generation = 0;              // the ledger claim this verdict won (0: none)
  // The rule the line names: "default", a rule id, the guard's "dump:..." hold or a Claimer's.
  std::string_view rule(const Table& table) const;
};

// A stage between decide and print (the audit log: AuditStage, audit_stage.h).
class Stage {
 public:
  virtual ~Stage() = default;
  // A verdict whose line is in the output buffer, not yet written.
  virtual void add(const Table& table, const Verdict& verdict) = 0;
  // Makes every verdict added since the last commit durable. False: they are not (the stage says
  // why, error()), the caller must drop their lines unprinted and stop.
  virtual bool commit() = 0;
  virtual const std::string& error() const = 0;
};

// A durable claim after the replay guard (the replay ledger, pipeline/ledger_stage.h): asked, per
// block of records (Gate::judge_block), about every create verb the guard let through, before any
// line of the block is rendered.
class Claimer {
 public:
  struct Answer {
    bool granted = false;
    bool claimed = false;    // granted: the line says "claimed": true (false: a dry run)
    int64_t generation = 0;  // claimed: the won claim's generation (for the audit entry)
    std::string rule;        // not granted: the hold's rule ("ledger:...") and reason
    std::string reason;
  };
  // One create verb of the block. Views into the batch: valid during claim_block() only.
  struct Request {
    const Pending* record = nullptr;
    bool keyed = false;       // the record has an idempotency key (a string; it may be empty)
    std::string_view key;     // keyed: its value
    inputs::RecordMeta meta;  // the record's metadata (message_id, body_hash)
  };
  virtual ~Claimer() = default;
  // Answers every request of one block, answers[i] for requests[i] (`answers` is resized; its
  // strings' memory is reused). Every grant must be durable when this returns (one transaction for
  // the block: a failure grants none of it). Never throws for a ledger failure: a request it
  // cannot grant is answered with a hold (rule and reason).
  virtual void claim_block(const Table& table, const std::vector<Request>& requests,
                           std::vector<Answer>& answers) = 0;
};

// Counts for the run's summary.
struct GateCounts {
  uint64_t total = 0, invalid = 0, maybe_duplicate_holds = 0, budget_holds = 0, key_limit_holds = 0,
           ledger_holds = 0;
  std::vector<uint64_t> per_verb;  // by verb index
};

class Gate {
 public:
  struct Options {
    uint32_t dedupe_field = Table::kNoField;  // the string input the guard keys on, or none
    // --show-inputs: add every input's value to the line, these names redacted (null: off).
    const std::set<std::string>* show_inputs_redacted = nullptr;
    size_t batch_records = 16;  // stage-1 records per batch without stages
    // Records are the elements of one JSON array (inputs/records.h JsonArrayReader): a record
    // that is not read or valid says where it is as "at":"/INDEX" (a JSON pointer into the
    // dump) instead of a column.
    // "/" for a top-level array, "/Messages/" for the array of {"Messages": [...]}; "" for lines.
    std::string array_pointer_prefix;
    Claimer* claimer = nullptr;   // not owned; set: stage 2 works per block (judge_block)
    size_t block_records = 1024;  // with a Claimer: records per block (batch_size()), at least 1
    // read() keeps every record's metadata and idempotency key in its batch (as a Claimer's gate
    // does) and judge() takes them from there, not from the gate's last read: for batches read
    // by other gates (pipeline/read_pool.h). Set it on the judging gate and on the reading ones.
    bool keep_records = false;
  };

  // A gate on `shared`'s current table (pinned), or null when `shared` has no free reader slot.
  // `parser` and `guard` must outlive the gate; the parser must be for a table of this layout.
  static std::unique_ptr<Gate> open(SharedTable& shared, inputs::RecordParser& parser,
                                    ReplayGuard& guard, const Options& options);
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  const Table& table() const { return *table_; }
  // The pinned table's checksum (32 hex digits, NUL-terminated).
  const char* checksum() const { return pin_->checksum(); }
  // Adds a stage between decide and print (not owned); without a Claimer batch_size() becomes 1.
  void add_stage(Stage* stage) { stages_.push_back(stage); }
  bool has_stages() const { return !stages_.empty() || options_.claimer != nullptr; }
  const Options& options() const { return options_; }
  // read() keeps each record's metadata and key in its batch (a Claimer, or keep_records).
  bool keeps_records() const { return options_.claimer != nullptr || options_.keep_records; }
  // A Claimer is set: the caller judges whole batches (judge_block), each one block.
  bool claims_blocks() const { return options_.claimer != nullptr; }
  size_t batch_size() const {
    if (claims_blocks()) return options_.block_records > 0 ? options_.block_records : 1;
    return has_stages() ? 1 : options_.batch_records;
  }
  // Pins the shared table's current table (a consumer between records); rerenders the cached
  // text when it changed. False when the reader has no slot.
  bool repin();

  // Stage 1 for one record into `batch`: `status` kLine with `line` (one record, as a
  // LineReader hands it out: followed in memory by LineReader::kPadding readable bytes, which
  // simdjson reads), or kTooLarge for a record over `max_line` bytes that was skipped.
  // `line_number` is the record's 1-based position in its stream: a consumer that takes records
  // one at a time from a broker numbers them itself and calls judge() right after.
  void read(Batch& batch, uint64_t line_number, inputs::LineReader::Status status,
            std::string_view line, size_t max_line);
  // Starts loading the guard's memory for every record of `batch` (between the two stages), or
  // for its records [begin, end) (a large batch, a few records ahead of judge()).
  void prefetch(const Batch& batch) const { prefetch(batch, 0, batch.count); }
  void prefetch(const Batch& batch, size_t begin, size_t end) const;
  // Stage 2 for the batch's record `i`: appends its decision line to `out` and hands the verdict
  // to every stage. With a Claimer, the record is a block of its own (one claim_block call when
  // it needs a claim).
  void judge(const Batch& batch, size_t i, ByteBuffer& out);
  // Stage 2 for every record of `batch`, in order, as one block: every record meets the replay
  // guard, then the create verbs it let through go to the Claimer in one claim_block() call, then
  // each record's line is appended to `out` and its verdict handed to every stage. Without a
  // Claimer it is judge() for each record. The lines are the bytes judge() would append.
  void judge_block(const Batch& batch, ByteBuffer& out);
  // Every stage's commit(), in order; false at the first that fails (its error()).
  bool commit(const Stage** failed);

  const GateCounts& counts() const { return counts_; }

 private:
  Gate(SharedTable::Reader reader, inputs::RecordParser& parser, ReplayGuard& guard,
       const Options& options);
  void render();  // the cached text of the pinned table
  // Stage 2's parts: the replay guard's verdict for `p` (counted), whether a Claimer must be asked
  // about it, and the rest (its line into `out`, counts, stages) once `answer` is known (null: no
  // claim was asked for).
  Verdict guard(const Pending& p);
  bool needs_claim(const Pending& p, const Verdict& v) const {
    return p.create && v.outcome == ReplayGuard::Outcome::kReplay && options_.claimer != nullptr;
  }
  void finish(const Batch& batch, const Pending& p, Verdict& v, const Claimer::Answer* answer,
              const inputs::RecordMeta& meta, ByteBuffer& out);
  // A Claimer's gate: keeps the record's key and metadata in `batch` (stage 1), and reads them
  // back.
  void keep(Batch& batch, Pending& p);
  static inputs::RecordMeta kept_meta(const Batch& batch, const Pending& p);
  Claimer::Request request(const Batch& batch, const Pending& p) const;

  SharedTable::Reader reader_;
  std::optional<SharedTable::Guard> pin_;
  const Table* table_ = nullptr;
  inputs::RecordParser& parser_;
  ReplayGuard& guard_;
  Options options_;
  std::vector<Stage*> stages_;
  Input input_;
  std::unique_ptr<DecisionText> texts_;
  std::unique_ptr<InputsText> inputs_text_;  // --show-inputs only
  LineNumberText line_text_;
  // The replay guard's key field (Options::dedupe_field; kNoField reads as unset).
  uint32_t key_field_ = Table::kNoField;
  inputs::RecordMeta meta_;
  std::string problem_;
  std::string claim_text_;
  // A Claimer's block (judge_block), kept between blocks for their memory.
  std::vector<Verdict> verdicts_;
  std::vector<Claimer::Request> requests_;
  std::vector<Claimer::Answer> answers_;
  GateCounts counts_;
};

}  // namespace replaygate::pipeline
