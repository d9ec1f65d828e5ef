// libFuzzer target for the dump readers: any bytes, as one line, must parse into a record or a
// named problem placed in the line (letters and kcat -J through the test mapping), never crash,
// hang or leak.
//
// Not part of the default build. Build with clang from the repository root (one line):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. -DRG_SOURCE_DIR=\"$PWD\"
//     tests/fuzz/fuzz_letter_reader.cc tools/cli/*.cc compiler/*.cc runtime/*.cc
//     -lyaml-cpp -lsimdjson -lfmt -o fuzz_letter_reader
//   ./fuzz_letter_reader -max_len=4096 corpus/   (seeds: tests/data/letters, tests/data/mapping)
// Or replay files without libFuzzer, against a normal build's libraries (one line):
//   g++ -std=c++20 -O1 -I. -DRG_SOURCE_DIR=\"$PWD\" tests/fuzz/fuzz_letter_reader.cc
//     tests/fuzz/replay_main.cc build/tools/libreplaygate_cli_lib.a
//     build/compiler/libreplaygate_compiler.a build/runtime/libreplaygate_runtime.a
//     -lyaml-cpp -lsimdjson -lfmt -o replay_letter_reader
//   ./replay_letter_reader tests/data/letters tests/data/mapping
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "inputs/kafka.h"
#include "inputs/letters.h"
#include "inputs/mapping.h"
#include "inputs/records.h"
#include "runtime/table.h"
#include "tools/cli/mapping_defaults.h"

namespace {

struct Fixture {
  std::unique_ptr<replaygate::Table> table;
  replaygate::inputs::LoadedMapping mapping;
  std::unique_ptr<replaygate::inputs::LetterParser> letters;
  std::unique_ptr<replaygate::inputs::KafkaParser> kafka;
  std::unique_ptr<replaygate::Input> input;

  Fixture() {
    const replaygate::LoadedPolicy policy =
        replaygate::load_policy_file(std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml");
    if (!policy.policy) __builtin_trap();
    const std::vector<uint8_t> bytes = replaygate::lower(*policy.policy);
    replaygate::LoadStatus status;
    table = replaygate::Table::load_bytes(bytes.data(), bytes.size(), &status);
    if (!table) __builtin_trap();
    mapping = replaygate::cli::load_mapping_file(
        std::string(RG_SOURCE_DIR) + "/tests/data/mapping/spring.mapping.yaml", *table);
    if (replaygate::has_errors(mapping.diagnostics)) __builtin_trap();
    letters = std::make_unique<replaygate::inputs::LetterParser>(*table);
    kafka = std::make_unique<replaygate::inputs::KafkaParser>(*table, mapping.mapping);
    input = std::make_unique<replaygate::Input>(*table);
  }
};

void check(replaygate::inputs::RecordParser& parser, Fixture& f, std::string_view line) {
  replaygate::inputs::RecordMeta meta;
  std::string problem;
  if (parser.parse(line, *f.input, &meta, &problem)) {
    if (f.table->decide(*f.input).verb >= f.table->verb_count()) __builtin_trap();
  } else if (problem.rfind("invalid record: ", 0) != 0 &&
             problem.rfind("invalid input: ", 0) != 0) {
    __builtin_trap();
  } else if (parser.problem_offset() != replaygate::inputs::RecordParser::kNoOffset &&
             parser.problem_offset() > line.size()) {
    __builtin_trap();  // the problem's place is in the line, or just after its end
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fixture;
  if (size > replaygate::inputs::kMaxRecordBytes) return 0;
  std::string line(reinterpret_cast<const char*>(data), size);
  line.append(replaygate::inputs::LineReader::kPadding, ' ');
  const std::string_view view(line.data(), size);
  check(*fixture.letters, fixture, view);
  check(*fixture.kafka, fixture, view);
  return 0;
}
