// `replaygate diff OLD NEW`: every region of inputs whose verb or deciding rule changes.
//
// Each side is a policy (.yaml, .yml, .policy) or a frozen table (.rgt, or any file that starts
// with the table magic), which is lifted back into a policy (compiler/lift.h) and diffed like one.
// Each input is read once, so FIFOs and /dev/stdin work.
// Exit: 0 no input changes its verb; 1 some do, none to a more dangerous effect; 3 some input
// gets a more dangerous effect than before, or a field the rules read got a looser `source:`
// (operator -> record or letter, record -> letter: FieldChange::more_dangerous); 2 usage, I/O,
// policy errors, unloadable or unliftable tables, or an incomplete analysis.
#include "compiler/analysis/diff.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/escape.h"
#include "common/yaml_tree.h"
#include "compiler/lift.h"
#include "runtime/table_format.h"
#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_diff.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

constexpr int kExitMoreDangerous = 3;
constexpr size_t kShownRules = 5;

struct DiffOptions {
  TrustFlags trust;
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

bool ends_with(const std::string& text, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

// The extensions that pick a policy's front-end (compiler/compile.h), lower-cased.
bool has_policy_extension(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension == ".policy" || extension == ".yaml" || extension == ".yml";
}

// Appends from `fd` to *bytes until end of file or until *bytes holds `limit` bytes. -1 on a read
// error (errno set), else 0.
int read_up_to(int fd, size_t limit, std::string* bytes) {
  char chunk[1 << 16];
  while (bytes->size() < limit) {
    const ssize_t n = ::read(fd, chunk, std::min(sizeof(chunk), limit - bytes->size()));
    if (n < 0 && errno == EINTR) continue;  // a signal interrupted the read: retry
    if (n < 0) return -1;
    if (n == 0) break;
    bytes->append(chunk, static_cast<size_t>(n));
  }
  return 0;
}

const char kAccepted[] =
    "diff takes a policy (a file named *.policy, *.yaml or *.yml) or a frozen table (*.rgt, or "
    "any file that starts with the table magic RGTABLE)";

// Lifts a loaded table into side; prints why it cannot and returns false.
bool lift_side(const std::string& path, const Table& table, DiffSide* side) {
  LiftResult lifted = lift(table);
  if (!lifted.policy) {
    std::fprintf(stderr, "replaygate: error: %s: %s\n", path.c_str(), lifted.error.c_str());
    return false;
  }
  side->checksum = table.checksum_hex();
  side->policy = std::move(lifted.policy);
  return true;
}

bool report_table_failure(const std::string& path, const LoadStatus& status) {
  std::fprintf(stderr, "%s\n", describe_load_failure(path, status).c_str());
  return false;
}

// Loads one side; prints why it cannot and returns false (exit 2).
//
// A name ending in .rgt is a table (so a .rgt file that is not one is reported by the loader as
// such, not parsed as YAML). Any other input is opened and read exactly once, because a FIFO or
// /dev/stdin cannot be read twice: its first bytes say whether it is a table (the magic, whatever
// the name); if not, it is a policy whose format its extension picks. The size limits are the
// loaders': a table up to Table::kMaxTableBytes, a policy up to one byte past yaml::kMaxBytes
// (enough for the front-end to report RG007, and safe on endless files such as /dev/zero).
bool load_side(const std::string& path, const verify::TrustOptions& trust, DiffSide* side) {
  if (ends_with(path, ".rgt")) {
    LoadStatus status;
    const std::unique_ptr<Table> table = verify::load_table_file(path, trust, nullptr, &status);
    if (table == nullptr) return report_table_failure(path, status);
    return lift_side(path, *table, side);
  }
  // "-" is standard input, as for decide and explain (a duplicate, so the Closer below owns it).
  const int fd = path == "-" ? ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)
                             : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "replaygate: cannot read '%s': %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) st = {};  // unknown: read it like a pipe
  if (S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "replaygate: cannot read '%s': it is a directory\n", path.c_str());
    return false;
  }
  std::string bytes;
  if (read_up_to(fd, sizeof(format::kMagic), &bytes) != 0) {
    std::fprintf(stderr, "replaygate: cannot read '%s': %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  const bool is_table =
      bytes.size() == sizeof(format::kMagic) &&
      (std::memcmp(bytes.data(), format::kMagic, sizeof(format::kMagic)) == 0 ||
       std::memcmp(bytes.data(), format::kSignedMagic, sizeof(format::kSignedMagic)) == 0);
  if (is_table) {
    const auto too_large = [&] {
      return report_table_failure(
          path, {LoadError::kTooLarge, path + " is over the limit of " +
                                           std::to_string(Table::kMaxTableBytes) + " bytes"});
    };
    // A regular file's size is known: refuse an oversized one before reading it, and read the
    // rest into one buffer of the right size.
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
      if (static_cast<uint64_t>(st.st_size) > Table::kMaxTableBytes) return too_large();
      bytes.reserve(static_cast<size_t>(st.st_size) + 1);
    }
    // One byte past the limit tells a table that is too large from one that just fits.
    if (read_up_to(fd, Table::kMaxTableBytes + 1, &bytes) != 0) {
      return report_table_failure(
          path, {LoadError::kIo, "cannot read " + path + ": " + std::strerror(errno)});
    }
    if (bytes.size() > Table::kMaxTableBytes) return too_large();
    LoadStatus status;
    const std::unique_ptr<Table> table =
        verify::load_table_bytes(bytes.data(), bytes.size(), trust, nullptr, &status);
    if (table == nullptr) return report_table_failure(path, status);
    return lift_side(path, *table, side);
  }
  if (!has_policy_extension(path)) {
    // Not a table, and nothing says which policy language it is in (e.g. /dev/stdin).
    if (bytes.empty()) {
      std::fprintf(stderr, "replaygate: error: %s is empty: %s\n", path.c_str(), kAccepted);
    } else {
      std::fprintf(stderr,
                   "replaygate: error: cannot tell what %s is: it is not a frozen table (it does "
                   "not start with the table magic) and its name does not end in .policy, .yaml "
                   "or .yml, which pick the policy language; save it to a file with one of those "
                   "extensions (%s)\n",
                   path.c_str(), kAccepted);
    }
    return false;
  }
  if (read_up_to(fd, yaml::kMaxBytes + 1, &bytes) != 0) {
    std::fprintf(stderr, "replaygate: cannot read '%s': %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  // A policy file that is empty, white space or comments only goes to the compiler: its RG100
  // says the policy file is empty, with the language's hint, as from compile and lint.
  LoadedPolicy loaded;
  const int code = compile_policy_reporting(bytes, path, DiagnosticFormat::kText, &loaded);
  if (code == kExitOk && loaded.policy) {
    side->policy = std::move(loaded.policy);
    return true;
  }
  std::fprintf(stderr, "replaygate: error: both policies must compile to be diffed\n");
  return false;
}

// How a renderer shows a name (a path, a rule id, an example letter) in running text.
using Quote = std::string (*)(const std::string&);

// The text report's forms: names from the policies escaped (escape_control), so a rule id or a
// path cannot add a line; `bare` keeps backslashes single (a path as typed).
std::string single_quoted(const std::string& text) { return "'" + escape_control(text) + "'"; }
std::string bare(const std::string& text) { return escape_control(text, Backslash::kKeep); }

// `text` as a Markdown code span. CommonMark has no escapes inside code spans, so the fence is one
// backtick longer than the longest run of backticks in the text, with a space inside each end when
// the text starts or ends with a backtick or with a space (the renderer strips one space each
// side). Control characters are shown as \n, \r, \t or \xHH: a line break would end the heading or
// the table row.
std::string code_span(const std::string& text) {
  std::string shown;
  size_t run = 0, longest = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      shown += "\\n";
    } else if (c == '\r') {
      shown += "\\r";
    } else if (c == '\t') {
      shown += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      shown += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 0x0f];
    } else {
      shown += c;
    }
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !shown.empty() && (shown.front() == '`' || shown.back() == '`' ||
                                      (shown.front() == ' ' && shown.back() == ' '));
  const std::string space = pad ? " " : "";
  return fence + space + shown + space + fence;
}

// The header lines naming the sides that are tables: "old PATH is a frozen table (checksum X)",
// the path and checksum shown by `quote`.
std::vector<std::string> table_notes(const DiffOptions& o, Quote quote) {
  std::vector<std::string> out;
  const auto note = [&](const char* which, const std::string& path, const std::string& checksum) {
    if (checksum.empty()) return;
    out.push_back(std::string(which) + " " + quote(path) + " is a frozen table (checksum " +
                  quote(checksum) + ")");
  };
  note("old", o.old_path, o.old_checksum);
  note("new", o.new_path, o.new_checksum);
  return out;
}

std::string rule_list(const std::vector<std::string>& rules, Quote quote) {
  std::string out;
  for (size_t i = 0; i < rules.size() && i < kShownRules; ++i) {
    out += (i ? ", " : "") + quote(rules[i]);
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
  // Names (fields, verbs) escaped; examples and region descriptions already quote their string
  // values escaped, but may hold an enum value as written: made safe without doubling escapes.
  const auto shown = [](const std::string& text) { return escape_control(text); };
  const auto safe = [](const std::string& text) { return escape_control(text, Backslash::kKeep); };
  std::string out = "diff " + bare(o.old_path) + " -> " + bare(o.new_path) + ": " +
                    plural(total_regions(d.verb_changes), "region") + " change verb, " +
                    plural(total_regions(d.provenance_changes), "region") +
                    " change only the deciding rule\n";
  for (const std::string& note : table_notes(o, bare)) out += note + "\n";
  for (const auto& f : d.fields) {
    out += "field '" + shown(f.name) + "': " + safe(f.change) +
           (f.more_dangerous ? ", MORE DANGEROUS" : "") + "\n";
  }
  if (!d.verb_changes.empty()) out += "\nverb changes:\n";
  for (const auto& g : d.verb_changes) {
    out += "  " + shown(g.old_verb) + " -> " + shown(g.new_verb) + " (effect " +
           ir::effect_name(g.old_effect) + " -> " + ir::effect_name(g.new_effect) +
           (g.more_dangerous() ? ", MORE DANGEROUS" : "") + "): " + plural(g.regions, "region") +
           "\n";
    out += "    old rules: " + rule_list(g.old_rules, single_quoted) + "\n";
    out += "    new rules: " + rule_list(g.new_rules, single_quoted) + "\n";
    out += "    e.g. " + safe(g.example) + "\n";
    out += "    in " + safe(g.description) + "\n";
  }
  if (!d.provenance_changes.empty()) out += "\nprovenance changes (same verb, another rule):\n";
  for (const auto& g : d.provenance_changes) {
    out += "  " + shown(g.old_verb) + ": " + rule_list(g.old_rules, single_quoted) + " -> " +
           rule_list(g.new_rules, single_quoted) + ": " + plural(g.regions, "region") + "\n";
    out += "    e.g. " + safe(g.example) + "\n";
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
           ", \"change\": " + json_string(d.fields[i].change) +
           ", \"more_dangerous\": " + (d.fields[i].more_dangerous ? "true" : "false") + "}";
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

// Markdown for a pull-request comment: names in code spans (code_span), `|` in cells escaped.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string render_markdown(const DiffOptions& o, const PolicyDiff& d) {
  std::string out =
      "### Policy diff: " + code_span(o.old_path) + " → " + code_span(o.new_path) + "\n\n";
  const bool verb_danger = std::any_of(d.verb_changes.begin(), d.verb_changes.end(),
                                       [](const DiffGroup& g) { return g.more_dangerous(); });
  if (verb_danger) {
    out +=
        "**Some inputs get a more dangerous effect than before: a second review is needed.**\n\n";
  } else if (d.any_more_dangerous()) {
    out +=
        "**Letters (or the operation record) may now set a field only an operator (or the "
        "record) set: a second review is needed.**\n\n";
  }
  for (const std::string& note : table_notes(o, code_span)) out += "- " + note + "\n";
  out += "- " + plural(total_regions(d.verb_changes), "region") + " of inputs change verb\n";
  out += "- " + plural(total_regions(d.provenance_changes), "region") +
         " change only the deciding rule\n";
  for (const auto& f : d.fields) {
    out += "- field " + code_span(f.name) + ": " + f.change + (f.more_dangerous ? " ⚠️" : "") +
           "\n";
  }
  if (!d.verb_changes.empty()) {
    out += "\n| old verb | new verb | effect | regions | old rules | new rules | example |\n";
    out += "|---|---|---|---|---|---|---|\n";
    for (const auto& g : d.verb_changes) {
      out += "| " + g.old_verb + " | " + g.new_verb + " | " + ir::effect_name(g.old_effect) +
             " → " + ir::effect_name(g.new_effect) + (g.more_dangerous() ? " ⚠️" : "") + " | " +
             std::to_string(g.regions) + " | " + cell(rule_list(g.old_rules, code_span)) + " | " +
             cell(rule_list(g.new_rules, code_span)) + " | " + cell(code_span(g.example)) + " |\n";
    }
  }
  if (!d.provenance_changes.empty()) {
    out += "\nProvenance only (same verb, another rule):\n\n";
    out += "| verb | old rules | new rules | regions | example |\n|---|---|---|---|---|\n";
    for (const auto& g : d.provenance_changes) {
      out += "| " + g.old_verb + " | " + cell(rule_list(g.old_rules, code_span)) + " | " +
             cell(rule_list(g.new_rules, code_span)) + " | " + std::to_string(g.regions) + " | " +
             cell(code_span(g.example)) + " |\n";
    }
  }
  return out;
}

// Whether reading `path` reads standard input itself: "-", a name of it (/dev/stdin, /dev/fd/0,
// /proc/self/fd/0), or any path to the same pipe, FIFO, terminal or socket (same device and
// inode as what fstat says of fd 0, e.g. /proc/self/fd/./0 or the FIFO that stdin is redirected
// from). A regular file on stdin is not counted by inode: opening it by path reads it afresh.
bool names_stdin(const std::string& path) {
  if (path == "-" || path == "/dev/stdin" || path == "/dev/fd/0" || path == "/proc/self/fd/0") {
    return true;
  }
  struct stat in = {};
  struct stat at = {};
  if (::fstat(STDIN_FILENO, &in) != 0 || S_ISREG(in.st_mode) || S_ISDIR(in.st_mode)) return false;
  return ::stat(path.c_str(), &at) == 0 && at.st_dev == in.st_dev && at.st_ino == in.st_ino;
}

// The diff of two checked policies, printed in o.format; the exit code of `replaygate diff`.
int print_diff(const DiffOptions& o, const ir::Policy& old_policy, const ir::Policy& new_policy) {
  const PolicyDiff diff = diff_policies(old_policy, new_policy);
  if (!diff.complete) {
    std::fprintf(stderr,
                 "replaygate: error: the diff ran out of its work budget after %llu regions; the "
                 "policies are too complex to compare completely\n",
                 static_cast<unsigned long long>(diff.regions));
    return kExitUsage;
  }
  if (diff.unresolved > 0) {
    const bool one = diff.unresolved == 1;
    std::fprintf(stderr,
                 "replaygate: note: %s %s kept without proof that a letter reaches %s (the search "
                 "for derived-bool operands gave up); %s may be unreachable\n",
                 plural(diff.unresolved, "changed region").c_str(), one ? "was" : "were",
                 one ? "it" : "them", one ? "it" : "they");
  }
  std::string text;
  if (o.format == "json") {
    text = render_json(o, diff);
  } else if (o.format == "markdown") {
    text = render_markdown(o, diff);
  } else {
    text = render_text(o, diff);
  }
  if (!print_to_stdout(text, "the diff")) return kExitUsage;
  if (diff.any_more_dangerous()) return kExitMoreDangerous;
  return diff.verb_changes.empty() ? kExitOk : kExitFindings;
}

int run_diff(const DiffOptions& options) {
  if (options.format != "text" && options.format != "json" && options.format != "markdown") {
    std::fprintf(stderr, "replaygate: error: --format must be text, json or markdown, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  // Standard input can be read only once: the second side would read nothing.
  if (names_stdin(options.old_path) && names_stdin(options.new_path)) {
    std::fprintf(stderr,
                 "replaygate: error: OLD and NEW are both standard input (%s and %s), which can "
                 "be read only once; save one of them to a file\nRun 'replaygate diff --help' for "
                 "usage.\n",
                 options.old_path.c_str(), options.new_path.c_str());
    return kExitUsage;
  }
  DiffSide old_side, new_side;
  verify::TrustOptions trust;
  if (!read_trust(options.trust, &trust)) return kExitUsage;
  const bool old_ok = load_side(options.old_path, trust, &old_side);
  const bool new_ok = load_side(options.new_path, trust, &new_side);
  if (!old_ok || !new_ok) return kExitUsage;
  DiffOptions o = options;
  o.old_checksum = old_side.checksum;
  o.new_checksum = new_side.checksum;
  return print_diff(o, old_side.policy->policy, new_side.policy->policy);
}

}  // namespace

int print_policy_diff(const ir::Policy& old_policy, const ir::Policy& new_policy,
                      const std::string& old_name, const std::string& new_name,
                      const std::string& format) {
  DiffOptions o;
  o.old_path = old_name;
  o.new_path = new_name;
  o.format = format;
  return print_diff(o, old_policy, new_policy);
}

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
      "Each input is read once, so a FIFO or /dev/stdin (or -) works, for one side only; a policy "
      "needs a .policy, "
      ".yaml or\n"
      ".yml name (its extension picks the language), a table is known by its magic.\n"
      "Exit: 0 no verb changes, 1 verb changes but no more dangerous effect, 3 some input gets a\n"
      "more dangerous effect (none < read < copy < create) or letters (the record) may now set\n"
      "an input the rules read that only an operator or the record set, 2 usage/I/O/policy\n"
      "errors, tables that do not load.");
  sub.add_option("OLD", options->old_path, "The policy or table before the change (.yaml, .rgt)")
      ->required();
  sub.add_option("NEW", options->new_path, "The policy or table after the change (.yaml, .rgt)")
      ->required();
  sub.add_option("--format", options->format, "text (default), json or markdown");
  add_trust_options(sub, &options->trust, /*acting=*/false);
  return [options] { return run_diff(*options); };
}

}  // namespace replaygate::cli
