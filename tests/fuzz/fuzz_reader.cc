// libFuzzer target for one record format of inputs/, chosen at build time by RG_FUZZ_FORMAT (one
// binary per format: fuzz_reader_sqs, ...): any bytes, read as a whole dump of that format, must
// split into records (LineReader, or JsonArrayReader for the array formats, as `decide` reads them)
// and each record must parse into an Input or a named problem placed in the record; a parsed
// record must decide and answer explain's questions (its parts, each input's origin). Never a
// crash, a hang or a leak.
//
// The mapping is examples/FORMAT.mapping.yaml (none for letters), the policy
// policies/replay_gate.yaml. Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh);
// the normal build replays tests/data/fuzz/reader_FORMAT/{corpus,regressions} through
// replay_main.cc (ctest -L fuzz).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "inputs/records.h"
#include "runtime/table.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using replaygate::inputs::InputFormat;
using replaygate::inputs::JsonArrayReader;
using replaygate::inputs::LineReader;
using replaygate::inputs::RecordParser;

// Records over this are skipped as too large (a smaller cap than decide's, so fuzzing reaches it).
constexpr size_t kMaxRecord = 16 * 1024;

struct Fixture {
  replaygate::fuzz::PolicyFixture policy;
  const InputFormat* format = nullptr;
  replaygate::inputs::LoadedMapping mapping;
  std::unique_ptr<RecordParser> parser;
  std::unique_ptr<replaygate::Input> input;

  Fixture() {
    const replaygate::Table& table = *policy.table;
    for (const InputFormat& f : replaygate::inputs::input_formats()) {
      if (f.name == RG_FUZZ_FORMAT) format = &f;
    }
    if (format == nullptr) __builtin_trap();
    if (!format->mapping_format.empty()) {
      const std::string path = "examples/" RG_FUZZ_FORMAT ".mapping.yaml";
      mapping = replaygate::inputs::parse_mapping(replaygate::fuzz::source_file(path), path, table);
      if (replaygate::has_errors(mapping.diagnostics)) __builtin_trap();
    }
    parser =
        format->make_parser(table, format->mapping_format.empty() ? nullptr : &mapping.mapping);
    input = std::make_unique<replaygate::Input>(table);
  }
};

void check_record(Fixture& f, std::string_view record) {
  const replaygate::Table& table = *f.policy.table;
  replaygate::inputs::RecordMeta meta;
  std::string problem;
  if (!f.parser->parse(record, *f.input, &meta, &problem)) {
    if (problem.rfind("invalid record: ", 0) != 0 && problem.rfind("invalid input: ", 0) != 0) {
      __builtin_trap();  // every problem is one of the two kinds decide reports
    }
    const size_t at = f.parser->problem_offset();
    if (at != RecordParser::kNoOffset && at > record.size()) __builtin_trap();
    return;
  }
  const replaygate::Decision d = table.decide(*f.input);
  if (d.verb >= table.verb_count()) __builtin_trap();
  (void)table.reason(d);
  // What explain shows of a record: its parts, and where each input came from.
  for (const replaygate::inputs::RecordPartValue& part : f.parser->record_parts()) {
    if (part.kind == replaygate::inputs::RecordPartValue::Kind::kText && !part.text.empty() &&
        part.text.data() == nullptr) {
      __builtin_trap();
    }
  }
  for (uint32_t field = 0; field < table.field_count(); ++field) {
    (void)f.parser->input_origin(field);
    const size_t at = f.parser->field_value_offset(record, field);
    if (at != RecordParser::kNoOffset && at > record.size()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fixture;
  const int fd = replaygate::fuzz::memory_file(data, size);
  std::optional<LineReader> lines;
  std::optional<JsonArrayReader> array;
  if (fixture.format->json_array) {
    array.emplace(fd, kMaxRecord, std::string(fixture.format->array_member));
  } else {
    lines.emplace(fd, kMaxRecord);
  }
  std::string_view record;
  while (true) {
    const LineReader::Status status = array ? array->next(&record) : lines->next(&record);
    if (status == LineReader::Status::kEnd || status == LineReader::Status::kError) break;
    if (status == LineReader::Status::kLine) {
      if (record.size() > kMaxRecord) __builtin_trap();  // the cap holds
      check_record(fixture, record);
    }
  }
  close(fd);
  return 0;
}
