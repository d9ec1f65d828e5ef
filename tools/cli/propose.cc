// `replaygate propose`: the unknown (key) groups of dead-letter dumps as a proposal file for review
// (docs/proposals.md; checks/proposal_build.h groups them and writes the document); here the
// options, reading the dumps, the messages and the exit codes. Offline and deterministic: no
// network, no model, the same dumps give the same bytes.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checks/proposal_build.h"
#include "common/json.h"
#include "common/plural.h"
#include "compiler/ir.h"
#include "inputs/formats.h"
#include "inputs/records.h"
#include "review/sensitive.h"
#include "runtime/table.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

struct ProposeOptions {
  std::string policy, table, output;
  std::vector<std::string> dumps, keys;
  inputs::InputFormatOptions format;
  TrustFlags trust;
};

int usage(const std::string& message) {
  std::fprintf(stderr, "replaygate propose: %s\n", message.c_str());
  return kExitUsage;
}

}  // namespace

int run_propose(const ProposeOptions& o) {
  if (o.policy.empty() == o.table.empty()) {
    return usage("give exactly one of --policy POLICY or --table TABLE.rgt");
  }
  if (o.dumps.empty()) return usage("give at least one DUMP");
  std::string format_error;
  const InputFormat* format = inputs::choose_input_format(o.format, &format_error);
  if (format == nullptr) return usage(format_error);

  std::unique_ptr<Table> table;
  std::vector<std::string> sensitive;
  if (const int code = open_table(o.policy, o.table, &table, &sensitive, &o.trust);
      code != kExitOk) {
    return code;
  }
  // The key fields: --key, else the policy's first decision table's keys.
  std::vector<std::string> key_names = o.keys;
  if (key_names.empty() && !o.policy.empty()) {
    LoadedPolicy loaded;
    const ir::Table* first = nullptr;
    if (load_policy_reporting(o.policy, DiagnosticFormat::kText, &loaded) == kExitOk &&
        (first = ir::first_table(loaded.policy->policy)) != nullptr) {
      for (uint32_t f : first->key_fields) {
        key_names.emplace_back(loaded.policy->policy.fields[f].name);
      }
    }
  }
  if (key_names.empty()) {
    return usage(
        "name the key fields the entries group by with --key FIELD (repeatable; a compiled table "
        "does not keep its decision tables' keys, and this policy has no decision table)");
  }
  std::vector<uint32_t> key_fields;
  for (const std::string& name : key_names) {
    const uint32_t f = table->field_index(name);
    if (f == Table::kNoField) return usage("--key '" + name + "' is not an input of the policy");
    key_fields.push_back(f);
  }
  RecordReading reading;
  if (const int code =
          open_record_parser(*format, o.format.mapping, *table, "no proposal written", &reading);
      code != kExitOk) {
    return code;
  }
  checks::ProposalBuilder builder(*table, key_fields, key_names, review::sensitive_names(sensitive),
                                  format->timestamp_ms,
                                  reading.mapping ? &reading.mapping->mapping : nullptr);
  for (const std::string& path : o.dumps) {
    const int fd = path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::fprintf(stderr, "replaygate propose: cannot open %s: %s; no proposal written\n",
                   path.c_str(), std::strerror(errno));
      return kExitUsage;
    }
    std::optional<inputs::LineReader> lines;
    std::optional<inputs::JsonArrayReader> array;
    if (format->json_array) {
      array.emplace(fd, inputs::kMaxRecordBytes, std::string(format->array_member));
    } else {
      lines.emplace(fd);
    }
    for (;;) {
      std::string_view record;
      const inputs::LineReader::Status status = array ? array->next(&record) : lines->next(&record);
      if (status == inputs::LineReader::Status::kEnd) break;
      if (status == inputs::LineReader::Status::kError) {
        std::fprintf(stderr, "replaygate propose: cannot read %s: %s; no proposal written\n",
                     path.c_str(),
                     array && !array->error_text().empty()
                         ? array->error_text().c_str()
                         : std::strerror(lines ? lines->error_number() : array->error_number()));
        if (fd != STDIN_FILENO) ::close(fd);
        return kExitUsage;
      }
      if (status == inputs::LineReader::Status::kTooLarge) {
        builder.add_unreadable();
        continue;
      }
      // A blank line holds no record.
      if (!format->json_array && record.find_first_not_of(" \t\r") == std::string_view::npos) {
        continue;
      }
      builder.add(record, path, *reading.parser);
    }
    if (fd != STDIN_FILENO) ::close(fd);
  }

  const std::string text = builder.document();
  if (o.output.empty() || o.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::string error;
    if (!write_file_atomically(o.output, text, &error)) {
      std::fprintf(stderr, "replaygate propose: cannot write %s: %s\n", o.output.c_str(),
                   error.c_str());
      return kExitUsage;
    }
  }
  const checks::ProposalCounts& n = builder.counts();
  const std::string default_verb = builder.default_verb();
  std::fprintf(stderr,
               "replaygate propose: %s: %llu decided by a rule, %s (%s) go to the default '%s' "
               "and are proposed, %llu with an invalid input, %llu unreadable\n",
               plural(n.records, "record").c_str(), static_cast<unsigned long long>(n.decided),
               plural(builder.group_count(), "group").c_str(),
               plural(n.proposed(), "record").c_str(), default_verb.c_str(),
               static_cast<unsigned long long>(n.invalid),
               static_cast<unsigned long long>(n.unreadable));
  for (const auto& [what, count] : builder.unmapped()) {
    std::fprintf(stderr,
                 "replaygate propose: %s: %s %s no entry in the mapping's map: for %s; add one, "
                 "then propose again\n",
                 what.first.c_str(), plural(count, "record").c_str(), count == 1 ? "has" : "have",
                 json_string(what.second).c_str());
  }
  return n.unreadable > 0 ? kExitFindings : kExitOk;
}

Runner setup_propose(CLI::App& sub) {
  auto o = std::make_shared<ProposeOptions>();
  sub.footer(
      "Reads dead-letter dumps and writes a proposal: one entry per group of records the policy\n"
      "sends to its default (no row, no guard matched), grouped by the key fields (the policy's\n"
      "first decision table's keys, or --key), with the default verb, an empty rationale for the\n"
      "reviewer and evidence (count, dumps, up to five message ids, one record's other inputs,\n"
      "sensitive ones redacted). Sorted by count; the same dumps give the same bytes. Offline: no\n"
      "network, no model. A proposal becomes policy only through review (docs/proposals.md).\n"
      "Exit: 0 written, 1 written but some records were unreadable, 2 usage or I/O errors.");
  sub.add_option("DUMP", o->dumps, "Dumps to read (- for standard input)")->required();
  sub.add_option("--policy", o->policy, "The policy the dumps are decided by");
  sub.add_option("--table", o->table, "A compiled table instead (then give --key)");
  sub.add_option("--input-format", o->format.input_format,
                 "Record format, letters by default (as decide --input-format)")
      ->each([o](const std::string&) { o->format.input_format_set = true; });
  sub.add_option("--mapping", o->format.mapping, "Mapping file for every format but letters");
  sub.add_option("--key", o->keys, "A key field to group by (repeatable; default: the table's)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub.add_option("-o,--output", o->output, "Write the proposal here (atomically), not stdout");
  add_trust_options(sub, &o->trust, /*acting=*/false);
  return [o] { return run_propose(*o); };
}

}  // namespace replaygate::cli
