// Who may approve a plan and whether a plan and its approvals hold (docs/plans.md): the users
// file, an approval's Ed25519 signature, and verify() as data.
//
// In: a users file, an approver's secret key, a plan's digest and header, its approvals (from the
// ledger). Out: a signature, and a PlanVerdict: every finding as data, rendered by the CLI.
//
// The users file (shared with the console, docs/console.md, which writes it):
//   {"format_version":1,"users":[{"name":"alice","role":"approver","public_key":"KEY",
//     "password_hash":"$argon2id$...","disabled":false}]}
// roles viewer|operator|approver; KEY is 64 hex digits (the Ed25519 key) or the path of a
// replaygate public key file (runtime/verify/keys.h; relative paths from the users file's folder).
// Only role approver may approve a plan. Names are unique. password_hash (optional) is an
// Argon2id string of libsodium's crypto_pwhash_str: the console's login; disabled (optional,
// default false) takes a user out: no console login, no new approval, and their approvals stop
// counting (a disabled approver is how a lost key or a departed person is handled).
//
// The signed message: "replaygate plan approval v1\0" + digest + "\0" + approver + "\0" + reason
// + "\0" + approved_at (RFC 3339 UTC, as ledger::format_time writes it).
//
// Threads: any.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redrive/plan/plan.h"
#include "runtime/verify/keys.h"

namespace replaygate::plan {

struct User {
  std::string name, role;  // role: viewer|operator|approver
  verify::PublicKey key;
  bool has_key = false;
  std::string password_hash;  // "$argon2id$..." or "" (no console login)
  bool disabled = false;
};
struct Users {
  std::vector<User> users;
  const User* find(std::string_view name) const;
  // The user whose key has this id, or null.
  const User* by_key(const verify::KeyId& id) const;
};

// Reads a users file: "" or what is wrong ("users.json: user 2: role 'admin' is not one of
// viewer, operator, approver"). `base_dir` resolves relative key paths.
std::string read_users(std::istream& in, const std::string& name, const std::string& base_dir,
                       Users* out);
std::string read_users_file(const std::string& path, Users* out);

// One approval as the ledger keeps it (ledger::PlanApproval's fields).
struct Approval {
  std::string digest, approver, key_id, signature, reason, approved_at;
};

std::string approval_message(std::string_view digest, std::string_view approver,
                             std::string_view reason, std::string_view approved_at);
// The approval signed with `key` (key_id and signature set).
Approval sign_approval(const verify::SecretKey& key, std::string digest, std::string approver,
                       std::string reason, std::string approved_at);
// Why `approval` does not count for `users` ("" : it counts): an unknown approver, one who is not
// an approver, a key id that is not the approver's key, a bad signature.
std::string approval_problem(const Approval& approval, const Users& users);

// What `plan approve` refuses before anything is written: the approver is the author, is not a
// listed approver, or the key is not theirs. "" or the exact message.
std::string approve_refusal(const PlanHeader& header, std::string_view approver,
                            const verify::SecretKey& key, const Users& users,
                            const std::string& users_path);

// One finding of verify().
struct Finding {
  std::string code;     // "digest", "approvals", "approval", "expired", "cancelled", "table"
  std::string message;  // one sentence
};
struct PlanVerdict {
  bool valid = false;
  int64_t required = 0;                  // approvals the plan needs besides its author
  std::vector<std::string> approved_by;  // approvals that count, by approver
  std::vector<Finding> findings;         // why it is not valid (and approvals that do not count)
};

struct VerifyInput {
  const PlanRead* plan = nullptr;   // read_plan's result (ok)
  std::vector<Approval> approvals;  // the ledger's for the plan's digest
  const Users* users = nullptr;
  int64_t policy_required = 0;                // what the policy asks (the plan may only raise it)
  std::string now;                            // RFC 3339 UTC: an expired plan is not valid
  bool recorded = true;                       // the ledger knows the plan
  std::optional<std::string> cancelled;       // "by NAME at TIME: REASON" when cancelled
  std::optional<std::string> table_checksum;  // the table it would run on, when known
};
PlanVerdict verify_plan(const VerifyInput& input);

}  // namespace replaygate::plan
