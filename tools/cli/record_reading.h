// Opening the record parser of a chosen --input-format (inputs/formats.h) for decide and explain:
// for a format that reads through a mapping file, the file is loaded and fully checked first
// (RG301-RG310, checks/mapping_check.h), its diagnostics printed, then the parser made.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "inputs/records.h"
#include "runtime/table.h"

namespace replaygate::cli {

using inputs::InputFormat;
using inputs::LoadedMapping;
using inputs::RecordParser;

// A parser and the mapping it reads through (when its format takes one).
struct RecordReading {
  std::unique_ptr<LoadedMapping> mapping;  // null for a format without a mapping
  std::unique_ptr<RecordParser> parser;
};

// Makes the parser for `format`; for a format with a mapping, loads `mapping_path` and checks it
// against `table` first. Returns 0 with *out set; 1 when the mapping has errors (its diagnostics
// are on stderr, followed by "MAPPING: errors found; `consequence`"); 2 when it cannot be read
// ("replaygate: cannot read ...") or maps records of another format than `format` reads
// ("replaygate: error: MAPPING maps kcat-json records, but --input-format X reads Y records").
// Reads the mapping file `path` (io_error when unreadable, over kMaxMappingBytes included) and
// checks it against `table` (checks::check_mapping(): RG301-RG310, sorted): every check of a
// mapping file, as lint --mapping, decide, explain and convert run it (lint adds RG312).
LoadedMapping load_mapping_file(const std::string& path, const Table& table);

int open_record_parser(const InputFormat& format, const std::string& mapping_path,
                       const Table& table, std::string_view consequence, RecordReading* out);

}  // namespace replaygate::cli
