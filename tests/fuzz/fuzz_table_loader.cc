// libFuzzer target for the table loader: any bytes must load cleanly or fail with a status, and a
// table that loads must decide and dump without crashing.
//
// Not part of the default build (tests/CMakeLists.txt does not glob tests/fuzz). Build with clang
// (each command on one line):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I.
//     -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (skips digest checks to reach the structure)
//     tests/fuzz/fuzz_table_loader.cc runtime/table.cc runtime/decide.cc -o fuzz_table_loader
//   ./fuzz_table_loader -max_len=65536 corpus/   (seed corpus: tests/data/tables/*.rgt)
// Or without libFuzzer, replaying files with tests/fuzz/replay_main.cc:
//   g++ -std=c++20 -g -fsanitize=address,undefined -I. tests/fuzz/fuzz_table_loader.cc
//     tests/fuzz/replay_main.cc runtime/table.cc runtime/decide.cc -o replay_table_loader
//   ./replay_table_loader tests/data/tables/replay_gate.rgt
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
