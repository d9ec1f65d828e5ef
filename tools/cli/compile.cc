// `replaygate compile POLICY -o TABLE`: check a policy, lower it, prove the table decides exactly
// as the policy (compiler/equivalence.h), write the table atomically.
//
// On any error diagnostic nothing is written, and an existing TABLE keeps its old content. A
// table that does not load or does not decide as the policy is an internal error (exit 2), and
// nothing is written either.
// `-o -` writes the table's bytes to standard output instead, which must not be a terminal.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/escape.h"
#include "compiler/equivalence.h"
#include "compiler/lower.h"
#include "compiler/timings.h"
#include "runtime/verify/signed_table.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

struct CompileOptions {
  std::string policy;
  std::string output;
  std::string format = "text";
  bool timings = false;
  std::string sign_key;  // --sign-key: write a signed table (docs/signing.md)
  std::string expires;   // --expires TIME (with --sign-key)
};

// `--timings`: one line per stage on stderr, "timing: <stage> <wall> s wall <cpu> s cpu", then
// the total.
void print_timings(const StageTimings& timings) {
  StageTime total{"total"};
  for (const StageTime& t : timings) {
    std::fprintf(stderr, "timing: %-20s %8.3f s wall %8.3f s cpu\n", t.stage.c_str(),
                 t.wall_seconds, t.cpu_seconds);
    total.wall_seconds += t.wall_seconds;
    total.cpu_seconds += t.cpu_seconds;
  }
  std::fprintf(stderr, "timing: %-20s %8.3f s wall %8.3f s cpu\n", "total", total.wall_seconds,
               total.cpu_seconds);
}

// Test-only seam, set by tests/tools/compile_self_check_test.cc and nothing else: with
// REPLAYGATE_TEST_BREAK_LOWERING=verb (or =reason) the table is lowered from a copy of the policy
// whose last guard or row gives another verb (or reason), so the tests can watch the self-check
// below refuse a wrong lowering. It can only make compile fail: the check compares the table
// with the unbroken policy, so a table the seam breaks is never written.
ir::CheckedPolicy lowering_input(const ir::CheckedPolicy& policy) {
  const char* seam = std::getenv("REPLAYGATE_TEST_BREAK_LOWERING");
  if (seam == nullptr || policy.policy.rules.empty()) return policy;
  const std::string kind = seam;
  ir::CheckedPolicy broken = policy;
  ir::Rule& last = broken.policy.rules.back();
  const auto next_verb = [&](uint32_t v) {
    return static_cast<uint32_t>((v + 1) % broken.policy.verbs.size());
  };
  if (auto* guard = std::get_if<ir::Guard>(&last)) {
    if (kind == "verb") guard->verb = next_verb(guard->verb);
    if (kind == "reason") guard->reason += " (broken)";
  } else if (auto* table = std::get_if<ir::Table>(&last);
             table != nullptr && !table->rows.empty()) {
    if (kind == "verb") table->rows.back().verb = next_verb(table->rows.back().verb);
    if (kind == "reason") table->rows.back().reason += " (broken)";
  }
  return broken;
}

int run_compile(const CompileOptions& options) {
  DiagnosticFormat format;
  if (!parse_diagnostic_format(options.format, &format)) {
    std::fprintf(stderr, "replaygate: error: --format must be text or json, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  const bool to_stdout = options.output == "-";
  if (to_stdout) {
    // Binary bytes on a terminal are garbage and can drive it; JSON diagnostics would share the
    // stream with them; `compile P -o - >> P` would append a table to its own policy.
    const char* why = nullptr;
    if (::isatty(STDOUT_FILENO)) {
      why =
          "standard output is a terminal; redirect it (-o - > gate.rgt, or a pipe) or name the "
          "table file";
    } else if (format == DiagnosticFormat::kJson) {
      why =
          "--format json prints the diagnostics on standard output too; use --format text, or "
          "name the table file";
    }
    const std::string same = stdout_is_input({InputFile{options.policy, "the policy file"}});
    if (why != nullptr || !same.empty()) {
      std::fprintf(stderr,
                   "replaygate: error: -o - writes the table's bytes to standard output, "
                   "but %s\n",
                   why != nullptr ? why : (same + "; redirect it elsewhere").c_str());
      return kExitUsage;
    }
  }
  const std::string shown =
      to_stdout ? "standard output" : escape_control(options.output, Backslash::kKeep);
  // The atomic rename replaces whatever is at TABLE: refuse anything but an old table, so that a
  // slip of the hand cannot turn the reviewed policy, a device or a symlink into table bytes.
  if (!to_stdout) {
    std::vector<InputFile> inputs;
    inputs.push_back(InputFile{options.policy, "the policy file"});
    std::string error;
    if (!check_output_file(options.output, inputs, " (e.g. gate.rgt)", &error)) {
      std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
      return kExitUsage;
    }
  }
  // The key before the policy: a key that cannot sign means nothing is compiled or written.
  verify::SecretKey key;
  int64_t expires_at = 0;
  if (!options.expires.empty() && options.sign_key.empty()) {
    std::fprintf(stderr,
                 "replaygate: error: --expires is a property of a signature: add "
                 "--sign-key S.key\n");
    return kExitUsage;
  }
  if (!options.expires.empty() && !parse_utc_time(options.expires, &expires_at)) {
    std::fprintf(stderr,
                 "replaygate: error: --expires takes a UTC time like 2027-01-31T00:00:00Z, not "
                 "'%s'\n",
                 escape_control(options.expires).c_str());
    return kExitUsage;
  }
  if (!options.sign_key.empty()) {
    std::string error;
    if (!verify::read_secret_key(options.sign_key, &key, &error)) {
      std::fprintf(stderr, "replaygate: error: --sign-key: %s\n", escape_control(error).c_str());
      return kExitUsage;
    }
  }
  LoadedPolicy loaded;
  const int code = load_policy_reporting(options.policy, format, &loaded);
  StageClock clock(&loaded.timings);
  if (code != kExitOk) {
    if (options.timings) print_timings(loaded.timings);
    if (code == kExitFindings) {
      std::fprintf(stderr, "%s: errors found; %s not written\n",
                   escape_control(options.policy, Backslash::kKeep).c_str(), shown.c_str());
    }
    return code;
  }
  const std::vector<uint8_t> bytes = lower(lowering_input(*loaded.policy));
  clock.lap("lower");
  // Load what we are about to publish: never write a table the runtime would refuse.
  LoadStatus status;
  const std::unique_ptr<Table> table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  clock.lap("verify");
  if (table == nullptr) {
    std::fprintf(stderr, "replaygate: internal error: the compiled table does not load: %s: %s\n",
                 load_error_name(status.error), status.message.c_str());
    return kExitUsage;
  }
  // Prove the table decides exactly as the checked policy before anyone can deploy it: what runs
  // is then what was reviewed, whatever lower() got wrong.
  const Equivalence same = check_equivalence(*loaded.policy, *table);
  clock.lap("self-check");
  // A policy too large to compare within the region budget is not refused (the loader's checks
  // still held); the note says the proof is partial. Any difference found is.
  if (same.status == Equivalence::Status::kUnknown) {
    std::fprintf(stderr, "replaygate: note: the self-check is incomplete: %s\n",
                 same.mismatch.c_str());
  } else if (!same.equal()) {
    std::fprintf(stderr,
                 "replaygate: internal error: the compiled table does not decide as %s: %s%s%s; "
                 "%s not written (please report this)\n",
                 escape_control(options.policy, Backslash::kKeep).c_str(), same.mismatch.c_str(),
                 same.counterexample.empty() ? "" : "; for example ", same.counterexample.c_str(),
                 shown.c_str());
    if (options.timings) print_timings(loaded.timings);
    return kExitUsage;
  }
  std::string error;
  std::vector<uint8_t> signed_bytes;
  if (!options.sign_key.empty()) {
    if (!verify::sign_table(bytes.data(), bytes.size(), key, expires_at, &signed_bytes, &error)) {
      std::fprintf(stderr, "replaygate: error: cannot sign the table: %s; %s not written\n",
                   error.c_str(), shown.c_str());
      return kExitUsage;
    }
    clock.lap("sign");
  }
  const std::vector<uint8_t>& out = options.sign_key.empty() ? bytes : signed_bytes;
  const std::string_view view(reinterpret_cast<const char*>(out.data()), out.size());
  if (to_stdout) {
    if (!print_to_stdout(view, "the table")) return kExitUsage;
  } else if (!write_file_atomically(options.output, view, &error)) {
    std::fprintf(stderr, "replaygate: %s\n", error.c_str());
    return kExitUsage;
  }
  clock.lap("write");
  if (options.timings) print_timings(loaded.timings);
  // One line, whatever the file names or the policy id hold (the checker refuses an id with
  // control characters; the names come from the command line, perhaps from a pull request's glob).
  const std::string signature =
      options.sign_key.empty()
          ? std::string()
          : ", signed by key " + verify::hex(key.id) +
                (expires_at == 0 ? std::string() : ", expires " + verify::utc_text(expires_at));
  std::fprintf(stderr, "%s: wrote %s (%zu bytes, policy %s revision %lld, checksum %s%s)\n",
               escape_control(options.policy, Backslash::kKeep).c_str(), shown.c_str(), out.size(),
               escape_control(table->policy_id()).c_str(),
               static_cast<long long>(table->revision()), table->checksum_hex().c_str(),
               signature.c_str());
  return kExitOk;
}

}  // namespace

Runner setup_compile(CLI::App& sub) {
  auto options = std::make_shared<CompileOptions>();
  sub.footer(
      "Compile POLICY into a frozen decision table. Diagnostics go to stderr (text) or stdout\n"
      "(--format json). The table is checked to decide exactly as POLICY, region by region,\n"
      "before it is written. On errors nothing is written and an existing TABLE is left\n"
      "intact; otherwise TABLE is replaced atomically. Exit: 0 written, 1 policy errors,\n"
      "2 usage/I/O or internal errors (a table that does not decide as POLICY).");
  sub.add_option("POLICY", options->policy, "Policy file (.policy or .yaml)")->required();
  sub.add_option("-o,--output", options->output,
                 "Table file to write (e.g. gate.rgt); - writes the bytes to standard output "
                 "(not a terminal)")
      ->required();
  sub.add_option("--format", options->format, "Diagnostics format: text (default) or json");
  sub.add_flag(
      "--timings", options->timings,
      "Print the wall and CPU time of each stage (read, parse, check, analysis, lower, verify, "
      "self-check, write) to stderr");
  sub.add_option("--sign-key", options->sign_key,
                 "Sign the table with this secret key (replaygate key generate); workers pin the "
                 "public key with --trusted-key");
  sub.add_option("--expires", options->expires,
                 "With --sign-key: refuse the table after this UTC time (e.g. "
                 "2027-01-31T00:00:00Z)");
  return [options] { return run_compile(*options); };
}

}  // namespace replaygate::cli
