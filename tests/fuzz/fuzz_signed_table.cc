// libFuzzer target for the signed envelope (runtime/verify, docs/signing.md): any bytes must load
// cleanly or be refused with a status, with a key pinned (a fixed key pair from a constant seed,
// the one the corpus is signed with) and with none (the envelope unwrapped unchecked, then the
// payload loaded), and never load past the pinned key unless the signature holds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "runtime/verify/keys.h"
#include "runtime/verify/signed_table.h"
#include "tests/fuzz/fuzz_key.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replaygate;
  verify::TrustOptions pinned;
  pinned.keys.push_back(fuzzing::fuzz_key());
  pinned.now = 1'800'000'000;
  verify::TrustOptions none;
  none.now = pinned.now;
  for (const verify::TrustOptions* trust : {&pinned, &none}) {
    LoadStatus status;
    verify::Verified info;
    auto table = verify::load_table_bytes(data, size, *trust, &info, &status);
    if (table == nullptr && status.ok()) std::abort();  // a refusal always says why
    if (table != nullptr && trust == &pinned && !info.checked) std::abort();  // never unverified
    if (table != nullptr) (void)table->dump();
  }
  return 0;
}
