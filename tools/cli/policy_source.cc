// Policy loading with diagnostics, and opening tables from a policy or a file (see
// policy_source.h).
#include "tools/cli/policy_source.h"

#include <cstdio>

#include "compiler/lower.h"
#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

// Reports a compiled policy's diagnostics; 0 when it has no errors, else 1 (2 when the JSON
// diagnostics cannot be written).
int report_loaded(const LoadedPolicy& loaded, DiagnosticFormat format) {
  if (!report_diagnostics(loaded.diagnostics, loaded.source_text, format)) return kExitUsage;
  if (has_errors(loaded.diagnostics) || !loaded.policy.has_value()) return kExitFindings;
  return kExitOk;
}

}  // namespace

bool parse_diagnostic_format(const std::string& word, DiagnosticFormat* format) {
  if (word == "text") {
    *format = DiagnosticFormat::kText;
    return true;
  }
  if (word == "json") {
    *format = DiagnosticFormat::kJson;
    return true;
  }
  return false;
}

bool report_diagnostics(const std::vector<Diagnostic>& diagnostics, const std::string& source,
                        DiagnosticFormat format) {
  if (format == DiagnosticFormat::kJson) {
    std::string json = render_json(diagnostics);
    if (json.empty() || json.back() != '\n') json += '\n';
    return print_to_stdout(json, "the diagnostics");
  }
  if (diagnostics.empty()) return true;
  const std::string text = render_text(diagnostics, source);
  std::fwrite(text.data(), 1, text.size(), stderr);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', stderr);
  return true;
}

int load_policy_reporting(const std::string& path, DiagnosticFormat format, LoadedPolicy* loaded) {
  *loaded = load_policy_file(path);
  if (loaded->io_error) {
    std::fprintf(
        stderr, "replaygate: %s\n",
        loaded->io_message.empty() ? ("cannot read " + path).c_str() : loaded->io_message.c_str());
    return kExitUsage;
  }
  return report_loaded(*loaded, format);
}

int compile_policy_reporting(std::string_view text, const std::string& path,
                             DiagnosticFormat format, LoadedPolicy* loaded) {
  *loaded = load_policy_text(text, path);
  return report_loaded(*loaded, format);
}

int open_table(const std::string& policy_path, const std::string& table_path,
               std::unique_ptr<Table>* table, std::vector<std::string>* sensitive,
               const TrustFlags* trust) {
  if (sensitive != nullptr) sensitive->clear();
  const TrustFlags none;
  if (trust == nullptr) trust = &none;
  LoadStatus status;
  if (!table_path.empty()) return load_table_trusted(table_path, *trust, table);
  if (trust->any()) {
    std::fprintf(stderr,
                 "replaygate: error: --trusted-key, --require-signed and --trust-state check a "
                 "signed table, and a policy compiled in memory has no signature: run against "
                 "the signed table (--table gate.rgt)\n");
    return kExitUsage;
  }
  LoadedPolicy loaded;
  const int code = load_policy_reporting(policy_path, DiagnosticFormat::kText, &loaded);
  if (code != kExitOk) return code;
  if (sensitive != nullptr) *sensitive = loaded.policy->policy.sensitive;
  const std::vector<uint8_t> bytes = lower(*loaded.policy);
  *table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  if (*table == nullptr) {
    std::fprintf(stderr,
                 "replaygate: internal error: the table compiled from %s does not load: %s: %s\n",
                 policy_path.c_str(), load_error_name(status.error), status.message.c_str());
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace replaygate::cli
