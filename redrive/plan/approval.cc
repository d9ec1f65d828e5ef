// The users file, approval signatures and plan verification (approval.h).
#include "redrive/plan/approval.h"

#include <sodium.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "ledger/ledger.h"

namespace replaygate::plan {
namespace {

using nlohmann::json;

constexpr size_t kSignatureBytes = crypto_sign_BYTES;

std::string read_key(const json& value, const std::string& base_dir, User* user) {
  if (!value.is_string()) return "\"public_key\" is not a string";
  const std::string text = value.get<std::string>();
  if (text.size() == 2 * verify::kPublicKeyBytes &&
      verify::unhex(text, user->key.key.data(), user->key.key.size())) {
    user->key.id = verify::key_id_of(user->key.key.data());
    user->key.path = "inline";
    user->has_key = true;
    return "";
  }
  if (text.empty()) return "\"public_key\" is empty";
  const std::string path = text[0] == '/' || base_dir.empty() ? text : base_dir + "/" + text;
  std::string error;
  if (!verify::read_public_key(path, &user->key, &error)) return error;
  user->has_key = true;
  return "";
}

// The console's fields (docs/console.md): an Argon2id hash string and the disabled flag.
std::string read_login(const json& u, User* user) {
  if (const auto hash = u.find("password_hash"); hash != u.end()) {
    // crypto_pwhash_str writes at most crypto_pwhash_STRBYTES - 1 characters.
    if (!hash->is_string() || hash->get_ref<const std::string&>().rfind("$argon2id$", 0) != 0 ||
        hash->get_ref<const std::string&>().size() >= crypto_pwhash_STRBYTES) {
      return "\"password_hash\" is not an Argon2id hash string (\"$argon2id$...\", as "
             "'replaygate console user add' writes it)";
    }
    user->password_hash = hash->get<std::string>();
  }
  if (const auto disabled = u.find("disabled"); disabled != u.end()) {
    if (!disabled->is_boolean()) return "\"disabled\" is not true or false";
    user->disabled = disabled->get<bool>();
  }
  return "";
}

}  // namespace

const User* Users::find(std::string_view name) const {
  for (const User& u : users) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

const User* Users::by_key(const verify::KeyId& id) const {
  for (const User& u : users) {
    if (u.has_key && u.key.id == id) return &u;
  }
  return nullptr;
}

std::string read_users(std::istream& in, const std::string& name, const std::string& base_dir,
                       Users* out) {
  verify::init();
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    uint64_t line = 0, column = 0;
    const std::string reason = json_reason(e.what(), &line, &column);
    return name + (line == 0 ? "" : ":" + std::to_string(line) + ":" + std::to_string(column)) +
           ": not JSON: " + reason;
  }
  if (!j.is_object()) return name + ": not a users file: not a JSON object";
  // A typo never loosens anything ("disabld": true would leave a user enabled): unknown keys are
  // refused, as console.yaml's are.
  for (const auto& item : j.items()) {
    if (item.key() != "format_version" && item.key() != "users") {
      return name + ": unknown key \"" + item.key() +
             "\" (a users file has format_version and users)";
    }
  }
  const auto version = j.find("format_version");
  if (version == j.end() || !version->is_number_integer() || *version != 1) {
    return name + ": not a users file of format_version 1";
  }
  const auto users = j.find("users");
  if (users == j.end() || !users->is_array()) return name + ": \"users\" is missing or not a list";
  out->users.clear();
  std::set<std::string> names;
  size_t n = 0;
  for (const json& u : *users) {
    ++n;
    const std::string where = name + ": user " + std::to_string(n) + ": ";
    if (!u.is_object()) return where + "not an object";
    for (const auto& item : u.items()) {
      static const char* const kKeys[] = {"name", "role", "public_key", "password_hash",
                                          "disabled"};
      if (std::find(std::begin(kKeys), std::end(kKeys), item.key()) == std::end(kKeys)) {
        return where + "unknown key \"" + item.key() +
               "\" (a user has name, role, public_key, password_hash and disabled)";
      }
    }
    const auto uname = u.find("name");
    const auto role = u.find("role");
    if (uname == u.end() || !uname->is_string() || uname->get<std::string>().empty()) {
      return where + "\"name\" is missing or not a non-empty string";
    }
    if (role == u.end() || !role->is_string()) return where + "\"role\" is missing";
    User user;
    user.name = uname->get<std::string>();
    if (std::any_of(user.name.begin(), user.name.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
      return where + "\"name\" contains a control character";
    }
    user.role = role->get<std::string>();
    if (user.role != "viewer" && user.role != "operator" && user.role != "approver") {
      return where + "role '" + user.role + "' is not one of viewer, operator, approver";
    }
    if (!names.insert(user.name).second) return where + "'" + user.name + "' is listed twice";
    if (const auto key = u.find("public_key"); key != u.end()) {
      if (const std::string why = read_key(*key, base_dir, &user); !why.empty()) {
        return where + why;
      }
    }
    if (const std::string why = read_login(u, &user); !why.empty()) return where + why;
    if (user.role == "approver" && !user.has_key) {
      return where + "approver '" + user.name + "' has no \"public_key\"";
    }
    out->users.push_back(std::move(user));
  }
  return "";
}

std::string read_users_file(const std::string& path, Users* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read users file " + path + ": " + std::strerror(errno);
  const size_t slash = path.rfind('/');
  return read_users(in, path, slash == std::string::npos ? "" : path.substr(0, slash), out);
}

std::string approval_message(std::string_view digest, std::string_view approver,
                             std::string_view reason, std::string_view approved_at) {
  std::string m("replaygate plan approval v1");
  m.push_back('\0');
  m.append(digest).push_back('\0');
  m.append(approver).push_back('\0');
  m.append(reason).push_back('\0');
  m.append(approved_at);
  return m;
}

Approval sign_approval(const verify::SecretKey& key, std::string digest, std::string approver,
                       std::string reason, std::string approved_at) {
  verify::init();
  Approval a{std::move(digest), std::move(approver),   verify::hex(key.id), "",
             std::move(reason), std::move(approved_at)};
  const std::string m = approval_message(a.digest, a.approver, a.reason, a.approved_at);
  uint8_t signature[kSignatureBytes];
  crypto_sign_detached(signature, nullptr, reinterpret_cast<const uint8_t*>(m.data()), m.size(),
                       key.key.data());
  a.signature = verify::hex(signature, sizeof signature);
  return a;
}

std::string approval_problem(const Approval& a, const Users& users) {
  const User* user = users.find(a.approver);
  if (user == nullptr) return "approver '" + a.approver + "' is not listed in the users file";
  if (user->role != "approver") {
    return "'" + a.approver + "' is a " + user->role + ", not an approver";
  }
  if (user->disabled) return "approver '" + a.approver + "' is disabled in the users file";
  if (a.key_id != verify::hex(user->key.id)) {
    return "the approval by '" + a.approver + "' is signed by key " + a.key_id +
           ", which is not their key (" + verify::hex(user->key.id) + ")";
  }
  uint8_t signature[kSignatureBytes];
  if (!verify::unhex(a.signature, signature, sizeof signature)) {
    return "the approval by '" + a.approver + "' has no valid signature";
  }
  const std::string m = approval_message(a.digest, a.approver, a.reason, a.approved_at);
  if (crypto_sign_verify_detached(signature, reinterpret_cast<const uint8_t*>(m.data()), m.size(),
                                  user->key.key.data()) != 0) {
    return "the approval by '" + a.approver + "' has a signature that does not verify";
  }
  return "";
}

std::string approve_refusal(const PlanHeader& header, std::string_view approver,
                            const verify::SecretKey& key, const Users& users,
                            const std::string& users_path) {
  if (approver == header.author) {
    return "'" + std::string(approver) +
           "' is the plan's author and cannot approve it: a second person must";
  }
  const User* by_key = users.by_key(key.id);
  if (by_key == nullptr) {
    return "the key " + verify::hex(key.id) + " is not listed in " + users_path +
           ": the approval would not count";
  }
  if (by_key->name != approver) {
    return "the key " + verify::hex(key.id) + " is " + by_key->name + "'s, not " +
           std::string(approver) + "'s";
  }
  if (by_key->role != "approver") {
    return "'" + std::string(approver) + "' is a " + by_key->role + " in " + users_path +
           ", not an approver";
  }
  if (by_key->disabled) return "'" + std::string(approver) + "' is disabled in " + users_path;
  return "";
}

PlanVerdict verify_plan(const VerifyInput& in) {
  PlanVerdict v;
  const PlanRead& plan = *in.plan;
  v.required = std::max(plan.header.required_approvals, in.policy_required);
  if (plan.digest != plan.computed_digest) {
    v.findings.push_back({"digest", "the plan says its digest is " + plan.digest +
                                        " but its content hashes to " + plan.computed_digest +
                                        ": the plan was edited after it was built"});
  }
  if (!in.recorded) {
    v.findings.push_back(
        {"recorded", "the ledger has no plan " + plan.digest + " (never built or approved here)"});
  }
  if (in.cancelled) {
    v.findings.push_back({"cancelled", "the plan was cancelled " + *in.cancelled});
  }
  // RFC 3339 UTC texts of one format compare as times.
  if (!in.now.empty() && plan.header.expires_at <= in.now) {
    v.findings.push_back({"expired", "the plan expired at " + plan.header.expires_at});
  }
  if (in.table_checksum && *in.table_checksum != plan.header.table_checksum) {
    v.findings.push_back({"table", "the table's checksum is " + *in.table_checksum +
                                       "; the plan was built on " + plan.header.table_checksum +
                                       ": build and approve a new plan"});
  }
  std::set<std::string> counted;
  for (const Approval& a : in.approvals) {
    std::string why = a.digest != plan.computed_digest
                          ? "the approval by '" + a.approver + "' is for another digest"
                          : approval_problem(a, *in.users);
    if (why.empty() && a.approver == plan.header.author) {
      why = "'" + a.approver + "' is the plan's author: their approval does not count";
    }
    if (why.empty() && !counted.insert(a.approver).second) continue;
    if (!why.empty()) {
      v.findings.push_back({"approval", why});
      continue;
    }
    v.approved_by.push_back(a.approver);
  }
  if (static_cast<int64_t>(v.approved_by.size()) < v.required) {
    v.findings.push_back({"approvals", "the plan has " + std::to_string(v.approved_by.size()) +
                                           " of the " + std::to_string(v.required) +
                                           " approval(s) it needs"});
  }
  v.valid = true;
  for (const Finding& f : v.findings) {
    if (f.code != "approval") v.valid = false;
  }
  return v;
}

}  // namespace replaygate::plan
