// The gate's two stages (see gate.h). The bodies are decide's former loop, unchanged in what they
// do per record.
#include "pipeline/gate.h"

#include <cstring>

#include "runtime/trace.h"

namespace replaygate::pipeline {

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
  key_field_ = options_.dedupe_field;
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
  p.kept_key = false;
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
    if (p.create && input_.state(key_field_) == Input::Slot::State::kString) {
      p.has_key = true;
      p.key_hash = guard_.hash_of(input_.slot(key_field_).s);
    }
  }
  if (keeps_records()) keep(batch, p);
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
    if (input_.state(f) != Input::Slot::State::kUnset) {
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

void Gate::prefetch(const Batch& batch, size_t begin, size_t end) const {
  for (size_t i = begin; i < end && i < batch.count; ++i) {
    if (batch.records[i].has_key) guard_.prefetch(batch.records[i].key_hash);
  }
}

void Gate::keep(Batch& batch, Pending& p) {
  auto put = [&](std::string_view text) {
    const KeptText t{batch.kept.size(), text.size()};
    batch.kept.append(text);
    return t;
  };
  p.has_message_id = meta_.has_message_id;
  p.has_body_hash = meta_.has_body_hash;
  if (p.has_message_id) p.message_id = put(meta_.message_id);
  if (p.has_body_hash) p.body_hash = put(meta_.body_hash);
  // A create verb's key (the Claimer's request), and with keep_records any record's string key
  // (the audit entry's, as finish() takes it from the gate's own Input without keep_records).
  p.kept_key = p.has_key || (options_.keep_records && p.readable &&
                             input_.state(key_field_) == Input::Slot::State::kString);
  if (p.kept_key) p.key = put(input_.slot(key_field_).s);
}

inputs::RecordMeta Gate::kept_meta(const Batch& batch, const Pending& p) {
  inputs::RecordMeta meta;
  meta.has_message_id = p.has_message_id;
  meta.has_body_hash = p.has_body_hash;
  if (p.has_message_id) meta.message_id = batch.text(p.message_id);
  if (p.has_body_hash) meta.body_hash = batch.text(p.body_hash);
  return meta;
}

Claimer::Request Gate::request(const Batch& batch, const Pending& p) const {
  Claimer::Request r;
  r.record = &p;
  r.keyed = p.has_key;
  if (p.has_key) r.key = batch.text(p.key);
  r.meta = kept_meta(batch, p);
  return r;
}

Verdict Gate::guard(const Pending& p) {
  Verdict v;
  v.record = &p;
  v.verb = table_->default_verb();
  if (!p.readable) return v;
  v.verb = p.decision.verb;
  v.invalid = p.decision.kind == DecisionKind::kInvalidInput;
  if (!p.create) return v;
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
  if (v.outcome != ReplayGuard::Outcome::kReplay) v.verb = table_->default_verb();
  return v;
}

void Gate::finish(const Batch& batch, const Pending& p, Verdict& v, const Claimer::Answer* answer,
                  const inputs::RecordMeta& meta, ByteBuffer& out) {
  const ByteBuffer& scratch = batch.scratch;
  std::string_view text;  // after the prefix; empty for an unreadable record
  if (p.readable) {
    if (!v.invalid) text = texts_->of(p.decision);  // an invalid input's line is in `scratch`
    if (p.create && v.outcome != ReplayGuard::Outcome::kReplay) {
      text = texts_->held(v.outcome);
    } else if (answer != nullptr) {
      if (!answer->granted) {
        ++counts_.ledger_holds;
        v.verb = table_->default_verb();
        v.held_by = answer->rule;
        claim_text_ = texts_->render(v.verb, answer->rule, answer->reason, false);
      } else {
        claim_text_ = text;
        claim_text_.resize(claim_text_.size() - 2);  // "}\n"
        claim_text_ += answer->claimed ? ",\"claimed\":true}\n" : ",\"claimed\":false}\n";
        if (answer->claimed) v.claim_generation = answer->generation;
      }
      text = claim_text_;
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
    v.meta = &meta;
    // The record's idempotency key for the audit entry: kept in the batch by a Claimer's gate (a
    // create verb's key) or with keep_records (any string key), else the one record's own input
    // slot.
    if (options_.claimer != nullptr) {
      if (p.readable && p.has_key) v.key = batch.text(p.key);
    } else if (options_.keep_records) {
      if (p.readable && p.kept_key) v.key = batch.text(p.key);
    } else if (p.readable && input_.state(key_field_) == Input::Slot::State::kString) {
      v.key = input_.slot(key_field_).s;
    }
    for (Stage* stage : stages_) stage->add(*table_, v);
  }
}

void Gate::judge(const Batch& batch, size_t i, ByteBuffer& out) {
  const Pending& p = batch.records[i];
  Verdict v = guard(p);
  if (options_.claimer == nullptr) {
    // Without a Claimer a gate with stages works one record at a time, so meta_ is this record's
    // (unless the batch keeps it: read by another gate).
    finish(batch, p, v, nullptr, options_.keep_records ? kept_meta(batch, p) : meta_, out);
    return;
  }
  const Claimer::Answer* answer = nullptr;
  if (needs_claim(p, v)) {
    requests_.assign(1, request(batch, p));
    options_.claimer->claim_block(*table_, requests_, answers_);
    answer = &answers_[0];
  }
  finish(batch, p, v, answer, kept_meta(batch, p), out);
}

void Gate::judge_block(const Batch& batch, ByteBuffer& out) {
  if (options_.claimer == nullptr) {
    for (size_t i = 0; i < batch.count; ++i) judge(batch, i, out);
    return;
  }
  // Every record meets the guard in input order, its filter block fetched a few records ahead
  // (the two-batch prefetch of a gate without stages, within the block).
  constexpr size_t kAhead = 16;
  verdicts_.resize(batch.count);
  requests_.clear();
  for (size_t i = 0; i < kAhead && i < batch.count; ++i) {
    if (batch.records[i].has_key) guard_.prefetch(batch.records[i].key_hash);
  }
  for (size_t i = 0; i < batch.count; ++i) {
    if (i + kAhead < batch.count && batch.records[i + kAhead].has_key) {
      guard_.prefetch(batch.records[i + kAhead].key_hash);
    }
    const Pending& p = batch.records[i];
    verdicts_[i] = guard(p);
    if (needs_claim(p, verdicts_[i])) requests_.push_back(request(batch, p));
  }
  // One transaction for the block's claims, committed before any of its lines exists.
  if (!requests_.empty()) options_.claimer->claim_block(*table_, requests_, answers_);
  size_t next = 0;  // the next answer, in the order the requests were made
  for (size_t i = 0; i < batch.count; ++i) {
    const Pending& p = batch.records[i];
    const Claimer::Answer* answer = needs_claim(p, verdicts_[i]) ? &answers_[next++] : nullptr;
    finish(batch, p, verdicts_[i], answer, kept_meta(batch, p), out);
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

}  // namespace replaygate::pipeline
