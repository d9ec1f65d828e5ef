// `replaygate proposal check|compare`: a proposal file (schemas/proposal.schema.json) is input
// like any other, with diagnostics RG501-RG509 at file:line:column (checks/proposal_check.h); and
// two proposals' disagreements, the seed's exit criterion for a proposer (docs/proposals.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "common/plural.h"
#include "compiler/ir.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/proposal.h"

namespace replaygate::cli {
namespace {

using nlohmann::json;

constexpr const auto& kEntryKeys = checks::kProposalEntryKeys;

struct CheckOptions {
  std::string proposal, policy, format = "text";
};

int run_check(const CheckOptions& o) {
  std::string text, error;
  if (!read_whole_file(o.proposal, size_t{64} << 20, &text, &error)) {
    std::fprintf(stderr, "replaygate proposal check: %s\n", error.c_str());
    return kExitUsage;
  }
  LoadedPolicy loaded;
  if (const int code = load_policy_reporting(o.policy, DiagnosticFormat::kText, &loaded);
      code != kExitOk) {
    return code;
  }
  const std::vector<Diagnostic> diags = check_proposal(text, o.proposal, loaded.policy->policy);
  const std::string out = o.format == "json"     ? render_json(diags) + "\n"
                          : o.format == "github" ? render_github(diags)
                                                 : render_text(diags, text);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (o.format == "text") {
    std::fprintf(stderr, "%s: %s\n", o.proposal.c_str(),
                 has_errors(diags) ? (plural(diags.size(), "problem") + " found").c_str() : "ok");
  }
  return has_errors(diags) ? kExitFindings : kExitOk;
}

struct CompareOptions {
  std::string a, b;
};

// The group an entry is for: every member but verb, rationale, evidence and row_id.
// "" when a member that names the group is not a string, an integer or a boolean (an object, a
// float: a number JSON cannot hold exactly, 1.0 beside 1), which no key value is.
std::string group_of(const json& entry) {
  json k = json::object();
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    if (std::find(std::begin(kEntryKeys), std::end(kEntryKeys), it.key()) == std::end(kEntryKeys)) {
      if (!it.value().is_string() && !it.value().is_number_integer() && !it.value().is_boolean()) {
        return "";
      }
      k[it.key()] = it.value();
    }
  }
  return k.dump();
}

int run_compare(const CompareOptions& o) {
  std::map<std::string, std::string> verbs[2];
  uint64_t self_conflicts = 0;
  const std::string* paths[2] = {&o.a, &o.b};
  for (int n = 0; n < 2; ++n) {
    std::string text, error;
    if (!read_whole_file(*paths[n], size_t{64} << 20, &text, &error)) {
      std::fprintf(stderr, "replaygate proposal compare: %s\n", error.c_str());
      return kExitUsage;
    }
    const json doc = json::parse(text, nullptr, false);
    if (!doc.is_array()) {
      std::fprintf(stderr,
                   "replaygate proposal compare: %s is not a proposal (a JSON array of entries); "
                   "run 'replaygate proposal check' on it\n",
                   paths[n]->c_str());
      return kExitUsage;
    }
    for (const json& entry : doc) {
      if (!entry.is_object() || !entry.contains("verb") || !entry["verb"].is_string()) {
        std::fprintf(stderr,
                     "replaygate proposal compare: %s has an entry without a verb; run "
                     "'replaygate proposal check' on it\n",
                     paths[n]->c_str());
        return kExitUsage;
      }
      const std::string group = group_of(entry);
      if (group.empty()) {
        std::fprintf(stderr,
                     "replaygate proposal compare: %s has an entry whose key values are not all "
                     "strings, integers or booleans; run 'replaygate proposal check' on it\n",
                     paths[n]->c_str());
        return kExitUsage;
      }
      const std::string verb = entry["verb"].get<std::string>();
      if (const auto it = verbs[n].find(group); it != verbs[n].end() && it->second != verb) {
        // One proposal giving one group two verbs is the inconsistency compare looks for.
        std::printf("%s: %s says both %s and %s\n", group.c_str(), paths[n]->c_str(),
                    it->second.c_str(), verb.c_str());
        ++self_conflicts;
      }
      verbs[n][group] = verb;
    }
  }
  uint64_t differ = 0, only = 0, both = 0;
  for (const auto& [group, verb] : verbs[0]) {
    const auto other = verbs[1].find(group);
    if (other == verbs[1].end()) {
      ++only;
      continue;
    }
    ++both;
    if (other->second != verb) {
      ++differ;
      std::printf("%s: %s says %s, %s says %s\n", group.c_str(), o.a.c_str(), verb.c_str(),
                  o.b.c_str(), other->second.c_str());
    }
  }
  for (const auto& [group, verb] : verbs[1]) only += verbs[0].count(group) == 0 ? 1 : 0;
  std::fprintf(stderr,
               "replaygate proposal compare: %s in both, %llu with different verbs; %llu in only "
               "one%s\n",
               plural(both, "group").c_str(), static_cast<unsigned long long>(differ),
               static_cast<unsigned long long>(only),
               differ + self_conflicts > 0
                   ? ": identical groups get different verbs, so this proposer is not "
                     "consistent enough to keep using"
                   : "");
  if (both == 0) {
    std::fprintf(stderr,
                 "replaygate proposal compare: note: no group is in both proposals, so they "
                 "cannot disagree; compare proposals of the same dump\n");
  }
  return differ + self_conflicts > 0 ? kExitFindings : kExitOk;
}

}  // namespace

Runner setup_proposal(CLI::App& sub) {
  sub.require_subcommand(1);
  sub.footer(
      "Proposal files (docs/proposals.md, schemas/proposal.schema.json): check, apply, compare.");
  auto check = std::make_shared<CheckOptions>();
  CLI::App* c = sub.add_subcommand("check", "Validate a proposal against a policy");
  c->add_option("PROPOSAL", check->proposal, "The proposal file (JSON)")->required();
  c->add_option("--policy", check->policy, "The policy it proposes rows for")->required();
  c->add_option("--format", check->format, "text (default), json or github")
      ->check(CLI::IsMember({"text", "json", "github"}));
  c->footer(
      "Diagnostics RG501-RG509 (docs/diagnostics.md) at file:line:column. Exit: 0 valid, 1 "
      "problems, 2 usage or I/O errors.");
  auto compare = std::make_shared<CompareOptions>();
  CLI::App* m = sub.add_subcommand(
      "compare", "List the groups two proposals give different verbs (the proposer's exit test)");
  m->add_option("A", compare->a, "One proposal")->required();
  m->add_option("B", compare->b, "The other")->required();
  m->footer("Exit: 0 no group differs, 1 some do, 2 usage or I/O errors.");
  auto apply = std::make_shared<Runner>();
  CLI::App* apply_app = add_proposal_apply(sub, apply.get());
  return [check, compare, c, apply, apply_app] {
    if (c->parsed()) return run_check(*check);
    if (apply_app->parsed()) return (*apply)();
    return run_compare(*compare);
  };
}

}  // namespace replaygate::cli
