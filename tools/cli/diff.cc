// `replaygate diff OLD NEW`: every region of inputs whose verb or deciding rule changes.
//
// Each side is a policy (.yaml, .yml, .policy) or a frozen table (.rgt, or any file that starts
// with the table magic), which is lifted back into a policy (compiler/lift.h) and diffed like one.
// Exit: 0 no input changes its verb; 1 some do, none to a more dangerous effect; 3 some input
// gets a more dangerous effect than before; 2 usage, I/O, policy errors, unloadable or unliftable
// tables, or an incomplete analysis.
#include "compiler/diff.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lift.h"
#include "runtime/table_format.h"
#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {
namespace {

constexpr int kExitMoreDangerous = 3;
constexpr size_t kShownRules = 5;

struct DiffOptions {
  std::string old_path;
  std::string new_path;
  std::string format = "text";
  // Filled by run_diff for the renderers: the checksum of a side that is a table, else empty.
  std::string old_checksum, new_checksum;
};

// One side of the diff: a checked policy, and when it came from a frozen table, that table's
// identity for the output header.
struct DiffSide {
  std::optional<ir::CheckedPolicy> policy;
  std::string checksum;  // tables: Table::checksum_hex()
};

// A table by its magic (whatever the name), or by the .rgt extension (so a .rgt file that is not a
// table is reported by the loader as such, not parsed as YAML).
bool is_table_file(const std::string& path) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".rgt") == 0) return true;
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(format::kMagic)] = {};
  return in.read(magic, sizeof(magic)) && std::memcmp(magic, format::kMagic, sizeof(magic)) == 0;
}

// Loads one side; prints why it cannot and returns false (exit 2).
bool load_side(const std::string& path, DiffSide* side) {
  if (is_table_file(path)) {
    LoadStatus status;
    const std::unique_ptr<Table> table = Table::load_file(path, &status);
    if (table == nullptr) {
      std::fprintf(stderr, "%s\n", describe_load_failure(path, status).c_str());
      return false;
    }
    LiftResult lifted = lift(*table);
    if (!lifted.policy) {
      std::fprintf(stderr, "replaygate: error: %s: %s\n", path.c_str(), lifted.error.c_str());
      return false;
    }
    side->checksum = table->checksum_hex();
    side->policy = std::move(lifted.policy);
    return true;
  }
  LoadedPolicy loaded;
  const int code = load_policy_reporting(path, DiagnosticFormat::kText, &loaded);
  if (code == kExitOk && loaded.policy) {
    side->policy = std::move(loaded.policy);
    return true;
  }
  if (code != kExitUsage) {
    std::fprintf(stderr, "replaygate: error: both policies must compile to be diffed\n");
  }
  return false;
}

// The header lines naming the sides that are tables: "old PATH is a frozen table (checksum X)",
// with `quote` around the path and checksum (Markdown: "`").
std::vector<std::string> table_notes(const DiffOptions& o, const char* quote) {
  std::vector<std::string> out;
  const auto note = [&](const char* which, const std::string& path, const std::string& checksum) {
    if (checksum.empty()) return;
    out.push_back(std::string(which) + " " + quote + path + quote +
                  " is a frozen table (checksum " + quote + checksum + quote + ")");
  };
  note("old", o.old_path, o.old_checksum);
  note("new", o.new_path, o.new_checksum);
  return out;
}

std::string plural(uint64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string rule_list(const std::vector<std::string>& rules, const char* quote) {
  std::string out;
  for (size_t i = 0; i < rules.size() && i < kShownRules; ++i) {
    out += (i ? ", " : "") + std::string(quote) + rules[i] + quote;
  }
  if (rules.size() > kShownRules)
    out += " and " + std::to_string(rules.size() - kShownRules) + " more";
  return out;
}

uint64_t total_regions(const std::vector<DiffGroup>& groups) {
  uint64_t n = 0;
  for (const auto& g : groups) n += g.regions;
  return n;
}

std::string render_text(const DiffOptions& o, const PolicyDiff& d) {
  std::string out = "diff " + o.old_path + " -> " + o.new_path + ": " +
                    plural(total_regions(d.verb_changes), "region") + " change verb, " +
                    plural(total_regions(d.provenance_changes), "region") +
                    " change only the deciding rule\n";
  for (const std::string& note : table_notes(o, "")) out += note + "\n";
  for (const auto& f : d.fields) out += "field '" + f.name + "': " + f.change + "\n";
  if (!d.verb_changes.empty()) out += "\nverb changes:\n";
  for (const auto& g : d.verb_changes) {
    out += "  " + g.old_verb + " -> " + g.new_verb + " (effect " + ir::effect_name(g.old_effect) +
           " -> " + ir::effect_name(g.new_effect) + (g.more_dangerous() ? ", MORE DANGEROUS" : "") +
           "): " + plural(g.regions, "region") + "\n";
    out += "    old rules: " + rule_list(g.old_rules, "'") + "\n";
    out += "    new rules: " + rule_list(g.new_rules, "'") + "\n";
    out += "    e.g. " + g.example + "\n";
    out += "    in " + g.description + "\n";
  }
  if (!d.provenance_changes.empty()) out += "\nprovenance changes (same verb, another rule):\n";
  for (const auto& g : d.provenance_changes) {
    out += "  " + g.old_verb + ": " + rule_list(g.old_rules, "'") + " -> " +
           rule_list(g.new_rules, "'") + ": " + plural(g.regions, "region") + "\n";
    out += "    e.g. " + g.example + "\n";
  }
  return out;
}

void append_group_json(std::string& out, const DiffGroup& g) {
  const auto list = [&](const std::vector<std::string>& rules) {
    std::string s = "[";
    for (size_t i = 0; i < rules.size(); ++i) s += (i ? ", " : "") + json_string(rules[i]);
    return s + "]";
  };
  out += "{\"old_verb\": " + json_string(g.old_verb) +
         ", \"new_verb\": " + json_string(g.new_verb) +
         ", \"old_effect\": " + json_string(ir::effect_name(g.old_effect)) +
         ", \"new_effect\": " + json_string(ir::effect_name(g.new_effect)) +
         ", \"more_dangerous\": " + (g.more_dangerous() ? "true" : "false") +
         ", \"regions\": " + std::to_string(g.regions) + ", \"old_rules\": " + list(g.old_rules) +
         ", \"new_rules\": " + list(g.new_rules) + ", \"example\": " + g.example +
         ", \"region\": " + json_string(g.description) + "}";
}

std::string render_json(const DiffOptions& o, const PolicyDiff& d) {
  std::string out =
      "{\"old\": " + json_string(o.old_path) + ", \"new\": " + json_string(o.new_path);
  // Present only for a side that is a frozen table.
  if (!o.old_checksum.empty()) out += ", \"old_table_checksum\": " + json_string(o.old_checksum);
  if (!o.new_checksum.empty()) out += ", \"new_table_checksum\": " + json_string(o.new_checksum);
  out += ", \"more_dangerous\": ";
  out += d.any_more_dangerous() ? "true" : "false";
  out += ", \"verb_change_regions\": " + std::to_string(total_regions(d.verb_changes));
  out += ", \"provenance_change_regions\": " + std::to_string(total_regions(d.provenance_changes));
  out += ", \"fields\": [";
  for (size_t i = 0; i < d.fields.size(); ++i) {
    out += (i ? ", " : "") + std::string("{\"name\": ") + json_string(d.fields[i].name) +
           ", \"change\": " + json_string(d.fields[i].change) + "}";
  }
  out += "], \"verb_changes\": [";
  for (size_t i = 0; i < d.verb_changes.size(); ++i) {
    if (i) out += ", ";
    append_group_json(out, d.verb_changes[i]);
  }
  out += "], \"provenance_changes\": [";
  for (size_t i = 0; i < d.provenance_changes.size(); ++i) {
    if (i) out += ", ";
    append_group_json(out, d.provenance_changes[i]);
  }
  return out + "]}\n";
}

// Markdown for a pull-request comment; `|` in cells is escaped.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string render_markdown(const DiffOptions& o, const PolicyDiff& d) {
  std::string out = "### Policy diff: `" + o.old_path + "` → `" + o.new_path + "`\n\n";
  if (d.any_more_dangerous()) {
    out +=
        "**Some inputs get a more dangerous effect than before: a second review is needed.**\n\n";
  }
  for (const std::string& note : table_notes(o, "`")) out += "- " + note + "\n";
  out += "- " + plural(total_regions(d.verb_changes), "region") + " of inputs change verb\n";
  out += "- " + plural(total_regions(d.provenance_changes), "region") +
         " change only the deciding rule\n";
  for (const auto& f : d.fields) out += "- field `" + f.name + "`: " + f.change + "\n";
  if (!d.verb_changes.empty()) {
    out += "\n| old verb | new verb | effect | regions | old rules | new rules | example |\n";
    out += "|---|---|---|---|---|---|---|\n";
    for (const auto& g : d.verb_changes) {
      out += "| " + g.old_verb + " | " + g.new_verb + " | " + ir::effect_name(g.old_effect) +
             " → " + ir::effect_name(g.new_effect) + (g.more_dangerous() ? " ⚠️" : "") + " | " +
             std::to_string(g.regions) + " | " + cell(rule_list(g.old_rules, "`")) + " | " +
             cell(rule_list(g.new_rules, "`")) + " | `" + cell(g.example) + "` |\n";
    }
  }
  if (!d.provenance_changes.empty()) {
    out += "\nProvenance only (same verb, another rule):\n\n";
    out += "| verb | old rules | new rules | regions | example |\n|---|---|---|---|---|\n";
    for (const auto& g : d.provenance_changes) {
      out += "| " + g.old_verb + " | " + cell(rule_list(g.old_rules, "`")) + " | " +
             cell(rule_list(g.new_rules, "`")) + " | " + std::to_string(g.regions) + " | `" +
             cell(g.example) + "` |\n";
    }
  }
  return out;
}

int run_diff(const DiffOptions& options) {
  if (options.format != "text" && options.format != "json" && options.format != "markdown") {
    std::fprintf(stderr, "replaygate: error: --format must be text, json or markdown, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  DiffSide old_side, new_side;
  const bool old_ok = load_side(options.old_path, &old_side);
  const bool new_ok = load_side(options.new_path, &new_side);
  if (!old_ok || !new_ok) return kExitUsage;
  DiffOptions o = options;
  o.old_checksum = old_side.checksum;
  o.new_checksum = new_side.checksum;
  const PolicyDiff diff = diff_policies(old_side.policy->policy, new_side.policy->policy);
  if (!diff.complete) {
    std::fprintf(stderr,
                 "replaygate: error: the diff ran out of its work budget after %llu regions; the "
                 "policies are too complex to compare completely\n",
                 static_cast<unsigned long long>(diff.regions));
    return kExitUsage;
  }
  std::string text;
  if (options.format == "json") {
    text = render_json(o, diff);
  } else if (options.format == "markdown") {
    text = render_markdown(o, diff);
  } else {
    text = render_text(o, diff);
  }
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "replaygate: error: cannot write the diff to stdout\n");
    return kExitUsage;
  }
  if (diff.any_more_dangerous()) return kExitMoreDangerous;
  return diff.verb_changes.empty() ? kExitOk : kExitFindings;
}

}  // namespace

Runner setup_diff(CLI::App& sub) {
  auto options = std::make_shared<DiffOptions>();
  sub.footer(
      "Compare two policies over every input: each region of inputs whose verb changes (grouped "
      "by\n"
      "old -> new verb, with the rules and an example letter) and, separately, regions that keep\n"
      "their verb but change the deciding rule.\n"
      "Either side may be a frozen table (.rgt, or any file with the table magic), e.g. the table\n"
      "deployed in production: it is lifted back into the policy it decides like and diffed as "
      "one.\n"
      "Exit: 0 no verb changes, 1 verb changes but no more dangerous effect, 3 some input gets a\n"
      "more dangerous effect (none < read < copy < create), 2 usage/I/O/policy errors, tables\n"
      "that do not load.");
  sub.add_option("OLD", options->old_path, "The policy or table before the change (.yaml, .rgt)")
      ->required();
  sub.add_option("NEW", options->new_path, "The policy or table after the change (.yaml, .rgt)")
      ->required();
  sub.add_option("--format", options->format, "text (default), json or markdown");
  return [options] { return run_diff(*options); };
}

}  // namespace replaygate::cli
