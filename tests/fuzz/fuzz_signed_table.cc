// libFuzzer target for the signed envelope (runtime/verify, docs/signing.md): any bytes must load
// cleanly or be refused with a status, with a key pinned (a fixed key pair from a constant seed,
// the one the corpus is signed with) and with none (the envelope unwrapped unchecked, then the
// payload loaded), and never load past the pinned key unless the signature holds.
#include <sodium.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "runtime/verify/keys.h"
#include "runtime/verify/signed_table.h"

namespace {

// crypto_sign_seed_keypair of 32 bytes of 0x5a: tests/data/fuzz/signed_table/corpus is signed by
// it.
const replaygate::verify::PublicKey& fuzz_key() {
  static const replaygate::verify::PublicKey key = [] {
    replaygate::verify::init();
    unsigned char seed[crypto_sign_SEEDBYTES];
    for (unsigned char& b : seed) b = 0x5a;
    unsigned char secret[crypto_sign_SECRETKEYBYTES];
    replaygate::verify::PublicKey k;
    crypto_sign_seed_keypair(k.key.data(), secret, seed);
    k.id = replaygate::verify::key_id_of(k.key.data());
    k.path = "fuzz.pub";
    return k;
  }();
  return key;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replaygate;
  verify::TrustOptions pinned;
  pinned.keys.push_back(fuzz_key());
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
