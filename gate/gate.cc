// The gate's two stages (see gate.h). The bodies are decide's former loop, unchanged in what they
// do per record.
#include "gate/gate.h"

#include <cstring>

#include "runtime/trace.h"

namespace replaygate::gate {

std::string_view Verdict::rule(const Table& table) const {
  if (!held_by.empty()) return held_by;
  if (outcome != ReplayGuard::Outcome::kReplay) return DecisionText::held_rule(outcome);
  if (record != nullptr && record->readable) return table.rule_name(record->decision);
  return "default";
}

std::unique_ptr<Gate> Gate::open(SharedTable& shared, inputs::RecordParser& parser,
                                 ReplayGuard& guard, const Options& options) {
  SharedTable::Reader reader(shared);
  if (!reader.ok()) return nullptr;
  return std::unique_ptr<Gate>(new Gate(std::move(reader), parser, guard, options));
}

Gate::Gate(SharedTable::Reader reader, inputs::RecordParser& parser, ReplayGuard& guard,
           const Options& options)
    : reader_(std::move(reader)),
      pin_(reader_.acquire()),
      table_(&pin_->table()),
      parser_(parser),
      guard_(guard),
      options_(options),
      input_(*table_) {
  counts_.per_verb.assign(table_->verb_count(), 0);
  render();
}

void Gate::render() {
  texts_ = std::make_unique<DecisionText>(*table_);
  inputs_text_.reset();
  if (options_.show_inputs_redacted != nullptr) {
    inputs_text_ = std::make_unique<InputsText>(*table_, *options_.show_inputs_redacted);
  }
  key_slot_ =
      options_.dedupe_field != Table::kNoField ? &input_.slots()[options_.dedupe_field] : nullptr;
}

bool Gate::repin() {
  const Table* before = table_;
  pin_.reset();  // one guard per reader at a time
  pin_.emplace(reader_.acquire());
  table_ = &pin_->table();
  if (table_ != before) render();
  return true;
}

namespace {
// The JSON pointer of the 1-based `position`-th element of an array dump: "/0" for the first.
std::string array_pointer(const std::string& prefix, uint64_t position) {
  return prefix + std::to_string(position - 1);
}
}  // namespace

void Gate::read(Batch& batch, uint64_t line_number, inputs::LineReader::Status status,
                std::string_view line, size_t max_line) {
  const Table& table = *table_;
  Pending& p = batch.records[batch.count];
  p.line_number = line_number;
  p.readable = false;
  p.create = false;
  p.has_key = false;
  if (status == inputs::LineReader::Status::kTooLarge) {
    problem_ = inputs::record_too_large(max_line);
    meta_ = inputs::RecordMeta{};
  } else {
    p.readable = parse_and_decide(parser_, table, line, input_, &meta_, &problem_, &p.decision);
  }
  if (p.readable) {
    // Only a create verb meets the replay guard: only its key is hashed and its block fetched.
    p.create = p.decision.kind != DecisionKind::kInvalidInput &&
               table.verb_effect(p.decision.verb) == Effect::kCreate;
    if (p.create && key_slot_ != nullptr && key_slot_->state == Input::Slot::State::kString) {
      p.has_key = true;
      p.key_hash = guard_.hash_of(key_slot_->s);
    }
  }
  p.begin = batch.scratch.size();
  write_prefix(batch.scratch, line_text_.of(p.line_number), meta_);
  if (inputs_text_ != nullptr) {
    inputs_text_->append(batch.scratch, p.readable ? &input_ : nullptr,
                         p.readable && p.decision.kind != DecisionKind::kInvalidInput);
  }
  if (!p.readable) {
    size_t column = 0;  // of the problem in the line; 0: it has no one place
    if (status != inputs::LineReader::Status::kTooLarge &&
        parser_.problem_offset() != inputs::RecordParser::kNoOffset) {
      column = parser_.problem_offset() + 1;
    }
    if (!options_.array_pointer_prefix.empty()) {
      texts_->append_unreadable(batch.scratch, problem_, 0,
                                array_pointer(options_.array_pointer_prefix, line_number));
    } else {
      texts_->append_unreadable(batch.scratch, problem_, column);
    }
  } else if (p.decision.kind == DecisionKind::kInvalidInput) {
    // Where and why, worked out while the line and the input are still here (a batch is
    // written later); a record that is valid never comes this way.
    const uint32_t f = p.decision.invalid_field;
    const Trace why = trace(table, input_);
    std::string_view field_problem = "invalid";
    if (f < why.fields.size() && !why.fields[f].valid) field_problem = why.fields[f].problem;
    size_t column = 0;
    if (f < input_.size() && input_.slots()[f].state != Input::Slot::State::kUnset) {
      const size_t offset = parser_.field_value_offset(line, f);
      if (offset != inputs::RecordParser::kNoOffset) column = offset + 1;
    }
    const bool array = !options_.array_pointer_prefix.empty();
    if (array) column = 0;
    texts_->append_invalid_input(
        batch.scratch, p.decision, column, field_problem,
        array ? array_pointer(options_.array_pointer_prefix, line_number) : "");
  }
  p.end = batch.scratch.size();
  ++batch.count;
}

void Gate::prefetch(const Batch& batch) const {
  for (size_t i = 0; i < batch.count; ++i) {
    if (batch.records[i].has_key) guard_.prefetch(batch.records[i].key_hash);
  }
}

void Gate::judge(const Batch& batch, size_t i, ByteBuffer& out) {
  const Pending& p = batch.records[i];
  const ByteBuffer& scratch = batch.scratch;
  Verdict v;
  v.record = &p;
  v.verb = table_->default_verb();
  std::string_view text;  // after the prefix; empty for an unreadable record
  if (p.readable) {
    v.verb = p.decision.verb;
    v.invalid = p.decision.kind == DecisionKind::kInvalidInput;
    if (!v.invalid) text = texts_->of(p.decision);  // an invalid input's line is in `scratch`
    if (p.create) {
      v.outcome = guard_.judge_hash(p.has_key ? &p.key_hash : nullptr);
      switch (v.outcome) {
        case ReplayGuard::Outcome::kReplay:
          break;
        case ReplayGuard::Outcome::kMaybeDuplicate:
          ++counts_.maybe_duplicate_holds;
          break;
        case ReplayGuard::Outcome::kBudget:
          ++counts_.budget_holds;
          break;
        case ReplayGuard::Outcome::kKeyLimit:
          ++counts_.key_limit_holds;
          break;
      }
      if (v.outcome != ReplayGuard::Outcome::kReplay) {
        v.verb = table_->default_verb();
        text = texts_->held(v.outcome);
      } else if (options_.claimer != nullptr) {
        const bool keyed = key_slot_ != nullptr && key_slot_->state == Input::Slot::State::kString;
        const std::string_view key = keyed ? key_slot_->s : std::string_view();
        answer_ = options_.claimer->claim(*table_, p, keyed ? &key : nullptr, meta_);
        if (!answer_.granted) {
          ++counts_.ledger_holds;
          v.verb = table_->default_verb();
          v.held_by = answer_.rule;
          claim_text_ = texts_->render(v.verb, answer_.rule, answer_.reason, false);
        } else {
          claim_text_ = text;
          claim_text_.resize(claim_text_.size() - 2);  // "}\n"
          claim_text_ += answer_.claimed ? ",\"claimed\":true}\n" : ",\"claimed\":false}\n";
          if (answer_.claimed) v.claim_generation = answer_.generation;
        }
        text = claim_text_;
      }
    }
  }
  ++counts_.total;
  ++counts_.per_verb[v.verb];
  if (v.invalid) ++counts_.invalid;

  char* w = out.room(p.end - p.begin + text.size());
  std::memcpy(w, scratch.data() + p.begin, p.end - p.begin);
  w += p.end - p.begin;
  if (!text.empty()) std::memcpy(w, text.data(), text.size());  // an empty view may be null
  out.commit(w + text.size());
  if (!stages_.empty()) {
    v.meta = &meta_;  // one record per batch with stages: the record's own metadata
    if (p.readable && key_slot_ != nullptr && key_slot_->state == Input::Slot::State::kString) {
      v.key = key_slot_->s;
    }
    for (Stage* stage : stages_) stage->add(*table_, v);
  }
}

bool Gate::commit(const Stage** failed) {
  for (Stage* stage : stages_) {
    if (!stage->commit()) {
      if (failed != nullptr) *failed = stage;
      return false;
    }
  }
  return true;
}

}  // namespace replaygate::gate
