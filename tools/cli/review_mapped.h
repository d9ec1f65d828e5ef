// `review --input-format F --mapping M`: opens the mapping (checked against the table, its
// diagnostics printed: record_reading.h) and the message file, and has review/mapped.h read the
// one broker record review maps its inputs from; this file says what went wrong, and how the
// command exits.
#pragma once

#include <string>

#include "inputs/formats.h"
#include "review/mapped.h"
#include "runtime/table.h"

namespace replaygate::cli {

using review::MappedMessage;

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

}  // namespace replaygate::cli
