// The fuzz targets' pinned key: crypto_sign_seed_keypair of 32 bytes of 0x5a. The signed seeds of
// tests/data/fuzz/signed_table and tests/data/fuzz/audit_verify are signed by it, so the fuzzer
// starts from inputs whose signatures hold.
#pragma once

#include <sodium.h>

#include "runtime/verify/keys.h"

namespace replaygate::fuzzing {

inline const verify::PublicKey& fuzz_key() {
  static const verify::PublicKey key = [] {
    verify::init();
    unsigned char seed[crypto_sign_SEEDBYTES];
    for (unsigned char& b : seed) b = 0x5a;
    unsigned char secret[crypto_sign_SECRETKEYBYTES];
    verify::PublicKey k;
    crypto_sign_seed_keypair(k.key.data(), secret, seed);
    k.id = verify::key_id_of(k.key.data());
    k.path = "fuzz.pub";
    return k;
  }();
  return key;
}

}  // namespace replaygate::fuzzing
