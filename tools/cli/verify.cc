// `replaygate verify TABLE [--policy POLICY]`: does a deployed table load, and does it decide
// exactly as the reviewed source (compiler/equivalence.h)?
//
// Without --policy: every loader check (Table::load_file), then the table's identity. With
// --policy: the same, then the table is lifted and compared region by region with the checked
// policy. Exit: 0 valid (and equivalent), 1 not (the reason, and a letter decided differently when
// a region differs), 2 usage, I/O, a policy with errors, or a comparison that ran out of budget.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "common/escape.h"
#include "compiler/compile.h"
#include "compiler/equivalence.h"
#include "runtime/table.h"
#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

struct VerifyOptions {
  std::string table;
  std::string policy;  // empty: no equivalence check
  std::string format = "text";
  TrustFlags trust;
};

// What verify found, for both renderers.
struct Verdict {
  bool ok = false;
  std::string reason;          // !ok: why (a load error or the first difference)
  std::string counterexample;  // !ok and a region differs: one JSON letter
  const Table* table = nullptr;
  verify::Verified signature;  // what the envelope said (table loaded)
  std::string policy_digest;   // --policy only
  uint64_t regions = 0;        // --policy only
};

std::string render_json(const VerifyOptions& o, const Verdict& v) {
  std::string out = "{\"table\": " + json_string(o.table);
  if (!o.policy.empty()) out += ", \"policy\": " + json_string(o.policy);
  out += std::string(", \"valid\": ") + (v.table != nullptr ? "true" : "false");
  if (!o.policy.empty()) out += std::string(", \"equivalent\": ") + (v.ok ? "true" : "false");
  if (v.table != nullptr) {
    out += ", \"policy_id\": " + json_string(std::string(v.table->policy_id())) +
           ", \"revision\": " + std::to_string(v.table->revision()) +
           ", \"table_checksum\": " + json_string(v.table->checksum_hex()) +
           ", \"signed\": " + (v.signature.is_signed ? "true" : "false") +
           ", \"signature_checked\": " + (v.signature.checked ? "true" : "false");
    if (v.signature.is_signed) {
      out += ", \"key_id\": " + json_string(verify::hex(v.signature.key_id)) + ", \"expires\": " +
             (v.signature.expires_at == 0 ? std::string("null")
                                          : json_string(verify::utc_text(v.signature.expires_at)));
    }
  }
  if (!v.policy_digest.empty()) {
    out += ", \"policy_digest\": " + json_string(v.policy_digest) +
           ", \"regions\": " + std::to_string(v.regions);
  }
  if (!v.ok) {
    out += ", \"reason\": " + json_string(v.reason) + ", \"counterexample\": " +
           (v.counterexample.empty() ? std::string("null") : v.counterexample);
  }
  return out + "}\n";
}

// "signed by key K (P.pub), verified", "signed by key K, signature not checked (no
// --trusted-key)", "unsigned"; with the expiry when there is one.
std::string signature_text(const verify::Verified& s) {
  if (!s.is_signed) return "unsigned";
  std::string out = "signed by key " + verify::hex(s.key_id);
  out += s.checked ? " (" + escape_control(s.key_path, Backslash::kKeep) + "), verified"
                   : ", signature not checked (no --trusted-key)";
  if (s.expires_at != 0) out += ", expires " + verify::utc_text(s.expires_at);
  return out;
}

std::string render_text(const VerifyOptions& o, const Verdict& v) {
  const std::string table = escape_control(o.table, Backslash::kKeep);
  const std::string policy = escape_control(o.policy, Backslash::kKeep);
  if (v.table == nullptr) return "invalid: " + table + ": " + escape_control(v.reason) + "\n";
  const std::string identity = "policy " + escape_control(std::string(v.table->policy_id())) +
                               " revision " + std::to_string(v.table->revision()) +
                               ", table checksum " + v.table->checksum_hex() + ", " +
                               signature_text(v.signature);
  if (o.policy.empty()) return "valid: " + table + " (" + identity + ")\n";
  const std::string compared = "policy digest " + v.policy_digest + ", " + identity + ", " +
                               plural(v.regions, "region") + " compared";
  if (v.ok)
    return "equivalent: " + table + " decides exactly as " + policy + " (" + compared + ")\n";
  std::string out = "not equivalent: " + table + " does not decide as " + policy + ": " +
                    escape_control(v.reason) + "\n  (" + compared + ")\n";
  if (!v.counterexample.empty()) out += "  e.g. " + escape_control(v.counterexample) + "\n";
  return out;
}

int run_verify(const VerifyOptions& options) {
  if (options.format != "text" && options.format != "json") {
    std::fprintf(stderr, "replaygate: error: --format must be text or json, not '%s'\n",
                 escape_control(options.format).c_str());
    return kExitUsage;
  }
  // The policy first: a source that does not compile cannot be verified against (exit 2), and
  // its diagnostics come before any verdict.
  LoadedPolicy loaded;
  if (!options.policy.empty()) {
    const int code = load_policy_reporting(options.policy, DiagnosticFormat::kText, &loaded);
    if (code != kExitOk) {
      if (code == kExitFindings) {
        std::fprintf(stderr,
                     "replaygate: error: %s has errors; a table cannot be verified "
                     "against it\n",
                     escape_control(options.policy, Backslash::kKeep).c_str());
      }
      return kExitUsage;
    }
  }
  Verdict verdict;
  verify::TrustOptions trust;
  if (!read_trust(options.trust, &trust)) return kExitUsage;
  LoadStatus status;
  const std::unique_ptr<Table> table =
      verify::load_table_file(options.table, trust, &verdict.signature, &status);
  if (table == nullptr) {
    // A file that cannot be read is an I/O error; one the loader refuses is a finding.
    if (status.error == LoadError::kIo) {
      std::fprintf(stderr, "%s\n", describe_load_failure(options.table, status).c_str());
      return kExitUsage;
    }
    const std::string name = load_error_name(status.error);
    verdict.reason =
        status.message.rfind(name + ":", 0) == 0 ? status.message : name + ": " + status.message;
  } else {
    verdict.table = table.get();
    verdict.ok = true;
    if (loaded.policy) {
      const Equivalence same = check_equivalence(*loaded.policy, *table);
      if (same.status == Equivalence::Status::kUnknown) {
        std::fprintf(stderr, "replaygate: error: %s\n", same.mismatch.c_str());
        return kExitUsage;
      }
      verdict.ok = same.equal();
      verdict.reason = same.mismatch;
      verdict.counterexample = same.counterexample;
      verdict.policy_digest = loaded.policy->source_digest;
      verdict.regions = same.regions;
    }
  }
  const std::string text =
      options.format == "json" ? render_json(options, verdict) : render_text(options, verdict);
  if (!print_to_stdout(text, "the verdict")) return kExitUsage;
  return verdict.ok ? kExitOk : kExitFindings;
}

}  // namespace

Runner setup_verify(CLI::App& sub) {
  auto options = std::make_shared<VerifyOptions>();
  sub.footer(
      "Check a frozen table: every structural check of the loader, then its policy id, revision\n"
      "and checksum, and whether it is signed. With --trusted-key, its signature must verify with\n"
      "one of those keys (an unsigned or otherwise signed table is invalid: exit 1). With "
      "--policy, also prove region by region that it decides exactly as\n"
      "POLICY (the reviewed source): same verbs, default, rule catalog, fields, and the same\n"
      "verb from the same rule for every input; prints the policy digest, the table checksum\n"
      "and the number of regions compared.\n"
      "Exit: 0 valid (and equivalent), 1 not (with the reason; a letter decided differently\n"
      "when a region differs), 2 usage/I/O, a policy with errors, or a comparison too large to\n"
      "finish.");
  sub.add_option("TABLE", options->table, "The frozen table to check (e.g. gate.rgt)")->required();
  sub.add_option("--policy", options->policy,
                 "The reviewed policy (.policy or .yaml) the table must decide exactly as");
  sub.add_option("--format", options->format, "text (default) or json");
  add_trust_options(sub, &options->trust, /*acting=*/false);
  return [options] { return run_verify(*options); };
}

}  // namespace replaygate::cli
