// Reading review's message through a record format and its mapping (see mapped.h).
#include "review/mapped.h"

#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

namespace replaygate::review {
namespace {

using inputs::JsonArrayReader;
using inputs::LineReader;
using inputs::RecordMeta;
using nlohmann::json;

// The invalid mapped value as the review record shows it (the Input gets set_invalid).
constexpr const char* kInvalidValue = "<invalid: the mapped value does not fit the input>";

// The message key review reads input `name` from (inputs.h: message_revision is the
// message's `revision`; every other letter input is message.NAME).
std::string message_key(const std::string& name) {
  return name == "message_revision" ? "revision" : name;
}

}  // namespace

MappedMessage mapped_message(const Table& table, const Input& input, const RecordMeta& meta,
                             const inputs::RecordParser& parser) {
  MappedMessage m;
  m.origins.assign(table.field_count(), "");
  m.invalid.assign(table.field_count(), false);
  for (uint32_t f = 0; f < table.field_count() && f < input.size(); ++f) {
    const Input::Slot slot = input.slot(f);
    const std::string name = message_key(std::string(table.field(f).name));
    switch (slot.state) {
      case Input::Slot::State::kUnset:
        continue;
      case Input::Slot::State::kNull:
        m.message[name] = nullptr;
        break;
      case Input::Slot::State::kString:
        m.message[name] = std::string(slot.s);
        break;
      case Input::Slot::State::kInt:
        m.message[name] = slot.i;
        break;
      case Input::Slot::State::kBool:
        m.message[name] = slot.b;
        break;
      case Input::Slot::State::kInvalid:
        m.message[name] = kInvalidValue;
        m.invalid[f] = true;
        break;
    }
    const std::optional<inputs::InputOrigin> origin = parser.input_origin(f);
    m.origins[f] = "mapping: " + (origin ? origin->source : std::string("?"));
    if (origin && origin->defaulted) m.origins[f] += " (its default)";
  }
  if (meta.has_message_id && !m.message.contains("message_id")) {
    m.message["message_id"] = std::string(meta.message_id);
  }
  return m;
}

std::string message_id_of(const MappedMessage& m) {
  const auto it = m.message.find("message_id");
  if (it == m.message.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

MappedSelection select_mapped_message(int fd, const inputs::InputFormat& format,
                                      inputs::RecordParser& parser, const Table& table,
                                      const std::string& message_id) {
  MappedSelection out;
  std::optional<LineReader> lines;
  std::optional<JsonArrayReader> array;
  if (format.json_array) {
    array.emplace(fd, inputs::kMaxRecordBytes, std::string(format.array_member));
  } else {
    lines.emplace(fd);
  }
  Input input(table);
  RecordMeta meta;
  std::string_view record;
  while (true) {
    const LineReader::Status status = array ? array->next(&record) : lines->next(&record);
    if (status == LineReader::Status::kEnd) break;
    if (status == LineReader::Status::kError) {
      out.read_error = array ? array->error_text() : std::strerror(lines->error_number());
      break;
    }
    // Blank lines between JSON Lines records are no record.
    if (status == LineReader::Status::kLine && !array &&
        record.find_first_not_of(" \t\r") == std::string_view::npos) {
      continue;
    }
    ++out.records;
    MappedMessage m;
    std::string problem;
    if (status == LineReader::Status::kTooLarge) {
      problem = inputs::record_too_large(inputs::kMaxRecordBytes);
    } else if (!parser.parse(record, input, &meta, &problem)) {
      if (problem.empty()) problem = "invalid record";
    } else {
      m = mapped_message(table, input, meta, parser);
    }
    if (!problem.empty()) {
      ++out.unreadable;
      m = MappedMessage{};
      m.origins.assign(table.field_count(), "");
      m.invalid.assign(table.field_count(), false);
      m.problem = std::move(problem);
    }
    // Without --message-id the first record is the one (more are refused below); with it, only
    // a readable record can show its id.
    const bool selected =
        message_id.empty() ? out.records == 1 : m.problem.empty() && message_id_of(m) == message_id;
    if (selected) {
      ++out.matches;
      if (out.matches == 1) out.message = std::move(m);
    }
  }
  return out;
}

std::vector<uint32_t> attribute_to_mapping(const MappedMessage& mapped,
                                           std::vector<InputUse>* uses) {
  std::vector<uint32_t> invalid;
  for (InputUse& use : *uses) {
    if (use.derived) continue;
    if (use.from == "message." + message_key(use.name) && use.field < mapped.origins.size()) {
      use.from = mapped.origins[use.field];
      if (mapped.invalid[use.field]) invalid.push_back(use.field);
    } else if (use.value == nullptr && use.source == FieldSource::kLetter) {
      use.unset_because += mapped.problem.empty()
                               ? "; the mapping gave no value"
                               : "; the message record could not be read: " + mapped.problem;
    }
  }
  return invalid;
}

}  // namespace replaygate::review
