// Reading review's message file through a record format and its mapping (review_mapped.h).
#include "tools/cli/review_mapped.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

#include "inputs/records.h"
#include "tools/cli/commands.h"
#include "tools/cli/record_reading.h"

namespace replaygate::cli {
namespace {

using inputs::JsonArrayReader;
using inputs::LineReader;
using inputs::RecordMeta;
using nlohmann::json;

// The invalid mapped value as the review record shows it (the Input gets set_invalid).
constexpr const char* kInvalidValue = "<invalid: the mapped value does not fit the input>";

// The message key review reads input `name` from (review_inputs.h: message_revision is the
// message's `revision`; every other letter input is message.NAME).
std::string message_key(const std::string& name) {
  return name == "message_revision" ? "revision" : name;
}

// One read record as review uses it: its inputs as JSON, where each came from, or its problem.
MappedMessage to_message(const Table& table, const Input& input, const RecordMeta& meta,
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

}  // namespace

int read_mapped_message(const inputs::InputFormat& format, const std::string& mapping_path,
                        const std::string& message_path, const std::string& message_id,
                        const Table& table, MappedMessage* out) {
  *out = MappedMessage{};
  RecordReading reading;
  // A broken mapping is the command's configuration, not the message: usage (exit 2), as a
  // mapping of another format is.
  if (open_record_parser(format, mapping_path, table, "nothing reviewed", &reading) != kExitOk) {
    return kExitUsage;
  }
  const int fd = ::open(message_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "replaygate: cannot read message file %s: %s\n", message_path.c_str(),
                 std::strerror(errno));
    return kExitUsage;
  }
  std::optional<LineReader> lines;
  std::optional<JsonArrayReader> array;
  if (format.json_array) {
    array.emplace(fd, inputs::kMaxRecordBytes, std::string(format.array_member));
  } else {
    lines.emplace(fd);
  }
  Input input(table);
  RecordMeta meta;
  uint64_t records = 0, matches = 0, unreadable = 0;
  int code = kExitOk;
  std::string_view record;
  while (true) {
    const LineReader::Status status = array ? array->next(&record) : lines->next(&record);
    if (status == LineReader::Status::kEnd) break;
    if (status == LineReader::Status::kError) {
      std::fprintf(stderr, "replaygate: cannot read message file %s: %s\n", message_path.c_str(),
                   array ? array->error_text().c_str() : std::strerror(lines->error_number()));
      code = kExitUsage;
      break;
    }
    // Blank lines between JSON Lines records are no record.
    if (status == LineReader::Status::kLine && !array &&
        record.find_first_not_of(" \t\r") == std::string_view::npos) {
      continue;
    }
    ++records;
    MappedMessage m;
    std::string problem;
    if (status == LineReader::Status::kTooLarge) {
      problem = inputs::record_too_large(inputs::kMaxRecordBytes);
    } else if (!reading.parser->parse(record, input, &meta, &problem)) {
      if (problem.empty()) problem = "invalid record";
    } else {
      m = to_message(table, input, meta, *reading.parser);
    }
    if (!problem.empty()) {
      ++unreadable;
      m = MappedMessage{};
      m.origins.assign(table.field_count(), "");
      m.invalid.assign(table.field_count(), false);
      m.problem = std::move(problem);
    }
    // Without --message-id the first record is the one (more are refused below); with it, only
    // a readable record can show its id.
    const bool selected =
        message_id.empty() ? records == 1 : m.problem.empty() && message_id_of(m) == message_id;
    if (selected) {
      ++matches;
      if (matches == 1) *out = std::move(m);
    }
  }
  ::close(fd);
  if (code != kExitOk) return code;
  if (records == 0) {
    std::fprintf(stderr,
                 "replaygate: invalid message: %s: holds no record (--input-format %.*s reads one "
                 "dead-lettered record)\n",
                 message_path.c_str(), static_cast<int>(format.name.size()), format.name.data());
    return kExitFindings;
  }
  if (message_id.empty() && records > 1) {
    std::fprintf(stderr,
                 "replaygate: error: %s holds %llu records; review reads one: give --message-id ID "
                 "to choose it\nRun 'replaygate review --help' for usage.\n",
                 message_path.c_str(), static_cast<unsigned long long>(records));
    return kExitUsage;
  }
  if (!message_id.empty() && matches != 1) {
    const std::string unread =
        unreadable == 0 ? "" : " (" + std::to_string(unreadable) + " could not be read)";
    std::fprintf(stderr, "replaygate: error: %s: %s has message id '%s'%s\n", message_path.c_str(),
                 matches == 0 ? "no record" : "more than one record",
                 escape_control(message_id).c_str(), unread.c_str());
    return kExitUsage;
  }
  return kExitOk;
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

}  // namespace replaygate::cli
