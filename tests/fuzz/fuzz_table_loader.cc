// libFuzzer target for the table loader: any bytes must load cleanly or fail with a status, and a
// table that loads must decide and dump without crashing.
//
// The libFuzzer binary (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh) links a runtime built with
// FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which skips the loader's digest checks so mutated bytes
// reach its structural checks; every tree with tests replays
// tests/data/fuzz/table_loader/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
#include <cstddef>
#include <cstdint>

#include "runtime/table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  replaygate::LoadStatus status;
  auto table = replaygate::Table::load_bytes(data, size, &status);
  if (!table) return 0;
  replaygate::Input in(*table);
  // A few inputs of every kind per field, so every guard and table path runs.
  for (int round = 0; round < 4; ++round) {
    in.clear();
    for (uint32_t f = 0; f < table->field_count(); ++f) {
      switch ((f + round) % 4) {
        case 0:
          in.set_string(f, "payment.capture");
          break;
        case 1:
          in.set_int(f, round - 1);
          break;
        case 2:
          in.set_bool(f, round % 2 == 0);
          break;
        default:
          break;  // unset
      }
    }
    replaygate::Decision d = table->decide(in);
    (void)table->verb_name(d.verb);
    (void)table->reason(d);
    (void)table->rule_name(d);
  }
  (void)table->dump();
  return 0;
}
