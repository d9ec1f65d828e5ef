// Test helper: the first records of each shipped example dump (examples/FORMAT-dlq.*), split as
// `decide` splits that format (LineReader, or JsonArrayReader for the array formats), each padded
// as a reader hands it out, with the format and its example mapping's path. Shared by the mapping
// fuzz target (tests/fuzz/fuzz_mapping.cc) and the fail-closed mutation property
// (tests/properties/format_mutation_test.cc). Header-only; no GoogleTest (the fuzz build has none).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/formats.h"
#include "inputs/records.h"

namespace replaygate::testing {

struct ExampleRecords {
  const inputs::InputFormat* format = nullptr;
  std::string mapping_path;         // relative to the source tree; "" for letters
  std::vector<std::string> padded;  // each record followed by LineReader::kPadding spaces
  std::vector<size_t> sizes;        // each record's own size
  std::string_view record(size_t i) const { return {padded[i].data(), sizes[i]}; }
};

// The example dump of each format (aliases such as `kafka` are left out: same reader).
inline const std::map<std::string_view, std::string_view>& example_dumps() {
  static const std::map<std::string_view, std::string_view> dumps = {
      {"letters", "examples/letters.jsonl"},
      {"spring-kafka", "examples/spring-kafka-dlq.kcat.jsonl"},
      {"kafka-connect", "examples/kafka-connect-dlq.kcat.jsonl"},
      {"rabbitmq", "examples/rabbitmq-dlq.json"},
      {"sqs", "examples/sqs-dlq.json"},
      {"pubsub", "examples/pubsub-dlq.json"},
      {"servicebus", "examples/servicebus-dlq.jsonl"},
      {"sidekiq", "examples/sidekiq-dlq.jsonl"},
      {"bullmq", "examples/bullmq-dlq.jsonl"},
  };
  return dumps;
}

// Up to `per_format` records of every example dump under `source_dir`, in input_formats() order.
// Throws std::runtime_error when a dump cannot be read or holds no record.
inline std::vector<ExampleRecords> example_records(const std::string& source_dir,
                                                   size_t per_format) {
  std::vector<ExampleRecords> out;
  for (const inputs::InputFormat& format : inputs::input_formats()) {
    const auto dump = example_dumps().find(format.name);
    if (dump == example_dumps().end()) continue;
    ExampleRecords records;
    records.format = &format;
    if (!format.mapping_format.empty()) {
      records.mapping_path = "examples/" + std::string(format.name) + ".mapping.yaml";
    }
    const std::string path = source_dir + "/" + std::string(dump->second);
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) throw std::runtime_error("cannot read " + path);
    std::optional<inputs::LineReader> lines;
    std::optional<inputs::JsonArrayReader> array;
    if (format.json_array) {
      array.emplace(fd, inputs::kMaxRecordBytes, std::string(format.array_member));
    } else {
      lines.emplace(fd);
    }
    std::string_view record;
    while (records.sizes.size() < per_format) {
      using Status = inputs::LineReader::Status;
      const Status status = array ? array->next(&record) : lines->next(&record);
      if (status == Status::kEnd || status == Status::kError) break;
      if (status != Status::kLine) continue;
      records.padded.push_back(std::string(record) +
                               std::string(inputs::LineReader::kPadding, ' '));
      records.sizes.push_back(record.size());
    }
    close(fd);
    if (records.sizes.empty()) throw std::runtime_error(path + " holds no record");
    out.push_back(std::move(records));
  }
  return out;
}

}  // namespace replaygate::testing
