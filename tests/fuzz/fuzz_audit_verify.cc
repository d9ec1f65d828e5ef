// libFuzzer target for the audit log verifier (audit/audit_log.h verify_bytes()): any bytes, read
// as an audit log, must give a report whose parts agree (no problems exactly when an append would
// go ahead). Never a crash, a hang or a leak.
//
// Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh); the normal build replays
// tests/data/fuzz/audit_verify/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "audit/audit_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const replaygate::audit::VerifyReport report = replaygate::audit::verify_bytes(bytes);
  if (report.ok() != report.append_refusal.empty()) __builtin_trap();
  if (report.decisions + report.results > report.entries) __builtin_trap();
  if (report.torn_tail && report.torn_bytes == 0) __builtin_trap();
  return 0;
}
