// libFuzzer target for mapping files (inputs/mapping.h parse_mapping(), RG301-RG307, and the
// defaults' check against the policy, checks/mapping_check.h, RG308-RG310): any bytes, read
// as a mapping file for policies/replay_gate.yaml, must give diagnostics or a mapping; a mapping
// without errors must then read the first records of its format's example dump (examples/) into
// inputs the table decides, or into named problems. Never a crash, a hang or a leak.
//
// Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh); the normal build replays
// tests/data/fuzz/mapping/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checks/mapping_check.h"
#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "inputs/records.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/support/example_records.h"
#include "tests/support/paths.h"

namespace {

constexpr size_t kRecordsPerFormat = 6;

struct Fixture {
  replaygate::fuzz::PolicyFixture policy;
  std::vector<replaygate::testing::ExampleRecords> formats;
  std::unique_ptr<replaygate::Input> input;

  Fixture() : formats(replaygate::testing::example_records(RG_SOURCE_DIR, kRecordsPerFormat)) {
    input = std::make_unique<replaygate::Input>(*policy.table);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fixture;
  const replaygate::Table& table = *fixture.policy.table;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string path = "fuzz.mapping.yaml";
  replaygate::inputs::LoadedMapping loaded = replaygate::inputs::parse_mapping(text, path, table);
  for (auto& d : replaygate::checks::check_mapping_defaults(loaded.mapping, table, path)) {
    loaded.diagnostics.push_back(std::move(d));
  }
  (void)replaygate::render_text(loaded.diagnostics, text);
  if (replaygate::has_errors(loaded.diagnostics)) return 0;
  // The records of the first format that reads this mapping's `format:`.
  for (const replaygate::testing::ExampleRecords& records : fixture.formats) {
    if (records.format->mapping_format.empty() ||
        records.format->mapping_format != loaded.mapping.format) {
      continue;
    }
    const auto parser = records.format->make_parser(table, &loaded.mapping);
    for (size_t i = 0; i < records.sizes.size(); ++i) {
      const std::string_view record = records.record(i);
      replaygate::inputs::RecordMeta meta;
      std::string problem;
      if (parser->parse(record, *fixture.input, &meta, &problem)) {
        if (table.decide(*fixture.input).verb >= table.verb_count()) __builtin_trap();
        for (uint32_t f = 0; f < table.field_count(); ++f) (void)parser->input_origin(f);
      } else if (problem.empty()) {
        __builtin_trap();
      }
    }
    break;
  }
  return 0;
}
