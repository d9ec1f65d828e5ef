// `review --input-format F --mapping M`: reads the message file as one broker record of format F
// and turns it, through the same parser and mapping decide uses (record_reading.h), into the
// message document review maps its inputs from (review_inputs.h).
//
// The mapping supplies only letter-sourced inputs: it may not map a record-only input (RG311) or
// an operator-only one (RG307), so record-only inputs still come from the operation record only
// and operator inputs only from --confirm. The result is a JSON object with one member per input
// the mapping gave a value (by the input's name) plus `message_id` (the mapping's message_id
// source, else a mapped input of that name), so review's places (message.NAME) find them; where
// each came from is kept, and the review record names it ("mapping: header 'x'").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inputs/formats.h"
#include "runtime/table.h"
#include "tools/cli/review_inputs.h"

namespace replaygate::cli {

struct MappedMessage {
  nlohmann::json message = nlohmann::json::object();  // the mapped inputs by name, message_id
  std::vector<std::string> origins;  // per field: "mapping: payload /revision", or ""
  std::vector<bool> invalid;         // per field: the mapped value is invalid (wrong type, ...)
  // Not empty when the record could not be read or mapped ("invalid input: error_class (no
  // mapping for 'x')"): then no input comes from it, and review gives the policy default.
  std::string problem;
};

// Reads `message_path`, which must hold exactly one record of `format` (a dump of one message),
// or, with a non-empty `message_id`, selects the one record whose message id is that. The mapping
// at `mapping_path` is loaded and checked against `table` first (its diagnostics on stderr).
// Returns 0 with *out set (out->problem set when the record is unreadable: not an error here);
// 1 when the file holds no record ("replaygate: invalid message: FILE: holds no record");
// 2 when the mapping has errors (including one that maps a record-only or operator-only input)
// or maps another format, the file cannot be read, it holds more than one record and no
// --message-id selects one, or no record (or more than one) has the given message id.
// Not thread-safe only in that it writes to stderr.
int read_mapped_message(const inputs::InputFormat& format, const std::string& mapping_path,
                        const std::string& message_path, const std::string& message_id,
                        const Table& table, MappedMessage* out);

// Rewrites, in `uses` (from map_review_inputs() over out->message), where each input read from
// the message came from: "message.NAME" becomes the mapped source ("mapping: header 'x'"), and an
// input the mapping left unset says so. Returns the fields whose used value is an invalid mapped
// value: the caller sets them invalid in the Input (the policy's handling of invalid input).
std::vector<uint32_t> attribute_to_mapping(const MappedMessage& mapped,
                                           std::vector<InputUse>* uses);

}  // namespace replaygate::cli
