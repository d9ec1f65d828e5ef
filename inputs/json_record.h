// One dumped record as one JSON object: the preamble and the key check every reader that parses a
// record into simdjson's DOM shares (rabbitmq, sqs, pubsub, servicebus, sidekiq), so a reader is
// its format's keys and values and nothing else.
//
//   read_json_object(text, parser, options, &object, &problem, &offset)
//     in: one record as LineReader hands it out (padded); out: its top-level object, or the
//     reason it is unreadable (without "invalid record: ") and where (RecordParser::kNoOffset)
//   known_key(key, keys, where, &problem), known_keys(object, keys, where, &problem)
//     in: a member's key and the format's keys; out: false with "unknown key 'K' in WHERE (did
//     you mean 'X'?)" for any other key
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace replaygate::inputs {

// What differs between the readers' preambles (each kept as its format's tests pin it).
struct JsonRecordOptions {
  // The record's name, in "not a JSON object (WHAT)": "an SQS message".
  std::string_view what = {};
  // The reason for a record of whitespace only ("blank record", "blank line"), and the whitespace;
  // an empty reason: no such check (the parser refuses it).
  std::string_view blank = {};
  std::string_view blank_space = " \t\r\n";
  // A leading UTF-8 byte order mark refused as such, at offset 0 (else the parser refuses it).
  bool byte_order_mark = false;
  // Where the nesting goes too deep is reported, and trailing content after the object is refused
  // (else only the depth is checked, without an offset, and the parser finds the rest).
  bool shape_offsets = false;
};

// Reads `text` with `parser` into *object: the blank and byte-order-mark checks of `options`, the
// nesting bound (kMaxJsonDepth), the JSON itself (the error located in `text`), no key given twice
// anywhere (duplicate_key_problem(), json_keys.h) and a top-level object. False with *problem and
// *problem_offset (RecordParser::kNoOffset when nothing in particular) otherwise. *object points
// into `parser`, valid until its next parse.
bool read_json_object(std::string_view text, simdjson::dom::parser& parser,
                      const JsonRecordOptions& options, simdjson::dom::object* object,
                      std::string* problem, size_t* problem_offset);

// Every key of `object` is one of `keys` (known_key(), in the object's order).
bool known_keys(const simdjson::dom::object& object, const std::vector<std::string>& keys,
                std::string_view where, std::string* problem);

// True when `key` is one of `keys`; else false with *problem "unknown key 'KEY' in WHERE", plus
// " (did you mean 'K'?)" when one of `keys` is close to it.
bool known_key(std::string_view key, const std::vector<std::string>& keys, std::string_view where,
               std::string* problem);

}  // namespace replaygate::inputs
