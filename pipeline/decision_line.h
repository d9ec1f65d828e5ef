// The decision line: the JSON object `decide` prints for each record (docs/cli.md "decide"),
// built from pieces rendered once per table and kept, so that the hot path copies bytes:
//
//   write_prefix()  {"n":N plus the echoed message_id / body_hash
//   InputsText      --show-inputs: ,"inputs":{...} (nothing of it runs without the flag)
//   DecisionText    ,"verb":... to the newline, per distinct (verb, rule, reason, invalid), the
//                   replay guard's holds (dump:...) and unreadable / invalid-input records
//   LineNumberText  the line number's digits, incremented in place
//
// The classes are defined here, in the header, so that the decide loop inlines them as it did
// when they lived in tools/cli/decide.cc. They print nothing themselves: they append to a
// ByteBuffer the caller writes out.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_buffer.h"
#include "common/json.h"
#include "inputs/records.h"
#include "pipeline/replay_guard.h"
#include "runtime/table.h"
#include "runtime/trace.h"

namespace replaygate::pipeline {

inline const char* action_words(Effect effect) {
  switch (effect) {
    case Effect::kNone:
      return "nothing";
    case Effect::kRead:
      return "read status";
    case Effect::kCopy:
      return "copy an existing output";
    case Effect::kCreate:
      return "create new work";
  }
  return "nothing";
}

// The text of an output line after its metadata, from ',"verb":' to the newline, for each
// distinct (verb, rule, reason, invalid): rendered on first use and kept (bounded by the table's
// catalog and fields, not by the dump).
class DecisionText {
 public:
  explicit DecisionText(const Table& table) : table_(table) {
    for (uint32_t v = 0; v < table.verb_count(); ++v) {
      std::string s = ",\"verb\":";
      append_json_string(s, table.verb_name(v));
      s += ",\"effect\":";
      append_json_string(s, effect_name(table.verb_effect(v)));
      s += ",\"action\":";
      append_json_string(s, action_words(table.verb_effect(v)));
      verb_json_.push_back(std::move(s));
    }
    tail_ = ",\"policy\":";
    append_json_string(tail_, table.policy_id());
    tail_ += ",\"revision\":" + std::to_string(table.revision()) + ",\"table\":";
    append_json_string(tail_, table.checksum_hex());
    rules_.resize(table.rule_count());
    fields_.resize(table.field_count());
  }

  // The text for a decision of the table, unchanged by the dump rules.
  std::string_view of(const Decision& d) {
    Span* cached = &default_;
    if (d.kind == DecisionKind::kRule && d.rule < rules_.size()) {
      cached = &rules_[d.rule];
    } else if (d.kind == DecisionKind::kInvalidInput && d.invalid_field < fields_.size()) {
      cached = &fields_[d.invalid_field];
    } else if (d.kind == DecisionKind::kInvalidInput) {
      cached = &invalid_other_;
    }
    if (cached->length == 0) {
      *cached =
          add(d.verb, table_.rule_name(d), table_.reason(d), d.kind == DecisionKind::kInvalidInput);
    }
    return view(*cached);
  }
  // The rule name of a create verb the dump rules turned into the default.
  static std::string_view held_rule(ReplayGuard::Outcome outcome) {
    switch (outcome) {
      case ReplayGuard::Outcome::kMaybeDuplicate:
        return "dump:maybe_duplicate";
      case ReplayGuard::Outcome::kBudget:
        return "dump:replay_budget";
      case ReplayGuard::Outcome::kKeyLimit:
      case ReplayGuard::Outcome::kReplay:  // not a hold; never asked for
        break;
    }
    return "dump:key_limit";
  }
  // The text for a create verb the dump rules turned into the default.
  std::string_view held(ReplayGuard::Outcome outcome) {
    Span& cached = held_[static_cast<int>(outcome)];
    if (cached.length == 0) {
      std::string_view reason;
      switch (outcome) {
        case ReplayGuard::Outcome::kMaybeDuplicate:
          reason =
              "idempotency key probably replayed earlier in this dump (a replayed-key filter "
              "match; its false-positive rate is in the run summary)";
          break;
        case ReplayGuard::Outcome::kBudget:
          reason = "replay budget exhausted";
          break;
        case ReplayGuard::Outcome::kKeyLimit:
        case ReplayGuard::Outcome::kReplay:  // not a hold; never asked for
          reason =
              "too many replayed keys to remember (--max-replayed-keys); held so that a later "
              "duplicate cannot be replayed";
          break;
      }
      cached = add(table_.default_verb(), held_rule(outcome), reason, false);
    }
    return view(cached);
  }
  // The text for (verb, rule, reason), not cached (a hold whose reason varies per record).
  std::string render(uint32_t verb, std::string_view rule, std::string_view reason,
                     bool invalid) const {
    std::string text = verb_json_[verb];
    text += ",\"rule\":";
    append_json_string(text, rule);
    text += ",\"reason\":";
    append_json_string(text, reason);
    text += tail_;
    text += invalid ? ",\"invalid\":true}\n" : ",\"invalid\":false}\n";
    return text;
  }
  // A record that could not be read: the default verb with `problem` as the reason and, when the
  // problem has one place, its 1-based `column` (in bytes) in the line (rare, not cached).
  // Appends to `out`.
  // `at`, when not empty: the record's JSON pointer in an array dump ("/3"), written as "at".
  void append_unreadable(ByteBuffer& out, std::string_view problem, size_t column,
                         std::string_view at = "") const {
    std::string text = verb_json_[table_.default_verb()];
    text += ",\"rule\":\"default\",\"reason\":";
    append_json_string(text, problem);
    text += tail_;
    text += ",\"invalid\":true";
    if (column != 0) text += ",\"column\":" + std::to_string(column);
    if (!at.empty()) {
      text += ",\"at\":";
      append_json_string(text, at);
    }
    text += "}\n";
    out.append(text.data(), text.size());
  }
  // A record whose field `d.invalid_field` the runtime found invalid: the cached text of `d`, then
  // the 1-based byte `column` of the field's value in the line (0: it has no place) and the
  // `problem` with it, from runtime/trace.h (rare, not cached: both vary per record). Appends to
  // `out`.
  void append_invalid_input(ByteBuffer& out, const Decision& d, size_t column,
                            std::string_view problem, std::string_view at = "") {
    std::string_view cached = of(d);
    cached.remove_suffix(2);  // "}\n"
    std::string text(cached);
    if (column != 0) text += ",\"column\":" + std::to_string(column);
    if (!at.empty()) {
      text += ",\"at\":";
      append_json_string(text, at);
    }
    text += ",\"problem\":";
    append_json_string(text, problem);
    text += "}\n";
    out.append(text.data(), text.size());
  }

 private:
  struct Span {
    uint32_t offset = 0, length = 0;
  };
  Span add(uint32_t verb, std::string_view rule, std::string_view reason, bool invalid) {
    const size_t offset = arena_.size();
    arena_ += verb_json_[verb];
    arena_ += ",\"rule\":";
    append_json_string(arena_, rule);
    arena_ += ",\"reason\":";
    append_json_string(arena_, reason);
    arena_ += tail_;
    arena_ += invalid ? ",\"invalid\":true}\n" : ",\"invalid\":false}\n";
    return Span{static_cast<uint32_t>(offset), static_cast<uint32_t>(arena_.size() - offset)};
  }
  std::string_view view(Span span) const {
    return std::string_view(arena_).substr(span.offset, span.length);
  }

  const Table& table_;
  std::vector<std::string> verb_json_;  // ,"verb":..,"effect":..,"action":..
  std::string tail_;                    // ,"policy":..,"revision":..,"table":..
  std::string arena_;                   // every rendered text, back to back
  std::vector<Span> rules_, fields_;
  Span default_, invalid_other_, held_[4];
};

// A line number kept in decimal: lines go up one at a time, so the text is incremented in place
// (a carry through trailing 9s) instead of converted per line.
class LineNumberText {
 public:
  std::string_view of(uint64_t n) {
    if (n != value_ + 1 || length_ == 0) {
      length_ =
          static_cast<size_t>(std::to_chars(digits_, digits_ + sizeof digits_, n).ptr - digits_);
    } else {
      size_t i = length_;
      while (i > 0 && digits_[i - 1] == '9') digits_[--i] = '0';
      if (i > 0) {
        ++digits_[i - 1];
      } else {  // 99 -> 100
        std::memmove(digits_ + 1, digits_, length_);
        digits_[0] = '1';
        ++length_;
      }
    }
    value_ = n;
    return std::string_view(digits_, length_);
  }

 private:
  char digits_[24] = {};
  size_t length_ = 0;
  uint64_t value_ = 0;
};

// Writes the start of a record's output line, `{"n":N` and the echoed metadata, into `out`.
inline void write_prefix(ByteBuffer& out, std::string_view line_number,
                         const inputs::RecordMeta& meta) {
  constexpr std::string_view kN = "{\"n\":", kMessageId = ",\"message_id\":",
                             kBodyHash = ",\"body_hash\":";
  size_t bound = kN.size() + line_number.size();
  if (meta.has_message_id) bound += kMessageId.size() + json_string_bound(meta.message_id);
  if (meta.has_body_hash) bound += kBodyHash.size() + json_string_bound(meta.body_hash);
  char* w = out.room(bound);
  std::memcpy(w, kN.data(), kN.size());
  w += kN.size();
  std::memcpy(w, line_number.data(), line_number.size());
  w += line_number.size();
  if (meta.has_message_id) {
    std::memcpy(w, kMessageId.data(), kMessageId.size());
    w = write_json_string(w + kMessageId.size(), meta.message_id);
  }
  if (meta.has_body_hash) {
    std::memcpy(w, kBodyHash.data(), kBodyHash.size());
    w = write_json_string(w + kBodyHash.size(), meta.body_hash);
  }
  out.commit(w);
}

// --show-inputs: the `,"inputs":{...}` member of a line, right after its metadata: every policy
// input by name, in the policy's order, with the value the record gave it (docs/cli.md). Rendered
// in stage 1, while the record's Input is still there; without the flag nothing of this runs.
class InputsText {
 public:
  InputsText(const Table& table, const std::set<std::string>& sensitive) : table_(table) {
    for (uint32_t f = 0; f < table.field_count(); ++f) {
      const std::string name(table.field(f).name);
      Field field;
      field.key = (f == 0 ? "" : ",") + json_string(name) + ":";
      field.sensitive = sensitive.count(name) > 0;
      field.derived = table.field_derived(f);
      has_derived_ = has_derived_ || field.derived;
      fields_.push_back(std::move(field));
    }
  }

  // Appends `,"inputs":{...}` to `out`, or `,"inputs":null` for a record that could not be read
  // (`input` null). `valid`: every input passed validation, so derived inputs were computed.
  void append(ByteBuffer& out, const Input* input, bool valid) {
    using State = Input::Slot::State;
    if (input == nullptr) {
      constexpr std::string_view kNull = ",\"inputs\":null";
      out.append(kNull.data(), kNull.size());
      return;
    }
    // A derived input is computed from others after validation, as decide() does; the record's
    // own value for it is never used, so it is not what is shown.
    Trace computed;
    if (has_derived_ && valid) computed = trace(table_, *input);
    text_ = ",\"inputs\":{";
    for (uint32_t f = 0; f < fields_.size(); ++f) {
      const Field& field = fields_[f];
      text_ += field.key;
      const Input::Slot slot = input->slot(f);
      const bool present =
          field.derived ? valid : slot.state != State::kUnset && slot.state != State::kNull;
      if (!present) {
        text_ += "null";
      } else if (field.sensitive) {
        text_ += "\"<redacted>\"";
      } else if (field.derived) {
        const bool known = f < computed.fields.size() && !computed.fields[f].atom_label.empty();
        text_ += known ? computed.fields[f].atom_label : "null";
      } else {
        switch (slot.state) {
          case State::kString:
            append_json_string(text_, slot.s);
            break;
          case State::kInt:
            text_ += std::to_string(slot.i);
            break;
          case State::kBool:
            text_ += slot.b ? "true" : "false";
            break;
          default:  // kInvalid: a value of the wrong JSON type, which the reader did not keep
            text_ += "{\"invalid\":\"unreadable (wrong JSON type or out of int64 range)\"}";
            break;
        }
      }
    }
    text_ += '}';
    out.append(text_.data(), text_.size());
  }

 private:
  struct Field {
    std::string key;  // ,"name":
    bool sensitive = false;
    bool derived = false;
  };
  const Table& table_;
  std::vector<Field> fields_;
  bool has_derived_ = false;
  std::string text_;  // reused: no allocation per record once it has grown
};

}  // namespace replaygate::pipeline
