// --audit-sign-key, --checkpoint-every and --accept-repairs: the options, their checks and
// messages for every command that appends decisions or results (decide --audit, review --confirm,
// audit result, the gate). The key and signer they open live beside the log (audit/signing.h).
#pragma once

#include <string>

#include "audit/signing.h"

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

// The key and signer a command holds while it appends (audit/signing.h).
using audit::AuditSigning;

// Reads `flags` into *out for `command` ("decide", for the usage hint). Returns false with the
// message on stderr (the caller exits 2): --checkpoint-every or --accept-repairs without
// --audit-sign-key, a count that is not a whole number from 1, or a secret key file that cannot be
// read, is not one, or is readable by group or others (audit::open_signing()). With no key given
// *out stays unsigned (get() is nullptr).
bool read_audit_signing(const AuditSignFlags& flags, const char* command, AuditSigning* out);

}  // namespace replaygate::cli
