// The signing key a writer holds while it appends to an audit log, and the checkpoint signer that
// points at it (checkpoint.h): what decide --audit, review --confirm, audit result and the gate
// hand to audit::append*. In: a secret key file (runtime/verify/keys.h), the checkpoint interval
// and whether repairs after the last checkpoint may be signed over. Out: an AuditSigning whose
// get() is the signer, or nullptr when unsigned. The CLI's --audit-sign-key, --checkpoint-every
// and --accept-repairs read into it (tools/cli/audit_signing.h).
#pragma once

#include <cstdint>
#include <string>

#include "audit/checkpoint.h"
#include "runtime/verify/keys.h"

namespace replaygate::audit {

// The key (wiped when destroyed) and the signer that points at it. Not copyable or movable (the
// signer points into it): make it where it is used.
struct AuditSigning {
  verify::SecretKey key;
  CheckpointSigner signer;
  // The signer to pass to audit::append*, nullptr when no key was opened.
  const CheckpointSigner* get() const { return signer.key != nullptr ? &signer : nullptr; }
};

// Reads the secret key at `key_path` into *out and points its signer at it: a checkpoint after
// every `every` (>= 1) entries, and `accept_repairs` as given. False with *error set when the file
// cannot be read, is not a secret key, or is readable by group or others (verify::
// read_secret_key's reasons); *out is then unsigned.
bool open_signing(const std::string& key_path, uint64_t every, bool accept_repairs,
                  AuditSigning* out, std::string* error);

}  // namespace replaygate::audit
