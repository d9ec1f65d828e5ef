// Opening a writer's audit signing key (see signing.h).
#include "audit/signing.h"

namespace replaygate::audit {

bool open_signing(const std::string& key_path, uint64_t every, bool accept_repairs,
                  AuditSigning* out, std::string* error) {
  if (!verify::read_secret_key(key_path, &out->key, error)) return false;
  out->signer.key = &out->key;
  out->signer.every = every;
  out->signer.accept_repairs = accept_repairs;
  return true;
}

}  // namespace replaygate::audit
