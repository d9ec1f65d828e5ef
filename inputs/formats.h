// The record formats of the commands that read dead-letter records (`decide`, `explain`, `review`),
// named with `--input-format NAME`: one table, kInputFormats in input_formats.cc, owns the names,
// so a new format is one entry there (its name, the mapping `format:` it reads, and its parser).
//
//   choose_input_format()   --input-format (and decide's alias --format) plus --mapping -> a
//                           format, or the usage message (exit 2): an unknown name (with the known
//                           ones and a did-you-mean), the two options disagreeing, a format that
//                           needs --mapping without one, --mapping for a format without one
//   mapping_format_mismatch() whether a mapping file's `format:` is the one a format reads
//
// Opening a parser with its mapping loaded and fully checked (RG308-RG310 need the compiler's
// analysis) is the CLI's: tools/cli/record_reading.h.
//
// `review` reads its message file through a format too (one record; tools/cli/review_mapped.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/mapping.h"
#include "inputs/records.h"
#include "runtime/table.h"

namespace replaygate::inputs {

struct InputFormat {
  std::string_view name;  // what --input-format takes: "letters", "spring-kafka", "kafka" (alias)
  std::string_view mapping_format;  // the `format:` its mapping file has; "" takes no mapping
  std::string_view help;            // one phrase for --help: "kcat -C -J records"
  // The parser; `mapping` is null exactly when mapping_format is "", else checked against `table`
  // without errors. Both must outlive the parser.
  std::unique_ptr<RecordParser> (*make_parser)(const Table& table, const Mapping* mapping);
  // The dump is one JSON array whose elements are the records (JsonArrayReader), not JSON Lines.
  bool json_array = false;
  std::string_view array_member;  // the array is this key's value in a top-level object, or ""
  // Milliseconds per unit of a record's `timestamp` part (RecordParser::record_parts()): 1 for
  // kcat's ts, SQS's SentTimestamp and Sidekiq; 1000 for RabbitMQ's properties.timestamp
  // (seconds); 0 for a format without one. For `propose`'s first and last seen.
  int64_t timestamp_ms = 0;
};

// Every format, the default (letters) first.
const std::vector<InputFormat>& input_formats();

// "letters or kafka" (", " between the first ones when there are more).
std::string input_format_names();

// What the command line said about the record format.
struct InputFormatOptions {
  std::string input_format;  // --input-format, when given
  bool input_format_set = false;
  std::string alias;  // decide's --format (an alias of --input-format), when given
  bool alias_set = false;
  std::string mapping;  // --mapping, when given
};

// The format the options name (letters when neither option is given), or null with *error set to
// the usage message (the option named as the user spelled it):
//   "--input-format must be letters or kafka, not 'kafak'; did you mean 'kafka'?"
//   "--format kafka and --input-format letters disagree: --format is another name for
//    --input-format; give one of them"
//   "--input-format kafka needs --mapping MAPPING.yaml (which header or payload field feeds each
//    policy input)"
//   "--mapping applies only to a format that reads broker records (--input-format kafka), not to
//    letters"
// Values are escaped (escape_control). Giving both options with the same name is fine.
const InputFormat* choose_input_format(const InputFormatOptions& options, std::string* error);

// The check of the mapping's `format:` against `format` (tools/cli/record_reading.h runs it when it
// opens a parser): "" when `mapping` fits `format`, else the message "MAPPING maps kcat-json
// records, but --input-format X reads Y records; give a mapping with format: Y".
std::string mapping_format_mismatch(const InputFormat& format, const std::string& mapping_path,
                                    const Mapping& mapping);

}  // namespace replaygate::inputs
