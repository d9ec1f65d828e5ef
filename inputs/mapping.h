// The input mapping file: a reviewed YAML file that says where each policy input comes from in a
// broker record (`decide --format kafka --mapping FILE`). Format and semantics:
// docs/input-mapping.md.
//
//   format: kcat-json                     # optional; the record format (inputs/formats.cc)
//   queue_attributes: queue.json          # optional; `aws sqs get-queue-attributes` output,
//                                         # relative to this file, for queue_attribute: sources
//   message_id: {record: coordinates}     # optional; also {header: NAME} or {payload: /ptr}
//   body_hash: {header: NAME}             # optional; same sources
//   inputs:                               # every policy input, exactly once
//     error_class:
//       header: kafka_dlt-exception-cause-fqcn   # exactly one of header / payload / record /
//                                         # constant: VALUE / queue_attribute: NAME[.KEY]
//       occurrence: last                  # optional, headers: first / last / count
//       decode: be-int                    # optional: utf8 / be-int / decimal / base64 / json
//       map: {java.net.SocketTimeoutException: timeout}   # optional; unmapped value -> invalid
//       default: other                    # optional; used only when the source is missing
//       optional: true                    # optional; missing -> absent (null)
//       type: string                      # optional; must equal the policy input's type
//       acknowledge: default-opens-create # optional; the default was reviewed (RG309)
//
// Problems in the file are diagnostics RG301-RG310 (docs/input-mapping.md), rendered with
// render_text(); nothing in this file prints. Defaults are checked against the policy as
// checks/mapping_check.h says (RG308-RG310).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"  // Diagnostic and Span (moving to common/)
#include "runtime/table.h"

namespace replaygate::inputs {

// kConstant: the same value for every record, written in the mapping (`constant: 3`) or read once
// from the queue attributes file (`queue_attribute: RedrivePolicy.maxReceiveCount`), e.g. SQS's
// maxReceiveCount, a queue setting no message carries.
enum class SourceKind : uint8_t { kHeader, kPayload, kRecord, kConstant };
enum class RecordPart : uint8_t {
  kTopic,
  kPartition,
  kOffset,
  kKey,
  kTimestamp,
  kCoordinates,
  kDeliveryCount,  // the broker's delivery counter (broker_record.h); missing in kcat records
};

// How a header's (or a payload string's) bytes become a value (`decode:`, docs/input-mapping.md
// "Decodings"). kText is the default: the bytes as text, converted strictly to the input's type.
// A value that does not decode makes the record invalid, never a guessed number.
enum class Decoding : uint8_t {
  kText,   // no decode: text (an int input takes -?[0-9]+)
  kUtf8,   // text that must be valid UTF-8 (and not repaired by the reader)
  kBeInt,  // a big-endian two's-complement integer of 1, 2, 4 or 8 bytes (Spring's binary headers)
  kDecimal,  // ASCII decimal -?[0-9]+ within int64 (a lone byte 0x03 is not "3")
  kBase64,   // RFC 4648 base64 (padding required), then the bytes as UTF-8 text
  kJson,     // one JSON scalar: string, integer, boolean or null
};
const char* decoding_name(Decoding decoding);

// Which occurrence of a header that a record repeats counts (`occurrence:`). kOnly (the default)
// refuses a repeated header: the record is invalid.
// kCount reads how many times the header occurs (an integer; none: missing), e.g. the error
// contexts Kafka Connect appends each time a replayed record fails again.
enum class Occurrence : uint8_t { kOnly, kFirst, kLast, kCount };

struct ValueSource {
  SourceKind kind = SourceKind::kHeader;
  Decoding decoding = Decoding::kText;
  Occurrence occurrence = Occurrence::kOnly;
  std::string name;  // header name, the JSON pointer as written, or a constant's value
  std::string
      constant_from;  // kConstant from the queue attributes: "RedrivePolicy.maxReceiveCount"
  std::vector<std::string> pointer;  // kPayload: unescaped reference tokens
  RecordPart part = RecordPart::kTopic;
  // "header 'x'", "payload /a/b", "record offset", "constant", "queue attribute 'A.k'"
  std::string describe() const;
};

// The keys each mapping of a mapping file accepts (the file, one input, message_id / body_hash)
// and the words of its values. The reader accepts exactly these; tests/tools/schema_keys_test.cc
// checks schemas/mapping.schema.json against them.
inline const std::vector<std::string> kMappingFileKeys = {
    "format", "description", "queue_attributes", "message_id", "body_hash", "inputs"};
inline const std::vector<std::string> kMappingInputKeys = {
    "header", "payload", "record",   "constant", "queue_attribute", "decode",     "occurrence",
    "map",    "default", "optional", "type",     "acknowledge",     "description"};
inline const std::vector<std::string> kMappingMetadataKeys = {"header", "payload", "record",
                                                              "decode", "occurrence"};
// The source keys: an input has exactly one of these (message_id and body_hash one of the first
// three).
inline const std::vector<std::string> kMappingSourceKeys = {"header", "payload", "record",
                                                            "constant", "queue_attribute"};
// `record:` parts, in RecordPart order.
inline const std::vector<std::string> kRecordPartNames = {
    "topic", "partition", "offset", "key", "timestamp", "coordinates", "delivery-count"};
// `decode:` words, in Decoding order after kText (which has no word: it is the default).
inline const std::vector<std::string> kDecodingNames = {"utf8", "be-int", "decimal", "base64",
                                                        "json"};
// `occurrence:` words, in Occurrence order after kOnly (the default).
inline const std::vector<std::string> kOccurrenceNames = {"first", "last", "count"};

// The value of `acknowledge:` that accepts a default that opens a create verb (RG309).
inline constexpr const char* kAcknowledgeOpensCreate = "default-opens-create";

struct FieldMapping {
  std::string input;  // policy input name
  uint32_t field = Table::kNoField;
  FieldType type = FieldType::kString;
  ValueSource source;
  bool has_map = false;
  std::map<std::string, std::string, std::less<>> map;  // raw text -> policy value text
  std::optional<std::string> default_text;
  bool optional = false;
  Span default_span;  // the `default:` value, for RG308/RG309 (checks/mapping_check.h)
  Span source_span;   // the source's value (`constant: 5`, `record: delivery-count`), likewise
  // `acknowledge: default-opens-create`: the default may open a create verb, and that was reviewed.
  bool acknowledged = false;
  Span acknowledge_span;
  std::optional<std::string> description;  // for people; never read
};

struct Mapping {
  // The file's `format:`, the record format it maps (kcat-json when not given). Each
  // --input-format that takes a mapping names the one it reads (inputs/formats.h).
  std::string format = "kcat-json";
  std::optional<ValueSource> message_id;
  std::optional<ValueSource> body_hash;
  std::vector<FieldMapping> fields;  // in the table's field order
  bool uses_payload = false;
  std::optional<std::string> description;       // for people; never read
  std::optional<std::string> queue_attributes;  // the file as written (relative to the mapping)
};

struct LoadedMapping {
  Mapping mapping;                      // meaningful only without error diagnostics
  std::vector<Diagnostic> diagnostics;  // sorted
  std::string source_text;
  bool io_error = false;
  std::string io_message;
};

// Parses `text` (read from `path`) and checks it against the table's inputs: RG301-RG307, sorted.
// The defaults' check against the policy's regions (RG308-RG310) needs the compiler's analysis,
// so it is lint-time work outside inputs/: checks/mapping_check.h check_mapping() runs
// both, as every command does before it reads a record.
LoadedMapping parse_mapping(std::string_view text, const std::string& path, const Table& table);

// Whether `format` is a mapping `format:` some --input-format reads (inputs/formats.cc owns the
// list), and the list for a message ("kcat-json, rabbitmq-management-json").
bool is_mapping_format(std::string_view format);
std::string mapping_format_names();

// The largest mapping file a command reads (1 MiB).
inline constexpr size_t kMaxMappingBytes = size_t{1} << 20;

// Strict conversions shared with the test runner: int is an optional '-' then decimal digits,
// no leading '+', no spaces, within int64; bool is exactly "true" or "false".
bool parse_int64_strict(std::string_view text, int64_t* value);
bool parse_bool_strict(std::string_view text, bool* value);

}  // namespace replaygate::inputs
