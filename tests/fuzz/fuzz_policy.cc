// libFuzzer target for a policy front-end, chosen at build time by RG_FUZZ_POLICY_EXT (".yaml":
// the YAML front-end, fuzz_policy_yaml; ".policy": the DSL, fuzz_policy_dsl): any bytes, compiled
// as a policy file, must give diagnostics (rendered as text, JSON and SARIF without a crash) or a
// checked policy whose lowered table loads and decides. Never a crash, a hang or a leak.
//
// Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh); the normal build replays
// tests/data/fuzz/policy_{yaml,dsl}/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/compile.h"
#include "compiler/lower.h"
#include "runtime/table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string path = std::string("fuzz") + RG_FUZZ_POLICY_EXT;
  replaygate::LoadedPolicy loaded = replaygate::load_policy_text(text, path);
  (void)replaygate::render_text(loaded.diagnostics, loaded.source_text);
  (void)replaygate::render_json(loaded.diagnostics);
  if (!loaded.policy) {
    if (!replaygate::has_errors(loaded.diagnostics)) __builtin_trap();  // refused, but why?
    return 0;
  }
  // A policy that checks must lower into a table the runtime loads.
  const std::vector<uint8_t> bytes = replaygate::lower(*loaded.policy);
  replaygate::LoadStatus status;
  const auto table = replaygate::Table::load_bytes(bytes.data(), bytes.size(), &status);
  if (!table) __builtin_trap();
  replaygate::Input input(*table);
  for (int round = 0; round < 3; ++round) {
    input.clear();
    for (uint32_t f = 0; f < table->field_count() && round > 0; ++f) {
      if (round == 1) input.set_int(f, 1);
      if (round == 2) input.set_bool(f, true);
    }
    const replaygate::Decision d = table->decide(input);
    if (d.verb >= table->verb_count()) __builtin_trap();
    (void)table->reason(d);
  }
  return 0;
}
