// libFuzzer target for the audit log verifier (audit/audit_log.h verify_bytes()): any bytes, read
// as an audit log, must give a report whose parts agree (no problems exactly when an append would
// go ahead), and its checkpoints, checked against the pinned fuzz key (fuzz_key.h), a coverage
// that adds up. Never a crash, a hang or a leak.
//
// Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh); the normal build replays
// tests/data/fuzz/audit_verify/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "audit/audit_log.h"
#include "audit/checkpoint.h"
#include "tests/fuzz/fuzz_key.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const replaygate::audit::VerifyReport report = replaygate::audit::verify_bytes(bytes);
  if (report.ok() != report.append_refusal.empty()) __builtin_trap();
  if (report.decisions + report.results > report.entries) __builtin_trap();
  if (report.torn_tail && report.torn_bytes == 0) __builtin_trap();
  if (report.checkpoints.size() > report.checkpoint_entries) __builtin_trap();
  const replaygate::audit::Coverage coverage =
      replaygate::audit::check_checkpoints(report, {replaygate::fuzzing::fuzz_key()});
  if (coverage.valid > report.checkpoints.size()) __builtin_trap();
  if (coverage.covered_entries + coverage.uncovered_entries != report.entries) __builtin_trap();
  if (coverage.problems.empty() !=
      (coverage.uncovered_entries == 0 && coverage.valid == report.checkpoints.size())) {
    __builtin_trap();
  }
  return 0;
}
