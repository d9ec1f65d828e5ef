// --audit-sign-key and --checkpoint-every: the signed checkpoints (audit/checkpoint.h) of every
// command that appends decisions or results (decide --audit, review --confirm, audit result).
#pragma once

#include <string>

#include "audit/checkpoint.h"
#include "runtime/verify/keys.h"

namespace CLI {
class App;
}

namespace replaygate::cli {

struct AuditSignFlags {
  std::string key_path;         // --audit-sign-key S.key ("" : no checkpoints)
  std::string every;            // --checkpoint-every N, parsed by read_audit_signing (default 1000)
  bool accept_repairs = false;  // --accept-repairs: sign over repairs after the last checkpoint
};

// Adds the three options to `sub`.
void add_audit_sign_options(CLI::App& sub, AuditSignFlags* flags);

// The signing key a command holds while it appends (wiped when destroyed) and the signer that
// points at it. Not copyable or movable: make it where it is used.
struct AuditSigning {
  verify::SecretKey key;
  audit::CheckpointSigner signer;
  // The signer to pass to audit::append*, nullptr when no --audit-sign-key was given.
  const audit::CheckpointSigner* get() const { return signer.key != nullptr ? &signer : nullptr; }
};

// Reads `flags` into *out for `command` ("decide", for the usage hint). Returns false with the
// message on stderr (the caller exits 2): --checkpoint-every or --accept-repairs without
// --audit-sign-key, a count
// that is not a whole number from 1, or a secret key file that cannot be read, is not one, or is
// readable by group or others. With no key given *out stays unsigned (get() is nullptr).
bool read_audit_signing(const AuditSignFlags& flags, const char* command, AuditSigning* out);

}  // namespace replaygate::cli
