// review's message read as one broker record through a format and its mapping, as data: the
// message document review maps its inputs from (inputs.h), where each value came from, and the
// selection of one record of a dump (by message id). The CLI (tools/cli/review_mapped.h) opens the
// mapping and the file and says what went wrong.
//
// The mapping supplies only letter-sourced inputs (the CLI refuses one that maps a record-only or
// operator-only input), so record-only inputs still come from the operation record only and
// operator inputs only from --confirm. The message is a JSON object with one member per input the
// mapping gave a value (by the input's name; message_revision as `revision`) plus `message_id`
// (the mapping's message_id source, else a mapped input of that name), so review's places
// (message.NAME) find them; where each came from is kept, and the review record names it
// ("mapping: header 'x'").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inputs/formats.h"
#include "inputs/records.h"
#include "review/inputs.h"
#include "runtime/table.h"

namespace replaygate::review {

struct MappedMessage {
  nlohmann::json message = nlohmann::json::object();  // the mapped inputs by name, message_id
  std::vector<std::string> origins;  // per field: "mapping: payload /revision", or ""
  std::vector<bool> invalid;         // per field: the mapped value is invalid (wrong type, ...)
  // Not empty when the record could not be read or mapped ("invalid input: error_class (no
  // mapping for 'x')"): then no input comes from it, and review gives the policy default.
  std::string problem;
};

// One record `parser` has read into `input` (with `meta`) as review's message.
MappedMessage mapped_message(const Table& table, const Input& input, const inputs::RecordMeta& meta,
                             const inputs::RecordParser& parser);

// The message id of a mapped message ("" when it has none).
std::string message_id_of(const MappedMessage& m);

// What a dump held, read for review: the selected record, and the counts the caller's messages
// need.
struct MappedSelection {
  MappedMessage message;    // the selected record (problem set when it could not be read)
  uint64_t records = 0;     // records in the dump (blank JSON Lines lines are none)
  uint64_t matches = 0;     // records selected: without a message id the first, else by id
  uint64_t unreadable = 0;  // records that could not be read or mapped
  std::string read_error;   // the file could not be read ("" when it could)
};

// Reads every record of `fd` (not closed here) as `format` through `parser` and selects the first
// one, or with a non-empty `message_id` the readable ones with that id (the first is kept).
MappedSelection select_mapped_message(int fd, const inputs::InputFormat& format,
                                      inputs::RecordParser& parser, const Table& table,
                                      const std::string& message_id);

// Rewrites, in `uses` (from map_review_inputs() over mapped.message), where each input read from
// the message came from: "message.NAME" becomes the mapped source ("mapping: header 'x'"), and an
// input the mapping left unset says so. Returns the fields whose used value is an invalid mapped
// value: the caller sets them invalid in the Input (the policy's handling of invalid input).
std::vector<uint32_t> attribute_to_mapping(const MappedMessage& mapped,
                                           std::vector<InputUse>* uses);

}  // namespace replaygate::review
