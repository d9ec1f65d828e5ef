// Opening a format's record parser with its mapping checked (see record_reading.h).
#include "tools/cli/record_reading.h"

#include <cstdio>

#include "checks/mapping_check.h"
#include "common/diagnostic.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {

using inputs::InputFormat;
using inputs::LoadedMapping;
using inputs::mapping_format_mismatch;

LoadedMapping load_mapping_file(const std::string& path, const Table& table) {
  std::string text, error;
  if (!read_whole_file(path, inputs::kMaxMappingBytes, &text, &error)) {
    LoadedMapping out;
    out.io_error = true;
    out.io_message = error;
    return out;
  }
  return checks::check_mapping(text, path, table);
}

int open_record_parser(const InputFormat& format, const std::string& mapping_path,
                       const Table& table, std::string_view consequence, RecordReading* out) {
  *out = RecordReading{};
  if (format.mapping_format.empty()) {
    out->parser = format.make_parser(table, nullptr);
    return kExitOk;
  }
  auto mapping = std::make_unique<LoadedMapping>(load_mapping_file(mapping_path, table));
  if (mapping->io_error) {
    std::fprintf(stderr, "replaygate: %s\n", mapping->io_message.c_str());
    return kExitUsage;
  }
  report_diagnostics(mapping->diagnostics, mapping->source_text, DiagnosticFormat::kText);
  if (has_errors(mapping->diagnostics)) {
    std::fprintf(stderr, "%s: errors found; %.*s\n", mapping_path.c_str(),
                 static_cast<int>(consequence.size()), consequence.data());
    return kExitFindings;
  }
  if (const std::string why = mapping_format_mismatch(format, mapping_path, mapping->mapping);
      !why.empty()) {
    std::fprintf(stderr, "replaygate: error: %s\n", why.c_str());
    return kExitUsage;
  }
  out->parser = format.make_parser(table, &mapping->mapping);
  out->mapping = std::move(mapping);
  return kExitOk;
}

}  // namespace replaygate::cli
