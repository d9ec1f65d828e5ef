// `replaygate test POLICY [CASES.yaml ...]`: run example letters through the policy's table.
//
// The case file format and its rules: checks/case_file.h (and docs/cli.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "checks/case_file.h"
#include "common/escape.h"
#include "common/yaml_tree.h"
#include "compiler/check.h"
#include "compiler/interpret.h"
#include "compiler/lower.h"
#include "runtime/table.h"
#include "tools/cli/commands.h"
#include "tools/cli/coverage.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {

using checks::Case;
using checks::case_value;
using checks::kMaxCaseFileBytes;
using checks::read_case_file;

namespace {

struct TestOptions {
  std::string policy;
  std::vector<std::string> case_files;
  std::string format = "text";
  bool coverage = false;
  double min_coverage = -1;  // < 0: no threshold
};

std::string default_case_file(const std::string& policy) {
  for (const char* ext : {".yaml", ".yml"}) {
    const std::string e = ext;
    if (policy.size() > e.size() && policy.compare(policy.size() - e.size(), e.size(), e) == 0) {
      return policy.substr(0, policy.size() - e.size()) + ".test" + e;
    }
  }
  // A .policy file shares the YAML form's cases: X.policy -> X.test.yaml.
  const std::string dsl = ".policy";
  if (policy.size() > dsl.size() &&
      policy.compare(policy.size() - dsl.size(), dsl.size(), dsl) == 0) {
    return policy.substr(0, policy.size() - dsl.size()) + ".test.yaml";
  }
  return policy + ".test.yaml";
}

// Hands a letter to the runtime. A value of the wrong kind for its field makes the field invalid
// there, exactly as interpret() treats it. The strings must outlive decide().
void set_input(const Letter& letter, Input& input) {
  input.clear();
  for (uint32_t f = 0; f < letter.size(); ++f) {
    const LetterValue& v = letter[f];
    switch (v.kind) {
      case LetterValue::Kind::kMissing:
        break;
      case LetterValue::Kind::kNull:
        input.set_null(f);
        break;
      case LetterValue::Kind::kString:
        input.set_string(f, v.s);
        break;
      case LetterValue::Kind::kInt:
        input.set_int(f, v.i);
        break;
      case LetterValue::Kind::kBool:
        input.set_bool(f, v.b);
        break;
      case LetterValue::Kind::kInvalid:
        input.set_invalid(f);
        break;
    }
  }
}

struct CaseResult {
  std::string file;
  std::string name;
  bool passed = false;
  std::string expect_verb;
  std::string expect_rule;    // "" when the case names none
  std::string expect_reason;  // "" when the case names none
  bool has_expect_rule = false, has_expect_reason = false;
  std::string verb, rule, reason;
  std::string failure;  // the text form of the mismatch
};

std::string percent_text(double percent) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", percent);
  return buffer;
}

// The --min-coverage failure, with both numbers true and told apart: the coverage as its exact
// fraction and a percentage with as many decimals (at least one) as keep it below the
// threshold, and the threshold as its shortest decimal form. "3/16 (18.75%) is below
// --min-coverage 18.8%", not "18.8% is below 18.8%".
std::string below_min_text(const Coverage& cov, double threshold) {
  const double percent = cov.percent();
  char text[64] = "";
  for (int decimals = 1; decimals <= 15; ++decimals) {
    std::snprintf(text, sizeof text, "%.*f", decimals, percent);
    if (std::strtod(text, nullptr) < threshold) break;
  }
  char limit[64];
  const std::to_chars_result end = std::to_chars(limit, limit + sizeof limit - 1, threshold);
  *end.ptr = '\0';
  return "rule coverage " + std::to_string(cov.rules_covered()) + "/" +
         std::to_string(cov.rules_total()) + " (" + text + "%) is below --min-coverage " + limit +
         "%";
}

std::string json_document(const std::string& policy_path, const std::vector<CaseResult>& results,
                          const std::vector<Diagnostic>& case_diagnostics, size_t passed,
                          size_t failed, bool case_file_errors, const Coverage& cov,
                          const std::vector<Uncovered>& uncovered, const TestOptions& options) {
  using Json = nlohmann::ordered_json;
  Json doc;
  doc["policy"] = policy_path;
  Json cases = Json::array();
  for (const CaseResult& r : results) {
    Json c;
    c["file"] = r.file;
    c["name"] = r.name;
    c["status"] = r.passed ? "pass" : "fail";
    Json expected;
    expected["verb"] = r.expect_verb;
    if (r.has_expect_rule) expected["rule"] = r.expect_rule;
    if (r.has_expect_reason) expected["reason"] = r.expect_reason;
    c["expected"] = expected;
    c["actual"] = {{"verb", r.verb}, {"rule", r.rule}, {"reason", r.reason}};
    cases.push_back(std::move(c));
  }
  doc["cases"] = std::move(cases);
  // The case files' diagnostics, as lint --format json writes them (its renderer, parsed back).
  doc["diagnostics"] = Json::parse(render_json(case_diagnostics));
  doc["summary"] = {{"passed", passed}, {"failed", failed}, {"case_file_errors", case_file_errors}};
  Json coverage;
  coverage["rules"] = {{"covered", cov.rules_covered()},
                       {"total", cov.rules_total()},
                       {"percent", std::round(cov.percent() * 10) / 10}};
  coverage["guards"] = {{"covered", cov.guards_covered}, {"total", cov.guards_total}};
  coverage["rows"] = {{"covered", cov.rows_covered}, {"total", cov.rows_total}};
  coverage["invariants"] = {{"covered", cov.invariants_covered()},
                            {"total", cov.invariants.size()}};
  Json list = Json::array();
  for (const Uncovered& u : uncovered) {
    list.push_back({{"kind", u.kind}, {"id", u.id}, {"path", policy_path}, {"line", u.line}});
  }
  coverage["uncovered"] = std::move(list);
  if (options.min_coverage >= 0) {
    coverage["min_coverage"] = options.min_coverage;
    coverage["below_min"] = cov.percent() < options.min_coverage;
  }
  doc["coverage"] = std::move(coverage);
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

int run_test(const TestOptions& options) {
  if (options.format != "text" && options.format != "json") {
    std::fprintf(stderr, "replaygate test: error: --format must be text or json, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  const bool json = options.format == "json";
  LoadedPolicy loaded;
  if (const int code = load_policy_reporting(options.policy, DiagnosticFormat::kText, &loaded);
      code != kExitOk) {
    return code;
  }
  const ir::CheckedPolicy& checked = *loaded.policy;
  const ir::Policy& policy = checked.policy;
  std::unique_ptr<Table> table;
  {
    const std::vector<uint8_t> bytes = lower(checked);
    LoadStatus status;
    table = Table::load_bytes(bytes.data(), bytes.size(), &status);
    if (table == nullptr) {
      std::fprintf(stderr, "replaygate: internal error: the table compiled from %s does not load\n",
                   options.policy.c_str());
      return kExitUsage;
    }
  }
  Coverage cov = empty_coverage(policy);

  std::vector<std::string> files = options.case_files;
  if (files.empty()) files.push_back(default_case_file(options.policy));

  size_t passed = 0, failed = 0;
  bool case_file_errors = false;
  std::vector<CaseResult> results;
  std::vector<Diagnostic> case_diagnostics;  // --format json: reported in the document
  Input input(*table);
  for (const std::string& path : files) {
    std::string text, io_error;
    if (!read_whole_file(path, kMaxCaseFileBytes, &text, &io_error)) {
      std::fprintf(stderr, "replaygate: %s\n", io_error.c_str());
      return kExitUsage;
    }
    const yaml::Document document = yaml::parse(text, path);
    std::vector<Diagnostic> diagnostics = document.diagnostics;
    std::vector<Case> cases;
    if (document.ok()) {
      cases =
          read_case_file(document.root, path, options.policy, *table, policy, &diagnostics).cases;
    }
    sort_diagnostics(diagnostics);
    if (json) {
      case_diagnostics.insert(case_diagnostics.end(), diagnostics.begin(), diagnostics.end());
    } else {
      report_diagnostics(diagnostics, text, DiagnosticFormat::kText);
    }
    if (has_errors(diagnostics)) {
      std::fprintf(stderr, "%s: errors found; its cases were not run\n",
                   escape_control(path, Backslash::kKeep).c_str());
      case_file_errors = true;
      continue;
    }
    for (const Case& c : cases) {
      Letter letter(policy.fields.size());
      if (c.input->is_mapping()) {
        for (const auto& [key, value] : c.input->entries) {
          const uint32_t f = table->field_index(key.scalar);
          letter.at(f) = case_value(value, table->field(f).type);
        }
      }
      set_input(letter, input);
      const Decision d = table->decide(input);
      const InterpretResult oracle = interpret(policy, letter);
      if (oracle.verb != d.verb ||
          static_cast<uint8_t>(oracle.kind) != static_cast<uint8_t>(d.kind) ||
          oracle.rule != d.rule) {
        std::fprintf(stderr,
                     "replaygate: internal error: case '%s': the table and the interpreter "
                     "disagree\n",
                     escape_control(c.name).c_str());
        return kExitUsage;
      }
      record_case(policy, letter, oracle, &cov);
      CaseResult r;
      r.file = path;
      r.name = c.name;
      r.expect_verb = c.expect_verb_name;
      r.has_expect_rule = c.has_rule;
      r.expect_rule = c.rule;
      r.has_expect_reason = c.has_reason;
      r.expect_reason = c.reason;
      r.verb = table->verb_name(d.verb);
      r.rule = table->rule_name(d);
      r.reason = table->reason(d);
      if (d.verb != c.expect_verb || (c.has_rule && r.rule != c.rule)) {
        r.failure = "expected " + c.expect_verb_name +
                    (c.has_rule ? " (rule " + c.rule + ")" : "") + ", got " + r.verb + " (rule " +
                    r.rule + ", reason \"" + r.reason + "\")";
      } else if (c.has_reason && r.reason != c.reason) {
        r.failure = "expected reason \"" + c.reason + "\", got \"" + r.reason + "\"";
      }
      r.passed = r.failure.empty();
      // Case names, verbs, rule ids and reasons come from the case file and the policy: escaped,
      // so each case stays one line of the CI log.
      if (r.passed) {
        ++passed;
        if (!json) std::printf("PASS %s\n", escape_control(c.name).c_str());
      } else {
        ++failed;
        if (!json) {
          std::printf("FAIL %s: %s\n", escape_control(c.name).c_str(),
                      escape_control(r.failure).c_str());
        }
      }
      results.push_back(std::move(r));
    }
  }
  const std::vector<Uncovered> uncovered = uncovered_items(checked, cov);
  const bool below = options.min_coverage >= 0 && cov.percent() < options.min_coverage;
  if (json) {
    const std::string doc = json_document(options.policy, results, case_diagnostics, passed, failed,
                                          case_file_errors, cov, uncovered, options);
    if (!print_to_stdout(doc, "the test report")) return kExitUsage;
  } else {
    std::printf("%zu passed, %zu failed\n", passed, failed);
    std::printf("coverage: rules %zu/%zu (%s), invariants %zu/%zu\n", cov.rules_covered(),
                cov.rules_total(), percent_text(cov.percent()).c_str(), cov.invariants_covered(),
                cov.invariants.size());
    if (options.coverage) {
      for (const Uncovered& u : uncovered) {
        std::printf("uncovered: %s:%u: %s %s\n",
                    escape_control(options.policy, Backslash::kKeep).c_str(), u.line,
                    u.kind.c_str(), escape_control(u.id).c_str());
      }
    }
  }
  if (below) {
    std::fprintf(stderr, "replaygate test: %s\n",
                 below_min_text(cov, options.min_coverage).c_str());
  }
  // The text report went through stdio: print_to_stdout() flushes it and names the cause.
  if (!print_to_stdout("", "the test report")) return kExitUsage;
  if (std::ferror(stdout)) {  // an earlier flush failed (its errno is gone)
    std::fprintf(stderr, "replaygate: cannot write the test report to %s\n",
                 describe_stream(STDOUT_FILENO, "standard output").c_str());
    return kExitUsage;
  }
  return failed > 0 || case_file_errors || below ? kExitFindings : kExitOk;
}

}  // namespace

Runner setup_test(CLI::App& sub) {
  auto options = std::make_shared<TestOptions>();
  sub.footer(
      "Run test cases against POLICY (compiled in memory). Without CASES, reads POLICY's\n"
      "sibling .test.yaml (policies/x.yaml -> policies/x.test.yaml). Prints PASS/FAIL per case,\n"
      "'N passed, N failed' and a coverage line: rules (guards + table rows) that decided some\n"
      "case, and invariants whose premise some valid case satisfies.\n"
      "Exit: 0 all pass, 1 failures, case-file errors or coverage below --min-coverage,\n"
      "2 usage/I/O.");
  sub.add_option("POLICY", options->policy, "Policy file (.policy or .yaml)")->required();
  sub.add_option("CASES", options->case_files, "Case files (default: POLICY's .test.yaml)");
  sub.add_option("--format", options->format, "text (default) or json (one document on stdout)");
  sub.add_flag("--coverage", options->coverage,
               "List every uncovered guard, row and invariant with file:line");
  sub.add_option("--min-coverage", options->min_coverage,
                 "Fail (exit 1) when rule coverage, in percent of guards + rows, is below PCT")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            // CLI::Range lets "nan" through (every comparison with NaN is false), which would
            // turn the gate off; accept only a plain decimal number in [0, 100].
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !(v >= 0.0 && v <= 100.0) ||
                text.find_first_not_of("0123456789.") != std::string::npos) {
              return "expected a percentage between 0 and 100, e.g. 80 or 92.5; "
                     "got '" +
                     text + "'";
            }
            return std::string();
          },
          "PCT"));
  return [options] { return run_test(*options); };
}

}  // namespace replaygate::cli
